#!/bin/sh
# Scale: the costs of a book at growing sizes of generated games (docs/PERFORMANCE.md,
# "Scale"). Run from the repository root:
#
#   benches/scale.sh [WORKDIR]
#
# Environment:
#   SIZES="1000000 8000000 32000000"  games per book (seed 1: each set is a prefix of the
#                                      next, gen-games' determinism)
#   MEMORY=256                         --memory of the import and of compact (MiB)
#   COLD=1                             0: skip the cold probes (no page cache drop, which
#                                      would slow whatever else the machine runs)
#   KEEP=0                             1: keep each size's PGN and book (disk: ~1.2 GB of
#                                      book with games stored and ~0.11 GB of zstd PGN per
#                                      million games; during the import the staging adds
#                                      ~0.7x the book, during compact a second copy)
#
# Per size, one TSV row (WORKDIR/scale.tsv) and a `RESULT {json}` line:
#   import wall seconds, games/s, peak RSS (MiB), staging peak (bytes of the book's sidecar
#   files and directories, polled every 0.2 s), book bytes, pairs and bytes per pair;
#   open (ms, `Game::open` in the probe bench) and probe p50/p99 (µs) warm (5 passes after a
#   warm-up) and cold (the page cache dropped: `echo 3 > /proc/sys/vm/drop_caches`, root only;
#   "-" and a printed reason otherwise; one pass, each position once); verify seconds; a
#   10,000-game import (seed 7) into the book, seconds (the median of 3 runs when it is a
#   delta: the segment is removed between runs, the base is unchanged), its peak RSS and, last
#   column, one run before those with the page cache dropped (cold; "-" as for probes); then
#   compact, seconds and peak RSS. At the end, each size's 10k import against the first size's.
# Times are wall clock on whatever the machine is doing: read them beside the load average
# printed with each row, and compare sizes measured in the same run.
set -eu
ROOT=$(pwd)
BIN=$ROOT/target/release/bookdb
GEN=$ROOT/target/gen-games/release/gen-games
DATA=${BOOKDB_DATA:-$ROOT/../shared/data}
SIZES=${SIZES:-1000000 8000000 32000000}
MEMORY=${MEMORY:-256}
KEEP=${KEEP:-0}
COLD=${COLD:-1}
W=${1:-/tmp/bookdb-scale}
mkdir -p "$W"

cargo build --release --quiet
cargo build --release --quiet --manifest-path "$ROOT/../shared/tools/gen-games/Cargo.toml" \
  --target-dir "$ROOT/target/gen-games"
cargo bench --no-run --quiet --bench probe_positions 2>/dev/null
PROBE=$(ls -t "$ROOT"/target/release/deps/probe_positions-* | grep -v '\.d$' | head -1)
cd "$W"
[ -f prefix.pgn ] || zstd -dcq "$DATA/pgn/large-136k.pgn.zst" > prefix.pgn
[ -f probes.pgn ] || "$GEN" --seed 999 --games 20000 --max-ply 50 --prefix-pgn prefix.pgn > probes.pgn
[ -f small.pgn.zst ] || "$GEN" --seed 7 --games 10000 --max-ply 50 --prefix-pgn prefix.pgn \
  --out small.pgn.zst

# Runs "$@" under /usr/bin/time; prints "seconds peak_KiB".
timed() {
  /usr/bin/time -f "%e %M" -o time.out "$@" > /dev/null
  cat time.out
}

# Peak bytes of the sidecars of book $1 until file $2 exists (the import's exit status).
staging_peak() {
  peak=0
  while [ ! -f "$2" ]; do
    b=$(du -sb "$1".* 2>/dev/null | awk '{s += $1} END {printf "%.0f", s}')
    [ "$b" -gt "$peak" ] && peak=$b
    sleep 0.2
  done
  echo "$peak"
}

probe() {
  BOOKDB_BENCH_BOOK=$1 BOOKDB_BENCH_PGN=probes.pgn "$PROBE" | sed -n 's/^RESULT //p'
}

drop_caches() {
  if [ "$COLD" = 0 ]; then
    echo "cold probes skipped: COLD=0" >&2
    return 1
  fi
  sync
  if ! (echo 3 > /proc/sys/vm/drop_caches) 2>/dev/null; then
    echo "cold probes skipped: cannot write /proc/sys/vm/drop_caches (needs root)" >&2
    return 1
  fi
}

# The 10k import into book $1: "seconds peak_KiB cold_seconds". When the import publishes a
# delta segment (the base file untouched: removing the segment and the manifest gives the book
# back), one run with the page cache dropped first (cold: "-" if it cannot be dropped), then
# the median of 3 runs (warm: the pages the first run read are cached); else the one run.
small_import() {
  base_before=$(stat -c %Y.%s "$1")
  cold=-
  runs=""
  for i in 0 1 2 3; do
    if [ "$i" = 0 ]; then
      drop_caches 2>/dev/null || continue
    fi
    r=$(timed "$BIN" import --quiet --max-ply 50 --memory "$MEMORY" --book "$1" small.pgn.zst)
    if [ "$i" = 0 ]; then
      cold=${r% *}
      first=$r
    else
      runs="$runs$r
"
    fi
    [ "$(stat -c %Y.%s "$1")" = "$base_before" ] && [ -f "$1.live" ] || break
    rm -f "$1.live" "$1".seg-*
  done
  # Leave the book with the import applied, as the rows before this change did.
  [ -f "$1.live" ] || [ "$(stat -c %Y.%s "$1")" != "$base_before" ] ||
    timed "$BIN" import --quiet --max-ply 50 --memory "$MEMORY" --book "$1" small.pgn.zst > /dev/null
  # The cold run rewrote the base (no warm runs): warm "-".
  if [ -z "$runs" ]; then
    echo "- ${first#* } $cold"
    return
  fi
  printf '%s' "$runs" | sort -n | awk -v c="$cold" '{r[NR] = $0} END {print r[int((NR + 1) / 2)], c}'
}

printf 'games\timport_s\tgames_per_s\tpeak_mib\tstaging_peak\tbook_bytes\tpairs\tbytes_per_pair\topen_ms\twarm_p50_us\twarm_p99_us\tcold_p50_us\tcold_p99_us\tverify_s\timport_10k_s\tcompact_s\tcompact_peak_mib\tload\timport_10k_peak_mib\timport_10k_cold_s\n' > scale.tsv
for n in $SIZES; do
  pgn=games-$n.pgn.zst
  book=book-$n.book
  [ -f "$pgn" ] || "$GEN" --seed 1 --games "$n" --max-ply 50 --prefix-pgn prefix.pgn \
    --threads 2 --out "$pgn"
  rm -rf "$book" "$book".* import.rc
  (
    rc=0
    /usr/bin/time -f "%e %M" -o import.time \
      "$BIN" import --quiet --max-ply 50 --memory "$MEMORY" --book "$book" "$pgn" || rc=$?
    echo "$rc" > import.rc
  ) &
  staging=$(staging_peak "$book" import.rc)
  wait
  [ "$(cat import.rc)" = 0 ] || { echo "import of $pgn failed" >&2; exit 1; }
  read -r import_s import_kib < import.time
  stats=$("$BIN" stats --json --book "$book")
  pairs=$(echo "$stats" | jq .pairs)
  bytes=$(stat -c %s "$book")
  warm=$(probe "$book")
  cold_p50=-; cold_p99=-
  if drop_caches; then
    cold=$(BOOKDB_BENCH_COLD=1 probe "$book")
    cold_p50=$(echo "$cold" | jq .p50_us); cold_p99=$(echo "$cold" | jq .p99_us)
    open_ms=$(echo "$cold" | jq .open_ms)
  else
    open_ms=$(echo "$warm" | jq .open_ms)
  fi
  read -r verify_s _ <<EOF
$(timed "$BIN" verify --quiet --book "$book")
EOF
  read -r small_s small_kib small_cold <<EOF
$(small_import "$book")
EOF
  read -r compact_s compact_kib <<EOF
$(timed "$BIN" compact --quiet --memory "$MEMORY" --book "$book")
EOF
  load=$(cut -d' ' -f1 /proc/loadavg)
  row=$(awk -v n="$n" -v is="$import_s" -v ik="$import_kib" -v st="$staging" -v by="$bytes" \
    -v pa="$pairs" -v om="$open_ms" -v w50="$(echo "$warm" | jq .p50_us)" \
    -v w99="$(echo "$warm" | jq .p99_us)" -v c50="$cold_p50" -v c99="$cold_p99" \
    -v vs="$verify_s" -v ss="$small_s" -v cs="$compact_s" -v ck="$compact_kib" -v ld="$load" -v sk="$small_kib" -v sc="$small_cold" \
    'BEGIN {printf "%s\t%s\t%.0f\t%.0f\t%.0f\t%.0f\t%.0f\t%.2f\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t%.0f\t%s\t%.0f\t%s\n",
      n, is, n / is, ik / 1024, st, by, pa, by / pa, om, w50, w99, c50, c99, vs, ss, cs, ck / 1024, ld, sk / 1024, sc}')
  echo "$row" >> scale.tsv
  echo "$row" | jq -R -c 'split("\t") | {games: .[0], import_s: .[1], games_per_s: .[2],
    peak_mib: .[3], staging_peak: .[4], book_bytes: .[5], pairs: .[6], bytes_per_pair: .[7],
    open_ms: .[8], warm_p50_us: .[9], warm_p99_us: .[10], cold_p50_us: .[11],
    cold_p99_us: .[12], verify_s: .[13], import_10k_s: .[14], compact_s: .[15],
    compact_peak_mib: .[16], load: .[17], import_10k_peak_mib: .[18], import_10k_cold_s: .[19]}' | sed 's/^/RESULT /'
  [ "$KEEP" = 1 ] || rm -rf "$pgn" "$book" "$book".*
done
column -t -s "$(printf '\t')" scale.tsv
# Item 2 of issue 31: each 10k import against the first size's (target: within 1.5x).
awk -F'\t' 'NR == 2 {first = $15; c0 = $20; n0 = $1} NR > 1 {
  printf "10k import into %s games against the import into %s:", $1, n0
  if ($15 != "-" && first != "-") printf " %.2fx (warm)", $15 / first
  if ($20 != "-" && c0 != "-") printf " %.2fx (cold)", $20 / c0
  printf "\n"}' scale.tsv

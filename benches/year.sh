#!/bin/sh
# A simulated year of nightly imports: the folding policy's write amplification, its largest
# nightly write and probe latency across the year (docs/PERFORMANCE.md, "Folding policy: a
# simulated year"). Run from the repository root:
#
#   benches/year.sh [WORKDIR]
#
# Environment (defaults: issue 31's year):
#   BOOK_GAMES=4000000  generated games in the book the year starts from (seed 1)
#   NIGHTLY=20000       generated games per night (night i: seed 1000 + i)
#   NIGHTS=365
#   PROBE_EVERY=30      probe latency (benches/probe_positions.rs) every this many nights
#   SAME_AS_ONE=0       1: at the end, import the same games in one go into a fresh book and
#                       compare the two dumps (needs the disk for both books)
#
# Bytes written are the sizes of the book files (base and segments) each night's import
# created: every file a writer publishes is new (written, then renamed into place), so a file
# not seen before is a file written. WORKDIR (default /tmp/bookdb-year) keeps everything;
# the book the year starts from is reused if it exists (delete the WORKDIR to start over).
set -eu
ROOT=$(pwd)
BIN=$ROOT/target/release/bookdb
GEN=$ROOT/target/gen-games/release/gen-games
DATA=${BOOKDB_DATA:-$ROOT/../shared/data}
BOOK_GAMES=${BOOK_GAMES:-4000000}
NIGHTLY=${NIGHTLY:-20000}
NIGHTS=${NIGHTS:-365}
PROBE_EVERY=${PROBE_EVERY:-30}
SAME_AS_ONE=${SAME_AS_ONE:-0}
W=${1:-/tmp/bookdb-year}
mkdir -p "$W"

cargo build --release --quiet
cargo build --release --quiet --manifest-path "$ROOT/../shared/tools/gen-games/Cargo.toml" \
  --target-dir "$ROOT/target/gen-games"
cargo bench --no-run --quiet --bench probe_positions 2>/dev/null
PROBE=$(ls -t "$ROOT"/target/release/deps/probe_positions-* | grep -v '\.d$' | head -1)
cd "$W"
[ -f prefix.pgn ] || zstd -dcq "$DATA/pgn/large-136k.pgn.zst" > prefix.pgn
[ -f probes.pgn ] || "$GEN" --seed 999 --games 20000 --max-ply 50 --prefix-pgn prefix.pgn > probes.pgn

if [ ! -f start.book ]; then
  "$GEN" --seed 1 --games "$BOOK_GAMES" --max-ply 50 --prefix-pgn prefix.pgn --threads 2 \
      --out base.pgn.zst
  /usr/bin/time -f "start book: %e s, %M KiB peak" \
    "$BIN" import --quiet --max-ply 50 --book start.book base.pgn.zst
fi
rm -rf year && mkdir year && cp start.book year/year.book
B=year/year.book

files() { stat -c '%i %s' "$B" "$B".seg-* 2>/dev/null || true; }
files > seen.txt
start_bytes=$(files | awk '{s+=$2} END {print s}')
probe() {
  BOOKDB_BENCH_BOOK=$B BOOKDB_BENCH_PGN=probes.pgn BOOKDB_BENCH_PASSES=3 "$PROBE" \
    | sed -n 's/^RESULT //p'
}
echo "night	applied	seconds	written	book_bytes	files	p50_us	p99_us" > year.tsv
p=$(probe)
echo "0	-	0	0	$start_bytes	$(echo "$p" | jq .files)	$(echo "$p" | jq .p50_us)	$(echo "$p" | jq .p99_us)" >> year.tsv
i=1
while [ "$i" -le "$NIGHTS" ]; do
  "$GEN" --seed $((1000 + i)) --games "$NIGHTLY" --max-ply 50 --prefix-pgn prefix.pgn \
      --out night.pgn.zst
  [ "$SAME_AS_ONE" = 1 ] && cp night.pgn.zst "night-$i.pgn.zst"
  t0=$(date +%s.%N)
  applied=$("$BIN" import --quiet --json --max-ply 50 --book "$B" night.pgn.zst | jq -r .applied)
  t1=$(date +%s.%N)
  written=$(files | while read -r ino size; do
    grep -q "^$ino " seen.txt || echo "$size"; done | awk '{s+=$1} END {print s+0}')
  files > seen.txt
  bytes=$(files | awk '{s+=$2} END {print s}')
  n=$(files | wc -l)
  p50=-; p99=-
  if [ $((i % PROBE_EVERY)) = 0 ] || [ "$i" = "$NIGHTS" ]; then
    p=$(probe); p50=$(echo "$p" | jq .p50_us); p99=$(echo "$p" | jq .p99_us)
  fi
  echo "$i	$applied	$(awk -v a="$t0" -v b="$t1" 'BEGIN {printf "%.2f", b - a}')	$written	$bytes	$n	$p50	$p99" >> year.tsv
  i=$((i + 1))
done

median_s=$(awk -F'\t' 'NR > 2 {print $3}' year.tsv | sort -n \
  | awk '{a[NR] = $1} END {print (NR % 2 ? a[(NR + 1) / 2] : (a[NR / 2] + a[NR / 2 + 1]) / 2)}')
awk -F'\t' -v start="$start_bytes" -v median="$median_s" 'NR == 2 { prev = $5; p = " 0:" $7 "/" $8 }
  NR > 2 {
    w += $4; if ($4 / prev > mx) { mx = $4 / prev; at = $1 }
    if ($4 > big) big = $4
    k++; prev = $5; last = $5; if ($6 > files) files = $6
    if ($7 != "-") { p = p " " $1 ":" $7 "/" $8 }
  }
  END {
    printf "nights %d; book %.0f -> %.0f bytes; written %.0f bytes = %.2f x the final book\n", k, start, last, w, w / last
    printf "largest night: %.0f bytes, %.1f %% of the book before it (night %d); most files %d; median import %s s\n", big, 100 * mx, at, files, median
    printf "probe p50/p99 (us) by night:%s\n", p
  }' year.tsv | tee year.txt

if [ "$SAME_AS_ONE" = 1 ]; then
  rm -f one.book
  # The same games in one import: the year's input files, in the order the year read them.
  "$BIN" import --quiet --max-ply 50 --book one.book base.pgn.zst $(seq -f "night-%g.pgn.zst" 1 "$NIGHTS")
  one=$("$BIN" dump --book one.book | sha256sum)
  mine=$("$BIN" dump --book "$B" | sha256sum)
  if [ "$one" = "$mine" ]; then echo "dump: equal to one import of the same games ($one)"
  else echo "dump: DIFFERENT from one import of the same games" >&2; exit 1; fi
fi

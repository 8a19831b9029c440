#!/usr/bin/env bash
# Merge benchmark: merging two half books versus importing the whole PGN (issue 4).
#
#   bash benches/merge.sh            # 3 runs of each, alternating
#   RUNS=5 bash benches/merge.sh
#
# Environment:
#   BOOKDB_DATA  shared data directory (default ../shared/data, relative to the repo root)
#   RUNS         runs per command (default 3)
#   MAX_PLY      plies counted per game (default 30)
#   KEEP         1 = keep the temporary directory and print its path
#
# The large set is split at the game boundary nearest its middle; each half is imported into
# its own book once (not timed). Then, alternating: `bookdb merge H1 H2 --out M` and `bookdb
# import WHOLE --book W`. The script checks that `dump` of the merge equals `dump` of the whole
# and exits non-zero otherwise. Last line: `RESULT {json}`.

set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

DATA="${BOOKDB_DATA:-../shared/data}"
RUNS="${RUNS:-3}"
MAX_PLY="${MAX_PLY:-30}"
GNU_TIME=/usr/bin/time
SRC="$DATA/pgn/large-136k.pgn.zst"

die() { echo "merge.sh: $*" >&2; exit 1; }

[[ "$RUNS" =~ ^[1-9][0-9]*$ ]] || die "RUNS must be a positive integer (got '$RUNS')"
[[ -f "$SRC" ]] || die "missing $SRC (set BOOKDB_DATA to the shared data directory)"
command -v zstd >/dev/null || die "zstd not found (apt-get install zstd)"
[[ -x "$GNU_TIME" ]] || die "$GNU_TIME not found (apt-get install time)"

TMP="$(mktemp -d "${TMPDIR:-/tmp}/bookdb-merge.XXXXXX")"
cleanup() {
    if [[ "${KEEP:-0}" == 1 ]]; then echo "kept $TMP"; else rm -rf "$TMP"; fi
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

echo "== commit: $(git -C "$ROOT" log --oneline -1 2>/dev/null || echo unknown)"
echo "== host: $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg)"

WHOLE="$TMP/whole.pgn"
zstd -dc -- "$SRC" > "$WHOLE"
games="$(grep -c '^\[Event ' "$WHOLE" || true)"
half=$((games / 2))
awk -v n="$half" '/^\[Event /{ c++ } c <= n { print }' "$WHOLE" > "$TMP/h1.pgn"
awk -v n="$half" '/^\[Event /{ c++ } c > n { print }' "$WHOLE" > "$TMP/h2.pgn"
echo "   $games games; halves of $half and $((games - half))"

cargo build --release --quiet
BOOKDB="${CARGO_TARGET_DIR:-$ROOT/target}/release/bookdb"
[[ -x "$BOOKDB" ]] || die "no binary at $BOOKDB"

for h in h1 h2; do
    "$BOOKDB" import "$TMP/$h.pgn" --book "$TMP/$h.book" --max-ply "$MAX_PLY" --quiet > /dev/null
done

# run LOG CMD...: runs CMD under GNU time, prints "wall_s peak_kib user_s sys_s".
run() {
    local log="$1"; shift
    "$GNU_TIME" -f '%e %M %U %S' -o "$TMP/time" "$@" > "$log" 2>&1 || {
        tail -n 20 "$log" >&2; die "failed: $*"; }
    tail -n 1 "$TMP/time"
}
merge_cmd=("$BOOKDB" merge "$TMP/h1.book" "$TMP/h2.book" --out "$TMP/m.book")
import_cmd=("$BOOKDB" import "$WHOLE" --book "$TMP/w.book" --max-ply "$MAX_PLY" --quiet)
echo "== $RUNS runs each, alternating"
echo "   merge:  ${merge_cmd[*]}"
echo "   import: ${import_cmd[*]}"
printf '   %-7s %3s %8s %10s %8s %6s\n' what run wall_s rss_MiB cpu_s load
mw=(); iw=(); mc=(); ic=()
for ((i = 1; i <= RUNS; i++)); do
    rm -rf "$TMP/m.book" "$TMP/m.book".*
    l="$(cut -d' ' -f1 /proc/loadavg)"
    read -r w m u s <<< "$(run "$TMP/merge.$i.log" "${merge_cmd[@]}")"
    mw+=("$w"); mc+=("$(awk -v u="$u" -v s="$s" 'BEGIN { print u + s }')")
    awk -v i="$i" -v w="$w" -v m="$m" -v c="${mc[-1]}" -v l="$l" 'BEGIN { printf "   merge   %3d %8.2f %10.1f %8.2f %6s\n", i, w, m / 1024, c, l }'
    rm -rf "$TMP/w.book" "$TMP/w.book".*
    l="$(cut -d' ' -f1 /proc/loadavg)"
    read -r w m u s <<< "$(run "$TMP/import.$i.log" "${import_cmd[@]}")"
    iw+=("$w"); ic+=("$(awk -v u="$u" -v s="$s" 'BEGIN { print u + s }')")
    awk -v i="$i" -v w="$w" -v m="$m" -v c="${ic[-1]}" -v l="$l" 'BEGIN { printf "   import  %3d %8.2f %10.1f %8.2f %6s\n", i, w, m / 1024, c, l }'
done

median() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }
mw_med="$(median "${mw[@]}")"; iw_med="$(median "${iw[@]}")"
mc_med="$(median "${mc[@]}")"; ic_med="$(median "${ic[@]}")"
ratio="$(awk -v m="$mw_med" -v i="$iw_med" 'BEGIN { printf "%.2f", m / i }')"

"$BOOKDB" dump --book "$TMP/m.book" > "$TMP/m.jsonl"
"$BOOKDB" dump --book "$TMP/w.book" > "$TMP/w.jsonl"
cmp -s "$TMP/m.jsonl" "$TMP/w.jsonl" || die "dump of the merge differs from dump of the whole"
echo "== medians: merge $mw_med s (cpu $mc_med s), import of the whole $iw_med s (cpu $ic_med s)"
echo "   merge / import wall: $ratio   (dumps equal, $(wc -l < "$TMP/m.jsonl") positions)"
printf 'RESULT {"games":%s,"runs":%s,"merge_wall_median_s":%s,"import_wall_median_s":%s,"merge_over_import":%s,"merge_cpu_median_s":%s,"import_cpu_median_s":%s,"merge_bytes":%s,"import_bytes":%s}\n' \
    "$games" "$RUNS" "$mw_med" "$iw_med" "$ratio" "$mc_med" "$ic_med" \
    "$(stat -c %s "$TMP/m.book")" "$(stat -c %s "$TMP/w.book")"

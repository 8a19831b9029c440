#!/usr/bin/env bash
# Side-by-side import benchmark: `bookdb import` vs `polyglot make-book` on the same PGN.
#
#   bash benches/compare.sh            # 3 runs of each tool, alternating
#   RUNS=5 bash benches/compare.sh
#
# Environment:
#   BOOKDB_DATA  shared data directory (default ../shared/data, relative to the repo root)
#   RUNS         runs per tool (default 3)
#   GAMES        games taken from the head of large-136k.pgn.zst (default 135000)
#   MAX_PLY      plies counted per game, both tools (default 30)
#   KEEP         1 = keep the temporary directory (PGN, books, logs) and print its path
#   BASELINE     path of another bookdb binary (e.g. built from an older commit) to run in the
#                same alternation, so a change is measured against the same host conditions
#
# Exits non-zero if a tool fails or the PGN cut does not hold exactly GAMES games.
# See benches/README.md for how to read the output.

set -euo pipefail

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$ROOT"

DATA="${BOOKDB_DATA:-../shared/data}"
RUNS="${RUNS:-3}"
GAMES="${GAMES:-135000}"
MAX_PLY="${MAX_PLY:-30}"
POLYGLOT="${POLYGLOT:-/usr/games/polyglot}"
GNU_TIME=/usr/bin/time
SRC="$DATA/pgn/large-136k.pgn.zst"

die() { echo "compare.sh: $*" >&2; exit 1; }

[[ "$RUNS" =~ ^[1-9][0-9]*$ ]] || die "RUNS must be a positive integer (got '$RUNS')"
[[ "$GAMES" =~ ^[1-9][0-9]*$ ]] || die "GAMES must be a positive integer (got '$GAMES')"
[[ -f "$SRC" ]] || die "missing $SRC (set BOOKDB_DATA to the shared data directory)"
command -v zstd >/dev/null || die "zstd not found (apt-get install zstd)"
[[ -x "$POLYGLOT" ]] || die "$POLYGLOT not found (apt-get install polyglot)"
[[ -x "$GNU_TIME" ]] || die "$GNU_TIME not found (apt-get install time)"

TMP="$(mktemp -d "${TMPDIR:-/tmp}/bookdb-compare.XXXXXX")"
cleanup() {
    if [[ "${KEEP:-0}" == 1 ]]; then
        echo "kept $TMP"
    else
        rm -rf "$TMP"
    fi
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

dirty=""
[[ -n "$(git -C "$ROOT" status --porcelain --untracked-files=no 2>/dev/null || true)" ]] && dirty=" (plus uncommitted changes)"
echo "== commit: $(git -C "$ROOT" log --oneline -1 2>/dev/null || echo "unknown (not a git checkout)")$dirty"
echo "== host: $(nproc) cores, load average $(cut -d' ' -f1-3 /proc/loadavg)"

# --- 1. The PGN: the first $GAMES games of the large set. ---------------------------------
PGN="$TMP/games.pgn"
echo "== cutting the first $GAMES games of $SRC"
set +o pipefail
zstd -dc -- "$SRC" | awk -v n="$GAMES" '/^\[Event /{ if (++c > n) exit } { print }' > "$PGN"
st=("${PIPESTATUS[@]}")
set -o pipefail
# zstd is cut off by SIGPIPE (141) when awk stops early; anything else is an error.
[[ "${st[0]}" == 0 || "${st[0]}" == 141 ]] || die "zstd failed (exit ${st[0]})"
[[ "${st[1]}" == 0 ]] || die "awk failed (exit ${st[1]})"
got="$(grep -c '^\[Event ' "$PGN" || true)"
[[ "$got" == "$GAMES" ]] || die "the cut holds $got games, expected $GAMES"
echo "   $got games, $(stat -c %s "$PGN") bytes"

# --- 2. bookdb, release build. ------------------------------------------------------------
echo "== cargo build --release"
cargo build --release --quiet
BOOKDB="${CARGO_TARGET_DIR:-$ROOT/target}/release/bookdb"
[[ -x "$BOOKDB" ]] || die "no binary at $BOOKDB"

# --- 3. Alternating runs under GNU time. --------------------------------------------------
# run NAME LOG -- CMD...: runs CMD under GNU time, prints "wall_s peak_kib user_s sys_s".
run() {
    local name="$1" log="$2"; shift 3
    local tf="$TMP/time.$$"
    if ! "$GNU_TIME" -f '%e %M %U %S' -o "$tf" "$@" > "$log" 2>&1; then
        echo "compare.sh: $name failed: $*" >&2
        tail -n 20 "$log" >&2 || true
        [[ -f "$tf" ]] && cat "$tf" >&2
        exit 1
    fi
    tail -n 1 "$tf"
}

BOOK="$TMP/bookdb.book"
BIN="$TMP/polyglot.bin"
bookdb_cmd=("$BOOKDB" import "$PGN" --book "$BOOK" --max-ply "$MAX_PLY" --memory 256 --quiet)
polyglot_cmd=("$POLYGLOT" make-book -pgn "$PGN" -bin "$BIN" -max-ply "$MAX_PLY" -min-game 1)
echo "== $RUNS runs each, alternating"
echo "   bookdb:   ${bookdb_cmd[*]}"
echo "   polyglot: ${polyglot_cmd[*]}"
BASELINE="${BASELINE:-}"
if [[ -n "$BASELINE" ]]; then
    [[ -x "$BASELINE" ]] || die "BASELINE $BASELINE is not an executable"
    baseline_cmd=("$BASELINE" import "$PGN" --book "$BOOK" --max-ply "$MAX_PLY" --memory 256 --quiet)
    echo "   baseline: ${baseline_cmd[*]}"
fi

bw=(); bm=(); bc=(); pw=(); pm=(); pc=(); xw=(); xm=(); xc=()
# CPU = user + sys seconds (all threads); load = 1-minute load average just before the run.
row() { awk -v t="$1" -v i="$2" -v w="$3" -v m="$4" -v u="$5" -v s="$6" -v l="$7" \
    'BEGIN { printf "   %-9s %3d %10.2f %14.1f %10.2f %7s\n", t, i, w, m / 1024, u + s, l }'; }
load1() { cut -d' ' -f1 /proc/loadavg; }
printf '   %-9s %3s %10s %14s %10s %7s\n' tool run wall_s peak_rss_MiB cpu_s load
for ((i = 1; i <= RUNS; i++)); do
    rm -rf "$BOOK" "$BOOK".* "$BIN"
    l="$(load1)"
    out="$(run bookdb "$TMP/bookdb.$i.log" -- "${bookdb_cmd[@]}")"
    read -r w m u s <<< "$out"
    bw+=("$w"); bm+=("$m"); bc+=("$(awk -v u="$u" -v s="$s" 'BEGIN { print u + s }')")
    row bookdb "$i" "$w" "$m" "$u" "$s" "$l"

    if [[ -n "$BASELINE" ]]; then
        rm -rf "$BOOK" "$BOOK".*
        l="$(load1)"
        out="$(run baseline "$TMP/baseline.$i.log" -- "${baseline_cmd[@]}")"
        read -r w m u s <<< "$out"
        xw+=("$w"); xm+=("$m"); xc+=("$(awk -v u="$u" -v s="$s" 'BEGIN { print u + s }')")
        row baseline "$i" "$w" "$m" "$u" "$s" "$l"
    fi

    rm -f "$BIN"
    l="$(load1)"
    out="$(cd "$TMP" && run polyglot "$TMP/polyglot.$i.log" -- "${polyglot_cmd[@]}")"
    read -r w m u s <<< "$out"
    [[ -s "$BIN" ]] || die "polyglot wrote no book (see $TMP/polyglot.$i.log)"
    pw+=("$w"); pm+=("$m"); pc+=("$(awk -v u="$u" -v s="$s" 'BEGIN { print u + s }')")
    row polyglot "$i" "$w" "$m" "$u" "$s" "$l"
done

median() { printf '%s\n' "$@" | sort -g | awk '{ v[NR] = $1 } END { if (NR % 2) print v[(NR + 1) / 2]; else print (v[NR / 2] + v[NR / 2 + 1]) / 2 }'; }

bw_med="$(median "${bw[@]}")"; bm_med="$(median "${bm[@]}")"; bc_med="$(median "${bc[@]}")"
pw_med="$(median "${pw[@]}")"; pm_med="$(median "${pm[@]}")"; pc_med="$(median "${pc[@]}")"
ratio="$(awk -v p="$pw_med" -v b="$bw_med" 'BEGIN { printf "%.2f", p / b }')"
cpu_ratio="$(awk -v p="$pc_med" -v b="$bc_med" 'BEGIN { printf "%.2f", p / b }')"

# --- 4. Outputs. --------------------------------------------------------------------------
if [[ -n "$BASELINE" ]]; then
    # The book on disk is the baseline's: the outputs below are the current binary's.
    rm -rf "$BOOK" "$BOOK".*
    "${bookdb_cmd[@]}" > "$TMP/bookdb.final.log" 2>&1 || die "bookdb failed (see $TMP/bookdb.final.log)"
fi
book_bytes="$(stat -c %s "$BOOK")"
bin_bytes="$(stat -c %s "$BIN")"
stats_json="$("$BOOKDB" stats --book "$BOOK" --json)" || die "bookdb stats failed"
field() { printf '%s' "$stats_json" | grep -o "\"$1\":[-0-9.eE+]*" | head -n 1 | cut -d: -f2; }
bpp="$(field bytes_per_pair)"; positions="$(field positions)"; pairs="$(field pairs)"
[[ -n "$bpp" && -n "$pairs" ]] || die "unexpected stats output: $stats_json"
(( bin_bytes % 16 == 0 )) || echo "   warning: polyglot book size $bin_bytes is not a multiple of 16"

echo
echo "== medians over $RUNS runs"
printf '   %-9s wall %8.2f s   peak RSS %8.1f MiB   cpu %8.2f s\n' bookdb "$bw_med" "$(awk -v k="$bm_med" 'BEGIN { print k / 1024 }')" "$bc_med"
printf '   %-9s wall %8.2f s   peak RSS %8.1f MiB   cpu %8.2f s\n' polyglot "$pw_med" "$(awk -v k="$pm_med" 'BEGIN { print k / 1024 }')" "$pc_med"
echo "   wall ratio polyglot / bookdb (medians): $ratio   (> 1: bookdb is faster)"
echo "   cpu  ratio polyglot / bookdb (medians): $cpu_ratio"
if [[ -n "$BASELINE" ]]; then
    xw_med="$(median "${xw[@]}")"; xm_med="$(median "${xm[@]}")"; xc_med="$(median "${xc[@]}")"
    printf '   %-9s wall %8.2f s   peak RSS %8.1f MiB   cpu %8.2f s\n' baseline "$xw_med" "$(awk -v k="$xm_med" 'BEGIN { print k / 1024 }')" "$xc_med"
    echo "   wall ratio polyglot / baseline (medians): $(awk -v p="$pw_med" -v b="$xw_med" 'BEGIN { printf "%.2f", p / b }')"
    echo "   wall ratio baseline / bookdb (medians): $(awk -v x="$xw_med" -v b="$bw_med" 'BEGIN { printf "%.2f", x / b }')"
fi
echo "== outputs"
echo "   bookdb book:   $book_bytes bytes; $positions positions, $pairs (position, move) pairs, $bpp bytes per pair"
echo "   polyglot .bin: $bin_bytes bytes; $((bin_bytes / 16)) entries of 16 bytes"

# --- 5. bookdb under a 64 MiB budget. -----------------------------------------------------
echo "== bookdb with --memory 64 (once)"
rm -rf "$BOOK" "$BOOK".*
out="$(run bookdb-64 "$TMP/bookdb.m64.log" -- \
    "$BOOKDB" import "$PGN" --book "$BOOK" --max-ply "$MAX_PLY" --memory 64 --quiet)"
read -r w64 m64 u64 s64 <<< "$out"
awk -v w="$w64" -v k="$m64" -v u="$u64" -v s="$s64" 'BEGIN {
    printf "   wall %.2f s   cpu %.2f s   peak RSS %.1f MiB = %.2f x the 64 MiB budget\n", w, u + s, k / 1024, k / 1024 / 64 }'
stats_json="$("$BOOKDB" stats --book "$BOOK" --json)" || die "bookdb stats failed"
pairs64="$(field pairs)"
[[ "$pairs64" == "$pairs" ]] || die "--memory 64 book has $pairs64 pairs, the 256 MiB one $pairs"
echo "   same $pairs64 pairs as with --memory 256"

printf 'RESULT {"games":%s,"runs":%s,"bookdb_wall_median_s":%s,"polyglot_wall_median_s":%s,"ratio_polyglot_over_bookdb":%s,"bookdb_peak_rss_kib_median":%s,"polyglot_peak_rss_kib_median":%s,"bookdb_cpu_median_s":%s,"polyglot_cpu_median_s":%s,"bookdb_book_bytes":%s,"polyglot_bin_bytes":%s,"polyglot_entries":%s,"bookdb_pairs":%s,"bookdb_bytes_per_pair":%s,"bookdb_mem64_wall_s":%s,"bookdb_mem64_peak_rss_kib":%s}\n' \
    "$GAMES" "$RUNS" "$bw_med" "$pw_med" "$ratio" "$bm_med" "$pm_med" "$bc_med" "$pc_med" "$book_bytes" "$bin_bytes" \
    "$((bin_bytes / 16))" "$pairs" "$bpp" "$w64" "$m64"

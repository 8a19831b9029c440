#!/bin/sh
# The live book measured (docs/PERFORMANCE.md, "Live book"): open cost against book size, a
# 1,000-game import into a book a reader holds open, and probe latency at the folding policy's
# segment limit. Run from the repository root after `cargo build --release`:
#
#   benches/live.sh [WORKDIR]
#
# WORKDIR (default /tmp/bookdb-live) keeps the 7.3M-position book between runs (building it
# takes a few minutes). Needs the shared data (../shared/data or $BOOKDB_DATA) and strace.
set -eu
BIN=$(pwd)/target/release/bookdb
DATA=${BOOKDB_DATA:-$(pwd)/../shared/data}
W=${1:-/tmp/bookdb-live}
mkdir -p "$W"
cd "$W"

median() { sort -n | awk '{a[NR]=$1} END {print (NR%2 ? a[(NR+1)/2] : (a[NR/2]+a[NR/2+1])/2)}'; }
ms() { python3 -c 'import subprocess,sys,time
t=time.perf_counter(); subprocess.run(sys.argv[1:],stdout=subprocess.DEVNULL,check=True)
print("%.2f"%((time.perf_counter()-t)*1000))' "$@"; }

# The books: the 200-game sample, and the large set at --max-ply 400 (7.3M positions).
[ -f sample.book ] || "$BIN" import --quiet --book sample.book "$OLDPWD/tests/data/sample.pgn"
if [ ! -f large400.book ]; then
  /usr/bin/time -f "build large400.book: %e s, %M KiB peak" \
    "$BIN" import --quiet --max-ply 400 --book large400.book "$DATA/pgn/large-136k.pgn.zst"
fi
"$BIN" stats --book large400.book | sed -n '3,6p;16,18p'

echo "== open: bookdb probe (start position), 15 runs each, interleaved; median ms"
: > open.txt
for i in $(seq 15); do
  for b in sample large400; do echo "$b $(ms "$BIN" probe --book $b.book)" >> open.txt; done
done
for b in sample large400; do
  echo "$b: $(grep "^$b " open.txt | cut -d' ' -f2 | median) ms"
done
for b in sample large400; do
  n=$(strace -f -c -e trace=pread64 "$BIN" probe --book $b.book 2>&1 >/dev/null \
      | awk '/pread64/ {print $4}')
  echo "$b: ${n:-0} pread64 calls"
done

echo "== 1,000-game import into the 7.3M-position book while a reader holds it open"
rm -rf served.book* && cp large400.book served.book
python3 - "$DATA/pgn/medium-10k.pgn" <<'EOF'
import sys
games = open(sys.argv[1], 'rb').read().split(b'\n[Event ')
games = [games[0]] + [b'[Event ' + g for g in games[1:]]
for k in range(8):
    open(f'k{k}.pgn', 'wb').write(b'\n'.join(games[k * 1000:(k + 1) * 1000]) + b'\n')
EOF
# The reader: a dump blocked on a pipe nobody reads yet (it holds the book open throughout).
mkfifo reader.fifo 2>/dev/null || true
"$BIN" dump --book served.book > reader.fifo &
READER=$!
exec 3< reader.fifo
size() { du -cb served.book* | tail -1 | cut -f1; }
before=$(size)
/usr/bin/time -f "import k0: %e s, %M KiB peak" \
  "$BIN" import --quiet --json --book served.book k0.pgn > k0.json
after=$(size)
python3 -c 'import json,sys; j=json.load(open("k0.json")); print("applied:", j["applied"], "| games:", j["games_imported"], "| positions added:", j["positions_added"])'
echo "bytes added: $((after - before)) (book $before -> $after)"
ls -la served.book*
exec 3<&-
kill $READER 2>/dev/null || true
wait $READER 2>/dev/null || true

echo "== 7 more imports: the book at the segment limit (8)"
for k in 1 2 3 4 5 6 7; do
  /usr/bin/time -f "import k$k: %e s" "$BIN" import --quiet --book served.book k$k.pgn
done
"$BIN" stats --book served.book | tail -2
echo "== probe latency at 8 segments (benches/probe.rs on this book)"
cd "$OLDPWD"
BOOKDB_BENCH_BOOK="$W/served.book" BOOKDB_BENCH_PASSES=2 cargo bench --bench probe 2>/dev/null \
  | tail -25

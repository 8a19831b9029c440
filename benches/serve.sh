#!/usr/bin/env bash
# Load benchmark of `bookdb serve` (docs/PERFORMANCE.md, "The server"), driven by wrk.
#
#   benches/serve.sh            # builds or reuses the large-set book, then measures
#
# In one run, on one server (after a warm-up pass over the paths, not recorded):
#   1. /health at each connection count: the ceiling of the HTTP stack on this machine;
#   2. /masters at each connection count: random book positions, a fifth of them misses;
#   3. /masters at 64 connections while `bookdb import` of the medium set and then
#      `bookdb compact` run against the book being served (zero non-2xx, zero socket errors).
# Prints one JSON line per measurement (requests/s, p50/p99/p99.9 in ms, errors) and a summary.
#
# Environment: BOOKDB_DATA (default ../shared/data), BOOKDB_SERVE_BENCH (work directory,
# default /tmp/bookdb-serve-bench), BOOKDB_SERVE_BOOK (a book to copy instead of building one),
# DURATION (seconds per measurement, default 10), CONNECTIONS (default "16 64 256"),
# MAX_PLY (of the built book, default 400: the 7.3M-position book of PERFORMANCE.md).
# Needs: wrk, python3 with python-chess (to make the miss positions), zstd.
set -euo pipefail
cd "$(dirname "$0")/.."
ROOT=$PWD
DATA=${BOOKDB_DATA:-$ROOT/../shared/data}
WORK=${BOOKDB_SERVE_BENCH:-/tmp/bookdb-serve-bench}
DURATION=${DURATION:-10}
CONNECTIONS=${CONNECTIONS:-"16 64 256"}
MAX_PLY=${MAX_PLY:-400}
BIN=$ROOT/target/release/bookdb
mkdir -p "$WORK"

command -v wrk >/dev/null || { echo "wrk is missing (apt-get install wrk)" >&2; exit 2; }
cargo build --release --quiet

BOOK=$WORK/large.book
if [ -n "${BOOKDB_SERVE_BOOK:-}" ] && [ ! -f "$BOOK" ]; then
    cp "$BOOKDB_SERVE_BOOK" "$BOOK"
fi
if [ ! -f "$BOOK" ]; then
    echo "building $BOOK from the large set (--max-ply $MAX_PLY)…" >&2
    "$BIN" import "$DATA/pgn/large-136k.pgn.zst" --book "$BOOK" --max-ply "$MAX_PLY" --quiet
fi

# Request paths: every Nth position of the book (hits), and for every fourth hit a position
# two random legal moves away (misses: a fifth of all paths).
PATHS=$WORK/paths.txt
if [ ! -s "$PATHS" ]; then
    echo "sampling positions of $BOOK…" >&2
    "$BIN" dump --book "$BOOK" | awk 'NR % 400 == 1' | python3 -c '
import json, random, sys, urllib.parse
import chess
random.seed(7)
hits = []
for line in sys.stdin:
    fen = json.loads(line)["fen"]
    if fen:
        hits.append(fen)
out = []
for i, fen in enumerate(hits):
    out.append(fen)
    if i % 4 == 3:
        b = chess.Board(fen + " 0 1")
        for _ in range(2):
            moves = list(b.legal_moves)
            if not moves:
                break
            b.push(random.choice(moves))
        out.append(b.epd())
random.shuffle(out)
for fen in out:
    print("/masters?fen=" + urllib.parse.quote(fen) + "&moves=12")
' > "$PATHS"
fi
echo "$(wc -l < "$PATHS") request paths in $PATHS" >&2

LUA=$WORK/paths.lua
cat > "$LUA" <<'LUA'
-- Picks a random path of $BOOKDB_PATHS per request; prints one JSON line at the end.
local paths = {}
init = function(args)
  for line in io.lines(os.getenv("BOOKDB_PATHS")) do paths[#paths + 1] = line end
  math.randomseed(os.time() + math.floor(os.clock() * 1000000))
end
request = function()
  if #paths == 0 then return wrk.format("GET", "/health") end
  return wrk.format("GET", paths[math.random(#paths)])
end
done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    '{"requests":%d,"seconds":%.2f,"rps":%.0f,"p50_ms":%.3f,"p99_ms":%.3f,"p999_ms":%.3f,"max_ms":%.3f,"non_2xx":%d,"connect_errors":%d,"read_errors":%d,"write_errors":%d,"timeouts":%d}\n',
    summary.requests, summary.duration / 1e6, summary.requests / (summary.duration / 1e6),
    latency:percentile(50) / 1000, latency:percentile(99) / 1000, latency:percentile(99.9) / 1000,
    latency.max / 1000, e.status, e.connect, e.read, e.write, e.timeout))
end
LUA

LIVE=$WORK/live.book
rm -f "$LIVE" "$LIVE".*
cp "$BOOK" "$LIVE"
"$BIN" serve --book "$LIVE" --listen 127.0.0.1:0 --max-connections 4096 --quiet > "$WORK/serve.out" 2> "$WORK/serve.log" &
SERVER=$!
trap 'kill $SERVER 2>/dev/null || true' EXIT
for _ in $(seq 100); do
    grep -q http:// "$WORK/serve.out" 2>/dev/null && break
    sleep 0.1
done
URL=$(grep -o 'http://[0-9.:]*' "$WORK/serve.out")
echo "server: $URL ($("$BIN" stats --book "$LIVE" --json | python3 -c 'import json,sys; s=json.load(sys.stdin); print(s["positions"], "positions,", s["segments"], "segments")'))" >&2

# Miss ratio of the paths, as the server answers them.
MISSES=$(head -200 "$PATHS" | while read -r p; do curl -s "$URL$p"; echo; done | grep -c '"moves":\[\]' || true)
echo "{\"what\":\"paths\",\"sampled\":200,\"misses\":$MISSES}"

measure() { # name connections path-file-or-empty url-path
    local name=$1 c=$2 paths=$3 path=$4
    local line
    line=$(BOOKDB_PATHS=$paths wrk -t2 -c"$c" -d"${DURATION}s" --timeout 10s -s "$LUA" "$URL$path" | tail -1)
    echo "{\"what\":\"$name\",\"connections\":$c,${line#\{}"
}

EMPTY=$WORK/empty.txt
: > "$EMPTY"
RESULTS=$WORK/results.jsonl
: > "$RESULTS"
# Warm-up (not recorded): a server that has been running holds the blocks it was asked for
# (--cache-mib, default 256 MiB: the whole 7.3M-position book); one pass of DURATION seconds
# over the paths reads most of them once.
measure "warm-up" 64 "$PATHS" /masters
for c in $CONNECTIONS; do
    measure health "$c" "$EMPTY" /health | tee -a "$RESULTS"
    measure masters "$c" "$PATHS" /masters | tee -a "$RESULTS"
done

# /masters while other processes import the medium set and then compact the book.
echo "under load: import of the medium set, then compact…" >&2
BOOKDB_PATHS=$PATHS wrk -t2 -c64 -d600s --timeout 10s -s "$LUA" "$URL/masters" > "$WORK/wrk-writers.out" &
WRK=$!
sleep 2
T0=$(date +%s.%N)
"$BIN" import "$DATA/pgn/medium-10k.pgn" --book "$LIVE" --max-ply "$MAX_PLY" --json > "$WORK/import.json"
T1=$(date +%s.%N)
"$BIN" compact --book "$LIVE" --quiet
T2=$(date +%s.%N)
sleep 2
kill -INT $WRK
wait $WRK || true
LINE=$(tail -1 "$WORK/wrk-writers.out")
APPLIED=$(python3 -c 'import json,sys; print(json.load(open(sys.argv[1])).get("applied","?"))' "$WORK/import.json" 2>/dev/null || echo "?")
echo "{\"what\":\"masters during import+compact\",\"connections\":64,\"import_s\":$(echo "$T1 - $T0" | bc),\"import_applied\":\"$APPLIED\",\"compact_s\":$(echo "$T2 - $T1" | bc),${LINE#\{}" | tee -a "$RESULTS"
curl -s "$URL/metrics" | grep -E '^bookdb_(book_refreshes_total|book_generation|book_refresh_errors_total|http_requests_total\{route="/masters")' >&2

python3 - "$RESULTS" <<'PY'
import json, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
health = {r["connections"]: r for r in rows if r["what"] == "health"}
print("\nconnections  /health rps   /masters rps  ratio   /masters p50/p99/p99.9 ms")
for r in rows:
    if r["what"] == "masters":
        h = health[r["connections"]]
        print(f'{r["connections"]:>11}  {h["rps"]:>11.0f}  {r["rps"]:>12.0f}  {r["rps"]/h["rps"]:>5.2f}   '
              f'{r["p50_ms"]:.3f} / {r["p99_ms"]:.3f} / {r["p999_ms"]:.3f}')
for r in rows:
    if r["what"].startswith("masters during"):
        errs = r["non_2xx"] + r["connect_errors"] + r["read_errors"] + r["write_errors"] + r["timeouts"]
        print(f'during import ({r["import_s"]:.1f} s, {r["import_applied"]}) and compact ({r["compact_s"]:.1f} s): '
              f'{r["rps"]:.0f} rps, p99 {r["p99_ms"]:.3f} ms, p99.9 {r["p999_ms"]:.3f} ms, '
              f'{r["non_2xx"]} non-2xx, {errs - r["non_2xx"]} socket errors')
PY

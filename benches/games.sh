#!/usr/bin/env bash
# Cost of the games in explorer answers (docs/PERFORMANCE.md, "Game references"): `/masters`
# and `/lichess` with their default game lists against the same requests asking for none
# (`topGames=0&recentGames=0`), on one server, one connection (latency, not throughput),
# alternating ROUNDS times; prints one JSON line per measurement and the ratios of the medians.
#
#   benches/games.sh BOOK [BIN]
#
# BOOK: a chess book with stored games (e.g. `bookdb import bench.pgn --book g.book --max-ply
# 30`); BIN: the bookdb binary (default target/release/bookdb). Environment: DURATION (seconds
# per measurement, default 10), ROUNDS (default 3), EVERY (sample every Nth position of the
# book's dump, default 200). Needs: wrk, python3.
set -euo pipefail
BOOK=${1:?usage: benches/games.sh BOOK [BIN]}
BIN=${2:-$(dirname "$0")/../target/release/bookdb}
DURATION=${DURATION:-10}
ROUNDS=${ROUNDS:-3}
EVERY=${EVERY:-200}
WORK=$(mktemp -d)
SERVER=
trap '[ -n "$SERVER" ] && kill $SERVER 2>/dev/null; rm -rf "$WORK"' EXIT
command -v wrk >/dev/null || { echo "wrk is missing (apt-get install wrk)" >&2; exit 2; }

# Paths: every EVERY-th position of the book, and the first plies (where lists are longest).
"$BIN" dump --book "$BOOK" | awk -v n="$EVERY" 'NR % n == 1' | python3 -c '
import json, sys, urllib.parse
fens = [json.loads(l)["fen"] for l in sys.stdin]
fens += ["rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq -",
         "rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq -"] * 20
for f in fens:
    print("fen=" + urllib.parse.quote(f) + "&moves=12")
' > "$WORK/q.txt"
echo "$(wc -l < "$WORK/q.txt") positions" >&2
for route in masters lichess; do
    sed "s|^|/$route?|" "$WORK/q.txt" > "$WORK/$route-games.txt"
    sed "s|^|/$route?|; s|\$|\&topGames=0\&recentGames=0|" "$WORK/q.txt" > "$WORK/$route-none.txt"
done
cat > "$WORK/paths.lua" <<'LUA'
local paths = {}
local i = 0
init = function(args)
  for line in io.lines(os.getenv("BOOKDB_PATHS")) do paths[#paths + 1] = line end
end
request = function()
  i = i % #paths + 1
  return wrk.format("GET", paths[i])
end
done = function(summary, latency, requests)
  io.write(string.format('{"requests":%d,"p50_us":%.1f,"p99_us":%.1f,"non_2xx":%d}\n',
    summary.requests, latency:percentile(50), latency:percentile(99), summary.errors.status))
end
LUA
"$BIN" serve --book "$BOOK" --listen 127.0.0.1:0 --quiet > "$WORK/serve.out" 2> "$WORK/serve.log" &
SERVER=$!
for _ in $(seq 100); do
    grep -q http:// "$WORK/serve.out" 2>/dev/null && break
    sleep 0.1
done
URL=$(grep -o 'http://[0-9.:]*' "$WORK/serve.out")
run() { # name path-file
    local line
    line=$(BOOKDB_PATHS=$2 wrk -t1 -c1 -d"${DURATION}s" -s "$WORK/paths.lua" "$URL/" | tail -1)
    echo "{\"what\":\"$1\",${line#\{}" | tee -a "$WORK/results.jsonl"
}
# Warm-up: every path once of each kind (blocks, game blocks and references read once).
for f in masters-games masters-none lichess-games lichess-none; do
    DURATION=3 run "warm-up $f" "$WORK/$f.txt" > /dev/null
done
: > "$WORK/results.jsonl"
for _ in $(seq "$ROUNDS"); do
    for f in masters-games masters-none lichess-games lichess-none; do
        run "$f" "$WORK/$f.txt"
    done
done
python3 - "$WORK/results.jsonl" <<'PY'
import json, statistics, sys
rows = [json.loads(l) for l in open(sys.argv[1])]
med = lambda w, k: statistics.median(r[k] for r in rows if r["what"] == w)
for route in ("masters", "lichess"):
    g, n = med(route + "-games", "p50_us"), med(route + "-none", "p50_us")
    print(json.dumps({"route": route, "p50_us_with_games": g, "p50_us_without": n,
                      "ratio": round(g / n, 3),
                      "p99_us_with_games": med(route + "-games", "p99_us"),
                      "p99_us_without": med(route + "-none", "p99_us")}))
PY

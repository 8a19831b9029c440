#!/usr/bin/env bash
# What facets cost (issue 26): book bytes, import time and probe latency of a book with facets
# against the same games' book without (`--facets none`), side by side in one run.
#
#   bash benches/facets.sh            # BOOKDB=target/release/bookdb, RUNS=3
#
# Data: ../shared/data/pgn/medium-10k.pgn retagged with lichess-style tags
# (../shared/tools/retag.py 26) at --max-ply 30, and large-136k.pgn.zst as it is (dates only)
# at the default --max-ply. Prints a table for people and a last line `RESULT {json}`.
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
BOOKDB=${BOOKDB:-$here/target/release/bookdb}
RUNS=${RUNS:-3}
data=$here/../shared/data/pgn
tools=$here/../shared/tools
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
[ -x "$BOOKDB" ] || { echo "build first: cargo build --release" >&2; exit 1; }
[ -f "$data/medium-10k.pgn" ] || { echo "SKIP: $data/medium-10k.pgn absent" >&2; exit 0; }
python3 "$tools/retag.py" 26 < "$data/medium-10k.pgn" > "$tmp/retagged.pgn"

median() { sort -n | awk '{a[NR]=$1} END {print a[int((NR+1)/2)]}'; }

# build NAME PGN FACETS MAXPLY: imports RUNS times, keeps the last book; prints the median
# wall seconds.
build() {
  local name=$1 pgn=$2 facets=$3 ply=$4 t
  for _ in $(seq "$RUNS"); do
    rm -f "$tmp/$name"*
    t=$( { /usr/bin/time -f '%e' "$BOOKDB" import --quiet --facets "$facets" --max-ply "$ply" \
        --book "$tmp/$name" "$pgn" >/dev/null; } 2>&1 | tail -1)
    echo "$t"
  done | median
}

# cells NAME: (pair, cell) records and (position, month) rows of a book (from dump --facets).
cells() {
  "$BOOKDB" dump --facets --book "$tmp/$1" | python3 -c '
import json, sys
pc = pm = 0
for line in sys.stdin:
    e = json.loads(line)
    months = set()
    for m in e["moves"]:
        for c in m.get("cells", []):
            pc += 1
            months.add(c["period"])
    pm += len(months)
print(pc, pm)'
}

bytes() { stat -c %s "$tmp/$1"; }
pairs() { "$BOOKDB" stats --json --book "$tmp/$1" | python3 -c 'import json,sys; print(json.load(sys.stdin)["pairs"])'; }

# probe_us NAME QUERY: median microseconds of /lichess?QUERY over 200 requests to a server.
probe_us() {
  local name=$1 q=$2 port
  "$BOOKDB" serve --book "$tmp/$name" --listen 127.0.0.1:0 > "$tmp/serve.log" 2>&1 &
  local pid=$!
  for _ in $(seq 100); do
    port=$(grep -o '127.0.0.1:[0-9]*' "$tmp/serve.log" | head -1 | cut -d: -f2) && [ -n "$port" ] && break
    sleep 0.1
  done
  for _ in $(seq 20); do curl -s "http://127.0.0.1:$port/lichess?$q" > /dev/null; done
  for _ in $(seq 200); do
    curl -s -o /dev/null -w '%{time_total}\n' "http://127.0.0.1:$port/lichess?$q"
  done | awk '{print $1 * 1e6}' | median
  kill "$pid"; wait "$pid" 2>/dev/null || true
}

echo "bookdb: $("$BOOKDB" --version | head -1); RUNS=$RUNS; $(nproc) cores"
t_rf=$(build rf "$tmp/retagged.pgn" month,speed,rating,mode 30)
t_rn=$(build rn "$tmp/retagged.pgn" none 30)
read -r rf_cells rf_rows < <(cells rf)
rf_pairs=$(pairs rf)
printf '%-34s %12s %12s %8s %10s\n' "book" "faceted B" "none B" "ratio" "import f/n"
printf '%-34s %12d %12d %8.3f %10.3f\n' "medium retagged, --max-ply 30" "$(bytes rf)" "$(bytes rn)" \
  "$(echo "$(bytes rf) / $(bytes rn)" | bc -l)" "$(echo "$t_rf / $t_rn" | bc -l)"
echo "  pairs $rf_pairs; (pair, cell) records $rf_cells; (position, month) rows $rf_rows"
echo "  bytes per pair $(echo "$(bytes rf) / $rf_pairs" | bc -l | cut -c1-6) (none: $(echo "$(bytes rn) / $rf_pairs" | bc -l | cut -c1-6));" \
  "extra bytes per (pair, cell) $(echo "($(bytes rf) - $(bytes rn)) / $rf_cells" | bc -l | cut -c1-6);" \
  "bytes per (position, month) row $(echo "$(bytes rf) / $rf_rows" | bc -l | cut -c1-6)"
large=null
if [ -f "$data/large-136k.pgn.zst" ]; then
  t_lf=$(build lf "$data/large-136k.pgn.zst" month,speed,rating,mode 50)
  t_ln=$(build ln "$data/large-136k.pgn.zst" none 50)
  printf '%-34s %12d %12d %8.3f %10.3f\n' "large (dates only), --max-ply 50" "$(bytes lf)" "$(bytes ln)" \
    "$(echo "$(bytes lf) / $(bytes ln)" | bc -l)" "$(echo "$t_lf / $t_ln" | bc -l)"
  large="{\"faceted\":$(bytes lf),\"none\":$(bytes ln),\"import_secs\":[$t_lf,$t_ln]}"
else
  echo "SKIP large: $data/large-136k.pgn.zst absent"
fi
u_f=$(probe_us rf "")
u_n=$(probe_us rn "")
u_filt=$(probe_us rf "speeds=blitz,rapid&ratings=2000,2200,2500&since=2015-01&until=2024-12&history=true")
echo "unfiltered /lichess start position: faceted ${u_f} us, none ${u_n} us (ratio $(echo "$u_f / $u_n" | bc -l | cut -c1-5));" \
  "filtered with history: ${u_filt} us (HTTP round trip included)"
echo "RESULT {\"medium\":{\"faceted\":$(bytes rf),\"none\":$(bytes rn),\"pairs\":$rf_pairs,\"pair_cells\":$rf_cells,\"position_months\":$rf_rows,\"import_secs\":[$t_rf,$t_rn]},\"large\":$large,\"probe_us\":{\"faceted\":$u_f,\"none\":$u_n,\"filtered\":$u_filt}}"

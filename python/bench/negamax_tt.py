"""easyAI's Negamax on ConnectFour with bookdb.TranspositionTable against easyAI's own pickled
TranspositionTable: a first run on an empty table, a second run (a new process) reusing the
file, and the table's size on disk (docs/PERFORMANCE.md).

    python3 python/bench/negamax_tt.py [--depth 7] [--runs 3]

`easyai` is easyAI's `TranspositionTable` as easyAI uses it: its games (ConnectFour has no
`unmake_move`) are deep-copied during the search, players, algorithm and table with them, so
the dict is copied again and again; `easyai-shared` is the same table with a `__deepcopy__`
that shares it (as bookdb's does), the cost of the lookups alone.

Each run is its own process: it opens the table (bookdb: the file; easyAI: `from_file` of the
pickle, when it exists), asks Negamax for the first move of an empty board, reports the time
of the search (and of loading/saving the table) and the nodes scored, and saves the table
(bookdb: `to_file`, which publishes; easyAI: `to_file`, which pickles).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile

RUN = r"""
import json, os, sys, time
from easyAI import AI_Player, Negamax, TranspositionTable
from easyAI.games import ConnectFour
import bookdb

class C4(ConnectFour):
    def ttentry(self):
        return (self.current_player, tuple(self.board.flatten().tolist()))

nodes = 0
def scoring(game):
    global nodes
    nodes += 1
    return -100 if game.lose() else 0

kind, path, depth = sys.argv[1], sys.argv[2], int(sys.argv[3])
t0 = time.perf_counter()
class Shared(TranspositionTable):
    # easyAI's table, not deep-copied with every game copy (one dict for the search).
    def __deepcopy__(self, memo):
        return self

if kind == "bookdb":
    table = bookdb.TranspositionTable(path)
else:
    table = Shared() if kind == "easyai-shared" else TranspositionTable()
    if os.path.exists(path):
        table.from_file(path)
t1 = time.perf_counter()
game = C4([AI_Player(Negamax(depth, scoring, tt=table))] * 2)
move = game.get_move()
t2 = time.perf_counter()
table.to_file(path)
if kind == "bookdb":
    table.close()
t3 = time.perf_counter()
size = sum(os.path.getsize(os.path.join(os.path.dirname(path), f))
           for f in os.listdir(os.path.dirname(path))
           if f == os.path.basename(path) or f.startswith(os.path.basename(path) + "."))
print(json.dumps({"move": int(move), "nodes": nodes, "open": t1 - t0, "search": t2 - t1,
                  "save": t3 - t2, "bytes": size}))
"""


def run(kind: str, path: str, depth: int) -> dict:
    out = subprocess.run([sys.executable, "-c", RUN, kind, path, str(depth)], check=True,
                         capture_output=True, text=True).stdout
    return json.loads(out)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--depth", type=int, default=7)
    ap.add_argument("--runs", type=int, default=3)
    a = ap.parse_args()
    rows: dict = {}
    for _ in range(a.runs):
        for kind in ("easyai", "easyai-shared", "bookdb"):
            with tempfile.TemporaryDirectory() as d:
                path = os.path.join(d, "c4.tt" if kind == "bookdb" else "c4.pickle")
                first, second = run(kind, path, a.depth), run(kind, path, a.depth)
                rows.setdefault(kind, []).append((first, second))
    for kind, runs in rows.items():
        f = [r[0] for r in runs]
        s = [r[1] for r in runs]
        med = lambda xs, k: statistics.median(x[k] for x in xs)  # noqa: E731
        print(f"{kind:13} first:  move {f[0]['move']}, {med(f, 'nodes'):9.0f} nodes, search "
              f"{med(f, 'search'):7.2f} s, save {med(f, 'save'):6.2f} s, "
              f"{med(f, 'bytes') / 1e6:7.2f} MB on disk")
        print(f"{kind:13} second: move {s[0]['move']}, {med(s, 'nodes'):9.0f} nodes, open "
              f"{med(s, 'open'):6.2f} s, search {med(s, 'search'):7.2f} s, "
              f"{med(s, 'bytes') / 1e6:7.2f} MB on disk")
        print(f"{kind:13} runs: " + json.dumps(runs))


if __name__ == "__main__":
    main()

"""find_all on a bookdb book against python-chess's MemoryMappedReader.find_all on the
Polyglot export of the same book (docs/PERFORMANCE.md).

    python3 python/bench/find_all.py [PGN] [--max-ply 30] [--runs 7]

Builds the book from PGN (default: the 10k-game sample of ../shared/data), exports it with
`bookdb.export_polyglot`, collects the distinct positions of the games' first plies, and
times one pass of `list(find_all(board))` over all of them with each reader, `--runs` times
(alternating); prints the medians per call.
"""

from __future__ import annotations

import argparse
import pathlib
import statistics
import tempfile
import time

import chess
import chess.pgn
import chess.polyglot

import bookdb

ROOT = pathlib.Path(__file__).resolve().parents[2]


def positions(pgn: pathlib.Path, max_ply: int, limit: int) -> list[chess.Board]:
    seen: set[str] = set()
    out: list[chess.Board] = []
    with pgn.open(encoding="utf-8", errors="replace") as f:
        while len(out) < limit and (game := chess.pgn.read_game(f)) is not None:
            board = game.board()
            for ply, move in enumerate(game.mainline_moves()):
                if ply >= max_ply:
                    break
                fen = board.fen()
                if fen not in seen:
                    seen.add(fen)
                    out.append(board.copy(stack=False))
                board.push(move)
    return out


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("pgn", nargs="?", default=str(ROOT.parent / "shared/data/pgn/medium-10k.pgn"))
    ap.add_argument("--max-ply", type=int, default=30)
    ap.add_argument("--positions", type=int, default=20000)
    ap.add_argument("--runs", type=int, default=7)
    a = ap.parse_args()
    with tempfile.TemporaryDirectory() as d:
        book_path, bin_path = pathlib.Path(d) / "b.book", pathlib.Path(d) / "b.bin"
        s = bookdb.import_games(book_path, a.pgn, max_ply=a.max_ply)
        bookdb.export_polyglot(book_path, bin_path)
        boards = positions(pathlib.Path(a.pgn), a.max_ply, a.positions)
        print(f"{s['games_imported']} games, {len(boards)} positions asked")
        book = bookdb.open(book_path, refresh=None)
        pg = chess.polyglot.open_reader(bin_path)
        ours, theirs = [], []
        n_ours = n_theirs = 0
        for _ in range(a.runs):
            t = time.perf_counter()
            n_ours = sum(len(list(book.find_all(b, minimum_weight=1))) for b in boards)
            ours.append((time.perf_counter() - t) / len(boards))
            t = time.perf_counter()
            n_theirs = sum(len(list(pg.find_all(b))) for b in boards)
            theirs.append((time.perf_counter() - t) / len(boards))
        assert n_ours == n_theirs, (n_ours, n_theirs)
        mo, mt = statistics.median(ours), statistics.median(theirs)
        print(f"entries per pass: {n_ours}")
        print(f"bookdb find_all:             median {mo * 1e6:7.2f} us/position "
              f"(runs {', '.join(f'{x * 1e6:.2f}' for x in ours)})")
        print(f"python-chess MemoryMapped:   median {mt * 1e6:7.2f} us/position "
              f"(runs {', '.join(f'{x * 1e6:.2f}' for x in theirs)})")
        print(f"ratio bookdb / python-chess: {mo / mt:.2f}")


if __name__ == "__main__":
    main()

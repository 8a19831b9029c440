#!/usr/bin/env python3
"""An independent oracle for bookdb's game references (brief §9, docs/CONTRACT.md "Games"),
written from the brief with python-chess; it shares no code with bookdb (the cell of a game is
read by facet_oracle.py, the facet oracle beside it, from §8).

usage: games_oracle.py PGN... [--max-ply N] < QUERIES > ANSWERS

Every game must carry a `GameId` tag (8 characters of 0-9A-Za-z): the oracle does not derive
ids from fingerprints. It counts the games as §2 says (the first N plies, each (position, move)
once per game) and keeps, per (position, move), every game that played it with its cell, date,
strength and id. A query (a JSON list on stdin) is
    {"fen": FEN | "play": [uci, ...], "filters": {...as facet_oracle...},
     "route": "lichess" | "masters", "topGames": N?, "recentGames": N?}
and its answer {"top": [id, ...], "recent": [id, ...] (lichess only),
                "single": {uci: id}}: §9's choice over the games whose cells pass:
- strength = WhiteElo + BlackElo when both are ratings, else 0; strongest = by strength, then
  newest; newest = by date (UTCDate if it parses, else Date; `yyyymmdd`, unknown parts 0),
  then id;
- /masters: topGames = the min(topGames, 15) strongest;
- /lichess: topGames = the min(topGames, 4) strongest of rating group 2000 and above (both
  rated, mean >= 2000); recentGames = the min(recentGames, 8 - top shown) newest of the others;
- single: a move's game when exactly one game counts for it.
"""
import argparse
import json
import os
import re
import sys

import chess

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import facet_oracle as fo  # noqa: E402

DATE_SHAPE = re.compile(r"^(\d{4}|\?{4})\.(\d{2}|\?{2})\.(\d{2}|\?{2})$")


def date_key(h):
    """yyyymmdd of UTCDate if it parses, else Date; unknown parts 0; 0 when undated."""
    for tag in ("UTCDate", "Date"):
        v = h.get(tag)
        if v is None or fo.parse_date(v) is None:
            continue
        y, m, d = DATE_SHAPE.match(v).groups()
        num = lambda s: 0 if "?" in s else int(s)  # noqa: E731
        if num(y) == 0:
            return 0
        return num(y) * 10000 + num(m) * 100 + num(d)
    return 0


class Games(fo.Book):
    """The facet oracle's reader (add_file) with games kept instead of counts."""

    def __init__(self, max_ply):  # pylint: disable=super-init-not-called
        self.max_ply = max_ply
        self.pos = {}  # ident -> uci -> [game, ...]
        self.counted = 0
        self.seen_ids = set()

    def add_game(self, game):
        h = game.raw_tags
        variant = h.get("Variant")
        if variant is not None and variant.lower() not in ("standard", "from position"):
            return
        if game.errors:
            return
        moves = list(game.mainline_moves())
        if not moves or any(not m for m in moves):
            return
        gid = h["GameId"]
        if gid in self.seen_ids:  # §9: a game id the book holds is not counted again
            return
        self.seen_ids.add(gid)
        self.counted += 1
        wr, br = fo.rating_of(h.get("WhiteElo")), fo.rating_of(h.get("BlackElo"))
        group = fo.group_of((wr + br) // 2) if wr is not None and br is not None else None
        rec = {
            "id": gid,
            "cell": (fo.period_of(h), fo.speed_of(h), group, fo.mode_of(h)),
            "date": date_key(h),
            "strength": wr + br if wr is not None and br is not None else 0,
            "top_group": group is not None and group >= 2000,
        }
        board = game.board()
        seen = set()
        for ply, move in enumerate(moves):
            if ply >= self.max_ply:
                break
            ident = fo.identity(board)
            if (ident, move.uci()) not in seen:
                seen.add((ident, move.uci()))
                self.pos.setdefault(ident, {}).setdefault(move.uci(), []).append(rec)
            board.push(move)


def answer(book, q):
    board = chess.Board(q["fen"]) if q.get("fen") else chess.Board()
    for u in q.get("play", []):
        board.push_uci(u)
    flt = {k: v for k, v in q.get("filters", {}).items() if v is not None}
    moves = book.pos.get(fo.identity(board), {})
    passing = []
    single = {}
    for uci, games in moves.items():
        ok = [g for g in games if fo.passes(g["cell"], flt)]
        if len(ok) == 1:
            single[uci] = ok[0]["id"]
        passing.extend(ok)
    uniq = {g["id"]: g for g in passing}.values()
    newest = lambda g: (g["date"], g["id"])  # noqa: E731
    strongest = lambda g: (g["strength"], g["date"], g["id"])  # noqa: E731
    if q.get("route") == "masters":
        n = min(q.get("topGames", 15), 15)
        top = sorted(uniq, key=strongest, reverse=True)[:n]
        return {"top": [g["id"] for g in top], "single": single}
    n = min(q.get("topGames", 4), 4)
    top = sorted((g for g in uniq if g["top_group"]), key=strongest, reverse=True)[:n]
    shown = {g["id"] for g in top}
    r = min(q.get("recentGames", 8), 8 - len(top))
    recent = sorted((g for g in uniq if g["id"] not in shown), key=newest, reverse=True)[:r]
    return {"top": [g["id"] for g in top], "recent": [g["id"] for g in recent], "single": single}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("pgn", nargs="+")
    ap.add_argument("--max-ply", type=int, default=50)
    a = ap.parse_args()
    book = Games(a.max_ply)
    for p in a.pgn:
        book.add_file(p)
    queries = json.load(sys.stdin)
    json.dump({"counted": book.counted, "answers": [answer(book, q) for q in queries]},
              sys.stdout)


if __name__ == "__main__":
    main()

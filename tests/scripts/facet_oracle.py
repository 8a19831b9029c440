#!/usr/bin/env python3
"""An independent oracle for bookdb's facets (docs/CONTRACT.md §2 "Counting a game"; the facet rules of docs/FORMAT.md §12),
written from the design brief alone with python-chess; it shares no code with bookdb.

usage: facet_oracle.py PGN... [--max-ply N] [--queries FILE|-] [--self-check] [--cells]

It counts every game of the PGN files as §2 says and keeps, per (position, move, cell), the
white/draws/black/unknown counts and the sums and counts of the mover's and the opponent's
ratings; a cell is §8's (period, speed, rating group, mode). It then answers the queries (a JSON
list; `-` or no --queries: stdin) with one JSON object:

    {"games": {"counted": N, "skipped": {"variant": N, "illegal": N}},
     "answers": [ANSWER, ...]}

A query: {"fen": FEN (default: the start) | "play": [uci, ...] (from fen),
          "filters": {"speeds": [...], "ratings": [int, ...], "modes": [...],
                      "since": "YYYY"|"YYYY-MM", "until": ...},
          "history": bool, "route": "lichess"|"masters"|"probe"}
An answer: {"key", "fen", "white", "draws", "black", "unknown",
            "moves": {uci: {"san", "white", "draws", "black", "unknown", "games",
                            "averageRating"?, "averageOpponentRating"?, "performance"?}},
            "history"?: [{"month": "YYYY-MM" | "year": YYYY, "white", "draws", "black",
                          "unknown"}, ...]}
or {"error": "..."} for a query the oracle cannot place (an illegal move in `play`).

--cells adds "cells": per counted game {"moves": its first 12 moves (UCI), "period": "YYYY-MM" |
"YYYY" | null, "speed": name | null, "group": int | null, "mode": name | null, "result":
"white" | "draws" | "black" | "unknown"}, to check the oracle's reading of tags by hand.

--self-check asserts invariants of the counts themselves (unfiltered totals against a plain
count, disjoint filters summing to the whole) and prints what it checked on stderr.
"""
import argparse
import json
import math
import re
import sys

import chess
import chess.pgn
import chess.polyglot

SPEEDS = ["ultraBullet", "bullet", "blitz", "rapid", "classical", "correspondence"]
MODES = ["rated", "casual"]
GROUPS = [0, 1000, 1200, 1400, 1600, 1800, 2000, 2200, 2500]

# lila-openingexplorer src/model/stats.rs, Stats::performance (FIDE handbook B.02.2017).
DELTAS = [
    -800.0, -677.0, -589.0, -538.0, -501.0, -470.0, -444.0, -422.0, -401.0, -383.0, -366.0,
    -351.0, -336.0, -322.0, -309.0, -296.0, -284.0, -273.0, -262.0, -251.0, -240.0, -230.0,
    -220.0, -211.0, -202.0, -193.0, -184.0, -175.0, -166.0, -158.0, -149.0, -141.0, -133.0,
    -125.0, -117.0, -110.0, -102.0, -95.0, -87.0, -80.0, -72.0, -65.0, -57.0, -50.0, -43.0,
    -36.0, -29.0, -21.0, -14.0, -7.0, 0.0, 7.0, 14.0, 21.0, 29.0, 36.0, 43.0, 50.0, 57.0,
    65.0, 72.0, 80.0, 87.0, 95.0, 102.0, 110.0, 117.0, 125.0, 133.0, 141.0, 149.0, 158.0,
    166.0, 175.0, 184.0, 193.0, 202.0, 211.0, 220.0, 230.0, 240.0, 251.0, 262.0, 273.0,
    284.0, 296.0, 309.0, 322.0, 336.0, 351.0, 366.0, 383.0, 401.0, 422.0, 444.0, 470.0,
    501.0, 538.0, 589.0, 677.0, 800.0,
]
assert len(DELTAS) == 101

# ---------------------------------------------------------------------------------------------
# §8: a game's cell from its tags.

DATE_RE = re.compile(r"^([0-9]{4}|\?{4})\.([0-9]{2}|\?{2})\.([0-9]{2}|\?{2})$")


def parse_date(value):
    """`YYYY.MM.DD` with `??` allowed -> ("month", y, m) | ("year", y) | ("undated",), or None
    when it does not parse (a month outside 01..12 or a day outside 01..31 does not parse)."""
    if value is None:
        return None
    m = DATE_RE.match(value)
    if not m:
        return None
    y, mo, d = m.groups()
    if mo != "??" and not 1 <= int(mo) <= 12:
        return None
    if d != "??" and not 1 <= int(d) <= 31:
        return None
    if y == "????":
        return ("undated",)
    if mo == "??":
        return ("year", int(y))
    return ("month", int(y), int(mo))


def period_of(headers):
    p = parse_date(headers.get("UTCDate"))
    if p is None:
        p = parse_date(headers.get("Date"))
    return p if p is not None else ("undated",)


TC_FORMS = [
    re.compile(r"^([0-9]+)$"),
    re.compile(r"^([0-9]+)\+([0-9]+)$"),
    re.compile(r"^[0-9]+/([0-9]+)$"),
    re.compile(r"^\*([0-9]+)$"),
]


def speed_of(headers):
    tc = headers.get("TimeControl")
    if tc is None:
        return None
    if tc == "-":
        return "correspondence"
    first = tc.split(":")[0]
    for form in TC_FORMS:
        m = form.match(first)
        if m:
            base = int(m.group(1))
            inc = int(m.group(2)) if m.lastindex and m.lastindex >= 2 else 0
            total = base + 40 * inc
            for limit, speed in ((30, "ultraBullet"), (180, "bullet"), (480, "blitz"),
                                 (1500, "rapid"), (21600, "classical")):
                if total < limit:
                    return speed
            return "correspondence"
    return None


def rating_of(value):
    """A positive integer rating, else None."""
    if value is None or not re.fullmatch(r"[0-9]+", value):
        return None
    r = int(value)
    return r if r > 0 else None


def group_of(r):
    return max(g for g in GROUPS if g <= r) if r >= 0 else 0


def mode_of(headers):
    ev = headers.get("Event", "").lower()
    if ev.startswith("rated"):
        return "rated"
    if ev.startswith("casual"):
        return "casual"
    return None


# ---------------------------------------------------------------------------------------------
# §2: position identity and counting.


def ep_file(board):
    """The en-passant file when a pawn of the side to move stands beside the pawn that just made
    a double step (whether the capture is legal does not matter), else None."""
    if board.ep_square is None:
        return None
    behind = chess.shift_down if board.turn == chess.WHITE else chess.shift_up
    mask = behind(chess.BB_SQUARES[board.ep_square])
    mask = chess.shift_left(mask) | chess.shift_right(mask)
    if mask & board.pawns & board.occupied_co[board.turn]:
        return chess.square_file(board.ep_square)
    return None


def identity(board):
    parts = board.fen().split()
    f = ep_file(board)
    ep = "-" if f is None else chess.square_name(board.ep_square)
    fen4 = " ".join(parts[:3] + [ep])
    return (chess.polyglot.zobrist_hash(board), fen4)


class MainlineOnly(chess.pgn.GameBuilder):
    """Skips variations (never parsed, so their errors do not count); records errors; keeps
    the tags as written (python-chess fills in the Seven Tag Roster's defaults and copies the
    movetext's result into a `*` Result tag; §2 reads the Result tag itself)."""

    def begin_game(self):
        super().begin_game()
        self.game.raw_tags = {}

    def visit_header(self, tagname, tagvalue):
        super().visit_header(tagname, tagvalue)
        self.game.raw_tags[tagname] = tagvalue

    def begin_variation(self):
        return chess.pgn.SKIP

    def end_variation(self):
        pass

    def handle_error(self, error):
        self.game.errors.append(error)


RESULT = {"1-0": 0, "1/2-1/2": 1, "0-1": 2}  # index into the (white, draws, black, unknown) stats


class Book:
    def __init__(self, max_ply):
        self.max_ply = max_ply
        # (key, fen4) -> uci -> cell -> [w, d, b, u, mover_sum, mover_n, opp_sum, opp_n]
        self.pos = {}
        self.counted = 0
        self.skipped = {"variant": 0, "illegal": 0}
        self.plain_start = [0, 0, 0, 0]  # a plain count of the start position's games by result
        self.with_moves = 0  # games from the start position with at least one move
        self.cells = []  # per counted game: (its first moves in UCI, its cell)
        # Games whose Event names the speed as lichess writes it ("Rated Blitz game"), which
        # lichess (and retag.py) derive from the clock by the same rule: [agree, disagree].
        self.event_speed = [0, 0]

    def add_file(self, path):
        with open(path, encoding="utf-8", errors="replace") as f:
            while True:
                game = chess.pgn.read_game(f, Visitor=MainlineOnly)
                if game is None:
                    break
                self.add_game(game)

    def add_game(self, game):
        h = game.raw_tags
        variant = h.get("Variant")
        if variant is not None and variant.lower() not in ("standard", "from position"):
            self.skipped["variant"] += 1
            return
        if game.errors:
            self.skipped["illegal"] += 1
            return
        board = game.board()
        moves = list(game.mainline_moves())
        if any(not m for m in moves):  # a null move is no move
            self.skipped["illegal"] += 1
            return
        self.counted += 1
        wr, br = rating_of(h.get("WhiteElo")), rating_of(h.get("BlackElo"))
        group = group_of((wr + br) // 2) if wr is not None and br is not None else None
        cell = (period_of(h), speed_of(h), group, mode_of(h))
        res = RESULT.get(h.get("Result", "*"), 3)
        named = re.fullmatch(r"(?:Rated|Casual) (\w+) game", h.get("Event", ""))
        if named and "TimeControl" in h:
            self.event_speed[(cell[1] or "").lower() != named.group(1).lower()] += 1
        self.cells.append(([m.uci() for m in moves[:12]], cell, res))
        if moves and board.fen() == chess.STARTING_FEN:
            self.plain_start[res] += 1
            self.with_moves += 1
        seen = set()
        for ply, move in enumerate(moves):
            if ply >= self.max_ply:
                break
            ident = identity(board)
            uci = move.uci()
            if (ident, uci) not in seen:
                seen.add((ident, uci))
                mover, opp = (wr, br) if board.turn == chess.WHITE else (br, wr)
                cells = self.pos.setdefault(ident, {}).setdefault(uci, {})
                st = cells.setdefault(cell, [0] * 8)
                st[res] += 1
                if mover is not None:
                    st[4] += mover
                    st[5] += 1
                if opp is not None:
                    st[6] += opp
                    st[7] += 1
            board.push(move)


# ---------------------------------------------------------------------------------------------
# §8: queries.


def parse_bound(v):
    """"YYYY-MM" -> ("month", y, m); "YYYY" -> ("year", y)."""
    if v is None:
        return None
    m = re.fullmatch(r"([0-9]{4})-([0-9]{2})", v)
    if m and 1 <= int(m.group(2)) <= 12:
        return ("month", int(m.group(1)), int(m.group(2)))
    m = re.fullmatch(r"([0-9]{4})", v)
    if m:
        return ("year", int(m.group(1)))
    raise ValueError("bad since/until %r" % v)


def passes(cell, flt):
    period, speed, group, mode = cell
    if "speeds" in flt and speed not in flt["speeds"]:
        return False
    if "modes" in flt and mode not in flt["modes"]:
        return False
    if "ratings" in flt:
        if group is None or group not in {group_of(r) for r in flt["ratings"]}:
            return False
    for name, cmp in (("since", lambda a, b: a >= b), ("until", lambda a, b: a <= b)):
        bound = parse_bound(flt.get(name))
        if bound is None:
            continue
        if bound[0] == "month":
            if period[0] != "month" or not cmp(period[1:], bound[1:]):
                return False
        else:
            if period[0] not in ("month", "year") or not cmp(period[1], bound[1]):
                return False
    return True


def lila_round(x):
    """Rust's f64::round: half away from zero."""
    return int(math.copysign(math.floor(abs(x) + 0.5), x))


def performance(wins, draws, losses, opp_sum, opp_n):
    total = wins + draws + losses
    if opp_n == 0 or total == 0:
        return None
    avg = opp_sum / opp_n
    score = 100 * wins + 50 * draws
    p = score / total
    idx = math.trunc(p)
    frac = p - math.trunc(p)
    nxt = DELTAS[idx + 1] if idx + 1 < len(DELTAS) else 800.0
    return lila_round(avg + DELTAS[idx] * (1.0 - frac) + nxt * frac)


def months_between(a, b):
    (y, m), out = a, []
    while (y, m) <= b:
        out.append((y, m))
        y, m = (y, m + 1) if m < 12 else (y + 1, 1)
    return out


def history(book, ident, flt, by_year):
    buckets = {}
    for uci, cells in book.pos.get(ident, {}).items():
        for cell, st in cells.items():
            if not passes(cell, flt):
                continue
            period = cell[0]
            if by_year:
                if period[0] not in ("month", "year"):
                    continue
                b = period[1]
            else:
                if period[0] != "month":
                    continue
                b = (period[1], period[2])
            acc = buckets.setdefault(b, [0, 0, 0, 0])
            for i in range(4):
                acc[i] += st[i]
    since, until = parse_bound(flt.get("since")), parse_bound(flt.get("until"))
    if by_year:
        lo = since[1] if since else (min(buckets) if buckets else None)
        hi = until[1] if until else (max(buckets) if buckets else None)
        span = list(range(lo, hi + 1)) if lo is not None and hi is not None else []
        key = lambda b: {"year": b}
    else:
        if since:
            lo = (since[1], since[2] if since[0] == "month" else 1)
        else:
            lo = min(buckets) if buckets else None
        if until:
            hi = (until[1], until[2] if until[0] == "month" else 12)
        else:
            hi = max(buckets) if buckets else None
        span = months_between(lo, hi) if lo is not None and hi is not None else []
        key = lambda b: {"month": "%04d-%02d" % b}
    out = []
    for b in span:
        w, d, bl, u = buckets.get(b, [0, 0, 0, 0])
        e = key(b)
        e.update({"white": w, "draws": d, "black": bl, "unknown": u})
        out.append(e)
    return out


def answer(book, q):
    board = chess.Board(q["fen"]) if q.get("fen") else chess.Board()
    for uci in q.get("play", []):
        mv = chess.Move.from_uci(uci)
        if mv not in board.legal_moves:
            return {"error": "illegal move %s" % uci}
        board.push(mv)
    ident = identity(board)
    flt = {k: v for k, v in q.get("filters", {}).items() if v is not None}
    out = {"key": "%016x" % ident[0], "fen": ident[1], "white": 0, "draws": 0, "black": 0,
           "unknown": 0, "moves": {}}
    for uci, cells in book.pos.get(ident, {}).items():
        acc = [0] * 8
        for cell, st in cells.items():
            if passes(cell, flt):
                for i in range(8):
                    acc[i] += st[i]
        w, d, b, u, ms, mn, os_, on = acc
        games = w + d + b + u
        if games == 0:
            continue
        mv = chess.Move.from_uci(uci)
        m = {"san": board.san(mv), "white": w, "draws": d, "black": b, "unknown": u,
             "games": games}
        if mn:
            m["averageRating"] = ms // mn
        if on:
            m["averageOpponentRating"] = os_ // on
        wins, losses = (w, b) if board.turn == chess.WHITE else (b, w)
        perf = performance(wins, d, losses, os_, on)
        if perf is not None:
            m["performance"] = perf
        out["moves"][uci] = m
        for k, v in (("white", w), ("draws", d), ("black", b), ("unknown", u)):
            out[k] += v
    if q.get("history"):
        # By year on /masters; by month on /lichess. §8 leaves `probe --history` open: it
        # follows its bounds, by year when since or until is given as YYYY (bookdb's reading).
        route = q.get("route")
        year_bound = any(len(flt.get(b, "")) == 4 for b in ("since", "until"))
        out["history"] = history(book, ident, flt,
                                 route == "masters" or (route == "probe" and year_bound))
    return out


# ---------------------------------------------------------------------------------------------
# Self-check: invariants of the counts, independent of any query language subtleties.


def self_check(book):
    def tot(ans):
        return [ans[k] for k in ("white", "draws", "black", "unknown")]

    def q(flt=None, play=(), hist=False, route="lichess"):
        return answer(book, {"play": list(play), "filters": flt or {}, "history": hist,
                             "route": route})

    start = q()
    checks = 0
    # The speed read from TimeControl is the one the Event names, where it names one.
    assert book.event_speed[1] == 0, book.event_speed
    checks += 1
    # lila's performance: all won = +800, all lost = -800, even = the opponents' average;
    # interpolated between table entries and rounded half away from zero as Rust does.
    assert performance(1, 0, 0, 2000, 1) == 2800
    assert performance(0, 0, 1, 2000, 1) == 1200
    assert performance(0, 1, 0, 2000, 1) == 2000
    assert performance(1, 1, 0, 4001, 2) == 2194  # 2000.5 + 193 = 2193.5
    assert performance(0, 0, 1, 500, 1) == -300
    assert performance(2, 1, 0, 4000, 2) == 2277  # p = 83.3: 2000 + 273 * 2/3 + 284 / 3
    checks += 1
    assert tot(start) == book.plain_start, (tot(start), book.plain_start)
    assert sum(tot(start)) == book.with_moves
    checks += 2
    # The start position's moves add up to the games.
    for k in ("white", "draws", "black", "unknown"):
        assert sum(m[k] for m in start["moves"].values()) == start[k]
    checks += 1
    lines = [(), ("e2e4",), ("e2e4", "c7c5"), ("d2d4", "g8f6"), ("e2e4", "e7e5", "g1f3")]
    for play in lines:
        whole = q(play=play)
        # Disjoint filters plus the unknown cells sum to the whole.
        for name, values, unknown_fn in (
            ("speeds", SPEEDS, lambda c: c[1] is None),
            ("modes", MODES, lambda c: c[3] is None),
            ("ratings", GROUPS, lambda c: c[2] is None),
        ):
            sums = [0, 0, 0, 0]
            for v in values:
                part = q({name: [v]}, play)
                sums = [a + b for a, b in zip(sums, tot(part))]
            unk = [0, 0, 0, 0]
            for cells in book.pos.get(identity_of(play), {}).values():
                for cell, st in cells.items():
                    if unknown_fn(cell):
                        unk = [a + b for a, b in zip(unk, st[:4])]
            assert [a + b for a, b in zip(sums, unk)] == tot(whole), (name, play)
            # All values listed = the known cells only.
            allv = q({name: values}, play)
            assert tot(allv) == sums, (name, play)
            checks += 2
        # A month history with no bounds sums to the month-dated games; a year history to the
        # dated ones; the all-time since/until filter (years) equals the dated total.
        h = q(play=play, hist=True)["history"]
        hy = q(play=play, hist=True, route="masters")["history"]
        dated = q({"since": "0001", "until": "9999"}, play)
        monthly = q({"since": "0001-01", "until": "9999-12"}, play)
        for i, k in enumerate(("white", "draws", "black", "unknown")):
            assert sum(e[k] for e in hy) == dated[k], (play, k)
            assert sum(e[k] for e in h) == monthly[k], (play, k)
        # Months consecutive.
        ms = [tuple(map(int, e["month"].split("-"))) for e in h]
        assert ms == months_between(ms[0], ms[-1]) if ms else True
        ys = [e["year"] for e in hy]
        assert ys == list(range(ys[0], ys[-1] + 1)) if ys else True
        # since/until split into two disjoint halves.
        a = q({"until": "2009-12"}, play)
        b = q({"since": "2010-01"}, play)
        assert [x + y for x, y in zip(tot(a), tot(b))] == tot(monthly), play
        checks += 6
    print("facet_oracle self-check: %d checks passed on %d counted games (%d positions; "
          "%d speeds agree with the Event's)"
          % (checks, book.counted, len(book.pos), book.event_speed[0]), file=sys.stderr)


def identity_of(play):
    board = chess.Board()
    for uci in play:
        board.push_uci(uci)
    return identity(board)


def cell_json(moves, cell, res):
    period, speed, group, mode = cell
    p = {"month": lambda: "%04d-%02d" % period[1:], "year": lambda: "%04d" % period[1],
         "undated": lambda: None}[period[0]]()
    return {"moves": moves, "period": p, "speed": speed, "group": group, "mode": mode,
            "result": ["white", "draws", "black", "unknown"][res]}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("pgn", nargs="+")
    ap.add_argument("--max-ply", type=int, default=50)
    ap.add_argument("--queries")
    ap.add_argument("--self-check", action="store_true")
    ap.add_argument("--cells", action="store_true")
    args = ap.parse_args()
    book = Book(args.max_ply)
    for p in args.pgn:
        book.add_file(p)
    if args.self_check:
        self_check(book)
    if args.queries is None and (args.self_check or args.cells):
        queries = []
    elif args.queries in (None, "-"):
        queries = json.load(sys.stdin)
    else:
        with open(args.queries) as f:
            queries = json.load(f)
    out = {"games": {"counted": book.counted, "skipped": book.skipped},
           "answers": [answer(book, q) for q in queries]}
    if args.cells:
        out["cells"] = [cell_json(moves, cell, res) for moves, cell, res in book.cells]
    json.dump(out, sys.stdout)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main()

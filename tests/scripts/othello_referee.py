#!/usr/bin/env python3
"""Independent referee for Othello books, written from docs/CONTRACT.md §7 alone (it shares
no code with bookdb): replays WTHOR .wtb files (by extension) and transcripts (one game per
line, "f5d6c3...", optional result = black's discs minus white's), counts (position, move)
pairs under the §2/§7 counting rules and prints what `bookdb dump` must print: JSON lines
{"key","board","moves":[{"move","black","draws","white","unknown"}]}, ascending key (then
packed bytes), moves by square name.

usage: othello_referee.py [--max-ply N] [--canonical] INPUT...
Prints "games G skipped S" on stderr.

--canonical stores each position as the least (by packed bytes) of its 8 images under the
square's symmetries, t = 0..7 with bit 0 mirroring columns, bit 1 mirroring rows, bit 2
transposing (applied in that order); the move is mapped by the first t giving the least image
(docs/FORMAT.md §11).
"""
import json
import struct
import sys

MASK = (1 << 64) - 1


def splitmix(n):
    state, out = 0, []
    for _ in range(n):
        state = (state + 0x9E3779B97F4A7C15) & MASK
        z = state
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
        out.append(z ^ (z >> 31))
    return out


TABLE = splitmix(129)
BLACK, WHITE, SIDE = TABLE[:64], TABLE[64:128], TABLE[128]
DIRS = [(dr, dc) for dr in (-1, 0, 1) for dc in (-1, 0, 1) if (dr, dc) != (0, 0)]
NAMES = ["abcdefgh"[i % 8] + str(i // 8 + 1) for i in range(64)]


def flips(board, sq, me):
    if board[sq] != "-":
        return []
    opp = "O" if me == "X" else "X"
    r0, c0 = divmod(sq, 8)
    out = []
    for dr, dc in DIRS:
        r, c, line = r0 + dr, c0 + dc, []
        while 0 <= r < 8 and 0 <= c < 8 and board[r * 8 + c] == opp:
            line.append(r * 8 + c)
            r, c = r + dr, c + dc
        if line and 0 <= r < 8 and 0 <= c < 8 and board[r * 8 + c] == me:
            out.extend(line)
    return out


def has_move(board, me):
    return any(flips(board, sq, me) for sq in range(64))


def key(board, side):
    k = 0
    for sq, v in enumerate(board):
        if v == "X":
            k ^= BLACK[sq]
        elif v == "O":
            k ^= WHITE[sq]
    return k ^ SIDE if side == "O" else k


def pack(board, side):
    bits = "".join({"-": "0", "X": "10", "O": "11"}[v] for v in board)
    bits += "1" if side == "O" else "0"
    bits += "0" * (-len(bits) % 8)
    return bytes(int(bits[i:i + 8], 2) for i in range(0, len(bits), 8))


def sym_square(sq, t):
    r, c = divmod(sq, 8)
    if t & 1:
        c = 7 - c
    if t & 2:
        r = 7 - r
    if t & 4:
        r, c = c, r
    return r * 8 + c


def image(board, t):
    out = ["-"] * 64
    for sq, v in enumerate(board):
        out[sym_square(sq, t)] = v
    return out


def canonical(board, side):
    best = None
    for t in range(8):
        b = image(board, t)
        p = pack(b, side)
        if best is None or p < best[0]:
            best = (p, b, t)
    return best[1], best[2]


def games_of(path):
    """Yields (moves as square indices or None if corrupt, result index or 3)."""
    data = open(path, "rb").read()
    if path.endswith(".wtb"):
        for off in range(16, len(data), 68):
            rec = data[off:off + 68]
            if len(rec) < 68:
                yield None, 3
                continue
            score, moves, ok, ended = rec[6], [], True, False
            for b in rec[8:]:
                if b == 0:
                    ended = True
                    continue
                r, c = divmod(b, 10)
                if ended or not (1 <= r <= 8 and 1 <= c <= 8):
                    ok = False
                    break
                moves.append((r - 1) * 8 + c - 1)
            if not ok or score > 64:
                yield None, 3
                continue
            # result index: 0 white, 1 draw, 2 black, 3 unknown (bookdb's counters order)
            yield moves, (2 if score > 32 else 0 if score < 32 else 1)
    else:
        for line in data.decode("latin-1").split("\n"):
            parts = line.split()
            if not parts:
                continue
            text = parts[0].lower()
            if len(parts) > 2 or len(text) % 2 or len(text) > 120:
                yield None, 3
                continue
            moves = []
            for i in range(0, len(text), 2):
                c, r = text[i], text[i + 1]
                if c not in "abcdefgh" or r not in "12345678":
                    moves = None
                    break
                moves.append((int(r) - 1) * 8 + "abcdefgh".index(c))
            result = 3
            if moves is not None and len(parts) == 2:
                try:
                    m = int(parts[1])
                except ValueError:
                    m = None
                if m is None or not -64 <= m <= 64:
                    moves = None
                else:
                    result = 2 if m > 0 else 0 if m < 0 else 1
            yield moves, result


def main():
    args = sys.argv[1:]
    max_ply, canon = 50, False
    inputs = []
    i = 0
    while i < len(args):
        if args[i] == "--max-ply":
            max_ply = int(args[i + 1])
            i += 2
        elif args[i] == "--canonical":
            canon = True
            i += 1
        else:
            inputs.append(args[i])
            i += 1
    book = {}  # (key, packed) -> (board string, {move: [w, d, b, u]})
    games = skipped = 0
    for path in inputs:
        for moves, result in games_of(path):
            if moves is None:
                skipped += 1
                continue
            board = ["-"] * 64
            board[27] = board[36] = "O"
            board[28] = board[35] = "X"
            side = "X"
            pairs, legal = [], True
            for ply, sq in enumerate(moves):
                f = flips(board, sq, side)
                if not f:
                    other = "O" if side == "X" else "X"
                    if has_move(board, side):
                        legal = False
                        break
                    side = other  # a pass
                    f = flips(board, sq, side)
                    if not f:
                        legal = False
                        break
                if ply < max_ply:
                    if canon:
                        b, t = canonical(board, side)
                        pairs.append((b, side, sym_square(sq, t)))
                    else:
                        pairs.append((list(board), side, sq))
                board[sq] = side
                for x in f:
                    board[x] = side
                side = "O" if side == "X" else "X"
            if not legal:
                skipped += 1
                continue
            games += 1
            for b, s, mv in set((tuple(b), s, mv) for b, s, mv in pairs):
                k = (key(b, s), pack(b, s))
                entry = book.setdefault(k, ("".join(b) + " " + s, {}))
                entry[1].setdefault(mv, [0, 0, 0, 0])[result] += 1
    out = sys.stdout
    for (k, _p), (board, moves) in sorted(book.items()):
        ms = [
            {"move": NAMES[mv], "black": c[2], "draws": c[1], "white": c[0], "unknown": c[3]}
            for mv, c in sorted(moves.items(), key=lambda x: NAMES[x[0]])
        ]
        out.write(json.dumps({"key": "%016x" % k, "board": board, "moves": ms}) + "\n")
    sys.stderr.write("games %d skipped %d\n" % (games, skipped))


if __name__ == "__main__":
    main()

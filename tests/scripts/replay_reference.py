#!/usr/bin/env python3
"""Independent reference for `bookdb dump`: replays PGN games with python-chess.

Usage: replay_reference.py PGN [--max-ply N]

Prints one JSON object per position to stdout, ascending by key (then FEN):

    {"key": "<16 hex>", "fen": "<placement side castling ep>",
     "moves": [{"uci": "e2e4", "white": n, "draws": n, "black": n, "unknown": n}, ...]}

and a summary line `games read N, imported N, skipped N` to stderr.

Counting rules (docs/CONTRACT.md section 2):
- standard chess only: a game whose Variant tag is present and is not one of
  standard / chess / normal / from position / fromposition / standard chess
  (case-insensitive) is skipped;
- a game with a FEN tag starts from that FEN; an unparsable or invalid FEN skips the game;
- only the mainline counts; each of its first max_ply moves adds one to
  (position before the move, move), at most once per game for each such pair;
- the result comes from the Result tag: 1-0 white, 0-1 black, 1/2-1/2 draws, else unknown;
- a game with any illegal, unreadable or null move anywhere in its mainline is skipped whole
  (errors inside variations do not matter).

Position identity: placement, side to move, castling rights, and the en-passant file only when a
pawn of the side to move stands beside the pawn that just double-stepped (Polyglot's rule,
legality of the capture irrelevant). The key is python-chess's Polyglot Zobrist hash.
"""

import argparse
import bz2
import gzip
import io
import json
import sys

import chess
import chess.pgn
import chess.polyglot

STANDARD_VARIANTS = {
    "standard",
    "chess",
    "normal",
    "from position",
    "fromposition",
    "standard chess",
}


def open_pgn(path):
    """Opens a PGN file as text (plain, .zst, .gz or .bz2, by extension or magic bytes)."""
    if path == "-":
        raw = sys.stdin.buffer
    else:
        raw = open(path, "rb")
    head = raw.peek(4)[:4] if hasattr(raw, "peek") else b""
    if path.endswith(".zst") or head == b"\x28\xb5\x2f\xfd":
        try:
            import zstandard
        except ImportError:
            sys.exit("replay_reference.py: reading .zst needs the zstandard module "
                     "(pip install zstandard)")
        stream = zstandard.ZstdDecompressor().stream_reader(raw, read_across_frames=True)
    elif path.endswith(".gz") or head[:2] == b"\x1f\x8b":
        stream = gzip.GzipFile(fileobj=raw)
    elif path.endswith(".bz2") or head[:3] == b"BZh":
        stream = bz2.BZ2File(raw)
    else:
        stream = raw
    # utf-8-sig drops a BOM; bytes that are not UTF-8 (CP437, Latin-1 in names and comments)
    # are replaced, which cannot change a well-formed SAN token. newline=None folds CRLF.
    return io.TextIOWrapper(stream, encoding="utf-8-sig", errors="replace", newline=None)


class MainlineCollector(chess.pgn.BaseVisitor):
    """Collects the headers and the mainline moves of one game, and whether the mainline
    had an error. Errors in variations are ignored; errors before the movetext (an unknown
    Variant tag, an unparsable FEN) are left to the caller, which checks the tags itself."""

    def begin_game(self):
        self.headers = chess.pgn.Headers({})
        self.moves = []
        self.depth = 0
        self.in_movetext = False
        self.mainline_error = None

    def begin_headers(self):
        return self.headers

    def visit_header(self, tagname, tagvalue):
        self.headers[tagname] = tagvalue

    def visit_board(self, board):
        self.in_movetext = True

    def begin_variation(self):
        self.depth += 1
        return chess.pgn.SKIP  # variations are not counted; their tokens are not even parsed

    def end_variation(self):
        self.depth -= 1

    def visit_move(self, board, move):
        if self.depth == 0 and self.mainline_error is None:
            if not move:  # null move ("--", "Z0", "0000", "@@@@")
                self.mainline_error = ValueError(f"null move in {board.fen()}")
            else:
                self.moves.append(move)

    def handle_error(self, error):
        if not self.in_movetext:
            return  # header-level: the tags are checked by count_game
        if self.depth == 0 and self.mainline_error is None:
            self.mainline_error = error

    def result(self):
        return self


def ep_file_counts(board):
    """The contract's rule (docs/CONTRACT.md §2): an en-passant square counts only if a pawn of the side to move stands
    beside the pawn that just double-stepped (legality of the capture is irrelevant)."""
    ep = board.ep_square
    if ep is None:
        return False
    pawn_sq = ep - 8 if board.turn == chess.WHITE else ep + 8  # the double-stepped pawn
    f = chess.square_file(pawn_sq)
    for df in (-1, 1):
        if 0 <= f + df <= 7:
            sq = pawn_sq + df
            p = board.piece_at(sq)
            if p is not None and p.piece_type == chess.PAWN and p.color == board.turn:
                return True
    return False


def position_fen(board):
    """The four identity fields: placement, side, castling (KQkq), en-passant by the rule."""
    rights = board.clean_castling_rights()
    castling = "".join(
        letter
        for letter, sq in (("K", chess.H1), ("Q", chess.A1), ("k", chess.H8), ("q", chess.A8))
        if rights & chess.BB_SQUARES[sq]
    ) or "-"
    ep = chess.square_name(board.ep_square) if ep_file_counts(board) else "-"
    side = "w" if board.turn == chess.WHITE else "b"
    # Cross-check with python-chess's own pseudo-legal ("xfen") en-passant rule (cheap form
    # of `fen == board.epd(en_passant="xfen")`, which the self-check verifies in full).
    assert (ep != "-") == board.has_pseudo_legal_en_passant(), board.fen()
    return f"{board.board_fen()} {side} {castling} {ep}"


def result_slot(headers):
    r = headers.get("Result", "").strip()
    return {"1-0": "white", "0-1": "black", "1/2-1/2": "draws"}.get(r, "unknown")


def count_game(game, max_ply):
    """Returns the set of distinct (key, fen, uci) the game counts, or None if it is skipped."""
    headers = game.headers
    variant = headers.get("Variant")
    if variant is not None and variant.strip().lower() not in STANDARD_VARIANTS:
        return None
    if "FEN" in headers:
        try:
            board = chess.Board(headers["FEN"].strip())
        except ValueError:
            return None
        if not board.is_valid():
            return None
    else:
        board = chess.Board()
    if game.mainline_error is not None:
        return None
    pairs = set()
    for ply, move in enumerate(game.moves):
        if not board.is_legal(move):
            return None
        if ply < max_ply:
            key = f"{chess.polyglot.zobrist_hash(board):016x}"
            pairs.add((key, position_fen(board), board.uci(move, chess960=False)))
        board.push(move)
    return pairs


def self_check():
    """The test vectors of docs/CONTRACT.md section 2."""
    vectors = [
        ([], None, "463b96181691fc9c", "-"),
        (["e4"], None, "823c9b50fd114196", "-"),
        (["e4", "d5"], None, "0756b94461c50fb0", "-"),
        (["e4", "d5", "e5", "f5"], None, "22a48b5a8e47ff78", "f6"),
        (["a4", "b5", "h4", "b4", "c4"], None, "3c8123ea7b067637", "c3"),
        ([], "8/8/8/KPp4r/8/8/8/4k3 w - c6 0 2", "3d665cc1f5da1059", "c6"),
    ]
    for sans, fen, key, ep in vectors:
        board = chess.Board(fen) if fen else chess.Board()
        for san in sans:
            board.push_san(san)
        got_key = f"{chess.polyglot.zobrist_hash(board):016x}"
        fen4 = position_fen(board)
        if fen4 != board.epd(en_passant="xfen"):
            sys.exit(f"replay_reference.py: self-check: {fen4!r} != {board.epd(en_passant='xfen')!r}")
        got_ep = fen4.split()[3]
        if got_key != key or got_ep != ep:
            sys.exit(f"replay_reference.py: self-check failed for {sans or fen}: "
                     f"key {got_key} (want {key}), ep {got_ep} (want {ep})")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("pgn")
    ap.add_argument("--max-ply", type=int, default=30)
    args = ap.parse_args()

    self_check()

    # (key, fen) -> uci -> {white, draws, black, unknown}
    book = {}
    read = imported = skipped = 0
    with open_pgn(args.pgn) as f:
        while True:
            game = chess.pgn.read_game(f, Visitor=MainlineCollector)
            if game is None:
                break
            read += 1
            pairs = count_game(game, args.max_ply)
            if pairs is None:
                skipped += 1
                continue
            imported += 1
            slot = result_slot(game.headers)
            for key, fen, uci in pairs:
                moves = book.setdefault((key, fen), {})
                stats = moves.setdefault(uci, {"white": 0, "draws": 0, "black": 0, "unknown": 0})
                stats[slot] += 1

    out = sys.stdout
    for (key, fen) in sorted(book, key=lambda kf: (int(kf[0], 16), kf[1])):
        moves = [
            {"uci": uci, **book[(key, fen)][uci]}
            for uci in sorted(book[(key, fen)])
        ]
        out.write(json.dumps({"key": key, "fen": fen, "moves": moves}, separators=(",", ":")))
        out.write("\n")
    print(f"games read {read}, imported {imported}, skipped {skipped}", file=sys.stderr)


if __name__ == "__main__":
    main()

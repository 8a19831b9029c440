"""bookdb's reader against python-chess's Polyglot reader on the export of the same book, and
the reader's own interface: filters, Othello, errors, iteration, live refresh."""

from __future__ import annotations

import os
import pathlib
import random
import shutil
import subprocess
import sys

import pytest

import bookdb

chess = pytest.importorskip("chess")
import chess.pgn  # noqa: E402
import chess.polyglot  # noqa: E402


def sample_positions(pgn: pathlib.Path, max_ply: int = 30):
    """Every position the sample's games reach in their first ``max_ply`` plies, once, and
    some positions beyond (not in the book)."""
    seen = set()
    with pgn.open() as f:
        while (game := chess.pgn.read_game(f)) is not None:
            board = game.board()
            for ply, move in enumerate(game.mainline_moves()):
                if ply > max_ply:
                    break
                fen = board.fen()
                if fen not in seen:
                    seen.add(fen)
                    yield board.copy(stack=False)
                board.push(move)


def test_same_moves_and_weights_as_python_chess_on_the_export(chess_book, polyglot_bin, sample_pgn):
    checked = with_moves = 0
    with bookdb.open(chess_book) as book, chess.polyglot.open_reader(polyglot_bin) as pg:
        for board in sample_positions(sample_pgn):
            theirs = [(e.move, e.weight, e.learn, e.raw_move) for e in pg.find_all(board)]
            ours = [(e.move, e.weight, e.learn, e.raw_move)
                    for e in book.find_all(board, minimum_weight=1)]
            assert ours == theirs, board.fen()
            # By FEN, by key and by the line of moves the answer is the same.
            assert [e[:2] for e in ours] == [
                (e.move, e.weight) for e in book.find_all(board.fen(), minimum_weight=1)]
            # The book's move: python-chess's `get` and `find` on the .bin (a position whose
            # moves all lost has none: `get` is None, as there).
            theirs_main = pg.get(board)
            ours_main = book.get(board)
            assert (ours_main and (ours_main.move, ours_main.weight)) == (
                theirs_main and (theirs_main.move, theirs_main.weight)), board.fen()
            if theirs_main is None:
                with pytest.raises(IndexError):
                    book.find(board)
            key = chess.polyglot.zobrist_hash(board)
            assert book.key(board) == key
            assert [(e.raw_move, e.weight) for e in pg.find_all(key)] == [
                (e.raw_move, e.weight) for e in book.find_all(key, minimum_weight=1)]
            checked += 1
            with_moves += bool(ours)
    assert checked > 3000 and with_moves > 3000, (checked, with_moves)


def test_every_key_of_the_book_is_in_the_bin_with_its_weights(chess_book, polyglot_bin):
    with bookdb.open(chess_book) as book, chess.polyglot.open_reader(polyglot_bin) as pg:
        keys = 0
        for position in book.positions():
            weighted = [(e.raw_move, e.weight) for e in position.entries if e.weight > 0]
            assert weighted == [(e.raw_move, e.weight) for e in pg.find_all(position.key)]
            keys += bool(weighted)
        assert keys == len({e.key for e in pg})


def test_counts_the_bin_lacks(chess_book):
    with bookdb.open(chess_book) as book:
        start = list(book.find_all(chess.Board()))
        assert sum(e.games for e in start) == 200
        for e in start:
            assert e.games == e.white + e.draws + e.black + e.unknown
            # make-book's weight: 2 wins + draws (+ unknown) of the side to move.
            if e.weight:
                assert e.weight == 2 * e.white + e.draws + e.unknown
        e4 = book.get(chess.Board(), exclude_moves=[m.move for m in start[1:]])
        assert e4 == start[0]
        assert e4.uci == e4.move.uci() and isinstance(e4.move, chess.Move)
        assert book.find(chess.Board()) == start[0]
        b = chess.Board()
        b.push_san(start[0].uci)
        # The same position by a list of moves, SAN or UCI, or chess.Move objects.
        assert [e.uci for e in book.find_all(b)] == [e.uci for e in book.find_all([start[0].uci])]
        assert book.find_all([start[0].move]) is not None
        assert book.get(chess.Board("8/8/8/8/8/8/8/K6k w - - 0 1")) is None
        with pytest.raises(IndexError):
            book.find(chess.Board("8/8/8/8/8/8/8/K6k w - - 0 1"))


def test_filters_count_only_the_selected_games(chess_book, tmp_path):
    with bookdb.open(chess_book) as book:
        assert "month" in book.facets
        all_games = sum(e.games for e in book.find_all(chess.Board()))
        recent = sum(e.games for e in book.find_all(chess.Board(), since=1990))
        old = sum(e.games for e in book.find_all(chess.Board(), until="1989"))
        assert 0 < recent < all_games and recent + old == all_games
        # The filtered weights are those of the export with the same filter.
        out = tmp_path / "recent.bin"
        bookdb.export_polyglot(chess_book, out, since="1990")
        with chess.polyglot.open_reader(out) as pg:
            theirs = [(e.move, e.weight) for e in pg.find_all(chess.Board())]
        ours = [(e.move, e.weight)
                for e in book.find_all(chess.Board(), since="1990", minimum_weight=1)]
        assert ours == theirs
        with pytest.raises(bookdb.UsageError, match="since"):
            list(book.find_all(chess.Board(), since="yesterday"))
        with pytest.raises(bookdb.UsageError, match="unknown speed"):
            list(book.find_all(chess.Board(), speeds=["hyperbullet"]))


def test_choices_follow_python_chess(chess_book, polyglot_bin):
    with bookdb.open(chess_book) as book, chess.polyglot.open_reader(polyglot_bin) as pg:
        board = chess.Board()
        for seed in range(20):
            assert (book.weighted_choice(board, random=random.Random(seed)).move
                    == pg.weighted_choice(board, random=random.Random(seed)).move)
            assert (book.choice(board, random=random.Random(seed)).move
                    == pg.choice(board, random=random.Random(seed)).move)
        with pytest.raises(IndexError):
            book.weighted_choice(chess.Board("8/8/8/8/8/8/8/K6k w - - 0 1"))


def test_iteration_is_in_key_order_and_len_counts_it(chess_book):
    with bookdb.open(chess_book) as book:
        entries = list(book)
        assert len(entries) == len(book)
        keys = [e.key for e in entries]
        assert keys == sorted(keys)
        stats = book.stats()
        assert stats["positions"] == len(list(book.positions()))
        assert stats["games"] == 200


def test_errors_are_the_librarys(chess_book, tmp_path):
    with bookdb.open(chess_book) as book:
        with pytest.raises(bookdb.UsageError, match=r"^fen: invalid FEN"):
            list(book.find_all("not a fen"))
        with pytest.raises(bookdb.UsageError,
                           match=r"^moves: move 2 \(e4\) cannot be played in the chess position"):
            list(book.find_all(["e4", "e4"]))
        with pytest.raises(TypeError):
            list(book.find_all(3.5))
    with pytest.raises(bookdb.BookNotFound) as missing:
        bookdb.open(tmp_path / "nothing.book")
    assert isinstance(missing.value, FileNotFoundError)
    junk = tmp_path / "junk.book"
    junk.write_bytes(b"this is not a book" * 100)
    with pytest.raises(bookdb.NotABook):
        bookdb.open(junk)
    assert issubclass(bookdb.CorruptBook, bookdb.Error)


def test_a_damaged_book_raises_corrupt_book(chess_book, tmp_path):
    """A byte flipped inside the book's compressed blocks: reading it raises CorruptBook
    (never an answer with other counts)."""
    data = chess_book.read_bytes()
    damaged = 0
    # Flip a byte in the middle of each 4 KiB page that looks compressed (many distinct
    # bytes): those are the blocks' zstd payloads.
    for page in range(0, len(data) - 4096, 4096):
        chunk = data[page:page + 4096]
        if len(set(chunk[1024:3072])) < 200:
            continue
        copy = tmp_path / f"damaged-{page}.book"
        flipped = bytearray(data)
        flipped[page + 2048] ^= 0x5A
        copy.write_bytes(bytes(flipped))
        with pytest.raises(bookdb.CorruptBook) as err:
            with bookdb.open(copy) as book:
                list(book)
        assert err.value.kind == "corrupt" and str(err.value)
        damaged += 1
        if damaged == 4:
            break
    assert damaged > 0, "no compressed page found"


def test_othello_books_take_board_strings_and_move_lists(othello_book):
    with bookdb.open(othello_book) as book:
        assert book.game == "othello"
        start = list(book.find_all([]))
        # Every game opens f5 (black moves first).
        assert [e.uci for e in start] == ["f5"] and start[0].games == 6
        assert start[0].move == "f5"
        after = list(book.find_all(["f5", "d6"]))
        assert {e.uci for e in after} == {"c3", "c5"}
        board = "-" * 27 + "OX" + "-" * 6 + "XXX" + "-" * 26 + " O"
        assert len(board) == 66
        assert [e.uci for e in book.find_all(board)] == [e.uci for e in book.find_all(["f5"])]
        with pytest.raises(bookdb.UsageError, match="^board: not an Othello board"):
            list(book.find_all("rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1"))
        with pytest.raises(bookdb.UsageError, match=r"^moves: move 2 \(f5\) cannot be played"):
            list(book.find_all(["f5", "f5"]))
        with pytest.raises(TypeError, match="board string"):
            list(book.find_all(chess.Board()))
        with pytest.raises(bookdb.UsageError, match="this book keeps no"):
            list(book.find_all([], since=1990))
        assert len(list(book)) == len(book)


def test_a_live_reader_sees_later_imports(chess_book, sample_pgn, tmp_path):
    path = tmp_path / "live.book"
    shutil.copy(chess_book, path)
    games = tmp_path / "one.pgn"
    games.write_text('[Event "?"]\n[Result "0-1"]\n\n1. h4 a5 0-1\n')
    with bookdb.open(path, refresh=0) as book:
        assert book.get(chess.Board().copy(), exclude_moves=[]) is not None
        before = {e.uci: e.games for e in book.find_all(chess.Board())}
        generation = book.generation
        bookdb.import_games(path, games)
        after = {e.uci: e.games for e in book.find_all(chess.Board())}
        assert after.get("h2h4", 0) == before.get("h2h4", 0) + 1
        assert book.generation > generation


def test_import_needs_no_python_dependency(tmp_path):
    code = (
        "import sys; sys.modules['chess'] = None; sys.modules['easyAI'] = None\n"
        "import bookdb\n"
        f"b = bookdb.open({str(tmp_path / 'b.book')!r}) if False else None\n"
        "print('ok', bookdb.__version__)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         env={**os.environ})
    assert out.returncode == 0, out.stderr
    assert out.stdout.startswith("ok")


def test_without_python_chess_moves_are_uci_strings(chess_book):
    code = (
        "import sys; sys.modules['chess'] = None\n"
        "import bookdb\n"
        f"book = bookdb.open({str(chess_book)!r})\n"
        "e = book.find('rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1')\n"
        "print(type(e.move).__name__, e.move)\n"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert out.returncode == 0, out.stderr
    kind, move = out.stdout.split()
    assert kind == "str" and len(move) == 4


def test_export_weights_from_evaluations(chess_book, tmp_path):
    # The sample book holds no engine evaluation: an eval-weighted book leaves every move out,
    # each counted under its reason, and writes an empty .bin that python-chess still reads.
    out = tmp_path / "eval.bin"
    summary = bookdb.export_polyglot(chess_book, out, weights="eval")
    assert summary["entries"] == 0
    assert summary["dropped"]["no_eval"] > 0
    with chess.polyglot.open_reader(out) as pg:
        assert list(pg.find_all(chess.Board())) == []
    with pytest.raises(bookdb.UsageError, match="weights"):
        bookdb.export_polyglot(chess_book, tmp_path / "x.bin", weights="votes")

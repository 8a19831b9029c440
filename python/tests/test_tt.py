"""easyAI with bookdb.TranspositionTable: the same moves as with easyAI's own table, a second
process that finds the first one's work, a table killed mid-search, forced collisions."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
import time

import pytest

import bookdb

easyAI = pytest.importorskip("easyAI")
from easyAI import AI_Player, Negamax  # noqa: E402
from easyAI import TranspositionTable as EasyTable  # noqa: E402
from easyAI.games import ConnectFour  # noqa: E402


class C4(ConnectFour):
    """easyAI's ConnectFour with the ttentry its transposition tables need."""

    def ttentry(self):
        return (self.current_player, tuple(self.board.flatten().tolist()))


def scoring(game):
    return -100 if game.lose() else 0


def center(game):
    """A scoring with something to choose: the loss, else the centre column's discs."""
    if game.lose():
        return -100
    col = game.board[:, 3]
    return int((col == game.current_player).sum()) - int((col == game.opponent_index).sum())


class EasyShared(EasyTable):
    """easyAI's own table, not deep-copied with every game copy (easyAI copies games, and the
    players' table with them: the same dict operations, far slower)."""

    def __deepcopy__(self, memo):
        return self


def play(table, plies=10, depth=4, score=center):
    players = [AI_Player(Negamax(depth, score, tt=table)),
               AI_Player(Negamax(depth, score, tt=table))]
    game = C4(players)
    moves = []
    for _ in range(plies):
        move = game.get_move()
        moves.append(int(move))
        game.play_move(move)
        if game.is_over():
            break
    return moves


def test_negamax_plays_the_same_moves_as_with_easyais_table(tmp_path):
    with bookdb.TranspositionTable(tmp_path / "c4.tt") as ours:
        moves = play(ours)
        assert moves == play(EasyShared())
        assert len(set(moves)) >= 2, moves
        assert ours.num_calls > 0 and ours.stats()["stores"] > 0


SEARCH = textwrap.dedent("""
    import sys, bookdb
    from easyAI import Negamax, AI_Player
    from easyAI.games import ConnectFour
    class C4(ConnectFour):
        def ttentry(self):
            return (self.current_player, tuple(self.board.flatten().tolist()))
    nodes = 0
    def scoring(game):
        global nodes
        nodes += 1
        return -100 if game.lose() else 0
    table = bookdb.TranspositionTable(sys.argv[1], memory_mib=int(sys.argv[3]))
    game = C4([AI_Player(Negamax(int(sys.argv[2]), scoring, tt=table))] * 2)
    print(game.get_move(), nodes, flush=True)
    table.to_file(sys.argv[1])
""")


def test_a_second_process_reusing_the_file_searches_far_fewer_nodes(tmp_path):
    path = str(tmp_path / "c4.tt")
    first = subprocess.run([sys.executable, "-c", SEARCH, path, "6", "64"],
                           capture_output=True, text=True, check=True).stdout.split()
    second = subprocess.run([sys.executable, "-c", SEARCH, path, "6", "64"],
                            capture_output=True, text=True, check=True).stdout.split()
    assert first[0] == second[0]
    assert int(second[1]) * 10 < int(first[1]), (first, second)


def test_a_table_killed_mid_search_reopens(tmp_path):
    path = str(tmp_path / "c4.tt")
    # A 1 MiB memory tier: the search publishes by size as it goes.
    proc = subprocess.Popen([sys.executable, "-c", SEARCH, path, "10", "1"])
    try:
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline and not os.path.exists(path):
            assert proc.poll() is None, "the search ended before it published"
            time.sleep(0.05)
        time.sleep(1.0)
        assert proc.poll() is None, "the search ended before it was killed"
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.wait()
    with bookdb.TranspositionTable(path) as table:
        assert table.published() > 0
        game = C4([AI_Player(Negamax(4, scoring, tt=table))] * 2)
        assert game.get_move() in game.possible_moves()


def test_forced_collisions_are_counted_and_never_confused(tmp_path):
    class Key:
        def __init__(self, k):
            self.k = k

        def ttentry(self):
            return self.k

    # 3 key bits: 50 states share 8 keys.
    path = tmp_path / "t.tt"
    with bookdb.TranspositionTable(path, key_bits=3) as table:
        for i in range(50):
            table.store(game=Key(("state", i)), depth=i, value=i + 0.5, move=[i], flag=0)
        for i in range(50):
            assert table.lookup(Key(("state", i))) == {"depth": i, "value": i + 0.5,
                                                       "move": [i], "flag": 0}
        assert table.lookup(Key(("state", 99))) is None
        assert table.num_collisions > 0
    # Published and reopened: still apart.
    with bookdb.TranspositionTable(path) as table:
        assert table.published() == 50
        for i in range(50):
            assert table.lookup(Key(("state", i)))["move"] == [i]
        assert table.num_collisions > 0


def test_easyais_hash_families_key_a_table(tmp_path):
    class Key:
        def __init__(self, k):
            self.k = k

        def ttentry(self):
            return self.k

    for family in bookdb.tt.HASHES:
        with bookdb.TranspositionTable(tmp_path / f"{family}.tt", hash=family) as table:
            assert table.hash == family
            for i in range(200):
                table.store(game=Key("s%d" % i), depth=1, value=i, move=i, flag=0)
            assert all(table(Key("s%d" % i)) == i for i in range(200))
            with pytest.raises(KeyError):
                table(Key("absent"))
    with pytest.raises(bookdb.UsageError, match="hash"):
        bookdb.TranspositionTable(tmp_path / "x.tt", hash="md5")


def test_one_writer_at_a_time_and_to_file_is_the_table(tmp_path):
    path = tmp_path / "w.tt"
    with bookdb.TranspositionTable(path) as table:
        with pytest.raises(bookdb.BookBusy):
            bookdb.TranspositionTable(path)
        with pytest.raises(bookdb.UsageError, match="the file is the table"):
            table.to_file(tmp_path / "elsewhere.tt")
        table.to_file(path)


class _State:
    """A game of easyAI's shape whose ttentry is a given state."""

    def __init__(self, state):
        self.state = state

    def ttentry(self):
        return self.state


def test_damaged_table_files_raise_corrupt_book_without_a_rust_panic_message(tmp_path, capfd):
    """Bytes flipped across a table file: reading it raises CorruptBook (or answers as before)
    and Python's stderr never shows the Rust panic redb raises on some damaged pages (the
    library catches it; the command line prints none either)."""
    states = [(i % 2, tuple(range(i % 40)), "s%d" % i) for i in range(300)]
    good = tmp_path / "p.tt"
    t = bookdb.TranspositionTable(str(good))
    for i, s in enumerate(states):
        t.store(game=_State(s), depth=i % 9, value=float(i), move=i % 7, flag=0)
    t.close()
    data = good.read_bytes()
    corrupt = 0
    for n, offset in enumerate(range(4096, min(len(data), 16384), 61)):
        damaged = tmp_path / ("d%d.tt" % n)
        b = bytearray(data)
        b[offset] ^= 0x01
        damaged.write_bytes(bytes(b))
        try:
            d = bookdb.TranspositionTable(str(damaged))
            for s in states:
                d.lookup(_State(s))
            d.close()
        except bookdb.CorruptBook:
            corrupt += 1
    err = capfd.readouterr().err
    assert corrupt > 0
    assert "panicked" not in err, err[:2000]

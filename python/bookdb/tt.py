"""A persistent transposition table that easyAI takes unchanged.

>>> table = bookdb.TranspositionTable("c4.tt")                 # doctest: +SKIP
>>> ai = Negamax(8, scoring, tt=table)                          # doctest: +SKIP
>>> table.to_file("c4.tt")    # publishes: the file *is* the table

A later process opening the same file starts with everything published: its search finds the
positions already solved. ``AI_Player(table)`` plays from the table alone, as easyAI's own
``TranspositionTable`` does.
"""

from __future__ import annotations

import os
from typing import Any, Optional

from . import _bookdb
from ._errors import UsageError

#: easyAI's flags (``easyAI.AI.Negamax``: LOWERBOUND, EXACT, UPPERBOUND = -1, 0, 1).
LOWERBOUND, EXACT, UPPERBOUND = -1, 0, 1

#: The state hashes a new table can use: xxh3, and easyAI's families (``easyAI.AI.Hashes``)
#: for the collision experiment.
HASHES = ("xxh3", "simple", "xor", "add", "rotate", "bernstein", "shift-add", "fnv",
          "one-at-a-time")


class TranspositionTable:
    """easyAI's ``TranspositionTable`` interface over a bookdb table file (``bookdb::store::tt``).

    Keys are ``game.ttentry()`` (strings, tuples, ints, … and numpy arrays) in the canonical
    tagged encoding, hashed by ``hash`` (``"xxh3"``, or one of easyAI's families); the encoded
    state is stored beside its entry, so two states that share a hash are both kept, counted
    in ``num_collisions``, and never answer for each other. Each stored dict (easyAI's
    ``depth``, ``value``, ``move``, ``flag``) is kept whole in the same encoding (never
    pickled); the table's replacement rule sees ``depth`` and ``flag`` (a deeper result
    stays). Stores are kept in memory and published as immutable files on ``flush()``,
    ``to_file``, ``close()``, when the memory tier passes ``memory_mib``, and when the table is
    dropped; a process killed mid-search leaves the table as of its last publication.

    One process writes a table at a time (the file's writer lock).
    """

    def __init__(self, path: Any, hash: str = "xxh3", *, memory_mib: int = 64,  # noqa: A002
                 key_bits: int = 64) -> None:
        self._path = os.fspath(path)
        self._options = (hash, key_bits, memory_mib)
        self._t = _bookdb.Table(self._path, hash, key_bits, memory_mib)

    def lookup(self, game: Any) -> Optional[dict]:
        """The dict stored for ``game``'s state (``game.ttentry()``), without ``game``; None
        if the table holds none."""
        return self._t.lookup(game.ttentry())

    def store(self, **data: Any) -> None:
        """Stores ``data`` for ``data["game"].ttentry()`` (easyAI's Negamax gives ``game``,
        ``depth``, ``value``, ``move`` and ``flag``)."""
        game = data.pop("game")
        self._t.store(game.ttentry(), data)

    def __call__(self, game: Any) -> Any:
        """The stored move for ``game``, so that ``AI_Player(table)`` plays from the table;
        ``KeyError`` for a state it does not hold, as easyAI's table raises."""
        entry = self.lookup(game)
        if entry is None:
            raise KeyError(game.ttentry())
        return entry["move"]

    @property
    def num_calls(self) -> int:
        """Lookups and stores (what easyAI's ``DictTranspositionTable`` counts: its hash
        computations)."""
        s = self._t.stats()
        return s["calls"] + s["stores"]

    @property
    def num_collisions(self) -> int:
        """Lookups and stores that met another state under their hash (kept apart)."""
        return self._t.stats()["collisions"]

    def stats(self) -> dict:
        """The table's counters (``bookdb tt stats``): calls, hits, collisions, stores,
        kept_out, files, held, unpublished, …"""
        return dict(self._t.stats())

    def collisions(self) -> int:
        """``num_collisions``, as easyAI's ``DictTranspositionTable.collisions()``."""
        return self.num_collisions

    def flush(self) -> None:
        """Publishes every store kept in memory: after it, a crash keeps them, and other
        processes opening the file see them."""
        self._t.flush()

    def to_file(self, filename: Any) -> None:
        """Publishes the table. The file is the table, so ``filename`` is its path; to keep a
        table elsewhere, open ``TranspositionTable(filename)`` from the start."""
        if os.path.abspath(os.fspath(filename)) != os.path.abspath(self._path):
            raise UsageError(
                f"{os.fspath(filename)}: this table lives at {self._path} (the file is the "
                "table); open bookdb.TranspositionTable at the other path to keep one there")
        self.flush()

    def from_file(self, filename: Any) -> "TranspositionTable":
        """Reopens the table at ``filename`` (what was published there), publishing this one
        first; returns the table."""
        self._t.close()
        self._path = os.fspath(filename)
        hash_, key_bits, memory_mib = self._options
        self._t = _bookdb.Table(self._path, hash_, key_bits, memory_mib)
        return self

    def published(self) -> int:
        """States published (what a new process would open), by one pass over the files."""
        return self._t.published_count()

    def file_bytes(self) -> int:
        """Bytes of the table's files on disk."""
        return self._t.file_bytes()

    @property
    def path(self) -> str:
        return self._path

    @property
    def hash(self) -> str:
        return self._t.hash

    def close(self) -> None:
        """Publishes and lets the table (and its writer lock) go."""
        self._t.close()

    def __enter__(self) -> "TranspositionTable":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __copy__(self) -> "TranspositionTable":
        return self

    def __deepcopy__(self, memo: dict) -> "TranspositionTable":
        # easyAI deep-copies games, and with them the players' algorithms and their table:
        # a table on disk is one table, shared by every copy.
        return self

    def __repr__(self) -> str:
        return f"bookdb.TranspositionTable({self._path!r}, hash={self._options[0]!r})"

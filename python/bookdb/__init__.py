"""bookdb from Python: opening books read like python-chess's ``chess.polyglot`` books.

>>> import bookdb, chess
>>> with bookdb.open("games.book") as book:                    # doctest: +SKIP
...     for entry in book.find_all(chess.Board()):
...         print(entry.move, entry.weight, entry.white, entry.draws, entry.black)

A book answers exact positions (never another position that shares the Polyglot key), with
the win/draw/loss counts and average ratings a Polyglot ``.bin`` lacks, each move weighed as
``bookdb export --format polyglot`` weighs it; filters (``since``, ``until``, ``ratings``,
``speeds``, ``modes``) count only the games they select. Nothing is imported at import time:
python-chess is used when it is installed (entries then carry ``chess.Move`` objects).
"""

from __future__ import annotations

import json as _json
import random as _random
import typing
from typing import Any, Callable, Container, Iterable, Iterator, NamedTuple, Optional, Union

from . import _bookdb, _errors
from .tt import TranspositionTable
from ._errors import (
    BookBusy,
    BookIOError,
    BookNotFound,
    CorruptBook,
    Error,
    InputError,
    InternalError,
    NotABook,
    UsageError,
)

__version__: str = _bookdb.__version__

__all__ = [
    "open",
    "Reader",
    "Entry",
    "Position",
    "import_games",
    "export_polyglot",
    "TranspositionTable",
    *_errors.__all__,
    "__version__",
]

#: What names a position: a ``chess.Board``, a FEN (chess) or board string (Othello), a list
#: of moves from the start (SAN or UCI strings or ``chess.Move``; Othello squares), or a key.
PositionLike = Union[Any, str, int, Iterable[Any]]

_move_from_uci: Optional[Callable[[str], Any]] = None
_chess_checked = False


def _moves_class() -> Optional[Callable[[str], Any]]:
    """``chess.Move.from_uci`` if python-chess is installed (looked up once, on first use)."""
    global _move_from_uci, _chess_checked
    if not _chess_checked:
        _chess_checked = True
        try:
            import chess  # noqa: PLC0415 (optional, imported on first use)

            _move_from_uci = chess.Move.from_uci
        except ImportError:
            _move_from_uci = None
    return _move_from_uci


class Entry(NamedTuple):
    """One move of a position.

    The first five fields are those of python-chess's ``chess.polyglot.Entry`` (in its order),
    so code written for a Polyglot reader reads a bookdb book unchanged.
    """

    #: The key the position is stored under (its Polyglot key, for chess).
    key: int
    #: The move as the Polyglot ``.bin`` encodes it (castling king-takes-rook).
    raw_move: int
    #: The weight ``bookdb export --format polyglot`` writes for it (0: the export leaves it
    #: out, e.g. a move that lost every game).
    weight: int
    #: A stored Polyglot learn value (0 if none).
    learn: int
    #: A ``chess.Move`` when python-chess is installed, else the UCI string (Othello: the
    #: square name).
    move: Any
    #: UCI, castling as the king's two squares (``e1g1``); Othello: the square name.
    uci: str
    white: int
    draws: int
    black: int
    unknown: int
    #: white + draws + black + unknown over the counted games.
    games: int
    #: The mover's mean rating over the counted games (None if none had one).
    average_rating: Optional[int]


class Position(NamedTuple):
    """A position of a book and its moves, as iteration by position yields them."""

    key: int
    #: The four-field FEN (chess) or board string (Othello); None for a key-only entry (a
    #: Polyglot entry whose position is not known yet).
    position: Optional[str]
    entries: typing.List[Entry]


def _entries(key: int, moves: list, to_move: Optional[Callable[[str], Any]]) -> typing.List[Entry]:
    out = []
    for name, raw, weight, learn, white, draws, black, unknown, avg in moves:
        mv: Any = name
        if to_move is not None:
            try:
                mv = to_move(name)
            except ValueError:
                mv = name
        out.append(
            Entry(key, raw, weight, learn, mv, name, white, draws, black, unknown,
                  white + draws + black + unknown, avg)
        )
    return out


def _csv(value: Any, name: str) -> Optional[str]:
    if value is None:
        return None
    if isinstance(value, str):
        return value
    if isinstance(value, int):
        return str(value)
    try:
        return ",".join(str(v) for v in value)
    except TypeError:
        raise UsageError(f"{name}: {value!r} is not a list") from None


def _bound(value: Any, name: str) -> Optional[str]:
    if value is None:
        return None
    if isinstance(value, int) and not isinstance(value, bool):
        return f"{value:04d}"
    if isinstance(value, str):
        return value
    # A date or datetime: its month.
    year, month = getattr(value, "year", None), getattr(value, "month", None)
    if isinstance(year, int) and isinstance(month, int):
        return f"{year:04d}-{month:02d}"
    raise UsageError(f"{name}: {value!r} is not a month (YYYY-MM), a year or a date")


def _uci_set(exclude_moves: Container[Any]) -> Container[str]:
    if not exclude_moves:
        return ()
    try:
        return {m if isinstance(m, str) else m.uci() for m in exclude_moves}  # type: ignore[attr-defined]
    except TypeError:
        return exclude_moves  # a container that cannot be iterated: asked as it is


def _randint(rng: Optional[_random.Random], a: int, b: int) -> int:
    return (rng or _random).randint(a, b)


class Reader:
    """A book opened for reading (``bookdb.open``): a live reader. Every query answers from
    one consistent state of the book; the reader moves to what writers published (imports
    into the book by other processes) at most ``refresh`` seconds after it.

    Positions are ``chess.Board`` objects, FENs, lists of moves from the start (SAN or UCI,
    or ``chess.Move``) or keys; for an Othello book, board strings (64 characters ``-XO``, a
    space, ``X`` or ``O`` to move) or lists of squares.
    """

    def __init__(self, path: Union[str, "typing.Any"], *, refresh: Optional[float] = 0.1) -> None:
        self._book = _bookdb.Book(path, refresh)
        self._closed = False

    # -- the python-chess interface ------------------------------------------------------

    def find_all(
        self,
        board: PositionLike,
        *,
        minimum_games: int = 1,
        minimum_weight: int = 0,
        exclude_moves: Container[Any] = (),
        since: Any = None,
        until: Any = None,
        ratings: Any = None,
        speeds: Any = None,
        modes: Any = None,
    ) -> Iterator[Entry]:
        """Yields the moves of the position, heaviest first (the order of the ``.bin``), then
        the moves the Polyglot export would leave out (weight 0), most played first.

        Only moves played in at least ``minimum_games`` counted games (and with at least
        ``minimum_weight``) are yielded; ``exclude_moves`` leaves moves out (``chess.Move``
        or UCI). ``since``/``until`` (``"YYYY-MM"``, ``"YYYY"``, an int year or a date),
        ``ratings`` (ints, each selecting its rating group), ``speeds`` (``"blitz"``, …) and
        ``modes`` (``"rated"``, ``"casual"``) count only the games they select; a book that
        does not keep a facet refuses a filter on it (``UsageError``).
        """
        return iter(
            self._find(board, minimum_games, minimum_weight, exclude_moves, since, until,
                       ratings, speeds, modes)
        )

    def _find(self, board: PositionLike, minimum_games: int, minimum_weight: int,
              exclude_moves: Container[Any], since: Any, until: Any, ratings: Any,
              speeds: Any, modes: Any) -> typing.List[Entry]:
        key, moves = self._book.moves(
            board,
            _bound(since, "since"),
            _bound(until, "until"),
            _csv(ratings, "ratings"),
            _csv(speeds, "speeds"),
            _csv(modes, "modes"),
        )
        to_move = _moves_class() if self._book.game == "chess" else None
        entries = _entries(key, moves, to_move)
        excluded = _uci_set(exclude_moves)
        return [
            e for e in entries
            if e.games >= minimum_games and e.weight >= minimum_weight
            and not (excluded and e.uci in excluded)
        ]

    def find(self, board: PositionLike, *, minimum_weight: int = 1,
             exclude_moves: Container[Any] = (), **filters: Any) -> Entry:
        """The main entry of the position: the heaviest of those with at least
        ``minimum_weight`` (1, as python-chess: a move the ``.bin`` leaves out, such as one that
        lost every game, is never the book's move; 0 also takes those, the most played first).
        Raises ``IndexError`` if the book has no such move there."""
        found = self._find(board, filters.pop("minimum_games", 1), minimum_weight,
                           exclude_moves, **_filters(filters))
        if not found:
            raise IndexError("the book has no move in this position")
        return found[0]

    def get(self, board: PositionLike, default: Optional[Entry] = None, *,
            minimum_weight: int = 1, exclude_moves: Container[Any] = (),
            **filters: Any) -> Optional[Entry]:
        """``find``, or ``default`` when the book has no move there."""
        try:
            return self.find(board, minimum_weight=minimum_weight, exclude_moves=exclude_moves,
                             **filters)
        except IndexError:
            return default

    def choice(self, board: PositionLike, *, minimum_weight: int = 1,
               exclude_moves: Container[Any] = (), random: Optional[_random.Random] = None,
               **filters: Any) -> Entry:
        """A move chosen uniformly among those with at least ``minimum_weight`` (as
        python-chess chooses, so a seeded ``random`` chooses alike). ``IndexError`` if none."""
        chosen = None
        entries = self._find(board, filters.pop("minimum_games", 1), minimum_weight,
                             exclude_moves, **_filters(filters))
        for i, entry in enumerate(entries):
            if chosen is None or _randint(random, 0, i) == i:
                chosen = entry
        if chosen is None:
            raise IndexError("the book has no move in this position")
        return chosen

    def weighted_choice(self, board: PositionLike, *, exclude_moves: Container[Any] = (),
                        random: Optional[_random.Random] = None, **filters: Any) -> Entry:
        """A move chosen with probability proportional to its weight (as python-chess
        chooses). ``IndexError`` if no move has a weight."""
        entries = self._find(board, filters.pop("minimum_games", 1), 1, exclude_moves,
                             **_filters(filters))
        total = sum(e.weight for e in entries)
        if not total:
            raise IndexError("the book has no weighted move in this position")
        spin = _randint(random, 0, total - 1)
        current = 0
        for entry in entries:
            current += entry.weight
            if current > spin:
                return entry
        raise InternalError("weighted_choice: the weights changed under the choice")

    # -- the book as a whole ---------------------------------------------------------------

    def __iter__(self) -> Iterator[Entry]:
        """Every (position, move) of the book, in key order (and by position within a key;
        the moves of a position in ``find_all``'s order), from one state of the book."""
        for position in self.positions():
            yield from position.entries

    def positions(self) -> Iterator[Position]:
        """Every position of the book with its moves, in key order, from one state."""
        to_move = _moves_class() if self._book.game == "chess" else None
        for key, text, moves in self._book.entries():
            yield Position(key, text, _entries(key, moves, to_move))

    def __len__(self) -> int:
        """The number of (position, move) pairs, which iteration yields."""
        return len(self._book)

    def stats(self) -> dict:
        """``bookdb stats --json``: positions, pairs, games, file sizes, segments, facets."""
        return _json.loads(self._book.stats_json())

    def key(self, board: PositionLike) -> int:
        """The key the position is stored under (its Polyglot key, for chess)."""
        return self._book.key(board)

    def evaluation(self, board: PositionLike) -> Any:
        """The book's engine evaluations of the position, once books keep them.

        The hook for the evaluations being added to the library: this build's books keep
        none, so this raises ``NotImplementedError``; a build whose native module answers
        ``evaluation`` returns its answer here.
        """
        native = getattr(self._book, "evaluation", None)
        if native is None:
            raise NotImplementedError("this build of bookdb keeps no evaluations")
        return native(board)

    @property
    def game(self) -> str:
        """``"chess"``, ``"othello"`` or ``"othello-canonical"``."""
        return self._book.game

    @property
    def path(self) -> str:
        return str(self._book.path)

    @property
    def generation(self) -> int:
        """The generation of the state being read (it grows with every publication)."""
        return self._book.generation

    @property
    def facets(self) -> typing.List[str]:
        """The facets the book keeps: any of ``month``, ``speed``, ``rating``, ``mode``."""
        return list(self._book.facets)

    def refresh(self) -> bool:
        """Moves to what writers published since; whether anything changed."""
        return self._book.refresh()

    def close(self) -> None:
        """Lets the book's files go (the reader is unusable afterwards)."""
        self._closed = True
        self._book = _ClosedBook()  # type: ignore[assignment]

    def __enter__(self) -> "Reader":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def __repr__(self) -> str:
        return f"<bookdb.Reader {self._book!r}>"


class _ClosedBook:
    def __getattr__(self, name: str) -> Any:
        raise UsageError("the book is closed")

    def __len__(self) -> int:
        raise UsageError("the book is closed")

    def __repr__(self) -> str:
        return "closed"


def _filters(f: typing.Dict[str, Any]) -> typing.Dict[str, Any]:
    allowed = {"since", "until", "ratings", "speeds", "modes"}
    unknown = set(f) - allowed
    if unknown:
        raise TypeError(f"unexpected keyword argument(s): {', '.join(sorted(unknown))}")
    return {k: f.get(k) for k in sorted(allowed)}


def open(path: Union[str, Any], *, refresh: Optional[float] = 0.1) -> Reader:  # noqa: A001
    """Opens the book at ``path`` (its base file, manifest and delta segments) for reading;
    a context manager, like ``chess.polyglot.open_reader``. ``refresh``: seconds after which
    a query first looks for what other processes published (None: only on ``refresh()``)."""
    return Reader(path, refresh=refresh)


def import_games(book: Union[str, Any], inputs: Union[str, Any, Iterable[Union[str, Any]]], *,
                 game: str = "chess", max_ply: Optional[int] = None,
                 facets: Optional[str] = None, jobs: int = 0, memory_mib: int = 256,
                 force: bool = False, dedupe: bool = False,
                 min_rating: Optional[int] = None) -> dict:
    """``bookdb import``: counts the games of ``inputs`` (PGN files, plain or compressed; for
    ``game="othello"``, WTHOR files or transcripts) into ``book``, created if absent, and
    returns the summary ``--json`` prints. A book being read meanwhile keeps being read."""
    if isinstance(inputs, (str, bytes)) or hasattr(inputs, "__fspath__"):
        inputs = [inputs]  # type: ignore[list-item]
    names = [str(i) for i in inputs]  # type: ignore[union-attr]
    return _json.loads(_bookdb.import_games(str(book), names, game, max_ply, facets, jobs,
                                            memory_mib, force, dedupe, min_rating))


def export_polyglot(book: Union[str, Any], out: Union[str, Any], *, min_games: int = 1,
                    min_score: float = 0.0, only: Optional[str] = None, uniform: bool = False,
                    since: Any = None, until: Any = None, ratings: Any = None,
                    speeds: Any = None, modes: Any = None, weights: str = "games") -> dict:
    """``bookdb export --format polyglot``: writes ``book`` as a Polyglot ``.bin`` to ``out``
    (atomically) and returns the summary ``--json`` prints. ``weights="eval"`` is
    ``--weights eval``: each move weighted by the engine evaluation of the position it leads
    to (moves without one are left out, reason ``no_eval``)."""
    return _json.loads(_bookdb.export_polyglot(
        str(book), str(out), min_games, min_score, only, uniform,
        _bound(since, "since"), _bound(until, "until"), _csv(ratings, "ratings"),
        _csv(speeds, "speeds"), _csv(modes, "modes"), weights))

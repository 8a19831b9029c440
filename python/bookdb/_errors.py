"""The exceptions of bookdb, one per kind of the library's errors (its ``ErrorKind``).

Every error of the library reaches Python as one of these, with the library's own message;
``kind`` is the kind's stable name, as ``bookdb --json`` prints it.
"""

from __future__ import annotations

__all__ = [
    "Error",
    "UsageError",
    "InputError",
    "BookBusy",
    "CorruptBook",
    "NotABook",
    "BookNotFound",
    "BookIOError",
    "InternalError",
]


class Error(Exception):
    """Any error of bookdb."""

    kind: str = "error"


class UsageError(Error, ValueError):
    """What was asked cannot be done as asked: a FEN, a move, an option value."""

    kind = "usage"


class InputError(Error, ValueError):
    """An input file (PGN, a Polyglot .bin, a staging file) is not what it should be."""

    kind = "input"


class BookBusy(Error):
    """Another process holds the book (its writer lock), or its files kept changing."""

    kind = "busy"


class CorruptBook(Error):
    """The book is damaged: a checksum, a block, a manifest or a counter does not hold."""

    kind = "corrupt"


class NotABook(Error):
    """The file is not a book, or one of a format version this build does not read."""

    kind = "not-a-book"


class BookNotFound(Error, FileNotFoundError):
    """There is no book at that path."""

    kind = "not-found"


class BookIOError(Error, OSError):
    """The operating system or the database failed (I/O, disk full, permissions)."""

    kind = "io"


class InternalError(Error):
    """A broken invariant of bookdb (a bug): please report it."""

    kind = "internal"

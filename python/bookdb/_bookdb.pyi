"""Type stubs of the native half of bookdb (a thin binding of the Rust crate)."""

from os import PathLike
from typing import Any, Iterator, Optional, Union

__version__: str

#: (name, raw Polyglot move, weight, learn, white, draws, black, unknown, average rating)
MoveTuple = tuple[str, int, int, int, int, int, int, int, Optional[int]]

class Book:
    """A book opened for reading, kept live (see ``bookdb.Reader``)."""

    def __init__(self, path: Union[str, PathLike[str]], refresh: Optional[float] = 0.1) -> None: ...
    @property
    def game(self) -> str: ...
    @property
    def path(self) -> str: ...
    @property
    def generation(self) -> int: ...
    @property
    def facets(self) -> list[str]: ...
    def refresh(self) -> bool: ...
    def moves(
        self,
        position: Any,
        since: Optional[str] = None,
        until: Optional[str] = None,
        ratings: Optional[str] = None,
        speeds: Optional[str] = None,
        modes: Optional[str] = None,
    ) -> tuple[int, list[MoveTuple]]: ...
    def key(self, position: Any) -> int: ...
    def stats_json(self) -> str: ...
    def positions_count(self) -> int: ...
    def entries(self) -> Entries: ...
    def __len__(self) -> int: ...

class Entries(Iterator[tuple[int, Optional[str], list[MoveTuple]]]):
    def __iter__(self) -> Entries: ...
    def __next__(self) -> tuple[int, Optional[str], list[MoveTuple]]: ...

def import_games(
    book: str,
    inputs: list[str],
    game: str = "chess",
    max_ply: Optional[int] = None,
    facets: Optional[str] = None,
    jobs: int = 0,
    memory_mib: int = 256,
    force: bool = False,
    dedupe: bool = False,
    min_rating: Optional[int] = None,
) -> str: ...
def export_polyglot(
    book: str,
    out: str,
    min_games: int = 1,
    min_score: float = 0.0,
    only: Optional[str] = None,
    uniform: bool = False,
    since: Optional[str] = None,
    until: Optional[str] = None,
    ratings: Optional[str] = None,
    speeds: Optional[str] = None,
    modes: Optional[str] = None,
) -> str: ...
def encode(value: Any, key: bool = False) -> bytes:
    """The canonical tagged encoding of ``value`` (never pickle)."""
def decode(data: bytes) -> Any:
    """The value ``data`` encodes."""

class Table:
    """A table of opaque states (``bookdb::store::tt``), for ``bookdb.TranspositionTable``."""

    def __init__(self, path: Union[str, PathLike[str]], hash: str = "xxh3", key_bits: int = 64,
                 memory_mib: int = 64) -> None: ...
    def lookup(self, state: Any) -> Optional[Any]: ...
    def store(self, state: Any, data: dict[str, Any]) -> bool: ...
    def flush(self) -> None: ...
    def close(self) -> None: ...
    def stats(self) -> dict[str, int]: ...
    def published_count(self) -> int: ...
    def file_bytes(self) -> int: ...
    @property
    def path(self) -> str: ...
    @property
    def hash(self) -> str: ...

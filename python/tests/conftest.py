"""Fixtures of the bookdb package's tests: books built from the repository's sample games."""

from __future__ import annotations

import pathlib

import pytest

import bookdb

ROOT = pathlib.Path(__file__).resolve().parents[2]
SAMPLE = ROOT / "tests" / "data" / "sample.pgn"

#: Othello games as transcripts (one per line: the squares played).
OTHELLO_GAMES = [
    "f5d6c3d3c4f4f6f3e6e7",
    "f5d6c3d3c4f4c5b3c2e6",
    "f5f6e6f4e3c5c4d3c3",
    "f5d6c5f4e3",
    "f5f4e3f6d3",
    "f5d6c3d3c4",
]


@pytest.fixture(scope="session")
def sample_pgn() -> pathlib.Path:
    assert SAMPLE.is_file(), f"{SAMPLE} is missing (run the tests from a clone of bookdb)"
    return SAMPLE


@pytest.fixture(scope="session")
def chess_book(tmp_path_factory: pytest.TempPathFactory, sample_pgn: pathlib.Path) -> pathlib.Path:
    path = tmp_path_factory.mktemp("chess") / "sample.book"
    summary = bookdb.import_games(path, sample_pgn, max_ply=30)
    assert summary["games_imported"] == 200, summary
    return path


@pytest.fixture(scope="session")
def polyglot_bin(tmp_path_factory: pytest.TempPathFactory, chess_book: pathlib.Path) -> pathlib.Path:
    out = tmp_path_factory.mktemp("bin") / "sample.bin"
    bookdb.export_polyglot(chess_book, out)
    return out


@pytest.fixture(scope="session")
def othello_book(tmp_path_factory: pytest.TempPathFactory) -> pathlib.Path:
    d = tmp_path_factory.mktemp("othello")
    games = d / "games.txt"
    games.write_text("\n".join(OTHELLO_GAMES) + "\n")
    path = d / "othello.book"
    bookdb.import_games(path, games, game="othello")
    return path

"""The canonical tagged encoding the transposition table keeps keys and values in (never
pickle)."""

from __future__ import annotations

import math

import pytest

from bookdb import _bookdb


VALUES = [
    None, True, False, 0, 1, -1, 2**63 - 1, -(2**63), 2**200, -(3**90), 0.5, -100.25,
    float("inf"), -float("inf"), 3.0, "", "é♞", b"\x00\xff", (), [], (1, "a", (2.5, None)),
    [1, [2, [3]]], {"depth": 4, "value": -99.6, "move": 3, "flag": 0},
    {(1, 2): [None], "b": {"c": ()}},
]


@pytest.mark.parametrize("value", VALUES, ids=repr)
def test_values_come_back_exactly(value):
    back = _bookdb.decode(_bookdb.encode(value))
    assert back == value and type(back) is type(value)
    if isinstance(value, dict):
        assert list(back) == list(value)


def test_nan_comes_back_as_nan():
    assert math.isnan(_bookdb.decode(_bookdb.encode(float("nan"))))


def test_keys_python_holds_equal_encode_alike():
    enc = lambda v: _bookdb.encode(v, key=True)  # noqa: E731
    assert enc(1) == enc(1.0) == enc(True)
    assert enc(0) == enc(False) == enc(-0.0)
    assert enc({"a": 1, "b": 2}) == enc({"b": 2, "a": 1})
    assert enc((1, 2)) != enc([1, 2]) and enc("1") != enc(1) and enc(b"a") != enc("a")
    assert enc((1, (2, 3))) != enc(((1, 2), 3))


def test_only_plain_types_are_stored():
    for bad in (object(), {1, 2}, lambda: 0):
        with pytest.raises(TypeError, match="nothing is pickled"):
            _bookdb.encode(bad)
    cyclic: list = []
    cyclic.append(cyclic)
    with pytest.raises(ValueError, match="nested more than"):
        _bookdb.encode(cyclic)
    for broken in (b"", b"\x63", b"\x06\x05ab", b"\x00\x00"):
        with pytest.raises(ValueError, match="does not decode"):
            _bookdb.decode(broken)


def test_numpy_values_are_their_python_values():
    np = pytest.importorskip("numpy")
    assert _bookdb.encode(np.int64(7), key=True) == _bookdb.encode(7, key=True)
    board = np.array([[0, 1], [2, 0]])
    assert _bookdb.decode(_bookdb.encode(board)) == [[0, 1], [2, 0]]

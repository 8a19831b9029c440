#!/usr/bin/env python3
"""Asks a bookdb server faceted explorer questions through berserk (a real lichess API client)
and prints what berserk returned as one JSON object (tests/facets_oracle.rs compares it with
tests/scripts/facet_oracle.py).

usage: berserk_facets.py EXPLORER_URL
"""
import json
import sys

import berserk

ex = berserk.Client(explorer_url=sys.argv[1]).opening_explorer
lichess = dict(speeds=["blitz"], ratings=["2200"], since="2020-01", until="2022-12", history=True)
masters = dict(since=1990, until=2005)
out = {
    # As a user would write them (the server's default of 12 moves) ...
    "lichess": ex.get_lichess_games(**lichess),
    "masters": ex.get_masters_games(**masters),
    # ... and with every move listed.
    "lichess_all": ex.get_lichess_games(moves=100, **lichess),
    "masters_all": ex.get_masters_games(moves=100, **masters),
}
print(json.dumps(out))

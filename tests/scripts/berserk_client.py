#!/usr/bin/env python3
"""Asks a bookdb server what the lichess opening explorer would be asked, through berserk (a
real lichess API client), and prints what berserk returned as one JSON object.

usage: berserk_client.py EXPLORER_URL
"""
import json
import sys

import berserk

client = berserk.Client(explorer_url=sys.argv[1])
out = {
    "masters_start": client.opening_explorer.get_masters_games(),
    "masters_sicilian": client.opening_explorer.get_masters_games(
        play=["e2e4", "c7c5"], moves=5, since=1952, until=2024, top_games=4
    ),
    "lichess_e4": client.opening_explorer.get_lichess_games(
        play=["e2e4"], speeds=["blitz", "rapid"], ratings=["1600", "1800"], moves=3
    ),
    "masters_fen": client.opening_explorer.get_masters_games(
        position="rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq - 0 1"
    ),
}
# A stored game by id, as berserk reads one (its first top game after 1.e4 c5).
top = out["masters_sicilian"]["topGames"]
out["otb_game_id"] = top[0]["id"] if top else None
out["otb_game"] = client.opening_explorer.get_otb_master_game(top[0]["id"]) if top else None
try:
    client.opening_explorer.get_masters_games(play=["e2e4", "e2e4"])
    out["illegal"] = "no error"
except berserk.exceptions.ResponseError as e:
    out["illegal"] = {"status": e.status_code, "message": str(e)}
print(json.dumps(out))

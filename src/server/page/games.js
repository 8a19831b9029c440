// bookdb explorer: the games behind the numbers — the position's top and recent games (the
// /lichess answer's `topGames` and `recentGames`, chosen by the server under the page's
// filters, docs/CONTRACT.md "Games") listed below the moves, and a game opened from the list:
// its PGN (from /lichess/pgn/ID) becomes the line, shown at the position it was opened from, so
// the board steps through it with the line's buttons and keys while the explorer answers for
// every position of it; a banner names the game, with a button back to the line the user had.
// Part of the chess page (explorer.js, whose state, `go` and `els` these use).
"use strict";

let openedGame = null; // {id, title, fen, ucis, back: the state the game was opened from}

function initGames() {
  for (const id of ["games", "top-games", "recent-games", "top-games-title", "recent-games-title",
    "game-banner", "game-title", "close-game"]) {
    els[id] = document.getElementById(id);
  }
  for (const list of [els["top-games"], els["recent-games"]]) {
    list.addEventListener("click", (e) => {
      const b = e.target.closest("button[data-id]");
      if (b) openGame(b.dataset.id, b.dataset.title);
    });
  }
  els["close-game"].addEventListener("click", closeGame);
}

function playerText(p) {
  return p.name + (p.rating ? " (" + p.rating + ")" : "");
}

function resultText(g) {
  return g.winner === "white" ? "1-0" : g.winner === "black" ? "0-1" : "½-½";
}

function gameTitle(g) {
  return `${playerText(g.white)} – ${playerText(g.black)}`;
}

// A move of the position shown, in SAN: the answer's own, else the rules' (the answer lists
// only its `moves` first moves); the UCI if neither reads it.
function sanHere(uci) {
  const m = current && (current.moves || []).find((x) => x.uci === uci);
  if (m && m.san) return m.san;
  try {
    const r = Rules.replay(current && current.fen ? fullFen(current.fen) : null, [uci]);
    if (!r.error && r.moves.length === 1) return r.moves[0].san;
  } catch (e) {
    // Fall through: the UCI is still a move.
  }
  return uci;
}

function fillGames(list, games) {
  list.textContent = "";
  for (const g of games) {
    const li = document.createElement("li");
    const b = document.createElement("button");
    b.type = "button";
    b.className = "game";
    b.dataset.id = g.id;
    const when = g.month || (g.year ? String(g.year) : "");
    b.dataset.title = `${gameTitle(g)}${when ? ", " + when : ""}`;
    b.title = "Open this game: its moves become the line";
    const names = document.createElement("span");
    names.className = "players";
    names.textContent = gameTitle(g);
    const res = document.createElement("span");
    res.className = "result " + (g.winner || "draw");
    res.textContent = resultText(g);
    const date = document.createElement("span");
    date.className = "when";
    date.textContent = when;
    const mv = document.createElement("span");
    mv.className = "move";
    mv.textContent = sanHere(g.uci);
    b.append(names, res, date, mv);
    li.append(b);
    list.append(li);
  }
}

function renderGames() {
  const top = (current && current.topGames) || [];
  const recent = (current && current.recentGames) || [];
  els.games.hidden = top.length === 0 && recent.length === 0;
  els["top-games-title"].hidden = els["top-games"].hidden = top.length === 0;
  els["recent-games-title"].hidden = els["recent-games"].hidden = recent.length === 0;
  fillGames(els["top-games"], top);
  fillGames(els["recent-games"], recent);
  // The banner stays while the line is the game's (stepping through it); a move off it, or
  // another line, closes it.
  if (openedGame && !onGameLine(state)) openedGame = null;
  els["game-banner"].hidden = !openedGame;
  if (openedGame) els["game-title"].textContent = `Game ${openedGame.id}: ${openedGame.title}`;
}

function onGameLine(s) {
  if ((s.fen || null) !== openedGame.fen) return false;
  if (s.line.length !== openedGame.ucis.length) return false;
  return s.line.every((m, i) => m.uci === openedGame.ucis[i]);
}

// Opens a game: its moves become the line, at the ply where it reached the position shown.
async function openGame(id, title) {
  let text;
  try {
    const r = await fetch("/lichess/pgn/" + encodeURIComponent(id), { cache: "no-store" });
    text = await r.text();
    if (!r.ok) throw new Error(text.trim() || r.statusText);
  } catch (e) {
    showError("The game " + id + " cannot be read: " + e.message);
    return;
  }
  let g;
  try {
    g = Rules.readPgn(text);
  } catch (e) {
    showError("The game " + id + " does not replay: " + e.message + ".");
    return;
  }
  const fen = g.fen && g.fen.trim() !== START_FEN ? g.fen.trim() : null;
  const here = positionOf(base(), base().idx);
  const want = here ? Rules.toFen(here, true) : null;
  const r = Rules.replay(fen, g.moves.map((m) => m.uci));
  let idx = want === null ? -1 : r.positions.findIndex((p) => Rules.toFen(p, true) === want);
  if (idx < 0) idx = 0;
  const back = openedGame ? openedGame.back : cloneState(base());
  openedGame = { id, title, fen, ucis: g.moves.map((m) => m.uci), back };
  go({ fen, line: g.moves, idx, filters: cloneFilters(base().filters) }, "push");
}

// Back to the line the first game was opened from.
function closeGame() {
  const back = openedGame ? openedGame.back : null;
  openedGame = null;
  if (back) go(cloneState(back), "push");
  else render();
}

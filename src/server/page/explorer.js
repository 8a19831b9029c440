// bookdb opening explorer: a board, the opening name, the moves table of the position, the line
// played, filters on the book's facets (speed, rating group, mode, months) and a chart of the
// position's games per month, and the engine's evaluation of the position (eval.js). Reads the
// book only through the public /lichess and /api/cloud-eval routes (and /v1/book for the facets
// the book keeps and to notice that the book changed). The line and the
// filters live in the URL, so a link reproduces the view. Moves are played on the board
// (board.js) or in the table; the rules are chess-rules.js, the search, paste and copy tools
// tools.js; an Othello book gets othello.js's page instead. No dependencies.
"use strict";

const START_FEN = "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1";
const MAX_MOVES = 50;
const POLL_MS = 3000;
// How long the first view waits for /v1/book (the facets) before it asks without them.
const BOOK_WAIT_MS = 1500;
const SVG_NS = "http://www.w3.org/2000/svg";

// The facets a book may keep (docs/FORMAT.md §12, docs/CONTRACT.md §3) and the values of their filters, in lichess's order.
const FACETS = ["month", "speed", "rating", "mode"];
const SPEEDS = ["ultraBullet", "bullet", "blitz", "rapid", "classical", "correspondence"];
const SPEED_NAMES = {
  ultraBullet: "UltraBullet", bullet: "Bullet", blitz: "Blitz", rapid: "Rapid",
  classical: "Classical", correspondence: "Correspondence",
};
const RATING_GROUPS = [0, 1000, 1200, 1400, 1600, 1800, 2000, 2200, 2500];
const MODES = ["rated", "casual"];
const MONTH_RE = /^[0-9]{4}-(0[1-9]|1[0-2])$/;

const Rules = self.BookdbChess;
const els = {};
let board = null; // board.js's board
let othello = null; // othello.js's page, on an Othello book
// line: [{uci, san}]; filters: see noFilters().
let state = { fen: null, line: [], idx: 0, filters: noFilters() };
let orientation = "white";
let current = null; // the last /lichess answer shown
let generation = null; // the book state that answered it (its state tag)
let bookFacets = null; // the facets /v1/book says the book keeps (a Set), null until known
let viewFacets = null; // facetsKey() when the answer shown was asked for
let requestSeq = 0;
let pending = null; // the state being fetched: keys pressed quickly step on from it
let historySel = null; // the month picked on the chart (an index), null for none

document.addEventListener("DOMContentLoaded", init);

function init() {
  for (const id of ["board", "opening", "line", "error", "status", "moves", "fen", "fen-form", "flip",
    "first", "prev", "next", "last", "book-info", "filters", "filters-summary", "f-speed",
    "f-rating", "f-mode", "f-month", "since", "until", "clear-filters", "history",
    "history-chart", "history-note", "eval", "eval-score", "eval-info", "eval-lines"]) {
    els[id] = document.getElementById(id);
  }
  let filtersOpen = null;
  try {
    orientation = localStorage.getItem("bookdb-orientation") === "black" ? "black" : "white";
    filtersOpen = localStorage.getItem("bookdb-filters-open");
  } catch (_) { /* storage may be off */ }
  // Folded or not as the user left them; at first on a phone folded, to leave the moves in view.
  if (filtersOpen !== null) els.filters.open = filtersOpen === "true";
  else if (window.matchMedia && window.matchMedia("(max-width: 480px)").matches) els.filters.open = false;
  initFilters();
  initHistory();
  initEval();
  initGames();
  board = self.BookdbBoard.createBoard(els.board, onBoardMove);
  self.BookdbTools.init({
    onOpening: (o) => go({
      fen: null, line: o.uci.map((uci) => ({ uci, san: null })), idx: o.uci.length,
      filters: cloneFilters(base().filters),
    }, "push"),
    onText: loadText,
    pgn: linePgn,
    say: (msg) => { els.status.textContent = msg; },
    showText: (text) => { els.fen.value = text; },
  });
  board.setOrientation(orientation);
  els.flip.addEventListener("click", flip);
  els.first.addEventListener("click", () => step(-Infinity));
  els.prev.addEventListener("click", () => step(-1));
  els.next.addEventListener("click", () => step(1));
  els.last.addEventListener("click", () => step(Infinity));
  els["fen-form"].addEventListener("submit", (e) => {
    e.preventDefault();
    // The box then shows the position reached (as FEN), not what was typed.
    els.fen.blur();
    if (othello) othello.setBoard(els.fen.value);
    else loadText(els.fen.value);
  });
  els.moves.tBodies[0].addEventListener("click", (e) => {
    const tr = e.target.closest("tr[data-uci]");
    if (tr) playMove(tr.dataset.uci, tr.dataset.san);
  });
  els.moves.tBodies[0].addEventListener("keydown", onRowKey);
  document.addEventListener("keydown", onKey);
  window.addEventListener("popstate", (e) => {
    if (othello) return othello.popstate(e);
    const s = e.state && e.state.bookdb ? cloneState(e.state.bookdb) : stateFromUrl();
    go(s, "none");
  });
  const s = stateFromUrl();
  pending = s;
  renderFilters();
  // The first view asks for the history only when the book keeps months: learn its facets first
  // (without waiting long; the poll asks again when they arrive later).
  const wait = new Promise((resolve) => setTimeout(resolve, BOOK_WAIT_MS));
  Promise.race([refreshBook(false), wait]).then(() => {
    if (!othello) go(s, "replace", true);
    setInterval(poll, POLL_MS);
  });
}

// ---- state and URL -------------------------------------------------------------------------

function listParam(q, name) {
  return (q.get(name) || "").split(",").map((v) => v.trim()).filter((v) => v !== "");
}

function stateFromUrl() {
  const q = new URLSearchParams(location.search);
  const fen = (q.get("fen") || "").replace(/_/g, " ").trim();
  const play = listParam(q, "play");
  return {
    fen: fen === "" ? null : fen,
    line: play.map((uci) => ({ uci, san: null })),
    idx: play.length,
    filters: filtersFromQuery(q),
  };
}

// The filters are kept as the URL gives them (values the page has no button for included), so
// the server judges them and a link round-trips unchanged.
function noFilters() {
  return { speeds: [], ratings: [], modes: [], since: "", until: "" };
}

function filtersFromQuery(q) {
  return {
    speeds: listParam(q, "speeds"),
    ratings: listParam(q, "ratings"),
    modes: listParam(q, "modes"),
    since: (q.get("since") || "").trim(),
    until: (q.get("until") || "").trim(),
  };
}

function cloneFilters(f) {
  if (!f) return noFilters();
  return {
    speeds: (f.speeds || []).slice(), ratings: (f.ratings || []).slice(), modes: (f.modes || []).slice(),
    since: f.since || "", until: f.until || "",
  };
}

function hasFilters(f) {
  return f.speeds.length + f.ratings.length + f.modes.length > 0 || f.since !== "" || f.until !== "";
}

function setFilterParams(q, f) {
  for (const k of ["speeds", "ratings", "modes"]) {
    if (f[k].length) q.set(k, f[k].join(","));
  }
  if (f.since) q.set("since", f.since);
  if (f.until) q.set("until", f.until);
}

function urlOf(s) {
  const q = new URLSearchParams();
  if (s.fen) q.set("fen", s.fen);
  const play = s.line.slice(0, s.idx).map((m) => m.uci);
  if (play.length) q.set("play", play.join(","));
  setFilterParams(q, s.filters);
  const qs = q.toString().replace(/%2C/g, ",");
  return "/" + (qs ? "?" + qs : "");
}

// The /lichess request for the position after `idx` moves of `s`; `opts.filters` adds the
// state's filters, `opts.history` asks for the games per month.
function lichessUrl(s, idx, opts) {
  const q = new URLSearchParams();
  if (s.fen) q.set("fen", s.fen);
  const play = s.line.slice(0, idx).map((m) => m.uci);
  if (play.length) q.set("play", play.join(","));
  q.set("moves", String(MAX_MOVES));
  if (opts && opts.filters) setFilterParams(q, s.filters);
  if (opts && opts.history) q.set("history", "true");
  return "/lichess?" + q.toString().replace(/%2C/g, ",");
}

function keeps(facet) {
  return bookFacets !== null && bookFacets.has(facet);
}

function facetsKey() {
  return bookFacets === null ? "?" : FACETS.filter((f) => bookFacets.has(f)).join(",");
}

async function fetchJson(url) {
  let r;
  try {
    r = await fetch(url, { headers: { Accept: "application/json" }, cache: "no-store" });
  } catch (e) {
    throw new Error("The server cannot be reached (" + e.message + ").");
  }
  let body = null;
  const text = await r.text();
  try { body = JSON.parse(text); } catch (_) { /* not JSON */ }
  if (!r.ok) {
    const msg = body && body.error ? body.error : (text.trim() || r.statusText);
    throw new Error(msg + " (HTTP " + r.status + ")");
  }
  if (body === null) throw new Error("The server's answer was not JSON.");
  // The state tag names the book state (a generation can repeat when another book takes this
  // one's place); a server without it says the generation.
  return { body, generation: r.headers.get("x-bookdb-state") || r.headers.get("x-bookdb-generation") };
}

// Shows state `s`: fetches its position, then records it in the history ("push", "replace",
// "none") and draws it. On an error the error is shown; the view stays as it was, unless there
// is no view yet.
async function go(s, history, first) {
  if (othello) return;
  const seq = ++requestSeq;
  pending = s;
  renderFilters();
  if (!first) renderBoard();
  const asked = facetsKey();
  // The evaluation is asked beside the moves (of the position the page's rules reach; of the
  // position the server names when they reach none).
  const reached = positionOf(s, s.idx);
  const evalAsked = fetchEval(reached ? Rules.toFen(reached) : null);
  let ans;
  let ev;
  try {
    ans = await fetchJson(lichessUrl(s, s.idx, { filters: true, history: keeps("month") }));
    ev = reached ? await evalAsked : await fetchEval(ans.body.fen ? fullFen(ans.body.fen) : null);
  } catch (e) {
    if (seq !== requestSeq) return;
    pending = null;
    showError(e.message);
    if (first || !current) {
      state = s;
      current = null;
      currentEval = null;
      render();
    } else {
      renderFilters();
      renderBoard();
    }
    return;
  }
  if (seq !== requestSeq || othello) return;
  pending = null;
  hideError();
  if (!sameView(s, state)) historySel = null;
  state = s;
  current = ans.body;
  currentEval = ev;
  generation = ans.generation;
  viewFacets = asked;
  rememberOpenings(s, s.idx, current);
  fillSans(state);
  if (history === "push") window.history.pushState({ bookdb: cloneState(state) }, "", urlOf(state));
  else if (history === "replace") window.history.replaceState({ bookdb: cloneState(state) }, "", urlOf(state));
  render();
}

function cloneState(s) {
  return {
    fen: s.fen, line: s.line.map((m) => ({ uci: m.uci, san: m.san })), idx: s.idx,
    filters: cloneFilters(s.filters),
  };
}

// Whether two states show the same position with the same filters.
function sameView(a, b) {
  return urlOf(a) === urlOf(b);
}

// A line from a link carries UCI only; the page's rules name its moves in SAN (a move that does
// not replay keeps its UCI, and the server's error says why).
function fillSans(s) {
  positionOf(s, s.line.length);
}

// The state navigation starts from: the one being fetched, if any, else the one shown.
function base() {
  return pending || state;
}

// Says `text` in the page's aria-live region (read by screen readers, not shown).
function announce(text) {
  const el = document.getElementById("announce");
  if (el) el.textContent = text;
}

function playMove(uci, san) {
  announce("played " + (san || uci));
  const s = cloneState(state);
  // Playing the line's next move keeps the rest of the line; another move replaces it.
  if (s.line[s.idx] && s.line[s.idx].uci === uci) {
    s.idx += 1;
  } else {
    s.line = s.line.slice(0, s.idx);
    s.line.push({ uci, san: san || uci });
    s.idx = s.line.length;
  }
  go(s, "push");
}

function gotoIdx(idx) {
  const from = base();
  idx = Math.max(0, Math.min(from.line.length, idx));
  if (idx === from.idx) return;
  const s = cloneState(from);
  s.idx = idx;
  go(s, "push");
}

function step(d) {
  if (othello) return othello.step(d);
  const from = base();
  gotoIdx(d === -Infinity ? 0 : d === Infinity ? from.line.length : from.idx + d);
}

function flip() {
  if (othello) return othello.flip();
  orientation = orientation === "white" ? "black" : "white";
  try { localStorage.setItem("bookdb-orientation", orientation); } catch (_) { /* ignore */ }
  board.setOrientation(orientation);
}

// ---- keyboard ------------------------------------------------------------------------------

function onKey(e) {
  if (e.altKey || e.ctrlKey || e.metaKey) return;
  const t = e.target;
  if (t && (t.tagName === "INPUT" || t.tagName === "TEXTAREA")) return;
  switch (e.key) {
    case "ArrowLeft": step(-1); break;
    case "ArrowRight": step(1); break;
    case "Home": step(-Infinity); break;
    case "End": step(Infinity); break;
    case "f": flip(); break;
    case "/":
      if (othello) return;
      document.getElementById("opening-search").focus();
      break;
    default: return;
  }
  e.preventDefault();
}

function onRowKey(e) {
  const tr = e.target.closest("tr[data-uci]");
  if (!tr) return;
  if (e.key === "Enter" || e.key === " ") {
    e.preventDefault();
    e.stopPropagation();
    playMove(tr.dataset.uci, tr.dataset.san);
  } else if (e.key === "ArrowDown" || e.key === "ArrowUp") {
    e.preventDefault();
    const sib = e.key === "ArrowDown" ? tr.nextElementSibling : tr.previousElementSibling;
    if (sib) sib.focus();
  }
}

// ---- book changes --------------------------------------------------------------------------

function poll() {
  if (othello) {
    if (!document.hidden) othello.poll();
  } else if (!document.hidden) refreshBook(true);
}

// Reads /v1/book: the book's size, the facets it keeps, its state. With `follow`, the view
// is asked again when the book changed or its facets differ from the ones the view was asked
// with (the history is asked for only when the book keeps months).
async function refreshBook(follow) {
  try {
    const { body } = await fetchJson("/v1/book");
    const g = String(body.served_state !== undefined ? body.served_state : body.served_generation);
    renderBookInfo(body);
    if (!othello && typeof body.game === "string" && /othello/i.test(body.game)) {
      // An Othello book: othello.js's page takes the board and the table over.
      requestSeq++;
      pending = null;
      board.set(null, null, null); // the chess board's pointer input off
      othello = self.BookdbOthello.start(els);
      othello.go();
      return;
    }
    // A server that does not say keeps all four (docs/FORMAT.md §12, docs/CONTRACT.md §3).
    const kept = Array.isArray(body.facets) ? body.facets : FACETS;
    const before = facetsKey();
    bookFacets = new Set(kept.filter((f) => FACETS.includes(f)));
    if (facetsKey() !== before) renderFilters();
    if (!follow || !current) return;
    if ((generation !== null && g !== generation) || facetsKey() !== viewFacets) {
      const focusedUci = document.activeElement && document.activeElement.dataset
        ? document.activeElement.dataset.uci : undefined;
      await go(cloneState(state), "none");
      if (focusedUci) {
        const tr = els.moves.querySelector(`tr[data-uci="${focusedUci}"]`);
        if (tr) tr.focus();
      }
    }
  } catch (_) {
    // The next poll tries again; a failing /lichess shows its own error.
  }
}

function renderBookInfo(b) {
  const games = typeof b.games === "number" ? b.games : null;
  const positions = typeof b.positions === "number" ? b.positions : null;
  const parts = [];
  if (games !== null) parts.push(fmt(games) + " games");
  if (positions !== null) parts.push(fmt(positions) + " positions");
  els["book-info"].textContent = parts.join(" · ");
}

// ---- rendering -----------------------------------------------------------------------------

function fmt(n) {
  return n.toLocaleString("en-US");
}

function pct(n, total) {
  if (!total) return "0%";
  const p = (100 * n) / total;
  return (p >= 10 || p === 0 ? p.toFixed(0) : p.toFixed(1)) + "%";
}

function showError(msg) {
  els.error.textContent = msg;
  els.error.hidden = false;
}

function hideError() {
  els.error.textContent = "";
  els.error.hidden = true;
}

function render() {
  renderBoard();
  renderOpening();
  renderLine();
  renderFilters();
  renderEval();
  renderMoves();
  renderHistory();
  renderGames();
  els.prev.disabled = els.first.disabled = state.idx === 0;
  els.next.disabled = els.last.disabled = state.idx >= state.line.length;
  if (document.activeElement !== els.fen) {
    const pos = positionOf(state, state.idx);
    els.fen.value = pos ? Rules.toFen(pos) : current ? fullFen(current.fen) : (state.fen || "");
  }
}

// A FEN or a PGN typed or pasted: a FEN sets the position, a PGN's mainline (or a list of
// moves) becomes the line, shown at its end. A FEN goes to the server as it is, which judges it.
function loadText(text) {
  const t = String(text).trim();
  const filters = cloneFilters(base().filters);
  const first = t.split(/\s+/)[0];
  if (t === "" || (first.includes("/") && !t.startsWith("["))) {
    const fen = t.replace(/\s+/g, " ");
    go({ fen: fen === "" || fen === START_FEN ? null : fen, line: [], idx: 0, filters }, "push");
    return;
  }
  let g;
  try {
    g = Rules.readPgn(t);
  } catch (e) {
    showError("Neither a FEN nor a PGN: " + e.message + ".");
    return;
  }
  const fen = g.fen && g.fen.trim() !== START_FEN ? g.fen.trim() : null;
  go({ fen, line: g.moves, idx: g.moves.length, filters }, "push");
}

// The current line as PGN: the moves up to the position shown.
function linePgn() {
  const s = state;
  positionOf(s, s.idx);
  const tags = {};
  const o = (current && current.opening) || lastOpeningOfLine();
  if (o) Object.assign(tags, { ECO: o.eco, Opening: o.name });
  return Rules.writePgn(s.fen, s.line.slice(0, s.idx).map((m) => m.san || m.uci), tags);
}

// The answer's FEN has four fields; the box shows six (move counters as far as known).
function fullFen(fen) {
  const f = fen.trim().split(/\s+/);
  if (f.length === 4) {
    const start = state.fen ? state.fen.trim().split(/\s+/) : START_FEN.split(" ");
    const startMove = parseInt(start[5], 10) || 1;
    const startBlack = start[1] === "b";
    const plies = state.idx + (startBlack ? 1 : 0);
    f.push("0", String(startMove + Math.floor(plies / 2)));
  }
  return f.join(" ");
}

function renderOpening() {
  // The position's own name, else the most recent named position of the line.
  const o = (current && current.opening) || lastOpeningOfLine();
  els.opening.textContent = "";
  if (o) {
    const eco = document.createElement("span");
    eco.className = "eco";
    eco.textContent = o.eco;
    els.opening.append(eco, document.createTextNode(o.name));
  } else if (state.fen) {
    els.opening.textContent = "Position from FEN";
  } else {
    els.opening.textContent = state.idx === 0 ? "Starting position" : "Unnamed position";
  }
}

// Openings seen along this line, most recent first: the moves table's `opening` of a played
// move names the position it reaches.
const lineOpenings = new Map(); // "fen|uci,uci" -> opening
function lastOpeningOfLine() {
  for (let i = state.idx; i > 0; i--) {
    const key = (state.fen || "") + "|" + state.line.slice(0, i).map((m) => m.uci).join(",");
    if (lineOpenings.has(key)) return lineOpenings.get(key);
  }
  return null;
}

function rememberOpenings(s, idx, ans) {
  const base = (s.fen || "") + "|" + s.line.slice(0, idx).map((m) => m.uci).join(",");
  const here = base.endsWith("|") ? base : base + ",";
  for (const m of ans.moves) {
    if (m.opening) lineOpenings.set(here + m.uci, m.opening);
  }
  if (ans.opening) lineOpenings.set(base, ans.opening);
}

function renderLine() {
  const nav = els.line;
  nav.textContent = "";
  const start = document.createElement("a");
  start.href = urlOf({ ...state, idx: 0 });
  start.textContent = state.fen ? "FEN" : "Start";
  start.className = "start" + (state.idx === 0 ? " current" : "");
  start.dataset.idx = "0";
  nav.append(start);
  const startBlack = state.fen ? (state.fen.trim().split(/\s+/)[1] === "b") : false;
  const startMove = state.fen ? (parseInt(state.fen.trim().split(/\s+/)[5], 10) || 1) : 1;
  state.line.forEach((m, i) => {
    const ply = i + (startBlack ? 1 : 0);
    if (ply % 2 === 0 || i === 0) {
      const n = document.createElement("span");
      n.className = "idx";
      n.textContent = startMove + Math.floor(ply / 2) + (ply % 2 === 0 ? "." : "…");
      nav.append(n);
    }
    const a = document.createElement("a");
    a.href = urlOf({ ...state, idx: i + 1 });
    a.textContent = m.san || m.uci;
    a.dataset.idx = String(i + 1);
    a.dataset.uci = m.uci;
    if (i + 1 === state.idx) a.className = "current";
    else if (i + 1 > state.idx) a.className = "after";
    nav.append(a);
  });
  nav.onclick = (e) => {
    const a = e.target.closest("a[data-idx]");
    if (!a || e.ctrlKey || e.metaKey || e.shiftKey) return;
    e.preventDefault();
    gotoIdx(parseInt(a.dataset.idx, 10));
  };
  // Keep the current move in view inside the breadcrumbs (not by scrolling the page).
  const cur = nav.querySelector(".current");
  if (cur && nav.scrollHeight > nav.clientHeight) {
    nav.scrollTop = Math.max(0, cur.offsetTop - nav.clientHeight / 2);
  }
}

function bar(w, d, b) {
  const total = w + d + b;
  const div = document.createElement("div");
  div.className = "bar";
  const parts = [["w", w, "White wins"], ["d", d, "Draws"], ["b", b, "Black wins"]];
  div.title = parts.map(([, n, label]) => `${label}: ${fmt(n)} (${pct(n, total)})`).join(" · ");
  for (const [cls, n] of parts) {
    const s = document.createElement("span");
    s.className = cls;
    const p = total ? (100 * n) / total : 0;
    s.style.width = p + "%";
    if (p >= 12) s.textContent = pct(n, total);
    div.append(s);
  }
  return div;
}

function gamesOf(m) {
  return m.white + m.draws + m.black + (m.unknown || 0);
}

function renderMoves() {
  const tbody = els.moves.tBodies[0];
  const tfoot = els.moves.tFoot;
  const hadFocus = tbody.contains(document.activeElement);
  tbody.textContent = "";
  tfoot.textContent = "";
  els.status.textContent = "";
  els.status.className = "status";
  if (!current) {
    els.moves.hidden = true;
    return;
  }
  const total = current.moves.reduce((a, m) => a + gamesOf(m), 0);
  if (current.moves.length === 0) {
    els.moves.hidden = true;
    els.status.className = "status empty";
    const pos = positionOf(state, state.idx);
    const end = pos ? Rules.status(pos) : null;
    els.status.textContent = (end === "checkmate" ? `Checkmate: ${pos.turn === "w" ? "Black" : "White"} wins. `
      : end === "stalemate" ? "Stalemate. " : "") + (hasFilters(state.filters)
      ? "No game of this position passes the filters."
      : "This position is not in the book." + (end ? "" : " Play on with the board."));
    return;
  }
  els.moves.hidden = false;
  els.moves.classList.toggle("no-ratings", !current.moves.some((m) => m.averageRating));
  for (const m of current.moves) {
    const tr = document.createElement("tr");
    tr.tabIndex = 0;
    tr.dataset.uci = m.uci;
    tr.dataset.san = m.san;
    const games = gamesOf(m);
    tr.setAttribute("aria-label", `${m.san}: ${fmt(games)} games`);
    const san = document.createElement("td");
    san.className = "san";
    san.textContent = m.san;
    const g = document.createElement("td");
    g.className = "num games";
    const gn = document.createElement("span");
    gn.className = "count";
    gn.textContent = fmt(games);
    const sh = document.createElement("span");
    sh.className = "share";
    sh.textContent = pct(games, total);
    g.append(gn, sh);
    const bc = document.createElement("td");
    bc.className = "bar-cell";
    bc.append(bar(m.white, m.draws, m.black));
    const r = document.createElement("td");
    r.className = "num rating";
    r.textContent = m.averageRating ? String(m.averageRating) : "";
    tr.append(san, g, bc, r);
    tbody.append(tr);
  }
  const tr = document.createElement("tr");
  const l = document.createElement("td");
  l.className = "san";
  l.textContent = "Σ";
  l.title = "All moves";
  const g = document.createElement("td");
  g.className = "num games";
  g.textContent = fmt(total);
  const bc = document.createElement("td");
  bc.className = "bar-cell";
  bc.append(bar(current.white, current.draws, current.black));
  const r = document.createElement("td");
  r.className = "num rating";
  tr.append(l, g, bc, r);
  tfoot.append(tr);
  if (hadFocus && tbody.rows.length) tbody.rows[0].focus();
}

// ---- the board -----------------------------------------------------------------------------

function svg(tag, attrs, parent) {
  const e = document.createElementNS(SVG_NS, tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
  if (parent) parent.append(e);
  return e;
}

// The position after `idx` moves of `s` by the page's rules, or null when its FEN or a move does
// not read (the server then says what is wrong). Fills in the SAN of moves that lack it.
function positionOf(s, idx) {
  let r;
  try {
    r = Rules.replay(s.fen, s.line.slice(0, idx).map((m) => m.uci));
  } catch (_) {
    return null;
  }
  r.moves.forEach((m, i) => { if (!s.line[i].san) s.line[i].san = m.san; });
  return r.error ? null : r.positions[r.positions.length - 1];
}

function renderBoard() {
  const s = base();
  const pos = positionOf(s, s.idx);
  const shownFen = pos ? null : current ? current.fen : (s.fen || START_FEN);
  const last = s.idx > 0 ? s.line[s.idx - 1].uci : null;
  board.set(pos, shownFen, last);
}

// A move made on the board.
function onBoardMove(m) {
  const s = base();
  const pos = positionOf(s, s.idx);
  playMove(m.uci, pos ? Rules.san(pos, m) : m.uci);
}

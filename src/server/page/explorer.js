// bookdb opening explorer: a board, the opening name, the moves table of the position, the line
// played, filters on the book's facets (speed, rating group, mode, months) and a chart of the
// position's games per month. Reads the book only through the public /lichess route (and
// /v1/book for the facets the book keeps and to notice that the book changed). The line and the
// filters live in the URL, so a link reproduces the view. No dependencies; the pieces below are
// drawn for bookdb (CC0).
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

// Pieces on a 45×45 grid. Each is a list of [kind, attributes]; "fill" parts take the piece's
// colour, "line" parts are details drawn in the contrasting colour.
const PIECES = {
  p: [["fill", "M22.5 9a4.6 4.6 0 0 0-2.7 8.3C17.6 18.6 16.4 20.7 16.4 23c0 2 .9 3.6 2.4 4.7C15 29.6 12 33.2 12 38.5h21c0-5.3-3-8.9-6.8-10.8 1.5-1.1 2.4-2.7 2.4-4.7 0-2.3-1.2-4.4-3.4-5.7A4.6 4.6 0 0 0 22.5 9z"]],
  r: [
    ["fill", "M11 38.5h23v-3.6h-2.6l-1.6-3.9V19.2l2.7-2.6v-6h-4.3v2.6h-3.8v-2.6h-4.8v2.6h-3.8v-2.6h-4.3v6l2.7 2.6V31l-1.6 3.9H11z"],
    ["line", "M14.7 19.2h15.6M14.7 31h15.6M13.2 34.9h18.6"],
  ],
  n: [
    ["fill", "M14.5 38.5h21c0-10-1.5-21-10.2-26.2l-1.2-4.6-2.8 3.6c-5.3.8-8.5 5.6-11.1 11.7-.9 2.1.2 4.1 2.3 4.2 2.2.1 4.4-1.7 6.9-2.3.4 4.6-4.8 6.8-4.9 13.6z"],
    ["line", "M9.6 24.6l1.3-.4M24.5 14.5c3.5 3 5.5 8 6 14"],
    ["dot", "17.6 17.4 1.3"],
  ],
  b: [
    ["fill", "M12 38.8c0-3.8 4.8-5.6 10.5-5.6S33 35 33 38.8z"],
    ["fill", "M17.6 33.4l.6-4h8.6l.6 4z"],
    ["fill", "M18.2 29.4c-2.9-2-4-5.2-2.9-9 1.2-4.3 4.6-7.2 7.2-9 2.6 1.8 6 4.7 7.2 9 1.1 3.8 0 7-2.9 9z"],
    ["fill", "circle:22.5 9.2 2.3"],
    ["line", "M25 15.5l-4.4 6.2M20.3 25h4.4"],
  ],
  q: [
    ["fill", "M11.5 34.5L9.2 15.3l6.2 10.6.8-13.4 4.6 12.8 1.7-14.6 1.7 14.6 4.6-12.8.8 13.4 6.2-10.6-2.3 19.2z"],
    ["fill", "M11.5 34.5c0 1.6.4 3 1.2 4.2h19.6c.8-1.2 1.2-2.6 1.2-4.2z"],
    ["fill", "circle:9.2 14 2.2"], ["fill", "circle:16.2 11.2 2.2"], ["fill", "circle:22.5 9.6 2.2"],
    ["fill", "circle:28.8 11.2 2.2"], ["fill", "circle:35.8 14 2.2"],
    ["line", "M12.8 36.4h19.4"],
  ],
  k: [
    ["fill", "M21.2 5.5h2.6v2.6h2.6v2.6h-2.6v3.7h-2.6v-3.7h-2.6V8.1h2.6z"],
    ["fill", "M22.5 26c-1.6-3.6-4.1-7.6-2.7-10.3.7-1.4 1.6-2 2.7-2s2 .6 2.7 2c1.4 2.7-1.1 6.7-2.7 10.3z"],
    ["fill", "M12.2 35.4c-2.4-4.4-4.9-10.5-1.3-14.3 3.8-4 9.5-.7 11.6 4.6 2.1-5.3 7.8-8.6 11.6-4.6 3.6 3.8 1.1 9.9-1.3 14.3z"],
    ["fill", "M12.2 35.4h20.6l.5 3.4H11.7z"],
    ["line", "M22.5 25.8v9.4M13.3 31.6c5.6-1.8 12.8-1.8 18.4 0"],
  ],
};

const els = {};
// line: [{uci, san}]; filters: see noFilters().
let state = { fen: null, line: [], idx: 0, filters: noFilters() };
let orientation = "white";
let current = null; // the last /lichess answer shown
let generation = null; // the book state that answered it
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
    "history-chart", "history-note"]) {
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
  els.flip.addEventListener("click", flip);
  els.first.addEventListener("click", () => step(-Infinity));
  els.prev.addEventListener("click", () => step(-1));
  els.next.addEventListener("click", () => step(1));
  els.last.addEventListener("click", () => step(Infinity));
  els["fen-form"].addEventListener("submit", (e) => {
    e.preventDefault();
    const fen = els.fen.value.trim();
    const filters = cloneFilters(base().filters);
    go({ fen: fen === "" || fen === START_FEN ? null : fen, line: [], idx: 0, filters }, "push");
  });
  els.moves.tBodies[0].addEventListener("click", (e) => {
    const tr = e.target.closest("tr[data-uci]");
    if (tr) playMove(tr.dataset.uci, tr.dataset.san);
  });
  els.moves.tBodies[0].addEventListener("keydown", onRowKey);
  document.addEventListener("keydown", onKey);
  window.addEventListener("popstate", (e) => {
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
    go(s, "replace", true);
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
  return { body, generation: r.headers.get("x-bookdb-generation") };
}

// Shows state `s`: fetches its position, then records it in the history ("push", "replace",
// "none") and draws it. On an error the error is shown; the view stays as it was, unless there
// is no view yet.
async function go(s, history, first) {
  const seq = ++requestSeq;
  pending = s;
  renderFilters();
  const asked = facetsKey();
  let ans;
  try {
    ans = await fetchJson(lichessUrl(s, s.idx, { filters: true, history: keeps("month") }));
  } catch (e) {
    if (seq !== requestSeq) return;
    pending = null;
    showError(e.message);
    if (first || !current) {
      state = s;
      current = null;
      render();
    } else {
      renderFilters();
    }
    return;
  }
  if (seq !== requestSeq) return;
  pending = null;
  hideError();
  if (!sameView(s, state)) historySel = null;
  state = s;
  current = ans.body;
  generation = ans.generation;
  viewFacets = asked;
  rememberOpenings(s, s.idx, current);
  const entry = { bookdb: cloneState(state) };
  if (history === "push") window.history.pushState(entry, "", urlOf(state));
  else if (history === "replace") window.history.replaceState(entry, "", urlOf(state));
  render();
  fillUnknownSans(s);
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

// A line from a link carries UCI only; the SAN of each move comes from the answer one position
// earlier, asked without filters, which could leave the move out (moves outside the book keep
// their UCI).
async function fillUnknownSans(s) {
  for (let i = 0; i < s.line.length; i++) {
    if (s.line[i].san !== null) continue;
    try {
      const { body } = await fetchJson(lichessUrl(s, i));
      rememberOpenings(s, i, body);
      const m = body.moves.find((x) => x.uci === s.line[i].uci);
      s.line[i].san = m ? m.san : s.line[i].uci;
    } catch (_) {
      s.line[i].san = s.line[i].uci;
    }
    if (s !== state) return;
  }
  if (s === state) {
    window.history.replaceState({ bookdb: cloneState(state) }, "", urlOf(state));
    renderLine();
    renderOpening();
  }
}

// The state navigation starts from: the one being fetched, if any, else the one shown.
function base() {
  return pending || state;
}

function playMove(uci, san) {
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
  const from = base();
  gotoIdx(d === -Infinity ? 0 : d === Infinity ? from.line.length : from.idx + d);
}

function flip() {
  orientation = orientation === "white" ? "black" : "white";
  try { localStorage.setItem("bookdb-orientation", orientation); } catch (_) { /* ignore */ }
  renderBoard();
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
  if (!document.hidden) refreshBook(true);
}

// Reads /v1/book: the book's size, the facets it keeps, its generation. With `follow`, the view
// is asked again when the book changed or its facets differ from the ones the view was asked
// with (the history is asked for only when the book keeps months).
async function refreshBook(follow) {
  try {
    const { body } = await fetchJson("/v1/book");
    const g = String(body.served_generation);
    renderBookInfo(body);
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
  renderMoves();
  renderHistory();
  els.prev.disabled = els.first.disabled = state.idx === 0;
  els.next.disabled = els.last.disabled = state.idx >= state.line.length;
  if (document.activeElement !== els.fen) {
    els.fen.value = current ? fullFen(current.fen) : (state.fen || "");
  }
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
    els.status.textContent = hasFilters(state.filters)
      ? "No game of this position passes the filters."
      : "This position is not in the book.";
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

// ---- filters -------------------------------------------------------------------------------

function initFilters() {
  els.filters.addEventListener("click", (e) => {
    const b = e.target.closest("button.chip");
    if (!b) return;
    const s = cloneState(base());
    const f = s.filters;
    if (b.dataset.speed) f.speeds = toggled(f.speeds, b.dataset.speed, SPEEDS);
    else if (b.dataset.mode) f.modes = toggled(f.modes, b.dataset.mode, MODES);
    else if (b.dataset.rating) f.ratings = toggledRating(f.ratings, parseInt(b.dataset.rating, 10));
    else if (b.id === "clear-filters") s.filters = noFilters();
    else return;
    go(s, "push");
  });
  for (const id of ["since", "until"]) {
    els[id].addEventListener("change", () => {
      const v = els[id].value.trim();
      // Browsers without a month picker show a text box: take only what the server can read.
      const ok = v === "" || MONTH_RE.test(v);
      els[id].setAttribute("aria-invalid", String(!ok));
      if (!ok || v === base().filters[id]) return;
      const s = cloneState(base());
      s.filters[id] = v;
      go(s, "push");
    });
  }
  // Only a click on the summary is the user's choice (not the folding for a phone).
  els.filters.querySelector("summary").addEventListener("click", () => {
    setTimeout(() => {
      try { localStorage.setItem("bookdb-filters-open", String(els.filters.open)); } catch (_) { /* ignore */ }
    });
  });
}

// `list` with `v` added or taken out, the known values in `order` first, in that order.
function toggled(list, v, order) {
  const next = list.includes(v) ? list.filter((x) => x !== v) : list.concat([v]);
  const known = order.filter((x) => next.includes(x));
  return known.concat(next.filter((x) => !order.includes(x)));
}

// The rating group a `ratings` value selects (the largest group not above it), null for one
// that is not a number.
function ratingGroup(v) {
  if (!/^[0-9]+$/.test(String(v).trim())) return null;
  const r = parseInt(v, 10);
  let g = 0;
  for (const x of RATING_GROUPS) if (x <= r) g = x;
  return g;
}

// `ratings` with group `g` selected or, when some value selects it, every such value taken out.
function toggledRating(list, g) {
  const next = list.some((v) => ratingGroup(v) === g)
    ? list.filter((v) => ratingGroup(v) !== g)
    : list.concat([String(g)]);
  const nums = next.filter((v) => ratingGroup(v) !== null).sort((a, b) => parseInt(a, 10) - parseInt(b, 10));
  return nums.concat(next.filter((v) => ratingGroup(v) === null));
}

// The filter controls, for the state being fetched (else the one shown): a facet's controls show
// when the book keeps it or the state filters on it (so that the filter can be taken off).
function renderFilters() {
  const f = base().filters;
  const show = {
    speed: keeps("speed") || f.speeds.length > 0,
    rating: keeps("rating") || f.ratings.length > 0,
    mode: keeps("mode") || f.modes.length > 0,
    month: keeps("month") || f.since !== "" || f.until !== "",
  };
  for (const facet of FACETS) els["f-" + facet].hidden = !show[facet];
  els.filters.hidden = !FACETS.some((facet) => show[facet]);
  const groups = new Set(f.ratings.map(ratingGroup));
  for (const b of els.filters.querySelectorAll("button.chip")) {
    let on = null;
    if (b.dataset.speed) on = f.speeds.includes(b.dataset.speed);
    else if (b.dataset.mode) on = f.modes.includes(b.dataset.mode);
    else if (b.dataset.rating) on = groups.has(parseInt(b.dataset.rating, 10));
    if (on !== null) b.setAttribute("aria-pressed", String(on));
  }
  for (const id of ["since", "until"]) {
    // Not under the user's fingers: a value being typed stays.
    if (document.activeElement !== els[id]) {
      els[id].value = f[id];
      els[id].removeAttribute("aria-invalid");
    }
  }
  els["clear-filters"].hidden = !hasFilters(f);
  els["filters-summary"].textContent = filtersSummary(f);
}

function filtersSummary(f) {
  const parts = [];
  if (f.speeds.length) parts.push(f.speeds.map((v) => SPEED_NAMES[v] || v).join(", "));
  if (f.ratings.length) {
    parts.push(f.ratings.map((v) => {
      const g = ratingGroup(v);
      return g === null ? v : g === 0 ? "<1000" : g === 2500 ? "2500+" : String(g);
    }).join(", "));
  }
  if (f.modes.length) parts.push(f.modes.join(", "));
  if (f.since || f.until) parts.push((f.since || "…") + " to " + (f.until || "…"));
  return parts.length ? "· " + parts.join(" · ") : "· all games";
}

// ---- history chart -------------------------------------------------------------------------

let chartWidth = 0;

function initHistory() {
  const chart = els["history-chart"];
  chart.addEventListener("keydown", (e) => {
    const h = historyOf(current);
    if (!h || e.altKey || e.ctrlKey || e.metaKey) return;
    let i = historySel;
    if (e.key === "ArrowRight") i = i === null ? 0 : Math.min(h.length - 1, i + 1);
    else if (e.key === "ArrowLeft") i = i === null ? h.length - 1 : Math.max(0, i - 1);
    else if (e.key === "Home") i = 0;
    else if (e.key === "End") i = h.length - 1;
    else if (e.key === "Escape") i = null;
    else return;
    // The chart's keys pick months; they do not step through the line.
    e.preventDefault();
    e.stopPropagation();
    historySel = i;
    markMonth(h, i);
  });
  chart.addEventListener("blur", () => {
    historySel = null;
    const h = historyOf(current);
    if (h) markMonth(h, null);
  });
  chart.addEventListener("pointerover", (e) => {
    const g = e.target.closest && e.target.closest("g.month");
    const h = historyOf(current);
    if (g && h) markMonth(h, parseInt(g.dataset.index, 10));
  });
  chart.addEventListener("pointerleave", () => {
    const h = historyOf(current);
    if (h) markMonth(h, historySel);
  });
  const redraw = () => {
    const w = Math.round(chart.clientWidth);
    if (w > 0 && w !== chartWidth && !els.history.hidden) renderHistory();
  };
  if (typeof ResizeObserver === "function") new ResizeObserver(redraw).observe(chart);
  else window.addEventListener("resize", redraw);
}

// The answer's `history`, months with counts (missing or odd counts read as 0), or null.
function historyOf(ans) {
  if (!ans || !Array.isArray(ans.history)) return null;
  const n = (v) => (typeof v === "number" && v > 0 ? v : 0);
  const h = ans.history
    .filter((m) => m && typeof m.month === "string")
    .map((m) => ({ month: m.month, white: n(m.white), draws: n(m.draws), black: n(m.black) }));
  return h.length ? h : null;
}

function monthText(m) {
  const t = m.white + m.draws + m.black;
  if (!t) return `${m.month}: no games`;
  return `${m.month}: ${fmt(t)} game${t === 1 ? "" : "s"} · White ${pct(m.white, t)} · ` +
    `Draws ${pct(m.draws, t)} · Black ${pct(m.black, t)}`;
}

function historySummary(h) {
  const totals = h.map((m) => m.white + m.draws + m.black);
  const all = totals.reduce((a, b) => a + b, 0);
  const peak = totals.indexOf(Math.max(...totals));
  const range = h.length === 1 ? h[0].month : `${h[0].month} to ${h[h.length - 1].month}`;
  let t = `${range}: ${fmt(all)} game${all === 1 ? "" : "s"}`;
  if (all && h.length > 1) t += ` · most in ${h[peak].month} (${fmt(totals[peak])})`;
  return t;
}

// Highlights month `i` (null: none) and says its counts under the chart.
function markMonth(h, i) {
  for (const g of els["history-chart"].querySelectorAll("g.month")) {
    g.classList.toggle("sel", i !== null && parseInt(g.dataset.index, 10) === i);
  }
  els["history-note"].textContent = i === null || !h[i] ? historySummary(h) : monthText(h[i]);
}

// Stacked columns, one a month: white at the bottom, then draws, then black; heights in games,
// the busiest month full height. Drawn at the box's width in pixels so the text stays legible.
function renderHistory() {
  const h = historyOf(current);
  const box = els["history-chart"];
  if (!h) {
    els.history.hidden = true;
    box.textContent = "";
    els["history-note"].textContent = "";
    return;
  }
  els.history.hidden = false;
  chartWidth = Math.round(box.clientWidth);
  const width = Math.max(200, chartWidth || 560);
  const height = 128;
  const pad = { l: 4, r: 4, t: 16, b: 18 };
  const pw = width - pad.l - pad.r;
  const ph = height - pad.t - pad.b;
  const totals = h.map((m) => m.white + m.draws + m.black);
  const max = Math.max(1, ...totals);
  const step = pw / h.length;
  const gap = step >= 4 ? Math.min(2, step * 0.2) : 0;
  const root = svg("svg", {
    viewBox: `0 0 ${width} ${height}`, width, height, class: "history-svg",
    "data-plot-height": ph, preserveAspectRatio: "xMinYMin meet",
  });
  svg("rect", { x: pad.l, y: pad.t, width: pw, height: ph, class: "plot" }, root);
  h.forEach((m, i) => {
    const g = svg("g", { class: "month", "data-month": m.month, "data-index": i }, root);
    svg("title", {}, g).textContent = monthText(m);
    const x = pad.l + i * step;
    svg("rect", { x, y: pad.t, width: step, height: ph, class: "hit" }, g);
    let y = pad.t + ph;
    for (const [part, n] of [["w", m.white], ["d", m.draws], ["b", m.black]]) {
      const hh = (n / max) * ph;
      svg("rect", {
        x: x + gap / 2, y: y - hh, width: Math.max(0.5, step - gap), height: hh,
        class: "seg " + part, "data-part": part, "data-games": n,
      }, g);
      y -= hh;
    }
  });
  svg("line", { x1: pad.l, x2: pad.l + pw, y1: pad.t + ph, y2: pad.t + ph, class: "axis" }, root);
  const top = svg("text", { x: pad.l, y: pad.t - 4, class: "tick" }, root);
  top.textContent = fmt(max) + (max === 1 ? " game" : " games");
  // Month labels along the bottom: January of each year as the year, as space allows; the first
  // and last month when no year starts inside.
  const labels = [];
  const minGap = 34;
  h.forEach((m, i) => {
    if (m.month.endsWith("-01")) labels.push([i, m.month.slice(0, 4)]);
  });
  let lastX = -Infinity;
  let drawn = 0;
  for (const [i, text] of labels) {
    const x = pad.l + i * step;
    if (x - lastX < minGap || x > width - 28) continue;
    const t = svg("text", { x, y: height - 5, class: "tick" }, root);
    t.textContent = text;
    lastX = x;
    drawn++;
  }
  if (drawn === 0) {
    const t0 = svg("text", { x: pad.l, y: height - 5, class: "tick" }, root);
    t0.textContent = h[0].month;
    if (h.length > 1 && pw > 130) {
      const t1 = svg("text", { x: pad.l + pw, y: height - 5, class: "tick", "text-anchor": "end" }, root);
      t1.textContent = h[h.length - 1].month;
    }
  }
  box.replaceChildren(root);
  box.setAttribute("aria-label", "Games per month, " + historySummary(h) +
    ". Arrow keys pick a month.");
  if (historySel !== null && historySel >= h.length) historySel = null;
  markMonth(h, historySel);
}

// ---- the board -----------------------------------------------------------------------------

// The squares of a FEN's placement field: a map "e4" -> "P" (upper case white).
function parsePlacement(fen) {
  const rows = fen.trim().split(/\s+/)[0].split("/");
  const out = new Map();
  if (rows.length !== 8) return out;
  rows.forEach((row, r) => {
    let file = 0;
    for (const ch of row) {
      if (ch >= "1" && ch <= "8") {
        file += ch.charCodeAt(0) - 48;
      } else if ("pnbrqkPNBRQK".includes(ch) && file < 8) {
        out.set("abcdefgh"[file] + (8 - r), ch);
        file += 1;
      }
    }
  });
  return out;
}

function svg(tag, attrs, parent) {
  const e = document.createElementNS(SVG_NS, tag);
  for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
  if (parent) parent.append(e);
  return e;
}

function drawPiece(parent, ch, x, y) {
  const white = ch === ch.toUpperCase();
  const fill = white ? "#fafafa" : "#2b2b2b";
  const ink = white ? "#1a1a1a" : "#0a0a0a";
  const detail = white ? "#1a1a1a" : "#e8e8e8";
  const g = svg("g", {
    transform: `translate(${x - 0.6} ${y - 0.6}) scale(${11.2 / 45})`,
    "stroke-linejoin": "round",
    "stroke-linecap": "round",
    class: "piece",
    "data-piece": ch,
  }, parent);
  for (const [kind, d] of PIECES[ch.toLowerCase()]) {
    if (kind === "dot") {
      const [cx, cy, r] = d.split(" ");
      svg("circle", { cx, cy, r, fill: detail }, g);
    } else if (d.startsWith("circle:")) {
      const [cx, cy, r] = d.slice(7).split(" ");
      svg("circle", { cx, cy, r, fill, stroke: ink, "stroke-width": 1.5 }, g);
    } else if (kind === "fill") {
      svg("path", { d, fill, stroke: ink, "stroke-width": 1.5 }, g);
    } else {
      svg("path", { d, fill: "none", stroke: detail, "stroke-width": 1.2 }, g);
    }
  }
}

function renderBoard() {
  const fen = current ? current.fen : (state.fen || START_FEN);
  const pieces = parsePlacement(fen);
  const flipped = orientation === "black";
  const root = svg("svg", { viewBox: "0 0 80 80", "data-orientation": orientation });
  const last = state.idx > 0 && current ? state.line[state.idx - 1].uci : null;
  const lastSquares = last ? [last.slice(0, 2), last.slice(2, 4)] : [];
  for (let r = 0; r < 8; r++) {
    for (let f = 0; f < 8; f++) {
      const file = flipped ? 7 - f : f;
      const rank = flipped ? r + 1 : 8 - r;
      const sq = "abcdefgh"[file] + rank;
      // a1 (file 0, rank 1) is dark, h1 light: a square is light when file + rank is even.
      const light = (file + rank) % 2 === 0;
      svg("rect", {
        x: f * 10, y: r * 10, width: 10, height: 10,
        fill: light ? "var(--light-sq)" : "var(--dark-sq)",
        "data-square": sq, "data-shade": light ? "light" : "dark",
      }, root);
      if (lastSquares.includes(sq)) {
        svg("rect", { x: f * 10, y: r * 10, width: 10, height: 10, fill: "var(--last-move)" }, root);
      }
      const coordFill = light ? "var(--dark-sq)" : "var(--light-sq)";
      if (f === 0) {
        const t = svg("text", { x: 0.6, y: r * 10 + 3, class: "coord", fill: coordFill }, root);
        t.textContent = String(rank);
      }
      if (r === 7) {
        const t = svg("text", { x: f * 10 + 8.1, y: 79.3, class: "coord", fill: coordFill }, root);
        t.textContent = "abcdefgh"[file];
      }
      const p = pieces.get(sq);
      if (p) drawPiece(root, p, f * 10, r * 10);
    }
  }
  els.board.replaceChildren(root);
  els.board.setAttribute("aria-label", `Chess board, ${orientation} at the bottom: ${fen}`);
}

// bookdb explorer: the engine's evaluation of the position beside the moves table — the score
// (White's point of view), the depth and node count, and the lines in SAN, each move a link that
// plays the line up to it. Asked from /api/cloud-eval (lichess's cloud-eval route, answered from
// the book's stored evaluations, docs/CONTRACT.md §10) for every position shown; a position
// nobody analysed (404) shows no panel. Part of the chess page (explorer.js, whose state, `go`
// and `els` these use; classic scripts share their top-level names).
"use strict";

// Lines asked for: all the book may keep (lichess's cloud evaluations keep at most 5).
const EVAL_LINES = 5;

let currentEval = null; // the /api/cloud-eval answer of the position shown, null for none

function initEval() {
  els["eval-lines"].addEventListener("click", (e) => {
    const a = e.target.closest("a[data-uci]");
    if (!a) return;
    e.preventDefault();
    // The line's moves up to this one, as the page's rules wrote them when drawing the line.
    const moves = Array.from(a.parentElement.querySelectorAll("a[data-uci]"));
    playEvalLine(moves.slice(0, Number(a.dataset.ply) + 1).map((x) => x.dataset.uci));
  });
}

function cloudEvalUrl(fen) {
  return "/api/cloud-eval?fen=" + encodeURIComponent(fen) + "&multiPv=" + EVAL_LINES;
}

// The evaluation of `fen`, or null: a miss (404) is the usual answer; any other failure
// (server gone, not JSON) leaves the panel out too, since /lichess reports the server's errors.
async function fetchEval(fen) {
  if (!fen) return null;
  try {
    const r = await fetch(cloudEvalUrl(fen), { headers: { Accept: "application/json" }, cache: "no-store" });
    if (!r.ok) return null;
    const body = await r.json();
    return body && Array.isArray(body.pvs) && body.pvs.length ? body : null;
  } catch (_) {
    return null;
  }
}

function evalMoves(pv) {
  return String(pv.moves || "").split(" ").filter((m) => m !== "");
}

// A score from White's point of view as lichess writes it: +0.34, -1.20, 0.00, #3, #-2.
function scoreText(pv) {
  if (typeof pv.mate === "number") return "#" + pv.mate;
  const cp = typeof pv.cp === "number" ? pv.cp : 0;
  return (cp > 0 ? "+" : "") + (cp / 100).toFixed(2);
}

// Who the score favours: "white", "black" or "even".
function scoreSide(pv) {
  const v = typeof pv.mate === "number" ? pv.mate : pv.cp || 0;
  return v > 0 ? "white" : v < 0 ? "black" : "even";
}

function scoreWords(pv) {
  if (typeof pv.mate === "number") {
    const n = Math.abs(pv.mate);
    return (pv.mate > 0 ? "White" : "Black") + " mates in " + n;
  }
  const cp = pv.cp || 0;
  if (cp === 0) return "equal";
  return (cp > 0 ? "White" : "Black") + " is better by " + (Math.abs(cp) / 100).toFixed(2) + " pawns";
}

// Plays the engine's moves (page UCI) from the position shown: the line's next moves kept when
// they are these, else the line from here replaced.
function playEvalLine(ucis) {
  if (!ucis.length) return;
  const s = cloneState(state);
  const ahead = s.line.slice(s.idx, s.idx + ucis.length).map((m) => m.uci);
  if (ahead.length === ucis.length && ahead.every((u, i) => u === ucis[i])) {
    s.idx += ucis.length;
  } else {
    s.line = s.line.slice(0, s.idx).concat(ucis.map((uci) => ({ uci, san: null })));
    s.idx = s.line.length;
  }
  announce("played the engine's line to " + ucis[ucis.length - 1]);
  go(s, "push");
}

function renderEval() {
  const list = els["eval-lines"];
  list.textContent = "";
  const ev = currentEval;
  if (!ev) {
    els.eval.hidden = true;
    return;
  }
  let start = positionOf(state, state.idx);
  if (!start) {
    try { start = Rules.parseFen(ev.fen); } catch (_) { start = null; }
  }
  if (!start) {
    els.eval.hidden = true;
    return;
  }
  const fen = Rules.toFen(start);
  els.eval.hidden = false;
  const best = ev.pvs[0];
  els["eval-score"].textContent = scoreText(best);
  els["eval-score"].className = "eval-score " + scoreSide(best);
  els["eval-score"].title = scoreWords(best) + " (White's point of view)";
  els["eval-info"].textContent = "depth " + ev.depth + " · " + fmt(ev.knodes) + " knodes" +
    (ev.pvs.length > 1 ? " · " + ev.pvs.length + " lines" : "");
  ev.pvs.forEach((pv, i) => {
    const li = document.createElement("li");
    const sc = document.createElement("span");
    sc.className = "pv-score";
    sc.textContent = scoreText(pv);
    sc.title = scoreWords(pv);
    li.append(sc);
    const r = Rules.replay(fen, evalMoves(pv));
    let turn = start.turn;
    let n = start.fullmove;
    r.moves.forEach((m, ply) => {
      if (turn === "w" || ply === 0) {
        const num = document.createElement("span");
        num.className = "num";
        num.textContent = " " + n + (turn === "w" ? "." : "...");
        li.append(num);
      }
      const a = document.createElement("a");
      a.textContent = m.san;
      a.dataset.ply = String(ply);
      a.dataset.uci = m.uci;
      const after = cloneState(state);
      after.line = after.line.slice(0, after.idx).concat(r.moves.slice(0, ply + 1).map((x) => ({ uci: x.uci, san: x.san })));
      after.idx = after.line.length;
      a.href = urlOf(after);
      li.append(" ", a);
      if (turn === "b") n++;
      turn = turn === "w" ? "b" : "w";
    });
    if (r.error) {
      // A stored line the page's rules do not replay past some move: the rest as the server gave it.
      const rest = document.createElement("span");
      rest.className = "num";
      rest.textContent = " " + evalMoves(pv).slice(r.moves.length).join(" ");
      li.append(rest);
    }
    li.setAttribute("aria-label", "line " + (i + 1) + ", " + scoreWords(pv) + ": " + r.moves.map((m) => m.san).join(" "));
    list.append(li);
  });
}

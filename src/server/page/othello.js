// bookdb explorer: the page of an Othello book. The same layout and conventions as the chess
// page — the line in the URL (`/?play=f5,d6`, a start board as `board=`), ← → Home End to step,
// f to flip, Enter on a row — with an 8×8 board of discs (a1 top left, as Othello diagrams
// are drawn), the legal squares marked (click one to play it), passes said where they happen
// (implicit, as the book counts them: the side that cannot move is skipped), and the moves table
// from /v1/position (black's wins first: black moves first).
"use strict";

(function (root) {
  const POLL_MS = 3000;
  const DIRS = [[1, 0], [-1, 0], [0, 1], [0, -1], [1, 1], [1, -1], [-1, 1], [-1, -1]];
  const START = "---------------------------OX------XO--------------------------- X";
  const svg = (...a) => root.BookdbBoard.svg(...a);

  // ---- rules --------------------------------------------------------------------------------

  function sqName(sq) {
    return "abcdefgh"[sq & 7] + String((sq >> 3) + 1);
  }

  function sqOf(t) {
    const m = /^([a-h])([1-8])$/i.exec(String(t).trim());
    return m ? "abcdefgh".indexOf(m[1].toLowerCase()) + 8 * (parseInt(m[2], 10) - 1) : -1;
  }

  // A board string (64 squares `-`, `X` black, `O` white, a space, the side to move) as
  // {cells: [".", "X", "O" ...], turn: "X" | "O"}; null when it does not read.
  function parseBoard(text) {
    const t = String(text).trim().replace(/_/g, " ");
    const m = /^([-XOxo.]{64})\s+([XOxo])$/.exec(t);
    if (!m) return null;
    return { cells: m[1].toUpperCase().replace(/\./g, "-").split(""), turn: m[2].toUpperCase() };
  }

  function boardString(b) {
    return b.cells.join("") + " " + b.turn;
  }

  function flipsOf(b, sq, me) {
    if (b.cells[sq] !== "-") return [];
    const opp = me === "X" ? "O" : "X";
    const out = [];
    for (const [df, dr] of DIRS) {
      const run = [];
      let f = (sq & 7) + df;
      let r = (sq >> 3) + dr;
      while (f >= 0 && f < 8 && r >= 0 && r < 8 && b.cells[f + 8 * r] === opp) {
        run.push(f + 8 * r);
        f += df;
        r += dr;
      }
      if (run.length && f >= 0 && f < 8 && r >= 0 && r < 8 && b.cells[f + 8 * r] === me) out.push(...run);
    }
    return out;
  }

  function legal(b, side) {
    const out = [];
    for (let sq = 0; sq < 64; sq++) if (flipsOf(b, sq, side || b.turn).length) out.push(sq);
    return out;
  }

  // The board after `sq`, and whether the other side had to pass (the same side moves again).
  function play(b, sq) {
    const f = flipsOf(b, sq, b.turn);
    if (!f.length) return null;
    const cells = b.cells.slice();
    cells[sq] = b.turn;
    for (const s of f) cells[s] = b.turn;
    const opp = b.turn === "X" ? "O" : "X";
    const next = { cells, turn: opp };
    if (legal(next, opp).length === 0 && legal(next, b.turn).length > 0) {
      return { board: { cells, turn: b.turn }, pass: opp };
    }
    return { board: next, pass: null };
  }

  // Replays `line` from `start`: {boards, passes, error}; boards[i] is the board before move i.
  function replay(start, line) {
    let b = parseBoard(start || START);
    if (!b) return { boards: [], passes: [], error: "not an Othello board" };
    const boards = [b];
    const passes = [];
    for (let i = 0; i < line.length; i++) {
      const r = play(b, sqOf(line[i]));
      if (!r) return { boards, passes, error: `move ${i + 1} (${line[i]}) is not legal` };
      b = r.board;
      boards.push(b);
      passes.push(r.pass);
    }
    return { boards, passes, error: null };
  }

  // ---- the page -----------------------------------------------------------------------------

  function start(els) {
    let state = fromUrl();
    let current = null;
    let generation = null;
    let flipped = false;
    let seq = 0;
    let cursor = -1; // the keyboard's square, -1 until the keyboard is used
    let shown = { b: null, moves: [], last: -1 }; // what the board shows
    try { flipped = localStorage.getItem("bookdb-othello-flipped") === "true"; } catch (_) { /* off */ }

    document.body.classList.add("othello");
    document.title = "Othello explorer · bookdb";
    els.board.setAttribute("aria-label", "Othello board");
    for (const id of ["filters", "history", "opening-search-box", "copy-pgn"]) {
      const e = document.getElementById(id);
      if (e) e.hidden = true;
    }
    document.querySelector("label[for=fen]").textContent = "Board";
    els.fen.placeholder = START;
    const head = els.moves.tHead.rows[0].cells;
    head[2].textContent = "Black / Draw / White";
    document.querySelector(".help").innerHTML =
      "Click a marked square or a move (or press <kbd>Enter</kbd> on it) to play it (on the focused board: arrow keys and <kbd>Enter</kbd>) · <kbd>←</kbd> <kbd>→</kbd> step through the line · <kbd>f</kbd> flips the board";

    function fromUrl() {
      const q = new URLSearchParams(location.search);
      const line = (q.get("play") || q.get("moves") || "").split(/[\s,]+/).filter((x) => x);
      const b = (q.get("board") || "").trim();
      return { board: b || null, line: line.map((m) => m.toLowerCase()), idx: line.length };
    }

    function urlOf(s) {
      const q = new URLSearchParams();
      if (s.board) q.set("board", s.board);
      if (s.idx) q.set("play", s.line.slice(0, s.idx).join(","));
      const qs = q.toString().replace(/%2C/g, ",");
      return "/" + (qs ? "?" + qs : "");
    }

    function apiUrl(s) {
      const q = new URLSearchParams();
      if (s.board) q.set("board", s.board);
      if (s.idx) q.set("moves", s.line.slice(0, s.idx).join(","));
      return "/v1/position?" + q.toString().replace(/%2C/g, ",");
    }

    async function go(s, history) {
      const mine = ++seq;
      let body;
      try {
        const r = await fetch(apiUrl(s), { headers: { Accept: "application/json" }, cache: "no-store" });
        body = await r.json();
        if (!r.ok) throw new Error((body && body.error) + " (HTTP " + r.status + ")");
        if (mine !== seq) return;
        generation = r.headers.get("x-bookdb-state") || r.headers.get("x-bookdb-generation");
      } catch (e) {
        if (mine !== seq) return;
        els.error.textContent = e.message;
        els.error.hidden = false;
        if (!current) {
          state = s;
          render();
        }
        return;
      }
      els.error.hidden = true;
      state = s;
      current = body;
      if (history === "push") window.history.pushState({ othello: s }, "", urlOf(s));
      else if (history === "replace") window.history.replaceState({ othello: s }, "", urlOf(s));
      render();
    }

    function playMove(mv) {
      const say = document.getElementById("announce");
      if (say) say.textContent = "played " + mv;
      const s = { board: state.board, line: state.line.slice(0, state.idx), idx: state.idx };
      if (state.line[state.idx] === mv) s.line = state.line.slice();
      else s.line.push(mv);
      s.idx += 1;
      go(s, "push");
    }

    function gotoIdx(i) {
      i = Math.max(0, Math.min(state.line.length, i));
      if (i !== state.idx) go({ board: state.board, line: state.line.slice(), idx: i }, "push");
    }

    function render() {
      const r = replay(state.board, state.line);
      const b = r.boards[Math.min(state.idx, r.boards.length - 1)] || parseBoard(current ? current.board : START);
      renderBoard(b, state.idx > 0 ? sqOf(state.line[state.idx - 1]) : -1, state.idx < r.boards.length);
      renderLine(r);
      renderMoves(b, r);
      els.prev.disabled = els.first.disabled = state.idx === 0;
      els.next.disabled = els.last.disabled = state.idx >= state.line.length;
      if (document.activeElement !== els.fen) els.fen.value = b ? boardString(b) : "";
    }

    function renderBoard(b, last, live) {
      const moves = b && live ? legal(b) : [];
      shown = { b, moves, last };
      const rootEl = svg("svg", { viewBox: "0 0 80 80", class: "othello-board", "data-orientation": flipped ? "flipped" : "standard" });
      for (let sq = 0; sq < 64; sq++) {
        const f = sq & 7;
        const r = sq >> 3;
        const x = (flipped ? 7 - f : f) * 10;
        const y = (flipped ? 7 - r : r) * 10;
        const cell = b ? b.cells[sq] : "-";
        const rect = svg("rect", { x, y, width: 10, height: 10, class: "cell", "data-square": sqName(sq) }, rootEl);
        rect.setAttribute("role", "img");
        rect.setAttribute("aria-label", sqName(sq) + (cell === "X" ? " black" : cell === "O" ? " white" : "") +
          (moves.includes(sq) ? ", a legal move" : ""));
        const hidden = { "aria-hidden": "true" };
        if (sq === last) svg("rect", { x, y, width: 10, height: 10, class: "mark last", ...hidden }, rootEl);
        if (cell !== "-") {
          svg("circle", { cx: x + 5, cy: y + 5, r: 4.1, class: "disc " + (cell === "X" ? "black" : "white"), "data-disc": cell, "data-at": sqName(sq), ...hidden }, rootEl);
        } else if (moves.includes(sq)) {
          svg("circle", { cx: x + 5, cy: y + 5, r: 1.4, class: "target", "data-target": sqName(sq), ...hidden }, rootEl);
        }
        if (sq === cursor) svg("rect", { x: x + 0.4, y: y + 0.4, width: 9.2, height: 9.2, class: "mark cursor", ...hidden }, rootEl);
      }
      for (let i = 0; i < 8; i++) {
        const p = (flipped ? 7 - i : i) * 10;
        svg("text", { x: p + 8.2, y: 79.3, class: "coord", "aria-hidden": "true" }, rootEl).textContent = "abcdefgh"[i];
        svg("text", { x: 0.6, y: p + 3, class: "coord", "aria-hidden": "true" }, rootEl).textContent = String(i + 1);
      }
      els.board.replaceChildren(rootEl);
      describe();
      els.board.onclick = (e) => {
        const t = e.target.closest("[data-square]") || e.target;
        const sq = t.dataset ? sqOf(t.dataset.square || t.dataset.target || "") : -1;
        if (sq >= 0 && moves.includes(sq)) playMove(sqName(sq));
      };
      els.board.onpointerdown = null;
    }

    // The board's name: the position, and with the keyboard in use the cursor's square.
    function describe() {
      const b = shown.b;
      let t = "Othello board" + (b ? `, ${b.turn === "X" ? "black" : "white"} to move` : "");
      if (cursor >= 0 && b) {
        const c = b.cells[cursor];
        t += `. On ${sqName(cursor)}${c === "X" ? ", black" : c === "O" ? ", white" : ""}` +
          (shown.moves.includes(cursor) ? ", a legal move (Enter plays it)" : "");
      }
      els.board.setAttribute("aria-label", t);
    }

    // The keyboard on the focused board, as on the chess board: the arrow keys move a cursor
    // (from the last move's square, else the first legal one), Enter or Space plays there.
    els.board.addEventListener("keydown", (e) => {
      if (e.altKey || e.ctrlKey || e.metaKey || !shown.b) return;
      const s = flipped ? -1 : 1;
      const steps = { ArrowUp: [0, -s], ArrowDown: [0, s], ArrowRight: [s, 0], ArrowLeft: [-s, 0] };
      const step = steps[e.key];
      const play = e.key === "Enter" || e.key === " ";
      if (!step && !play) return;
      e.preventDefault();
      e.stopPropagation();
      if (cursor < 0) {
        cursor = shown.last >= 0 ? shown.last : shown.moves.length ? shown.moves[0] : 27;
        if (step) return render();
      }
      if (step) {
        const f = (cursor & 7) + step[0];
        const r = (cursor >> 3) + step[1];
        if (f >= 0 && f < 8 && r >= 0 && r < 8) cursor = f + 8 * r;
        render();
      } else if (shown.moves.includes(cursor)) {
        playMove(sqName(cursor));
      }
    });
    els.board.addEventListener("blur", () => {
      if (cursor >= 0) {
        cursor = -1;
        render();
      }
    });

    function renderLine(r) {
      els.line.textContent = "";
      const a0 = document.createElement("a");
      a0.href = urlOf({ ...state, idx: 0 });
      a0.textContent = state.board ? "Board" : "Start";
      a0.className = "start" + (state.idx === 0 ? " current" : "");
      a0.dataset.idx = "0";
      els.line.append(a0);
      state.line.forEach((m, i) => {
        const n = document.createElement("span");
        n.className = "idx";
        n.textContent = String(i + 1) + ".";
        const a = document.createElement("a");
        a.href = urlOf({ ...state, idx: i + 1 });
        a.textContent = m;
        a.dataset.idx = String(i + 1);
        a.dataset.move = m;
        if (i + 1 === state.idx) a.className = "current";
        else if (i + 1 > state.idx) a.className = "after";
        els.line.append(n, a);
        if (r.passes[i]) {
          const p = document.createElement("span");
          p.className = "pass";
          p.textContent = (r.passes[i] === "X" ? "black" : "white") + " passes";
          els.line.append(p);
        }
      });
      els.line.onclick = (e) => {
        const a = e.target.closest("a[data-idx]");
        if (!a || e.ctrlKey || e.metaKey || e.shiftKey) return;
        e.preventDefault();
        gotoIdx(parseInt(a.dataset.idx, 10));
      };
    }

    function renderMoves(b, r) {
      const tbody = els.moves.tBodies[0];
      const hadFocus = tbody.contains(document.activeElement);
      tbody.textContent = "";
      els.moves.tFoot.textContent = "";
      els.status.className = "status";
      const count = (c) => (b ? b.cells.filter((x) => x === c).length : 0);
      const side = b && b.turn === "X" ? "Black" : "White";
      const over = b && legal(b, "X").length === 0 && legal(b, "O").length === 0;
      const pass = state.idx > 0 && r.passes[state.idx - 1];
      els.opening.textContent = `Othello · black ${count("X")}, white ${count("O")} · ` +
        (over ? "game over" : `${side} to move`);
      let note = pass ? `${pass === "X" ? "Black" : "White"} has no move and passes. ` : "";
      if (over) note += `Game over: ${count("X") > count("O") ? "black wins" : count("O") > count("X") ? "white wins" : "a draw"}. `;
      const moves = current && current.board === (b && boardString(b)) ? current.moves : current ? current.moves : [];
      els.moves.classList.add("no-ratings");
      if (!moves.length) {
        els.moves.hidden = true;
        els.status.className = "status empty";
        els.status.textContent = note + (over ? "" : "This position is not in the book. Play on with the board.");
        return;
      }
      els.status.textContent = note;
      els.moves.hidden = false;
      const games = (m) => m.black + m.draws + m.white + (m.unknown || 0);
      const total = moves.reduce((a, m) => a + games(m), 0);
      for (const m of moves) {
        const tr = document.createElement("tr");
        tr.tabIndex = 0;
        tr.dataset.move = m.move;
        tr.setAttribute("aria-label", `${m.move}: ${fmt(games(m))} games`);
        const c0 = document.createElement("td");
        c0.className = "san";
        c0.textContent = m.move;
        const c1 = document.createElement("td");
        c1.className = "num games";
        const cn = document.createElement("span");
        cn.className = "count";
        cn.textContent = fmt(games(m));
        const sh = document.createElement("span");
        sh.className = "share";
        sh.textContent = total ? Math.round((100 * games(m)) / total) + "%" : "";
        c1.append(cn, sh);
        const c2 = document.createElement("td");
        c2.className = "bar-cell";
        c2.append(bar(m.black, m.draws, m.white));
        tr.append(c0, c1, c2, document.createElement("td"));
        tbody.append(tr);
      }
      if (hadFocus && tbody.rows.length) tbody.rows[0].focus();
    }

    function fmt(n) {
      return n.toLocaleString("en-US");
    }

    // Black's share first (on the dark segment), draws, white's.
    function bar(bl, d, w) {
      const total = bl + d + w;
      const div = document.createElement("div");
      div.className = "bar";
      div.title = `Black wins: ${bl} · Draws: ${d} · White wins: ${w}`;
      for (const [cls, n] of [["b", bl], ["d", d], ["w", w]]) {
        const s = document.createElement("span");
        s.className = cls;
        const p = total ? (100 * n) / total : 0;
        s.style.width = p + "%";
        if (p >= 12) s.textContent = Math.round(p) + "%";
        div.append(s);
      }
      return div;
    }

    els.moves.tBodies[0].addEventListener("click", (e) => {
      const tr = e.target.closest("tr[data-move]");
      if (tr) playMove(tr.dataset.move);
    });
    els.moves.tBodies[0].addEventListener("keydown", (e) => {
      const tr = e.target.closest("tr[data-move]");
      if (!tr) return;
      if (e.key === "Enter" || e.key === " ") {
        e.preventDefault();
        e.stopPropagation();
        playMove(tr.dataset.move);
      } else if (e.key === "ArrowDown" || e.key === "ArrowUp") {
        e.preventDefault();
        const sib = e.key === "ArrowDown" ? tr.nextElementSibling : tr.previousElementSibling;
        if (sib) sib.focus();
      }
    });
    const flip = () => {
      flipped = !flipped;
      try { localStorage.setItem("bookdb-othello-flipped", String(flipped)); } catch (_) { /* off */ }
      render();
    };
    return {
      go: () => go(state, "replace"),
      flip,
      step: (d) => gotoIdx(d === -Infinity ? 0 : d === Infinity ? state.line.length : state.idx + d),
      popstate: (e) => go(e.state && e.state.othello ? e.state.othello : fromUrl(), "none"),
      setBoard: (text) => {
        const t = String(text).trim();
        go({ board: t === "" || t === START ? null : t, line: [], idx: 0 }, "push");
      },
      poll: async () => {
        try {
          const r = await fetch("/v1/book", { cache: "no-store" });
          const body = await r.json();
          if (generation !== null && String(body.served_state !== undefined ? body.served_state : body.served_generation) !== generation) go(state, "none");
        } catch (_) { /* the next poll tries again */ }
      },
      POLL_MS,
    };
  }

  root.BookdbOthello = { start, replay, legal, parseBoard, START };
})(self);

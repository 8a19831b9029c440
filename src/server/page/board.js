// bookdb explorer: the chess board. Draws a position (the pieces are drawn for bookdb, CC0)
// and lets the user move: click a piece then a highlighted square, or drag it there (pointer
// events: mouse, pen and touch alike). Only legal moves are offered (chess-rules.js); a king
// castles by going two squares or onto its rook; a pawn reaching the last rank asks which
// piece it becomes. With the keyboard: Tab to the board, the arrow keys move a cursor, Enter or
// Space picks a piece up and puts it down, Escape lets go. The board tells its owner the move
// chosen and never changes the position itself.
"use strict";

(function (root) {
  const SVG_NS = "http://www.w3.org/2000/svg";
  const FILES = "abcdefgh";
  const NAMES = { p: "pawn", n: "knight", b: "bishop", r: "rook", q: "queen", k: "king" };
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

  function svg(tag, attrs, parent) {
    const e = document.createElementNS(SVG_NS, tag);
    for (const [k, v] of Object.entries(attrs)) e.setAttribute(k, v);
    if (parent) parent.append(e);
    return e;
  }

  function drawPiece(parent, ch, x, y, extra) {
    const white = ch === ch.toUpperCase();
    const fill = white ? "#fafafa" : "#2b2b2b";
    const ink = white ? "#1a1a1a" : "#0a0a0a";
    const detail = white ? "#1a1a1a" : "#e8e8e8";
    const g = svg("g", Object.assign({
      transform: `translate(${x - 0.6} ${y - 0.6}) scale(${11.2 / 45})`,
      "stroke-linejoin": "round", "stroke-linecap": "round", class: "piece", "aria-hidden": "true",
    }, extra || {}), parent);
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
    return g;
  }

  function pieceName(ch) {
    return (ch === ch.toUpperCase() ? "white " : "black ") + NAMES[ch.toLowerCase()];
  }

  // A board in element `el`. `onMove(move)` is called with a legal move of chess-rules.js.
  function createBoard(el, onMove) {
    const C = root.BookdbChess;
    let pos = null; // the position shown, null when only a placement is known
    let placement = null; // Map "e4" -> "P" when pos is null
    let orientation = "white";
    let last = []; // the last move's squares
    let legal = [];
    let selected = -1;
    let drag = null; // {from, x, y, moved, id, ghost}
    let promo = null; // the promotion chooser element
    let cursor = -1; // the keyboard's square, -1 until the keyboard is used
    el.tabIndex = 0;

    const flipped = () => orientation === "black";

    function squareXY(sq) {
      const f = sq & 7;
      const r = sq >> 3;
      return flipped() ? [(7 - f) * 10, r * 10] : [f * 10, (7 - r) * 10];
    }

    function pieceAt(sq) {
      if (pos) return pos.board[sq];
      return placement ? placement.get(C.sqName(sq)) || null : null;
    }

    // The square under a pointer event, or -1 off the board.
    function squareAt(e) {
      const r = el.getBoundingClientRect();
      const fx = Math.floor(((e.clientX - r.left) / r.width) * 8);
      const fy = Math.floor(((e.clientY - r.top) / r.height) * 8);
      if (fx < 0 || fx > 7 || fy < 0 || fy > 7) return -1;
      return flipped() ? (7 - fx) + 8 * fy : fx + 8 * (7 - fy);
    }

    // The moves from `from` that a drop or click on `to` means: a move to it, or castling onto
    // the rook standing there.
    function movesTo(from, to) {
      return legal.filter((m) => m.from === from && (m.to === to || (m.castle && m.castle.rook === to)));
    }

    function targetsOf(from) {
      const out = new Set();
      for (const m of legal) {
        if (m.from !== from) continue;
        out.add(m.to);
        if (m.castle) out.add(m.castle.rook);
      }
      return out;
    }

    function render() {
      const root = svg("svg", { viewBox: "0 0 80 80", "data-orientation": orientation });
      const targets = selected >= 0 ? targetsOf(selected) : new Set();
      for (let sq = 0; sq < 64; sq++) {
        const [x, y] = squareXY(sq);
        const file = sq & 7;
        const rank = (sq >> 3) + 1;
        // a1 (file 0, rank 1) is dark, h1 light: a square is light when file + rank is even.
        const light = (file + rank) % 2 === 0;
        const name = C.sqName(sq);
        const p = pieceAt(sq);
        const rect = svg("rect", {
          x, y, width: 10, height: 10, fill: light ? "var(--light-sq)" : "var(--dark-sq)",
          "data-square": name, "data-shade": light ? "light" : "dark",
        }, root);
        // Each square is read as its name and what stands on it ("e4 white pawn"), and whether
        // the piece picked up can go there; the marks, pieces and coordinates are not read.
        rect.setAttribute("role", "img");
        rect.setAttribute("aria-label", name + (p ? " " + pieceName(p) : "") +
          (sq === selected ? ", picked up" : targets.has(sq) ? ", a legal move" : ""));
        const hidden = { "aria-hidden": "true" };
        if (last.includes(sq)) svg("rect", { x, y, width: 10, height: 10, fill: "var(--last-move)", class: "mark", ...hidden }, root);
        if (sq === selected) svg("rect", { x, y, width: 10, height: 10, class: "mark selected", ...hidden }, root);
        if (sq === cursor) svg("rect", { x: x + 0.4, y: y + 0.4, width: 9.2, height: 9.2, class: "mark cursor", ...hidden }, root);
        if (pos && p && p.toLowerCase() === "k" && (p === "K") === (pos.turn === "w") && C.inCheck(pos)) {
          svg("circle", { cx: x + 5, cy: y + 5, r: 5, class: "mark check", ...hidden }, root);
        }
        const col = flipped() ? 7 - file : file;
        const row = flipped() ? rank - 1 : 8 - rank;
        const coordFill = light ? "var(--dark-sq)" : "var(--light-sq)";
        if (col === 0) svg("text", { x: 0.6, y: row * 10 + 3, class: "coord", fill: coordFill, ...hidden }, root).textContent = String(rank);
        if (row === 7) svg("text", { x: col * 10 + 8.1, y: 79.3, class: "coord", fill: coordFill, ...hidden }, root).textContent = FILES[file];
      }
      for (let sq = 0; sq < 64; sq++) {
        const p = pieceAt(sq);
        if (!p) continue;
        const [x, y] = squareXY(sq);
        const g = drawPiece(root, p, x, y, { "data-piece": p, "data-at": C.sqName(sq) });
        if (drag && drag.moved && drag.from === sq) g.classList.add("lifted");
      }
      for (const t of targets) {
        const [x, y] = squareXY(t);
        const capture = pieceAt(t) !== null;
        svg("circle", capture
          ? { cx: x + 5, cy: y + 5, r: 4.4, class: "target capture", "data-target": C.sqName(t), "aria-hidden": "true" }
          : { cx: x + 5, cy: y + 5, r: 1.6, class: "target", "data-target": C.sqName(t), "aria-hidden": "true" }, root);
      }
      if (drag && drag.moved) {
        const r = el.getBoundingClientRect();
        const gx = ((drag.x - r.left) / r.width) * 80 - 5;
        const gy = ((drag.y - r.top) / r.height) * 80 - 5;
        drag.ghost = drawPiece(root, pieceAt(drag.from), gx, gy, { class: "piece ghost" });
      }
      el.replaceChildren(root);
      if (promo) el.append(promo);
    }

    function moveGhost() {
      if (!drag || !drag.ghost) return render();
      const r = el.getBoundingClientRect();
      const gx = ((drag.x - r.left) / r.width) * 80 - 5;
      const gy = ((drag.y - r.top) / r.height) * 80 - 5;
      drag.ghost.setAttribute("transform", `translate(${gx - 0.6} ${gy - 0.6}) scale(${11.2 / 45})`);
    }

    // Plays what going from `from` to `to` means, asking for the piece of a promotion.
    function choose(from, to) {
      const ms = movesTo(from, to);
      if (ms.length === 0) return false;
      if (ms.length === 1) {
        selected = -1;
        render();
        onMove(ms[0]);
        return true;
      }
      askPromotion(ms, to);
      return true;
    }

    function askPromotion(ms, to) {
      const box = document.createElement("div");
      box.className = "promotion";
      box.setAttribute("role", "dialog");
      box.setAttribute("aria-label", "Promote to");
      const white = pos.turn === "w";
      // Over the promotion square's file, from the edge it is on.
      const [x, y] = squareXY(to);
      box.style.left = x * 1.25 + "%";
      if (y > 0) box.classList.add("from-bottom");
      for (const q of ["q", "n", "r", "b"]) {
        const m = ms.find((mm) => mm.promotion === q);
        if (!m) continue;
        const b = document.createElement("button");
        b.type = "button";
        b.dataset.promotion = q;
        b.title = NAMES[q];
        b.setAttribute("aria-label", "Promote to " + NAMES[q]);
        const s = svg("svg", { viewBox: "0 0 10 10", width: "100%", height: "100%" });
        drawPiece(s, white ? q.toUpperCase() : q, 0, 0);
        b.append(s);
        b.addEventListener("click", (e) => {
          e.stopPropagation();
          closePromotion();
          selected = -1;
          render();
          el.focus({ preventScroll: true });
          onMove(m);
        });
        box.append(b);
      }
      box.addEventListener("keydown", (e) => {
        if (e.key === "Escape") {
          e.preventDefault();
          e.stopPropagation();
          closePromotion();
          render();
          el.focus({ preventScroll: true });
        }
      });
      box.addEventListener("pointerdown", (e) => e.stopPropagation());
      promo = box;
      render();
      const first = box.querySelector("button");
      if (first) first.focus();
    }

    function closePromotion() {
      promo = null;
    }

    function describe() {
      const fenText = pos ? C.toFen(pos) : "";
      let t = `Chess board, ${orientation} at the bottom: ${fenText}`;
      if (cursor >= 0) {
        const p = pieceAt(cursor);
        t += `. On ${C.sqName(cursor)}${p ? ", " + pieceName(p) : ""}`;
        if (selected >= 0) t += `; ${pieceName(pieceAt(selected))} on ${C.sqName(selected)} picked up`;
      }
      el.setAttribute("aria-label", t);
    }

    el.addEventListener("keydown", (e) => {
      if (!pos || promo || e.altKey || e.ctrlKey || e.metaKey) return;
      const up = flipped() ? -1 : 1;
      const moves = { ArrowUp: [0, up], ArrowDown: [0, -up], ArrowRight: [up, 0], ArrowLeft: [-up, 0] };
      if (cursor < 0 && (moves[e.key] || e.key === "Enter" || e.key === " ")) {
        // The keyboard starts on the last move's square, else the king's pawn of the side to move.
        cursor = last.length ? last[1] : pos.turn === "w" ? 12 : 52;
        if (moves[e.key]) {
          e.preventDefault();
          e.stopPropagation();
          render();
          describe();
          return;
        }
      }
      if (moves[e.key]) {
        const [df, dr] = moves[e.key];
        const f = (cursor & 7) + df;
        const r = (cursor >> 3) + dr;
        if (f >= 0 && f < 8 && r >= 0 && r < 8) cursor = f + 8 * r;
      } else if (e.key === "Enter" || e.key === " ") {
        if (selected >= 0 && cursor !== selected && choose(selected, cursor)) {
          e.preventDefault();
          e.stopPropagation();
          return;
        }
        const p = pos.board[cursor];
        const mine = p && (p === p.toUpperCase()) === (pos.turn === "w");
        selected = mine && selected !== cursor && legal.some((m) => m.from === cursor) ? cursor : -1;
      } else if (e.key === "Escape" && selected >= 0) {
        selected = -1;
      } else return;
      e.preventDefault();
      e.stopPropagation();
      render();
      describe();
    });
    el.addEventListener("blur", () => {
      if (cursor >= 0) {
        cursor = -1;
        render();
      }
    });

    el.addEventListener("pointerdown", (e) => {
      if (!pos || promo || (e.button !== undefined && e.button > 0)) return;
      cursor = -1;
      const sq = squareAt(e);
      if (sq < 0) return;
      e.preventDefault();
      if (selected >= 0 && sq !== selected && choose(selected, sq)) return;
      const p = pos.board[sq];
      const mine = p && (p === p.toUpperCase()) === (pos.turn === "w");
      if (mine && legal.some((m) => m.from === sq)) {
        const again = selected === sq;
        selected = sq;
        drag = { from: sq, x: e.clientX, y: e.clientY, sx: e.clientX, sy: e.clientY, moved: false, again, id: e.pointerId };
        try { el.setPointerCapture(e.pointerId); } catch (_) { /* synthetic events */ }
      } else {
        selected = -1;
      }
      render();
    });

    el.addEventListener("pointermove", (e) => {
      if (!drag || e.pointerId !== drag.id) return;
      drag.x = e.clientX;
      drag.y = e.clientY;
      const r = el.getBoundingClientRect();
      if (!drag.moved && Math.hypot(drag.x - drag.sx, drag.y - drag.sy) > r.width / 40) {
        drag.moved = true;
        render();
      } else if (drag.moved) moveGhost();
    });

    function endDrag(e, cancelled) {
      if (!drag || e.pointerId !== drag.id) return;
      const d = drag;
      drag = null;
      if (cancelled) return render();
      const sq = squareAt(e);
      if (d.moved) {
        if (sq !== d.from && sq >= 0 && choose(d.from, sq)) return;
        if (sq !== d.from) selected = -1;
      } else if (d.again) {
        // A second click on the selected piece puts it down.
        selected = -1;
      }
      render();
    }

    el.addEventListener("pointerup", (e) => endDrag(e, false));
    el.addEventListener("pointercancel", (e) => endDrag(e, true));

    return {
      // Shows `p` (a chess-rules.js position; null with `fen` for a placement alone), moves
      // allowed when `p` is given; `lastMove` a UCI text or null.
      set(p, fen, lastMove) {
        pos = p;
        placement = p ? null : placementOf(fen);
        legal = p ? C.legalMoves(p) : [];
        last = lastMove ? [C.sqOf(lastMove.slice(0, 2)), C.sqOf(lastMove.slice(2, 4))] : [];
        selected = -1;
        drag = null;
        promo = null;
        if (cursor >= 0 && last.length) cursor = last[1];
        render();
        el.setAttribute("aria-label", `Chess board, ${orientation} at the bottom: ${p ? C.toFen(p) : fen}`);
      },
      setOrientation(o) {
        orientation = o;
        render();
        el.setAttribute("aria-label", (el.getAttribute("aria-label") || "").replace(/(white|black) at the bottom/, o + " at the bottom"));
      },
    };
  }

  // The squares of a FEN's placement field: a map "e4" -> "P".
  function placementOf(fen) {
    const out = new Map();
    const rows = String(fen || "").trim().split(/\s+/)[0].split("/");
    if (rows.length !== 8) return out;
    rows.forEach((row, r) => {
      let file = 0;
      for (const ch of row) {
        if (ch >= "1" && ch <= "8") file += ch.charCodeAt(0) - 48;
        else if ("pnbrqkPNBRQK".includes(ch) && file < 8) {
          out.set(FILES[file] + (8 - r), ch);
          file += 1;
        }
      }
    });
    return out;
  }

  root.BookdbBoard = { createBoard, svg };
})(self);

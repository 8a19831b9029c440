// bookdb explorer: the rules of chess for the page, in one module with no dependencies.
// Positions: FEN parse and print; legal moves (castling, en passant, promotion); check,
// checkmate, stalemate; SAN with disambiguation and +/#; UCI; a PGN's mainline read and a line
// written as PGN. Squares are numbers, a1 = 0, h1 = 7, a8 = 56 (file + 8 × rank). Pieces are
// FEN letters, upper case white. tests/chess_rules_js.rs runs this file in node and compares
// every answer with shakmaty, the library the server plays moves with.
"use strict";

(function (root) {
  const START_FEN = "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1";
  const FILES = "abcdefgh";
  const KNIGHT = [[1, 2], [2, 1], [2, -1], [1, -2], [-1, -2], [-2, -1], [-2, 1], [-1, 2]];
  const KING = [[1, 0], [1, 1], [0, 1], [-1, 1], [-1, 0], [-1, -1], [0, -1], [1, -1]];
  const ROOK_DIRS = [[1, 0], [-1, 0], [0, 1], [0, -1]];
  const BISHOP_DIRS = [[1, 1], [1, -1], [-1, 1], [-1, -1]];
  // Castling: right letter, king from, king to, rook from, rook to, squares that must be empty,
  // squares the king passes (not attacked).
  const CASTLES = [
    { right: "K", color: "w", king: 4, kingTo: 6, rook: 7, rookTo: 5, empty: [5, 6], pass: [4, 5, 6] },
    { right: "Q", color: "w", king: 4, kingTo: 2, rook: 0, rookTo: 3, empty: [1, 2, 3], pass: [4, 3, 2] },
    { right: "k", color: "b", king: 60, kingTo: 62, rook: 63, rookTo: 61, empty: [61, 62], pass: [60, 61, 62] },
    { right: "q", color: "b", king: 60, kingTo: 58, rook: 56, rookTo: 59, empty: [57, 58, 59], pass: [60, 59, 58] },
  ];

  function sqName(sq) {
    return FILES[sq & 7] + String((sq >> 3) + 1);
  }

  function sqOf(name) {
    if (typeof name !== "string" || name.length !== 2) return -1;
    const f = FILES.indexOf(name[0]);
    const r = name.charCodeAt(1) - 49;
    return f < 0 || r < 0 || r > 7 ? -1 : f + 8 * r;
  }

  function colorOf(p) {
    return p === p.toUpperCase() ? "w" : "b";
  }

  function other(c) {
    return c === "w" ? "b" : "w";
  }

  // ---- FEN ------------------------------------------------------------------------------------

  // A position from a FEN (four to six fields; `_` may stand for spaces). Throws an Error saying
  // what is wrong. Castling rights whose king or rook is not at home are dropped.
  function parseFen(text) {
    const f = String(text).replace(/_/g, " ").trim().split(/\s+/);
    if (f.length < 2 || f.length > 6) throw new Error("a FEN has 4 to 6 fields");
    const rows = f[0].split("/");
    if (rows.length !== 8) throw new Error("the placement needs 8 ranks");
    const board = new Array(64).fill(null);
    rows.forEach((row, i) => {
      const rank = 7 - i;
      let file = 0;
      for (const ch of row) {
        if (ch >= "1" && ch <= "8") file += ch.charCodeAt(0) - 48;
        else if ("pnbrqkPNBRQK".includes(ch)) {
          if (file > 7) throw new Error("rank " + (rank + 1) + " has more than 8 squares");
          board[file + 8 * rank] = ch;
          file += 1;
        } else throw new Error("unknown piece " + JSON.stringify(ch));
      }
      if (file !== 8) throw new Error("rank " + (rank + 1) + " does not have 8 squares");
    });
    for (const c of ["K", "k"]) {
      if (board.filter((p) => p === c).length !== 1) throw new Error("each side needs one king");
    }
    for (let sq = 0; sq < 64; sq++) {
      if ((board[sq] === "p" || board[sq] === "P") && (sq < 8 || sq >= 56)) {
        throw new Error("a pawn on the first or last rank");
      }
    }
    const turn = f[1];
    if (turn !== "w" && turn !== "b") throw new Error("the side to move is w or b");
    let castling = "";
    const cf = f[2] || "-";
    if (cf !== "-") {
      for (const ch of cf) {
        const c = CASTLES.find((x) => x.right === ch);
        if (!c) throw new Error("bad castling field " + JSON.stringify(cf));
        const k = c.color === "w" ? "K" : "k";
        const r = c.color === "w" ? "R" : "r";
        if (board[c.king] === k && board[c.rook] === r && !castling.includes(ch)) castling += ch;
      }
      castling = "KQkq".split("").filter((x) => castling.includes(x)).join("");
    }
    let ep = -1;
    const ef = f[3] || "-";
    if (ef !== "-") {
      ep = sqOf(ef);
      if (ep < 0 || (ep >> 3) !== (turn === "w" ? 5 : 2)) throw new Error("bad en passant square " + JSON.stringify(ef));
      // Kept only when a pawn just made the double step it names.
      const pawn = turn === "w" ? ep - 8 : ep + 8;
      if (board[pawn] !== (turn === "w" ? "p" : "P") || board[ep] !== null) ep = -1;
    }
    const halfmove = f[4] !== undefined ? parseInt(f[4], 10) : 0;
    const fullmove = f[5] !== undefined ? parseInt(f[5], 10) : 1;
    if (!(halfmove >= 0) || !(fullmove >= 1)) throw new Error("bad move counters");
    const pos = { board, turn, castling, ep, halfmove, fullmove };
    if (attacked(pos, kingSq(pos, other(turn)), turn)) throw new Error("the side not to move is in check");
    return pos;
  }

  // The en passant square when a pawn of the side to move could take there (the server's and
  // Polyglot's rule), else -1.
  function epShown(pos) {
    if (pos.ep < 0) return -1;
    const pawn = pos.turn === "w" ? "P" : "p";
    const from = pos.turn === "w" ? pos.ep - 8 : pos.ep + 8;
    for (const df of [-1, 1]) {
      const f = (from & 7) + df;
      if (f >= 0 && f < 8 && pos.board[(from & ~7) + f] === pawn) return pos.ep;
    }
    return -1;
  }

  // The FEN of `pos`: six fields, or the server's four with `four`.
  function toFen(pos, four) {
    const rows = [];
    for (let rank = 7; rank >= 0; rank--) {
      let row = "";
      let empty = 0;
      for (let file = 0; file < 8; file++) {
        const p = pos.board[file + 8 * rank];
        if (p) {
          if (empty) row += empty;
          empty = 0;
          row += p;
        } else empty++;
      }
      if (empty) row += empty;
      rows.push(row);
    }
    const ep = epShown(pos);
    const fields = [rows.join("/"), pos.turn, pos.castling || "-", ep < 0 ? "-" : sqName(ep)];
    if (!four) fields.push(String(pos.halfmove), String(pos.fullmove));
    return fields.join(" ");
  }

  // ---- attacks and moves ----------------------------------------------------------------------

  function kingSq(pos, color) {
    const k = color === "w" ? "K" : "k";
    return pos.board.indexOf(k);
  }

  function at(file, rank) {
    return file >= 0 && file < 8 && rank >= 0 && rank < 8 ? file + 8 * rank : -1;
  }

  // Whether `by` attacks square `sq`.
  function attacked(pos, sq, by) {
    const b = pos.board;
    const f = sq & 7;
    const r = sq >> 3;
    const up = by === "w" ? -1 : 1; // an attacking pawn stands one rank behind, from its side
    const pawn = by === "w" ? "P" : "p";
    for (const df of [-1, 1]) {
      const s = at(f + df, r + up);
      if (s >= 0 && b[s] === pawn) return true;
    }
    const is = (s, letters) => {
      const p = b[s];
      return p !== null && colorOf(p) === by && letters.includes(p.toLowerCase());
    };
    for (const [df, dr] of KNIGHT) {
      const s = at(f + df, r + dr);
      if (s >= 0 && is(s, "n")) return true;
    }
    for (const [df, dr] of KING) {
      const s = at(f + df, r + dr);
      if (s >= 0 && is(s, "k")) return true;
    }
    for (const [dirs, letters] of [[ROOK_DIRS, "rq"], [BISHOP_DIRS, "bq"]]) {
      for (const [df, dr] of dirs) {
        for (let i = 1; ; i++) {
          const s = at(f + df * i, r + dr * i);
          if (s < 0) break;
          if (b[s] !== null) {
            if (is(s, letters)) return true;
            break;
          }
        }
      }
    }
    return false;
  }

  function inCheck(pos) {
    return attacked(pos, kingSq(pos, pos.turn), other(pos.turn));
  }

  // Moves by the rules of movement, not yet checked for leaving the king attacked. A move is
  // {from, to, piece, captured, promotion, castle, ep}.
  function pseudoMoves(pos) {
    const out = [];
    const b = pos.board;
    const us = pos.turn;
    for (let from = 0; from < 64; from++) {
      const p = b[from];
      if (!p || colorOf(p) !== us) continue;
      const kind = p.toLowerCase();
      const f = from & 7;
      const r = from >> 3;
      const add = (to, extra) => {
        const m = { from, to, piece: p, captured: b[to], promotion: null, castle: null, ep: false };
        Object.assign(m, extra || {});
        out.push(m);
      };
      if (kind === "p") {
        const dir = us === "w" ? 1 : -1;
        const last = us === "w" ? 7 : 0;
        const home = us === "w" ? 1 : 6;
        const pushPawn = (to, extra) => {
          if ((to >> 3) === last) {
            for (const q of "qrbn") add(to, Object.assign({ promotion: q }, extra || {}));
          } else add(to, extra);
        };
        const one = at(f, r + dir);
        if (one >= 0 && b[one] === null) {
          pushPawn(one);
          const two = at(f, r + 2 * dir);
          if (r === home && b[two] === null) add(two);
        }
        for (const df of [-1, 1]) {
          const to = at(f + df, r + dir);
          if (to < 0) continue;
          if (b[to] !== null && colorOf(b[to]) !== us) pushPawn(to);
          else if (to === pos.ep) add(to, { ep: true, captured: us === "w" ? "p" : "P" });
        }
      } else if (kind === "n" || kind === "k") {
        for (const [df, dr] of kind === "n" ? KNIGHT : KING) {
          const to = at(f + df, r + dr);
          if (to >= 0 && (b[to] === null || colorOf(b[to]) !== us)) add(to);
        }
      } else {
        const dirs = kind === "r" ? ROOK_DIRS : kind === "b" ? BISHOP_DIRS : ROOK_DIRS.concat(BISHOP_DIRS);
        for (const [df, dr] of dirs) {
          for (let i = 1; ; i++) {
            const to = at(f + df * i, r + dr * i);
            if (to < 0) break;
            if (b[to] === null) add(to);
            else {
              if (colorOf(b[to]) !== us) add(to);
              break;
            }
          }
        }
      }
    }
    for (const c of CASTLES) {
      if (c.color !== us || !pos.castling.includes(c.right)) continue;
      if (!c.empty.every((s) => b[s] === null)) continue;
      if (c.pass.some((s) => attacked(pos, s, other(us)))) continue;
      out.push({ from: c.king, to: c.kingTo, piece: b[c.king], captured: null, promotion: null, castle: c, ep: false });
    }
    return out;
  }

  // The position after move `m` (not checked for legality).
  function play(pos, m) {
    const b = pos.board.slice();
    const us = pos.turn;
    b[m.from] = null;
    b[m.to] = m.promotion ? (us === "w" ? m.promotion.toUpperCase() : m.promotion) : m.piece;
    if (m.ep) b[us === "w" ? m.to - 8 : m.to + 8] = null;
    if (m.castle) {
      b[m.castle.rook] = null;
      b[m.castle.rookTo] = us === "w" ? "R" : "r";
    }
    let castling = pos.castling;
    const touched = [m.from, m.to];
    for (const c of CASTLES) {
      if (touched.includes(c.king) || touched.includes(c.rook)) castling = castling.replace(c.right, "");
    }
    const kind = m.piece.toLowerCase();
    let ep = -1;
    if (kind === "p" && Math.abs(m.to - m.from) === 16) ep = (m.from + m.to) / 2;
    return {
      board: b,
      turn: other(us),
      castling,
      ep,
      halfmove: kind === "p" || m.captured ? 0 : pos.halfmove + 1,
      fullmove: pos.fullmove + (us === "b" ? 1 : 0),
    };
  }

  function uciOf(m) {
    return sqName(m.from) + sqName(m.to) + (m.promotion || "");
  }

  // The legal moves of `pos`, each with its `uci`.
  function legalMoves(pos) {
    const out = [];
    for (const m of pseudoMoves(pos)) {
      const next = play(pos, m);
      if (!attacked(next, kingSq(next, pos.turn), next.turn)) {
        m.uci = uciOf(m);
        out.push(m);
      }
    }
    return out;
  }

  // "checkmate", "stalemate", or null while the game goes on.
  function status(pos) {
    if (legalMoves(pos).length) return null;
    return inCheck(pos) ? "checkmate" : "stalemate";
  }

  // ---- SAN and UCI ----------------------------------------------------------------------------

  // The SAN of legal move `m` in `pos`, with + or #.
  function san(pos, m, legal) {
    let s;
    if (m.castle) s = m.castle.kingTo > m.castle.king ? "O-O" : "O-O-O";
    else {
      const kind = m.piece.toLowerCase();
      const capture = m.captured !== null || m.ep;
      if (kind === "p") {
        s = (capture ? FILES[m.from & 7] + "x" : "") + sqName(m.to);
        if (m.promotion) s += "=" + m.promotion.toUpperCase();
      } else {
        s = kind.toUpperCase();
        const rivals = (legal || legalMoves(pos)).filter((o) =>
          o.to === m.to && o.from !== m.from && o.piece === m.piece && !o.castle);
        if (rivals.length) {
          const sameFile = rivals.some((o) => (o.from & 7) === (m.from & 7));
          const sameRank = rivals.some((o) => (o.from >> 3) === (m.from >> 3));
          if (!sameFile) s += FILES[m.from & 7];
          else if (!sameRank) s += String((m.from >> 3) + 1);
          else s += sqName(m.from);
        }
        if (capture) s += "x";
        s += sqName(m.to);
      }
    }
    const next = play(pos, m);
    if (inCheck(next)) s += legalMoves(next).length ? "+" : "#";
    return s;
  }

  // The legal move a UCI text names in `pos`, or null. Castling may be written as the king's
  // two-square move (e1g1) or as the king onto its rook (e1h1).
  function parseUci(pos, text) {
    const t = String(text).trim().toLowerCase();
    if (!/^[a-h][1-8][a-h][1-8][qrbn]?$/.test(t)) return null;
    const from = sqOf(t.slice(0, 2));
    const to = sqOf(t.slice(2, 4));
    const promo = t[4] || null;
    const legal = legalMoves(pos);
    return legal.find((m) => m.from === from && m.promotion === promo &&
      (m.to === to || (m.castle && m.castle.rook === to))) || null;
  }

  // The legal move a SAN text names in `pos` (also UCI, 0-0, suffixes !?+#), or null.
  function parseSan(pos, text) {
    let t = String(text).trim().replace(/[!?]+$/, "").replace(/[+#]+$/, "");
    const legal = legalMoves(pos);
    if (/^[O0]-[O0](-[O0])?$/.test(t)) {
      const long = t.length > 3;
      return legal.find((m) => m.castle && (m.castle.kingTo < m.castle.king) === long) || null;
    }
    const uci = parseUci(pos, t);
    if (uci) return uci;
    const re = /^([NBRQK])?([a-h])?([1-8])?(x|:)?([a-h][1-8])(?:=?([NBRQnbrq]))?(?:e\.?p\.?)?$/;
    const g = re.exec(t);
    if (!g) return null;
    const kind = (g[1] || "P").toLowerCase();
    const to = sqOf(g[5]);
    const promo = g[6] ? g[6].toLowerCase() : null;
    const found = legal.filter((m) => !m.castle && m.to === to && m.piece.toLowerCase() === kind &&
      m.promotion === promo &&
      (!g[2] || FILES[m.from & 7] === g[2]) && (!g[3] || String((m.from >> 3) + 1) === g[3]));
    return found.length === 1 ? found[0] : null;
  }

  // ---- lines and PGN --------------------------------------------------------------------------

  // Replays UCI moves from `fen` (null: the start). Returns {positions, moves: [{uci, san}],
  // error}: positions[i] is the position before move i; a move that is not legal stops the
  // replay with `error` saying which.
  function replay(fen, ucis) {
    const start = parseFen(fen || START_FEN);
    const positions = [start];
    const moves = [];
    let pos = start;
    for (let i = 0; i < ucis.length; i++) {
      const m = parseUci(pos, ucis[i]);
      if (!m) return { positions, moves, error: "move " + (i + 1) + " (" + ucis[i] + ") is not legal" };
      moves.push({ uci: m.uci, san: san(pos, m) });
      pos = play(pos, m);
      positions.push(pos);
    }
    return { positions, moves, error: null };
  }

  // A PGN's (or a bare move list's) mainline: {fen, moves: [{uci, san}]}; comments, variations,
  // NAGs, move numbers and results are skipped. Throws an Error naming a move that does not read.
  function readPgn(text) {
    const t = String(text);
    let fen = null;
    const tag = /\[\s*FEN\s+"([^"]*)"\s*\]/i.exec(t);
    if (tag) fen = tag[1];
    let body = t.replace(/\[[^\]]*\]/g, " ").replace(/\{[^}]*\}/g, " ").replace(/;[^\n]*/g, " ");
    // Variations, nested: take out innermost parentheses until none are left.
    for (let prev = null; prev !== body;) {
      prev = body;
      body = body.replace(/\([^()]*\)/g, " ");
    }
    let pos = parseFen(fen || START_FEN);
    const moves = [];
    for (let tok of body.split(/\s+/)) {
      tok = tok.replace(/^[0-9]+\.+/, "");
      if (tok === "" || /^\$[0-9]+$/.test(tok) || /^(1-0|0-1|1\/2-1\/2|\*)$/.test(tok) || /^[0-9]+\.*$/.test(tok)) continue;
      const m = parseSan(pos, tok);
      if (!m) throw new Error("move " + (moves.length + 1) + " (" + tok + ") is not legal here");
      moves.push({ uci: m.uci, san: san(pos, m) });
      pos = play(pos, m);
    }
    return { fen, moves };
  }

  // The PGN of SAN moves from `fen` (null: the start), with tags.
  function writePgn(fen, sans, tags) {
    const lines = [];
    const all = Object.assign({ Event: "?", Site: "?", Date: "????.??.??", Round: "?", White: "?", Black: "?", Result: "*" }, tags || {});
    if (fen) Object.assign(all, { SetUp: "1", FEN: fen });
    for (const [k, v] of Object.entries(all)) lines.push("[" + k + " \"" + String(v).replace(/["\\]/g, "\\$&") + "\"]");
    const start = parseFen(fen || START_FEN);
    let ply = start.turn === "b" ? 1 : 0;
    let n = start.fullmove;
    const parts = [];
    sans.forEach((s, i) => {
      if (ply % 2 === 0) parts.push(n + ". " + s);
      else parts.push(i === 0 ? n + "... " + s : s);
      if (ply % 2 === 1) n++;
      ply++;
    });
    parts.push(all.Result);
    return lines.join("\n") + "\n\n" + parts.join(" ") + "\n";
  }

  function perft(pos, depth) {
    if (depth === 0) return 1;
    const moves = legalMoves(pos);
    if (depth === 1) return moves.length;
    let n = 0;
    for (const m of moves) n += perft(play(pos, m), depth - 1);
    return n;
  }

  const api = {
    START_FEN, sqName, sqOf, parseFen, toFen, legalMoves, play, san, parseUci, parseSan,
    inCheck, status, replay, readPgn, writePgn, perft,
  };
  if (typeof module === "object" && module.exports) module.exports = api;
  else root.BookdbChess = api;
})(typeof self !== "undefined" ? self : this);

//! The explorer page's rules of chess (`src/server/page/chess-rules.js`) against shakmaty, the
//! library the server plays and names moves with: the page must never call a move legal that
//! the server refuses, or name it otherwise. The module runs in node (package `nodejs`;
//! without `/usr/bin/node` the test prints SKIP, or fails when `BOOKDB_REQUIRE_PEERS=1`).
//!
//! Compared, position by position: the legal moves in UCI and SAN (with +/#), the position each
//! reaches as a four-field FEN (the server's: en passant when a pawn could take), check and the
//! end of the game (checkmate, stalemate). The positions: every one of the games of
//! `tests/data/sample.pgn` and of the shared PGN edge cases (`pgn/edgecases/`, when present),
//! and the trees of the standard perft positions (Kiwipete and others) to depth 2, where
//! castling, en passant and promotion are dense. Also: perft counts, and the module's PGN
//! reader against shakmaty's replay of the same games.

mod common;

use std::collections::BTreeSet;
use std::io::{BufRead, BufReader, Write};
use std::path::Path;
use std::process::{Command, Stdio};

use common::{data_file, peers_required};
use serde_json::{Value, json};
use shakmaty::fen::{Epd, Fen};
use shakmaty::san::{San, SanPlus};
use shakmaty::{CastlingMode, Chess, EnPassantMode, Position};

const NODE: &str = "/usr/bin/node";

/// Reads requests (JSON lines) on stdin and answers each with one JSON line.
const DRIVER: &str = r#"
const C = require(process.argv[1]);
const rl = require("readline").createInterface({ input: process.stdin });
rl.on("line", (line) => {
  const q = JSON.parse(line);
  let a;
  try {
    if (q.op === "moves") {
      const pos = C.parseFen(q.fen);
      const legal = C.legalMoves(pos);
      a = {
        fen: C.toFen(pos, true),
        check: C.inCheck(pos),
        status: C.status(pos),
        moves: legal.map((m) => [m.uci, C.san(pos, m), C.toFen(C.play(pos, m), true)]).sort(),
      };
    } else if (q.op === "perft") {
      a = C.perft(C.parseFen(q.fen), q.depth);
    } else if (q.op === "pgn") {
      a = C.readPgn(q.text).moves.map((m) => m.uci);
    } else if (q.op === "write") {
      a = C.readPgn(C.writePgn(q.fen, q.sans)).moves.map((m) => m.san);
    }
  } catch (e) {
    a = { error: e.message };
  }
  process.stdout.write(JSON.stringify(a) + "\n");
});
"#;

struct Node {
    child: std::process::Child,
    out: BufReader<std::process::ChildStdout>,
}

impl Node {
    fn start() -> Option<Node> {
        if !Path::new(NODE).exists() {
            assert!(
                !peers_required(),
                "{NODE} missing and BOOKDB_REQUIRE_PEERS=1 (apt-get install nodejs)"
            );
            eprintln!("SKIP: {NODE} missing (apt-get install nodejs)");
            return None;
        }
        let module = Path::new(env!("CARGO_MANIFEST_DIR")).join("src/server/page/chess-rules.js");
        let mut child = Command::new(NODE)
            .args(["-e", DRIVER])
            .arg(module)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .spawn()
            .expect("start node");
        let out = BufReader::new(child.stdout.take().unwrap());
        Some(Node { child, out })
    }

    fn ask(&mut self, q: &Value) -> Value {
        let stdin = self.child.stdin.as_mut().unwrap();
        writeln!(stdin, "{q}").unwrap();
        stdin.flush().unwrap();
        let mut line = String::new();
        self.out.read_line(&mut line).unwrap();
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("node answered {line:?}: {e}"))
    }
}

impl Drop for Node {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn epd(pos: &Chess) -> String {
    Epd::from_position(pos, EnPassantMode::PseudoLegal).to_string()
}

/// What the module should answer for `pos`, from shakmaty.
fn expected(pos: &Chess) -> Value {
    let mut moves: Vec<Value> = pos
        .legal_moves()
        .into_iter()
        .map(|m| {
            let uci = m.to_uci(CastlingMode::Standard).to_string();
            let san = SanPlus::from_move(pos.clone(), m).to_string();
            let next = pos.clone().play(m).unwrap();
            json!([uci, san, epd(&next)])
        })
        .collect();
    moves.sort_by_key(|v| v.to_string());
    let status = if pos.is_checkmate() {
        json!("checkmate")
    } else if pos.is_stalemate() {
        json!("stalemate")
    } else {
        Value::Null
    };
    json!({"fen": epd(pos), "check": pos.is_check(), "status": status, "moves": moves})
}

fn position(fen: &str) -> Chess {
    Fen::from_ascii(fen.as_bytes())
        .unwrap()
        .into_position(CastlingMode::Standard)
        .unwrap()
}

/// The games of a PGN text: (tag FEN, SAN tokens of the mainline). Tags, comments,
/// variations, NAGs, move numbers and results are taken out; games of other variants are left
/// out.
fn games(text: &str) -> Vec<(Option<String>, Vec<String>, String)> {
    let mut out = Vec::new();
    let mut chunks: Vec<String> = Vec::new();
    let mut cur = String::new();
    let mut in_moves = false;
    for line in text.lines() {
        let t = line.trim_start();
        if t.starts_with('[') && in_moves {
            chunks.push(std::mem::take(&mut cur));
            in_moves = false;
        }
        if !t.starts_with('[') && !t.is_empty() {
            in_moves = true;
        }
        cur.push_str(line);
        cur.push('\n');
    }
    chunks.push(cur);
    for chunk in chunks {
        if chunk.contains("[Variant ") && !chunk.contains("[Variant \"Standard\"]") {
            continue;
        }
        let fen = chunk
            .find("[FEN \"")
            .map(|i| chunk[i + 6..].split('"').next().unwrap().to_string());
        let mut body = String::new();
        let (mut brace, mut paren) = (false, 0);
        for line in chunk.lines() {
            if line.trim_start().starts_with('[') && !brace {
                continue;
            }
            let mut semi = false;
            for c in line.chars() {
                match c {
                    _ if semi => {}
                    '{' => brace = true,
                    '}' => brace = false,
                    _ if brace => {}
                    ';' => semi = true,
                    '(' => paren += 1,
                    ')' => paren -= 1,
                    _ if paren > 0 => {}
                    c => body.push(c),
                }
            }
            body.push('\n');
        }
        let toks: Vec<String> = body
            .split_whitespace()
            .map(strip_move_number)
            .filter(|t| {
                !t.is_empty() && !t.starts_with('$') && !["1-0", "0-1", "1/2-1/2", "*"].contains(t)
            })
            .map(str::to_string)
            .collect();
        if !toks.is_empty() {
            out.push((fen, toks, chunk));
        }
    }
    out
}

/// A token without its move number (`12.e4` → `e4`, `12...` → ``).
fn strip_move_number(t: &str) -> &str {
    let digits = t.len() - t.trim_start_matches(|c: char| c.is_ascii_digit()).len();
    if digits > 0 && t[digits..].starts_with('.') {
        t[digits..].trim_start_matches('.')
    } else {
        t
    }
}

/// The positions of a game (before each move, and after the last) as far as shakmaty plays it.
fn replay(fen: Option<&str>, sans: &[String]) -> (Vec<Chess>, Vec<String>) {
    let Some(mut pos) = (match fen {
        Some(f) => Fen::from_ascii(f.as_bytes())
            .ok()
            .and_then(|f| f.into_position(CastlingMode::Standard).ok()),
        None => Some(Chess::default()),
    }) else {
        return (Vec::new(), Vec::new());
    };
    let mut positions = vec![pos.clone()];
    let mut ucis = Vec::new();
    for s in sans {
        let Some(m) = s.parse::<San>().ok().and_then(|san| san.to_move(&pos).ok()) else {
            break;
        };
        ucis.push(m.to_uci(CastlingMode::Standard).to_string());
        pos.play_unchecked(m);
        positions.push(pos.clone());
    }
    (positions, ucis)
}

const PERFT: [(&str, &[u64]); 6] = [
    (
        "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1",
        &[20, 400, 8902],
    ),
    (
        "r3k2r/p1ppqpb1/bn2pnp1/3PN3/1p2P3/2N2Q1p/PPPBBPPP/R3K2R w KQkq - 0 1",
        &[48, 2039, 97862],
    ),
    (
        "8/2p5/3p4/KP5r/1R3p1k/8/4P1P1/8 w - - 0 1",
        &[14, 191, 2812],
    ),
    (
        "r3k2r/Pppp1ppp/1b3nbN/nP6/BBP1P3/q4N2/Pp1P2PP/R2Q1RK1 w kq - 0 1",
        &[6, 264, 9467],
    ),
    (
        "rnbq1k1r/pp1Pbppp/2p5/8/2B5/8/PPP1NnPP/RNBQK2R w KQ - 1 8",
        &[44, 1486, 62379],
    ),
    (
        "r4rk1/1pp1qppp/p1np1n2/2b1p1B1/2B1P1b1/P1NP1N2/1PP1QPPP/R4RK1 w - - 0 10",
        &[46, 2079, 89890],
    ),
];

#[test]
fn perft_counts_of_known_positions() {
    let Some(mut node) = Node::start() else {
        return;
    };
    for (fen, counts) in PERFT {
        for (i, &want) in counts.iter().enumerate() {
            let got = node.ask(&json!({"op": "perft", "fen": fen, "depth": i + 1}));
            assert_eq!(got, json!(want), "perft {} of {fen}", i + 1);
        }
    }
}

/// Compares the module with shakmaty on every position of `positions` not yet seen.
fn compare(node: &mut Node, positions: &[Chess], seen: &mut BTreeSet<String>) -> usize {
    let mut n = 0;
    for pos in positions {
        let fen = Fen::from_position(pos, EnPassantMode::PseudoLegal).to_string();
        if !seen.insert(epd(pos)) {
            continue;
        }
        let got = node.ask(&json!({"op": "moves", "fen": fen}));
        let want = expected(pos);
        assert_eq!(got, want, "the module and shakmaty differ on {fen}");
        n += 1;
    }
    n
}

#[test]
fn legal_moves_san_and_fen_agree_with_shakmaty() {
    let Some(mut node) = Node::start() else {
        return;
    };
    let mut seen = BTreeSet::new();
    // The perft trees to depth 2.
    let mut tree = Vec::new();
    for (fen, _) in PERFT {
        let root = position(fen);
        tree.push(root.clone());
        for m in root.legal_moves() {
            let child = root.clone().play(m).unwrap();
            for m2 in child.legal_moves() {
                tree.push(child.clone().play(m2).unwrap());
            }
            tree.push(child);
        }
    }
    let in_trees = compare(&mut node, &tree, &mut seen);
    // Positions of real games.
    let sample = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/sample.pgn");
    let mut texts = vec![std::fs::read_to_string(sample).unwrap()];
    if let Some(dir) = data_file("pgn/edgecases") {
        let mut files = Vec::new();
        collect_pgns(&dir, &mut files);
        files.sort();
        for f in files {
            if let Ok(bytes) = std::fs::read(&f) {
                texts.push(String::from_utf8_lossy(&bytes).into_owned());
            }
        }
    }
    let mut in_games = 0;
    let mut n_games = 0;
    for text in &texts {
        for (fen, sans, _) in games(text) {
            let (positions, _) = replay(fen.as_deref(), &sans);
            n_games += 1;
            in_games += compare(&mut node, &positions, &mut seen);
        }
    }
    eprintln!(
        "compared {in_trees} positions of perft trees and {in_games} of {n_games} games with shakmaty"
    );
    assert!(in_trees > 4_000 && in_games > 10_000, "too few positions");
}

fn collect_pgns(dir: &Path, out: &mut Vec<std::path::PathBuf>) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    for e in rd.flatten() {
        let p = e.path();
        if p.is_dir() {
            collect_pgns(&p, out);
        } else if p.extension().is_some_and(|x| x == "pgn") {
            out.push(p);
        }
    }
}

#[test]
fn the_pgn_reader_reads_the_mainline_shakmaty_plays() {
    let Some(mut node) = Node::start() else {
        return;
    };
    let sample = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/sample.pgn");
    let text = std::fs::read_to_string(sample).unwrap();
    let mut n = 0;
    for (fen, sans, chunk) in games(&text).into_iter().take(60) {
        let (_, ucis) = replay(fen.as_deref(), &sans);
        if ucis.len() != sans.len() {
            continue;
        }
        let got = node.ask(&json!({"op": "pgn", "text": chunk}));
        assert_eq!(got, json!(ucis), "{chunk}");
        n += 1;
    }
    assert!(n > 50, "{n} games");
    // Comments, variations (nested), NAGs, castling with zeros, suffixes, a FEN tag.
    let got = node.ask(&json!({"op": "pgn", "text":
        "[Event \"x\"]\n\n1. e4 {best} e5 (1... c5 2. Nf3 (2. c3)) 2. Nf3 $1 Nc6 3. Bb5!? a6 4. 0-0 *"}));
    assert_eq!(
        got,
        json!(["e2e4", "e7e5", "g1f3", "b8c6", "f1b5", "a7a6", "e1g1"])
    );
    let got = node.ask(&json!({"op": "pgn", "text":
        "[FEN \"8/P7/8/8/8/8/8/k6K w - - 0 1\"]\n1. a8=N Kb1 *"}));
    assert_eq!(got, json!(["a7a8n", "a1b1"]));
    let got = node.ask(&json!({"op": "pgn", "text": "1. e4 e5 2. Ke3"}));
    assert!(got["error"].as_str().unwrap().contains("Ke3"), "{got}");
    // What writePgn writes reads back, from a position with black to move too.
    let got = node.ask(&json!({"op": "write", "fen": null, "sans": ["e4", "c5", "Nf3"]}));
    assert_eq!(got, json!(["e4", "c5", "Nf3"]));
    let got = node.ask(&json!({"op": "write",
        "fen": "rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq - 0 1", "sans": ["c5", "Nf3"]}));
    assert_eq!(got, json!(["c5", "Nf3"]));
}

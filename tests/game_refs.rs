//! Game references (brief §9, docs/FORMAT.md §15.3) judged by an independent oracle:
//! `tests/scripts/games_oracle.py` keeps every game of every (position, move) with python-chess
//! and chooses `/lichess`'s top and recent games, `/masters`'s top games and `moves[].game` under
//! a table of filters; bookdb's answers (`GET /lichess`, `GET /masters`, `bookdb games --json`)
//! must name the same games in the same order.
//!
//! Data: the first 1,500 of the shipped retagged games (`tests/data/retagged-2000.pgn.zst`:
//! `medium-10k.pgn` retagged by `../shared/tools/retag.py 26`), each given a `GameId` (so the
//! oracle needs no fingerprint), imported at `--max-ply 30` in two
//! parts (a base and a delta segment: the choice spans files), then compacted (the references
//! rebuilt in one file), and as a merge of the two parts' books.
//!
//! Needs python-chess (without it: a printed SKIP, a failure when BOOKDB_REQUIRE_PEERS=1).
//! Runs without the shared data (the games are shipped).

mod common;
use common::server::{Server, enc};
use common::*;

use serde_json::{Value, json};
use std::path::{Path, PathBuf};
use std::process::Command;

const ORACLE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/scripts/games_oracle.py");
const GAMES: usize = 1500;
const MAX_PLY: &str = "30";

/// An 8-character id of `[0-9A-Za-z]` for game `i`, scattered (not in game order).
fn game_id(i: usize) -> String {
    const B62: &[u8] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
    let mut v = (i as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15) >> 16;
    let mut s = [0u8; 8];
    for c in s.iter_mut().rev() {
        *c = B62[(v % 62) as usize];
        v /= 62;
    }
    String::from_utf8(s.to_vec()).unwrap()
}

struct Fixture {
    _tmp: tempfile::TempDir,
    dir: PathBuf,
    py: String,
    halves: [PathBuf; 2],
}

fn fixture() -> Option<Fixture> {
    let py = python_chess()?;
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().to_path_buf();
    let games: Vec<Vec<u8>> = retagged_games(&py)
        .into_iter()
        .take(GAMES)
        .enumerate()
        .map(|(i, g)| {
            let mut out = format!("[GameId \"{}\"]\n", game_id(i)).into_bytes();
            out.extend_from_slice(&g);
            out
        })
        .collect();
    let mut halves = Vec::new();
    for (h, part) in games.chunks(GAMES / 2).enumerate() {
        let half = dir.join(format!("half-{h}.pgn"));
        write_games(&half, part);
        halves.push(half);
    }
    Some(Fixture {
        _tmp: tmp,
        dir,
        py,
        halves: [halves[0].clone(), halves[1].clone()],
    })
}

/// The positions asked about: the first plies of the main openings, and positions of the
/// book met further in (every 211th of its dump), where few games meet.
fn positions(book: &Path) -> Vec<Value> {
    let mut out: Vec<Value> = [
        vec![],
        vec!["e2e4"],
        vec!["d2d4"],
        vec!["e2e4", "c7c5"],
        vec!["e2e4", "e7e5"],
        vec!["d2d4", "g8f6"],
        vec!["e2e4", "c7c5", "g1f3"],
        vec!["d2d4", "g8f6", "c2c4", "e7e6"],
    ]
    .into_iter()
    .map(|p| json!({ "play": p }))
    .collect();
    for (i, line) in dump(book).lines().enumerate() {
        if i % 211 == 5 {
            let v: Value = serde_json::from_str(line).unwrap();
            out.push(json!({ "fen": format!("{} 0 1", v["fen"].as_str().unwrap()) }));
        }
    }
    out
}

/// The filters asked with, per route.
fn filters() -> Vec<(&'static str, Value)> {
    vec![
        ("lichess", json!({})),
        ("lichess", json!({"speeds": ["blitz"]})),
        ("lichess", json!({"ratings": [2000, 2200]})),
        ("lichess", json!({"since": "2010-01"})),
        ("lichess", json!({"until": "2005-06", "modes": ["rated"]})),
        (
            "lichess",
            json!({"speeds": ["bullet", "blitz", "rapid"], "ratings": [1600, 1800, 2500], "since": "2000-01", "until": "2020-12"}),
        ),
        ("masters", json!({})),
        ("masters", json!({"since": "2000"})),
        ("masters", json!({"until": "2010", "speeds": ["classical"]})),
    ]
}

fn query_string(q: &Value) -> String {
    let mut s = String::from("moves=100");
    if let Some(p) = q["play"].as_array() {
        let p: Vec<&str> = p.iter().map(|m| m.as_str().unwrap()).collect();
        s.push_str(&format!("&play={}", p.join(",")));
    }
    if let Some(f) = q["fen"].as_str() {
        s.push_str(&format!("&fen={}", enc(f)));
    }
    for (k, v) in q["filters"].as_object().unwrap() {
        let v = match v {
            Value::Array(a) => a
                .iter()
                .map(|x| match x {
                    Value::String(s) => s.clone(),
                    x => x.to_string(),
                })
                .collect::<Vec<_>>()
                .join(","),
            Value::String(s) => s.clone(),
            x => x.to_string(),
        };
        s.push_str(&format!("&{k}={}", enc(&v)));
    }
    for k in ["topGames", "recentGames"] {
        if let Some(n) = q[k].as_u64() {
            s.push_str(&format!("&{k}={n}"));
        }
    }
    s
}

fn ids(v: &Value) -> Vec<String> {
    v.as_array()
        .map(|a| {
            a.iter()
                .map(|g| g["id"].as_str().unwrap().to_string())
                .collect()
        })
        .unwrap_or_default()
}

fn oracle(f: &Fixture, queries: &[Value]) -> Vec<Value> {
    let out = Command::new(&f.py)
        .arg(ORACLE)
        .args(&f.halves)
        .args(["--max-ply", MAX_PLY])
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .and_then(|mut c| {
            use std::io::Write;
            c.stdin
                .take()
                .unwrap()
                .write_all(serde_json::to_string(queries).unwrap().as_bytes())?;
            c.wait_with_output()
        })
        .unwrap();
    assert!(
        out.status.success(),
        "oracle: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let v: Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(
        v["counted"].as_u64(),
        Some(GAMES as u64),
        "the oracle counts every game"
    );
    v["answers"].as_array().unwrap().clone()
}

/// Every query answered by the server of `book` as the oracle answers it; returns how many
/// games the answers named (so that a test that names none cannot pass).
fn check_book(book: &Path, queries: &[Value], answers: &[Value], what: &str) -> usize {
    let server = Server::start(book, &[]);
    let mut named = 0;
    let mut bad = Vec::new();
    for (q, want) in queries.iter().zip(answers) {
        let route = q["route"].as_str().unwrap();
        let path = format!("/{route}?{}", query_string(q));
        let r = server.get(&path);
        assert_eq!(r.status, 200, "{path}: {}", r.body);
        let got = r.json();
        let mut check = |list: &str, key: &str| {
            let got = ids(&got[list]);
            if got != ids_of(&want[key]) {
                bad.push(format!(
                    "{what} {route} {q}: {list} {got:?}, oracle {:?}",
                    want[key]
                ));
            }
            got.len()
        };
        named += check("topGames", "top");
        if route == "lichess" {
            named += check("recentGames", "recent");
        } else {
            assert!(
                got.get("recentGames").is_none(),
                "/masters has no recentGames: {got}"
            );
        }
        let mut single = serde_json::Map::new();
        for m in got["moves"].as_array().unwrap() {
            if let Some(id) = m["game"]["id"].as_str() {
                single.insert(m["uci"].as_str().unwrap().to_string(), json!(id));
                assert_eq!(m["game"]["uci"], m["uci"], "{m}");
            }
        }
        if Value::Object(single.clone()) != want["single"] {
            bad.push(format!(
                "{what} {route} {q}: moves[].game {single:?}, oracle {}",
                want["single"]
            ));
        }
        named += single.len();
    }
    assert!(
        bad.is_empty(),
        "{} of {} answers differ:\n{}",
        bad.len(),
        queries.len(),
        bad.join("\n")
    );
    named
}

fn ids_of(v: &Value) -> Vec<String> {
    v.as_array()
        .map(|a| a.iter().map(|s| s.as_str().unwrap().to_string()).collect())
        .unwrap_or_default()
}

#[test]
fn references_choose_the_games_the_oracle_chooses_across_files_compaction_and_merge() {
    let Some(f) = fixture() else { return };
    let book = f.dir.join("two.book");
    bookdb([
        "import",
        "--quiet",
        "--max-ply",
        MAX_PLY,
        "--book",
        s(&book),
        s(&f.halves[0]),
    ])
    .ok();
    import_segment_with(&f.halves[1], &book);
    let stats = bookdb(["stats", "--json", "--book", s(&book)]).json();
    assert_eq!(stats["stored_games"], json!(GAMES), "{stats}");
    assert_eq!(
        stats["segments"],
        json!(1),
        "the second half is a segment: {stats}"
    );
    let mut queries = Vec::new();
    for p in positions(&book) {
        for (route, flt) in filters() {
            let mut q = p.clone();
            q["route"] = json!(route);
            q["filters"] = flt;
            queries.push(q);
        }
    }
    // No lists: only the moves a single game counts for name theirs (the answer reads only
    // those moves' references).
    for p in positions(&book).into_iter().step_by(3) {
        for (route, flt) in filters() {
            let mut q = p.clone();
            q["route"] = json!(route);
            q["filters"] = flt;
            q["topGames"] = json!(0);
            q["recentGames"] = json!(0);
            queries.push(q);
        }
    }
    // Smaller lists than the most.
    for (route, top, recent) in [("lichess", 2, 3), ("lichess", 0, 8), ("masters", 5, 0)] {
        queries.push(json!({"play": ["e2e4"], "route": route, "filters": {}, "topGames": top, "recentGames": recent}));
    }
    let answers = oracle(&f, &queries);
    let named = check_book(&book, &queries, &answers, "base+segment");
    assert!(named > 500, "the answers name only {named} games");
    println!("{} queries, {named} games named", queries.len());

    // Compacted: one file, its references rebuilt from the merged store.
    bookdb(["compact", "--quiet", "--book", s(&book)]).ok();
    bookdb(["verify", "--quiet", "--book", s(&book)]).ok();
    check_book(&book, &queries, &answers, "compacted");

    // The two halves' books merged (in the other order).
    let a = f.dir.join("a.book");
    let b = f.dir.join("b.book");
    bookdb([
        "import",
        "--quiet",
        "--max-ply",
        MAX_PLY,
        "--book",
        s(&a),
        s(&f.halves[0]),
    ])
    .ok();
    bookdb([
        "import",
        "--quiet",
        "--max-ply",
        MAX_PLY,
        "--book",
        s(&b),
        s(&f.halves[1]),
    ])
    .ok();
    let merged = f.dir.join("merged.book");
    bookdb(["merge", "--quiet", "--out", s(&merged), s(&b), s(&a)]).ok();
    check_book(&merged, &queries, &answers, "merged");

    // `bookdb games --json` lists what /lichess and /masters list.
    for (q, want) in queries.iter().zip(&answers).step_by(7) {
        let mut args = vec![
            "games".to_string(),
            "--json".into(),
            "--book".into(),
            s(&merged).into(),
        ];
        if let Some(p) = q["play"].as_array() {
            let p: Vec<&str> = p.iter().map(|m| m.as_str().unwrap()).collect();
            args.extend(["--moves".into(), p.join(" ")]);
        }
        if let Some(fen) = q["fen"].as_str() {
            args.extend(["--fen".into(), fen.into()]);
        }
        if q["route"] == "masters" {
            args.push("--masters".into());
        }
        for (k, v) in q["filters"].as_object().unwrap() {
            let v = match v {
                Value::Array(a) => a
                    .iter()
                    .map(|x| x.as_str().map_or_else(|| x.to_string(), String::from))
                    .collect::<Vec<_>>()
                    .join(","),
                x => x.as_str().unwrap().to_string(),
            };
            args.extend([format!("--{k}"), v]);
        }
        for (k, flag) in [("topGames", "--top"), ("recentGames", "--recent")] {
            if let Some(n) = q[k].as_u64() {
                args.extend([flag.to_string(), n.to_string()]);
            }
        }
        let out = bookdb(&args).ok();
        let mut top = Vec::new();
        let mut recent = Vec::new();
        for line in out.lines() {
            let g: Value = serde_json::from_str(line).unwrap();
            match g["list"].as_str() {
                Some("top") => top.push(g["id"].as_str().unwrap().to_string()),
                _ => recent.push(g["id"].as_str().unwrap().to_string()),
            }
        }
        assert_eq!(top, ids_of(&want["top"]), "games {args:?}");
        assert_eq!(recent, ids_of(&want["recent"]), "games {args:?}");
    }
}

/// Imports `pgn` into `book` as a delta segment (a small import beside a base).
fn import_segment_with(pgn: &Path, book: &Path) {
    bookdb([
        "import",
        "--quiet",
        "--max-ply",
        MAX_PLY,
        "--delta-min",
        "1000000",
        "--book",
        s(book),
        s(pgn),
    ])
    .ok();
}

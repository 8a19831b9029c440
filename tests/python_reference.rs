//! `bookdb dump` of a book built from PGN equals an independent replay of the same games with
//! python-chess (`tests/scripts/replay_reference.py`), under the counting rules of
//! docs/CONTRACT.md §2.
//!
//! Needs `python3` with python-chess (`pip install chess`). Without it the tests print a
//! `SKIP:` line and pass, unless `BOOKDB_REQUIRE_PEERS=1` is set (CI), in which case they fail.
//! The real-games test reads `medium-10k.pgn` from `$BOOKDB_DATA/pgn/` (default
//! `../shared/data` next to the crate) and is skipped, with a printed reason, if it is absent.

mod common;
use common::{Bookdb, data_dir, python_chess as python};

use std::collections::BTreeMap;
use std::path::Path;
use std::process::Command;

/// position (key, fen) -> uci -> [white, draws, black, unknown]
type Book = BTreeMap<(String, String), BTreeMap<String, [u64; 4]>>;

const SCRIPT: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/scripts/replay_reference.py"
);

/// Runs a command, panicking with its stderr if it fails; returns (stdout, stderr).
fn run(cmd: &mut Command, what: &str) -> (String, String) {
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("{what}: cannot start {cmd:?}: {e}"));
    let stdout = String::from_utf8(out.stdout)
        .unwrap_or_else(|e| panic!("{what}: stdout is not UTF-8: {e}"));
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    assert!(
        out.status.success(),
        "{what} failed ({}): {cmd:?}\n--- stderr ---\n{stderr}",
        out.status
    );
    (stdout, stderr)
}

/// Parses JSON lines of the `dump` shape into a normalized book. Checks on the way that every
/// line is an object with the fixed fields, that counts are non-negative integers, that no
/// (key, fen) and no move within a position appears twice, and that keys ascend.
fn parse_book(side: &str, text: &str) -> Book {
    let mut book = Book::new();
    let mut last_key: Option<u64> = None;
    for (i, line) in text.lines().enumerate() {
        if line.trim().is_empty() {
            continue;
        }
        let ctx = || format!("{side} line {}: {line}", i + 1);
        let v: serde_json::Value =
            serde_json::from_str(line).unwrap_or_else(|e| panic!("{}: {e}", ctx()));
        let key = v["key"]
            .as_str()
            .unwrap_or_else(|| panic!("{}: no string \"key\"", ctx()));
        assert!(
            key.len() == 16
                && key
                    .bytes()
                    .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b)),
            "{}: key is not 16 lowercase hex digits",
            ctx()
        );
        let k = u64::from_str_radix(key, 16).unwrap();
        if let Some(prev) = last_key {
            assert!(
                prev <= k,
                "{}: keys do not ascend ({prev:016x} before {key})",
                ctx()
            );
        }
        last_key = Some(k);
        let fen = match &v["fen"] {
            serde_json::Value::String(s) => s.clone(),
            other => format!("<fen: {other}>"),
        };
        let moves = v["moves"]
            .as_array()
            .unwrap_or_else(|| panic!("{}: no array \"moves\"", ctx()));
        let mut ms = BTreeMap::new();
        for m in moves {
            let uci = m["uci"]
                .as_str()
                .unwrap_or_else(|| panic!("{}: move without \"uci\"", ctx()));
            let mut counts = [0u64; 4];
            for (c, field) in counts
                .iter_mut()
                .zip(["white", "draws", "black", "unknown"])
            {
                *c = m[field]
                    .as_u64()
                    .unwrap_or_else(|| panic!("{}: move {uci}: \"{field}\" is not a count", ctx()));
            }
            assert!(
                ms.insert(uci.to_string(), counts).is_none(),
                "{}: move {uci} twice",
                ctx()
            );
        }
        assert!(
            book.insert((key.to_string(), fen.clone()), ms).is_none(),
            "{}: position {key} {fen} appears twice",
            ctx()
        );
    }
    book
}

fn pairs(b: &Book) -> usize {
    b.values().map(|m| m.len()).sum()
}

fn show(m: Option<&BTreeMap<String, [u64; 4]>>) -> String {
    match m {
        None => "(absent)".to_string(),
        Some(m) => m
            .iter()
            .map(|(u, [w, d, b, x])| format!("{u} w{w} d{d} b{b} u{x}"))
            .collect::<Vec<_>>()
            .join(", "),
    }
}

/// Asserts the two books are equal; on mismatch prints the first differing positions.
fn assert_books_equal(bookdb: &Book, reference: &Book) {
    eprintln!(
        "bookdb dump: {} positions, {} (position, move) pairs; python-chess reference: {} positions, {} pairs",
        bookdb.len(),
        pairs(bookdb),
        reference.len(),
        pairs(reference)
    );
    if bookdb == reference {
        eprintln!("equal: {} positions compared", bookdb.len());
        return;
    }
    let mut keys: Vec<&(String, String)> = bookdb.keys().chain(reference.keys()).collect();
    keys.sort();
    keys.dedup();
    let diffs: Vec<_> = keys
        .into_iter()
        .filter(|k| bookdb.get(*k) != reference.get(*k))
        .collect();
    let only_bookdb = diffs
        .iter()
        .filter(|k| !reference.contains_key(**k))
        .count();
    let only_ref = diffs.iter().filter(|k| !bookdb.contains_key(**k)).count();
    eprintln!(
        "MISMATCH: {} differing positions ({} only in bookdb, {} only in reference, {} with different moves/counts)",
        diffs.len(),
        only_bookdb,
        only_ref,
        diffs.len() - only_bookdb - only_ref
    );
    // Up to 5 of each kind: different moves/counts first, then present on one side only.
    type Kind = (&'static str, fn(bool, bool) -> bool);
    let kinds: [Kind; 3] = [
        ("different moves/counts", |b, r| b && r),
        ("only in bookdb", |b, r| b && !r),
        ("only in reference", |b, r| !b && r),
    ];
    for (name, pred) in kinds {
        let shown: Vec<_> = diffs
            .iter()
            .filter(|k| pred(bookdb.contains_key(**k), reference.contains_key(**k)))
            .take(5)
            .collect();
        if !shown.is_empty() {
            eprintln!(" {name}:");
        }
        for (key, fen) in shown {
            let k = (key.clone(), fen.clone());
            eprintln!("  key {key} fen {fen}");
            eprintln!("    bookdb:    {}", show(bookdb.get(&k)));
            eprintln!("    reference: {}", show(reference.get(&k)));
        }
    }
    panic!(
        "bookdb dump differs from the python-chess replay in {} of {} / {} positions (bookdb / reference)",
        diffs.len(),
        bookdb.len(),
        reference.len()
    );
}

/// Imports `pgn` into a fresh book with bookdb and replays it with python-chess; returns
/// (bookdb book, reference book, reference summary line).
fn build_both(py: &str, pgn: &Path, max_ply: u32, dir: &Path) -> (Book, Book, String) {
    let book = dir.join("b.book");
    assert!(!book.exists());
    let ply = max_ply.to_string();
    Bookdb::import(&[pgn], &book)
        .args(["--max-ply", &ply, "--quiet"])
        .ok();
    let dump = common::dump(&book);
    let (reference, ref_err) = run(
        Command::new(py)
            .arg(SCRIPT)
            .arg(pgn)
            .args(["--max-ply", &ply]),
        "replay_reference.py",
    );
    let summary = ref_err
        .lines()
        .rev()
        .find(|l| l.starts_with("games read"))
        .unwrap_or_else(|| panic!("replay_reference.py printed no summary:\n{ref_err}"))
        .to_string();
    eprintln!("python-chess reference: {summary}");
    (
        parse_book("bookdb dump", &dump),
        parse_book("reference", &reference),
        summary,
    )
}

#[test]
fn medium_10k_matches_python_chess() {
    let Some(py) = python() else { return };
    let src = data_dir().join("pgn/medium-10k.pgn");
    if !src.is_file() {
        eprintln!(
            "SKIP: {} not found (set BOOKDB_DATA to the shared data directory)",
            src.display()
        );
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let pgn = dir.path().join("medium-10k.pgn");
    std::fs::copy(&src, &pgn).unwrap();
    let (bookdb, reference, _) = build_both(&py, &pgn, 30, dir.path());
    assert!(
        reference.len() > 10_000,
        "reference suspiciously small: {} positions",
        reference.len()
    );
    assert_books_equal(&bookdb, &reference);
}

/// Tricky cases, one game each (results noted):
/// 1. en passant 1.e4 d5 2.e5 f5 3.exf6, then both sides castle short (1-0)
/// 2. both sides castle long (0-1)
/// 3. FEN start, promotion and under-promotion (1/2-1/2)
/// 4. FEN start with black to move, castling rights and an en-passant capture, both sides
///    castle afterwards (*)
/// 5. knights shuffle: the start position and others repeat (1/2-1/2)
/// 6. an illegal move at ply 9 (skipped; would add to 1.e4's white count)
/// 7. crazyhouse (skipped)
/// 8. a null move (skipped)
/// 9. an illegal move inside a variation only (counted: only the mainline matters) (1-0)
/// 10. FEN with a pseudo-legal but illegal en-passant capture: still part of the identity (*)
/// 11. no Result tag (unknown)
const TRICKY: &str = r#"[Event "ep and short castling"]
[Result "1-0"]

1. e4 d5 2. e5 f5 3. exf6 Nxf6 4. Nf3 e6 5. Bd3 Be7 6. O-O O-O 1-0

[Event "long castling"]
[Result "0-1"]

1. d4 d5 2. Nc3 Nc6 3. Bf4 Bf5 4. Qd2 Qd7 5. O-O-O O-O-O 0-1

[Event "promotion from FEN"]
[Result "1/2-1/2"]
[SetUp "1"]
[FEN "8/P6k/8/8/8/8/6p1/K7 w - - 0 1"]

1. a8=Q g1=N 2. Qb7+ Kh6 3. Qb1 Ne2 1/2-1/2

[Event "FEN, black to move, ep and castling"]
[Result "*"]
[SetUp "1"]
[FEN "r3k2r/pppq1ppp/8/8/3pP3/8/PPPQ1PPP/R3K2R b KQkq e3 0 10"]

10... dxe3 11. O-O O-O-O 12. Qxe3 Kb8 *

[Event "repetition"]
[Result "1/2-1/2"]

1. Nf3 Nf6 2. Ng1 Ng8 3. Nf3 Nf6 4. Ng1 Ng8 5. Nf3 Nf6 1/2-1/2

[Event "illegal move"]
[Result "1-0"]

1. e4 e5 2. Nf3 Nc6 3. Bb5 a6 4. Bxc6 dxc6 5. Qxh8 Nf6 1-0

[Event "crazyhouse"]
[Variant "Crazyhouse"]
[Result "*"]

1. e4 e5 2. Nf3 Nc6 3. Bc4 N@d4 *

[Event "null move"]
[Result "*"]

1. e4 -- 2. d4 d5 *

[Event "illegal move in a variation"]
[Result "1-0"]

1. e4 (1. d4 Ke3) e5 2. Nf3 1-0

[Event "pseudo-legal en passant"]
[Result "*"]
[SetUp "1"]
[FEN "8/8/8/KPp4r/8/8/8/4k3 w - c6 0 2"]

2. Ka4 Ke2 3. Ka3 Kd3 *

[Event "no result tag"]

1. c4 e5 2. g3 *
"#;

#[test]
fn tricky_games_match_python_chess() {
    let Some(py) = python() else { return };
    let dir = tempfile::tempdir().unwrap();
    let pgn = dir.path().join("tricky.pgn");
    std::fs::write(&pgn, TRICKY).unwrap();
    let (bookdb, reference, summary) = build_both(&py, &pgn, 100, dir.path());
    // The reference itself must get the cases right, or the comparison proves little.
    assert_eq!(
        summary, "games read 11, imported 8, skipped 3",
        "reference: games imported/skipped"
    );
    let get = |b: &Book, key: &str, fen: &str, uci: &str| -> Option<[u64; 4]> {
        b.get(&(key.to_string(), fen.to_string()))?
            .get(uci)
            .copied()
    };
    let start = "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq -";
    // e4: games 1 and 9 (1-0); the illegal, crazyhouse and null-move games must not count.
    assert_eq!(
        get(&reference, "463b96181691fc9c", start, "e2e4"),
        Some([2, 0, 0, 0]),
        "reference: 1.e4 W/D/B/U"
    );
    // Nf3 from the start position is repeated three times in game 5 but counts once.
    assert_eq!(
        get(&reference, "463b96181691fc9c", start, "g1f3"),
        Some([0, 1, 0, 0]),
        "reference: repeated 1.Nf3"
    );
    // The en-passant file is part of the position after 1.e4 d5 2.e5 f5.
    let ep = "rnbqkbnr/ppp1p1pp/8/3pPp2/8/8/PPPP1PPP/RNBQKBNR w KQkq f6";
    assert_eq!(
        get(&reference, "22a48b5a8e47ff78", ep, "e5f6"),
        Some([1, 0, 0, 0]),
        "reference: exf6 e.p."
    );
    // Pseudo-legal en passant from a FEN tag.
    assert_eq!(
        get(
            &reference,
            "3d665cc1f5da1059",
            "8/8/8/KPp4r/8/8/8/4k3 w - c6",
            "a5a4"
        ),
        Some([0, 0, 0, 1]),
        "reference: pseudo-legal e.p. from FEN"
    );
    // Castling as the king's two-square move; under-promotion.
    let ucis: Vec<&String> = reference.values().flat_map(|m| m.keys()).collect();
    for u in ["e1g1", "e8g8", "e1c1", "e8c8", "a7a8q", "g2g1n"] {
        assert!(
            ucis.iter().any(|x| x.as_str() == u),
            "reference lacks move {u}"
        );
    }
    assert_books_equal(&bookdb, &reference);
}

/// Moves the PGN reader drops but python-chess reads: promotion without `=`, long algebraic,
/// annotation glyphs glued to a move. bookdb reads them as python-chess does (`movetext`).
const SAN_VARIANTS: &str = include_str!("data/san-variants.pgn");

#[test]
fn san_variants_match_python_chess() {
    let Some(py) = python() else { return };
    let dir = tempfile::tempdir().unwrap();
    let pgn = dir.path().join("variants.pgn");
    std::fs::write(&pgn, SAN_VARIANTS).unwrap();
    let (bookdb, reference, summary) = build_both(&py, &pgn, 100, dir.path());
    assert_eq!(
        summary, "games read 6, imported 6, skipped 0",
        "reference: games imported/skipped"
    );
    let ucis: Vec<&String> = reference.values().flat_map(|m| m.keys()).collect();
    for u in [
        "h7g8q", "f1c4", "g8f6", "d7d8r", "b1c3", "e4d5", "f3e5", "e5f6", "e1g1",
    ] {
        assert!(
            ucis.iter().any(|x| x.as_str() == u),
            "reference lacks move {u}"
        );
    }
    assert_books_equal(&bookdb, &reference);
}

/// A file whose lines end with a carriage return alone (an old Mac file): python-chess reads
/// it through Python's universal newlines, bookdb reads each lone CR as a line end
/// (`ops::lineends`): the same book.
#[test]
fn carriage_return_line_ends_match_python_chess() {
    let Some(py) = python() else { return };
    let dir = tempfile::tempdir().unwrap();
    let pgn = dir.path().join("mac.pgn");
    let text = std::fs::read(common::sample_pgn()).unwrap();
    let mac: Vec<u8> = text
        .iter()
        .map(|&b| if b == b'\n' { b'\r' } else { b })
        .collect();
    std::fs::write(&pgn, mac).unwrap();
    let (bookdb, reference, summary) = build_both(&py, &pgn, 40, dir.path());
    assert_eq!(
        summary, "games read 200, imported 200, skipped 0",
        "reference: games imported/skipped"
    );
    assert_books_equal(&bookdb, &reference);
}

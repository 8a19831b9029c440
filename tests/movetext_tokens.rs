//! Movetext tokens the PGN reader cannot read whole (`hxg8Q`, `e2-e4`, `cd`): a game holding
//! one is never counted as a shorter game. Common SAN variants are read as the moves they name
//! (as python-chess reads them; `python_reference.rs` compares the counts); any other unreadable
//! move skips the game whole with its `file:line` and the word (DESIGN §2), whatever the jobs,
//! `--dedupe` or game store.

mod common;
use common::*;

use std::path::Path;

/// Four games: the last move of the first is an unreadable `cd`, the second has an unreadable
/// `Nz3` in its middle, the third a broken tag (a quote inside the value), the fourth is sound.
/// The reader ends the third game's tags at its broken tag and reads the rest as another game;
/// the import reads the two parts again as one game, the quotes escaped (as python-chess reads
/// the tag), so it counts whole with all its tags.
const UNREADABLE: &str = r#"[Event "a"]
[White "w1"]
[Black "b1"]
[Result "1-0"]

1. e4 e5 2. Nf3 Nc6 3. cd 1-0

[Event "b"]
[White "w2"]
[Black "b2"]
[Result "0-1"]

1. d4 d5 2. Nz3 Nf6 3. c4 0-1

[Event "c"]
[White ""Socrates Expert""]
[Black "b3"]
[Result "*"]

1. c4 e5 *

[Event "d"]
[White "w4"]
[Black "b4"]
[Result "1/2-1/2"]

1. e4 c5 1/2-1/2
"#;

/// Games whose moves the reader drops but which read in a common SAN variant (shared with
/// `python_reference.rs`, which compares their counts with python-chess's).
const MENDED: &str = include_str!("data/san-variants.pgn");

fn import(pgn: &Path, book: &Path, report: &Path, extra: &[&str]) -> serde_json::Value {
    Bookdb::import(&[pgn], book)
        .args(["--json", "--report", s(report)])
        .args(extra)
        .json()
}

/// The moves of a position of the dump, as (uci, total games).
fn moves_at(dump: &str, fen_prefix: &str) -> Vec<(String, u64)> {
    for line in dump.lines() {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        if v["fen"].as_str().unwrap().starts_with(fen_prefix) {
            return v["moves"]
                .as_array()
                .unwrap()
                .iter()
                .map(|m| {
                    let n = ["white", "draws", "black", "unknown"]
                        .iter()
                        .map(|k| m[k].as_u64().unwrap())
                        .sum();
                    (m["uci"].as_str().unwrap().to_string(), n)
                })
                .collect();
        }
    }
    Vec::new()
}

const START: &str = "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq";

#[test]
fn a_game_with_an_unreadable_move_is_skipped_whole_with_its_place() {
    let dir = tempfile::tempdir().unwrap();
    let pgn = write_text(dir.path(), "u.pgn", UNREADABLE);
    for (name, extra) in [
        ("default", &[][..]),
        ("one job", &["--jobs", "1"][..]),
        ("no games", &["--no-games"][..]),
        ("no games, dedupe", &["--no-games", "--dedupe"][..]),
    ] {
        let book = dir
            .path()
            .join(format!("{}.book", name.replace([' ', ','], "-")));
        let report = dir
            .path()
            .join(format!("{}.report", name.replace([' ', ','], "-")));
        let r = import(&pgn, &book, &report, extra);
        assert_eq!(r["games_read"], 4, "{name}: {r}");
        assert_eq!(r["games_imported"], 2, "{name}: {r}");
        assert_eq!(
            r["skipped_by_reason"],
            serde_json::json!({"unreadable": 2}),
            "{name}: {r}"
        );
        let report = std::fs::read_to_string(&report).unwrap();
        let lines: Vec<&str> = report.lines().collect();
        assert_eq!(lines.len(), 2, "{name}: {report}");
        for (line, word) in [(1, "\"cd\" (ply 5)"), (8, "\"Nz3\" (ply 3)")] {
            let at = format!("u.pgn:{line}\tunreadable\t");
            assert!(
                lines.iter().any(|l| l.contains(&at) && l.contains(word)),
                "{name}: no report line at {line} naming {word}:\n{report}"
            );
        }
        // 1.e4 once (the first game's 1.e4 is not counted), 1.d4 not at all, 1.c4 by the
        // game with the broken tag.
        assert_eq!(
            moves_at(&dump(&book), START),
            [("c2c4".to_string(), 1), ("e2e4".to_string(), 1)],
            "{name}"
        );
    }
}

#[test]
fn moves_in_common_san_variants_are_counted_as_the_moves_they_name() {
    let dir = tempfile::tempdir().unwrap();
    let pgn = write_text(dir.path(), "m.pgn", MENDED);
    let book = dir.path().join("m.book");
    let r = import(&pgn, &book, &dir.path().join("m.report"), &[]);
    assert_eq!(r["games_imported"], 6, "{r}");
    let d = dump(&book);
    // The promotion ending the first game is counted (it was dropped: the game ended a move
    // early).
    assert_eq!(
        moves_at(&d, "6n1/6kP/8/8/8/8/1K6/8 w"),
        [("h7g8q".to_string(), 1)],
        "{d}"
    );
    let mut first = moves_at(&d, START);
    first.sort();
    assert_eq!(first, [("d2d4".to_string(), 1), ("e2e4".to_string(), 3)]);
    // The long-algebraic game is the game in SAN: its book equals the SAN game's.
    let san = write_text(
        dir.path(),
        "s.pgn",
        "[Result \"0-1\"]\n\n1. e4 e5 2. Nf3 Nc6 3. Bc4 Nf6 0-1\n",
    );
    let long = write_text(
        dir.path(),
        "l.pgn",
        MENDED[MENDED.find("[Event \"long").unwrap()..]
            .split("\n\n[Event")
            .next()
            .unwrap(),
    );
    let (bs, bl) = (dir.path().join("s.book"), dir.path().join("l.book"));
    import(&san, &bs, &dir.path().join("s.report"), &["--no-games"]);
    import(&long, &bl, &dir.path().join("l.report"), &["--no-games"]);
    assert_eq!(dump(&bs), dump(&bl));
}

/// The game with the broken tag keeps all its tags in the store: `pgn --all` gives it back
/// with White as python-chess reads it (`"Socrates Expert"`) and its Event and Black.
#[test]
fn a_game_with_a_broken_tag_is_stored_with_all_its_tags() {
    let dir = tempfile::tempdir().unwrap();
    let pgn = write_text(dir.path(), "u.pgn", UNREADABLE);
    let book = dir.path().join("g.book");
    import(&pgn, &book, &dir.path().join("g.report"), &[]);
    let out = bookdb(["pgn", "--book", s(&book), "--all", "--moves", "c4"]).ok();
    assert!(
        out.contains("[Event \"c\"]")
            && out.contains("[White \"\\\"Socrates Expert\\\"\"]")
            && out.contains("[Black \"b3\"]"),
        "{out}"
    );
}

//! An input replaced or rewritten after the import fingerprinted it (issue 25, item 2): the
//! fingerprint recorded is always the one of the bytes counted. A file whose bytes read differ
//! from the bytes fingerprinted is refused (nothing is changed, the staging area goes), and
//! bytes appended after planning are not counted under the planned fingerprint.
//!
//! The change is made at an exact moment of the import by the `BOOKDB_TEST_HOOK` test hook
//! (`--features failpoints` builds): no race.
// Without the feature only the test that says to add it is built.
#![cfg_attr(not(feature = "failpoints"), allow(unused_imports, dead_code))]

mod common;

use std::path::Path;
use std::process::Output;

use common::{bin, bookdb, dump, s, sample_halves};

#[cfg(not(feature = "failpoints"))]
#[test]
fn changed_inputs_need_the_failpoints_feature() {
    panic!(
        "these tests change inputs through the BOOKDB_TEST_HOOK test hook that only builds with the feature `failpoints` have; run `cargo test --release --features failpoints --test changed_inputs`"
    );
}

/// `bookdb import <inputs> --book <book> --json` with the test hook `hook`.
fn import_with_hook(book: &Path, inputs: &[&Path], hook: &str) -> Output {
    let mut cmd = std::process::Command::new(bin());
    cmd.arg("import")
        .args(inputs)
        .args(["--book", s(book), "--json"])
        .env("BOOKDB_TEST_HOOK", hook);
    cmd.output().expect("run bookdb")
}

/// `import a b` where `b` is replaced by `c` (renamed over it) while `a` is read, after
/// planning fingerprinted `b`: the import is refused and changes nothing. Before, `c`'s games
/// were counted under `b`'s fingerprint: a later import of `b`'s bytes said "already
/// imported" (its games lost) and `c`'s were counted again.
#[cfg(feature = "failpoints")]
#[test]
fn replaced_input_is_refused_not_recorded_under_its_old_fingerprint() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = sample_halves(dir.path());
    let old_b = dir.path().join("old-b.pgn");
    std::fs::copy(&b, &old_b).unwrap();
    // Other games than b's: a's, with a game of b's appended.
    let c = dir.path().join("c.pgn");
    let mut text = std::fs::read(&a).unwrap();
    text.extend_from_slice(b"\n[Event \"c\"]\n\n1. c4 e5 1-0\n");
    std::fs::write(&c, &text).unwrap();
    let book = dir.path().join("b.book");
    // Input 2 (b) is opened after input 1 (a) was read: replace b then.
    let hook = format!("import-input-open@2 mv '{}' '{}'", s(&c), s(&b));
    let out = import_with_hook(&book, &[&a, &b], &hook);
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stdout)
    );
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("changed while this import ran"), "{err}");
    assert!(!book.exists(), "a refused first import leaves no book");
    assert!(
        !dir.path()
            .join("b.book.staging")
            .read_dir()
            .is_ok_and(|mut d| d.next().is_some()),
        "the refused import's staging area is gone"
    );
    // Run again: a and the new b (c's bytes) are counted, each under its own fingerprint.
    let j = bookdb(["import", s(&a), s(&b), "--book", s(&book), "--json"]).json();
    assert!(j["already_imported"].as_array().unwrap().is_empty(), "{j}");
    // b's old bytes were never counted: they are imported now, not "already imported".
    let j = bookdb(["import", s(&old_b), "--book", s(&book), "--json"]).json();
    assert!(j["already_imported"].as_array().unwrap().is_empty(), "{j}");
    assert!(j["games_imported"].as_u64().unwrap() > 0, "{j}");
    // The book is what the three inputs make, imported one by one.
    let reference = dir.path().join("ref.book");
    for p in [&a, &b, &old_b] {
        bookdb(["import", s(p), "--book", s(&reference)]).ok();
    }
    assert_eq!(dump(&book), dump(&reference));
}

/// Bytes appended to a file after the import fingerprinted it are not counted under that
/// fingerprint: the import reads the bytes it fingerprinted, and the grown file is a new input
/// for the next import.
#[cfg(feature = "failpoints")]
#[test]
fn bytes_appended_after_planning_are_not_counted_under_the_planned_fingerprint() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = sample_halves(dir.path());
    let extra = dir.path().join("extra.pgn");
    std::fs::write(&extra, "\n[Event \"appended\"]\n\n1. c4 e5 1-0\n").unwrap();
    let book = dir.path().join("b.book");
    let hook = format!("import-input-open@2 cat '{}' >> '{}'", s(&extra), s(&b));
    let out = import_with_hook(&book, &[&a, &b], &hook);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let j: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let planned = common::games_of(&common::sample_pgn()).len() as u64;
    assert_eq!(j["games_read"], planned, "{j}");
    // The grown file holds new bytes: the next import counts it as a new input.
    let j = bookdb(["import", s(&b), "--book", s(&book), "--json"]).json();
    assert!(j["already_imported"].as_array().unwrap().is_empty(), "{j}");
}

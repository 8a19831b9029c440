//! The command-line contract: pack vectors, probe/dump shapes, errors and exit codes, and
//! detection of damage.

mod common;
use common::*;

use std::path::Path;

const START: &str = "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1";

#[test]
fn pack_matches_design_vectors() {
    assert_eq!(
        bookdb(["pack", "--fen", START]).ok().trim(),
        "463b96181691fc9c 170 fe09eb6095a609ceb04eeec12fa609cb6095fe09e780"
    );
    assert_eq!(
        bookdb([
            "pack",
            "--fen",
            "rnbqkbnr/ppp1p1pp/8/3pPp2/8/8/PPPP1PPP/RNBQKBNR w KQkq f6 0 3"
        ])
        .ok()
        .trim(),
        "22a48b5a8e47ff78 173 fe09eb6095a609ceb10eee192fa621cb6095fe09e7e8"
    );
    let pinned = bookdb(["pack", "--fen", "8/8/8/KPp4r/8/8/8/4k3 w - c6 0 2"]).ok();
    assert!(pinned.starts_with("3d665cc1f5da1059 "), "{pinned}");
    let bad = bookdb(["pack", "--fen", "not a fen"]).fails_with(1);
    assert!(bad.contains("invalid FEN"));
}

fn sample_book(dir: &Path) -> std::path::PathBuf {
    let book = dir.join("s.book");
    let pgn = copy_in(&sample_pgn(), dir);
    Bookdb::import(&[&pgn], &book)
        .args(["--max-ply", "20", "--quiet"])
        .ok();
    book
}

#[test]
fn probe_and_dump_shapes() {
    let dir = tempfile::tempdir().unwrap();
    let book = sample_book(dir.path());
    let b = book.to_str().unwrap();
    let j = bookdb(["probe", "--book", b, "--json"]).json();
    assert_eq!(j["key"], "463b96181691fc9c");
    assert_eq!(
        j["fen"],
        "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq -"
    );
    let moves = j["moves"].as_array().unwrap();
    let total: u64 = moves.iter().map(|m| m["games"].as_u64().unwrap()).sum();
    assert_eq!(
        total, 200,
        "every sample game starts from the start position"
    );
    for m in moves {
        let sum: u64 = ["white", "draws", "black", "unknown"]
            .iter()
            .map(|k| m[k].as_u64().unwrap())
            .sum();
        assert_eq!(sum, m["games"].as_u64().unwrap());
        assert!(m["uci"].as_str().unwrap().len() >= 4);
    }
    // --moves in SAN and UCI reach the same position.
    let a = bookdb(["probe", "--book", b, "--moves", "e4 e5 Nf3", "--json"]).json();
    let c = bookdb(["probe", "--book", b, "--moves", "e2e4 e7e5 g1f3", "--json"]).json();
    assert_eq!(a, c);
    assert_eq!(
        a["fen"],
        "rnbqkbnr/pppp1ppp/8/4p3/4P3/5N2/PPPP1PPP/RNBQKB1R b KQkq -"
    );
    let table = bookdb(["probe", "--book", b, "--moves", "1. e4 e5"]).ok();
    assert!(table.contains("Nf3"), "{table}");
    // dump: one JSON object per line, ascending keys, the documented fields.
    let d = dump(&book);
    let mut last = String::new();
    let mut n = 0;
    for line in d.lines() {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        let k = v["key"].as_str().unwrap().to_string();
        assert_eq!(k.len(), 16);
        assert!(k > last, "keys ascend");
        assert_eq!(v["fen"].as_str().unwrap().split(' ').count(), 4);
        last = k;
        n += 1;
    }
    let st = bookdb(["stats", "--book", b, "--json"]).json();
    assert_eq!(st["positions"].as_u64().unwrap(), n);
    assert_eq!(st["games"].as_u64().unwrap(), 200);
    assert!(st["bytes_per_pair"].as_f64().unwrap() > 0.0);
    let bad = bookdb(["probe", "--book", b, "--moves", "e4 e4"]).fails_with(1);
    assert!(bad.contains("not legal"));
}

#[test]
fn not_a_book_and_missing_book() {
    let dir = tempfile::tempdir().unwrap();
    let html = dir.path().join("page.html");
    std::fs::write(&html, "<html><body>not a book</body></html>").unwrap();
    for cmd in ["probe", "stats", "verify", "dump"] {
        let err = bookdb([cmd, "--book", s(&html)]).fails_with(4);
        assert!(err.contains("not a bookdb book"));
    }
    // A redb file that is not a book.
    let other = dir.path().join("other.redb");
    {
        let db = redb::Database::create(&other).unwrap();
        let t = db.begin_write().unwrap();
        {
            let def: redb::TableDefinition<u64, u64> = redb::TableDefinition::new("x");
            t.open_table(def).unwrap().insert(1, 2).unwrap();
        }
        t.commit().unwrap();
    }
    bookdb(["stats", "--book", s(&other)]).fails_with(4);
    let missing = bookdb(["stats", "--book", s(&dir.path().join("nope.book"))]).fails_with(1);
    assert!(missing.contains("not found"));
}

#[test]
fn unknown_version_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let book = sample_book(dir.path());
    set_format_version(&book, 99u32);
    let err = bookdb(["probe", "--book", s(&book)]).fails_with(4);
    assert!(
        err.contains("version 99") && err.contains("migrate"),
        "{err}"
    );
}

/// Flips one byte inside a stored block: verify must fail and reads must error, never answer
/// with wrong statistics.
#[test]
fn flipped_byte_in_a_block_is_caught() {
    let dir = tempfile::tempdir().unwrap();
    let book = sample_book(dir.path());
    let before = dump(&book);
    let def: redb::TableDefinition<u64, &[u8]> = redb::TableDefinition::new("blocks");
    let keys: Vec<u64> = {
        use redb::{ReadableDatabase, ReadableTable};
        let db = redb::ReadOnlyDatabase::open(&book).unwrap();
        let t = db.begin_read().unwrap().open_table(def).unwrap();
        t.iter().unwrap().map(|r| r.unwrap().0.value()).collect()
    };
    assert!(!keys.is_empty());
    for (n, &k) in keys.iter().enumerate().take(6) {
        let copy = dir.path().join(format!("flip{n}.book"));
        std::fs::copy(&book, &copy).unwrap();
        {
            use redb::ReadableTable;
            let db = redb::Database::open(&copy).unwrap();
            let t = db.begin_write().unwrap();
            {
                let mut table = t.open_table(def).unwrap();
                let mut v = table.get(k).unwrap().unwrap().value().to_vec();
                let at = (n * 97 + 30) % v.len();
                v[at] ^= 0x5a;
                table.insert(k, v.as_slice()).unwrap();
            }
            t.commit().unwrap();
        }
        let out = bookdb(["verify", "--book", s(&copy)]).output();
        assert_eq!(
            out.status.code(),
            Some(3),
            "flip in block {k:016x} not reported"
        );
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(
            err.contains(&format!("{k:016x}")),
            "report names the block: {err}"
        );
        let d = bookdb(["dump", "--book", s(&copy)]).output();
        assert!(!d.status.success(), "dump of a damaged book must fail");
        assert!(
            before.starts_with(&String::from_utf8_lossy(&d.stdout).to_string()),
            "no wrong lines before the error"
        );
    }
    verify(&book);
}

#[test]
fn migrate_reports_current_version() {
    let dir = tempfile::tempdir().unwrap();
    let book = sample_book(dir.path());
    let out = bookdb(["migrate", "--book", s(&book)]).ok();
    assert!(out.contains("already at format version 11"), "{out}");
}

/// A version-1 book (format 1 had no `games` table) is refused by every command but
/// `migrate`, which rewrites it as the current version with the same content; migrating again is a no-op.
#[test]
fn migrate_converts_a_version_1_book() {
    let dir = tempfile::tempdir().unwrap();
    let book = sample_book(dir.path());
    let p = book.to_str().unwrap();
    let before = dump(&book);
    set_format_version(&book, 1u32);
    let err = bookdb(["probe", "--book", p]).fails_with(4);
    assert!(err.contains("migrate"));
    let msg = bookdb(["migrate", "--book", p]).ok();
    assert!(
        msg.contains("migrated from format version 1 to 11"),
        "{msg}"
    );
    assert_eq!(dump(&book), before);
    verify(&book);
    let again = bookdb(["migrate", "--book", p]).ok();
    assert!(again.contains("already at format version 11"), "{again}");
}

/// A book file with one damaged redb page (found by fuzzing): every command reports corruption
/// and nothing panics.
#[test]
fn damaged_redb_page_is_an_error_not_a_crash() {
    let src = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/regressions/book_file-1");
    let dir = tempfile::tempdir().unwrap();
    let book = copy_in(&src, dir.path());
    for cmd in ["stats", "verify", "dump", "probe"] {
        let err = bookdb([cmd, "--book", s(&book)]).fails_with(3);
        assert!(
            !err.contains("panicked") && !err.contains("internal error (please"),
            "{cmd}: {err}"
        );
    }
}

/// `verify --json` of `book` with `extra` arguments: its exit code and its report without the
/// fields that say how it ran (`threads`, `memory_mib`).
fn verify_report(book: &Path, extra: &[&str]) -> (Option<i32>, serde_json::Value) {
    let out = bookdb(["verify", "--book", s(book), "--json"])
        .args(extra)
        .output();
    let mut j: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap_or_else(|e| {
        panic!(
            "verify --json: {e}: {}",
            String::from_utf8_lossy(&out.stderr)
        )
    });
    let o = j.as_object_mut().unwrap();
    assert!(
        o.remove("threads").is_some() && o.remove("memory_mib").is_some(),
        "{j}"
    );
    (out.status.code(), j)
}

/// `verify --memory` sizes what verify holds, never what it checks: the smallest budget it
/// takes, on one thread or all, gives the default's report on a sound book, a live book with
/// segments (merged view recounted) and a damaged copy (the same problems).
#[test]
fn verify_with_little_memory_reports_the_same() {
    let dir = tempfile::tempdir().unwrap();
    let sample = sample_book(dir.path());
    let live_dir = dir.path().join("live");
    std::fs::create_dir(&live_dir).unwrap();
    let live = live_dir.join("l.book");
    book_with_segments(&live, 120, 2, 40);
    let damaged = dir.path().join("damaged.book");
    std::fs::copy(&sample, &damaged).unwrap();
    {
        use redb::ReadableTable;
        let def: redb::TableDefinition<u64, &[u8]> = redb::TableDefinition::new("blocks");
        let db = redb::Database::open(&damaged).unwrap();
        let t = db.begin_write().unwrap();
        {
            let mut table = t.open_table(def).unwrap();
            let (k, mut v) = {
                let first = table.iter().unwrap().nth(1).unwrap().unwrap();
                (first.0.value(), first.1.value().to_vec())
            };
            let at = v.len() / 2;
            v[at] ^= 0x5a;
            table.insert(k, v.as_slice()).unwrap();
        }
        t.commit().unwrap();
    }
    for (book, code) in [(&sample, 0), (&live, 0), (&damaged, 3)] {
        let (c, default) = verify_report(book, &[]);
        assert_eq!(c, Some(code), "{}: {default}", book.display());
        if book == &live {
            assert_eq!(default["merged_view_checked"], true, "{default}");
        }
        for extra in [&["--memory", "32"][..], &["--memory", "32", "--jobs", "1"]] {
            assert_eq!(
                verify_report(book, extra),
                (Some(code), default.clone()),
                "{} {extra:?}",
                book.display()
            );
        }
    }
    let j = bookdb(["verify", "--book", s(&sample), "--json", "--memory", "32"]).json();
    assert_eq!(j["memory_mib"], 32, "{j}");
    assert_eq!(j["warnings"], serde_json::json!([]), "{j}");
}

/// A `--memory` below verify's least is refused before anything is read, as a usage error of
/// the library (exit code 1, README), with what to give instead.
#[test]
fn verify_refuses_too_little_memory() {
    let dir = tempfile::tempdir().unwrap();
    let book = sample_book(dir.path());
    for mib in ["31", "0"] {
        let err = bookdb(["verify", "--book", s(&book), "--memory", mib]).fails_with(1);
        assert!(
            err.contains(&format!("--memory {mib} MiB is too little for verify"))
                && err.contains("32 MiB or more"),
            "{err}"
        );
    }
    let err = bookdb(["verify", "--book", s(&book), "--memory", "31", "--json"]).fails_with(1);
    assert!(err.contains("\"kind\":\"usage\""), "{err}");
    // Not a number is clap's (exit code 2).
    bookdb(["verify", "--book", s(&book), "--memory", "lots"]).fails_with(2);
}

//! A writer that cannot read the book must not delete it. Restores gone wrong: another book's
//! base put in place of this one's while the manifest still lists this book's segments, the
//! base missing beside its manifest and segments, the manifest lost beside its segments, or an
//! older manifest brought back beside newer segments. Every writer refuses (exit 3, an error
//! naming the files and what to do) and changes nothing; readers report the same corruption
//! instead of answering from a mixture of two books, and `verify` fails where readers answer
//! from the older state (docs/RELIABILITY.md "The book's namespace").

mod common;

use common::{bookdb, s, sample_halves};
use std::path::{Path, PathBuf};

fn stderr(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// The book's files (base, manifest, segments; not the lock) and their bytes.
fn book_files(dir: &Path, name: &str) -> Vec<(String, Vec<u8>)> {
    let mut v: Vec<(String, Vec<u8>)> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .filter_map(|e| {
            let n = e.file_name().to_string_lossy().into_owned();
            (n == name || (n.starts_with(&format!("{name}.")) && !n.ends_with(".lock")))
                .then(|| (n, std::fs::read(e.path()).unwrap()))
        })
        .collect();
    v.sort();
    v
}

struct Books {
    _tmp: tempfile::TempDir,
    dir: PathBuf,
    book: PathBuf,
    first: PathBuf,
    second: PathBuf,
}

/// `b.book`: a base (the first half) and two segments (the second half, then the first
/// again with --force); `o.book` another book of the second half alone, compacted once more
/// than it needs (its base has another generation).
fn books() -> Books {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().to_path_buf();
    let (first, second) = sample_halves(&dir);
    let book = dir.join("b.book");
    bookdb(["import", s(&first), "--book", s(&book)]).ok();
    bookdb(["import", s(&second), "--book", s(&book)]).ok();
    bookdb(["import", s(&first), "--force", "--book", s(&book)]).ok();
    assert!(dir.join("b.book.seg-000000000003").exists());
    // Publishing markers are gone once their segments are published.
    assert!(!dir.join("b.book.publishing").exists());
    Books {
        _tmp: tmp,
        dir,
        book,
        first,
        second,
    }
}

/// Every writer and reader refuses the book as it is, with exit 3, and nothing changes.
fn assert_refused_unchanged(b: &Books, must_say: &str) {
    let before = book_files(&b.dir, "b.book");
    let writers: Vec<Vec<&str>> = vec![
        vec!["import", s(&b.second), "--force", "--book", s(&b.book)],
        vec!["compact", "--book", s(&b.book)],
        vec!["dump", "--book", s(&b.book)],
    ];
    for args in writers {
        let o = bookdb(&args).output();
        assert_eq!(o.status.code(), Some(3), "{args:?}: {}", stderr(&o));
        assert!(stderr(&o).contains(must_say), "{args:?}: {}", stderr(&o));
        assert_eq!(
            book_files(&b.dir, "b.book"),
            before,
            "{args:?} changed the book"
        );
    }
}

#[test]
fn another_books_base_of_the_same_generation_is_refused_and_nothing_deleted() {
    let b = books();
    let other = b.dir.join("o.book");
    bookdb(["import", s(&b.second), "--book", s(&other)]).ok();
    let good = std::fs::read(&b.book).unwrap();
    std::fs::copy(&other, &b.book).unwrap();
    assert_refused_unchanged(&b, "does not belong with the delta segments");
    // Putting the right base back gives the book back whole.
    std::fs::write(&b.book, good).unwrap();
    bookdb(["verify", "--book", s(&b.book)]).ok();
    let _ = &b.first;
}

#[test]
fn another_books_base_of_another_generation_is_refused_and_nothing_deleted() {
    let b = books();
    let other = b.dir.join("o.book");
    bookdb(["import", s(&b.second), "--book", s(&other)]).ok();
    bookdb(["compact", "--book", s(&other)]).ok();
    // Generation 2: the manifest {generation 3, base 1, segments 2 3} names another base.
    std::fs::copy(&other, &b.book).unwrap();
    assert_refused_unchanged(&b, "b.book.live");
}

#[test]
fn a_missing_base_is_refused_and_its_manifest_and_segments_kept() {
    let b = books();
    let good = std::fs::read(&b.book).unwrap();
    std::fs::remove_file(&b.book).unwrap();
    let before = book_files(&b.dir, "b.book");
    for args in [
        vec!["import", s(&b.second), "--book", s(&b.book)],
        vec!["compact", "--book", s(&b.book)],
    ] {
        let o = bookdb(&args).output();
        assert_eq!(o.status.code(), Some(3), "{args:?}: {}", stderr(&o));
        let err = stderr(&o);
        assert!(
            err.contains("base file is missing") && err.contains("b.book.seg-000000000002"),
            "{args:?}: {err}"
        );
        assert_eq!(
            book_files(&b.dir, "b.book"),
            before,
            "{args:?} changed the book"
        );
    }
    // Readers report the same corruption, not "book not found".
    for args in [
        vec!["verify", "--book", s(&b.book)],
        vec!["probe", "--book", s(&b.book)],
        vec!["dump", "--book", s(&b.book)],
        vec!["stats", "--book", s(&b.book)],
    ] {
        let o = bookdb(&args).output();
        assert_eq!(o.status.code(), Some(3), "{args:?}: {}", stderr(&o));
        assert!(
            stderr(&o).contains("base file is missing"),
            "{args:?}: {}",
            stderr(&o)
        );
    }
    std::fs::write(&b.book, good).unwrap();
    bookdb(["verify", "--book", s(&b.book)]).ok();
}

/// `stats --json`'s games.
fn games(book: &Path) -> u64 {
    let out = bookdb(["stats", "--json", "--book", s(book)]).ok();
    let v: serde_json::Value = serde_json::from_str(&out).unwrap();
    v["games"].as_u64().unwrap()
}

/// Writers refuse the book as it is (exit 3, naming `segments` and a remedy) and change
/// nothing; `verify` fails the same way.
fn assert_unknown_segments_refused(b: &Books, segments: &[&str]) {
    let before = book_files(&b.dir, "b.book");
    for args in [
        vec!["import", s(&b.second), "--force", "--book", s(&b.book)],
        vec!["compact", "--book", s(&b.book)],
        vec!["verify", "--book", s(&b.book)],
    ] {
        let o = bookdb(&args).output();
        let err = stderr(&o);
        assert_eq!(o.status.code(), Some(3), "{args:?}: {err}");
        for seg in segments {
            assert!(err.contains(seg), "{args:?} does not name {seg}: {err}");
        }
        assert!(
            err.contains("newer than the book's state") && err.contains("one backup together"),
            "{args:?}: {err}"
        );
        assert_eq!(
            book_files(&b.dir, "b.book"),
            before,
            "{args:?} changed the book"
        );
    }
}

#[test]
fn a_lost_manifest_beside_its_segments_is_refused_and_nothing_deleted() {
    let b = books();
    let whole = games(&b.book);
    let manifest = b.dir.join("b.book.live");
    let kept = std::fs::read(&manifest).unwrap();
    std::fs::remove_file(&manifest).unwrap();
    // Readers answer from the base alone (they cannot tell a writer's unpublished segment
    // from a restore's), so verify must say the book is not whole.
    assert!(games(&b.book) < whole);
    assert_unknown_segments_refused(&b, &["b.book.seg-000000000002", "b.book.seg-000000000003"]);
    // The manifest back: the book is whole again and takes imports.
    std::fs::write(&manifest, kept).unwrap();
    bookdb(["verify", "--book", s(&b.book)]).ok();
    assert_eq!(games(&b.book), whole);
    bookdb(["import", s(&b.second), "--force", "--book", s(&b.book)]).ok();
    let _ = &b.first;
}

#[test]
fn an_older_manifest_beside_a_newer_segment_is_refused_and_the_segment_kept() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().to_path_buf();
    let (first, second) = sample_halves(&dir);
    // The second half in two: its games reach the book in two imports.
    let text = std::fs::read_to_string(&second).unwrap();
    let starts: Vec<usize> = text.match_indices("[Event ").map(|(i, _)| i).collect();
    let (early, late) = (dir.join("early.pgn"), dir.join("late.pgn"));
    std::fs::write(&early, &text[..starts[starts.len() / 2]]).unwrap();
    std::fs::write(&late, &text[starts[starts.len() / 2]..]).unwrap();
    let book = dir.join("b.book");
    bookdb(["import", s(&first), "--book", s(&book)]).ok();
    bookdb(["import", s(&early), "--book", s(&book)]).ok();
    // A backup of the manifest at generation 2, then one more import (segment 3).
    let older = std::fs::read(dir.join("b.book.live")).unwrap();
    bookdb(["import", s(&late), "--book", s(&book)]).ok();
    let whole = games(&book);
    let newest = std::fs::read(dir.join("b.book.seg-000000000003")).unwrap();
    std::fs::write(dir.join("b.book.live"), &older).unwrap();
    let b = Books {
        _tmp: tmp,
        dir: dir.clone(),
        book: book.clone(),
        first,
        second,
    };
    // One segment newer than the manifest, as a writer killed before its manifest leaves one:
    // but no writer was publishing it, so nothing may remove it.
    assert_unknown_segments_refused(&b, &["b.book.seg-000000000003"]);
    assert_eq!(
        std::fs::read(dir.join("b.book.seg-000000000003")).unwrap(),
        newest
    );
    // Moved away, as the error says, the book is the manifest's state and takes imports.
    std::fs::rename(
        dir.join("b.book.seg-000000000003"),
        dir.join("kept.seg-000000000003"),
    )
    .unwrap();
    bookdb(["verify", "--book", s(&book)]).ok();
    assert!(games(&book) < whole);
    bookdb(["import", s(&late), "--book", s(&book)]).ok();
    assert_eq!(games(&book), whole);
}

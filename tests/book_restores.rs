//! A writer that cannot read the book must not delete it. Restores gone wrong: another book's
//! base put in place of this one's while the manifest still lists this book's segments, or
//! the base missing beside its manifest and segments. Every writer refuses (exit 3, an error
//! naming the files and what to do) and changes nothing; readers report the same corruption
//! instead of answering from a mixture of two books (docs/RELIABILITY.md "The book's
//! namespace").

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
    std::fs::write(&b.book, good).unwrap();
    bookdb(["verify", "--book", s(&b.book)]).ok();
}

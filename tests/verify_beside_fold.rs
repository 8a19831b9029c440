//! `verify` beside a writer that folds (issue 25, item 10): redb's integrity check runs on a
//! copy of each file verify opened. It used to copy by path, and after a fold or a compaction
//! the path names another file or none: verify failed with a hint about TMPDIR. The copy now
//! comes from the file verify opened.

mod common;

use common::{book_with_segments, bookdb, s};

#[test]
fn redb_check_copies_the_files_verify_opened_even_after_a_fold() {
    let tmp = tempfile::tempdir().unwrap();
    let book = tmp.path().join("v.book");
    book_with_segments(&book, 100, 3, 10);
    // verify's view of the book: a base and 3 segments, opened.
    let opened = bookdb::store::Book::open(&book, bookdb::chess_codec()).unwrap();
    assert_eq!(opened.files().len(), 4);
    // A writer folds everything into a new base: the segments' names are gone, the base's
    // name holds another file.
    bookdb(["compact", "--quiet", "--book", s(&book)]).ok();
    for f in opened.files() {
        assert!(!f.path().exists() || f.generation() == 1, "{:?}", f.path());
    }
    let scratch = tempfile::tempdir().unwrap();
    for f in opened.files() {
        let r = f.redb_integrity(scratch.path());
        match r {
            Ok(None) => {}
            Ok(Some(what)) => panic!("{:?}: redb found damage: {what}", f.path()),
            Err(e) => {
                let e = e.to_string();
                assert!(!e.contains("TMPDIR"), "a misleading hint: {e}");
                panic!("{:?}: {e}", f.path());
            }
        }
    }
    // Nothing left in the scratch directory.
    assert_eq!(std::fs::read_dir(scratch.path()).unwrap().count(), 0);
    // And verify of the book as it is now passes.
    bookdb(["verify", "--book", s(&book)]).ok();
}

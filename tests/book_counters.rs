//! Counters against content: a book file whose `blocks` table is gone (a damaged tree, a
//! table dropped) while its counters say it holds entries is corruption (exit 3) at open, for
//! every reader and before any rewrite: `dump` must not print nothing and succeed, and
//! `compact` must not turn it into an empty book that verifies (docs/RELIABILITY.md "The
//! book's namespace").

mod common;

use common::{bookdb, s, sample_pgn};
use std::path::Path;

const BLOCKS: redb::TableDefinition<u64, &[u8]> = redb::TableDefinition::new("blocks");

fn stderr(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

fn drop_blocks(book: &Path, keep_empty: bool) {
    let db = redb::Database::open(book).unwrap();
    let txn = db.begin_write().unwrap();
    assert!(txn.delete_table(BLOCKS).unwrap(), "no blocks table to drop");
    if keep_empty {
        txn.open_table(BLOCKS).unwrap();
    }
    txn.commit().unwrap();
}

#[test]
fn a_book_whose_blocks_table_is_gone_is_corrupt_for_every_reader_and_writer() {
    for keep_empty in [false, true] {
        let tmp = tempfile::tempdir().unwrap();
        let book = tmp.path().join("b.book");
        bookdb(["import", s(&sample_pgn()), "--book", s(&book)]).ok();
        drop_blocks(&book, keep_empty);
        let bytes = std::fs::read(&book).unwrap();
        let out = tmp.path().join("out.bin");
        for args in [
            vec!["dump", "--book", s(&book)],
            vec!["stats", "--book", s(&book)],
            vec!["compact", "--book", s(&book)],
            vec![
                "export",
                "--book",
                s(&book),
                "--format",
                "polyglot",
                "--out",
                s(&out),
            ],
            vec!["verify", "--book", s(&book)],
        ] {
            let o = bookdb(&args).output();
            assert_eq!(
                o.status.code(),
                Some(3),
                "{args:?} (empty table: {keep_empty}): {}",
                stderr(&o)
            );
            assert!(
                stderr(&o).contains("blocks table is"),
                "{args:?}: {}",
                stderr(&o)
            );
            assert_eq!(
                std::fs::read(&book).unwrap(),
                bytes,
                "{args:?} rewrote the book"
            );
        }
        assert!(!out.exists());
        // The merge of such a book into another refuses too, before writing anything.
        let merged = tmp.path().join("m.book");
        let o = bookdb(["merge", s(&book), "--out", s(&merged)]).output();
        assert_eq!(o.status.code(), Some(3), "merge: {}", stderr(&o));
        assert!(!merged.exists());
    }
}

//! Book files: arbitrary bytes written to a file, `Book::open`ed, then read every way
//! (`iter`, `iter_for_rewrite_coded`, `get`, `lookup`, `for_each_block` + `decode_block`,
//! `block_count`, the `games` table).
//!
//! Checks: every failure is an `Err`, never a panic (corrupt redb pages, meta tables, models,
//! dictionaries or blocks). Keep inputs small (`-max_len`): redb is slow on large garbage.
//!
//! redb 4.6 itself panics on some corrupt pages (e.g. `unreachable!()` on an unknown page
//! type, see fuzz/regressions/book_file-1). With `BOOKDB_FUZZ_IGNORE_REDB_PANICS=1` panics
//! raised inside redb's own source are swallowed, so the fuzzer can get past them to
//! bookdb's handling of corrupt meta entries and blocks; any other panic still aborts.
#![no_main]

use std::panic::{self, AssertUnwindSafe};
use std::path::PathBuf;
use std::sync::OnceLock;

use bookdb::store::Book;
use bookdb_fuzz::{ignore_redb_panics, samples};
use libfuzzer_sys::fuzz_target;

fn path() -> &'static PathBuf {
    static P: OnceLock<PathBuf> = OnceLock::new();
    P.get_or_init(|| {
        std::env::temp_dir().join(format!("bookdb-fuzz-book-{}.redb", std::process::id()))
    })
}

fn exercise(data: &[u8]) {
    let path = path();
    std::fs::write(path, data).expect("writing the temporary book");
    let Ok(book) = Book::open(path, bookdb::chess_codec()) else {
        return;
    };
    let _ = book.block_count();
    let _ = book.game_fingerprint_count();
    if let Ok(index) = book.game_index() {
        let _ = index.contains(0xd4bd_cd77_4182_4bb2_3d7a_d56a_308d_f162);
    }
    if let Ok(iter) = book.iter_for_rewrite_coded(book.compression().as_ref()) {
        for e in iter.take(64) {
            if e.is_err() {
                break;
            }
        }
    }
    if let Ok(iter) = book.iter() {
        for item in iter.take(100_000) {
            if item.is_err() {
                break;
            }
        }
    }
    for s in samples().iter().take(4) {
        let _ = book.get(s.key);
        let _ = book.lookup(&s.packed);
    }
    let _ = book.get(0);
    let _ = book.get(u64::MAX);
    let _ = book.for_each_block(|k, v| {
        let _ = book.decode_block(k, v);
        Ok(())
    });
}

fuzz_target!(|data: &[u8]| {
    if ignore_redb_panics() {
        // Only redb-internal panics get here (the hook aborts on all others).
        let _ = panic::catch_unwind(AssertUnwindSafe(|| exercise(data)));
    } else {
        exercise(data);
    }
});

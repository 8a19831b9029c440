//! A live book's files (docs/FORMAT.md §10): a base, up to three delta segments and a manifest,
//! all taken from the input, written to a temporary directory, then opened as a [`Book`] and
//! as a [`LiveBook`] and read every way (`iter`, `get`, `lookup`, `imports`, `meta`,
//! `changed`/`refresh` after the files change under the reader).
//!
//! Input layout (a container; `seeds/live_book/` holds real live books packed this way):
//! - byte 0: flags. Bits 0–1: the number of segment files (0–3). Bit 2: patch the manifest's
//!   `crc32` line to match its body, so the fuzzer gets past the checksum into the parser and
//!   into the generation checks. Bit 3: after opening, replace the manifest by the first
//!   segment's generation list reversed (a writer publishing under the reader) and refresh.
//! - then, for the manifest, the base and each segment: a u32 little-endian length (cut to what
//!   is left) and that many bytes. Each segment's bytes are preceded by a u16 little-endian
//!   generation, which names its file `BOOK.seg-<generation>`.
//!
//! Checks: every failure is an `Err`, never a panic. `BOOKDB_FUZZ_IGNORE_REDB_PANICS=1`
//! swallows panics raised inside redb's own source (as for `book_file`); any other panic aborts.
#![no_main]

use std::panic::{self, AssertUnwindSafe};
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use bookdb::store::book::Manifest;
use bookdb::store::{Book, LiveBook};
use bookdb_fuzz::{ignore_redb_panics, samples};
use libfuzzer_sys::fuzz_target;

fn dir() -> &'static PathBuf {
    static P: OnceLock<PathBuf> = OnceLock::new();
    P.get_or_init(|| {
        let d = std::env::temp_dir().join(format!("bookdb-fuzz-live-{}", std::process::id()));
        std::fs::create_dir_all(&d).expect("creating the temporary directory");
        d
    })
}

/// Takes a u32-length-prefixed part off the front of `data`.
fn part<'a>(data: &mut &'a [u8]) -> &'a [u8] {
    if data.len() < 4 {
        let all = *data;
        *data = &[];
        return all;
    }
    let n = u32::from_le_bytes([data[0], data[1], data[2], data[3]]) as usize;
    let rest = &data[4..];
    let n = n.min(rest.len());
    let (p, r) = rest.split_at(n);
    *data = r;
    p
}

fn u16_of(data: &mut &[u8]) -> u16 {
    if data.len() < 2 {
        *data = &[];
        return 0;
    }
    let v = u16::from_le_bytes([data[0], data[1]]);
    *data = &data[2..];
    v
}

/// Replaces the last line of a manifest-like text by a `crc32` line matching the rest.
fn patch_crc(m: &[u8]) -> Vec<u8> {
    let body_end = match m.strip_suffix(b"\n") {
        Some(t) => t.iter().rposition(|&c| c == b'\n').map_or(0, |i| i + 1),
        None => m.len(),
    };
    let body = &m[..body_end];
    let mut out = body.to_vec();
    out.extend_from_slice(format!("crc32 {:08x}\n", crc32fast::hash(body)).as_bytes());
    out
}

fn read_all(book: &Book) {
    let _ = book.meta();
    let _ = book.generation();
    let _ = book.files().len();
    let _ = book.imports();
    let _ = book.game_fingerprint_count();
    if let Ok(iter) = book.iter() {
        for item in iter.take(20_000) {
            if item.is_err() {
                break;
            }
        }
    }
    for s in samples().iter().take(6) {
        let _ = book.get(s.key);
        let _ = book.lookup(&s.packed);
    }
    let _ = book.get(0);
    let _ = book.get(u64::MAX);
}

fn exercise(data: &[u8]) {
    let Some((&flags, mut rest)) = data.split_first() else {
        return;
    };
    let dir = dir();
    // A clean directory: the files of the previous input must not leak into this one.
    if let Ok(rd) = std::fs::read_dir(dir) {
        for e in rd.flatten() {
            let _ = std::fs::remove_file(e.path());
        }
    }
    let book_path = dir.join("b");
    let manifest = part(&mut rest);
    let manifest = if flags & 4 != 0 {
        patch_crc(manifest)
    } else {
        manifest.to_vec()
    };
    let base = part(&mut rest);
    let mut gens = Vec::new();
    let write = |p: &Path, b: &[u8]| std::fs::write(p, b).expect("writing a temporary file");
    write(&book_path, base);
    if !manifest.is_empty() {
        write(&dir.join("b.live"), &manifest);
    }
    for _ in 0..(flags & 3) {
        let g = u64::from(u16_of(&mut rest));
        let seg = part(&mut rest);
        write(&dir.join(format!("b.seg-{g:012}")), seg);
        gens.push(g);
    }
    let Ok(book) = Book::open(&book_path, bookdb::chess_codec()) else {
        return;
    };
    read_all(&book);
    let Ok(live) = LiveBook::open(&book_path, bookdb::chess_codec()) else {
        return;
    };
    if flags & 8 != 0 {
        // A writer publishes another state under the reader: a manifest naming the segments
        // in another order (or fewer), over the same base.
        gens.reverse();
        let m = Manifest {
            generation: gens.iter().copied().max().unwrap_or(0) + 1,
            base: book.files().first().map_or(0, |f| f.generation()),
            segments: gens.iter().copied().skip(1).collect(),
        };
        write(&dir.join("b.live"), &m.encode());
    } else {
        // The reader's files go away (a fold removed them; Unix keeps open ones readable).
        for g in &gens {
            let _ = std::fs::remove_file(dir.join(format!("b.seg-{g:012}")));
        }
    }
    let _ = book.changed();
    if let Ok(Some(next)) = book.refresh() {
        read_all(&next);
    }
    if live.refresh().is_ok() {
        read_all(&live.snapshot());
    }
    read_all(&book);
}

fuzz_target!(|data: &[u8]| {
    if ignore_redb_panics() {
        // Only redb-internal panics get here (the hook aborts on all others).
        let _ = panic::catch_unwind(AssertUnwindSafe(|| exercise(data)));
    } else {
        exercise(data);
    }
});

//! The disk an import needs: the free space of the book's file system, the staging projected
//! from the runs spilled so far, and the checks that stop an import with a clear error before
//! the disk fills up (docs/FORMAT.md §8, "Disk").
//!
//! An import needs, at its peak, its staged runs plus the file it writes (a new segment, or a
//! new base while the old one still exists). Runs are coded as the book codes its blocks, so the
//! runs of an import take about the bytes the same entries take in the book: the new file
//! needs about [`BOOK_PER_STAGED_BYTE`] of the staged bytes, plus the old base when the base
//! is rewritten. The checks are made at every checkpoint of the read phase (projected from the
//! share of the input read so far: the first one comes after the first spill, seconds into an
//! import) and again before the book is written, with the exact staged bytes.

use std::path::Path;

use crate::error::Result;
use crate::store::error::Error as StoreError;

/// Bytes of the file an import writes per byte of its runs, with a margin: 0.95 measured on
/// 1M generated games at `--max-ply 50` (docs/PERFORMANCE.md, "Staging").
const BOOK_PER_STAGED_BYTE: f64 = 1.1;
/// Free space kept beyond an estimate of `need` bytes (redb's growth steps, the staging logs):
/// 1 MiB and 1/32 of it, so that small imports on small file systems are not refused.
fn margin(need: u64) -> u64 {
    (1 << 20) + need / 32
}
/// The read phase projects only once this share of the input (in raw bytes) is read.
const MIN_SHARE: f64 = 0.002;

pub(super) use crate::store::files::free_bytes;

/// What the book adds to an import's needs: the bytes of the file a rewrite keeps until it is
/// replaced (0 for an empty book or an import that goes to a delta segment).
#[derive(Clone, Copy, Debug, Default)]
pub(super) struct BookNeed {
    pub(super) base_bytes: u64,
}

/// `n` bytes in the unit that shows them best (KiB, MiB or GiB; two significant decimals).
fn amount(n: u64) -> String {
    let x = n as f64;
    match n {
        0..1024 => format!("{n} bytes"),
        1024..0x10_0000 => format!("{:.1} KiB", x / 1024.0),
        0x10_0000..0x4000_0000 => format!("{:.1} MiB", x / f64::from(1u32 << 20)),
        _ => format!("{:.2} GiB", x / f64::from(1u32 << 30)),
    }
}

/// Refuses with ENOSPC, saying what is needed and what is free, if `need` bytes (plus the
/// margin) are more than the free space of `dir`'s file system; `detail` says what they are for.
fn check_free(dir: &Path, need: u64, detail: impl FnOnce() -> String) -> Result<()> {
    let Some(free) = free_bytes(dir) else {
        return Ok(());
    };
    let need = need + margin(need);
    if need <= free {
        return Ok(());
    }
    let e = std::io::Error::from_raw_os_error(libc::ENOSPC);
    Err(StoreError::io(
        format!(
            "not enough disk for this import on {}: it needs about {} more, {} are free ({}); \
             free space, or import fewer games at a time, then run the same import again: it \
             resumes from its last checkpoint",
            dir.display(),
            amount(need),
            amount(free),
            detail()
        ),
        e,
    )
    .into())
}

/// At a checkpoint of the read phase: `staged` bytes of runs for `read` of `total` raw input
/// bytes (`total` 0 when unknown, as for stdin: nothing is projected then).
pub(super) fn check_read(
    dir: &Path,
    staged: u64,
    read: u64,
    total: u64,
    book: BookNeed,
) -> Result<()> {
    if total == 0 || read == 0 || (read as f64) < MIN_SHARE * total as f64 {
        return Ok(());
    }
    let projected = (staged as f64 * total as f64 / read as f64) as u64;
    let more_runs = projected.saturating_sub(staged);
    let file = (projected as f64 * BOOK_PER_STAGED_BYTE) as u64 + book.base_bytes;
    check_free(dir, more_runs + file, || {
        format!(
            "{} of runs staged for {:.1}% of the input, about {} to come; about {} for the book \
             file it writes",
            amount(staged),
            100.0 * read as f64 / total as f64,
            amount(more_runs),
            amount(file)
        )
    })
}

/// Before the book is written: `staged` bytes of runs, all on disk.
pub(super) fn check_apply(dir: &Path, staged: u64, book: BookNeed) -> Result<()> {
    let file = (staged as f64 * BOOK_PER_STAGED_BYTE) as u64 + book.base_bytes;
    check_free(dir, file, || {
        format!(
            "{} of runs staged; the book file it writes needs about {}",
            amount(staged),
            amount(file)
        )
    })
}

/// Bytes of the file an import writes per new entry (a position and its moves) when its
/// entries never went to runs (a small import, aggregated in memory): books with facets,
/// games and references take about 30 bytes a (position, move) pair and a position has ~1.03
/// pairs in generated books (docs/PERFORMANCE.md, the scale table); the rest is a margin for
/// a small file's fixed part and positions with more moves.
const BOOK_BYTES_PER_ENTRY: u64 = 40;

/// Before the book is written from entries held in memory: `entries` new ones, the file
/// beside the book in `dir`.
pub(super) fn check_apply_in_memory(dir: &Path, entries: u64, book: BookNeed) -> Result<()> {
    let file = entries.saturating_mul(BOOK_BYTES_PER_ENTRY) + book.base_bytes;
    check_free(dir, file, || {
        format!(
            "{entries} new entries; the book file it writes needs about {}",
            amount(file)
        )
    })
}

/// Before a merge pass of the runs: its output takes at most the `group_bytes` of its inputs,
/// deleted only once it is recorded.
pub(super) fn check_pass(dir: &Path, group_bytes: u64) -> Result<()> {
    check_free(dir, group_bytes, || {
        format!("a merge pass of {} of runs", amount(group_bytes))
    })
}

/// Bytes of a book's files: its base and the segments of a live book (0 if it does not exist).
pub(super) fn book_file_bytes(book: &Path) -> u64 {
    let base = std::fs::metadata(book).map_or(0, |m| m.len());
    let Some(name) = book.file_name().and_then(|n| n.to_str()) else {
        return base;
    };
    let prefix = format!("{name}.seg-");
    let dir = crate::store::files::dir_of(book);
    let segments: u64 = std::fs::read_dir(dir)
        .into_iter()
        .flatten()
        .flatten()
        .filter(|e| {
            e.file_name()
                .to_str()
                .is_some_and(|n| n.starts_with(&prefix))
        })
        .filter_map(|e| e.metadata().ok())
        .map(|m| m.len())
        .sum();
    base + segments
}

/// Bytes of the runs named in `runs`, in `dir` (missing files count 0).
pub(super) fn staged_bytes<'a>(dir: &Path, runs: impl IntoIterator<Item = &'a str>) -> u64 {
    runs.into_iter()
        .filter_map(|r| std::fs::metadata(dir.join(r)).ok())
        .map(|m| m.len())
        .sum()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn amounts_are_shown_in_a_unit_that_tells_them_apart() {
        assert_eq!(amount(0), "0 bytes");
        assert_eq!(amount(1023), "1023 bytes");
        assert_eq!(amount(1536), "1.5 KiB");
        assert_eq!(amount(3 << 20), "3.0 MiB");
        assert_eq!(amount(5 << 30), "5.00 GiB");
    }

    #[test]
    fn projections_refuse_only_what_cannot_fit() {
        let dir = tempfile::tempdir().unwrap();
        let free = free_bytes(dir.path()).expect("statvfs works on a temp dir");
        let book = BookNeed::default();
        // Nothing projected before a share is read, or without a known total.
        assert!(check_read(dir.path(), 1 << 40, 1, 1 << 40, book).is_ok());
        assert!(check_read(dir.path(), 1 << 40, 1 << 30, 0, book).is_ok());
        // 1 MiB staged for half the input fits anywhere with a few hundred MiB free.
        if free > 1 << 30 {
            assert!(check_read(dir.path(), 1 << 20, 50, 100, book).is_ok());
            assert!(check_apply(dir.path(), 1 << 20, book).is_ok());
        }
        // What cannot fit is refused, with the numbers and what to do.
        let e = check_read(dir.path(), free, 1, 2, book).unwrap_err();
        let msg = e.to_string();
        assert!(
            msg.contains("not enough disk") && msg.contains("resumes"),
            "{msg}"
        );
        assert_eq!(
            e.os_error().and_then(std::io::Error::raw_os_error),
            Some(libc::ENOSPC)
        );
        let e = check_apply(
            dir.path(),
            free,
            BookNeed {
                base_bytes: 1 << 20,
            },
        );
        assert!(e.is_err());
    }
}

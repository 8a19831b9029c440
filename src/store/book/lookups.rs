//! An import's lookups of its new entries in the book it publishes a segment to
//! ([`super::fold::publish_segment`]): in batches, each batch cut into ranges of consecutive
//! keys that threads look up at once.
//!
//! The lookups of an import into a book the page cache does not hold wait on the disk: a key
//! filter partition for every key, a block for each key the book has. One thread keeps one
//! read in flight; up to [`LOOKUP_THREADS`] keep several, and on a warm book they decode blocks on
//! every core. Each thread's keys are consecutive, so it reads each filter partition and
//! block once (the filter keeps the last partitions read, `filter::RECENT_PARTITIONS`, one or
//! more per thread). Measured (docs/PERFORMANCE.md, "An import's lookups in threads"): a
//! 10,000-game import into an 8M-game book with the page cache dropped, 5.7 s with one thread,
//! 3.9 s with eight; 32 threads or no readahead (`posix_fadvise` `RANDOM`) gave no more.

use crate::store::cells::CellRead;
use crate::store::entry::Entry;
use crate::store::error::{Error, Result};

use super::Book;

/// The most threads that look up one batch's entries.
pub(crate) const LOOKUP_THREADS: usize = 8;
/// Lookup threads per import worker (`import --jobs`): the lookups mostly wait on the disk,
/// so several share a core; an import given one worker (a server's admin import, which
/// leaves the other cores to serving) looks up in this many.
pub(crate) const LOOKUP_THREADS_PER_JOB: usize = 4;

/// Lookup threads for an import of `jobs` workers.
pub(crate) fn lookup_threads(jobs: usize) -> usize {
    jobs.saturating_mul(LOOKUP_THREADS_PER_JOB)
        .clamp(1, LOOKUP_THREADS)
}

/// Entries looked up together: the batch and what the book holds of them are in memory at
/// once (an entry of an import is a few hundred bytes; the book's entry of a position, read
/// without cells, about as much).
pub(crate) const LOOKUP_BATCH: usize = 4096;
/// A thread is given at least this many entries of a batch.
const MIN_PER_THREAD: usize = 64;

/// What the book holds of one new entry.
pub(crate) struct Found {
    /// The book's entry of the same position (of the same key, for a key-only entry), its
    /// moves without cells.
    pub(crate) old: Option<Entry>,
    /// When `old` is `None`: whether the book holds another entry under the same key (a
    /// collision). `false` when `old` is `Some`.
    pub(crate) key_held: bool,
}

/// Looks each of `batch` up in `book` in up to `threads` threads; the answers in the batch's
/// order, one per entry.
pub(crate) fn lookup_batch(book: &Book, batch: &[Entry], threads: usize) -> Result<Vec<Found>> {
    let threads = threads.min(batch.len() / MIN_PER_THREAD).max(1);
    let look = |part: &[Entry]| {
        part.iter()
            .map(|e| lookup(book, e))
            .collect::<Result<Vec<_>>>()
    };
    if threads == 1 {
        return look(batch);
    }
    let per = batch.len().div_ceil(threads);
    let parts = std::thread::scope(|s| {
        // A range whose thread cannot be started (a process or user at its thread limit) is
        // looked up here when its turn comes: slower, the same answers.
        let handles: Vec<_> = batch
            .chunks(per)
            .map(|part| {
                let spawned = std::thread::Builder::new()
                    .name("bookdb-lookup".into())
                    .spawn_scoped(s, move || look(part));
                (part, spawned.ok())
            })
            .collect();
        // Every thread is joined before any error is returned (a panicked one left to the
        // scope would panic again here).
        handles
            .into_iter()
            .map(|(part, h)| match h {
                Some(h) => h.join().unwrap_or_else(|_| {
                    Err(Error::Internal("an import's lookup thread panicked".into()))
                }),
                None => look(part),
            })
            .collect::<Vec<_>>()
    });
    let mut found = Vec::with_capacity(batch.len());
    for part in parts {
        found.extend(part?);
    }
    if found.len() != batch.len() {
        return Err(Error::Internal(format!(
            "{} answers for {} lookups",
            found.len(),
            batch.len()
        )));
    }
    Ok(found)
}

/// What the book holds of `e`.
fn lookup(book: &Book, e: &Entry) -> Result<Found> {
    // Only the old entry's moves matter: its cells are passed over, not walked.
    match &e.pos {
        Some(p) => {
            let old = book.lookup_read(p, CellRead::Skip)?;
            let key_held = old.is_none() && !book.get_read(e.key, CellRead::Skip)?.is_empty();
            Ok(Found { old, key_held })
        }
        // A key-only entry: the key's entries read once answer both.
        None => {
            let all = book.get_read(e.key, CellRead::Skip)?;
            let key_held = !all.is_empty();
            let old = all.into_iter().find(|x| x.pos.is_none());
            Ok(Found {
                key_held: key_held && old.is_none(),
                old,
            })
        }
    }
}

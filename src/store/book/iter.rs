//! Iteration over a book file in key order: blocks (decoded in parallel batches), the delta
//! tier of older books, and both merged.

use std::collections::VecDeque;
use std::sync::Arc;

use redb::{ReadableDatabase, ReadableTable, ReadableTableMetadata};

use super::seal::*;
use super::*;
use crate::store::block::{self, BlockView, Keep};
use crate::store::entry::{Entry, MergeIter};
use crate::store::error::{Corruption, Result};
use crate::store::workers::Workers;

impl BookFile {
    /// Iterates this file's entries in (key, position) order: blocks and (before version 3)
    /// delta tier merged.
    pub(super) fn iter_as(self: &Arc<Self>, keep: Keep) -> Result<EntryIter<'_>> {
        self.iter_with(keep, None, self.read_ahead_blocks())
    }

    /// The blocks an iteration of this file reads ahead and holds decoded: its block cache's
    /// share of the memory at [`DECODED_BLOCK_BYTES`] a block, from [`MIN_BATCH_BLOCKS`] to
    /// [`ITER_BATCH_BLOCKS`]. A file opened within a small budget (a fold's base and segments
    /// at `--memory 32`: 1 MiB a file) reads ahead 12 blocks, not 32 (~20 MiB less over nine
    /// files); one opened with the default caches, all 32.
    pub(super) fn read_ahead_blocks(&self) -> usize {
        (self.cache.limit / DECODED_BLOCK_BYTES).clamp(MIN_BATCH_BLOCKS, ITER_BATCH_BLOCKS)
    }

    /// [`BookFile::iter_as`] decoding its blocks on `pool` (the threads the files of a book
    /// iterated together share: [`decode_pool`]), or on threads of its own with `None`.
    pub(super) fn iter_with(
        self: &Arc<Self>,
        keep: Keep,
        pool: Option<Arc<DecodePool>>,
        batch: usize,
    ) -> Result<EntryIter<'_>> {
        let mut blocks = self.iter_blocks()?;
        blocks.keep = keep;
        blocks.decoders = pool;
        blocks.batch = batch.clamp(MIN_BATCH_BLOCKS, ITER_BATCH_BLOCKS);
        let blocks: Box<dyn Iterator<Item = Result<Entry>> + '_> = Box::new(blocks);
        if self.meta.delta_entries == 0 {
            return Ok(MergeIter::new(vec![blocks]));
        }
        let delta: Box<dyn Iterator<Item = Result<Entry>> + '_> = Box::new(self.delta_iter()?);
        Ok(MergeIter::new(vec![blocks, delta]))
    }

    /// Iterates the blocks' entries in (key, position) order, block by block.
    pub(crate) fn iter_blocks(self: &Arc<Self>) -> Result<BookIter<'_>> {
        shield("reading blocks", || self.iter_blocks_inner()).map_err(|e| e.in_file(&self.path))
    }

    fn iter_blocks_inner(self: &Arc<Self>) -> Result<BookIter<'_>> {
        let txn = self.db.begin_read()?;
        let table = match txn.open_table(BLOCKS) {
            Ok(t) => Some(t),
            Err(redb::TableError::TableDoesNotExist(_)) => None,
            Err(e) => return Err(e.into()),
        };
        Ok(BookIter {
            book: self,
            decoders: None,
            table,
            next_key: Some(0),
            buf: VecDeque::new(),
            keep: Keep::default(),
            batch: ITER_BATCH_BLOCKS,
            last_block: None,
            entries: 0,
            tap: None,
        })
    }

    /// Iterates raw blocks: (first key, stored bytes). Used by `verify` and `stats`.
    #[doc(hidden)]
    pub fn for_each_block(&self, f: impl FnMut(u64, &[u8]) -> Result<()>) -> Result<()> {
        shield("reading blocks", || self.for_each_block_inner(f)).map_err(|e| e.in_file(&self.path))
    }

    fn for_each_block_inner(&self, mut f: impl FnMut(u64, &[u8]) -> Result<()>) -> Result<()> {
        let txn = self.db.begin_read()?;
        let table = match txn.open_table(BLOCKS) {
            Ok(t) => t,
            Err(redb::TableError::TableDoesNotExist(_)) => return Ok(()),
            Err(e) => return Err(e.into()),
        };
        for item in table.iter()? {
            let (k, v) = item?;
            f(k.value(), v.value())?;
        }
        Ok(())
    }

    /// Runs `work` on every stored block of this file — (first key, stored bytes) — on
    /// `threads` threads while the calling thread reads the blocks from redb in key order,
    /// and hands the results to `fold` in key order, as they come. At most `window` blocks
    /// (at least one; `verify` takes [`FOLD_WINDOW_PER_THREAD`] × `threads`, or fewer to stay
    /// within its `--memory`) are read ahead of the last one folded (their bytes and results
    /// are all that is held), so memory does not grow with the file. For `verify`, whose work
    /// per block (decompressing, decoding and checking every entry) is far more than reading
    /// it. An error of `fold` stops the walk and is returned.
    #[doc(hidden)]
    pub fn par_fold_blocks<T: Send>(
        &self,
        threads: usize,
        window: usize,
        work: impl Fn(u64, &[u8]) -> T + Sync,
        mut fold: impl FnMut(T) -> Result<()>,
    ) -> Result<()> {
        let threads = threads.max(1);
        let window = window.max(1);
        let work = &work;
        std::thread::scope(|s| {
            let (tx, rx) = crossbeam_channel::bounded::<(usize, u64, Vec<u8>)>(window);
            // At most `window` blocks are out at once, so the workers never wait on this.
            let (rtx, rrx) = crossbeam_channel::bounded::<(usize, T)>(window);
            let workers: Vec<_> = (0..threads)
                .map(|_| {
                    let (rx, rtx) = (rx.clone(), rtx.clone());
                    s.spawn(move || {
                        for (i, key, bytes) in rx {
                            if rtx.send((i, work(key, &bytes))).is_err() {
                                break;
                            }
                        }
                    })
                })
                .collect();
            drop((rx, rtx));
            let mut order = InOrder {
                pending: std::collections::BTreeMap::new(),
                next: 0,
            };
            let mut sent = 0usize;
            let stopped = || Error::Internal("block checker threads stopped".into());
            let read = self.for_each_block(|key, bytes| {
                while sent - order.next >= window {
                    let r = rrx.recv().map_err(|_| stopped())?;
                    order.take(r, &mut fold)?;
                }
                tx.send((sent, key, bytes.to_vec()))
                    .map_err(|_| stopped())?;
                sent += 1;
                Ok(())
            });
            drop(tx);
            let drained = read.and_then(|()| {
                while order.next < sent {
                    let r = rrx.recv().map_err(|_| stopped())?;
                    order.take(r, &mut fold)?;
                }
                Ok(())
            });
            // Results still in flight after an error are dropped; the workers end once the
            // blocks sent are done.
            drop(rrx);
            let mut panicked = false;
            for w in workers {
                panicked |= w.join().is_err();
            }
            if panicked {
                return Err(Error::Internal("a block checker thread panicked".into()));
            }
            drained
        })
    }

    #[doc(hidden)]
    pub fn block_count(&self) -> Result<u64> {
        let txn = self.db.begin_read()?;
        match txn.open_table(BLOCKS) {
            Ok(t) => Ok(t.len()?),
            Err(redb::TableError::TableDoesNotExist(_)) => Ok(0),
            Err(e) => Err(e.into()),
        }
    }

    /// Decodes one stored block completely (for iteration and `verify`).
    #[doc(hidden)]
    pub fn decode_block(&self, block_key: u64, bytes: &[u8]) -> Result<Vec<Entry>, Corruption> {
        self.decode_block_as(block_key, bytes, Keep::default())
    }

    pub(super) fn decode_block_as(
        &self,
        block_key: u64,
        bytes: &[u8],
        keep: Keep,
    ) -> Result<Vec<Entry>, Corruption> {
        self.decode_block_with(block_key, bytes, keep, &self.game_cells())
    }

    /// [`BookFile::decode_block_as`] reading the cells its moves keep as their games' from
    /// `games` (one source for many blocks keeps their facts' chunks read).
    fn decode_block_with(
        &self,
        block_key: u64,
        bytes: &[u8],
        keep: Keep,
        games: &dyn crate::store::block::GameCells,
    ) -> Result<Vec<Entry>, Corruption> {
        let blk = block::open_block(block_key, bytes, &self.pool)?;
        let view = BlockView::parse(block_key, &blk)?.with_games(games);
        let model = self.model(block_key, blk.header.model_id)?;
        // Stored bytes pass through only from blocks coded with the trained model (id 1).
        let keep = Keep {
            coded: keep.coded && blk.header.model_id == 1,
            ..keep
        };
        view.entries_as(&*self.codec, model, keep)
    }
}

/// Blocks to decode on a worker thread: the file, the blocks (key, stored bytes), what to keep.
type DecodeJob = (Arc<BookFile>, Vec<(u64, Vec<u8>)>, Keep);

/// The entries of each block of a [`DecodeJob`], or the first block's corruption.
type Decoded = Result<Vec<Vec<Entry>>, Corruption>;
/// Threads that decode batches of blocks, of any file.
pub(super) type DecodePool = Workers<DecodeJob, Decoded>;

/// A decoding pool for iterating several files together: one for all of them, rather than a
/// pool of [`seal_threads`] for each (a fold reads a base and up to eight segments: eighteen
/// threads, each with its own allocator heap, and entries freed on another thread than the
/// one that made them). `None` on one core (each batch is then decoded in place).
pub(super) fn decode_pool() -> Option<Arc<DecodePool>> {
    let threads = seal_threads();
    (threads > 1).then(|| Arc::new(Workers::new(threads, "bookdb-decode", decode_job)))
}

fn decode_job((file, blocks, keep): DecodeJob) -> Decoded {
    let games = file.game_cells();
    blocks
        .iter()
        .map(|(k, v)| file.decode_block_with(*k, v, keep, &games))
        .collect()
}

/// Iterator over all entries of a book in key order.
pub(crate) struct BookIter<'a> {
    book: &'a Arc<BookFile>,
    /// The threads that decode each batch of blocks, started with the first batch and kept
    /// until the iterator ends (`store::workers` says why).
    decoders: Option<Arc<DecodePool>>,
    table: Option<redb::ReadOnlyTable<u64, &'static [u8]>>,
    next_key: Option<u64>,
    buf: VecDeque<Entry>,
    /// Leave indexed moves as indices (see [`Book::iter_for_rewrite`]).
    keep: Keep,
    /// Blocks read and decoded at a time.
    batch: usize,
    /// The first key of the last block read, and the entries decoded so far: redb does not
    /// verify page checksums on reads, so a damaged B-tree page that still parses can hide
    /// blocks or bring them out of order; both are caught here (issue 16's corruption
    /// campaign found a swapped page doing it), so a full iteration (dump, export, merge,
    /// compact) fails instead of silently reading less.
    last_block: Option<u64>,
    entries: u64,
    /// A writer's tap on the file's references, fed with each block (`reftap`).
    tap: Option<Arc<super::reftap::RefTap>>,
}

/// Blocks read ahead and decoded together on all cores by [`BookIter`].
const ITER_BATCH_BLOCKS: usize = 32;
/// The least blocks a file's batch is: two for each decoding thread of a 2-core machine.
const MIN_BATCH_BLOCKS: usize = 4;
/// What a block held decoded takes, about (its entries, their positions, moves and cells):
/// measured ~80 KiB on generated games with the default facets and games stored.
const DECODED_BLOCK_BYTES: usize = 80 << 10;

impl BookIter<'_> {
    /// Reads the next batch of blocks and decodes them in parallel into `buf`.
    fn fill(&mut self) -> Result<()> {
        let Some(from) = self.next_key else {
            return Ok(());
        };
        let Some(table) = self.table.as_ref() else {
            self.next_key = None;
            return Ok(());
        };
        let raw: Vec<(u64, Vec<u8>)> = shield("reading blocks", || {
            let mut out = Vec::with_capacity(self.batch);
            for item in table.range(from..)?.take(self.batch) {
                let (k, v) = item?;
                out.push((k.value(), v.value().to_vec()));
            }
            Ok(out)
        })?;
        let first = self.last_block.is_none();
        if first && from == 0 && self.keep.indices {
            self.tap = self.book.take_ref_tap();
        }
        let keys: Vec<u64> = match self.tap {
            Some(_) => raw.iter().map(|(k, _)| *k).collect(),
            None => Vec::new(),
        };
        for (k, _) in &raw {
            if self.last_block.is_some_and(|l| *k <= l) {
                return Err(Corruption::Storage(format!(
                    "the blocks table returns block {k:016x} after {:016x} (damaged redb pages; \
                     run bookdb verify)",
                    self.last_block.unwrap_or_default()
                ))
                .into());
            }
            self.last_block = Some(*k);
        }
        self.next_key = match raw.last() {
            Some((k, _)) => k.checked_add(1),
            None => None,
        };
        // At the end of a file of this version (its counters describe its blocks alone), every
        // entry its counters count must have been read.
        let meta = &self.book.meta;
        let expected = meta.positions + meta.key_only;
        let at_end = self.next_key.is_none();
        let keep = self.keep;
        let threads = seal_threads();
        let decoded: Vec<Decoded> = if raw.len() <= 1 || threads == 1 {
            let book = &**self.book;
            vec![
                raw.iter()
                    .map(|(k, v)| book.decode_block_as(*k, v, keep))
                    .collect(),
            ]
        } else {
            let per = raw.len().div_ceil(threads).max(1);
            let mut jobs = Vec::with_capacity(threads);
            let mut raw = raw.into_iter().peekable();
            while raw.peek().is_some() {
                jobs.push((self.book.clone(), raw.by_ref().take(per).collect(), keep));
            }
            self.decoders
                .get_or_insert_with(|| Arc::new(Workers::new(threads, "bookdb-decode", decode_job)))
                .map(jobs)
                .into_iter()
                .map(|r| {
                    r.unwrap_or_else(|| {
                        Err(Corruption::Storage("block decoder thread panicked".into()))
                    })
                })
                .collect()
        };
        let mut keys = keys.into_iter();
        for part in decoded {
            for entries in part? {
                if let (Some(tap), Some(k)) = (&self.tap, keys.next()) {
                    let refs = self.book.games.as_ref().and_then(|t| t.refs.as_ref());
                    tap.feed(refs, k, &entries, first && self.entries == 0);
                }
                self.entries += entries.len() as u64;
                self.buf.extend(entries);
            }
        }
        if at_end && let Some(tap) = self.tap.take() {
            tap.end();
        }
        if at_end && self.book.format_version >= 3 && self.entries != expected {
            return Err(Corruption::Storage(format!(
                "{} entries read from the blocks, the file's counters say {expected} (damaged \
                 redb pages; run bookdb verify)",
                self.entries
            ))
            .into());
        }
        Ok(())
    }
}

impl Iterator for BookIter<'_> {
    type Item = Result<Entry>;

    fn next(&mut self) -> Option<Result<Entry>> {
        loop {
            if let Some(e) = self.buf.pop_front() {
                return Some(Ok(e));
            }
            self.next_key?;
            if let Err(e) = self.fill().map_err(|e| e.in_file(&self.book.path)) {
                self.next_key = None;
                self.buf.clear();
                return Some(Err(e));
            }
        }
    }
}

/// Blocks a [`BookFile::par_fold_blocks`] walk may read ahead of its fold, per thread.
pub(crate) const FOLD_WINDOW_PER_THREAD: usize = 8;

/// The results of a parallel walk put back in block order.
struct InOrder<T> {
    pending: std::collections::BTreeMap<usize, T>,
    /// The index of the next block to fold.
    next: usize,
}

impl<T> InOrder<T> {
    /// Takes result `i` and folds every result that is now next in order.
    fn take(&mut self, (i, r): (usize, T), fold: &mut impl FnMut(T) -> Result<()>) -> Result<()> {
        self.pending.insert(i, r);
        while let Some(r) = self.pending.remove(&self.next) {
            self.next += 1;
            fold(r)?;
        }
        Ok(())
    }
}

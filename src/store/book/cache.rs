//! Read caches of an open book: opened blocks and pooled zstd decompressors.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, RwLock, RwLockWriteGuard};

use crate::store::block::{BlockView, ColumnRanges, Decompressors};
use crate::store::cells::CellRead;
use crate::store::entry::Entry;
use crate::store::error::DecompressError;
use crate::store::facet::{CellFilter, CellStat};
use crate::store::refblock::EntryRefs;

/// Most answers a cached block keeps ([`CachedBlock::answers`]); past it the oldest goes.
const ANSWERS_PER_BLOCK: usize = 8;
/// An entry's answer is kept when reading it walked at least this many bytes of cells (about
/// 100 cells, a few microseconds): below that the walk costs little more than the copy.
const ANSWER_MIN_CELL_BYTES: usize = 512;
/// An entry whose first filtered (or by-period) read walked at least this many bytes of cells
/// (~2,500 cells, ~40 µs) is kept read with every cell at once: the further filters its user
/// picks are made from it (~1.5 ns a cell) instead of a walk (~15 ns a cell). Such a read has
/// paid for the block's reference chunk already (a move whose cells are its games' needs it),
/// which a read with every cell needs too; an unfiltered read has not, so it keeps none (the
/// chunk of a start position's block took ~8 ms of a first filtered answer at 1M games).
/// Smaller entries are kept so at their second filter.
const EVERY_CELL_AT_ONCE_BYTES: usize = 16 << 10;

/// What a kept answer answers: the entry stored as these position bytes, read as `asked`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) struct AnswerKey {
    coded: Box<[u8]>,
    asked: Asked,
}

/// The reads whose answers are kept: [`CellRead::Totals`], [`CellRead::ByPeriod`] and
/// [`CellRead::Passing`] (the filter's own copy).
#[derive(Clone, Debug, PartialEq, Eq)]
enum Asked {
    Totals,
    ByPeriod,
    Filter(CellFilter),
}

impl Asked {
    /// What `read` asks, when its answer can be kept (not one of every cell or of none).
    fn of(read: CellRead<'_>) -> Option<Asked> {
        match read {
            CellRead::Totals => Some(Asked::Totals),
            CellRead::ByPeriod => Some(Asked::ByPeriod),
            CellRead::Passing(f) => Some(Asked::Filter(f.clone())),
            CellRead::All | CellRead::Skip => None,
        }
    }

    /// Whether this is what `read` asks (without cloning its filter).
    fn is(&self, read: CellRead<'_>) -> bool {
        match (self, read) {
            (Asked::Totals, CellRead::Totals) | (Asked::ByPeriod, CellRead::ByPeriod) => true,
            (Asked::Filter(f), CellRead::Passing(g)) => f == g,
            _ => false,
        }
    }
}

impl AnswerKey {
    /// The key of a read that can be kept (not one of every cell or of none).
    pub(super) fn of(coded: &[u8], read: CellRead) -> Option<AnswerKey> {
        Some(AnswerKey {
            coded: coded.into(),
            asked: Asked::of(read)?,
        })
    }

    fn bytes(&self) -> usize {
        self.coded.len() + std::mem::size_of::<AnswerKey>()
    }
}

/// Opened blocks (checksum verified, section A decompressed), kept for repeated probes. Keyed
/// by first key, each with the first key of the next block, so a lookup whose key falls in a
/// cached block's range needs no redb read at all (the lazy index that replaced reading every
/// block's first key at open, docs/FORMAT.md §10.4).
pub(super) struct BlockCache {
    pub(super) limit: usize,
    /// Read-locked by lookups (any number at once: a server's workers do not queue on it),
    /// write-locked only to add a block.
    pub(super) map: RwLock<CacheMap>,
}

#[derive(Default)]
pub(super) struct CacheMap {
    blocks: BTreeMap<u64, Arc<CachedBlock>>,
    used: usize,
    /// State of the pseudo-random choice of the block to evict.
    evict: u64,
}

impl CacheMap {
    /// Evicts pseudo-random blocks (never the one starting at `spare`) until the bytes in use
    /// are at most `bytes` or no other block is left.
    fn evict_until(&mut self, bytes: usize, spare: Option<u64>) {
        while self.used > bytes && self.blocks.keys().any(|&k| Some(k) != spare) {
            self.evict = self
                .evict
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let victim = self
                .blocks
                .range(self.evict..)
                .map(|(&k, _)| k)
                .find(|&k| Some(k) != spare)
                .or_else(|| self.blocks.keys().copied().find(|&k| Some(k) != spare));
            if let Some(old) = victim.and_then(|k| self.blocks.remove(&k)) {
                self.used -= old.bytes();
            }
        }
    }
}

pub(super) struct CachedBlock {
    pub(super) count: usize,
    pub(super) model_id: u16,
    pub(super) a: Vec<u8>,
    pub(super) b: Vec<u8>,
    /// The columns of `a`, parsed and checked when the block was read.
    pub(super) ranges: ColumnRanges,
    /// The block's greatest key: it answers for the keys from its own first key up to this
    /// one (a key between it and the next block's first key is looked up in redb, which
    /// finds this block again, cached).
    pub(super) last_key: u64,
    /// Answers read from the block's heaviest entries, oldest first: an unfiltered answer sums
    /// the opponents' ratings over every cell of each move and a filtered one checks every
    /// cell (~14 ns a cell; the start position of a book of a million generated games has
    /// ~65,000), which a block read once need not do again for the same question. Counted in
    /// the cache's bytes ([`BlockCache::keep_answer`]).
    answers: RwLock<Vec<(AnswerKey, Entry, usize)>>,
    answers_bytes: AtomicUsize,
    /// The block's reference chunk, decoded when a move that keeps its cells as its games'
    /// was first read (docs/FORMAT.md §12.5): each filtered read of such a move needs it.
    /// Counted in the cache's bytes ([`BlockCache::keep_refs`]).
    pub(super) refs: std::sync::OnceLock<Arc<Vec<EntryRefs>>>,
    refs_bytes: AtomicUsize,
    /// The block's heaviest entry asked under a second filter (or with its history), read
    /// with every cell: each further filter is answered from it without walking the stored
    /// cells ([`BlockCache::keep_every_cell`]; one a block, counted in the cache's bytes).
    every_cell: RwLock<Option<EveryCell>>,
    every_cell_bytes: AtomicUsize,
}

/// An entry read with every cell ([`CellRead::All`]), kept with its cached block.
struct EveryCell {
    coded: Box<[u8]>,
    entry: Arc<Entry>,
    bytes: usize,
}

impl CachedBlock {
    pub(super) fn new(
        count: usize,
        model_id: u16,
        a: Vec<u8>,
        b: Vec<u8>,
        ranges: ColumnRanges,
        last_key: u64,
    ) -> CachedBlock {
        CachedBlock {
            count,
            model_id,
            a,
            b,
            ranges,
            last_key,
            answers: RwLock::new(Vec::new()),
            answers_bytes: AtomicUsize::new(0),
            refs: std::sync::OnceLock::new(),
            refs_bytes: AtomicUsize::new(0),
            every_cell: RwLock::new(None),
            every_cell_bytes: AtomicUsize::new(0),
        }
    }

    /// The entry stored as `coded` read with every cell, if the block keeps it.
    pub(super) fn every_cell(&self, coded: &[u8]) -> Option<Arc<Entry>> {
        if self.every_cell_bytes.load(Ordering::Relaxed) == 0 {
            return None;
        }
        let g = self.every_cell.read().ok()?;
        g.as_ref()
            .filter(|k| *k.coded == *coded)
            .map(|k| k.entry.clone())
    }

    /// Whether the block keeps an answer to a filter of the entry stored as `coded`.
    pub(super) fn answers_a_filter(&self, coded: &[u8]) -> bool {
        self.answers_bytes.load(Ordering::Relaxed) > 0
            && self.answers.read().is_ok_and(|g| {
                g.iter()
                    .any(|(k, _, _)| *k.coded == *coded && matches!(k.asked, Asked::Filter(_)))
            })
    }

    /// The kept answer to `read` of the entry stored as `coded`, if any (no lock, no
    /// allocation when the block keeps none).
    pub(super) fn answer(&self, coded: &[u8], read: CellRead) -> Option<Entry> {
        if self.answers_bytes.load(Ordering::Relaxed) == 0 {
            return None;
        }
        let g = self.answers.read().ok()?;
        g.iter()
            .find(|(k, _, _)| *k.coded == *coded && k.asked.is(read))
            .map(|(_, e, _)| e.clone())
    }

    /// The block's view, without parsing it again.
    pub(super) fn view(&self, block_key: u64) -> BlockView<'_> {
        BlockView::from_ranges(block_key, self.count, &self.a, &self.b, &self.ranges)
    }

    fn bytes(&self) -> usize {
        self.a.len()
            + self.b.len()
            + 64
            + self.answers_bytes.load(Ordering::Relaxed)
            + self.refs_bytes.load(Ordering::Relaxed)
            + self.every_cell_bytes.load(Ordering::Relaxed)
    }
}

/// Whether an answer whose read walked `cell_bytes` of cells is worth keeping.
pub(super) fn worth_keeping(cell_bytes: usize) -> bool {
    cell_bytes >= ANSWER_MIN_CELL_BYTES
}

/// Heap bytes of a kept answer (an estimate, for the cache's count).
fn answer_bytes(key: &AnswerKey, e: &Entry) -> usize {
    key.bytes() + entry_bytes(e)
}

/// Heap bytes of a kept entry (an estimate, for the cache's count).
fn entry_bytes(e: &Entry) -> usize {
    let moves: usize = e
        .moves
        .iter()
        .map(|m| std::mem::size_of_val(m) + m.cells.len() * std::mem::size_of::<CellStat>())
        .sum();
    e.pos.as_ref().map_or(0, Vec::len) + moves + std::mem::size_of::<Entry>() + 64
}

impl BlockCache {
    pub(super) fn new(limit: usize) -> BlockCache {
        BlockCache {
            limit,
            map: RwLock::new(CacheMap::default()),
        }
    }

    /// The cached block whose key range holds `key`: (its first key, the block).
    pub(super) fn covering(&self, key: u64) -> Option<(u64, Arc<CachedBlock>)> {
        if self.limit == 0 {
            return None;
        }
        let g = self.map.read().ok()?;
        let (&first, b) = g.blocks.range(..=key).next_back()?;
        (key <= b.last_key).then(|| (first, b.clone()))
    }

    /// The cached block starting at `first`.
    pub(super) fn get(&self, first: u64) -> Option<Arc<CachedBlock>> {
        if self.limit == 0 {
            return None;
        }
        self.map.read().ok()?.blocks.get(&first).cloned()
    }

    pub(super) fn put(&self, key: u64, b: Arc<CachedBlock>) {
        if self.limit == 0 {
            return;
        }
        if let Ok(mut g) = self.map.write() {
            let g = &mut *g;
            // Pseudo-random eviction until the new block fits.
            g.evict_until(self.limit.saturating_sub(b.bytes()), None);
            g.used += b.bytes();
            if let Some(old) = g.blocks.insert(key, b) {
                g.used -= old.bytes();
            }
        }
    }

    /// Keeps `e`, the answer to `key`, with the cached block `blk` starting at `first` (the
    /// block's oldest kept answer goes past [`ANSWERS_PER_BLOCK`]), its bytes counted in the
    /// cache's. Nothing is kept when the block is no longer the cached one (evicted or
    /// replaced meanwhile: its bytes would be counted for nothing).
    pub(super) fn keep_answer(
        &self,
        first: u64,
        blk: &Arc<CachedBlock>,
        key: AnswerKey,
        e: &Entry,
    ) {
        let bytes = answer_bytes(&key, e);
        let Some(mut g) = self.holding(first, blk) else {
            return;
        };
        let Ok(mut kept) = blk.answers.write() else {
            return;
        };
        if kept.iter().any(|(k, _, _)| *k == key) {
            return;
        }
        if kept.len() >= ANSWERS_PER_BLOCK {
            let (_, _, old) = kept.remove(0);
            blk.answers_bytes.fetch_sub(old, Ordering::Relaxed);
            g.used -= old;
        }
        kept.push((key, e.clone(), bytes));
        blk.answers_bytes.fetch_add(bytes, Ordering::Relaxed);
        g.used += bytes;
        drop(kept);
        g.evict_until(self.limit, Some(first));
    }

    /// Keeps `e`, the entry stored as `coded` read with every cell, with the cached block
    /// `blk` starting at `first` (in place of the one it kept), its bytes counted in the
    /// cache's. Nothing is kept when the block is no longer the cached one, or when the entry
    /// would take more than an eighth of the cache.
    pub(super) fn keep_every_cell(
        &self,
        first: u64,
        blk: &Arc<CachedBlock>,
        coded: &[u8],
        e: Entry,
    ) {
        let bytes = coded.len() + entry_bytes(&e);
        if self.limit == 0 || bytes > self.limit / 8 {
            return;
        }
        let Some(mut g) = self.holding(first, blk) else {
            return;
        };
        let Ok(mut slot) = blk.every_cell.write() else {
            return;
        };
        if let Some(old) = slot.take() {
            g.used -= old.bytes;
        }
        *slot = Some(EveryCell {
            coded: coded.into(),
            entry: Arc::new(e),
            bytes,
        });
        blk.every_cell_bytes.store(bytes, Ordering::Relaxed);
        g.used += bytes;
        g.evict_until(self.limit, Some(first));
    }

    /// The kept answer to `read` of the entry stored as `coded` in the cached block `blk`
    /// (starting at `first`): the one kept for that question, or one made from the entry kept
    /// read with every cell (then kept for the question).
    pub(super) fn kept_answer(
        &self,
        first: u64,
        blk: &Arc<CachedBlock>,
        coded: &[u8],
        read: CellRead,
    ) -> Option<Entry> {
        if let Some(e) = blk.answer(coded, read) {
            return Some(e);
        }
        if matches!(read, CellRead::Totals | CellRead::Skip) {
            return None;
        }
        let all = blk.every_cell(coded)?;
        let e = match read {
            CellRead::All => (*all).clone(),
            CellRead::Passing(f) => crate::store::cells::passing_of(&all, f),
            CellRead::ByPeriod => crate::store::cells::by_period_of(&all),
            CellRead::Totals | CellRead::Skip => return None,
        };
        if let Some(k) = AnswerKey::of(coded, read) {
            self.keep_answer(first, blk, k, &e);
        }
        Some(e)
    }

    /// What to walk to answer `read` of the entry stored as `coded` in the cached block
    /// `blk`, whose block keeps `kept` bytes of its cells: every cell when `read` is a filter
    /// or a history and the entry keeps at least [`EVERY_CELL_AT_ONCE_BYTES`] of them, or
    /// `read` is the entry's second filter (the entry is kept read so and this and later
    /// answers are made from it, [`BlockCache::keep_read`]); else `read`.
    pub(super) fn walk_for<'f>(
        &self,
        blk: &CachedBlock,
        coded: &[u8],
        read: CellRead<'f>,
        kept: usize,
    ) -> CellRead<'f> {
        let at_once = self.limit > 0 && kept >= EVERY_CELL_AT_ONCE_BYTES;
        match read {
            CellRead::Passing(_) | CellRead::ByPeriod if at_once => CellRead::All,
            CellRead::Passing(_) if self.limit > 0 && blk.answers_a_filter(coded) => CellRead::All,
            _ => read,
        }
    }

    /// The answer to `read` of the entry stored as `coded` in the cached block `blk`
    /// (starting at `first`) from `e`, what a walk of `walked` cells
    /// ([`BlockCache::walk_for`]) found: made from it when `walked` read every cell for a
    /// filter or a history. Kept when the walk covered at least [`ANSWER_MIN_CELL_BYTES`] of
    /// cells, and so is the entry read with every cell when the walk read them all.
    pub(super) fn keep_read(
        &self,
        first: u64,
        blk: &Arc<CachedBlock>,
        coded: &[u8],
        (read, walked): (CellRead, CellRead),
        e: Entry,
        cell_bytes: usize,
    ) -> Entry {
        let keep = self.limit > 0 && worth_keeping(cell_bytes);
        let (answer, all) = match (read, walked) {
            (CellRead::Passing(f), CellRead::All) => {
                (crate::store::cells::passing_of(&e, f), Some(e))
            }
            (CellRead::ByPeriod, CellRead::All) => (crate::store::cells::by_period_of(&e), Some(e)),
            (CellRead::All, _) if keep => (e.clone(), Some(e)),
            _ => (e, None),
        };
        if !keep {
            return answer;
        }
        if let Some(all) = all {
            self.keep_every_cell(first, blk, coded, all);
        }
        if let Some(k) = AnswerKey::of(coded, read) {
            self.keep_answer(first, blk, k, &answer);
        }
        answer
    }

    /// The cache's map, write-locked, when `blk` is still the block cached at `first` (what
    /// is kept with an evicted or replaced block would be counted for nothing).
    fn holding(
        &self,
        first: u64,
        blk: &Arc<CachedBlock>,
    ) -> Option<RwLockWriteGuard<'_, CacheMap>> {
        if self.limit == 0 {
            return None;
        }
        let g = self.map.write().ok()?;
        g.blocks
            .get(&first)
            .is_some_and(|b| Arc::ptr_eq(b, blk))
            .then_some(g)
    }

    /// Keeps `refs`, the decoded reference chunk of the cached block `blk` starting at
    /// `first`, with it, its bytes counted in the cache's (nothing is kept when the block is no
    /// longer the cached one, or keeps its chunk already).
    pub(super) fn keep_refs(&self, first: u64, blk: &Arc<CachedBlock>, refs: Arc<Vec<EntryRefs>>) {
        let bytes: usize = 64
            + refs
                .iter()
                .map(|e| 24 + e.iter().map(|l| 24 + 4 * l.len()).sum::<usize>())
                .sum::<usize>();
        let Some(mut g) = self.holding(first, blk) else {
            return;
        };
        if blk.refs.set(refs).is_ok() {
            blk.refs_bytes.store(bytes, Ordering::Relaxed);
            g.used += bytes;
        }
    }

    /// The answers kept with the cached blocks, and the cache's bytes in use.
    pub(super) fn kept_answers(&self) -> (usize, usize) {
        let Ok(g) = self.map.read() else {
            return (0, 0);
        };
        let kept = g
            .blocks
            .values()
            .map(|b| b.answers.read().map_or(0, |t| t.len()))
            .sum();
        (kept, g.used)
    }

    /// The entries kept read with every cell with the cached blocks.
    pub(super) fn kept_every_cells(&self) -> usize {
        self.map.read().map_or(0, |g| {
            g.blocks
                .values()
                .filter(|b| b.every_cell_bytes.load(Ordering::Relaxed) > 0)
                .count()
        })
    }

    pub(super) fn clear(&self) {
        if let Ok(mut g) = self.map.write() {
            g.blocks.clear();
            g.used = 0;
        }
    }
}

/// redb page cache of a book opened for reading.
pub(crate) const READER_CACHE_BYTES: usize = 64 << 20;

/// The cache sizes of each file of a [`Book`](super::Book) opened for reading: redb's page
/// cache (stored pages) and the cache of opened blocks (verified, decompressed). Both are
/// limits, not allocations: a cache grows only with what is read. A refreshed book keeps its
/// sizes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CacheSizes {
    pub redb_bytes: usize,
    pub block_bytes: usize,
    /// Key-filter partitions each file keeps once read (past it a probe reads its partition,
    /// kept among the last few such reads).
    pub filter_bytes: usize,
    /// Checked game-fact chunks each file keeps (docs/FORMAT.md §15.4), read for the moves
    /// that keep their cells as their games' and for choices of games.
    pub fact_bytes: usize,
}

impl Default for CacheSizes {
    /// 64 MiB each, 16 MiB of key filter and 4 MiB of game facts per file.
    fn default() -> Self {
        CacheSizes {
            redb_bytes: READER_CACHE_BYTES,
            block_bytes: DEFAULT_CACHE_BYTES,
            filter_bytes: super::filter::FILTER_CACHE_BYTES,
            fact_bytes: super::factcache::DEFAULT_FACT_BYTES,
        }
    }
}

/// redb's cache of the private copy that [`BookFile::redb_integrity`] checks.
pub(crate) const CHECK_COPY_CACHE_BYTES: usize = 16 << 20;

/// Default size of the block cache of a [`Book`].
pub(crate) const DEFAULT_CACHE_BYTES: usize = 64 << 20;

/// Pooled zstd contexts with their dictionary loaded, so a probe does not pay for setup.
pub(crate) struct DecompressorPool {
    dicts: HashMap<u16, Arc<Vec<u8>>>,
    free: Mutex<HashMap<u16, Vec<zstd::bulk::Decompressor<'static>>>>,
}

impl DecompressorPool {
    #[doc(hidden)]
    pub fn new(dicts: HashMap<u16, Arc<Vec<u8>>>) -> Self {
        DecompressorPool {
            dicts,
            free: Mutex::new(HashMap::new()),
        }
    }
}

impl Decompressors for DecompressorPool {
    fn decompress(
        &self,
        dict_id: u16,
        src: &[u8],
        capacity: usize,
    ) -> Result<Vec<u8>, DecompressError> {
        let ctx = self
            .free
            .lock()
            .ok()
            .and_then(|mut m| m.get_mut(&dict_id).and_then(Vec::pop));
        let mut ctx = match ctx {
            Some(c) => c,
            None if dict_id == 0 => {
                zstd::bulk::Decompressor::new().map_err(DecompressError::Zstd)?
            }
            None => {
                let d = self
                    .dicts
                    .get(&dict_id)
                    .ok_or(DecompressError::MissingDictionary(dict_id))?;
                zstd::bulk::Decompressor::with_dictionary(d).map_err(DecompressError::Zstd)?
            }
        };
        let mut out = Vec::with_capacity(capacity);
        let res = ctx
            .decompress_to_buffer(src, &mut out)
            .map_err(DecompressError::Zstd);
        if let Ok(mut m) = self.free.lock() {
            let v = m.entry(dict_id).or_default();
            if v.len() < 16 {
                v.push(ctx);
            }
        }
        res.map(|_| out)
    }
}

#[cfg(test)]
mod tests;

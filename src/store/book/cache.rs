//! Read caches of an open book: opened blocks and pooled zstd decompressors.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex, RwLock};

use crate::store::block::{BlockView, ColumnRanges, Decompressors};
use crate::store::error::DecompressError;

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
}

impl CachedBlock {
    /// The block's view, without parsing it again.
    pub(super) fn view(&self, block_key: u64) -> BlockView<'_> {
        BlockView::from_ranges(block_key, self.count, &self.a, &self.b, &self.ranges)
    }

    fn bytes(&self) -> usize {
        self.a.len() + self.b.len() + 64
    }
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
            while g.used + b.bytes() > self.limit && !g.blocks.is_empty() {
                g.evict = g
                    .evict
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                let victim = g
                    .blocks
                    .range(g.evict..)
                    .next()
                    .or_else(|| g.blocks.iter().next())
                    .map(|(&k, _)| k);
                if let Some(old) = victim.and_then(|k| g.blocks.remove(&k)) {
                    g.used -= old.bytes();
                }
            }
            g.used += b.bytes();
            if let Some(old) = g.blocks.insert(key, b) {
                g.used -= old.bytes();
            }
        }
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
    /// kept until the next such read).
    pub filter_bytes: usize,
}

impl Default for CacheSizes {
    /// 64 MiB each, and 16 MiB of key filter per file.
    fn default() -> Self {
        CacheSizes {
            redb_bytes: READER_CACHE_BYTES,
            block_bytes: DEFAULT_CACHE_BYTES,
            filter_bytes: super::filter::FILTER_CACHE_BYTES,
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

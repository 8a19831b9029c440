//! Read caches of an open book: opened blocks and pooled zstd decompressors.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use crate::store::block::Decompressors;
use crate::store::error::DecompressError;

/// Opened blocks (checksum verified, section A decompressed), kept for repeated probes.
pub(super) struct BlockCache {
    pub(super) limit: usize,
    pub(super) map: Mutex<(HashMap<u64, Arc<CachedBlock>>, usize)>,
}

pub(super) struct CachedBlock {
    pub(super) count: usize,
    pub(super) model_id: u16,
    pub(super) a: Vec<u8>,
    pub(super) b: Vec<u8>,
}

impl CachedBlock {
    fn bytes(&self) -> usize {
        self.a.len() + self.b.len() + 64
    }
}

impl BlockCache {
    pub(super) fn get(&self, key: u64) -> Option<Arc<CachedBlock>> {
        if self.limit == 0 {
            return None;
        }
        self.map.lock().ok()?.0.get(&key).cloned()
    }

    pub(super) fn put(&self, key: u64, b: Arc<CachedBlock>) {
        if self.limit == 0 {
            return;
        }
        if let Ok(mut g) = self.map.lock() {
            let (map, used) = &mut *g;
            // Random eviction (hash order) until the new block fits.
            while *used + b.bytes() > self.limit {
                let Some(&k) = map.keys().next() else { break };
                if let Some(old) = map.remove(&k) {
                    *used -= old.bytes();
                }
            }
            *used += b.bytes();
            if let Some(old) = map.insert(key, b) {
                *used -= old.bytes();
            }
        }
    }
}

/// redb page cache of a book opened for reading.
pub(crate) const READER_CACHE_BYTES: usize = 64 << 20;

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

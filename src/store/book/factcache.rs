//! The checked game-fact chunks a file read lately (docs/FORMAT.md §15.4), shared by its
//! readers: a filtered read of moves that keep their cells as their games' (§12.5) and a
//! choice of games each read a few games' facts, from chunks that the next query mostly needs
//! again.

use std::collections::HashMap;
use std::hash::BuildHasherDefault;
use std::sync::{Arc, Mutex};

use crate::store::keyhash::KeyHasher;

/// The bytes a kept chunk is counted for: its rows (at most 4,014 B) and the map's and the
/// shared slice's overhead.
pub(crate) const CHUNK_BYTES: usize = 4096;

/// Chunks kept by default (`CacheSizes::fact_bytes`): 4 MiB a file, the facts of 456,704
/// games. Whole-file passes (`verify`, compactions, folds) size it from their `--memory`, as
/// they read the facts of a file's games in the order of its positions, not of its games.
pub(crate) const DEFAULT_FACT_BYTES: usize = 1024 * CHUNK_BYTES;

/// A file's checked fact chunks by first game number, at most its limit (an eighth of them,
/// arbitrary ones, dropped when full).
pub(crate) struct FactCache {
    chunks: Mutex<HashMap<u32, Arc<[u8]>, BuildHasherDefault<KeyHasher>>>,
    /// Chunks kept at most (at least one).
    kept: usize,
}

impl Default for FactCache {
    fn default() -> Self {
        FactCache::with_bytes(DEFAULT_FACT_BYTES)
    }
}

impl FactCache {
    /// A cache of at most `bytes` of chunks (at least one chunk).
    pub(crate) fn with_bytes(bytes: usize) -> FactCache {
        FactCache {
            chunks: Mutex::default(),
            kept: (bytes / CHUNK_BYTES).max(1),
        }
    }

    /// The chunks kept at most.
    #[cfg(test)]
    pub(crate) fn limit(&self) -> usize {
        self.kept
    }

    pub(crate) fn get(&self, first: u32) -> Option<Arc<[u8]>> {
        self.chunks.lock().ok()?.get(&first).cloned()
    }

    pub(crate) fn put(&self, first: u32, bytes: Arc<[u8]>) {
        if let Ok(mut g) = self.chunks.lock() {
            if g.len() >= self.kept {
                let drop: Vec<u32> = g.keys().take(self.kept.div_ceil(8)).copied().collect();
                for k in drop {
                    g.remove(&k);
                }
            }
            g.insert(first, bytes);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn chunks_are_kept_and_an_eighth_goes_when_the_cache_fills() {
        let c = FactCache::default();
        const KEPT: usize = DEFAULT_FACT_BYTES / CHUNK_BYTES;
        assert_eq!(c.limit(), KEPT);
        for i in 0..KEPT as u32 {
            c.put(i, Arc::from(vec![i as u8]));
        }
        assert_eq!(c.get(3).as_deref(), Some(&[3u8][..]));
        c.put(KEPT as u32, Arc::from(vec![1u8]));
        let kept = (0..=KEPT as u32).filter(|&i| c.get(i).is_some()).count();
        assert_eq!(kept, KEPT - KEPT / 8 + 1);
        assert!(c.get(KEPT as u32).is_some());
    }

    #[test]
    fn the_limit_follows_the_bytes_given_and_keeps_one_chunk() {
        let c = FactCache::with_bytes(10 * CHUNK_BYTES + 5);
        assert_eq!(c.limit(), 10);
        for i in 0..10u32 {
            c.put(i, Arc::from(vec![i as u8]));
        }
        assert_eq!((0..10).filter(|&i| c.get(i).is_some()).count(), 10);
        c.put(10, Arc::from(vec![0u8]));
        assert_eq!((0..=10).filter(|&i| c.get(i).is_some()).count(), 10 - 2 + 1);
        let one = FactCache::with_bytes(0);
        assert_eq!(one.limit(), 1);
        one.put(1, Arc::from(vec![1u8]));
        one.put(2, Arc::from(vec![2u8]));
        assert!(one.get(1).is_none() && one.get(2).is_some());
    }
}

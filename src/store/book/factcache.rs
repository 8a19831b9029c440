//! The checked game-fact chunks a file read lately (docs/FORMAT.md §15.4), shared by its
//! readers: a filtered read of moves that keep their cells as their games' (§12.5) and a
//! choice of games each read a few games' facts, from chunks that the next query mostly needs
//! again.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

/// Chunks kept (~4 KiB each): at most 4 MiB a file, the facts of 456,704 games (a whole
/// pass over a file of up to that many games, as `verify` and a compaction make, reads each
/// chunk once).
const KEPT: usize = 1024;

/// A file's checked fact chunks by first game number, at most [`KEPT`] (an eighth of them,
/// arbitrary ones, dropped when full).
#[derive(Default)]
pub(crate) struct FactCache {
    chunks: Mutex<HashMap<u32, Arc<[u8]>>>,
}

impl FactCache {
    pub(crate) fn get(&self, first: u32) -> Option<Arc<[u8]>> {
        self.chunks.lock().ok()?.get(&first).cloned()
    }

    pub(crate) fn put(&self, first: u32, bytes: Arc<[u8]>) {
        if let Ok(mut g) = self.chunks.lock() {
            if g.len() >= KEPT {
                let drop: Vec<u32> = g.keys().take(KEPT / 8).copied().collect();
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
        for i in 0..KEPT as u32 {
            c.put(i, Arc::from(vec![i as u8]));
        }
        assert_eq!(c.get(3).as_deref(), Some(&[3u8][..]));
        c.put(KEPT as u32, Arc::from(vec![1u8]));
        let kept = (0..=KEPT as u32).filter(|&i| c.get(i).is_some()).count();
        assert_eq!(kept, KEPT - KEPT / 8 + 1);
        assert!(c.get(KEPT as u32).is_some());
    }
}

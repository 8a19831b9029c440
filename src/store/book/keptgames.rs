//! Kept choices of games: what one file's references chose for a position under a question
//! (filter and lists asked), kept so that a repeated answer neither decodes the block's
//! reference chunk nor reads the facts of every game the position's moves name again.
//!
//! The start position of a book names nearly every game (each cell keeps its 8 newest and 15
//! strongest; most cells of a faceted book hold one game): choosing its lists took over half
//! of a `/lichess` answer at the start position of the retagged medium book. A file never
//! changes once published, so what it chose stays true for the file's life.

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex};

use crate::store::facet::CellFilter;

/// Most choices a file keeps; past it the oldest goes. Each is a few hundred bytes (at most
/// 4 + 8 + 15 games and the singles asked), so this bounds the keep at about a megabyte.
const KEPT: usize = 4096;
/// A choice is kept when making it read at least this many references: below that the scan
/// costs little more than the keeping.
const MIN_SCANNED: usize = 256;

/// What was asked of a file's references at a position.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct GamesQuestion {
    pub key: u64,
    pub filter: CellFilter,
    pub top: usize,
    pub recent: usize,
    pub masters: bool,
    /// The moves whose single game is wanted, sorted.
    pub singles: Vec<u16>,
}

/// A referenced game one file chose: its number in the file, the move it played here and its
/// strength.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ChosenRef {
    pub number: u32,
    pub mv: u16,
    pub strength: u16,
}

/// What one file chose for a question: its best candidates for the lists (by number, each
/// once) and, per move asked for as a single, the last game found for it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct FileChoice {
    pub best: Vec<ChosenRef>,
    pub singles: Vec<(u16, u32)>,
    /// References read to make it (whether it is worth keeping).
    pub scanned: usize,
}

/// A file's kept choices, oldest first out.
#[derive(Default)]
pub struct KeptGames {
    inner: Mutex<KeptInner>,
}

#[derive(Default)]
struct KeptInner {
    map: HashMap<GamesQuestion, Arc<FileChoice>>,
    order: VecDeque<GamesQuestion>,
}

impl KeptGames {
    /// The choice kept for `q`.
    pub fn get(&self, q: &GamesQuestion) -> Option<Arc<FileChoice>> {
        self.inner.lock().ok()?.map.get(q).cloned()
    }

    /// Keeps `c` for `q` when it was costly enough to make.
    pub fn keep(&self, q: GamesQuestion, c: Arc<FileChoice>) {
        if c.scanned < MIN_SCANNED {
            return;
        }
        let Ok(mut g) = self.inner.lock() else {
            return;
        };
        if g.map.contains_key(&q) {
            return;
        }
        while g.order.len() >= KEPT {
            if let Some(old) = g.order.pop_front() {
                g.map.remove(&old);
            }
        }
        g.order.push_back(q.clone());
        g.map.insert(q, c);
    }

    /// Choices kept.
    pub fn len(&self) -> usize {
        self.inner.lock().map_or(0, |g| g.map.len())
    }

    /// Whether no choice is kept.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(key: u64) -> GamesQuestion {
        GamesQuestion {
            key,
            filter: CellFilter::default(),
            top: 4,
            recent: 4,
            masters: false,
            singles: vec![],
        }
    }

    fn choice(scanned: usize) -> Arc<FileChoice> {
        Arc::new(FileChoice {
            best: vec![ChosenRef {
                number: 7,
                mv: 1,
                strength: 4100,
            }],
            singles: vec![],
            scanned,
        })
    }

    #[test]
    fn cheap_choices_are_not_kept_and_the_oldest_goes_first() {
        let k = KeptGames::default();
        k.keep(q(1), choice(MIN_SCANNED - 1));
        assert!(k.get(&q(1)).is_none());
        for key in 0..KEPT as u64 + 3 {
            k.keep(q(key), choice(MIN_SCANNED));
        }
        assert_eq!(k.len(), KEPT);
        assert!(k.get(&q(0)).is_none() && k.get(&q(2)).is_none());
        assert_eq!(k.get(&q(3)), Some(choice(MIN_SCANNED)));
        // Another question at the same position is another choice.
        let mut other = q(3);
        other.filter.speeds = Some(1 << 3);
        assert!(k.get(&other).is_none());
    }
}

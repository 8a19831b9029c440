//! The entries' shapes (key and move codes, in block order) that `verify` logs while it checks
//! a file's blocks, so the file's references are checked against them (docs/FORMAT.md §15.4)
//! without decoding every block a second time. Any doubt about a block (a problem found in
//! it, codes it could not name, a key split across blocks) drops the log: the references are
//! then checked against the blocks decoded again, which reports what is wrong with them.

use crate::ops::game::Game;
use crate::store::book::{BookFile, LogKind, LoggedShapes, ShapeLog};

/// Whether the shapes of `file`'s blocks are wanted: it is a chess file with references.
pub(super) fn wanted(file: &BookFile, game: Game) -> bool {
    matches!(game, Game::Chess) && file.has_game_refs()
}

/// The shape log of one file being verified.
pub(super) struct ShapeRecorder {
    log: Option<ShapeLog>,
}

impl ShapeRecorder {
    /// A recorder for `file`: logging if its shapes are wanted and a log can be made.
    pub(super) fn of(file: &BookFile, game: Game) -> ShapeRecorder {
        static RUN: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let log = wanted(file, game)
            .then(|| {
                let path = std::env::temp_dir().join(format!(
                    "bookdb-verify-{}-{}.shapes",
                    std::process::id(),
                    RUN.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
                ));
                ShapeLog::create(path, LogKind::Codes).ok()
            })
            .flatten();
        ShapeRecorder { log }
    }

    /// Logs the next block's shapes (blocks in key order): its key, its entries' shapes
    /// (`None`: some entry's codes were not named), the problems found in it, and the last
    /// key of the block before.
    pub(super) fn block(
        &mut self,
        block_key: u64,
        shapes: Option<Vec<(u64, Vec<u16>)>>,
        problems: u64,
        prev_key: Option<u64>,
    ) {
        let Some(log) = self.log.as_mut() else {
            return;
        };
        let fits = |s: &Vec<(u64, Vec<u16>)>| {
            problems == 0
                && s.first().is_some_and(|f| f.0 == block_key)
                && prev_key != Some(block_key)
        };
        let logged = match shapes {
            Some(s) if fits(&s) => s
                .iter()
                .try_for_each(|(k, codes)| log.push(*k, codes))
                .is_ok(),
            _ => false,
        };
        match logged {
            true => log.block(block_key),
            false => self.log = None,
        }
    }

    /// The logged shapes, read back by block; `None` if some block dropped the log.
    pub(super) fn finish(self) -> Option<LoggedShapes> {
        self.log.and_then(|l| l.finish().ok())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn recorder() -> ShapeRecorder {
        let path = std::env::temp_dir().join(format!(
            "bookdb-verify-shapes-test-{}-{:?}",
            std::process::id(),
            std::thread::current().id()
        ));
        ShapeRecorder {
            log: ShapeLog::create(path, LogKind::Codes).ok(),
        }
    }

    #[test]
    fn sound_blocks_come_back_as_logged() {
        let mut r = recorder();
        let a = vec![(5, vec![1, 2]), (7, vec![3])];
        let b = vec![(9, vec![4])];
        r.block(5, Some(a.clone()), 0, None);
        r.block(9, Some(b.clone()), 0, Some(7));
        let mut log = r.finish().expect("logged");
        let first = log.next_block().unwrap().unwrap();
        assert_eq!((first.key, first.entries), (5, a));
        let second = log.next_block().unwrap().unwrap();
        assert_eq!((second.key, second.entries), (9, b));
        assert!(log.next_block().unwrap().is_none());
    }

    #[test]
    fn any_doubt_about_a_block_drops_the_log() {
        let good = || Some(vec![(5, vec![1])]);
        // Codes not named, a problem found, a first key unlike the block's, a split key.
        let cases = [
            (5, None, 0, None),
            (5, good(), 1, None),
            (6, good(), 0, None),
            (5, good(), 0, Some(5)),
        ];
        for (key, shapes, problems, prev) in cases {
            let mut r = recorder();
            r.block(key, shapes, problems, prev);
            assert!(r.finish().is_none());
        }
    }
}

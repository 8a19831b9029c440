//! `verify --memory`: how the budget is shared out between what verify holds.

use std::path::Path;

use crate::error::{Error, Result};
use crate::ops::import::memory::{fit_budget, machine_memory_bytes};
use crate::store::BookMeta;
use crate::store::book::{FOLD_WINDOW_PER_THREAD, Manifest};

/// The default of `verify --memory`, MiB.
pub const DEFAULT_VERIFY_MEMORY_MIB: usize = 256;
/// The least `verify --memory` takes, MiB: below it the shares of [`VerifyBudget`] get too small
/// to be worth bounding apart (the fixed part of the process is larger).
pub const MIN_VERIFY_MEMORY_MIB: usize = 32;

/// How `--memory` is shared out. Only what grows with use is sized here; what is fixed (the
/// program, the allocator, zstd contexts, the merged view's decoding batches, each a few MiB)
/// is the constant of docs/PERFORMANCE.md's "peak RSS ≤ --memory + a constant".
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct VerifyBudget {
    /// redb's read cache of each file's read-only handle: a quarter of the budget, split
    /// between the book's files. The walk reads every page once, so this is room for redb's
    /// branch pages rather than a working set.
    pub redb_per_file: usize,
    /// redb's cache of the private copy its integrity check opens: a sixteenth.
    pub check_copy: usize,
    /// Bytes of the blocks in flight (read, being checked, waiting for the fold): an eighth.
    pub window_bytes: usize,
    /// Checked game-fact chunks each file keeps: a quarter, split between the files. The walk
    /// reads a file's games' facts in the order of its positions (for the moves that keep
    /// their cells as their games'), so the chunks are read again and again unless most are
    /// kept (9 B a game: 64 MiB holds the facts of 7.3 million games).
    pub facts_per_file: usize,
}

impl VerifyBudget {
    /// The budget of a verify of the book at `path` with `--memory memory_mib`: refused below
    /// [`MIN_VERIFY_MEMORY_MIB`], capped at three quarters of the machine (as `import
    /// --memory`), then shared out between the files the book's manifest names. Returns the
    /// shares, the MiB used and, if it was capped, the warning that says so.
    pub(super) fn for_book(
        path: &Path,
        memory_mib: usize,
    ) -> Result<(VerifyBudget, usize, Option<String>)> {
        if memory_mib < MIN_VERIFY_MEMORY_MIB {
            return Err(Error::Usage(format!(
                "--memory {memory_mib} MiB is too little for verify: give \
                 {MIN_VERIFY_MEMORY_MIB} MiB or more (the default is {DEFAULT_VERIFY_MEMORY_MIB})"
            )));
        }
        let (mib, warning) = fit_budget(memory_mib, machine_memory_bytes());
        // The files the manifest names (a damaged manifest is the open's to report). A writer
        // may publish one more before the book is opened: that file's share is the most the
        // bound can be off by.
        let files = crate::store::files::resolve_book(path)
            .ok()
            .and_then(|p| Manifest::read(&p).ok().flatten())
            .map_or(1, |m| m.segments.len() + 1);
        Ok((VerifyBudget::new(mib, files), mib, warning))
    }

    /// The shares of `memory_mib` MiB for a book of `files` files (at least one).
    pub fn new(memory_mib: usize, files: usize) -> VerifyBudget {
        let bytes = memory_mib.saturating_mul(1 << 20);
        VerifyBudget {
            redb_per_file: bytes / 4 / files.max(1),
            check_copy: bytes / 16,
            window_bytes: bytes / 8,
            facts_per_file: bytes / 4 / files.max(1),
        }
    }

    /// Memory for sorting the references a file's check rebuilds: the blocks' window, free by
    /// then (a file's references are checked after its walk). It was a fixed 64 MiB beside the
    /// budget, which a book storing 4M games filled: peak RSS 339 MiB at `--memory 256`.
    pub fn refs_bytes(&self) -> usize {
        self.window_bytes
    }

    /// The blocks a file's walk may hold at once (at most [`FOLD_WINDOW_PER_THREAD`] per
    /// thread, at least one): its window's bytes over twice the file's mean stored plus
    /// decompressed block (a block in flight holds both; twice for blocks above the mean).
    pub(super) fn window_blocks(&self, meta: &BookMeta, threads: usize) -> usize {
        let per_block = (meta.stored_bytes + meta.raw_bytes) / meta.blocks.max(1);
        let per_block = usize::try_from(per_block.saturating_mul(2))
            .unwrap_or(usize::MAX)
            .max(1);
        (self.window_bytes / per_block).clamp(1, threads.max(1) * FOLD_WINDOW_PER_THREAD)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shares_add_up_to_less_than_the_budget_and_split_redb_between_files() {
        let one = VerifyBudget::new(256, 1);
        assert_eq!(one.redb_per_file, 64 << 20);
        assert_eq!(one.check_copy, 16 << 20);
        assert_eq!(one.window_bytes, 32 << 20);
        let nine = VerifyBudget::new(256, 9);
        assert_eq!(nine.redb_per_file, (64 << 20) / 9);
        assert_eq!(one.facts_per_file, 64 << 20);
        assert!(
            9 * (nine.redb_per_file + nine.facts_per_file) + nine.check_copy + nine.window_bytes
                <= 256 << 20
        );
        assert_eq!(VerifyBudget::new(256, 0), one);
    }

    #[test]
    fn the_window_shrinks_with_the_budget_but_keeps_one_block() {
        let meta = BookMeta {
            blocks: 1000,
            stored_bytes: 4_000_000,
            raw_bytes: 12_000_000,
            ..BookMeta::default()
        };
        // 32 KiB a block (twice 16 KB): 32 MiB holds 1000 blocks, more than 2 × 8.
        assert_eq!(VerifyBudget::new(256, 1).window_blocks(&meta, 2), 16);
        let small = VerifyBudget {
            window_bytes: 100_000,
            ..VerifyBudget::new(32, 1)
        };
        assert_eq!(small.window_blocks(&meta, 2), 3);
        let none = VerifyBudget {
            window_bytes: 0,
            ..small
        };
        assert_eq!(none.window_blocks(&meta, 2), 1);
        assert_eq!(none.window_blocks(&BookMeta::default(), 0), 1);
    }

    #[test]
    fn too_little_memory_is_a_usage_error() {
        let dir = tempfile::tempdir().unwrap();
        let err = VerifyBudget::for_book(&dir.path().join("b.book"), MIN_VERIFY_MEMORY_MIB - 1)
            .unwrap_err();
        assert!(matches!(err, Error::Usage(_)), "{err}");
        assert!(err.to_string().contains("--memory 31 MiB"), "{err}");
        let (b, mib, warning) =
            VerifyBudget::for_book(&dir.path().join("b.book"), MIN_VERIFY_MEMORY_MIB).unwrap();
        assert_eq!((b, mib, warning), (VerifyBudget::new(32, 1), 32, None));
    }
}

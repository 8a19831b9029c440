//! `compact`, `merge` and `migrate --memory`: how the budget is shared out between the writer
//! and the books a rewrite reads, so that its peak stays within the budget plus a constant
//! whatever the books' sizes (docs/PERFORMANCE.md, "Rewrites within --memory").

use crate::error::{Error, Result};
use crate::ops::import::memory::{fit_budget, machine_memory_bytes};
use crate::store::{CacheSizes, WriterOptions};

/// The default `--memory` of `compact`, `merge` and `migrate`, MiB.
pub const DEFAULT_REWRITE_MEMORY_MIB: usize = 256;
/// The least they take, MiB: below it the shares get too small to be worth bounding apart
/// (the fixed part of the process is larger).
pub const MIN_REWRITE_MEMORY_MIB: usize = 32;

/// The shares of a rewrite's budget. What grows with the work is sized here; what is fixed
/// (the program, the allocator, zstd contexts, a decoded block per input file) is the constant
/// of "peak RSS ≤ --memory + a constant".
#[derive(Clone, Debug)]
pub struct RewriteBudget {
    /// The writer: its model sample (an eighth), commit batches (a sixteenth, with up to four
    /// of them sealing: a quarter) and redb's write cache (an eighth): see
    /// `WriterOptions::for_memory`.
    pub writer: WriterOptions,
    /// Each file read: redb's read cache and the opened-block cache, together an eighth of the
    /// budget over the files. A rewrite reads every page once, so this is room for redb's
    /// branch pages rather than a working set.
    pub reader: CacheSizes,
    /// The budget used, MiB (after capping to the machine).
    pub mib: usize,
}

impl RewriteBudget {
    /// The budget of a rewrite that reads `files` book files (base and segments of every
    /// input) with `--memory memory_mib`: refused below [`MIN_REWRITE_MEMORY_MIB`], capped at
    /// three quarters of the machine (as `import --memory`; the warning says so). `writer`
    /// gives the options the budget does not size (block size, zstd level, dictionary).
    pub fn new(
        memory_mib: usize,
        files: usize,
        writer: &WriterOptions,
    ) -> Result<(RewriteBudget, Option<String>)> {
        if memory_mib < MIN_REWRITE_MEMORY_MIB {
            return Err(Error::Usage(format!(
                "--memory {memory_mib} MiB is too little for a rewrite: give \
                 {MIN_REWRITE_MEMORY_MIB} MiB or more (the default is {DEFAULT_REWRITE_MEMORY_MIB})"
            )));
        }
        let (mib, warning) = fit_budget(memory_mib, machine_memory_bytes());
        Ok((Self::of_bytes(mib, files, writer), warning))
    }

    fn of_bytes(mib: usize, files: usize, writer: &WriterOptions) -> RewriteBudget {
        let bytes = mib.saturating_mul(1 << 20);
        let sized = WriterOptions::for_memory(bytes);
        let per_file = bytes / 8 / files.max(1);
        RewriteBudget {
            writer: WriterOptions {
                model_sample: sized.model_sample.min(writer.model_sample),
                commit_bytes: sized.commit_bytes.min(writer.commit_bytes),
                cache_bytes: sized.cache_bytes.min(writer.cache_bytes),
                ..writer.clone()
            },
            reader: CacheSizes {
                redb_bytes: per_file / 2,
                block_bytes: per_file / 2,
                // A rewrite reads its files' game facts in the order of their positions
                // (moves that keep their cells as their games'), not of their games.
                fact_bytes: per_file,
                ..CacheSizes::default()
            },
            mib,
        }
    }
}

/// The files of the book at `path` (its base and the segments its manifest lists; 1 if the
/// manifest cannot be read: the open reports that).
pub(crate) fn book_files(path: &std::path::Path) -> usize {
    crate::store::book::file_count(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shares_stay_within_the_budget_and_keep_what_it_does_not_size() {
        let given = WriterOptions {
            target_block_bytes: 1234,
            ..WriterOptions::default()
        };
        for (mib, files) in [(32, 1), (64, 9), (256, 1), (256, 17), (4096, 2)] {
            let b = RewriteBudget::of_bytes(mib, files, &given);
            let bytes = mib << 20;
            let w = &b.writer;
            let sized = w.model_sample * 200 + 4 * w.commit_bytes + w.cache_bytes;
            let read = files * (b.reader.redb_bytes + b.reader.block_bytes + b.reader.fact_bytes);
            assert!(sized + read <= bytes, "{mib} MiB, {files} files: {b:?}");
            assert_eq!(w.target_block_bytes, 1234);
        }
        // Never more than the defaults, however large the budget.
        let big = RewriteBudget::of_bytes(1 << 20, 1, &WriterOptions::default());
        assert!(big.writer.cache_bytes <= WriterOptions::default().cache_bytes);
        assert!(RewriteBudget::new(16, 1, &WriterOptions::default()).is_err());
    }
}

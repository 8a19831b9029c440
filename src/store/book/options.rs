//! [`WriterOptions`]: how a [`super::BookWriter`] sizes blocks, compresses and commits, and
//! the options that keep it within a memory budget.

/// A redb leaf page holding one block value has this much room for it (4 KiB page minus the
/// page header, one fixed-width key and its offset, with a margin).
pub(crate) const PAGE_FIT: usize = 4096 - 48;

/// Blocks are committed in transactions of about this many bytes.
pub(super) const COMMIT_BYTES: usize = 64 << 20;
/// Positions sampled before the position model and the dictionary are trained. Books are in
/// key order, which is a uniformly random order of positions, so the first ones are a fair
/// sample. The sealing threads wait while the sample is gathered and trained on, so it is
/// small: on the 135,000-game benchmark 20,000 to 200,000 give the same file size (to 0.03%),
/// 10,000 a 2.7% larger one (too few dictionary samples); see docs/PERFORMANCE.md.
pub(super) const MODEL_SAMPLE: usize = 32_768;

/// Options for writing blocks.
#[derive(Clone, Debug)]
pub struct WriterOptions {
    /// A block is closed once its estimated stored size reaches about this many bytes.
    pub target_block_bytes: usize,
    /// zstd level.
    pub level: i32,
    /// Train a zstd dictionary on the first blocks and use it for all.
    pub dictionary: bool,
    /// Dictionary size in bytes.
    pub dictionary_bytes: usize,
    /// Positions held in memory to train the position model (memory: ~200 bytes each).
    pub model_sample: usize,
    /// Sealed blocks are committed in transactions of about this many bytes.
    pub commit_bytes: usize,
    /// redb's page cache while writing.
    pub cache_bytes: usize,
}

impl WriterOptions {
    /// Options that keep the writer within about a quarter of `memory` bytes.
    pub(crate) fn for_memory(memory: usize) -> WriterOptions {
        WriterOptions {
            model_sample: (memory / 8 / 200).clamp(20_000, MODEL_SAMPLE),
            commit_bytes: (memory / 16).clamp(1 << 20, COMMIT_BYTES),
            cache_bytes: (memory / 8).clamp(4 << 20, 256 << 20),
            ..WriterOptions::default()
        }
    }
}

impl Default for WriterOptions {
    fn default() -> Self {
        WriterOptions {
            target_block_bytes: PAGE_FIT,
            level: 9,
            dictionary: true,
            dictionary_bytes: 16 * 1024,
            model_sample: MODEL_SAMPLE,
            commit_bytes: COMMIT_BYTES,
            cache_bytes: 256 << 20,
        }
    }
}

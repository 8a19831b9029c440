//! Decoding a run's blocks ahead of the merge that reads it: a pool of threads shared by the
//! runs of one merge, and the decoding of one block (the same on those threads and in place).
//!
//! An import's final merge reads every run on one thread, which also feeds the book's writer;
//! decoding the runs' positions there (the position model, then each position's packed form)
//! took over half of that thread's time, while the writer's sealing threads idled
//! (docs/PERFORMANCE.md, "Runs decoded ahead of the merge").

use std::sync::Arc;

use crate::store::block::{self, BlockView, CodedCells, Keep, PlainDecompressor};
use crate::store::workers::Workers;
use crate::store::{PositionCodec, PositionModel};

/// A run block to decode: its ordinal in the run, its frame bytes, the run's codec and model,
/// the model id its blocks must carry, and what to keep as stored.
pub(super) type RunJob = (
    u64,
    Vec<u8>,
    Arc<dyn PositionCodec>,
    Arc<dyn PositionModel>,
    u16,
    Keep,
);

/// A decoded run block's entries, cells still coded, or what is wrong with it.
pub(super) type RunDecoded = Result<Vec<CodedCells>, String>;

/// Threads that decode the blocks of the runs one merge reads.
pub(crate) type RunDecoders = Workers<RunJob, RunDecoded>;

/// Run blocks each reader keeps submitted beyond the one the merge is taking (each holds its
/// frame bytes, then its decoded entries: about what the block being taken holds, so a run
/// being read holds up to two decoded blocks: measured +0.8 MiB at `--memory 64` and +3 MiB
/// at 256 on the bench set, docs/PERFORMANCE.md "Runs decoded ahead of the merge").
pub(super) const READ_AHEAD: usize = 1;

/// A pool for the runs of one merge; `None` on one core, or when the system starts none of
/// its threads (each block is then decoded in place, when the merge reaches it).
pub(crate) fn run_decoders() -> Option<Arc<RunDecoders>> {
    let threads = crate::store::workers::cores();
    (threads > 1)
        .then(|| with_threads(threads))
        .filter(|p| p.threads() > 0)
}

/// A pool of `threads` decoding threads.
pub(super) fn with_threads(threads: usize) -> Arc<RunDecoders> {
    Arc::new(Workers::new(threads, "bookdb-rundec", decode_job))
}

fn decode_job((ord, bytes, codec, model, model_id, keep): RunJob) -> RunDecoded {
    decode_block(ord, &bytes, codec.as_ref(), model.as_ref(), model_id, keep)
}

/// Decodes run block `ord` (`bytes`, its frame): its entries with their cells still coded.
/// Its header must name the run's model (`model_id`) and at least one entry.
pub(super) fn decode_block(
    ord: u64,
    bytes: &[u8],
    codec: &dyn PositionCodec,
    model: &dyn PositionModel,
    model_id: u16,
    keep: Keep,
) -> RunDecoded {
    let open = block::open_block(ord, bytes, &PlainDecompressor)
        .map_err(|e| format!("block {ord}: {e}"))?;
    if open.header.model_id != model_id || open.header.count == 0 {
        return Err(format!(
            "block {ord}: model {} and {} entries (the run's model is {model_id})",
            open.header.model_id, open.header.count
        ));
    }
    BlockView::parse(ord, &open)
        .and_then(|v| v.entries_cells_coded(codec, model, keep))
        .map_err(|e| format!("block {ord}: {e}"))
}

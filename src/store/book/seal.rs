//! Sealing threads: segments of entries filled into blocks and sealed (position coding, move
//! indexing, zstd) in parallel, handed back in segment order.

use std::sync::Arc;

use crate::store::block::{self};
use crate::store::entry::Entry;
use crate::store::error::{Error, Result};
use crate::store::{PositionCodec, PositionModel};

/// What a sealing thread needs besides the entries.
pub(super) struct SealContext {
    pub(super) codec: Arc<dyn PositionCodec>,
    pub(super) model: Arc<dyn PositionModel>,
    pub(super) model_id: u16,
    pub(super) limit: usize,
    /// Expected stored section-A bytes per entry, in 1/256 bytes (measured on the sample).
    pub(super) a_per_entry: usize,
}

/// The blocks of one segment, sealed.
#[derive(Default)]
pub(super) struct SealedSegment {
    pub(super) blocks: Vec<(u64, Vec<u8>)>,
    pub(super) raw_bytes: u64,
    pub(super) seals: u64,
}

pub(super) type SegmentJob = (u64, Vec<Entry>, Option<Vec<block::Prepared>>);
pub(super) type SegmentDone = (u64, Result<SealedSegment>);

/// Threads sealing segments; results are written in segment order.
pub(super) struct SealPool {
    pub(super) tx: Option<crossbeam_channel::Sender<SegmentJob>>,
    pub(super) rx: crossbeam_channel::Receiver<SegmentDone>,
    pub(super) handles: Vec<std::thread::JoinHandle<()>>,
    pub(super) sent: u64,
    pub(super) written: u64,
    pub(super) done: std::collections::BTreeMap<u64, SealedSegment>,
    pub(super) max_in_flight: u64,
    /// Segment buffers the sealing threads emptied, for the writer to fill again: a fresh
    /// buffer of 65,536 entries is 5 MiB of new pages to fault in.
    pub(super) spare: crossbeam_channel::Receiver<Vec<Entry>>,
}

/// Sealing threads: the cores, at most 8 (looked up once: it reads cgroup files).
pub(super) fn seal_threads() -> usize {
    static THREADS: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *THREADS.get_or_init(|| {
        std::thread::available_parallelism()
            .map_or(1, |n| n.get())
            .min(8)
    })
}

impl SealPool {
    pub(super) fn start(
        ctx: SealContext,
        level: i32,
        dict: Option<(Vec<u8>, u16)>,
        max_in_flight: u64,
    ) -> Result<SealPool> {
        let threads = seal_threads();
        let (tx, job_rx) = crossbeam_channel::bounded::<SegmentJob>(threads);
        let (done_tx, rx) = crossbeam_channel::unbounded::<SegmentDone>();
        let (spare_tx, spare) = crossbeam_channel::unbounded::<Vec<Entry>>();
        let ctx = Arc::new(ctx);
        let mut handles = Vec::with_capacity(threads);
        for _ in 0..threads {
            let comp = match &dict {
                Some((d, _)) => zstd::bulk::Compressor::with_dictionary(level, d),
                None => zstd::bulk::Compressor::new(level),
            }
            .map_err(|e| Error::io("starting zstd", e))?;
            let dict_id = dict.as_ref().map_or(0, |(_, id)| *id);
            let (job_rx, done_tx, ctx) = (job_rx.clone(), done_tx.clone(), ctx.clone());
            let spare_tx = spare_tx.clone();
            handles.push(std::thread::spawn(move || {
                let mut comp = comp;
                let mut scratch = Vec::new();
                while let Ok((seq, mut entries, prepared)) = job_rx.recv() {
                    let res = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                        seal_segment(&ctx, &mut comp, dict_id, &entries, prepared, &mut scratch)
                    }))
                    .unwrap_or_else(|_| {
                        Err(Error::Internal("block sealing thread panicked".into()))
                    });
                    if done_tx.send((seq, res)).is_err() {
                        return;
                    }
                    entries.clear();
                    let _ = spare_tx.send(entries);
                }
            }));
        }
        Ok(SealPool {
            tx: Some(tx),
            rx,
            handles,
            sent: 0,
            written: 0,
            done: Default::default(),
            max_in_flight,
            spare,
        })
    }

    /// Receives one finished segment.
    pub(super) fn receive(&mut self) -> Result<()> {
        let (seq, res) = self
            .rx
            .recv()
            .map_err(|_| Error::Internal("block sealing threads stopped".into()))?;
        self.done.insert(seq, res?);
        Ok(())
    }

    /// The next segment in order, if it is done.
    pub(super) fn next_ready(&mut self) -> Option<SealedSegment> {
        let s = self.done.remove(&self.written)?;
        self.written += 1;
        Some(s)
    }
}

impl Drop for SealPool {
    fn drop(&mut self) {
        self.tx.take();
        for h in self.handles.drain(..) {
            let _ = h.join();
        }
    }
}

/// Stored bytes a cell of a move takes, about (retagged lichess-style games: 3.5–4.5).
const CELL_BYTES: usize = 4;

/// Fills and seals the blocks of one segment (entries in order, never splitting a key).
pub(super) fn seal_segment(
    ctx: &SealContext,
    comp: &mut zstd::bulk::Compressor<'static>,
    dict_id: u16,
    entries: &[Entry],
    prepared: Option<Vec<block::Prepared>>,
    scratch: &mut Vec<block::Prepared>,
) -> Result<SealedSegment> {
    let prepared: &[block::Prepared] = match &prepared {
        Some(p) if p.len() == entries.len() => p,
        _ => {
            // The thread's buffer, reused from segment to segment.
            scratch.clear();
            scratch.reserve(entries.len());
            for e in entries {
                scratch.push(block::prepare(e, &*ctx.codec, &*ctx.model)?);
            }
            scratch
        }
    };
    let mut out = SealedSegment::default();
    // Running average of stored section-A bytes per entry, in 1/256 bytes.
    let mut a_per_entry = ctx.a_per_entry;
    let estimate =
        |a_per_entry: usize, n: usize, b: usize| block::HEADER_LEN + b + n * a_per_entry / 256;
    // An entry's cells (books with facets) vary far more than its other columns: their
    // stored bytes are estimated apart, at CELL_BYTES each, and left out of the average.
    let cells = |i: usize| -> usize {
        CELL_BYTES
            * entries[i]
                .moves
                .iter()
                .map(|m| m.cells.len())
                .sum::<usize>()
    };
    let extra = |i: usize| {
        prepared[i].coded.len() + 3 * entries[i].moves.len().saturating_sub(1) + cells(i)
    };
    let mut start = 0;
    let mut pending_b = 0;
    for i in 0..=entries.len() {
        let end_of_block = i == entries.len()
            || (i > start
                && entries[i - 1].key != entries[i].key
                && estimate(a_per_entry, i - start + 1, pending_b + extra(i)) > ctx.limit);
        if end_of_block && i > start {
            // Seal [start, i) into as few blocks as fit the limit.
            while start < i {
                let mut n = i - start;
                loop {
                    let (es, ps) = (&entries[start..start + n], &prepared[start..start + n]);
                    out.seals += 1;
                    let payload = block::build_payload_with(es, ps)?;
                    let sealed = block::seal(&payload, ctx.model_id, Some((&mut *comp, dict_id)))
                        .map_err(|e| Error::io("zstd", e))?;
                    let fits = sealed.len() <= ctx.limit;
                    // Never split entries of one key; a single oversized entry goes alone.
                    let can_shrink = (1..n).rev().find(|&k| es[k - 1].key != es[k].key);
                    if fits || can_shrink.is_none() {
                        let b: usize = ps.iter().map(|p| p.coded.len()).sum();
                        let c: usize = (start..start + n).map(cells).sum();
                        let a = sealed.len().saturating_sub(block::HEADER_LEN + b + c);
                        out.raw_bytes += (payload.a.len() + b) as u64;
                        a_per_entry = (a_per_entry * 3 + a * 256 / n) / 4;
                        out.blocks.push((es[0].key, sealed));
                        start += n;
                        break;
                    }
                    let over = sealed.len() - ctx.limit;
                    let avg = sealed.len() / n;
                    let mut target = n.saturating_sub(over / avg.max(1) + 1).max(1);
                    while target > 1 && es[target - 1].key == es[target].key {
                        target -= 1;
                    }
                    n = target.min(can_shrink.unwrap_or(1));
                }
            }
            pending_b = 0;
        }
        if i < entries.len() {
            pending_b += extra(i);
        }
    }
    Ok(out)
}

/// Where a segment of at least `seg` entries ends (between keys), if `entries` holds one.
pub(super) fn segment_cut(entries: &[Entry], seg: usize) -> Option<usize> {
    (seg.max(1)..entries.len()).find(|&i| entries[i - 1].key != entries[i].key)
}

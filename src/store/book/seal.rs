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
    /// The file's store holds every game it counts: moves of few games keep their cells as
    /// their games' (version-3 blocks, `block::keeps_game_cells`).
    pub(super) game_cells: bool,
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

/// Sealing threads: the cores, at most 8 ([`crate::store::workers::cores`]).
pub(super) fn seal_threads() -> usize {
    crate::store::workers::cores()
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

/// Stored bytes a cell of a move takes, about (retagged lichess-style games: 3.5–4.5): the
/// prior of [`BlockEstimate`]'s per-cell cost.
const CELL_BYTES: f64 = 4.0;

/// A block's stored bytes before it is sealed: the header, what is known exactly (the coded
/// positions, 3 bytes per move beyond an entry's first) and the compressed rest, estimated
/// as `a · entries + c · cells`. `a` and `c` are fitted to the blocks sealed so far in this
/// segment (least squares, older blocks decaying, pulled toward the prior so that a segment
/// without cells, or with cells in proportion to its entries, still has an answer).
struct BlockEstimate {
    /// Decayed sums of n², n·k, k², n·y, k·y over sealed blocks (n entries, k cells, y the
    /// stored bytes not known exactly).
    s: [f64; 5],
    a: f64,
    c: f64,
    prior: (f64, f64),
}

impl BlockEstimate {
    /// How much the last block weighs against the ones before (per block sealed).
    const DECAY: f64 = 0.8;
    /// The prior's weight, as that many entries (and cells) of evidence squared.
    const PRIOR: f64 = 64.0;

    fn new(a_per_entry_256: usize) -> BlockEstimate {
        let a = a_per_entry_256 as f64 / 256.0;
        BlockEstimate {
            s: [0.0; 5],
            a,
            c: CELL_BYTES,
            prior: (a, CELL_BYTES),
        }
    }

    fn bytes(&self, entries: usize, cells: usize, known: usize) -> usize {
        let rest = self.a * entries as f64 + self.c * cells as f64;
        block::HEADER_LEN + known + rest.max(0.0) as usize
    }

    /// Learns from a sealed block of `entries` entries and `cells` cells whose stored bytes
    /// beyond the header and the known part were `rest`.
    fn observe(&mut self, entries: usize, cells: usize, rest: usize) {
        let (n, k, y) = (entries as f64, cells as f64, rest as f64);
        for (v, add) in self.s.iter_mut().zip([n * n, n * k, k * k, n * y, k * y]) {
            *v = *v * Self::DECAY + add;
        }
        let (p, (a0, c0)) = (Self::PRIOR, self.prior);
        let [nn, nk, kk, ny, ky] = self.s;
        let (nn, kk, ny, ky) = (nn + p, kk + p, ny + p * a0, ky + p * c0);
        let det = nn * kk - nk * nk;
        if det > 0.0 {
            let a = (ny * kk - ky * nk) / det;
            let c = (ky * nn - ny * nk) / det;
            // A fit that gives either part a negative cost explains nothing: keep the last.
            if a >= 0.0 && c >= 0.0 {
                self.a = a;
                self.c = c;
            }
        }
    }
}

/// A block is closed when its estimate passes the limit less 1/AIM_BELOW of it: an unbiased
/// estimate aimed at the limit itself overshoots half the time, and each overshoot seals the
/// block again (measured on the large set at `--max-ply 30`: aiming at the limit took 40 %
/// more seals than aiming 1 % below, for a book 0.4 % smaller).
const AIM_BELOW: usize = 100;

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
    let mut est = BlockEstimate::new(ctx.a_per_entry);
    // An entry's cells (books with facets) vary far more than its other columns, so the
    // estimate counts them apart.
    let cells = |i: usize| -> usize {
        let e = &entries[i];
        e.moves
            .iter()
            .filter(|m| !block::keeps_game_cells(ctx.game_cells, e, m))
            .map(|m| m.cells.len())
            .sum()
    };
    let known = |i: usize| prepared[i].coded.len() + 3 * entries[i].moves.len().saturating_sub(1);
    let (mut start, mut pending_known, mut pending_cells) = (0, 0, 0);
    let mut i = 0;
    while i <= entries.len() {
        let last = i == entries.len();
        let end_of_block = last
            || (i > start
                && entries[i - 1].key != entries[i].key
                && est.bytes(
                    i - start + 1,
                    pending_cells + cells(i),
                    pending_known + known(i),
                ) > ctx.limit - ctx.limit / AIM_BELOW);
        if end_of_block && i > start {
            // Seal the longest run of whole keys from `start` that fits, trying all of
            // [start, i) first; at the end of the segment, seal everything.
            loop {
                let mut n = i - start;
                loop {
                    let (es, ps) = (&entries[start..start + n], &prepared[start..start + n]);
                    out.seals += 1;
                    let payload = block::build_payload_with(es, ps, ctx.game_cells)?;
                    let sealed = block::seal(&payload, ctx.model_id, Some((&mut *comp, dict_id)))
                        .map_err(|e| Error::io("zstd", e))?;
                    let fits = sealed.len() <= ctx.limit;
                    // Never split entries of one key; a single oversized entry goes alone.
                    let can_shrink = (1..n).rev().find(|&k| es[k - 1].key != es[k].key);
                    if fits || can_shrink.is_none() {
                        let kn: usize = (start..start + n).map(known).sum();
                        let c: usize = (start..start + n).map(cells).sum();
                        est.observe(n, c, sealed.len().saturating_sub(block::HEADER_LEN + kn));
                        let b: usize = ps.iter().map(|p| p.coded.len()).sum();
                        out.raw_bytes += (payload.a.len() + b) as u64;
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
                if !last || start == i {
                    break;
                }
            }
            // What did not fit is carried into the next block rather than sealed alone (a
            // small block wastes most of its page): decide again at the same entry.
            pending_known = (start..i).map(known).sum();
            pending_cells = (start..i).map(cells).sum();
            if last {
                break;
            }
            continue;
        }
        if last {
            break;
        }
        pending_known += known(i);
        pending_cells += cells(i);
        i += 1;
    }
    Ok(out)
}

/// Where a segment of at least `seg` entries ends (between keys), if `entries` holds one.
pub(super) fn segment_cut(entries: &[Entry], seg: usize) -> Option<usize> {
    (seg.max(1)..entries.len()).find(|&i| entries[i - 1].key != entries[i].key)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::block::{BlockView, PlainDecompressor, open_block};
    use crate::store::entry::MoveRec;
    use crate::store::facet::{Cell, CellStat, Period};

    /// The sample positions, each with one move of `cells(i)` one-game cells.
    fn entries(cells: impl Fn(usize) -> usize) -> Vec<Entry> {
        let codec = crate::chess_codec();
        let mut v: Vec<Entry> = crate::chess::tests_support::sample_positions()
            .into_iter()
            .enumerate()
            .map(|(i, pos)| {
                let mut m = MoveRec {
                    mv: 796 + i as u16,
                    cells: (0..cells(i))
                        .map(|j| CellStat {
                            cell: Cell {
                                period: Period::Month(1990 + (j / 12) as u16, 1 + (j % 12) as u8),
                                speed: 1 + (j % 6) as u8,
                                group: 1 + (i % 9) as u8,
                                mode: 1,
                            }
                            .id(),
                            white: 1,
                            rating_sum: 1500 + (i * 7 + j * 13) as u64 % 900,
                            rating_count: 1,
                            opp_sum: 1400 + (i * 11 + j * 3) as u64 % 1000,
                            opp_count: 1,
                            ..CellStat::default()
                        })
                        .collect(),
                    white: 1,
                    ..MoveRec::default()
                };
                crate::store::cells::set_totals(&mut m);
                Entry {
                    coded: None,
                    key: codec.key(&pos).unwrap(),
                    pos: Some(pos),
                    moves: vec![m],
                }
            })
            .collect();
        v.sort_by(Entry::cmp_id);
        v
    }

    fn sealed(entries: &[Entry], limit: usize) -> (SealedSegment, Arc<dyn PositionModel>) {
        let codec = crate::chess_codec();
        let samples: Vec<&[u8]> = entries.iter().filter_map(|e| e.pos.as_deref()).collect();
        let model = codec.load_model(&codec.train(&samples).unwrap()).unwrap();
        let ctx = SealContext {
            codec,
            model: model.clone(),
            model_id: 1,
            limit,
            a_per_entry: 3 * 256,
            game_cells: false,
        };
        let mut comp = zstd::bulk::Compressor::new(3).unwrap();
        let out = seal_segment(&ctx, &mut comp, 0, entries, None, &mut Vec::new()).unwrap();
        (out, model)
    }

    /// Every entry comes back once, in order; no key spans two blocks; a block passes the
    /// limit only when it holds one key; and what did not fit a block went into the next
    /// one, so the only blocks under half the limit are the segment's last and those just
    /// before a key too big for any block.
    #[test]
    fn blocks_hold_every_entry_and_fill_their_pages() {
        let codec = crate::chess_codec();
        for (limit, cells) in [
            (700, &(|i: usize| (i * 7) % 5) as &dyn Fn(usize) -> usize),
            (700, &|i: usize| if i % 37 == 5 { 400 } else { i % 3 }),
            (4048, &|i: usize| (i * 13) % 40),
            (4048, &|_| 0),
        ] {
            let input = entries(cells);
            let (segment, model) = sealed(&input, limit);
            let blocks = segment.blocks;
            let mut back = Vec::new();
            let mut small = 0;
            let mut oversized = 0;
            for (n, (key, bytes)) in blocks.iter().enumerate() {
                let blk = open_block(*key, bytes, &PlainDecompressor).unwrap();
                let view = BlockView::parse(*key, &blk).unwrap();
                let es = view.entries(&*codec, &*model).unwrap();
                assert_eq!(es[0].key, *key);
                if bytes.len() > limit {
                    assert!(
                        es.iter().all(|e| e.key == es[0].key),
                        "oversized with 2 keys"
                    );
                    oversized += 1;
                }
                if bytes.len() < limit / 2 && n + 1 < blocks.len() {
                    small += 1;
                }
                if let (Some(prev), Some(first)) = (back.last(), es.first()) {
                    let prev: &Entry = prev;
                    assert_ne!(prev.key, first.key, "a key spans two blocks");
                }
                back.extend(es);
            }
            assert_eq!(back, input, "limit {limit}");
            assert!(
                small <= oversized,
                "limit {limit}: {small} small blocks, {oversized} oversized"
            );
        }
    }
}

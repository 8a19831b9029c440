//! The coordinator of the read phase: it deals chunks of input to the workers, decides
//! `--dedupe` repeats in input order ([`Dedupe`]), gathers the workers' counts into the
//! import state and checkpoints it whenever a worker's memory is full ([`read_phase`]).

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::atomic::Ordering;

use crossbeam_channel::{Receiver, Sender, unbounded};

use super::aggregate::SortedAggregate;
use super::dedupe::Dedupe;
use super::disk;
use super::options::ImportOptions;
use super::options::InputKind;
use super::options::SkippedGame;
use super::plan::PlannedInput;
use super::source::{self, CHUNK_BYTES, Chunker};
use super::state::{ImportState, PendingLogs, STATE_FILE};
use super::worker::{self, Msg, Reply};
use crate::error::{Error, Result};
use crate::ops::game::Game;
use crate::ops::input;
use crate::ops::othello::games::{WTHOR_HEADER, WTHOR_RECORD, is_wthor_header};
use crate::ops::progress::Progress;
use crate::store::fpset::{self, FingerprintSet};
use crate::store::run::RunModels;
use crate::store::{Book, WriterOptions};
use std::io::Read;

/// Mutable bookkeeping of the coordinator between checkpoints.
pub(super) struct Coordinator<'a> {
    plan: &'a [PlannedInput],
    /// The game of the inputs: PGN for chess, WTHOR files or transcripts for Othello.
    game: Game,
    staging: &'a Path,
    txs: Vec<Sender<Msg>>,
    rx: Receiver<Reply>,
    /// Skipped games and counted games' fingerprints on their way to the staging logs.
    logs: PendingLogs,
    full: bool,
    next_worker: usize,
    checkpoints: u64,
    /// Chunk buffers the workers handed back, reused so that reading faults in no new pages.
    spare_chunks: Vec<Vec<u8>>,
    /// Largest buffer capacity kept in `spare_chunks`.
    max_spare_chunk: usize,
    /// `--dedupe`: the repeat decisions, made here in input order.
    dedupe: Option<Dedupe<'a>>,
    /// Bytes of the runs spilled so far, and of the book's files (for the disk checks).
    staged: u64,
    book_bytes: u64,
}

/// Parsed but undecided chunks a `--dedupe` import allows per worker (in all: this times the
/// workers; a worker may also hold a decided chunk whose counting waits in its queue).
const PARSED_IN_FLIGHT: usize = 1;

impl Coordinator<'_> {
    fn handle(&mut self, reply: Reply, state: &mut ImportState) -> Result<Option<Reply>> {
        match reply {
            Reply::Batch {
                input,
                read,
                imported,
                skipped,
                counted,
                facet_games,
                full,
                spare,
            } => {
                state.facet_games.merge(&facet_games);
                // A buffer that grew far past the chunk size (no game boundary in sight) is
                // freed rather than kept for the rest of the import.
                let cap = self.max_spare_chunk;
                self.spare_chunks
                    .extend(spare.filter(|b| b.capacity() <= cap));
                self.logs.games.extend(counted);
                let c = &mut state.per_input[input];
                c.read += read;
                c.imported += imported;
                c.skipped += skipped.len() as u64;
                for (line, r) in skipped {
                    *state
                        .skipped_by_reason
                        .entry(r.kind().to_string())
                        .or_default() += 1;
                    self.logs.skips.push(SkippedGame {
                        file: self.plan[input].name.clone(),
                        line,
                        reason: r.kind().to_string(),
                        detail: r.to_string(),
                    });
                }
                self.full |= full;
                self.logs.bound()?;
                Ok(None)
            }
            Reply::Parsed {
                seq,
                worker,
                input,
                games,
                spare,
            } => {
                let cap = self.max_spare_chunk;
                if spare.capacity() <= cap {
                    self.spare_chunks.push(spare);
                }
                let d = self.dedupe.as_mut().ok_or_else(|| {
                    Error::Internal("import worker parsed a chunk without --dedupe".into())
                })?;
                d.waiting.insert(seq, (worker, input, games));
                self.decide_ready(state)?;
                Ok(None)
            }
            Reply::Failed(e) => Err(e),
            other => Ok(Some(other)),
        }
    }

    /// `--dedupe`: decides, in input order, every parsed chunk whose predecessors are decided:
    /// a game is a repeat if the book or an earlier game of this import has its fingerprint.
    /// Repeats are reported here; the worker holding the chunk counts the others.
    fn decide_ready(&mut self, state: &mut ImportState) -> Result<()> {
        loop {
            let Some(d) = self.dedupe.as_mut() else {
                return Ok(());
            };
            let Some((worker, input, games)) = d.waiting.remove(&d.next_decide) else {
                return Ok(());
            };
            let seq = d.next_decide;
            d.next_decide += 1;
            let mut keep = Vec::with_capacity(games.len());
            let mut repeats = Vec::new();
            for g in &games {
                let Some(g) = g else {
                    // Unparsable text: the worker reports it as unreadable.
                    keep.push(true);
                    continue;
                };
                let repeat = d.judge(g)?;
                keep.push(repeat.is_none());
                if let Some(r) = repeat {
                    repeats.push((g.line, r));
                }
            }
            let c = &mut state.per_input[input];
            c.read += games.len() as u64;
            c.skipped += repeats.len() as u64;
            if !repeats.is_empty() {
                *state
                    .skipped_by_reason
                    .entry("duplicate".into())
                    .or_default() += repeats.len() as u64;
            }
            for (line, r) in repeats {
                self.logs.skips.push(SkippedGame {
                    file: self.plan[input].name.clone(),
                    line,
                    reason: "duplicate".into(),
                    detail: r.detail(),
                });
                self.logs.bound()?;
            }
            if self.txs[worker].send(Msg::Count { seq, keep }).is_err() {
                return Err(self.worker_stopped());
            }
        }
    }

    /// The error to give when a worker cannot be reached: the one it reported before it
    /// stopped, if it is still waiting to be read.
    fn worker_stopped(&self) -> Error {
        while let Ok(reply) = self.rx.try_recv() {
            if let Reply::Failed(e) = reply {
                return e;
            }
        }
        Error::Internal("import worker stopped".into())
    }

    /// `--dedupe`: chunks sent to be parsed and not decided yet.
    fn undecided(&self) -> u64 {
        self.dedupe
            .as_ref()
            .map_or(0, |d| d.next_seq - d.next_decide)
    }

    /// `--dedupe`: waits until every chunk sent is decided (its counting queued on its worker,
    /// ahead of anything sent later).
    fn settle(&mut self, state: &mut ImportState, limit: u64) -> Result<()> {
        while self.undecided() > limit {
            let Ok(reply) = self.rx.recv() else {
                return Err(self.worker_stopped());
            };
            if self.handle(reply, state)?.is_some() {
                return Err(Error::Internal(
                    "import worker answered a message it was not sent".into(),
                ));
            }
        }
        Ok(())
    }

    /// Hands a chunk of text to the next worker: to count, or with `--dedupe` to parse first.
    fn send_chunk(
        &mut self,
        input: usize,
        first_line: u64,
        (data, kind): (Vec<u8>, InputKind),
        state: &mut ImportState,
    ) -> Result<()> {
        let Some(d) = self.dedupe.as_mut() else {
            return self.send(
                Msg::Chunk {
                    input,
                    first_line,
                    data,
                    kind,
                },
                state,
            );
        };
        let seq = d.next_seq;
        d.next_seq += 1;
        self.send(
            Msg::Parse {
                seq,
                input,
                first_line,
                data,
            },
            state,
        )?;
        // Parsed games wait on the workers for their decision: keep them few.
        self.settle(state, (PARSED_IN_FLIGHT * self.txs.len()) as u64)
    }

    fn send(&mut self, msg: Msg, state: &mut ImportState) -> Result<()> {
        let i = self.next_worker % self.txs.len();
        self.next_worker += 1;
        if self.txs[i].send(msg).is_err() {
            return Err(self.worker_stopped());
        }
        self.drain(state)
    }

    fn drain(&mut self, state: &mut ImportState) -> Result<()> {
        while let Ok(reply) = self.rx.try_recv() {
            self.handle(reply, state)?;
        }
        Ok(())
    }

    /// Sends `msg(i)` to every worker and collects one non-batch reply from each.
    fn broadcast(
        &mut self,
        state: &mut ImportState,
        mut msg: impl FnMut(&mut ImportState) -> Msg,
    ) -> Result<Vec<Reply>> {
        // Every chunk sent is decided first, so its counting precedes the broadcast message.
        self.settle(state, 0)?;
        for i in 0..self.txs.len() {
            let m = msg(state);
            if self.txs[i].send(m).is_err() {
                return Err(self.worker_stopped());
            }
        }
        let mut out = Vec::with_capacity(self.txs.len());
        while out.len() < self.txs.len() {
            let Ok(reply) = self.rx.recv() else {
                return Err(self.worker_stopped());
            };
            if let Some(r) = self.handle(reply, state)? {
                out.push(r);
            }
        }
        Ok(out)
    }

    /// The raw bytes of all inputs: a file's size is what is read of it; 0 with stdin among
    /// them (its size is unknown: nothing is projected).
    fn raw_total(&self) -> u64 {
        if self.plan.iter().any(PlannedInput::read_once) {
            0
        } else {
            self.plan.iter().map(|p| p.bytes.unwrap_or(0)).sum()
        }
    }

    /// Spills every worker's aggregate and records a checkpoint (state.json, atomically);
    /// then checks that what is projected for the rest of the import fits on the disk, `read`
    /// being the raw input bytes read so far.
    fn checkpoint(&mut self, state: &mut ImportState, read: u64) -> Result<()> {
        let staging = self.staging;
        let replies = self.broadcast(state, |st| {
            let name = format!("run-{:06}.zst", st.next_run);
            st.next_run += 1;
            Msg::Flush(staging.join(name))
        })?;
        for r in replies {
            if let Reply::Flushed(p, n, games) = r
                && n > 0
            {
                if let Some((g, count)) = games {
                    self.staged += std::fs::metadata(&g).map_or(0, |m| m.len());
                    let name = g.file_name().unwrap_or_default().to_string_lossy();
                    state.game_runs.push((name.to_string(), count));
                }
                self.staged += std::fs::metadata(&p).map_or(0, |m| m.len());
                state.runs.push((
                    p.file_name()
                        .unwrap_or_default()
                        .to_string_lossy()
                        .to_string(),
                    n,
                ));
            }
        }
        crate::store::files::crash_point("import-runs-spilled");
        self.logs.checkpoint(state)?;
        state.save(&staging.join(STATE_FILE))?;
        crate::store::files::crash_point("import-checkpoint-saved");
        self.full = false;
        self.checkpoints += 1;
        let total = self.raw_total();
        // A rewrite keeps the old files until the new one replaces them: counted when the
        // projected runs pass an eighth of the book (the folding policy's threshold, roughly).
        let projected = (self.staged as f64 * total as f64 / read.max(1) as f64) as u64;
        let book = disk::BookNeed {
            base_bytes: if projected > self.book_bytes / 8 {
                self.book_bytes
            } else {
                0
            },
        };
        disk::check_read(staging, self.staged, read, total, book)
    }

    /// Reads input `idx` from where the state leaves it, hands its text to the workers in
    /// chunks and checkpoints whenever a worker is full. Returns the fingerprint of the raw
    /// bytes read (every byte of the input, from its start: on a resume the part before the
    /// checkpoint is read again), which [`super::plan::bind_fingerprints`] binds to the input.
    fn read_input(
        &mut self,
        idx: usize,
        state: &mut ImportState,
        progress: &Progress,
        chunk_bytes: usize,
    ) -> Result<Option<input::ReadFingerprint>> {
        let plan = self.plan;
        let p = &plan[idx];
        test_hook("import-input-open");
        let spec = input::OpenSpec {
            idle: input_idle(),
            // A file is read up to the size it had when it was fingerprinted.
            limit: if p.read_once() { None } else { p.bytes },
            ..input::OpenSpec::new(!self.game.is_othello())
        };
        let mut inp = input::open_with(p.path(), spec)?;
        progress.start_input(&inp.name, inp.raw_size);
        let raw_read = inp.raw_read.clone();
        let mut reader = std::mem::replace(&mut inp.reader, Box::new(std::io::empty()));
        let mut wthor_games = None;
        // An Othello input is a WTHOR file or transcripts, by its first bytes (put back); PGN
        // was refused when it was opened (`input::check_not_chess`).
        let kind = if self.game.is_othello() {
            let mut head = Vec::with_capacity(WTHOR_HEADER);
            Read::take(&mut reader, WTHOR_HEADER as u64)
                .read_to_end(&mut head)
                .map_err(|e| input::read_error(&p.name, e))?;
            let kind = if is_wthor_header(&head) {
                // The games the header counts (u32 at offset 4), checked at the end.
                wthor_games = Some(u32::from_le_bytes([head[4], head[5], head[6], head[7]]));
                InputKind::Wthor
            } else {
                InputKind::OthelloLines
            };
            reader = Box::new(std::io::Cursor::new(head).chain(reader));
            kind
        } else {
            InputKind::Pgn
        };
        let resuming = idx == state.input_index;
        let (mut offset, mut line) = if resuming && state.bytes_in_input > 0 {
            let seen = self.dedupe.as_mut().map(|d| &mut *d.seen);
            let skip = state.bytes_in_input;
            source::skip_to_checkpoint(&mut reader, skip, &p.name, self.staging, seen, progress)?;
            (skip, state.line_in_input.max(1))
        } else {
            (0, 1)
        };
        // Chunks of text cut at game boundaries; workers parse them in parallel.
        // Othello inputs hold 5 to 10 times more plies a byte than PGN (a WTHOR record is 68
        // bytes for up to 60 plies): smaller chunks keep a worker's overshoot past its budget
        // as small as with PGN.
        let chunk_bytes = match kind {
            InputKind::Pgn => chunk_bytes,
            InputKind::OthelloLines | InputKind::Wthor => (chunk_bytes / 16).max(4 << 10),
        };
        let mut chunks = Chunker::new(&mut reader, &p.name, chunk_bytes, kind, offset);
        while !chunks.done() {
            let spare = self
                .spare_chunks
                .pop()
                .unwrap_or_else(|| Vec::with_capacity(2 * chunk_bytes));
            let mut data = chunks.next_chunk(spare)?;
            let lines = kind.units(&data, offset);
            let len = data.len() as u64;
            if kind == InputKind::Wthor && offset < WTHOR_HEADER as u64 {
                // The workers see whole records only.
                let header = (WTHOR_HEADER as u64 - offset).min(len) as usize;
                data.drain(..header);
            }
            self.send_chunk(idx, line, (data, kind), state)?;
            offset += len;
            line += lines;
            progress.update(
                state.per_input.iter().map(|c| c.read).sum(),
                raw_read.load(Ordering::Relaxed),
            );
            if self.full && !chunks.done() {
                state.input_index = idx;
                state.bytes_in_input = offset;
                state.line_in_input = line;
                let before: u64 = plan[..idx].iter().map(|p| p.bytes.unwrap_or(0)).sum();
                self.checkpoint(state, before + raw_read.load(Ordering::Relaxed))?;
            }
        }
        drop(chunks);
        drop(reader);
        let fingerprint = inp.finish()?;
        // A WTHOR file cut between records reads as whole records: only its header tells.
        // Truncated, it fails as a truncated compressed input does (the import stops, the
        // book unchanged): recorded, the whole file would later count its first games twice.
        if let Some(declared) = wthor_games.filter(|&n| n > 0) {
            let whole = offset.saturating_sub(WTHOR_HEADER as u64) / WTHOR_RECORD as u64;
            if whole < u64::from(declared) {
                return Err(crate::error::Error::Input(format!(
                    "{}: its WTHOR header counts {declared} games but the file holds {whole} \
                     whole records: it is truncated; copy or download it again (the import \
                     stopped; the book is unchanged)",
                    p.name
                )));
            }
        }
        state.input_index = idx + 1;
        state.bytes_in_input = 0;
        state.line_in_input = 0;
        test_hook("import-input-read");
        Ok(Some(fingerprint))
    }
}

/// The longest wait for the next bytes of an input that is not a regular file:
/// `BOOKDB_INPUT_IDLE_SECS` (seconds, fractions allowed) or [`input::DEFAULT_INPUT_IDLE`].
fn input_idle() -> std::time::Duration {
    std::env::var(INPUT_IDLE_ENV)
        .ok()
        .and_then(|v| v.trim().parse::<f64>().ok())
        .filter(|s| s.is_finite() && *s > 0.0)
        .map_or(input::DEFAULT_INPUT_IDLE, |s| {
            std::time::Duration::from_secs_f64(s.min(1e9))
        })
}

/// The environment variable that sets [`input_idle`].
const INPUT_IDLE_ENV: &str = "BOOKDB_INPUT_IDLE_SECS";

/// Test hook (builds with the `failpoints` feature only): `BOOKDB_TEST_HOOK="<point>[@N]
/// <shell command>"` runs the command with `sh -c` when the import reaches `point` for the
/// `N`th time (1 by default) and waits for it, so that a test can change an input at an exact
/// moment of the read phase (`import-input-open` before an input is opened,
/// `import-input-read` after it was read), without racing the import.
#[cfg(feature = "failpoints")]
fn test_hook(point: &str) {
    static HITS: std::sync::Mutex<Vec<String>> = std::sync::Mutex::new(Vec::new());
    let Ok(v) = std::env::var("BOOKDB_TEST_HOOK") else {
        return;
    };
    let Some((at, cmd)) = v.split_once(' ') else {
        return;
    };
    let (name, nth) = match at.split_once('@') {
        Some((n, k)) => (n, k.parse::<usize>().unwrap_or(1)),
        None => (at, 1),
    };
    if name != point {
        return;
    }
    let hits = match HITS.lock() {
        Ok(mut h) => {
            h.push(point.to_string());
            h.iter().filter(|p| *p == point).count()
        }
        Err(_) => return,
    };
    if hits == nth {
        let _ = std::process::Command::new("sh").args(["-c", cmd]).status();
    }
}

#[cfg(not(feature = "failpoints"))]
#[inline(always)]
fn test_hook(_point: &str) {}

/// What the read phase leaves for the apply phase.
#[derive(Default)]
pub(super) struct ReadOutcome {
    /// The workers' sorted aggregates if nothing was spilled (the import fit in memory).
    pub(super) in_memory: Option<Vec<SortedAggregate>>,
    /// The fingerprints of the raw bytes read of each input (`None`: not read by this run,
    /// before the checkpoint it resumed from).
    pub(super) read_fp: Vec<Option<input::ReadFingerprint>>,
    /// `--dedupe`: the fingerprints of the games read outgrew their share of `--memory`.
    pub(super) dedupe_spilled: bool,
    /// The workers' games to store, if nothing was spilled (books that store games).
    pub(super) games: Vec<super::games::GameSink>,
    /// The position model the runs share (the first one trained), for the merges to load once.
    pub(super) models: RunModels,
}

/// Reads all inputs, replays games on the workers and checkpoints spilled runs.
pub(super) fn read_phase(
    book_path: &Path,
    plan: &[PlannedInput],
    staging: &Path,
    state: &mut ImportState,
    opts: &ImportOptions,
    progress: &Progress,
) -> Result<ReadOutcome> {
    // Fingerprints of the games read (`--dedupe`), in bounded memory; rebuilt on a resume.
    let mut seen = FingerprintSet::new(staging, fpset::capacity_for(opts.memory_mib.max(1) << 20));
    let mut read_fp = vec![None; plan.len()];
    let jobs = opts.workers();
    // Half the budget for aggregation; the rest covers chunks in flight, the writer (model
    // sample, segments in flight) and the merge. The aggregators are sized for it up front;
    // untouched capacity costs no resident memory.
    let budget = aggregation_budget(opts.memory_mib, jobs);
    // A worker learns that it is full only after a chunk; by then up to three more chunks are
    // queued for it, so with a small budget the chunks are small too (1/32 of a worker's
    // budget: 1 MiB from --memory 128 up, 256 KiB at --memory 32).
    let chunk_bytes = (budget / 32).clamp(64 << 10, CHUNK_BYTES);
    let logs = PendingLogs::open(staging)?;
    // `--dedupe`: games the book already counted (recorded by earlier `--dedupe` imports).
    // Closed at the end of this phase, before the book is written.
    let known = if opts.dedupe && book_path.exists() {
        // Random lookups: redb's cache within the budget's share, not its 64 MiB default.
        let cache = WriterOptions::for_memory(opts.memory_mib.max(1) << 20).cache_bytes;
        let b = Book::open_with_cache(book_path, opts.game.codec(), cache)?;
        let index = b.game_index()?;
        Some((index, b))
    } else {
        None
    };
    let (known, book) = match &known {
        Some((index, b)) => (Some(index), Some(b)),
        None => (None, None),
    };

    let models = RunModels::new();
    let mut games = Vec::new();
    let in_memory = std::thread::scope(|s| -> Result<Option<Vec<SortedAggregate>>> {
        let (res_tx, res_rx) = unbounded::<Reply>();
        let txs = (0..jobs)
            .map(|id| {
                let rules = (opts.rules, opts.game, opts.store_games);
                worker::spawn(s, id, (rules, models.clone()), budget, &res_tx)
            })
            .collect();
        drop(res_tx);
        let mut co = Coordinator {
            plan,
            game: opts.game,
            staging,
            txs,
            rx: res_rx,
            logs,
            full: false,
            next_worker: 0,
            checkpoints: 0,
            spare_chunks: Vec::new(),
            max_spare_chunk: 4 * chunk_bytes,
            dedupe: opts.dedupe.then(|| Dedupe {
                seen: &mut seen,
                known,
                book,
                waiting: BTreeMap::new(),
                next_seq: 0,
                next_decide: 0,
                stored: Default::default(),
            }),
            staged: disk::staged_bytes(staging, state.runs.iter().map(|(r, _)| r.as_str())),
            book_bytes: disk::book_file_bytes(book_path),
        };

        if let Some(d) = co.dedupe.as_mut() {
            // Resumed past earlier inputs: their games count as seen again. (An import with
            // stdin among its inputs never resumes, so each of them is a file.)
            for p in &plan[..state.input_index] {
                if !p.read_once() {
                    progress.phase(&format!("rereading {} for --dedupe", p.name));
                    source::remember_games(&p.name, d.seen)?;
                }
            }
        }
        let first = state.input_index;
        for (idx, fp) in read_fp.iter_mut().enumerate().skip(first) {
            *fp = co.read_input(idx, state, progress, chunk_bytes)?;
        }
        state.read_complete = true;
        if co.checkpoints == 0 && state.runs.is_empty() {
            // Everything fit in memory: hand the aggregates straight to the writer.
            let replies = co.broadcast(state, |_| Msg::Take)?;
            co.logs.write(true)?;
            let parts = replies
                .into_iter()
                .filter_map(|r| match r {
                    Reply::Taken(v, g) => {
                        games.extend(g);
                        Some(v)
                    }
                    _ => None,
                })
                .collect();
            progress.finish_reading(state.per_input.iter().map(|c| c.read).sum());
            return Ok(Some(parts));
        }
        progress.finish_reading(state.per_input.iter().map(|c| c.read).sum());
        let all = co.raw_total();
        co.checkpoint(state, all)?;
        Ok(None)
    })?;
    Ok(ReadOutcome {
        in_memory,
        read_fp,
        dedupe_spilled: seen.spilled(),
        games,
        models,
    })
}

#[cfg(test)]
mod tests {
    use super::super::state::InputCounts;
    use super::*;
    use crossbeam_channel::bounded;

    /// `--dedupe` decisions follow input order whatever order the workers answer in: parsed
    /// chunks delivered last-first are decided first-first, each game against the games of
    /// the chunks before it, and each decision goes to the worker holding the chunk.
    #[test]
    fn dedupe_decides_chunks_in_input_order_whatever_order_they_arrive_in() {
        let dir = tempfile::tempdir().unwrap();
        let plan = [PlannedInput {
            name: "in.pgn".into(),
            source: super::super::plan::Source::File,
            fingerprint: Some("f".into()),
            bytes: None,
            identity: None,
        }];
        let (to_workers, from_coordinator): (Vec<_>, Vec<_>) =
            (0..2).map(|_| bounded::<Msg>(8)).unzip();
        let (replies, rx) = unbounded::<Reply>();
        let mut seen = FingerprintSet::new(dir.path(), 1024);
        let file = |name: &str| std::fs::File::create(dir.path().join(name)).unwrap();
        let mut co = Coordinator {
            plan: &plan,
            game: Game::Chess,
            staging: dir.path(),
            txs: to_workers,
            rx,
            logs: PendingLogs::new(dir.path(), file("skipped.jsonl"), file("games.fp")),
            full: false,
            next_worker: 0,
            checkpoints: 0,
            spare_chunks: Vec::new(),
            max_spare_chunk: 1 << 20,
            staged: 0,
            book_bytes: 0,
            dedupe: Some(Dedupe {
                seen: &mut seen,
                known: None,
                book: None,
                waiting: BTreeMap::new(),
                next_seq: 3,
                next_decide: 0,
                stored: Default::default(),
            }),
        };
        let mut state = ImportState {
            per_input: vec![InputCounts::default()],
            ..Default::default()
        };
        // Chunk 0 (worker 0): games A B; chunk 1 (worker 1): A C and unparsable text;
        // chunk 2 (worker 0): C B D. Lines are 10 × chunk + game.
        let (a, b, c, d) = (1u128, 2, 3, 4);
        let g = |fingerprint: u128, line: u64| {
            Some(worker::ParsedGame {
                fingerprint,
                tagged: None,
                line,
            })
        };
        let chunks = [
            (0, vec![g(a, 1), g(b, 2)]),
            (1, vec![g(a, 11), g(c, 12), None]),
            (0, vec![g(c, 21), g(b, 22), g(d, 23)]),
        ];
        for (seq, (worker, games)) in chunks.into_iter().enumerate().rev() {
            replies
                .send(Reply::Parsed {
                    seq: seq as u64,
                    worker,
                    input: 0,
                    games,
                    spare: Vec::new(),
                })
                .unwrap();
        }
        co.settle(&mut state, 0).unwrap();
        let counts = |w: usize| -> Vec<(u64, Vec<bool>)> {
            from_coordinator[w]
                .try_iter()
                .map(|m| match m {
                    Msg::Count { seq, keep } => (seq, keep),
                    _ => panic!("worker {w} got something else than a decision"),
                })
                .collect()
        };
        assert_eq!(
            counts(0),
            [(0, vec![true, true]), (2, vec![false, false, true])]
        );
        assert_eq!(counts(1), [(1, vec![false, true, true])]);
        let repeats: Vec<u64> = co.logs.skips.iter().map(|g| g.line).collect();
        assert_eq!(repeats, [11, 21, 22]);
        assert_eq!(state.per_input[0].read, 8);
        assert_eq!(state.per_input[0].skipped, 3);
        assert_eq!(state.skipped_by_reason.get("duplicate"), Some(&3));
    }
}

/// What the import's aggregation may hold, per worker, at `--memory` `memory_mib` with `jobs`
/// workers: half the budget, but at small budgets no more than the budget less
/// [`FIXED_READ_MIB`] (at least three eighths of it), since the read phase's fixed costs (parsed
/// chunks in flight, each worker's run writer with its model training and zstd contexts, the
/// allocator's pages) do not shrink with `--memory`. At `--memory 64` the large set peaked at
/// 106-116 MiB with half the budget (tests/hostile_inputs.rs allows 64 + 48), 88-91 with this.
fn aggregation_budget(memory_mib: usize, jobs: usize) -> usize {
    let total = memory_mib.max(1) << 20;
    let share = (total / 2)
        .min(total.saturating_sub(FIXED_READ_MIB << 20))
        .max(total / 8 * 3);
    (share / jobs.max(1)).max(1 << 16)
}

/// The read phase's memory that does not scale with `--memory` (see [`aggregation_budget`]).
const FIXED_READ_MIB: usize = 40;

#[cfg(test)]
mod budget_tests {
    use super::aggregation_budget;

    #[test]
    fn small_budgets_leave_room_for_the_fixed_costs() {
        let mib = 1 << 20;
        assert_eq!(aggregation_budget(256, 2), 64 * mib);
        assert_eq!(aggregation_budget(80, 2), 20 * mib);
        assert_eq!(aggregation_budget(64, 2), 12 * mib);
        assert_eq!(aggregation_budget(32, 2), 6 * mib);
        assert_eq!(aggregation_budget(1, 1), mib / 8 * 3);
        assert_eq!(aggregation_budget(0, 16), 1 << 16);
    }
}

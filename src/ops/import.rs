//! `bookdb import`: the write-ahead, exactly-once, parallel import pipeline.
//!
//! 1. Inputs are fingerprinted (xxh3-128 of their bytes); inputs the book already lists in its
//!    `imports` table are skipped (`--force` counts them again).
//! 2. A reader thread parses PGN into raw games and deals them in batches to `--jobs` workers,
//!    which replay them and aggregate (position, move) counts in memory bounded by `--memory`.
//! 3. When a worker's share of memory is full, every worker spills a sorted, checksummed run
//!    into the staging directory beside the book and the coordinator records a checkpoint
//!    (runs, input position, counters) in `state.json` (written atomically). A crash loses at
//!    most the work since the last checkpoint; the same command resumes from it.
//! 4. The runs are merged in key order and applied to the book atomically: into the delta tier
//!    in one transaction (small imports into large books), or by rewriting the book into a new
//!    file that replaces the old one (first import, or when the delta tier would grow past its
//!    threshold: automatic compaction). The import records go into the same transaction/file.
//! 5. The staging directory is removed.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::time::Instant;

use crossbeam_channel::{Receiver, Sender, bounded, unbounded};
use serde::{Deserialize, Serialize};

use super::input;
use super::pgn::{
    CountRules, CountedGame, GameReader, GameResult, RawGame, SkipReason, game_fingerprint, replay,
};
use super::progress::Progress;
use crate::error::{Error, Result};
use crate::store::book::{self, DeltaCommitError};
use crate::store::entry::MergeIter;
use crate::store::run::{RunReader, RunWriter};
use crate::store::{Book, BookMeta, BookWriter, Entry, MoveRec, WriterOptions};

/// Default `--max-ply`, as the lichess opening explorer.
pub const DEFAULT_MAX_PLY: usize = 50;
/// Games per batch handed to a worker.
const BATCH: usize = 256;
/// Most runs merged at once; more are merged in passes.
const MAX_FAN_IN: usize = 48;
/// The delta tier may hold this many entries, or an eighth of the blocks' entries if more,
/// before an import rewrites the book instead (automatic compaction).
pub const DELTA_MIN_THRESHOLD: u64 = 100_000;

#[derive(Clone, Debug)]
pub struct ImportOptions {
    pub rules: CountRules,
    pub dedupe: bool,
    pub force: bool,
    /// Worker threads; 0 = all cores.
    pub jobs: usize,
    /// Memory budget for aggregation and writing, in MiB.
    pub memory_mib: usize,
    pub writer: WriterOptions,
    pub show_progress: bool,
    /// How many skipped games are kept with their details (all are counted).
    pub keep_skipped: usize,
}

impl Default for ImportOptions {
    fn default() -> Self {
        ImportOptions {
            rules: CountRules {
                max_ply: DEFAULT_MAX_PLY,
                min_rating: None,
            },
            dedupe: false,
            force: false,
            jobs: 0,
            memory_mib: 256,
            writer: WriterOptions::default(),
            show_progress: false,
            keep_skipped: usize::MAX,
        }
    }
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct SkippedGame {
    pub file: String,
    pub line: u64,
    pub reason: String,
    pub detail: String,
}

#[derive(Clone, Debug, Default, Serialize)]
pub struct ImportSummary {
    pub games_read: u64,
    pub games_imported: u64,
    pub games_skipped: u64,
    pub skipped_by_reason: BTreeMap<String, u64>,
    pub positions_added: u64,
    pub pairs_added: u64,
    /// Inputs skipped because the book already counted them.
    pub already_imported: Vec<String>,
    /// True if this run continued an interrupted import.
    pub resumed: bool,
    /// Sorted runs spilled to staging.
    pub runs: usize,
    /// How the book was changed: "rewrite", "delta" or "none".
    pub applied: String,
    pub elapsed_secs: f64,
    /// Time spent reading and replaying games, and merging runs into the book.
    pub read_secs: f64,
    pub apply_secs: f64,
    pub peak_rss_bytes: Option<u64>,
    pub book: BookMeta,
    pub book_bytes: u64,
    #[serde(skip)]
    pub skipped: Vec<SkippedGame>,
}

/// Per-input counters, kept in the checkpoint and in the book's import record.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq, Eq)]
struct InputCounts {
    read: u64,
    imported: u64,
    skipped: u64,
}

/// The write-ahead state of an import (`state.json` in its staging directory).
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
struct ImportState {
    version: u32,
    id: String,
    /// Completed runs (file names in the staging directory) and their entry counts.
    runs: Vec<(String, u64)>,
    /// Next input to read and the games of it already consumed.
    input_index: usize,
    games_in_input: u64,
    /// With chunked reading: decompressed bytes of the input consumed, and the line there.
    bytes_in_input: u64,
    line_in_input: u64,
    read_complete: bool,
    per_input: Vec<InputCounts>,
    skipped_by_reason: BTreeMap<String, u64>,
    next_run: u64,
    /// Length of skipped.jsonl at the checkpoint (later lines are discarded on resume).
    skipped_log_bytes: u64,
}

const STATE_VERSION: u32 = 1;

/// A hasher for Zobrist keys, which are uniformly random already.
#[derive(Default, Clone, Copy)]
pub struct KeyHasher(u64);

impl std::hash::Hasher for KeyHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = self.0.rotate_left(8) ^ u64::from(b);
        }
    }
    fn write_u64(&mut self, v: u64) {
        self.0 = v;
    }
}

type KeyMap<V> = HashMap<u64, V, std::hash::BuildHasherDefault<KeyHasher>>;

/// Counts of one move while aggregating.
#[derive(Clone, Copy, Debug, Default)]
struct AggMove {
    mv: u16,
    counts: [u64; 4],
    rating_sum: u64,
    rating_count: u64,
}

/// One aggregated position; positions sharing a key (collisions) chain in `others`.
struct AggPos {
    pos: Box<[u8]>,
    moves: Vec<AggMove>,
    others: Vec<(Box<[u8]>, Vec<AggMove>)>,
}

/// Aggregated counts of one worker, keyed by Zobrist key and exact packed position.
#[derive(Default)]
pub struct Aggregator {
    map: KeyMap<AggPos>,
    bytes: usize,
}

/// Estimated heap bytes of one aggregated position and of one more move.
const POS_OVERHEAD: usize = 112;
const MOVE_BYTES: usize = 56;

impl Aggregator {
    pub fn with_capacity(positions: usize) -> Aggregator {
        Aggregator {
            map: KeyMap::with_capacity_and_hasher(positions, Default::default()),
            bytes: 0,
        }
    }

    pub fn add(&mut self, g: &CountedGame) {
        let result = match g.result {
            GameResult::White => 0,
            GameResult::Draw => 1,
            GameResult::Black => 2,
            GameResult::Unknown => 3,
        };
        for (pair, white_moved) in &g.pairs {
            let slot = self.map.entry(pair.key).or_insert_with(|| {
                self.bytes += POS_OVERHEAD + pair.pos.len();
                AggPos {
                    pos: pair.pos.clone().into_boxed_slice(),
                    moves: Vec::with_capacity(1),
                    others: Vec::new(),
                }
            });
            let moves = if *slot.pos == pair.pos[..] {
                &mut slot.moves
            } else {
                match slot.others.iter().position(|(p, _)| **p == pair.pos[..]) {
                    Some(i) => &mut slot.others[i].1,
                    None => {
                        self.bytes += POS_OVERHEAD + pair.pos.len();
                        slot.others
                            .push((pair.pos.clone().into_boxed_slice(), Vec::with_capacity(1)));
                        let last = slot.others.len() - 1;
                        &mut slot.others[last].1
                    }
                }
            };
            let i = match moves.iter().position(|m| m.mv == pair.mv) {
                Some(i) => i,
                None => {
                    self.bytes += MOVE_BYTES;
                    moves.push(AggMove {
                        mv: pair.mv,
                        ..Default::default()
                    });
                    moves.len() - 1
                }
            };
            let rec = &mut moves[i];
            rec.counts[result] += 1;
            let elo = if *white_moved {
                g.white_elo
            } else {
                g.black_elo
            };
            if let Some(e) = elo {
                rec.rating_sum += u64::from(e);
                rec.rating_count += 1;
            }
        }
    }

    /// Estimated heap bytes in use.
    pub fn bytes(&self) -> usize {
        self.bytes
    }

    pub fn len(&self) -> usize {
        self.map.len()
    }

    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    /// Drains into a stream of entries sorted by (key, position). Positions and move lists
    /// are moved, not copied; each entry is built only when the stream reaches it, so memory
    /// stays near that of the aggregate itself.
    pub fn into_sorted(self) -> SortedAggregate {
        let mut v: Vec<(u64, Box<[u8]>, Vec<AggMove>)> = Vec::with_capacity(self.map.len());
        for (key, p) in self.map {
            v.push((key, p.pos, p.moves));
            for (pos, moves) in p.others {
                v.push((key, pos, moves));
            }
        }
        v.sort_unstable_by(|a, b| (a.0, &a.1).cmp(&(b.0, &b.1)));
        SortedAggregate {
            inner: v.into_iter(),
        }
    }

    /// Drains into entries sorted by (key, position).
    pub fn take_sorted(&mut self) -> Vec<Entry> {
        std::mem::take(self).into_sorted().collect()
    }
}

/// Entries of a drained [`Aggregator`], in (key, position) order.
pub struct SortedAggregate {
    inner: std::vec::IntoIter<(u64, Box<[u8]>, Vec<AggMove>)>,
}

impl SortedAggregate {
    pub fn len(&self) -> usize {
        self.inner.len()
    }

    pub fn is_empty(&self) -> bool {
        self.inner.len() == 0
    }
}

impl Iterator for SortedAggregate {
    type Item = Entry;
    fn next(&mut self) -> Option<Entry> {
        let (key, pos, moves) = self.inner.next()?;
        let mut e = Entry {
            key,
            pos: Some(pos.into_vec()),
            moves: moves
                .into_iter()
                .map(|m| MoveRec {
                    mv: m.mv,
                    white: m.counts[0],
                    draws: m.counts[1],
                    black: m.counts[2],
                    unknown: m.counts[3],
                    rating_sum: m.rating_sum,
                    rating_count: m.rating_count,
                    polyglot: None,
                })
                .collect(),
        };
        e.normalize();
        Some(e)
    }
}

/// Exclusive writer lock on a book (`<book>.lock`), held while importing, merging or compacting.
pub struct WriterLock {
    _file: std::fs::File,
}

impl WriterLock {
    pub fn acquire(book: &Path) -> Result<WriterLock> {
        let path = sidecar(book, "lock");
        let file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .map_err(|e| Error::io(format!("creating lock file {}", path.display()), e))?;
        match file.try_lock() {
            Ok(()) => Ok(WriterLock { _file: file }),
            Err(std::fs::TryLockError::WouldBlock) => Err(Error::Invalid(format!(
                "{}: another bookdb process is writing this book (lock {} held); wait for it to finish",
                book.display(),
                path.display()
            ))),
            Err(std::fs::TryLockError::Error(e)) => {
                Err(Error::io(format!("locking {}", path.display()), e))
            }
        }
    }
}

/// `<dir>/<name>.<suffix>` beside the book.
fn sidecar(book: &Path, suffix: &str) -> PathBuf {
    let mut name = book.file_name().unwrap_or_default().to_os_string();
    name.push(format!(".{suffix}"));
    book.with_file_name(name)
}

/// Removes temporary book files left by interrupted writers (the caller holds the lock).
pub fn remove_stale_temp_books(book: &Path) {
    let dir = book
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let prefix = format!(
        ".{}.tmp-",
        book.file_name().unwrap_or_default().to_string_lossy()
    );
    if let Ok(rd) = std::fs::read_dir(dir) {
        for e in rd.flatten() {
            if e.file_name().to_string_lossy().starts_with(&prefix) {
                let _ = std::fs::remove_file(e.path());
            }
        }
    }
}

/// xxh3-128 of a file's bytes, as 32 hex digits.
pub fn fingerprint_file(path: &str) -> Result<String> {
    let f = std::fs::File::open(path)
        .map_err(|e| Error::io(format!("cannot open PGN input {path}"), e))?;
    let mut r = std::io::BufReader::with_capacity(1 << 20, f);
    let mut h = xxhash_rust::xxh3::Xxh3::new();
    loop {
        let buf = r
            .fill_buf()
            .map_err(|e| Error::io(format!("reading {path}"), e))?;
        if buf.is_empty() {
            break;
        }
        h.update(buf);
        let n = buf.len();
        r.consume(n);
    }
    Ok(format!("{:032x}", h.digest128()))
}

fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    let tmp = path.with_extension("tmp");
    let ctx = |e| Error::io(format!("writing {}", path.display()), e);
    let mut f = std::fs::File::create(&tmp).map_err(ctx)?;
    f.write_all(bytes).map_err(ctx)?;
    f.sync_all().map_err(ctx)?;
    std::fs::rename(&tmp, path).map_err(ctx)?;
    if let Some(d) = path.parent()
        && let Ok(d) = std::fs::File::open(d)
    {
        let _ = d.sync_all();
    }
    Ok(())
}

fn peak_rss() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = s.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

enum Msg {
    /// Parsed games (used with `--dedupe`, which needs one reader to see every game in order).
    Games(usize, Vec<RawGame>),
    /// Raw PGN text cut at game boundaries, with the line number it starts on.
    Chunk {
        input: usize,
        first_line: u64,
        data: Vec<u8>,
    },
    /// Spill the aggregate into a run at this path.
    Flush(PathBuf),
    /// Hand the aggregate over, sorted (no spill happened: the import fits in memory).
    Take,
}

enum Reply {
    Batch {
        input: usize,
        read: u64,
        imported: u64,
        skipped: Vec<(u64, SkipReason)>,
        full: bool,
    },
    Flushed(PathBuf, u64),
    Taken(SortedAggregate),
    Failed(Error),
}

fn count_game(
    g: &RawGame,
    rules: &CountRules,
    agg: &mut Aggregator,
    imported: &mut u64,
    skipped: &mut Vec<(u64, SkipReason)>,
) {
    match replay(g, rules) {
        Ok(c) => {
            *imported += 1;
            agg.add(&c);
        }
        Err(r) => skipped.push((g.line, r)),
    }
}

fn worker(rx: Receiver<Msg>, tx: Sender<Reply>, rules: CountRules, budget: usize) {
    // Sized for the budget up front: rehashing a table of millions of positions as it grows
    // costs more than the aggregation itself. Untouched buckets cost no resident memory.
    let capacity = budget / (POS_OVERHEAD + 24 + MOVE_BYTES);
    let mut agg = Aggregator::with_capacity(capacity);
    while let Ok(msg) = rx.recv() {
        let reply = match msg {
            Msg::Games(input, games) => {
                let mut imported = 0;
                let mut skipped = Vec::new();
                for g in &games {
                    count_game(g, &rules, &mut agg, &mut imported, &mut skipped);
                }
                Reply::Batch {
                    input,
                    read: 0,
                    imported,
                    skipped,
                    full: agg.bytes() >= budget,
                }
            }
            Msg::Chunk {
                input,
                first_line,
                data,
            } => {
                let (mut read, mut imported) = (0, 0);
                let mut skipped = Vec::new();
                let mut games = GameReader::new(&data[..]);
                loop {
                    match games.next_game() {
                        Ok(Some(mut g)) => {
                            read += 1;
                            g.line += first_line - 1;
                            count_game(&g, &rules, &mut agg, &mut imported, &mut skipped);
                        }
                        Ok(None) => break,
                        Err(e) => {
                            // Reading from memory fails only on unparsable text; count it as
                            // one unreadable game and drop the rest of the chunk's text.
                            read += 1;
                            skipped.push((first_line, SkipReason::Unreadable(e.to_string())));
                            break;
                        }
                    }
                }
                Reply::Batch {
                    input,
                    read,
                    imported,
                    skipped,
                    full: agg.bytes() >= budget,
                }
            }
            Msg::Flush(path) => {
                if agg.is_empty() {
                    Reply::Flushed(path, 0)
                } else {
                    let sorted = std::mem::take(&mut agg).into_sorted();
                    let res = RunWriter::create(&path).and_then(|mut w| {
                        for e in sorted {
                            w.push(&e)?;
                        }
                        w.finish()
                    });
                    // A fresh table only once the old one and the run are gone.
                    agg = Aggregator::with_capacity(capacity);
                    match res {
                        Ok(n) => Reply::Flushed(path, n),
                        Err(e) => Reply::Failed(e),
                    }
                }
            }
            Msg::Take => Reply::Taken(std::mem::take(&mut agg).into_sorted()),
        };
        if tx.send(reply).is_err() {
            return;
        }
    }
}

/// Raw text handed to a worker at once.
const CHUNK_BYTES: usize = 1 << 20;
/// A chunk grows past this only if no game boundary was found (then it is cut at a line end).
const MAX_CHUNK_BYTES: usize = 64 << 20;

/// Where to cut a buffer of PGN text: just before the last `[` that starts a line after a
/// blank line (the start of a game's tags).
fn last_game_boundary(buf: &[u8]) -> Option<usize> {
    let a = memchr::memmem::rfind(buf, b"\n\n[").map(|i| i + 2);
    let b = memchr::memmem::rfind(buf, b"\n\r\n[").map(|i| i + 3);
    a.max(b).filter(|&i| i > 0)
}

/// One input of the import plan.
struct PlannedInput {
    name: String,
    fingerprint: Option<String>,
    bytes: Option<u64>,
}

/// Imports PGN inputs into the book at `book_path` (created if absent).
pub fn import(book_path: &Path, inputs: &[String], opts: &ImportOptions) -> Result<ImportSummary> {
    let start = Instant::now();
    let _lock = WriterLock::acquire(book_path)?;
    remove_stale_temp_books(book_path);
    let mut summary = ImportSummary {
        applied: "none".into(),
        ..Default::default()
    };
    let existing = if book_path.exists() {
        Some(Book::open(book_path, crate::chess_codec())?)
    } else {
        None
    };
    let done: HashSet<String> = match &existing {
        Some(b) => b.imports()?.into_iter().map(|(k, _)| k).collect(),
        None => HashSet::new(),
    };
    let before = existing
        .as_ref()
        .map(|b| b.meta().clone())
        .unwrap_or_default();
    drop(existing);

    let mut plan = Vec::new();
    let mut seen_fp = HashSet::new();
    for path in inputs {
        if path == "-" {
            plan.push(PlannedInput {
                name: "<stdin>".into(),
                fingerprint: None,
                bytes: None,
            });
            continue;
        }
        let fp = fingerprint_file(path)?;
        if (done.contains(&fp) || !seen_fp.insert(fp.clone())) && !opts.force {
            summary.already_imported.push(path.clone());
            continue;
        }
        plan.push(PlannedInput {
            name: path.clone(),
            bytes: std::fs::metadata(path).ok().map(|m| m.len()),
            fingerprint: Some(fp),
        });
    }
    let staging_root = sidecar(book_path, "staging");
    if plan.is_empty() {
        let _ = std::fs::remove_dir_all(&staging_root);
        summary.book = before;
        summary.book_bytes = std::fs::metadata(book_path).map(|m| m.len()).unwrap_or(0);
        summary.elapsed_secs = start.elapsed().as_secs_f64();
        return Ok(summary);
    }

    // The import's identity: its inputs and the options that change counts.
    let has_stdin = plan.iter().any(|p| p.fingerprint.is_none());
    let mut idh = xxhash_rust::xxh3::Xxh3::new();
    for p in &plan {
        idh.update(p.fingerprint.as_deref().unwrap_or("stdin").as_bytes());
        idh.update(b"\0");
    }
    idh.update(
        format!(
            "{}|{:?}|{}|{}",
            opts.rules.max_ply, opts.rules.min_rating, opts.dedupe, opts.force
        )
        .as_bytes(),
    );
    let id = format!("{:032x}", idh.digest128());
    let staging = staging_root.join(&id);
    // Anything else in the staging area belongs to abandoned imports.
    if let Ok(rd) = std::fs::read_dir(&staging_root) {
        for e in rd.flatten() {
            if e.file_name().to_string_lossy() != id {
                let _ = std::fs::remove_dir_all(e.path());
            }
        }
    }
    let state_path = staging.join("state.json");
    let mut state: ImportState = std::fs::read(&state_path)
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        .filter(|s: &ImportState| s.version == STATE_VERSION && s.id == id && !has_stdin)
        .filter(|s| s.runs.iter().all(|(r, _)| staging.join(r).exists()))
        .unwrap_or_else(|| ImportState {
            version: STATE_VERSION,
            id: id.clone(),
            per_input: vec![InputCounts::default(); plan.len()],
            ..Default::default()
        });
    summary.resumed = !state.runs.is_empty()
        || state.input_index > 0
        || state.games_in_input > 0
        || state.bytes_in_input > 0
        || state.read_complete;
    if !summary.resumed {
        let _ = std::fs::remove_dir_all(&staging);
        state = ImportState {
            version: STATE_VERSION,
            id: id.clone(),
            per_input: vec![InputCounts::default(); plan.len()],
            ..Default::default()
        };
    }
    std::fs::create_dir_all(&staging).map_err(|e| {
        Error::io(
            format!("creating staging directory {}", staging.display()),
            e,
        )
    })?;
    // Runs not recorded in the checkpoint are partial work from after it.
    if let Ok(rd) = std::fs::read_dir(&staging) {
        for e in rd.flatten() {
            let n = e.file_name().to_string_lossy().to_string();
            if n != "state.json" && n != "skipped.jsonl" && !state.runs.iter().any(|(r, _)| *r == n)
            {
                let _ = std::fs::remove_file(e.path());
            }
        }
    }
    if !summary.resumed {
        let _ = std::fs::remove_file(staging.join("skipped.jsonl"));
    } else if let Ok(f) = std::fs::OpenOptions::new()
        .write(true)
        .open(staging.join("skipped.jsonl"))
    {
        // Lines written after the checkpoint describe games that will be read again.
        let _ = f.set_len(state.skipped_log_bytes);
    }

    let progress = Progress::new(opts.show_progress);
    let mut stdin_fp: Vec<Option<String>> = vec![None; plan.len()];
    let t_read = Instant::now();
    let mut trace = super::progress::Trace::new();
    let mut in_memory = None;
    if !state.read_complete {
        in_memory = read_phase(&plan, &staging, &mut state, opts, &progress, &mut stdin_fp)?;
    }
    summary.read_secs = t_read.elapsed().as_secs_f64();
    trace.mark("read phase (parse, replay, aggregate, spill)");
    let t_apply = Instant::now();
    for (i, fp) in stdin_fp.into_iter().enumerate() {
        if let Some(fp) = fp {
            if done.contains(&fp) && !opts.force {
                let _ = std::fs::remove_dir_all(&staging);
                return Err(Error::Invalid(format!(
                    "input {} was already imported into this book (fingerprint {fp}); nothing was changed; use --force to count it again",
                    plan[i].name
                )));
            }
            plan[i].fingerprint = Some(fp);
        }
    }

    // Summary counters from the checkpointed state.
    for c in &state.per_input {
        summary.games_read += c.read;
        summary.games_imported += c.imported;
        summary.games_skipped += c.skipped;
    }
    summary.skipped_by_reason = state.skipped_by_reason.clone();
    summary.runs = state.runs.len();
    if let Ok(f) = std::fs::File::open(staging.join("skipped.jsonl")) {
        for line in std::io::BufReader::new(f).lines().map_while(|l| l.ok()) {
            if summary.skipped.len() >= opts.keep_skipped {
                break;
            }
            if let Ok(s) = serde_json::from_str::<SkippedGame>(&line) {
                summary.skipped.push(s);
            }
        }
    }

    progress.phase("merging runs into the book");
    reduce_runs(
        &staging,
        &mut state,
        &state_path,
        (opts.memory_mib / 4).clamp(4, MAX_FAN_IN),
    )?;
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0);
    let records: Vec<(String, Vec<u8>)> = plan
        .iter()
        .zip(&state.per_input)
        .filter_map(|(p, c)| {
            let fp = p.fingerprint.clone()?;
            let rec = serde_json::json!({
                "name": p.name,
                "bytes": p.bytes,
                "games_read": c.read,
                "games_imported": c.imported,
                "games_skipped": c.skipped,
                "max_ply": opts.rules.max_ply,
                "min_rating": opts.rules.min_rating,
                "dedupe": opts.dedupe,
                "imported_at": now,
            });
            Some((fp, rec.to_string().into_bytes()))
        })
        .collect();
    let run_entries: u64 = match &in_memory {
        Some(parts) => parts.iter().map(|p| p.len() as u64).sum(),
        None => state.runs.iter().map(|(_, n)| n).sum(),
    };
    let mem = WriterOptions::for_memory(opts.memory_mib.max(1) << 20);
    let mut writer_opts = opts.writer.clone();
    writer_opts.model_sample = writer_opts.model_sample.min(mem.model_sample);
    writer_opts.commit_bytes = writer_opts.commit_bytes.min(mem.commit_bytes);
    writer_opts.cache_bytes = writer_opts.cache_bytes.min(mem.cache_bytes);
    summary.applied = apply(
        book_path,
        &staging,
        &state,
        in_memory,
        run_entries,
        summary.games_imported,
        records,
        &writer_opts,
    )?;
    summary.apply_secs = t_apply.elapsed().as_secs_f64();
    let _ = std::fs::remove_dir_all(&staging);
    let _ = std::fs::remove_dir(&staging_root);

    let after = Book::open(book_path, crate::chess_codec())?;
    summary.book = after.meta().clone();
    summary.positions_added = summary.book.positions.saturating_sub(before.positions);
    summary.pairs_added = summary.book.pairs.saturating_sub(before.pairs);
    summary.book_bytes = after.file_bytes();
    summary.elapsed_secs = start.elapsed().as_secs_f64();
    summary.peak_rss_bytes = peak_rss();
    progress.clear();
    Ok(summary)
}

/// Mutable bookkeeping of the coordinator between checkpoints.
struct Coordinator<'a> {
    plan: &'a [PlannedInput],
    staging: &'a Path,
    txs: Vec<Sender<Msg>>,
    rx: Receiver<Reply>,
    pending_skips: Vec<SkippedGame>,
    full: bool,
    next_worker: usize,
    skipped_file: std::fs::File,
    checkpoints: u64,
}

impl Coordinator<'_> {
    fn handle(&mut self, reply: Reply, state: &mut ImportState) -> Result<Option<Reply>> {
        match reply {
            Reply::Batch {
                input,
                read,
                imported,
                skipped,
                full,
            } => {
                let c = &mut state.per_input[input];
                c.read += read;
                c.imported += imported;
                c.skipped += skipped.len() as u64;
                for (line, r) in skipped {
                    *state
                        .skipped_by_reason
                        .entry(r.kind().to_string())
                        .or_default() += 1;
                    self.pending_skips.push(SkippedGame {
                        file: self.plan[input].name.clone(),
                        line,
                        reason: r.kind().to_string(),
                        detail: r.to_string(),
                    });
                }
                self.full |= full;
                Ok(None)
            }
            Reply::Failed(e) => Err(e),
            other => Ok(Some(other)),
        }
    }

    fn send(&mut self, msg: Msg, state: &mut ImportState) -> Result<()> {
        let i = self.next_worker % self.txs.len();
        self.next_worker += 1;
        self.txs[i]
            .send(msg)
            .map_err(|_| Error::Invalid("import worker stopped".into()))?;
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
        for i in 0..self.txs.len() {
            let m = msg(state);
            self.txs[i]
                .send(m)
                .map_err(|_| Error::Invalid("import worker stopped".into()))?;
        }
        let mut out = Vec::with_capacity(self.txs.len());
        while out.len() < self.txs.len() {
            let reply = self
                .rx
                .recv()
                .map_err(|_| Error::Invalid("import worker stopped".into()))?;
            if let Some(r) = self.handle(reply, state)? {
                out.push(r);
            }
        }
        Ok(out)
    }

    /// Spills every worker's aggregate and records a checkpoint (state.json, atomically).
    fn checkpoint(&mut self, state: &mut ImportState) -> Result<()> {
        let staging = self.staging;
        let replies = self.broadcast(state, |st| {
            let name = format!("run-{:06}.zst", st.next_run);
            st.next_run += 1;
            Msg::Flush(staging.join(name))
        })?;
        for r in replies {
            if let Reply::Flushed(p, n) = r
                && n > 0
            {
                state.runs.push((
                    p.file_name()
                        .unwrap_or_default()
                        .to_string_lossy()
                        .to_string(),
                    n,
                ));
            }
        }
        for sk in self.pending_skips.drain(..) {
            let line = serde_json::to_string(&sk).map_err(|e| Error::Invalid(e.to_string()))?;
            writeln!(self.skipped_file, "{line}")
                .map_err(|e| Error::io("writing skipped-games log", e))?;
        }
        self.skipped_file
            .sync_data()
            .map_err(|e| Error::io("syncing skipped-games log", e))?;
        state.skipped_log_bytes = self
            .skipped_file
            .metadata()
            .map_err(|e| Error::io("skipped-games log", e))?
            .len();
        let bytes = serde_json::to_vec(&*state).map_err(|e| Error::Invalid(e.to_string()))?;
        write_atomic(&staging.join("state.json"), &bytes)?;
        self.full = false;
        self.checkpoints += 1;
        Ok(())
    }
}

/// Reads all inputs, replays games on the workers and checkpoints spilled runs. Returns the
/// workers' sorted aggregates if nothing was spilled (the import fit in memory).
fn read_phase(
    plan: &[PlannedInput],
    staging: &Path,
    state: &mut ImportState,
    opts: &ImportOptions,
    progress: &Progress,
    stdin_fp: &mut [Option<String>],
) -> Result<Option<Vec<SortedAggregate>>> {
    let jobs = if opts.jobs == 0 {
        std::thread::available_parallelism().map_or(2, |n| n.get())
    } else {
        opts.jobs
    }
    .clamp(1, 256);
    // Half the budget for aggregation; the rest covers chunks in flight, the writer's model
    // sample and the merge.
    let budget = ((opts.memory_mib.max(1) << 20) / 3 / jobs).max(1 << 16);
    let skipped_file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(staging.join("skipped.jsonl"))
        .map_err(|e| Error::io("opening skipped-games log", e))?;
    let mut seen: HashSet<u128> = HashSet::new();

    std::thread::scope(|s| -> Result<Option<Vec<SortedAggregate>>> {
        let (res_tx, res_rx) = unbounded::<Reply>();
        let mut txs = Vec::with_capacity(jobs);
        for _ in 0..jobs {
            let (tx, rx) = bounded::<Msg>(2);
            let res_tx = res_tx.clone();
            let rules = opts.rules;
            s.spawn(move || worker(rx, res_tx, rules, budget));
            txs.push(tx);
        }
        drop(res_tx);
        let mut co = Coordinator {
            plan,
            staging,
            txs,
            rx: res_rx,
            pending_skips: Vec::new(),
            full: false,
            next_worker: 0,
            skipped_file,
            checkpoints: 0,
        };

        for idx in state.input_index..plan.len() {
            let p = &plan[idx];
            let path = if p.fingerprint.is_none() {
                "-"
            } else {
                p.name.as_str()
            };
            let inp = input::open(path)?;
            progress.start_input(&inp.name, inp.raw_size);
            let raw_read = inp.raw_read.clone();
            let raw_hash = inp.raw_hash.clone();
            let mut reader = inp.reader;
            let resuming = idx == state.input_index;
            if opts.dedupe {
                read_games(
                    &mut co,
                    state,
                    idx,
                    &mut reader,
                    resuming,
                    &mut seen,
                    progress,
                    &raw_read,
                )?;
            } else {
                // Chunks of text cut at game boundaries; workers parse them in parallel.
                let (mut offset, mut line) = if resuming && state.bytes_in_input > 0 {
                    let skip = state.bytes_in_input;
                    let n = std::io::copy(
                        &mut std::io::Read::take(&mut reader, skip),
                        &mut std::io::sink(),
                    )
                    .map_err(|e| Error::io(format!("reading {}", p.name), e))?;
                    if n != skip {
                        return Err(Error::Invalid(format!(
                            "{}: input is shorter than when the interrupted import read it; remove {} to start over",
                            p.name,
                            staging.display()
                        )));
                    }
                    (skip, state.line_in_input.max(1))
                } else {
                    (0, 1)
                };
                let mut buf: Vec<u8> = Vec::with_capacity(2 * CHUNK_BYTES);
                let mut eof = false;
                while !eof || !buf.is_empty() {
                    while !eof && buf.len() < CHUNK_BYTES {
                        let start = buf.len();
                        buf.resize(start + (256 << 10), 0);
                        let n = loop {
                            match reader.read(&mut buf[start..]) {
                                Ok(n) => break n,
                                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                                Err(e) => return Err(Error::io(format!("reading {}", p.name), e)),
                            }
                        };
                        buf.truncate(start + n);
                        eof = n == 0;
                    }
                    let cut = if eof {
                        buf.len()
                    } else {
                        match last_game_boundary(&buf) {
                            Some(i) => i,
                            None if buf.len() < MAX_CHUNK_BYTES => {
                                // No boundary yet: read more before cutting.
                                let start = buf.len();
                                buf.resize(start + (1 << 20), 0);
                                let n = reader
                                    .read(&mut buf[start..])
                                    .map_err(|e| Error::io(format!("reading {}", p.name), e))?;
                                buf.truncate(start + n);
                                eof = n == 0;
                                continue;
                            }
                            None => memchr::memrchr(b'\n', &buf).map_or(buf.len(), |i| i + 1),
                        }
                    };
                    let rest = buf.split_off(cut);
                    let data = std::mem::replace(&mut buf, rest);
                    let lines = memchr::memchr_iter(b'\n', &data).count() as u64;
                    let len = data.len() as u64;
                    co.send(
                        Msg::Chunk {
                            input: idx,
                            first_line: line,
                            data,
                        },
                        state,
                    )?;
                    offset += len;
                    line += lines;
                    progress.update(
                        state.per_input.iter().map(|c| c.read).sum(),
                        raw_read.load(Ordering::Relaxed),
                    );
                    if co.full && !(eof && buf.is_empty()) {
                        state.input_index = idx;
                        state.bytes_in_input = offset;
                        state.line_in_input = line;
                        co.checkpoint(state)?;
                    }
                }
            }
            if let Some(h) = raw_hash {
                // Drain what the decompressor did not need, so the fingerprint covers every byte.
                let _ = std::io::copy(&mut reader, &mut std::io::sink());
                let h = h.lock().map(|h| h.digest128()).unwrap_or(0);
                stdin_fp[idx] = Some(format!("{h:032x}"));
            }
            state.input_index = idx + 1;
            state.games_in_input = 0;
            state.bytes_in_input = 0;
            state.line_in_input = 0;
        }
        state.read_complete = true;
        if co.checkpoints == 0 && state.runs.is_empty() {
            // Everything fit in memory: hand the aggregates straight to the writer.
            let replies = co.broadcast(state, |_| Msg::Take)?;
            for sk in co.pending_skips.drain(..) {
                let line = serde_json::to_string(&sk).map_err(|e| Error::Invalid(e.to_string()))?;
                writeln!(co.skipped_file, "{line}")
                    .map_err(|e| Error::io("writing skipped-games log", e))?;
            }
            let parts = replies
                .into_iter()
                .filter_map(|r| match r {
                    Reply::Taken(v) => Some(v),
                    _ => None,
                })
                .collect();
            progress.finish_reading(state.per_input.iter().map(|c| c.read).sum());
            return Ok(Some(parts));
        }
        progress.finish_reading(state.per_input.iter().map(|c| c.read).sum());
        co.checkpoint(state)?;
        Ok(None)
    })
}

/// `--dedupe` reading: one reader parses every game in order and drops repeats.
#[allow(clippy::too_many_arguments)]
fn read_games(
    co: &mut Coordinator<'_>,
    state: &mut ImportState,
    idx: usize,
    reader: &mut Box<dyn std::io::Read + Send>,
    resuming: bool,
    seen: &mut HashSet<u128>,
    progress: &Progress,
    raw_read: &std::sync::Arc<std::sync::atomic::AtomicU64>,
) -> Result<()> {
    let name = co.plan[idx].name.clone();
    let mut games = GameReader::new(reader);
    let mut consumed = 0u64;
    if resuming {
        while consumed < state.games_in_input {
            match games.next_game() {
                Ok(Some(g)) => {
                    seen.insert(game_fingerprint(&g));
                    consumed += 1;
                }
                Ok(None) => break,
                Err(e) => return Err(Error::io(format!("reading {name}"), e)),
            }
        }
    }
    loop {
        let mut batch = Vec::with_capacity(BATCH);
        let mut eof = false;
        while batch.len() < BATCH {
            match games.next_game() {
                Ok(Some(g)) => {
                    consumed += 1;
                    state.per_input[idx].read += 1;
                    if !seen.insert(game_fingerprint(&g)) {
                        state.per_input[idx].skipped += 1;
                        *state
                            .skipped_by_reason
                            .entry("duplicate".into())
                            .or_default() += 1;
                        co.pending_skips.push(SkippedGame {
                            file: name.clone(),
                            line: g.line,
                            reason: "duplicate".into(),
                            detail: SkipReason::Duplicate.to_string(),
                        });
                        continue;
                    }
                    batch.push(g);
                }
                Ok(None) => {
                    eof = true;
                    break;
                }
                Err(e) => return Err(Error::io(format!("reading {name}"), e)),
            }
        }
        if !batch.is_empty() {
            co.send(Msg::Games(idx, batch), state)?;
        }
        progress.update(
            state.per_input.iter().map(|c| c.read).sum(),
            raw_read.load(Ordering::Relaxed),
        );
        if co.full && !eof {
            state.input_index = idx;
            state.games_in_input = consumed;
            co.checkpoint(state)?;
        }
        if eof {
            return Ok(());
        }
    }
}

/// Merges runs in passes until at most `MAX_FAN_IN` remain (crash-safe: the merged run is
/// recorded before its sources are deleted).
fn reduce_runs(
    staging: &Path,
    state: &mut ImportState,
    state_path: &Path,
    fan_in: usize,
) -> Result<()> {
    while state.runs.len() > fan_in {
        let group: Vec<(String, u64)> = state.runs.drain(..fan_in).collect();
        let readers = group
            .iter()
            .map(|(r, _)| RunReader::open(&staging.join(r)))
            .collect::<Result<Vec<_>>>()?;
        let name = format!("run-{:06}.zst", state.next_run);
        state.next_run += 1;
        let mut w = RunWriter::create(&staging.join(&name))?;
        for e in MergeIter::new(readers) {
            w.push(&e?)?;
        }
        let n = w.finish()?;
        state.runs.push((name, n));
        let bytes = serde_json::to_vec(&*state).map_err(|e| Error::Invalid(e.to_string()))?;
        write_atomic(state_path, &bytes)?;
        for (r, _) in group {
            let _ = std::fs::remove_file(staging.join(r));
        }
    }
    Ok(())
}

type EntryStream<'a> = Box<dyn Iterator<Item = Result<Entry>> + 'a>;

/// Applies the runs to the book; returns how ("rewrite" or "delta").
#[allow(clippy::too_many_arguments)]
fn apply(
    book_path: &Path,
    staging: &Path,
    state: &ImportState,
    in_memory: Option<Vec<SortedAggregate>>,
    run_entries: u64,
    games: u64,
    records: Vec<(String, Vec<u8>)>,
    writer_opts: &WriterOptions,
) -> Result<String> {
    let mut in_memory = in_memory;
    let mut open_runs = || -> Result<Vec<EntryStream<'static>>> {
        if let Some(parts) = in_memory.take() {
            return Ok(parts
                .into_iter()
                .map(|v| Box::new(v.map(Ok)) as EntryStream<'static>)
                .collect());
        }
        state
            .runs
            .iter()
            .map(|(r, _)| {
                RunReader::open(&staging.join(r)).map(|r| Box::new(r) as EntryStream<'static>)
            })
            .collect()
    };
    let old = if book_path.exists() {
        Some(Book::open(book_path, crate::chess_codec())?)
    } else {
        None
    };
    if let Some(book) = &old {
        let m = book.meta();
        let threshold = DELTA_MIN_THRESHOLD.max(m.positions / 8);
        if m.positions + m.key_only > 0 && run_entries + m.delta_entries <= threshold {
            let mut new = Vec::with_capacity(run_entries as usize);
            for e in MergeIter::new(open_runs()?) {
                new.push(e?);
            }
            let mut plan = book::plan_delta(book, new.clone(), games)?;
            plan.imports = records.clone();
            let path = book.path().to_path_buf();
            drop(old);
            match book::commit_delta(&path, &plan) {
                Ok(()) => return Ok("delta".into()),
                Err(DeltaCommitError::Busy) => {}
                Err(DeltaCommitError::Other(e)) => return Err(e),
            }
            // Another process holds the book open: write a new file instead.
            let fresh: Vec<EntryStream<'static>> = vec![Box::new(new.into_iter().map(Ok))];
            return rewrite(
                book_path,
                Some(Book::open(book_path, crate::chess_codec())?),
                fresh,
                games,
                records,
                writer_opts,
            );
        }
    }
    rewrite(book_path, old, open_runs()?, games, records, writer_opts)
}

fn rewrite(
    book_path: &Path,
    old: Option<Book>,
    runs: Vec<EntryStream<'static>>,
    games: u64,
    records: Vec<(String, Vec<u8>)>,
    writer_opts: &WriterOptions,
) -> Result<String> {
    let mut w = BookWriter::create(book_path, crate::chess_codec(), writer_opts.clone())?;
    w.add_games(games);
    let mut sources: Vec<EntryStream<'_>> = Vec::new();
    if let Some(b) = &old {
        w.add_games(b.meta().games);
        w.add_imports(b.imports()?);
        sources.push(Box::new(b.iter()?));
    }
    w.add_imports(records);
    sources.push(Box::new(MergeIter::new(runs)));
    let mut trace = super::progress::Trace::new();
    for e in MergeIter::new(sources) {
        w.push(e?)?;
    }
    trace.mark("rewrite: merge and write blocks");
    w.finish()?;
    trace.mark("rewrite: finish (last blocks, meta, commit, compact, rename)");
    Ok("rewrite".into())
}

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
    CountRules, GameReader, GameResult, Ply, RawGame, SkipReason, game_fingerprint, game_result,
    replay_into,
};
use super::progress::Progress;
use crate::error::{Error, Result};
use crate::store::book::{self, DeltaCommitError};
use crate::store::entry::MergeIter;
use crate::store::fpset::{self, FingerprintSet};
use crate::store::run::{RunReader, RunWriter};
use crate::store::{Book, BookMeta, BookWriter, Entry, MoveRec, WriterOptions};

/// Default `--max-ply`, as the lichess opening explorer.
pub const DEFAULT_MAX_PLY: usize = 50;
/// Skipped games or game fingerprints the coordinator holds before appending them to their
/// staging logs (also between checkpoints).
const PENDING_MAX: usize = 256;
/// Staging file of the fingerprints of the games a `--dedupe` import counted (FORMAT §8).
const GAMES_LOG: &str = "games.fp";
/// Staging redb file: `games.fp` sorted, copied into the book when the import applies.
const COUNTED_TABLE: &str = "counted.redb";

/// Staging run of the entries of an import that fit in memory, written before a delta commit.
const MEMORY_RUN: &str = "run-memory.zst";
/// Staging run of the values a delta commit writes.
const DELTA_RUN: &str = "delta-values.zst";

/// Game fingerprints in a redb file's `games` table ([`fpset::sorted_table`]).
type GameTable = std::sync::Arc<redb::ReadOnlyDatabase>;
/// Staging file naming the attempt about to commit (its id is also in the imports records
/// it commits), so that a run killed between its commit and its cleanup is not applied again.
const APPLYING: &str = "applying";
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
    /// How many skipped games the summary keeps with their details (all are counted).
    pub keep_skipped: usize,
    /// Writes every skipped game to this file, one `file:line<TAB>reason<TAB>detail` line each
    /// (streamed from the staging log, never all held in memory).
    pub report: Option<PathBuf>,
    /// The delta tier may hold this many entries (or an eighth of the book's, if more) before
    /// an import rewrites the book instead; [`DELTA_MIN_THRESHOLD`] by default.
    pub delta_min: u64,
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
            keep_skipped: 100,
            report: None,
            delta_min: DELTA_MIN_THRESHOLD,
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
    /// `--dedupe`: the fingerprints of the games read outgrew their share of `--memory` and
    /// went to sorted runs in staging.
    pub dedupe_spilled: bool,
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
    /// Next input to read.
    input_index: usize,
    /// Decompressed bytes of that input consumed, and the line there.
    bytes_in_input: u64,
    line_in_input: u64,
    read_complete: bool,
    per_input: Vec<InputCounts>,
    skipped_by_reason: BTreeMap<String, u64>,
    next_run: u64,
    /// Length of skipped.jsonl at the checkpoint (later lines are discarded on resume).
    skipped_log_bytes: u64,
    /// Length of games.fp (`--dedupe`: fingerprints of the games counted so far, 16 bytes each,
    /// little-endian) at the checkpoint.
    #[serde(default)]
    games_log_bytes: u64,
}

/// 2: `games_log_bytes` and `games.fp` (a version-1 state never recorded fingerprints).
/// 3: `--dedupe` reads in chunks like any import; `games_in_input` is gone (a version-2
/// `--dedupe` state counted games, not bytes, so it cannot be resumed by this version).
const STATE_VERSION: u32 = 3;

/// Open-addressing table from Zobrist key to the index of the first position with that key.
/// Keys are uniformly random already, so their low bits pick the home slot. Slots can be
/// prefetched, which lets the aggregator overlap the cache misses of a whole game.
struct KeyTable {
    /// (key, position index + 1); 0 marks an empty slot, so a new table is zeroed memory and
    /// its untouched pages cost no resident memory.
    slots: Vec<(u64, u32)>,
    len: usize,
}

impl KeyTable {
    fn with_capacity(n: usize) -> KeyTable {
        // Load factor at most 3/4.
        let size = (n.max(8) * 4 / 3 + 1).next_power_of_two();
        KeyTable {
            slots: crate::store::write_touched(vec![(0, 0); size]),
            len: 0,
        }
    }

    #[inline]
    fn home(&self, key: u64) -> usize {
        (key as usize) & (self.slots.len() - 1)
    }

    #[inline]
    fn prefetch(&self, key: u64) {
        prefetch(self.slots.as_ptr().wrapping_add(self.home(key)));
    }

    #[inline]
    fn get(&self, key: u64) -> Option<u32> {
        let mask = self.slots.len() - 1;
        let mut i = self.home(key);
        loop {
            let (k, v) = self.slots[i];
            if v == 0 {
                return None;
            }
            if k == key {
                return Some(v - 1);
            }
            i = (i + 1) & mask;
        }
    }

    /// Inserts a key known to be absent, with a position index below `u32::MAX`.
    fn insert(&mut self, key: u64, v: u32) {
        if (self.len + 1) * 4 > self.slots.len() * 3 {
            let old = std::mem::take(&mut self.slots);
            self.slots = crate::store::write_touched(vec![(0, 0); old.len() * 2]);
            self.len = 0;
            for (k, v) in old.into_iter().filter(|&(_, v)| v != 0) {
                self.insert(k, v - 1);
            }
        }
        let mask = self.slots.len() - 1;
        let mut i = self.home(key);
        while self.slots[i].1 != 0 {
            i = (i + 1) & mask;
        }
        self.slots[i] = (key, v + 1);
        self.len += 1;
    }

    fn clear(&mut self) {
        if self.len > 0 {
            self.slots.fill((0, 0));
            self.len = 0;
        }
    }
}

const NONE: u32 = u32::MAX;

/// One aggregated position: its packed form in the arena, its moves as a linked list in
/// `moves`, and the next position with the same key (collisions).
#[derive(Clone, Copy)]
struct AggPos {
    key: u64,
    pos_at: u32,
    pos_len: u32,
    first_move: u32,
    next_same_key: u32,
}

/// Counts of one move while aggregating. Counters are 32-bit: an aggregator holds fewer than
/// 2^32 games (see [`Aggregator::full`]), and each game adds at most one to each.
#[derive(Clone, Copy)]
struct AggMove {
    rating_sum: u64,
    counts: [u32; 4],
    rating_count: u32,
    /// The last game (aggregator-local number) that counted this move: a game counts each
    /// (position, move) pair once.
    last_game: u32,
    next: u32,
    mv: u16,
}

/// Aggregated counts of one worker, keyed by Zobrist key and exact packed position. Flat
/// vectors and an arena instead of per-position heap objects: a few allocations in all, and
/// an exact estimate of the memory in use.
pub struct Aggregator {
    map: KeyTable,
    positions: Vec<AggPos>,
    moves: Vec<AggMove>,
    arena: Vec<u8>,
    games: u32,
    /// The sort order of the previous drain, kept for the next one (see `into_sorted`).
    spare_order: Vec<(u64, u32)>,
}

impl Default for Aggregator {
    fn default() -> Self {
        Aggregator::with_capacity(0)
    }
}

/// Bytes per aggregated position besides its packed form (record, hash slots at load factor
/// 3/8 to 3/4, sort index when draining) and per move record.
const POS_OVERHEAD: usize = std::mem::size_of::<AggPos>() + 32 + 16;
const MOVE_BYTES: usize = std::mem::size_of::<AggMove>();
/// Average packed position (bytes), used to size the tables from a memory budget.
const TYPICAL_PACKED: usize = 24;
/// Plies one batch of games typically adds at most (a 1 MiB chunk holds about 2,000 games):
/// the head room reserved past the budget so that the vectors need not grow before
/// [`Aggregator::full`] is next checked.
const BATCH_PLIES: usize = 1 << 17;

impl Aggregator {
    pub fn with_capacity(positions: usize) -> Aggregator {
        Aggregator {
            map: KeyTable::with_capacity(positions),
            positions: Vec::with_capacity(positions),
            moves: Vec::with_capacity(positions + positions / 8),
            arena: Vec::with_capacity(positions * TYPICAL_PACKED),
            games: 0,
            spare_order: Vec::new(),
        }
    }

    /// An aggregator for a memory budget (bytes). Each vector reserves what [`Aggregator::full`]
    /// can let it reach (the budget spent on it alone, plus one batch): reserved but untouched
    /// capacity costs no resident memory, while growing a vector of millions of records copies
    /// it into fresh pages (and briefly holds both). The hash table, touched at random, is
    /// sized for the typical position mix and doubles only if a batch of unusual games needs it.
    pub fn for_budget(budget: usize) -> Aggregator {
        let slack = BATCH_PLIES;
        Aggregator {
            map: KeyTable::with_capacity(Self::capacity_for(budget)),
            positions: Vec::with_capacity(budget / POS_OVERHEAD + slack),
            moves: Vec::with_capacity(budget / MOVE_BYTES + slack),
            arena: Vec::with_capacity(budget + slack * TYPICAL_PACKED),
            games: 0,
            spare_order: Vec::new(),
        }
    }

    /// Positions that fit a memory budget (bytes) with a typical mix (packed size, moves per
    /// position).
    pub fn capacity_for(budget: usize) -> usize {
        budget / (POS_OVERHEAD + TYPICAL_PACKED + MOVE_BYTES + MOVE_BYTES / 8)
    }

    fn pos_bytes(&self, p: &AggPos) -> &[u8] {
        &self.arena[p.pos_at as usize..(p.pos_at + p.pos_len) as usize]
    }

    fn new_position(&mut self, ply: &Ply) -> u32 {
        let bytes = ply.pos.as_bytes();
        let i = self.positions.len() as u32;
        self.positions.push(AggPos {
            key: ply.key,
            pos_at: self.arena.len() as u32,
            pos_len: bytes.len() as u32,
            first_move: NONE,
            next_same_key: NONE,
        });
        self.arena.extend_from_slice(bytes);
        i
    }

    /// The position of a ply, added if new. `known` is the first position of the ply's key if
    /// the caller has already looked it up (`NONE`: unknown, or absent then).
    fn position(&mut self, ply: &Ply, known: u32) -> u32 {
        let found = if known != NONE {
            Some(known)
        } else {
            // Absent at the caller's lookup, but an earlier ply of the game may have added it.
            self.map.get(ply.key)
        };
        let first = match found {
            Some(i) => i,
            None => {
                let i = self.new_position(ply);
                self.map.insert(ply.key, i);
                return i;
            }
        };
        let mut i = first;
        loop {
            let p = self.positions[i as usize];
            if self.pos_bytes(&p) == ply.pos.as_bytes() {
                return i;
            }
            if p.next_same_key == NONE {
                let n = self.new_position(ply);
                self.positions[i as usize].next_same_key = n;
                return n;
            }
            i = p.next_same_key;
        }
    }

    /// Counts one replayed game. The game's hash slots, then its position records, then their
    /// bytes and first moves are prefetched in stages, so the cache misses of all its plies
    /// overlap instead of following one another.
    pub fn add_game(&mut self, result: GameResult, elos: [Option<u32>; 2], plies: &[Ply]) {
        self.games += 1;
        let game = self.games;
        let r = match result {
            GameResult::White => 0,
            GameResult::Draw => 1,
            GameResult::Black => 2,
            GameResult::Unknown => 3,
        };
        for chunk in plies.chunks(PREFETCH_PLIES) {
            for ply in chunk {
                self.map.prefetch(ply.key);
            }
            let mut found = [NONE; PREFETCH_PLIES];
            for (f, ply) in found.iter_mut().zip(chunk) {
                if let Some(i) = self.map.get(ply.key) {
                    *f = i;
                    prefetch(self.positions.as_ptr().wrapping_add(i as usize));
                }
            }
            for &i in found.iter().take(chunk.len()).filter(|&&i| i != NONE) {
                let p = &self.positions[i as usize];
                prefetch(self.arena.as_ptr().wrapping_add(p.pos_at as usize));
                prefetch(self.moves.as_ptr().wrapping_add(p.first_move as usize));
            }
            for (ply, &known) in chunk.iter().zip(&found) {
                self.count(ply, known, game, r, elos);
            }
        }
    }

    fn count(&mut self, ply: &Ply, known: u32, game: u32, r: usize, elos: [Option<u32>; 2]) {
        let p = self.position(ply, known) as usize;
        let mut m = self.positions[p].first_move;
        while m != NONE && self.moves[m as usize].mv != ply.mv {
            m = self.moves[m as usize].next;
        }
        if m == NONE {
            m = self.moves.len() as u32;
            self.moves.push(AggMove {
                rating_sum: 0,
                counts: [0; 4],
                rating_count: 0,
                last_game: 0,
                next: self.positions[p].first_move,
                mv: ply.mv,
            });
            self.positions[p].first_move = m;
        }
        let rec = &mut self.moves[m as usize];
        if rec.last_game == game {
            return;
        }
        rec.last_game = game;
        rec.counts[r] += 1;
        if let Some(e) = elos[usize::from(!ply.white_moved)] {
            rec.rating_sum += u64::from(e);
            rec.rating_count += 1;
        }
    }

    /// Heap bytes in use (exact up to allocator rounding and unused capacity).
    pub fn bytes(&self) -> usize {
        self.positions.len() * POS_OVERHEAD + self.arena.len() + self.moves.len() * MOVE_BYTES
    }

    /// True when the memory budget is used up, or a 32-bit index or counter is past half its
    /// range (the arena offset, record indices, the game counter that bounds every move
    /// counter). Checked between batches; one batch (at most 64 MiB of PGN, fewer plies than
    /// bytes, at most 50 arena bytes a ply) cannot use the other half.
    pub fn full(&self, budget: usize) -> bool {
        let limit = (u32::MAX / 2) as usize;
        self.bytes() >= budget
            || self.arena.len() >= limit
            || self.positions.len() >= limit
            || self.moves.len() >= limit
            || self.games as usize >= limit
    }

    pub fn len(&self) -> usize {
        self.positions.len()
    }

    pub fn is_empty(&self) -> bool {
        self.positions.is_empty()
    }

    /// Drains into a stream of entries sorted by (key, position); each entry is built only
    /// when the stream reaches it.
    pub fn into_sorted(mut self) -> SortedAggregate {
        let mut order = std::mem::take(&mut self.spare_order);
        order.clear();
        order.extend(
            self.positions
                .iter()
                .enumerate()
                .map(|(i, p)| (p.key, i as u32)),
        );
        order.sort_unstable();
        // Positions sharing a key (collisions) go in packed-byte order.
        let mut i = 0;
        while i < order.len() {
            let mut j = i + 1;
            while j < order.len() && order[j].0 == order[i].0 {
                j += 1;
            }
            if j - i > 1 {
                order[i..j].sort_by(|a, b| {
                    self.pos_bytes(&self.positions[a.1 as usize])
                        .cmp(self.pos_bytes(&self.positions[b.1 as usize]))
                });
            }
            i = j;
        }
        SortedAggregate {
            agg: self,
            order,
            next: 0,
        }
    }

    /// Empties the aggregator, keeping its allocations for the next round.
    pub fn clear(&mut self) {
        self.map.clear();
        self.positions.clear();
        self.moves.clear();
        self.arena.clear();
        self.games = 0;
    }
}

/// Entries of a drained [`Aggregator`], in (key, position) order.
pub struct SortedAggregate {
    agg: Aggregator,
    order: Vec<(u64, u32)>,
    next: usize,
}

/// How far ahead of the cursor position records (and then their bytes and first move) are
/// prefetched: drained in key order, the records are visited in random memory order.
const PREFETCH_AHEAD: usize = 16;
/// Plies of a game whose lookups are overlapped (see [`Aggregator::add_game`]).
const PREFETCH_PLIES: usize = 32;

#[inline(always)]
fn prefetch<T>(p: *const T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch is only a hint; it never faults, whatever the address.
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(p.cast())
    };
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

impl SortedAggregate {
    pub fn len(&self) -> usize {
        self.order.len() - self.next
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The emptied aggregator, for reuse (its allocations are kept).
    pub fn into_aggregator(self) -> Aggregator {
        let mut agg = self.agg;
        agg.clear();
        agg.spare_order = self.order;
        agg
    }

    /// The next entry written into `e` (its buffers reused: spilling a run allocates nothing
    /// per entry); false at the end.
    pub fn next_into(&mut self, e: &mut Entry) -> bool {
        let Some(&(key, i)) = self.order.get(self.next) else {
            return false;
        };
        if let Some(&(_, far)) = self.order.get(self.next + PREFETCH_AHEAD) {
            prefetch(self.agg.positions.as_ptr().wrapping_add(far as usize));
        }
        if let Some(&(_, near)) = self.order.get(self.next + PREFETCH_AHEAD / 2) {
            let p = &self.agg.positions[near as usize];
            prefetch(self.agg.arena.as_ptr().wrapping_add(p.pos_at as usize));
            prefetch(self.agg.moves.as_ptr().wrapping_add(p.first_move as usize));
        }
        self.next += 1;
        let p = self.agg.positions[i as usize];
        e.coded = None;
        e.key = key;
        let pos = e.pos.get_or_insert_with(Vec::new);
        pos.clear();
        pos.extend_from_slice(self.agg.pos_bytes(&p));
        e.moves.clear();
        let mut m = p.first_move;
        while m != NONE {
            let a = &self.agg.moves[m as usize];
            e.moves.push(MoveRec {
                mv: a.mv,
                white: u64::from(a.counts[0]),
                draws: u64::from(a.counts[1]),
                black: u64::from(a.counts[2]),
                unknown: u64::from(a.counts[3]),
                rating_sum: a.rating_sum,
                rating_count: u64::from(a.rating_count),
                extra: None,
                indexed: false,
            });
            m = a.next;
        }
        e.normalize();
        true
    }
}

impl Iterator for SortedAggregate {
    type Item = Entry;
    fn next(&mut self) -> Option<Entry> {
        let mut e = Entry {
            coded: None,
            key: 0,
            pos: None,
            moves: Vec::with_capacity(2),
        };
        self.next_into(&mut e).then_some(e)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.len(), Some(self.len()))
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
    /// Raw PGN text cut at game boundaries, with the line number it starts on.
    Chunk {
        input: usize,
        first_line: u64,
        data: Vec<u8>,
    },
    /// `--dedupe`: parse a chunk, fingerprint its games and keep them until [`Msg::Count`]
    /// says which ones are not repeats. Only the coordinator sees every fingerprint in input
    /// order, so it decides; the parsing and the fingerprints stay on the workers.
    Parse {
        seq: u64,
        input: usize,
        first_line: u64,
        data: Vec<u8>,
    },
    /// `--dedupe`: count the games of parsed chunk `seq` whose `keep` flag is set.
    Count { seq: u64, keep: Vec<bool> },
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
        /// `--dedupe`: fingerprints of the games counted.
        counted: Vec<u128>,
        full: bool,
        /// The chunk's text buffer, emptied, for the reader to fill again.
        spare: Option<Vec<u8>>,
    },
    /// `--dedupe`: the games of parsed chunk `seq` in order, each as (fingerprint, line);
    /// `None` for unparsable text (reported as skipped when the chunk is counted).
    Parsed {
        seq: u64,
        worker: usize,
        input: usize,
        games: ParsedGames,
        spare: Vec<u8>,
    },
    Flushed(PathBuf, u64),
    Taken(SortedAggregate),
    Failed(Error),
}

/// The games a worker counted and skipped while handling one message.
#[derive(Default)]
struct Tally {
    imported: u64,
    skipped: Vec<(u64, SkipReason)>,
}

/// Replays a game and adds it to the aggregate, or records why it is skipped; true if counted.
fn count_game(
    g: &RawGame,
    rules: &CountRules,
    agg: &mut Aggregator,
    plies: &mut Vec<Ply>,
    tally: &mut Tally,
) -> bool {
    match replay_into(g, rules, plies) {
        Ok(()) => {
            tally.imported += 1;
            agg.add_game(game_result(g), [g.white_elo, g.black_elo], plies);
            true
        }
        Err(r) => {
            tally.skipped.push((g.line, r));
            false
        }
    }
}

/// Parses the games of a chunk of PGN text in order and calls `f` with each (its line made
/// absolute with `first_line`), or with the reason the rest of the chunk is unreadable. `f`
/// may hand a game back for its buffers to be reused. Returns the games read.
fn each_game(
    data: &[u8],
    first_line: u64,
    mut f: impl FnMut(std::result::Result<RawGame, (u64, SkipReason)>) -> Option<RawGame>,
) -> u64 {
    let mut read = 0;
    let mut games = GameReader::new(data);
    loop {
        match games.next_game() {
            Ok(Some(mut g)) => {
                read += 1;
                g.line += first_line - 1;
                if let Some(g) = f(Ok(g)) {
                    games.recycle(g);
                }
            }
            Ok(None) => break,
            Err(e) => {
                // Reading from memory fails only on unparsable text; count it as one
                // unreadable game and drop the rest of the chunk's text.
                read += 1;
                f(Err((first_line, SkipReason::Unreadable(e.to_string()))));
                break;
            }
        }
    }
    read
}

/// The games of a parsed `--dedupe` chunk as the coordinator sees them: (fingerprint, line) in
/// order, `None` for unparsable text.
type ParsedGames = Vec<Option<(u128, u64)>>;

/// A `--dedupe` chunk parsed by a worker and waiting for the coordinator's decision.
type ParsedChunk = Vec<std::result::Result<(RawGame, Option<u128>), (u64, SkipReason)>>;

/// The fingerprint `--dedupe` knows a game by; `None` for a game the PGN reader could not
/// parse: it has no tags or moves to compare (all such games would look alike), and it is
/// reported as unreadable, never as a repeat.
fn dedupe_fingerprint(g: &RawGame) -> Option<u128> {
    g.error.is_none().then(|| game_fingerprint(g))
}

fn worker(id: usize, rx: Receiver<Msg>, tx: Sender<Reply>, rules: CountRules, budget: usize) {
    // Sized for the budget up front: rehashing a table of millions of positions as it grows
    // costs more than the aggregation itself. Untouched buckets cost no resident memory.
    let mut agg = Aggregator::for_budget(budget);
    let mut plies = Vec::with_capacity(64);
    let mut parsed: HashMap<u64, (usize, ParsedChunk)> = HashMap::new();
    while let Ok(msg) = rx.recv() {
        let reply = match msg {
            Msg::Chunk {
                input,
                first_line,
                data,
            } => {
                let mut t = Tally::default();
                let read = each_game(&data, first_line, |g| match g {
                    Ok(g) => {
                        count_game(&g, &rules, &mut agg, &mut plies, &mut t);
                        Some(g)
                    }
                    Err(s) => {
                        t.skipped.push(s);
                        None
                    }
                });
                let mut spare = data;
                spare.clear();
                Reply::Batch {
                    input,
                    read,
                    imported: t.imported,
                    skipped: t.skipped,
                    counted: Vec::new(),
                    full: agg.full(budget),
                    spare: Some(spare),
                }
            }
            Msg::Parse {
                seq,
                input,
                first_line,
                data,
            } => {
                let mut games = Vec::new();
                each_game(&data, first_line, |g| {
                    games.push(g.map(|g| {
                        let fp = dedupe_fingerprint(&g);
                        (g, fp)
                    }));
                    None
                });
                let summary = games
                    .iter()
                    .map(|g| {
                        let (g, fp) = g.as_ref().ok()?;
                        Some(((*fp)?, g.line))
                    })
                    .collect();
                parsed.insert(seq, (input, games));
                let mut spare = data;
                spare.clear();
                Reply::Parsed {
                    seq,
                    worker: id,
                    input,
                    games: summary,
                    spare,
                }
            }
            Msg::Count { seq, keep } => {
                let Some((input, games)) = parsed.remove(&seq) else {
                    let _ = tx.send(Reply::Failed(Error::Invalid(format!(
                        "import worker {id} has no parsed chunk {seq}"
                    ))));
                    return;
                };
                let mut t = Tally::default();
                let mut counted = Vec::new();
                for (g, keep) in games.into_iter().zip(keep) {
                    match g {
                        Ok((g, fp)) => {
                            if keep
                                && count_game(&g, &rules, &mut agg, &mut plies, &mut t)
                                && let Some(fp) = fp
                            {
                                counted.push(fp);
                            }
                        }
                        Err(s) => t.skipped.push(s),
                    }
                }
                Reply::Batch {
                    input,
                    read: 0,
                    imported: t.imported,
                    skipped: t.skipped,
                    counted,
                    full: agg.full(budget),
                    spare: None,
                }
            }
            Msg::Flush(path) => {
                if agg.is_empty() {
                    Reply::Flushed(path, 0)
                } else {
                    let mut sorted = std::mem::take(&mut agg).into_sorted();
                    let res = RunWriter::create(&path).and_then(|mut w| {
                        let mut e = Entry::default();
                        while sorted.next_into(&mut e) {
                            w.push(&e)?;
                        }
                        w.finish()
                    });
                    // The same tables serve the next round: no fresh pages to fault in.
                    agg = sorted.into_aggregator();
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

/// Raw text handed to a worker at once, at most (see `read_phase` for smaller budgets).
const CHUNK_BYTES: usize = 1 << 20;
/// A chunk grows past this only if no game boundary was found (then it is cut at a line end).
const MAX_CHUNK_BYTES: usize = 64 << 20;

/// Where to cut a buffer of PGN text that starts outside any comment (at the start of the
/// input or of a game): just before the last `[` that starts a line after a blank line (the
/// start of a game's tags) and is not inside a comment. Brace comments may hold blank lines
/// and lines starting with `[` (`{ ...\n\n[%clk 0:01:00] }`), so the text is scanned: brace
/// comments, rest-of-line `;` comments, `%` escape lines and tag pairs (whose quoted values
/// may hold braces) are skipped. `None` if there is no such `[` after the first byte.
fn last_game_boundary(buf: &[u8]) -> Option<usize> {
    let mut last = None;
    let mut i = 0;
    loop {
        if i < buf.len() && (i == 0 || buf[i - 1] == b'\n') {
            match buf[i] {
                b'[' => {
                    let blank_before = buf[..i].ends_with(b"\n\n") || buf[..i].ends_with(b"\n\r\n");
                    if blank_before {
                        last = Some(i);
                    }
                    match skip_tag(buf, i) {
                        Some(end) => {
                            i = end;
                            continue;
                        }
                        None => return last,
                    }
                }
                b'%' => match memchr::memchr(b'\n', &buf[i..]) {
                    Some(k) => {
                        i += k + 1;
                        continue;
                    }
                    None => return last,
                },
                _ => {}
            }
        }
        let Some(j) = memchr::memchr3(b'\n', b'{', b';', &buf[i..]).map(|j| i + j) else {
            return last;
        };
        i = match buf[j] {
            b'\n' => j + 1,
            b'{' => match memchr::memchr(b'}', &buf[j + 1..]) {
                Some(k) => j + 1 + k + 1,
                None => return last,
            },
            // A `;` comment runs to the end of its line (the newline is seen next).
            _ => match memchr::memchr(b'\n', &buf[j..]) {
                Some(k) => j + k,
                None => return last,
            },
        };
    }
}

/// The end of the tag pair starting at `buf[start] == b'['`: after its `]`, or at the end of
/// its line if it has none; quoted values may hold `]`, braces and `\"`. `None` if the buffer
/// ends first.
fn skip_tag(buf: &[u8], start: usize) -> Option<usize> {
    let mut in_string = false;
    let mut escaped = false;
    for (k, &c) in buf.iter().enumerate().skip(start + 1) {
        match c {
            b'\n' => return Some(k),
            _ if escaped => escaped = false,
            b'\\' if in_string => escaped = true,
            b'"' => in_string = !in_string,
            b']' if !in_string => return Some(k + 1),
            _ => {}
        }
    }
    None
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
    let mut trace = super::progress::Trace::new();
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
    let records_before = match &existing {
        Some(b) => b.imports()?,
        None => Vec::new(),
    };
    let done: HashSet<String> = records_before.iter().map(|(k, _)| k.clone()).collect();
    // The attempts whose counts the book holds (see APPLYING below).
    let committed: HashSet<String> = records_before
        .iter()
        .filter_map(|(_, v)| serde_json::from_slice::<serde_json::Value>(v).ok())
        .filter_map(|v| v.get("attempt")?.as_str().map(str::to_string))
        .collect();
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
        collect_skipped(None, &mut summary, opts)?.publish()?;
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
    // An earlier run of this import was killed after its commit but before it removed its
    // staging area: its counts are in the book (its attempt is recorded there), so applying
    // again would count the games twice (this matters with --force, which bypasses the
    // already-imported check). Finish its cleanup instead.
    if let Ok(prev) = std::fs::read_to_string(staging.join(APPLYING))
        && committed.contains(prev.trim())
    {
        // The interrupted run counted the games; its log of skipped ones is complete.
        collect_skipped(Some(&staging.join("skipped.jsonl")), &mut summary, opts)?.publish()?;
        let _ = std::fs::remove_dir_all(&staging);
        let _ = std::fs::remove_dir(&staging_root);
        summary.applied = "committed before the interruption".into();
        summary.resumed = true;
        let b = Book::open(book_path, crate::chess_codec())?;
        summary.book = b.meta().clone();
        summary.book_bytes = b.file_bytes();
        summary.elapsed_secs = start.elapsed().as_secs_f64();
        return Ok(summary);
    }
    let state_path = staging.join("state.json");
    let mut state: ImportState = std::fs::read(&state_path)
        .ok()
        .and_then(|b| serde_json::from_slice(&b).ok())
        // Version 2 differs only for --dedupe (it counted games read, not bytes).
        .filter(|s: &ImportState| {
            (s.version == STATE_VERSION || (s.version == 2 && !opts.dedupe))
                && s.id == id
                && !has_stdin
        })
        .filter(|s| s.runs.iter().all(|(r, _)| staging.join(r).exists()))
        .map(|s| ImportState {
            version: STATE_VERSION,
            ..s
        })
        .unwrap_or_else(|| ImportState {
            version: STATE_VERSION,
            id: id.clone(),
            per_input: vec![InputCounts::default(); plan.len()],
            ..Default::default()
        });
    summary.resumed = !state.runs.is_empty()
        || state.input_index > 0
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
            if n != "state.json"
                && n != "skipped.jsonl"
                && n != GAMES_LOG
                && n != APPLYING
                && !state.runs.iter().any(|(r, _)| *r == n)
            {
                let _ = std::fs::remove_file(e.path());
            }
        }
    }
    if !summary.resumed {
        let _ = std::fs::remove_file(staging.join("skipped.jsonl"));
        let _ = std::fs::remove_file(staging.join(GAMES_LOG));
    } else {
        // What was written after the checkpoint describes games that will be read again.
        for (name, len) in [
            ("skipped.jsonl", state.skipped_log_bytes),
            (GAMES_LOG, state.games_log_bytes),
        ] {
            if let Ok(f) = std::fs::OpenOptions::new()
                .write(true)
                .open(staging.join(name))
            {
                let _ = f.set_len(len);
            }
        }
    }

    let progress = Progress::new(opts.show_progress);
    let mut stdin_fp: Vec<Option<String>> = vec![None; plan.len()];
    trace.mark("plan (lock, book records, input fingerprints, staging area)");
    let t_read = Instant::now();
    let mut in_memory = None;
    if !state.read_complete {
        // Fingerprints of the games read (`--dedupe`), in bounded memory; rebuilt on a resume.
        let mut seen =
            FingerprintSet::new(&staging, fpset::capacity_for(opts.memory_mib.max(1) << 20));
        in_memory = read_phase(
            book_path,
            &plan,
            &staging,
            &mut state,
            opts,
            &progress,
            &mut stdin_fp,
            &mut seen,
        )?;
        summary.dedupe_spilled = seen.spilled();
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
    let report = collect_skipped(Some(&staging.join("skipped.jsonl")), &mut summary, opts)?;

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
    // This attempt's id, written to the staging area before the commit and into the records
    // the commit stores.
    let attempt = format!(
        "{:016x}",
        xxhash_rust::xxh3::xxh3_64(
            format!(
                "{id}|{}|{:?}",
                std::process::id(),
                std::time::SystemTime::now()
            )
            .as_bytes()
        )
    );
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
                "attempt": attempt,
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
    // `--dedupe`: the fingerprints of the games read, recorded in the book with its new counts.
    // Sorted into a staging table in bounded memory, then copied into the book.
    let new_games = if opts.dedupe {
        fpset::sorted_table(
            &staging.join(GAMES_LOG),
            &staging.join(COUNTED_TABLE),
            fpset::capacity_for(opts.memory_mib.max(1) << 20),
        )?
        .map(|(db, _)| db)
    } else {
        None
    };
    write_atomic(&staging.join(APPLYING), attempt.as_bytes())?;
    summary.applied = apply(
        book_path,
        &staging,
        &state,
        in_memory,
        run_entries,
        summary.games_imported,
        (records, new_games),
        &writer_opts,
        opts.delta_min,
    )?;
    report.publish()?;
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

/// The `--report` file, written beside its final name and moved there once the import has
/// succeeded (a failed import leaves the previous report, if any, in place).
#[must_use]
struct PendingReport(Option<(PathBuf, PathBuf)>);

impl PendingReport {
    fn publish(self) -> Result<()> {
        match self.0 {
            None => Ok(()),
            Some((tmp, path)) => std::fs::rename(&tmp, &path)
                .map_err(|e| Error::io(format!("moving report to {}", path.display()), e)),
        }
    }
}

/// Reads the skipped-games log (if any): the summary keeps the first `opts.keep_skipped`, the
/// report file (`opts.report`) gets every one, one line each, streamed.
fn collect_skipped(
    log: Option<&Path>,
    summary: &mut ImportSummary,
    opts: &ImportOptions,
) -> Result<PendingReport> {
    let mut report = match &opts.report {
        Some(path) => {
            let mut name = path.file_name().unwrap_or_default().to_os_string();
            name.push(".tmp");
            let tmp = path.with_file_name(name);
            let f = std::fs::File::create(&tmp)
                .map_err(|e| Error::io(format!("creating report {}", tmp.display()), e))?;
            Some((tmp, path.clone(), std::io::BufWriter::new(f)))
        }
        None => None,
    };
    let file = match log.map(std::fs::File::open) {
        None => None,
        Some(Ok(f)) => Some(f),
        Some(Err(e)) if e.kind() == std::io::ErrorKind::NotFound => None,
        Some(Err(e)) => return Err(Error::io("reading the skipped-games log", e)),
    };
    if let (Some(f), Some(log)) = (file, log) {
        for (n, line) in std::io::BufReader::new(f).lines().enumerate() {
            if summary.skipped.len() >= opts.keep_skipped && report.is_none() {
                break;
            }
            let line = line.map_err(|e| Error::io("reading the skipped-games log", e))?;
            let s = serde_json::from_str::<SkippedGame>(&line).map_err(|e| {
                Error::Invalid(format!(
                    "{}:{}: damaged skipped-games log ({e}); remove the staging directory to start the import over",
                    log.display(),
                    n + 1
                ))
            })?;
            if let Some((tmp, _, w)) = &mut report {
                writeln!(w, "{}:{}\t{}\t{}", s.file, s.line, s.reason, s.detail)
                    .map_err(|e| Error::io(format!("writing report {}", tmp.display()), e))?;
            }
            if summary.skipped.len() < opts.keep_skipped {
                summary.skipped.push(s);
            }
        }
    }
    Ok(PendingReport(match report {
        None => None,
        Some((tmp, path, mut w)) => {
            w.flush()
                .map_err(|e| Error::io(format!("writing report {}", tmp.display()), e))?;
            Some((tmp, path))
        }
    }))
}

/// Mutable bookkeeping of the coordinator between checkpoints.
struct Coordinator<'a> {
    plan: &'a [PlannedInput],
    staging: &'a Path,
    txs: Vec<Sender<Msg>>,
    rx: Receiver<Reply>,
    pending_skips: Vec<SkippedGame>,
    /// `--dedupe`: fingerprints of games read since the last checkpoint.
    pending_games: Vec<u128>,
    full: bool,
    next_worker: usize,
    skipped_file: std::fs::File,
    games_file: std::fs::File,
    checkpoints: u64,
    /// Chunk buffers the workers handed back, reused so that reading faults in no new pages.
    spare_chunks: Vec<Vec<u8>>,
    /// Largest buffer capacity kept in `spare_chunks`.
    max_spare_chunk: usize,
    /// `--dedupe`: the repeat decisions, made here in input order.
    dedupe: Option<Dedupe<'a>>,
}

/// What the coordinator of a `--dedupe` import needs to decide, in input order, which parsed
/// games are repeats.
struct Dedupe<'a> {
    /// Fingerprints of the games read so far.
    seen: &'a mut FingerprintSet,
    /// The games the book already counted (recorded by earlier `--dedupe` imports).
    known: Option<&'a book::GameIndex>,
    /// Parsed chunks that arrived before an earlier one: (worker, input, games).
    waiting: BTreeMap<u64, (usize, usize, ParsedGames)>,
    /// Sequence number of the next chunk sent, and of the next one to decide.
    next_seq: u64,
    next_decide: u64,
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
                full,
                spare,
            } => {
                // A buffer that grew far past the chunk size (no game boundary in sight) is
                // freed rather than kept for the rest of the import.
                let cap = self.max_spare_chunk;
                self.spare_chunks
                    .extend(spare.filter(|b| b.capacity() <= cap));
                self.pending_games.extend(counted);
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
                self.bound_pending()?;
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
                    Error::Invalid("import worker parsed a chunk without --dedupe".into())
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
                let Some((fp, line)) = *g else {
                    // Unparsable text: the worker reports it as unreadable.
                    keep.push(true);
                    continue;
                };
                let in_book = match d.known {
                    Some(k) => k.contains(fp)?,
                    None => false,
                };
                let repeat = in_book || !d.seen.insert(fp)?;
                keep.push(!repeat);
                if repeat {
                    repeats.push((line, in_book));
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
            for (line, in_book) in repeats {
                self.pending_skips.push(SkippedGame {
                    file: self.plan[input].name.clone(),
                    line,
                    reason: "duplicate".into(),
                    detail: if in_book {
                        "already counted in the book by an earlier --dedupe import".into()
                    } else {
                        SkipReason::Duplicate.to_string()
                    },
                });
                self.bound_pending()?;
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
        Error::Invalid("import worker stopped".into())
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
                return Err(Error::Invalid(
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
        data: Vec<u8>,
        state: &mut ImportState,
    ) -> Result<()> {
        let Some(d) = self.dedupe.as_mut() else {
            return self.send(
                Msg::Chunk {
                    input,
                    first_line,
                    data,
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

    /// Appends the skipped games and the counted games' fingerprints gathered since the last
    /// call to their staging logs, and with `sync` makes both durable. Lines past the last
    /// checkpoint are cut off on a resume (§8.3), so they may be written at any time.
    fn write_pending(&mut self, sync: bool) -> Result<()> {
        let mut text = String::new();
        for sk in self.pending_skips.drain(..) {
            let line = serde_json::to_string(&sk).map_err(|e| Error::Invalid(e.to_string()))?;
            text.push_str(&line);
            text.push('\n');
        }
        self.skipped_file
            .write_all(text.as_bytes())
            .and_then(|()| {
                if sync {
                    self.skipped_file.sync_data()
                } else {
                    Ok(())
                }
            })
            .map_err(|e| Error::io("writing skipped-games log", e))?;
        let bytes: Vec<u8> = self
            .pending_games
            .drain(..)
            .flat_map(u128::to_le_bytes)
            .collect();
        self.games_file
            .write_all(&bytes)
            .and_then(|()| {
                if sync {
                    self.games_file.sync_data()
                } else {
                    Ok(())
                }
            })
            .map_err(|e| Error::io("writing game fingerprints", e))
    }

    /// Keeps the pending lists short whatever the input: with most games skipped (say by
    /// `--min-rating`) the workers may never fill, and checkpoints never come.
    fn bound_pending(&mut self) -> Result<()> {
        if self.pending_skips.len() >= PENDING_MAX || self.pending_games.len() >= PENDING_MAX {
            self.write_pending(false)?;
        }
        Ok(())
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
        self.write_pending(true)?;
        state.skipped_log_bytes = self
            .skipped_file
            .metadata()
            .map_err(|e| Error::io("skipped-games log", e))?
            .len();
        state.games_log_bytes = self
            .games_file
            .metadata()
            .map_err(|e| Error::io("game fingerprints", e))?
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
#[allow(clippy::too_many_arguments)]
fn read_phase(
    book_path: &Path,
    plan: &[PlannedInput],
    staging: &Path,
    state: &mut ImportState,
    opts: &ImportOptions,
    progress: &Progress,
    stdin_fp: &mut [Option<String>],
    seen: &mut FingerprintSet,
) -> Result<Option<Vec<SortedAggregate>>> {
    let jobs = if opts.jobs == 0 {
        std::thread::available_parallelism().map_or(2, |n| n.get())
    } else {
        opts.jobs
    }
    .clamp(1, 256);
    // Half the budget for aggregation; the rest covers chunks in flight, the writer (model
    // sample, segments in flight) and the merge. The aggregators are sized for it up front;
    // untouched capacity costs no resident memory.
    let budget = ((opts.memory_mib.max(1) << 20) / 2 / jobs).max(1 << 16);
    // A worker learns that it is full only after a chunk; by then up to three more chunks are
    // queued for it, so with a small budget the chunks are small too (1/32 of a worker's
    // budget: 1 MiB from --memory 128 up, 256 KiB at --memory 32).
    let chunk_bytes = (budget / 32).clamp(64 << 10, CHUNK_BYTES);
    let skipped_file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(staging.join("skipped.jsonl"))
        .map_err(|e| Error::io("opening skipped-games log", e))?;
    let games_file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(staging.join(GAMES_LOG))
        .map_err(|e| Error::io("opening game fingerprints", e))?;
    // `--dedupe`: games the book already counted (recorded by earlier `--dedupe` imports).
    // Closed at the end of this phase, before the book is written.
    let known = if opts.dedupe && book_path.exists() {
        // Random lookups: redb's cache within the budget's share, not its 64 MiB default.
        let cache = WriterOptions::for_memory(opts.memory_mib.max(1) << 20).cache_bytes;
        let b = Book::open_with_cache(book_path, crate::chess_codec(), cache)?;
        let index = b.game_index()?;
        Some((index, b))
    } else {
        None
    };
    let known = known.as_ref().map(|(index, _)| index);

    std::thread::scope(|s| -> Result<Option<Vec<SortedAggregate>>> {
        let (res_tx, res_rx) = unbounded::<Reply>();
        let mut txs = Vec::with_capacity(jobs);
        for _ in 0..jobs {
            let (tx, rx) = bounded::<Msg>(2);
            let res_tx = res_tx.clone();
            let rules = opts.rules;
            let id = txs.len();
            // A panic (a bug) is reported like any failure: the coordinator may be waiting
            // for this worker's answer, which would otherwise never come.
            let panic_tx = res_tx.clone();
            s.spawn(move || {
                let run = std::panic::AssertUnwindSafe(|| worker(id, rx, res_tx, rules, budget));
                if std::panic::catch_unwind(run).is_err() {
                    let _ = panic_tx.send(Reply::Failed(Error::Invalid(format!(
                        "import worker {id} panicked (a bug; please report it)"
                    ))));
                }
            });
            txs.push(tx);
        }
        drop(res_tx);
        let mut co = Coordinator {
            plan,
            staging,
            txs,
            rx: res_rx,
            pending_skips: Vec::new(),
            pending_games: Vec::new(),
            games_file,
            full: false,
            next_worker: 0,
            skipped_file,
            checkpoints: 0,
            spare_chunks: Vec::new(),
            max_spare_chunk: 4 * chunk_bytes,
            dedupe: opts.dedupe.then(|| Dedupe {
                seen,
                known,
                waiting: BTreeMap::new(),
                next_seq: 0,
                next_decide: 0,
            }),
        };

        if let Some(d) = co.dedupe.as_mut() {
            // Resumed past earlier inputs: their games count as seen again. (An import with
            // stdin among its inputs never resumes, so each of them is a file.)
            for p in &plan[..state.input_index] {
                if p.fingerprint.is_some() {
                    progress.phase(&format!("rereading {} for --dedupe", p.name));
                    remember_games(&p.name, d.seen)?;
                }
            }
        }
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
            // Chunks of text cut at game boundaries; workers parse them in parallel.
            let (mut offset, mut line) = if resuming && state.bytes_in_input > 0 {
                let skip = state.bytes_in_input;
                let mut prefix = std::io::Read::take(&mut reader, skip);
                let ctx = |e| Error::io(format!("reading {}", p.name), e);
                match co.dedupe.as_mut() {
                    Some(d) => {
                        // The games before the checkpoint count as seen again.
                        progress.phase(&format!("rereading the start of {} for --dedupe", p.name));
                        let mut games = GameReader::new(&mut prefix);
                        while let Some(g) = games.next_game().map_err(ctx)? {
                            if let Some(fp) = dedupe_fingerprint(&g) {
                                d.seen.insert(fp)?;
                            }
                        }
                    }
                    None => {
                        std::io::copy(&mut prefix, &mut std::io::sink()).map_err(ctx)?;
                    }
                }
                if prefix.limit() != 0 {
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
            let mut buf: Vec<u8> = Vec::with_capacity(2 * chunk_bytes);
            let mut eof = false;
            while !eof || !buf.is_empty() {
                while !eof && buf.len() < chunk_bytes {
                    let start = buf.len();
                    buf.resize(start + chunk_bytes / 4, 0);
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
                let mut rest = co
                    .spare_chunks
                    .pop()
                    .unwrap_or_else(|| Vec::with_capacity(2 * chunk_bytes));
                rest.extend_from_slice(&buf[cut..]);
                buf.truncate(cut);
                let data = std::mem::replace(&mut buf, rest);
                let lines = memchr::memchr_iter(b'\n', &data).count() as u64;
                let len = data.len() as u64;
                co.send_chunk(idx, line, data, state)?;
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
            if let Some(h) = raw_hash {
                // Drain what the decompressor did not need, so the fingerprint covers every byte.
                let _ = std::io::copy(&mut reader, &mut std::io::sink());
                let h = h.lock().map(|h| h.digest128()).unwrap_or(0);
                stdin_fp[idx] = Some(format!("{h:032x}"));
            }
            state.input_index = idx + 1;
            state.bytes_in_input = 0;
            state.line_in_input = 0;
        }
        state.read_complete = true;
        if co.checkpoints == 0 && state.runs.is_empty() {
            // Everything fit in memory: hand the aggregates straight to the writer.
            let replies = co.broadcast(state, |_| Msg::Take)?;
            co.write_pending(true)?;
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

/// Adds the fingerprints of every game of an input read completely before a checkpoint, so
/// that `--dedupe` drops their repeats in later inputs after a resume as it would have without
/// the interruption.
fn remember_games(path: &str, seen: &mut FingerprintSet) -> Result<()> {
    let inp = input::open(path)?;
    let mut games = GameReader::new(inp.reader);
    while let Some(g) = games
        .next_game()
        .map_err(|e| Error::io(format!("reading {path}"), e))?
    {
        if let Some(fp) = dedupe_fingerprint(&g) {
            seen.insert(fp)?;
        }
    }
    Ok(())
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

/// The workers' sorted aggregates of an import that fit in memory, as entry streams.
fn memory_streams(parts: Vec<SortedAggregate>) -> Vec<EntryStream<'static>> {
    parts
        .into_iter()
        .map(|v| Box::new(v.map(Ok)) as EntryStream<'static>)
        .collect()
}

/// Readers of spilled runs.
fn open_run_files(paths: &[PathBuf]) -> Result<Vec<EntryStream<'static>>> {
    paths
        .iter()
        .map(|p| RunReader::open(p).map(|r| Box::new(r) as EntryStream<'static>))
        .collect()
}

/// Applies the runs to the book; returns how ("rewrite" or "delta").
#[allow(clippy::too_many_arguments)]
fn apply(
    book_path: &Path,
    staging: &Path,
    state: &ImportState,
    mut in_memory: Option<Vec<SortedAggregate>>,
    run_entries: u64,
    games: u64,
    (records, new_games): (Vec<(String, Vec<u8>)>, Option<GameTable>),
    writer_opts: &WriterOptions,
    delta_min: u64,
) -> Result<String> {
    let run_files: Vec<PathBuf> = state.runs.iter().map(|(r, _)| staging.join(r)).collect();
    // A delta plan looks every new entry up in the book: caches within the budget's share.
    let old = if book_path.exists() {
        Some(Book::open_with_cache(
            book_path,
            crate::chess_codec(),
            writer_opts.cache_bytes,
        )?)
    } else {
        None
    };
    if let Some(book) = &old {
        let m = book.meta();
        let threshold = delta_min.max(m.positions / 8);
        if m.positions + m.key_only > 0 && run_entries + m.delta_entries <= threshold {
            // Nothing is held in memory (the delta tier may take an eighth of a large book):
            // the new entries stream from runs and the values to write go to a run. Entries
            // still in memory go to a run first, to be read again if the book is busy.
            let runs: Vec<PathBuf> = match in_memory.take() {
                Some(parts) => {
                    let p = staging.join(MEMORY_RUN);
                    let mut w = RunWriter::create(&p)?;
                    for e in MergeIter::new(memory_streams(parts)) {
                        w.push(&e?)?;
                    }
                    w.finish()?;
                    vec![p]
                }
                None => run_files,
            };
            let mut plan = book::plan_delta(
                book,
                MergeIter::new(open_run_files(&runs)?),
                games,
                &staging.join(DELTA_RUN),
            )?;
            plan.imports = records.clone();
            plan.games = new_games.clone();
            let path = book.path().to_path_buf();
            drop(old);
            match book::commit_delta(&path, &plan, writer_opts.cache_bytes) {
                Ok(()) => return Ok("delta".into()),
                Err(DeltaCommitError::Busy) => {}
                Err(DeltaCommitError::Other(e)) => return Err(e),
            }
            // Another process holds the book open: write a new file instead.
            return rewrite(
                book_path,
                Some(Book::open(book_path, crate::chess_codec())?),
                open_run_files(&runs)?,
                run_entries,
                games,
                (records, new_games),
                writer_opts,
            );
        }
    }
    let sources = match in_memory {
        Some(parts) => memory_streams(parts),
        None => open_run_files(&run_files)?,
    };
    rewrite(
        book_path,
        old,
        sources,
        run_entries,
        games,
        (records, new_games),
        writer_opts,
    )
}

fn rewrite(
    book_path: &Path,
    old: Option<Book>,
    runs: Vec<EntryStream<'static>>,
    run_entries: u64,
    games: u64,
    (records, new_games): (Vec<(String, Vec<u8>)>, Option<GameTable>),
    writer_opts: &WriterOptions,
) -> Result<String> {
    let mut w = BookWriter::create(book_path, crate::chess_codec(), writer_opts.clone())?;
    w.add_games(games);
    if let Some(db) = new_games {
        w.add_game_fingerprints_from(db);
    }
    let mut sources: Vec<EntryStream<'_>> = Vec::new();
    if let Some(b) = &old {
        w.add_games(b.meta().games);
        w.add_imports(b.imports()?);
        w.keep_game_fingerprints_of(b);
        // New games up to half the book: keep its model, its coded positions pass through.
        let m = b.meta();
        let reuse = super::rewrite::keeps_model(m, run_entries + m.delta_entries)
            .then(|| b.compression())
            .flatten();
        if let Some(c) = &reuse {
            w.reuse_compression(c.clone())?;
        }
        sources.push(Box::new(b.iter_for_rewrite_coded(reuse.as_ref())?));
    }
    w.add_imports(records);
    sources.push(Box::new(MergeIter::new(runs)));
    let mut trace = super::progress::Trace::new();
    for e in super::rewrite::AttachKeyOnly::new(MergeIter::new(sources)) {
        w.push(e?)?;
    }
    trace.mark("rewrite: merge and write blocks");
    w.finish()?;
    trace.mark("rewrite: finish (last blocks, meta, commit, compact, rename)");
    Ok("rewrite".into())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chess::PosState;

    /// `--dedupe` decisions follow input order whatever order the workers answer in: parsed
    /// chunks delivered last-first are decided first-first, each game against the games of
    /// the chunks before it, and each decision goes to the worker holding the chunk.
    #[test]
    fn dedupe_decides_chunks_in_input_order_whatever_order_they_arrive_in() {
        let dir = tempfile::tempdir().unwrap();
        let plan = [PlannedInput {
            name: "in.pgn".into(),
            fingerprint: Some("f".into()),
            bytes: None,
        }];
        let (to_workers, from_coordinator): (Vec<_>, Vec<_>) =
            (0..2).map(|_| bounded::<Msg>(8)).unzip();
        let (replies, rx) = unbounded::<Reply>();
        let mut seen = FingerprintSet::new(dir.path(), 1024);
        let file = |name: &str| std::fs::File::create(dir.path().join(name)).unwrap();
        let mut co = Coordinator {
            plan: &plan,
            staging: dir.path(),
            txs: to_workers,
            rx,
            pending_skips: Vec::new(),
            pending_games: Vec::new(),
            full: false,
            next_worker: 0,
            skipped_file: file("skipped.jsonl"),
            games_file: file("games.fp"),
            checkpoints: 0,
            spare_chunks: Vec::new(),
            max_spare_chunk: 1 << 20,
            dedupe: Some(Dedupe {
                seen: &mut seen,
                known: None,
                waiting: BTreeMap::new(),
                next_seq: 3,
                next_decide: 0,
            }),
        };
        let mut state = ImportState {
            per_input: vec![InputCounts::default()],
            ..Default::default()
        };
        // Chunk 0 (worker 0): games A B; chunk 1 (worker 1): A C and unparsable text;
        // chunk 2 (worker 0): C B D. Lines are 10 × chunk + game.
        let (a, b, c, d) = (1u128, 2, 3, 4);
        let chunks = [
            (0, vec![Some((a, 1)), Some((b, 2))]),
            (1, vec![Some((a, 11)), Some((c, 12)), None]),
            (0, vec![Some((c, 21)), Some((b, 22)), Some((d, 23))]),
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
        let repeats: Vec<u64> = co.pending_skips.iter().map(|g| g.line).collect();
        assert_eq!(repeats, [11, 21, 22]);
        assert_eq!(state.per_input[0].read, 8);
        assert_eq!(state.per_input[0].skipped, 3);
        assert_eq!(state.skipped_by_reason.get("duplicate"), Some(&3));
    }

    fn cut(text: &str) -> Option<&str> {
        last_game_boundary(text.as_bytes()).map(|i| &text[i..])
    }

    #[test]
    fn game_boundaries_skip_comments_escapes_and_tag_values() {
        let g1 = "[Event \"a\"]\n\n1. e4 e5 1-0\n\n";
        // The plain case, with LF and CRLF line ends.
        assert_eq!(
            cut(&format!("{g1}[Event \"b\"]\n\n1. d4 *\n")),
            Some("[Event \"b\"]\n\n1. d4 *\n")
        );
        let crlf = "[Event \"a\"]\r\n\r\n1. e4 *\r\n\r\n[Event \"b\"]\r\n";
        assert_eq!(cut(crlf), Some("[Event \"b\"]\r\n"));
        // A blank line and a `[` inside a brace comment are not a boundary.
        let commented = "[Event \"a\"]\n\n1. e4 { one\n\n[%clk 0:00:01] two } e5 *\n";
        assert_eq!(cut(commented), None);
        assert_eq!(
            cut(&format!("{commented}\n[Event \"b\"]\n")),
            Some("[Event \"b\"]\n")
        );
        // A brace inside a `;` comment, a `%` escape line or a quoted tag value opens nothing.
        for opener in [
            "1. e4 ; a brace {\n",
            "%escaped {\n",
            "[Annotator \"x { y\"]\n",
            "[Annotator \"x \\\" {\"]\n",
        ] {
            let text = format!("[Event \"a\"]\n{opener}\n1. e4 *\n\n[Event \"b\"]\n");
            assert_eq!(cut(&text), Some("[Event \"b\"]\n"), "{opener:?}");
        }
        // A comment still open at the end of the buffer: the boundary before it.
        let open = format!("{g1}[Event \"b\"]\n\n1. e4 {{ not closed\n\n[Event \"c\"]\n");
        assert_eq!(
            cut(&open),
            Some("[Event \"b\"]\n\n1. e4 { not closed\n\n[Event \"c\"]\n")
        );
        // Never at the very start.
        assert_eq!(cut("[Event \"a\"]\n\n1. e4 *\n"), None);
    }

    fn ply(key: u64, squares_seed: u8, mv: u16, white_moved: bool) -> Ply {
        let mut s = PosState {
            squares: [0; 64],
            black_to_move: !white_moved,
            castling: 0,
            ep_file: None,
        };
        s.squares[usize::from(squares_seed % 64)] = 1 + squares_seed % 12;
        Ply {
            key,
            pos: s.pack_fixed().0,
            mv,
            white_moved,
        }
    }

    #[test]
    fn aggregator_counts_once_per_game_and_keeps_collisions_apart() {
        let mut agg = Aggregator::with_capacity(4);
        let a = ply(7, 1, 100, true);
        let a_again = ply(7, 1, 100, true);
        let collides = ply(7, 2, 100, false);
        let b = ply(3, 5, 200, false);
        // One game that repeats a pair: counted once.
        agg.add_game(
            GameResult::White,
            [Some(2000), Some(1800)],
            &[a, b, a_again],
        );
        agg.add_game(GameResult::Draw, [None, Some(1900)], &[a, collides]);
        // Grow past the initial table to exercise rehashing.
        for k in 100..200u64 {
            agg.add_game(
                GameResult::Unknown,
                [None, None],
                &[ply(k, k as u8, 1, true)],
            );
        }
        assert_eq!(agg.len(), 3 + 100);
        let entries: Vec<Entry> = agg.into_sorted().collect();
        assert!(entries.windows(2).all(|w| w[0].cmp_id(&w[1]).is_lt()));
        let at7: Vec<&Entry> = entries.iter().filter(|e| e.key == 7).collect();
        assert_eq!(at7.len(), 2, "same key, different positions stay apart");
        let first = at7
            .iter()
            .find(|e| e.pos.as_deref() == Some(a.pos.as_bytes()))
            .unwrap();
        let m = &first.moves[0];
        assert_eq!((m.white, m.draws, m.black, m.unknown), (1, 1, 0, 0));
        assert_eq!((m.rating_sum, m.rating_count), (2000, 1));
        let second = at7
            .iter()
            .find(|e| e.pos.as_deref() == Some(collides.pos.as_bytes()))
            .unwrap();
        assert_eq!(second.moves[0].draws, 1);
        assert_eq!(
            second.moves[0].rating_sum, 1900,
            "black's rating for black's move"
        );
    }

    #[test]
    fn cleared_aggregator_is_empty_and_reusable() {
        let mut agg = Aggregator::with_capacity(2);
        agg.add_game(GameResult::White, [None, None], &[ply(1, 1, 1, true)]);
        let mut sorted = agg.into_sorted();
        assert_eq!(sorted.by_ref().count(), 1);
        let mut agg = sorted.into_aggregator();
        assert!(agg.is_empty());
        assert_eq!(agg.bytes(), 0);
        agg.add_game(GameResult::Black, [None, None], &[ply(1, 1, 1, true)]);
        let e: Vec<Entry> = agg.into_sorted().collect();
        assert_eq!((e[0].moves[0].white, e[0].moves[0].black), (0, 1));
    }
}

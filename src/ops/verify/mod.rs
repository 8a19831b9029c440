//! `bookdb verify` and `bookdb stats`.
//!
//! What `verify` proves is listed in docs/FORMAT.md §9 and docs/RELIABILITY.md ("Damage: what
//! verify detects"). It checks each file of the book on every core: the calling thread reads
//! the file's blocks from redb in key order, worker threads open, decode and check them, and the
//! results are joined in key order (order and counters across blocks); meanwhile another
//! thread runs redb's own integrity check on a private copy of each file. Each position is
//! decoded once, straight to its state, and checked there (its key, its legality, its moves
//! against one generation of its legal moves).
//!
//! What it holds is sized by `--memory` ([`VerifyBudget`]), whatever the book's size: redb's read
//! caches of the files, the private copy's cache for redb's check and the window of blocks in
//! flight (docs/PERFORMANCE.md, "verify's memory").

use std::fmt;
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::chess::{PosState, decode_coded, legal_codes, legal_count, move_uci};
use crate::error::{Corruption, Result, StoreError};
use crate::ops::game::Game;
use crate::othello::{Board, square_name};
use crate::store::block::{BlockHeader, BlockView, HEADER_LEN, RawEntry};
use crate::store::book::BookFile;
use crate::store::{BookMeta, CacheSizes, Entry, MoveRec};

mod budget;
mod evals;
mod filter;
pub use budget::{DEFAULT_VERIFY_MEMORY_MIB, MIN_VERIFY_MEMORY_MIB, VerifyBudget};

/// What `verify` checks and how.
#[derive(Clone, Debug)]
pub struct VerifyOptions {
    /// Check only the files published after this generation (`--since`); the manifest and
    /// every file's meta table are still read and checked when the book is opened.
    pub since: Option<u64>,
    /// Run redb's integrity check on a private copy of each checked file.
    pub redb_check: bool,
    /// Threads that decode and check blocks.
    pub threads: usize,
    /// Where the private copies for redb's check go (the system's temporary directory).
    pub scratch: PathBuf,
    /// What verify may hold, in MiB (`--memory`; at least [`MIN_VERIFY_MEMORY_MIB`]): shared
    /// out by [`VerifyBudget`].
    pub memory_mib: usize,
}

impl Default for VerifyOptions {
    fn default() -> Self {
        VerifyOptions {
            since: None,
            redb_check: true,
            threads: std::thread::available_parallelism().map_or(1, |n| n.get()),
            scratch: std::env::temp_dir(),
            memory_mib: DEFAULT_VERIFY_MEMORY_MIB,
        }
    }
}

/// A file of the book and the generation it was published under.
#[derive(Clone, Debug, Default, Serialize)]
pub struct FileGeneration {
    pub file: String,
    pub generation: u64,
}

#[derive(Clone, Debug, Default, Serialize)]
pub struct VerifyReport {
    /// The book as the caller named it (for the text report).
    #[serde(skip)]
    pub book: String,
    pub blocks: u64,
    pub entries: u64,
    pub pairs: u64,
    /// Positions whose engine evaluations were checked (docs/FORMAT.md §13).
    pub evaluations: u64,
    /// Stored games checked (docs/FORMAT.md §15): every game block decoded, numbers dense,
    /// one id row per game naming its id.
    pub stored_games: u64,
    /// Positions whose game references were checked (docs/FORMAT.md §15.3): rebuilt from the
    /// file's games and compared, with the games' facts.
    pub game_ref_positions: u64,
    /// Key filter partitions checked (docs/FORMAT.md §4.7; files written before filters have
    /// none).
    pub key_filter_partitions: u64,
    /// Every failed check, most precise first; empty means the book is sound. Each names the
    /// file it concerns.
    pub problems: Vec<String>,
    /// Problems beyond the first `MAX_PROBLEMS` are only counted.
    pub problems_total: u64,
    /// The generation of the state checked: what a later `verify --since` takes to check only
    /// what is published after this run.
    pub generation: u64,
    /// `--since`, if given.
    pub since: Option<u64>,
    /// Files whose every block and entry were checked.
    pub checked_files: Vec<FileGeneration>,
    /// Files left out by `--since` (published at or before it).
    pub skipped_files: Vec<FileGeneration>,
    /// The manifest's file name, if the book has one (read and checked at open).
    pub manifest: Option<String>,
    /// Whether the merged view's counters were recounted over all files (not with `--since`).
    pub merged_view_checked: bool,
    /// Whether redb's integrity check ran on every checked file.
    pub redb_integrity_checked: bool,
    /// Threads that checked blocks.
    pub threads: usize,
    /// The memory budget used, in MiB: `--memory`, capped at three quarters of what the
    /// machine has.
    pub memory_mib: usize,
    /// What verify did differently from what was asked (a `--memory` capped).
    pub warnings: Vec<String>,
}

impl VerifyReport {
    pub fn ok(&self) -> bool {
        self.problems_total == 0
    }
    fn problem(&mut self, p: impl Into<String>) {
        self.problems_total += 1;
        if self.problems.len() < MAX_PROBLEMS {
            self.problems.push(p.into());
        }
    }
    /// Adds another report's counts and problems, each problem prefixed with `prefix`.
    fn absorb(&mut self, sub: VerifyReport, prefix: &str) {
        self.blocks += sub.blocks;
        self.entries += sub.entries;
        self.pairs += sub.pairs;
        self.evaluations += sub.evaluations;
        self.stored_games += sub.stored_games;
        self.game_ref_positions += sub.game_ref_positions;
        self.key_filter_partitions += sub.key_filter_partitions;
        self.problems_total += sub.problems_total - sub.problems.len() as u64;
        for p in sub.problems {
            self.problem(format!("{prefix}{p}"));
        }
    }
}

const MAX_PROBLEMS: usize = 200;

/// [`verify_with`] with the default options: every file, redb's check, every core.
pub fn verify(path: &Path) -> Result<VerifyReport> {
    verify_with(path, &VerifyOptions::default())
}

/// Checks the book: every file's blocks (checksums and headers, every entry decodes, keys
/// recompute to the stored fragments, order, positions legal, moves legal, the file's
/// counters), redb's integrity check of every file, and, when it has delta segments, the merged
/// view against the book's counters. With `since`, only the files published after that
/// generation (the merged view is not recounted).
pub fn verify_with(path: &Path, opts: &VerifyOptions) -> Result<VerifyReport> {
    // Verify reads through read-only handles; redb's check_integrity needs a writable one and
    // may repair what it checks, so it runs on private copies (BookFile::redb_integrity).
    if !path.exists() {
        return Err(StoreError::BookNotFound {
            path: path.to_path_buf(),
        }
        .into());
    }
    let (budget, memory_mib, memory_warning) = VerifyBudget::for_book(path, opts.memory_mib)?;
    // Verify reads each block once, so the cache of opened blocks is off.
    let caches = CacheSizes {
        redb_bytes: budget.redb_per_file,
        block_bytes: 0,
        ..CacheSizes::default()
    };
    let (game, book) = Game::open_with_caches(path, caches)?;
    let mut report = VerifyReport {
        book: path.display().to_string(),
        generation: book.generation(),
        since: opts.since,
        threads: opts.threads.max(1),
        redb_integrity_checked: opts.redb_check,
        memory_mib,
        warnings: memory_warning.into_iter().collect(),
        ..VerifyReport::default()
    };
    let manifest = crate::store::book::Manifest::path_of(path);
    if manifest.exists() {
        report.manifest = Some(file_name(&manifest));
    }
    let (checked, skipped): (Vec<_>, Vec<_>) = book
        .files()
        .iter()
        .partition(|f| opts.since.is_none_or(|g| f.generation() > g));
    let name_gen = |f: &&std::sync::Arc<BookFile>| FileGeneration {
        file: file_name(f.path()),
        generation: f.generation(),
    };
    report.checked_files = checked.iter().map(name_gen).collect();
    report.skipped_files = skipped.iter().map(name_gen).collect();

    let (files, redb) = std::thread::scope(|s| {
        let redb = opts.redb_check.then(|| {
            s.spawn(|| {
                checked
                    .iter()
                    .map(|f| {
                        let found = f.redb_integrity_with(&opts.scratch, budget.check_copy)?;
                        Ok((file_name(f.path()), found))
                    })
                    .collect::<Result<Vec<_>>>()
            })
        });
        let files: Result<Vec<_>> = checked
            .iter()
            .map(|f| {
                let window = budget.window_blocks(f.meta(), report.threads);
                Ok((
                    file_name(f.path()),
                    verify_file(f, game, report.threads, window)?,
                ))
            })
            .collect();
        let redb = redb.map(|h| {
            h.join().unwrap_or_else(|_| {
                Err(crate::error::Error::Internal("redb check panicked".into()))
            })
        });
        (files, redb)
    });
    for (name, sub) in files? {
        report.absorb(sub, &format!("{name}: "));
    }
    if let Some(redb) = redb {
        for (name, found) in redb? {
            if let Some(what) = found {
                report.problem(format!("{name}: redb pages: {what}"));
            }
        }
    }
    if book.files().len() > 1 && opts.since.is_none() {
        report.merged_view_checked = true;
        // The merged view the book answers with: the newest segment's counters describe it.
        let newest = book
            .files()
            .last()
            .map(|f| file_name(f.path()))
            .unwrap_or_default();
        let mut counted = BookMeta::default();
        let mut last_key = None;
        for item in book.iter()? {
            match item {
                Ok(e) => count_entry(&e, &mut counted, &mut last_key),
                Err(err) => {
                    report.problem(format!("merged view: {err}"));
                    break;
                }
            }
        }
        let stored = logical(book.meta());
        counted.games = stored.games;
        if stored != counted {
            report.problem(format!(
                "{newest}: the book's counters (this newest segment's view) disagree with its \
                 merged content: stored {stored:?}, counted {counted:?}"
            ));
        }
    }
    Ok(report)
}

/// What a report says was checked (the generation to pass to a later `--since`, the files
/// checked and skipped, redb's check, the merged view), then the counts and the verdict.
impl fmt::Display for VerifyReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let r = self;
        let list = |files: &[FileGeneration]| {
            files
                .iter()
                .map(|f| format!("{} (generation {})", f.file, f.generation))
                .collect::<Vec<_>>()
                .join(", ")
        };
        writeln!(f, "generation        {}", r.generation)?;
        writeln!(f, "checked           {}", list(&r.checked_files))?;
        if let Some(g) = r.since {
            writeln!(
                f,
                "skipped           {} (published at or before generation {g})",
                if r.skipped_files.is_empty() {
                    "nothing".to_string()
                } else {
                    list(&r.skipped_files)
                }
            )?;
        }
        if let Some(m) = &r.manifest {
            writeln!(f, "manifest          {m} (checksum and structure)")?;
        }
        writeln!(
            f,
            "redb integrity    {}",
            if r.redb_integrity_checked {
                "checked (on private copies)"
            } else {
                "skipped (--no-redb-check)"
            }
        )?;
        if r.checked_files.len() + r.skipped_files.len() > 1 {
            writeln!(
                f,
                "merged view       {}",
                if r.merged_view_checked {
                    "recounted"
                } else {
                    "not recounted (--since)"
                }
            )?;
        }
        write!(
            f,
            "{}: {} blocks, {} entries, {} pairs, {} evaluated positions, {} stored games and the references of {} positions checked; {}",
            r.book,
            r.blocks,
            r.entries,
            r.pairs,
            r.evaluations,
            r.stored_games,
            r.game_ref_positions,
            if r.ok() {
                "OK".to_string()
            } else {
                format!("{} problem(s)", r.problems_total)
            }
        )
    }
}

/// The file name of `path`, for problem reports.
fn file_name(path: &Path) -> String {
    path.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| path.display().to_string())
}

/// The counters that describe content (not storage).
fn logical(m: &BookMeta) -> BookMeta {
    BookMeta {
        games: m.games,
        positions: m.positions,
        key_only: m.key_only,
        pairs: m.pairs,
        collisions: m.collisions,
        ..BookMeta::default()
    }
}

fn count_entry(e: &Entry, counted: &mut BookMeta, last_key: &mut Option<u64>) {
    if e.pos.is_some() {
        counted.positions += 1;
    } else {
        counted.key_only += 1;
    }
    counted.pairs += e.moves.len() as u64;
    if *last_key == Some(e.key) {
        counted.collisions += 1;
    }
    *last_key = Some(e.key);
}

/// Where an entry is, for problem reports (formatted only when there is a problem).
#[derive(Clone, Copy)]
struct Place {
    block_key: u64,
    index: usize,
}

impl fmt::Display for Place {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "block {:016x}, entry {}", self.block_key, self.index)
    }
}

/// An entry's position as far as ordering needs it: none (key-only entries sort first among
/// their key), a chess state (packed only to order two entries of one key), or encoded bytes.
#[derive(Clone)]
enum Pos {
    KeyOnly,
    Chess(PosState),
    Bytes(Vec<u8>),
}

impl Pos {
    fn packed(&self) -> Option<Vec<u8>> {
        match self {
            Pos::KeyOnly => None,
            Pos::Chess(s) => Some(s.pack().0),
            Pos::Bytes(b) => Some(b.clone()),
        }
    }
    fn is_position(&self) -> bool {
        !matches!(self, Pos::KeyOnly)
    }
}

/// Whether (key a, position a) sorts strictly before (key b, position b).
fn before(a: &(u64, Pos), b: &(u64, Pos)) -> bool {
    before_parts(a, b.0, &b.1)
}

fn before_parts(a: &(u64, Pos), key: u64, pos: &Pos) -> bool {
    match a.0.cmp(&key) {
        std::cmp::Ordering::Less => true,
        std::cmp::Ordering::Greater => false,
        std::cmp::Ordering::Equal => a.1.packed() < pos.packed(),
    }
}

/// What one block holds and what was wrong with it.
#[derive(Default)]
struct BlockSum {
    block_key: u64,
    stored_bytes: u64,
    raw_bytes: u64,
    report: VerifyReport,
    positions: u64,
    key_only: u64,
    collisions: u64,
    first: Option<(u64, Pos)>,
    last: Option<(u64, Pos)>,
    /// The block's distinct keys in order, for the key filter's check.
    keys: Vec<u64>,
}

/// Checks one file of a book: block checksums and headers, every entry decodes, keys recompute
/// to the stored fragments, order, legality, and the file's own counters.
/// Memory for sorting the references verify rebuilds (past it, sorted runs are spilled to the
/// temporary directory).
const REFS_BUDGET: usize = 64 << 20;

fn verify_file(file: &BookFile, game: Game, threads: usize, window: usize) -> Result<VerifyReport> {
    let mut report = VerifyReport::default();
    let mut counted = BookMeta::default();
    let mut last: Option<(u64, Pos)> = None;
    let mut filter = filter::FilterCheck::of(file);
    // Each block's sum is folded as it comes, in key order: nothing per block is kept.
    let fold = |sum: BlockSum| {
        if let Some(f) = &mut filter {
            sum.keys.iter().for_each(|&k| f.key(k));
        }
        counted.blocks += 1;
        counted.stored_bytes += sum.stored_bytes;
        counted.raw_bytes += sum.raw_bytes;
        counted.positions += sum.positions;
        counted.key_only += sum.key_only;
        counted.collisions += sum.collisions;
        counted.pairs += sum.report.pairs;
        let block_key = sum.block_key;
        report.absorb(sum.report, "");
        report.blocks += 1;
        if let (Some(prev), Some(first)) = (&last, &sum.first) {
            if prev.0 == block_key {
                report.problem(format!(
                    "block {block_key:016x}: key {:016x} is split across two blocks",
                    prev.0
                ));
            }
            if !before(prev, first) {
                report.problem(format!(
                    "block {block_key:016x}, entry 0: key {:016x} out of order after {:016x}",
                    first.0, prev.0
                ));
            }
            if prev.0 == first.0 {
                counted.collisions += 1;
            }
        }
        if sum.last.is_some() {
            last = sum.last;
        }
        Ok(())
    };
    file.par_fold_blocks(
        threads,
        window,
        |key, bytes| check_block(file, game, key, bytes),
        fold,
    )?;
    if let Some(f) = filter {
        let (partitions, problems) = f.finish();
        report.key_filter_partitions += partitions;
        problems.into_iter().for_each(|p| report.problem(p));
    }
    let ev = evals::check_evals(file, game);
    report.evaluations += ev.evaluations;
    ev.problems.into_iter().for_each(|p| report.problem(p));
    match file.check_game_ids() {
        Ok(n) => report.stored_games += n,
        Err(e) => report.problem(e.to_string()),
    }
    match file.check_game_refs(REFS_BUDGET) {
        Ok(n) => report.game_ref_positions += n,
        Err(e) => report.problem(e.to_string()),
    }
    let meta = file.meta();
    counted.games = meta.games;
    if *meta != counted {
        report.problem(format!(
            "meta counters disagree with the blocks: stored {meta:?}, counted {counted:?}"
        ));
    }
    Ok(report)
}

/// Opens, decodes and checks one block (run on a worker thread).
fn check_block(file: &BookFile, game: Game, block_key: u64, bytes: &[u8]) -> BlockSum {
    let mut sum = BlockSum {
        block_key,
        stored_bytes: bytes.len() as u64,
        ..BlockSum::default()
    };
    if let Ok(h) = BlockHeader::parse(block_key, bytes) {
        let b_len = bytes.len().saturating_sub(HEADER_LEN + h.a_len as usize);
        sum.raw_bytes = u64::from(h.raw_len) + b_len as u64;
    }
    let blk = match file.open_block(block_key, bytes) {
        Ok(b) => b,
        Err(c) => {
            sum.report.problem(c.to_string());
            return sum;
        }
    };
    let walked = (|| {
        let view = BlockView::parse(block_key, &blk)?;
        let model = file.block_model(block_key, blk.header.model_id)?;
        let mut moves = Vec::new();
        let mut prev: Option<(u64, Pos)> = None;
        let res = view.walk_raw(&mut moves, |e| {
            let place = Place {
                block_key,
                index: e.index,
            };
            let entry_err = |reason: String| Corruption::Entry {
                block_key,
                index: e.index,
                reason,
            };
            let (key, pos, moves) = match (e.key_only, game) {
                (Some(k), _) => (k, Pos::KeyOnly, None),
                (None, Game::Chess) => {
                    let s = decode_coded(model, e.coded)
                        .map_err(|err| entry_err(format!("position undecodable: {err}")))?;
                    (s.key(), Pos::Chess(s), None)
                }
                (None, Game::Othello { .. }) => {
                    let r = file
                        .codec()
                        .restore(model, e.coded, e.indices)
                        .map_err(|err| entry_err(format!("position undecodable: {err}")))?;
                    let codes = match r.moves {
                        Some(m) => Some(
                            m.map_err(|err| entry_err(format!("move indices invalid: {err}")))?,
                        ),
                        None => None,
                    };
                    (r.key, Pos::Bytes(r.pos), codes)
                }
            };
            if key as u8 != e.fragment {
                return Err(Corruption::KeyMismatch {
                    block_key,
                    index: e.index,
                    expected: (key & !0xff) | u64::from(e.fragment),
                    found: key,
                });
            }
            let report = &mut sum.report;
            if e.index == 0 && key != block_key {
                report.problem(
                    Corruption::Header {
                        block_key,
                        reason: format!(
                            "first entry key {key:016x} differs from the block's table key"
                        ),
                    }
                    .to_string(),
                );
            }
            report.entries += 1;
            report.pairs += e.moves.len() as u64;
            if sum.keys.last() != Some(&key) {
                sum.keys.push(key);
            }
            check_entry_moves(place, key, &e, game, &pos, moves.as_deref(), report);
            if let Some(p) = &prev {
                if !before_parts(p, key, &pos) {
                    report.problem(format!(
                        "{place}: key {key:016x} out of order after {:016x}",
                        p.0
                    ));
                }
                if p.0 == key {
                    sum.collisions += 1;
                }
            }
            if pos.is_position() {
                sum.positions += 1;
            } else {
                sum.key_only += 1;
            }
            if sum.first.is_none() {
                sum.first = Some((key, pos.clone()));
            }
            prev = Some((key, pos));
            Ok(())
        });
        sum.last = prev;
        res
    })();
    if let Err(c) = walked {
        sum.report.problem(c.to_string());
    }
    sum
}

/// The checks of an entry's moves: present, strictly increasing (codes, or indices, which
/// name codes in increasing order), each with games unless it carries an extra, no more
/// ratings than games; then the game's: the position legal, every move legal in it.
fn check_entry_moves(
    place: Place,
    key: u64,
    e: &RawEntry<'_>,
    game: Game,
    pos: &Pos,
    othello_codes: Option<&[u16]>,
    report: &mut VerifyReport,
) {
    match (game, pos) {
        (Game::Chess, Pos::Chess(state)) => check_chess(place, key, state, e.moves, report),
        (Game::Chess, _) => check_moves(place, key, e.moves, &|m| move_uci(m.mv), report),
        (Game::Othello { canonical }, _) => {
            let entry = Entry {
                key,
                pos: pos.packed(),
                moves: e
                    .moves
                    .iter()
                    .enumerate()
                    .map(|(i, m)| MoveRec {
                        mv: othello_codes
                            .and_then(|c| c.get(i).copied())
                            .unwrap_or(m.mv),
                        indexed: false,
                        ..m.clone()
                    })
                    .collect(),
                coded: None,
            };
            check_othello_entry(place, &entry, canonical, report);
        }
    }
}

/// A chess entry: the position is legal (castling and en-passant bits consistent with the
/// board) and every move is legal in it. An indexed move is the move at that rank of the
/// position's legal moves, so it is legal exactly when the index is below their number (the
/// moves need not be listed); raw codes are looked up in the sorted legal codes.
fn check_chess(
    place: Place,
    key: u64,
    state: &PosState,
    moves: &[MoveRec],
    report: &mut VerifyReport,
) {
    let chess = match state.to_chess() {
        Ok(c) => c,
        Err(err) => {
            check_moves(place, key, moves, &|m| format!("#{}", m.mv), report);
            report.problem(format!("{place}: {}: {err}", state.fen()));
            return;
        }
    };
    let name = |m: &MoveRec| {
        if m.indexed {
            legal_codes(&chess)
                .get(usize::from(m.mv))
                .map_or_else(|| format!("index {}", m.mv), |&c| move_uci(c))
        } else {
            move_uci(m.mv)
        }
    };
    check_moves(place, key, moves, &name, report);
    if moves.first().is_some_and(|m| m.indexed) {
        let n = legal_count(&chess);
        for m in moves {
            if usize::from(m.mv) >= n {
                report.problem(format!(
                    "{place}: {}: move index {} is beyond its {n} legal moves",
                    state.fen(),
                    m.mv
                ));
            }
        }
    } else if !moves.is_empty() {
        let codes = legal_codes(&chess);
        for m in moves {
            if codes.binary_search(&m.mv).is_err() {
                report.problem(format!(
                    "{place}: {}: move {} is not legal",
                    state.fen(),
                    move_uci(m.mv)
                ));
            }
        }
    }
}

/// The checks of any game's entry: moves present, sorted, each with games and no more
/// ratings than games (`name` spells a move).
fn check_moves(
    place: Place,
    key: u64,
    moves: &[MoveRec],
    name: &dyn Fn(&MoveRec) -> String,
    report: &mut VerifyReport,
) {
    if moves.is_empty() {
        report.problem(format!("{place}: key {key:016x} has no moves"));
    }
    if moves.windows(2).any(|w| w[0].mv >= w[1].mv) {
        report.problem(format!(
            "{place}: key {key:016x}: moves unsorted or repeated"
        ));
    }
    for m in moves {
        if m.games() == 0 && m.extra.is_none() {
            report.problem(format!(
                "{place}: key {key:016x}: move {} has no games",
                name(m)
            ));
        }
        if m.rating_count > m.games() {
            report.problem(format!(
                "{place}: key {key:016x}: move {} has more ratings than games",
                name(m)
            ));
        }
    }
}

/// An Othello entry: its position decodes, is its own least image in a canonical book, and
/// every move is a legal square there.
fn check_othello_entry(place: Place, e: &Entry, canonical: bool, report: &mut VerifyReport) {
    let name = |mv: u16| match u8::try_from(mv) {
        Ok(sq) if sq < 64 => square_name(sq),
        _ => format!("#{mv}"),
    };
    check_moves(place, e.key, &e.moves, &|m| name(m.mv), report);
    let Some(p) = &e.pos else {
        report.problem(format!(
            "{place}: key {:016x}: an Othello book entry without a position",
            e.key
        ));
        return;
    };
    let board = match Board::unpack(p) {
        Ok(b) => b,
        Err(err) => {
            report.problem(format!(
                "{place}: key {:016x}: packed position invalid: {err}",
                e.key
            ));
            return;
        }
    };
    if canonical && board.canonical().1 != 0 {
        report.problem(format!(
            "{place}: {}: not the least of its symmetric images in a canonical book",
            board.board_string()
        ));
    }
    let legal = board.legal();
    for m in &e.moves {
        if m.mv >= 64 || legal & (1u64 << m.mv) == 0 {
            report.problem(format!(
                "{place}: {}: move {} is not legal",
                board.board_string(),
                name(m.mv)
            ));
        }
    }
}

//! `bookdb verify` (`bookdb stats` is `ops::stats`).
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

use std::path::{Path, PathBuf};

use crate::chess::decode_coded;
use crate::error::{Corruption, Result, StoreError};
use crate::ops::game::Game;
use crate::store::block::{BlockHeader, BlockView, HEADER_LEN};
use crate::store::book::BookFile;
use crate::store::{BookMeta, CacheSizes, Entry};

mod budget;
mod entries;
mod evals;
mod filter;
mod report;
mod shapes;
pub use budget::{DEFAULT_VERIFY_MEMORY_MIB, MIN_VERIFY_MEMORY_MIB, VerifyBudget};
use entries::{Place, Pos, before, before_parts};
pub use report::{FileGeneration, VerifyReport};

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
        if let Some(e) = crate::store::book::missing_base(path) {
            return Err(e.into());
        }
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
        fact_bytes: budget.facts_per_file,
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
    // Segment files newer than the state read (a restore's), which the book's answers lack.
    if let Some(e) = crate::store::book::unknown_segments_problem(path, book.base().generation()) {
        report.problem(e.to_string());
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
                    verify_file(f, game, report.threads, window, budget.refs_bytes())?,
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
    /// Each entry's key and move codes, in the block's order (in a file with references:
    /// what they are checked against); `None` when some entry's codes could not be named.
    shapes: Option<Vec<(u64, Vec<u16>)>>,
}

/// Checks one file of a book: block checksums and headers, every entry decodes, keys recompute
/// to the stored fragments, order, legality, and the file's own counters; then its references,
/// sorted within `refs_bytes` (past it, sorted runs are spilled to the temporary directory).
fn verify_file(
    file: &BookFile,
    game: Game,
    threads: usize,
    window: usize,
    refs_bytes: usize,
) -> Result<VerifyReport> {
    let mut report = VerifyReport::default();
    let mut counted = BookMeta::default();
    let mut last: Option<(u64, Pos)> = None;
    let mut filter = filter::FilterCheck::of(file);
    // The entries' shapes, logged as the blocks are checked, for the references' check.
    let mut shapes = shapes::ShapeRecorder::of(file, game);
    // Each block's sum is folded as it comes, in key order: nothing per block is kept.
    let fold = |mut sum: BlockSum| {
        if let Some(f) = &mut filter {
            sum.keys.iter().for_each(|&k| f.key(k));
        }
        let prev_key = last.as_ref().map(|l| l.0);
        shapes.block(
            sum.block_key,
            sum.shapes.take(),
            sum.report.problems_total,
            prev_key,
        );
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
    let walked = file.par_fold_blocks(
        threads,
        window,
        |key, bytes| check_block(file, game, key, bytes),
        fold,
    );
    // redb serves no read of a file after one failed: when the key filter's check (fed during
    // the walk) already found a page it could not read — a damaged page pointer read past the
    // end of the file (campaign 13) — the walk's refusal is that damage, reported after it.
    let mut stopped = None;
    if let Err(e) = walked {
        if e.is_previous_io() && filter.as_ref().is_some_and(|f| f.read_failed) {
            stopped = Some(format!("the blocks' walk stopped after that: {e}"));
        } else {
            return Err(e.into());
        }
    }
    if let Some(f) = filter {
        let (partitions, problems) = f.finish();
        report.key_filter_partitions += partitions;
        problems.into_iter().for_each(|p| report.problem(p));
    }
    stopped.into_iter().for_each(|p| report.problem(p));
    let ev = evals::check_evals(file, game);
    report.evaluations += ev.evaluations;
    ev.problems.into_iter().for_each(|p| report.problem(p));
    match file.check_game_ids() {
        Ok(n) => report.stored_games += n,
        Err(e) => report.problem(e.to_string()),
    }
    match file.check_game_refs_with(refs_bytes, shapes.finish()) {
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
        shapes: shapes::wanted(file, game).then(Vec::new),
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
    let games = file.game_cells();
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
            let mut codes = sum.shapes.is_some().then(Vec::new);
            let at = entries::At {
                place,
                key,
                pos: &pos,
            };
            entries::check_entry_moves(at, &e, game, moves.as_deref(), report, codes.as_mut());
            if let (false, Pos::Chess(s)) = (e.by_games.is_empty(), &pos) {
                entries::check_game_cells(place, &e, !s.black_to_move, &games, report);
            }
            match codes {
                Some(c) if c.len() == e.moves.len() => {
                    if let Some(s) = sum.shapes.as_mut() {
                        s.push((key, c));
                    }
                }
                Some(_) => sum.shapes = None,
                None => {}
            }
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

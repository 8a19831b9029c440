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

mod aggregate;
mod apply;
mod coordinator;
mod plan;
mod record;
mod source;
mod state;
mod worker;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

use serde::{Deserialize, Serialize};

use super::pgn::CountRules;
use super::progress::{Progress, Trace};
use crate::error::Result;
use crate::store::files::{WriterLock, remove_stale_temp_books};
use crate::store::{Book, BookMeta, WriterOptions};
use plan::Recorded;
use state::{ImportState, SKIPPED_LOG, Staging, collect_skipped};

pub use aggregate::{Aggregator, SortedAggregate};
pub use plan::fingerprint_file;
pub use record::ImportRecord;

/// Default `--max-ply`, as the lichess opening explorer.
pub const DEFAULT_MAX_PLY: usize = 50;
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
    /// How the book was changed.
    pub applied: Applied,
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

/// How an import changed the book: `applied` in the summary (`import --json`), as the
/// strings its serde names and [`Applied::as_str`] give.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Applied {
    /// Not at all: every input was counted before.
    #[default]
    None,
    /// The new counts went into the delta tier, in one transaction.
    Delta,
    /// The book was rewritten into a new file with the new counts (a first import, a delta
    /// tier past its threshold, or a book another process held open).
    Rewrite,
    /// An earlier run of the same import committed and was killed before it cleaned up; this
    /// run only finished the cleanup.
    #[serde(rename = "committed before the interruption")]
    CommittedBeforeInterruption,
}

impl Applied {
    pub fn as_str(self) -> &'static str {
        match self {
            Applied::None => "none",
            Applied::Delta => "delta",
            Applied::Rewrite => "rewrite",
            Applied::CommittedBeforeInterruption => "committed before the interruption",
        }
    }
}

impl std::fmt::Display for Applied {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// Imports PGN inputs into the book at `book_path` (created if absent).
pub fn import(book_path: &Path, inputs: &[String], opts: &ImportOptions) -> Result<ImportSummary> {
    let start = Instant::now();
    let mut trace = Trace::new();
    let _lock = WriterLock::acquire(book_path)?;
    remove_stale_temp_books(book_path);
    let mut summary = ImportSummary {
        applied: Applied::None,
        ..Default::default()
    };

    // Plan: the inputs the book has not counted yet.
    let recorded = Recorded::read(book_path)?;
    let mut plan = plan::plan_inputs(
        inputs,
        &recorded.done,
        opts.force,
        &mut summary.already_imported,
    )?;
    if plan.is_empty() {
        return nothing_to_read(book_path, recorded.meta, summary, opts, start);
    }

    // Staging state: resumed from the last checkpoint of an interrupted run of this import.
    let has_stdin = plan.iter().any(|p| p.fingerprint.is_none());
    let staging = Staging::new(book_path, &plan::import_id(&plan, opts));
    staging.remove_abandoned();
    if staging.committed_before_interruption(&recorded.committed) {
        return finish_committed_before_interruption(book_path, &staging, summary, opts, start);
    }
    let mut state = staging.open_state(plan.len(), opts.dedupe, has_stdin)?;
    summary.resumed = state.resumed();
    let progress = Progress::new(opts.show_progress);
    trace.mark("plan (lock, book records, input fingerprints, staging area)");

    // Read phase: parse, replay and aggregate on the workers, spilling runs at checkpoints.
    let t_read = Instant::now();
    let mut read = coordinator::ReadOutcome::default();
    if !state.read_complete {
        read =
            coordinator::read_phase(book_path, &plan, staging.dir(), &mut state, opts, &progress)?;
        summary.dedupe_spilled = read.dedupe_spilled;
    }
    summary.read_secs = t_read.elapsed().as_secs_f64();
    trace.mark("read phase (parse, replay, aggregate, spill)");
    let t_apply = Instant::now();
    if let Err(e) = plan::fingerprint_stdin(&mut plan, read.stdin_fp, &recorded.done, opts.force) {
        staging.remove_dir();
        return Err(e);
    }
    add_counts(&mut summary, &state);
    let report = collect_skipped(Some(&staging.path(SKIPPED_LOG)), &mut summary, opts)?;

    // Apply: merge the runs into the book with the import records, atomically.
    summary.applied = apply::apply_phase(
        book_path,
        &plan,
        &staging,
        &mut state,
        read.in_memory,
        opts,
        &progress,
    )?;
    report.publish()?;
    summary.apply_secs = t_apply.elapsed().as_secs_f64();

    // Clean up.
    staging.remove();
    finish(book_path, &recorded.meta, summary, start, &progress)
}

/// Every input was counted before: nothing to read or apply (the `--report` file still lists
/// no skipped games, and an abandoned staging area is removed).
fn nothing_to_read(
    book_path: &Path,
    before: BookMeta,
    mut summary: ImportSummary,
    opts: &ImportOptions,
    start: Instant,
) -> Result<ImportSummary> {
    collect_skipped(None, &mut summary, opts)?.publish()?;
    let _ = std::fs::remove_dir_all(Staging::root(book_path));
    summary.book = before;
    summary.book_bytes = std::fs::metadata(book_path).map(|m| m.len()).unwrap_or(0);
    summary.elapsed_secs = start.elapsed().as_secs_f64();
    Ok(summary)
}

/// An earlier run of this import committed and was killed before it removed its staging area
/// (see [`Staging::committed_before_interruption`]): finishes its cleanup instead of
/// applying again.
fn finish_committed_before_interruption(
    book_path: &Path,
    staging: &Staging,
    mut summary: ImportSummary,
    opts: &ImportOptions,
    start: Instant,
) -> Result<ImportSummary> {
    // The interrupted run counted the games; its log of skipped ones is complete.
    collect_skipped(Some(&staging.path(SKIPPED_LOG)), &mut summary, opts)?.publish()?;
    staging.remove();
    summary.applied = Applied::CommittedBeforeInterruption;
    summary.resumed = true;
    let b = Book::open(book_path, crate::chess_codec())?;
    summary.book = b.meta().clone();
    summary.book_bytes = b.file_bytes();
    summary.elapsed_secs = start.elapsed().as_secs_f64();
    Ok(summary)
}

/// The summary's counters, from the checkpointed state.
fn add_counts(summary: &mut ImportSummary, state: &ImportState) {
    for c in &state.per_input {
        summary.games_read += c.read;
        summary.games_imported += c.imported;
        summary.games_skipped += c.skipped;
    }
    summary.skipped_by_reason = state.skipped_by_reason.clone();
    summary.runs = state.runs.len();
}

/// Completes the summary from the book as the import left it.
fn finish(
    book_path: &Path,
    before: &BookMeta,
    mut summary: ImportSummary,
    start: Instant,
    progress: &Progress,
) -> Result<ImportSummary> {
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

/// The process's peak resident memory (`VmHWM`), where `/proc` tells it.
fn peak_rss() -> Option<u64> {
    let s = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = s.lines().find(|l| l.starts_with("VmHWM:"))?;
    let kb: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kb * 1024)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// `import --json` prints `applied` as these strings (scripts and tests match them), and
    /// `Display` gives the same.
    #[test]
    fn applied_serialises_as_the_strings_import_json_printed() {
        for (a, s) in [
            (Applied::None, "none"),
            (Applied::Delta, "delta"),
            (Applied::Rewrite, "rewrite"),
            (
                Applied::CommittedBeforeInterruption,
                "committed before the interruption",
            ),
        ] {
            assert_eq!(serde_json::to_string(&a).unwrap(), format!("\"{s}\""));
            assert_eq!(a.as_str(), s);
            assert_eq!(a.to_string(), s);
        }
        let summary = ImportSummary {
            applied: Applied::Delta,
            ..Default::default()
        };
        let j = serde_json::to_value(&summary).unwrap();
        assert_eq!(j["applied"], "delta");
    }
}

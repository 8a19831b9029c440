//! `bookdb import`: the write-ahead, exactly-once, parallel import pipeline.
//!
//! 1. Inputs are fingerprinted (xxh3-128 of their bytes); inputs the book already lists in its
//!    `imports` table are skipped (`--force` counts them again).
//! 2. The coordinator cuts the input into chunks of PGN text at game boundaries and deals them
//!    to `--jobs` workers, which parse and replay the games and aggregate (position, move)
//!    counts in memory bounded by `--memory`.
//! 3. When a worker's share of memory is full, every worker spills a sorted, checksummed run
//!    into the staging directory beside the book and the coordinator records a checkpoint
//!    (runs, input position, counters) in `state.json` (written atomically). A crash loses at
//!    most the work since the last checkpoint; the same command resumes from it.
//! 4. The runs are merged in key order and applied to the book atomically: as a new delta
//!    segment published by the book's manifest (small imports into large books; readers keep
//!    reading meanwhile), or by rewriting the base into a new file that replaces the old one
//!    (first import, or when the segments would grow past their threshold: automatic
//!    compaction). The import records go into the same file.
//! 5. The staging directory is removed.

mod aggregate;
mod apply;
mod coordinator;
mod dedupe;
mod disk;
mod games;
pub(crate) mod memory;
mod options;
mod plan;
mod record;
mod source;
mod state;
mod worker;

use std::path::Path;
use std::time::Instant;

use super::progress::{Progress, Trace};
use crate::error::{Error, Result};
use crate::store::{Book, BookMeta};
use plan::Recorded;
use state::{ImportState, SKIPPED_LOG, Staging, collect_skipped};

pub use aggregate::{Aggregator, SortedAggregate};
pub use options::*;
pub(crate) use plan::fingerprint_file;

/// Imports PGN inputs into the book at `book_path` (created if absent).
pub fn import(book_path: &Path, inputs: &[String], opts: &ImportOptions) -> Result<ImportSummary> {
    // `--memory` fitted to the machine (a warning in the summary if capped).
    let (memory_mib, memory_warning) =
        memory::fit_budget(opts.memory_mib, memory::machine_memory_bytes());
    if let Some(w) = &memory_warning
        && opts.progress != crate::ops::progress::ProgressMode::None
    {
        crate::stderr_line!("bookdb: warning: {w}");
    }
    // Othello games carry no tags: only chess books store games. A book that stores games
    // counts each game once whatever `--dedupe` says (brief §9): the same game (same
    // fingerprint) imported twice is skipped as a duplicate.
    let store_games = opts.store_games && opts.game == crate::ops::game::Game::Chess;
    let opts = &ImportOptions {
        memory_mib,
        store_games,
        dedupe: opts.dedupe || store_games,
        ..opts.clone()
    };
    let mut summary = import_fitted(book_path, inputs, opts)?;
    // The book as the caller named it (the import itself works on the resolved path).
    summary.book_path = book_path.display().to_string();
    summary.warnings.extend(memory_warning);
    summary.memory_mib = memory_mib;
    Ok(summary)
}

fn import_fitted(
    book_path: &Path,
    inputs: &[String],
    opts: &ImportOptions,
) -> Result<ImportSummary> {
    let start = Instant::now();
    let mut trace = Trace::new();
    if opts.rules.max_ply == 0 {
        // Nothing would be counted, yet the inputs would be recorded as imported (and refused
        // by a later import with a real --max-ply).
        return Err(Error::Usage(
            "--max-ply 0 counts no move of any game, yet would record the inputs as imported; give --max-ply 1 or more (the default is 50)".into(),
        ));
    }
    let book_path = &crate::store::files::resolve_book(book_path)?;
    if let Some(report) = &opts.report {
        crate::store::files::refuse_book_output(book_path, report, "--report")?;
    }
    let _lock = crate::store::book::lock_for_writing(book_path, opts.lock_wait)?;
    // A writer killed before the folding policy ran leaves too many segments: fold now.
    // (A book of another game is refused below, with the message that says so.)
    let fold_opts = apply::writer_options(opts);
    if let Ok(book) = crate::store::Book::open_with_caches(
        book_path,
        opts.game.codec(),
        crate::store::book::fold_caches(&fold_opts),
    ) && book.segments().len() > crate::store::book::MAX_SEGMENTS
    {
        crate::store::book::fold_segments(&book, &fold_opts)?;
    }
    let opts = &with_book_facets(book_path, opts)?;
    let mut summary = ImportSummary {
        book_path: book_path.display().to_string(),
        applied: Applied::None,
        ..Default::default()
    };

    // Plan: the inputs the book has not counted yet.
    check_game(book_path, opts)?;
    let recorded = Recorded::read(book_path, opts.game)?;
    let mut plan = plan::plan_inputs(
        inputs,
        &recorded,
        opts,
        &mut summary.already_imported,
        &mut summary.failed_inputs,
    )?;
    if plan.is_empty() {
        return nothing_to_read(book_path, recorded.meta, summary, opts, start);
    }

    // Staging state: resumed from the last checkpoint of an interrupted run of this import.
    // Stdin and streams are read once: an import of one never resumes.
    let has_stdin = plan.iter().any(|p| p.read_once());
    let staging = Staging::new(book_path, &plan::import_id(&plan, opts));
    staging.remove_abandoned();
    if staging.committed_before_interruption(&recorded.committed) {
        return finish_committed_before_interruption(book_path, &staging, summary, opts, start);
    }
    let mut state = staging.open_state(plan.len(), opts.dedupe, has_stdin)?;
    summary.resumed = state.resumed();
    let progress = Progress::new(opts.progress);
    trace.mark("plan (lock, book records, input fingerprints, staging area)");

    // Read phase: parse, replay and aggregate on the workers, spilling runs at checkpoints.
    let t_read = Instant::now();
    let mut read = coordinator::ReadOutcome::default();
    if !state.read_complete {
        read = match coordinator::read_phase(
            book_path,
            &plan,
            staging.dir(),
            &mut state,
            opts,
            &progress,
        ) {
            Ok(r) => r,
            // An import that reads a stream never resumes (its bytes are gone): what it
            // staged before failing (say, stdin that is not PGN) is of no use to anyone.
            Err(e) if has_stdin => {
                staging.remove();
                return Err(e);
            }
            Err(e) => return Err(e),
        };
        summary.dedupe_spilled = read.dedupe_spilled;
    }
    summary.read_secs = t_read.elapsed().as_secs_f64();
    trace.mark("read phase (parse, replay, aggregate, spill)");
    let t_apply = Instant::now();
    // Every input is recorded under the fingerprint of the bytes counted.
    match plan::bind_fingerprints(&mut plan, read.read_fp, &recorded.done, opts.force) {
        Ok(plan::Bound::New) => {}
        Ok(plan::Bound::AllCounted(names)) => {
            staging.remove();
            summary.already_imported.extend(names);
            return nothing_to_read(book_path, recorded.meta, summary, opts, start);
        }
        Err(e) => {
            staging.remove();
            return Err(e);
        }
    }
    add_counts(&mut summary, &state);
    summary.empty_inputs = plan
        .iter()
        .zip(&state.per_input)
        .filter(|(_, c)| c.read == 0)
        .map(|(p, _)| p.name.clone())
        .collect();
    let report = collect_skipped(Some(&staging.path(SKIPPED_LOG)), &mut summary, opts)?;

    // Apply: merge the runs into the book with the import records, atomically.
    summary.applied = apply::apply_phase(
        book_path,
        &plan,
        &staging,
        &mut state,
        (read.in_memory, read.games, read.models),
        opts,
        &progress,
    )?;
    crate::store::files::crash_point("import-applied");
    report.publish()?;
    summary.apply_secs = t_apply.elapsed().as_secs_f64();

    // Clean up.
    staging.remove();
    crate::store::files::crash_point("import-staging-removed");
    finish(book_path, &recorded.meta, summary, start, &progress, opts)
}

/// The options with the facets the import counts by: the book's if it exists (asking for
/// other ones is refused: a book keeps what it was created with), else `--facets` (default:
/// all four for chess, none for Othello, whose games carry no tags).
fn with_book_facets(book_path: &Path, opts: &ImportOptions) -> Result<ImportOptions> {
    use crate::store::facet::FacetSet;
    // A book of another game is refused first, in the words that say so.
    check_game(book_path, opts)?;
    let existing = match book_path.exists() {
        true => Some(crate::store::Book::open(book_path, opts.game.codec())?.facets()),
        false => None,
    };
    let facets = match (existing, opts.facets) {
        (Some(kept), Some(asked)) if kept != asked => {
            return Err(Error::Usage(format!(
                "{}: the book keeps the facets {kept}; an import cannot change them (--facets {asked}); import into a new book, or `bookdb merge` this book with one built with --facets {asked}",
                book_path.display()
            )));
        }
        (Some(kept), _) => kept,
        (None, Some(asked)) => asked,
        (None, None) if opts.game.is_othello() => FacetSet::NONE,
        (None, None) => FacetSet::ALL,
    };
    if opts.game.is_othello() && !facets.is_none() {
        return Err(Error::Usage(
            "--facets applies to PGN imports only (Othello games carry no tags); give --facets none".into(),
        ));
    }
    let mut o = opts.clone();
    o.rules.facets = facets;
    Ok(o)
}

/// Refuses options that do not apply to the game, and a book of another game.
fn check_game(book_path: &Path, opts: &ImportOptions) -> Result<()> {
    if opts.game.is_othello() {
        if opts.dedupe {
            return Err(Error::Usage(
                "--dedupe applies to PGN imports only (Othello games carry no tags to compare)"
                    .into(),
            ));
        }
        if opts.rules.min_rating.is_some() {
            return Err(Error::Usage(
                "--min-rating applies to PGN imports only (Othello games carry no ratings)".into(),
            ));
        }
    }
    opts.game
        .require_book(book_path, &format!("an import of {} games", opts.game))
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
    // All the book's files, as `stats` counts them (`file_bytes`).
    summary.book_bytes = if book_path.exists() {
        Book::open(book_path, opts.game.codec())?.file_bytes()
    } else {
        0
    };
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
    let b = Book::open(book_path, opts.game.codec())?;
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
    opts: &ImportOptions,
) -> Result<ImportSummary> {
    let after = Book::open(book_path, opts.game.codec())?;
    summary.book = after.meta().clone();
    summary.positions_added = summary.book.positions.saturating_sub(before.positions);
    summary.pairs_added = summary.book.pairs.saturating_sub(before.pairs);
    summary.book_bytes = after.file_bytes();
    summary.elapsed_secs = start.elapsed().as_secs_f64();
    summary.peak_rss_bytes = memory::peak_rss();
    progress.clear();
    Ok(summary)
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

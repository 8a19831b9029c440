//! Applying an import to the book: the spilled runs merged in passes ([`reduce_runs`]), then
//! the new entries added to the book atomically, as a new delta segment or by rewriting its
//! base with everything folded in ([`apply`], [`rewrite`]), together with the import records.

use std::path::{Path, PathBuf};

use super::aggregate::SortedAggregate;
use super::options::{Applied, ImportOptions};
use super::plan::PlannedInput;
use super::record;
use super::state::{COUNTED_TABLE, GAMES_LOG, ImportState, InputCounts, STATE_FILE, Staging};
use crate::error::Result;
use crate::ops::game::Game;
use crate::ops::progress::Progress;
use crate::store::book;
use crate::store::entry::MergeIter;
use crate::store::fpset;
use crate::store::run::{RunReader, RunWriter};
use crate::store::{Book, BookWriter, WriterOptions};

/// Most runs merged at once; more are merged in passes.
const MAX_FAN_IN: usize = 48;

/// Game fingerprints in a redb file's `games` table ([`fpset::sorted_table`]).
type GameTable = std::sync::Arc<redb::ReadOnlyDatabase>;

/// Applies what the read phase left to the book: merges the runs down to what one merge takes,
/// stores the import records and the attempt about to commit, and merges the entries into the
/// book ([`apply`]). Returns how the book was changed.
pub(super) fn apply_phase(
    book_path: &Path,
    plan: &[PlannedInput],
    staging: &Staging,
    state: &mut ImportState,
    in_memory: Option<Vec<SortedAggregate>>,
    opts: &ImportOptions,
    progress: &Progress,
) -> Result<Applied> {
    progress.phase("merging runs into the book");
    reduce_runs(
        staging.dir(),
        state,
        &staging.path(STATE_FILE),
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
                "{}|{}|{:?}",
                state.id,
                std::process::id(),
                std::time::SystemTime::now()
            )
            .as_bytes()
        )
    );
    let records = records(plan, &state.per_input, opts, now, &attempt)?;
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
            &staging.path(GAMES_LOG),
            &staging.path(COUNTED_TABLE),
            fpset::capacity_for(opts.memory_mib.max(1) << 20),
        )?
        .map(|(db, _)| db)
    } else {
        None
    };
    let games = state.per_input.iter().map(|c| c.imported).sum();
    staging.mark_applying(&attempt)?;
    crate::store::files::crash_point("import-applying-marked");
    apply(
        book_path,
        staging.dir(),
        state,
        in_memory,
        run_entries,
        games,
        (records, new_games),
        &writer_opts,
        (opts.delta_min, opts.game),
    )
}

/// Merges runs in passes until at most `MAX_FAN_IN` remain (crash-safe: the merged run is
/// recorded before its sources are deleted).
pub(super) fn reduce_runs(
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
            .collect::<StoreResult<Vec<_>>>()?;
        let name = format!("run-{:06}.zst", state.next_run);
        state.next_run += 1;
        let mut w = RunWriter::create(&staging.join(&name))?;
        for e in MergeIter::new(readers) {
            w.push(&e?)?;
        }
        let n = w.finish()?;
        crate::store::files::crash_point("import-runs-merged");
        state.runs.push((name, n));
        state.save(state_path)?;
        crate::store::files::crash_point("import-merge-recorded");
        for (r, _) in group {
            let _ = std::fs::remove_file(staging.join(r));
        }
    }
    Ok(())
}

use crate::store::book::EntryStream;
use crate::store::error::Result as StoreResult;

/// The workers' sorted aggregates of an import that fit in memory, as entry streams.
fn memory_streams(parts: Vec<SortedAggregate>) -> Vec<EntryStream<'static>> {
    parts
        .into_iter()
        .map(|v| Box::new(v.map(Ok)) as EntryStream<'static>)
        .collect()
}

/// Readers of spilled runs.
fn open_run_files(paths: &[PathBuf]) -> StoreResult<Vec<EntryStream<'static>>> {
    paths
        .iter()
        .map(|p| RunReader::open(p).map(|r| Box::new(r) as EntryStream<'static>))
        .collect()
}

/// Applies the runs to the book; returns how ([`Applied::Delta`] or [`Applied::Rewrite`]).
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
    (delta_min, game): (u64, Game),
) -> Result<Applied> {
    let run_files: Vec<PathBuf> = state.runs.iter().map(|(r, _)| staging.join(r)).collect();
    // A delta plan looks every new entry up in the book: caches within the budget's share.
    let old = if book_path.exists() {
        Some(Book::open_with_cache(
            book_path,
            game.codec(),
            writer_opts.cache_bytes,
        )?)
    } else {
        None
    };
    if let Some(book) = &old {
        let m = book.meta();
        // The folding policy (store::book::fold): new entries go to a delta segment while
        // the segments hold at most an eighth of the base; past that the base is rewritten
        // with everything folded in.
        let threshold = delta_min.max(m.positions / 8);
        if m.positions + m.key_only > 0 && run_entries + m.delta_entries <= threshold {
            let sources = match in_memory.take() {
                Some(parts) => memory_streams(parts),
                None => open_run_files(&run_files)?,
            };
            book::publish_segment(
                book,
                MergeIter::new(sources),
                games,
                records,
                new_games,
                game.codec(),
                writer_opts,
            )?;
            return Ok(Applied::Delta);
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
        game,
    )
}

/// Writes the book anew into a file that replaces it: its entries, counts and records (if it
/// exists) with the new ones.
#[allow(clippy::too_many_arguments)]
fn rewrite(
    book_path: &Path,
    old: Option<Book>,
    runs: Vec<EntryStream<'static>>,
    run_entries: u64,
    games: u64,
    (records, new_games): (Vec<(String, Vec<u8>)>, Option<GameTable>),
    writer_opts: &WriterOptions,
    game: Game,
) -> Result<Applied> {
    let mut w = BookWriter::create(book_path, game.codec(), writer_opts.clone())?;
    crate::ops::progress::Trace::new().attach(&mut w);
    w.add_games(games);
    if let Some(db) = new_games {
        w.add_game_fingerprints_from(db);
    }
    let mut sources: Vec<EntryStream<'_>> = Vec::new();
    if let Some(b) = &old {
        w.carry_over(b)?;
        // New games up to half the book: keep its model, its coded positions pass through.
        let m = b.meta();
        let reuse = crate::ops::rewrite::keeps_model(m, run_entries + m.delta_entries)
            .then(|| b.compression())
            .flatten();
        if let Some(c) = &reuse {
            w.reuse_compression(c.clone())?;
        }
        sources.push(Box::new(b.iter_for_rewrite_coded(reuse.as_ref())?));
    }
    w.add_imports(records);
    sources.push(Box::new(MergeIter::new(runs)));
    let mut trace = crate::ops::progress::Trace::new();
    for e in crate::chess::attach::AttachKeyOnly::new(MergeIter::new(sources)) {
        w.push(e?)?;
    }
    trace.mark("rewrite: merge and write blocks");
    w.finish()?;
    trace.mark("rewrite: finish (last blocks, meta, commit, compact, rename)");
    Ok(Applied::Rewrite)
}

/// The records of an import attempt: (fingerprint, record bytes) for each input with a
/// fingerprint (every input, once stdin has been read).
pub(super) fn records(
    plan: &[PlannedInput],
    per_input: &[InputCounts],
    opts: &ImportOptions,
    imported_at: u64,
    attempt: &str,
) -> Result<Vec<(String, Vec<u8>)>> {
    plan.iter()
        .zip(per_input)
        .filter_map(|(p, c)| {
            let fp = p.fingerprint.clone()?;
            let id = p.identity.as_ref();
            let rec = record::ImportRecord {
                attempt: Some(attempt.to_string()),
                bytes: p.bytes,
                dedupe: opts.dedupe,
                dev: id.map(|i| i.dev),
                games_imported: c.imported,
                games_read: c.read,
                games_skipped: c.skipped,
                imported_at,
                ino: id.map(|i| i.ino),
                max_ply: opts.rules.max_ply,
                min_rating: opts.rules.min_rating,
                mtime_ns: id.map(|i| i.mtime_ns),
                name: p.name.clone(),
                path: id.map(|i| i.path.clone()),
            };
            Some(rec.to_bytes().map(|b| (fp, b)))
        })
        .collect()
}

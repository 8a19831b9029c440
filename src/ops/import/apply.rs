//! Applying an import to the book: the spilled runs merged in passes ([`reduce_runs`]), then
//! the new entries added to the book atomically, as a new delta segment or by rewriting its
//! base with everything folded in ([`apply`], [`rewrite`]), together with the import records.

use std::path::{Path, PathBuf};

use super::aggregate::SortedAggregate;
use super::disk;
use super::options::{Applied, ImportOptions};
use super::plan::PlannedInput;
use super::record;
use super::state::{COUNTED_TABLE, GAMES_LOG, ImportState, InputCounts, STATE_FILE, Staging};
use crate::error::Result;
use crate::ops::game::Game;
use crate::ops::progress::Progress;
use crate::store::book::{self, Additions};
use crate::store::entry::MergeIter;
use crate::store::fpset;
use crate::store::run::{RunModels, RunReader, RunWriter, run_decoders};
use crate::store::{Book, BookWriter, WriterOptions};

/// Most runs merged at once; more are merged in passes. A run being read holds one block
/// (up to 1,024 entries decoded but for their cells, which stay coded until the merge takes
/// the entry; its frame and a 64 KiB read buffer: ~0.5 MiB, at most ~2 MiB for a block of
/// the heaviest opening positions) and, on two cores or more, the next one decoded ahead
/// (`store::run::decode`): up to ~4 MiB, the share each run gets, as the merges read
/// `--memory`/4 runs at once ([`RUNS_PER_MIB`] per 4 MiB).
const MAX_FAN_IN: usize = 512;
const RUNS_PER_MIB: usize = 1;

/// Applies what the read phase left to the book: merges the runs down to what one merge takes,
/// stores the import records and the attempt about to commit, and merges the entries into the
/// book ([`apply`]). Returns how the book was changed.
pub(super) fn apply_phase(
    book_path: &Path,
    plan: &[PlannedInput],
    staging: &Staging,
    state: &mut ImportState,
    (in_memory, games, models): (
        Option<Vec<SortedAggregate>>,
        Vec<super::games::GameSink>,
        RunModels,
    ),
    opts: &ImportOptions,
    progress: &Progress,
) -> Result<Applied> {
    progress.phase("merging runs into the book");
    let mut trace = crate::ops::progress::Trace::new();
    reduce_runs(
        staging.dir(),
        state,
        &staging.path(STATE_FILE),
        (opts.memory_mib / 4 * RUNS_PER_MIB).clamp(4, MAX_FAN_IN),
        (opts.game, &models),
    )?;
    reduce_game_runs(
        staging.dir(),
        state,
        &staging.path(STATE_FILE),
        (opts.memory_mib / 4 * RUNS_PER_MIB).clamp(4, MAX_FAN_IN),
    )?;
    trace.mark("merge passes (runs and game runs down to the fan-in)");
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
    let imports = records(plan, &state.per_input, opts, now, &attempt)?;
    let writer_opts = writer_options(opts);
    // `--dedupe`: the fingerprints of the games read, recorded in the book with its new counts.
    // Sorted into a staging table in bounded memory, then copied into the book.
    let game_fingerprints = if opts.dedupe {
        fpset::sorted_table(
            &staging.path(GAMES_LOG),
            &staging.path(COUNTED_TABLE),
            fpset::capacity_for(opts.memory_mib.max(1) << 20),
        )?
    } else {
        None
    };
    let added = Additions {
        games: state.per_input.iter().map(|c| c.imported).sum(),
        imports,
        game_fingerprints,
        facets: opts.rules.facets,
        facet_games: state.facet_games.clone(),
        stored_games: stored_games(staging.dir(), state, games)?,
        every_game_stored: opts.store_games && opts.game == crate::ops::game::Game::Chess,
    };
    let new = NewEntries::of(state, staging.dir(), in_memory, models);
    staging.mark_applying(&attempt)?;
    crate::store::files::crash_point("import-applying-marked");
    let target = Target {
        book_path,
        game: opts.game,
        delta_min: opts.delta_min,
        writer_opts: &writer_opts,
        lookup_threads: book::lookup_threads(opts.workers()),
    };
    apply(&target, new, added)
}

/// The games this import stores, each source in the game store's order: the workers' games
/// held in memory (nothing was spilled) or the game runs spilled beside the runs.
fn stored_games(
    staging: &Path,
    state: &ImportState,
    in_memory: Vec<super::games::GameSink>,
) -> Result<Vec<crate::store::book::GameStream<'static>>> {
    let mut out: Vec<crate::store::book::GameStream<'static>> = Vec::new();
    for sink in in_memory {
        out.push(Box::new(sink.into_sorted().map(Ok)));
    }
    for (name, _) in &state.game_runs {
        out.push(Box::new(crate::store::gamerun::GameRunReader::open(
            &staging.join(name),
        )?));
    }
    Ok(out)
}

/// Merges runs in passes until at most `fan_in` remain (crash-safe: the merged run is
/// recorded before its sources are deleted). The passes of a level merge groups of the
/// smallest runs, each as small as lets the level end at `fan_in` runs or at a count the next
/// level can bring there ([`level`], recorded in the state so a resumed import keeps it): a
/// pass holds its group and its output beside the other runs, so small groups keep the
/// staging near the runs' bytes. A pass needs the disk for its output, checked first.
pub(super) fn reduce_runs(
    staging: &Path,
    state: &mut ImportState,
    state_path: &Path,
    fan_in: usize,
    (game, models): (Game, &RunModels),
) -> Result<()> {
    let fan_in = fan_in.max(2);
    while state.runs.len() > fan_in {
        let k = pass_size(state.runs.len(), fan_in, &mut state.pass_level);
        let mut by_size: Vec<usize> = (0..state.runs.len()).collect();
        by_size.sort_by_key(|&i| (state.runs[i].1, i));
        let mut picked = vec![false; state.runs.len()];
        for &i in &by_size[..k] {
            picked[i] = true;
        }
        let mut group = Vec::with_capacity(k);
        let mut rest = Vec::with_capacity(state.runs.len() - k);
        for (run, p) in std::mem::take(&mut state.runs).into_iter().zip(picked) {
            if p { group.push(run) } else { rest.push(run) }
        }
        state.runs = rest;
        check_pass_disk(staging, &group)?;
        let decoders = run_decoders();
        let readers = group
            .iter()
            .map(|(r, _)| {
                RunReader::open_indexed_sharing(&staging.join(r), game.codec(), models)
                    .map(|r| r.decoding_on(decoders.clone()).coded())
            })
            .collect::<StoreResult<Vec<_>>>()?;
        let name = format!("run-{:06}.zst", state.next_run);
        state.next_run += 1;
        let mut w = RunWriter::create_sharing(&staging.join(&name), game.codec(), models)?;
        for e in MergeIter::new(readers) {
            w.push(&e?)?;
        }
        let n = w.finish()?;
        crate::store::files::crash_point("import-runs-merged");
        state.runs.push((name, n));
        state.save(state_path)?;
        crate::store::files::crash_point("import-merge-recorded");
        remove_runs(staging, group);
    }
    Ok(())
}

/// Merges the game runs (the stored games the workers spilled, one run per spill) in passes
/// until at most `fan_in` remain, so that the book's writer reads a bounded number of files at
/// once (each reader holds a buffer and a decoded block). Each pass merges the smallest runs,
/// as many as end the passes at `fan_in` without merging more than `fan_in` at once; crash-safe
/// as [`reduce_runs`]: the merged run is recorded before its sources are deleted, and a resumed
/// import deletes the unrecorded files.
pub(super) fn reduce_game_runs(
    staging: &Path,
    state: &mut ImportState,
    state_path: &Path,
    fan_in: usize,
) -> Result<()> {
    let fan_in = fan_in.max(2);
    while state.game_runs.len() > fan_in {
        let k = fan_in.min(state.game_runs.len() - fan_in + 1);
        state.game_runs.sort_by_key(|(r, n)| (*n, r.clone()));
        let group: Vec<(String, u64)> = state.game_runs.drain(..k).collect();
        check_pass_disk(staging, &group)?;
        let readers = group
            .iter()
            .map(|(r, _)| {
                crate::store::gamerun::GameRunReader::open(&staging.join(r))
                    .map(|g| Box::new(g) as crate::store::book::GameStream<'static>)
            })
            .collect::<StoreResult<Vec<_>>>()?;
        let name = format!("run-{:06}.games", state.next_run);
        state.next_run += 1;
        let mut w = crate::store::gamerun::GameRunWriter::create(&staging.join(&name))?;
        for g in crate::store::book::merge_game_streams(readers) {
            w.push(g?)?;
        }
        let n = w.finish()?;
        crate::store::files::crash_point("import-game-runs-merged");
        state.game_runs.push((name, n));
        state.save(state_path)?;
        remove_runs(staging, group);
    }
    Ok(())
}

/// A merge pass of `group` (runs or game runs of the staging directory) needs the disk for its
/// output: checked before it starts.
fn check_pass_disk(staging: &Path, group: &[(String, u64)]) -> Result<()> {
    disk::check_pass(
        staging,
        disk::staged_bytes(staging, group.iter().map(|(r, _)| r.as_str())),
    )
}

/// Deletes a pass's sources once its merged run is recorded (a failure leaves an unrecorded
/// file, which a resumed import deletes).
fn remove_runs(staging: &Path, group: Vec<(String, u64)>) {
    for (r, _) in group {
        let _ = std::fs::remove_file(staging.join(r));
    }
}

/// How many runs the next pass merges, out of `runs` (more than `fan_in`): the level's width
/// (chosen by [`level`] when a level starts), or fewer for the pass that ends it.
fn pass_size(runs: usize, fan_in: usize, level_under_way: &mut Option<(usize, usize)>) -> usize {
    let (width, until) = *level_under_way.get_or_insert_with(|| level(runs, fan_in));
    let k = width.min(runs - until + 1);
    if runs - (k - 1) <= until {
        *level_under_way = None;
    }
    k
}

/// The passes of one level, as (width, runs it ends at), for `runs` runs of about one size
/// and a merge of at most `fan_in` (`runs > fan_in`). It ends at `fan_in` runs, else at the
/// smallest power of `fan_in` it can reach without merging a run twice, else at the smallest
/// count it can reach so. Its width is the smallest `w` whose passes, each merging `w` of the
/// level's runs into one, reach that end without merging any run twice (`ceil((runs - end) / (w - 1)) * w <= runs`). A pass holds its
/// `w` runs' worth beside the rest, so a level peaks at about `1 + w / runs` times the runs'
/// bytes. Knuth's widest-first pattern holds up to `fan_in` runs' worth (1.5× the runs at 130
/// runs and a fan-in of 64) and writes about the same bytes.
fn level(runs: usize, fan_in: usize) -> (usize, usize) {
    let fan_in = fan_in.max(2);
    let width = |end: usize| (2..=fan_in).find(|&w| (runs - end).div_ceil(w - 1) * w <= runs);
    let mut end = fan_in;
    while end < runs {
        if let Some(w) = width(end) {
            return (w, end);
        }
        end = end.saturating_mul(fan_in);
    }
    // Between the powers (a small fan-in): the smallest end that some width reaches (one
    // always does: two runs merged into one end at `runs - 1`).
    (fan_in..runs)
        .find_map(|end| width(end).map(|w| (w, end)))
        .unwrap_or((2, runs - 1))
}

use crate::store::book::EntryStream;
use crate::store::error::Result as StoreResult;

/// The book an import applies to, and how.
struct Target<'a> {
    book_path: &'a Path,
    game: Game,
    /// The delta segments may hold this many entries (or an eighth of the base's, if more)
    /// before the base is rewritten instead.
    delta_min: u64,
    writer_opts: &'a WriterOptions,
    /// Threads that look the new entries up in the book (a delta segment's publication).
    lookup_threads: usize,
}

/// The entries an import adds, in (key, position) order per source: the workers' sorted
/// aggregates (the import fit in memory) or the runs spilled to staging.
enum Sources {
    InMemory(Vec<SortedAggregate>),
    Runs(Vec<PathBuf>),
}

/// What an import adds to the book's entries: where they are and how many (an upper bound
/// of the distinct entries: the same one may be in several sources).
struct NewEntries {
    sources: Sources,
    count: u64,
    /// The runs' shared position model, loaded once for all of them.
    models: RunModels,
}

impl NewEntries {
    fn of(
        state: &ImportState,
        staging: &Path,
        in_memory: Option<Vec<SortedAggregate>>,
        models: RunModels,
    ) -> Self {
        match in_memory {
            Some(parts) => NewEntries {
                count: parts.iter().map(|p| p.len() as u64).sum(),
                sources: Sources::InMemory(parts),
                models,
            },
            None => NewEntries {
                count: state.runs.iter().map(|(_, n)| n).sum(),
                sources: Sources::Runs(state.runs.iter().map(|(r, _)| staging.join(r)).collect()),
                models,
            },
        }
    }

    /// Checks that the file the entries go to fits beside the runs (and `book`'s files), or,
    /// for entries held in memory, beside the book at `book_path`.
    fn check_disk(&self, book_path: &Path, book: disk::BookNeed) -> Result<()> {
        match &self.sources {
            Sources::Runs(paths) => {
                let staged = paths
                    .iter()
                    .filter_map(|p| std::fs::metadata(p).ok())
                    .map(|m| m.len())
                    .sum();
                let dir = paths
                    .first()
                    .map_or(Path::new("."), |p| crate::store::files::dir_of(p));
                disk::check_apply(dir, staged, book)
            }
            Sources::InMemory(_) => disk::check_apply_in_memory(
                crate::store::files::dir_of(book_path),
                self.count,
                book,
            ),
        }
    }

    /// The sources merged into one stream of entries: the spilled runs opened, their entries'
    /// cells decoded only as the merge takes them (a head per run holds its cells coded).
    fn merged(self, game: Game) -> StoreResult<EntryStream<'static>> {
        match self.sources {
            Sources::InMemory(parts) => {
                let parts: Vec<EntryStream<'static>> = parts
                    .into_iter()
                    .map(|v| Box::new(v.map(Ok)) as EntryStream<'static>)
                    .collect();
                Ok(Box::new(MergeIter::new(parts)))
            }
            Sources::Runs(paths) => {
                // One pool decodes the blocks of all the runs ahead of the merge, which
                // also feeds the book's writer.
                let decoders = run_decoders();
                let runs = paths
                    .iter()
                    .map(|p| {
                        RunReader::open_indexed_sharing(p, game.codec(), &self.models)
                            .map(|r| r.decoding_on(decoders.clone()).coded())
                    })
                    .collect::<StoreResult<Vec<_>>>()?;
                Ok(Box::new(MergeIter::new(runs)))
            }
        }
    }
}

/// Applies the new entries and what comes with them to the book; returns how
/// ([`Applied::Delta`] or [`Applied::Rewrite`]).
fn apply(target: &Target<'_>, new: NewEntries, added: Additions) -> Result<Applied> {
    let mut trace = crate::ops::progress::Trace::new();
    // A delta plan looks every new entry up in the book: caches within the budget's share.
    let old = if target.book_path.exists() {
        Some(Book::open_with_cache(
            target.book_path,
            target.game.codec(),
            target.writer_opts.cache_bytes,
        )?)
    } else {
        None
    };
    trace.mark("apply: open the book");
    if let Some(book) = &old {
        let m = book.meta();
        // The folding policy (store::book::fold): a delta segment, unless these entries
        // alone are more than an eighth of the book or the base less than an eighth of it.
        if !book::rewrites_base(
            new.count,
            m.positions + m.key_only,
            book.base().file_bytes(),
            book.file_bytes(),
            target.delta_min,
        ) {
            new.check_disk(target.book_path, disk::BookNeed::default())?;
            let fold_due = book::publish_segment(
                book,
                new.merged(target.game)?,
                added,
                target.game.codec(),
                target.writer_opts,
                target.lookup_threads,
            )?;
            trace.mark("delta: look up the new entries, write and publish the segment");
            // The lookups' caches go before the fold opens its own.
            drop(old);
            if fold_due {
                book::fold_book(target.book_path, target.game.codec(), target.writer_opts)?;
                trace.mark("delta: fold segments");
            }
            return Ok(Applied::Delta);
        }
    }
    new.check_disk(
        target.book_path,
        disk::BookNeed {
            base_bytes: old.as_ref().map_or(0, Book::file_bytes),
        },
    )?;
    rewrite(target, old, new, added)
}

/// The writer's options of an import: the given ones, with what grows with use sized within
/// `--memory` (WriterOptions::for_memory).
pub(super) fn writer_options(opts: &ImportOptions) -> WriterOptions {
    let mem = WriterOptions::for_memory(opts.memory_mib.max(1) << 20);
    let mut writer_opts = opts.writer.clone();
    writer_opts.model_sample = writer_opts.model_sample.min(mem.model_sample);
    writer_opts.commit_bytes = writer_opts.commit_bytes.min(mem.commit_bytes);
    writer_opts.cache_bytes = writer_opts.cache_bytes.min(mem.cache_bytes);
    writer_opts
}

/// Writes the book anew into a file that replaces it: its entries, counts and records (if it
/// exists) with the new ones.
fn rewrite(
    target: &Target<'_>,
    old: Option<Book>,
    new: NewEntries,
    added: Additions,
) -> Result<Applied> {
    let mut w = BookWriter::create(
        target.book_path,
        target.game.codec(),
        target.writer_opts.clone(),
    )?;
    crate::ops::progress::Trace::new().attach(&mut w);
    let mut sources: Vec<EntryStream<'_>> = Vec::new();
    if let Some(b) = &old {
        w.carry_over(b)?;
        // New games up to half the book: keep its model, its coded positions pass through.
        let m = b.meta();
        let reuse = m
            .keeps_model(new.count + m.delta_entries)
            .then(|| b.compression())
            .flatten();
        if let Some(c) = &reuse {
            w.reuse_compression(c.clone())?;
        }
        sources.push(Box::new(b.iter_for_rewrite_coded(reuse.as_ref())?));
    }
    let game_cells = added.keeps_game_cells_with(old.as_ref().map_or(&[][..], |b| b.files()));
    // After carry_over: this import's records replace carried-over ones of the same inputs.
    added.write_to(&mut w);
    if game_cells {
        w.keep_cells_as_games()?;
    }
    w.counts_added_entries();
    sources.push(new.merged(target.game)?);
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

#[cfg(test)]
mod tests {
    use super::*;

    /// Runs `reduce_runs`'s choice of passes on run sizes (smallest first, a pass's output the
    /// sum of its group): the passes, the bytes written ÷ the runs' and the peak ÷ the runs'.
    fn simulate(runs: usize, fan_in: usize) -> (usize, f64, f64) {
        let mut sizes = vec![1u64; runs];
        let total = runs as f64;
        let (mut passes, mut written, mut peak, mut level) = (0, 0u64, 0u64, None);
        while sizes.len() > fan_in {
            let k = pass_size(sizes.len(), fan_in, &mut level);
            sizes.sort_unstable();
            let out: u64 = sizes.drain(..k).sum();
            peak = peak.max(sizes.iter().sum::<u64>() + 2 * out);
            written += out;
            passes += 1;
            sizes.push(out);
        }
        assert_eq!(level, None, "no level is left under way");
        (passes, written as f64 / total, peak as f64 / total)
    }

    #[test]
    fn a_level_has_the_smallest_width_that_merges_each_run_once() {
        assert_eq!(level(65, 64), (2, 64));
        assert_eq!(level(128, 64), (2, 64));
        assert_eq!(level(129, 64), (3, 64));
        assert_eq!(level(130, 64), (3, 64));
        assert_eq!(level(420, 64), (7, 64));
        assert_eq!(
            level(5_000, 64),
            (2, 4_096),
            "past 64^2 runs, first down to 64^2"
        );
        for fan_in in [2, 3, 4, 16, 64] {
            for runs in fan_in + 1..fan_in * fan_in * 2 {
                let (w, end) = level(runs, fan_in);
                assert!(end < runs && (2..=fan_in).contains(&w), "{runs}, {fan_in}");
                assert!(
                    (runs - end).div_ceil(w - 1) * w <= runs,
                    "{runs} runs, fan-in {fan_in}"
                );
                if w > 2 {
                    let v = w - 1;
                    assert!(
                        (runs - end).div_ceil(v - 1) * v > runs,
                        "{runs}, {fan_in}: {v} does"
                    );
                }
            }
        }
    }

    /// Game runs past the fan-in are merged down to it: the merged runs hold every game once,
    /// in the store's order, and only the recorded runs are left in the staging directory.
    #[test]
    fn game_runs_are_merged_down_to_the_fan_in() {
        use crate::store::gameblock::{StoredGame, store_order};
        use crate::store::gamerun::{GameRunReader, GameRunWriter};
        let dir = tempfile::tempdir().unwrap();
        let mut state = ImportState::new("test", 1);
        let mut all = Vec::new();
        for r in 0..11u64 {
            let mut games: Vec<StoredGame> = (0..(5 + r * 3))
                .map(|i| StoredGame {
                    id: r * 1000 + i,
                    fields: vec![format!("{}.01.01", 1990 + (i * 7 + r) % 30).into_bytes()],
                })
                .collect();
            games.sort_by(store_order);
            let name = format!("run-{r:06}.games");
            let mut w = GameRunWriter::create(&dir.path().join(&name)).unwrap();
            for g in &games {
                w.push(g.clone()).unwrap();
            }
            state.game_runs.push((name, w.finish().unwrap()));
            state.next_run = r + 1;
            all.extend(games);
        }
        all.sort_by(store_order);
        let state_path = dir.path().join("state.json");
        reduce_game_runs(dir.path(), &mut state, &state_path, 3).unwrap();
        assert_eq!(state.game_runs.len(), 3);
        let mut names: Vec<String> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .filter(|n| n != "state.json")
            .collect();
        names.sort();
        let mut recorded: Vec<String> = state.game_runs.iter().map(|(n, _)| n.clone()).collect();
        recorded.sort();
        assert_eq!(names, recorded, "only the recorded runs are left");
        let readers = state
            .game_runs
            .iter()
            .map(|(n, _)| {
                Box::new(GameRunReader::open(&dir.path().join(n)).unwrap())
                    as crate::store::book::GameStream<'static>
            })
            .collect();
        let merged: Vec<StoredGame> = crate::store::book::merge_game_streams(readers)
            .map(Result::unwrap)
            .collect();
        assert_eq!(merged, all);
        assert_eq!(
            state.game_runs.iter().map(|(_, n)| n).sum::<u64>(),
            all.len() as u64
        );
        // At or under the fan-in nothing is merged.
        let before = state.game_runs.clone();
        reduce_game_runs(dir.path(), &mut state, &state_path, 3).unwrap();
        assert_eq!(state.game_runs, before);
    }

    #[test]
    fn passes_keep_the_staging_near_the_runs_bytes() {
        // (runs, fan-in, peak and bytes written as multiples of the runs' bytes): the 8M-game
        // import's ~420 runs at the default --memory, one run past the fan-in, twice the
        // fan-in, 32M games' worth, past the fan-in's square (two levels) and a tiny fan-in.
        for (runs, fan_in, peak_at_most, written_at_most) in [
            (420, 64, 1.02, 1.0),
            (65, 64, 1.04, 0.04),
            (130, 64, 1.03, 0.77),
            (1_700, 64, 1.02, 1.0),
            (5_000, 64, 1.03, 1.4),
            (300, 4, 1.4, 3.5),
        ] {
            let (passes, written, peak) = simulate(runs, fan_in);
            assert!(passes > 0);
            assert!(peak <= peak_at_most, "{runs}/{fan_in}: peak {peak}");
            assert!(
                written <= written_at_most,
                "{runs}/{fan_in}: written {written}"
            );
        }
    }
}

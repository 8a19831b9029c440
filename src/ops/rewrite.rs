//! `bookdb merge`, `bookdb compact` and `bookdb migrate`: whole-book rewrites. Each writes a new
//! file beside the target and renames it into place, so the target changes atomically and
//! readers that have the old file open keep reading the old inode.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

use serde::Serialize;

use super::game::{Game, mismatch};
use super::progress::Progress;
use super::rewrite_budget::{DEFAULT_REWRITE_MEMORY_MIB, RewriteBudget, book_files};
use crate::error::{Error, Result, StoreError};
use crate::store::book::{FORMAT_VERSION, OLDEST_MIGRATABLE};
use crate::store::entry::MergeIter;
use crate::store::{Book, BookMeta, BookWriter, WriterOptions};

/// Options of `merge` and `compact`.
#[derive(Clone, Debug, Default)]
pub struct RewriteOptions {
    pub writer: WriterOptions,
    /// Progress on stderr: a bar, plain lines, or none.
    pub progress: super::progress::ProgressMode,
    /// How long to wait for another writer's lock on the book.
    pub lock_wait: crate::store::LockWait,
    /// `compact`: train a new position model and dictionary even if the book's own still fit
    /// (see [`BookMeta::keeps_model`]).
    pub retrain: bool,
    /// `migrate`: the facets the migrated book keeps from then on (its counts so far are in
    /// the all-unknown cell); `None`: what it kept (none, for a version-3 book).
    pub facets: Option<crate::store::facet::FacetSet>,
    /// `--memory`, MiB ([`super::rewrite_budget`]); `None`: the default.
    pub memory_mib: Option<usize>,
    /// `compact --drop-games`: the new book keeps no stored games (nor references); its
    /// counts, and the fingerprints that keep imports from counting a game twice, stay.
    pub drop_games: bool,
}

impl RewriteOptions {
    /// The budget of a rewrite reading `files` book files, and the warning if it was capped.
    fn budget(&self, files: usize) -> Result<(RewriteBudget, Option<String>)> {
        let mib = self.memory_mib.unwrap_or(DEFAULT_REWRITE_MEMORY_MIB);
        RewriteBudget::new(mib, files, &self.writer)
    }
}

/// What a rewrite reports about its memory: the budget and the peak resident memory.
#[derive(Clone, Debug, Default, Serialize)]
pub struct RewriteMemory {
    /// The budget used, MiB.
    pub memory_mib: usize,
    /// The process's peak resident memory when the rewrite ended (`VmHWM`, where `/proc`
    /// tells it).
    pub peak_rss_bytes: Option<u64>,
    /// The budget was capped to the machine.
    pub warnings: Vec<String>,
}

impl RewriteMemory {
    fn of(budget: &RewriteBudget, warning: Option<String>) -> RewriteMemory {
        RewriteMemory {
            memory_mib: budget.mib,
            peak_rss_bytes: crate::ops::import::memory::peak_rss(),
            warnings: warning.into_iter().collect(),
        }
    }
}

/// Entries between progress updates.
const PROGRESS_EVERY: u64 = 4096;

#[derive(Clone, Debug, Serialize)]
pub struct MergeSummary {
    pub inputs: Vec<String>,
    pub output: String,
    pub book: BookMeta,
    pub output_bytes: u64,
    /// Import fingerprints found in more than one input: those games are counted twice.
    pub overlapping_imports: Vec<String>,
    /// Fingerprints more than one input records (each input counted their games; a merged
    /// book records every spelling of a game it merged, so one game may count here twice).
    /// Only books that record fingerprints (every book that stores games, and `--dedupe`
    /// imports) can tell.
    pub shared_games: u64,
    /// Games more than one input stored (alike, to another depth, or as another export of
    /// one lichess game: `store::onegame`): the merge took their extra copies' counts out, so
    /// each counts once (as in the merged game store).
    pub shared_games_subtracted: u64,
    /// The copies taken out (per game, its copies less the one kept).
    pub copies_subtracted: u64,
    /// Of those, the copies beyond what the inputs' fingerprints say they stored alike: one
    /// lichess game from two exports (other tags, SAN spelled otherwise), known by its id,
    /// result and moves.
    pub copies_by_id: u64,
    /// Copies of shared games beyond the first, by the inputs' fingerprints: per shared
    /// game, the inputs that counted it less one.
    pub shared_copies: u64,
    /// Of those, the copies still counted: an input records the game by fingerprint only
    /// (`--no-games --dedupe`), so no store shows the copy, or stores records of one game
    /// under two dates (one export with a `UTCDate` another lacks), which are not found (at
    /// least the copies the fingerprints say were stored less those taken out).
    pub copies_still_counted: u64,
    /// Entries where a copy held more than the inputs' sum (an input pruned by
    /// `compact --min-games`, or re-faceted by `migrate --facets`): counters clamped at zero.
    pub subtraction_clamped: u64,
    pub elapsed_secs: f64,
    #[serde(flatten)]
    pub memory: RewriteMemory,
}

use crate::chess::attach::AttachKeyOnly;

/// Entries a rewrite reads from a book (positions and key-only entries, delta tier merged),
/// for a progress bar's length.
fn input_entries(m: &BookMeta) -> u64 {
    m.positions + m.key_only
}

fn same_file(a: &Path, b: &Path) -> bool {
    match (std::fs::canonicalize(a), std::fs::canonicalize(b)) {
        (Ok(x), Ok(y)) => x == y,
        _ => false,
    }
}

/// Opens a merge's inputs with `caches` each: their game, which must be one.
fn open_inputs(inputs: &[PathBuf], caches: crate::store::CacheSizes) -> Result<(Game, Vec<Book>)> {
    let mut game = None;
    let mut books = Vec::with_capacity(inputs.len());
    for p in inputs {
        let (g, b) = Game::open_with_caches(p, caches)?;
        match game {
            None => game = Some((g, p)),
            Some((first, first_path)) if first != g => {
                return Err(mismatch(
                    p,
                    g,
                    first,
                    &format!("a merge with {} ({first})", first_path.display()),
                ));
            }
            Some(_) => {}
        }
        books.push(b);
    }
    Ok((game.map_or(Game::Chess, |(g, _)| g), books))
}

/// Streams a k-way merge of books into a new book at `out`. Inputs are only read.
pub fn merge(inputs: &[PathBuf], out: &Path, opts: &RewriteOptions) -> Result<MergeSummary> {
    let start = Instant::now();
    if inputs.is_empty() {
        return Err(Error::Usage("merge needs at least one input book".into()));
    }
    // Every file of the output is beside the real file, not beside a symlink to it.
    let out = &crate::store::files::resolve_book(out)?;
    if let Some(p) = inputs.iter().find(|p| same_file(p, out)) {
        return Err(Error::Usage(format!(
            "output {} is also an input ({}); write the merge to a new file",
            out.display(),
            p.display()
        )));
    }
    let _lock = crate::store::book::lock_for_writing(out, opts.lock_wait)?;
    let (budget, warning) = opts.budget(inputs.iter().map(|p| book_files(p)).sum())?;
    let (game, mut books) = open_inputs(inputs, budget.reader)?;
    let fingerprints =
        crate::store::book::shared_game_fingerprints(&books.iter().collect::<Vec<_>>())?;
    let shared_games = fingerprints.games;
    // One lichess game stored from two exports has two fingerprints but one id: the stores
    // are searched whenever an id is shared (reading only the id indexes to know).
    let shared_ids = match shared_games == 0 && game == Game::Chess {
        true => crate::store::book::shared_game_ids(&books.iter().collect::<Vec<_>>())?,
        false => 0,
    };
    // Games more than one input counted and stored (`store::onegame`): their extra copies'
    // counts are taken out, so that each counts once (brief §9). The copies are imported into scratch
    // books with the inputs closed, so that the import and the inputs' caches do not add up.
    let shared = match (shared_games > 0 || shared_ids > 0) && game == Game::Chess {
        true => match super::shared_games::collect(&books, out)? {
            Some(copies) => {
                drop(books);
                let s = copies.import(budget.mib, budget.reader)?;
                books = open_inputs(inputs, budget.reader)?.1;
                Some(s)
            }
            None => None,
        },
        false => None,
    };
    let mut w = BookWriter::create(out, game.codec(), budget.writer.clone())?;
    super::progress::Trace::new().attach(&mut w);
    // Code the output with the largest input's model and dictionary: no training pass, and the
    // sealing threads start at once. `compact` retrains.
    // Positions already coded with that model are stored as they are.
    // Ties are broken by the model and dictionary themselves, so that the output does not
    // depend on the order of the inputs.
    let reuse = books
        .iter()
        .filter_map(|b| {
            b.compression()
                .map(|c| (b.meta().positions, b.meta().pairs, c))
        })
        .max_by(|x, y| {
            (x.0, x.1, &x.2.model, &x.2.dictionary).cmp(&(y.0, y.1, &y.2.model, &y.2.dictionary))
        })
        .map(|(_, _, c)| c);
    // The same input imported into several books keeps one record (carry_over), but its
    // games are counted in each: report it.
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    for b in &books {
        w.carry_over(b)?;
        for (k, _) in b.imports()? {
            *seen.entry(k).or_default() += 1;
        }
    }
    let copies_subtracted = shared.as_ref().map_or(0, |s| s.copies);
    // Copies taken out beyond those the fingerprints saw stored: found by id (spelled
    // otherwise).
    let copies_by_id = copies_subtracted.saturating_sub(fingerprints.stored);
    if merged_keeps_game_cells(&books, fingerprints.copies == 0 && shared.is_none()) {
        w.keep_cells_as_games()?;
    }
    if let Some(c) = &reuse {
        w.reuse_compression(c.clone())?;
    }
    let streams = books
        .iter()
        .map(|b| {
            b.iter_for_rewrite_coded(reuse.as_ref())
                .map(|i| Box::new(i) as crate::store::book::EntryStream<'_>)
        })
        .collect::<crate::store::error::Result<Vec<_>>>()?;
    if let Some(s) = &shared {
        let (games, by_facet) = s.counted();
        w.take_out_games(games, &by_facet);
        // The copies taken out are the records the inputs hold alike: the store keeps one.
        w.each_game_once();
    }
    let minus = match &shared {
        Some(s) => s.streams()?,
        None => Vec::new(),
    };
    let merged = crate::store::subtract::Subtract::new(
        MergeIter::new(streams),
        MergeIter::new(minus),
        game.codec(),
    );
    let clamped = merged.clamped();
    let total = books.iter().map(|b| input_entries(b.meta())).sum();
    let progress = Progress::rewrite(opts.progress, "merge", total);
    let mut n = 0u64;
    for e in AttachKeyOnly::new(merged) {
        w.push(e?)?;
        n += 1;
        if n.is_multiple_of(PROGRESS_EVERY) {
            progress.add(PROGRESS_EVERY);
        }
    }
    progress.phase("last blocks, commit");
    let meta = w.finish()?;
    progress.clear();
    Ok(MergeSummary {
        inputs: inputs.iter().map(|p| p.display().to_string()).collect(),
        output: out.display().to_string(),
        output_bytes: std::fs::metadata(out).map(|m| m.len()).unwrap_or(0),
        book: meta,
        overlapping_imports: seen
            .into_iter()
            .filter(|(_, n)| *n > 1)
            .map(|(k, _)| k)
            .collect(),
        shared_games,
        shared_games_subtracted: shared.as_ref().map_or(0, |s| s.games),
        copies_subtracted,
        copies_by_id,
        shared_copies: fingerprints.copies,
        // Copies no store shows, and copies of stored games the stores' records did not
        // reveal (so many fewer taken out than the fingerprints say were stored: records of
        // one game under two dates). Copies found by id only may hide some of the latter.
        copies_still_counted: fingerprints.unstored
            + fingerprints.stored.saturating_sub(copies_subtracted),
        subtraction_clamped: clamped.get(),
        elapsed_secs: start.elapsed().as_secs_f64(),
        memory: RewriteMemory::of(&budget, warning),
    })
}

/// Whether the merge of `books` stores every game it counts, each counted into the cell its
/// stored tags give under the merged facets, so that its moves of few games may keep their
/// cells as their games' (docs/FORMAT.md §12.5): every input's files keep their cells so under
/// the same facets (which no pruned, polyglot-imported, game-less or migrated file does), and
/// the inputs share no game (`disjoint`: no fingerprint and no stored game), so that nothing
/// is taken out and the new store keeps every record its inputs' stores hold, as they counted
/// them. (Merges that take copies out write every cell: cells kept as games' would have to
/// follow the records the store drops.)
fn merged_keeps_game_cells(books: &[Book], disjoint: bool) -> bool {
    let facets = books
        .iter()
        .fold(crate::store::facet::FacetSet::NONE, |f, b| {
            f.union(b.facets())
        });
    disjoint
        && books
            .iter()
            .all(|b| crate::store::book::keep_game_cells(b.files(), facets))
}

/// What `migrate` did: the versions, the rewrite (if one was needed) and the sentence the text
/// output is (also in the JSON, as before, as `message`).
#[derive(Clone, Debug, Serialize)]
pub struct MigrateSummary {
    pub book: String,
    pub from_version: u32,
    pub to_version: u32,
    /// The rewrite, `None` when the book was already at the current version.
    pub migrated: Option<CompactSummary>,
    pub message: String,
}

impl std::fmt::Display for MigrateSummary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::fmt::Display for MergeSummary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let s = self;
        write!(
            f,
            "merged {} book(s) into {}: {} positions, {} pairs, {} games, {} bytes in {:.2}s",
            s.inputs.len(),
            s.output,
            s.book.positions,
            s.book.pairs,
            s.book.games,
            s.output_bytes,
            s.elapsed_secs
        )
    }
}

impl std::fmt::Display for CompactSummary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let s = self;
        write!(
            f,
            "{}: {} -> {} bytes ({:+.1}%); {} positions, {} pairs; pruned {} moves, {} positions; delta tier folded ({} entries) in {:.2}s",
            s.book,
            s.bytes_before,
            s.bytes_after,
            100.0 * (s.bytes_after as f64 - s.bytes_before as f64) / s.bytes_before.max(1) as f64,
            s.after.positions,
            s.after.pairs,
            s.moves_pruned,
            s.positions_pruned,
            s.before.delta_entries,
            s.elapsed_secs
        )
    }
}

#[derive(Clone, Debug, Serialize)]
pub struct CompactSummary {
    pub book: String,
    pub bytes_before: u64,
    pub bytes_after: u64,
    pub before: BookMeta,
    pub after: BookMeta,
    pub moves_pruned: u64,
    pub positions_pruned: u64,
    pub elapsed_secs: f64,
    #[serde(flatten)]
    pub memory: RewriteMemory,
}

/// Rewrites a book: folds its delta segments into a new base (removing them), drops moves with fewer than `min_games`
/// games (moves known only from a Polyglot import are kept), retrains the position model and
/// the dictionary when useful (pruning, a delta tier larger than half the book, or
/// `opts.retrain`; otherwise the book's own are kept, [`BookMeta::keeps_model`]), and returns the space
/// to the file system.
pub fn compact(
    book: &Path,
    min_games: Option<u64>,
    opts: &RewriteOptions,
) -> Result<CompactSummary> {
    // Through a symlink: the book it leads to is rewritten (the link stays a link).
    let book = &crate::store::files::resolve_book(book)?;
    let _lock = crate::store::book::lock_for_writing(book, opts.lock_wait)?;
    let budget = opts.budget(book_files(book))?;
    let (game, old) = Game::open_with_caches(book, budget.0.reader)?;
    rewrite_whole(book, (game, old), min_games, opts, budget, "compact")
}

/// Rewrites the open book `old` (at `book`, whose lock the caller holds) into a new file at
/// the current format version: `compact`, and `migrate` of an older version.
fn rewrite_whole(
    book: &Path,
    (game, old): (Game, Book),
    min_games: Option<u64>,
    opts: &RewriteOptions,
    (budget, warning): (RewriteBudget, Option<String>),
    label: &str,
) -> Result<CompactSummary> {
    let start = Instant::now();
    let before = old.meta().clone();
    let bytes_before = old.file_bytes();
    let mut w = BookWriter::create(book, game.codec(), budget.writer.clone())?;
    super::progress::Trace::new().attach(&mut w);
    w.carry_over(&old)?;
    if opts.drop_games {
        w.drop_games();
    }
    if let Some(f) = opts.facets {
        w.add_facets(f);
    }
    // A store carried whole, under the same facets, still holds every game it counts. Not
    // once pruned: the store keeps the games of the moves `--min-games` drops, so a later
    // writer that adds those moves back (a fold with new games) would find more games in the
    // store than the move counts.
    let same_facets = opts
        .facets
        .is_none_or(|f| f.union(old.facets()) == old.facets());
    if !opts.drop_games
        && same_facets
        && min_games.is_none()
        && crate::store::book::keep_game_cells(old.files(), old.facets())
    {
        w.keep_cells_as_games()?;
    }
    let (mut moves_pruned, mut positions_pruned) = (0u64, 0u64);
    // Folding a small delta tier keeps the model; pruning changes the content, so it retrains.
    let reuse = if opts.retrain || min_games.is_some() || !before.keeps_model(before.delta_entries)
    {
        None
    } else {
        old.compression()
    };
    if let Some(c) = &reuse {
        w.reuse_compression(c.clone())?;
    }
    let progress = Progress::rewrite(opts.progress, label, input_entries(&before));
    let mut n = 0u64;
    for e in AttachKeyOnly::new(old.iter_for_rewrite_coded(reuse.as_ref())?) {
        let mut e = e?;
        n += 1;
        if n.is_multiple_of(PROGRESS_EVERY) {
            progress.add(PROGRESS_EVERY);
        }
        if let Some(n) = min_games {
            let len = e.moves.len();
            e.moves
                .retain(|m| m.games() >= n || (m.games() == 0 && m.extra.is_some()));
            moves_pruned += (len - e.moves.len()) as u64;
            if e.moves.is_empty() {
                positions_pruned += 1;
                continue;
            }
        }
        w.push(e)?;
    }
    progress.phase("last blocks, commit");
    let after = w.finish()?;
    progress.clear();
    drop(old);
    Ok(CompactSummary {
        book: book.display().to_string(),
        bytes_before,
        bytes_after: std::fs::metadata(book).map(|m| m.len()).unwrap_or(0),
        before,
        after,
        moves_pruned,
        positions_pruned,
        elapsed_secs: start.elapsed().as_secs_f64(),
        memory: RewriteMemory::of(&budget, warning),
    })
}

/// Brings a book to the current format version: a book at [`FORMAT_VERSION`] is left as it is
/// (and the message says so); one at an older version down to [`OLDEST_MIGRATABLE`] is
/// rewritten with the same content (migrations/README.md, migrations/v1-to-v2.md,
/// migrations/v2-to-v3.md).
pub fn migrate(book: &Path, opts: &RewriteOptions) -> Result<MigrateSummary> {
    let book = &crate::store::files::resolve_book(book)?;
    if !book.exists() {
        return Err(StoreError::BookNotFound {
            path: book.to_path_buf(),
        }
        .into());
    }
    // Under the lock, and through the reader that repairs a book a killed writer left.
    let _lock = crate::store::book::lock_for_writing(book, opts.lock_wait)?;
    let budget = opts.budget(book_files(book))?;
    let (game, old) = match Game::open_for_migration(book, budget.0.reader) {
        Ok(b) => b,
        Err(Error::Store(StoreError::UnsupportedVersion { found, .. }))
            if found < OLDEST_MIGRATABLE =>
        {
            return Err(Error::Input(format!(
                "{}: format version {found} predates the first released format; no migration exists",
                book.display()
            )));
        }
        Err(e) => return Err(e),
    };
    let version = old.format_version();
    // Facets are chosen when a book is created; only a book made before them gets them here.
    if let Some(asked) = opts.facets.filter(|&f| version >= 4 && f != old.facets()) {
        return Err(Error::Usage(format!(
            "{}: the book keeps the facets {} (format {version}); --facets chooses them only when migrating a book made before facets (format 3 and older), and a book keeps what it was created with: import its games into a new book with --facets {asked}, or `bookdb merge` it with a book built so",
            book.display(),
            old.facets(),
        )));
    }
    if version == FORMAT_VERSION {
        return Ok(MigrateSummary {
            book: book.display().to_string(),
            from_version: version,
            to_version: FORMAT_VERSION,
            migrated: None,
            message: format!(
                "{}: already at format version {FORMAT_VERSION}; nothing to do",
                book.display()
            ),
        });
    }
    // v1 → … → v6 (migrations/v1-to-v2.md, …, v5-to-v6.md): the same content,
    // the delta tier folded in, rewritten as every whole-book rewrite is (temp file, fsync,
    // rename), now marked version 6 with a generation, the facets it keeps (from version 3:
    // every count so far in the all-unknown cell) , an `evals` table (none before 5) and a game store (none before 6). Each
    // step only adds or drops tables and meta keys, so one rewrite from any older version
    // does them all.
    // A version-4 book keeps the facets it has (carried over); older ones had none.
    let facets = match opts.facets {
        Some(f) => Some(f),
        None if game == Game::Chess && version < 4 => Some(crate::store::facet::FacetSet::ALL),
        None => None,
    };
    if game != Game::Chess && facets.is_some_and(|f| !f.is_none()) {
        return Err(Error::Usage(
            "--facets applies to chess books (Othello games carry no tags); give --facets none"
                .into(),
        ));
    }
    let opts = &RewriteOptions {
        facets,
        ..opts.clone()
    };
    let s = rewrite_whole(book, (game, old), None, opts, budget, "migrate")?;
    Ok(MigrateSummary {
        book: book.display().to_string(),
        from_version: version,
        to_version: FORMAT_VERSION,
        message: format!(
            "{}: migrated from format version {version} to {FORMAT_VERSION} ({} positions, {} pairs; {} -> {} bytes)",
            book.display(),
            s.after.positions,
            s.after.pairs,
            s.bytes_before,
            s.bytes_after
        ),
        migrated: Some(s),
    })
}

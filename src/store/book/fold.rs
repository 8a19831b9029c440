//! Incremental changes as delta segments: writing one ([`publish_segment`]) and the automatic
//! folding policy that keeps their number bounded ([`fold_segments`], docs/FORMAT.md §10.5).
//!
//! Policy (size tiers with a cap, as LSM trees tier their runs): an import adds one segment.
//! Once a book has more than [`MAX_SEGMENTS`], [`segments_to_merge`] picks the smallest
//! segments and merges them into one: at least two, and more while the next smallest holds at
//! most [`TIER_RATIO`] times those taken together (so segments of a size merge as a tier and
//! each entry is rewritten about once per tier, log of the book's growth), as long as the
//! merged file stays within [`MERGE_CAP_DIVISOR`]: a quarter of the book. The base is never
//! part of a fold: a nightly import rewrites at most a quarter of the book, whatever its size.
//! An import publishes a new base with everything folded in ([`rewrites_base`]) only when it
//! adds more than an eighth of the book by itself (`import`'s `delta_min` is a floor), or when
//! the base holds less than an eighth of the book's bytes: the book grew eightfold since its
//! base was written, so that rewrite is paid for by what came meanwhile (1/7 of a write per
//! byte added), and the segments never hold a book's worth of duplicated positions. `compact`
//! rewrites everything into one base when asked.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use super::live::Manifest;
use super::*;
use crate::store::PositionCodec;
use crate::store::entry::{Entry, MergeIter};
use crate::store::error::Result;

/// The most delta segments a book keeps; a publication past it merges the smallest ones. A
/// probe looks into the base and each segment, so this bounds probe cost (docs/PERFORMANCE.md
/// measures a probe at this many segments).
pub const MAX_SEGMENTS: usize = 8;

/// What an import adds to a book besides its entries.
pub(crate) struct Additions {
    /// Games counted.
    pub(crate) games: u64,
    /// The `imports` records of its inputs: (input fingerprint, record bytes); they replace
    /// carried-over records of the same inputs.
    pub(crate) imports: Vec<(String, Vec<u8>)>,
    /// `--dedupe`: the fingerprints of the games counted.
    pub(crate) game_fingerprints: Option<crate::store::fpset::SortedGames>,
    /// The facets the counts are split by (the book's), and the games counted by facet.
    pub(crate) facets: crate::store::facet::FacetSet,
    pub(crate) facet_games: crate::store::facet::FacetGames,
    /// Games to store (docs/FORMAT.md §15), each stream in the game store's order.
    pub(crate) stored_games: Vec<super::GameStream<'static>>,
    /// Every game counted is among `stored_games` (an import that stores games).
    pub(crate) every_game_stored: bool,
}

impl Additions {
    /// Whether a file of these games alone, or with `files`, stores every game it counts
    /// under the same facets, so that its moves of few games may keep their cells as their
    /// games' ([`BookWriter::keep_cells_as_games`]).
    pub(crate) fn keeps_game_cells_with(&self, files: &[Arc<BookFile>]) -> bool {
        self.every_game_stored && keep_game_cells(files, self.facets)
    }

    /// Hands them to the writer of the new file (after any `carry_over`, so that these
    /// import records replace carried-over ones).
    pub(crate) fn write_to(self, w: &mut BookWriter) {
        w.add_games(self.games);
        w.add_imports(self.imports);
        w.add_facets(self.facets);
        w.add_facet_games(&self.facet_games);
        if let Some(g) = self.game_fingerprints {
            w.add_game_fingerprints_from(g);
        }
        for g in self.stored_games {
            w.store_sorted_games(g);
        }
    }
}

/// Whether a file written from `files` (and games it stores, every one it counts) may keep
/// the cells of its moves of few games as their games' ([`BookWriter::keep_cells_as_games`]):
/// the book keeps `facets` (some), and each file keeps its cells so under the same facets, or
/// counts nothing.
pub(crate) fn keep_game_cells(
    files: &[Arc<BookFile>],
    facets: crate::store::facet::FacetSet,
) -> bool {
    !facets.is_none()
        && files.iter().all(|f| {
            (f.keeps_game_cells() && f.facets() == facets)
                || (f.meta().games == 0 && f.meta().pairs == 0)
        })
}

/// Writes `new` (entries to add, in (key, position) order, each identity once) as a delta
/// segment of `book` and publishes it. The games, import records and game fingerprints of
/// `added` are recorded in the segment. The caller holds the writer lock and opened `book`
/// after taking it. Returns whether the book now has more than [`MAX_SEGMENTS`]: the caller
/// then closes `book` (its lookup caches) and applies the folding policy with
/// [`fold_book`], so that the fold's memory is not added to the lookups'. Each new entry is
/// looked up in the book to keep the whole book's counters exact: the cost is in proportion
/// to `new`.
pub(crate) fn publish_segment(
    book: &Book,
    new: impl IntoIterator<Item = Result<Entry>>,
    added: Additions,
    codec: Arc<dyn PositionCodec>,
    opts: &WriterOptions,
    lookup_threads: usize,
) -> Result<bool> {
    // The view counters are known only at the end; the writer takes them before `finish`.
    let mut view = book.meta().clone();
    view.games += added.games;
    let mut w = next_segment(book, all_segments(book), codec.clone(), opts)?;
    if let Some(c) = book.compression() {
        w.reuse_compression(c)?;
    }
    // The segment counts only its own games.
    let game_cells = added.keeps_game_cells_with(&[]);
    added.write_to(&mut w);
    if game_cells {
        w.keep_cells_as_games()?;
    }
    let mut prev_key: Option<u64> = None;
    let mut new = new.into_iter();
    loop {
        let batch = new
            .by_ref()
            .take(super::lookups::LOOKUP_BATCH)
            .collect::<Result<Vec<Entry>>>()?;
        if batch.is_empty() {
            break;
        }
        let found = super::lookups::lookup_batch(book, &batch, lookup_threads)?;
        for (e, found) in batch.into_iter().zip(found) {
            match &found.old {
                Some(o) => {
                    // New entries read from runs may carry move indices; the book answers codes.
                    view.pairs += if e.moves.iter().any(|m| m.indexed) {
                        o.moves_not_in(&e.clone().with_codes(codec.as_ref())?)
                    } else {
                        o.moves_not_in(&e)
                    } as u64
                }
                None => {
                    view.pairs += e.moves.len() as u64;
                    if e.pos.is_some() {
                        view.positions += 1;
                    } else {
                        view.key_only += 1;
                    }
                    if prev_key == Some(e.key) || found.key_held {
                        view.collisions += 1;
                    }
                }
            }
            prev_key = Some(e.key);
            w.push(e)?;
        }
    }
    w.set_view(view)?;
    w.finish()?;
    Ok(book.segments().len() + 1 > MAX_SEGMENTS)
}

/// Opens the book at `path` with a fold's caches ([`fold_caches`]) and applies the folding
/// policy ([`fold_segments`]); returns how many segments were merged. The caller holds the
/// writer lock and has closed the views it used to write, so only the fold's memory counts.
pub(crate) fn fold_book(
    path: &Path,
    codec: Arc<dyn PositionCodec>,
    opts: &WriterOptions,
) -> Result<usize> {
    let book = Book::open_with_caches(path, codec, fold_caches(opts))?;
    fold_segments(&book, opts)
}

/// A merged segment takes the smallest segments while the next holds at most this many times
/// those taken together.
pub const TIER_RATIO: u64 = 2;
/// A fold writes at most the book's bytes divided by this (unless two segments must merge
/// and are bigger: then exactly two).
pub const MERGE_CAP_DIVISOR: u64 = 4;

/// A base whose file holds less than the book's bytes divided by this is rewritten with
/// everything folded in by the next import.
pub const BASE_SHARE_DIVISOR: u64 = 8;

/// Whether an import of `new_entries` entries into a book publishes a new base (else a
/// delta segment): the book has `book_entries` entries in all, its base file `base_bytes`
/// bytes of `book_bytes`; `delta_min` is the import's floor. See the module doc.
pub fn rewrites_base(
    new_entries: u64,
    book_entries: u64,
    base_bytes: u64,
    book_bytes: u64,
    delta_min: u64,
) -> bool {
    book_entries == 0
        || new_entries > delta_min.max(book_entries / 8)
        || base_bytes.saturating_mul(BASE_SHARE_DIVISOR) < book_bytes
}

/// Which segments the folding policy merges into one: `base` is the base's size, `segments`
/// the segments' sizes (bytes, in manifest order); the answer is their indices (at least two,
/// in manifest order), or `None` when at most [`MAX_SEGMENTS`] remain. See the module doc.
pub fn segments_to_merge(base: u64, segments: &[u64]) -> Option<Vec<usize>> {
    let n = segments.len();
    if n <= MAX_SEGMENTS {
        return None;
    }
    let cap = (base + segments.iter().sum::<u64>()) / MERGE_CAP_DIVISOR;
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by_key(|&i| (segments[i], i));
    // Enough to leave MAX_SEGMENTS (the merged file is one of them).
    let need = n - MAX_SEGMENTS + 1;
    let (mut taken, mut tail) = (Vec::new(), 0u64);
    for &i in &order {
        let s = segments[i];
        let must = taken.len() < need.max(2);
        if !must && (s > TIER_RATIO.saturating_mul(tail) || tail + s > cap) {
            break;
        }
        taken.push(i);
        tail += s;
    }
    taken.sort_unstable();
    Some(taken)
}

/// Applies the folding policy to `book`: merges the segments [`segments_to_merge`] picks into
/// one (nothing if there are at most [`MAX_SEGMENTS`]); returns how many were merged. The
/// content, the counters and the import records are unchanged; only the files are. The caller
/// holds the writer lock.
pub(crate) fn fold_segments(book: &Book, opts: &WriterOptions) -> Result<usize> {
    let segs = book.segments();
    let sizes: Vec<u64> = segs.iter().map(|f| f.file_bytes()).collect();
    let Some(picked) = segments_to_merge(book.base().file_bytes(), &sizes) else {
        return Ok(0);
    };
    let chosen: Vec<Arc<BookFile>> = picked.iter().map(|&i| segs[i].clone()).collect();
    let kept: Vec<u64> = segs
        .iter()
        .enumerate()
        .filter(|(i, _)| !picked.contains(i))
        .map(|(_, f)| f.generation())
        .collect();
    let mut w = next_segment(book, kept, book.codec_arc(), opts)?;
    let reuse = book.compression();
    if let Some(c) = &reuse {
        w.reuse_compression(c.clone())?;
    }
    w.carry_over_files(&chosen)?;
    if keep_game_cells(&chosen, book.facets()) {
        w.keep_cells_as_games()?;
    }
    let mut parts = Vec::with_capacity(chosen.len());
    for f in &chosen {
        let keep = crate::store::block::Keep {
            indices: true,
            coded: match (&reuse, f.writer_model()) {
                (Some(w), Some(mine)) => w.model == mine,
                _ => false,
            },
        };
        parts.push(Box::new(f.iter_as(keep)?) as EntryStream<'_>);
    }
    for e in MergeIter::new(parts) {
        w.push(e?)?;
    }
    // The whole book's counters do not change: the content is the same.
    w.set_view(book.meta().clone())?;
    w.finish()?;
    Ok(chosen.len())
}

/// What [`publish_evals`] adds to a book.
pub(crate) struct NewEvals {
    /// Evaluations by (key, packed position); each set kept by the selector.
    pub(crate) evals: BTreeMap<(u64, Vec<u8>), Vec<crate::store::eval::EvalResult>>,
    /// Import records of the inputs they came from (key → record bytes).
    pub(crate) imports: Vec<(String, Vec<u8>)>,
    /// The facets a new book keeps (when `book` is `None`).
    pub(crate) facets: crate::store::facet::FacetSet,
}

/// Publishes `new` into the book at `path`: as a delta segment of `book` (its entries and
/// counters unchanged), then the folding policy; or, when the book does not exist yet
/// (`book` is `None`), as a new base holding only evaluations. The caller holds the writer
/// lock.
pub(crate) fn publish_evals(
    path: &Path,
    book: Option<&Book>,
    new: NewEvals,
    codec: Arc<dyn PositionCodec>,
    opts: &WriterOptions,
) -> Result<()> {
    let Some(book) = book else {
        let mut w = BookWriter::create(path, codec, opts.clone())?;
        w.add_facets(new.facets);
        w.add_imports(new.imports);
        w.add_evals(new.evals);
        w.finish()?;
        return Ok(());
    };
    let mut w = next_segment(book, all_segments(book), codec, opts)?;
    if let Some(c) = book.compression() {
        w.reuse_compression(c)?;
    }
    w.add_facets(book.facets());
    w.add_imports(new.imports);
    w.add_evals(new.evals);
    w.set_view(book.meta().clone())?;
    w.finish()?;
    if book.segments().len() + 1 > MAX_SEGMENTS {
        fold_book(book.path(), book.codec_arc(), opts)?;
    }
    Ok(())
}

/// The caches of each file of a book a fold reads, from the writer's options: a fold reads
/// every page of the segments once, so these hold redb's branch pages and a few blocks, and
/// all the files' together stay within the writer's cache (the fold is within the caller's
/// memory budget, whatever the book's size).
pub(crate) fn fold_caches(opts: &WriterOptions) -> crate::store::CacheSizes {
    let per_file = (opts.cache_bytes / 2 / (MAX_SEGMENTS + 1)).max(1 << 20);
    crate::store::CacheSizes {
        redb_bytes: per_file,
        block_bytes: per_file,
        // A fold reads its segments in order and probes no key.
        filter_bytes: 0,
        // ... and the facts of their games in the order of their positions.
        fact_bytes: per_file,
    }
}

/// The generations of `book`'s delta segments, oldest first.
fn all_segments(book: &Book) -> Vec<u64> {
    book.segments().iter().map(|f| f.generation()).collect()
}

/// A writer of `book`'s next delta segment, published under the next generation with the
/// segments `kept` (generations) before it; its view counters are set before `finish`.
fn next_segment(
    book: &Book,
    mut kept: Vec<u64>,
    codec: Arc<dyn PositionCodec>,
    opts: &WriterOptions,
) -> Result<BookWriter> {
    let generation = book.generation() + 1;
    kept.push(generation);
    let manifest = Manifest {
        generation,
        base: book.base().generation(),
        segments: kept,
    };
    BookWriter::create_segment(
        book.path(),
        manifest,
        BookMeta::default(),
        codec,
        opts.clone(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn folds_only_past_the_limit_and_never_past_a_quarter_of_the_book() {
        assert_eq!(segments_to_merge(1000, &[]), None);
        assert_eq!(segments_to_merge(1000, &[1; MAX_SEGMENTS]), None);
        // Nine equal segments: a tier, all of them merge (within a quarter of the book).
        assert_eq!(
            segments_to_merge(1_000_000, &[10; 9]),
            Some((0..9).collect())
        );
        // The smallest merge, whatever their place; big ones stay.
        let sizes = [500, 1, 400, 2, 300, 200, 100, 50, 3];
        assert_eq!(segments_to_merge(10_000, &sizes), Some(vec![1, 3, 8]));
        // The cap: the tier would reach the big segments, a quarter of the book stops it.
        let sizes = [100, 100, 100, 100, 100, 100, 100, 100, 100];
        assert_eq!(segments_to_merge(300, &sizes), Some(vec![0, 1, 2]));
        // Two must merge even past the cap (the count bound comes first).
        let sizes = [1000; 9];
        assert_eq!(segments_to_merge(0, &sizes), Some(vec![0, 1]));
        // A killed writer's many segments: merged down to MAX_SEGMENTS at once.
        let many = vec![5u64; MAX_SEGMENTS + 4];
        let picked = segments_to_merge(1 << 30, &many).unwrap();
        assert!(many.len() - picked.len() < MAX_SEGMENTS, "{picked:?}");
    }

    /// A book simulated over `nights` imports of `nightly` bytes each onto a base of `base`
    /// bytes (entries taken as bytes); a merge keeps `keep_permille` of its inputs (positions
    /// that several segments share are stored once). Returns (bytes written ÷ final book, the
    /// largest fold ÷ the book at that time, the most segments seen); base rewrites count as
    /// written but not as folds.
    fn simulate(base: u64, nightly: u64, nights: usize, keep_permille: u64) -> (f64, f64, usize) {
        let (mut segs, mut written, mut largest, mut most) = (Vec::<u64>::new(), 0u64, 0f64, 0);
        let mut base = base;
        for _ in 0..nights {
            let book = base + segs.iter().sum::<u64>();
            if rewrites_base(nightly, book, base, book, 0) {
                written += book + nightly;
                (base, segs) = (book + nightly, Vec::new());
                continue;
            }
            segs.push(nightly);
            written += nightly;
            while let Some(picked) = segments_to_merge(base, &segs) {
                let book = base + segs.iter().sum::<u64>();
                let merged = picked.iter().map(|&i| segs[i]).sum::<u64>() * keep_permille / 1000;
                written += merged;
                largest = largest.max(merged as f64 / book as f64);
                let mut i = 0;
                segs.retain(|_| {
                    i += 1;
                    !picked.contains(&(i - 1))
                });
                segs.push(merged);
            }
            most = most.max(segs.len());
        }
        let book = base + segs.iter().sum::<u64>();
        (written as f64 / book as f64, largest, most)
    }

    #[test]
    fn a_simulated_year_has_bounded_write_amplification() {
        // Issue 31's year: 365 nightly imports of 20,000 games (~0.5 % of the book each) into
        // a 4M-game book (about 2.2 GB and 15 MB a night at the measured sizes).
        for keep in [1000, 800] {
            let (amplification, largest, most) = simulate(2_200 << 20, 15 << 20, 365, keep);
            assert!(amplification <= 10.0, "{amplification}");
            assert!(largest <= 0.25, "{largest}");
            assert!(most <= MAX_SEGMENTS, "{most}");
        }
        // Ten years without a compaction, from a 1-MB book and from the 4M-game one: each
        // byte is still rewritten a bounded number of times (the base is rewritten once per
        // eightfold growth), and no fold passes a quarter of the book.
        for base in [1 << 20, 2_200 << 20] {
            let (amplification, largest, most) = simulate(base, 15 << 20, 3650, 1000);
            assert!(amplification <= 10.0, "{amplification}");
            assert!(largest <= 0.25, "{largest}");
            assert!(most <= MAX_SEGMENTS, "{most}");
        }
    }
}

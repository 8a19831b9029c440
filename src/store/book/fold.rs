//! Incremental changes as delta segments: writing one ([`publish_segment`]) and the automatic
//! folding policy that keeps their number bounded ([`fold_segments`], docs/FORMAT.md §10.5).
//!
//! Policy: an import adds one segment. Once a book has more than [`MAX_SEGMENTS`], the
//! smallest segments are merged into one, down to [`MAX_SEGMENTS`]` / 2` — work in proportion
//! to those segments, not to the book. When the segments together would hold more entries
//! than an eighth of the base (the caller's threshold, `import`'s `delta_min`), the import
//! instead rewrites the base with everything folded in; the base grew by at least an eighth
//! since the last such rewrite, so that cost is amortized over the entries added meanwhile.

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
}

impl Additions {
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
    }
}

/// Writes `new` (entries to add, in (key, position) order, each identity once) as a delta
/// segment of `book` and publishes it, then applies the folding policy. The games, import
/// records and game fingerprints of `added` are recorded in the segment. The caller holds
/// the writer lock and opened `book` after taking it. Returns how many segments the folding
/// policy merged afterwards (0: none). Each new entry is looked up in the book to keep the
/// whole book's counters exact: the cost is in proportion to `new`.
pub(crate) fn publish_segment(
    book: &Book,
    new: impl IntoIterator<Item = Result<Entry>>,
    added: Additions,
    codec: Arc<dyn PositionCodec>,
    opts: &WriterOptions,
) -> Result<usize> {
    // The view counters are known only at the end; the writer takes them before `finish`.
    let mut view = book.meta().clone();
    view.games += added.games;
    let mut w = next_segment(book, all_segments(book), codec, opts)?;
    if let Some(c) = book.compression() {
        w.reuse_compression(c)?;
    }
    added.write_to(&mut w);
    let mut prev_key: Option<u64> = None;
    for e in new {
        let e = e?;
        let old = match &e.pos {
            Some(p) => book.lookup(p)?,
            None => book.get(e.key)?.into_iter().find(|x| x.pos.is_none()),
        };
        match &old {
            Some(o) => {
                let mut merged = o.clone();
                merged.merge(e.clone());
                view.pairs += (merged.moves.len() - o.moves.len()) as u64;
            }
            None => {
                view.pairs += e.moves.len() as u64;
                if e.pos.is_some() {
                    view.positions += 1;
                } else {
                    view.key_only += 1;
                }
                if prev_key == Some(e.key) || !book.get(e.key)?.is_empty() {
                    view.collisions += 1;
                }
            }
        }
        prev_key = Some(e.key);
        w.push(e)?;
    }
    w.set_view(view)?;
    w.finish()?;
    if book.segments().len() + 1 > MAX_SEGMENTS {
        let after = Book::open(book.path(), book.codec_arc())?;
        return fold_segments(&after, MAX_SEGMENTS / 2, opts);
    }
    Ok(0)
}

/// Merges the smallest delta segments of `book` into one so that at most `keep` remain
/// (nothing if there are already that few); returns how many were merged. The content, the
/// counters and the import records are unchanged; only the files are. The caller holds the
/// writer lock.
pub(crate) fn fold_segments(book: &Book, keep: usize, opts: &WriterOptions) -> Result<usize> {
    let segs = book.segments();
    if segs.len() <= keep.max(1) {
        return Ok(0);
    }
    let merge_count = segs.len() - keep.max(1) + 1;
    let mut by_size: Vec<&Arc<BookFile>> = segs.iter().collect();
    by_size.sort_by_key(|f| (f.meta().positions + f.meta().key_only, f.generation()));
    let chosen: Vec<Arc<BookFile>> = by_size[..merge_count]
        .iter()
        .map(|f| (*f).clone())
        .collect();
    let kept: Vec<u64> = segs
        .iter()
        .map(|f| f.generation())
        .filter(|g| !chosen.iter().any(|c| c.generation() == *g))
        .collect();
    let mut w = next_segment(book, kept, book.codec_arc(), opts)?;
    let reuse = book.compression();
    if let Some(c) = &reuse {
        w.reuse_compression(c.clone())?;
    }
    w.carry_over_files(&chosen)?;
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
        let after = Book::open(book.path(), book.codec_arc())?;
        fold_segments(&after, MAX_SEGMENTS / 2, opts)?;
    }
    Ok(())
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

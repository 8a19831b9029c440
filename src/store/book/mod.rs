//! The book: a base file and delta segments, each a redb database with a `meta` table and a
//! `blocks` table (first key of a block → block), named by a manifest. See docs/FORMAT.md.
//!
//! One concept per file: [`schema`] (tables and meta keys), [`reader`] ([`BookFile`], one
//! file), [`view`] ([`Book`], the files merged; [`LiveBook`]), [`live`] (manifest, file names,
//! recovery), [`identity`] (which file a name holds), [`fold`] (publishing delta segments and the folding policy), [`cache`] (opened
//! blocks, decompressors), [`iter`] (key-order iteration), [`delta`] (the delta tier of older
//! versions), [`writer`] ([`BookWriter`]), [`options`] ([`WriterOptions`]), [`seal`] (sealing threads), [`train`] (model and
//! dictionary).

mod cache;
mod delta;
mod evals;
mod factcache;
mod factspill;
mod filter;
mod fold;
mod gamecells;
mod games;
mod gamestore;
mod identity;
mod idspill;
mod iter;
mod keptgames;
mod live;
mod lookups;
mod open;
mod options;
mod overlap;
mod reader;
mod refchunk;
mod refs;
mod reftap;
mod refzip;
mod schema;
mod seal;
mod shapelog;
mod train;
mod view;
mod writer;

pub use cache::CacheSizes;
pub(crate) use cache::*;
pub use evals::{EvalIter, PositionEvals};
#[doc(hidden)]
pub use filter::FilterIndex;
pub(crate) use filter::{PARTITION_KEYS, load_partition};
pub(crate) use fold::keep_game_cells;
pub(crate) use fold::*;
pub use fold::{
    BASE_SHARE_DIVISOR, MAX_SEGMENTS, MERGE_CAP_DIVISOR, TIER_RATIO, rewrites_base,
    segments_to_merge,
};
pub use games::{GameStream, merge_game_streams};
pub(crate) use identity::FileId;
pub(crate) use iter::FOLD_WINDOW_PER_THREAD;
pub use keptgames::{ChosenRef, FileChoice, GamesQuestion, KeptGames};
pub use live::Manifest;
pub(crate) use live::{
    Publication, current_generation, lock_for_writing, missing_base, publish, segment_path,
    unknown_segments_problem,
};
pub(crate) use lookups::lookup_threads;
pub(crate) use open::looks_like_damaged_book;
pub use options::WriterOptions;
pub use overlap::{SharedFingerprints, shared_game_fingerprints, shared_game_ids};
pub use reader::*;
pub use refs::{Fact, FactReader, GameTableBytes};
pub use schema::*;
pub(crate) use shapelog::{LogKind, LoggedShapes, ShapeLog};
pub use view::*;
pub use writer::*;

use crate::store::entry::{Entry, MergeIter};
use crate::store::error::{Corruption, Error, Result};

thread_local! {
    /// How many [`shield`] calls the current thread is inside.
    static SHIELDED: std::cell::Cell<u32> = const { std::cell::Cell::new(0) };
}

/// Whether the current thread is inside [`shield`]: a panic hook asks this to tell a redb
/// panic on a damaged file (which `shield` turns into a corruption error) from a bug.
pub fn in_shield() -> bool {
    SHIELDED.with(|d| d.get() > 0)
}

/// Runs redb calls so that a panic inside redb on a damaged file (it has `unreachable!()`s on
/// unknown page types) becomes a corruption error instead of a crash.
pub(crate) fn shield<T>(what: &str, f: impl FnOnce() -> Result<T>) -> Result<T> {
    struct Depth;
    impl Drop for Depth {
        fn drop(&mut self) {
            SHIELDED.with(|d| d.set(d.get().saturating_sub(1)));
        }
    }
    SHIELDED.with(|d| d.set(d.get() + 1));
    let depth = Depth;
    let res = std::panic::catch_unwind(std::panic::AssertUnwindSafe(f));
    drop(depth);
    match res {
        Ok(r) => r,
        Err(p) => {
            let msg = p
                .downcast_ref::<&str>()
                .map(|s| s.to_string())
                .or_else(|| p.downcast_ref::<String>().cloned())
                .unwrap_or_else(|| "unknown failure".into());
            Err(Error::Corrupt(Corruption::Storage(format!(
                "redb failed while {what} ({msg}); the file is damaged"
            ))))
        }
    }
}

/// A boxed stream of entries in (key, position) order.
pub(crate) type EntryStream<'a> = Box<dyn Iterator<Item = Result<Entry>> + 'a>;
/// The merged view of a book's files (each its blocks and, before version 3, delta tier).
pub(crate) type EntryIter<'a> = MergeIter<EntryStream<'a>, Error>;

//! The book file's tables and meta keys: what a book holds and where (docs/FORMAT.md).

use redb::TableDefinition;
use serde::{Deserialize, Serialize};

pub(crate) const META: TableDefinition<&str, &[u8]> = TableDefinition::new("meta");
pub(crate) const BLOCKS: TableDefinition<u64, &[u8]> = TableDefinition::new("blocks");
/// The delta tier of format versions 1 and 2 (read only by `bookdb migrate`): (key, packed
/// position; empty for key-only) → crc32 + move records. Version 3 never writes it.
pub(crate) const DELTA: TableDefinition<(u64, &[u8]), &[u8]> = TableDefinition::new("delta");
/// What was imported: input fingerprint → JSON record.
pub(crate) const IMPORTS: TableDefinition<&str, &[u8]> = TableDefinition::new("imports");
/// Fingerprints of the games deduping imports counted (those that store games, or use
/// `--dedupe`: docs/FORMAT.md §4.6); later deduping imports skip games found here. Absent in
/// books only ever imported with `--no-games` and without `--dedupe`.
pub(crate) const GAMES: TableDefinition<u128, ()> = TableDefinition::new("games");
/// Engine evaluations (format version 5, docs/FORMAT.md §13): (key, packed position) → the
/// kept results ([`crate::store::eval::encode`]). Absent in files without evaluations.
pub(crate) const EVALS: TableDefinition<(u64, &[u8]), &[u8]> = TableDefinition::new("evals");
/// The key filter's partitions (docs/FORMAT.md §4.7): number → [`crate::store::filter::KeyFilter`]
/// bytes. Absent in files written before it (they are probed without a filter).
pub(crate) const KEY_FILTER: TableDefinition<u32, &[u8]> = TableDefinition::new("key_filter");

/// The game store's blocks (formats 6–8, read to migrate; docs/FORMAT.md §15): (the number of the block's first
/// game, chunk) → the chunk's bytes: a game block ([`crate::store::gameblock`]) cut into
/// chunks of at most a page (a value of many pages would take the next power of two of them).
/// Numbers are dense from 0 in each file, in (date, id) order. Absent in files without games.
pub(crate) const GAME_BLOCKS: TableDefinition<(u32, u16), &[u8]> =
    TableDefinition::new("game_blocks");
/// The game store's block stream (format 9, docs/FORMAT.md §15.1): chunk number → the
/// chunk: every game block of the file back to back in number order, cut into chunks of
/// [`super::gamestore::STREAM_CHUNK`] bytes (the last shorter), so that no page is left part
/// empty at the end of each block. Replaces `game_blocks`.
pub(crate) const GAME_CHUNKS: TableDefinition<u32, &[u8]> = TableDefinition::new("game_chunks");
/// Where each block of the stream is (format 9): its first game number → (offset in the stream,
/// length).
pub(crate) const GAME_DIR: TableDefinition<u32, (u64, u32)> = TableDefinition::new("game_dir");
/// The game store's id index (format 9, docs/FORMAT.md §15.5): the first id of a chunk →
/// the chunk of (id, number) rows ([`crate::store::idchunk`]). Replaces `game_ids`.
pub(crate) const GAME_ID_INDEX: TableDefinition<u64, &[u8]> = TableDefinition::new("game_id_index");
/// The game store's id index (formats 6–8): (game id, game number) → nothing; every stored game
/// has exactly one row. Absent with `game_blocks`.
pub(crate) const GAME_IDS: TableDefinition<(u64, u32), ()> = TableDefinition::new("game_ids");
/// The game references (format 7, docs/FORMAT.md §15.3): the key of a block's first position
/// → a reference block ([`crate::store::refblock`]): per position and move, the numbers of the
/// games its cells name. Derived from the file's game store; present with it.
pub(crate) const GAME_REFS: TableDefinition<u64, &[u8]> = TableDefinition::new("game_refs");
/// Each stored game's cell and strength (format 7): the first game number of a chunk (a
/// multiple of [`crate::store::refblock::FACTS_PER_CHUNK`]) → the chunk. Present with
/// `game_refs`.
pub(crate) const GAME_FACTS: TableDefinition<u32, &[u8]> = TableDefinition::new("game_facts");

pub(crate) const MAGIC: &[u8] = b"bookdb";
/// Book format version written by this build. See migrations/README.md.
pub(crate) const FORMAT_VERSION: u32 = 11;
/// Oldest format version `bookdb migrate` converts (migrations/README.md).
pub(crate) const OLDEST_MIGRATABLE: u32 = 1;

pub(crate) const META_MAGIC: &str = "magic";
pub(crate) const META_VERSION: &str = "format_version";
pub(crate) const META_CODEC: &str = "codec";
pub(crate) const META_COUNTERS: &str = "counters";
/// The generation a file was published under (u64 LE; format version 3, docs/FORMAT.md §10).
pub(crate) const META_GENERATION: &str = "generation";
/// In a delta segment: the whole book's counters after it (JSON [`BookMeta`]; absent in a base).
pub(crate) const META_VIEW: &str = "view";
/// The facets the book keeps (format version 4, docs/FORMAT.md §12): ASCII comma list of
/// `month`, `speed`, `rating`, `mode`; empty for none.
pub(crate) const META_FACETS: &str = "facets";
/// Games counted by speed, rating group and year (JSON [`crate::store::facet::FacetGames`];
/// absent when none were counted with facets).
pub(crate) const META_FACET_GAMES: &str = "facet_games";
/// The rows of the file's `evals` table (u64 LE; format 5, absent when it has none): a
/// full read of the table that finds another number found damage (docs/FORMAT.md §13).
pub(crate) const META_EVALS: &str = "evals";
/// The key filter's index (docs/FORMAT.md §4.7: keys, last key, each partition's first key);
/// absent with the `key_filter` table.
pub(crate) const META_KEY_FILTER: &str = "key_filter";
/// The games of the file's game store (u64 LE; format 6, absent when it has none).
pub(crate) const META_GAMES_STORED: &str = "games_stored";
/// Present (`1`; format 11) when the file's store holds every game it counts and its moves of
/// few games keep their cells as their games' (docs/FORMAT.md §12.5): a rewrite of such files
/// alone, with the same facets, may keep them so too.
pub(crate) const META_GAME_CELLS: &str = "game_cells";
pub(crate) const META_DICT_PREFIX: &str = "dict/";
pub(crate) const META_MODEL_PREFIX: &str = "model/";

/// Counters kept in the meta table (JSON), maintained by every writer and checked by `verify`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct BookMeta {
    /// Games whose moves were counted into this book.
    pub games: u64,
    /// Entries that hold a position.
    pub positions: u64,
    /// Entries that hold only a key, no position (e.g. moves imported from a Polyglot book whose
    /// position could not be reconstructed).
    pub key_only: u64,
    /// (position, move) pairs over all entries.
    pub pairs: u64,
    /// Entries that share their key with an earlier entry holding a different position.
    pub(crate) collisions: u64,
    /// Number of value blocks.
    pub blocks: u64,
    /// Raw (uncompressed) payload bytes over all blocks.
    pub(crate) raw_bytes: u64,
    /// Stored block bytes (headers + compressed payloads).
    pub(crate) stored_bytes: u64,
    /// Entries in the delta tier not yet folded into the base: in a version-3 book, the entries
    /// of its delta segments (counted when the book is opened, 0 in each file's own counters);
    /// in older books, the entries of the in-file delta tier.
    #[serde(default)]
    pub delta_entries: u64,
}

impl BookMeta {
    /// Whether a rewrite of this book that adds about `added` entries to it keeps the book's
    /// position model and dictionary (its coded positions then pass through unchanged) instead
    /// of training new ones: when the additions are at most half the book, a model trained on
    /// the book still fits its content (the two halves of the large set merged under one
    /// half's model come within 0.4% of a fresh build; docs/PERFORMANCE.md).
    pub fn keeps_model(&self, added: u64) -> bool {
        let n = self.positions + self.key_only;
        n > 0 && added <= n / 2
    }
}

/// A serialized position model and section-A dictionary taken from a book
/// ([`Book::compression`]).
#[derive(Clone, Debug)]
pub struct BookCompression {
    pub model: Vec<u8>,
    pub dictionary: Option<Vec<u8>>,
}

//! [`BookFile`]: one immutable file of a book (its base or a delta segment) opened for
//! reading — open checks, point lookups through redb range lookups and the block cache, import
//! records and game fingerprints.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use redb::{ReadableDatabase, ReadableTable, ReadableTableMetadata};

use super::open::{
    self, FileHeader, Models, check_counters_have_blocks, has_book_traces, not_a_book,
};
use super::*;
use crate::store::block::{self, BlockView};
use crate::store::cells::CellRead;
use crate::store::entry::{Entry, MergeIter};
use crate::store::error::{Corruption, Error, Result, is_damage};
use crate::store::{PositionCodec, PositionModel};

/// An entry of a block: its index in the block and its move codes (`BookFile::shapes_at`).
pub(crate) type IndexedShape = (usize, Vec<u16>);

/// One file of a book (the base or a delta segment, docs/FORMAT.md §10) opened for reading.
/// [`Book`] merges a book's files into the view commands answer from.
#[doc(hidden)]
pub struct BookFile {
    pub(super) path: PathBuf,
    /// Shared with writers that copy this book's `games` table at their end
    /// ([`BookWriter::carry_over`]).
    pub(super) db: Arc<redb::ReadOnlyDatabase>,
    pub(super) codec: Arc<dyn PositionCodec>,
    pub(super) meta: BookMeta,
    pub(super) dicts: HashMap<u16, Arc<Vec<u8>>>,
    pub(super) models: HashMap<u16, Arc<dyn PositionModel>>,
    /// Serialized position models by id (what [`Book::compression`] hands a writer).
    pub(super) model_bytes: HashMap<u16, Arc<Vec<u8>>>,
    pub(super) format_version: u32,
    pub(super) pool: DecompressorPool,
    pub(super) cache: BlockCache,
    /// The `blocks` table, open for the file's life (the file never changes once published).
    pub(super) blocks: Option<redb::ReadOnlyTable<u64, &'static [u8]>>,
    /// The `evals` table (format 5), open for the file's life; `None`: the file has none.
    pub(super) evals: Option<open::EvalTable>,
    /// Its rows as meta `evals` records them (0 when absent).
    pub(super) eval_rows_meta: u64,
    /// The game store's tables (format 6); `None`: the file stores no games.
    pub(super) games: Option<open::GameTables>,
    /// The games the store holds, as meta `games_stored` records them.
    pub(super) games_stored: u64,
    /// Stored games read lately (`BookFile::game_by_number`).
    pub(super) game_cache: std::sync::Mutex<open::GameCache>,
    /// Its store holds every game it counts, and its moves of few games keep their cells as
    /// their games' (meta `game_cells`, format 11).
    pub(super) game_cells: bool,
    /// What its references chose for positions asked lately (`ops::topgames`).
    pub(super) kept_games: super::keptgames::KeptGames,
    /// Game-fact chunks read lately, checked.
    pub(super) fact_cache: super::factcache::FactCache,
    /// The generation this file was published under (0 in books older than version 3).
    pub(super) generation: u64,
    /// In a delta segment: the counters of the whole book as this segment left it.
    pub(super) view: Option<BookMeta>,
    /// Which file redb reads (of the descriptor it was given, not of the name).
    pub(super) id: super::identity::FileId,
    /// The facets this file's counts are split by, and its games by facet (format 4).
    pub(super) facets: crate::store::facet::FacetSet,
    pub(super) facet_games: crate::store::facet::FacetGames,
    /// The key filter (docs/FORMAT.md §4.7) and its table; `None` in files written without.
    pub(super) filter: Option<super::filter::FileFilter>,
    pub(super) filter_table: Option<redb::ReadOnlyTable<u32, &'static [u8]>>,
    /// A writer's tap on this file's references, fed by its next rewrite iteration.
    pub(super) ref_tap: std::sync::Mutex<Option<Arc<super::reftap::RefTap>>>,
}

impl std::fmt::Debug for BookFile {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("BookFile")
            .field("path", &self.path)
            .field("meta", &self.meta)
            .finish()
    }
}

impl BookFile {
    /// Opens one file of a book read-only, checking magic, version (`older`: any from
    /// [`OLDEST_MIGRATABLE`], for `bookdb migrate`) and codec, with both caches (redb's pages,
    /// opened blocks) at `cache_bytes`. Opening reads the meta table only; blocks are read on
    /// demand.
    pub(crate) fn open_file(
        path: &Path,
        codec: Arc<dyn PositionCodec>,
        older: bool,
        caches: CacheSizes,
    ) -> Result<BookFile> {
        let mut f = shield("opening the book", || {
            Self::open_inner(path, codec, older, caches.redb_bytes)
        })
        .map_err(|e| match e {
            // A file that starts like redb's but cannot be opened or read is damaged.
            Error::Db { source, .. } if is_damage(&source) && looks_like_damaged_book(path) => {
                Error::CorruptFile {
                    path: path.to_path_buf(),
                    corruption: Corruption::Storage(format!("redb cannot read it: {source}")),
                }
            }
            other => other.in_file(path),
        })?;
        if caches.block_bytes != f.cache.limit {
            f.set_cache_bytes(caches.block_bytes);
        }
        if let Some(filter) = f.filter.as_mut() {
            filter.set_budget(caches.filter_bytes);
        }
        if caches.fact_bytes != super::factcache::DEFAULT_FACT_BYTES {
            f.fact_cache = super::factcache::FactCache::with_bytes(caches.fact_bytes);
        }
        Ok(f)
    }

    fn open_inner(
        path: &Path,
        codec: Arc<dyn PositionCodec>,
        older: bool,
        redb_cache: usize,
    ) -> Result<BookFile> {
        let (db, id) = open::open_db(path, redb_cache)?;
        let txn = db.begin_read()?;
        let meta_table = txn.open_table(META).map_err(|e| match e {
            // A damaged tree page can hide the table of a book.
            redb::TableError::TableDoesNotExist(_) if has_book_traces(path) => {
                Error::Corrupt(Corruption::Storage(format!(
                    "the meta table is missing from the file's tree ({e})"
                )))
            }
            redb::TableError::TableDoesNotExist(_) => {
                not_a_book(path, format!("no meta table ({e})"))
            }
            other => Error::Corrupt(Corruption::Storage(format!(
                "the meta table cannot be read: {other}"
            ))),
        })?;
        let FileHeader {
            version,
            meta,
            generation,
            view,
            facets,
            facet_games,
        } = open::read_header(path, &meta_table, codec.as_ref(), older)?;
        let Models {
            dicts,
            models,
            model_bytes,
        } = open::read_models(&meta_table, codec.as_ref())?;
        let eval_rows_meta = open::read_eval_count(&meta_table)?;
        let (games, games_stored) = open::open_game_tables(&txn, &meta_table)?;
        let game_cells = meta_table.get(META_GAME_CELLS)?.is_some();
        let filter_index =
            match meta_table.get(META_KEY_FILTER)? {
                Some(v) => Some(super::filter::FilterIndex::decode(v.value()).map_err(
                    |reason| Error::Corrupt(Corruption::Meta(format!("key_filter: {reason}"))),
                )?),
                None => None,
            };
        drop(meta_table);
        let blocks = match txn.open_table(BLOCKS) {
            Ok(t) => Some(t),
            Err(redb::TableError::TableDoesNotExist(_)) => None,
            Err(e) => return Err(e.into()),
        };
        check_counters_have_blocks(&meta, blocks.as_ref(), version)?;
        let evals = match txn.open_table(EVALS) {
            Ok(t) => Some(t),
            Err(redb::TableError::TableDoesNotExist(_)) => None,
            Err(e) => return Err(e.into()),
        };
        let filter_table = match (&filter_index, txn.open_table(KEY_FILTER)) {
            (None, _) => None,
            (Some(_), Ok(t)) => Some(t),
            (Some(_), Err(redb::TableError::TableDoesNotExist(_))) => {
                return Err(Error::Corrupt(Corruption::Meta(
                    "key_filter: the index is in meta but the key_filter table is missing".into(),
                )));
            }
            (Some(_), Err(e)) => return Err(e.into()),
        };
        let filter = filter_index
            .map(|index| super::filter::FileFilter::new(index, super::filter::FILTER_CACHE_BYTES));
        drop(txn);
        Ok(BookFile {
            game_cache: Default::default(),
            kept_games: Default::default(),
            fact_cache: Default::default(),
            path: path.to_path_buf(),
            db: Arc::new(db),
            codec,
            meta,
            pool: DecompressorPool::new(dicts.clone()),
            dicts,
            models,
            model_bytes,
            format_version: version,
            cache: BlockCache::new(DEFAULT_CACHE_BYTES),
            blocks,
            evals,
            eval_rows_meta,
            games,
            games_stored,
            game_cells,
            generation,
            view,
            id,
            facets,
            facet_games,
            filter,
            filter_table,
            ref_tap: Default::default(),
        })
    }

    /// Arms a tap on this file: the next iteration of it from its first block, leaving moves
    /// indexed, feeds it the references of its entries (`reftap`).
    pub(crate) fn arm_ref_tap(&self) -> Arc<super::reftap::RefTap> {
        let tap = Arc::new(super::reftap::RefTap::default());
        *self.ref_tap.lock().unwrap_or_else(|e| e.into_inner()) = Some(tap.clone());
        tap
    }

    /// The tap armed on this file, taken by the iteration that feeds it.
    pub(crate) fn take_ref_tap(&self) -> Option<Arc<super::reftap::RefTap>> {
        self.ref_tap
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .take()
            .filter(|t| t.wanted())
    }

    /// Whether `key` may be in this file: `false` only when its key filter says it is not (a
    /// file without a filter says `true`).
    pub(crate) fn may_hold(&self, key: u64) -> Result<bool> {
        let Some(f) = &self.filter else {
            return Ok(true);
        };
        let probe = f
            .probe(key, |i| self.filter_partition(i))
            .map_err(|e| e.in_file(&self.path))?;
        Ok(probe == super::filter::Probe::Maybe)
    }

    /// Answers kept with this file's cached blocks.
    pub(crate) fn kept_answers(&self) -> usize {
        self.cache.kept_answers().0
    }

    /// Entries kept read with every cell with this file's cached blocks.
    pub(crate) fn kept_every_cells(&self) -> usize {
        self.cache.kept_every_cells()
    }

    /// Bytes of key-filter partitions held.
    pub(crate) fn filter_held_bytes(&self) -> usize {
        self.filter.as_ref().map_or(0, |f| f.held_bytes())
    }

    /// Partition `i` of the key filter as stored (`None`: the row is missing).
    pub(crate) fn filter_partition(&self, i: u32) -> Result<Option<Vec<u8>>> {
        let Some(t) = &self.filter_table else {
            return Ok(None);
        };
        shield("reading the key filter", || {
            Ok(t.get(i)?.map(|v| v.value().to_vec()))
        })
    }

    /// The key filter's index, if the file has one (for `verify`).
    pub(crate) fn filter_index(&self) -> Option<&super::filter::FilterIndex> {
        self.filter.as_ref().map(|f| &f.index)
    }

    /// The path this file was opened at (a writer may have given the name to another file
    /// since).
    #[doc(hidden)]
    pub fn path(&self) -> &Path {
        &self.path
    }
    /// Whether its store holds every game it counts and its moves of few games keep their
    /// cells as their games' (docs/FORMAT.md §12.5).
    pub fn keeps_game_cells(&self) -> bool {
        self.game_cells
    }
    /// What its references chose for positions asked lately (`ops::topgames`).
    pub fn kept_games(&self) -> &super::keptgames::KeptGames {
        &self.kept_games
    }
    /// The facets this file's counts are split by.
    pub fn facets(&self) -> crate::store::facet::FacetSet {
        self.facets
    }
    /// This file's own counters.
    pub fn meta(&self) -> &BookMeta {
        &self.meta
    }
    /// The generation this file was published under.
    pub fn generation(&self) -> u64 {
        self.generation
    }
    /// In a delta segment, the whole book's counters as it left them; `None` in a base.
    pub(crate) fn view_counters(&self) -> Option<&BookMeta> {
        self.view.as_ref()
    }

    /// The format version the book was written with ([`FORMAT_VERSION`], or an older one for
    /// a book opened by [`Book::open_for_migration`]).
    pub(crate) fn format_version(&self) -> u32 {
        self.format_version
    }

    /// The position model and section-A dictionary this book's blocks were written with, for
    /// a writer to reuse ([`BookWriter::reuse_compression`]); `None` unless the book has
    /// exactly one trained model (id 1) and at most one dictionary (id 1), as every book
    /// [`BookWriter`] writes does.
    pub fn compression(&self) -> Option<BookCompression> {
        Some(BookCompression {
            model: self.writer_model()?.to_vec(),
            dictionary: self.dicts.get(&1).map(|d| d.to_vec()),
        })
    }

    /// The serialized model of [`Book::compression`], without copying it.
    pub(super) fn writer_model(&self) -> Option<&[u8]> {
        let model = self.model_bytes.get(&1)?;
        (self.model_bytes.len() == 1 && self.dicts.keys().all(|&id| id == 1))
            .then_some(model.as_slice())
    }
    #[doc(hidden)]
    pub fn codec(&self) -> &dyn PositionCodec {
        &*self.codec
    }
    pub(crate) fn dictionaries(&self) -> &HashMap<u16, Arc<Vec<u8>>> {
        &self.dicts
    }

    #[doc(hidden)]
    pub fn file_bytes(&self) -> u64 {
        std::fs::metadata(&self.path).map(|m| m.len()).unwrap_or(0)
    }

    pub(super) fn model(&self, block_key: u64, id: u16) -> Result<&dyn PositionModel, Corruption> {
        self.models
            .get(&id)
            .map(|m| &**m)
            .ok_or_else(|| Corruption::Header {
                block_key,
                reason: format!("position model {id} missing from the meta table"),
            })
    }

    /// The block that would hold `key`: (first key, stored bytes).
    fn with_block<T>(
        &self,
        key: u64,
        f: impl FnOnce(u64, &[u8]) -> Result<T>,
    ) -> Result<Option<T>> {
        shield("reading a block", || self.with_block_inner(key, f))
            .map_err(|e| e.in_file(&self.path))
    }

    fn with_block_inner<T>(
        &self,
        key: u64,
        f: impl FnOnce(u64, &[u8]) -> Result<T>,
    ) -> Result<Option<T>> {
        let txn = self.db.begin_read()?;
        let table = match txn.open_table(BLOCKS) {
            Ok(t) => t,
            Err(redb::TableError::TableDoesNotExist(_)) => return Ok(None),
            Err(e) => return Err(e.into()),
        };
        let Some(item) = table.range(..=key)?.next_back() else {
            return Ok(None);
        };
        let (k, v) = item?;
        f(k.value(), v.value()).map(Some)
    }

    /// All entries of this file with this key (more than one only on a key collision), blocks
    /// and (in books older than version 3) delta tier merged, keeping of each move's cells what
    /// `read` asks for.
    pub(crate) fn get_read(&self, key: u64, read: CellRead) -> Result<Vec<Entry>> {
        if !self.may_hold(key)? {
            return Ok(Vec::new());
        }
        let blocks = self.get_blocks_read(key, read)?;
        if self.meta.delta_entries == 0 {
            return Ok(blocks);
        }
        let delta = self.delta_range(key)?;
        if delta.is_empty() {
            return Ok(blocks);
        }
        MergeIter::new(vec![
            blocks.into_iter().map(Ok::<_, Error>),
            delta.into_iter().map(Ok::<_, Error>),
        ])
        .collect()
    }

    /// This file's entry holding exactly this encoded position, blocks and (in books older than
    /// version 3) delta tier merged, keeping of each move's cells what `read` asks for (entries
    /// of the delta tier come with all their cells).
    ///
    /// The caller computes the key (once for all the files of a book).
    pub(crate) fn lookup_read_keyed(
        &self,
        pos: &[u8],
        key: u64,
        read: CellRead,
    ) -> Result<Option<Entry>> {
        if !self.may_hold(key)? {
            return Ok(None);
        }
        let from_blocks = self
            .lookup_blocks_inner(pos, key, read)
            .map_err(|e| e.in_file(&self.path))?;
        if self.meta.delta_entries == 0 {
            return Ok(from_blocks);
        }
        match (from_blocks, self.delta_get(key, Some(pos))?) {
            (Some(mut a), Some(b)) => {
                a.merge(b);
                Ok(Some(a))
            }
            (a, b) => Ok(a.or(b)),
        }
    }

    /// Entries with this key in the blocks only, keeping of each move's cells what `read` asks
    /// for.
    pub(crate) fn get_blocks_read(&self, key: u64, read: CellRead) -> Result<Vec<Entry>> {
        self.get_blocks_inner(key, read)
            .map_err(|e| e.in_file(&self.path))
    }

    fn get_blocks_inner(&self, key: u64, read: CellRead) -> Result<Vec<Entry>> {
        let Some((block_key, blk)) = self.cached_block(key)? else {
            return Ok(Vec::new());
        };
        let games = self.game_cells_cached(block_key, &blk);
        let view = blk.view(block_key).with_games(&games);
        let model = self.model(block_key, blk.model_id)?;
        Ok(view.find_read(key, &*self.codec, model, read)?)
    }

    /// The block that would hold `key` (its first key) and its entries with this key, each
    /// with its index in the block and its move codes: what the block's reference chunk is
    /// read by.
    pub(crate) fn shapes_at(&self, key: u64) -> Result<Option<(u64, Vec<IndexedShape>)>> {
        let found = (|| -> Result<_> {
            let Some((block_key, blk)) = self.cached_block(key)? else {
                return Ok(None);
            };
            let view = blk.view(block_key);
            let model = self.model(block_key, blk.model_id)?;
            Ok(Some((
                block_key,
                view.find_shapes(key, &*self.codec, model)?,
            )))
        })();
        found.map_err(|e| e.in_file(&self.path))
    }

    /// The limit of the cache of opened blocks, bytes.
    pub(crate) fn block_cache_limit(&self) -> usize {
        self.cache.limit
    }

    /// Sets the size of the cache of opened blocks (0 disables it).
    pub(crate) fn set_cache_bytes(&mut self, bytes: usize) {
        self.cache.limit = bytes;
        self.cache.clear();
    }

    /// The opened block that would hold `key`: from the cache when a cached block's key range
    /// holds it, otherwise found with one redb range lookup (the greatest first key not above
    /// `key`), read, verified and cached. Nothing is read at open: the cost of a lookup does
    /// not depend on the number of blocks beyond redb's B-tree depth.
    fn cached_block(&self, key: u64) -> Result<Option<(u64, Arc<CachedBlock>)>> {
        if let Some(hit) = self.cache.covering(key) {
            return Ok(Some(hit));
        }
        let Some(table) = &self.blocks else {
            return Ok(None);
        };
        shield("reading a block", || {
            let Some(item) = table.range(..=key)?.next_back() else {
                return Ok(None);
            };
            let (k, v) = item?;
            let block_key = k.value();
            if let Some(b) = self.cache.get(block_key) {
                return Ok(Some((block_key, b)));
            }
            let blk = block::open_block(block_key, v.value(), &self.pool)?;
            let view = BlockView::parse(block_key, &blk)?;
            let ranges = view.column_ranges(&blk.a);
            // The block's own last key bounds what the cache answers for: asking redb where the
            // next block starts would read that block's page too. Not computed when the cache
            // is off: the block is not kept.
            let last_key = if self.cache.limit == 0 {
                block_key
            } else {
                view.last_key(&*self.codec, self.model(block_key, blk.header.model_id)?)?
            };
            let b = Arc::new(CachedBlock::new(
                blk.header.count as usize,
                blk.header.model_id,
                blk.a,
                blk.b.to_vec(),
                ranges,
                last_key,
            ));
            self.cache.put(block_key, b.clone());
            Ok(Some((block_key, b)))
        })
    }

    /// The entry holding exactly this encoded position in the blocks (decodes only that entry).
    fn lookup_blocks_inner(&self, pos: &[u8], key: u64, read: CellRead) -> Result<Option<Entry>> {
        let Some((block_key, blk)) = self.cached_block(key)? else {
            return Ok(None);
        };
        let games = self.game_cells_cached(block_key, &blk);
        let view = blk.view(block_key).with_games(&games);
        let model = self.model(block_key, blk.model_id)?;
        let mut coded = Vec::with_capacity(32);
        model.encode(pos, &mut coded)?;
        // An entry with many cells keeps its answers with its cached block, and itself read
        // with every cell once asked a second filter, or at its first filter or history when
        // its block keeps 16 KiB of its cells (docs/PERFORMANCE.md, "Kept answers").
        if let Some(e) = self.cache.kept_answer(block_key, &blk, &coded, read) {
            return Ok(Some(e));
        }
        let walk = |kept| self.cache.walk_for(&blk, &coded, read, kept);
        let found = view.find_coded_sized(key, &coded, Some(pos), &*self.codec, model, walk)?;
        let Some((e, cell_bytes, walked)) = found else {
            return Ok(None);
        };
        let e = self
            .cache
            .keep_read(block_key, &blk, &coded, (read, walked), e, cell_bytes);
        Ok(Some(e))
    }

    /// As [`BookFile::lookup_blocks`] without the block cache: reads through redb each time.
    #[doc(hidden)]
    pub fn lookup_blocks_uncached(&self, pos: &[u8]) -> Result<Option<Entry>> {
        let key = self.codec.key(pos)?;
        Ok(self
            .with_block(key, |block_key, bytes| {
                let blk = block::open_block(block_key, bytes, &self.pool)?;
                let games = self.game_cells();
                let view = BlockView::parse(block_key, &blk)?.with_games(&games);
                let model = self.model(block_key, blk.header.model_id)?;
                let mut coded = Vec::with_capacity(32);
                model.encode(pos, &mut coded)?;
                Ok(view.find_coded_known(
                    key,
                    &coded,
                    Some(pos),
                    &*self.codec,
                    model,
                    CellRead::All,
                )?)
            })?
            .flatten())
    }

    /// How many game fingerprints `--dedupe` imports recorded in this book.
    #[doc(hidden)]
    pub fn game_fingerprint_count(&self) -> Result<u64> {
        shield("counting game fingerprints", || {
            let txn = self.db.begin_read()?;
            match txn.open_table(GAMES) {
                Ok(t) => Ok(t.len()?),
                Err(redb::TableError::TableDoesNotExist(_)) => Ok(0),
                Err(e) => Err(e.into()),
            }
        })
    }

    /// This file's `games` table (game fingerprints of `--dedupe` imports), if it has one.
    pub(super) fn games_table(&self) -> Result<Option<redb::ReadOnlyTable<u128, ()>>> {
        shield("opening game fingerprints", || {
            let txn = self.db.begin_read()?;
            match txn.open_table(GAMES) {
                Ok(t) => Ok(Some(t)),
                Err(redb::TableError::TableDoesNotExist(_)) => Ok(None),
                Err(e) => Err(e.into()),
            }
        })
    }

    /// The import records: input fingerprint → JSON.
    pub fn imports(&self) -> Result<Vec<(String, Vec<u8>)>> {
        shield("reading import records", || self.imports_inner()).map_err(|e| e.in_file(&self.path))
    }

    fn imports_inner(&self) -> Result<Vec<(String, Vec<u8>)>> {
        let txn = self.db.begin_read()?;
        let table = match txn.open_table(IMPORTS) {
            Ok(t) => t,
            Err(redb::TableError::TableDoesNotExist(_)) => return Ok(Vec::new()),
            Err(e) => return Err(e.into()),
        };
        let mut out = Vec::new();
        for item in table.iter()? {
            let (k, v) = item?;
            out.push((k.value().to_string(), v.value().to_vec()));
        }
        Ok(out)
    }

    /// The position model a block of this file names (for `verify`, which decodes
    /// positions itself).
    #[doc(hidden)]
    pub fn block_model(&self, block_key: u64, id: u16) -> Result<&dyn PositionModel, Corruption> {
        self.model(block_key, id)
    }

    /// Runs redb's own integrity check (`Database::check_integrity`: every page's checksum,
    /// the B-trees' structure, the allocator state) on a private copy of this file in
    /// `scratch`, because the check needs a writable handle, may repair what it checks, and
    /// cannot take the file while readers hold it: the book itself is never opened for
    /// writing. The copy is removed afterwards. `Ok(None)`: the check passed; `Ok(Some(what))`:
    /// redb found the file damaged; `Err`: the copy could not be made (I/O).
    #[doc(hidden)]
    pub fn redb_integrity(&self, scratch: &Path) -> Result<Option<String>> {
        self.redb_integrity_with(scratch, CHECK_COPY_CACHE_BYTES)
    }

    /// [`BookFile::redb_integrity`] with redb's cache of the private copy at `cache_bytes`
    /// (`verify --memory` sizes it).
    #[doc(hidden)]
    pub fn redb_integrity_with(
        &self,
        scratch: &Path,
        cache_bytes: usize,
    ) -> Result<Option<String>> {
        use std::sync::atomic::{AtomicBool, Ordering};
        static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let dir = scratch.join(format!(
            ".bookdb-verify-{}-{}",
            std::process::id(),
            NEXT.fetch_add(1, Ordering::Relaxed)
        ));
        // Only a failure to write the copy is the scratch directory's fault (TMPDIR).
        let ctx = |e| {
            Error::io(
                format!(
                    "copying {} to {} for redb's integrity check (set TMPDIR to a directory with room for it, or pass --no-redb-check)",
                    self.path.display(),
                    dir.display()
                ),
                e,
            )
        };
        let mut source = super::identity::open_again(&self.path, &self.id)?;
        std::fs::create_dir(&dir).map_err(ctx)?;
        let copy = dir.join("copy.redb");
        let result = (|| {
            let mut out = std::fs::File::create(&copy).map_err(ctx)?;
            std::io::copy(&mut source, &mut out).map_err(|e| {
                let scratch_side = [libc::ENOSPC, libc::EDQUOT, libc::EROFS, libc::EACCES];
                if e.raw_os_error().is_some_and(|c| scratch_side.contains(&c)) {
                    ctx(e)
                } else {
                    Error::io(
                        format!("reading {} for redb's integrity check", self.path.display()),
                        e,
                    )
                }
            })?;
            drop(out);
            let mut perm = std::fs::metadata(&copy).map_err(ctx)?.permissions();
            std::os::unix::fs::PermissionsExt::set_mode(&mut perm, 0o600);
            std::fs::set_permissions(&copy, perm).map_err(ctx)?;
            let repaired = std::sync::Arc::new(AtomicBool::new(false));
            let flag = repaired.clone();
            shield("checking the file's redb integrity", || {
                let mut db = match redb::Builder::new()
                    .set_cache_size(cache_bytes)
                    .set_repair_callback(move |_| flag.store(true, Ordering::Relaxed))
                    .open(&copy)
                {
                    Ok(db) => db,
                    Err(e) => return Ok(Some(format!("redb cannot open a copy of it: {e}"))),
                };
                if repaired.load(Ordering::Relaxed) {
                    return Ok(Some(
                        "redb found it not closed cleanly and had to repair a copy (a published \
                         book file is always closed cleanly: its header or pages are damaged)"
                            .into(),
                    ));
                }
                Ok(match db.check_integrity() {
                    Ok(true) => None,
                    Ok(false) => Some(
                        "redb's integrity check found damage (and repaired the private copy; \
                         the book is untouched)"
                            .into(),
                    ),
                    Err(e) => Some(format!("redb's integrity check failed: {e}")),
                })
            })
        })();
        let _ = std::fs::remove_dir_all(&dir);
        match result {
            Err(Error::Corrupt(c)) => Ok(Some(c.to_string())),
            other => other,
        }
    }

    /// Opens one stored block (checksum and decompression only), for tools.
    pub fn open_block<'a>(
        &self,
        block_key: u64,
        bytes: &'a [u8],
    ) -> Result<block::OpenBlock<'a>, Corruption> {
        block::open_block(block_key, bytes, &self.pool)
    }
}

/// Looks game fingerprints up in the `games` tables of a book's files (a read snapshot).
#[doc(hidden)]
pub struct GameIndex {
    /// Each file's fingerprint table, with the file's path (for messages).
    pub(super) tables: Vec<(std::path::PathBuf, redb::ReadOnlyTable<u128, ()>)>,
}

impl GameIndex {
    #[doc(hidden)]
    pub fn contains(&self, fingerprint: u128) -> Result<bool> {
        for (path, t) in &self.tables {
            let found = shield("looking up a game fingerprint", || {
                Ok(t.get(fingerprint)?.is_some())
            })
            .map_err(|e| e.in_file(path))?;
            if found {
                return Ok(true);
            }
        }
        Ok(false)
    }
}

/// The generation recorded in the book file at `path`, read from its meta table alone; `None`
/// when there is no such file or it is not a book (a writer about to replace it needs only
/// this).
pub(crate) fn read_generation(path: &Path) -> Option<u64> {
    if !path.exists() {
        return None;
    }
    shield("reading the generation", || {
        let db = redb::Builder::new()
            .set_cache_size(1 << 20)
            .open_read_only(path)
            .map_err(|e| Error::Internal(e.to_string()))?;
        let txn = db.begin_read()?;
        let t = txn.open_table(META)?;
        let g = t
            .get(META_GENERATION)?
            .and_then(|v| <[u8; 8]>::try_from(v.value()).ok())
            .map(u64::from_le_bytes);
        Ok(Some(g.unwrap_or(0)))
    })
    .ok()
    .flatten()
}

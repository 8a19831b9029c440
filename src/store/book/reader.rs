//! [`Book`]: a book opened for reading — open checks, point lookups through the block index
//! and cache, import records and game fingerprints.

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use redb::{ReadableDatabase, ReadableTable, ReadableTableMetadata};

use super::*;
use crate::store::block::{self, BlockView};
use crate::store::entry::{Entry, MergeIter};
use crate::store::error::{Corruption, Error, Result};
use crate::store::{IdentityModel, PositionCodec, PositionModel};

fn not_a_book(path: &Path, reason: impl Into<String>) -> Error {
    Error::NotABook {
        path: path.to_path_buf(),
        reason: reason.into(),
    }
}

/// A book opened for reading.
pub struct Book {
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
    /// First key of every block, sorted; read at the first lookup ([`Book::block_index`]).
    pub(super) index: std::sync::OnceLock<Vec<u64>>,
    pub(super) cache: BlockCache,
}

impl std::fmt::Debug for Book {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Book")
            .field("path", &self.path)
            .field("meta", &self.meta)
            .finish()
    }
}

impl Book {
    /// Opens an existing book read-only, checking magic, version and codec. Opening reads the
    /// meta table only; blocks are read on demand.
    ///
    /// ```
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use bookdb::chess::{PosState, encode_move, parse_move};
    /// use bookdb::store::{Book, BookWriter, Entry, MoveRec, WriterOptions};
    ///
    /// let dir = tempfile::tempdir()?;
    /// let path = dir.path().join("tiny.book");
    /// // A book of one position: the start position, where 1.e4 scored +3 =1 -2.
    /// let start = shakmaty::Chess::default();
    /// let state = PosState::from_chess(&start);
    /// let (packed, _bits) = state.pack();
    /// let e4 = encode_move(&parse_move(&start, "e4")?);
    /// let mut w = BookWriter::create(&path, bookdb::chess_codec(), WriterOptions::default())?;
    /// w.push(Entry {
    ///     key: state.key(),
    ///     pos: Some(packed.clone()),
    ///     moves: vec![MoveRec { mv: e4, white: 3, draws: 1, black: 2, ..Default::default() }],
    ///     coded: None,
    /// })?;
    /// w.finish()?;
    ///
    /// let book = Book::open(&path, bookdb::chess_codec())?;
    /// assert_eq!(book.meta().positions, 1);
    /// # Ok(()) }
    /// ```
    pub fn open(path: &Path, codec: Arc<dyn PositionCodec>) -> Result<Book> {
        shield("opening the book", || {
            Self::open_inner(path, codec, false, READER_CACHE_BYTES)
        })
    }

    /// [`Book::open`] with both caches (redb's pages, opened blocks) at `cache_bytes` each
    /// instead of 64 MiB: for an import's lookups, which must stay within its memory budget.
    pub(crate) fn open_with_cache(
        path: &Path,
        codec: Arc<dyn PositionCodec>,
        cache_bytes: usize,
    ) -> Result<Book> {
        let mut b = shield("opening the book", || {
            Self::open_inner(path, codec, false, cache_bytes)
        })?;
        b.set_cache_bytes(cache_bytes);
        Ok(b)
    }

    /// Opens a book of format version [`OLDEST_MIGRATABLE`] up to the current one, for
    /// `bookdb migrate` only: versions 1 and 2 differ only in the optional `games` table
    /// (migrations/v1-to-v2.md), so the same reader serves both.
    pub(crate) fn open_for_migration(path: &Path, codec: Arc<dyn PositionCodec>) -> Result<Book> {
        shield("opening the book", || {
            Self::open_inner(path, codec, true, READER_CACHE_BYTES)
        })
    }

    fn open_inner(
        path: &Path,
        codec: Arc<dyn PositionCodec>,
        older: bool,
        redb_cache: usize,
    ) -> Result<Book> {
        if !path.exists() {
            return Err(Error::BookNotFound {
                path: path.to_path_buf(),
            });
        }
        let open = || {
            redb::Builder::new()
                .set_cache_size(redb_cache)
                .open_read_only(path)
        };
        let db = match open() {
            // The last writer was killed mid-transaction: redb must replay its recovery, which
            // needs a writable handle. Recovery keeps the last committed transaction only.
            Err(redb::DatabaseError::RepairAborted) => {
                match redb::Database::open(path) {
                    Ok(db) => drop(db),
                    Err(redb::DatabaseError::DatabaseAlreadyOpen) => {
                        return Err(Error::Busy {
                            path: path.to_path_buf(),
                            what: "the book is being written by another process; try again when it is done".into(),
                        });
                    }
                    Err(e) => return Err(not_a_book(path, format!("recovery failed: {e}"))),
                }
                open()
            }
            other => other,
        }
        .map_err(|e| match e {
                redb::DatabaseError::Storage(redb::StorageError::Io(io))
                    if io.kind() != std::io::ErrorKind::InvalidData
                        && io.kind() != std::io::ErrorKind::UnexpectedEof =>
                {
                    Error::io(format!("opening {}", path.display()), io)
                }
                other => not_a_book(path, format!("not a redb database: {other}")),
            })?;
        let txn = db.begin_read()?;
        let meta_table = txn
            .open_table(META)
            .map_err(|e| not_a_book(path, format!("no meta table ({e})")))?;
        let get = |k: &str| -> Result<Option<Vec<u8>>> {
            Ok(meta_table.get(k)?.map(|v| v.value().to_vec()))
        };
        if get(META_MAGIC)?.as_deref() != Some(MAGIC) {
            return Err(not_a_book(path, "meta table lacks the bookdb magic"));
        }
        let version = get(META_VERSION)?
            .and_then(|v| <[u8; 4]>::try_from(v.as_slice()).ok())
            .map(u32::from_le_bytes)
            .ok_or_else(|| {
                Error::Corrupt(Corruption::Meta(
                    "format_version missing or malformed".into(),
                ))
            })?;
        let accepted = if older {
            (OLDEST_MIGRATABLE..=FORMAT_VERSION).contains(&version)
        } else {
            version == FORMAT_VERSION
        };
        if !accepted {
            return Err(Error::UnsupportedVersion {
                path: path.to_path_buf(),
                found: version,
                supported: FORMAT_VERSION,
            });
        }
        let codec_name = get(META_CODEC)?.unwrap_or_default();
        if codec_name != codec.name().as_bytes() {
            return Err(not_a_book(
                path,
                format!(
                    "position codec {:?}, expected {:?}",
                    String::from_utf8_lossy(&codec_name),
                    codec.name()
                ),
            ));
        }
        let meta: BookMeta = match get(META_COUNTERS)? {
            Some(bytes) => serde_json::from_slice(&bytes).map_err(|e| {
                Error::Corrupt(Corruption::Meta(format!("counters unreadable: {e}")))
            })?,
            None => return Err(Error::Corrupt(Corruption::Meta("counters missing".into()))),
        };
        let mut dicts = HashMap::new();
        let mut models: HashMap<u16, Arc<dyn PositionModel>> = HashMap::new();
        let mut model_bytes = HashMap::new();
        models.insert(0, Arc::new(IdentityModel));
        for prefix in [META_DICT_PREFIX, META_MODEL_PREFIX] {
            for item in meta_table.range(prefix..)? {
                let (k, v) = item?;
                let Some(id) = k.value().strip_prefix(prefix) else {
                    break;
                };
                let id: u16 = id.parse().map_err(|_| {
                    Error::Corrupt(Corruption::Meta(format!("bad key {:?}", k.value())))
                })?;
                if prefix == META_DICT_PREFIX {
                    dicts.insert(id, Arc::new(v.value().to_vec()));
                } else {
                    let m = codec.load_model(v.value()).map_err(|e| {
                        Error::Corrupt(Corruption::Meta(format!("position model {id}: {e}")))
                    })?;
                    models.insert(id, m);
                    model_bytes.insert(id, Arc::new(v.value().to_vec()));
                }
            }
        }
        drop(meta_table);
        drop(txn);
        Ok(Book {
            path: path.to_path_buf(),
            db: Arc::new(db),
            codec,
            meta,
            pool: DecompressorPool::new(dicts.clone()),
            dicts,
            models,
            model_bytes,
            format_version: version,
            index: std::sync::OnceLock::new(),
            cache: BlockCache {
                limit: DEFAULT_CACHE_BYTES,
                map: Mutex::new((HashMap::new(), 0)),
            },
        })
    }

    pub(crate) fn path(&self) -> &Path {
        &self.path
    }
    pub fn meta(&self) -> &BookMeta {
        &self.meta
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

    /// All entries with this key (more than one only on a key collision), blocks and delta
    /// tier merged.
    #[doc(hidden)]
    pub fn get(&self, key: u64) -> Result<Vec<Entry>> {
        let blocks = self.get_blocks(key)?;
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

    /// The entry holding exactly this encoded position, blocks and delta tier merged; `None`
    /// if the book does not hold it (a position that merely shares its key is never returned).
    ///
    /// ```
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # use bookdb::chess::{PosState, encode_move, parse_fen, parse_move};
    /// # use bookdb::store::{Book, BookWriter, Entry, MoveRec, WriterOptions};
    /// # let dir = tempfile::tempdir()?;
    /// # let path = dir.path().join("tiny.book");
    /// # let start = shakmaty::Chess::default();
    /// # let state = PosState::from_chess(&start);
    /// # let e4 = encode_move(&parse_move(&start, "e4")?);
    /// # let mut w = BookWriter::create(&path, bookdb::chess_codec(), WriterOptions::default())?;
    /// # w.push(Entry { key: state.key(), pos: Some(state.pack().0), coded: None,
    /// #     moves: vec![MoveRec { mv: e4, white: 3, draws: 1, black: 2, ..Default::default() }] })?;
    /// # w.finish()?;
    /// let book = Book::open(&path, bookdb::chess_codec())?;
    /// let (packed, _bits) = PosState::from_chess(&shakmaty::Chess::default()).pack();
    /// let entry = book.lookup(&packed)?.expect("the start position is in the book");
    /// assert_eq!((entry.moves[0].white, entry.moves[0].draws, entry.moves[0].black), (3, 1, 2));
    ///
    /// let after_e4 = parse_fen("rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq -")?;
    /// assert!(book.lookup(&PosState::from_chess(&after_e4).pack().0)?.is_none());
    /// # Ok(()) }
    /// ```
    #[doc(hidden)]
    pub fn lookup(&self, pos: &[u8]) -> Result<Option<Entry>> {
        let key = self.codec.key(pos)?;
        let from_blocks = self.lookup_blocks(pos)?;
        if self.meta.delta_entries == 0 {
            // Readers see the book as it was when opened; reopen to see later imports.
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

    /// Entries with this key in the blocks only.
    pub(crate) fn get_blocks(&self, key: u64) -> Result<Vec<Entry>> {
        let Some((block_key, blk)) = self.cached_block(key)? else {
            return Ok(Vec::new());
        };
        let view = BlockView::parse_parts(block_key, blk.count, &blk.a, &blk.b)?;
        let model = self.model(block_key, blk.model_id)?;
        Ok(view.find(key, &*self.codec, model)?)
    }

    /// Sets the size of the cache of opened blocks (0 disables it).
    pub(crate) fn set_cache_bytes(&mut self, bytes: usize) {
        self.cache.limit = bytes;
        if let Ok(mut g) = self.cache.map.lock() {
            g.0.clear();
            g.1 = 0;
        }
    }

    /// The first keys of all blocks, read at the first lookup: reading them touches every
    /// leaf page of the blocks table (0.3 s for a 20 MB book), which commands that only need
    /// the counters (`stats`, the end of an import) should not pay.
    fn block_index(&self) -> Result<&[u64]> {
        if let Some(index) = self.index.get() {
            return Ok(index);
        }
        let index = shield("reading the block index", || {
            let txn = self.db.begin_read()?;
            let mut index = Vec::with_capacity(self.meta.blocks as usize);
            match txn.open_table(BLOCKS) {
                Ok(t) => {
                    for item in t.iter()? {
                        index.push(item?.0.value());
                    }
                }
                Err(redb::TableError::TableDoesNotExist(_)) => {}
                Err(e) => return Err(e.into()),
            }
            Ok(index)
        })?;
        Ok(self.index.get_or_init(|| index))
    }

    /// The opened block that would hold `key`, from the cache or read and verified now.
    fn cached_block(&self, key: u64) -> Result<Option<(u64, Arc<CachedBlock>)>> {
        let index = self.block_index()?;
        let i = index.partition_point(|&k| k <= key);
        let Some(&block_key) = i.checked_sub(1).and_then(|i| index.get(i)) else {
            return Ok(None);
        };
        if let Some(b) = self.cache.get(block_key) {
            return Ok(Some((block_key, b)));
        }
        let opened = shield("reading a block", || {
            let txn = self.db.begin_read()?;
            let table = txn.open_table(BLOCKS)?;
            let v = table.get(block_key)?.ok_or_else(|| {
                Error::Corrupt(Corruption::Header {
                    block_key,
                    reason: "block listed in the index is gone (the file was replaced; reopen it)"
                        .into(),
                })
            })?;
            let blk = block::open_block(block_key, v.value(), &self.pool)?;
            Ok(CachedBlock {
                count: blk.header.count as usize,
                model_id: blk.header.model_id,
                b: blk.b.to_vec(),
                a: blk.a,
            })
        })?;
        let b = Arc::new(opened);
        self.cache.put(block_key, b.clone());
        Ok(Some((block_key, b)))
    }

    /// The entry holding exactly this encoded position in the blocks (decodes only that entry).
    pub(crate) fn lookup_blocks(&self, pos: &[u8]) -> Result<Option<Entry>> {
        let key = self.codec.key(pos)?;
        let Some((block_key, blk)) = self.cached_block(key)? else {
            return Ok(None);
        };
        let view = BlockView::parse_parts(block_key, blk.count, &blk.a, &blk.b)?;
        let model = self.model(block_key, blk.model_id)?;
        let mut coded = Vec::with_capacity(32);
        model.encode(pos, &mut coded)?;
        Ok(view.find_coded_known(key, &coded, Some(pos), &*self.codec, model)?)
    }

    /// As [`Book::lookup_blocks`] without the cache and index: reads through redb each time.
    #[doc(hidden)]
    pub fn lookup_blocks_uncached(&self, pos: &[u8]) -> Result<Option<Entry>> {
        let key = self.codec.key(pos)?;
        Ok(self
            .with_block(key, |block_key, bytes| {
                let blk = block::open_block(block_key, bytes, &self.pool)?;
                let view = BlockView::parse(block_key, &blk)?;
                let model = self.model(block_key, blk.header.model_id)?;
                let mut coded = Vec::with_capacity(32);
                model.encode(pos, &mut coded)?;
                Ok(view.find_coded_known(key, &coded, Some(pos), &*self.codec, model)?)
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

    /// A handle that tells whether a game fingerprint is recorded in this book.
    #[doc(hidden)]
    pub fn game_index(&self) -> Result<GameIndex> {
        shield("opening game fingerprints", || {
            let txn = self.db.begin_read()?;
            let table = match txn.open_table(GAMES) {
                Ok(t) => Some(t),
                Err(redb::TableError::TableDoesNotExist(_)) => None,
                Err(e) => return Err(e.into()),
            };
            Ok(GameIndex { table })
        })
    }

    /// The import records: input fingerprint → JSON.
    pub fn imports(&self) -> Result<Vec<(String, Vec<u8>)>> {
        shield("reading import records", || self.imports_inner())
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

    /// Opens one stored block (checksum and decompression only), for tools.
    pub fn open_block<'a>(
        &self,
        block_key: u64,
        bytes: &'a [u8],
    ) -> Result<block::OpenBlock<'a>, Corruption> {
        block::open_block(block_key, bytes, &self.pool)
    }
}

/// Looks game fingerprints up in a book's `games` table (a read snapshot).
#[doc(hidden)]
pub struct GameIndex {
    pub(super) table: Option<redb::ReadOnlyTable<u128, ()>>,
}

impl GameIndex {
    #[doc(hidden)]
    pub fn contains(&self, fingerprint: u128) -> Result<bool> {
        match &self.table {
            None => Ok(false),
            Some(t) => shield("looking up a game fingerprint", || {
                Ok(t.get(fingerprint)?.is_some())
            }),
        }
    }
}

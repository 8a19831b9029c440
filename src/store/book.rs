//! The book file: a redb database with a `meta` table and a `blocks` table (first key of a
//! block → block). See docs/FORMAT.md.

use std::collections::{HashMap, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use redb::{ReadableDatabase, ReadableTable, ReadableTableMetadata, TableDefinition};
use serde::{Deserialize, Serialize};

use super::block::{self, BlockView, Decompressors, Keep};
use super::entry::{Entry, MergeIter};
use super::{IdentityModel, PositionCodec, PositionModel};
use crate::error::{Corruption, Error, Result};

pub const META: TableDefinition<&str, &[u8]> = TableDefinition::new("meta");
pub const BLOCKS: TableDefinition<u64, &[u8]> = TableDefinition::new("blocks");
/// The delta tier: (key, packed position; empty for key-only) → crc32 + move records.
pub const DELTA: TableDefinition<(u64, &[u8]), &[u8]> = TableDefinition::new("delta");
/// What was imported: input fingerprint → JSON record.
pub const IMPORTS: TableDefinition<&str, &[u8]> = TableDefinition::new("imports");
/// Fingerprints of the games `--dedupe` imports counted (docs/FORMAT.md §4.6); later `--dedupe`
/// imports skip games found here. Absent in books never imported with `--dedupe`.
pub const GAMES: TableDefinition<u128, ()> = TableDefinition::new("games");

pub const MAGIC: &[u8] = b"bookdb";
/// Book format version written by this build. See migrations/README.md.
pub const FORMAT_VERSION: u32 = 2;
/// Oldest format version `bookdb migrate` converts (migrations/README.md).
pub const OLDEST_MIGRATABLE: u32 = 1;

pub const META_MAGIC: &str = "magic";
pub const META_VERSION: &str = "format_version";
pub const META_CODEC: &str = "codec";
pub const META_COUNTERS: &str = "counters";
pub const META_DICT_PREFIX: &str = "dict/";
pub const META_MODEL_PREFIX: &str = "model/";

/// Counters kept in the meta table (JSON), maintained by every writer and checked by `verify`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct BookMeta {
    /// Games whose moves were counted into this book.
    pub games: u64,
    /// Entries that hold a position.
    pub positions: u64,
    /// Entries that hold only a key (unplaceable Polyglot entries).
    pub key_only: u64,
    /// (position, move) pairs over all entries.
    pub pairs: u64,
    /// Entries that share their key with an earlier entry holding a different position.
    pub collisions: u64,
    /// Number of value blocks.
    pub blocks: u64,
    /// Raw (uncompressed) payload bytes over all blocks.
    pub raw_bytes: u64,
    /// Stored block bytes (headers + compressed payloads).
    pub stored_bytes: u64,
    /// Entries in the delta tier (not yet folded into blocks).
    #[serde(default)]
    pub delta_entries: u64,
}

/// Options for writing blocks.
#[derive(Clone, Debug)]
pub struct WriterOptions {
    /// A block is closed once its estimated stored size reaches about this many bytes.
    pub target_block_bytes: usize,
    /// zstd level.
    pub level: i32,
    /// Train a zstd dictionary on the first blocks and use it for all.
    pub dictionary: bool,
    /// Dictionary size in bytes.
    pub dictionary_bytes: usize,
    /// Positions held in memory to train the position model (memory: ~200 bytes each).
    pub model_sample: usize,
    /// Sealed blocks are committed in transactions of about this many bytes.
    pub commit_bytes: usize,
    /// redb's page cache while writing.
    pub cache_bytes: usize,
}

impl WriterOptions {
    /// Options that keep the writer within about a quarter of `memory` bytes.
    pub fn for_memory(memory: usize) -> WriterOptions {
        WriterOptions {
            model_sample: (memory / 8 / 200).clamp(20_000, MODEL_SAMPLE),
            commit_bytes: (memory / 16).clamp(1 << 20, COMMIT_BYTES),
            cache_bytes: (memory / 8).clamp(4 << 20, 256 << 20),
            ..WriterOptions::default()
        }
    }
}

impl Default for WriterOptions {
    fn default() -> Self {
        WriterOptions {
            target_block_bytes: PAGE_FIT,
            level: 9,
            dictionary: true,
            dictionary_bytes: 16 * 1024,
            model_sample: MODEL_SAMPLE,
            commit_bytes: COMMIT_BYTES,
            cache_bytes: 256 << 20,
        }
    }
}

/// Runs redb calls so that a panic inside redb on a damaged file (it has `unreachable!()`s on
/// unknown page types) becomes a corruption error instead of a crash.
pub fn shield<T>(what: &str, f: impl FnOnce() -> Result<T>) -> Result<T> {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)) {
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

fn not_a_book(path: &Path, reason: impl Into<String>) -> Error {
    Error::NotABook {
        path: path.to_path_buf(),
        reason: reason.into(),
    }
}

/// A boxed stream of entries in (key, position) order.
pub type EntryStream<'a> = Box<dyn Iterator<Item = Result<Entry>> + 'a>;
/// The merged view of a book's blocks and delta tier.
pub type EntryIter<'a> = MergeIter<EntryStream<'a>, Error>;

/// A book opened for reading.
pub struct Book {
    path: PathBuf,
    /// Shared with writers that copy this book's `games` table at their end
    /// ([`BookWriter::keep_game_fingerprints_of`]).
    db: Arc<redb::ReadOnlyDatabase>,
    codec: Arc<dyn PositionCodec>,
    meta: BookMeta,
    dicts: HashMap<u16, Arc<Vec<u8>>>,
    models: HashMap<u16, Arc<dyn PositionModel>>,
    /// Serialized position models by id (what [`Book::compression`] hands a writer).
    model_bytes: HashMap<u16, Arc<Vec<u8>>>,
    format_version: u32,
    pool: DecompressorPool,
    /// First key of every block, sorted; read at the first lookup ([`Book::block_index`]).
    index: std::sync::OnceLock<Vec<u64>>,
    cache: BlockCache,
}

/// Opened blocks (checksum verified, section A decompressed), kept for repeated probes.
struct BlockCache {
    limit: usize,
    map: Mutex<(HashMap<u64, Arc<CachedBlock>>, usize)>,
}

struct CachedBlock {
    count: usize,
    model_id: u16,
    a: Vec<u8>,
    b: Vec<u8>,
}

impl CachedBlock {
    fn bytes(&self) -> usize {
        self.a.len() + self.b.len() + 64
    }
}

impl BlockCache {
    fn get(&self, key: u64) -> Option<Arc<CachedBlock>> {
        if self.limit == 0 {
            return None;
        }
        self.map.lock().ok()?.0.get(&key).cloned()
    }

    fn put(&self, key: u64, b: Arc<CachedBlock>) {
        if self.limit == 0 {
            return;
        }
        if let Ok(mut g) = self.map.lock() {
            let (map, used) = &mut *g;
            // Random eviction (hash order) until the new block fits.
            while *used + b.bytes() > self.limit {
                let Some(&k) = map.keys().next() else { break };
                if let Some(old) = map.remove(&k) {
                    *used -= old.bytes();
                }
            }
            *used += b.bytes();
            if let Some(old) = map.insert(key, b) {
                *used -= old.bytes();
            }
        }
    }
}

/// redb page cache of a book opened for reading.
pub const READER_CACHE_BYTES: usize = 64 << 20;

/// Default size of the block cache of a [`Book`].
pub const DEFAULT_CACHE_BYTES: usize = 64 << 20;

/// Pooled zstd contexts with their dictionary loaded, so a probe does not pay for setup.
pub struct DecompressorPool {
    dicts: HashMap<u16, Arc<Vec<u8>>>,
    free: Mutex<HashMap<u16, Vec<zstd::bulk::Decompressor<'static>>>>,
}

impl DecompressorPool {
    pub fn new(dicts: HashMap<u16, Arc<Vec<u8>>>) -> Self {
        DecompressorPool {
            dicts,
            free: Mutex::new(HashMap::new()),
        }
    }
}

impl Decompressors for DecompressorPool {
    fn decompress(&self, dict_id: u16, src: &[u8], capacity: usize) -> Result<Vec<u8>, String> {
        let ctx = self
            .free
            .lock()
            .ok()
            .and_then(|mut m| m.get_mut(&dict_id).and_then(Vec::pop));
        let mut ctx = match ctx {
            Some(c) => c,
            None if dict_id == 0 => zstd::bulk::Decompressor::new().map_err(|e| e.to_string())?,
            None => {
                let d = self
                    .dicts
                    .get(&dict_id)
                    .ok_or_else(|| format!("dictionary {dict_id} missing from the meta table"))?;
                zstd::bulk::Decompressor::with_dictionary(d).map_err(|e| e.to_string())?
            }
        };
        let mut out = Vec::with_capacity(capacity);
        let res = ctx
            .decompress_to_buffer(src, &mut out)
            .map_err(|e| e.to_string());
        if let Ok(mut m) = self.free.lock() {
            let v = m.entry(dict_id).or_default();
            if v.len() < 16 {
                v.push(ctx);
            }
        }
        res.map(|_| out)
    }
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
    /// Opens an existing book read-only, checking magic, version and codec.
    pub fn open(path: &Path, codec: Arc<dyn PositionCodec>) -> Result<Book> {
        shield("opening the book", || {
            Self::open_inner(path, codec, false, READER_CACHE_BYTES)
        })
    }

    /// [`Book::open`] with both caches (redb's pages, opened blocks) at `cache_bytes` each
    /// instead of 64 MiB: for an import's lookups, which must stay within its memory budget.
    pub fn open_with_cache(
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
    pub fn open_for_migration(path: &Path, codec: Arc<dyn PositionCodec>) -> Result<Book> {
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
                        return Err(Error::Invalid(format!(
                            "{}: the book is being written by another process; try again when it is done",
                            path.display()
                        )));
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

    pub fn path(&self) -> &Path {
        &self.path
    }
    pub fn meta(&self) -> &BookMeta {
        &self.meta
    }

    /// The format version the book was written with ([`FORMAT_VERSION`], or an older one for
    /// a book opened by [`Book::open_for_migration`]).
    pub fn format_version(&self) -> u32 {
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
    fn writer_model(&self) -> Option<&[u8]> {
        let model = self.model_bytes.get(&1)?;
        (self.model_bytes.len() == 1 && self.dicts.keys().all(|&id| id == 1))
            .then_some(model.as_slice())
    }
    pub fn codec(&self) -> &dyn PositionCodec {
        &*self.codec
    }
    pub fn dictionaries(&self) -> &HashMap<u16, Arc<Vec<u8>>> {
        &self.dicts
    }

    pub fn file_bytes(&self) -> u64 {
        std::fs::metadata(&self.path).map(|m| m.len()).unwrap_or(0)
    }

    fn model(&self, block_key: u64, id: u16) -> Result<&dyn PositionModel, Corruption> {
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

    /// The entry holding exactly this encoded position, blocks and delta tier merged.
    pub fn lookup(&self, pos: &[u8]) -> Result<Option<Entry>> {
        let key = self.codec.key(pos).map_err(Error::Invalid)?;
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
    pub fn get_blocks(&self, key: u64) -> Result<Vec<Entry>> {
        let Some((block_key, blk)) = self.cached_block(key)? else {
            return Ok(Vec::new());
        };
        let view = BlockView::parse_parts(block_key, blk.count, &blk.a, &blk.b)?;
        let model = self.model(block_key, blk.model_id)?;
        Ok(view.find(key, &*self.codec, model)?)
    }

    /// As [`Book::get_blocks`] without the cache and index: reads through redb each time.
    pub fn get_blocks_uncached(&self, key: u64) -> Result<Vec<Entry>> {
        Ok(self
            .with_block(key, |block_key, bytes| {
                let blk = block::open_block(block_key, bytes, &self.pool)?;
                let view = BlockView::parse(block_key, &blk)?;
                let model = self.model(block_key, blk.header.model_id)?;
                Ok(view.find(key, &*self.codec, model)?)
            })?
            .unwrap_or_default())
    }

    /// Sets the size of the cache of opened blocks (0 disables it).
    pub fn set_cache_bytes(&mut self, bytes: usize) {
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
    pub fn lookup_blocks(&self, pos: &[u8]) -> Result<Option<Entry>> {
        let key = self.codec.key(pos).map_err(Error::Invalid)?;
        let Some((block_key, blk)) = self.cached_block(key)? else {
            return Ok(None);
        };
        let view = BlockView::parse_parts(block_key, blk.count, &blk.a, &blk.b)?;
        let model = self.model(block_key, blk.model_id)?;
        let mut coded = Vec::with_capacity(32);
        model.encode(pos, &mut coded).map_err(Error::Invalid)?;
        Ok(view.find_coded_known(key, &coded, Some(pos), &*self.codec, model)?)
    }

    /// As [`Book::lookup_blocks`] without the cache and index: reads through redb each time.
    pub fn lookup_blocks_uncached(&self, pos: &[u8]) -> Result<Option<Entry>> {
        let key = self.codec.key(pos).map_err(Error::Invalid)?;
        Ok(self
            .with_block(key, |block_key, bytes| {
                let blk = block::open_block(block_key, bytes, &self.pool)?;
                let view = BlockView::parse(block_key, &blk)?;
                let model = self.model(block_key, blk.header.model_id)?;
                let mut coded = Vec::with_capacity(32);
                model.encode(pos, &mut coded).map_err(Error::Invalid)?;
                Ok(view.find_coded_known(key, &coded, Some(pos), &*self.codec, model)?)
            })?
            .flatten())
    }

    /// The delta-tier entry with exactly this identity.
    pub fn delta_get(&self, key: u64, pos: Option<&[u8]>) -> Result<Option<Entry>> {
        shield("reading the delta tier", || self.delta_get_inner(key, pos))
    }

    fn delta_get_inner(&self, key: u64, pos: Option<&[u8]>) -> Result<Option<Entry>> {
        let txn = self.db.begin_read()?;
        let table = match txn.open_table(DELTA) {
            Ok(t) => t,
            Err(redb::TableError::TableDoesNotExist(_)) => return Ok(None),
            Err(e) => return Err(e.into()),
        };
        let p = pos.unwrap_or_default();
        match table.get((key, p))? {
            Some(v) => Ok(Some(decode_delta(key, p, v.value())?)),
            None => Ok(None),
        }
    }

    /// Delta-tier entries with this key.
    pub fn delta_range(&self, key: u64) -> Result<Vec<Entry>> {
        shield("reading the delta tier", || self.delta_range_inner(key))
    }

    fn delta_range_inner(&self, key: u64) -> Result<Vec<Entry>> {
        let txn = self.db.begin_read()?;
        let table = match txn.open_table(DELTA) {
            Ok(t) => t,
            Err(redb::TableError::TableDoesNotExist(_)) => return Ok(Vec::new()),
            Err(e) => return Err(e.into()),
        };
        let empty: &[u8] = &[];
        let mut out = Vec::new();
        for item in table.range((key, empty)..)? {
            let (k, v) = item?;
            let (k, p) = k.value();
            if k != key {
                break;
            }
            out.push(decode_delta(k, p, v.value())?);
        }
        Ok(out)
    }

    /// Iterates the delta tier in (key, position) order.
    pub fn delta_iter(&self) -> Result<DeltaIter<'_>> {
        Ok(DeltaIter {
            book: self,
            after: None,
            buf: VecDeque::new(),
            done: false,
        })
    }

    /// Iterates all entries in (key, position) order: blocks and delta tier merged.
    pub fn iter(&self) -> Result<EntryIter<'_>> {
        self.iter_as(Keep::default())
    }

    /// Like [`Book::iter`], but indexed moves of block entries stay indices
    /// (`MoveRec::indexed`): for rewrites into a [`BookWriter`], which takes them as they
    /// are and so skips decoding and re-indexing every move.
    pub fn iter_for_rewrite(&self) -> Result<EntryIter<'_>> {
        self.iter_for_rewrite_coded(None)
    }

    /// Like [`Book::iter_for_rewrite`], for a writer told to reuse `writer` (see
    /// [`BookWriter::reuse_compression`]): if that is this book's model, block entries also
    /// carry their positions as stored (`Entry::coded`), so the writer skips coding them again.
    pub fn iter_for_rewrite_coded(
        &self,
        writer: Option<&BookCompression>,
    ) -> Result<EntryIter<'_>> {
        let coded = match (writer, self.writer_model()) {
            (Some(w), Some(mine)) => w.model == mine,
            _ => false,
        };
        self.iter_as(Keep {
            indices: true,
            coded,
        })
    }

    fn iter_as(&self, keep: Keep) -> Result<EntryIter<'_>> {
        let mut blocks = self.iter_blocks()?;
        blocks.keep = keep;
        let blocks: Box<dyn Iterator<Item = Result<Entry>> + '_> = Box::new(blocks);
        if self.meta.delta_entries == 0 {
            return Ok(MergeIter::new(vec![blocks]));
        }
        let delta: Box<dyn Iterator<Item = Result<Entry>> + '_> = Box::new(self.delta_iter()?);
        Ok(MergeIter::new(vec![blocks, delta]))
    }

    /// How many game fingerprints `--dedupe` imports recorded in this book.
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

    /// Iterates the blocks' entries in (key, position) order, block by block.
    pub fn iter_blocks(&self) -> Result<BookIter<'_>> {
        shield("reading blocks", || self.iter_blocks_inner())
    }

    fn iter_blocks_inner(&self) -> Result<BookIter<'_>> {
        let txn = self.db.begin_read()?;
        let table = match txn.open_table(BLOCKS) {
            Ok(t) => Some(t),
            Err(redb::TableError::TableDoesNotExist(_)) => None,
            Err(e) => return Err(e.into()),
        };
        Ok(BookIter {
            book: self,
            table,
            next_key: Some(0),
            buf: VecDeque::new(),
            keep: Keep::default(),
        })
    }

    /// Iterates raw blocks: (first key, stored bytes). Used by `verify` and `stats`.
    pub fn for_each_block(&self, f: impl FnMut(u64, &[u8]) -> Result<()>) -> Result<()> {
        shield("reading blocks", || self.for_each_block_inner(f))
    }

    fn for_each_block_inner(&self, mut f: impl FnMut(u64, &[u8]) -> Result<()>) -> Result<()> {
        let txn = self.db.begin_read()?;
        let table = match txn.open_table(BLOCKS) {
            Ok(t) => t,
            Err(redb::TableError::TableDoesNotExist(_)) => return Ok(()),
            Err(e) => return Err(e.into()),
        };
        for item in table.iter()? {
            let (k, v) = item?;
            f(k.value(), v.value())?;
        }
        Ok(())
    }

    pub fn block_count(&self) -> Result<u64> {
        let txn = self.db.begin_read()?;
        match txn.open_table(BLOCKS) {
            Ok(t) => Ok(t.len()?),
            Err(redb::TableError::TableDoesNotExist(_)) => Ok(0),
            Err(e) => Err(e.into()),
        }
    }

    /// Decodes one stored block completely (for iteration and `verify`).
    pub fn decode_block(&self, block_key: u64, bytes: &[u8]) -> Result<Vec<Entry>, Corruption> {
        self.decode_block_as(block_key, bytes, Keep::default())
    }

    fn decode_block_as(
        &self,
        block_key: u64,
        bytes: &[u8],
        keep: Keep,
    ) -> Result<Vec<Entry>, Corruption> {
        let blk = block::open_block(block_key, bytes, &self.pool)?;
        let view = BlockView::parse(block_key, &blk)?;
        let model = self.model(block_key, blk.header.model_id)?;
        // Stored bytes pass through only from blocks coded with the trained model (id 1).
        let keep = Keep {
            coded: keep.coded && blk.header.model_id == 1,
            ..keep
        };
        view.entries_as(&*self.codec, model, keep)
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

/// Iterator over all entries of a book in key order.
pub struct BookIter<'a> {
    book: &'a Book,
    table: Option<redb::ReadOnlyTable<u64, &'static [u8]>>,
    next_key: Option<u64>,
    buf: VecDeque<Entry>,
    /// Leave indexed moves as indices (see [`Book::iter_for_rewrite`]).
    keep: Keep,
}

/// Blocks read ahead and decoded together on all cores by [`BookIter`].
const ITER_BATCH_BLOCKS: usize = 32;

impl BookIter<'_> {
    /// Reads the next batch of blocks and decodes them in parallel into `buf`.
    fn fill(&mut self) -> Result<()> {
        let Some(from) = self.next_key else {
            return Ok(());
        };
        let Some(table) = self.table.as_ref() else {
            self.next_key = None;
            return Ok(());
        };
        let raw: Vec<(u64, Vec<u8>)> = shield("reading blocks", || {
            let mut out = Vec::with_capacity(ITER_BATCH_BLOCKS);
            for item in table.range(from..)?.take(ITER_BATCH_BLOCKS) {
                let (k, v) = item?;
                out.push((k.value(), v.value().to_vec()));
            }
            Ok(out)
        })?;
        self.next_key = match raw.last() {
            Some((k, _)) => k.checked_add(1),
            None => None,
        };
        let (book, keep) = (self.book, self.keep);
        let threads = seal_threads();
        let per = raw.len().div_ceil(threads).max(1);
        let decoded: Vec<Result<Vec<Vec<Entry>>, Corruption>> = if raw.len() <= 1 || threads == 1 {
            vec![
                raw.iter()
                    .map(|(k, v)| book.decode_block_as(*k, v, keep))
                    .collect(),
            ]
        } else {
            std::thread::scope(|s| {
                let handles: Vec<_> = raw
                    .chunks(per)
                    .map(|c| {
                        s.spawn(move || {
                            c.iter()
                                .map(|(k, v)| book.decode_block_as(*k, v, keep))
                                .collect()
                        })
                    })
                    .collect();
                handles
                    .into_iter()
                    .map(|h| {
                        h.join().unwrap_or_else(|_| {
                            Err(Corruption::Storage("block decoder thread panicked".into()))
                        })
                    })
                    .collect()
            })
        };
        for part in decoded {
            for entries in part? {
                self.buf.extend(entries);
            }
        }
        Ok(())
    }
}

impl Iterator for BookIter<'_> {
    type Item = Result<Entry>;

    fn next(&mut self) -> Option<Result<Entry>> {
        loop {
            if let Some(e) = self.buf.pop_front() {
                return Some(Ok(e));
            }
            self.next_key?;
            if let Err(e) = self.fill() {
                self.next_key = None;
                self.buf.clear();
                return Some(Err(e));
            }
        }
    }
}

/// Encodes a delta-tier value: crc32 over key, position and records, then the records.
pub fn encode_delta(e: &Entry) -> Vec<u8> {
    let mut payload = Vec::with_capacity(16 + 12 * e.moves.len());
    super::record::encode_moves(&e.moves, &mut payload);
    let mut h = crc32fast::Hasher::new();
    h.update(&e.key.to_le_bytes());
    h.update(e.pos.as_deref().unwrap_or_default());
    h.update(&payload);
    let mut out = h.finalize().to_le_bytes().to_vec();
    out.extend_from_slice(&payload);
    out
}

pub fn decode_delta(key: u64, pos: &[u8], value: &[u8]) -> Result<Entry, Corruption> {
    let bad = |reason: String| Corruption::Delta(format!("entry {key:016x}: {reason}"));
    if value.len() < 4 {
        return Err(bad("value shorter than its checksum".into()));
    }
    let expected = u32::from_le_bytes([value[0], value[1], value[2], value[3]]);
    let mut h = crc32fast::Hasher::new();
    h.update(&key.to_le_bytes());
    h.update(pos);
    h.update(&value[4..]);
    let found = h.finalize();
    if found != expected {
        return Err(bad(format!(
            "checksum mismatch (stored {expected:08x}, computed {found:08x})"
        )));
    }
    let mut at = 4;
    let moves = super::record::decode_moves(value, &mut at)
        .filter(|_| at == value.len())
        .ok_or_else(|| bad("move records undecodable".into()))?;
    Ok(Entry {
        coded: None,
        key,
        pos: (!pos.is_empty()).then(|| pos.to_vec()),
        moves,
    })
}

/// Iterator over the delta tier, reading it in chunks.
pub struct DeltaIter<'a> {
    book: &'a Book,
    after: Option<(u64, Vec<u8>)>,
    buf: VecDeque<Entry>,
    done: bool,
}

impl DeltaIter<'_> {
    fn fill(&mut self) -> Result<()> {
        shield("reading the delta tier", || self.fill_inner())
    }

    fn fill_inner(&mut self) -> Result<()> {
        let txn = self.book.db.begin_read()?;
        let table = match txn.open_table(DELTA) {
            Ok(t) => t,
            Err(redb::TableError::TableDoesNotExist(_)) => {
                self.done = true;
                return Ok(());
            }
            Err(e) => return Err(e.into()),
        };
        let range = match &self.after {
            None => table.range::<(u64, &[u8])>(..)?,
            Some((k, p)) => table.range::<(u64, &[u8])>((
                std::ops::Bound::Excluded((*k, p.as_slice())),
                std::ops::Bound::Unbounded,
            ))?,
        };
        for item in range.take(4096) {
            let (k, v) = item?;
            let (key, pos) = k.value();
            self.buf.push_back(decode_delta(key, pos, v.value())?);
        }
        match self.buf.back() {
            Some(e) => self.after = Some((e.key, e.pos.clone().unwrap_or_default())),
            None => self.done = true,
        }
        Ok(())
    }
}

impl Iterator for DeltaIter<'_> {
    type Item = Result<Entry>;
    fn next(&mut self) -> Option<Result<Entry>> {
        if self.buf.is_empty()
            && !self.done
            && let Err(e) = self.fill()
        {
            self.done = true;
            return Some(Err(e));
        }
        self.buf.pop_front().map(Ok)
    }
}

/// The temporary file a new version of `path` is written to before it is renamed into place:
/// `.<name>.tmp-<pid>` in the same directory (so the rename is atomic).
pub fn temp_sibling(path: &Path) -> Result<PathBuf> {
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let name = path
        .file_name()
        .ok_or_else(|| Error::Invalid(format!("{}: not a file path", path.display())))?;
    Ok(dir.join(format!(
        ".{}.tmp-{}",
        name.to_string_lossy(),
        std::process::id()
    )))
}

/// Writes a new book file from entries given in (key, position) order. The file appears at its
/// final path only when [`BookWriter::finish`] succeeds (temporary file, fsync, rename).
///
/// Once the model is trained, entries go in segments (cut between keys) to a pool of sealing
/// threads; each fills and seals its segment's blocks (position coding, move indexing, zstd)
/// on its own, and the blocks are committed in segment order. The output depends only on the
/// entries and the options, not on thread timing.
pub struct BookWriter {
    final_path: PathBuf,
    tmp_path: PathBuf,
    db: Option<redb::Database>,
    codec: Arc<dyn PositionCodec>,
    opts: WriterOptions,
    meta: BookMeta,
    /// Entries not yet handed to the sealing pool (until the model is trained: the sample).
    held_entries: Vec<Entry>,
    held_positions: usize,
    model: Option<(u16, Arc<dyn PositionModel>, Vec<u8>)>,
    dictionary: Option<Vec<u8>>,
    /// Identity of the last entry handed to the sealing pool (later ones are held).
    last: Option<(u64, Option<Vec<u8>>)>,
    /// Sealed blocks not yet committed.
    batch: Vec<(u64, Vec<u8>)>,
    batch_bytes: usize,
    imports: Vec<(String, Vec<u8>)>,
    /// Seal attempts (a block that overflows its page is sealed again with fewer entries).
    seals: u64,
    pool: Option<SealPool>,
    /// A model and dictionary to use instead of training new ones.
    reuse: Option<BookCompression>,
    /// redb files whose `games` tables (game fingerprints) are copied, streaming, in the last
    /// transaction: this import's (a staging table) and those of rewritten or merged books.
    games_from: Vec<Arc<redb::ReadOnlyDatabase>>,
    /// The model is a reused one: entries' `coded` bytes (coded with it) are stored as they are.
    takes_coded: bool,
}

/// Looks game fingerprints up in a book's `games` table (a read snapshot).
pub struct GameIndex {
    table: Option<redb::ReadOnlyTable<u128, ()>>,
}

impl GameIndex {
    pub fn contains(&self, fingerprint: u128) -> Result<bool> {
        match &self.table {
            None => Ok(false),
            Some(t) => shield("looking up a game fingerprint", || {
                Ok(t.get(fingerprint)?.is_some())
            }),
        }
    }
}

/// A serialized position model and section-A dictionary taken from a book
/// ([`Book::compression`]).
#[derive(Clone, Debug)]
pub struct BookCompression {
    pub model: Vec<u8>,
    pub dictionary: Option<Vec<u8>>,
}

/// Blocks are committed in transactions of about this many bytes.
const COMMIT_BYTES: usize = 64 << 20;
/// Positions sampled before the position model and the dictionary are trained. Books are in
/// key order, which is a uniformly random order of positions, so the first ones are a fair
/// sample. The sealing threads wait while the sample is gathered and trained on, so it is
/// small: on the 135,000-game benchmark 20,000 to 200,000 give the same file size (to 0.03%),
/// 10,000 a 2.7% larger one (too few dictionary samples); see docs/PERFORMANCE.md.
const MODEL_SAMPLE: usize = 32_768;
/// Entries held before the sealing threads start when the model and dictionary are reused:
/// enough sample blocks to estimate how well section A compresses.
const REUSE_SAMPLE: usize = 16 * DICT_SAMPLE_ENTRIES;
/// Entries per segment handed to a sealing thread. The last block of a segment is usually
/// part-full (about half a page per segment in the file), so segments are large.
const SEGMENT_ENTRIES: usize = 65_536;
/// Entries per dictionary training sample.
const DICT_SAMPLE_ENTRIES: usize = 256;
/// A redb leaf page holding one block value has this much room for it (4 KiB page minus the
/// page header, one fixed-width key and its offset, with a margin).
pub const PAGE_FIT: usize = 4096 - 48;

/// What a sealing thread needs besides the entries.
struct SealContext {
    codec: Arc<dyn PositionCodec>,
    model: Arc<dyn PositionModel>,
    model_id: u16,
    limit: usize,
    /// Expected stored section-A bytes per entry, in 1/256 bytes (measured on the sample).
    a_per_entry: usize,
}

/// The blocks of one segment, sealed.
#[derive(Default)]
struct SealedSegment {
    blocks: Vec<(u64, Vec<u8>)>,
    raw_bytes: u64,
    seals: u64,
}

type SegmentJob = (u64, Vec<Entry>, Option<Vec<block::Prepared>>);
type SegmentDone = (u64, Result<SealedSegment, String>);

/// Threads sealing segments; results are written in segment order.
struct SealPool {
    tx: Option<crossbeam_channel::Sender<SegmentJob>>,
    rx: crossbeam_channel::Receiver<SegmentDone>,
    handles: Vec<std::thread::JoinHandle<()>>,
    sent: u64,
    written: u64,
    done: std::collections::BTreeMap<u64, SealedSegment>,
    max_in_flight: u64,
    /// Segment buffers the sealing threads emptied, for the writer to fill again: a fresh
    /// buffer of 65,536 entries is 5 MiB of new pages to fault in.
    spare: crossbeam_channel::Receiver<Vec<Entry>>,
}

/// Sealing threads: the cores, at most 8 (looked up once: it reads cgroup files).
fn seal_threads() -> usize {
    static THREADS: std::sync::OnceLock<usize> = std::sync::OnceLock::new();
    *THREADS.get_or_init(|| {
        std::thread::available_parallelism()
            .map_or(1, |n| n.get())
            .min(8)
    })
}

impl SealPool {
    fn start(
        ctx: SealContext,
        level: i32,
        dict: Option<(Vec<u8>, u16)>,
        max_in_flight: u64,
    ) -> Result<SealPool> {
        let threads = seal_threads();
        let (tx, job_rx) = crossbeam_channel::bounded::<SegmentJob>(threads);
        let (done_tx, rx) = crossbeam_channel::unbounded::<SegmentDone>();
        let (spare_tx, spare) = crossbeam_channel::unbounded::<Vec<Entry>>();
        let ctx = Arc::new(ctx);
        let mut handles = Vec::with_capacity(threads);
        for _ in 0..threads {
            let comp = match &dict {
                Some((d, _)) => zstd::bulk::Compressor::with_dictionary(level, d),
                None => zstd::bulk::Compressor::new(level),
            }
            .map_err(|e| Error::io("starting zstd", e))?;
            let dict_id = dict.as_ref().map_or(0, |(_, id)| *id);
            let (job_rx, done_tx, ctx) = (job_rx.clone(), done_tx.clone(), ctx.clone());
            let spare_tx = spare_tx.clone();
            handles.push(std::thread::spawn(move || {
                let mut comp = comp;
                let mut scratch = Vec::new();
                while let Ok((seq, mut entries, prepared)) = job_rx.recv() {
                    let res = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                        seal_segment(&ctx, &mut comp, dict_id, &entries, prepared, &mut scratch)
                    }))
                    .unwrap_or_else(|_| Err("block sealing thread panicked".into()));
                    if done_tx.send((seq, res)).is_err() {
                        return;
                    }
                    entries.clear();
                    let _ = spare_tx.send(entries);
                }
            }));
        }
        Ok(SealPool {
            tx: Some(tx),
            rx,
            handles,
            sent: 0,
            written: 0,
            done: Default::default(),
            max_in_flight,
            spare,
        })
    }

    /// Receives one finished segment.
    fn receive(&mut self) -> Result<()> {
        let (seq, res) = self
            .rx
            .recv()
            .map_err(|_| Error::Invalid("block sealing threads stopped".into()))?;
        self.done.insert(seq, res.map_err(Error::Invalid)?);
        Ok(())
    }

    /// The next segment in order, if it is done.
    fn next_ready(&mut self) -> Option<SealedSegment> {
        let s = self.done.remove(&self.written)?;
        self.written += 1;
        Some(s)
    }
}

impl Drop for SealPool {
    fn drop(&mut self) {
        self.tx.take();
        for h in self.handles.drain(..) {
            let _ = h.join();
        }
    }
}

/// Fills and seals the blocks of one segment (entries in order, never splitting a key).
fn seal_segment(
    ctx: &SealContext,
    comp: &mut zstd::bulk::Compressor<'static>,
    dict_id: u16,
    entries: &[Entry],
    prepared: Option<Vec<block::Prepared>>,
    scratch: &mut Vec<block::Prepared>,
) -> Result<SealedSegment, String> {
    let prepared: &[block::Prepared] = match &prepared {
        Some(p) if p.len() == entries.len() => p,
        _ => {
            // The thread's buffer, reused from segment to segment.
            scratch.clear();
            scratch.reserve(entries.len());
            for e in entries {
                scratch.push(block::prepare(e, &*ctx.codec, &*ctx.model)?);
            }
            scratch
        }
    };
    let mut out = SealedSegment::default();
    // Running average of stored section-A bytes per entry, in 1/256 bytes.
    let mut a_per_entry = ctx.a_per_entry;
    let estimate =
        |a_per_entry: usize, n: usize, b: usize| block::HEADER_LEN + b + n * a_per_entry / 256;
    let extra = |i: usize| prepared[i].coded.len() + 3 * entries[i].moves.len().saturating_sub(1);
    let mut start = 0;
    let mut pending_b = 0;
    for i in 0..=entries.len() {
        let end_of_block = i == entries.len()
            || (i > start
                && entries[i - 1].key != entries[i].key
                && estimate(a_per_entry, i - start + 1, pending_b + extra(i)) > ctx.limit);
        if end_of_block && i > start {
            // Seal [start, i) into as few blocks as fit the limit.
            while start < i {
                let mut n = i - start;
                loop {
                    let (es, ps) = (&entries[start..start + n], &prepared[start..start + n]);
                    out.seals += 1;
                    let payload = block::build_payload_with(es, ps)?;
                    let sealed = block::seal(&payload, ctx.model_id, Some((&mut *comp, dict_id)))
                        .map_err(|e| format!("zstd: {e}"))?;
                    let fits = sealed.len() <= ctx.limit;
                    // Never split entries of one key; a single oversized entry goes alone.
                    let can_shrink = (1..n).rev().find(|&k| es[k - 1].key != es[k].key);
                    if fits || can_shrink.is_none() {
                        let b: usize = ps.iter().map(|p| p.coded.len()).sum();
                        let a = sealed.len().saturating_sub(block::HEADER_LEN + b);
                        out.raw_bytes += (payload.a.len() + b) as u64;
                        a_per_entry = (a_per_entry * 3 + a * 256 / n) / 4;
                        out.blocks.push((es[0].key, sealed));
                        start += n;
                        break;
                    }
                    let over = sealed.len() - ctx.limit;
                    let avg = sealed.len() / n;
                    let mut target = n.saturating_sub(over / avg.max(1) + 1).max(1);
                    while target > 1 && es[target - 1].key == es[target].key {
                        target -= 1;
                    }
                    n = target.min(can_shrink.unwrap_or(1));
                }
            }
            pending_b = 0;
        }
        if i < entries.len() {
            pending_b += extra(i);
        }
    }
    Ok(out)
}

/// Where a segment of at least `seg` entries ends (between keys), if `entries` holds one.
fn segment_cut(entries: &[Entry], seg: usize) -> Option<usize> {
    (seg.max(1)..entries.len()).find(|&i| entries[i - 1].key != entries[i].key)
}

/// What the training thread needs.
struct TrainSettings {
    codec: Arc<dyn PositionCodec>,
    dictionary: bool,
    dictionary_bytes: usize,
    level: i32,
    reuse: Option<BookCompression>,
}

/// A trained (or reused) model and dictionary, the block-size seed, and the sample with its
/// prepared forms.
struct Trained {
    bytes: Vec<u8>,
    model: Arc<dyn PositionModel>,
    dict: Option<Vec<u8>>,
    a_per_entry: usize,
    entries: Vec<Entry>,
    prepared: Vec<block::Prepared>,
}

/// Trains the position model and the section-A dictionary on a sample of entries (or takes
/// reused ones) and prepares the sample (position coding, move indexing) on all cores.
fn train_sample(s: TrainSettings, entries: Vec<Entry>) -> Result<Trained> {
    let t0 = std::time::Instant::now();
    let bytes = match &s.reuse {
        Some(c) => c.model.clone(),
        None => {
            let samples: Vec<&[u8]> = entries.iter().filter_map(|e| e.pos.as_deref()).collect();
            s.codec.train(&samples).map_err(Error::Invalid)?
        }
    };
    let t1 = t0.elapsed();
    let model = s.codec.load_model(&bytes).map_err(Error::Invalid)?;
    let prepared = prepare_parallel(&entries, &*s.codec, &model)?;
    let t2 = t0.elapsed();
    let mut dict = None;
    let mut a_per_entry = 3 * 256;
    let chunks = entries.len() / DICT_SAMPLE_ENTRIES;
    let reused_dict = s.reuse.and_then(|c| c.dictionary);
    let needed = if reused_dict.is_some() { 1 } else { 64 };
    if s.dictionary && chunks >= needed {
        let mut a_samples = Vec::with_capacity(chunks);
        for (c, p) in entries
            .chunks_exact(DICT_SAMPLE_ENTRIES)
            .zip(prepared.chunks_exact(DICT_SAMPLE_ENTRIES))
        {
            a_samples.push(block::build_payload_with(c, p).map_err(Error::Invalid)?.a);
        }
        let refs: Vec<&[u8]> = a_samples.iter().map(Vec::as_slice).collect();
        dict = match reused_dict {
            Some(d) => Some(d),
            None => zstd::dict::from_samples(&refs, s.dictionary_bytes).ok(),
        };
        // Seed the block-size estimate with what sample blocks really compress to.
        if let Ok(mut comp) = match &dict {
            Some(d) => zstd::bulk::Compressor::with_dictionary(s.level, d),
            None => zstd::bulk::Compressor::new(s.level),
        } {
            let probe: Vec<usize> = a_samples
                .iter()
                .step_by((a_samples.len() / 16).max(1))
                .filter_map(|a| comp.compress(a).ok().map(|c| c.len()))
                .collect();
            if !probe.is_empty() {
                a_per_entry =
                    probe.iter().sum::<usize>() * 256 / (probe.len() * DICT_SAMPLE_ENTRIES);
            }
        }
    }
    if std::env::var_os("BOOKDB_TRACE").is_some() {
        eprintln!(
            "trace: model {t1:?}, sample prepared {:?}, dictionary and seed {:?} ({} entries)",
            t2 - t1,
            t0.elapsed() - t2,
            entries.len()
        );
    }
    Ok(Trained {
        bytes,
        model,
        dict,
        a_per_entry,
        entries,
        prepared,
    })
}

/// Prepares entries (position coding, move indexing) on all cores.
fn prepare_parallel(
    entries: &[Entry],
    codec: &dyn PositionCodec,
    model: &Arc<dyn PositionModel>,
) -> Result<Vec<block::Prepared>> {
    let threads = seal_threads();
    let chunk = entries.len().div_ceil(threads).max(1);
    let parts: Vec<Result<Vec<block::Prepared>, String>> = std::thread::scope(|s| {
        let handles: Vec<_> = entries
            .chunks(chunk)
            .map(|c| {
                let model = model.clone();
                s.spawn(move || {
                    c.iter()
                        .map(|e| block::prepare(e, codec, &*model))
                        .collect::<Result<Vec<_>, String>>()
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| {
                h.join()
                    .unwrap_or_else(|_| Err("prepare thread panicked".into()))
            })
            .collect()
    });
    let mut out = Vec::with_capacity(entries.len());
    for p in parts {
        out.extend(p.map_err(Error::Invalid)?);
    }
    Ok(out)
}

impl BookWriter {
    pub fn create(
        path: &Path,
        codec: Arc<dyn PositionCodec>,
        opts: WriterOptions,
    ) -> Result<BookWriter> {
        let tmp_path = temp_sibling(path)?;
        let _ = std::fs::remove_file(&tmp_path);
        let db = redb::Builder::new()
            .set_cache_size(opts.cache_bytes)
            .create(&tmp_path)
            .map_err(|e| Error::Db(format!("creating {}: {e}", tmp_path.display())))?;
        Ok(BookWriter {
            final_path: path.to_path_buf(),
            tmp_path,
            db: Some(db),
            codec,
            opts,
            meta: BookMeta::default(),
            held_entries: Vec::new(),
            held_positions: 0,
            model: None,
            dictionary: None,
            last: None,
            batch: Vec::new(),
            batch_bytes: 0,
            imports: Vec::new(),
            seals: 0,
            pool: None,
            reuse: None,
            games_from: Vec::new(),
            takes_coded: false,
        })
    }

    /// Codes positions with `c` (a model and dictionary of an input book) instead of training
    /// new ones on the first entries: the sealing threads start after a few thousand entries
    /// instead of `model_sample` positions and no training time is spent. Any model codes any
    /// position; the file is as dense as the reused model fits the new content (merge uses the
    /// largest input's; compaction retrains). Call before the first [`BookWriter::push`].
    pub fn reuse_compression(&mut self, c: BookCompression) -> Result<()> {
        if self.model.is_some() || !self.held_entries.is_empty() {
            return Err(Error::Invalid(
                "reuse_compression must come before the first entry".into(),
            ));
        }
        self.codec.load_model(&c.model).map_err(Error::Invalid)?;
        self.reuse = Some(c);
        self.takes_coded = true;
        Ok(())
    }

    /// Records in the new book the game fingerprints (`--dedupe`) that `db` holds in a `games`
    /// table ([`super::fpset::sorted_table`]), copied in the last transaction.
    pub fn add_game_fingerprints_from(&mut self, db: Arc<redb::ReadOnlyDatabase>) {
        self.games_from.push(db);
    }

    /// Records in the new book every game fingerprint `book` holds (a rewrite of it, or a
    /// merge). They are copied one by one in the last transaction, never all held in memory.
    pub fn keep_game_fingerprints_of(&mut self, book: &Book) {
        self.games_from.push(book.db.clone());
    }

    /// Import records to store in the new book (input fingerprint → JSON).
    pub fn add_imports(&mut self, records: impl IntoIterator<Item = (String, Vec<u8>)>) {
        self.imports.extend(records);
    }

    /// Adds the next entry; it must sort after the previous one (equal identities are an error).
    pub fn push(&mut self, e: Entry) -> Result<()> {
        let prev = match self.held_entries.last() {
            Some(h) => Some((h.key, h.pos.as_deref())),
            None => self.last.as_ref().map(|(k, p)| (*k, p.as_deref())),
        };
        if let Some((k, p)) = prev {
            let ord = k.cmp(&e.key).then_with(|| p.cmp(&e.pos.as_deref()));
            if ord != std::cmp::Ordering::Less {
                return Err(Error::Invalid(format!(
                    "entries out of order at key {:016x}",
                    e.key
                )));
            }
        }
        if e.moves.is_empty() {
            // Entries without moves carry no information; keep the file canonical.
            return Ok(());
        }
        let mut e = self.resolve_indexed(e)?;
        if !self.takes_coded {
            e.coded = None;
        }
        let same_key = prev.is_some_and(|(k, _)| k == e.key);
        if same_key {
            self.meta.collisions += 1;
        }
        if e.pos.is_some() {
            self.meta.positions += 1;
        } else {
            self.meta.key_only += 1;
        }
        self.meta.pairs += e.moves.len() as u64;
        if self.model.is_none() {
            self.held_positions += usize::from(e.pos.is_some());
            self.held_entries.push(e);
            let hold = if self.reuse.is_some() {
                REUSE_SAMPLE.min(self.opts.model_sample.max(1))
            } else {
                self.opts.model_sample.max(1)
            };
            if self.held_positions >= hold {
                self.train()?;
            }
            return Ok(());
        }
        if !same_key && self.held_entries.len() >= self.segment_entries() {
            // A fresh segment buffer at its full size: growing one copies it into new pages.
            let full = self.held_entries.len() + 64;
            let mut next = self
                .pool
                .as_ref()
                .and_then(|p| p.spare.try_recv().ok())
                .unwrap_or_default();
            next.reserve(full);
            let seg = std::mem::replace(&mut self.held_entries, next);
            self.dispatch(seg, None)?;
        }
        self.held_entries.push(e);
        Ok(())
    }

    /// Entries read by [`Book::iter_for_rewrite`] may hold move indices; an entry whose moves
    /// are all indices is written as it is. One that mixes indices and codes (the same
    /// position from a block and from codes) gets its indices decoded and equal moves merged.
    fn resolve_indexed(&self, mut e: Entry) -> Result<Entry> {
        let indexed = e.moves.iter().filter(|m| m.indexed).count();
        if indexed == 0 || (indexed == e.moves.len() && e.pos.is_some()) {
            return Ok(e);
        }
        let pos = e.pos.as_deref().ok_or_else(|| {
            Error::Invalid(format!(
                "key {:016x}: move indices without a position",
                e.key
            ))
        })?;
        let idx: Vec<u8> = e
            .moves
            .iter()
            .filter(|m| m.indexed)
            .map(|m| m.mv as u8)
            .collect();
        let codes = self.codec.unindex_moves(pos, &idx).map_err(|reason| {
            Error::Invalid(format!(
                "key {:016x}: move indices invalid: {reason}",
                e.key
            ))
        })?;
        for (m, code) in e.moves.iter_mut().filter(|m| m.indexed).zip(codes) {
            m.mv = code;
            m.indexed = false;
        }
        e.normalize();
        Ok(e)
    }

    /// Entries per segment: from the memory options only (not the number of cores), so the
    /// same entries give the same file on any machine.
    fn segment_entries(&self) -> usize {
        (self.opts.commit_bytes / 256).clamp(1024, SEGMENT_ENTRIES)
    }

    /// Segments in flight: two per sealing thread, at most what about four times
    /// `commit_bytes` holds (an entry and its prepared form take ~250 bytes).
    fn max_in_flight(&self) -> u64 {
        let by_memory = 4 * self.opts.commit_bytes / (self.segment_entries() * 250);
        (2 * seal_threads()).min(by_memory).max(2) as u64
    }

    /// Hands a segment (cut between keys) to the sealing pool; writes out finished segments.
    fn dispatch(
        &mut self,
        entries: Vec<Entry>,
        prepared: Option<Vec<block::Prepared>>,
    ) -> Result<()> {
        let Some(last) = entries.last() else {
            return Ok(());
        };
        // The order check of the next push compares with the last entry handed over.
        self.last = Some((last.key, last.pos.clone()));
        while let Some(pool) = self.pool.as_mut()
            && pool.sent - pool.written >= pool.max_in_flight
        {
            pool.receive()?;
            self.write_ready()?;
        }
        let pool = self
            .pool
            .as_mut()
            .ok_or_else(|| Error::Invalid("sealing pool not started".into()))?;
        let seq = pool.sent;
        pool.sent += 1;
        pool.tx
            .as_ref()
            .ok_or_else(|| Error::Invalid("sealing pool closed".into()))?
            .send((seq, entries, prepared))
            .map_err(|_| Error::Invalid("block sealing threads stopped".into()))?;
        while let Ok((seq, res)) = pool.rx.try_recv() {
            pool.done.insert(seq, res.map_err(Error::Invalid)?);
        }
        self.write_ready()
    }

    /// Queues the finished segments that are next in order.
    fn write_ready(&mut self) -> Result<()> {
        while let Some(seg) = self.pool.as_mut().and_then(SealPool::next_ready) {
            self.seals += seg.seals;
            self.meta.raw_bytes += seg.raw_bytes;
            for (k, sealed) in seg.blocks {
                self.meta.blocks += 1;
                self.meta.stored_bytes += sealed.len() as u64;
                self.batch_bytes += sealed.len();
                self.batch.push((k, sealed));
            }
            if self.batch_bytes >= self.opts.commit_bytes {
                self.commit_batch()?;
            }
        }
        Ok(())
    }

    /// Waits for every segment and queues its blocks.
    fn drain_pool(&mut self) -> Result<()> {
        loop {
            self.write_ready()?;
            match &mut self.pool {
                Some(pool) if pool.written < pool.sent => pool.receive()?,
                _ => return Ok(()),
            }
        }
    }

    /// Trains the model and dictionary on the held sample (or takes reused ones), starts the
    /// sealing pool and hands it the sample.
    fn train(&mut self) -> Result<()> {
        let settings = TrainSettings {
            codec: self.codec.clone(),
            dictionary: self.opts.dictionary,
            dictionary_bytes: self.opts.dictionary_bytes,
            level: self.opts.level,
            reuse: self.reuse.take(),
        };
        let t = train_sample(settings, std::mem::take(&mut self.held_entries))?;
        self.model = Some((1, t.model.clone(), t.bytes));
        self.pool = Some(SealPool::start(
            SealContext {
                codec: self.codec.clone(),
                model: t.model,
                model_id: 1,
                limit: self.limit(),
                a_per_entry: t.a_per_entry,
            },
            self.opts.level,
            t.dict.clone().map(|d| (d, 1)),
            self.max_in_flight(),
        )?);
        self.dictionary = t.dict;
        // The sample goes in segments cut between keys, with its prepared forms.
        let seg = self.segment_entries();
        let (mut entries, mut prepared) = (t.entries, t.prepared);
        while !entries.is_empty() {
            let cut = segment_cut(&entries, seg).unwrap_or(entries.len());
            let rest_e = entries.split_off(cut);
            let rest_p = prepared.split_off(cut);
            self.dispatch(entries, Some(prepared))?;
            entries = rest_e;
            prepared = rest_p;
        }
        Ok(())
    }

    pub fn add_games(&mut self, games: u64) {
        self.meta.games += games;
    }

    fn limit(&self) -> usize {
        self.opts.target_block_bytes.max(256)
    }

    fn commit_batch(&mut self) -> Result<()> {
        let db = self
            .db
            .as_ref()
            .ok_or_else(|| Error::Invalid("writer closed".into()))?;
        let mut txn = db.begin_write()?;
        txn.set_durability(redb::Durability::None)
            .map_err(|e| Error::Db(e.to_string()))?;
        {
            let mut t = txn.open_table(BLOCKS)?;
            for (k, v) in self.batch.drain(..) {
                t.insert(k, v.as_slice())?;
            }
        }
        txn.commit()?;
        self.batch_bytes = 0;
        Ok(())
    }

    /// Writes meta, commits durably and moves the file into place. Returns the counters.
    pub fn finish(mut self) -> Result<BookMeta> {
        if self.model.is_none() {
            self.train()?;
        }
        let rest = std::mem::take(&mut self.held_entries);
        self.dispatch(rest, None)?;
        self.drain_pool()?;
        self.pool = None;
        if std::env::var_os("BOOKDB_TRACE").is_some() {
            eprintln!(
                "trace: {} blocks sealed in {} attempts",
                self.meta.blocks, self.seals
            );
        }
        let db = self
            .db
            .take()
            .ok_or_else(|| Error::Invalid("writer closed".into()))?;
        let res = (|| -> Result<()> {
            let txn = db.begin_write()?;
            {
                let mut t = txn.open_table(BLOCKS)?;
                for (k, v) in self.batch.drain(..) {
                    t.insert(k, v.as_slice())?;
                }
                let mut m = txn.open_table(META)?;
                m.insert(META_MAGIC, MAGIC)?;
                m.insert(META_VERSION, FORMAT_VERSION.to_le_bytes().as_slice())?;
                m.insert(META_CODEC, self.codec.name().as_bytes())?;
                let counters =
                    serde_json::to_vec(&self.meta).map_err(|e| Error::Invalid(e.to_string()))?;
                m.insert(META_COUNTERS, counters.as_slice())?;
                if let Some(d) = &self.dictionary {
                    m.insert(format!("{META_DICT_PREFIX}1").as_str(), d.as_slice())?;
                }
                if let Some((id, _, bytes)) = &self.model {
                    m.insert(
                        format!("{META_MODEL_PREFIX}{id}").as_str(),
                        bytes.as_slice(),
                    )?;
                }
                let mut imp = txn.open_table(IMPORTS)?;
                for (k, v) in &self.imports {
                    imp.insert(k.as_str(), v.as_slice())?;
                }
                copy_game_fingerprints(&txn, &self.games_from)?;
                // The delta table always exists, so readers can tell an empty tier.
                txn.open_table(DELTA)?;
            }
            txn.commit()?;
            Ok(())
        })();
        let mut db = db;
        // Return space the allocator reserved but the book does not use.
        let res = res.and_then(|()| {
            while db.compact()? {}
            Ok(())
        });
        drop(db);
        if let Err(e) = res {
            let _ = std::fs::remove_file(&self.tmp_path);
            return Err(e);
        }
        let f =
            std::fs::File::open(&self.tmp_path).map_err(|e| Error::io("reopening new book", e))?;
        f.sync_all()
            .map_err(|e| Error::io("fsync of new book", e))?;
        std::fs::rename(&self.tmp_path, &self.final_path).map_err(|e| {
            Error::io(
                format!("moving new book to {}", self.final_path.display()),
                e,
            )
        })?;
        if let Some(dir) = self
            .final_path
            .parent()
            .filter(|p| !p.as_os_str().is_empty())
            && let Ok(d) = std::fs::File::open(dir)
        {
            let _ = d.sync_all();
        }
        Ok(self.meta.clone())
    }
}

impl Drop for BookWriter {
    fn drop(&mut self) {
        // An unfinished writer leaves no file behind.
        if self.db.take().is_some() {
            let _ = std::fs::remove_file(&self.tmp_path);
        }
    }
}

/// Inserts into `txn`'s `games` table every fingerprint of the `games` tables of `sources`
/// (books, or staging files from [`super::fpset::sorted_table`]), streaming. The table is
/// created only once there is a fingerprint to keep (FORMAT §4.6).
fn copy_game_fingerprints(
    txn: &redb::WriteTransaction,
    sources: &[Arc<redb::ReadOnlyDatabase>],
) -> Result<()> {
    let mut tables = Vec::new();
    for src in sources {
        let rtxn = src.begin_read()?;
        match rtxn.open_table(GAMES) {
            Ok(t) if t.len()? > 0 => tables.push(t),
            Ok(_) | Err(redb::TableError::TableDoesNotExist(_)) => {}
            Err(e) => return Err(e.into()),
        }
    }
    if !tables.is_empty() {
        let mut g = txn.open_table(GAMES)?;
        for t in &tables {
            for item in t.iter()? {
                g.insert(item?.0.value(), ())?;
            }
        }
    }
    Ok(())
}

/// A planned change to the delta tier: the merged values to write (in a run file, so that
/// memory stays bounded whatever the import's size) and the counters after it.
pub struct DeltaPlan {
    /// Run file (FORMAT §8.4) of the delta values to write, in key order.
    pub values: PathBuf,
    pub meta: BookMeta,
    pub imports: Vec<(String, Vec<u8>)>,
    /// Game fingerprints to record (`--dedupe`): a file holding them in a `games` table
    /// ([`super::fpset::sorted_table`]).
    pub games: Option<Arc<redb::ReadOnlyDatabase>>,
}

/// Computes, with read-only lookups, what adding `new` (sorted by identity, each identity
/// once) to the book's delta tier changes. The delta values go to a run file at `values`.
pub fn plan_delta(
    book: &Book,
    new: impl IntoIterator<Item = Result<Entry>>,
    games: u64,
    values: &Path,
) -> Result<DeltaPlan> {
    let mut meta = book.meta().clone();
    meta.games += games;
    let mut out = super::run::RunWriter::create(values)?;
    let mut prev_key: Option<u64> = None;
    for e in new {
        let e = e?;
        let in_blocks = match &e.pos {
            Some(p) => book.lookup_blocks(p)?,
            None => book
                .get_blocks(e.key)?
                .into_iter()
                .find(|x| x.pos.is_none()),
        };
        let in_delta = book.delta_get(e.key, e.pos.as_deref())?;
        let old_pairs = match (&in_blocks, &in_delta) {
            (None, None) => None,
            (a, b) => {
                let mut m = a.clone().or_else(|| b.clone()).unwrap_or_default();
                if let (Some(_), Some(b)) = (a, b) {
                    m.merge(b.clone());
                }
                Some(m)
            }
        };
        let mut merged = old_pairs.clone().unwrap_or_else(|| Entry {
            coded: None,
            key: e.key,
            pos: e.pos.clone(),
            moves: Vec::new(),
        });
        merged.merge(e.clone());
        let old_len = old_pairs.as_ref().map_or(0, |o| o.moves.len());
        meta.pairs += (merged.moves.len() - old_len) as u64;
        if old_pairs.is_none() {
            if e.pos.is_some() {
                meta.positions += 1;
            } else {
                meta.key_only += 1;
            }
            let key_taken = prev_key == Some(e.key) || !book.get(e.key)?.is_empty();
            if key_taken {
                meta.collisions += 1;
            }
        }
        prev_key = Some(e.key);
        let mut value = in_delta.clone().unwrap_or_else(|| Entry {
            coded: None,
            key: e.key,
            pos: e.pos.clone(),
            moves: Vec::new(),
        });
        if in_delta.is_none() {
            meta.delta_entries += 1;
        }
        value.merge(e);
        out.push(&value)?;
    }
    out.finish()?;
    Ok(DeltaPlan {
        values: values.to_path_buf(),
        meta,
        imports: Vec::new(),
        games: None,
    })
}

/// Why a delta commit could not happen.
#[derive(Debug)]
pub enum DeltaCommitError {
    /// Another process has the book open; the caller may rewrite the file instead.
    Busy,
    Other(Error),
}

/// Writes a delta plan in one durable transaction, with a redb cache of `cache_bytes` (redb's
/// default, 1 GiB, would let the transaction's dirty pages grow past an import's budget).
pub fn commit_delta(
    path: &Path,
    plan: &DeltaPlan,
    cache_bytes: usize,
) -> Result<(), DeltaCommitError> {
    let db = match redb::Builder::new().set_cache_size(cache_bytes).open(path) {
        Ok(db) => db,
        Err(redb::DatabaseError::DatabaseAlreadyOpen) => return Err(DeltaCommitError::Busy),
        Err(e) => return Err(DeltaCommitError::Other(e.into())),
    };
    let run = || -> Result<()> {
        let txn = db.begin_write()?;
        {
            let mut d = txn.open_table(DELTA)?;
            for e in super::run::RunReader::open(&plan.values)? {
                let e = e?;
                let v = encode_delta(&e);
                d.insert((e.key, e.pos.as_deref().unwrap_or_default()), v.as_slice())?;
            }
            let mut imp = txn.open_table(IMPORTS)?;
            for (k, v) in &plan.imports {
                imp.insert(k.as_str(), v.as_slice())?;
            }
            copy_game_fingerprints(&txn, plan.games.as_slice())?;
            let mut m = txn.open_table(META)?;
            let counters =
                serde_json::to_vec(&plan.meta).map_err(|e| Error::Invalid(e.to_string()))?;
            m.insert(META_COUNTERS, counters.as_slice())?;
        }
        txn.commit()?;
        Ok(())
    };
    run().map_err(DeltaCommitError::Other)?;
    // Copy-on-write leaves the file with free pages; give them back (best effort: the
    // commit above is already durable).
    let mut db = db;
    while let Ok(true) = db.compact() {}
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chess::{PosState, encode_move, tests_support::sample_positions};
    use crate::store::MoveRec;
    use shakmaty::Position;

    /// Entries for the sample positions: a few legal moves each, with counts from `seed`.
    fn entries(seed: u64, every: usize) -> Vec<Entry> {
        let codec = crate::chess_codec();
        let mut out: Vec<Entry> = sample_positions()
            .into_iter()
            .enumerate()
            .filter(|(i, _)| i % every == 0)
            .map(|(i, pos)| {
                let chess = PosState::unpack(&pos).unwrap().to_chess().unwrap();
                let mut moves: Vec<MoveRec> = chess
                    .legal_moves()
                    .iter()
                    .enumerate()
                    .filter(|(j, _)| (j + i + seed as usize).is_multiple_of(5))
                    .map(|(j, m)| MoveRec {
                        mv: encode_move(m),
                        white: seed + j as u64,
                        draws: 1,
                        ..Default::default()
                    })
                    .collect();
                moves.sort_by_key(|m| m.mv);
                Entry {
                    coded: None,
                    key: codec.key(&pos).unwrap(),
                    pos: Some(pos),
                    moves,
                }
            })
            .collect();
        out.sort_by(Entry::cmp_id);
        out
    }

    fn write(path: &Path, entries: impl IntoIterator<Item = Result<Entry>>) -> BookMeta {
        let mut w =
            BookWriter::create(path, crate::chess_codec(), WriterOptions::default()).unwrap();
        for e in entries {
            w.push(e.unwrap()).unwrap();
        }
        w.finish().unwrap()
    }

    fn all(path: &Path) -> Vec<Entry> {
        let b = Book::open(path, crate::chess_codec()).unwrap();
        b.iter().unwrap().map(Result::unwrap).collect()
    }

    /// A rewrite that reads blocks with their moves still indexed, merged with code-form
    /// entries of some of the same positions, writes the same book as one reading codes.
    #[test]
    fn rewrite_with_indices_equals_rewrite_with_codes() {
        let dir = tempfile::tempdir().unwrap();
        let a = dir.path().join("a.book");
        // Raw codes may have any bits, the top one included: a key-only entry, and a position
        // whose moves cannot be indexed (one is not legal there) so they are stored raw.
        let mut base = entries(1, 1);
        base.push(Entry {
            coded: None,
            key: 0x00ff_0000_0000_0001,
            pos: None,
            moves: vec![MoveRec {
                mv: 0x8123,
                white: 1,
                ..Default::default()
            }],
        });
        base[0].moves.push(MoveRec {
            mv: 0x9001,
            draws: 2,
            ..Default::default()
        });
        base[0].normalize();
        base.sort_by(Entry::cmp_id);
        write(&a, base.clone().into_iter().map(Ok));
        assert_eq!(all(&a), base, "round trip");
        let book = Book::open(&a, crate::chess_codec()).unwrap();
        let indexed: Vec<Entry> = book
            .iter_for_rewrite()
            .unwrap()
            .map(Result::unwrap)
            .collect();
        let raw = |e: &Entry| e.pos.is_none() || e.moves.iter().any(|m| m.mv == 0x9001);
        assert!(
            indexed
                .iter()
                .all(|e| e.moves.iter().all(|m| m.indexed != raw(e))),
            "block entries keep their indices, raw moves stay codes"
        );
        assert!(
            book.iter()
                .unwrap()
                .all(|e| e.unwrap().moves.iter().all(|m| !m.indexed)),
            "plain iteration decodes them"
        );
        let extra = entries(2, 3);
        let (via_idx, via_codes) = (dir.path().join("i.book"), dir.path().join("c.book"));
        let m1 = write(
            &via_idx,
            MergeIter::new(vec![
                Box::new(book.iter_for_rewrite().unwrap())
                    as Box<dyn Iterator<Item = Result<Entry>>>,
                Box::new(extra.clone().into_iter().map(Ok)),
            ]),
        );
        let m2 = write(
            &via_codes,
            MergeIter::new(vec![
                Box::new(book.iter().unwrap()) as Box<dyn Iterator<Item = Result<Entry>>>,
                Box::new(extra.into_iter().map(Ok)),
            ]),
        );
        assert_eq!(m1.pairs, m2.pairs);
        assert_eq!(m1.positions, m2.positions);
        assert_eq!(all(&via_idx), all(&via_codes));
    }

    /// A writer told to reuse a book's model stores that book's coded positions as they are
    /// and codes the others (another book's, whose model differs) again; the result equals a
    /// rewrite that trains its own model. A writer not reusing a model ignores `coded`.
    #[test]
    fn reused_model_takes_coded_positions_of_its_own_book_only() {
        let dir = tempfile::tempdir().unwrap();
        let (a, b) = (dir.path().join("a.book"), dir.path().join("b.book"));
        write(&a, entries(1, 1).into_iter().map(Ok));
        write(&b, entries(2, 3).into_iter().map(Ok));
        let (ba, bb) = (
            Book::open(&a, crate::chess_codec()).unwrap(),
            Book::open(&b, crate::chess_codec()).unwrap(),
        );
        let comp = ba.compression().expect("a written book has one model");
        assert_ne!(
            comp.model,
            bb.compression().unwrap().model,
            "books trained on different samples have different models"
        );
        let model = crate::chess_codec().load_model(&comp.model).unwrap();
        let from_a: Vec<Entry> = ba
            .iter_for_rewrite_coded(Some(&comp))
            .unwrap()
            .map(Result::unwrap)
            .collect();
        for e in &from_a {
            let mut again = Vec::new();
            model.encode(e.pos.as_deref().unwrap(), &mut again).unwrap();
            assert_eq!(
                e.coded.as_ref(),
                Some(&again),
                "stored bytes are the model's code"
            );
        }
        assert!(
            bb.iter_for_rewrite_coded(Some(&comp))
                .unwrap()
                .all(|e| e.unwrap().coded.is_none()),
            "another model's bytes are not handed on"
        );
        let streams = || {
            MergeIter::new(vec![
                Box::new(ba.iter_for_rewrite_coded(Some(&comp)).unwrap())
                    as Box<dyn Iterator<Item = Result<Entry>>>,
                Box::new(bb.iter_for_rewrite_coded(Some(&comp)).unwrap()),
            ])
        };
        let (reused, trained) = (dir.path().join("r.book"), dir.path().join("t.book"));
        let mut w =
            BookWriter::create(&reused, crate::chess_codec(), WriterOptions::default()).unwrap();
        w.reuse_compression(comp.clone()).unwrap();
        for e in streams() {
            w.push(e.unwrap()).unwrap();
        }
        w.finish().unwrap();
        // Not told to reuse: the (valid, but foreign) coded bytes must be ignored; garbage
        // shows that they are.
        write(
            &trained,
            streams().map(|e| {
                e.map(|mut e| {
                    e.coded = e.coded.map(|_| vec![0xff; 3]);
                    e
                })
            }),
        );
        assert_eq!(all(&reused), all(&trained));
        let out = Book::open(&reused, crate::chess_codec()).unwrap();
        assert_eq!(out.compression().unwrap().model, comp.model);
        assert_eq!(out.meta().positions, all(&trained).len() as u64);
    }
}

//! The book file: a redb database with a `meta` table and a `blocks` table (first key of a
//! block → block). See docs/FORMAT.md.

use std::collections::{HashMap, VecDeque};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use redb::{ReadableDatabase, ReadableTable, ReadableTableMetadata, TableDefinition};
use serde::{Deserialize, Serialize};

use super::block::{self, BlockView};
use super::entry::Entry;
use super::PositionCodec;
use crate::error::{Corruption, Error, Result};

pub const META: TableDefinition<&str, &[u8]> = TableDefinition::new("meta");
pub const BLOCKS: TableDefinition<u64, &[u8]> = TableDefinition::new("blocks");

pub const MAGIC: &[u8] = b"bookdb";
/// Book format version written by this build. See migrations/README.md.
pub const FORMAT_VERSION: u32 = 1;

pub const META_MAGIC: &str = "magic";
pub const META_VERSION: &str = "format_version";
pub const META_CODEC: &str = "codec";
pub const META_COUNTERS: &str = "counters";
pub const META_DICT_PREFIX: &str = "dict/";

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
}

/// Options for writing blocks.
#[derive(Clone, Debug)]
pub struct WriterOptions {
    /// A block is closed once its raw payload reaches about this many bytes.
    pub target_raw_bytes: usize,
    /// zstd level.
    pub level: i32,
    /// Train a zstd dictionary on the first blocks and use it for all.
    pub dictionary: bool,
    /// Dictionary size in bytes.
    pub dictionary_bytes: usize,
}

impl Default for WriterOptions {
    fn default() -> Self {
        WriterOptions {
            target_raw_bytes: 24 * 1024,
            level: 9,
            dictionary: true,
            dictionary_bytes: 16 * 1024,
        }
    }
}

fn not_a_book(path: &Path, reason: impl Into<String>) -> Error {
    Error::NotABook {
        path: path.to_path_buf(),
        reason: reason.into(),
    }
}

/// A book opened for reading.
pub struct Book {
    path: PathBuf,
    db: redb::ReadOnlyDatabase,
    codec: Arc<dyn PositionCodec>,
    meta: BookMeta,
    dicts: HashMap<u16, Arc<Vec<u8>>>,
}

impl std::fmt::Debug for Book {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Book").field("path", &self.path).field("meta", &self.meta).finish()
    }
}

impl Book {
    /// Opens an existing book read-only, checking magic, version and codec.
    pub fn open(path: &Path, codec: Arc<dyn PositionCodec>) -> Result<Book> {
        if !path.exists() {
            return Err(Error::BookNotFound {
                path: path.to_path_buf(),
            });
        }
        let db = redb::ReadOnlyDatabase::open(path).map_err(|e| match e {
            redb::DatabaseError::Storage(redb::StorageError::Io(io)) => {
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
            .ok_or_else(|| Error::Corrupt(Corruption::Meta("format_version missing or malformed".into())))?;
        if version != FORMAT_VERSION {
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
            Some(bytes) => serde_json::from_slice(&bytes)
                .map_err(|e| Error::Corrupt(Corruption::Meta(format!("counters unreadable: {e}"))))?,
            None => return Err(Error::Corrupt(Corruption::Meta("counters missing".into()))),
        };
        let mut dicts = HashMap::new();
        for item in meta_table.range(META_DICT_PREFIX..)? {
            let (k, v) = item?;
            let Some(id) = k.value().strip_prefix(META_DICT_PREFIX) else {
                break;
            };
            let id: u16 = id
                .parse()
                .map_err(|_| Error::Corrupt(Corruption::Meta(format!("bad dictionary key {:?}", k.value()))))?;
            dicts.insert(id, Arc::new(v.value().to_vec()));
        }
        drop(meta_table);
        drop(txn);
        Ok(Book {
            path: path.to_path_buf(),
            db,
            codec,
            meta,
            dicts,
        })
    }

    pub fn path(&self) -> &Path {
        &self.path
    }
    pub fn meta(&self) -> &BookMeta {
        &self.meta
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

    fn open_raw(&self, block_key: u64, bytes: &[u8]) -> Result<(usize, Vec<u8>), Corruption> {
        let (h, raw) = block::open_block(block_key, bytes, &|id| self.dicts.get(&id).cloned())?;
        Ok((h.count as usize, raw))
    }

    /// All entries with this key (more than one only on a key collision).
    pub fn get(&self, key: u64) -> Result<Vec<Entry>> {
        let txn = self.db.begin_read()?;
        let table = match txn.open_table(BLOCKS) {
            Ok(t) => t,
            Err(redb::TableError::TableDoesNotExist(_)) => return Ok(Vec::new()),
            Err(e) => return Err(e.into()),
        };
        let Some(item) = table.range(..=key)?.next_back() else {
            return Ok(Vec::new());
        };
        let (k, v) = item?;
        let block_key = k.value();
        let (count, raw) = self.open_raw(block_key, v.value())?;
        let view = BlockView::parse(block_key, count, &raw, self.codec.planes())?;
        Ok(view.find(key, &*self.codec)?)
    }

    /// The entry holding exactly this encoded position.
    pub fn lookup(&self, pos: &[u8]) -> Result<Option<Entry>> {
        let key = self.codec.key(pos).map_err(Error::Invalid)?;
        Ok(self
            .get(key)?
            .into_iter()
            .find(|e| e.pos.as_deref() == Some(pos)))
    }

    /// Iterates all entries in (key, position) order, block by block.
    pub fn iter(&self) -> Result<BookIter<'_>> {
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
        })
    }

    /// Iterates raw blocks: (first key, stored bytes). Used by `verify` and `stats`.
    pub fn for_each_block(&self, mut f: impl FnMut(u64, &[u8]) -> Result<()>) -> Result<()> {
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

    /// Decodes one stored block completely (for `verify`).
    pub fn decode_block(&self, block_key: u64, bytes: &[u8]) -> Result<Vec<Entry>, Corruption> {
        let (count, raw) = self.open_raw(block_key, bytes)?;
        let view = BlockView::parse(block_key, count, &raw, self.codec.planes())?;
        view.entries(&*self.codec)
    }
}

/// Iterator over all entries of a book in key order.
pub struct BookIter<'a> {
    book: &'a Book,
    table: Option<redb::ReadOnlyTable<u64, &'static [u8]>>,
    next_key: Option<u64>,
    buf: VecDeque<Entry>,
}

impl Iterator for BookIter<'_> {
    type Item = Result<Entry>;

    fn next(&mut self) -> Option<Result<Entry>> {
        loop {
            if let Some(e) = self.buf.pop_front() {
                return Some(Ok(e));
            }
            let from = self.next_key?;
            let table = self.table.as_ref()?;
            let item = match table.range(from..) {
                Ok(mut r) => r.next()?,
                Err(e) => {
                    self.next_key = None;
                    return Some(Err(e.into()));
                }
            };
            let (k, v) = match item {
                Ok(kv) => kv,
                Err(e) => {
                    self.next_key = None;
                    return Some(Err(e.into()));
                }
            };
            let block_key = k.value();
            self.next_key = block_key.checked_add(1);
            match self.book.decode_block(block_key, v.value()) {
                Ok(entries) => self.buf.extend(entries),
                Err(e) => {
                    self.next_key = None;
                    return Some(Err(e.into()));
                }
            }
        }
    }
}

/// Writes a new book file from entries given in (key, position) order. The file appears at its
/// final path only when [`BookWriter::finish`] succeeds (temporary file, fsync, rename).
pub struct BookWriter {
    final_path: PathBuf,
    tmp_path: PathBuf,
    db: Option<redb::Database>,
    codec: Arc<dyn PositionCodec>,
    opts: WriterOptions,
    meta: BookMeta,
    /// Entries of the block being filled.
    pending: Vec<Entry>,
    pending_raw: usize,
    /// Raw payloads held back until the dictionary is trained: (first key, count, raw).
    held: Vec<(u64, usize, Vec<u8>)>,
    held_bytes: usize,
    compressor: Option<(zstd::bulk::Compressor<'static>, u16)>,
    dictionary: Option<Vec<u8>>,
    last: Option<(u64, Option<Vec<u8>>)>,
    /// Written blocks not yet committed.
    batch: Vec<(u64, Vec<u8>)>,
    batch_bytes: usize,
}

/// Blocks are committed in transactions of about this many bytes.
const COMMIT_BYTES: usize = 64 << 20;
/// Raw bytes sampled before a dictionary is trained.
const DICT_SAMPLE_BYTES: usize = 4 << 20;

impl BookWriter {
    pub fn create(path: &Path, codec: Arc<dyn PositionCodec>, opts: WriterOptions) -> Result<BookWriter> {
        let dir = path.parent().filter(|p| !p.as_os_str().is_empty()).unwrap_or(Path::new("."));
        let name = path
            .file_name()
            .ok_or_else(|| Error::Invalid(format!("{}: not a file path", path.display())))?;
        let tmp_path = dir.join(format!(
            ".{}.tmp-{}",
            name.to_string_lossy(),
            std::process::id()
        ));
        let _ = std::fs::remove_file(&tmp_path);
        let db = redb::Database::create(&tmp_path)
            .map_err(|e| Error::Db(format!("creating {}: {e}", tmp_path.display())))?;
        Ok(BookWriter {
            final_path: path.to_path_buf(),
            tmp_path,
            db: Some(db),
            codec,
            opts,
            meta: BookMeta::default(),
            pending: Vec::new(),
            pending_raw: 0,
            held: Vec::new(),
            held_bytes: 0,
            compressor: None,
            dictionary: None,
            last: None,
            batch: Vec::new(),
            batch_bytes: 0,
        })
    }

    /// Adds the next entry; it must sort after the previous one (equal identities are an error).
    pub fn push(&mut self, e: Entry) -> Result<()> {
        if let Some((k, p)) = &self.last {
            let ord = k.cmp(&e.key).then_with(|| p.as_deref().cmp(&e.pos.as_deref()));
            if ord != std::cmp::Ordering::Less {
                return Err(Error::Invalid(format!(
                    "entries out of order at key {:016x}",
                    e.key
                )));
            }
            if *k == e.key {
                self.meta.collisions += 1;
            }
        }
        if e.moves.is_empty() {
            // Entries without moves carry no information; keep the file canonical.
            self.last = Some((e.key, e.pos));
            return Ok(());
        }
        let same_key = self.last.as_ref().is_some_and(|(k, _)| *k == e.key);
        if self.pending_raw >= self.opts.target_raw_bytes && !same_key {
            self.flush_block()?;
        }
        self.pending_raw += self.codec.planes() + 4 + 12 * e.moves.len();
        if e.pos.is_some() {
            self.meta.positions += 1;
        } else {
            self.meta.key_only += 1;
        }
        self.meta.pairs += e.moves.len() as u64;
        self.last = Some((e.key, e.pos.clone()));
        self.pending.push(e);
        Ok(())
    }

    pub fn add_games(&mut self, games: u64) {
        self.meta.games += games;
    }

    fn flush_block(&mut self) -> Result<()> {
        if self.pending.is_empty() {
            return Ok(());
        }
        let entries = std::mem::take(&mut self.pending);
        self.pending_raw = 0;
        let raw = block::build_payload(&entries, &*self.codec).map_err(Error::Invalid)?;
        let first = entries[0].key;
        if self.opts.dictionary && self.compressor.is_none() {
            self.held_bytes += raw.len();
            self.held.push((first, entries.len(), raw));
            if self.held_bytes >= DICT_SAMPLE_BYTES {
                self.start_compressor()?;
            }
            return Ok(());
        }
        if self.compressor.is_none() {
            self.start_compressor()?;
        }
        self.seal_and_queue(first, entries.len(), &raw)
    }

    /// Trains the dictionary on held blocks (if enough) and writes them out.
    fn start_compressor(&mut self) -> Result<()> {
        let held = std::mem::take(&mut self.held);
        let mut dict = None;
        if self.opts.dictionary && held.len() >= 16 {
            let samples: Vec<&[u8]> = held.iter().map(|(_, _, r)| r.as_slice()).collect();
            if let Ok(d) = zstd::dict::from_samples(&samples, self.opts.dictionary_bytes) {
                dict = Some(d);
            }
        }
        let comp = match &dict {
            Some(d) => zstd::bulk::Compressor::with_dictionary(self.opts.level, d),
            None => zstd::bulk::Compressor::new(self.opts.level),
        }
        .map_err(|e| Error::io("starting zstd", e))?;
        let id = if dict.is_some() { 1 } else { 0 };
        self.dictionary = dict;
        self.compressor = Some((comp, id));
        for (first, count, raw) in held {
            self.seal_and_queue(first, count, &raw)?;
        }
        Ok(())
    }

    fn seal_and_queue(&mut self, first: u64, count: usize, raw: &[u8]) -> Result<()> {
        let (comp, id) = self
            .compressor
            .as_mut()
            .ok_or_else(|| Error::Invalid("compressor not started".into()))?;
        let sealed = block::seal(count, raw, Some((comp, *id))).map_err(|e| Error::io("zstd", e))?;
        self.meta.blocks += 1;
        self.meta.raw_bytes += raw.len() as u64;
        self.meta.stored_bytes += sealed.len() as u64;
        self.batch_bytes += sealed.len();
        self.batch.push((first, sealed));
        if self.batch_bytes >= COMMIT_BYTES {
            self.commit_batch()?;
        }
        Ok(())
    }

    fn commit_batch(&mut self) -> Result<()> {
        let db = self.db.as_ref().ok_or_else(|| Error::Invalid("writer closed".into()))?;
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
        self.flush_block()?;
        if self.compressor.is_none() {
            self.start_compressor()?;
        }
        let db = self.db.take().ok_or_else(|| Error::Invalid("writer closed".into()))?;
        {
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
                let counters = serde_json::to_vec(&self.meta).map_err(|e| Error::Invalid(e.to_string()))?;
                m.insert(META_COUNTERS, counters.as_slice())?;
                if let Some(d) = &self.dictionary {
                    m.insert(format!("{META_DICT_PREFIX}1").as_str(), d.as_slice())?;
                }
            }
            txn.commit()?;
        }
        drop(db);
        let f = std::fs::File::open(&self.tmp_path).map_err(|e| Error::io("reopening new book", e))?;
        f.sync_all().map_err(|e| Error::io("fsync of new book", e))?;
        std::fs::rename(&self.tmp_path, &self.final_path)
            .map_err(|e| Error::io(format!("moving new book to {}", self.final_path.display()), e))?;
        if let Some(dir) = self.final_path.parent().filter(|p| !p.as_os_str().is_empty())
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

//! One published transposition-table file (docs/FORMAT.md §14.2): a redb database with a
//! `meta` table (what the table holds, the generation, the key filter) and a `tt` table of
//! (key, exact position) → coded entry; written once, immutable once its name exists.

use std::path::{Path, PathBuf};

use redb::{ReadableDatabase, ReadableTableMetadata, TableDefinition};

use super::entry::{self, Entry};
use super::hash::KeyHash;
use crate::store::book::{FileId, META, shield};
use crate::store::error::{Corruption, Error, Result};
use crate::store::files::create_temp;
use crate::store::filter::KeyFilter;

/// The key of a position from its exact bytes (`None`: the bytes are no position).
pub type KeyOf<'a> = dyn Fn(&[u8]) -> Option<u64> + 'a;

/// (key, exact position bytes) → coded [`Entry`] (§14.3).
pub(crate) const TT: TableDefinition<(u64, &[u8]), &[u8]> = TableDefinition::new("tt");

/// The `magic` meta value of a table file (a book's is `bookdb`).
pub const MAGIC: &[u8] = b"bookdb-tt";
/// The table format version this build writes and reads.
pub const TT_VERSION: u32 = 1;

const META_MAGIC: &str = "magic";
const META_VERSION: &str = "tt_version";
const META_GAME: &str = "game";
const META_KEY_BITS: &str = "key_bits";
const META_HASH: &str = "hash";
const META_GENERATION: &str = "generation";
const META_ENTRIES: &str = "entries";
const META_SEARCHES: &str = "searches";
const META_FILTER: &str = "filter";

/// What a table holds, fixed when it is created and checked on every open: the game whose
/// positions it keys (its name, e.g. `othello`), how many low bits of each key it keeps (64;
/// fewer only to force collisions in tests) and the hash of opaque states.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TableKind {
    pub game: String,
    pub key_bits: u8,
    pub hash: KeyHash,
}

impl TableKind {
    /// `key` with only the bits this table keeps.
    #[inline]
    pub fn mask(&self, key: u64) -> u64 {
        if self.key_bits >= 64 {
            key
        } else {
            key & ((1u64 << self.key_bits) - 1)
        }
    }
}

/// One stored position: its key, its exact bytes and its entry.
pub(crate) type Item = (u64, Box<[u8]>, Entry);

/// What a written file holds.
pub(crate) struct Written {
    pub entries: u64,
    /// The largest generation among its entries.
    pub searches: u32,
}

fn corrupt_meta(path: &Path, what: impl Into<String>) -> Error {
    Error::CorruptFile {
        path: path.to_path_buf(),
        corruption: Corruption::Meta(what.into()),
    }
}

/// Writes `items` (ascending (key, exact), no duplicate) into a new redb file at `tmp` with
/// the meta of `kind` and `generation`; `capacity` (at least the items' count) sizes the key
/// filter. The file is committed durably; publishing it is the caller's.
pub(crate) fn write_file(
    tmp: &Path,
    kind: &TableKind,
    generation: u64,
    capacity: u64,
    items: &mut dyn Iterator<Item = Result<Item>>,
) -> Result<Written> {
    let file = create_temp(tmp)?;
    let db = redb::backends::FileBackend::new(file)
        .and_then(|backend| {
            redb::Builder::new()
                .set_cache_size(16 << 20)
                .create_with_backend(backend)
        })
        .map_err(|e| Error::db(format!("creating {}", tmp.display()), e))?;
    let mut filter = KeyFilter::with_capacity(capacity);
    let mut written = Written {
        entries: 0,
        searches: 0,
    };
    let txn = db.begin_write()?;
    {
        let mut t = txn.open_table(TT)?;
        let mut bytes = Vec::with_capacity(32);
        let mut last: Option<(u64, Box<[u8]>)> = None;
        for item in items {
            let (key, exact, e) = item?;
            if last
                .as_ref()
                .is_some_and(|(k, x)| (*k, &**x) >= (key, &*exact))
            {
                return Err(Error::Internal(format!(
                    "table entries out of order at key {key:016x}"
                )));
            }
            bytes.clear();
            entry::encode(&e, &mut bytes);
            t.insert((key, &*exact), bytes.as_slice())?;
            filter.insert(key);
            written.entries += 1;
            written.searches = written.searches.max(e.generation);
            last = Some((key, exact));
        }
        let mut m = txn.open_table(META)?;
        m.insert(META_MAGIC, MAGIC)?;
        m.insert(META_VERSION, TT_VERSION.to_le_bytes().as_slice())?;
        m.insert(META_GAME, kind.game.as_bytes())?;
        m.insert(META_KEY_BITS, [kind.key_bits].as_slice())?;
        m.insert(META_HASH, kind.hash.name().as_bytes())?;
        m.insert(META_GENERATION, generation.to_le_bytes().as_slice())?;
        m.insert(META_ENTRIES, written.entries.to_le_bytes().as_slice())?;
        m.insert(META_SEARCHES, written.searches.to_le_bytes().as_slice())?;
        m.insert(META_FILTER, filter.encode().as_slice())?;
    }
    txn.commit().map_err(|e| Error::from(e).writing(tmp))?;
    Ok(written)
}

/// What a probe of one file found for one (key, exact position).
#[derive(Default)]
pub(crate) struct Found {
    pub entry: Option<Entry>,
    /// Another position is stored under the same key.
    pub collision: bool,
}

/// An open, published table file.
pub(crate) struct TtFile {
    pub path: PathBuf,
    pub id: FileId,
    pub generation: u64,
    pub entries: u64,
    pub searches: u32,
    filter: Option<KeyFilter>,
    table: redb::ReadOnlyTable<(u64, &'static [u8]), &'static [u8]>,
    _db: redb::ReadOnlyDatabase,
}

fn meta_u64(path: &Path, v: Option<Vec<u8>>, what: &str) -> Result<u64> {
    v.and_then(|b| <[u8; 8]>::try_from(b.as_slice()).ok())
        .map(u64::from_le_bytes)
        .ok_or_else(|| corrupt_meta(path, format!("{what} missing or malformed")))
}

impl TtFile {
    /// Opens the table file at `path`, checking that it holds `kind` (a table of another game,
    /// key width or hash is a usage error) and that its generation is `generation` when one is
    /// expected. `cache` is redb's read cache; `with_filter` loads the key filter.
    pub(crate) fn open(
        path: &Path,
        kind: Option<&TableKind>,
        generation: Option<u64>,
        cache: usize,
        with_filter: bool,
    ) -> Result<(TtFile, TableKind)> {
        shield("opening a transposition table", || {
            Self::open_unshielded(path, kind, generation, cache, with_filter)
        })
        .map_err(|e| e.in_file(path))
    }

    fn open_unshielded(
        path: &Path,
        kind: Option<&TableKind>,
        generation: Option<u64>,
        cache: usize,
        with_filter: bool,
    ) -> Result<(TtFile, TableKind)> {
        let file = std::fs::File::open(path)
            .map_err(|e| Error::io(format!("opening {}", path.display()), e))?;
        let id = FileId::of(
            &file
                .metadata()
                .map_err(|e| Error::io(format!("reading {}", path.display()), e))?,
        );
        let db = redb::backends::FileBackend::new(file)
            .and_then(|b| {
                redb::Builder::new()
                    .set_cache_size(cache)
                    .open_read_only_with_backend(b)
            })
            .map_err(|e| match e {
                redb::DatabaseError::Storage(s) => Error::CorruptFile {
                    path: path.to_path_buf(),
                    corruption: Corruption::Storage(s.to_string()),
                },
                other => Error::NotABook {
                    path: path.to_path_buf(),
                    reason: format!("not a transposition table: {other}"),
                },
            })?;
        let txn = db.begin_read()?;
        let meta = txn
            .open_table(META)
            .map_err(|e| corrupt_meta(path, format!("the meta table cannot be read: {e}")))?;
        let get =
            |k: &str| -> Result<Option<Vec<u8>>> { Ok(meta.get(k)?.map(|v| v.value().to_vec())) };
        if get(META_MAGIC)?.as_deref() != Some(MAGIC) {
            return Err(Error::NotABook {
                path: path.to_path_buf(),
                reason: "not a transposition table (no bookdb-tt magic)".into(),
            });
        }
        let version = get(META_VERSION)?
            .and_then(|b| <[u8; 4]>::try_from(b.as_slice()).ok())
            .map(u32::from_le_bytes)
            .ok_or_else(|| corrupt_meta(path, "tt_version missing or malformed"))?;
        if version != TT_VERSION {
            return Err(Error::UnsupportedVersion {
                path: path.to_path_buf(),
                found: version,
                supported: TT_VERSION,
            });
        }
        let found = TableKind {
            game: String::from_utf8(get(META_GAME)?.unwrap_or_default())
                .map_err(|_| corrupt_meta(path, "game is not UTF-8"))?,
            key_bits: match get(META_KEY_BITS)?.as_deref() {
                Some(&[b]) if (1..=64).contains(&b) => b,
                _ => return Err(corrupt_meta(path, "key_bits missing or not in 1..=64")),
            },
            hash: get(META_HASH)?
                .and_then(|b| KeyHash::from_name(std::str::from_utf8(&b).ok()?))
                .ok_or_else(|| corrupt_meta(path, "hash missing or unknown"))?,
        };
        if let Some(k) = kind
            && *k != found
        {
            return Err(Error::Usage(format!(
                "{}: a table of {} ({} key bits, hash {}), not of {} ({} key bits, hash {})",
                path.display(),
                found.game,
                found.key_bits,
                found.hash.name(),
                k.game,
                k.key_bits,
                k.hash.name()
            )));
        }
        let file_generation = meta_u64(path, get(META_GENERATION)?, "generation")?;
        if let Some(g) = generation
            && g != file_generation
        {
            return Err(corrupt_meta(
                path,
                format!("generation {file_generation}, but its name says {g}"),
            ));
        }
        let entries = meta_u64(path, get(META_ENTRIES)?, "entries")?;
        let searches = get(META_SEARCHES)?
            .and_then(|b| <[u8; 4]>::try_from(b.as_slice()).ok())
            .map(u32::from_le_bytes)
            .ok_or_else(|| corrupt_meta(path, "searches missing or malformed"))?;
        let filter = match with_filter {
            false => None,
            true => Some(
                KeyFilter::decode(&get(META_FILTER)?.unwrap_or_default())
                    .map_err(|e| corrupt_meta(path, format!("key filter: {e}")))?,
            ),
        };
        drop(meta);
        let table = txn
            .open_table(TT)
            .map_err(|e| corrupt_meta(path, format!("the tt table cannot be read: {e}")))?;
        Ok((
            TtFile {
                path: path.to_path_buf(),
                id,
                generation: file_generation,
                entries,
                searches,
                filter,
                table,
                _db: db,
            },
            found,
        ))
    }

    /// The key filter as the open file stores it.
    fn stored_filter(&self) -> Result<KeyFilter> {
        shield("reading a transposition table's filter", || {
            let txn = self._db.begin_read()?;
            let meta = txn.open_table(META).map_err(|e| {
                corrupt_meta(&self.path, format!("the meta table cannot be read: {e}"))
            })?;
            let bytes = meta
                .get(META_FILTER)?
                .map(|v| v.value().to_vec())
                .unwrap_or_default();
            KeyFilter::decode(&bytes)
                .map_err(|e| corrupt_meta(&self.path, format!("key filter: {e}")))
        })
        .map_err(|e| e.in_file(&self.path))
    }

    /// Bytes the key filter holds in memory.
    pub(crate) fn filter_memory(&self) -> usize {
        self.filter.as_ref().map_or(0, KeyFilter::memory)
    }

    /// Whether the file may hold `key` (always, without a filter).
    #[inline]
    pub(crate) fn may_contain(&self, key: u64) -> bool {
        self.filter.as_ref().is_none_or(|f| f.may_contain(key))
    }

    fn decode(&self, key: u64, bytes: &[u8]) -> Result<Entry> {
        entry::decode(bytes).map_err(|e| Error::CorruptFile {
            path: self.path.clone(),
            corruption: Corruption::TableEntry {
                key,
                reason: e.to_string(),
            },
        })
    }

    /// The entry of (`key`, `exact`), and whether another position shares the key.
    pub(crate) fn find(&self, key: u64, exact: &[u8]) -> Result<Found> {
        if !self.may_contain(key) {
            return Ok(Found::default());
        }
        shield("reading a transposition table", || {
            self.find_unshielded(key, exact)
        })
        .map_err(|e| e.in_file(&self.path))
    }

    fn find_unshielded(&self, key: u64, exact: &[u8]) -> Result<Found> {
        let mut found = Found::default();
        let range = self
            .table
            .range((key, &[][..])..)
            .map_err(|e| Error::from(e).in_file(&self.path))?;
        for row in range {
            let (k, v) = row.map_err(|e| Error::from(e).in_file(&self.path))?;
            let (rk, rx) = k.value();
            if rk != key {
                break;
            }
            if rx == exact {
                found.entry = Some(self.decode(key, v.value())?);
            } else {
                found.collision = true;
            }
        }
        Ok(found)
    }

    /// Every item in (key, exact) order.
    pub(crate) fn items(&self) -> Result<impl Iterator<Item = Result<Item>> + '_> {
        let range = shield("reading a transposition table", || {
            Ok(self.table.range::<(u64, &[u8])>(..)?)
        })
        .map_err(|e| e.in_file(&self.path))?;
        let mut range = Some(range);
        Ok(std::iter::from_fn(move || {
            let r = range.as_mut()?;
            let next = shield("reading a transposition table", || match r.next() {
                None => Ok(None),
                Some(row) => {
                    let (k, v) = row?;
                    let (key, exact) = k.value();
                    Ok(Some((
                        key,
                        Box::<[u8]>::from(exact),
                        self.decode(key, v.value())?,
                    )))
                }
            })
            .map_err(|e| e.in_file(&self.path));
            match next {
                Ok(Some(item)) => Some(Ok(item)),
                Ok(None) => None,
                Err(e) => {
                    // After an error the range is not read further.
                    range = None;
                    Some(Err(e))
                }
            }
        }))
    }

    /// Reads every entry of the file (checksums, coding, order), and checks the key filter
    /// holds every key, each key is the key of its entry's exact position bytes (`key_of`,
    /// when the caller can tell: `None` from it means the bytes are no position) and the
    /// meta's count equals the rows. Returns the entries.
    pub(crate) fn check(&self, key_of: Option<&KeyOf<'_>>) -> Result<u64> {
        let corrupt = |what: String| corrupt_meta(&self.path, what);
        // A file opened without its filter (past the readers' filter budget) reads it from
        // the file it has open, never by its name (a writer may have published over it).
        let stored;
        let filter = match &self.filter {
            Some(f) => f,
            None => {
                stored = self.stored_filter()?;
                &stored
            }
        };
        let mut n = 0u64;
        for item in self.items()? {
            let (key, exact, _) = item?;
            if !filter.may_contain(key) {
                return Err(corrupt(format!("the key filter lacks key {key:016x}")));
            }
            // The entry's crc32 covers its value only: damaged position bytes would leave it
            // unreachable (a lookup's key finds other bytes) and counted as a collision.
            if let Some(key_of) = key_of {
                let reason = match key_of(&exact) {
                    Some(k) if k == key => None,
                    Some(k) => Some(format!(
                        "its position's key is {k:016x}: its position bytes are damaged"
                    )),
                    None => Some(format!(
                        "its {} position bytes are no position of the table's game: they are \
                         damaged",
                        exact.len()
                    )),
                };
                if let Some(reason) = reason {
                    return Err(Error::CorruptFile {
                        path: self.path.clone(),
                        corruption: Corruption::TableEntry { key, reason },
                    });
                }
            }
            n += 1;
        }
        let rows = self
            .table
            .len()
            .map_err(|e| Error::from(e).in_file(&self.path))?;
        if n != self.entries || rows != n {
            return Err(corrupt(format!(
                "entries {} in the meta, {rows} rows in the tt table, {n} read",
                self.entries
            )));
        }
        Ok(n)
    }
}

//! Opening one book file: the redb database read-only (with a killed writer's recovery
//! first), its header and models from the meta table, and the checks that tell a damaged book
//! (corrupt) from a file that is no book at all.

use std::collections::HashMap;
use std::path::Path;
use std::sync::Arc;

use redb::ReadableTableMetadata;

use super::*;
use crate::store::error::{Corruption, Error, Result, is_storage_damage};
use crate::store::facet::{FacetGames, FacetSet};
use crate::store::{IdentityModel, PositionCodec, PositionModel};

pub(super) fn not_a_book(path: &Path, reason: impl Into<String>) -> Error {
    Error::NotABook {
        path: path.to_path_buf(),
        reason: reason.into(),
    }
}

/// redb's file magic: the first 9 bytes of every redb database.
const REDB_MAGIC: [u8; 9] = [b'r', b'e', b'd', b'b', 0x1A, 0x0A, 0xA9, 0x0D, 0x0A];

/// Whether the file at `path`, which redb cannot open or read, is a damaged book rather than
/// a file that is not a book (docs/FORMAT.md §9): it starts like a redb database
/// ([`starts_like_redb`]), or a manifest (`<path>.live`) stands beside it, or its bytes hold
/// a book's meta table keys (`format_version` and a position codec's name; the header page
/// may be the damaged part). An empty file is none of these: it is not a book.
pub(crate) fn looks_like_damaged_book(path: &Path) -> bool {
    starts_like_redb(path) || has_book_traces(path)
}

/// Whether a redb file that opens but lacks a book's meta table or magic was a book: a
/// manifest stands beside it, or its bytes hold a book's meta keys (a damaged tree page can
/// hide the table). A redb database of another program has neither: it is not a book.
pub(super) fn has_book_traces(path: &Path) -> bool {
    // `<book>.live` (docs/FORMAT.md §10.1; spelled here as live.rs spells it, which reads
    // generations through this file).
    if crate::store::files::sidecar(path, "live").exists() {
        return true;
    }
    let Ok(f) = std::fs::File::open(path) else {
        return false;
    };
    // The meta table is small and written early; the first 256 MiB are plenty.
    let mut bytes = Vec::new();
    if std::io::Read::read_to_end(&mut std::io::Read::take(f, 256 << 20), &mut bytes).is_err() {
        return false;
    }
    let has = |needle: &[u8]| memchr::memmem::find(&bytes, needle).is_some();
    has(META_VERSION.as_bytes()) && (has(b"chess-packed-v1") || has(b"othello-packed-v1"))
}

/// Whether the file at `path` starts like a redb database: at least 6 of its first 9 bytes
/// equal redb's magic (so a few damaged bytes there still count), or it is a non-empty prefix
/// of the magic (a file truncated inside it).
fn starts_like_redb(path: &Path) -> bool {
    let mut head = [0u8; REDB_MAGIC.len()];
    let n = match std::fs::File::open(path) {
        Ok(mut f) => {
            let mut n = 0;
            while n < head.len() {
                match std::io::Read::read(&mut f, &mut head[n..]) {
                    Ok(0) | Err(_) => break,
                    Ok(k) => n += k,
                }
            }
            n
        }
        Err(_) => return false,
    };
    if n == 0 {
        return false;
    }
    if n < REDB_MAGIC.len() {
        return head[..n] == REDB_MAGIC[..n];
    }
    head.iter().zip(&REDB_MAGIC).filter(|(a, b)| a == b).count() >= 6
}

/// Opens the redb database at `path` read-only (replaying a killed writer's recovery
/// first if needed), from a file descriptor opened here so that the identity recorded is
/// the file redb reads.
pub(super) fn open_db(
    path: &Path,
    redb_cache: usize,
) -> Result<(redb::ReadOnlyDatabase, super::identity::FileId)> {
    match std::fs::metadata(path) {
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            return Err(Error::BookNotFound {
                path: path.to_path_buf(),
            });
        }
        // Never opened: a FIFO would block the open, a device is no book.
        Ok(m) if !m.is_file() => {
            return Err(not_a_book(
                path,
                "not a regular file (a directory, FIFO, socket or device)",
            ));
        }
        _ => {}
    }
    // The file is opened here and handed to redb so that its identity is the one redb
    // reads, whatever a writer or an operator renames over the name meanwhile.
    let id = std::cell::Cell::new(None);
    let open = || {
        let io = |e| redb::DatabaseError::Storage(redb::StorageError::Io(e));
        let file = std::fs::File::open(path).map_err(io)?;
        id.set(Some(super::identity::FileId::of(
            &file.metadata().map_err(io)?,
        )));
        redb::Builder::new()
            .set_cache_size(redb_cache)
            .open_read_only_with_backend(redb::backends::FileBackend::new(file)?)
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
                Err(redb::DatabaseError::Storage(e)) if looks_like_damaged_book(path) => {
                    return Err(Error::Corrupt(Corruption::Storage(format!(
                        "redb's recovery failed: {e}"
                    ))));
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
            redb::DatabaseError::Storage(storage)
                if is_storage_damage(&storage) && looks_like_damaged_book(path) =>
            {
                Error::Corrupt(Corruption::Storage(format!(
                    "a redb file that redb cannot open: {storage}"
                )))
            }
            other => not_a_book(path, format!("not a redb database: {other}")),
        })?;
    let id = id
        .get()
        .ok_or_else(|| Error::Internal("a book file opened without its identity".into()))?;
    Ok((db, id))
}

/// The header of a book file from its meta table: format version (checked against what
/// this open accepts), codec (checked), counters, generation and view counters.
pub(super) fn read_header(
    path: &Path,
    meta_table: &redb::ReadOnlyTable<&str, &[u8]>,
    codec: &dyn PositionCodec,
    older: bool,
) -> Result<FileHeader> {
    let get =
        |k: &str| -> Result<Option<Vec<u8>>> { Ok(meta_table.get(k)?.map(|v| v.value().to_vec())) };
    let magic = get(META_MAGIC)?;
    if magic.as_deref() == Some(crate::store::tt::MAGIC) {
        return Err(not_a_book(
            path,
            "it is a transposition table (bookdb::tt, docs/FORMAT.md §14), not an opening \
             book; `bookdb tt stats|verify|compact` read it",
        ));
    }
    if magic.as_deref() != Some(MAGIC) {
        if has_book_traces(path) {
            return Err(Error::Corrupt(Corruption::Meta(
                "the bookdb magic is missing from the meta table the file's tree leads to".into(),
            )));
        }
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
        Some(bytes) => serde_json::from_slice(&bytes)
            .map_err(|e| Error::Corrupt(Corruption::Meta(format!("counters unreadable: {e}"))))?,
        None => return Err(Error::Corrupt(Corruption::Meta("counters missing".into()))),
    };
    let generation = match get(META_GENERATION)? {
        Some(v) => <[u8; 8]>::try_from(v.as_slice())
            .map(u64::from_le_bytes)
            .map_err(|_| Error::Corrupt(Corruption::Meta("generation malformed".into())))?,
        None if version < 3 => 0,
        None => {
            return Err(Error::Corrupt(Corruption::Meta(
                "generation missing".into(),
            )));
        }
    };
    let view: Option<BookMeta> = match get(META_VIEW)? {
        Some(bytes) => Some(serde_json::from_slice(&bytes).map_err(|e| {
            Error::Corrupt(Corruption::Meta(format!("view counters unreadable: {e}")))
        })?),
        None => None,
    };
    let facets = match get(META_FACETS)? {
        Some(v) => std::str::from_utf8(&v)
            .ok()
            .and_then(|s| FacetSet::parse(s).ok())
            .ok_or_else(|| {
                Error::Corrupt(Corruption::Meta(format!(
                    "facets {:?} unreadable",
                    String::from_utf8_lossy(&v)
                )))
            })?,
        None => FacetSet::NONE,
    };
    let facet_games: FacetGames = match get(META_FACET_GAMES)? {
        Some(bytes) => serde_json::from_slice(&bytes).map_err(|e| {
            Error::Corrupt(Corruption::Meta(format!("facet_games unreadable: {e}")))
        })?,
        None => FacetGames::default(),
    };
    Ok(FileHeader {
        version,
        meta,
        generation,
        view,
        facets,
        facet_games,
    })
}

/// The zstd dictionaries and position models a book file's meta table holds (the
/// identity model is id 0).
pub(super) fn read_models(
    meta_table: &redb::ReadOnlyTable<&str, &[u8]>,
    codec: &dyn PositionCodec,
) -> Result<Models> {
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
    Ok(Models {
        dicts,
        models,
        model_bytes,
    })
}

/// Counters against content, at open: a file whose counters say it has blocks (or, from
/// format version 3, where every entry is in a block, entries) while its `blocks` table is
/// missing or empty lost its content (a damaged tree, a dropped table). Reading it as empty
/// would make `dump` print nothing and `compact` write an empty book that verifies.
pub(super) fn check_counters_have_blocks(
    meta: &BookMeta,
    blocks: Option<&redb::ReadOnlyTable<u64, &'static [u8]>>,
    version: u32,
) -> Result<()> {
    let rows = match blocks {
        Some(t) => t.len()?,
        None => 0,
    };
    let entries = meta.positions + meta.key_only;
    let claims = meta.blocks > 0 || (version >= 3 && entries > 0);
    if rows == 0 && claims {
        return Err(Error::Corrupt(Corruption::Meta(format!(
            "the counters say {} blocks and {} entries, but the blocks table is {}: the file \
             lost its content (restore it from a backup; `bookdb verify` reports it)",
            meta.blocks,
            entries,
            if blocks.is_some() { "empty" } else { "missing" }
        ))));
    }
    Ok(())
}

/// What a book file's meta table says about it ([`read_header`]).
pub(super) struct FileHeader {
    pub(super) version: u32,
    pub(super) meta: BookMeta,
    pub(super) generation: u64,
    pub(super) view: Option<BookMeta>,
    pub(super) facets: FacetSet,
    pub(super) facet_games: FacetGames,
}

/// A book file's dictionaries and position models ([`read_models`]).
pub(super) struct Models {
    pub(super) dicts: HashMap<u16, Arc<Vec<u8>>>,
    pub(super) models: HashMap<u16, Arc<dyn PositionModel>>,
    pub(super) model_bytes: HashMap<u16, Arc<Vec<u8>>>,
}

/// A file's `evals` table (docs/FORMAT.md §13), open for the file's life.
pub(crate) type EvalTable = redb::ReadOnlyTable<(u64, &'static [u8]), &'static [u8]>;

/// The number of evaluation rows a file's meta table records (0 when absent).
pub(super) fn read_eval_count(meta: &redb::ReadOnlyTable<&str, &[u8]>) -> Result<u64> {
    match meta.get(META_EVALS)? {
        None => Ok(0),
        Some(v) => <[u8; 8]>::try_from(v.value())
            .map(u64::from_le_bytes)
            .map_err(|_| Error::Corrupt(Corruption::Meta("evals count malformed".into()))),
    }
}

/// A file's game store tables, open for the file's life.
pub(crate) struct GameTables {
    pub(crate) store: super::gamestore::StoreTables,
    /// The references and facts (format 7; `None` in a format-6 file opened to migrate it).
    pub(crate) refs: Option<redb::ReadOnlyTable<u64, &'static [u8]>>,
    pub(crate) facts: Option<redb::ReadOnlyTable<u32, &'static [u8]>>,
}

/// Opens a file's game tables (a whole layout or none) and reads meta `games_stored`.
pub(super) fn open_game_tables(
    txn: &redb::ReadTransaction,
    meta: &redb::ReadOnlyTable<&str, &[u8]>,
) -> Result<(Option<GameTables>, u64)> {
    let stored = match meta.get(META_GAMES_STORED)? {
        None => 0,
        Some(v) => <[u8; 8]>::try_from(v.value())
            .map(u64::from_le_bytes)
            .map_err(|_| Error::Corrupt(Corruption::Meta("games_stored malformed".into())))?,
    };
    let store = super::gamestore::StoreTables::open(txn, stored)?;
    let refs = match txn.open_table(GAME_REFS) {
        Ok(t) => Some(t),
        Err(redb::TableError::TableDoesNotExist(_)) => None,
        Err(e) => return Err(e.into()),
    };
    let facts = match txn.open_table(GAME_FACTS) {
        Ok(t) => Some(t),
        Err(redb::TableError::TableDoesNotExist(_)) => None,
        Err(e) => return Err(e.into()),
    };
    if refs.is_some() != facts.is_some() {
        return Err(Error::Corrupt(Corruption::Meta(
            "the game references are incomplete (one of game_refs and game_facts is missing)"
                .into(),
        )));
    }
    Ok((store.map(|store| GameTables { store, refs, facts }), stored))
}

/// A file's stored games read lately: the games asked for (an explorer asks for the same top
/// games of popular positions again and again) and the last blocks decoded (neighbours are
/// often asked together). Bounded: [`GameCache::GAMES`] games, [`GameCache::BLOCKS`] blocks.
/// A game is kept as read: whole, or its heads only (a whole game serves both).
#[derive(Default)]
pub(crate) struct GameCache {
    games: std::collections::HashMap<u32, (bool, crate::store::gameblock::StoredGame)>,
    blocks: Vec<(u32, Arc<crate::store::gameblock::BlockView>)>,
}

impl GameCache {
    const GAMES: usize = 4096;
    const BLOCKS: usize = 4;

    /// Game `number`, whole, or at least its heads when `heads_only`.
    pub(crate) fn get(
        &self,
        number: u32,
        heads_only: bool,
    ) -> Option<crate::store::gameblock::StoredGame> {
        if let Some((whole, g)) = self.games.get(&number)
            && (*whole || heads_only)
        {
            return Some(g.clone());
        }
        self.blocks
            .iter()
            .rev()
            .find(|(first, v)| {
                *first <= number
                    && ((number - first) as usize) < v.len()
                    && (v.complete() || heads_only)
            })
            .map(|(first, v)| v.game((number - first) as usize))
    }

    pub(crate) fn keep(
        &mut self,
        first: u32,
        block: Arc<crate::store::gameblock::BlockView>,
        number: u32,
        game: &crate::store::gameblock::StoredGame,
    ) {
        if self.games.len() >= Self::GAMES {
            self.games.clear();
        }
        self.games.insert(number, (block.complete(), game.clone()));
        // A block read again whole replaces its heads.
        self.blocks.retain(|(f, _)| *f != first);
        if self.blocks.len() >= Self::BLOCKS {
            self.blocks.remove(0);
        }
        self.blocks.push((first, block));
    }
}

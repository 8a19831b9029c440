//! Errors of the game-independent store: what went wrong with a book file, with redb and I/O
//! errors kept as sources, and the one error type a position codec hands back.

use std::path::PathBuf;

/// A position codec or model rejected bytes or failed (e.g. an undecodable position, moves
/// that are not legal in it). Codecs wrap their own typed errors; the store keeps them as the
/// source and knows nothing of what they mean.
#[derive(Debug, thiserror::Error)]
#[error(transparent)]
pub struct CodecError(Box<dyn std::error::Error + Send + Sync>);

impl CodecError {
    #[doc(hidden)]
    pub fn new(e: impl Into<Box<dyn std::error::Error + Send + Sync>>) -> Self {
        CodecError(e.into())
    }
}

impl From<String> for CodecError {
    fn from(s: String) -> Self {
        CodecError(s.into())
    }
}

impl From<&str> for CodecError {
    fn from(s: &str) -> Self {
        CodecError(s.into())
    }
}

/// Why a zstd context could not decompress a block's section.
#[derive(Debug, thiserror::Error)]
pub enum DecompressError {
    #[error("dictionary {0} missing from the meta table")]
    MissingDictionary(u16),
    #[error("{0}")]
    Zstd(#[source] std::io::Error),
}

/// Structured corruption findings: which block, what was expected, what was found.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum Corruption {
    #[error(
        "block {block_key:016x}: checksum mismatch (stored crc32 {expected:08x}, computed {found:08x})"
    )]
    Checksum {
        block_key: u64,
        expected: u32,
        found: u32,
    },
    #[error("block {block_key:016x}: header invalid: {reason}")]
    Header { block_key: u64, reason: String },
    #[error("block {block_key:016x}: payload invalid: {reason}")]
    Payload { block_key: u64, reason: String },
    #[error(
        "block {block_key:016x}, entry {index}: key mismatch (expected {expected:016x}, recomputed {found:016x})"
    )]
    KeyMismatch {
        block_key: u64,
        index: usize,
        expected: u64,
        found: u64,
    },
    #[error("block {block_key:016x}, entry {index}: {reason}")]
    Entry {
        block_key: u64,
        index: usize,
        reason: String,
    },
    #[error("meta table: {0}")]
    Meta(String),
    #[error("delta tier: {0}")]
    Delta(String),
    /// A row of the `evals` table (docs/FORMAT.md §13): its key and what is wrong.
    #[error("evaluations of {key:016x}: {reason}")]
    Eval { key: u64, reason: String },
    /// The live book's manifest (`<book>.live`) or the files it names.
    #[error("manifest: {0}")]
    Manifest(String),
    #[error("database pages: {0}")]
    Storage(String),
    /// An entry of a transposition-table file (docs/FORMAT.md §14): which key, what is wrong.
    #[error("table entry {key:016x}: {reason}")]
    TableEntry { key: u64, reason: String },
    /// A partition of a book file's key filter (docs/FORMAT.md §4.7): its number, what is wrong.
    #[error("key filter partition {partition}: {reason}")]
    Filter { partition: u32, reason: String },
    /// The game store (docs/FORMAT.md §15): the block (by its first game number) or the id
    /// row, and what is wrong.
    #[error("game store, {at}: {reason}")]
    GameStore { at: String, reason: String },
}

/// Errors of the store. Each variant says whose problem it is: the file (`NotABook`,
/// `UnsupportedVersion`, `BookNotFound`, `Corrupt`), another process (`Busy`), the caller
/// (`Usage`), the operating system (`Io`, `Db`) or this program (`Internal`).
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("{path}: not a bookdb book ({reason}); create one with `bookdb import`")]
    NotABook { path: PathBuf, reason: String },
    #[error(
        "{path}: book format version {found} is not supported by this build (supports {supported}); run `bookdb migrate --book {path}` or upgrade bookdb"
    )]
    UnsupportedVersion {
        path: PathBuf,
        found: u32,
        supported: u32,
    },
    #[error("{path}: book not found")]
    BookNotFound { path: PathBuf },
    #[error("corrupt book: {0}")]
    Corrupt(#[from] Corruption),
    /// One file of the book (its base, a delta segment, its manifest) is damaged: which file,
    /// and what is wrong with it.
    #[error("corrupt book: {}: {corruption}", path.display())]
    CorruptFile {
        path: PathBuf,
        corruption: Corruption,
    },
    /// Another process holds what this one needs (the writer lock, or the file open in redb).
    #[error("{path}: {what}")]
    Busy { path: PathBuf, what: String },
    /// The caller asked for something the store cannot do (e.g. a path that names no file).
    #[error("{0}")]
    Usage(String),
    /// A file the store wrote for itself (a sorted run, a fingerprint log of an import's
    /// staging area) is damaged or not what it should be; the message names it and what to do.
    #[error("{0}")]
    Damaged(String),
    /// A codec rejected a position or moves handed to the store.
    #[error("position codec: {0}")]
    Codec(#[from] CodecError),
    #[error("{context}: {source}")]
    Io {
        context: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{}database error: {source}", context.as_deref().map(|c| format!("{c}: ")).unwrap_or_default())]
    Db {
        /// What the store was doing, where the call site knows better than redb's message.
        context: Option<String>,
        #[source]
        source: redb::Error,
    },
    /// A broken invariant of this program (a bug): please report it.
    #[error("internal error (please report it): {0}")]
    Internal(String),
}

impl Error {
    /// Whether this is redb refusing a read because an earlier read of the same file failed
    /// (`PreviousIo`: redb stops serving a database after one I/O error).
    pub(crate) fn is_previous_io(&self) -> bool {
        matches!(
            self,
            Error::Db {
                source: redb::Error::PreviousIo,
                ..
            }
        )
    }

    /// This error with the file it concerns, when it is a corruption that does not name one.
    pub(crate) fn in_file(self, path: &std::path::Path) -> Self {
        match self {
            Error::Corrupt(corruption) => Error::CorruptFile {
                path: path.to_path_buf(),
                corruption,
            },
            // redb reporting damaged pages while reading an opened file.
            Error::Db { context, source } if is_damage(&source) => Error::CorruptFile {
                path: path.to_path_buf(),
                corruption: Corruption::Storage(match context {
                    Some(c) => format!("{c}: {source}"),
                    None => source.to_string(),
                }),
            },
            other => other,
        }
    }

    /// A redb error with what the store was doing when it happened.
    pub(crate) fn db(context: impl Into<String>, source: impl Into<redb::Error>) -> Self {
        Error::Db {
            context: Some(context.into()),
            source: source.into(),
        }
    }

    pub(crate) fn io(context: impl Into<String>, source: std::io::Error) -> Self {
        Error::Io {
            context: context.into(),
            source,
        }
    }

    /// Names the file a redb error without context happened in (`writing <path>`).
    pub(crate) fn writing(self, path: &std::path::Path) -> Error {
        match self {
            Error::Db {
                context: None,
                source,
            } => Error::Db {
                context: Some(format!("writing {}", path.display())),
                source,
            },
            e => e,
        }
    }

    /// The operating-system error at the root of this one, if any (through redb's errors).
    pub fn os_error(&self) -> Option<&std::io::Error> {
        match self {
            Error::Io { source, .. } => Some(source),
            Error::Db {
                source: redb::Error::Io(e),
                ..
            } => Some(e),
            _ => None,
        }
    }
}

/// What to do about a system fault under a book command, by its operating-system error: a
/// full disk, a read-only file system, missing permissions, too many open files. `None` for
/// other errors (their messages say what to do themselves).
pub fn system_fault_hint(e: &std::io::Error) -> Option<&'static str> {
    Some(match e.raw_os_error()? {
        libc::ENOSPC | libc::EDQUOT => {
            "the disk is full: free space (or use a book on another file system) and run the same command again; a book is changed only by a finished command, so it is as it was, and an interrupted import resumes from its last checkpoint"
        }
        libc::EROFS => {
            "the file system is read-only: commands that change a book need a writable directory; probe, dump, stats and verify still work"
        }
        libc::EACCES | libc::EPERM => {
            "permission denied: commands that change a book need write access to its directory and files (run as the book's owner or group); probe, dump, stats and verify need read access only"
        }
        libc::EMFILE | libc::ENFILE => {
            "too many open files: raise the limit (`ulimit -n 1024`) and run the same command again"
        }
        libc::EFBIG => {
            "a file reached the size limit of this process (`ulimit -f`, systemd `LimitFSIZE=`): raise it and run the same command again; a book is changed only by a finished command, so it is as it was, and an interrupted import resumes from its last checkpoint"
        }
        _ => return None,
    })
}

/// Whether a redb error means the bytes are damaged (not the operating system failing: a real
/// I/O error stays an I/O error).
pub(crate) fn is_damage(e: &redb::Error) -> bool {
    match e {
        redb::Error::Io(io) => is_damage_io(io),
        redb::Error::Corrupted(_) => true,
        _ => false,
    }
}

/// [`is_damage`] for redb's storage errors.
pub(crate) fn is_storage_damage(e: &redb::StorageError) -> bool {
    match e {
        redb::StorageError::Io(io) => is_damage_io(io),
        redb::StorageError::Corrupted(_) => true,
        _ => false,
    }
}

/// An I/O error that reports short or malformed bytes (a truncated file), not a failing system.
fn is_damage_io(io: &std::io::Error) -> bool {
    matches!(
        io.kind(),
        std::io::ErrorKind::InvalidData | std::io::ErrorKind::UnexpectedEof
    )
}

macro_rules! db_err {
    ($($t:ty),*) => {$(
        impl From<$t> for Error {
            fn from(e: $t) -> Self { Error::Db { context: None, source: e.into() } }
        }
    )*};
}
db_err!(
    redb::Error,
    redb::DatabaseError,
    redb::TransactionError,
    redb::TableError,
    redb::StorageError,
    redb::CommitError,
    redb::CompactionError,
    redb::SetDurabilityError
);

pub type Result<T, E = Error> = std::result::Result<T, E>;

//! Typed errors of the library. The binary maps them to messages and exit codes.

use std::path::PathBuf;

/// Errors of the packed-position codec (DESIGN.md §2). Decoding never panics.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PackError {
    #[error("packed position truncated: needed {needed} bits, only {available} available")]
    Truncated { needed: usize, available: usize },
    #[error("packed position has non-zero padding bits in its last byte")]
    NonZeroPadding,
    #[error("packed position has {0} trailing byte(s) after its end")]
    TrailingBytes(usize),
    #[error("packed position is empty")]
    Empty,
}

/// A position that is well-formed bit-wise but not a valid chess position.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum PositionError {
    #[error("invalid FEN {fen:?}: {reason}")]
    BadFen { fen: String, reason: String },
    #[error("not a legal chess position: {0}")]
    Illegal(String),
    #[error(transparent)]
    Pack(#[from] PackError),
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
    #[error("database pages: {0}")]
    Storage(String),
}

/// Errors of the book store and everything above it.
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
    #[error(transparent)]
    Position(#[from] PositionError),
    #[error(transparent)]
    Pack(#[from] PackError),
    #[error("{context}: {source}")]
    Io {
        context: String,
        #[source]
        source: std::io::Error,
    },
    #[error("database error: {0}")]
    Db(String),
    #[error("{0}")]
    Invalid(String),
}

impl Error {
    pub fn io(context: impl Into<String>, source: std::io::Error) -> Self {
        Error::Io {
            context: context.into(),
            source,
        }
    }
}

macro_rules! db_err {
    ($($t:ty),*) => {$(
        impl From<$t> for Error {
            fn from(e: $t) -> Self { Error::Db(e.to_string()) }
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
    redb::CompactionError
);

pub type Result<T, E = Error> = std::result::Result<T, E>;

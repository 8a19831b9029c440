//! Errors of the operations (import, probe, merge, …) and of the library as a whole: the
//! store's and the chess layer's errors, plus what the user asked for that cannot be done, an
//! input that is not what it should be, and internal faults. The binary maps them to messages
//! and exit codes ([`Error::kind`]).

pub use crate::chess::error::{PackError, PositionError};
pub use crate::store::error::{CodecError, Corruption, Error as StoreError};

/// Errors of everything above the store.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error(transparent)]
    Position(#[from] PositionError),
    #[error(transparent)]
    Pack(#[from] PackError),
    /// A position asked for (`probe`, `/v1/position`, `/masters`) that cannot be given.
    #[error(transparent)]
    Query(#[from] QueryError),
    /// What the user asked for cannot be done as asked (an option value, an argument, a
    /// request to import what is already imported); the message says what to do instead.
    #[error("{0}")]
    Usage(String),
    /// An input file (PGN, a Polyglot `.bin`, a staging file of an interrupted import) is not
    /// what it should be; the message names it.
    #[error("{0}")]
    Input(String),
    #[error("{context}: {source}")]
    Io {
        context: String,
        #[source]
        source: std::io::Error,
    },
    /// A broken invariant of this program (a bug): please report it.
    #[error("internal error (please report it): {0}")]
    Internal(String),
}

/// A position asked for that cannot be given, in the words of the caller (`param` is a CLI
/// flag such as `--moves` or an HTTP parameter such as `play`) and of the book's game.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum QueryError {
    /// A move of the line that does not parse or is not legal where it is played.
    #[error(
        "{param}: move {index} ({text}) cannot be played in the {game} position {at}: {reason}"
    )]
    Move {
        game: &'static str,
        param: &'static str,
        /// 1-based.
        index: usize,
        text: String,
        /// The position the move was played in (a FEN or an Othello board string).
        at: String,
        reason: String,
    },
    /// The starting position (a FEN, an Othello board) does not parse.
    #[error("{param}: {reason}")]
    Start { param: &'static str, reason: String },
    /// A line longer than a request may ask for.
    #[error("{param}: {count} moves; at most {max} are accepted")]
    TooLong {
        param: &'static str,
        count: usize,
        max: usize,
    },
    /// A way of giving a position that the book's game does not have (`fen` for an Othello
    /// book, `board` for a chess book).
    #[error(
        "{param} is for {for_game} books; this is {article} {book_game} book: give the position with {instead}"
    )]
    WrongGame {
        param: &'static str,
        for_game: &'static str,
        article: &'static str,
        book_game: String,
        instead: String,
    },
}

/// What kind of failure an [`Error`] is, for exit codes and for callers that retry.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ErrorKind {
    /// The user's request (options, arguments, a FEN or move given on the command line).
    Usage,
    /// An input file, or a file the store wrote for itself (staging), is not usable.
    Input,
    /// Another process holds the book (its writer lock, or the file open for writing).
    Busy,
    /// The book is damaged.
    Corrupt,
    /// The file is not a book, or one of a format version this build does not read.
    NotABook,
    /// The book does not exist.
    NotFound,
    /// The operating system or the database failed (I/O, disk full, permissions).
    Io,
    /// A bug.
    Internal,
}

impl ErrorKind {
    /// The kind's stable name, as `--json` errors print it (`{"error":{"kind":…}}`).
    pub fn as_str(self) -> &'static str {
        match self {
            ErrorKind::Usage => "usage",
            ErrorKind::Input => "input",
            ErrorKind::Busy => "busy",
            ErrorKind::Corrupt => "corrupt",
            ErrorKind::NotABook => "not-a-book",
            ErrorKind::NotFound => "not-found",
            ErrorKind::Io => "io",
            ErrorKind::Internal => "internal",
        }
    }

    /// The kind of a store error (for callers that hold one without the ops-level wrapper).
    pub fn of_store(e: &StoreError) -> ErrorKind {
        match e {
            StoreError::NotABook { .. } | StoreError::UnsupportedVersion { .. } => {
                ErrorKind::NotABook
            }
            StoreError::BookNotFound { .. } => ErrorKind::NotFound,
            StoreError::Corrupt(_) | StoreError::CorruptFile { .. } => ErrorKind::Corrupt,
            StoreError::Busy { .. } => ErrorKind::Busy,
            StoreError::Usage(_) => ErrorKind::Usage,
            StoreError::Damaged(_) | StoreError::Codec(_) => ErrorKind::Input,
            StoreError::Io { .. } | StoreError::Db { .. } => ErrorKind::Io,
            StoreError::Internal(_) => ErrorKind::Internal,
        }
    }
}

impl Error {
    pub(crate) fn io(context: impl Into<String>, source: std::io::Error) -> Self {
        Error::Io {
            context: context.into(),
            source,
        }
    }

    /// The operating-system error at the root of this one, if any.
    pub fn os_error(&self) -> Option<&std::io::Error> {
        match self {
            Error::Store(e) => e.os_error(),
            Error::Io { source, .. } => Some(source),
            _ => None,
        }
    }

    /// What to do about this error when a system fault caused it (a full disk, a read-only
    /// file system, permissions, the open-file limit); see [`crate::store::error::system_fault_hint`].
    pub fn hint(&self) -> Option<&'static str> {
        self.os_error()
            .and_then(crate::store::error::system_fault_hint)
    }

    pub fn kind(&self) -> ErrorKind {
        match self {
            Error::Store(e) => ErrorKind::of_store(e),
            Error::Position(_) | Error::Pack(_) | Error::Query(_) | Error::Usage(_) => {
                ErrorKind::Usage
            }
            Error::Input(_) => ErrorKind::Input,
            Error::Io { .. } => ErrorKind::Io,
            Error::Internal(_) => ErrorKind::Internal,
        }
    }
}

impl From<Corruption> for Error {
    fn from(e: Corruption) -> Self {
        Error::Store(e.into())
    }
}

impl From<CodecError> for Error {
    fn from(e: CodecError) -> Self {
        Error::Store(e.into())
    }
}

macro_rules! via_store {
    ($($t:ty),*) => {$(
        impl From<$t> for Error {
            fn from(e: $t) -> Self { Error::Store(e.into()) }
        }
    )*};
}
via_store!(
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

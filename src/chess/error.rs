//! Errors of the chess layer: a packed position that does not decode, a FEN or position that
//! is not a legal chess position.

/// Errors of the packed-position codec (docs/CONTRACT.md §2). Decoding never panics.
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

/// What the chess codec rejects besides a malformed packed position.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum ChessCodecError {
    #[error("position bytes do not decode under the book's model")]
    Undecodable,
    #[error("move index {index} beyond the {legal} legal moves")]
    MoveIndex { index: u8, legal: usize },
    #[error("position model unreadable: {0}")]
    Model(String),
}

impl From<ChessCodecError> for crate::store::error::CodecError {
    fn from(e: ChessCodecError) -> Self {
        crate::store::error::CodecError::new(e)
    }
}

impl From<PackError> for crate::store::error::CodecError {
    fn from(e: PackError) -> Self {
        crate::store::error::CodecError::new(e)
    }
}

impl From<PositionError> for crate::store::error::CodecError {
    fn from(e: PositionError) -> Self {
        crate::store::error::CodecError::new(e)
    }
}

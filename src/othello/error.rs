//! Errors of the Othello layer: packed positions that do not decode (docs/CONTRACT.md §7),
//! board strings, squares and moves that are not what they should be.

/// Why bytes, a board string, a square name or a move were rejected. Decoding never panics.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum OthelloError {
    #[error("packed Othello position truncated: needed {needed} bits, only {available} available")]
    Truncated { needed: usize, available: usize },
    #[error("packed Othello position has non-zero padding bits in its last byte")]
    NonZeroPadding,
    #[error("packed Othello position has {0} trailing byte(s) after its end")]
    TrailingBytes(usize),
    #[error(
        "bad Othello board {0:?}: expected 64 characters of '-', 'X', 'O', a space, then X or O to move"
    )]
    BadBoard(String),
    #[error("bad Othello square {0:?}: expected a1 … h8")]
    BadSquare(String),
    #[error("move {mv} is not legal here (legal: {legal})")]
    Illegal { mv: String, legal: String },
    #[error("move index {index} beyond the {legal} legal moves")]
    MoveIndex { index: u8, legal: u32 },
    #[error("move code {0} is not an Othello square")]
    MoveCode(u16),
    #[error("Othello position model unreadable: {0}")]
    BadModel(String),
    #[error("range-coded Othello position does not decode with the block's model")]
    Undecodable,
}

impl From<OthelloError> for crate::store::error::CodecError {
    fn from(e: OthelloError) -> Self {
        crate::store::error::CodecError::new(e)
    }
}

//! The storage layer. It knows nothing about chess: it stores 64-bit keys, opaque encoded
//! positions and per-move records. A [`PositionCodec`] supplies the only game-specific parts:
//! the key of an encoded position and a fixed-width planar form that compresses well.

pub mod block;
pub mod book;
pub mod entry;
pub mod varint;

pub use block::{BlockHeader, BlockView, Compression};
pub use book::{Book, BookMeta, BookWriter, WriterOptions};
pub use entry::{Entry, MoveRec, PolyglotExtra};

/// Game-specific encoding of positions, plugged into the store.
pub trait PositionCodec: Send + Sync {
    /// Stable identifier recorded in the book's meta table.
    fn name(&self) -> &'static str;
    /// Width in bytes of the planar form.
    fn planes(&self) -> usize;
    /// The 64-bit key of an encoded position.
    fn key(&self, pos: &[u8]) -> Result<u64, String>;
    /// Writes the planar form of an encoded position into `out` (`planes()` bytes).
    fn to_planes(&self, pos: &[u8], out: &mut [u8]) -> Result<(), String>;
    /// Rebuilds the encoded position from its planar form.
    fn from_planes(&self, planes: &[u8]) -> Result<Vec<u8>, String>;
}

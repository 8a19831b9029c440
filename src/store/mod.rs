//! The storage layer. It knows nothing about chess: it stores 64-bit keys, opaque encoded
//! positions and per-move records. A [`PositionCodec`] supplies the only game-specific parts:
//! the key of an encoded position and a fixed-width planar form that compresses well.

pub mod block;
pub mod book;
pub mod entry;
pub mod record;
pub mod run;
pub mod varint;

pub use block::{BlockHeader, BlockView, Compression};
pub use book::BookIter;
pub use book::{Book, BookMeta, BookWriter, WriterOptions};
pub use entry::{Entry, MoveRec, PolyglotExtra};

/// Game-specific encoding of positions, plugged into the store.
pub trait PositionCodec: Send + Sync {
    /// Stable identifier recorded in the book's meta table.
    fn name(&self) -> &'static str;
    /// The 64-bit key of an encoded position.
    fn key(&self, pos: &[u8]) -> Result<u64, String>;
    /// Trains a storage model on sample positions; returns its serialized form.
    fn train(&self, samples: &[&[u8]]) -> Result<Vec<u8>, String>;
    /// Loads a serialized model.
    fn load_model(&self, bytes: &[u8]) -> Result<std::sync::Arc<dyn PositionModel>, String>;
    /// Maps the moves of a position to one-byte indices (e.g. ranks in its legal move list);
    /// `None` if some move has no index (the moves are then stored as raw codes).
    fn index_moves(&self, _pos: &[u8], _moves: &[u16]) -> Option<Vec<u8>> {
        None
    }
    /// Inverse of [`PositionCodec::index_moves`].
    fn unindex_moves(&self, _pos: &[u8], _idx: &[u8]) -> Result<Vec<u16>, String> {
        Err("this codec does not index moves".into())
    }
}

/// A storage transform of encoded positions (e.g. an entropy coder). Model id 0 is the identity.
pub trait PositionModel: Send + Sync {
    fn encode(&self, pos: &[u8], out: &mut Vec<u8>) -> Result<(), String>;
    fn decode(&self, data: &[u8]) -> Result<Vec<u8>, String>;
}

/// Model id 0: positions stored as given.
pub struct IdentityModel;

impl PositionModel for IdentityModel {
    fn encode(&self, pos: &[u8], out: &mut Vec<u8>) -> Result<(), String> {
        out.extend_from_slice(pos);
        Ok(())
    }
    fn decode(&self, data: &[u8]) -> Result<Vec<u8>, String> {
        Ok(data.to_vec())
    }
}

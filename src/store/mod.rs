//! The storage layer. It knows nothing about chess: it stores 64-bit keys, opaque encoded
//! positions and per-move records. A [`PositionCodec`] supplies the only game-specific parts:
//! the key of an encoded position, its position models, the indexing of moves among the legal
//! ones, and what a stored game counted.

pub mod bits;
pub mod block;
pub mod book;
pub mod cells;
pub(crate) mod crash;
pub mod entry;
pub mod error;
pub mod eval;
pub mod facet;
pub(crate) mod files;
pub mod filter;
pub(crate) mod fpset;
pub mod gameblock;
pub mod gamerefs;
#[doc(hidden)]
pub mod gamerun;
pub mod idchunk;
pub(crate) mod keyhash;
pub(crate) mod lock;
pub mod onegame;
pub(crate) mod rangecoder;
pub(crate) mod record;
pub mod refblock;
#[doc(hidden)]
pub mod run;
#[doc(hidden)]
pub mod subtract;
pub mod tags;
pub mod tt;
pub mod unzstd;
#[doc(hidden)]
pub mod varint;
pub(crate) mod workers;

use error::CodecError;

pub use block::{BlockHeader, BlockView, Compression};
pub use book::{Book, BookCompression, BookMeta, BookWriter, CacheSizes, LiveBook, WriterOptions};
#[doc(hidden)]
pub use crash::{CRASH_POINTS, HAS_CRASH_POINTS};
pub use entry::{Entry, MoveExtra, MoveRec};
pub use lock::LockWait;

/// The book format versions this build writes, and the oldest it reads (through
/// `bookdb migrate`; every other command reads only the version it writes).
pub fn format_versions() -> (u32, u32) {
    (book::FORMAT_VERSION, book::OLDEST_MIGRATABLE)
}

/// Writes to every page of a freshly allocated zeroed vector. Lookups read slots before any
/// insert writes them, and the first read of an untouched page maps the kernel's shared zero
/// page; the insert that follows must then replace it, which flushes the TLBs of every core
/// the process runs on (an interrupt per page: about 3% of an import's CPU time when its hash table did this). A first
/// touch by a write maps a private page at once.
pub(crate) fn write_touched<T: Copy + Default>(mut v: Vec<T>) -> Vec<T> {
    let step = (4096 / std::mem::size_of::<T>().max(1)).max(1);
    for i in (0..v.len()).step_by(step) {
        // black_box: the compiler knows the memory is zeroed and would drop a plain store of
        // zeros. (A read first would map the zero page.)
        *std::hint::black_box(&mut v[i]) = T::default();
    }
    v
}

/// Game-specific encoding of positions, plugged into the store.
pub trait PositionCodec: Send + Sync {
    /// Stable identifier recorded in the book's meta table.
    fn name(&self) -> &'static str;
    /// The 64-bit key of an encoded position.
    fn key(&self, pos: &[u8]) -> Result<u64, CodecError>;
    /// Trains a storage model on sample positions; returns its serialized form.
    fn train(&self, samples: &[&[u8]]) -> Result<Vec<u8>, CodecError>;
    /// Loads a serialized model.
    fn load_model(&self, bytes: &[u8]) -> Result<std::sync::Arc<dyn PositionModel>, CodecError>;
    /// Maps the moves of a position to one-byte indices (e.g. ranks in its legal move list);
    /// `None` if some move has no index (the moves are then stored as raw codes).
    fn index_moves(&self, _pos: &[u8], _moves: &[u16]) -> Option<Vec<u8>> {
        None
    }
    /// Codes a position with `model` (appending to `coded`) and indexes its moves, as
    /// `model.encode` then [`PositionCodec::index_moves`] do; codecs override it to decode the
    /// position once for both.
    fn prepare(
        &self,
        model: &dyn PositionModel,
        pos: &[u8],
        moves: &[u16],
        coded: &mut Vec<u8>,
    ) -> Result<Option<Vec<u8>>, CodecError> {
        generic_prepare(self, model, pos, moves, coded)
    }
    /// Decodes a position coded by `model`: its encoded form and key, and, given move indices,
    /// the moves they stand for ([`PositionCodec::unindex_moves`]). Codecs override it to
    /// decode the position once for all three.
    fn restore(
        &self,
        model: &dyn PositionModel,
        coded: &[u8],
        idx: Option<&[u8]>,
    ) -> Result<Restored, CodecError> {
        generic_restore(self, model, coded, idx)
    }
    /// Inverse of [`PositionCodec::index_moves`].
    fn unindex_moves(&self, _pos: &[u8], _idx: &[u8]) -> Result<Vec<u16>, CodecError> {
        Err("this codec does not index moves".into())
    }
    /// The (key, move code) pairs a stored game counted (each once, in any order) into `pairs`
    /// (cleared first), and the facts its references need: `None` for a codec whose books
    /// keep no games. An error names what in the game does not decode.
    fn index_game(
        &self,
        _game: &gameblock::StoredGame,
        pairs: &mut Vec<(u64, u16)>,
    ) -> Result<Option<gamerefs::GameFacts>, CodecError> {
        pairs.clear();
        Ok(None)
    }
    /// [`PositionCodec::index_game`] of each of `games`, in order: the facts and pairs of
    /// each, or why it does not decode. A codec may share work between games (the chess codec
    /// replays the plies games have in common once).
    #[allow(clippy::type_complexity)]
    fn index_games(
        &self,
        games: &[gameblock::StoredGame],
    ) -> Vec<Result<(Option<gamerefs::GameFacts>, Vec<(u64, u16)>), CodecError>> {
        games
            .iter()
            .map(|g| {
                let mut pairs = Vec::new();
                self.index_game(g, &mut pairs).map(|f| (f, pairs))
            })
            .collect()
    }
    /// Brings a game stored by an older format version to the layout this build writes
    /// (docs/FORMAT.md §15.2); nothing for a game already in it.
    fn upgrade_game(&self, _game: &mut gameblock::StoredGame) {}
    /// The fields of a stored game an explorer answer reads (its head: names, ratings,
    /// dates), the first this many; the rest (the moves) are kept in each game block's body
    /// frame, which answers never decompress (docs/FORMAT.md §15.2). `None`: all of them.
    fn game_head_fields(&self) -> Option<usize> {
        None
    }
    /// The field of a stored game holding how many of its plies were counted (a varint), so
    /// that two records of one game counted to different depths (books imported with another
    /// `--max-ply`) are known as one game: a merge counts and stores the deeper one
    /// ([`gameblock::same_game_but_plies`]). `None`: records are one game only when equal.
    fn counted_plies_field(&self) -> Option<usize> {
        None
    }
    /// The fields in which two stored records of one date and id agree when they are one game
    /// ([`onegame::OneGame`]): for chess its result, starting position and mainline as moves,
    /// so that one lichess game stored from two exports is one game. Empty: records are one
    /// game only when equal but for their counted plies.
    fn game_identity_fields(&self) -> &'static [usize] {
        &[]
    }
    /// Whether the first player (white) is to move in the encoded position: whose rating is
    /// the mover's in a game's facts. `None`: the codec cannot say (its books keep no cells
    /// as games').
    fn first_to_move(&self, _pos: &[u8]) -> Option<bool> {
        None
    }
}

/// [`PositionCodec::prepare`] from the codec's other methods (its default, and a codec's
/// fallback for models it does not know).
pub fn generic_prepare<C: PositionCodec + ?Sized>(
    codec: &C,
    model: &dyn PositionModel,
    pos: &[u8],
    moves: &[u16],
    coded: &mut Vec<u8>,
) -> Result<Option<Vec<u8>>, CodecError> {
    model.encode(pos, coded)?;
    Ok(codec.index_moves(pos, moves))
}

/// [`PositionCodec::restore`] from the codec's other methods (its default, and a codec's
/// fallback for models it does not know).
pub fn generic_restore<C: PositionCodec + ?Sized>(
    codec: &C,
    model: &dyn PositionModel,
    coded: &[u8],
    idx: Option<&[u8]>,
) -> Result<Restored, CodecError> {
    let pos = model.decode(coded)?;
    let key = codec.key(&pos)?;
    let moves = idx.map(|idx| codec.unindex_moves(&pos, idx));
    Ok(Restored { pos, key, moves })
}

/// A decoded position (see [`PositionCodec::restore`]).
pub struct Restored {
    pub pos: Vec<u8>,
    pub key: u64,
    /// The moves of the given indices, or why they are invalid.
    pub moves: Option<Result<Vec<u16>, CodecError>>,
}

/// A storage transform of encoded positions (e.g. an entropy coder). Model id 0 is the identity.
pub trait PositionModel: Send + Sync {
    fn encode(&self, pos: &[u8], out: &mut Vec<u8>) -> Result<(), CodecError>;
    fn decode(&self, data: &[u8]) -> Result<Vec<u8>, CodecError>;
    /// For codecs that recognise their own model type (see [`PositionCodec::prepare`]).
    fn as_any(&self) -> &dyn std::any::Any;
}

/// Model id 0: positions stored as given.
pub struct IdentityModel;

impl PositionModel for IdentityModel {
    fn encode(&self, pos: &[u8], out: &mut Vec<u8>) -> Result<(), CodecError> {
        out.extend_from_slice(pos);
        Ok(())
    }
    fn decode(&self, data: &[u8]) -> Result<Vec<u8>, CodecError> {
        Ok(data.to_vec())
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn write_touched_keeps_length_and_contents() {
        for n in [0, 1, 255, 256, 257, 10_000] {
            let v = super::write_touched(vec![(0u64, 0u32); n]);
            assert_eq!(v.len(), n);
            assert!(v.iter().all(|&x| x == (0, 0)));
            let w = super::write_touched(vec![0u64; n]);
            assert_eq!(w, vec![0u64; n]);
        }
    }
}

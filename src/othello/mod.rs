//! Othello layer (docs/CONTRACT.md §7): bitboard positions with legal moves and implicit
//! passes, the packed form, SplitMix64 Zobrist keys, board strings, the 8 board symmetries,
//! and the [`OthelloCodec`] that plugs Othello into the game-independent store. It uses
//! nothing of the chess layer.

pub(crate) mod board;
pub mod endgame;
pub(crate) mod error;
pub(crate) mod model;
mod tt;

pub use board::{
    Board, MAX_PACKED, flips, moves_of, parse_square, square_name, transform, transform_square,
    untransform_square,
};
pub use error::OthelloError;
#[doc(hidden)]
pub use model::OthelloModel;

use std::sync::Arc;

use crate::store::error::CodecError;
use crate::store::{
    IdentityModel, PositionCodec, PositionModel, Restored, generic_prepare, generic_restore,
};

/// Codec name of Othello books (the book's meta `codec` key; docs/FORMAT.md).
pub const CODEC_NAME: &str = "othello-packed-v1";
/// Codec name of Othello books that store each position under its least symmetric image
/// (`import --canonical`).
pub const CANONICAL_CODEC_NAME: &str = "othello-packed-v1-canonical";

/// Othello positions in the packed format of docs/CONTRACT.md §7. Positions are range-coded
/// with an [`OthelloModel`] trained on the book's positions (books written before it have
/// the identity model: an empty `model/1`, still read); moves (square indices 0..63) are indexed by their
/// rank among the position's legal moves in square order. `canonical` books hold only least
/// images ([`Board::canonical`]); the codec is otherwise the same, but its name differs so
/// that the two kinds of book never mix.
#[derive(Clone, Copy, Debug, Default)]
pub struct OthelloCodec {
    pub canonical: bool,
}

impl PositionCodec for OthelloCodec {
    fn name(&self) -> &'static str {
        if self.canonical {
            CANONICAL_CODEC_NAME
        } else {
            CODEC_NAME
        }
    }
    fn key(&self, pos: &[u8]) -> Result<u64, CodecError> {
        Ok(Board::unpack(pos)?.key())
    }
    fn train(&self, samples: &[&[u8]]) -> Result<Vec<u8>, CodecError> {
        let boards = samples
            .iter()
            .map(|p| Board::unpack(p))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(OthelloModel::train(&boards).to_bytes())
    }
    fn load_model(&self, bytes: &[u8]) -> Result<Arc<dyn PositionModel>, CodecError> {
        if bytes.is_empty() {
            // Books written before the model: positions stored as packed.
            return Ok(Arc::new(IdentityModel));
        }
        Ok(Arc::new(OthelloModel::from_bytes(bytes)?))
    }
    fn index_moves(&self, pos: &[u8], moves: &[u16]) -> Option<Vec<u8>> {
        index_moves_of(&Board::unpack(pos).ok()?, moves)
    }
    fn prepare(
        &self,
        model: &dyn PositionModel,
        pos: &[u8],
        moves: &[u16],
        coded: &mut Vec<u8>,
    ) -> Result<Option<Vec<u8>>, CodecError> {
        let Some(m) = model.as_any().downcast_ref::<OthelloModel>() else {
            return generic_prepare(self, model, pos, moves, coded);
        };
        let b = Board::unpack(pos)?;
        coded.extend_from_slice(&m.encode_board(&b));
        Ok(index_moves_of(&b, moves))
    }
    fn restore(
        &self,
        model: &dyn PositionModel,
        coded: &[u8],
        idx: Option<&[u8]>,
    ) -> Result<Restored, CodecError> {
        let Some(m) = model.as_any().downcast_ref::<OthelloModel>() else {
            return generic_restore(self, model, coded, idx);
        };
        let b = m.decode_board(coded).ok_or(OthelloError::Undecodable)?;
        Ok(Restored {
            pos: b.pack().0,
            key: b.key(),
            moves: idx.map(|idx| unindex_moves_of(&b, idx)),
        })
    }
    fn unindex_moves(&self, pos: &[u8], idx: &[u8]) -> Result<Vec<u16>, CodecError> {
        unindex_moves_of(&Board::unpack(pos)?, idx)
    }
}

/// The ranks of `moves` among the legal moves of `b` in square order; `None` if one is not
/// legal there.
fn index_moves_of(b: &Board, moves: &[u16]) -> Option<Vec<u8>> {
    let legal = b.legal();
    moves
        .iter()
        .map(|&m| {
            let bit = 1u64.checked_shl(u32::from(m)).filter(|b| legal & b != 0)?;
            Some((legal & (bit - 1)).count_ones() as u8)
        })
        .collect()
}

/// Inverse of [`index_moves_of`].
fn unindex_moves_of(b: &Board, idx: &[u8]) -> Result<Vec<u16>, CodecError> {
    let legal = b.legal();
    idx.iter()
        .map(|&i| {
            let mut x = legal;
            for _ in 0..i {
                x &= x.wrapping_sub(1);
            }
            if x == 0 {
                Err(OthelloError::MoveIndex {
                    index: i,
                    legal: legal.count_ones(),
                }
                .into())
            } else {
                Ok(x.trailing_zeros() as u16)
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn move_indices_round_trip(seed in any::<u64>(), plies in 0usize..60) {
            let b = Board::random_playout(seed, plies);
            let c = OthelloCodec::default();
            let pos = b.pack().0;
            let mut moves: Vec<u16> = Vec::new();
            let mut x = b.legal();
            while x != 0 { moves.push(x.trailing_zeros() as u16); x &= x - 1; }
            let idx = c.index_moves(&pos, &moves).unwrap();
            prop_assert_eq!(c.unindex_moves(&pos, &idx).unwrap(), moves);
            prop_assert!(c.index_moves(&pos, &[64]).is_none());
            prop_assert_eq!(c.key(&pos).unwrap(), b.key());
        }
    }
}

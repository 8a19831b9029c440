//! Othello layer (docs/CONTRACT.md §7): bitboard positions with legal moves and implicit
//! passes, the packed form, SplitMix64 Zobrist keys, board strings, the 8 board symmetries,
//! and the [`OthelloCodec`] that plugs Othello into the game-independent store. It uses
//! nothing of the chess layer.

pub(crate) mod board;
pub mod endgame;
pub(crate) mod error;
mod tt;

pub use board::{
    Board, MAX_PACKED, flips, moves_of, parse_square, square_name, transform, transform_square,
    untransform_square,
};
pub use error::OthelloError;

use std::sync::Arc;

use crate::store::error::CodecError;
use crate::store::{IdentityModel, PositionCodec, PositionModel};

/// Codec name of Othello books (the book's meta `codec` key; docs/FORMAT.md).
pub const CODEC_NAME: &str = "othello-packed-v1";
/// Codec name of Othello books that store each position under its least symmetric image
/// (`import --canonical`).
pub const CANONICAL_CODEC_NAME: &str = "othello-packed-v1-canonical";

/// Othello positions in the packed format of docs/CONTRACT.md §7. Positions are stored as
/// they are packed (the identity model); moves (square indices 0..63) are indexed by their
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
    fn train(&self, _samples: &[&[u8]]) -> Result<Vec<u8>, CodecError> {
        // The identity model: measured against a context model in docs/PERFORMANCE.md.
        Ok(Vec::new())
    }
    fn load_model(&self, bytes: &[u8]) -> Result<Arc<dyn PositionModel>, CodecError> {
        if !bytes.is_empty() {
            return Err(OthelloError::Model(bytes.len()).into());
        }
        Ok(Arc::new(IdentityModel))
    }
    fn index_moves(&self, pos: &[u8], moves: &[u16]) -> Option<Vec<u8>> {
        let legal = Board::unpack(pos).ok()?.legal();
        moves
            .iter()
            .map(|&m| {
                let bit = 1u64.checked_shl(u32::from(m)).filter(|b| legal & b != 0)?;
                Some((legal & (bit - 1)).count_ones() as u8)
            })
            .collect()
    }
    fn unindex_moves(&self, pos: &[u8], idx: &[u8]) -> Result<Vec<u16>, CodecError> {
        let legal = Board::unpack(pos)?.legal();
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
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn move_indices_round_trip(seed in any::<u64>(), plies in 0usize..60) {
            let mut b = Board::start();
            let mut s = seed;
            for _ in 0..plies {
                if b.game_over() { break; }
                let legal = b.legal();
                s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                let mut x = legal;
                for _ in 0..((s >> 33) as u32 % legal.count_ones()) { x &= x - 1; }
                b.play(x.trailing_zeros() as u8).unwrap();
            }
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

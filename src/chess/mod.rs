//! Chess layer: the packed position codec, Polyglot keys, FENs and move codes, Polyglot move
//! conversion, key-only attachment, opening names, and the [`ChessCodec`] that plugs chess into the
//! game-independent store.

pub mod attach;
pub(crate) mod error;
pub mod gamefields;
pub mod gameindex;
pub(crate) mod legal;
pub mod mainline;
mod mainline_score;
pub(crate) mod model;
pub mod openings;
pub(crate) mod packed;
pub(crate) mod polyglot;
pub(crate) mod position;
mod tt;

#[doc(hidden)]
pub use model::ChessModel;
pub use packed::{MAX_PACKED, PLANES, PackedPos, PosState, to_hex};
pub use position::{
    MoveCode, decode_move, encode_move, key_and_pack, legal_move, move_uci, parse_fen, parse_move,
    polyglot_key, position_from_bitboards,
};

use std::sync::Arc;

use crate::store::error::CodecError;
use crate::store::{PositionCodec, PositionModel, Restored, generic_prepare, generic_restore};
use error::ChessCodecError;

/// Chess positions in the packed format of docs/CONTRACT.md §2.
#[derive(Clone, Copy, Debug, Default)]
pub struct ChessCodec;

pub(crate) const CODEC_NAME: &str = "chess-packed-v1";

impl PositionCodec for ChessCodec {
    fn name(&self) -> &'static str {
        CODEC_NAME
    }
    fn first_to_move(&self, pos: &[u8]) -> Option<bool> {
        Some(!PosState::unpack(pos).ok()?.black_to_move)
    }
    fn key(&self, pos: &[u8]) -> Result<u64, CodecError> {
        Ok(PosState::unpack(pos)?.key())
    }
    fn train(&self, samples: &[&[u8]]) -> Result<Vec<u8>, CodecError> {
        let states = samples
            .iter()
            .map(|p| PosState::unpack(p))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(model::ChessModel::train(&states).to_bytes())
    }
    fn load_model(&self, bytes: &[u8]) -> Result<Arc<dyn PositionModel>, CodecError> {
        Ok(Arc::new(
            model::ChessModel::from_bytes(bytes).map_err(ChessCodecError::Model)?,
        ))
    }
    fn index_moves(&self, pos: &[u8], moves: &[u16]) -> Option<Vec<u8>> {
        index_moves_of(&PosState::unpack(pos).ok()?, moves)
    }
    fn index_game(
        &self,
        game: &crate::store::gameblock::StoredGame,
        pairs: &mut Vec<(u64, u16)>,
    ) -> Result<Option<crate::store::gamerefs::GameFacts>, CodecError> {
        gameindex::index_game(game, pairs)
    }
    fn index_games(
        &self,
        games: &[crate::store::gameblock::StoredGame],
    ) -> Vec<gameindex::Indexed> {
        gameindex::index_games(games)
    }
    fn upgrade_game(&self, game: &mut crate::store::gameblock::StoredGame) {
        gamefields::upgrade(game);
    }
    fn game_head_fields(&self) -> Option<usize> {
        Some(gamefields::MOVES_FIELD)
    }
    fn counted_plies_field(&self) -> Option<usize> {
        Some(gamefields::PLIES_FIELD)
    }
    fn game_identity_fields(&self) -> &'static [usize] {
        &gamefields::IDENTITY_FIELDS
    }
    fn prepare(
        &self,
        model: &dyn PositionModel,
        pos: &[u8],
        moves: &[u16],
        coded: &mut Vec<u8>,
    ) -> Result<Option<Vec<u8>>, CodecError> {
        let Some(m) = model.as_any().downcast_ref::<ChessModel>() else {
            return generic_prepare(self, model, pos, moves, coded);
        };
        let state = PosState::unpack(pos)?;
        m.encode_state_into(&state, coded);
        Ok(index_moves_of(&state, moves))
    }
    fn unindex_moves(&self, pos: &[u8], idx: &[u8]) -> Result<Vec<u16>, CodecError> {
        unindex_moves_of(&PosState::unpack(pos)?, idx)
    }
    fn restore(
        &self,
        model: &dyn PositionModel,
        coded: &[u8],
        idx: Option<&[u8]>,
    ) -> Result<Restored, CodecError> {
        let Some(m) = model.as_any().downcast_ref::<ChessModel>() else {
            return generic_restore(self, model, coded, idx);
        };
        let state = m.decode_state(coded).ok_or(ChessCodecError::Undecodable)?;
        Ok(Restored {
            pos: state.pack().0,
            key: state.key(),
            moves: idx.map(|idx| unindex_moves_of(&state, idx)),
        })
    }
}

/// For `verify`: the position coded by `model` (decoded straight to its state with the
/// trained chess model; through the model's generic decode otherwise).
pub(crate) fn decode_coded(
    model: &dyn PositionModel,
    coded: &[u8],
) -> Result<PosState, CodecError> {
    match model.as_any().downcast_ref::<ChessModel>() {
        Some(m) => Ok(m.decode_state(coded).ok_or(ChessCodecError::Undecodable)?),
        None => Ok(PosState::unpack(&model.decode(coded)?)?),
    }
}

/// How many legal moves `pos` has (a stored move index names a legal move exactly when it is
/// below this).
pub(crate) fn legal_count(pos: &shakmaty::Chess) -> usize {
    legal::count_legal(pos)
}

/// The codes of the legal moves of `pos`, ascending (index i names `codes[i]`).
pub(crate) fn legal_codes(pos: &shakmaty::Chess) -> Vec<u16> {
    let mut codes = Vec::with_capacity(64);
    legal::for_each_legal_code(pos, |c| codes.push(c));
    codes.sort_unstable();
    codes
}

/// The moves standing at the given ranks of a position's legal moves in move-code order.
fn unindex_moves_of(state: &PosState, idx: &[u8]) -> Result<Vec<u16>, CodecError> {
    let chess = state.to_chess_unchecked()?;
    let mut codes = [0u16; 256];
    let mut n = 0;
    legal::for_each_legal_code(&chess, |c| {
        if let Some(slot) = codes.get_mut(n) {
            *slot = c;
            n += 1;
        }
    });
    let codes = &mut codes[..n];
    codes.sort_unstable();
    idx.iter()
        .map(|&i| {
            codes.get(usize::from(i)).copied().ok_or_else(|| {
                ChessCodecError::MoveIndex {
                    index: i,
                    legal: codes.len(),
                }
                .into()
            })
        })
        .collect()
}

/// Each move's rank among the position's legal moves in move-code order (the same as the
/// index [`unindex_moves_of`] takes); `None` if a move is not legal there.
fn index_moves_of(state: &PosState, moves: &[u16]) -> Option<Vec<u8>> {
    if moves.is_empty() {
        return Some(Vec::new());
    }
    let chess = state.to_chess_unchecked().ok()?;
    let mut idx = vec![0u8; moves.len()];
    let mut found = 0usize;
    // Only codes up to the highest move matter. Without promotions (codes below 2^12) they
    // all go to squares up to its destination.
    let top = moves.iter().copied().max().unwrap_or(0);
    let dests = if top < 1 << 12 {
        shakmaty::Bitboard(u64::MAX >> (63 - (top >> 6)))
    } else {
        shakmaty::Bitboard::FULL
    };
    legal::for_each_legal_code_to(&chess, dests, |c| {
        for (i, &m) in idx.iter_mut().zip(moves) {
            match c.cmp(&m) {
                std::cmp::Ordering::Less => *i += 1,
                std::cmp::Ordering::Equal => found += 1,
                std::cmp::Ordering::Greater => {}
            }
        }
    });
    // Moves are distinct, so all were found exactly when the count matches.
    (found == moves.len()).then_some(idx)
}

#[cfg(test)]
pub(crate) mod tests_support {
    use super::*;
    use shakmaty::{Chess, Position};

    /// A square from its name (`"e4"`).
    pub(crate) fn sq(name: &str) -> shakmaty::Square {
        name.parse().unwrap()
    }

    /// Any bit-level position state (not necessarily legal chess).
    pub(crate) fn arb_state() -> impl proptest::strategy::Strategy<Value = PosState> {
        use proptest::prelude::*;
        (
            proptest::collection::vec(0u8..13, 64),
            any::<bool>(),
            0u8..16,
            proptest::option::of(0u8..8),
        )
            .prop_map(|(sq, black_to_move, castling, ep_file)| {
                let mut squares = [0u8; 64];
                squares.copy_from_slice(&sq);
                PosState {
                    squares,
                    black_to_move,
                    castling,
                    ep_file,
                }
            })
    }

    /// The position after a line of SAN or UCI moves from the start.
    pub(crate) fn play(moves: &[&str]) -> Chess {
        let mut pos = Chess::default();
        for m in moves {
            let mv = parse_move(&pos, m).expect("legal move");
            pos.play_unchecked(mv);
        }
        pos
    }

    /// A few dozen real positions (a short game plus an en-passant case).
    pub(crate) fn sample_positions() -> Vec<Vec<u8>> {
        let mut out = Vec::new();
        for line in [
            "e4 c5 Nf3 d6 d4 cxd4 Nxd4 Nf6 Nc3 a6 Be3 e5 Nb3 Be6 f3 Be7 Qd2 O-O O-O-O Nbd7 g4 b5",
            "e4 d5 e5 f5 exf6 e5 a4 b5 h4 b4 c4 bxc3 bxc3",
            "d4 Nf6 c4 e6 Nc3 Bb4 e3 O-O Bd3 d5 Nf3 c5 O-O Nc6 a3 Bxc3 bxc3 dxc4 Bxc4 Qc7",
        ] {
            let mut pos = Chess::default();
            out.push(PosState::from_chess(&pos).pack().0);
            for m in line.split_whitespace() {
                let mv = parse_move(&pos, m).expect("legal sample move");
                pos.play_unchecked(mv);
                out.push(PosState::from_chess(&pos).pack().0);
            }
        }
        out.sort();
        out.dedup();
        out
    }
}

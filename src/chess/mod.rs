//! Chess layer: the packed position codec, Polyglot keys, FENs and move codes, and the
//! [`ChessCodec`] that plugs chess into the game-independent store.

pub mod model;
pub mod packed;
pub mod position;
pub mod rangecoder;

pub use model::ChessModel;
pub use packed::{PLANES, PosState, to_hex};
pub use position::{
    MoveCode, decode_move, encode_move, legal_move, move_uci, parse_fen, parse_move, polyglot_key,
};

use std::sync::Arc;

use crate::store::{PositionCodec, PositionModel};

/// Chess positions in the packed format of DESIGN.md §2.
#[derive(Clone, Copy, Debug, Default)]
pub struct ChessCodec;

pub const CODEC_NAME: &str = "chess-packed-v1";

impl PositionCodec for ChessCodec {
    fn name(&self) -> &'static str {
        CODEC_NAME
    }
    fn key(&self, pos: &[u8]) -> Result<u64, String> {
        Ok(PosState::unpack(pos).map_err(|e| e.to_string())?.key())
    }
    fn train(&self, samples: &[&[u8]]) -> Result<Vec<u8>, String> {
        let states = samples
            .iter()
            .map(|p| PosState::unpack(p).map_err(|e| e.to_string()))
            .collect::<Result<Vec<_>, _>>()?;
        Ok(model::ChessModel::train(&states).to_bytes())
    }
    fn load_model(&self, bytes: &[u8]) -> Result<Arc<dyn PositionModel>, String> {
        Ok(Arc::new(model::ChessModel::from_bytes(bytes)?))
    }
    fn index_moves(&self, pos: &[u8], moves: &[u16]) -> Option<Vec<u8>> {
        let legal = legal_codes(pos).ok()?;
        moves
            .iter()
            .map(|m| {
                legal
                    .binary_search(m)
                    .ok()
                    .and_then(|i| u8::try_from(i).ok())
            })
            .collect()
    }
    fn unindex_moves(&self, pos: &[u8], idx: &[u8]) -> Result<Vec<u16>, String> {
        let legal = legal_codes(pos)?;
        idx.iter()
            .map(|&i| {
                legal
                    .get(usize::from(i))
                    .copied()
                    .ok_or_else(|| format!("move index {i} beyond the {} legal moves", legal.len()))
            })
            .collect()
    }
}

/// The legal moves of a packed position as sorted move codes.
fn legal_codes(pos: &[u8]) -> Result<Vec<u16>, String> {
    use shakmaty::Position;
    let state = PosState::unpack(pos).map_err(|e| e.to_string())?;
    let chess = state.to_chess_unchecked().map_err(|e| e.to_string())?;
    let mut codes: Vec<u16> = chess.legal_moves().iter().map(encode_move).collect();
    codes.sort_unstable();
    Ok(codes)
}

#[cfg(test)]
pub(crate) mod tests_support {
    use super::*;
    use shakmaty::{Chess, Position};

    /// Any bit-level position state (not necessarily legal chess).
    pub fn arb_state() -> impl proptest::strategy::Strategy<Value = PosState> {
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
    pub fn play(moves: &[&str]) -> Chess {
        let mut pos = Chess::default();
        for m in moves {
            let mv = parse_move(&pos, m).expect("legal move");
            pos.play_unchecked(mv);
        }
        pos
    }

    /// A few dozen real positions (a short game plus an en-passant case).
    pub fn sample_positions() -> Vec<Vec<u8>> {
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

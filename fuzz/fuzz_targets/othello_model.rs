//! The range-coded Othello position model (docs/FORMAT.md §11.1): `OthelloModel::decode_board`
//! on arbitrary bytes, and the bytes read as a board.
//!
//! Checks: no panics (trained and untrained models, the trait path, `from_bytes` on the
//! input); every decoded board re-encodes to bytes that decode to it, and re-encoding is
//! stable; a serialized model reloads to one that codes identically; reading the first 17
//! bytes as black discs, white discs and the side, encode → decode is exact for every board.
#![no_main]

use bookdb::othello::{Board, OthelloModel};
use bookdb::store::PositionModel;
use bookdb_fuzz::othello_models;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    for m in othello_models() {
        if let Some(b) = m.decode_board(data) {
            let again = m.encode_board(&b);
            assert_eq!(m.decode_board(&again), Some(b), "re-encoded board differs");
            assert_eq!(m.encode_board(&b), again);
            // The trait path used by blocks: packed positions in and out.
            let packed = m.decode(data).expect("decode_board accepted these bytes");
            assert_eq!(Board::unpack(&packed).expect("a packed board"), b);
            let mut coded = Vec::new();
            m.encode(&packed, &mut coded).expect("a decoded board encodes");
            assert_eq!(coded, again);
        }
    }
    if data.len() < 4096
        && let Ok(m) = OthelloModel::from_bytes(data)
    {
        let _ = m.decode_board(data);
    }
    if data.len() >= 17 {
        let black = u64::from_le_bytes(data[..8].try_into().expect("8 bytes"));
        let white = u64::from_le_bytes(data[8..16].try_into().expect("8 bytes"));
        let b = Board::from_parts(black, white, data[16] & 1 == 1);
        for m in othello_models() {
            let bytes = m.encode_board(&b);
            assert_eq!(m.decode_board(&bytes), Some(b), "encode/decode mismatch");
        }
    }
});

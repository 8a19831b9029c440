//! The range-coded chess position model: `ChessModel::decode_state` on arbitrary bytes.
//!
//! Checks: no panics (trained, untrained and deserialized models, and `from_bytes` on the
//! input); every decoded state re-encodes to bytes that decode to the same state; and, reading
//! the input as a state instead (66 plane bytes reduced into range), encode → decode is exact.
#![no_main]

use bookdb::chess::{ChessModel, PLANES, PosState};
use bookdb_fuzz::{loaded_model, trained_model, untrained_model};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    for m in [trained_model(), untrained_model()] {
        if let Some(s) = m.decode_state(data) {
            let again = m.encode_state(&s);
            assert_eq!(m.decode_state(&again).as_ref(), Some(&s), "re-encoded state differs");
            // Re-encoding is canonical: a second round gives the same bytes.
            assert_eq!(m.encode_state(&s), again);
            let _ = s.key();
            let _ = s.to_chess();
        }
    }
    // The trait path used by blocks (deserialized model, packed positions in and out).
    let m = loaded_model();
    if let Ok(packed) = m.decode(data) {
        let s = PosState::unpack(&packed).expect("decode yields a valid packed position");
        let mut coded = Vec::new();
        m.encode(&packed, &mut coded).expect("a decoded position encodes");
        let again = m.decode(&coded).expect("an encoded position decodes");
        assert_eq!(again, packed);
        let _ = s.fen();
    }
    // Garbage as a serialized model.
    if data.len() < 512 {
        let _ = ChessModel::from_bytes(data);
    }
    // The input as a state: encode then decode must be exact for every state.
    if data.len() >= PLANES {
        let mut planes = [0u8; PLANES];
        for (p, &b) in planes.iter_mut().zip(data) {
            *p = b % 13;
        }
        planes[64] = data[64] & 0x1f;
        planes[65] = data[65] % 9;
        let s = PosState::from_planes(&planes).expect("planes reduced into range");
        for m in [trained_model(), untrained_model()] {
            let bytes = m.encode_state(&s);
            assert_eq!(m.decode_state(&bytes).as_ref(), Some(&s), "encode/decode mismatch");
        }
    }
});

//! Packed positions (docs/CONTRACT.md §2): `PosState::unpack` / `unpack_prefix` on arbitrary
//! bytes.
//!
//! Checks: no panics; both decoders agree; an accepted input re-packs to exactly the bytes
//! consumed (the packed form is canonical); the key, FEN, planes and shakmaty conversion of
//! any decoded state are panic-free, and a state that converts to a legal position survives
//! position → state, FEN → state and has the Polyglot key shakmaty computes.
#![no_main]

use bookdb::chess::{PLANES, PosState, parse_fen, polyglot_key};
use bookdb::error::PackError;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let whole = PosState::unpack(data);
    match PosState::unpack_prefix(data) {
        Ok((state, used)) => {
            assert!(used >= 1 && used <= data.len(), "used {used} of {}", data.len());
            let (bytes, bits) = state.pack();
            assert_eq!(bytes, &data[..used], "re-pack differs from the accepted input");
            assert_eq!(bits, state.packed_bits());
            assert_eq!(bytes.len(), bits.div_ceil(8));
            if used == data.len() {
                assert_eq!(whole.as_ref(), Ok(&state));
            } else {
                assert_eq!(whole, Err(PackError::TrailingBytes(data.len() - used)));
            }
            check_state(&state);
        }
        Err(e) => assert_eq!(whole, Err(e), "unpack and unpack_prefix disagree"),
    }
});

fn check_state(state: &PosState) {
    let key = state.key();
    let fen = state.fen();
    let mut planes = [0u8; PLANES];
    state.to_planes(&mut planes);
    assert_eq!(PosState::from_planes(&planes).as_ref(), Some(state));
    if let Ok(pos) = state.to_chess() {
        assert_eq!(&PosState::from_chess(&pos), state);
        assert_eq!(polyglot_key(&pos), key, "key differs from shakmaty's for {fen}");
        let reparsed = parse_fen(&fen).unwrap_or_else(|e| panic!("own FEN {fen:?} rejected: {e}"));
        assert_eq!(&PosState::from_chess(&reparsed), state, "FEN {fen} does not round-trip");
    }
}

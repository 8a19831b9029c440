//! Game blocks (docs/FORMAT.md §15, draft): `gameblock::decode` on arbitrary bytes, raw and
//! with a valid checksum written over them (so that the fuzzer reaches the zstd frame and the
//! columns); every chess game a block yields is turned back into PGN (`gamerec::to_pgn`,
//! which decodes the mainline's move ranks from its stored FEN or the start position).
//!
//! Checks: no panics; a block the decoder accepts holds games that code into a block that
//! decodes to the same games.
#![no_main]

use bookdb::ops::gamerec;
use bookdb::store::gameblock;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut sealed = data.to_vec();
    if sealed.len() >= 14 {
        let mut h = crc32fast::Hasher::new();
        h.update(&sealed[..10]);
        h.update(&sealed[14..]);
        sealed[10..14].copy_from_slice(&h.finalize().to_le_bytes());
    }
    for bytes in [data, sealed.as_slice()] {
        if let Ok(games) = gameblock::decode(bytes) {
            for g in &games {
                let _ = gamerec::to_pgn(g);
            }
            let again = gameblock::encode(&games, 1).expect("accepted games code again");
            assert_eq!(gameblock::decode(&again).as_ref(), Ok(&games));
        }
    }
});

//! Game blocks (docs/FORMAT.md §15.1): `gameblock::decode` and `BlockView::open` (whole and
//! heads only) on arbitrary bytes, raw and with a valid checksum written over them for both
//! block versions (so that the fuzzer reaches the zstd frames and the columns); every chess
//! game a block yields is turned back into PGN (`gamerec::to_pgn`, which decodes the
//! mainline's move ranks from its stored FEN or the start position).
//!
//! Checks: no panics; a block the decoder accepts holds games that code into a block (split
//! where the input was) that decodes to the same games, and whose heads are the games' first
//! fields.
#![no_main]

use bookdb::ops::gamerec;
use bookdb::store::gameblock::{self, BlockView};
use libfuzzer_sys::fuzz_target;

/// `data` with the crc32 of a version-1 block (bytes 10..14 over 0..10 and 14..) or of a
/// version-2 block (bytes 19..23 over 0..19 and 23..) written over it.
fn sealed(data: &[u8], version: u8) -> Vec<u8> {
    let (at, header) = if version == 1 { (10, 14) } else { (19, 23) };
    let mut b = data.to_vec();
    if b.len() >= header {
        b[0] = version;
        let mut h = crc32fast::Hasher::new();
        h.update(&b[..at]);
        h.update(&b[header..]);
        b[at..header].copy_from_slice(&h.finalize().to_le_bytes());
    }
    b
}

fuzz_target!(|data: &[u8]| {
    for bytes in [data.to_vec(), sealed(data, 1), sealed(data, 2)] {
        let heads = BlockView::open(&bytes, true);
        if let Ok(games) = gameblock::decode(&bytes) {
            for g in &games {
                let _ = gamerec::to_pgn(g);
            }
            let split = if bytes[0] == 2 { usize::from(bytes[6]) } else { 0 };
            let split = split.min(games.first().map_or(0, |g| g.fields.len()));
            let again = gameblock::encode_split(&games, 1, split).expect("accepted games code again");
            assert_eq!(gameblock::decode(&again).as_ref(), Ok(&games));
            let v = BlockView::open(&again, true).expect("heads of a block just coded");
            for (i, g) in games.iter().enumerate() {
                assert_eq!(v.game(i).fields[..], g.fields[..split]);
            }
            // Whatever decodes whole also opens for its heads.
            assert!(heads.is_ok());
        }
    }
});

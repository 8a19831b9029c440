//! Id index chunks (docs/FORMAT.md §15.5): `idchunk::decode` on arbitrary bytes, raw and with a
//! valid checksum written over them (so that the fuzzer reaches the Rice-coded gaps and the
//! numbers).
//!
//! Checks: no panics; a chunk the decoder accepts holds rows in order that code into a chunk
//! that decodes to the same rows, and `rows_claimed` agrees with it.
#![no_main]

use bookdb::store::idchunk;
use libfuzzer_sys::fuzz_target;

/// `data` with version 1 and the crc32 (bytes 15..19 over 0..15 and 19..) written over it.
fn sealed(data: &[u8]) -> Vec<u8> {
    let mut b = data.to_vec();
    if b.len() >= 19 {
        b[0] = idchunk::ID_CHUNK_VERSION;
        let mut h = crc32fast::Hasher::new();
        h.update(&b[..15]);
        h.update(&b[19..]);
        b[15..19].copy_from_slice(&h.finalize().to_le_bytes());
    }
    b
}

fuzz_target!(|data: &[u8]| {
    for bytes in [data.to_vec(), sealed(data)] {
        if let Ok(rows) = idchunk::decode(&bytes) {
            assert!(!rows.is_empty());
            assert!(rows.windows(2).all(|w| w[0] <= w[1]));
            assert_eq!(idchunk::rows_claimed(&bytes).unwrap(), rows.len());
            let again = idchunk::encode(&rows).expect("accepted rows code");
            assert_eq!(idchunk::decode(&again).unwrap(), rows);
        }
    }
});

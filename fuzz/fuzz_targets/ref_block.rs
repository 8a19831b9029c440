//! Game reference chunks and fact chunks (docs/FORMAT.md §15.3) from arbitrary bytes:
//! `refblock::decode_chunk` raw and with a valid checksum written over them (so that the fuzzer
//! reaches the bits: move counts, reference counts, numbers, Rice codes), and
//! `refblock::check_facts`; every chess game a game block yields is also indexed
//! (`chess::gameindex::index_game`: replay of its stored mainline, its cell from its tags).
//!
//! Checks: no panics; a chunk the decoder accepts codes again (at its own width) into a chunk
//! that decodes to the same lists; an accepted fact chunk gives each of its facts and nothing
//! past them.
#![no_main]

use bookdb::store::refblock;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut sealed = data.to_vec();
    if sealed.len() >= 10 {
        let mut h = crc32fast::Hasher::new();
        h.update(&sealed[..6]);
        h.update(&sealed[10..]);
        sealed[6..10].copy_from_slice(&h.finalize().to_le_bytes());
    }
    for bytes in [data, sealed.as_slice()] {
        if let Ok(entries) = refblock::decode_chunk(bytes) {
            let width = bytes[5];
            let again = refblock::encode_chunk(&entries, width).expect("accepted lists code again");
            assert_eq!(refblock::decode_chunk(&again).as_ref(), Ok(&entries));
        }
    }
    let mut facts = data.to_vec();
    if facts.len() >= 4 {
        let n = facts.len() - 4;
        let crc = crc32fast::hash(&facts[..n]);
        facts[n..].copy_from_slice(&crc.to_le_bytes());
    }
    for bytes in [data, facts.as_slice()] {
        if let Ok(n) = refblock::check_facts(bytes) {
            for i in 0..n {
                assert!(refblock::fact_at(bytes, i).is_some());
            }
            assert!(refblock::fact_at(bytes, n).is_none());
        }
    }
    if let Ok(games) = bookdb::store::gameblock::decode(data) {
        let mut pairs = Vec::new();
        for g in &games {
            let _ = bookdb::chess::gameindex::index_game(g, &mut pairs);
        }
    }
});

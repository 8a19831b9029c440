//! Game reference blocks and fact chunks (docs/FORMAT.md §15.4) from arbitrary bytes:
//! `refblock::decode_refs` raw and with a valid checksum written over them (so that the fuzzer
//! reaches the zstd frame and the positions), and `refblock::check_facts`; every chess game a
//! game block yields is also indexed (`chess::gameindex::index_game`: replay of its stored
//! mainline, its cell from its tags).
//!
//! Checks: no panics; a block the decoder accepts codes again into a block that decodes to the
//! same positions; an accepted fact chunk gives each of its facts and nothing past them.
#![no_main]

use bookdb::store::refblock;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let first = data
        .get(..8)
        .map_or(0, |b| u64::from_le_bytes(b.try_into().unwrap()));
    let body = data.get(8..).unwrap_or_default();
    let mut sealed = body.to_vec();
    if sealed.len() >= 9 {
        let mut h = crc32fast::Hasher::new();
        h.update(&sealed[..5]);
        h.update(&sealed[9..]);
        sealed[5..9].copy_from_slice(&h.finalize().to_le_bytes());
    }
    for bytes in [body, sealed.as_slice()] {
        if let Ok(ps) = refblock::decode_refs(bytes, first) {
            let again = refblock::encode_refs(&ps, 1).expect("accepted positions code again");
            let first = ps.first().map_or(first, |p| p.key);
            assert_eq!(refblock::decode_refs(&again, first).as_ref(), Ok(&ps));
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

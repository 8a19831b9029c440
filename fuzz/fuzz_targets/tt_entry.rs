//! Transposition-table entries and key filters (docs/FORMAT.md §14.2–14.3) decoded from
//! arbitrary bytes: nothing may panic; an entry that decodes re-encodes to the same bytes, and
//! a filter that decodes re-encodes to the same bytes.
#![no_main]

use bookdb::tt::{KeyFilter, decode_entry, encode_entry};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(e) = decode_entry(data) {
        let mut again = Vec::new();
        encode_entry(&e, &mut again);
        // Varints have one shortest form; the writer only writes it, but a longer form with
        // the right crc may decode: then it must decode to the same entry.
        if again != data {
            assert_eq!(decode_entry(&again).ok(), Some(e));
        }
    }
    if let Ok(f) = KeyFilter::decode(data) {
        assert_eq!(f.encode(), data, "a decoded filter re-encodes to its bytes");
    }
});

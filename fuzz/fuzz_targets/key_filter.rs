//! A book file's key filter (docs/FORMAT.md §4.7) decoded from arbitrary bytes: the index
//! (meta `key_filter`) and a partition (a `key_filter` row). Nothing may panic; what decodes
//! re-encodes to the same bytes, and a decoded index finds a partition for every key it may
//! hold and none above its last key.
#![no_main]

use bookdb::store::book::FilterIndex;
use bookdb::store::filter::KeyFilter;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    if let Ok(ix) = FilterIndex::decode(data) {
        assert_eq!(ix.encode(), data, "a decoded index re-encodes to its bytes");
        assert_eq!(ix.partition_of(ix.last), Some(ix.firsts.len() - 1));
        if let Some(above) = ix.last.checked_add(1) {
            assert_eq!(ix.partition_of(above), None);
        }
        for (i, &f) in ix.firsts.iter().enumerate() {
            assert_eq!(ix.partition_of(f), Some(i));
        }
    }
    if let Ok(f) = KeyFilter::decode(data) {
        assert_eq!(f.encode(), data, "a decoded filter re-encodes to its bytes");
    }
});

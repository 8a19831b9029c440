//! The engine evaluations of a position (docs/FORMAT.md §13): `eval::decode` on arbitrary
//! bytes, raw and sealed with a valid checksum (so that the fuzzer reaches the body).
//!
//! Checks: no panics; a set the decoder accepts is one the selector keeps and codes back to
//! exactly the bytes it was read from.
#![no_main]

use bookdb::store::eval;
use libfuzzer_sys::fuzz_target;

/// The start position's key and packed bytes: the row the bytes are read as.
const KEY: u64 = 0x463b_9618_1691_fc9c;
const POS: &[u8] = &[
    0xfe, 0x09, 0xeb, 0x60, 0x95, 0xa6, 0x09, 0xce, 0xb0, 0x4e, 0xee, 0xc1, 0x2f, 0xa6, 0x09,
    0xcb, 0x60, 0x95, 0xfe, 0x09, 0xe7, 0x80,
];

fuzz_target!(|data: &[u8]| {
    for bytes in [data.to_vec(), eval::seal_body(KEY, POS, data)] {
        if let Ok(set) = eval::decode(KEY, POS, &bytes) {
            assert_eq!(eval::select(set.clone()), set, "accepted a set the selector changes");
            let again = eval::encode(KEY, POS, &set);
            assert_eq!(again.as_deref(), Ok(bytes.as_slice()), "not canonical");
        }
    }
});

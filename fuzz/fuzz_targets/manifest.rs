//! The live book's manifest (`BOOK.live`, docs/FORMAT.md §10.2): `Manifest::decode` on arbitrary
//! bytes.
//!
//! Checks: no panics; whatever decodes is consistent (segments ascending, inside (base,
//! generation]) and re-encodes to exactly the bytes it was read from (the format has one
//! spelling per manifest).
#![no_main]

use bookdb::store::book::Manifest;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(m) = Manifest::decode(data) else {
        return;
    };
    assert!(m.base <= m.generation);
    assert!(m.segments.windows(2).all(|w| w[0] < w[1]));
    assert!(m.segments.iter().all(|&g| g > m.base && g <= m.generation));
    assert_eq!(m.encode(), data, "a manifest with another spelling decoded");
});

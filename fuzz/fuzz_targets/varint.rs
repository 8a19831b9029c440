//! LEB128 varints of the block columns: `varint::get` / `skip` on arbitrary bytes.
//!
//! Checks: no panics; `skip(data, i)` is the start of the i-th varint while every earlier one
//! read; a value re-encodes in no more bytes than it was read from (non-canonical padding is
//! accepted, overlong forms are not); `put`/`get` round-trip values taken from the input.
#![no_main]

use bookdb::store::varint;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut pos = 0;
    let mut i = 0;
    loop {
        // skip(data, i) is linear in i: check it from the start for the first varints only.
        if i < 64 {
            assert_eq!(varint::skip(data, i), Some(pos), "skip disagrees with get at varint {i}");
        }
        let start = pos;
        let Some(v) = varint::get(data, &mut pos) else {
            break;
        };
        let used = pos - start;
        assert_eq!(varint::skip(&data[start..], 1), Some(used), "skip(1) disagrees with get");
        assert!((1..=10).contains(&used), "varint of {used} bytes");
        assert_eq!(data[pos - 1] & 0x80, 0, "varint does not end on a terminator byte");
        let mut enc = Vec::new();
        varint::put(&mut enc, v);
        assert!(enc.len() <= used, "{v} read from {used} bytes re-encodes in {}", enc.len());
        i += 1;
    }
    // Reads at the first offsets, and past the end (every offset would be quadratic).
    for start in (0..=data.len().min(16)).chain([data.len(), data.len() + 1]) {
        let mut p = start;
        if varint::get(data, &mut p).is_some() {
            assert!(p > start && p <= data.len());
        }
        let _ = varint::skip(data.get(start..).unwrap_or(&[]), start);
    }
    // put/get round trip of the input read as u64s.
    let vals: Vec<u64> = data
        .chunks(8)
        .map(|c| {
            let mut b = [0u8; 8];
            b[..c.len()].copy_from_slice(c);
            u64::from_le_bytes(b) >> (c[0] % 64)
        })
        .collect();
    let mut buf = Vec::new();
    for &v in &vals {
        varint::put(&mut buf, v);
    }
    let mut p = 0;
    for (i, &v) in vals.iter().enumerate() {
        if i < 64 {
            assert_eq!(varint::skip(&buf, i), Some(p));
        }
        assert_eq!(varint::get(&buf, &mut p), Some(v));
    }
    assert_eq!(p, buf.len());
});

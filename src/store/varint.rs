//! LEB128 unsigned varints, the integer encoding of the block columns.

#[inline]
#[doc(hidden)]
pub fn put(out: &mut Vec<u8>, mut v: u64) {
    while v >= 0x80 {
        out.push((v as u8) | 0x80);
        v >>= 7;
    }
    out.push(v as u8);
}

/// Reads one varint at `*pos`, advancing it. `None` on truncation or overflow (> 10 bytes or
/// bits beyond 64).
#[inline(always)]
#[doc(hidden)]
pub fn get(data: &[u8], pos: &mut usize) -> Option<u64> {
    // Most values in a block are below 2^14 (counts, ratings): one or two bytes, no loop.
    match data.get(*pos..pos.wrapping_add(2)) {
        Some(&[b0, _]) if b0 < 0x80 => {
            *pos += 1;
            Some(u64::from(b0))
        }
        Some(&[b0, b1]) if b1 < 0x80 => {
            *pos += 2;
            Some(u64::from(b0 & 0x7f) | u64::from(b1) << 7)
        }
        _ => get_long(data, pos),
    }
}

/// [`get`] for a value of three bytes or more, or near the end of `data`.
#[inline(never)]
fn get_long(data: &[u8], pos: &mut usize) -> Option<u64> {
    let mut v: u64 = 0;
    let mut shift = 0u32;
    loop {
        let b = *data.get(*pos)?;
        *pos += 1;
        if shift == 63 && b > 1 {
            return None;
        }
        v |= u64::from(b & 0x7f) << shift;
        if b & 0x80 == 0 {
            return Some(v);
        }
        shift += 7;
        if shift > 63 {
            return None;
        }
    }
}

/// Byte offset of the `n`-th varint in a column (counts terminator bytes only).
#[inline]
#[doc(hidden)]
pub fn skip(data: &[u8], n: usize) -> Option<usize> {
    if n == 0 {
        return Some(0);
    }
    let mut seen = 0;
    for (i, &b) in data.iter().enumerate() {
        if b & 0x80 == 0 {
            seen += 1;
            if seen == n {
                return Some(i + 1);
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn round_trip(vals in proptest::collection::vec(any::<u64>(), 0..50)) {
            let mut buf = Vec::new();
            for &v in &vals { put(&mut buf, v); }
            let mut pos = 0;
            for (i, &v) in vals.iter().enumerate() {
                prop_assert_eq!(skip(&buf, i), Some(pos));
                prop_assert_eq!(get(&buf, &mut pos), Some(v));
            }
            prop_assert_eq!(pos, buf.len());
        }

        #[test]
        fn the_short_paths_read_what_the_loop_reads(
            data in proptest::collection::vec(any::<u8>(), 0..12),
            start in 0usize..13,
        ) {
            let (mut a, mut b) = (start, start);
            let fast = get(&data, &mut a);
            let slow = get_long(&data, &mut b);
            prop_assert_eq!(fast, slow);
            if fast.is_some() {
                prop_assert_eq!(a, b);
            }
        }

        #[test]
        fn garbage_never_panics(data in proptest::collection::vec(any::<u8>(), 0..20)) {
            let mut pos = 0;
            while get(&data, &mut pos).is_some() {}
        }
    }

    #[test]
    fn overflow_rejected() {
        let mut pos = 0;
        assert_eq!(get(&[0xff; 11], &mut pos), None);
        let mut pos = 0;
        let mut max = Vec::new();
        put(&mut max, u64::MAX);
        assert_eq!(get(&max, &mut pos), Some(u64::MAX));
        let mut bad = max.clone();
        *bad.last_mut().unwrap() = 0x02;
        let mut pos = 0;
        assert_eq!(get(&bad, &mut pos), None);
    }
}

//! A hasher for maps keyed by numbers that need no hashing of their own (Zobrist or xxh3 keys,
//! game and chunk numbers): the key mixed by one multiply.

use std::hash::Hasher;

/// Keys used as they are, mixed by a multiply so that low-bit keys (test keys, chunk numbers)
/// still spread.
#[derive(Default)]
pub(crate) struct KeyHasher(u64);

impl Hasher for KeyHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = (self.0 ^ u64::from(b)).wrapping_mul(0x100_0000_01b3);
        }
    }
    #[inline]
    fn write_u64(&mut self, k: u64) {
        self.0 = k.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }
    #[inline]
    fn write_u32(&mut self, k: u32) {
        self.write_u64(u64::from(k));
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashMap;
    use std::hash::BuildHasherDefault;

    #[test]
    fn numbered_keys_spread_and_are_found() {
        let mut m: HashMap<u32, u32, BuildHasherDefault<KeyHasher>> = HashMap::default();
        for i in 0..10_000u32 {
            m.insert(i * 446, i);
        }
        assert!((0..10_000u32).all(|i| m.get(&(i * 446)) == Some(&i)));
        assert!(!m.contains_key(&1));
        let mut h = KeyHasher::default();
        h.write_u32(7);
        let mut g = KeyHasher::default();
        g.write_u64(7);
        assert_eq!(h.finish(), g.finish());
    }
}

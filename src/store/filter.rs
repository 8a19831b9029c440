//! A Bloom filter over 64-bit keys: the key filter of published files — of a transposition
//! table (docs/FORMAT.md §14.2, one per file) and of a book file (§4.7, one per partition of
//! its keys) — so that a probe of a key a file lacks costs a few memory reads instead of a
//! B-tree lookup and a block. No false negatives; about 1% false positives at 10 bits a key.

/// Bits per key: 10 gives ~0.8% false positives with 7 probes.
const BITS_PER_KEY: u64 = 10;
const PROBES: u32 = 7;
/// The filter layout version (first byte of its bytes).
const LAYOUT: u8 = 1;

/// A Bloom filter over 64-bit keys.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KeyFilter {
    words: Vec<u64>,
}

/// Two independent hashes of a key (keys may be anything, down to 4 bits in the tests, so the
/// filter mixes them itself).
#[inline]
fn hashes(key: u64) -> (u64, u64) {
    let h = xxhash_rust::xxh3::xxh3_64(&key.to_le_bytes());
    (h, h.rotate_left(32) | 1)
}

/// Why filter bytes do not decode.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum FilterError {
    #[error("filter bytes are truncated or not whole words ({0} bytes)")]
    Length(usize),
    #[error("unknown filter layout {0}")]
    Layout(u8),
    #[error("filter checksum mismatch (stored crc32 {expected:08x}, computed {found:08x})")]
    Checksum { expected: u32, found: u32 },
}

impl KeyFilter {
    /// An empty filter sized for `keys` keys (at least one word).
    pub fn with_capacity(keys: u64) -> KeyFilter {
        let words = (keys * BITS_PER_KEY).div_ceil(64).max(1);
        KeyFilter {
            words: vec![0; usize::try_from(words).unwrap_or(usize::MAX)],
        }
    }

    fn bits(&self) -> u64 {
        self.words.len() as u64 * 64
    }

    pub fn insert(&mut self, key: u64) {
        let (mut h, step) = hashes(key);
        let bits = self.bits();
        for _ in 0..PROBES {
            let b = h % bits;
            self.words[(b / 64) as usize] |= 1 << (b % 64);
            h = h.wrapping_add(step);
        }
    }

    /// False only if the key was never inserted.
    #[inline]
    pub fn may_contain(&self, key: u64) -> bool {
        let (mut h, step) = hashes(key);
        let bits = self.bits();
        for _ in 0..PROBES {
            let b = h % bits;
            if self.words[(b / 64) as usize] & (1 << (b % 64)) == 0 {
                return false;
            }
            h = h.wrapping_add(step);
        }
        true
    }

    /// Bytes held in memory.
    pub fn memory(&self) -> usize {
        self.words.len() * 8
    }

    /// Layout byte, the words little-endian, crc32 of both.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.words.len() * 8 + 5);
        out.push(LAYOUT);
        for w in &self.words {
            out.extend_from_slice(&w.to_le_bytes());
        }
        let crc = crc32fast::hash(&out);
        out.extend_from_slice(&crc.to_le_bytes());
        out
    }

    pub fn decode(bytes: &[u8]) -> Result<KeyFilter, FilterError> {
        if bytes.len() < 13 || !(bytes.len() - 5).is_multiple_of(8) {
            return Err(FilterError::Length(bytes.len()));
        }
        let (body, crc) = bytes.split_at(bytes.len() - 4);
        let expected = u32::from_le_bytes([crc[0], crc[1], crc[2], crc[3]]);
        let found = crc32fast::hash(body);
        if expected != found {
            return Err(FilterError::Checksum { expected, found });
        }
        if body[0] != LAYOUT {
            return Err(FilterError::Layout(body[0]));
        }
        let words = body[1..]
            .chunks_exact(8)
            .map(|c| u64::from_le_bytes([c[0], c[1], c[2], c[3], c[4], c[5], c[6], c[7]]))
            .collect();
        Ok(KeyFilter { words })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn filters_round_trip_and_hold_every_key(keys in proptest::collection::vec(any::<u64>(), 0..300)) {
            let mut f = KeyFilter::with_capacity(keys.len() as u64);
            for &k in &keys {
                f.insert(k);
            }
            let back = KeyFilter::decode(&f.encode());
            prop_assert_eq!(back.as_ref(), Ok(&f));
            for &k in &keys {
                prop_assert!(f.may_contain(k));
            }
        }

        #[test]
        fn damaged_filters_are_errors(keys in proptest::collection::vec(any::<u64>(), 1..50), at in any::<usize>()) {
            let mut f = KeyFilter::with_capacity(keys.len() as u64);
            for &k in &keys {
                f.insert(k);
            }
            let mut b = f.encode();
            let i = at % b.len();
            b[i] ^= 1;
            prop_assert!(KeyFilter::decode(&b).is_err());
            prop_assert!(KeyFilter::decode(&b[..i]).is_err());
        }
    }

    #[test]
    fn false_positives_stay_near_one_percent() {
        let mut f = KeyFilter::with_capacity(100_000);
        for k in 0..100_000u64 {
            f.insert(k.wrapping_mul(0x9E37_79B9_7F4A_7C15));
        }
        let fp = (1_000_000..1_100_000u64)
            .filter(|k| f.may_contain(k.wrapping_mul(0x9E37_79B9_7F4A_7C15)))
            .count();
        assert!(fp < 2_000, "{fp} false positives in 100,000");
    }
}

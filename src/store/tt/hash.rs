//! The hash that keys a table of opaque states (docs/FORMAT.md §14.1): xxh3 of the canonical
//! bytes by default, or one of easyAI's hash families (its `Hashes.py`: simple, xor, add,
//! rotate, Bernstein, shift-add, FNV, one-at-a-time) for the collision experiment.
//!
//! easyAI's families combine the hashes of a key's elements with a `join`, reducing modulo the
//! table size after every step; [`family_hash`] does exactly that for any modulo (1,024
//! buckets in easyAI's `DictTranspositionTable`), and [`KeyHash::hash`] applies a family to
//! the bytes of a state with arithmetic modulo 2^64.

/// A hash family: how a table of opaque states turns the canonical bytes into its 64-bit key.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum KeyHash {
    #[default]
    Xxh3,
    Simple,
    Xor,
    Add,
    Rotate,
    Bernstein,
    ShiftAdd,
    Fnv,
    OneAtATime,
}

impl KeyHash {
    /// Every family, xxh3 first.
    pub const ALL: [KeyHash; 9] = [
        KeyHash::Xxh3,
        KeyHash::Simple,
        KeyHash::Xor,
        KeyHash::Add,
        KeyHash::Rotate,
        KeyHash::Bernstein,
        KeyHash::ShiftAdd,
        KeyHash::Fnv,
        KeyHash::OneAtATime,
    ];

    /// The name stored in a table's meta and accepted by [`KeyHash::from_name`].
    pub fn name(self) -> &'static str {
        match self {
            KeyHash::Xxh3 => "xxh3",
            KeyHash::Simple => "simple",
            KeyHash::Xor => "xor",
            KeyHash::Add => "add",
            KeyHash::Rotate => "rotate",
            KeyHash::Bernstein => "bernstein",
            KeyHash::ShiftAdd => "shift-add",
            KeyHash::Fnv => "fnv",
            KeyHash::OneAtATime => "one-at-a-time",
        }
    }

    pub fn from_name(name: &str) -> Option<KeyHash> {
        KeyHash::ALL.into_iter().find(|h| h.name() == name)
    }

    /// The 64-bit key of a state's canonical bytes.
    pub fn hash(self, bytes: &[u8]) -> u64 {
        match self {
            KeyHash::Xxh3 => xxhash_rust::xxh3::xxh3_64(bytes),
            family => family_hash(family, bytes.iter().map(|&b| u64::from(b)), None),
        }
    }
}

/// easyAI's `HashTranspositionTable.get_hash` for a flat key whose elements hash to `elems`
/// (`ord` of each character of a string, the value of each int): `before`, then
/// `join(h, e) % modulo` per element, then `after` (not reduced; the table reduces it).
/// `modulo` `None` is 2^64 (wrapping arithmetic). [`KeyHash::Xxh3`] is not a family: it
/// hashes the elements' low bytes.
pub fn family_hash(family: KeyHash, elems: impl Iterator<Item = u64>, modulo: Option<u64>) -> u64 {
    let reduce = |v: u64| modulo.map_or(v, |m| v % m);
    let mut h: u64 = match family {
        KeyHash::Fnv => 2_166_136_261,
        _ => 0,
    };
    if family == KeyHash::Xxh3 {
        let bytes: Vec<u8> = elems.map(|e| e as u8).collect();
        return xxhash_rust::xxh3::xxh3_64(&bytes);
    }
    for e in elems {
        h = reduce(match family {
            KeyHash::Simple => h.wrapping_mul(101).wrapping_add(e),
            KeyHash::Xor => h ^ e,
            KeyHash::Add => h.wrapping_add(e),
            KeyHash::Rotate => (h << 4) ^ (h >> 28) ^ e,
            KeyHash::Bernstein => h.wrapping_mul(33).wrapping_add(e),
            // Python: `one ^ (one << 5) + (one >> 2) + two` (+ binds tighter than ^).
            KeyHash::ShiftAdd => h ^ (h << 5).wrapping_add(h >> 2).wrapping_add(e),
            KeyHash::Fnv => h.wrapping_mul(16_777_619) ^ e,
            KeyHash::OneAtATime => {
                let mut one = h.wrapping_add(e);
                one = one.wrapping_add(one << 10);
                one ^ (one >> 6)
            }
            // Handled above.
            KeyHash::Xxh3 => h,
        });
    }
    if family == KeyHash::OneAtATime {
        h = h.wrapping_add(h << 3);
        h ^= h >> 11;
        h = h.wrapping_add(h << 15);
    }
    h
}

#[cfg(test)]
mod tests {
    use super::*;

    fn py(family: KeyHash, s: &str) -> u64 {
        family_hash(family, s.chars().map(|c| c as u64), Some(1024)) % 1024
    }

    #[test]
    fn families_match_easyai_on_known_strings() {
        // Computed with easyAI 2.0.12: `XHashTranspositionTable().get_hash("abc") % 1024`
        // (modulo 1024, its default) — worked by hand from Hashes.py.
        // simple: ((0*101+97)*101+98)*101+99 reduced at each step.
        let s = ((97u64 * 101 + 98) % 1024 * 101 + 99) % 1024;
        assert_eq!(py(KeyHash::Simple, "abc"), s);
        assert_eq!(py(KeyHash::Xor, "abc"), 97 ^ 98 ^ 99);
        assert_eq!(py(KeyHash::Add, "abc"), 294);
        let b = ((97u64 * 33 + 98) % 1024 * 33 + 99) % 1024;
        assert_eq!(py(KeyHash::Bernstein, "abc"), b);
        let f1 = ((2_166_136_261u64 * 16_777_619) ^ 97) % 1024;
        let f2 = ((f1 * 16_777_619) ^ 98) % 1024;
        assert_eq!(py(KeyHash::Fnv, "abc"), ((f2 * 16_777_619) ^ 99) % 1024);
    }

    #[test]
    fn names_round_trip() {
        for h in KeyHash::ALL {
            assert_eq!(KeyHash::from_name(h.name()), Some(h));
        }
        assert_eq!(KeyHash::from_name("md5"), None);
    }
}

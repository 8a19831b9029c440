//! A transposition-table entry (docs/FORMAT.md §14.3): what a search keeps per position, its
//! byte coding with a crc32, and the replacement rule that decides which of two results for
//! the same position a table keeps.

use crate::store::varint;

/// What the stored value says about the position's true value (from the side to move's point
/// of view), as alpha-beta searches report it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Bound {
    /// The value is exact.
    Exact,
    /// The true value is at least the stored one (the search failed high: a beta cut-off).
    Lower,
    /// The true value is at most the stored one (the search failed low).
    Upper,
}

/// The best move a search found: a move code of the game (a chess `MoveCode`, an Othello
/// square), opaque bytes (a game that only the caller understands), or none (a leaf, a
/// position without moves).
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub enum BestMove {
    #[default]
    None,
    Code(u16),
    Bytes(Box<[u8]>),
}

/// One search result for one position.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Entry {
    /// How deep the search that produced it went (plies, or empties for an endgame solver).
    pub depth: u16,
    /// Its value from the side to move's point of view.
    pub value: i32,
    pub bound: Bound,
    pub best_move: BestMove,
    /// The search it came from (larger is newer); see [`Entry::replaces`].
    pub generation: u32,
}

/// Opaque move bytes longer than this are refused (a move is a few bytes; a caller storing a
/// whole serialized record stays far below).
pub const MAX_MOVE_BYTES: usize = 1 << 20;

impl Entry {
    /// Whether `self`, stored after `old` for the same position, replaces it (docs/FORMAT.md
    /// §14.4): a deeper result wins; at equal depth an exact bound beats an inexact one, and a
    /// result with the same kind of bound wins when it is at least as new (a later store of the
    /// same search counts as newer). Otherwise the stored result stays.
    pub fn replaces(&self, old: &Entry) -> bool {
        if self.depth != old.depth {
            return self.depth > old.depth;
        }
        match (self.bound == Bound::Exact, old.bound == Bound::Exact) {
            (true, false) => true,
            (false, true) => false,
            _ => self.bound == old.bound && self.generation >= old.generation,
        }
    }
}

/// Why stored entry bytes do not decode.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum EntryError {
    #[error("entry bytes are truncated")]
    Truncated,
    #[error("entry checksum mismatch (stored crc32 {expected:08x}, computed {found:08x})")]
    Checksum { expected: u32, found: u32 },
    #[error("unknown entry layout version {0}")]
    Version(u8),
    #[error("bound code {0} is not exact (0), lower (1) or upper (2)")]
    Bound(u8),
    #[error("best-move kind {0} is not none (0), code (1) or bytes (2)")]
    MoveKind(u8),
    #[error("{what} {value} is out of range")]
    Range { what: &'static str, value: u64 },
    #[error("{0} bytes after the entry")]
    Trailing(usize),
}

/// The layout version in the flags byte's top bits (docs/FORMAT.md §14.3).
const LAYOUT: u8 = 0;

fn zigzag(v: i32) -> u64 {
    u64::from(((v << 1) ^ (v >> 31)) as u32)
}

fn unzigzag(v: u32) -> i32 {
    ((v >> 1) as i32) ^ -((v & 1) as i32)
}

/// Appends the coded entry (flags, depth, value, generation, move, crc32) to `out`.
pub fn encode(e: &Entry, out: &mut Vec<u8>) {
    let start = out.len();
    let bound = match e.bound {
        Bound::Exact => 0u8,
        Bound::Lower => 1,
        Bound::Upper => 2,
    };
    let kind = match e.best_move {
        BestMove::None => 0u8,
        BestMove::Code(_) => 1,
        BestMove::Bytes(_) => 2,
    };
    out.push(LAYOUT << 4 | kind << 2 | bound);
    varint::put(out, u64::from(e.depth));
    varint::put(out, zigzag(e.value));
    varint::put(out, u64::from(e.generation));
    match &e.best_move {
        BestMove::None => {}
        BestMove::Code(c) => out.extend_from_slice(&c.to_le_bytes()),
        BestMove::Bytes(b) => {
            varint::put(out, b.len() as u64);
            out.extend_from_slice(b);
        }
    }
    let crc = crc32fast::hash(&out[start..]);
    out.extend_from_slice(&crc.to_le_bytes());
}

/// Decodes what [`encode`] wrote: every byte checked, never a panic.
pub fn decode(bytes: &[u8]) -> Result<Entry, EntryError> {
    let body_len = bytes.len().checked_sub(4).ok_or(EntryError::Truncated)?;
    let (body, crc) = bytes.split_at(body_len);
    let expected = u32::from_le_bytes([crc[0], crc[1], crc[2], crc[3]]);
    let found = crc32fast::hash(body);
    if expected != found {
        return Err(EntryError::Checksum { expected, found });
    }
    let flags = *body.first().ok_or(EntryError::Truncated)?;
    if flags >> 4 != LAYOUT {
        return Err(EntryError::Version(flags >> 4));
    }
    let bound = match flags & 3 {
        0 => Bound::Exact,
        1 => Bound::Lower,
        2 => Bound::Upper,
        b => return Err(EntryError::Bound(b)),
    };
    let mut pos = 1;
    let mut num = |what: &'static str, max: u64| -> Result<u64, EntryError> {
        let v = varint::get(body, &mut pos).ok_or(EntryError::Truncated)?;
        if v > max {
            return Err(EntryError::Range { what, value: v });
        }
        Ok(v)
    };
    let depth = num("depth", u64::from(u16::MAX))? as u16;
    let value = unzigzag(num("value", u64::from(u32::MAX))? as u32);
    let generation = num("generation", u64::from(u32::MAX))? as u32;
    let best_move = match flags >> 2 & 3 {
        0 => BestMove::None,
        1 => {
            let b = body.get(pos..pos + 2).ok_or(EntryError::Truncated)?;
            pos += 2;
            BestMove::Code(u16::from_le_bytes([b[0], b[1]]))
        }
        2 => {
            let len = num("move length", MAX_MOVE_BYTES as u64)? as usize;
            let b = body.get(pos..pos + len).ok_or(EntryError::Truncated)?;
            pos += len;
            BestMove::Bytes(b.into())
        }
        k => return Err(EntryError::MoveKind(k)),
    };
    if pos != body.len() {
        return Err(EntryError::Trailing(body.len() - pos));
    }
    Ok(Entry {
        depth,
        value,
        bound,
        best_move,
        generation,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn bound() -> impl Strategy<Value = Bound> {
        prop_oneof![Just(Bound::Exact), Just(Bound::Lower), Just(Bound::Upper)]
    }

    fn best_move() -> impl Strategy<Value = BestMove> {
        prop_oneof![
            Just(BestMove::None),
            any::<u16>().prop_map(BestMove::Code),
            proptest::collection::vec(any::<u8>(), 0..40).prop_map(|v| BestMove::Bytes(v.into())),
        ]
    }

    pub(crate) fn entry() -> impl Strategy<Value = Entry> {
        (
            any::<u16>(),
            any::<i32>(),
            bound(),
            best_move(),
            any::<u32>(),
        )
            .prop_map(|(depth, value, bound, best_move, generation)| Entry {
                depth,
                value,
                bound,
                best_move,
                generation,
            })
    }

    proptest! {
        #[test]
        fn entries_round_trip(e in entry()) {
            let mut b = Vec::new();
            encode(&e, &mut b);
            prop_assert_eq!(decode(&b), Ok(e));
        }

        #[test]
        fn damaged_bytes_are_errors_not_panics(e in entry(), flip in any::<usize>(), cut in any::<usize>()) {
            let mut b = Vec::new();
            encode(&e, &mut b);
            let i = flip % b.len();
            let mut damaged = b.clone();
            damaged[i] ^= 0x5a;
            prop_assert!(decode(&damaged).is_err());
            prop_assert!(decode(&b[..cut % b.len()]).is_err());
        }

        #[test]
        fn arbitrary_bytes_never_panic(b in proptest::collection::vec(any::<u8>(), 0..64)) {
            let _ = decode(&b);
        }

        #[test]
        fn exactly_one_of_two_results_wins_unless_they_tie(a in entry(), b in entry()) {
            // Never both: a result and another cannot each replace the other unless they are
            // alike in depth, bound and generation (then the later store wins, either way).
            if a.replaces(&b) && b.replaces(&a) {
                prop_assert_eq!((a.depth, a.bound, a.generation), (b.depth, b.bound, b.generation));
            }
        }
    }

    fn e(depth: u16, bound: Bound, generation: u32) -> Entry {
        Entry {
            depth,
            value: 0,
            bound,
            best_move: BestMove::None,
            generation,
        }
    }

    #[test]
    fn the_replacement_rule() {
        use Bound::*;
        // Deeper wins, whatever the bound and the generation.
        assert!(e(9, Upper, 0).replaces(&e(8, Exact, 5)));
        assert!(!e(7, Exact, 9).replaces(&e(8, Lower, 0)));
        // Equal depth: exact beats inexact, never the reverse.
        assert!(e(8, Exact, 0).replaces(&e(8, Lower, 5)));
        assert!(!e(8, Upper, 9).replaces(&e(8, Exact, 0)));
        // Same kind of bound: the newer (or the later of one search) wins.
        assert!(e(8, Lower, 3).replaces(&e(8, Lower, 2)));
        assert!(e(8, Exact, 2).replaces(&e(8, Exact, 2)));
        assert!(!e(8, Lower, 1).replaces(&e(8, Lower, 2)));
        // A lower and an upper bound of equal depth: the stored one stays.
        assert!(!e(8, Lower, 9).replaces(&e(8, Upper, 0)));
        assert!(!e(8, Upper, 9).replaces(&e(8, Lower, 0)));
    }

    #[test]
    fn a_known_entry_has_known_bytes() {
        let mut b = Vec::new();
        encode(
            &Entry {
                depth: 24,
                value: -6,
                bound: Bound::Exact,
                best_move: BestMove::Code(37),
                generation: 1,
            },
            &mut b,
        );
        // flags 0x04 (code, exact), depth 24, value zigzag(-6) = 11, generation 1, code 37 LE.
        assert_eq!(&b[..6], &[0x04, 24, 11, 1, 37, 0]);
        assert_eq!(b.len(), 10);
    }
}

//! The byte coding of a file's game references (docs/FORMAT.md §15.4): reference chunks (per
//! entry block, per entry and move in the block's order, the numbers of the games the move's
//! cells name) and fact chunks (per game number, its cell, both Elos and its result, fixed
//! width: `FACT_BYTES`). Decoders
//! return errors on bad bytes and never panic.
//!
//! Reference chunk, version 2 (little-endian): `version u8 (2) | entries u32 | width u8 |
//! crc32 u32 | bits`, the crc32 covering the first 6 bytes and the bits. The bits (most
//! significant first, the last byte padded with zeros) hold, per entry of the block in order,
//! its move count in Elias gamma (≥ 1), and per move in the entry's order its list: the count
//! of numbers as a single `1` bit for one, else a `0` and the count + 1 in Elias gamma; the
//! first (highest) number in `width` bits; with two or more, a Rice parameter in 5 bits and
//! each next number's gap below the previous, less one, Rice-coded. Entries are not named: the
//! chunk is keyed by its entry block's key and follows that block's entries, so a reference
//! costs its game number and no key or move code (format 10; version 1 keyed each position).
//!
//! Fact chunk: `games × (cell id u32, strength u16)`, then a crc32 of them.

use super::bits::{BitReader, BitWriter, BitsError};

/// The reference chunk version this build writes and reads.
pub const REF_CHUNK_VERSION: u8 = 2;
const HEADER: usize = 10;
/// The most entries a chunk may claim (a block holds far fewer).
pub const MAX_CHUNK_ENTRIES: usize = 1 << 20;
/// The most moves one entry of a chunk may claim.
const MAX_MOVES: u64 = 1 << 16;
/// Games per fact chunk (a chunk of 9-byte facts and a crc fits a redb page).
pub const FACTS_PER_CHUNK: u32 = 446;
/// Bytes of one game's facts.
pub const FACT_BYTES: usize = 9;

/// One game's facts as a fact chunk keeps them (docs/FORMAT.md §15.4, format 11): its cell id
/// (masked to the file's facets), WhiteElo and BlackElo (0: none the book counts) and result
/// (0 white won, 1 draw, 2 black won, 3 unknown): what a one-game cell of the game holds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FactRow {
    pub cell: u32,
    pub white: u16,
    pub black: u16,
    pub result: u8,
}

impl FactRow {
    /// WhiteElo + BlackElo when both are known, else 0 (what references rank by).
    pub fn strength(&self) -> u16 {
        if self.white > 0 && self.black > 0 {
            self.white.saturating_add(self.black)
        } else {
            0
        }
    }
}

/// The references of one position: per move (by code, ascending), the game numbers its cells
/// name, highest first, each once.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PosRefs {
    pub key: u64,
    pub moves: Vec<(u16, Vec<u32>)>,
}

/// One entry's references in a chunk: per move, in the entry's order, its game numbers
/// (highest first, each once; empty for a move no stored game played).
pub type EntryRefs = Vec<Vec<u32>>;

/// A reference chunk or fact chunk that does not decode.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RefBlockError {
    #[error("reference chunk truncated ({0} bytes)")]
    Truncated(usize),
    #[error("reference chunk version {0} is not one this build reads")]
    Version(u8),
    #[error("checksum mismatch: stored {stored:08x}, computed {computed:08x}")]
    Checksum { stored: u32, computed: u32 },
    #[error("reference chunk payload: {0}")]
    Payload(&'static str),
    #[error("fact chunk of {0} bytes is not whole facts and a checksum")]
    FactChunk(usize),
}

impl From<BitsError> for RefBlockError {
    fn from(e: BitsError) -> Self {
        RefBlockError::Payload(e.0)
    }
}

/// The Rice parameter for a descending list's gaps (each less one): about log2 of their mean.
fn rice_for(numbers: &[u32]) -> u32 {
    let (Some(first), Some(last)) = (numbers.first(), numbers.last()) else {
        return 0;
    };
    let gaps = numbers.len() as u64 - 1;
    if gaps == 0 {
        return 0;
    }
    let mean = (u64::from(*first) - u64::from(*last) - gaps) / gaps;
    if mean < 2 {
        0
    } else {
        (63 - mean.leading_zeros()).min(31)
    }
}

/// Codes the references of an entry block's entries (in the block's order; numbers of each
/// list strictly descending, all below 2^`width`) as one chunk.
pub fn encode_chunk(entries: &[EntryRefs], width: u8) -> std::io::Result<Vec<u8>> {
    let invalid = |m: &str| std::io::Error::new(std::io::ErrorKind::InvalidInput, m.to_string());
    if entries.is_empty() || entries.len() > MAX_CHUNK_ENTRIES || width > 32 {
        return Err(invalid(
            "a reference chunk holds 1..2^20 entries, numbers of ≤ 32 bits",
        ));
    }
    let mut w = BitWriter::with_capacity(entries.len() * 4);
    for e in entries {
        if e.is_empty() || e.len() as u64 > MAX_MOVES {
            return Err(invalid("an entry of a reference chunk has 1..2^16 moves"));
        }
        w.gamma(e.len() as u64);
        for list in e {
            if list.windows(2).any(|p| p[0] <= p[1])
                || list.first().is_some_and(|&n| u64::from(n) >> width != 0)
            {
                return Err(invalid(
                    "reference numbers not descending or past the width",
                ));
            }
            if list.len() == 1 {
                w.put(1, 1);
            } else {
                w.put(0, 1);
                w.gamma(list.len() as u64 + 1);
            }
            let Some(&first) = list.first() else { continue };
            w.put(u64::from(first), u32::from(width));
            if list.len() >= 2 {
                let k = rice_for(list);
                w.put(u64::from(k), 5);
                for p in list.windows(2) {
                    w.rice(u64::from(p[0] - p[1] - 1), k);
                }
            }
        }
    }
    let bits = w.finish();
    let mut out = Vec::with_capacity(HEADER + bits.len());
    out.push(REF_CHUNK_VERSION);
    out.extend_from_slice(&(entries.len() as u32).to_le_bytes());
    out.push(width);
    let crc = chunk_crc(&out, &bits);
    out.extend_from_slice(&crc.to_le_bytes());
    out.extend_from_slice(&bits);
    Ok(out)
}

fn chunk_crc(head: &[u8], bits: &[u8]) -> u32 {
    let mut h = crc32fast::Hasher::new();
    h.update(&head[..6]);
    h.update(bits);
    h.finalize()
}

/// The entries a chunk claims (its header only, checked for its length, not its crc).
pub fn entries_claimed(bytes: &[u8]) -> Result<usize, RefBlockError> {
    if bytes.len() < HEADER {
        return Err(RefBlockError::Truncated(bytes.len()));
    }
    Ok(u32::from_le_bytes([bytes[1], bytes[2], bytes[3], bytes[4]]) as usize)
}

/// Decodes a chunk written by [`encode_chunk`]: per entry, per move, its numbers. Every damage
/// is an error, never a panic: the crc32 first, then every count and number read is checked.
pub fn decode_chunk(bytes: &[u8]) -> Result<Vec<EntryRefs>, RefBlockError> {
    let entries = entries_claimed(bytes)?;
    if bytes[0] != REF_CHUNK_VERSION {
        return Err(RefBlockError::Version(bytes[0]));
    }
    let stored = u32::from_le_bytes([bytes[6], bytes[7], bytes[8], bytes[9]]);
    let computed = chunk_crc(bytes, &bytes[HEADER..]);
    if stored != computed {
        return Err(RefBlockError::Checksum { stored, computed });
    }
    let width = u32::from(bytes[5]);
    if entries == 0 || entries > MAX_CHUNK_ENTRIES || width > 32 {
        return Err(RefBlockError::Payload("entry count or width out of range"));
    }
    let mut r = BitReader::new(&bytes[HEADER..]);
    // Every entry takes at least a bit for its moves and one for its first move's count.
    if r.left() < 2 * entries {
        return Err(RefBlockError::Payload("fewer bits than the entries need"));
    }
    let mut out = Vec::with_capacity(entries);
    for _ in 0..entries {
        let n = r.gamma()?;
        if n > MAX_MOVES || n as usize > r.left() {
            return Err(RefBlockError::Payload("move count out of range"));
        }
        let mut e = Vec::with_capacity(n as usize);
        for _ in 0..n {
            let count = if r.bit()? == 1 {
                1
            } else {
                let c = r.gamma()? - 1;
                // Every number takes at least a bit.
                if c == 1 || c as usize > r.left() {
                    return Err(RefBlockError::Payload("reference count out of range"));
                }
                c as usize
            };
            let mut list = Vec::with_capacity(count);
            if count > 0 {
                let mut n = r.get(width)?;
                list.push(n as u32);
                if count >= 2 {
                    let k = r.get(5)? as u32;
                    for _ in 1..count {
                        let gap = r.rice(k)?;
                        n = n
                            .checked_sub(gap)
                            .and_then(|n| n.checked_sub(1))
                            .ok_or(RefBlockError::Payload("reference number below zero"))?;
                        list.push(n as u32);
                    }
                }
            }
            e.push(list);
        }
        out.push(e);
    }
    if r.left() >= 8 {
        return Err(RefBlockError::Payload("bytes after the entries"));
    }
    Ok(out)
}

/// Codes a chunk of facts, one [`FactRow`] per game.
pub fn encode_facts(facts: &[FactRow]) -> Vec<u8> {
    let mut out = Vec::with_capacity(facts.len() * FACT_BYTES + 4);
    for f in facts {
        out.extend_from_slice(&f.cell.to_le_bytes());
        out.extend_from_slice(&f.white.to_le_bytes());
        out.extend_from_slice(&f.black.to_le_bytes());
        out.push(f.result);
    }
    let crc = crc32fast::hash(&out);
    out.extend_from_slice(&crc.to_le_bytes());
    out
}

/// Checks a fact chunk; returns how many facts it holds.
pub fn check_facts(bytes: &[u8]) -> Result<usize, RefBlockError> {
    if bytes.len() < 4 || !(bytes.len() - 4).is_multiple_of(FACT_BYTES) {
        return Err(RefBlockError::FactChunk(bytes.len()));
    }
    let body = &bytes[..bytes.len() - 4];
    let stored = u32::from_le_bytes([
        bytes[body.len()],
        bytes[body.len() + 1],
        bytes[body.len() + 2],
        bytes[body.len() + 3],
    ]);
    let computed = crc32fast::hash(body);
    if stored != computed {
        return Err(RefBlockError::Checksum { stored, computed });
    }
    if body.chunks_exact(FACT_BYTES).any(|f| f[8] > 3) {
        return Err(RefBlockError::Payload("a game's result past 3"));
    }
    Ok(body.len() / FACT_BYTES)
}

/// The `i`-th fact of a chunk that [`check_facts`] accepted (`None` past its end).
pub fn fact_at(bytes: &[u8], i: usize) -> Option<FactRow> {
    let at = i.checked_mul(FACT_BYTES)?;
    let f = bytes.get(at..at + FACT_BYTES)?;
    (at + FACT_BYTES + 4 <= bytes.len()).then(|| FactRow {
        cell: u32::from_le_bytes([f[0], f[1], f[2], f[3]]),
        white: u16::from_le_bytes([f[4], f[5]]),
        black: u16::from_le_bytes([f[6], f[7]]),
        result: f[8],
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn arb_entries() -> impl Strategy<Value = (Vec<EntryRefs>, u8)> {
        (1u8..=32).prop_flat_map(|width| {
            let max = if width == 32 {
                u32::MAX
            } else {
                (1u32 << width) - 1
            };
            let list = proptest::collection::btree_set(0..=max, 0..20)
                .prop_map(|s| s.into_iter().rev().collect::<Vec<u32>>());
            let entry = proptest::collection::vec(list, 1..6);
            (proptest::collection::vec(entry, 1..40), Just(width))
        })
    }

    proptest! {
        #[test]
        fn reference_chunks_round_trip((es, width) in arb_entries()) {
            let b = encode_chunk(&es, width).unwrap();
            prop_assert_eq!(entries_claimed(&b).unwrap(), es.len());
            prop_assert_eq!(decode_chunk(&b).unwrap(), es);
        }

        #[test]
        fn damaged_reference_chunks_are_errors((es, width) in arb_entries(), at in any::<usize>(), bit in 0u8..8) {
            let mut b = encode_chunk(&es, width).unwrap();
            let i = at % b.len();
            b[i] ^= 1 << bit;
            prop_assert!(decode_chunk(&b).is_err());
            b[i] ^= 1 << bit;
            prop_assert!(decode_chunk(&b[..i]).is_err());
        }

        #[test]
        fn any_bytes_decode_or_fail_without_panic(b in proptest::collection::vec(any::<u8>(), 0..64)) {
            let _ = decode_chunk(&b);
            let _ = check_facts(&b);
        }

        #[test]
        fn fact_chunks_round_trip(f in proptest::collection::vec(
            (any::<u32>(), any::<u16>(), any::<u16>(), 0u8..4)
                .prop_map(|(cell, white, black, result)| FactRow { cell, white, black, result }),
            0..700,
        )) {
            let b = encode_facts(&f);
            prop_assert_eq!(check_facts(&b).unwrap(), f.len());
            for (i, x) in f.iter().enumerate() {
                prop_assert_eq!(fact_at(&b, i), Some(*x));
            }
            prop_assert_eq!(fact_at(&b, f.len()), None);
            let mut bad = b.clone();
            let last = bad.len() - 1;
            bad[last] ^= 1;
            prop_assert!(check_facts(&bad).is_err());
            // A result past 3 is refused even under a good crc.
            if !f.is_empty() {
                let mut body = b[..b.len() - 4].to_vec();
                body[8] = 4;
                let crc = crc32fast::hash(&body);
                body.extend_from_slice(&crc.to_le_bytes());
                prop_assert!(check_facts(&body).is_err());
            }
        }
    }

    #[test]
    fn bad_encodings_are_refused() {
        assert!(encode_chunk(&[], 8).is_err());
        assert!(encode_chunk(&[vec![]], 8).is_err());
        assert!(encode_chunk(&[vec![vec![1, 2]]], 8).is_err());
        assert!(encode_chunk(&[vec![vec![256]]], 8).is_err());
        assert!(encode_chunk(&[vec![vec![3]]], 33).is_err());
    }

    #[test]
    fn a_one_game_move_costs_its_number_and_two_bits() {
        // One entry, one move, one game: gamma(1) + the count bit + 17 bits of number.
        let b = encode_chunk(&[vec![vec![100_000]]], 17).unwrap();
        assert_eq!(b.len(), HEADER + 3);
    }
}

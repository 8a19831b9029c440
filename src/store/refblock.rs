//! The byte coding of a file's game references (docs/FORMAT.md §15.3): reference blocks (per
//! position, per move, the numbers of the games the move's cells name) and fact chunks (per
//! game number, its cell and strength, fixed width). Decoders return errors on bad bytes and
//! never panic.
//!
//! Reference block (little-endian): `version u8 (1) | raw length u32 | crc32 u32 | zstd frame`,
//! the crc32 covering the first 5 bytes and the frame; the frame holds `positions varint`, then
//! per position `key delta varint` (from the previous position's key; the first from the row's
//! key, so 0), `moves varint`, and per move `code varint`, `refs varint` (≥ 1), the first
//! (highest) game number as a varint and each next one as its gap below the previous (≥ 1).
//!
//! Fact chunk: `games × (cell id u32, strength u16)`, then a crc32 of them.

use super::varint;

/// The reference block version this build writes and reads.
pub const REF_BLOCK_VERSION: u8 = 1;
const HEADER: usize = 9;
/// The most raw bytes a reference block's frame may expand to.
pub const MAX_REF_RAW: usize = 4 << 20;
/// Games per fact chunk (a chunk of 6-byte facts and a crc fits a redb page).
pub const FACTS_PER_CHUNK: u32 = 670;
/// Bytes of one game's facts.
pub const FACT_BYTES: usize = 6;

/// The references of one position: per move (by code, ascending), the game numbers its cells
/// name, highest first, each once.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PosRefs {
    pub key: u64,
    pub moves: Vec<(u16, Vec<u32>)>,
}

/// A reference block or fact chunk that does not decode.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum RefBlockError {
    #[error("reference block truncated ({0} bytes)")]
    Truncated(usize),
    #[error("reference block version {0} is not one this build reads")]
    Version(u8),
    #[error("checksum mismatch: stored {stored:08x}, computed {computed:08x}")]
    Checksum { stored: u32, computed: u32 },
    #[error("reference block claims {0} raw bytes, more than a block holds")]
    TooLarge(u64),
    #[error("reference block payload does not decompress: {0}")]
    Zstd(String),
    #[error("reference block payload: {0}")]
    Payload(&'static str),
    #[error("fact chunk of {0} bytes is not whole facts and a checksum")]
    FactChunk(usize),
}

/// Codes positions (ascending keys, the first being the row's key) as one reference block.
pub fn encode_refs(positions: &[PosRefs], level: i32) -> std::io::Result<Vec<u8>> {
    let mut raw = Vec::new();
    varint::put(&mut raw, positions.len() as u64);
    let mut prev = positions.first().map_or(0, |p| p.key);
    for p in positions {
        varint::put(&mut raw, p.key.wrapping_sub(prev));
        prev = p.key;
        varint::put(&mut raw, p.moves.len() as u64);
        for (code, numbers) in &p.moves {
            varint::put(&mut raw, u64::from(*code));
            varint::put(&mut raw, numbers.len() as u64);
            let mut last = None;
            for &n in numbers {
                match last {
                    None => varint::put(&mut raw, u64::from(n)),
                    Some(l) => varint::put(&mut raw, u64::from(l - n)),
                }
                last = Some(n);
            }
        }
    }
    let frame = zstd::bulk::compress(&raw, level)?;
    let mut out = Vec::with_capacity(HEADER + frame.len());
    out.push(REF_BLOCK_VERSION);
    out.extend_from_slice(&(raw.len() as u32).to_le_bytes());
    out.extend_from_slice(&[0; 4]);
    out.extend_from_slice(&frame);
    let crc = block_crc(&out);
    out[5..9].copy_from_slice(&crc.to_le_bytes());
    Ok(out)
}

fn block_crc(b: &[u8]) -> u32 {
    let mut h = crc32fast::Hasher::new();
    h.update(&b[..5]);
    h.update(&b[HEADER..]);
    h.finalize()
}

/// The raw bytes position `p` takes in a block's frame, `delta` above the position before it.
pub fn raw_len(p: &PosRefs, delta: u64) -> usize {
    let v = |x: u64| varint_len(x);
    let mut n = v(delta) + v(p.moves.len() as u64);
    for (code, numbers) in &p.moves {
        n += v(u64::from(*code)) + v(numbers.len() as u64);
        let mut last: Option<u32> = None;
        for &x in numbers {
            n += v(u64::from(last.map_or(x, |l| l - x)));
            last = Some(x);
        }
    }
    n
}

fn varint_len(x: u64) -> usize {
    (64 - x.max(1).leading_zeros() as usize).div_ceil(7)
}

/// Decodes a reference block whose row key is `first`.
pub fn decode_refs(bytes: &[u8], first: u64) -> Result<Vec<PosRefs>, RefBlockError> {
    if bytes.len() < HEADER {
        return Err(RefBlockError::Truncated(bytes.len()));
    }
    if bytes[0] != REF_BLOCK_VERSION {
        return Err(RefBlockError::Version(bytes[0]));
    }
    let raw_len = u32::from_le_bytes([bytes[1], bytes[2], bytes[3], bytes[4]]) as usize;
    let stored = u32::from_le_bytes([bytes[5], bytes[6], bytes[7], bytes[8]]);
    let computed = block_crc(bytes);
    if stored != computed {
        return Err(RefBlockError::Checksum { stored, computed });
    }
    if raw_len > MAX_REF_RAW {
        return Err(RefBlockError::TooLarge(raw_len as u64));
    }
    let raw = super::unzstd::decompress(&bytes[HEADER..], raw_len).map_err(RefBlockError::Zstd)?;
    if raw.len() != raw_len {
        return Err(RefBlockError::Payload(
            "raw length differs from the header's",
        ));
    }
    parse(&raw, first)
}

fn parse(raw: &[u8], first: u64) -> Result<Vec<PosRefs>, RefBlockError> {
    let mut at = 0;
    let mut get =
        |what: &'static str| varint::get(raw, &mut at).ok_or(RefBlockError::Payload(what));
    let n = get("position count")?;
    // Every position takes at least 2 bytes: a count cannot ask for more than the bytes hold.
    if n > raw.len() as u64 / 2 {
        return Err(RefBlockError::Payload("more positions than bytes"));
    }
    let mut out = Vec::with_capacity(n as usize);
    let mut key = first;
    for i in 0..n {
        let delta = get("key delta")?;
        if i == 0 && delta != 0 {
            return Err(RefBlockError::Payload(
                "the first position is not the row's key",
            ));
        }
        if i > 0 && delta == 0 {
            return Err(RefBlockError::Payload("keys not ascending"));
        }
        key = key
            .checked_add(delta)
            .ok_or(RefBlockError::Payload("key past 2^64"))?;
        let moves = get("move count")?;
        if moves == 0 || moves > 256 {
            return Err(RefBlockError::Payload("move count out of range"));
        }
        let mut mv = Vec::with_capacity(moves as usize);
        let mut last_code = None;
        for _ in 0..moves {
            let code = u16::try_from(get("move code")?)
                .map_err(|_| RefBlockError::Payload("move code past 16 bits"))?;
            if last_code.is_some_and(|l| l >= code) {
                return Err(RefBlockError::Payload("moves not ascending"));
            }
            last_code = Some(code);
            let refs = get("reference count")?;
            if refs == 0 || refs > raw.len() as u64 {
                return Err(RefBlockError::Payload("reference count out of range"));
            }
            let mut numbers = Vec::with_capacity(refs as usize);
            let mut prev: Option<u32> = None;
            for _ in 0..refs {
                let v = get("game number")?;
                let n = match prev {
                    None => u32::try_from(v).ok(),
                    Some(p) => (v >= 1)
                        .then(|| u64::from(p).checked_sub(v))
                        .flatten()
                        .and_then(|n| u32::try_from(n).ok()),
                }
                .ok_or(RefBlockError::Payload("game numbers not descending"))?;
                numbers.push(n);
                prev = Some(n);
            }
            mv.push((code, numbers));
        }
        out.push(PosRefs { key, moves: mv });
    }
    if at != raw.len() {
        return Err(RefBlockError::Payload("bytes after the last position"));
    }
    Ok(out)
}

/// Codes a chunk of facts: `(cell id, strength)` per game.
pub fn encode_facts(facts: &[(u32, u16)]) -> Vec<u8> {
    let mut out = Vec::with_capacity(facts.len() * FACT_BYTES + 4);
    for (cell, strength) in facts {
        out.extend_from_slice(&cell.to_le_bytes());
        out.extend_from_slice(&strength.to_le_bytes());
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
    Ok(body.len() / FACT_BYTES)
}

/// The `i`-th fact of a chunk that [`check_facts`] accepted (`None` past its end).
pub fn fact_at(bytes: &[u8], i: usize) -> Option<(u32, u16)> {
    let at = i.checked_mul(FACT_BYTES)?;
    let f = bytes.get(at..at + FACT_BYTES)?;
    (at + FACT_BYTES + 4 <= bytes.len()).then(|| {
        (
            u32::from_le_bytes([f[0], f[1], f[2], f[3]]),
            u16::from_le_bytes([f[4], f[5]]),
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn arb_positions() -> impl Strategy<Value = Vec<PosRefs>> {
        proptest::collection::btree_map(
            any::<u64>(),
            proptest::collection::btree_map(
                any::<u16>(),
                proptest::collection::btree_set(any::<u32>(), 1..20),
                1..6,
            ),
            0..30,
        )
        .prop_map(|m| {
            m.into_iter()
                .map(|(key, moves)| PosRefs {
                    key,
                    moves: moves
                        .into_iter()
                        .map(|(c, s)| (c, s.into_iter().rev().collect()))
                        .collect(),
                })
                .collect()
        })
    }

    proptest! {
        #[test]
        fn reference_blocks_round_trip(ps in arb_positions()) {
            // raw_len is what the frame holds: the position count, then each position.
            let mut raw = Vec::new();
            varint::put(&mut raw, ps.len() as u64);
            let mut prev = ps.first().map_or(0, |p| p.key);
            let mut total = raw.len();
            for p in &ps {
                total += raw_len(p, p.key - prev);
                prev = p.key;
            }
            let b = encode_refs(&ps, 3).unwrap();
            let len = u32::from_le_bytes([b[1], b[2], b[3], b[4]]) as usize;
            prop_assert_eq!(len, total);
            let first = ps.first().map_or(0, |p| p.key);
            prop_assert_eq!(decode_refs(&b, first).unwrap(), ps);
        }

        #[test]
        fn damaged_reference_blocks_are_errors(ps in arb_positions(), at in any::<usize>(), bit in 0u8..8) {
            let mut b = encode_refs(&ps, 3).unwrap();
            let first = ps.first().map_or(0, |p| p.key);
            let i = at % b.len();
            b[i] ^= 1 << bit;
            prop_assert!(decode_refs(&b, first).is_err());
            prop_assert!(decode_refs(&b[..i], first).is_err());
        }

        #[test]
        fn any_bytes_decode_or_fail_without_panic(b in proptest::collection::vec(any::<u8>(), 0..64), first in any::<u64>()) {
            let _ = decode_refs(&b, first);
            let _ = parse(&b, first);
            let _ = check_facts(&b);
        }

        #[test]
        fn fact_chunks_round_trip(f in proptest::collection::vec((any::<u32>(), any::<u16>()), 0..700)) {
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
        }
    }
}

//! Id index chunks (docs/FORMAT.md §15.5): a run of a game store's (game id, game number) rows
//! in (id, number) order, bit-packed: the ids as Rice-coded gaps, the numbers in a fixed
//! width, with a crc32. The id index of format 9 is a table of them keyed by each chunk's first
//! id: ~6 B a game on the bench set against 12 for a redb row per game.
//!
//! Chunk version 1 (integers little-endian): `version u8 (1) | rows u32 | rice u8 | width u8 |
//! first id u64 | crc32 u32 | bits`, where the crc32 covers the first 15 bytes and the bits.
//! The bits (most significant first in each byte, the last byte padded with zeros) hold, for
//! rows 2..=rows, the gap from the previous row's id Rice-coded with parameter `rice`
//! (the quotient `gap >> rice` in unary as that many 1 bits and a 0, then the low `rice` bits),
//! then every row's number in `width` bits.

/// The chunk version this build writes and reads.
pub const ID_CHUNK_VERSION: u8 = 1;
/// Bytes before the bits.
const HEADER: usize = 19;
/// The most rows a chunk may claim (the decoder refuses more: a damaged count cannot make it
/// reserve memory for billions).
pub const MAX_CHUNK_ROWS: usize = 1 << 24;

/// An id chunk that does not decode.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum IdChunkError {
    #[error("id chunk truncated ({0} bytes)")]
    Truncated(usize),
    #[error("id chunk version {0} is not one this build reads")]
    Version(u8),
    #[error("id chunk checksum mismatch: stored {stored:08x}, computed {computed:08x}")]
    Checksum { stored: u32, computed: u32 },
    #[error("id chunk: {0}")]
    Payload(&'static str),
}

use super::bits::{BitReader, BitWriter, BitsError};

impl From<BitsError> for IdChunkError {
    fn from(e: BitsError) -> Self {
        IdChunkError::Payload(e.0)
    }
}

/// The Rice parameter for gaps spanning `span` in `gaps` steps: about log2 of the mean gap.
fn rice_for(span: u64, gaps: usize) -> u8 {
    if gaps == 0 {
        return 0;
    }
    let mean = span / gaps as u64;
    if mean < 2 {
        0
    } else {
        (63 - mean.leading_zeros()).min(62) as u8
    }
}

/// Codes rows (at least one; in (id, number) order, ids below 2^63) into one chunk.
pub fn encode(rows: &[(u64, u32)]) -> std::io::Result<Vec<u8>> {
    let invalid = |m: &str| std::io::Error::new(std::io::ErrorKind::InvalidInput, m.to_string());
    let (Some(first), Some(last)) = (rows.first(), rows.last()) else {
        return Err(invalid("an id chunk holds at least one row"));
    };
    if rows.len() > MAX_CHUNK_ROWS || rows.windows(2).any(|w| w[0] > w[1]) {
        return Err(invalid("id chunk rows out of order or too many"));
    }
    let rice = rice_for(last.0 - first.0, rows.len() - 1);
    let max_number = rows.iter().map(|r| r.1).max().unwrap_or(0);
    let width = (32 - max_number.leading_zeros()) as u8;
    let mut w = BitWriter::with_capacity(rows.len() * 7);
    for pair in rows.windows(2) {
        let gap = pair[1].0 - pair[0].0;
        w.rice(gap, u32::from(rice));
    }
    for r in rows {
        w.put(u64::from(r.1), u32::from(width));
    }
    let bits = w.finish();
    let mut out = Vec::with_capacity(HEADER + bits.len());
    out.push(ID_CHUNK_VERSION);
    out.extend_from_slice(&(rows.len() as u32).to_le_bytes());
    out.push(rice);
    out.push(width);
    out.extend_from_slice(&first.0.to_le_bytes());
    let mut h = crc32fast::Hasher::new();
    h.update(&out);
    h.update(&bits);
    out.extend_from_slice(&h.finalize().to_le_bytes());
    out.extend_from_slice(&bits);
    Ok(out)
}

/// The rows a chunk claims (its header only, checked for its length, not its crc).
pub fn rows_claimed(bytes: &[u8]) -> Result<usize, IdChunkError> {
    if bytes.len() < HEADER {
        return Err(IdChunkError::Truncated(bytes.len()));
    }
    Ok(u32::from_le_bytes([bytes[1], bytes[2], bytes[3], bytes[4]]) as usize)
}

/// Decodes a chunk written by [`encode`]: its rows in order. Every damage is an error, never a
/// panic: the crc32 first, then every bit read is checked against the end, every gap against
/// overflow.
pub fn decode(bytes: &[u8]) -> Result<Vec<(u64, u32)>, IdChunkError> {
    if bytes.len() < HEADER {
        return Err(IdChunkError::Truncated(bytes.len()));
    }
    if bytes[0] != ID_CHUNK_VERSION {
        return Err(IdChunkError::Version(bytes[0]));
    }
    let stored = u32::from_le_bytes([bytes[15], bytes[16], bytes[17], bytes[18]]);
    let mut h = crc32fast::Hasher::new();
    h.update(&bytes[..15]);
    h.update(&bytes[HEADER..]);
    let computed = h.finalize();
    if stored != computed {
        return Err(IdChunkError::Checksum { stored, computed });
    }
    let rows = rows_claimed(bytes)?;
    let (rice, width) = (u32::from(bytes[5]), u32::from(bytes[6]));
    if rows == 0 || rows > MAX_CHUNK_ROWS {
        return Err(IdChunkError::Payload("row count out of range"));
    }
    if rice > 62 || width > 32 {
        return Err(IdChunkError::Payload("field widths out of range"));
    }
    let mut first = [0u8; 8];
    first.copy_from_slice(&bytes[7..15]);
    let mut id = u64::from_le_bytes(first);
    let mut r = BitReader::new(&bytes[HEADER..]);
    // Every row needs its number's bits, and every gap at least its stop bit and low bits.
    let need = rows * width as usize + (rows - 1) * (1 + rice as usize);
    if r.left() < need {
        return Err(IdChunkError::Payload("fewer bits than the rows need"));
    }
    let mut ids = Vec::with_capacity(rows);
    ids.push(id);
    for _ in 1..rows {
        let gap = r.rice(rice)?;
        id = id
            .checked_add(gap)
            .ok_or(IdChunkError::Payload("id past 64 bits"))?;
        ids.push(id);
    }
    let mut out = Vec::with_capacity(rows);
    for id in ids {
        out.push((id, r.get(width)? as u32));
    }
    if r.left() >= 8 {
        return Err(IdChunkError::Payload("bytes after the rows"));
    }
    if out.windows(2).any(|w| w[0] > w[1]) {
        return Err(IdChunkError::Payload("rows out of order"));
    }
    Ok(out)
}

/// Rows between two checks of a chunk's size while [`Chunker`] fills it.
const STEP: usize = 32;

/// Cuts rows, given in order, into chunks filled up to `limit` bytes, never splitting the rows
/// of one id (so that a lookup reads the one chunk whose first id is at most the id asked for).
/// Once the rows held could outgrow the limit, they are coded every [`STEP`] rows; once they do, the rows up to the last size that fitted (back to where an id begins) make a chunk.
/// One id's rows past the limit (a clash of many games on one id) make a larger chunk.
pub struct Chunker {
    rows: Vec<(u64, u32)>,
    limit: usize,
}

/// A finished chunk: its first id (the table key) and its bytes.
pub type Chunk = (u64, Vec<u8>);

impl Chunker {
    pub fn new(limit: usize) -> Chunker {
        Chunker {
            rows: Vec::new(),
            limit,
        }
    }

    /// Adds a row; gives the chunk it completes, if any.
    pub fn push(&mut self, id: u64, number: u32) -> std::io::Result<Option<Chunk>> {
        self.rows.push((id, number));
        let n = self.rows.len();
        if !n.is_multiple_of(STEP)
            || !self.may_outgrow(n)
            || encode(&self.rows)?.len() <= self.limit
        {
            return Ok(None);
        }
        let cut = self.fitting_cut(n - STEP)?;
        if cut == n {
            // One id's rows, all held: they stay together until the id ends.
            return Ok(None);
        }
        let rest = self.rows.split_off(cut);
        let rows = std::mem::replace(&mut self.rows, rest);
        Ok(Some((rows[0].0, encode(&rows)?)))
    }

    /// The longest prefix of the rows held, of at most `hi` rows, that ends where an id ends
    /// and codes within the limit (tried from `hi` down by eighths); if none, the first id's
    /// rows.
    fn fitting_cut(&self, hi: usize) -> std::io::Result<usize> {
        let rows = &self.rows;
        let mut hi = hi;
        loop {
            let mut cut = hi;
            while cut > 0 && rows[cut - 1].0 == rows[cut].0 {
                cut -= 1;
            }
            if cut == 0 {
                return Ok(rows.iter().take_while(|r| r.0 == rows[0].0).count());
            }
            if encode(&rows[..cut])?.len() <= self.limit {
                return Ok(cut);
            }
            hi = cut - 1 - cut / 8;
        }
    }

    /// Whether `n` rows may code past the limit: a row takes at most 13 bytes (a gap's
    /// quotients sum to at most twice the rows with the writer's Rice parameter, its low bits
    /// are at most 62, a number 32).
    fn may_outgrow(&self, n: usize) -> bool {
        HEADER + n * 13 > self.limit
    }

    /// The last chunks (more than one if the rows held outgrow the limit).
    pub fn finish(mut self) -> std::io::Result<Vec<Chunk>> {
        let mut out = Vec::new();
        while !self.rows.is_empty() {
            let n = self.rows.len();
            let cut = if !self.may_outgrow(n) || encode(&self.rows)?.len() <= self.limit {
                n
            } else {
                self.fitting_cut(n - 1)?
            };
            let rest = self.rows.split_off(cut);
            let rows = std::mem::replace(&mut self.rows, rest);
            out.push((rows[0].0, encode(&rows)?));
        }
        Ok(out)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn arb_rows() -> impl Strategy<Value = Vec<(u64, u32)>> {
        (
            proptest::collection::vec((any::<u64>(), any::<u32>()), 1..300),
            0u32..64,
        )
            .prop_map(|(mut rows, shift)| {
                // Ids of every spread: random 47-bit ids, small ones, repeats.
                for r in &mut rows {
                    r.0 >>= shift;
                    r.0 &= (1 << 48) - 1;
                }
                rows.sort_unstable();
                rows
            })
    }

    proptest! {
        #[test]
        fn chunks_round_trip(rows in arb_rows()) {
            let b = encode(&rows).unwrap();
            prop_assert_eq!(decode(&b).unwrap(), rows.clone());
            prop_assert_eq!(rows_claimed(&b).unwrap(), rows.len());
        }

        #[test]
        fn junk_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..300)) {
            let _ = decode(&bytes);
        }

        #[test]
        fn any_flipped_bit_is_an_error(rows in arb_rows(), at in any::<usize>(), bit in 0u8..8) {
            let mut b = encode(&rows).unwrap();
            let i = at % b.len();
            b[i] ^= 1 << bit;
            prop_assert!(decode(&b).is_err());
        }

        #[test]
        fn chunks_fill_to_their_limit_and_keep_an_ids_rows_together(
            rows in arb_rows(), dup in 0usize..2000, limit in 200usize..5000,
        ) {
            let mut rows = rows;
            // A long run of one id across the chunk size.
            let id = rows[0].0;
            rows.extend((0..dup as u32).map(|n| (id, n)));
            rows.sort_unstable();
            let chunks = chunked(&rows, limit);
            let decoded: Vec<Vec<(u64, u32)>> =
                chunks.iter().map(|(_, b)| decode(b).unwrap()).collect();
            prop_assert_eq!(decoded.concat(), rows.clone());
            for ((first, bytes), d) in chunks.iter().zip(&decoded) {
                prop_assert_eq!(*first, d[0].0);
                // Larger than the limit only when it holds one id.
                prop_assert!(bytes.len() <= limit || d.iter().all(|r| r.0 == d[0].0),
                    "{} bytes, limit {}", bytes.len(), limit);
            }
            for w in decoded.windows(2) {
                prop_assert!(w[0].last().unwrap().0 < w[1][0].0);
            }
        }
    }

    fn chunked(rows: &[(u64, u32)], limit: usize) -> Vec<Chunk> {
        let mut c = Chunker::new(limit);
        let mut out: Vec<Chunk> = rows
            .iter()
            .filter_map(|&(id, n)| c.push(id, n).unwrap())
            .collect();
        out.extend(c.finish().unwrap());
        out
    }

    #[test]
    fn random_ids_take_about_six_bytes_a_row() {
        // 135k ids spread over 47 bits (what fingerprint-derived ids of the bench set look
        // like): ~31-bit gaps and 18-bit numbers, in chunks of 512.
        let mut x = 0x9e37_79b9_7f4a_7c15u64;
        let mut rows: Vec<(u64, u32)> = (0..135_000u32)
            .map(|n| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                (x >> 17, n)
            })
            .collect();
        rows.sort_unstable();
        let chunks = chunked(&rows, 4048);
        let bytes: usize = chunks.iter().map(|c| c.1.len()).sum();
        let per_row = bytes as f64 / rows.len() as f64;
        assert!(per_row < 6.5, "{per_row} B a row");
        // Filled to a page: every chunk but the last within a step's rows of it.
        for c in &chunks[..chunks.len() - 1] {
            assert!((4048 - 32 * 7..=4048).contains(&c.1.len()), "{}", c.1.len());
        }
    }

    #[test]
    fn refuses_what_it_cannot_store() {
        assert!(encode(&[]).is_err());
        assert!(encode(&[(2, 0), (1, 0)]).is_err());
        assert_eq!(decode(&encode(&[(7, 3)]).unwrap()).unwrap(), vec![(7, 3)]);
        assert_eq!(
            decode(&encode(&[(u64::MAX >> 1, u32::MAX)]).unwrap()).unwrap(),
            vec![(u64::MAX >> 1, u32::MAX)]
        );
    }
}

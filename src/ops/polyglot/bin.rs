//! Reading Polyglot `.bin` files: the 16-byte entry, parsing and validating a file's bytes
//! (rejecting text, HTML and unsorted or garbage data; counting defects), and fingerprinting it.

use std::path::Path;

use crate::chess::polyglot::pg_decode;
use crate::error::{Error, Result};

/// Bytes per Polyglot entry.
pub const ENTRY_BYTES: usize = 16;
/// Key of the end-of-book sentinel some engines (Rodent) append.
pub const SENTINEL_KEY: u64 = u64::MAX;

/// One 16-byte Polyglot entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct PgEntry {
    pub(crate) key: u64,
    pub(crate) mv: u16,
    pub(crate) weight: u16,
    pub(crate) learn: u32,
}

impl PgEntry {
    pub(crate) fn to_bytes(self) -> [u8; ENTRY_BYTES] {
        let mut b = [0u8; ENTRY_BYTES];
        b[0..8].copy_from_slice(&self.key.to_be_bytes());
        b[8..10].copy_from_slice(&self.mv.to_be_bytes());
        b[10..12].copy_from_slice(&self.weight.to_be_bytes());
        b[12..16].copy_from_slice(&self.learn.to_be_bytes());
        b
    }

    #[doc(hidden)]
    pub fn from_bytes(b: &[u8; ENTRY_BYTES]) -> PgEntry {
        PgEntry {
            key: u64::from_be_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]),
            mv: u16::from_be_bytes([b[8], b[9]]),
            weight: u16::from_be_bytes([b[10], b[11]]),
            learn: u32::from_be_bytes([b[12], b[13], b[14], b[15]]),
        }
    }
}

/// The complete entries of a Polyglot file, in file order.
#[derive(Clone, Debug, Default)]
pub struct ParsedBin {
    pub(crate) entries: Vec<PgEntry>,
    /// Bytes after the last complete entry (a partial entry), ignored.
    pub(crate) trailing_bytes: usize,
    /// Entries whose key is smaller than the previous entry's.
    pub(crate) out_of_order: u64,
    /// Entries (other than sentinels) with an impossible move code.
    pub(crate) invalid_moves: u64,
}

/// Parses a Polyglot book, or says why the bytes are not one.
pub fn parse_bin(data: &[u8]) -> std::result::Result<ParsedBin, String> {
    if data.is_empty() {
        return Ok(ParsedBin::default());
    }
    if data.len() < ENTRY_BYTES {
        return Err(format!(
            "{} byte(s) is too short for a Polyglot book (16-byte entries)",
            data.len()
        ));
    }
    let head = &data[..data.len().min(512)];
    let text_start = head
        .iter()
        .position(|b| !b.is_ascii_whitespace())
        .unwrap_or(0);
    if head[text_start] == b'<' {
        let s = String::from_utf8_lossy(&head[text_start..head.len().min(text_start + 20)])
            .replace(['\n', '\r'], " ");
        return Err(format!("it is an HTML/XML document (starts with {s:?})"));
    }
    if head
        .iter()
        .all(|&b| b.is_ascii_graphic() || b.is_ascii_whitespace())
    {
        return Err("it is a text file".to_string());
    }
    let n = data.len() / ENTRY_BYTES;
    let mut out = ParsedBin {
        entries: Vec::with_capacity(n),
        trailing_bytes: data.len() % ENTRY_BYTES,
        ..Default::default()
    };
    for chunk in data.chunks_exact(ENTRY_BYTES) {
        let mut b = [0u8; ENTRY_BYTES];
        b.copy_from_slice(chunk);
        let e = PgEntry::from_bytes(&b);
        if out.entries.last().is_some_and(|p| p.key > e.key) {
            out.out_of_order += 1;
        }
        if e.key != SENTINEL_KEY && pg_decode(e.mv).is_none() {
            out.invalid_moves += 1;
        }
        out.entries.push(e);
    }
    // Real books (even defective ones) are sorted and hold legal-looking moves; random or
    // foreign binary data has about half its keys descending and many impossible moves.
    let limit = n as u64 / 5 + 2;
    if out.out_of_order > limit {
        return Err(format!(
            "keys are not in ascending order ({} of {n} entries out of order)",
            out.out_of_order
        ));
    }
    if out.invalid_moves > limit {
        return Err(format!(
            "{} of {n} entries have impossible move codes",
            out.invalid_moves
        ));
    }
    Ok(out)
}

/// Reads and parses a Polyglot file; the error names the file.
pub fn read_bin(path: &Path) -> Result<ParsedBin> {
    read_bin_fingerprinted(path).map(|(p, _)| p)
}

/// [`read_bin`] plus the file's fingerprint (xxh3-128 of its bytes, 32 hex digits, as
/// `bookdb import` fingerprints its inputs).
pub(super) fn read_bin_fingerprinted(path: &Path) -> Result<(ParsedBin, String)> {
    let data =
        std::fs::read(path).map_err(|e| Error::io(format!("reading {}", path.display()), e))?;
    let parsed = parse_bin(&data).map_err(|reason| {
        Error::Input(format!("{}: not a Polyglot book: {reason}", path.display()))
    })?;
    Ok((
        parsed,
        format!("{:032x}", xxhash_rust::xxh3::xxh3_128(&data)),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chess::polyglot::pg_encode;

    use crate::chess::tests_support::sq;

    fn bin(entries: &[PgEntry]) -> Vec<u8> {
        entries.iter().flat_map(|e| e.to_bytes()).collect()
    }

    #[test]
    fn parse_partial_tail_sentinel_and_garbage() {
        let e4 = pg_encode(sq("e2"), sq("e4"), None);
        let d4 = pg_encode(sq("d2"), sq("d4"), None);
        let entries = [
            PgEntry {
                key: 0x463b96181691fc9c,
                mv: e4,
                weight: 10,
                learn: 7,
            },
            PgEntry {
                key: 0x463b96181691fc9c,
                mv: d4,
                weight: 0,
                learn: 0,
            },
            PgEntry {
                key: SENTINEL_KEY,
                mv: 0,
                weight: 0,
                learn: 0,
            },
        ];
        let mut data = bin(&entries);
        data.push(0xab);
        let p = parse_bin(&data).unwrap();
        assert_eq!(p.entries, entries);
        assert_eq!(p.trailing_bytes, 1);
        assert_eq!(p.invalid_moves, 0, "the sentinel is not counted as garbage");
        assert_eq!(PgEntry::from_bytes(&entries[0].to_bytes()), entries[0]);
        assert_eq!(
            &entries[0].to_bytes()[..8],
            &[0x46, 0x3b, 0x96, 0x18, 0x16, 0x91, 0xfc, 0x9c]
        );

        assert!(parse_bin(&data[..15]).is_err());
        assert!(
            parse_bin(b"\n\n<!DOCTYPE html><html><body>not a book</body></html>")
                .unwrap_err()
                .contains("HTML")
        );
        assert!(parse_bin(&[b'a'; 64]).unwrap_err().contains("text"));
        assert_eq!(parse_bin(&[]).unwrap().entries.len(), 0);
        // Pseudo-random bytes: keys out of order.
        let mut x = 0x9e3779b97f4a7c15u64;
        let garbage: Vec<u8> = (0..4096)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                (x >> 24) as u8
            })
            .collect();
        assert!(parse_bin(&garbage).is_err());
    }
}

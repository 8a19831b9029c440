//! The delta tier of format versions 1 and 2: small incremental imports as checksummed
//! per-entry values beside the blocks, merged on read. Version 3 writes delta segments
//! (separate immutable files, [`super::live`]) instead; this reader remains so that `bookdb
//! migrate` can fold an old book's delta tier into its new base (migrations/v2-to-v3.md).

use std::collections::VecDeque;

use redb::ReadableDatabase;

use super::*;
use crate::store::entry::Entry;
use crate::store::error::{Corruption, Result};

impl BookFile {
    /// The delta-tier entry with exactly this identity.
    pub(crate) fn delta_get(&self, key: u64, pos: Option<&[u8]>) -> Result<Option<Entry>> {
        shield("reading the delta tier", || self.delta_get_inner(key, pos))
    }

    fn delta_get_inner(&self, key: u64, pos: Option<&[u8]>) -> Result<Option<Entry>> {
        let txn = self.db.begin_read()?;
        let table = match txn.open_table(DELTA) {
            Ok(t) => t,
            Err(redb::TableError::TableDoesNotExist(_)) => return Ok(None),
            Err(e) => return Err(e.into()),
        };
        let p = pos.unwrap_or_default();
        match table.get((key, p))? {
            Some(v) => Ok(Some(decode_delta(key, p, v.value())?)),
            None => Ok(None),
        }
    }

    /// Delta-tier entries with this key.
    pub(crate) fn delta_range(&self, key: u64) -> Result<Vec<Entry>> {
        shield("reading the delta tier", || self.delta_range_inner(key))
    }

    fn delta_range_inner(&self, key: u64) -> Result<Vec<Entry>> {
        let txn = self.db.begin_read()?;
        let table = match txn.open_table(DELTA) {
            Ok(t) => t,
            Err(redb::TableError::TableDoesNotExist(_)) => return Ok(Vec::new()),
            Err(e) => return Err(e.into()),
        };
        let empty: &[u8] = &[];
        let mut out = Vec::new();
        for item in table.range((key, empty)..)? {
            let (k, v) = item?;
            let (k, p) = k.value();
            if k != key {
                break;
            }
            out.push(decode_delta(k, p, v.value())?);
        }
        Ok(out)
    }

    /// Iterates the delta tier in (key, position) order.
    pub(crate) fn delta_iter(&self) -> Result<DeltaIter<'_>> {
        Ok(DeltaIter {
            book: self,
            after: None,
            buf: VecDeque::new(),
            done: false,
        })
    }
}

/// Decodes a delta-tier value: crc32 over key, position and records, then the records.
pub(crate) fn decode_delta(key: u64, pos: &[u8], value: &[u8]) -> Result<Entry, Corruption> {
    let bad = |reason: String| Corruption::Delta(format!("entry {key:016x}: {reason}"));
    if value.len() < 4 {
        return Err(bad("value shorter than its checksum".into()));
    }
    let expected = u32::from_le_bytes([value[0], value[1], value[2], value[3]]);
    let mut h = crc32fast::Hasher::new();
    h.update(&key.to_le_bytes());
    h.update(pos);
    h.update(&value[4..]);
    let found = h.finalize();
    if found != expected {
        return Err(bad(format!(
            "checksum mismatch (stored {expected:08x}, computed {found:08x})"
        )));
    }
    let mut at = 4;
    let moves = crate::store::record::decode_moves(value, &mut at)
        .filter(|_| at == value.len())
        .ok_or_else(|| bad("move records undecodable".into()))?;
    Ok(Entry {
        coded: None,
        key,
        pos: (!pos.is_empty()).then(|| pos.to_vec()),
        moves,
    })
}

/// Iterator over the delta tier, reading it in chunks.
pub(crate) struct DeltaIter<'a> {
    pub(super) book: &'a BookFile,
    pub(super) after: Option<(u64, Vec<u8>)>,
    pub(super) buf: VecDeque<Entry>,
    pub(super) done: bool,
}

impl DeltaIter<'_> {
    fn fill(&mut self) -> Result<()> {
        shield("reading the delta tier", || self.fill_inner())
    }

    fn fill_inner(&mut self) -> Result<()> {
        let txn = self.book.db.begin_read()?;
        let table = match txn.open_table(DELTA) {
            Ok(t) => t,
            Err(redb::TableError::TableDoesNotExist(_)) => {
                self.done = true;
                return Ok(());
            }
            Err(e) => return Err(e.into()),
        };
        let range = match &self.after {
            None => table.range::<(u64, &[u8])>(..)?,
            Some((k, p)) => table.range::<(u64, &[u8])>((
                std::ops::Bound::Excluded((*k, p.as_slice())),
                std::ops::Bound::Unbounded,
            ))?,
        };
        for item in range.take(4096) {
            let (k, v) = item?;
            let (key, pos) = k.value();
            self.buf.push_back(decode_delta(key, pos, v.value())?);
        }
        match self.buf.back() {
            Some(e) => self.after = Some((e.key, e.pos.clone().unwrap_or_default())),
            None => self.done = true,
        }
        Ok(())
    }
}

impl Iterator for DeltaIter<'_> {
    type Item = Result<Entry>;
    fn next(&mut self) -> Option<Result<Entry>> {
        if self.buf.is_empty()
            && !self.done
            && let Err(e) = self.fill()
        {
            self.done = true;
            return Some(Err(e));
        }
        self.buf.pop_front().map(Ok)
    }
}

//! The delta tier: small incremental imports as checksummed per-entry values beside the
//! blocks, merged on read, planned read-only and committed in one transaction.

use std::collections::VecDeque;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use redb::ReadableDatabase;

use super::*;
use crate::store::entry::Entry;
use crate::store::error::{Corruption, Error, Result};

impl Book {
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

/// Encodes a delta-tier value: crc32 over key, position and records, then the records.
pub(crate) fn encode_delta(e: &Entry) -> Vec<u8> {
    let mut payload = Vec::with_capacity(16 + 12 * e.moves.len());
    crate::store::record::encode_moves(&e.moves, &mut payload);
    let mut h = crc32fast::Hasher::new();
    h.update(&e.key.to_le_bytes());
    h.update(e.pos.as_deref().unwrap_or_default());
    h.update(&payload);
    let mut out = h.finalize().to_le_bytes().to_vec();
    out.extend_from_slice(&payload);
    out
}

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

/// A planned change to the delta tier: the merged values to write (in a run file, so that
/// memory stays bounded whatever the import's size) and the counters after it.
pub(crate) struct DeltaPlan {
    /// Run file (FORMAT §8.4) of the delta values to write, in key order.
    pub(crate) values: PathBuf,
    pub(crate) meta: BookMeta,
    pub(crate) imports: Vec<(String, Vec<u8>)>,
    /// Game fingerprints to record (`--dedupe`): a file holding them in a `games` table
    /// ([`crate::store::fpset::sorted_table`]).
    pub(crate) games: Option<Arc<redb::ReadOnlyDatabase>>,
}

/// Computes, with read-only lookups, what adding `new` (sorted by identity, each identity
/// once) to the book's delta tier changes. The delta values go to a run file at `values`.
pub(crate) fn plan_delta(
    book: &Book,
    new: impl IntoIterator<Item = Result<Entry>>,
    games: u64,
    values: &Path,
) -> Result<DeltaPlan> {
    let mut meta = book.meta().clone();
    meta.games += games;
    let mut out = crate::store::run::RunWriter::create(values)?;
    let mut prev_key: Option<u64> = None;
    for e in new {
        let e = e?;
        let in_blocks = match &e.pos {
            Some(p) => book.lookup_blocks(p)?,
            None => book
                .get_blocks(e.key)?
                .into_iter()
                .find(|x| x.pos.is_none()),
        };
        let in_delta = book.delta_get(e.key, e.pos.as_deref())?;
        let old_pairs = match (&in_blocks, &in_delta) {
            (None, None) => None,
            (a, b) => {
                let mut m = a.clone().or_else(|| b.clone()).unwrap_or_default();
                if let (Some(_), Some(b)) = (a, b) {
                    m.merge(b.clone());
                }
                Some(m)
            }
        };
        let mut merged = old_pairs.clone().unwrap_or_else(|| Entry {
            coded: None,
            key: e.key,
            pos: e.pos.clone(),
            moves: Vec::new(),
        });
        merged.merge(e.clone());
        let old_len = old_pairs.as_ref().map_or(0, |o| o.moves.len());
        meta.pairs += (merged.moves.len() - old_len) as u64;
        if old_pairs.is_none() {
            if e.pos.is_some() {
                meta.positions += 1;
            } else {
                meta.key_only += 1;
            }
            let key_taken = prev_key == Some(e.key) || !book.get(e.key)?.is_empty();
            if key_taken {
                meta.collisions += 1;
            }
        }
        prev_key = Some(e.key);
        let mut value = in_delta.clone().unwrap_or_else(|| Entry {
            coded: None,
            key: e.key,
            pos: e.pos.clone(),
            moves: Vec::new(),
        });
        if in_delta.is_none() {
            meta.delta_entries += 1;
        }
        value.merge(e);
        out.push(&value)?;
    }
    out.finish()?;
    Ok(DeltaPlan {
        values: values.to_path_buf(),
        meta,
        imports: Vec::new(),
        games: None,
    })
}

/// Writes a delta plan in one durable transaction, with a redb cache of `cache_bytes` (redb's
/// default, 1 GiB, would let the transaction's dirty pages grow past an import's budget).
/// [`Error::Busy`] if another process has the book open (the caller may rewrite the file
/// instead).
pub(crate) fn commit_delta(path: &Path, plan: &DeltaPlan, cache_bytes: usize) -> Result<()> {
    let db = match redb::Builder::new().set_cache_size(cache_bytes).open(path) {
        Ok(db) => db,
        Err(redb::DatabaseError::DatabaseAlreadyOpen) => {
            return Err(Error::Busy {
                path: path.to_path_buf(),
                what: "the book is open in another process".into(),
            });
        }
        Err(e) => return Err(e.into()),
    };
    let run = || -> Result<()> {
        let txn = db.begin_write()?;
        {
            let mut d = txn.open_table(DELTA)?;
            for e in crate::store::run::RunReader::open(&plan.values)? {
                let e = e?;
                let v = encode_delta(&e);
                d.insert((e.key, e.pos.as_deref().unwrap_or_default()), v.as_slice())?;
            }
            let mut imp = txn.open_table(IMPORTS)?;
            for (k, v) in &plan.imports {
                imp.insert(k.as_str(), v.as_slice())?;
            }
            copy_game_fingerprints(&txn, plan.games.as_slice())?;
            let mut m = txn.open_table(META)?;
            let counters =
                serde_json::to_vec(&plan.meta).map_err(|e| Error::Internal(e.to_string()))?;
            m.insert(META_COUNTERS, counters.as_slice())?;
        }
        txn.commit()?;
        Ok(())
    };
    run()?;
    // Copy-on-write leaves the file with free pages; give them back (best effort: the
    // commit above is already durable).
    let mut db = db;
    while let Ok(true) = db.compact() {}
    Ok(())
}

/// Iterator over the delta tier, reading it in chunks.
pub(crate) struct DeltaIter<'a> {
    pub(super) book: &'a Book,
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

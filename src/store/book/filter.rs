//! A book file's key filter (docs/FORMAT.md §4.7): Bloom filters over the file's keys in
//! partitions of [`PARTITION_KEYS`] consecutive distinct keys, built by the writer as entries
//! stream in (memory: one partition), read by probes a partition at a time (held within a
//! memory budget; past it read for the probe and kept among the last few such reads), and checked
//! by `verify`. A probe of a key the file lacks then costs a few memory reads instead of a
//! B-tree lookup and a block.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, OnceLock};

use crate::store::error::Corruption;
use crate::store::filter::KeyFilter;

/// Distinct keys per partition (the last one holds the rest): 1,925 bytes of filter each, two
/// to a 4 KiB redb page (larger partitions span two pages and waste most of the second).
pub(crate) const PARTITION_KEYS: usize = 1536;
/// The layout of meta `key_filter` (its first byte).
const LAYOUT: u8 = 1;
/// Partitions a file keeps in memory once read, in bytes of filter (per file). Past it, a probe
/// that needs another partition reads it for itself and drops it.
pub(crate) const FILTER_CACHE_BYTES: usize = 16 << 20;

/// The filter's description in meta `key_filter`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FilterIndex {
    /// Distinct keys over all partitions.
    pub keys: u64,
    /// The greatest key (no key above it is in the file).
    pub last: u64,
    /// The first key of each partition, ascending.
    pub firsts: Vec<u64>,
}

impl FilterIndex {
    /// Layout byte, partition size (u32), keys (u64), last key (u64), partitions (u32), their
    /// first keys (u64 each), crc32 of all that; little-endian.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(29 + 8 * self.firsts.len());
        out.push(LAYOUT);
        out.extend_from_slice(&(PARTITION_KEYS as u32).to_le_bytes());
        out.extend_from_slice(&self.keys.to_le_bytes());
        out.extend_from_slice(&self.last.to_le_bytes());
        out.extend_from_slice(&(self.firsts.len() as u32).to_le_bytes());
        for f in &self.firsts {
            out.extend_from_slice(&f.to_le_bytes());
        }
        let crc = crc32fast::hash(&out);
        out.extend_from_slice(&crc.to_le_bytes());
        out
    }

    pub fn decode(b: &[u8]) -> Result<FilterIndex, String> {
        if b.len() < 29 {
            return Err(format!("key filter index of {} bytes", b.len()));
        }
        let (body, crc) = b.split_at(b.len() - 4);
        let expected = u32::from_le_bytes([crc[0], crc[1], crc[2], crc[3]]);
        let found = crc32fast::hash(body);
        if expected != found {
            return Err(format!(
                "key filter index checksum mismatch (stored crc32 {expected:08x}, computed {found:08x})"
            ));
        }
        if body[0] != LAYOUT {
            return Err(format!("unknown key filter layout {}", body[0]));
        }
        let u32_at =
            |i: usize| u32::from_le_bytes([body[i], body[i + 1], body[i + 2], body[i + 3]]);
        let u64_at = |i: usize| {
            let mut w = [0u8; 8];
            w.copy_from_slice(&body[i..i + 8]);
            u64::from_le_bytes(w)
        };
        let per = u32_at(1) as usize;
        if per != PARTITION_KEYS {
            return Err(format!(
                "key filter partitions of {per} keys (this build writes {PARTITION_KEYS})"
            ));
        }
        let keys = u64_at(5);
        if keys == 0 {
            return Err("key filter index of a file without keys".into());
        }
        let last = u64_at(13);
        let n = u32_at(21) as usize;
        if body.len() != 25 + 8 * n {
            return Err(format!(
                "key filter index: {n} partitions in {} bytes",
                body.len()
            ));
        }
        let firsts: Vec<u64> = (0..n).map(|i| u64_at(25 + 8 * i)).collect();
        if firsts.windows(2).any(|w| w[0] >= w[1]) {
            return Err("key filter index: partition keys not ascending".into());
        }
        let want = (keys as usize).div_ceil(PARTITION_KEYS);
        if n != want || firsts.last().is_some_and(|&f| f > last) {
            return Err(format!(
                "key filter index: {n} partitions for {keys} keys (expected {want}), last key {last:016x}"
            ));
        }
        Ok(FilterIndex { keys, last, firsts })
    }

    /// The partition that would hold `key`, or `None` when no key of the file can be it.
    pub fn partition_of(&self, key: u64) -> Option<usize> {
        if key > self.last {
            return None;
        }
        self.firsts.partition_point(|&f| f <= key).checked_sub(1)
    }
}

/// Builds the filter while a writer takes entries in key order.
#[derive(Default)]
pub(crate) struct FilterBuilder {
    part: Vec<u64>,
    firsts: Vec<u64>,
    last: Option<u64>,
    keys: u64,
    /// Sealed partitions not yet written: (number, [`KeyFilter::encode`] bytes).
    pending: Vec<(u32, Vec<u8>)>,
}

impl FilterBuilder {
    /// Adds the key of the next entry (keys come ascending; a repeated key counts once).
    pub(crate) fn add(&mut self, key: u64) {
        if self.last == Some(key) {
            return;
        }
        self.last = Some(key);
        self.keys += 1;
        self.part.push(key);
        if self.part.len() == PARTITION_KEYS {
            self.seal();
        }
    }

    fn seal(&mut self) {
        let Some(&first) = self.part.first() else {
            return;
        };
        let mut f = KeyFilter::with_capacity(self.part.len() as u64);
        for &k in &self.part {
            f.insert(k);
        }
        self.pending.push((self.firsts.len() as u32, f.encode()));
        self.firsts.push(first);
        self.part.clear();
    }

    /// The sealed partitions not yet taken, to write.
    pub(crate) fn take_pending(&mut self) -> Vec<(u32, Vec<u8>)> {
        std::mem::take(&mut self.pending)
    }

    /// Seals the last partition; returns the rest to write and the index (`None` for a file
    /// without keys).
    pub(crate) fn finish(&mut self) -> (Vec<(u32, Vec<u8>)>, Option<FilterIndex>) {
        self.seal();
        let index = self.last.map(|last| FilterIndex {
            keys: self.keys,
            last,
            firsts: std::mem::take(&mut self.firsts),
        });
        (self.take_pending(), index)
    }
}

/// A file's filter as probes read it: the index, and each partition once read.
pub(crate) struct FileFilter {
    pub(crate) index: FilterIndex,
    parts: Vec<OnceLock<KeyFilter>>,
    held: AtomicUsize,
    budget: usize,
    /// The last partitions read past the budget, newest last (at most [`RECENT_PARTITIONS`]):
    /// lookups in key order (an import's, each of its lookup threads in a range of keys of
    /// its own) probe each partition several times in a row, and read it once.
    recent: Mutex<VecDeque<(usize, Arc<KeyFilter>)>>,
}

/// Partitions read past the budget that a file's filter keeps (about 2 KB each): one for
/// each of an import's lookup threads (`store::book::lookups`) with room to spare.
pub(crate) const RECENT_PARTITIONS: usize = 32;

/// What a probe learns from the filter.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Probe {
    /// The key is not in the file.
    Absent,
    /// The filter passes it (or its partition is not held): look in the blocks.
    Maybe,
}

impl FileFilter {
    pub(crate) fn new(index: FilterIndex, budget: usize) -> FileFilter {
        let parts = (0..index.firsts.len()).map(|_| OnceLock::new()).collect();
        FileFilter {
            index,
            parts,
            held: AtomicUsize::new(0),
            budget,
            recent: Mutex::new(VecDeque::new()),
        }
    }

    /// Whether `key` may be in the file. `read` fetches partition `i`'s stored bytes (`None`:
    /// the row is missing); it is called only for a partition not yet held. A partition read
    /// while the budget allows is held; past the budget it answers this probe and stays among
    /// the [`RECENT_PARTITIONS`] last read past the budget.
    pub(crate) fn probe(
        &self,
        key: u64,
        read: impl FnOnce(u32) -> crate::store::error::Result<Option<Vec<u8>>>,
    ) -> crate::store::error::Result<Probe> {
        let Some(i) = self.index.partition_of(key) else {
            return Ok(Probe::Absent);
        };
        let f = match self.parts[i].get() {
            Some(f) => f,
            None => {
                if let Some(f) = self.last_read(i) {
                    return Ok(answer(&f, key));
                }
                let size = partition_bytes(&self.index, i);
                let loaded = load_partition(i, read(i as u32)?)?;
                if self.held.load(Ordering::Relaxed) + size > self.budget {
                    // Past the budget the partition is read for this probe (one stored row of
                    // ~2 KB instead of a block search for a key the file may lack) and kept
                    // among the last few read.
                    let loaded = Arc::new(loaded);
                    let probe = answer(&loaded, key);
                    if let Ok(mut g) = self.recent.lock() {
                        if g.len() == RECENT_PARTITIONS {
                            g.pop_front();
                        }
                        g.push_back((i, loaded));
                    }
                    return Ok(probe);
                }
                let mut ours = false;
                let f = self.parts[i].get_or_init(|| {
                    ours = true;
                    loaded
                });
                if ours {
                    self.held.fetch_add(size, Ordering::Relaxed);
                }
                f
            }
        };
        Ok(answer(f, key))
    }

    /// Sets how many bytes of partitions this filter holds once read (at open, before any
    /// probe).
    pub(crate) fn set_budget(&mut self, bytes: usize) {
        self.budget = bytes;
    }

    /// Partition `i` if it is among those last read past the budget.
    fn last_read(&self, i: usize) -> Option<Arc<KeyFilter>> {
        let g = self.recent.lock().ok()?;
        g.iter()
            .rev()
            .find(|(at, _)| *at == i)
            .map(|(_, f)| f.clone())
    }

    /// Bytes of partitions held.
    pub(crate) fn held_bytes(&self) -> usize {
        self.held.load(Ordering::Relaxed)
    }
}

fn answer(f: &KeyFilter, key: u64) -> Probe {
    if f.may_contain(key) {
        Probe::Maybe
    } else {
        Probe::Absent
    }
}

/// Decodes partition `i` from its stored bytes.
pub(crate) fn load_partition(
    i: usize,
    bytes: Option<Vec<u8>>,
) -> Result<KeyFilter, crate::store::error::Error> {
    let bytes = bytes.ok_or_else(|| {
        crate::store::error::Error::Corrupt(Corruption::Filter {
            partition: i as u32,
            reason: "the partition is missing from the key_filter table".into(),
        })
    })?;
    KeyFilter::decode(&bytes).map_err(|e| {
        crate::store::error::Error::Corrupt(Corruption::Filter {
            partition: i as u32,
            reason: e.to_string(),
        })
    })
}

/// The keys partition `i` holds: [`PARTITION_KEYS`], fewer in the last.
pub(crate) fn partition_keys(index: &FilterIndex, i: usize) -> u64 {
    let before = (i * PARTITION_KEYS) as u64;
    (index.keys - before).min(PARTITION_KEYS as u64)
}

/// Bytes a held partition takes (its words).
fn partition_bytes(index: &FilterIndex, i: usize) -> usize {
    KeyFilter::with_capacity(partition_keys(index, i)).memory()
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn build(keys: &[u64]) -> (Vec<(u32, Vec<u8>)>, Option<FilterIndex>) {
        let mut b = FilterBuilder::default();
        let mut rows = Vec::new();
        for &k in keys {
            b.add(k);
            rows.extend(b.take_pending());
        }
        let (rest, index) = b.finish();
        rows.extend(rest);
        (rows, index)
    }

    proptest! {
        #[test]
        fn every_key_passes_and_the_index_round_trips(
            mut keys in proptest::collection::vec(any::<u64>(), 0..12_000),
            dup in 0usize..4,
        ) {
            keys.sort_unstable();
            // Repeated keys (collisions) count once.
            let mut with_dups = keys.clone();
            for i in 0..dup.min(keys.len()) {
                with_dups.push(keys[i * keys.len() / 4]);
            }
            with_dups.sort_unstable();
            keys.dedup();
            let (rows, index) = build(&with_dups);
            let Some(index) = index else {
                prop_assert!(keys.is_empty());
                return Ok(());
            };
            prop_assert_eq!(index.keys, keys.len() as u64);
            prop_assert_eq!(rows.len(), keys.len().div_ceil(PARTITION_KEYS));
            prop_assert_eq!(FilterIndex::decode(&index.encode()), Ok(index.clone()));
            let rows: std::collections::HashMap<u32, Vec<u8>> = rows.into_iter().collect();
            let f = FileFilter::new(index, usize::MAX);
            for &k in &keys {
                prop_assert_eq!(f.probe(k, |i| Ok(rows.get(&i).cloned())).unwrap(), Probe::Maybe);
            }
            if let Some(above) = keys[keys.len() - 1].checked_add(1) {
                prop_assert_eq!(f.probe(above, |_| panic!("no partition holds it")).unwrap(), Probe::Absent);
            }
            if keys[0] > 0 {
                prop_assert_eq!(f.probe(keys[0] - 1, |_| panic!("no partition holds it")).unwrap(), Probe::Absent);
            }
        }

        #[test]
        fn damaged_indexes_are_errors(keys in proptest::collection::vec(any::<u64>(), 1..9_000), at in any::<usize>(), bit in 0u8..8) {
            let mut keys = keys;
            keys.sort_unstable();
            let (_, index) = build(&keys);
            let mut b = index.unwrap().encode();
            let i = at % b.len();
            b[i] ^= 1 << bit;
            prop_assert!(FilterIndex::decode(&b).is_err());
            prop_assert!(FilterIndex::decode(&b[..i]).is_err());
        }

        #[test]
        fn index_decoding_never_panics(b in proptest::collection::vec(any::<u8>(), 0..200)) {
            let _ = FilterIndex::decode(&b);
        }
    }

    #[test]
    fn absent_keys_are_mostly_told_and_the_budget_holds() {
        let keys: Vec<u64> = {
            let mut k: Vec<u64> = (0..20_000u64)
                .map(|i| i.wrapping_mul(0x9E37_79B9_7F4A_7C15))
                .collect();
            k.sort_unstable();
            k
        };
        let (rows, index) = build(&keys);
        let rows: std::collections::HashMap<u32, Vec<u8>> = rows.into_iter().collect();
        let index = index.unwrap();
        let f = FileFilter::new(index.clone(), usize::MAX);
        let absent = (1_000_000..1_020_000u64)
            .map(|i| i.wrapping_mul(0x9E37_79B9_7F4A_7C15))
            .filter(|&k| f.probe(k, |i| Ok(rows.get(&i).cloned())).unwrap() == Probe::Absent)
            .count();
        assert!(absent > 19_600, "{absent} of 20,000 absent keys told");
        // A budget of one partition: the others are read for each probe and not held, and
        // still tell absent keys.
        let one = FileFilter::new(index, partition_bytes(&f.index, 0));
        assert_eq!(
            one.probe(keys[0], |i| Ok(rows.get(&i).cloned())).unwrap(),
            Probe::Maybe
        );
        let far = keys[keys.len() - 1];
        let reads = std::cell::Cell::new(0);
        let read = |i: u32| {
            reads.set(reads.get() + 1);
            Ok(rows.get(&i).cloned())
        };
        for _ in 0..2 {
            assert_eq!(one.probe(far, read).unwrap(), Probe::Maybe);
        }
        assert_eq!(
            reads.get(),
            1,
            "a partition past the budget is kept while it is the last read"
        );
        let mid = keys[keys.len() / 2];
        assert_eq!(one.probe(mid, read).unwrap(), Probe::Maybe);
        assert_eq!(one.probe(far, read).unwrap(), Probe::Maybe);
        assert_eq!(
            reads.get(),
            2,
            "another partition read past the budget leaves it among the last read"
        );
        let past = (1_000_000..1_020_000u64)
            .map(|i| i.wrapping_mul(0x9E37_79B9_7F4A_7C15))
            .filter(|&k| one.probe(k, |i| Ok(rows.get(&i).cloned())).unwrap() == Probe::Absent)
            .count();
        assert_eq!(
            past, absent,
            "past the budget the same keys are told absent"
        );
        assert_eq!(one.held_bytes(), partition_bytes(&one.index, 0));
        // A missing or damaged partition is corruption, named by its number.
        let none = FileFilter::new(one.index.clone(), usize::MAX);
        let e = none.probe(keys[0], |_| Ok(None)).unwrap_err();
        assert!(e.to_string().contains("partition 0"), "{e}");
        let mut bad = rows[&1].clone();
        bad[3] ^= 4;
        let e = none.probe(far, |_| Ok(Some(bad))).unwrap_err();
        assert!(e.to_string().contains("checksum"), "{e}");
    }

    #[test]
    fn partitions_past_the_budget_stay_among_the_last_read() {
        let keys: Vec<u64> = {
            let mut k: Vec<u64> = (0..(PARTITION_KEYS as u64) * (RECENT_PARTITIONS as u64 + 4))
                .map(|i| i.wrapping_mul(0x9E37_79B9_7F4A_7C15))
                .collect();
            k.sort_unstable();
            k
        };
        let (rows, index) = build(&keys);
        let rows: std::collections::HashMap<u32, Vec<u8>> = rows.into_iter().collect();
        let f = FileFilter::new(index.unwrap(), 0);
        let reads = std::cell::RefCell::new(Vec::new());
        let read = |i: u32| {
            reads.borrow_mut().push(i);
            Ok(rows.get(&i).cloned())
        };
        let first = |p: usize| keys[p * PARTITION_KEYS];
        // Lookup threads interleaved, each in its own partition: each partition is read once.
        for _ in 0..3 {
            for p in 0..RECENT_PARTITIONS {
                assert_eq!(f.probe(first(p), read).unwrap(), Probe::Maybe);
            }
        }
        let want: Vec<u32> = (0..RECENT_PARTITIONS as u32).collect();
        assert_eq!(*reads.borrow(), want);
        // One more pushes the oldest out; nothing is held within the (zero) budget.
        f.probe(first(RECENT_PARTITIONS), read).unwrap();
        f.probe(first(0), read).unwrap();
        assert_eq!(reads.borrow().len(), RECENT_PARTITIONS + 2);
        assert_eq!(f.held_bytes(), 0);
    }
}

//! Sets of 128-bit fingerprints in bounded memory, for `import --dedupe` (FORMAT §8.1).
//!
//! [`FingerprintSet`] answers "seen before?" for every game of an import. It holds up to a
//! fixed number of fingerprints in a hash set; when that is full, they are sorted and inserted
//! (in key order) into a staging redb table, and the hash set starts empty again. A Bloom
//! filter of fixed size (as many bytes as the hash set's capacity × 16) covers the table, so
//! most fingerprints never seen are answered without reading it. Lookups check the hash set,
//! then the filter, then the table. Memory stays at the hash set's capacity, the filter and
//! redb's cache, whatever the number of games; past a few bytes per spilled fingerprint the
//! filter answers "maybe" more often and more lookups go to the table.
//!
//! [`sorted_table`] turns a log of fingerprints (u128 little-endian, in any order, repeats
//! allowed) into such a table in the same bounded memory, so that a writer can copy them into
//! a book in key order.

use std::collections::HashSet;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use redb::{ReadableDatabase, ReadableTableMetadata};

use super::book::{GAMES, shield};
use crate::error::{Error, Result};

/// redb's cache for a staging fingerprint table.
const TABLE_CACHE_BYTES: usize = 4 << 20;

/// Fingerprints a set holds in memory before it spills, for a memory budget: a sixteenth of
/// the budget at about 48 bytes per entry (hash set slots and growth, 32; the Bloom filter,
/// 16), at least 1,024.
pub fn capacity_for(memory_bytes: usize) -> usize {
    (memory_bytes / 16 / 48).max(1024)
}

/// A Bloom filter over fingerprints (uniform hashes already: its three probes are bit fields
/// of the fingerprint).
struct Bloom {
    bits: Vec<u64>,
    mask: u64,
}

impl Bloom {
    /// A filter of `bytes` (rounded down to a power of two, at least 64).
    fn new(bytes: usize) -> Bloom {
        let words = (bytes / 8).max(8);
        let words = 1usize << (usize::BITS - 1 - words.leading_zeros());
        Bloom {
            bits: vec![0; words],
            mask: (words as u64) * 64 - 1,
        }
    }

    fn probes(&self, fp: u128) -> [u64; 3] {
        [fp as u64, (fp >> 43) as u64, (fp >> 86) as u64].map(|h| h & self.mask)
    }

    fn insert(&mut self, fp: u128) {
        for p in self.probes(fp) {
            self.bits[(p >> 6) as usize] |= 1 << (p & 63);
        }
    }

    fn may_contain(&self, fp: u128) -> bool {
        self.probes(fp)
            .iter()
            .all(|&p| self.bits[(p >> 6) as usize] & (1 << (p & 63)) != 0)
    }
}

/// A set of fingerprints in bounded memory, spilling to a redb file (see the module docs).
pub struct FingerprintSet {
    mem: HashSet<u128>,
    cap: usize,
    path: PathBuf,
    disk: Option<Spilled>,
}

struct Spilled {
    db: redb::Database,
    table: redb::ReadOnlyTable<u128, ()>,
    bloom: Bloom,
}

impl FingerprintSet {
    /// An empty set keeping up to `cap` fingerprints in memory and spilling to `path` (which
    /// is replaced if it exists).
    pub fn new(path: &Path, cap: usize) -> FingerprintSet {
        FingerprintSet {
            mem: HashSet::new(),
            cap: cap.max(1),
            path: path.to_path_buf(),
            disk: None,
        }
    }

    /// Adds `fp`; true if it was not in the set.
    pub fn insert(&mut self, fp: u128) -> Result<bool> {
        if self.contains(fp)? {
            return Ok(false);
        }
        self.mem.insert(fp);
        if self.mem.len() >= self.cap {
            self.spill()?;
        }
        Ok(true)
    }

    pub fn contains(&self, fp: u128) -> Result<bool> {
        if self.mem.contains(&fp) {
            return Ok(true);
        }
        match &self.disk {
            None => Ok(false),
            Some(d) if !d.bloom.may_contain(fp) => Ok(false),
            Some(d) => shield("looking up a staged fingerprint", || {
                Ok(d.table.get(fp)?.is_some())
            }),
        }
    }

    /// Whether the set has spilled to its file.
    pub fn spilled(&self) -> bool {
        self.disk.is_some()
    }

    fn spill(&mut self) -> Result<()> {
        let mut sorted: Vec<u128> = self.mem.drain().collect();
        sorted.sort_unstable();
        let (db, mut bloom) = match self.disk.take() {
            // The read-only table holds a read transaction: drop it before writing.
            Some(d) => (d.db, d.bloom),
            None => (
                create_table_file(&self.path)?,
                Bloom::new(self.cap.saturating_mul(16)),
            ),
        };
        insert_sorted(&db, &self.path, &sorted)?;
        for &fp in &sorted {
            bloom.insert(fp);
        }
        let table = shield("opening a staged fingerprint table", || {
            Ok(db.begin_read()?.open_table(GAMES)?)
        })?;
        self.disk = Some(Spilled { db, table, bloom });
        Ok(())
    }
}

fn create_table_file(path: &Path) -> Result<redb::Database> {
    let _ = std::fs::remove_file(path);
    redb::Builder::new()
        .set_cache_size(TABLE_CACHE_BYTES)
        .create(path)
        .map_err(|e| Error::Invalid(format!("creating {}: {e}", path.display())))
}

/// Inserts sorted fingerprints in one transaction. Staging files are rebuilt after a crash, so
/// the commit need not be durable.
fn insert_sorted(db: &redb::Database, path: &Path, sorted: &[u128]) -> Result<()> {
    shield(&format!("writing {}", path.display()), || {
        let mut txn = db.begin_write()?;
        txn.set_durability(redb::Durability::None)
            .map_err(|e| Error::Invalid(e.to_string()))?;
        {
            let mut t = txn.open_table(GAMES)?;
            for &fp in sorted {
                t.insert(fp, ())?;
            }
        }
        txn.commit()?;
        Ok(())
    })
}

/// Reads a fingerprint log (u128 little-endian each, any order, repeats allowed) into a new
/// redb file at `out` holding them in the book's `games` table, sorting `cap` at a time.
/// Returns the file opened read-only and the number of distinct fingerprints, or `None` if
/// the log is absent or empty.
pub fn sorted_table(
    log: &Path,
    out: &Path,
    cap: usize,
) -> Result<Option<(Arc<redb::ReadOnlyDatabase>, u64)>> {
    let file = match std::fs::File::open(log) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(e) => return Err(Error::io(format!("reading {}", log.display()), e)),
    };
    let len = file
        .metadata()
        .map_err(|e| Error::io(format!("reading {}", log.display()), e))?
        .len();
    if !len.is_multiple_of(16) {
        return Err(Error::Invalid(format!(
            "{} is damaged ({len} bytes, not a multiple of 16); remove the staging directory to start the import over",
            log.display()
        )));
    }
    if len == 0 {
        return Ok(None);
    }
    let db = create_table_file(out)?;
    let mut reader = std::io::BufReader::with_capacity(1 << 16, file);
    let cap = cap.max(1);
    let mut chunk: Vec<u128> = Vec::with_capacity(cap.min((len / 16) as usize));
    let mut buf = [0u8; 16];
    let mut left = len / 16;
    while left > 0 {
        chunk.clear();
        while left > 0 && chunk.len() < cap {
            reader
                .read_exact(&mut buf)
                .map_err(|e| Error::io(format!("reading {}", log.display()), e))?;
            chunk.push(u128::from_le_bytes(buf));
            left -= 1;
        }
        chunk.sort_unstable();
        chunk.dedup();
        insert_sorted(&db, out, &chunk)?;
    }
    drop(db);
    let ro = redb::Builder::new()
        .set_cache_size(TABLE_CACHE_BYTES)
        .open_read_only(out)
        .map_err(|e| Error::Invalid(format!("reopening {}: {e}", out.display())))?;
    let n = shield("counting staged fingerprints", || {
        Ok(ro.begin_read()?.open_table(GAMES)?.len()?)
    })?;
    Ok(Some((Arc::new(ro), n)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use redb::ReadableTable;

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(32))]

        /// Whatever the capacity (spilling or not), the set answers as a plain hash set.
        #[test]
        fn set_agrees_with_a_hash_set(
            fps in proptest::collection::vec(0u128..64, 0..300),
            cap in 1usize..40,
        ) {
            let dir = tempfile::tempdir().unwrap();
            let mut set = FingerprintSet::new(&dir.path().join("seen.redb"), cap);
            let mut model = HashSet::new();
            for fp in fps {
                // Spread the small values over the whole key range.
                let fp = fp.wrapping_mul(0x9e37_79b9_7f4a_7c15_f39c_c060_5ced_c835);
                prop_assert_eq!(set.insert(fp).unwrap(), model.insert(fp));
            }
            for fp in 0u128..64 {
                let fp = fp.wrapping_mul(0x9e37_79b9_7f4a_7c15_f39c_c060_5ced_c835);
                prop_assert_eq!(set.contains(fp).unwrap(), model.contains(&fp));
            }
            prop_assert_eq!(set.spilled(), model.len() >= cap);
        }

        /// The sorted table holds each logged fingerprint once, in key order.
        #[test]
        fn sorted_table_holds_the_log_in_order(
            fps in proptest::collection::vec(any::<u128>(), 0..200),
            repeat in proptest::collection::vec(0usize..200, 0..50),
            cap in 1usize..64,
        ) {
            let dir = tempfile::tempdir().unwrap();
            let log = dir.path().join("games.fp");
            let mut all = fps.clone();
            all.extend(repeat.iter().filter_map(|&i| fps.get(i).copied()));
            let bytes: Vec<u8> = all.iter().flat_map(|f| f.to_le_bytes()).collect();
            std::fs::write(&log, bytes).unwrap();
            let got = sorted_table(&log, &dir.path().join("counted.redb"), cap).unwrap();
            let mut want = fps.clone();
            want.sort_unstable();
            want.dedup();
            match got {
                None => prop_assert!(want.is_empty()),
                Some((db, n)) => {
                    prop_assert_eq!(n, want.len() as u64);
                    let t = db.begin_read().unwrap().open_table(GAMES).unwrap();
                    let keys: Vec<u128> = t.iter().unwrap().map(|r| r.unwrap().0.value()).collect();
                    prop_assert_eq!(keys, want);
                }
            }
        }
    }

    #[test]
    fn damaged_log_is_an_error_and_absent_log_is_none() {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join("games.fp");
        let out = dir.path().join("counted.redb");
        assert!(sorted_table(&log, &out, 8).unwrap().is_none());
        std::fs::write(&log, [0u8; 17]).unwrap();
        let Err(e) = sorted_table(&log, &out, 8) else {
            panic!("a 17-byte log was accepted");
        };
        let e = e.to_string();
        assert!(e.contains("not a multiple of 16"), "{e}");
    }
}

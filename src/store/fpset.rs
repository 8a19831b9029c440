//! Sets of 128-bit fingerprints in bounded memory, for `import --dedupe` (FORMAT §8.1).
//!
//! [`FingerprintSet`] answers "seen before?" for every game of an import. It holds up to a
//! fixed number of fingerprints in a hash set; when that is full, they are sorted and written
//! to a run file (sorted u128s), and the hash set starts empty again. Runs of similar size are
//! merged (a binary counter: each fingerprint is rewritten about log2(spills) times, all
//! sequential I/O). Each run keeps in memory the first fingerprint of each page of 1,024 (16
//! bytes per 16 KiB of run), so a lookup reads one page of a run. A Bloom filter of fixed size
//! (16 bytes per hash-set entry) covers the runs, so most fingerprints never seen are answered
//! without reading any. Memory stays at the hash set, the filter and the page index (1/1,024 of
//! the fingerprints), whatever the number of games; past a few spilled fingerprints per filter
//! byte the filter answers "maybe" more often and more lookups read pages.
//!
//! [`sorted_table`] turns a log of fingerprints (u128 little-endian, in any order, repeats
//! allowed) into a redb table in key order in the same bounded memory (sorted runs, merged
//! into the table), so that a writer can copy them into a book.

use std::collections::{BinaryHeap, HashSet};
use std::io::{BufReader, BufWriter, Read, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::book::{GAMES, shield};
use crate::store::error::{Error, Result};

/// redb's cache for a staging fingerprint table.
const TABLE_CACHE_BYTES: usize = 4 << 20;
/// Fingerprints per page of a run file (the unit a lookup reads).
const PAGE_KEYS: usize = 1024;

/// Fingerprints a set holds in memory before it spills, for a memory budget: a sixteenth of
/// the budget at about 48 bytes per entry (hash set slots and growth, 32; the Bloom filter,
/// 16), at least 1,024.
#[doc(hidden)]
pub fn capacity_for(memory_bytes: usize) -> usize {
    (memory_bytes / 16 / 48).max(1024)
}

/// A Bloom filter over fingerprints. They are uniform hashes already: the three probes are
/// 64-bit words of the fingerprint, mapped onto the bit array by multiply-shift (any size).
struct Bloom {
    bits: Vec<u64>,
    nbits: u64,
}

impl Bloom {
    /// A filter of `bytes` (at least 64).
    fn new(bytes: usize) -> Bloom {
        let words = (bytes / 8).max(8);
        Bloom {
            // Probes read words before inserts set bits in them.
            bits: super::write_touched(vec![0; words]),
            nbits: words as u64 * 64,
        }
    }

    fn probes(&self, fp: u128) -> [u64; 3] {
        let (lo, hi) = (fp as u64, (fp >> 64) as u64);
        [lo, hi, lo.rotate_left(32) ^ hi.rotate_left(16)]
            .map(|h| ((u128::from(h) * u128::from(self.nbits)) >> 64) as u64)
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

/// `count` fingerprints (u128 little-endian) read in order from `file` (named `path` in errors).
fn read_fingerprints(
    file: std::fs::File,
    count: u64,
    path: &Path,
) -> impl Iterator<Item = Result<u128>> + use<> {
    let path = path.to_path_buf();
    let mut r = BufReader::with_capacity(1 << 16, file);
    (0..count).map(move |_| {
        let mut b = [0u8; 16];
        r.read_exact(&mut b)
            .map(|()| u128::from_le_bytes(b))
            .map_err(|e| Error::io(format!("reading {}", path.display()), e))
    })
}

/// A page of a run as read (bytes) and decoded, reused from one lookup to the next.
#[derive(Default)]
struct Page {
    bytes: Vec<u8>,
    keys: Vec<u128>,
}

/// A run file: sorted, distinct fingerprints (u128 little-endian, no header), with the first
/// fingerprint of each page in memory.
struct Run {
    path: PathBuf,
    file: std::fs::File,
    len: u64,
    index: Vec<u128>,
}

impl Run {
    /// Writes strictly increasing fingerprints to `path`.
    fn write(path: &Path, keys: impl Iterator<Item = Result<u128>>) -> Result<Run> {
        let ctx = |e| Error::io(format!("writing {}", path.display()), e);
        let f = crate::store::files::create_temp(path)?;
        let mut w = BufWriter::with_capacity(1 << 16, f);
        let (mut len, mut index, mut last) = (0u64, Vec::new(), None);
        for k in keys {
            let k = k?;
            if last.is_some_and(|l| l >= k) {
                return Err(Error::Internal(format!(
                    "{}: fingerprints out of order",
                    path.display()
                )));
            }
            last = Some(k);
            if len.is_multiple_of(PAGE_KEYS as u64) {
                index.push(k);
            }
            w.write_all(&k.to_le_bytes()).map_err(ctx)?;
            len += 1;
        }
        w.flush().map_err(ctx)?;
        let file = std::fs::File::open(path).map_err(ctx)?;
        Ok(Run {
            path: path.to_path_buf(),
            file,
            len,
            index,
        })
    }

    /// Reads the one page that may hold `fp` (into `page`, reused) and searches it.
    fn contains(&self, fp: u128, page: &mut Page) -> Result<bool> {
        let p = self.index.partition_point(|&k| k <= fp);
        if p == 0 {
            return Ok(false);
        }
        let start = ((p - 1) * PAGE_KEYS) as u64;
        let n = (self.len - start).min(PAGE_KEYS as u64) as usize;
        page.bytes.resize(n * 16, 0);
        self.file
            .read_exact_at(&mut page.bytes, start * 16)
            .map_err(|e| Error::io(format!("reading {}", self.path.display()), e))?;
        page.keys.clear();
        page.keys.extend(
            page.bytes
                .chunks_exact(16)
                .map(|c| u128::from_le_bytes(c.try_into().unwrap_or_default())),
        );
        Ok(page.keys.binary_search(&fp).is_ok())
    }

    /// Its fingerprints in order, read sequentially.
    fn keys(&self) -> Result<impl Iterator<Item = Result<u128>> + use<>> {
        let f = std::fs::File::open(&self.path)
            .map_err(|e| Error::io(format!("reading {}", self.path.display()), e))?;
        Ok(read_fingerprints(f, self.len, &self.path))
    }
}

/// The distinct fingerprints of several sorted streams, in order.
fn merge_sorted(
    mut inputs: Vec<Box<dyn Iterator<Item = Result<u128>>>>,
) -> impl Iterator<Item = Result<u128>> {
    let mut heap = BinaryHeap::new();
    let mut failed = None;
    for (i, it) in inputs.iter_mut().enumerate() {
        match it.next() {
            Some(Ok(k)) => heap.push(std::cmp::Reverse((k, i))),
            Some(Err(e)) => failed = Some(e),
            None => {}
        }
    }
    let mut last = None;
    std::iter::from_fn(move || {
        if let Some(e) = failed.take() {
            return Some(Err(e));
        }
        loop {
            let std::cmp::Reverse((k, i)) = heap.pop()?;
            match inputs[i].next() {
                Some(Ok(n)) => heap.push(std::cmp::Reverse((n, i))),
                Some(Err(e)) => return Some(Err(e)),
                None => {}
            }
            if last != Some(k) {
                last = Some(k);
                return Some(Ok(k));
            }
        }
    })
}

/// Sorted runs in a staging directory, merged as a binary counter.
struct Runs {
    dir: PathBuf,
    prefix: &'static str,
    next: u64,
    /// Largest (oldest) first.
    runs: Vec<Run>,
    page: Page,
}

impl Runs {
    fn new(dir: &Path, prefix: &'static str) -> Runs {
        Runs {
            dir: dir.to_path_buf(),
            prefix,
            next: 0,
            runs: Vec::new(),
            page: Page::default(),
        }
    }

    fn next_path(&mut self) -> PathBuf {
        self.next += 1;
        self.dir
            .join(format!("{}-{:06}.fp", self.prefix, self.next))
    }

    /// Adds sorted, distinct fingerprints as a run, then merges runs of similar size.
    fn add(&mut self, sorted: &[u128]) -> Result<()> {
        let path = self.next_path();
        self.runs
            .push(Run::write(&path, sorted.iter().map(|&k| Ok(k)))?);
        while let [.., a, b] = self.runs.as_slice()
            && a.len <= 2 * b.len
        {
            let (b, a) = (self.runs.pop(), self.runs.pop());
            let (Some(a), Some(b)) = (a, b) else { break };
            let path = self.next_path();
            let merged = Run::write(
                &path,
                merge_sorted(vec![Box::new(a.keys()?), Box::new(b.keys()?)]),
            )?;
            for r in [a, b] {
                let _ = std::fs::remove_file(&r.path);
            }
            self.runs.push(merged);
        }
        Ok(())
    }

    fn contains(&mut self, fp: u128) -> Result<bool> {
        for r in self.runs.iter().rev() {
            if r.contains(fp, &mut self.page)? {
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// Every fingerprint of the runs, once, in order.
    fn merged(&self) -> Result<impl Iterator<Item = Result<u128>> + use<>> {
        let inputs = self
            .runs
            .iter()
            .map(|r| {
                r.keys()
                    .map(|k| Box::new(k) as Box<dyn Iterator<Item = Result<u128>>>)
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(merge_sorted(inputs))
    }
}

impl Drop for Runs {
    fn drop(&mut self) {
        for r in &self.runs {
            let _ = std::fs::remove_file(&r.path);
        }
    }
}

/// A set of fingerprints in bounded memory, spilling to sorted runs (see the module docs).
pub(crate) struct FingerprintSet {
    mem: HashSet<u128>,
    cap: usize,
    runs: Runs,
    bloom: Option<Bloom>,
}

impl FingerprintSet {
    /// An empty set keeping up to `cap` fingerprints in memory and spilling to run files
    /// `seen-NNNNNN.fp` in `dir`.
    #[doc(hidden)]
    pub fn new(dir: &Path, cap: usize) -> FingerprintSet {
        FingerprintSet {
            mem: HashSet::new(),
            cap: cap.max(1),
            runs: Runs::new(dir, "seen"),
            bloom: None,
        }
    }

    /// Adds `fp`; true if it was not in the set.
    pub(crate) fn insert(&mut self, fp: u128) -> Result<bool> {
        if self.contains(fp)? {
            return Ok(false);
        }
        self.mem.insert(fp);
        if self.mem.len() >= self.cap {
            self.spill()?;
        }
        Ok(true)
    }

    #[doc(hidden)]
    pub fn contains(&mut self, fp: u128) -> Result<bool> {
        if self.mem.contains(&fp) {
            return Ok(true);
        }
        match &self.bloom {
            Some(b) if b.may_contain(fp) => self.runs.contains(fp),
            _ => Ok(false),
        }
    }

    /// Whether the set has spilled to run files.
    pub(crate) fn spilled(&self) -> bool {
        self.bloom.is_some()
    }

    fn spill(&mut self) -> Result<()> {
        let mut sorted: Vec<u128> = self.mem.iter().copied().collect();
        sorted.sort_unstable();
        self.runs.add(&sorted)?;
        let bloom = self
            .bloom
            .get_or_insert_with(|| Bloom::new(self.cap.saturating_mul(16)));
        for &fp in &sorted {
            bloom.insert(fp);
        }
        self.mem.clear();
        Ok(())
    }
}

/// Game fingerprints sorted into a redb file of the staging area ([`sorted_table`]), for a
/// book writer to copy into the book it writes
/// ([`crate::store::BookWriter::add_game_fingerprints_from`]). The database stays inside the
/// store; callers above it hold this handle only.
pub(crate) struct SortedGames {
    db: Arc<redb::ReadOnlyDatabase>,
}

impl SortedGames {
    /// The database holding them in a `games` table.
    pub(super) fn into_db(self) -> Arc<redb::ReadOnlyDatabase> {
        self.db
    }
}

/// Reads a fingerprint log (u128 little-endian each, any order, repeats allowed) into a new
/// redb file at `out` holding them in the book's `games` table: sorted `cap` at a time into
/// runs (`counted-NNNNNN.fp` beside `out`), merged, and inserted in key order in one
/// transaction (not durable: staging files are rebuilt after a crash). Returns the file opened
/// read-only, or `None` if the log is absent or empty.
pub(crate) fn sorted_table(log: &Path, out: &Path, cap: usize) -> Result<Option<SortedGames>> {
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
        return Err(Error::Damaged(format!(
            "{} is damaged ({len} bytes, not a multiple of 16); remove the staging directory to start the import over",
            log.display()
        )));
    }
    if len == 0 {
        return Ok(None);
    }
    let dir = out.parent().unwrap_or(Path::new("."));
    let mut runs = Runs::new(dir, "counted");
    let cap = cap.max(1);
    let mut chunk: Vec<u128> = Vec::with_capacity(cap.min((len / 16) as usize));
    let mut fps = read_fingerprints(file, len / 16, log).peekable();
    while fps.peek().is_some() {
        chunk.clear();
        for fp in fps.by_ref().take(cap) {
            chunk.push(fp?);
        }
        chunk.sort_unstable();
        chunk.dedup();
        runs.add(&chunk)?;
    }
    drop(chunk);
    // A new file of this process (never through a link planted at the name).
    let file = crate::store::files::create_temp(out)?;
    crate::store::files::adopt_dir_access(&file, out)?;
    let db = redb::backends::FileBackend::new(file)
        .and_then(|b| {
            redb::Builder::new()
                .set_cache_size(TABLE_CACHE_BYTES)
                .create_with_backend(b)
        })
        .map_err(|e| Error::db(format!("creating {}", out.display()), e))?;
    shield(&format!("writing {}", out.display()), || {
        let mut txn = db.begin_write()?;
        // Durable: the table is read back from the file at once, and a full disk must fail
        // here, as itself (a non-durable commit left its pages to the drop, where a failed
        // write went unseen and the reopening below found a half-written file).
        txn.set_durability(redb::Durability::Immediate)?;
        {
            let mut t = txn.open_table(GAMES)?;
            for fp in runs.merged()? {
                t.insert(fp?, ())?;
            }
        }
        txn.commit()?;
        Ok(())
    })
    .map_err(|e| e.writing(out))?;
    drop(runs);
    drop(db);
    let open_ro = || {
        redb::Builder::new()
            .set_cache_size(TABLE_CACHE_BYTES)
            .open_read_only(out)
    };
    let ro = match open_ro() {
        Ok(db) => db,
        // The file's clean-close mark was not written when the database was dropped, which
        // redb does not report: on a full file system, that is the full disk.
        Err(redb::DatabaseError::RepairAborted)
            if out
                .parent()
                .and_then(crate::store::files::free_bytes)
                .is_some_and(|free| free < 1 << 20) =>
        {
            return Err(Error::io(
                format!("closing {}", out.display()),
                std::io::Error::from_raw_os_error(libc::ENOSPC),
            ));
        }
        Err(e) => return Err(Error::db(format!("reopening {}", out.display()), e)),
    };
    Ok(Some(SortedGames { db: Arc::new(ro) }))
}

/// Inserts into `txn`'s `games` table every fingerprint of the `games` tables of `sources`
/// (books, or staging files from [`crate::store::fpset::sorted_table`]), streaming. The table is
/// created only once there is a fingerprint to keep (FORMAT §4.6).
pub(crate) fn copy_game_fingerprints(
    txn: &redb::WriteTransaction,
    sources: &[Arc<redb::ReadOnlyDatabase>],
) -> crate::store::error::Result<()> {
    use redb::{ReadableDatabase, ReadableTable, ReadableTableMetadata};
    let mut tables = Vec::new();
    for src in sources {
        let rtxn = src.begin_read()?;
        match rtxn.open_table(GAMES) {
            Ok(t) if t.len()? > 0 => tables.push(t),
            Ok(_) | Err(redb::TableError::TableDoesNotExist(_)) => {}
            Err(e) => return Err(e.into()),
        }
    }
    if !tables.is_empty() {
        let mut g = txn.open_table(GAMES)?;
        for t in &tables {
            for item in t.iter()? {
                g.insert(item?.0.value(), ())?;
            }
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use redb::{ReadableDatabase, ReadableTable};

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(32))]

        /// Whatever the capacity (spilling or not), the set answers as a plain hash set.
        #[test]
        fn set_agrees_with_a_hash_set(
            fps in proptest::collection::vec(0u128..64, 0..300),
            cap in 1usize..40,
        ) {
            let dir = tempfile::tempdir().unwrap();
            let mut set = FingerprintSet::new(dir.path(), cap);
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
                Some(games) => {
                    let t = games.into_db().begin_read().unwrap().open_table(GAMES).unwrap();
                    let keys: Vec<u128> = t.iter().unwrap().map(|r| r.unwrap().0.value()).collect();
                    prop_assert_eq!(keys, want);
                }
            }
        }
    }

    /// No false negatives, and about the false-positive rate of 16 bits per key and three
    /// probes (~1.7%), on a filter far past the minimum size.
    #[test]
    fn bloom_has_no_false_negatives_and_few_false_positives() {
        let n = 200_000u64;
        let fp = |i: u64| {
            u128::from(xxhash_rust::xxh3::xxh3_64(&i.to_le_bytes())) << 64
                | u128::from(xxhash_rust::xxh3::xxh3_64(&(i ^ 0xabcd).to_le_bytes()))
        };
        let mut b = Bloom::new(n as usize * 2);
        for i in 0..n {
            b.insert(fp(i));
        }
        assert!((0..n).all(|i| b.may_contain(fp(i))));
        let false_pos = (n..2 * n).filter(|&i| b.may_contain(fp(i))).count() as f64 / n as f64;
        assert!(false_pos < 0.03, "false positives {false_pos}");
    }

    /// Runs of several pages, merged many times (the proptests' runs fit one page): every
    /// fingerprint inserted is found, at page boundaries too, and no other; the staging files
    /// left are the runs (about log2 of the spills) and go with the set.
    #[test]
    fn many_spills_and_merges_agree_with_a_hash_set() {
        let dir = tempfile::tempdir().unwrap();
        let fp = |i: u64| {
            u128::from(xxhash_rust::xxh3::xxh3_64(&i.to_le_bytes())) << 64
                | u128::from(xxhash_rust::xxh3::xxh3_64(&(i ^ 0x5555).to_le_bytes()))
        };
        let mut set = FingerprintSet::new(dir.path(), 3_000);
        for i in 0..60_000 {
            // Every tenth is a repeat of an older one (a multiple of ten: never a repeat).
            let (k, new) = if i % 10 == 9 {
                ((i / 30) * 10, false)
            } else {
                (i, true)
            };
            assert_eq!(set.insert(fp(k)).unwrap(), new, "insert {i}");
        }
        assert!(set.spilled());
        let runs = set.runs.runs.len();
        assert!((2..=8).contains(&runs), "{runs} runs");
        let files = std::fs::read_dir(dir.path()).unwrap().count();
        assert_eq!(files, runs, "only the live runs stay on disk");
        let mut all: Vec<u128> = set.runs.runs.iter().flat_map(|r| r.index.clone()).collect();
        all.extend((0..60_000u64).filter(|i| i % 10 != 9).map(fp));
        for k in all {
            assert!(set.contains(k).unwrap());
        }
        for i in 60_000..80_000 {
            assert!(!set.contains(fp(i)).unwrap(), "{i}");
        }
        drop(set);
        assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
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

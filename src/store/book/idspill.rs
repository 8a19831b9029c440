//! The id rows of a game store being written ([`IdRows`]): (game id, number) pairs that go
//! into the id index (`game_id_index` chunks, FORMAT §15.5) in key order once every game is
//! stored, kept within a bounded
//! memory. Past the builder's share, the rows held are sorted and written as a run
//! (`<prefix>.ids-<n>`, 12 bytes a row); the runs and the rows still held are merged when the
//! rows are inserted. Before, every row was held to the end: 16 bytes a game, 128 MB at 8M
//! games and 512 MB at 32M, whatever `--memory` said.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::fs::File;
use std::io::{BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};

use crate::store::error::{Error, Result};

/// Bytes of a row in a run: the id (u64) and the number (u32), little-endian.
const ROW_BYTES: usize = 12;
/// The fewest rows held before a run is written, whatever the share.
const MIN_ROWS: usize = 4096;
/// Read buffer of each run while the runs are merged.
const READ_BUFFER: usize = 16 << 10;

/// A game store's id rows, sorted on the way out.
pub(crate) struct IdRows {
    prefix: PathBuf,
    mem: Vec<(u64, u32)>,
    limit: usize,
    runs: Vec<PathBuf>,
    /// Rows in each run (a run that ends early is an error, not a shorter store).
    counts: Vec<usize>,
}

impl IdRows {
    /// Rows held up to `budget` bytes; runs named after `prefix`.
    pub(crate) fn new(prefix: &Path, budget: usize) -> IdRows {
        IdRows {
            prefix: prefix.to_path_buf(),
            mem: Vec::new(),
            limit: (budget / std::mem::size_of::<(u64, u32)>()).max(MIN_ROWS),
            runs: Vec::new(),
            counts: Vec::new(),
        }
    }

    /// Adds a row.
    pub(crate) fn push(&mut self, id: u64, number: u32) -> Result<()> {
        if self.mem.len() >= self.limit {
            self.spill()?;
        }
        if self.mem.capacity() == 0 {
            self.mem.reserve_exact(self.limit);
        }
        self.mem.push((id, number));
        Ok(())
    }

    /// Runs written so far (for tests).
    #[cfg(test)]
    fn runs(&self) -> usize {
        self.runs.len()
    }

    fn spill(&mut self) -> Result<()> {
        let path = PathBuf::from(format!("{}.ids-{}", self.prefix.display(), self.runs.len()));
        // Listed at once, so that a failure below still removes it.
        self.runs.push(path.clone());
        let io = |e: std::io::Error| Error::io(format!("writing {}", path.display()), e);
        self.mem.sort_unstable();
        let mut w = BufWriter::with_capacity(1 << 16, File::create(&path).map_err(io)?);
        for &(id, n) in &self.mem {
            w.write_all(&id.to_le_bytes()).map_err(io)?;
            w.write_all(&n.to_le_bytes()).map_err(io)?;
        }
        w.flush().map_err(io)?;
        self.counts.push(self.mem.len());
        self.mem.clear();
        Ok(())
    }

    /// Every row added, in (id, number) order.
    pub(crate) fn sorted(&mut self) -> Result<SortedRows> {
        self.mem.sort_unstable();
        let mut m = SortedRows {
            readers: Vec::with_capacity(self.runs.len()),
            paths: self.runs.clone(),
            left: self.counts.clone(),
            heap: BinaryHeap::new(),
            mem: std::mem::take(&mut self.mem).into_iter(),
        };
        for (i, p) in self.runs.iter().enumerate() {
            let f = File::open(p).map_err(|e| Error::io(format!("reading {}", p.display()), e))?;
            m.readers.push(BufReader::with_capacity(READ_BUFFER, f));
            if let Some(row) = m.read(i)? {
                m.heap.push(Reverse((row, i)));
            }
        }
        let n = m.readers.len();
        if let Some(row) = m.mem.next() {
            m.heap.push(Reverse((row, n)));
        }
        Ok(m)
    }
}

impl Drop for IdRows {
    fn drop(&mut self) {
        for r in &self.runs {
            let _ = std::fs::remove_file(r);
        }
    }
}

/// The runs and the rows held, merged ([`IdRows::sorted`]).
pub(crate) struct SortedRows {
    readers: Vec<BufReader<File>>,
    paths: Vec<PathBuf>,
    /// Rows each run has still to give.
    left: Vec<usize>,
    /// The next row of each source: a run's index, or `readers.len()` for the rows held.
    heap: BinaryHeap<Reverse<((u64, u32), usize)>>,
    mem: std::vec::IntoIter<(u64, u32)>,
}

impl SortedRows {
    fn read(&mut self, i: usize) -> Result<Option<(u64, u32)>> {
        if self.left[i] == 0 {
            return Ok(None);
        }
        let mut b = [0u8; ROW_BYTES];
        self.readers[i]
            .read_exact(&mut b)
            .map_err(|e| Error::io(format!("reading {}", self.paths[i].display()), e))?;
        self.left[i] -= 1;
        let mut id = [0u8; 8];
        id.copy_from_slice(&b[..8]);
        let n = u32::from_le_bytes([b[8], b[9], b[10], b[11]]);
        Ok(Some((u64::from_le_bytes(id), n)))
    }
}

impl Iterator for SortedRows {
    type Item = Result<(u64, u32)>;

    fn next(&mut self) -> Option<Result<(u64, u32)>> {
        let Reverse((row, i)) = self.heap.pop()?;
        let next = if i == self.readers.len() {
            Ok(self.mem.next())
        } else {
            self.read(i)
        };
        match next {
            Ok(Some(n)) => self.heap.push(Reverse((n, i))),
            Ok(None) => {}
            Err(e) => return Some(Err(e)),
        }
        Some(Ok(row))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        /// Whatever the share (runs or none), the rows come back sorted, each once, and the
        /// runs are removed with the builder.
        #[test]
        fn rows_come_back_sorted(ids in proptest::collection::vec(any::<u64>(), 0..20_000), budget in 0usize..200_000) {
            let dir = tempfile::tempdir().unwrap();
            let prefix = dir.path().join("book.tmp");
            let mut rows = IdRows::new(&prefix, budget);
            let mut want = Vec::new();
            for (n, &id) in ids.iter().enumerate() {
                rows.push(id, n as u32).unwrap();
                want.push((id, n as u32));
            }
            want.sort_unstable();
            let spilled = rows.runs();
            prop_assert_eq!(spilled, ids.len().saturating_sub(1) / rows.limit);
            let got: Vec<(u64, u32)> = rows.sorted().unwrap().map(Result::unwrap).collect();
            prop_assert_eq!(got, want);
            drop(rows);
            prop_assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
        }
    }

    #[test]
    fn a_damaged_run_is_an_error() {
        let dir = tempfile::tempdir().unwrap();
        let prefix = dir.path().join("book.tmp");
        let mut rows = IdRows::new(&prefix, 0);
        for n in 0..(MIN_ROWS as u32 * 2 + 5) {
            rows.push(u64::from(n).wrapping_mul(0x9E37_79B9_7F4A_7C15), n)
                .unwrap();
        }
        assert_eq!(rows.runs(), 2);
        // A run cut in the middle of a row.
        let run = dir.path().join("book.tmp.ids-1");
        let len = std::fs::metadata(&run).unwrap().len();
        std::fs::OpenOptions::new()
            .write(true)
            .open(&run)
            .unwrap()
            .set_len(len - 5)
            .unwrap();
        let got: Vec<Result<(u64, u32)>> = rows.sorted().unwrap().collect();
        let e = got
            .iter()
            .find_map(|r| r.as_ref().err())
            .expect("the cut run is an error");
        assert!(e.to_string().contains("ids-1"), "{e}");
    }
}

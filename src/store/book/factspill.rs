//! The fact chunks a [`super::refs::RefBuilder`] has derived, kept in order within a bounded
//! memory: past [`MEMORY_BYTES`] they are appended to a spill file beside the builder's runs
//! and read back in order when the file is written or checked. A book of 32M games has ~190 MB
//! of facts (9 bytes a game: `FACT_BYTES`), which a rewrite or a `verify` held whole before.

use std::fs::File;
use std::io::{BufReader, BufWriter, Read, Write};
use std::path::PathBuf;

use crate::store::error::{Error, Result};

/// Chunk bytes held in memory before they go to the spill file.
const MEMORY_BYTES: usize = 1 << 20;
/// Largest chunk a spill file frame may claim (a chunk is ~4 KiB).
const MAX_CHUNK: u32 = 1 << 24;

/// Fact chunks in number order: `(first game number, encoded chunk)`.
pub(crate) struct FactChunks {
    /// The spill file (`<prefix>.facts`), once used.
    path: PathBuf,
    file: Option<BufWriter<File>>,
    mem: Vec<(u32, Vec<u8>)>,
    mem_bytes: usize,
}

impl FactChunks {
    /// Chunks spilled to `<prefix>.facts` once they pass the memory share.
    pub(crate) fn new(prefix: &std::path::Path) -> FactChunks {
        FactChunks {
            path: PathBuf::from(format!("{}.facts", prefix.display())),
            file: None,
            mem: Vec::new(),
            mem_bytes: 0,
        }
    }

    fn io(&self, e: std::io::Error) -> Error {
        Error::io(format!("spilling game facts to {}", self.path.display()), e)
    }

    /// Adds the next chunk (in number order).
    pub(crate) fn push(&mut self, first: u32, chunk: Vec<u8>) -> Result<()> {
        self.mem_bytes += chunk.len();
        self.mem.push((first, chunk));
        if self.mem_bytes >= MEMORY_BYTES {
            self.spill()?;
        }
        Ok(())
    }

    fn spill(&mut self) -> Result<()> {
        if self.file.is_none() {
            let f = File::create(&self.path).map_err(|e| self.io(e))?;
            self.file = Some(BufWriter::with_capacity(1 << 16, f));
        }
        let mem = std::mem::take(&mut self.mem);
        self.mem_bytes = 0;
        let Some(w) = self.file.as_mut() else {
            return Ok(());
        };
        let mut r = Ok(());
        for (first, chunk) in &mem {
            r = r
                .and_then(|()| w.write_all(&first.to_le_bytes()))
                .and_then(|()| w.write_all(&(chunk.len() as u32).to_le_bytes()))
                .and_then(|()| w.write_all(chunk));
        }
        r.map_err(|e| self.io(e))
    }

    /// Every chunk added, in order: the spilled ones read back, then the ones in memory.
    pub(crate) fn drain(&mut self) -> Result<impl Iterator<Item = Result<(u32, Vec<u8>)>> + '_> {
        let spilled = match self.file.take() {
            Some(w) => {
                // Flushed, not synced: a temporary file read back by this process, deleted
                // after (a crash loses it with the book being written).
                drop(w.into_inner().map_err(|e| self.io(e.into_error()))?);
                let f = File::open(&self.path).map_err(|e| self.io(e))?;
                Some(BufReader::with_capacity(1 << 16, f))
            }
            None => None,
        };
        let path = self.path.clone();
        let mut from_file = spilled.map(|r| SpillReader { r, path });
        let mem = std::mem::take(&mut self.mem);
        self.mem_bytes = 0;
        Ok(std::iter::from_fn(move || from_file.as_mut()?.next())
            .fuse()
            .chain(mem.into_iter().map(Ok)))
    }
}

impl Drop for FactChunks {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

/// Reads a spill file's frames back.
struct SpillReader {
    r: BufReader<File>,
    path: PathBuf,
}

impl SpillReader {
    fn next(&mut self) -> Option<Result<(u32, Vec<u8>)>> {
        let mut head = [0u8; 8];
        let r = match self.r.read_exact(&mut head[..4]) {
            Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => return None,
            r => r.and_then(|()| self.r.read_exact(&mut head[4..])),
        }
        .map_err(|e| Error::io(format!("reading {}", self.path.display()), e))
        .and_then(|()| {
            let first = u32::from_le_bytes([head[0], head[1], head[2], head[3]]);
            let len = u32::from_le_bytes([head[4], head[5], head[6], head[7]]);
            if len > MAX_CHUNK {
                return Err(Error::Internal(format!(
                    "{}: a fact chunk of {len} bytes",
                    self.path.display()
                )));
            }
            let mut chunk = vec![0u8; len as usize];
            self.r
                .read_exact(&mut chunk)
                .map_err(|e| Error::io(format!("reading {}", self.path.display()), e))?;
            Ok((first, chunk))
        });
        Some(r)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Chunks come back in the order added, whether they stayed in memory or were spilled, and
    /// the spill file is removed with the value.
    #[test]
    fn chunks_come_back_in_order_across_the_spill() {
        let dir = tempfile::tempdir().unwrap();
        let prefix = dir.path().join("x");
        for n in [0usize, 3, 700, 2_000] {
            let mut c = FactChunks::new(&prefix);
            let want: Vec<(u32, Vec<u8>)> = (0..n)
                .map(|i| (i as u32 * 683, vec![i as u8; 1 + (i * 37) % 4096]))
                .collect();
            for (f, b) in &want {
                c.push(*f, b.clone()).unwrap();
            }
            let spilled = dir.path().join("x.facts").exists();
            assert_eq!(spilled, n >= 700, "{n} chunks");
            let got: Vec<(u32, Vec<u8>)> = c.drain().unwrap().collect::<Result<_>>().unwrap();
            assert_eq!(got, want, "{n} chunks");
            drop(c);
            assert!(!dir.path().join("x.facts").exists());
        }
    }
}

//! The shapes of the entries a writer pushes (each entry's key and move codes), logged beside
//! its file as they come, with the first key of each block it seals: what its reference
//! chunks are aligned with (docs/FORMAT.md §15.4), read back without decoding a block.
//!
//! The log (`<tmp>.shapes`, removed when the writer ends) is a zstd stream of, per entry in
//! push order: the key's difference from the previous entry's (varint; the first entry's key
//! itself), the move count (varint) and the move codes (u16 LE each), in the order the block
//! stores them. Blocks partition the pushed entries in order and no key spans two blocks, so a
//! block's entries are those from its first key up to the next block's.

use std::fs::File;
use std::io::{BufReader, BufWriter, Read, Write};
use std::path::PathBuf;

use crate::store::error::{Error, Result};
use crate::store::varint;

/// An entry's key and its move codes, in the entry's order.
pub(crate) type Shape = (u64, Vec<u16>);

/// An entry block's key and its entries' shapes, in the block's order.
pub(crate) struct BlockShape {
    pub(crate) key: u64,
    pub(crate) entries: Vec<Shape>,
}

/// Entry shapes logged while a writer takes its entries.
pub(crate) struct ShapeLog {
    path: PathBuf,
    out: Option<zstd::Encoder<'static, BufWriter<File>>>,
    buf: Vec<u8>,
    prev: u64,
    block_keys: Vec<u64>,
}

fn io_err(path: &std::path::Path) -> impl Fn(std::io::Error) -> Error + '_ {
    move |e| Error::io(format!("writing {}", path.display()), e)
}

impl ShapeLog {
    pub(crate) fn create(path: PathBuf) -> Result<ShapeLog> {
        let file = File::create(&path).map_err(io_err(&path))?;
        let out = zstd::Encoder::new(BufWriter::with_capacity(1 << 16, file), 1)
            .map_err(io_err(&path))?;
        Ok(ShapeLog {
            path,
            out: Some(out),
            buf: Vec::with_capacity(1 << 16),
            prev: 0,
            block_keys: Vec::new(),
        })
    }

    /// Logs the next entry pushed: its key and its move codes.
    pub(crate) fn push(&mut self, key: u64, codes: &[u16]) -> Result<()> {
        varint::put(&mut self.buf, key.wrapping_sub(self.prev));
        self.prev = key;
        varint::put(&mut self.buf, codes.len() as u64);
        for c in codes {
            self.buf.extend_from_slice(&c.to_le_bytes());
        }
        if self.buf.len() >= 1 << 16 {
            self.flush_buf()?;
        }
        Ok(())
    }

    /// Records the first key of the next block sealed (blocks in order).
    pub(crate) fn block(&mut self, first_key: u64) {
        self.block_keys.push(first_key);
    }

    fn flush_buf(&mut self) -> Result<()> {
        let e = io_err(&self.path);
        if let Some(out) = self.out.as_mut() {
            out.write_all(&self.buf).map_err(e)?;
        }
        self.buf.clear();
        Ok(())
    }

    /// Ends the log and opens it for reading, block by block.
    pub(crate) fn finish(mut self) -> Result<LoggedShapes> {
        self.flush_buf()?;
        if let Some(out) = self.out.take() {
            out.finish()
                .and_then(|mut w| w.flush())
                .map_err(io_err(&self.path))?;
        }
        let path = std::mem::take(&mut self.path);
        let read = |e: std::io::Error| Error::io(format!("reading {}", path.display()), e);
        let file = File::open(&path).map_err(read)?;
        let dec = zstd::Decoder::new(file).map_err(read)?;
        Ok(LoggedShapes {
            reader: BufReader::with_capacity(1 << 16, dec),
            block_keys: std::mem::take(&mut self.block_keys),
            at: 0,
            prev: 0,
            peeked: None,
            path,
        })
    }
}

impl Drop for ShapeLog {
    fn drop(&mut self) {
        if !self.path.as_os_str().is_empty() {
            let _ = std::fs::remove_file(&self.path);
        }
    }
}

/// A finished log read back as the blocks' shapes, in key order.
pub(crate) struct LoggedShapes {
    path: PathBuf,
    reader: BufReader<zstd::Decoder<'static, BufReader<File>>>,
    block_keys: Vec<u64>,
    at: usize,
    prev: u64,
    peeked: Option<Shape>,
}

impl LoggedShapes {
    fn varint(&mut self) -> Result<Option<u64>> {
        let mut v = 0u64;
        for shift in (0..64).step_by(7) {
            let mut b = [0u8; 1];
            match self.reader.read_exact(&mut b) {
                Ok(()) => {}
                Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof && shift == 0 => {
                    return Ok(None);
                }
                Err(e) => return Err(Error::io(format!("reading {}", self.path.display()), e)),
            }
            v |= u64::from(b[0] & 0x7f) << shift;
            if b[0] & 0x80 == 0 {
                return Ok(Some(v));
            }
        }
        Err(self.broken("a varint past 64 bits"))
    }

    fn broken(&self, what: &str) -> Error {
        Error::Internal(format!("the shape log {}: {what}", self.path.display()))
    }

    fn peek(&mut self) -> Result<Option<&Shape>> {
        if self.peeked.is_none() {
            let Some(delta) = self.varint()? else {
                return Ok(None);
            };
            let key = self.prev.wrapping_add(delta);
            self.prev = key;
            let n = self
                .varint()?
                .ok_or_else(|| self.broken("cut in an entry"))?;
            let mut codes = Vec::with_capacity(n.min(256) as usize);
            for _ in 0..n {
                let mut c = [0u8; 2];
                self.reader
                    .read_exact(&mut c)
                    .map_err(|e| Error::io(format!("reading {}", self.path.display()), e))?;
                codes.push(u16::from_le_bytes(c));
            }
            self.peeked = Some((key, codes));
        }
        Ok(self.peeked.as_ref())
    }

    /// The next block's shape: its first key and its entries; `None` after the last block.
    pub(crate) fn next_block(&mut self) -> Result<Option<BlockShape>> {
        let Some(&first) = self.block_keys.get(self.at) else {
            if self.peek()?.is_some() {
                return Err(self.broken("entries past the last block"));
            }
            return Ok(None);
        };
        let next_first = self.block_keys.get(self.at + 1).copied();
        self.at += 1;
        let mut entries = Vec::new();
        loop {
            let key = match self.peek()? {
                None => break,
                Some((k, _)) => *k,
            };
            if entries.is_empty() && key != first {
                return Err(self.broken(&format!(
                    "the block {first:016x} begins with the entry {key:016x}"
                )));
            }
            if !entries.is_empty() && Some(key) == next_first {
                break;
            }
            entries.extend(self.peeked.take());
        }
        if entries.is_empty() {
            return Err(self.broken(&format!("no entries for the block {first:016x}")));
        }
        Ok(Some(BlockShape {
            key: first,
            entries,
        }))
    }
}

impl Drop for LoggedShapes {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn blocks_come_back_with_the_entries_logged_between_their_first_keys() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("x.shapes");
        let mut log = ShapeLog::create(path.clone()).unwrap();
        let entries: Vec<(u64, Vec<u16>)> = vec![
            (5, vec![1, 2]),
            (9, vec![3]),
            (9, vec![4, 5, 6]),
            (u64::MAX - 1, vec![]),
            (u64::MAX, vec![7]),
        ];
        for (k, c) in &entries {
            log.push(*k, c).unwrap();
        }
        log.block(5);
        log.block(u64::MAX - 1);
        let mut shapes = log.finish().unwrap();
        let a = shapes.next_block().unwrap().unwrap();
        assert_eq!((a.key, a.entries), (5, entries[..3].to_vec()));
        let b = shapes.next_block().unwrap().unwrap();
        assert_eq!((b.key, b.entries), (u64::MAX - 1, entries[3..].to_vec()));
        assert!(shapes.next_block().unwrap().is_none());
        drop(shapes);
        assert!(!path.exists(), "the log is removed");
        // Out of step with the blocks: an error, not a guess.
        let mut log = ShapeLog::create(path.clone()).unwrap();
        log.push(5, &[1]).unwrap();
        log.block(4);
        assert!(log.finish().unwrap().next_block().is_err());
    }
}

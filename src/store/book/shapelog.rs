//! The shapes of the entries a writer pushes (each entry's key and move codes, or the
//! references it carries), logged beside its file as they come, with the first key of each
//! block it seals: what its reference chunks are aligned with (docs/FORMAT.md §15.4), read
//! back without decoding a block.
//!
//! The log (`<tmp>.shapes`, removed when the writer ends) is a zstd stream of, per entry in
//! push order: the key's difference from the previous entry's (varint; the first entry's key
//! itself), the move count (varint), then per move in the order the block stores them either
//! its code (u16 LE; [`LogKind::Codes`]) or its game numbers ([`LogKind::Lists`]: a varint
//! count, then each number as a varint). Blocks partition the pushed entries in order and no
//! key spans two blocks, so a block's entries are those from its first key up to the next
//! block's. A log is temporary: its layout is not part of the book format.

use std::fs::File;
use std::io::{BufReader, BufWriter, Read, Write};
use std::path::PathBuf;

use crate::store::error::{Error, Result};
use crate::store::refblock::EntryRefs;
use crate::store::varint;

/// An entry's key and its move codes, in the entry's order.
pub(crate) type Shape = (u64, Vec<u16>);

/// An entry block's key and its entries' shapes, in the block's order.
pub(crate) struct BlockShape {
    pub(crate) key: u64,
    pub(crate) entries: Vec<Shape>,
}

/// What a log keeps of each entry's moves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum LogKind {
    /// The move codes: the references, built from the games, are zipped on at the end.
    Codes,
    /// The references themselves, carried with the entries from the file they come from
    /// (a store carried alone: `reftap`).
    Lists,
}

/// What the log holds of one entry's moves.
enum Logged {
    Codes(Vec<u16>),
    Lists(EntryRefs),
}

/// A block's first key and its entries as logged (key, moves).
type LoggedBlock = (u64, Vec<(u64, Logged)>);

/// Entry shapes logged while a writer takes its entries.
pub(crate) struct ShapeLog {
    kind: LogKind,
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
    pub(crate) fn create(path: PathBuf, kind: LogKind) -> Result<ShapeLog> {
        let file = File::create(&path).map_err(io_err(&path))?;
        let out = zstd::Encoder::new(BufWriter::with_capacity(1 << 16, file), 1)
            .map_err(io_err(&path))?;
        Ok(ShapeLog {
            kind,
            path,
            out: Some(out),
            buf: Vec::with_capacity(1 << 16),
            prev: 0,
            block_keys: Vec::new(),
        })
    }

    /// Logs the next entry pushed: its key and its move codes (a [`LogKind::Codes`] log).
    pub(crate) fn push(&mut self, key: u64, codes: &[u16]) -> Result<()> {
        self.expect(LogKind::Codes)?;
        self.put_head(key, codes.len());
        for c in codes {
            self.buf.extend_from_slice(&c.to_le_bytes());
        }
        self.maybe_flush()
    }

    /// Logs the next entry pushed: its key and each move's game numbers, in the entry's move
    /// order (a [`LogKind::Lists`] log).
    pub(crate) fn push_lists(&mut self, key: u64, lists: &EntryRefs) -> Result<()> {
        self.expect(LogKind::Lists)?;
        self.put_head(key, lists.len());
        for l in lists {
            varint::put(&mut self.buf, l.len() as u64);
            for n in l {
                varint::put(&mut self.buf, u64::from(*n));
            }
        }
        self.maybe_flush()
    }

    fn expect(&self, kind: LogKind) -> Result<()> {
        match self.kind == kind {
            true => Ok(()),
            false => Err(Error::Internal(format!(
                "the shape log {} keeps {:?}, not {kind:?}",
                self.path.display(),
                self.kind
            ))),
        }
    }

    fn put_head(&mut self, key: u64, moves: usize) {
        varint::put(&mut self.buf, key.wrapping_sub(self.prev));
        self.prev = key;
        varint::put(&mut self.buf, moves as u64);
    }

    fn maybe_flush(&mut self) -> Result<()> {
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
            kind: self.kind,
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
    kind: LogKind,
    path: PathBuf,
    reader: BufReader<zstd::Decoder<'static, BufReader<File>>>,
    block_keys: Vec<u64>,
    at: usize,
    prev: u64,
    peeked: Option<(u64, Logged)>,
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

    fn read_u16(&mut self) -> Result<u16> {
        let mut c = [0u8; 2];
        self.reader
            .read_exact(&mut c)
            .map_err(|e| Error::io(format!("reading {}", self.path.display()), e))?;
        Ok(u16::from_le_bytes(c))
    }

    fn must_varint(&mut self) -> Result<u64> {
        self.varint()?.ok_or_else(|| self.broken("cut in an entry"))
    }

    fn peek_key(&mut self) -> Result<Option<u64>> {
        if self.peeked.is_none() {
            let Some(delta) = self.varint()? else {
                return Ok(None);
            };
            let key = self.prev.wrapping_add(delta);
            self.prev = key;
            let n = self.must_varint()?;
            let logged = match self.kind {
                LogKind::Codes => {
                    let mut codes = Vec::with_capacity(n.min(256) as usize);
                    for _ in 0..n {
                        codes.push(self.read_u16()?);
                    }
                    Logged::Codes(codes)
                }
                LogKind::Lists => {
                    let mut lists = Vec::with_capacity(n.min(256) as usize);
                    for _ in 0..n {
                        let len = self.must_varint()?;
                        let mut l = Vec::with_capacity(len.min(1 << 16) as usize);
                        for _ in 0..len {
                            let v = self.must_varint()?;
                            l.push(
                                u32::try_from(v)
                                    .map_err(|_| self.broken("a game number past 32 bits"))?,
                            );
                        }
                        lists.push(l);
                    }
                    Logged::Lists(lists)
                }
            };
            self.peeked = Some((key, logged));
        }
        Ok(self.peeked.as_ref().map(|p| p.0))
    }

    /// The next block's first key and its entries as logged; `None` after the last block.
    fn next_entries(&mut self) -> Result<Option<LoggedBlock>> {
        let Some(&first) = self.block_keys.get(self.at) else {
            if self.peek_key()?.is_some() {
                return Err(self.broken("entries past the last block"));
            }
            return Ok(None);
        };
        let next_first = self.block_keys.get(self.at + 1).copied();
        self.at += 1;
        let mut entries = Vec::new();
        while let Some(key) = self.peek_key()? {
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
        Ok(Some((first, entries)))
    }

    /// The next block's shape: its first key and its entries; `None` after the last block
    /// (a [`LogKind::Codes`] log).
    pub(crate) fn next_block(&mut self) -> Result<Option<BlockShape>> {
        let Some((key, logged)) = self.next_entries()? else {
            return Ok(None);
        };
        let mut entries = Vec::with_capacity(logged.len());
        for (k, l) in logged {
            match l {
                Logged::Codes(codes) => entries.push((k, codes)),
                Logged::Lists(_) => return Err(self.broken("references where codes were asked")),
            }
        }
        Ok(Some(BlockShape { key, entries }))
    }

    /// The next block's first key and its entries' references, in block order; `None` after
    /// the last block (a [`LogKind::Lists`] log).
    pub(crate) fn next_lists(&mut self) -> Result<Option<(u64, Vec<EntryRefs>)>> {
        let Some((key, logged)) = self.next_entries()? else {
            return Ok(None);
        };
        let mut entries = Vec::with_capacity(logged.len());
        for (_, l) in logged {
            match l {
                Logged::Lists(lists) => entries.push(lists),
                Logged::Codes(_) => return Err(self.broken("codes where references were asked")),
            }
        }
        Ok(Some((key, entries)))
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
        let mut log = ShapeLog::create(path.clone(), LogKind::Codes).unwrap();
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
        let mut log = ShapeLog::create(path.clone(), LogKind::Codes).unwrap();
        log.push(5, &[1]).unwrap();
        log.block(4);
        assert!(log.finish().unwrap().next_block().is_err());
    }

    #[test]
    fn a_log_of_references_comes_back_by_block_and_refuses_to_be_read_as_codes() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("y.shapes");
        let mut log = ShapeLog::create(path.clone(), LogKind::Lists).unwrap();
        assert!(log.push(1, &[3]).is_err(), "codes in a log of references");
        let a: EntryRefs = vec![vec![], vec![0, 7, u32::MAX]];
        let b: EntryRefs = vec![vec![2]];
        let c: EntryRefs = vec![vec![], vec![]];
        log.push_lists(3, &a).unwrap();
        log.push_lists(3, &b).unwrap();
        log.push_lists(40, &c).unwrap();
        log.block(3);
        log.block(40);
        let mut lists = log.finish().unwrap();
        assert_eq!(lists.next_lists().unwrap(), Some((3, vec![a, b])));
        assert!(lists.next_block().is_err(), "read as codes");
        let mut log = ShapeLog::create(path.clone(), LogKind::Lists).unwrap();
        log.push_lists(40, &c).unwrap();
        log.block(40);
        let mut lists = log.finish().unwrap();
        assert_eq!(lists.next_lists().unwrap(), Some((40, vec![c])));
        assert_eq!(lists.next_lists().unwrap(), None);
    }
}

//! Sorted runs: the import pipeline's spill files (docs/FORMAT.md §8). A run is a zstd stream
//! (with zstd's content checksum) of: magic `BDBRUN01`, frames `len:u32 LE, entry` in strictly
//! increasing (key, position) order, an end frame `len = 0`, the entry count (u64 LE) and a
//! crc32 of all frame bytes (u32 LE). A run only counts once it has been fsynced and renamed
//! from `*.tmp` to its final name.

use std::fs::File;
use std::io::{BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};

use super::entry::Entry;
use super::record;
use crate::store::error::{Error, Result};

const MAGIC: &[u8; 8] = b"BDBRUN01";
/// Largest frame a reader accepts.
const MAX_FRAME: u32 = 1 << 24;

pub(crate) struct RunWriter {
    tmp: PathBuf,
    path: PathBuf,
    /// Buffered in front of the encoder: zstd's streaming call costs the same for 4 bytes as
    /// for 256 KiB.
    enc: BufWriter<zstd::stream::write::Encoder<'static, BufWriter<File>>>,
    crc: crc32fast::Hasher,
    count: u64,
    buf: Vec<u8>,
    last: LastKey,
}

/// The (key, position) of the previous entry, to check the order, in buffers reused from one
/// entry to the next.
#[derive(Default)]
struct LastKey {
    set: bool,
    key: u64,
    has_pos: bool,
    pos: Vec<u8>,
}

impl LastKey {
    /// True if `e` sorts strictly after the previous entry; then it becomes the previous one.
    fn advance(&mut self, e: &Entry) -> bool {
        if self.set
            && (self.key, self.has_pos.then_some(self.pos.as_slice())) >= (e.key, e.pos.as_deref())
        {
            return false;
        }
        self.set = true;
        self.key = e.key;
        self.has_pos = e.pos.is_some();
        self.pos.clear();
        self.pos
            .extend_from_slice(e.pos.as_deref().unwrap_or_default());
        true
    }
}

/// zstd level of run files: -1 (zstd's fastest strategy with a small acceleration). On the
/// 135k-game benchmark, against level 1: read phase 1.29 -> 1.25 s (medians of 4), staging
/// 54.8 -> 57.6 MB; level -5 was no faster and 61.2 MB.
const RUN_LEVEL: i32 = -1;

impl RunWriter {
    pub(crate) fn create(path: &Path) -> Result<RunWriter> {
        let tmp = path.with_extension("tmp");
        // A new file of this process (never through a link), with its staging directory's
        // group and mode (another user of the book's group may resume the import).
        let f = crate::store::files::create_temp(&tmp)?;
        crate::store::files::adopt_dir_access(&f, &tmp)?;
        let mut enc =
            zstd::stream::write::Encoder::new(BufWriter::with_capacity(1 << 16, f), RUN_LEVEL)
                .map_err(|e| Error::io("starting zstd", e))?;
        enc.include_checksum(true)
            .map_err(|e| Error::io("zstd", e))?;
        let mut enc = BufWriter::with_capacity(1 << 18, enc);
        enc.write_all(MAGIC)
            .map_err(|e| Error::io(format!("writing run {}", tmp.display()), e))?;
        Ok(RunWriter {
            tmp,
            path: path.to_path_buf(),
            enc,
            crc: crc32fast::Hasher::new(),
            count: 0,
            buf: Vec::with_capacity(256),
            last: LastKey::default(),
        })
    }

    pub(crate) fn push(&mut self, e: &Entry) -> Result<()> {
        if !self.last.advance(e) {
            return Err(Error::Internal(format!(
                "run entries out of order at key {:016x}",
                e.key
            )));
        }
        self.buf.clear();
        record::encode_entry(e, &mut self.buf);
        let len = u32::try_from(self.buf.len())
            .map_err(|_| {
                Error::Internal(format!(
                    "run entry {:016x} of {} bytes is past the run format's u32 length",
                    e.key,
                    self.buf.len()
                ))
            })?
            .to_le_bytes();
        self.crc.update(&len);
        self.crc.update(&self.buf);
        let tmp = &self.tmp;
        let ctx = |e| Error::io(format!("writing run {}", tmp.display()), e);
        self.enc.write_all(&len).map_err(ctx)?;
        self.enc.write_all(&self.buf).map_err(ctx)?;
        self.count += 1;
        Ok(())
    }

    /// Ends the run durably and moves it to its final name. Returns the entry count.
    pub(crate) fn finish(mut self) -> Result<u64> {
        let tmp = self.tmp.clone();
        let ctx = |e| Error::io(format!("finishing run {}", tmp.display()), e);
        self.enc.write_all(&0u32.to_le_bytes()).map_err(ctx)?;
        self.enc.write_all(&self.count.to_le_bytes()).map_err(ctx)?;
        let crc = self.crc.clone().finalize();
        self.enc.write_all(&crc.to_le_bytes()).map_err(ctx)?;
        let enc = self.enc.into_inner().map_err(|e| ctx(e.into_error()))?;
        let w = enc.finish().map_err(ctx)?;
        let f = w.into_inner().map_err(|e| ctx(e.into_error()))?;
        f.sync_all().map_err(ctx)?;
        std::fs::rename(&self.tmp, &self.path).map_err(ctx)?;
        Ok(self.count)
    }
}

/// Reads a run back, checking order, count and checksums.
pub(crate) struct RunReader {
    name: String,
    /// Buffered after the decoder, so each small read is a copy, not a zstd call.
    dec: BufReader<zstd::stream::read::Decoder<'static, BufReader<File>>>,
    crc: crc32fast::Hasher,
    count: u64,
    buf: Vec<u8>,
    done: bool,
    last: LastKey,
}

impl RunReader {
    #[doc(hidden)]
    pub fn open(path: &Path) -> Result<RunReader> {
        let name = path.display().to_string();
        let f = File::open(path).map_err(|e| Error::io(format!("opening run {name}"), e))?;
        let dec =
            zstd::stream::read::Decoder::new(f).map_err(|e| Error::io(format!("run {name}"), e))?;
        let mut dec = BufReader::with_capacity(1 << 18, dec);
        let mut magic = [0u8; 8];
        dec.read_exact(&mut magic)
            .map_err(|e| Error::io(format!("run {name}: reading header"), e))?;
        if &magic != MAGIC {
            return Err(Error::Damaged(format!("run {name}: not a bookdb run file")));
        }
        Ok(RunReader {
            name,
            dec,
            crc: crc32fast::Hasher::new(),
            count: 0,
            buf: Vec::new(),
            done: false,
            last: LastKey::default(),
        })
    }

    fn damaged(&self, what: impl std::fmt::Display) -> Error {
        Error::Damaged(format!("run {} is damaged: {what}", self.name))
    }

    fn next_entry(&mut self) -> Result<Option<Entry>> {
        let mut len = [0u8; 4];
        self.dec.read_exact(&mut len).map_err(|e| self.damaged(e))?;
        let n = u32::from_le_bytes(len);
        if n == 0 {
            let mut tail = [0u8; 12];
            self.dec
                .read_exact(&mut tail)
                .map_err(|e| self.damaged(e))?;
            let count = u64::from_le_bytes(tail[..8].try_into().unwrap_or_default());
            let crc = u32::from_le_bytes(tail[8..].try_into().unwrap_or_default());
            if count != self.count || crc != self.crc.clone().finalize() {
                return Err(self.damaged("count or checksum mismatch"));
            }
            // zstd verifies its own content checksum when the frame ends.
            let mut rest = Vec::new();
            self.dec
                .read_to_end(&mut rest)
                .map_err(|e| self.damaged(e))?;
            if !rest.is_empty() {
                return Err(self.damaged("bytes after the end frame"));
            }
            return Ok(None);
        }
        if n > MAX_FRAME {
            return Err(self.damaged(format!("frame of {n} bytes")));
        }
        self.buf.resize(n as usize, 0);
        self.dec
            .read_exact(&mut self.buf)
            .map_err(|e| self.damaged(e))?;
        self.crc.update(&len);
        self.crc.update(&self.buf);
        let mut pos = 0;
        let e = record::decode_entry(&self.buf, &mut pos)
            .filter(|_| pos == self.buf.len())
            .ok_or_else(|| self.damaged("undecodable entry"))?;
        if !self.last.advance(&e) {
            return Err(self.damaged("entries out of order"));
        }
        self.count += 1;
        Ok(Some(e))
    }
}

impl Iterator for RunReader {
    type Item = Result<Entry>;
    fn next(&mut self) -> Option<Result<Entry>> {
        if self.done {
            return None;
        }
        match self.next_entry() {
            Ok(Some(e)) => Some(Ok(e)),
            Ok(None) => {
                self.done = true;
                None
            }
            Err(e) => {
                self.done = true;
                Some(Err(e))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::MoveRec;

    fn entry(key: u64) -> Entry {
        Entry {
            coded: None,
            key,
            pos: Some(vec![1, 2, key as u8 | 1]),
            moves: vec![MoveRec {
                mv: 7,
                white: key,
                ..Default::default()
            }],
        }
    }

    #[test]
    fn run_round_trip_and_damage() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r.run");
        let mut w = RunWriter::create(&path).unwrap();
        for k in [1u64, 5, 9, 1 << 40] {
            w.push(&entry(k)).unwrap();
        }
        assert!(w.push(&entry(2)).is_err());
        assert_eq!(w.finish().unwrap(), 4);
        let got: Vec<Entry> = RunReader::open(&path)
            .unwrap()
            .map(Result::unwrap)
            .collect();
        assert_eq!(got, vec![entry(1), entry(5), entry(9), entry(1 << 40)]);

        let bytes = std::fs::read(&path).unwrap();
        for cut in [bytes.len() - 1, bytes.len() / 2, 10] {
            std::fs::write(&path, &bytes[..cut]).unwrap();
            let r = RunReader::open(&path).map(|r| r.collect::<Result<Vec<_>>>());
            assert!(
                matches!(r, Err(_) | Ok(Err(_))),
                "truncation at {cut} undetected"
            );
        }
        for i in (8..bytes.len()).step_by(7) {
            let mut bad = bytes.clone();
            bad[i] ^= 0x10;
            std::fs::write(&path, &bad).unwrap();
            let r = RunReader::open(&path).map(|r| r.collect::<Result<Vec<_>>>());
            assert!(matches!(r, Err(_) | Ok(Err(_))), "flip at {i} undetected");
        }
    }
}

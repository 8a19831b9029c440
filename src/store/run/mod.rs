//! Sorted runs: the import pipeline's spill files (docs/FORMAT.md §8.4). A run is magic
//! `BDBRUN02`, then frames `len:u32 LE, bytes`: first the run's position model (a byte 1 and
//! the codec's serialized model trained on the run's first entries — or, for runs sharing a
//! [`RunModels`], the first such run's — or a byte 0 alone for the identity model), then
//! blocks in the book's own block format (§5, sealed, checksummed, section A zstd-compressed,
//! moves stored as the book stores them: indices among the legal moves, or codes), each up to
//! [`BLOCK_ENTRIES`] entries in strictly increasing (key, position) order; an end frame `len = 0`, the entry count (u64 LE) and a crc32 of all
//! frame bytes (u32 LE). A run only counts once it has been fsynced and renamed from `*.tmp`
//! to its final name.
//!
//! Coding runs as the book codes its blocks keeps the staging an import needs near the size of
//! the book it makes (the per-entry stream of format 1 took ~2.5× the book; docs/PERFORMANCE.md).

use std::collections::VecDeque;
use std::fs::File;
use std::io::{BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::block::{self, CodedCells, Prepared};
use super::entry::{Entry, MergeHead};
use super::workers::Pending;
use super::{IdentityModel, PositionCodec, PositionModel};
use crate::store::error::{Error, Result};

const MAGIC: &[u8; 8] = b"BDBRUN02";
/// Largest frame a reader accepts (a block's raw section A is at most 64 MiB).
const MAX_FRAME: u32 = 80 << 20;
/// Entries per block of a run.
pub(crate) const BLOCK_ENTRIES: usize = 1024;
/// A block is also closed once its entries' estimated raw bytes reach this.
const BLOCK_BYTES: usize = 1 << 20;
/// Positions the run's model is trained on: the run's first entries (in key order, a random
/// sample of its positions).
const MODEL_SAMPLE: usize = 4_096;
/// zstd level of the blocks' section A. On the 1M-game set, level 1 against 3: see
/// docs/PERFORMANCE.md ("Staging").
const RUN_LEVEL: i32 = 1;

#[doc(hidden)]
pub struct RunWriter {
    tmp: PathBuf,
    path: PathBuf,
    out: BufWriter<File>,
    codec: Arc<dyn PositionCodec>,
    /// The run's model and the id its blocks carry (0: identity); `None` until trained.
    model: Option<(Arc<dyn PositionModel>, u16)>,
    /// The import's shared models: the run takes the shared one instead of training.
    models: Option<RunModels>,
    comp: zstd::bulk::Compressor<'static>,
    crc: crc32fast::Hasher,
    count: u64,
    /// Entries not yet in a block; the first `pending_len` are live (the rest keep their
    /// buffers for reuse).
    pending: Vec<Entry>,
    pending_len: usize,
    pending_bytes: usize,
    prepared: Vec<Prepared>,
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

/// A rough size of an entry in a block before compression, to close blocks of large entries
/// early (the start position's moves with all their cells).
fn estimate(e: &Entry) -> usize {
    24 + e.pos.as_ref().map_or(0, Vec::len)
        + e.moves
            .iter()
            .map(|m| 16 + 16 * m.cells.len())
            .sum::<usize>()
}

impl RunWriter {
    pub fn create(path: &Path, codec: Arc<dyn PositionCodec>) -> Result<RunWriter> {
        let tmp = path.with_extension("tmp");
        // A new file of this process (never through a link), with its staging directory's
        // group and mode (another user of the book's group may resume the import).
        let f = crate::store::files::create_temp(&tmp)?;
        crate::store::files::adopt_dir_access(&f, &tmp)?;
        let mut out = BufWriter::with_capacity(1 << 17, f);
        out.write_all(MAGIC)
            .map_err(|e| Error::io(format!("writing run {}", tmp.display()), e))?;
        let comp = zstd::bulk::Compressor::new(RUN_LEVEL).map_err(|e| Error::io("zstd", e))?;
        Ok(RunWriter {
            tmp,
            path: path.to_path_buf(),
            out,
            codec,
            model: None,
            models: None,
            comp,
            crc: crc32fast::Hasher::new(),
            count: 0,
            pending: Vec::new(),
            pending_len: 0,
            pending_bytes: 0,
            prepared: Vec::new(),
            last: LastKey::default(),
        })
    }

    /// A run that takes the model of `models` (the first trained by a run of them) instead
    /// of training its own.
    pub(crate) fn create_sharing(
        path: &Path,
        codec: Arc<dyn PositionCodec>,
        models: &RunModels,
    ) -> Result<RunWriter> {
        let mut w = RunWriter::create(path, codec)?;
        w.models = Some(models.clone());
        Ok(w)
    }

    pub fn push(&mut self, e: &Entry) -> Result<()> {
        if !self.last.advance(e) {
            return Err(Error::Internal(format!(
                "run entries out of order at key {:016x}",
                e.key
            )));
        }
        let indexed = e.moves.iter().filter(|m| m.indexed).count();
        if indexed > 0 && (indexed < e.moves.len() || e.pos.is_none()) {
            // Indices and codes together (the same position from runs that could and could
            // not index it): all as codes, equal moves merged.
            let resolved = e.clone().with_codes(self.codec.as_ref())?;
            return self.push_owned(resolved);
        }
        if self.pending_len < self.pending.len() {
            self.pending[self.pending_len].clone_from(e);
        } else {
            self.pending.push(e.clone());
        }
        self.pushed()
    }

    fn push_owned(&mut self, e: Entry) -> Result<()> {
        if self.pending_len < self.pending.len() {
            self.pending[self.pending_len] = e;
        } else {
            self.pending.push(e);
        }
        self.pushed()
    }

    /// Books the entry just put at `pending_len`.
    fn pushed(&mut self) -> Result<()> {
        let e = &self.pending[self.pending_len];
        let bytes = estimate(e);
        self.pending[self.pending_len].coded = None;
        self.pending_len += 1;
        self.pending_bytes += bytes;
        self.count += 1;
        match self.model {
            None if self.pending_len >= MODEL_SAMPLE || self.pending_bytes >= 16 * BLOCK_BYTES => {
                self.train()?;
                self.write_pending(false)
            }
            Some(_) if self.pending_len >= BLOCK_ENTRIES || self.pending_bytes >= BLOCK_BYTES => {
                self.write_pending(false)
            }
            _ => Ok(()),
        }
    }

    fn io(&self, e: std::io::Error) -> Error {
        Error::io(format!("writing run {}", self.tmp.display()), e)
    }

    fn frame(&mut self, bytes: &[u8]) -> Result<()> {
        let len = u32::try_from(bytes.len())
            .ok()
            .filter(|&n| n <= MAX_FRAME)
            .ok_or_else(|| {
                Error::Internal(format!(
                    "a run block of {} bytes is past the run format's limit",
                    bytes.len()
                ))
            })?
            .to_le_bytes();
        self.crc.update(&len);
        self.crc.update(bytes);
        self.out.write_all(&len).map_err(|e| self.io(e))?;
        self.out.write_all(bytes).map_err(|e| self.io(e))
    }

    /// Trains the run's model on the entries pending (its first ones) and writes it.
    fn train(&mut self) -> Result<()> {
        let samples: Vec<&[u8]> = self.pending[..self.pending_len]
            .iter()
            .filter_map(|e| e.pos.as_deref())
            .collect();
        let codec = &self.codec;
        let train = || -> Result<Vec<u8>> {
            Ok(if samples.is_empty() {
                Vec::new()
            } else {
                codec.train(&samples)?
            })
        };
        let load = |b: &[u8]| -> Result<Arc<dyn PositionModel>> { Ok(codec.load_model(b)?) };
        let (bytes, model): (Vec<u8>, Arc<dyn PositionModel>) = match &self.models {
            Some(models) => models
                .for_writer(train, load)?
                .unwrap_or_else(|| (Vec::new(), Arc::new(IdentityModel))),
            None => {
                let bytes = train()?;
                if bytes.is_empty() {
                    (bytes, Arc::new(IdentityModel))
                } else {
                    let m = load(&bytes)?;
                    (bytes, m)
                }
            }
        };
        let id = u16::from(!bytes.is_empty());
        let mut frame = Vec::with_capacity(1 + bytes.len());
        frame.push(id as u8);
        frame.extend_from_slice(&bytes);
        self.frame(&frame)?;
        self.model = Some((model, id));
        Ok(())
    }

    /// Writes the pending entries as blocks; all of them if `all`, else whole blocks only.
    fn write_pending(&mut self, all: bool) -> Result<()> {
        let mut start = 0;
        while start < self.pending_len {
            let mut end = start;
            let mut bytes = 0;
            while end < self.pending_len && end - start < BLOCK_ENTRIES && bytes < BLOCK_BYTES {
                bytes += estimate(&self.pending[end]);
                end += 1;
            }
            if !all && end == self.pending_len && end - start < BLOCK_ENTRIES && bytes < BLOCK_BYTES
            {
                break;
            }
            self.write_block(start, end)?;
            start = end;
        }
        // Keep the entries not written, at the front.
        self.pending[..self.pending_len].rotate_left(start);
        self.pending_len -= start;
        self.pending_bytes = self.pending[..self.pending_len].iter().map(estimate).sum();
        Ok(())
    }

    fn write_block(&mut self, start: usize, end: usize) -> Result<()> {
        let (model, model_id) = self
            .model
            .clone()
            .ok_or_else(|| Error::Internal("run block before its model".into()))?;
        let entries = &self.pending[start..end];
        self.prepared.resize_with(entries.len(), Prepared::default);
        let mut codes = Vec::new();
        for (p, e) in self.prepared.iter_mut().zip(entries) {
            p.coded.clear();
            p.move_idx = None;
            let Some(pos) = &e.pos else { continue };
            if e.moves.first().is_some_and(|m| m.indexed) {
                // Read from a run with its indices (all of them: `push` resolved the rest).
                model.encode(pos, &mut p.coded)?;
                let idx = e.moves.iter().map(|m| u8::try_from(m.mv).ok());
                p.move_idx = Some(idx.collect::<Option<Vec<u8>>>().ok_or_else(|| {
                    Error::Internal(format!("key {:016x}: a move index beyond 255", e.key))
                })?);
                continue;
            }
            // Moves as the book stores them (indices among the legal moves, one byte each)
            // where the codec indexes them; raw codes otherwise.
            codes.clear();
            codes.extend(e.moves.iter().map(|m| m.mv));
            p.move_idx = self
                .codec
                .prepare(model.as_ref(), pos, &codes, &mut p.coded)?;
        }
        let payload = block::build_payload_with(entries, &self.prepared[..entries.len()], false)?;
        let sealed =
            block::seal(&payload, model_id, Some((&mut self.comp, 0))).map_err(|e| self.io(e))?;
        self.frame(&sealed)
    }

    /// Ends the run durably and moves it to its final name. Returns the entry count.
    pub fn finish(mut self) -> Result<u64> {
        if self.model.is_none() {
            self.train()?;
        }
        self.write_pending(true)?;
        let ctx = |e| Error::io(format!("finishing run {}", self.tmp.display()), e);
        let crc = self.crc.clone().finalize();
        let mut tail = Vec::with_capacity(16);
        tail.extend_from_slice(&0u32.to_le_bytes());
        tail.extend_from_slice(&self.count.to_le_bytes());
        tail.extend_from_slice(&crc.to_le_bytes());
        self.out.write_all(&tail).map_err(ctx)?;
        let f = self.out.into_inner().map_err(|e| ctx(e.into_error()))?;
        f.sync_all().map_err(ctx)?;
        std::fs::rename(&self.tmp, &self.path).map_err(ctx)?;
        Ok(self.count)
    }
}

/// Reads what follows a spill file's end frame marker (`len = 0`): the item count (u64 LE) and
/// the crc32 of all frame bytes (u32 LE), which must equal `count` and `crc`, and then
/// nothing. Shared by entry runs and game runs (docs/FORMAT.md §8.4, §8.5); the error says what
/// is wrong.
pub(crate) fn read_end_frame(
    src: &mut dyn Read,
    count: u64,
    crc: u32,
) -> std::result::Result<(), String> {
    let (stored_count, stored_crc) = read_end_tail(src)?;
    if stored_count != count || stored_crc != crc {
        return Err("count or checksum mismatch".into());
    }
    Ok(())
}

/// Reads what follows an end frame marker: the stored item count and crc32, and that nothing
/// follows them.
fn read_end_tail(src: &mut dyn Read) -> std::result::Result<(u64, u32), String> {
    let mut tail = [0u8; 12];
    src.read_exact(&mut tail).map_err(|e| e.to_string())?;
    let (c, k) = tail.split_at(8);
    let stored_count = u64::from_le_bytes(c.try_into().unwrap_or_default());
    let stored_crc = u32::from_le_bytes(k.try_into().unwrap_or_default());
    let mut rest = [0u8; 1];
    match src.read(&mut rest) {
        Ok(0) => Ok((stored_count, stored_crc)),
        Ok(_) => Err("bytes after the end frame".into()),
        Err(e) => Err(e.to_string()),
    }
}

/// Reads a run back, checking order, count and checksums.
#[doc(hidden)]
pub struct RunReader {
    name: String,
    src: Box<dyn Read + Send>,
    codec: Arc<dyn PositionCodec>,
    model: Arc<dyn PositionModel>,
    model_id: u16,
    crc: crc32fast::Hasher,
    count: u64,
    blocks: u64,
    buf: Vec<u8>,
    /// The current block's entries, cells still coded: a merge of many runs holds one such
    /// block per run (docs/FORMAT.md §8.4).
    block: std::vec::IntoIter<CodedCells>,
    done: bool,
    last: LastKey,
    /// Indexed moves come back as indices (`MoveRec::indexed`), for the import's merges:
    /// the book's and the runs' writers take them so, without generating moves again.
    keep: block::Keep,
    /// The threads that decode this run's blocks ahead of the merge ([`RunReader::decoding_on`]);
    /// `None`: each block is decoded in place when the merge reaches it.
    decoders: Option<Arc<RunDecoders>>,
    /// Blocks handed to `decoders`, in the run's order.
    ahead: VecDeque<Pending<decode::RunDecoded>>,
    /// The entry count the end frame stores, once read: checked when the last block is taken.
    end_count: Option<u64>,
}

impl RunReader {
    /// [`RunReader::open`], moves stored as indices coming back as indices.
    #[cfg(test)]
    pub(crate) fn open_indexed(path: &Path, codec: Arc<dyn PositionCodec>) -> Result<RunReader> {
        let mut r = RunReader::open(path, codec)?;
        r.keep.indices = true;
        Ok(r)
    }

    #[doc(hidden)]
    pub fn open(path: &Path, codec: Arc<dyn PositionCodec>) -> Result<RunReader> {
        RunReader::open_sharing(path, codec, None)
    }

    /// [`RunReader::open_indexed`], its model loaded once for all the readers of `models`
    /// that hold the same one.
    pub(crate) fn open_indexed_sharing(
        path: &Path,
        codec: Arc<dyn PositionCodec>,
        models: &RunModels,
    ) -> Result<RunReader> {
        let mut r = RunReader::open_sharing(path, codec, Some(models))?;
        r.keep.indices = true;
        Ok(r)
    }

    fn open_sharing(
        path: &Path,
        codec: Arc<dyn PositionCodec>,
        models: Option<&RunModels>,
    ) -> Result<RunReader> {
        let name = path.display().to_string();
        let f = File::open(path).map_err(|e| Error::io(format!("opening run {name}"), e))?;
        let src = Box::new(BufReader::with_capacity(1 << 16, f));
        RunReader::from_reader_sharing(name, src, codec, models)
    }

    /// A run read from any byte source (`name` for messages).
    #[doc(hidden)]
    pub fn from_reader(
        name: String,
        src: Box<dyn Read + Send>,
        codec: Arc<dyn PositionCodec>,
    ) -> Result<RunReader> {
        RunReader::from_reader_sharing(name, src, codec, None)
    }

    fn from_reader_sharing(
        name: String,
        src: Box<dyn Read + Send>,
        codec: Arc<dyn PositionCodec>,
        models: Option<&RunModels>,
    ) -> Result<RunReader> {
        let mut r = RunReader {
            name,
            src,
            codec,
            model: Arc::new(IdentityModel),
            model_id: 0,
            crc: crc32fast::Hasher::new(),
            count: 0,
            blocks: 0,
            buf: Vec::new(),
            block: Vec::new().into_iter(),
            done: false,
            last: LastKey::default(),
            keep: block::Keep::default(),
            decoders: None,
            ahead: VecDeque::new(),
            end_count: None,
        };
        let mut magic = [0u8; 8];
        r.src
            .read_exact(&mut magic)
            .map_err(|e| Error::io(format!("run {}: reading header", r.name), e))?;
        if &magic != MAGIC {
            return Err(Error::Damaged(format!(
                "run {}: not a bookdb run file of this version",
                r.name
            )));
        }
        if !r.read_frame()? {
            return Err(r.damaged("no model frame"));
        }
        match r.buf.split_first() {
            Some((0, [])) => {}
            Some((1, model)) if !model.is_empty() => {
                let codec = &r.codec;
                let load =
                    |b: &[u8]| -> Result<Arc<dyn PositionModel>> { Ok(codec.load_model(b)?) };
                let loaded = match models {
                    Some(m) => m.for_reader(model, load),
                    None => load(model),
                };
                r.model = loaded.map_err(|e| r.damaged(format!("model: {e}")))?;
                r.model_id = 1;
            }
            _ => return Err(r.damaged("unreadable model frame")),
        }
        Ok(r)
    }

    /// This run's blocks decoded on `decoders` (a pool the runs of one merge share), each
    /// [`decode::READ_AHEAD`] blocks ahead of the one the merge takes; `None` keeps decoding
    /// in place.
    pub(crate) fn decoding_on(mut self, decoders: Option<Arc<RunDecoders>>) -> RunReader {
        self.decoders = decoders;
        self
    }

    fn damaged(&self, what: impl std::fmt::Display) -> Error {
        Error::Damaged(format!("run {} is damaged: {what}", self.name))
    }

    /// Reads the next frame into `buf`; false at the end frame (whose checksum it checks, and
    /// that nothing follows; its count is kept in `end_count`, checked by [`Self::ended`]
    /// once every block is taken).
    fn read_frame(&mut self) -> Result<bool> {
        let mut len = [0u8; 4];
        self.src.read_exact(&mut len).map_err(|e| self.damaged(e))?;
        let n = u32::from_le_bytes(len);
        if n == 0 {
            let crc = self.crc.clone().finalize();
            let (count, stored_crc) = read_end_tail(&mut self.src).map_err(|e| self.damaged(e))?;
            if stored_crc != crc {
                return Err(self.damaged("count or checksum mismatch"));
            }
            self.end_count = Some(count);
            return Ok(false);
        }
        if n > MAX_FRAME {
            return Err(self.damaged(format!("frame of {n} bytes")));
        }
        self.buf.resize(n as usize, 0);
        self.src
            .read_exact(&mut self.buf)
            .map_err(|e| self.damaged(e))?;
        self.crc.update(&len);
        self.crc.update(&self.buf);
        Ok(true)
    }

    /// Takes the next block's entries into `block`: decoded here, or taken from `decoders`
    /// after handing them the blocks that follow. False once every block is taken.
    fn next_block(&mut self) -> Result<bool> {
        let decoded = match self.decoders.clone() {
            None => {
                if !self.read_frame()? {
                    return self.ended();
                }
                let ord = self.blocks;
                self.blocks += 1;
                let (codec, model) = (self.codec.as_ref(), self.model.as_ref());
                decode::decode_block(ord, &self.buf, codec, model, self.model_id, self.keep)
            }
            Some(pool) => {
                while self.ahead.len() <= decode::READ_AHEAD && self.end_count.is_none() {
                    if !self.read_frame()? {
                        break;
                    }
                    let ord = self.blocks;
                    self.blocks += 1;
                    let job = (
                        ord,
                        std::mem::take(&mut self.buf),
                        self.codec.clone(),
                        self.model.clone(),
                        self.model_id,
                        self.keep,
                    );
                    self.ahead.push_back(pool.submit(vec![job]));
                }
                let Some(pending) = self.ahead.pop_front() else {
                    return self.ended();
                };
                match pending.wait().pop().flatten() {
                    Some(decoded) => decoded,
                    // The job panicked (a bug, as the same panic decoding in place would be):
                    // not damage of the run.
                    None => {
                        return Err(Error::Internal(format!(
                            "run {}: decoding a block read ahead failed on its thread",
                            self.name
                        )));
                    }
                }
            }
        };
        self.block = decoded.map_err(|e| self.damaged(e))?.into_iter();
        Ok(true)
    }

    /// The run ends: every entry its end frame counts must have been taken.
    fn ended(&self) -> Result<bool> {
        if self.end_count != Some(self.count) {
            return Err(self.damaged("count or checksum mismatch"));
        }
        Ok(false)
    }

    fn next_entry(&mut self) -> Result<Option<CodedCells>> {
        loop {
            if let Some(e) = self.block.next() {
                if !self.last.advance(e.entry()) {
                    return Err(self.damaged("entries out of order"));
                }
                self.count += 1;
                return Ok(Some(e));
            }
            if !self.next_block()? {
                return Ok(None);
            }
        }
    }

    /// The next entry as read (`None` at the end; an error ends the run).
    fn next_coded(&mut self) -> Option<Result<CodedCells>> {
        if self.done {
            return None;
        }
        let r = self.next_entry();
        self.done = !matches!(r, Ok(Some(_)));
        r.transpose()
    }

    /// The run's entries with their cells still coded, decoded when a
    /// [`MergeIter`](crate::store::entry::MergeIter) takes
    /// them: what the import's merges of many runs read.
    pub(crate) fn coded(self) -> CodedRun {
        let name: Arc<str> = Arc::from(self.name.as_str());
        CodedRun { run: self, name }
    }
}

impl Iterator for RunReader {
    type Item = Result<Entry>;
    fn next(&mut self) -> Option<Result<Entry>> {
        let r = self.next_coded()?.and_then(|c| {
            c.decode()
                .map_err(|e| Error::Damaged(format!("run {} is damaged: {e}", self.name)))
        });
        self.done |= r.is_err();
        Some(r)
    }
}

/// A run read for a merge ([`RunReader::coded`]): entries whose cells stay coded until taken.
pub(crate) struct CodedRun {
    run: RunReader,
    name: Arc<str>,
}

/// An entry of a [`CodedRun`]: cells decoded when the merge takes it, damage reported with
/// the run's name.
pub(crate) struct RunHead {
    cells: CodedCells,
    run: Arc<str>,
}

impl Iterator for CodedRun {
    type Item = Result<RunHead>;
    fn next(&mut self) -> Option<Result<RunHead>> {
        let run = &self.name;
        self.run.next_coded().map(|r| {
            r.map(|cells| RunHead {
                cells,
                run: run.clone(),
            })
        })
    }
}

impl MergeHead<Error> for RunHead {
    fn id(&self) -> &Entry {
        self.cells.entry()
    }

    fn into_entry(self) -> Result<Entry> {
        let run = self.run;
        self.cells
            .decode()
            .map_err(|e| Error::Damaged(format!("run {run} is damaged: {e}")))
    }
}

mod decode;
mod models;
pub(crate) use decode::{RunDecoders, run_decoders};
pub(crate) use models::RunModels;

#[cfg(test)]
mod tests;

//! The game store's tables as a file holds them (docs/FORMAT.md §15.1, §15.5): format 9's
//! block stream (`game_chunks`: every game block back to back, cut into page-sized chunks;
//! `game_dir`: each block's first game number → its offset and length in the stream) and packed
//! id index (`game_id_index`: [`crate::store::idchunk`] chunks by first id), or formats 6–8's
//! per-block chunks (`game_blocks`) and id rows (`game_ids`), still read so that `migrate` can
//! convert them. Gives blocks by number, in order, and the (id, number) rows; writes format 9.

use super::options::PAGE_FIT;
use super::*;
use crate::store::error::{Corruption, Error, Result};
use crate::store::idchunk;

/// The bytes of every chunk of the block stream but the last (the reader's arithmetic: a
/// block at offset `o` starts in chunk `o / STREAM_CHUNK`).
pub(crate) const STREAM_CHUNK: usize = PAGE_FIT;

pub(super) fn bad(at: impl std::fmt::Display, reason: impl std::fmt::Display) -> Error {
    Error::Corrupt(Corruption::GameStore {
        at: at.to_string(),
        reason: reason.to_string(),
    })
}

pub(super) fn block_at(first: u32) -> String {
    format!("block from game {first}")
}

/// A file's game store tables, open for the file's life.
pub(crate) enum StoreTables {
    /// Format 9.
    Stream {
        chunks: redb::ReadOnlyTable<u32, &'static [u8]>,
        dir: redb::ReadOnlyTable<u32, (u64, u32)>,
        ids: redb::ReadOnlyTable<u64, &'static [u8]>,
    },
    /// Formats 6–8 (read to migrate).
    Blocks {
        blocks: redb::ReadOnlyTable<(u32, u16), &'static [u8]>,
        ids: redb::ReadOnlyTable<(u64, u32), ()>,
    },
}

fn open_opt<K: redb::Key + 'static, V: redb::Value + 'static>(
    txn: &redb::ReadTransaction,
    def: redb::TableDefinition<K, V>,
) -> Result<Option<redb::ReadOnlyTable<K, V>>> {
    match txn.open_table(def) {
        Ok(t) => Ok(Some(t)),
        Err(redb::TableError::TableDoesNotExist(_)) => Ok(None),
        Err(e) => Err(e.into()),
    }
}

impl StoreTables {
    /// Opens a file's store tables: `None` when it has none; an error when some of one
    /// layout's tables are missing.
    pub(crate) fn open(txn: &redb::ReadTransaction, stored: u64) -> Result<Option<StoreTables>> {
        let chunks = open_opt(txn, GAME_CHUNKS)?;
        let dir = open_opt(txn, GAME_DIR)?;
        let index = open_opt(txn, GAME_ID_INDEX)?;
        let blocks = open_opt(txn, GAME_BLOCKS)?;
        let rows = open_opt(txn, GAME_IDS)?;
        let incomplete = |which: &str| {
            Err(Error::Corrupt(Corruption::Meta(format!(
                "the game store is incomplete (meta records {stored} games; {which})"
            ))))
        };
        match (chunks, dir, index, blocks, rows) {
            (Some(chunks), Some(dir), Some(ids), None, None) => {
                Ok(Some(StoreTables::Stream { chunks, dir, ids }))
            }
            (None, None, None, Some(blocks), Some(ids)) => {
                Ok(Some(StoreTables::Blocks { blocks, ids }))
            }
            (None, None, None, None, None) if stored == 0 => Ok(None),
            (None, None, None, None, None) => incomplete("no game tables"),
            _ => incomplete(
                "not one whole layout of game_chunks, game_dir and game_id_index, or of \
                 game_blocks and game_ids",
            ),
        }
    }

    /// The block holding game `number`: its first number and bytes.
    pub(crate) fn block_of(&self, number: u32) -> Result<(u32, Vec<u8>)> {
        let none = || bad(format!("game {number}"), "no block holds it");
        match self {
            StoreTables::Stream { chunks, dir, .. } => {
                let row = dir.range(..=number)?.next_back().ok_or_else(none)??;
                let first = row.0.value();
                let (offset, len) = row.1.value();
                Ok((first, stream_bytes(chunks, first, offset, len)?))
            }
            StoreTables::Blocks { blocks, .. } => {
                let (first, _) = blocks
                    .range(..=(number, u16::MAX))?
                    .next_back()
                    .ok_or_else(none)??
                    .0
                    .value();
                let mut bytes = Vec::new();
                for (i, row) in blocks.range((first, 0)..=(first, u16::MAX))?.enumerate() {
                    let (k, v) = row?;
                    if usize::from(k.value().1) != i {
                        return Err(bad(block_at(first), format!("chunk {i} missing")));
                    }
                    bytes.extend_from_slice(v.value());
                }
                Ok((first, bytes))
            }
        }
    }

    /// Every block in number order, read sequentially.
    pub(crate) fn blocks(&self) -> Result<BlockRows> {
        Ok(match self {
            StoreTables::Stream { chunks, dir, .. } => BlockRows::Stream {
                dir: dir.range::<u32>(..)?,
                chunks: chunks.range::<u32>(..)?,
                buf: Vec::new(),
                buf_start: 0,
                next_chunk: 0,
                end: 0,
            },
            StoreTables::Blocks { blocks, .. } => {
                BlockRows::Chunked(blocks.range::<(u32, u16)>(..)?.peekable())
            }
        })
    }

    /// The numbers of the games stored with id `id`.
    pub(crate) fn numbers_by_id(&self, id: u64) -> Result<Vec<u32>> {
        match self {
            StoreTables::Stream { ids, .. } => {
                let Some(row) = ids.range(..=id)?.next_back() else {
                    return Ok(Vec::new());
                };
                let (k, v) = row?;
                let rows = decode_ids(k.value(), v.value())?;
                Ok(rows
                    .into_iter()
                    .filter(|r| r.0 == id)
                    .map(|r| r.1)
                    .collect())
            }
            StoreTables::Blocks { ids, .. } => ids
                .range((id, 0)..=(id, u32::MAX))?
                .map(|row| Ok(row?.0.value().1))
                .collect(),
        }
    }

    /// How many (id, number) rows the index holds (chunk headers only, in format 9).
    pub(crate) fn id_row_count(&self) -> Result<u64> {
        match self {
            StoreTables::Stream { ids, .. } => {
                let mut n = 0u64;
                for row in ids.range::<u64>(..)? {
                    let (k, v) = row?;
                    n += idchunk::rows_claimed(v.value())
                        .map_err(|e| bad(id_chunk_at(k.value()), e))?
                        as u64;
                }
                Ok(n)
            }
            StoreTables::Blocks { ids, .. } => Ok(redb::ReadableTableMetadata::len(ids)?),
        }
    }

    /// The ids of the index's rows in order (an id as often as games carry it), read a chunk
    /// at a time.
    pub(crate) fn ids(&self) -> Result<Box<dyn Iterator<Item = Result<u64>> + '_>> {
        match self {
            StoreTables::Stream { ids, .. } => {
                let mut chunks = ids.range::<u64>(..)?;
                let mut rows = std::vec::IntoIter::default();
                Ok(Box::new(std::iter::from_fn(move || {
                    loop {
                        if let Some((id, _)) = rows.next() {
                            return Some(Ok(id));
                        }
                        let chunk = chunks
                            .next()?
                            .map_err(Into::into)
                            .and_then(|(k, v)| decode_ids(k.value(), v.value()));
                        match chunk {
                            Ok(r) => rows = r.into_iter(),
                            Err(e) => return Some(Err(e)),
                        }
                    }
                })))
            }
            StoreTables::Blocks { ids, .. } => Ok(Box::new(
                ids.range::<(u64, u32)>(..)?.map(|row| Ok(row?.0.value().0)),
            )),
        }
    }

    /// Calls `f` with every (id, number) row in order; format 9's chunks must each begin at
    /// their key and follow the previous chunk's last id.
    pub(crate) fn for_each_id_row(&self, mut f: impl FnMut(u64, u32) -> Result<()>) -> Result<()> {
        match self {
            StoreTables::Stream { ids, .. } => {
                let mut last: Option<u64> = None;
                for row in ids.range::<u64>(..)? {
                    let (k, v) = row?;
                    let rows = decode_ids(k.value(), v.value())?;
                    if last.is_some_and(|l| l >= rows[0].0) {
                        return Err(bad(
                            id_chunk_at(k.value()),
                            "its first id does not follow the previous chunk's last",
                        ));
                    }
                    last = rows.last().map(|r| r.0);
                    for (id, n) in rows {
                        f(id, n)?;
                    }
                }
                Ok(())
            }
            StoreTables::Blocks { ids, .. } => {
                for row in ids.range::<(u64, u32)>(..)? {
                    let (id, n) = row?.0.value();
                    f(id, n)?;
                }
                Ok(())
            }
        }
    }

    /// The bytes (stored, metadata and fragmented) of the blocks' tables and of the id index.
    pub(crate) fn table_bytes(&self) -> Result<(u64, u64)> {
        use redb::ReadableTableMetadata;
        let size =
            |s: redb::TableStats| s.stored_bytes() + s.metadata_bytes() + s.fragmented_bytes();
        Ok(match self {
            StoreTables::Stream { chunks, dir, ids } => (
                size(chunks.stats()?) + size(dir.stats()?),
                size(ids.stats()?),
            ),
            StoreTables::Blocks { blocks, ids } => (size(blocks.stats()?), size(ids.stats()?)),
        })
    }

    /// Copies the tables as they are into `txn` (a store carried alone into a new file of
    /// this format).
    pub(crate) fn copy_into(&self, txn: &redb::WriteTransaction) -> Result<()> {
        let StoreTables::Stream { chunks, dir, ids } = self else {
            return Err(Error::Internal(
                "an older game store is re-coded, not copied".into(),
            ));
        };
        let mut to = txn.open_table(GAME_CHUNKS)?;
        for row in chunks.range::<u32>(..)? {
            let (k, v) = row?;
            to.insert(k.value(), v.value())?;
        }
        let mut to = txn.open_table(GAME_DIR)?;
        for row in dir.range::<u32>(..)? {
            let (k, v) = row?;
            to.insert(k.value(), v.value())?;
        }
        let mut to = txn.open_table(GAME_ID_INDEX)?;
        for row in ids.range::<u64>(..)? {
            let (k, v) = row?;
            // Checked as a reader checks it (its crc32, its first id): a damaged chunk is not
            // carried into the new file.
            decode_ids(k.value(), v.value())?;
            to.insert(k.value(), v.value())?;
        }
        // Each block through the directory, as a sequential read takes them: the directory's
        // order and offsets, and each block's crc32 (not decompressed).
        let mut blocks = self.blocks()?;
        while let Some((first, bytes)) = blocks.next_block()? {
            crate::store::gameblock::check_sealed(&bytes).map_err(|e| bad(block_at(first), e))?;
        }
        Ok(())
    }
}

fn coding(e: std::io::Error) -> Error {
    Error::Internal(format!("coding an id chunk: {e}"))
}

fn id_chunk_at(first: u64) -> String {
    format!("id index chunk from id {first}")
}

/// A chunk of the id index, decoded and checked against its key.
fn decode_ids(key: u64, bytes: &[u8]) -> Result<Vec<(u64, u32)>> {
    let rows = idchunk::decode(bytes).map_err(|e| bad(id_chunk_at(key), e))?;
    if rows[0].0 != key {
        return Err(bad(
            id_chunk_at(key),
            format!("its first id is {}", rows[0].0),
        ));
    }
    Ok(rows)
}

/// The `len` bytes at `offset` of the block stream (the block from game `first`).
fn stream_bytes(
    chunks: &redb::ReadOnlyTable<u32, &'static [u8]>,
    first: u32,
    offset: u64,
    len: u32,
) -> Result<Vec<u8>> {
    let at = block_at(first);
    if len == 0 {
        return Err(bad(at, "an empty block"));
    }
    let end = offset + u64::from(len);
    let c0 = offset / STREAM_CHUNK as u64;
    let c1 = (end - 1) / STREAM_CHUNK as u64;
    let (Ok(c0), Ok(c1)) = (u32::try_from(c0), u32::try_from(c1)) else {
        return Err(bad(at, "its offset is past the stream"));
    };
    let mut bytes = Vec::with_capacity(len as usize);
    let mut pos = u64::from(c0) * STREAM_CHUNK as u64;
    for (want, row) in (c0..).zip(chunks.range(c0..=c1)?) {
        let (k, v) = row?;
        if k.value() != want {
            return Err(bad(at, format!("stream chunk {want} missing")));
        }
        let v = v.value();
        if v.len() != STREAM_CHUNK && k.value() != c1 {
            return Err(bad(at, format!("stream chunk {want} is {} bytes", v.len())));
        }
        let lo = offset.saturating_sub(pos) as usize;
        let hi = ((end - pos) as usize).min(v.len());
        if lo > hi {
            return Err(bad(at, format!("stream chunk {want} ends early")));
        }
        bytes.extend_from_slice(&v[lo..hi]);
        pos += v.len() as u64;
    }
    if bytes.len() != len as usize {
        return Err(bad(at, "the stream ends inside it"));
    }
    Ok(bytes)
}

/// A file's blocks in number order: (first number, bytes).
pub(crate) enum BlockRows {
    Stream {
        dir: redb::Range<'static, u32, (u64, u32)>,
        chunks: redb::Range<'static, u32, &'static [u8]>,
        /// Stream bytes read and not yet given, from stream offset `buf_start`.
        buf: Vec<u8>,
        buf_start: u64,
        next_chunk: u32,
        /// Where the last block given ended.
        end: u64,
    },
    Chunked(std::iter::Peekable<redb::Range<'static, (u32, u16), &'static [u8]>>),
}

impl BlockRows {
    /// The next block; `None` after the last (format 9: when the stream holds nothing past it).
    pub(crate) fn next_block(&mut self) -> Result<Option<(u32, Vec<u8>)>> {
        match self {
            BlockRows::Stream {
                dir,
                chunks,
                buf,
                buf_start,
                next_chunk,
                end,
            } => {
                let Some(row) = dir.next() else {
                    // Nothing may follow the last block.
                    let rest = buf.len() as u64 - (*end - *buf_start);
                    if rest != 0 || chunks.next().is_some() {
                        return Err(bad("game_chunks", "bytes after the last block"));
                    }
                    return Ok(None);
                };
                let (k, v) = row?;
                let first = k.value();
                let (offset, len) = v.value();
                if offset != *end || len == 0 {
                    return Err(bad(
                        block_at(first),
                        format!("at {offset}, {len} bytes: expected a block at {end}"),
                    ));
                }
                let stop = offset + u64::from(len);
                // Drop what earlier blocks used, then read chunks until the block is held.
                let used = (offset - *buf_start) as usize;
                buf.drain(..used);
                *buf_start = offset;
                while *buf_start + (buf.len() as u64) < stop {
                    let Some(row) = chunks.next() else {
                        return Err(bad(block_at(first), "the stream ends inside it"));
                    };
                    let (ck, cv) = row?;
                    if ck.value() != *next_chunk {
                        return Err(bad(
                            block_at(first),
                            format!("stream chunk {next_chunk} missing"),
                        ));
                    }
                    let cv = cv.value();
                    if cv.len() > STREAM_CHUNK || cv.is_empty() {
                        return Err(bad(
                            block_at(first),
                            format!("stream chunk {next_chunk} is {} bytes", cv.len()),
                        ));
                    }
                    buf.extend_from_slice(cv);
                    *next_chunk += 1;
                    // A short chunk must be the stream's last.
                    if cv.len() < STREAM_CHUNK && *buf_start + (buf.len() as u64) < stop {
                        return Err(bad(block_at(first), "a short stream chunk inside it"));
                    }
                }
                *end = stop;
                Ok(Some((first, buf[..len as usize].to_vec())))
            }
            BlockRows::Chunked(rows) => {
                let mut bytes = Vec::new();
                let mut first = None;
                let mut n = 0usize;
                while let Some(row) = rows.next_if(|r| match (r, first) {
                    (Ok((k, _)), Some(f)) => k.value().0 == f,
                    _ => true,
                }) {
                    let (k, v) = row?;
                    let (f, chunk) = k.value();
                    let f = *first.get_or_insert(f);
                    bytes.extend_from_slice(v.value());
                    if usize::from(chunk) != n {
                        return Err(bad(block_at(f), format!("chunk {n} missing")));
                    }
                    n += 1;
                }
                Ok(first.map(|f| (f, bytes)))
            }
        }
    }
}

/// Writes a format-9 store's tables: blocks appended to the stream, id rows (in order) packed.
pub(crate) struct StreamWriter<'t> {
    chunks: redb::Table<'t, u32, &'static [u8]>,
    dir: redb::Table<'t, u32, (u64, u32)>,
    ids: redb::Table<'t, u64, &'static [u8]>,
    /// Stream bytes not yet in a chunk.
    tail: Vec<u8>,
    offset: u64,
    next_chunk: u32,
    rows: idchunk::Chunker,
}

impl<'t> StreamWriter<'t> {
    pub(crate) fn open(txn: &'t redb::WriteTransaction) -> Result<StreamWriter<'t>> {
        Ok(StreamWriter {
            chunks: txn.open_table(GAME_CHUNKS)?,
            dir: txn.open_table(GAME_DIR)?,
            ids: txn.open_table(GAME_ID_INDEX)?,
            tail: Vec::with_capacity(2 * STREAM_CHUNK),
            offset: 0,
            next_chunk: 0,
            rows: idchunk::Chunker::new(STREAM_CHUNK),
        })
    }

    /// Appends the block of games from `first`.
    pub(crate) fn block(&mut self, first: u32, bytes: &[u8]) -> Result<()> {
        let len = u32::try_from(bytes.len())
            .map_err(|_| Error::Internal("a game block past 4 GiB".into()))?;
        self.dir.insert(first, (self.offset, len))?;
        self.offset += u64::from(len);
        self.tail.extend_from_slice(bytes);
        let whole = self.tail.len() / STREAM_CHUNK;
        for i in 0..whole {
            let c = &self.tail[i * STREAM_CHUNK..(i + 1) * STREAM_CHUNK];
            self.chunks.insert(self.next_chunk, c)?;
            self.next_chunk = self
                .next_chunk
                .checked_add(1)
                .ok_or_else(|| Error::Internal("a game stream of 2^32 chunks".into()))?;
        }
        self.tail.drain(..whole * STREAM_CHUNK);
        Ok(())
    }

    /// Adds an id row (rows come in (id, number) order; chunks filled to a page).
    pub(crate) fn id_row(&mut self, id: u64, number: u32) -> Result<()> {
        if let Some((first, bytes)) = self.rows.push(id, number).map_err(coding)? {
            self.ids.insert(first, bytes.as_slice())?;
        }
        Ok(())
    }

    /// Writes what is still held: the stream's last chunk and the last id chunk.
    pub(crate) fn finish(mut self) -> Result<()> {
        if !self.tail.is_empty() {
            let tail = std::mem::take(&mut self.tail);
            self.chunks.insert(self.next_chunk, tail.as_slice())?;
        }
        for (first, bytes) in self.rows.finish().map_err(coding)? {
            self.ids.insert(first, bytes.as_slice())?;
        }
        Ok(())
    }
}

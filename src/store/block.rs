//! Value blocks: a 24-byte header, section A (zstd-compressed columns) and section B (positions
//! coded by the book's position model), entries sorted by (key, position). Byte maps are in docs/FORMAT.md §5.

use super::entry::{Entry, MoveExtra, MoveRec};
use super::{PositionCodec, PositionModel, varint};
use crate::error::Corruption;

pub const BLOCK_VERSION: u8 = 1;
pub const HEADER_LEN: usize = 24;
/// Largest raw payload a reader accepts (guards allocations against corrupt headers).
pub const MAX_RAW_LEN: usize = 64 << 20;
pub const COLUMNS: usize = 16;

pub const FLAG_KEY_ONLY: u8 = 1;
/// Some move of the entry carries a [`MoveExtra`] (its kind has [`KIND_EXTRA`]; columns 14
/// and 15).
pub const FLAG_EXTRA: u8 = 2;
/// The entry's moves are stored as raw codes (column 6), not as indices (column 5).
pub const FLAG_RAW_MOVES: u8 = 4;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Compression {
    None = 0,
    Zstd = 1,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BlockHeader {
    pub version: u8,
    pub compression: Compression,
    /// zstd dictionary of section A (0 = none).
    pub dict_id: u16,
    /// Position model of section B (0 = identity).
    pub model_id: u16,
    pub count: u32,
    /// Section A length once decompressed.
    pub raw_len: u32,
    /// Section A length as stored.
    pub a_len: u32,
    pub crc: u32,
}

impl BlockHeader {
    pub fn parse(block_key: u64, bytes: &[u8]) -> Result<BlockHeader, Corruption> {
        let bad = |reason: String| Corruption::Header { block_key, reason };
        if bytes.len() < HEADER_LEN {
            return Err(bad(format!(
                "block is {} bytes, shorter than its header",
                bytes.len()
            )));
        }
        let u32_at =
            |i: usize| u32::from_le_bytes([bytes[i], bytes[i + 1], bytes[i + 2], bytes[i + 3]]);
        let h = BlockHeader {
            version: bytes[0],
            compression: match bytes[1] {
                0 => Compression::None,
                1 => Compression::Zstd,
                c => return Err(bad(format!("unknown compression id {c}"))),
            },
            dict_id: u16::from_le_bytes([bytes[2], bytes[3]]),
            model_id: u16::from_le_bytes([bytes[4], bytes[5]]),
            count: u32_at(8),
            raw_len: u32_at(12),
            a_len: u32_at(16),
            crc: u32_at(20),
        };
        if h.version != BLOCK_VERSION {
            return Err(bad(format!("unknown block version {}", h.version)));
        }
        if bytes[6] != 0 || bytes[7] != 0 {
            return Err(bad("reserved header bytes are not zero".into()));
        }
        if h.a_len as usize > bytes.len() - HEADER_LEN {
            return Err(bad(format!(
                "section A length {} exceeds the block ({} bytes)",
                h.a_len,
                bytes.len()
            )));
        }
        Ok(h)
    }

    fn write(&self, out: &mut Vec<u8>) {
        out.push(self.version);
        out.push(self.compression as u8);
        out.extend_from_slice(&self.dict_id.to_le_bytes());
        out.extend_from_slice(&self.model_id.to_le_bytes());
        out.extend_from_slice(&[0, 0]);
        out.extend_from_slice(&self.count.to_le_bytes());
        out.extend_from_slice(&self.raw_len.to_le_bytes());
        out.extend_from_slice(&self.a_len.to_le_bytes());
        out.extend_from_slice(&self.crc.to_le_bytes());
    }
}

fn block_crc(header: &[u8], payload: &[u8]) -> u32 {
    let mut h = crc32fast::Hasher::new();
    h.update(header);
    h.update(payload);
    h.finalize()
}

/// The two sections of an unsealed block: A (columns, to be compressed) and B (positions as
/// coded by the block's model).
pub struct Payload {
    pub count: usize,
    pub a: Vec<u8>,
    pub b: Vec<u8>,
}

/// What the writer computes once per entry: its coded position and, if the codec can index
/// its moves, their small indices.
#[derive(Clone, Debug, Default)]
pub struct Prepared {
    pub coded: Vec<u8>,
    pub move_idx: Option<Vec<u8>>,
}

/// Longest stored position handed on as it is (any model codes a position in fewer bytes: 67
/// symbols of at least 1/2^15 each).
const MAX_PASSED_CODE: usize = 128;

/// What a rewrite keeps of stored entries instead of decoding it
/// ([`BlockView::entries_as`]).
#[derive(Clone, Copy, Debug, Default)]
pub struct Keep {
    /// Indexed moves come back as indices (`MoveRec::indexed`).
    pub indices: bool,
    /// Positions also come back as stored (`Entry::coded`); only for a writer that codes
    /// with this block's model.
    pub coded: bool,
}

pub fn prepare(
    e: &Entry,
    codec: &dyn PositionCodec,
    model: &dyn PositionModel,
) -> Result<Prepared, String> {
    let mut p = Prepared::default();
    if let Some(pos) = &e.pos {
        if e.moves.first().is_some_and(|m| m.indexed) {
            // Moves already indexed (a rewrite read them so); the writer has checked that
            // all are. A position already coded with the writer's model is stored as it is.
            match &e.coded {
                Some(c) => p.coded.extend_from_slice(c),
                None => {
                    codec.prepare(model, pos, &[], &mut p.coded)?;
                }
            }
            p.move_idx = Some(e.moves.iter().map(|m| m.mv as u8).collect());
            return Ok(p);
        }
        let mut moves = [0u16; 32];
        p.move_idx = if e.moves.len() <= moves.len() {
            for (d, m) in moves.iter_mut().zip(&e.moves) {
                *d = m.mv;
            }
            codec.prepare(model, pos, &moves[..e.moves.len()], &mut p.coded)?
        } else {
            let moves: Vec<u16> = e.moves.iter().map(|m| m.mv).collect();
            codec.prepare(model, pos, &moves, &mut p.coded)?
        };
    }
    Ok(p)
}

/// Per-move record kinds (column 7): a single game without rating (result W/D/B/U = 0..3), a
/// single rated game (4..7, the rating in column 12), or general (8: all six counters).
pub const KIND_GENERAL: u8 = 8;
/// Added to a kind when the move carries an extra (`MoveExtra`: weight and opaque value, columns
/// 14 and 15).
pub const KIND_EXTRA: u8 = 0x10;

fn move_kind(m: &MoveRec) -> u8 {
    if m.games() != 1 {
        return KIND_GENERAL;
    }
    let r = if m.white == 1 {
        0
    } else if m.draws == 1 {
        1
    } else if m.black == 1 {
        2
    } else {
        3
    };
    match (m.rating_count, m.rating_sum) {
        (0, 0) => r,
        (1, _) => 4 + r,
        _ => KIND_GENERAL,
    }
}

/// Builds the payload of sorted entries, preparing each with `codec` and `model`.
pub fn build_payload(
    entries: &[Entry],
    codec: &dyn PositionCodec,
    model: &dyn PositionModel,
) -> Result<Payload, String> {
    let prepared = entries
        .iter()
        .map(|e| prepare(e, codec, model))
        .collect::<Result<Vec<_>, _>>()?;
    build_payload_with(entries, &prepared)
}

/// Builds the payload from entries and their prepared forms (same length).
pub fn build_payload_with(entries: &[Entry], prepared: &[Prepared]) -> Result<Payload, String> {
    if entries.len() != prepared.len() {
        return Err("entries and prepared forms differ in number".into());
    }
    let mut cols: [Vec<u8>; COLUMNS] = Default::default();
    let mut b = Vec::new();
    for (e, p) in entries.iter().zip(prepared) {
        cols[0].push(e.key as u8);
        let extra = e.has_extra();
        let raw_moves = e.pos.is_none() || p.move_idx.is_none();
        let flags = if e.pos.is_none() { FLAG_KEY_ONLY } else { 0 }
            | if extra { FLAG_EXTRA } else { 0 }
            | if raw_moves { FLAG_RAW_MOVES } else { 0 };
        cols[1].push(flags);
        varint::put(&mut cols[2], e.moves.len() as u64);
        match &e.pos {
            Some(_) => {
                varint::put(&mut cols[3], p.coded.len() as u64);
                b.extend_from_slice(&p.coded);
            }
            None => cols[4].extend_from_slice(&e.key.to_le_bytes()),
        }
        match (&p.move_idx, raw_moves) {
            (Some(idx), false) if idx.len() == e.moves.len() => cols[5].extend_from_slice(idx),
            (_, false) => return Err("move indices do not match the moves".into()),
            (_, true) => {
                for mv in &e.moves {
                    if mv.indexed {
                        return Err("a move index cannot be stored as a raw move".into());
                    }
                    cols[6].extend_from_slice(&mv.mv.to_le_bytes());
                }
            }
        }
        for mv in &e.moves {
            let kind = move_kind(mv);
            cols[7].push(kind | if mv.extra.is_some() { KIND_EXTRA } else { 0 });
            match kind {
                0..=3 => {}
                4..=7 => varint::put(&mut cols[12], mv.rating_sum),
                _ => {
                    varint::put(&mut cols[8], mv.white);
                    varint::put(&mut cols[9], mv.draws);
                    varint::put(&mut cols[10], mv.black);
                    varint::put(&mut cols[11], mv.unknown);
                    varint::put(&mut cols[12], mv.rating_sum);
                    varint::put(&mut cols[13], mv.rating_count);
                }
            }
            if let Some(x) = mv.extra {
                cols[14].extend_from_slice(&x.weight.to_le_bytes());
                cols[15].extend_from_slice(&x.learn.to_le_bytes());
            }
        }
    }
    let total: usize = cols.iter().map(Vec::len).sum();
    let mut a = Vec::with_capacity(COLUMNS * 4 + total);
    for c in &cols {
        a.extend_from_slice(&(c.len() as u32).to_le_bytes());
    }
    for c in &cols {
        a.extend_from_slice(c);
    }
    Ok(Payload {
        count: entries.len(),
        a,
        b,
    })
}

/// Seals a payload into a block: header, (compressed) section A, section B, checksummed.
pub fn seal(
    p: &Payload,
    model_id: u16,
    compressor: Option<(&mut zstd::bulk::Compressor<'_>, u16)>,
) -> std::io::Result<Vec<u8>> {
    let (compression, dict_id, a) = match compressor {
        Some((c, dict_id)) => (Compression::Zstd, dict_id, c.compress(&p.a)?),
        None => (Compression::None, 0, p.a.clone()),
    };
    let mut header = BlockHeader {
        version: BLOCK_VERSION,
        compression,
        dict_id,
        model_id,
        count: p.count as u32,
        raw_len: p.a.len() as u32,
        a_len: a.len() as u32,
        crc: 0,
    };
    let mut out = Vec::with_capacity(HEADER_LEN + a.len() + p.b.len());
    header.write(&mut out);
    out.truncate(HEADER_LEN - 4);
    out.extend_from_slice(&a);
    out.extend_from_slice(&p.b);
    header.crc = block_crc(&out[..HEADER_LEN - 4], &out[HEADER_LEN - 4..]);
    let tail = out.split_off(HEADER_LEN - 4);
    out.extend_from_slice(&header.crc.to_le_bytes());
    out.extend_from_slice(&tail);
    Ok(out)
}

/// Reusable zstd decompression contexts, one per dictionary.
pub trait Decompressors {
    fn decompress(&self, dict_id: u16, src: &[u8], capacity: usize) -> Result<Vec<u8>, String>;
}

/// No dictionaries; a fresh context per call (tests, tools).
pub struct PlainDecompressor;

impl Decompressors for PlainDecompressor {
    fn decompress(&self, dict_id: u16, src: &[u8], capacity: usize) -> Result<Vec<u8>, String> {
        if dict_id != 0 {
            return Err(format!("dictionary {dict_id} not available"));
        }
        zstd::bulk::decompress(src, capacity).map_err(|e| e.to_string())
    }
}

/// An opened block: checksum verified, section A decompressed, section B borrowed.
pub struct OpenBlock<'a> {
    pub header: BlockHeader,
    pub a: Vec<u8>,
    pub b: &'a [u8],
}

/// Checks the checksum and decompresses section A.
pub fn open_block<'a>(
    block_key: u64,
    bytes: &'a [u8],
    dec: &dyn Decompressors,
) -> Result<OpenBlock<'a>, Corruption> {
    let h = BlockHeader::parse(block_key, bytes)?;
    let found = block_crc(&bytes[..HEADER_LEN - 4], &bytes[HEADER_LEN..]);
    if found != h.crc {
        return Err(Corruption::Checksum {
            block_key,
            expected: h.crc,
            found,
        });
    }
    let raw_len = h.raw_len as usize;
    if raw_len > MAX_RAW_LEN {
        return Err(Corruption::Header {
            block_key,
            reason: format!("raw length {raw_len} exceeds the {MAX_RAW_LEN}-byte limit"),
        });
    }
    let bad = |reason: String| Corruption::Payload { block_key, reason };
    let a_end = HEADER_LEN + h.a_len as usize;
    let stored_a = &bytes[HEADER_LEN..a_end];
    let a = match h.compression {
        Compression::None => stored_a.to_vec(),
        Compression::Zstd => dec
            .decompress(h.dict_id, stored_a, raw_len)
            .map_err(|e| bad(format!("zstd: {e}")))?,
    };
    if a.len() != raw_len {
        return Err(bad(format!(
            "section A is {} bytes, header says {raw_len}",
            a.len()
        )));
    }
    Ok(OpenBlock {
        header: h,
        a,
        b: &bytes[a_end..],
    })
}

/// A parsed view of an opened block: column slices, validated for size.
pub struct BlockView<'a> {
    pub block_key: u64,
    pub count: usize,
    cols: [&'a [u8]; COLUMNS],
    b: &'a [u8],
}

/// Varint count columns 8..=13, indexed 0..6 in the cursor.
const VARINT_COLS: usize = 6;

impl<'a> BlockView<'a> {
    pub fn parse(block_key: u64, blk: &'a OpenBlock<'_>) -> Result<BlockView<'a>, Corruption> {
        Self::parse_parts(block_key, blk.header.count as usize, &blk.a, blk.b)
    }

    /// Parses a block from its entry count, decompressed section A and section B.
    pub fn parse_parts(
        block_key: u64,
        count: usize,
        raw: &'a [u8],
        b: &'a [u8],
    ) -> Result<BlockView<'a>, Corruption> {
        let bad = |reason: String| Corruption::Payload { block_key, reason };
        if raw.len() < COLUMNS * 4 {
            return Err(bad("section A shorter than its column directory".into()));
        }
        let mut cols: [&[u8]; COLUMNS] = [&[]; COLUMNS];
        let mut off = COLUMNS * 4;
        for (i, col) in cols.iter_mut().enumerate() {
            let len =
                u32::from_le_bytes([raw[4 * i], raw[4 * i + 1], raw[4 * i + 2], raw[4 * i + 3]])
                    as usize;
            let end = off
                .checked_add(len)
                .filter(|&e| e <= raw.len())
                .ok_or_else(|| bad(format!("column {i} overruns section A")))?;
            *col = &raw[off..end];
            off = end;
        }
        if off != raw.len() {
            return Err(bad(format!(
                "{} trailing bytes in section A",
                raw.len() - off
            )));
        }
        if count == 0 {
            return Err(bad("empty block".into()));
        }
        if cols[0].len() != count || cols[1].len() != count {
            return Err(bad(
                "fragment or flag column does not match the entry count".into(),
            ));
        }
        let known = FLAG_KEY_ONLY | FLAG_EXTRA | FLAG_RAW_MOVES;
        if let Some(&f) = cols[1]
            .iter()
            .find(|&&f| f & !known != 0 || (f & FLAG_KEY_ONLY != 0 && f & FLAG_RAW_MOVES == 0))
        {
            return Err(bad(format!("invalid entry flags {f:#04x}")));
        }
        let key_only = cols[1].iter().filter(|&&f| f & FLAG_KEY_ONLY != 0).count();
        if cols[4].len() != 8 * key_only {
            return Err(bad("key column does not match the key-only entries".into()));
        }
        if let Some(&k) = cols[7].iter().find(|&&k| k & !KIND_EXTRA > KIND_GENERAL) {
            return Err(bad(format!("invalid move record kind {k}")));
        }
        Ok(BlockView {
            block_key,
            count,
            cols,
            b,
        })
    }

    pub fn fragment(&self, i: usize) -> u8 {
        self.cols[0][i]
    }

    /// Decodes every entry, recomputing keys from positions and checking them against the
    /// stored fragments.
    pub fn entries(
        &self,
        codec: &dyn PositionCodec,
        model: &dyn PositionModel,
    ) -> Result<Vec<Entry>, Corruption> {
        self.entries_as(codec, model, Keep::default())
    }

    /// Like [`BlockView::entries`], keeping what `keep` says as stored (for rewrites).
    pub fn entries_as(
        &self,
        codec: &dyn PositionCodec,
        model: &dyn PositionModel,
        keep: Keep,
    ) -> Result<Vec<Entry>, Corruption> {
        let mut out = Vec::with_capacity(self.count);
        let mut cur = Cursor::default();
        for i in 0..self.count {
            out.push(self.decode_at_known(i, &mut cur, codec, model, None, keep)?);
        }
        self.check_consumed(&cur)?;
        Ok(out)
    }

    /// Entries whose key equals `key` (several if positions collide on the key).
    pub fn find(
        &self,
        key: u64,
        codec: &dyn PositionCodec,
        model: &dyn PositionModel,
    ) -> Result<Vec<Entry>, Corruption> {
        let frag = key as u8;
        let mut out = Vec::new();
        let mut cur = Cursor::default();
        let mut at = 0;
        for i in 0..self.count {
            if self.fragment(i) != frag {
                continue;
            }
            self.seek(&mut cur, at, i)?;
            let e = self.decode_at(i, &mut cur, codec, model)?;
            at = i + 1;
            if e.key == key {
                out.push(e);
            }
        }
        Ok(out)
    }

    /// The entry whose stored position bytes equal `coded` (a position coded with this
    /// block's model) and whose key fragment matches; decodes only that entry.
    pub fn find_coded(
        &self,
        key: u64,
        coded: &[u8],
        codec: &dyn PositionCodec,
        model: &dyn PositionModel,
    ) -> Result<Option<Entry>, Corruption> {
        self.find_coded_known(key, coded, None, codec, model)
    }

    /// As [`BlockView::find_coded`]; with `pos` (the position `coded` encodes, with key `key`)
    /// the matching entry's position is not decoded again.
    pub fn find_coded_known(
        &self,
        key: u64,
        coded: &[u8],
        pos: Option<&[u8]>,
        codec: &dyn PositionCodec,
        model: &dyn PositionModel,
    ) -> Result<Option<Entry>, Corruption> {
        let frag = key as u8;
        let mut cur = Cursor::default();
        let mut at = 0;
        for i in 0..self.count {
            if self.fragment(i) != frag || self.cols[1][i] & FLAG_KEY_ONLY != 0 {
                continue;
            }
            self.seek(&mut cur, at, i)?;
            at = i;
            let mut p = cur.poslen;
            let len = varint::get(self.cols[3], &mut p)
                .ok_or_else(|| self.bad(format!("position length of entry {i} unreadable")))?
                as usize;
            let stored = self
                .b
                .get(cur.b..cur.b.saturating_add(len))
                .ok_or_else(|| self.bad(format!("position of entry {i} overruns section B")))?;
            if stored == coded {
                let e = self.decode_at_known(
                    i,
                    &mut cur,
                    codec,
                    model,
                    pos.map(|p| (key, p)),
                    Keep::default(),
                )?;
                return Ok((e.key == key).then_some(e));
            }
        }
        Ok(None)
    }

    fn bad(&self, reason: String) -> Corruption {
        Corruption::Payload {
            block_key: self.block_key,
            reason,
        }
    }

    /// Reads entry i's move count, bounded by the moves the block actually holds (every move
    /// has one kind byte), so later offset arithmetic cannot overflow.
    fn move_count(&self, cur: &mut Cursor, i: usize) -> Result<usize, Corruption> {
        let n = varint::get(self.cols[2], &mut cur.nmoves)
            .ok_or_else(|| self.bad(format!("move count of entry {i} unreadable")))?;
        let left = self.cols[7].len().saturating_sub(cur.moves);
        match usize::try_from(n) {
            Ok(n) if n <= left => Ok(n),
            _ => Err(self.bad(format!(
                "entry {i} claims {n} moves, the block holds {left} more"
            ))),
        }
    }

    fn kinds(&self, cur: &Cursor, n: usize, i: usize) -> Result<&'a [u8], Corruption> {
        self.cols[7]
            .get(cur.moves..cur.moves + n)
            .ok_or_else(|| self.bad(format!("kind column too short at entry {i}")))
    }

    /// Advances the cursor over entries `from..to` without decoding them.
    fn seek(&self, cur: &mut Cursor, from: usize, to: usize) -> Result<(), Corruption> {
        for i in from..to {
            let flags = self.cols[1][i];
            let n = self.move_count(cur, i)?;
            if flags & FLAG_KEY_ONLY != 0 {
                cur.key_only += 1;
            } else {
                let len = varint::get(self.cols[3], &mut cur.poslen)
                    .ok_or_else(|| self.bad(format!("position length of entry {i} unreadable")))?;
                cur.b = cur.b.saturating_add(len as usize);
            }
            if flags & FLAG_RAW_MOVES != 0 {
                cur.raw_moves += n;
            } else {
                cur.idx_moves += n;
            }
            for &k in self.kinds(cur, n, i)? {
                cur.count_values(k & !KIND_EXTRA);
                cur.extra += usize::from(k & KIND_EXTRA != 0);
            }
            cur.moves += n;
        }
        Ok(())
    }

    fn next_value(&self, cur: &mut Cursor, c: usize, i: usize) -> Result<u64, Corruption> {
        let col = self.cols[8 + c];
        if cur.offs_at[c] < cur.vals[c] {
            let gap = cur.vals[c] - cur.offs_at[c];
            let rest = col.get(cur.offs[c]..).unwrap_or(&[]);
            cur.offs[c] += varint::skip(rest, gap)
                .ok_or_else(|| self.bad(format!("count column {c} too short")))?;
            cur.offs_at[c] = cur.vals[c];
        }
        let v = varint::get(col, &mut cur.offs[c])
            .ok_or_else(|| self.bad(format!("count column {c} unreadable at entry {i}")))?;
        cur.vals[c] += 1;
        cur.offs_at[c] = cur.vals[c];
        Ok(v)
    }

    fn decode_at(
        &self,
        i: usize,
        cur: &mut Cursor,
        codec: &dyn PositionCodec,
        model: &dyn PositionModel,
    ) -> Result<Entry, Corruption> {
        self.decode_at_known(i, cur, codec, model, None, Keep::default())
    }

    /// Decodes entry i; `known` is its (key, position) when the caller has already matched
    /// the stored position bytes, which saves decoding the position and recomputing the key.
    fn decode_at_known(
        &self,
        i: usize,
        cur: &mut Cursor,
        codec: &dyn PositionCodec,
        model: &dyn PositionModel,
        known: Option<(u64, &[u8])>,
        keep: Keep,
    ) -> Result<Entry, Corruption> {
        let keep_indices = keep.indices;
        let flags = self.cols[1][i];
        let n = self.move_count(cur, i)?;
        let entry_err = |reason: String| Corruption::Entry {
            block_key: self.block_key,
            index: i,
            reason,
        };
        let raw_moves = flags & FLAG_RAW_MOVES != 0;
        let idx = if raw_moves {
            None
        } else {
            let idx = self.cols[5]
                .get(cur.idx_moves..cur.idx_moves + n)
                .ok_or_else(|| self.bad(format!("move index column too short at entry {i}")))?;
            cur.idx_moves += n;
            Some(idx)
        };
        let mut unindexed = None;
        let mut stored = None;
        let (key, pos) = if flags & FLAG_KEY_ONLY != 0 {
            let o = 8 * cur.key_only;
            let mut k = [0u8; 8];
            k.copy_from_slice(&self.cols[4][o..o + 8]);
            cur.key_only += 1;
            (u64::from_le_bytes(k), None)
        } else {
            let len = varint::get(self.cols[3], &mut cur.poslen)
                .ok_or_else(|| self.bad(format!("position length of entry {i} unreadable")))?
                as usize;
            let coded = self
                .b
                .get(cur.b..cur.b.saturating_add(len))
                .ok_or_else(|| self.bad(format!("position of entry {i} overruns section B")))?;
            cur.b += len;
            // Only bytes as the encoder writes them (no trailing zero byte, which the decoder
            // would read the same) pass through, so a rewrite's file depends only on content.
            if keep.coded && coded.last() != Some(&0) && coded.len() <= MAX_PASSED_CODE {
                stored = Some(coded.to_vec());
            }
            if let Some((key, pos)) = known {
                (key, Some(pos.to_vec()))
            } else {
                let r = codec
                    .restore(model, coded, idx.filter(|_| !keep_indices))
                    .map_err(|reason| entry_err(format!("position undecodable: {reason}")))?;
                unindexed = r.moves;
                (r.key, Some(r.pos))
            }
        };
        if key as u8 != self.fragment(i) {
            return Err(Corruption::KeyMismatch {
                block_key: self.block_key,
                index: i,
                expected: (key & !0xff) | u64::from(self.fragment(i)),
                found: key,
            });
        }
        let kept_indices = keep_indices && idx.is_some() && pos.is_some();
        let codes: Vec<u16> = match idx {
            None => {
                let col = self.cols[6];
                let bytes = col
                    .get(2 * cur.raw_moves..2 * (cur.raw_moves + n))
                    .ok_or_else(|| self.bad(format!("raw move column too short at entry {i}")))?;
                cur.raw_moves += n;
                bytes
                    .chunks_exact(2)
                    .map(|c| u16::from_le_bytes([c[0], c[1]]))
                    .collect()
            }
            Some(idx) if keep_indices && pos.is_some() => {
                idx.iter().map(|&i| u16::from(i)).collect()
            }
            Some(idx) => match unindexed {
                Some(r) => r,
                None => {
                    let pos = pos.as_deref().unwrap_or_default();
                    codec.unindex_moves(pos, idx)
                }
            }
            .map_err(|reason| entry_err(format!("move indices invalid: {reason}")))?,
        };
        let kinds = self.kinds(cur, n, i)?;
        let extras = kinds.iter().filter(|&&k| k & KIND_EXTRA != 0).count();
        if (extras > 0) != (flags & FLAG_EXTRA != 0) {
            return Err(self.bad(format!("extra flag of entry {i} disagrees with its moves")));
        }
        if self.cols[14].len() < 2 * (cur.extra + extras)
            || self.cols[15].len() < 4 * (cur.extra + extras)
        {
            return Err(self.bad(format!("extra columns too short at entry {i}")));
        }
        let mut moves = Vec::with_capacity(n);
        for (&kind, &mv) in kinds.iter().zip(&codes) {
            let has_extra = kind & KIND_EXTRA != 0;
            let kind = kind & !KIND_EXTRA;
            let mut rec = MoveRec {
                mv,
                indexed: kept_indices,
                ..Default::default()
            };
            match kind {
                0..=7 => {
                    match kind & 3 {
                        0 => rec.white = 1,
                        1 => rec.draws = 1,
                        2 => rec.black = 1,
                        _ => rec.unknown = 1,
                    }
                    if kind >= 4 {
                        rec.rating_sum = self.next_value(cur, 4, i)?;
                        rec.rating_count = 1;
                    }
                }
                _ => {
                    rec.white = self.next_value(cur, 0, i)?;
                    rec.draws = self.next_value(cur, 1, i)?;
                    rec.black = self.next_value(cur, 2, i)?;
                    rec.unknown = self.next_value(cur, 3, i)?;
                    rec.rating_sum = self.next_value(cur, 4, i)?;
                    rec.rating_count = self.next_value(cur, 5, i)?;
                }
            }
            if has_extra {
                let p = cur.extra;
                cur.extra += 1;
                rec.extra = Some(MoveExtra {
                    weight: u16::from_le_bytes([self.cols[14][2 * p], self.cols[14][2 * p + 1]]),
                    learn: u32::from_le_bytes([
                        self.cols[15][4 * p],
                        self.cols[15][4 * p + 1],
                        self.cols[15][4 * p + 2],
                        self.cols[15][4 * p + 3],
                    ]),
                });
            }
            moves.push(rec);
        }
        if codes.len() != n {
            return Err(entry_err("move count and moves differ".into()));
        }
        cur.moves += n;
        Ok(Entry {
            coded: stored,
            key,
            pos,
            moves,
        })
    }

    fn check_consumed(&self, cur: &Cursor) -> Result<(), Corruption> {
        let ok = cur.nmoves == self.cols[2].len()
            && cur.poslen == self.cols[3].len()
            && cur.b == self.b.len()
            && cur.idx_moves == self.cols[5].len()
            && 2 * cur.raw_moves == self.cols[6].len()
            && cur.moves == self.cols[7].len()
            && (0..VARINT_COLS).all(|c| cur.offs[c] == self.cols[8 + c].len())
            && 2 * cur.extra == self.cols[14].len()
            && 4 * cur.extra == self.cols[15].len();
        if ok {
            Ok(())
        } else {
            Err(self.bad("columns hold bytes beyond the last entry".into()))
        }
    }
}

/// Running offsets while walking a block's entries in order.
#[derive(Default)]
struct Cursor {
    nmoves: usize,
    poslen: usize,
    b: usize,
    key_only: usize,
    moves: usize,
    idx_moves: usize,
    raw_moves: usize,
    /// Moves with an extra (entries in columns 14 and 15) so far.
    extra: usize,
    /// Values consumed so far in each varint count column.
    vals: [usize; VARINT_COLS],
    /// Byte offsets into the varint columns, valid after `offs_at` values.
    offs: [usize; VARINT_COLS],
    offs_at: [usize; VARINT_COLS],
}

impl Cursor {
    fn count_values(&mut self, kind: u8) {
        match kind {
            0..=3 => {}
            4..=7 => self.vals[4] += 1,
            _ => {
                for v in &mut self.vals {
                    *v += 1;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chess::ChessCodec;
    use crate::store::IdentityModel;
    use proptest::prelude::*;
    use std::sync::Arc;

    fn sample_entries() -> Vec<Entry> {
        let codec = ChessCodec;
        let mut v: Vec<Entry> = crate::chess::tests_support::sample_positions()
            .into_iter()
            .enumerate()
            .map(|(i, pos)| Entry {
                coded: None,
                key: codec.key(&pos).unwrap(),
                pos: Some(pos),
                moves: vec![MoveRec {
                    mv: 796 + i as u16,
                    white: i as u64,
                    draws: 1,
                    black: 300,
                    unknown: 0,
                    rating_sum: 2500 * i as u64,
                    rating_count: i as u64,
                    extra: None,
                    indexed: false,
                }],
            })
            .collect();
        v.push(Entry {
            coded: None,
            key: 0x1234_5678_9abc_def0,
            pos: None,
            moves: vec![MoveRec {
                mv: 12,
                extra: Some(MoveExtra {
                    weight: 7,
                    learn: 9,
                }),
                ..Default::default()
            }],
        });
        v.sort_by(|a, b| a.cmp_id(b));
        v
    }

    fn chess_model() -> Arc<dyn PositionModel> {
        let codec = ChessCodec;
        let samples = crate::chess::tests_support::sample_positions();
        let refs: Vec<&[u8]> = samples.iter().map(Vec::as_slice).collect();
        codec.load_model(&codec.train(&refs).unwrap()).unwrap()
    }

    fn seal_entries(entries: &[Entry], model: &dyn PositionModel, compress: bool) -> Vec<u8> {
        let p = build_payload(entries, &ChessCodec, model).unwrap();
        let mut c = zstd::bulk::Compressor::new(3).unwrap();
        seal(&p, 1, compress.then_some((&mut c, 0))).unwrap()
    }

    fn round_trip(entries: &[Entry], model: &dyn PositionModel, compress: bool) -> Vec<Entry> {
        let codec = ChessCodec;
        let block = seal_entries(entries, model, compress);
        let blk = open_block(1, &block, &PlainDecompressor).unwrap();
        let view = BlockView::parse(1, &blk).unwrap();
        for e in entries {
            assert!(view.find(e.key, &codec, model).unwrap().contains(e));
            if let Some(p) = &e.pos {
                let mut coded = Vec::new();
                model.encode(p, &mut coded).unwrap();
                assert_eq!(
                    view.find_coded(e.key, &coded, &codec, model)
                        .unwrap()
                        .as_ref(),
                    Some(e)
                );
            }
        }
        view.entries(&codec, model).unwrap()
    }

    #[test]
    fn block_round_trip() {
        let entries = sample_entries();
        let m = chess_model();
        assert_eq!(round_trip(&entries, &*m, true), entries);
        assert_eq!(round_trip(&entries, &*m, false), entries);
        assert_eq!(round_trip(&entries, &IdentityModel, true), entries);
    }

    #[test]
    fn flipped_bytes_are_detected() {
        let entries = sample_entries();
        let block = seal_entries(&entries, &*chess_model(), true);
        for i in 0..block.len() {
            let mut bad = block.clone();
            bad[i] ^= 0x40;
            assert!(
                open_block(1, &bad, &PlainDecompressor).is_err(),
                "flip at byte {i} undetected"
            );
        }
    }

    /// Inputs found by fuzzing (fuzz/regressions): huge move counts in a checksummed block.
    #[test]
    fn fuzz_regressions_do_not_panic() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("fuzz/regressions");
        for name in ["block-1", "block-2"] {
            let Ok(data) = std::fs::read(dir.join(name)) else {
                continue;
            };
            let codec = ChessCodec;
            for model in [&IdentityModel as &dyn PositionModel, &*chess_model()] {
                for skip in 0..data.len().min(16) {
                    if let Ok(blk) = open_block(1, &data[skip..], &PlainDecompressor)
                        && let Ok(v) = BlockView::parse(1, &blk)
                    {
                        let _ = v.entries(&codec, model);
                        let _ = v.find(0, &codec, model);
                    }
                }
            }
        }
        // The same shape built directly: a count of 2^63 moves.
        let mut entries = sample_entries();
        entries.truncate(2);
        let p = build_payload(&entries, &ChessCodec, &IdentityModel).unwrap();
        let mut a = p.a.clone();
        let dir_len = COLUMNS * 4;
        let col2_start = dir_len + entries.len() * 2;
        a[col2_start] = 0xff;
        let mut forged = p.a.clone();
        forged.clear();
        forged.extend_from_slice(&a);
        let forged = Payload {
            count: p.count,
            a: forged,
            b: p.b.clone(),
        };
        let sealed = seal(&forged, 0, None).unwrap();
        let blk = open_block(1, &sealed, &PlainDecompressor).unwrap();
        if let Ok(v) = BlockView::parse(1, &blk) {
            assert!(v.entries(&ChessCodec, &IdentityModel).is_err());
        }
    }

    proptest! {
        #[test]
        fn garbage_blocks_never_panic(data in proptest::collection::vec(any::<u8>(), 0..300)) {
            let codec = ChessCodec;
            let m = IdentityModel;
            if let Ok(blk) = open_block(1, &data, &PlainDecompressor)
                && let Ok(v) = BlockView::parse(1, &blk)
            {
                let _ = v.entries(&codec, &m);
                let _ = v.find(0, &codec, &m);
                let _ = v.find_coded(0, &[1, 2], &codec, &m);
            }
            // Arbitrary bytes as an unchecked, uncompressed block body.
            let blk = OpenBlock {
                header: BlockHeader {
                    version: 1, compression: Compression::None, dict_id: 0, model_id: 0,
                    count: (data.len() / 7).max(1) as u32, raw_len: data.len() as u32,
                    a_len: data.len() as u32, crc: 0,
                },
                a: data.clone(),
                b: &data,
            };
            if let Ok(v) = BlockView::parse(1, &blk) {
                let _ = v.entries(&codec, &m);
                let _ = v.find(0, &codec, &m);
                let _ = v.find_coded(0, &data, &codec, &m);
            }
        }

        #[test]
        fn random_entries_round_trip(
            counts in proptest::collection::vec((any::<u64>(), any::<u32>(), 0u64..5, any::<u16>()), 1..8)
        ) {
            let mut entries = sample_entries();
            for (e, &(w, d, b, mv)) in entries.iter_mut().zip(&counts) {
                e.moves[0].white = w;
                e.moves[0].draws = u64::from(d);
                e.moves[0].black = b;
                e.moves.push(MoveRec { mv: mv | 0x8000, unknown: w / 3, ..Default::default() });
                if e.pos.is_none() {
                    for m in &mut e.moves {
                        m.extra.get_or_insert_default();
                    }
                }
                e.normalize();
            }
            prop_assert_eq!(round_trip(&entries, &IdentityModel, true), entries);
        }
    }
}

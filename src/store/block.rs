//! Value blocks: a 16-byte header and a (usually zstd-compressed) columnar payload of entries
//! sorted by (key, position). Byte maps are in docs/FORMAT.md §3.

use super::entry::{Entry, MoveRec, PolyglotExtra};
use super::{PositionCodec, varint};
use crate::error::Corruption;

pub const BLOCK_VERSION: u8 = 1;
pub const HEADER_LEN: usize = 16;
/// Largest raw payload a reader accepts (guards allocations against corrupt headers).
pub const MAX_RAW_LEN: usize = 64 << 20;
pub const COLUMNS: usize = 14;

pub const FLAG_KEY_ONLY: u8 = 1;
pub const FLAG_POLYGLOT: u8 = 2;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Compression {
    None = 0,
    Zstd = 1,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct BlockHeader {
    pub version: u8,
    pub compression: Compression,
    pub dict_id: u16,
    pub count: u32,
    pub raw_len: u32,
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
        let u32_at = |i: usize| u32::from_le_bytes([bytes[i], bytes[i + 1], bytes[i + 2], bytes[i + 3]]);
        let h = BlockHeader {
            version: bytes[0],
            compression: match bytes[1] {
                0 => Compression::None,
                1 => Compression::Zstd,
                c => return Err(bad(format!("unknown compression id {c}"))),
            },
            dict_id: u16::from_le_bytes([bytes[2], bytes[3]]),
            count: u32_at(4),
            raw_len: u32_at(8),
            crc: u32_at(12),
        };
        if h.version != BLOCK_VERSION {
            return Err(bad(format!("unknown block version {}", h.version)));
        }
        Ok(h)
    }

    fn write(&self, out: &mut Vec<u8>) {
        out.push(self.version);
        out.push(self.compression as u8);
        out.extend_from_slice(&self.dict_id.to_le_bytes());
        out.extend_from_slice(&self.count.to_le_bytes());
        out.extend_from_slice(&self.raw_len.to_le_bytes());
        out.extend_from_slice(&self.crc.to_le_bytes());
    }
}

fn block_crc(header12: &[u8], payload: &[u8]) -> u32 {
    let mut h = crc32fast::Hasher::new();
    h.update(header12);
    h.update(payload);
    h.finalize()
}

/// Builds the raw (uncompressed) columnar payload of sorted entries.
pub fn build_payload(entries: &[Entry], codec: &dyn PositionCodec) -> Result<Vec<u8>, String> {
    let width = codec.planes();
    let mut cols: [Vec<u8>; COLUMNS] = Default::default();
    let positioned: Vec<&Vec<u8>> = entries.iter().filter_map(|e| e.pos.as_ref()).collect();
    let m = positioned.len();
    let mut planes = vec![0u8; width * m];
    let mut one = vec![0u8; width];
    for (j, pos) in positioned.iter().enumerate() {
        codec.to_planes(pos, &mut one)?;
        for (p, &b) in one.iter().enumerate() {
            planes[p * m + j] = b;
        }
    }
    cols[3] = planes;
    for e in entries {
        cols[0].extend_from_slice(&(e.key as u16).to_le_bytes());
        let pg = e.has_polyglot();
        let flags = if e.pos.is_none() { FLAG_KEY_ONLY } else { 0 } | if pg { FLAG_POLYGLOT } else { 0 };
        cols[1].push(flags);
        varint::put(&mut cols[2], e.moves.len() as u64);
        if e.pos.is_none() {
            cols[4].extend_from_slice(&e.key.to_le_bytes());
        }
        for mv in &e.moves {
            cols[5].extend_from_slice(&mv.mv.to_le_bytes());
            varint::put(&mut cols[6], mv.white);
            varint::put(&mut cols[7], mv.draws);
            varint::put(&mut cols[8], mv.black);
            varint::put(&mut cols[9], mv.unknown);
            varint::put(&mut cols[10], mv.rating_sum);
            varint::put(&mut cols[11], mv.rating_count);
            if pg {
                let x = mv.polyglot.unwrap_or_default();
                cols[12].extend_from_slice(&x.weight.to_le_bytes());
                cols[13].extend_from_slice(&x.learn.to_le_bytes());
            }
        }
    }
    let total: usize = cols.iter().map(Vec::len).sum();
    let mut out = Vec::with_capacity(COLUMNS * 4 + total);
    for c in &cols {
        out.extend_from_slice(&(c.len() as u32).to_le_bytes());
    }
    for c in &cols {
        out.extend_from_slice(c);
    }
    Ok(out)
}

/// Seals a raw payload into a block: header + (compressed) payload, checksummed.
pub fn seal(
    count: usize,
    raw: &[u8],
    compressor: Option<(&mut zstd::bulk::Compressor<'_>, u16)>,
) -> std::io::Result<Vec<u8>> {
    let (compression, dict_id, payload) = match compressor {
        Some((c, dict_id)) => (Compression::Zstd, dict_id, c.compress(raw)?),
        None => (Compression::None, 0, raw.to_vec()),
    };
    let mut header = BlockHeader {
        version: BLOCK_VERSION,
        compression,
        dict_id,
        count: count as u32,
        raw_len: raw.len() as u32,
        crc: 0,
    };
    let mut out = Vec::with_capacity(HEADER_LEN + payload.len());
    header.write(&mut out);
    header.crc = block_crc(&out[..12], &payload);
    out.truncate(12);
    out.extend_from_slice(&header.crc.to_le_bytes());
    out.extend_from_slice(&payload);
    Ok(out)
}

/// Checks the checksum and returns the raw payload (decompressing with `dict` if needed).
pub fn open_block(
    block_key: u64,
    bytes: &[u8],
    dict: &dyn Fn(u16) -> Option<std::sync::Arc<Vec<u8>>>,
) -> Result<(BlockHeader, Vec<u8>), Corruption> {
    let h = BlockHeader::parse(block_key, bytes)?;
    let payload = &bytes[HEADER_LEN..];
    let found = block_crc(&bytes[..12], payload);
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
    let raw = match h.compression {
        Compression::None => payload.to_vec(),
        Compression::Zstd => {
            let mut out = Vec::with_capacity(raw_len);
            let res = if h.dict_id == 0 {
                zstd::bulk::Decompressor::new().and_then(|mut d| d.decompress_to_buffer(payload, &mut out))
            } else {
                let d = dict(h.dict_id)
                    .ok_or_else(|| bad(format!("dictionary {} missing from meta table", h.dict_id)))?;
                zstd::bulk::Decompressor::with_dictionary(&d)
                    .and_then(|mut dc| dc.decompress_to_buffer(payload, &mut out))
            };
            res.map_err(|e| bad(format!("zstd: {e}")))?;
            out
        }
    };
    if raw.len() != raw_len {
        return Err(bad(format!(
            "payload is {} bytes, header says {raw_len}",
            raw.len()
        )));
    }
    Ok((h, raw))
}

/// A parsed view of a raw payload: column slices, validated for size.
pub struct BlockView<'a> {
    pub block_key: u64,
    pub count: usize,
    cols: [&'a [u8]; COLUMNS],
    /// Number of positioned entries (= plane length).
    m: usize,
    width: usize,
}

impl<'a> BlockView<'a> {
    pub fn parse(
        block_key: u64,
        count: usize,
        raw: &'a [u8],
        width: usize,
    ) -> Result<BlockView<'a>, Corruption> {
        let bad = |reason: String| Corruption::Payload { block_key, reason };
        if raw.len() < COLUMNS * 4 {
            return Err(bad("payload shorter than its column directory".into()));
        }
        let mut cols: [&[u8]; COLUMNS] = [&[]; COLUMNS];
        let mut off = COLUMNS * 4;
        for (i, col) in cols.iter_mut().enumerate() {
            let len = u32::from_le_bytes([raw[4 * i], raw[4 * i + 1], raw[4 * i + 2], raw[4 * i + 3]]) as usize;
            let end = off
                .checked_add(len)
                .filter(|&e| e <= raw.len())
                .ok_or_else(|| bad(format!("column {i} overruns the payload")))?;
            *col = &raw[off..end];
            off = end;
        }
        if off != raw.len() {
            return Err(bad(format!("{} trailing payload bytes", raw.len() - off)));
        }
        if count == 0 {
            return Err(bad("empty block".into()));
        }
        if cols[0].len() != 2 * count || cols[1].len() != count {
            return Err(bad("fragment or flag column does not match the entry count".into()));
        }
        let key_only = cols[1].iter().filter(|&&f| f & FLAG_KEY_ONLY != 0).count();
        if let Some(&f) = cols[1].iter().find(|&&f| f & !(FLAG_KEY_ONLY | FLAG_POLYGLOT) != 0) {
            return Err(bad(format!("unknown entry flags {f:#04x}")));
        }
        let m = count - key_only;
        if cols[3].len() != m * width || cols[4].len() != 8 * key_only {
            return Err(bad("plane or key column does not match the entry count".into()));
        }
        Ok(BlockView {
            block_key,
            count,
            cols,
            m,
            width,
        })
    }

    pub fn fragment(&self, i: usize) -> u16 {
        u16::from_le_bytes([self.cols[0][2 * i], self.cols[0][2 * i + 1]])
    }

    /// Decodes every entry, recomputing keys from positions and checking them against the
    /// stored fragments.
    pub fn entries(&self, codec: &dyn PositionCodec) -> Result<Vec<Entry>, Corruption> {
        let mut out = Vec::with_capacity(self.count);
        let mut cur = Cursor::default();
        for i in 0..self.count {
            out.push(self.decode_at(i, &mut cur, codec)?);
        }
        self.check_consumed(&cur)?;
        Ok(out)
    }

    /// Entries whose key equals `key` (several if positions collide on the key).
    pub fn find(&self, key: u64, codec: &dyn PositionCodec) -> Result<Vec<Entry>, Corruption> {
        let frag = key as u16;
        let mut out = Vec::new();
        let mut cur = Cursor::default();
        let mut at = 0;
        for i in 0..self.count {
            if self.fragment(i) != frag {
                continue;
            }
            self.seek(&mut cur, at, i)?;
            let e = self.decode_at(i, &mut cur, codec)?;
            at = i + 1;
            if e.key == key {
                out.push(e);
            }
        }
        Ok(out)
    }

    fn bad(&self, reason: String) -> Corruption {
        Corruption::Payload {
            block_key: self.block_key,
            reason,
        }
    }

    /// Advances the cursor over entries `from..to` without decoding them.
    fn seek(&self, cur: &mut Cursor, from: usize, to: usize) -> Result<(), Corruption> {
        for i in from..to {
            let flags = self.cols[1][i];
            let n = varint::get(self.cols[2], &mut cur.nmoves)
                .ok_or_else(|| self.bad(format!("move count of entry {i} unreadable")))? as usize;
            if flags & FLAG_KEY_ONLY != 0 {
                cur.key_only += 1;
            } else {
                cur.positioned += 1;
            }
            cur.moves += n;
            if flags & FLAG_POLYGLOT != 0 {
                cur.pg += n;
            }
        }
        Ok(())
    }

    fn decode_at(
        &self,
        i: usize,
        cur: &mut Cursor,
        codec: &dyn PositionCodec,
    ) -> Result<Entry, Corruption> {
        let flags = self.cols[1][i];
        let n = varint::get(self.cols[2], &mut cur.nmoves)
            .ok_or_else(|| self.bad(format!("move count of entry {i} unreadable")))? as usize;
        let (key, pos) = if flags & FLAG_KEY_ONLY != 0 {
            let o = 8 * cur.key_only;
            let mut k = [0u8; 8];
            k.copy_from_slice(&self.cols[4][o..o + 8]);
            cur.key_only += 1;
            (u64::from_le_bytes(k), None)
        } else {
            let j = cur.positioned;
            cur.positioned += 1;
            let planes: Vec<u8> = (0..self.width).map(|p| self.cols[3][p * self.m + j]).collect();
            let pos = codec.from_planes(&planes).map_err(|reason| Corruption::Entry {
                block_key: self.block_key,
                index: i,
                reason: format!("position planes invalid: {reason}"),
            })?;
            let key = codec.key(&pos).map_err(|reason| Corruption::Entry {
                block_key: self.block_key,
                index: i,
                reason: format!("position invalid: {reason}"),
            })?;
            (key, Some(pos))
        };
        if key as u16 != self.fragment(i) {
            return Err(Corruption::KeyMismatch {
                block_key: self.block_key,
                index: i,
                expected: (key & !0xffff) | u64::from(self.fragment(i)),
                found: key,
            });
        }
        let mv_col = self.cols[5];
        if mv_col.len() < 2 * (cur.moves + n) {
            return Err(self.bad(format!("move column too short at entry {i}")));
        }
        let pg = flags & FLAG_POLYGLOT != 0;
        if pg && (self.cols[12].len() < 2 * (cur.pg + n) || self.cols[13].len() < 4 * (cur.pg + n)) {
            return Err(self.bad(format!("polyglot columns too short at entry {i}")));
        }
        if cur.counts_at < cur.moves {
            let gap = cur.moves - cur.counts_at;
            for c in 0..6 {
                let col = &self.cols[6 + c][cur.counts[c].min(self.cols[6 + c].len())..];
                cur.counts[c] += varint::skip(col, gap)
                    .ok_or_else(|| self.bad(format!("count column {c} too short")))?;
            }
            cur.counts_at = cur.moves;
        }
        let mut moves = Vec::with_capacity(n);
        for k in 0..n {
            let mi = cur.moves + k;
            let mut vals = [0u64; 6];
            for (c, v) in vals.iter_mut().enumerate() {
                *v = varint::get(self.cols[6 + c], &mut cur.counts[c])
                    .ok_or_else(|| self.bad(format!("count column {c} unreadable at entry {i}")))?;
            }
            let polyglot = pg.then(|| {
                let p = cur.pg + k;
                PolyglotExtra {
                    weight: u16::from_le_bytes([self.cols[12][2 * p], self.cols[12][2 * p + 1]]),
                    learn: u32::from_le_bytes([
                        self.cols[13][4 * p],
                        self.cols[13][4 * p + 1],
                        self.cols[13][4 * p + 2],
                        self.cols[13][4 * p + 3],
                    ]),
                }
            });
            moves.push(MoveRec {
                mv: u16::from_le_bytes([mv_col[2 * mi], mv_col[2 * mi + 1]]),
                white: vals[0],
                draws: vals[1],
                black: vals[2],
                unknown: vals[3],
                rating_sum: vals[4],
                rating_count: vals[5],
                polyglot,
            });
        }
        cur.moves += n;
        cur.counts_at = cur.moves;
        if pg {
            cur.pg += n;
        }
        Ok(Entry { key, pos, moves })
    }

    fn check_consumed(&self, cur: &Cursor) -> Result<(), Corruption> {
        let ok = cur.nmoves == self.cols[2].len()
            && 2 * cur.moves == self.cols[5].len()
            && (6..12).all(|c| cur.counts[c - 6] == self.cols[c].len())
            && 2 * cur.pg == self.cols[12].len()
            && 4 * cur.pg == self.cols[13].len();
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
    positioned: usize,
    key_only: usize,
    moves: usize,
    pg: usize,
    /// Byte offsets into the six varint count columns, valid for move index `counts_at`.
    counts: [usize; 6],
    counts_at: usize,
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chess::ChessCodec;
    use proptest::prelude::*;

    fn sample_entries() -> Vec<Entry> {
        let codec = ChessCodec;
        let mut v: Vec<Entry> = crate::chess::tests_support::sample_positions()
            .into_iter()
            .enumerate()
            .map(|(i, pos)| Entry {
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
                    polyglot: None,
                }],
            })
            .collect();
        v.push(Entry {
            key: 0x1234_5678_9abc_def0,
            pos: None,
            moves: vec![MoveRec {
                mv: 12,
                polyglot: Some(PolyglotExtra { weight: 7, learn: 9 }),
                ..Default::default()
            }],
        });
        v.sort_by(|a, b| a.cmp_id(b));
        v
    }

    fn round_trip(entries: &[Entry], compress: bool) -> Vec<Entry> {
        let codec = ChessCodec;
        let raw = build_payload(entries, &codec).unwrap();
        let mut c = zstd::bulk::Compressor::new(3).unwrap();
        let block = seal(entries.len(), &raw, compress.then_some((&mut c, 0))).unwrap();
        let (h, raw2) = open_block(1, &block, &|_| None).unwrap();
        assert_eq!(raw, raw2);
        let view = BlockView::parse(1, h.count as usize, &raw2, codec.planes()).unwrap();
        for e in entries {
            assert!(view.find(e.key, &codec).unwrap().contains(e));
        }
        view.entries(&codec).unwrap()
    }

    #[test]
    fn block_round_trip() {
        let entries = sample_entries();
        assert_eq!(round_trip(&entries, true), entries);
        assert_eq!(round_trip(&entries, false), entries);
    }

    #[test]
    fn flipped_bytes_are_detected() {
        let entries = sample_entries();
        let codec = ChessCodec;
        let raw = build_payload(&entries, &codec).unwrap();
        let mut c = zstd::bulk::Compressor::new(3).unwrap();
        let block = seal(entries.len(), &raw, Some((&mut c, 0))).unwrap();
        for i in 0..block.len() {
            let mut bad = block.clone();
            bad[i] ^= 0x40;
            assert!(open_block(1, &bad, &|_| None).is_err(), "flip at byte {i} undetected");
        }
    }

    proptest! {
        #[test]
        fn garbage_blocks_never_panic(data in proptest::collection::vec(any::<u8>(), 0..300)) {
            let codec = ChessCodec;
            if let Ok((h, raw)) = open_block(1, &data, &|_| None) {
                if let Ok(v) = BlockView::parse(1, h.count as usize, &raw, codec.planes()) {
                    let _ = v.entries(&codec);
                    let _ = v.find(0, &codec);
                }
            }
            // Also feed arbitrary bytes as an uncompressed payload directly.
            if let Ok(v) = BlockView::parse(1, (data.len() / 7).max(1), &data, codec.planes()) {
                let _ = v.entries(&codec);
                let _ = v.find(0, &codec);
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
                        m.polyglot.get_or_insert_default();
                    }
                }
                e.normalize();
            }
            prop_assert_eq!(round_trip(&entries, true), entries);
        }
    }
}

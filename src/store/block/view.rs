//! Column coding, reader side: [`BlockView`] checks an opened block's column directory and
//! decodes its entries (all of them, the ones with a key, or the one with given coded position
//! bytes), walking the columns with a cursor.

use super::coded::{CodedCells, cells_corruption};
use super::header::OpenBlock;
use super::{
    BLOCK_VERSION_CELLS, BLOCK_VERSION_GAME_CELLS, COLUMNS, FLAG_CELLS, FLAG_EXTRA, FLAG_KEY_ONLY,
    FLAG_RAW_MOVES, KIND_EXTRA, KIND_GAME_CELLS, KIND_GENERAL, V1_COLUMNS, V2_COLUMNS,
};
use crate::store::cells::{CellRead, EntryCellsError};
use crate::store::entry::{Entry, MoveExtra, MoveRec};
use crate::store::error::Corruption;
use crate::store::{PositionCodec, PositionModel, varint};

mod bygames;
pub(crate) mod gamecells;
mod raw;
mod shapes;

pub use gamecells::GameCells;
pub use raw::RawEntry;

/// Longest stored position handed on as it is (any model codes a position in fewer bytes: 67
/// symbols of at least 1/2^15 each).
const MAX_PASSED_CODE: usize = 128;

/// What a rewrite keeps of stored entries instead of decoding it
/// ([`BlockView::entries_as`]).
#[derive(Clone, Copy, Debug, Default)]
pub struct Keep {
    /// Indexed moves come back as indices (`MoveRec::indexed`).
    pub(crate) indices: bool,
    /// Positions also come back as stored (`Entry::coded`); only for a writer that codes
    /// with this block's model.
    pub(crate) coded: bool,
}

/// How one entry is decoded: what is kept as stored, and what of each move's cells.
#[derive(Clone, Copy, Debug, Default)]
struct DecodeAs<'f> {
    keep: Keep,
    cells: CellRead<'f>,
    /// Leave the cells unread: the caller takes their bytes ([`BlockView::entries_cells_coded`]).
    defer_cells: bool,
}

/// A parsed view of an opened block: column slices, validated for size.
pub struct BlockView<'a> {
    pub(crate) block_key: u64,
    pub count: usize,
    pub(super) cols: [&'a [u8]; COLUMNS],
    pub(super) b: &'a [u8],
    /// Where moves whose cells are their games' get them (version-3 blocks; none: reading
    /// their cells is an error, their totals are not).
    pub(super) games: Option<&'a dyn GameCells>,
}

/// Start and end of each column in section A.
pub(crate) type ColumnRanges = [(u32, u32); COLUMNS];

/// Varint count columns 8..=13, indexed 0..6 in the cursor.
const VARINT_COLS: usize = 6;

impl<'a> BlockView<'a> {
    pub fn parse(block_key: u64, blk: &'a OpenBlock<'_>) -> Result<BlockView<'a>, Corruption> {
        Self::parse_parts(
            block_key,
            blk.header.count as usize,
            &blk.a,
            blk.b,
            blk.header.version,
        )
    }

    /// Parses a block from its entry count, decompressed section A, section B and version
    /// (which says how many columns its directory has).
    pub(crate) fn parse_parts(
        block_key: u64,
        count: usize,
        raw: &'a [u8],
        b: &'a [u8],
        version: u8,
    ) -> Result<BlockView<'a>, Corruption> {
        let bad = |reason: String| Corruption::Payload { block_key, reason };
        let ncols = match version {
            BLOCK_VERSION_GAME_CELLS => COLUMNS,
            BLOCK_VERSION_CELLS => V2_COLUMNS,
            _ => V1_COLUMNS,
        };
        if raw.len() < ncols * 4 {
            return Err(bad("section A shorter than its column directory".into()));
        }
        let mut cols: [&[u8]; COLUMNS] = [&[]; COLUMNS];
        let mut off = ncols * 4;
        for (i, col) in cols.iter_mut().take(ncols).enumerate() {
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
        let known = FLAG_KEY_ONLY
            | FLAG_EXTRA
            | FLAG_RAW_MOVES
            | if ncols >= V2_COLUMNS { FLAG_CELLS } else { 0 };
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
        let flags = KIND_EXTRA | if ncols == COLUMNS { KIND_GAME_CELLS } else { 0 };
        if let Some(&k) = cols[7].iter().find(|&&k| k & !flags > KIND_GENERAL) {
            return Err(bad(format!("invalid move record kind {k}")));
        }
        Ok(BlockView {
            block_key,
            count,
            cols,
            b,
            games: None,
        })
    }

    /// Where each column lies in section A (`raw`, the slice this view was parsed from): kept
    /// with a cached block so that later lookups skip [`BlockView::parse_parts`]'s checks.
    pub(crate) fn column_ranges(&self, raw: &[u8]) -> ColumnRanges {
        let base = raw.as_ptr() as usize;
        self.cols.map(|c| {
            let start = (c.as_ptr() as usize).wrapping_sub(base);
            (start as u32, (start + c.len()) as u32)
        })
    }

    /// The view of a block parsed before ([`BlockView::column_ranges`] of the same `raw`):
    /// no checks repeated. A range outside `raw` (impossible for ranges taken from it) gives
    /// an empty column, which the readers report as damage rather than panic on.
    pub(crate) fn from_ranges(
        block_key: u64,
        count: usize,
        raw: &'a [u8],
        b: &'a [u8],
        ranges: &ColumnRanges,
    ) -> BlockView<'a> {
        BlockView {
            block_key,
            count,
            cols: ranges.map(|(s, e)| raw.get(s as usize..e as usize).unwrap_or(&[])),
            b,
            games: None,
        }
    }

    /// This view reading the cells its moves keep as their games' from `games`.
    #[doc(hidden)]
    pub fn with_games(mut self, games: &'a dyn GameCells) -> BlockView<'a> {
        self.games = Some(games);
        self
    }

    /// Whether some move of this block keeps its cells as its games' (a version-3 block).
    pub fn keeps_game_cells(&self) -> bool {
        !self.cols[18].is_empty()
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
    pub(crate) fn entries_as(
        &self,
        codec: &dyn PositionCodec,
        model: &dyn PositionModel,
        keep: Keep,
    ) -> Result<Vec<Entry>, Corruption> {
        self.decode_all(codec, model, (keep, false), |_, e, _, _| Ok(e))
    }

    /// Like [`BlockView::entries_as`], each entry's cells left as the block stores them
    /// ([`CodedCells`], decoded when taken): a merge holding one entry per input holds
    /// ~8 bytes a cell instead of a decoded cell's 72.
    pub(crate) fn entries_cells_coded(
        &self,
        codec: &dyn PositionCodec,
        model: &dyn PositionModel,
        keep: Keep,
    ) -> Result<Vec<CodedCells>, Corruption> {
        let take_cells = |v: &Self, entry: Entry, cur: &mut Cursor, i: usize| {
            let cells = match v.cols[1][i] & FLAG_CELLS != 0 {
                true => Some(v.cell_bytes(cur, i)?.to_vec()),
                false => None,
            };
            Ok(CodedCells::new(entry, cells, v.block_key, i))
        };
        self.decode_all(codec, model, (keep, true), take_cells)
    }

    /// Every entry decoded in order and handed to `make` (with the cursor after it, and its
    /// index), checking that the columns hold nothing more. With `defer_cells`, the cells are
    /// left unread: `make` reads them.
    fn decode_all<T>(
        &self,
        codec: &dyn PositionCodec,
        model: &dyn PositionModel,
        (keep, defer_cells): (Keep, bool),
        mut make: impl FnMut(&Self, Entry, &mut Cursor, usize) -> Result<T, Corruption>,
    ) -> Result<Vec<T>, Corruption> {
        let mut out = Vec::with_capacity(self.count);
        let mut cur = Cursor::default();
        for i in 0..self.count {
            let how = DecodeAs {
                keep,
                cells: CellRead::All,
                defer_cells,
            };
            let entry = self.decode_at_known(i, &mut cur, codec, model, None, how)?;
            out.push(make(self, entry, &mut cur, i)?);
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
        self.find_read(key, codec, model, CellRead::All)
    }

    /// [`BlockView::find`] keeping of each move's cells what `read` asks for.
    pub(crate) fn find_read(
        &self,
        key: u64,
        codec: &dyn PositionCodec,
        model: &dyn PositionModel,
        read: CellRead,
    ) -> Result<Vec<Entry>, Corruption> {
        let found = self.find_indexed(key, codec, model, read)?;
        Ok(found.into_iter().map(|(_, e)| e).collect())
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
        self.find_coded_known(key, coded, None, codec, model, CellRead::All)
    }

    /// As [`BlockView::find_coded`]; with `pos` (the position `coded` encodes, with key `key`)
    /// the matching entry's position is not decoded again. Of each move's cells it keeps what
    /// `read` asks for.
    pub(crate) fn find_coded_known(
        &self,
        key: u64,
        coded: &[u8],
        pos: Option<&[u8]>,
        codec: &dyn PositionCodec,
        model: &dyn PositionModel,
        read: CellRead,
    ) -> Result<Option<Entry>, Corruption> {
        Ok(self
            .find_coded_sized(key, coded, pos, codec, model, |_| read)?
            .map(|(e, _, _)| e))
    }

    /// As [`BlockView::find_coded_known`], reading the entry's cells as `read` chooses from
    /// the bytes its block keeps them in (0 when its moves keep none), and with what it read
    /// and the bytes that walked (a game's facts counted as 8).
    pub(crate) fn find_coded_sized<'f>(
        &self,
        key: u64,
        coded: &[u8],
        pos: Option<&[u8]>,
        codec: &dyn PositionCodec,
        model: &dyn PositionModel,
        read: impl FnOnce(usize) -> CellRead<'f>,
    ) -> Result<Option<(Entry, usize, CellRead<'f>)>, Corruption> {
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
                let (cells_from, facts_from) = (cur.cells, cur.game_facts);
                let mut lens = cur.cell_lens;
                let kept = if self.cols[1][i] & FLAG_CELLS != 0 {
                    varint::get(self.cols[17], &mut lens).unwrap_or(0)
                } else {
                    0
                };
                let read = read(usize::try_from(kept).unwrap_or(usize::MAX));
                let e = self.decode_at_known(
                    i,
                    &mut cur,
                    codec,
                    model,
                    pos.map(|p| (key, p)),
                    DecodeAs {
                        keep: Keep::default(),
                        cells: read,
                        defer_cells: false,
                    },
                )?;
                // A game's facts read cost about what 8 bytes of cells walked do.
                let cell_bytes = cur.cells - cells_from + 8 * (cur.game_facts - facts_from);
                return Ok((e.key == key).then_some((e, cell_bytes, read)));
            }
        }
        Ok(None)
    }

    /// An error unless entry `i`'s stored key fragment is `key`'s low byte.
    pub(super) fn check_fragment(&self, i: usize, key: u64) -> Result<(), Corruption> {
        if key as u8 == self.fragment(i) {
            return Ok(());
        }
        Err(Corruption::KeyMismatch {
            block_key: self.block_key,
            index: i,
            expected: (key & !0xff) | u64::from(self.fragment(i)),
            found: key,
        })
    }

    pub(super) fn bad(&self, reason: String) -> Corruption {
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
                cur.count_values(k & !(KIND_EXTRA | KIND_GAME_CELLS));
                cur.extra += usize::from(k & KIND_EXTRA != 0);
                if k & KIND_GAME_CELLS != 0 {
                    self.opponents(cur, i)?;
                }
            }
            cur.moves += n;
            if flags & FLAG_CELLS != 0 {
                self.cell_bytes(cur, i)?;
            }
        }
        Ok(())
    }

    /// The cell bytes of entry `i` (a [`FLAG_CELLS`] entry), advancing the cursor past them.
    fn cell_bytes(&self, cur: &mut Cursor, i: usize) -> Result<&'a [u8], Corruption> {
        let len = varint::get(self.cols[17], &mut cur.cell_lens)
            .ok_or_else(|| self.bad(format!("cell length of entry {i} unreadable")))?;
        let bytes = usize::try_from(len)
            .ok()
            .and_then(|len| self.cols[16].get(cur.cells..cur.cells.checked_add(len)?))
            .ok_or_else(|| self.bad(format!("cells of entry {i} overrun column 16")))?;
        cur.cells += bytes.len();
        Ok(bytes)
    }

    /// The corruption an entry's unreadable cells are ([`read_entry_cells`]).
    fn cells_error(&self, e: EntryCellsError, i: usize) -> Corruption {
        cells_corruption(self.block_key, i, e)
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

    /// Decodes entry i; `known` is its (key, position) when the caller has already matched
    /// the stored position bytes, which saves decoding the position and recomputing the key.
    fn decode_at_known(
        &self,
        i: usize,
        cur: &mut Cursor,
        codec: &dyn PositionCodec,
        model: &dyn PositionModel,
        known: Option<(u64, &[u8])>,
        how: DecodeAs,
    ) -> Result<Entry, Corruption> {
        let (keep, read) = (how.keep, how.cells);
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
        self.check_fragment(i, key)?;
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
        let mut by_games: Vec<(usize, u64, u64)> = Vec::new();
        for (j, (&kind, &mv)) in kinds.iter().zip(&codes).enumerate() {
            moves.push(self.record(cur, kind, mv, kept_indices, i)?);
            if kind & KIND_GAME_CELLS != 0 {
                let (count, sum) = self.opponents(cur, i)?;
                by_games.push((j, count, sum));
            }
        }
        if codes.len() != n {
            return Err(entry_err("move count and moves differ".into()));
        }
        cur.moves += n;
        if how.defer_cells && !by_games.is_empty() {
            return Err(entry_err(
                "cells kept as the games' cannot be handed on as stored".into(),
            ));
        }
        if !how.defer_cells {
            self.read_cells_except(cur, flags, &mut moves, i, read, &by_games)?;
            if !by_games.is_empty() {
                let mover = pos.as_deref().and_then(|p| codec.first_to_move(p));
                let Some(mover) = mover else {
                    return Err(entry_err(
                        "cells kept as the games' in an entry whose mover is unknown".into(),
                    ));
                };
                cur.game_facts += self.fill_game_cells(&mut moves, i, mover, read, &by_games)?;
            }
        }
        Ok(Entry {
            coded: stored,
            key,
            pos,
            moves,
        })
    }

    /// One move record of entry `i` from its stored kind (a single game's result, with or
    /// without a rating, or general counters; [`KIND_EXTRA`]: with a Polyglot weight and
    /// learn value), taking its values from the columns at `cur`. The callers checked that
    /// the extra columns are long enough for the entry's extras.
    fn record(
        &self,
        cur: &mut Cursor,
        kind: u8,
        mv: u16,
        indexed: bool,
        i: usize,
    ) -> Result<MoveRec, Corruption> {
        let mut rec = MoveRec {
            mv,
            indexed,
            ..Default::default()
        };
        match kind & !(KIND_EXTRA | KIND_GAME_CELLS) {
            k @ 0..=7 => {
                match k & 3 {
                    0 => rec.white = 1,
                    1 => rec.draws = 1,
                    2 => rec.black = 1,
                    _ => rec.unknown = 1,
                }
                if k >= 4 {
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
        if kind & KIND_EXTRA != 0 {
            let p = cur.extra;
            cur.extra += 1;
            let weight = self.cols[14].get(2 * p..2 * p + 2);
            let learn = self.cols[15].get(4 * p..4 * p + 4);
            let (Some(w), Some(l)) = (weight, learn) else {
                return Err(self.bad(format!("extra columns too short at entry {i}")));
            };
            rec.extra = Some(MoveExtra {
                weight: u16::from_le_bytes([w[0], w[1]]),
                learn: u32::from_le_bytes([l[0], l[1], l[2], l[3]]),
            });
        }
        Ok(rec)
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
            && 4 * cur.extra == self.cols[15].len()
            && cur.cells == self.cols[16].len()
            && cur.cell_lens == self.cols[17].len()
            && cur.opp[0] == self.cols[18].len()
            && cur.opp[1] == self.cols[19].len();
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
    /// Byte offsets into the cell bytes (column 16) and their lengths (column 17).
    cells: usize,
    cell_lens: usize,
    /// Byte offsets into the opponents' counts and sums (columns 18 and 19).
    opp: [usize; 2],
    /// Games whose facts were read for moves that keep their cells as their games'.
    game_facts: usize,
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

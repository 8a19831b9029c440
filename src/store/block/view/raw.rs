//! A block's entries walked as stored ([`BlockView::walk_raw`], for `verify`): positions left
//! coded, move records and cells read and checked.

use super::{
    BlockView, Cursor, FLAG_EXTRA, FLAG_KEY_ONLY, FLAG_RAW_MOVES, KIND_EXTRA, KIND_GAME_CELLS,
};
use crate::store::cells::CellRead;
use crate::store::entry::MoveRec;
use crate::store::error::Corruption;
use crate::store::varint;

impl BlockView<'_> {
    /// Walks every entry without decoding positions (for `verify`, which decodes and checks
    /// them itself, once): each entry's stored parts and its move records, with `mv` the raw
    /// code or, for indexed moves (`indexed` set), the index. The column structure is checked
    /// as [`BlockView::entries`] checks it, including that no column holds bytes beyond the
    /// last entry. `moves` is a buffer reused across entries.
    pub fn walk_raw(
        &self,
        moves: &mut Vec<MoveRec>,
        mut f: impl FnMut(RawEntry<'_>) -> Result<(), Corruption>,
    ) -> Result<(), Corruption> {
        let mut cur = Cursor::default();
        for i in 0..self.count {
            let flags = self.cols[1][i];
            let n = self.move_count(&mut cur, i)?;
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
            let (key_only, coded) = if flags & FLAG_KEY_ONLY != 0 {
                let o = 8 * cur.key_only;
                let k = self.cols[4]
                    .get(o..o + 8)
                    .and_then(|b| <[u8; 8]>::try_from(b).ok())
                    .ok_or_else(|| self.bad(format!("key column too short at entry {i}")))?;
                cur.key_only += 1;
                (Some(u64::from_le_bytes(k)), &[][..])
            } else {
                let len = varint::get(self.cols[3], &mut cur.poslen)
                    .ok_or_else(|| self.bad(format!("position length of entry {i} unreadable")))?
                    as usize;
                let coded = self
                    .b
                    .get(cur.b..cur.b.saturating_add(len))
                    .ok_or_else(|| self.bad(format!("position of entry {i} overruns section B")))?;
                cur.b += len;
                (None, coded)
            };
            let kinds = self.kinds(&cur, n, i)?;
            let extras = kinds.iter().filter(|&&k| k & KIND_EXTRA != 0).count();
            if (extras > 0) != (flags & FLAG_EXTRA != 0) {
                return Err(self.bad(format!("extra flag of entry {i} disagrees with its moves")));
            }
            if self.cols[14].len() < 2 * (cur.extra + extras)
                || self.cols[15].len() < 4 * (cur.extra + extras)
            {
                return Err(self.bad(format!("extra columns too short at entry {i}")));
            }
            let raw = if raw_moves {
                let bytes = self.cols[6]
                    .get(2 * cur.raw_moves..2 * (cur.raw_moves + n))
                    .ok_or_else(|| self.bad(format!("raw move column too short at entry {i}")))?;
                cur.raw_moves += n;
                bytes
            } else {
                &[][..]
            };
            moves.clear();
            let mut by_games = Vec::new();
            for (j, &kind) in kinds.iter().enumerate() {
                let mv = match idx {
                    Some(idx) => u16::from(idx[j]),
                    None => u16::from_le_bytes([raw[2 * j], raw[2 * j + 1]]),
                };
                moves.push(self.record(&mut cur, kind, mv, idx.is_some(), i)?);
                if kind & KIND_GAME_CELLS != 0 {
                    let (count, sum) = self.opponents(&mut cur, i)?;
                    by_games.push((j, count, sum));
                }
            }
            if !by_games.is_empty() && key_only.is_some() {
                return Err(self.bad(format!("key-only entry {i} keeps cells as its games'")));
            }
            cur.moves += n;
            self.read_cells_except(&mut cur, flags, moves, i, CellRead::All, &by_games)?;
            f(RawEntry {
                index: i,
                fragment: self.fragment(i),
                key_only,
                coded,
                indices: idx,
                moves,
                by_games: &by_games,
            })?;
        }
        self.check_consumed(&cur)
    }
}

/// One entry of a block as stored, for [`BlockView::walk_raw`]: nothing decoded but the move
/// records.
pub struct RawEntry<'a> {
    /// The entry's index in its block.
    pub index: usize,
    /// The stored key fragment (the key's low byte).
    pub fragment: u8,
    /// A key-only entry's key (it has no position).
    pub key_only: Option<u64>,
    /// The coded position (empty for a key-only entry).
    pub coded: &'a [u8],
    /// The stored move indices, when the moves are indexed.
    pub indices: Option<&'a [u8]>,
    /// The moves in stored order: `mv` is the index when `indexed`, else the code.
    pub moves: &'a [MoveRec],
    /// The moves whose cells are their games' (left empty in `moves`): index, opponents'
    /// rating count and sum.
    pub by_games: &'a [(usize, u64, u64)],
}

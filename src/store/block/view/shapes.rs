//! What a block's entries are, without their counts ([`BlockView::shapes`]): each entry's key
//! and move codes in the block's order, which a file's reference chunks follow (docs/FORMAT.md
//! §15.4).

use super::{BlockView, Cursor, DecodeAs, Keep};
use crate::store::cells::CellRead;
use crate::store::entry::Entry;
use crate::store::error::Corruption;
use crate::store::{PositionCodec, PositionModel};

impl BlockView<'_> {
    /// Every entry's key and move codes, in the block's order (cells skipped): what a
    /// file's reference chunks are aligned with (docs/FORMAT.md §15.3).
    pub(crate) fn shapes(
        &self,
        codec: &dyn PositionCodec,
        model: &dyn PositionModel,
    ) -> Result<Vec<(u64, Vec<u16>)>, Corruption> {
        let mut out = Vec::with_capacity(self.count);
        let mut cur = Cursor::default();
        for i in 0..self.count {
            let how = DecodeAs {
                keep: Keep::default(),
                cells: CellRead::Skip,
                defer_cells: false,
            };
            let e = self.decode_at_known(i, &mut cur, codec, model, None, how)?;
            out.push((e.key, e.moves.iter().map(|m| m.mv).collect()));
        }
        self.check_consumed(&cur)?;
        Ok(out)
    }

    /// The entries whose key equals `key`, each with its index in the block and its move
    /// codes (cells skipped).
    pub(crate) fn find_shapes(
        &self,
        key: u64,
        codec: &dyn PositionCodec,
        model: &dyn PositionModel,
    ) -> Result<Vec<(usize, Vec<u16>)>, Corruption> {
        let found = self.find_indexed(key, codec, model, CellRead::Skip)?;
        Ok(found
            .into_iter()
            .map(|(i, e)| (i, e.moves.iter().map(|m| m.mv).collect()))
            .collect())
    }

    /// The entries whose key equals `key` (several if positions collide on the key), each with
    /// its index in the block, keeping of each move's cells what `read` asks for: only the
    /// entries whose stored key fragment matches are decoded.
    pub(super) fn find_indexed(
        &self,
        key: u64,
        codec: &dyn PositionCodec,
        model: &dyn PositionModel,
        read: CellRead,
    ) -> Result<Vec<(usize, Entry)>, Corruption> {
        let frag = key as u8;
        let mut out = Vec::new();
        let mut cur = Cursor::default();
        let mut at = 0;
        for i in 0..self.count {
            if self.fragment(i) != frag {
                continue;
            }
            self.seek(&mut cur, at, i)?;
            let how = DecodeAs {
                keep: Keep::default(),
                cells: read,
                defer_cells: false,
            };
            let e = self.decode_at_known(i, &mut cur, codec, model, None, how)?;
            at = i + 1;
            if e.key == key {
                out.push((i, e));
            }
        }
        Ok(out)
    }
}

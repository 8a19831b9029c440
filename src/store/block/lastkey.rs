//! The greatest key a block holds ([`BlockView::last_key`]): the key range a cached block
//! answers for without asking redb where the next block starts.

use super::FLAG_KEY_ONLY;
use super::view::BlockView;
use crate::store::error::Corruption;
use crate::store::{PositionCodec, PositionModel, varint};

impl BlockView<'_> {
    /// The key of the block's last entry, which is its greatest (entries are in key order):
    /// read from the key column for a key-only entry, else computed from its decoded
    /// position. Only the position-length column is walked; damage gives an error.
    pub(crate) fn last_key(
        &self,
        codec: &dyn PositionCodec,
        model: &dyn PositionModel,
    ) -> Result<u64, Corruption> {
        let flags = self.cols[1];
        let last = self.count - 1;
        let (mut at, mut len, mut poslen, mut key_only) = (0usize, 0usize, 0usize, 0usize);
        for (i, &f) in flags.iter().enumerate().take(self.count) {
            if f & FLAG_KEY_ONLY != 0 {
                key_only += 1;
                continue;
            }
            at += len;
            len = varint::get(self.cols[3], &mut poslen)
                .ok_or_else(|| self.bad(format!("position length of entry {i} unreadable")))?
                as usize;
        }
        let key = if flags.get(last).is_some_and(|&f| f & FLAG_KEY_ONLY != 0) {
            let o = 8 * (key_only - 1);
            let bytes = self.cols[4]
                .get(o..o + 8)
                .ok_or_else(|| self.bad("key column too short".into()))?;
            let mut k = [0u8; 8];
            k.copy_from_slice(bytes);
            u64::from_le_bytes(k)
        } else {
            let coded = self
                .b
                .get(at..at.saturating_add(len))
                .ok_or_else(|| self.bad(format!("position of entry {last} overruns section B")))?;
            codec
                .restore(model, coded, None)
                .map_err(|reason| Corruption::Entry {
                    block_key: self.block_key,
                    index: last,
                    reason: format!("position undecodable: {reason}"),
                })?
                .key
        };
        self.check_fragment(last, key)?;
        if key < self.block_key {
            return Err(self.bad(format!(
                "last entry's key {key:#018x} is below the block's first key"
            )));
        }
        Ok(key)
    }
}

//! One entry block's reference chunk read from a file's `game_refs` table (docs/FORMAT.md
//! §15.4): the table's type and the shielded read the readers (`refs_at`), the zip's read-back
//! (`refzip`) and the rewrite's tap (`reftap`) share.

use super::shield;
use crate::store::error::Result;
use crate::store::refblock::{self, EntryRefs};

/// A file's `game_refs` table.
pub(crate) type RefTable = redb::ReadOnlyTable<u64, &'static [u8]>;

/// The decoded reference chunk of the entry block `block_key` (`None`: the block has none),
/// read under [`shield`](super::shield); a chunk that does not decode is damage at its key.
pub(crate) fn read_chunk(refs: &RefTable, block_key: u64) -> Result<Option<Vec<EntryRefs>>> {
    shield("reading game references", || {
        let Some(row) = refs.get(block_key)? else {
            return Ok(None);
        };
        refblock::decode_chunk(row.value())
            .map(Some)
            .map_err(|e| super::gamestore::bad(format!("reference chunk {block_key:016x}"), e))
    })
}

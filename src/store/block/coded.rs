//! Entries whose cells are still coded: what a merge of many sorted inputs holds per input
//! ([`CodedCells`]), decoding the cells only when it takes the entry.
//!
//! An opening position of a large book carries ~10^5 cells per file; decoded, a cell takes 72
//! bytes, coded ~8. An import's final merge reads one block per run, so 64 runs holding such a
//! position decoded at once took ~300 MiB beside `--memory` (docs/PERFORMANCE.md, "Where the
//! 516 MiB comes from"); coded, they take a ninth of it.

use crate::store::cells::{CellRead, EntryCellsError, read_entry_cells};
use crate::store::entry::Entry;
use crate::store::error::Corruption;

/// An entry decoded but for its moves' cells, which stay as the block stored them (the
/// entry's bytes of column 16, docs/FORMAT.md §12.3). Its identity (key and position), moves
/// and counters are read; [`CodedCells::decode`] reads the cells, with the checks a block
/// decode makes.
#[derive(Debug, Clone, PartialEq)]
pub struct CodedCells {
    entry: Entry,
    /// `None`: the entry stores no cells.
    cells: Option<Vec<u8>>,
    block_key: u64,
    index: usize,
}

impl CodedCells {
    /// `entry` (no cells read) with `cells`, its cell bytes (`None`: it stores none), entry
    /// `index` of the block `block_key` (for messages).
    pub(crate) fn new(entry: Entry, cells: Option<Vec<u8>>, block_key: u64, index: usize) -> Self {
        CodedCells {
            entry,
            cells,
            block_key,
            index,
        }
    }

    /// The entry without its cells: its identity, moves and counters.
    pub fn entry(&self) -> &Entry {
        &self.entry
    }

    /// Bytes this holds beyond the decoded entry's (its coded cells).
    pub fn coded_len(&self) -> usize {
        self.cells.as_ref().map_or(0, Vec::len)
    }

    /// The whole entry, its cells decoded.
    pub fn decode(self) -> Result<Entry, Corruption> {
        let CodedCells {
            mut entry,
            cells,
            block_key,
            index,
        } = self;
        if let Some(cells) = cells {
            read_entry_cells(&cells, &mut entry.moves, CellRead::All)
                .map_err(|e| cells_corruption(block_key, index, e))?;
        }
        Ok(entry)
    }
}

/// The corruption unreadable cells of entry `index` of block `block_key` are.
pub(super) fn cells_corruption(block_key: u64, index: usize, e: EntryCellsError) -> Corruption {
    match e {
        EntryCellsError::Move(mv) => Corruption::Entry {
            block_key,
            index,
            reason: format!("cells of move {mv} unreadable or not adding up to its counts"),
        },
        EntryCellsError::Mismatch => Corruption::Payload {
            block_key,
            reason: format!("cell bytes of entry {index} do not match its moves"),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chess::ChessCodec;
    use crate::chess::tests_support::sample_positions;
    use crate::store::block::{
        BlockView, Keep, PlainDecompressor, build_payload, open_block, seal,
    };
    use crate::store::cells::tests::arb_move;
    use crate::store::{IdentityModel, PositionCodec};
    use proptest::prelude::*;

    /// Entries at sample positions, each with some of `moves` (cells or none), in order.
    fn entries(moves: &[crate::store::MoveRec], per: usize) -> Vec<Entry> {
        let codec = ChessCodec;
        let mut es: Vec<Entry> = sample_positions()
            .iter()
            .zip(moves.chunks(per.max(1)))
            .map(|(p, ms)| {
                let mut ms = ms.to_vec();
                for (j, m) in ms.iter_mut().enumerate() {
                    m.mv = j as u16 + 1;
                    m.extra = None;
                }
                Entry {
                    key: codec.key(p).unwrap(),
                    pos: Some(p.clone()),
                    moves: ms,
                    coded: None,
                }
            })
            .collect();
        es.sort_by(|a, b| a.cmp_id(b));
        es.dedup_by(|a, b| a.same_id(b));
        es
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        /// Decoding the coded cells gives what a whole decode gives, and a read skipping the
        /// cells the same moves and counters; any damage to the cell bytes is an error or a
        /// decode that still adds up, never a panic.
        #[test]
        fn coded_cells_round_trip(
            moves in proptest::collection::vec(arb_move(), 1..40),
            per in 1usize..5,
            flip in any::<(usize, u8)>(),
        ) {
            let codec = ChessCodec;
            let es = entries(&moves, per);
            let payload = build_payload(&es, &codec, &IdentityModel).unwrap();
            let sealed = seal(&payload, 0, None).unwrap();
            let open = open_block(0, &sealed, &PlainDecompressor).unwrap();
            let view = BlockView::parse(0, &open).unwrap();
            let whole = view.entries(&codec, &IdentityModel).unwrap();
            let coded = view
                .entries_cells_coded(&codec, &IdentityModel, Keep::default())
                .unwrap();
            prop_assert_eq!(coded.len(), whole.len());
            for (c, w) in coded.iter().zip(&whole) {
                prop_assert!(c.entry().same_id(w));
                prop_assert!(c.entry().moves.iter().all(|m| m.cells.is_empty()));
            }
            let decoded: Vec<Entry> = coded
                .iter()
                .cloned()
                .map(|c| c.decode().unwrap())
                .collect();
            prop_assert_eq!(&decoded, &whole);
            prop_assert_eq!(&whole, &es);
            // A read that skips the cells gets the moves and counters, no cells.
            for w in &whole {
                let skipped = view
                    .find_read(w.key, &codec, &IdentityModel, CellRead::Skip)
                    .unwrap();
                let mut bare = w.clone();
                bare.moves.iter_mut().for_each(|m| m.cells.clear());
                prop_assert_eq!(skipped, vec![bare]);
            }
            for mut c in coded {
                let Some(cells) = c.cells.as_mut() else { continue };
                prop_assert!(!cells.is_empty());
                let at = flip.0 % cells.len();
                cells[at] ^= flip.1 | 1;
                let _ = c.clone().decode();
                if let Some(cells) = c.cells.as_mut() {
                    cells.truncate(at);
                }
                prop_assert!(c.decode().is_err());
            }
        }
    }
}

//! Value blocks: a 24-byte header, section A (zstd-compressed columns) and section B (positions
//! coded by the book's position model), entries sorted by (key, position). Byte maps are in
//! docs/FORMAT.md §5.
//!
//! This file holds the column layout shared by writer and reader (column count, entry flags,
//! move record kinds) and the round-trip tests; `header.rs` the container (header, checksum,
//! sealing and opening), `decompress.rs` the section A decompressors, `coded.rs` entries whose cells are
//! still coded, `build.rs` the writer's
//! column coding and `view.rs` the reader's.

mod build;
mod coded;
mod decompress;
mod header;
mod lastkey;
mod view;

pub(crate) use build::keeps_game_cells;
#[doc(hidden)]
pub use build::{Payload, Prepared, build_payload, build_payload_with, prepare};
pub use coded::CodedCells;
#[doc(hidden)]
pub use decompress::{Decompressors, PlainDecompressor};
pub use header::{BlockHeader, Compression, HEADER_LEN, MAX_RAW_LEN, OpenBlock, open_block, seal};
pub(crate) use view::ColumnRanges;
pub use view::gamecells::{GameFact, cells_of_games, check as check_game_cells_add_up};
pub use view::{BlockView, GameCells, Keep, RawEntry};

/// The version of a block none of whose entries carries cells (16 columns).
pub const BLOCK_VERSION: u8 = 1;
/// The version of a block some of whose entries carry cells (18 columns; docs/FORMAT.md §5).
pub const BLOCK_VERSION_CELLS: u8 = 2;

/// The version of a block some of whose moves keep their cells as their games' (20 columns;
/// docs/FORMAT.md §5, §12.5): written only into files whose store holds every game they count.
pub const BLOCK_VERSION_GAME_CELLS: u8 = 3;

/// Columns of a version-3 block's directory (a version-1 block has the first
/// [`V1_COLUMNS`], a version-2 block the first [`V2_COLUMNS`]; the others read as empty).
#[doc(hidden)]
pub const COLUMNS: usize = 20;
/// Columns of a version-2 block (cells).
#[doc(hidden)]
pub const V2_COLUMNS: usize = 18;
/// Columns of a version-1 block (no cells).
#[doc(hidden)]
pub const V1_COLUMNS: usize = 16;

pub(crate) const FLAG_KEY_ONLY: u8 = 1;
/// Some move of the entry carries a [`MoveExtra`](crate::store::MoveExtra) (its kind has
/// [`KIND_EXTRA`]; columns 14 and 15).
pub(crate) const FLAG_EXTRA: u8 = 2;
/// The entry's moves are stored as raw codes (column 6), not as indices (column 5).
pub(crate) const FLAG_RAW_MOVES: u8 = 4;
/// The entry's moves carry cells (version-2 blocks only): their bytes in column 16, their
/// length in column 17 (docs/FORMAT.md §12.3).
pub(crate) const FLAG_CELLS: u8 = 8;

/// Per-move record kinds (column 7): a single game without rating (result W/D/B/U = 0..3), a
/// single rated game (4..7, the rating in column 12), or general (8: all six counters).
pub(crate) const KIND_GENERAL: u8 = 8;
/// Added to a kind when the move carries an extra (`MoveExtra`: weight and opaque value, columns
/// 14 and 15).
pub(crate) const KIND_EXTRA: u8 = 0x10;
/// Added to a kind (version-3 blocks only) when the move's cells are its games': the one-game
/// cells of the games its references name (docs/FORMAT.md §12.5), read from the file's game
/// facts; the block keeps only the opponents' rating count and sum (columns 18 and 19).
pub(crate) const KIND_GAME_CELLS: u8 = 0x20;

/// A move has at most this many games when a version-3 writer keeps its cells as its games'
/// (what a reader then reads: the facts of as many games).
pub(crate) const MAX_GAME_CELLS_GAMES: u64 = 256;
/// A move's entry has at most this many games (all its moves') when a version-3 writer keeps
/// the move's cells as its games': a position of more keeps every cell in its block, so that a
/// filtered read of it (the positions asked most) decodes no reference chunk and reads no
/// game's facts, at a cost of a few bytes for the few such positions (docs/PERFORMANCE.md,
/// "Stored cells at positions of many games").
pub(crate) const MAX_GAME_CELLS_ENTRY_GAMES: u64 = 1024;
/// Each cell of such a move has at most this many games, so its references name every one
/// (each cell names its [`crate::store::gamerefs::NEWEST`] newest games).
pub(crate) const MAX_GAME_CELL_GAMES: u64 = crate::store::gamerefs::NEWEST as u64;

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chess::ChessCodec;
    use crate::store::entry::{Entry, MoveExtra, MoveRec};
    use crate::store::{IdentityModel, PositionCodec, PositionModel};
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
                    cells: Vec::new(),
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
        let dir_len = V1_COLUMNS * 4;
        let col2_start = dir_len + entries.len() * 2;
        a[col2_start] = 0xff;
        let mut forged = p.a.clone();
        forged.clear();
        forged.extend_from_slice(&a);
        let forged = Payload {
            count: p.count,
            version: p.version,
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
                let _ = v.last_key(&codec, &m);
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
                let _ = v.last_key(&codec, &m);
            }
        }

        /// A block's last key is its last entry's, whether that entry has a position or only
        /// a key; damage to the block's bytes gives an error or a key, never a panic.
        #[test]
        fn last_key_is_the_last_entrys(n in 1usize..64, flip in any::<prop::sample::Index>(), bit in 0u8..8) {
            let codec = ChessCodec;
            let all = sample_entries();
            let entries = &all[..n.min(all.len())];
            for model in [&IdentityModel as &dyn PositionModel, &*chess_model()] {
                let block = seal_entries(entries, model, true);
                let blk = open_block(1, &block, &PlainDecompressor).unwrap();
                let view = BlockView::parse(1, &blk).unwrap();
                prop_assert_eq!(view.last_key(&codec, model).unwrap(), entries[entries.len() - 1].key);
                // Damage past the checksum: an unchecked body with one bit flipped.
                let mut a = blk.a.clone();
                let mut b = blk.b.to_vec();
                let i = flip.index(a.len() + b.len());
                if i < a.len() { a[i] ^= 1 << bit } else { b[i - a.len()] ^= 1 << bit }
                let bad = OpenBlock { header: blk.header, a, b: &b };
                if let Ok(v) = BlockView::parse(1, &bad) {
                    let _ = v.last_key(&codec, model);
                }
            }
        }

        #[test]
        fn entries_with_cells_round_trip(
            moves in proptest::collection::vec(crate::store::cells::tests::arb_move(), 1..8)
        ) {
            let mut entries = sample_entries();
            for (e, m) in entries.iter_mut().zip(&moves) {
                if e.pos.is_none() {
                    continue;
                }
                let mv = e.moves[0].mv;
                e.moves[0] = MoveRec { mv, ..m.clone() };
                if e.moves[0].games() == 0 {
                    e.moves[0].white = 1;
                    e.moves[0].cells.clear();
                }
            }
            prop_assert_eq!(round_trip(&entries, &IdentityModel, true), entries.clone());
            prop_assert_eq!(round_trip(&entries, &*chess_model(), true), entries);
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

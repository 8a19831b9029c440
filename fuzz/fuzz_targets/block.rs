//! Stored value blocks read from arbitrary bytes: `open_block` → `BlockView::parse` →
//! `entries` / `find` / `find_coded`, under the identity model and a trained chess model.
//!
//! The input is tried four ways: (1) as stored, checksum and all; (2) with the checksum
//! patched to match, so the fuzzer gets past the CRC into decompression and parsing; (3) as an
//! already opened, uncompressed block (2-byte count, 2-byte section-A length, then A and B),
//! which reaches `BlockView` directly; (4) as a version byte, column lengths (one byte each), the columns
//! and section B (16 for a version-1 block, 18 for a version-2 block with cells, 20 for a
//! version-3 block whose moves may keep their cells as their games', chosen by a leading byte),
//! from which a section A with a consistent directory is built. Each view is read twice: alone
//! and with a source of games' cells (made up from the entry and move, so mostly not adding up).
//! Nothing may panic. Where `entries` decodes, `find` of
//! every decoded entry's key must return it, and `find_coded` of its position must return
//! either nothing or that very position.
#![no_main]

use bookdb::chess::ChessCodec;
use bookdb::error::Corruption;
use bookdb::store::block::{
    self, BlockHeader, BlockView, Compression, HEADER_LEN, OpenBlock, PlainDecompressor,
};
use bookdb::store::{IdentityModel, PositionModel};
use bookdb_fuzz::loaded_model;
use libfuzzer_sys::fuzz_target;

const KEY: u64 = 0x0123_4567_89ab_cdef;
/// Entries checked with `find`/`find_coded` per view (each `find` walks the block).
const CHECKED: usize = 32;

fuzz_target!(|data: &[u8]| {
    // (1) As stored.
    if let Ok(blk) = block::open_block(KEY, data, &PlainDecompressor) {
        check_open(&blk);
    }
    // (2) Checksum patched in.
    if data.len() >= HEADER_LEN {
        let mut fixed = data.to_vec();
        let mut h = crc32fast::Hasher::new();
        h.update(&fixed[..HEADER_LEN - 4]);
        h.update(&fixed[HEADER_LEN..]);
        let crc = h.finalize();
        fixed[HEADER_LEN - 4..HEADER_LEN].copy_from_slice(&crc.to_le_bytes());
        match block::open_block(KEY, &fixed, &PlainDecompressor) {
            Ok(blk) => check_open(&blk),
            Err(Corruption::Checksum { .. }) => panic!("checksum mismatch after patching it"),
            Err(_) => {}
        }
    }
    // (3) An opened block, built directly.
    if data.len() >= 4 {
        let count = u32::from(u16::from_le_bytes([data[0], data[1]]));
        let rest = &data[4..];
        let split = usize::from(u16::from_le_bytes([data[2], data[3]])) % (rest.len() + 1);
        let (a, b) = rest.split_at(split);
        let blk = OpenBlock {
            header: BlockHeader {
                version: block::BLOCK_VERSION,
                compression: Compression::None,
                dict_id: 0,
                model_id: 0,
                count,
                raw_len: a.len() as u32,
                a_len: a.len() as u32,
                crc: 0,
            },
            a: a.to_vec(),
            b,
        };
        check_open(&blk);
    }
    // (4) Columns laid out from the input: a version byte (odd: version 2, 18 columns, the
    // cells of §12; even: version 1, 16), the length bytes, then the columns, then section B;
    // the directory is consistent by construction and the count is column 0's length.
    if let Some((&v, data)) = data.split_first() {
        let (version, ncols) = match v % 3 {
            1 => (block::BLOCK_VERSION_CELLS, block::V2_COLUMNS),
            2 => (block::BLOCK_VERSION_GAME_CELLS, block::COLUMNS),
            _ => (block::BLOCK_VERSION, block::V1_COLUMNS),
        };
        if data.len() >= ncols {
            let (lens, mut rest) = data.split_at(ncols);
            let mut cols: Vec<&[u8]> = Vec::with_capacity(ncols);
            for &len in lens {
                let (c, r) = rest.split_at(usize::from(len).min(rest.len()));
                cols.push(c);
                rest = r;
            }
            let mut a = Vec::with_capacity(4 * ncols + data.len());
            for c in &cols {
                a.extend_from_slice(&(c.len() as u32).to_le_bytes());
            }
            for c in &cols {
                a.extend_from_slice(c);
            }
            let blk = OpenBlock {
                header: BlockHeader {
                    version,
                    compression: Compression::None,
                    dict_id: 0,
                    model_id: 0,
                    count: cols[0].len() as u32,
                    raw_len: a.len() as u32,
                    a_len: a.len() as u32,
                    crc: 0,
                },
                a,
                b: rest,
            };
            check_open(&blk);
        }
    }
});

/// Games' cells made up from where they are asked for.
struct MadeUp;

impl block::GameCells for MadeUp {
    fn cells(
        &self,
        _block_key: u64,
        entry: usize,
        mv_at: usize,
        mover_white: bool,
    ) -> Result<Vec<bookdb::store::facet::CellStat>, Corruption> {
        if entry % 7 == 6 {
            return Err(Corruption::Payload {
                block_key: KEY,
                reason: "made up".into(),
            });
        }
        let games: Vec<block::GameFact> = (0..(entry + mv_at) % 4)
            .map(|g| block::GameFact {
                cell: bookdb::store::facet::CellId((g as u32) << 8),
                white: 1500 + g as u16,
                black: if g % 2 == 0 { 0 } else { 1600 },
                result: (g % 4) as u8,
            })
            .collect();
        Ok(block::cells_of_games(&games, mover_white))
    }
}

fn check_open(blk: &OpenBlock<'_>) {
    let Ok(view) = BlockView::parse(KEY, blk) else {
        return;
    };
    // With a source of games' cells: reading never panics.
    if let Ok(v) = BlockView::parse(KEY, blk) {
        let v = v.with_games(&MadeUp);
        let codec = ChessCodec;
        let _ = v.entries(&codec, &IdentityModel);
        let _ = v.entries(&codec, loaded_model());
        let _ = v.find(0, &codec, loaded_model());
    }
    let codec = ChessCodec;
    let models: [(&dyn PositionModel, &str); 2] =
        [(&IdentityModel, "identity"), (loaded_model(), "chess")];
    for (model, name) in models {
        let all = view.entries(&codec, model);
        let _ = view.find(0, &codec, model);
        let _ = view.find(u64::MAX, &codec, model);
        let _ = view.find_coded(0, &[], &codec, model);
        for i in 0..view.count.min(CHECKED) {
            let frag = u64::from(view.fragment(i));
            let _ = view.find(frag, &codec, model);
            let _ = view.find_coded(frag, &blk.b[..blk.b.len().min(24)], &codec, model);
        }
        let Ok(entries) = all else {
            continue;
        };
        assert_eq!(entries.len(), view.count, "{name}: entry count");
        for (i, e) in entries.iter().enumerate().take(CHECKED) {
            let found = view
                .find(e.key, &codec, model)
                .unwrap_or_else(|err| panic!("{name}: find of entry {i} failed after entries() decoded it: {err}"));
            assert!(found.contains(e), "{name}: find misses entry {i}: {e:?} not in {found:?}");
            assert!(found.iter().all(|f| f.key == e.key), "{name}: find returned another key");
            if let Some(pos) = &e.pos {
                let mut coded = Vec::new();
                model
                    .encode(pos, &mut coded)
                    .unwrap_or_else(|err| panic!("{name}: decoded position {i} does not encode: {err}"));
                let got = view
                    .find_coded(e.key, &coded, &codec, model)
                    .unwrap_or_else(|err| panic!("{name}: find_coded of entry {i} failed: {err}"));
                if let Some(g) = got {
                    assert_eq!((g.key, &g.pos), (e.key, &e.pos), "{name}: find_coded of entry {i}");
                }
            }
        }
    }
}

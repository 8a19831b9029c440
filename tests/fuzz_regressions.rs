//! The crashing inputs the fuzzers found (`fuzz/regressions/`, listed in `fuzz/README.md`),
//! replayed by `cargo test` the way their fuzz target reads them, where the main crate can.
//!
//! - `block-1`, `block-2`: the `block` target reads them as an already opened, uncompressed
//!   block (its mode 3: u16 entry count, u16 section-A length, section A, section B). One
//!   entry claims 2^63 (`block-1`) or 2^64 - 1 (`block-2`) moves; decoding it once overflowed
//!   (`BlockView::decode_at` and `BlockView::kinds` from `seek`/`find`). Now the move count
//!   is checked against what the block holds, and the block is reported corrupt.
//! - `book_file-1` is replayed through every read command by `tests/cli.rs`
//!   (`damaged_redb_page_is_an_error_not_a_crash`).
//! - `block_structured-1` is a byte string for `arbitrary`, meaningful only to the fuzz
//!   crate; what it found is covered by `store::book::tests::rewrite_with_indices_equals_rewrite_with_codes`.

use std::path::Path;

use bookdb::chess::ChessCodec;
use bookdb::store::IdentityModel;
use bookdb::store::block::{self, BlockHeader, BlockView, Compression, OpenBlock};

/// The block key the `block` target uses.
const KEY: u64 = 0x0123_4567_89ab_cdef;

fn regression(name: &str) -> Vec<u8> {
    let p = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("fuzz/regressions")
        .join(name);
    std::fs::read(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// The `block` fuzz target's mode 3: the input as an opened, uncompressed block.
fn opened(data: &[u8]) -> OpenBlock<'_> {
    let count = u32::from(u16::from_le_bytes([data[0], data[1]]));
    let rest = &data[4..];
    let split = usize::from(u16::from_le_bytes([data[2], data[3]])) % (rest.len() + 1);
    let (a, b) = rest.split_at(split);
    OpenBlock {
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
    }
}

#[test]
fn blocks_claiming_huge_move_counts_are_corrupt_not_a_panic() {
    for name in ["block-1", "block-2"] {
        let data = regression(name);
        let blk = opened(&data);
        let Ok(view) = BlockView::parse(KEY, &blk) else {
            continue; // rejected even earlier: also fine
        };
        let (codec, model) = (ChessCodec, IdentityModel);
        assert!(
            view.entries(&codec, &model).is_err(),
            "{name}: a block claiming more moves than it holds decoded"
        );
        let _ = view.find(0, &codec, &model);
        let _ = view.find(u64::MAX, &codec, &model);
        let _ = view.find_coded(0, &[], &codec, &model);
        for i in 0..view.count.min(32) {
            let _ = view.find(u64::from(view.fragment(i)), &codec, &model);
        }
    }
}

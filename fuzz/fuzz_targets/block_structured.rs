//! Valid blocks from fuzz-chosen entries: positions sampled from fixed legal games, moves
//! legal (stored as indices) or arbitrary (stored raw), key-only entries and moves with extras
//! (weight and opaque value, as Polyglot imports store), counts from tiny to u64::MAX. Each
//! block is built (`build_payload`), sealed (`seal`, with or without zstd, identity or chess
//! model) and read back.
//!
//! Checks: the untouched block opens and decodes to exactly the entries; `find` and
//! `find_coded` return each entry; flipping any single byte (fuzz-chosen position and mask)
//! makes `open_block` fail with a checksum (or header) error.
#![no_main]

use std::cell::RefCell;

use arbitrary::Unstructured;
use bookdb::chess::ChessCodec;
use bookdb::error::Corruption;
use bookdb::store::block::{self, BlockView, PlainDecompressor};
use bookdb_fuzz::{arb_entries, model_for};
use libfuzzer_sys::fuzz_target;

const KEY: u64 = 7;

thread_local! {
    static ZSTD: RefCell<zstd::bulk::Compressor<'static>> =
        RefCell::new(zstd::bulk::Compressor::new(3).expect("zstd context"));
}

fuzz_target!(|data: &[u8]| {
    let mut u = Unstructured::new(data);
    let Ok(entries) = arb_entries(&mut u, 48) else {
        return;
    };
    let model_id: u16 = if u.arbitrary().unwrap_or(false) { 1 } else { 0 };
    let compress: bool = u.arbitrary().unwrap_or(false);
    let flip: Option<(u16, u8)> = u.arbitrary().unwrap_or(None);

    let codec = ChessCodec;
    let model = model_for(model_id);
    let payload = block::build_payload(&entries, &codec, model)
        .unwrap_or_else(|e| panic!("build_payload rejected canonical entries: {e}"));
    let sealed = ZSTD.with(|c| {
        let mut c = c.borrow_mut();
        block::seal(&payload, model_id, compress.then_some((&mut *c, 0)))
    })
    .expect("seal");

    // Untouched: decodes to exactly the entries.
    let blk = block::open_block(KEY, &sealed, &PlainDecompressor).expect("fresh block opens");
    assert_eq!(blk.header.count as usize, entries.len());
    assert_eq!(blk.header.model_id, model_id);
    let view = BlockView::parse(KEY, &blk).expect("fresh block parses");
    let decoded = view.entries(&codec, model).expect("fresh block decodes");
    assert_eq!(decoded, entries, "block round trip");
    for e in &entries {
        let found = view.find(e.key, &codec, model).expect("find");
        let want: Vec<_> = entries.iter().filter(|x| x.key == e.key).cloned().collect();
        assert_eq!(found, want, "find({:016x})", e.key);
        if let Some(pos) = &e.pos {
            let mut coded = Vec::new();
            model.encode(pos, &mut coded).expect("encode");
            let got = view.find_coded(e.key, &coded, &codec, model).expect("find_coded");
            assert_eq!(got.as_ref(), Some(e), "find_coded({:016x})", e.key);
        }
    }

    // One flipped byte: the checksum (or the header check before it) must catch it.
    if let Some((at, mask)) = flip {
        let at = usize::from(at) % sealed.len();
        let mask = if mask == 0 { 0x80 } else { mask };
        let mut bad = sealed.clone();
        bad[at] ^= mask;
        match block::open_block(KEY, &bad, &PlainDecompressor) {
            Err(Corruption::Checksum { .. } | Corruption::Header { .. }) => {}
            Err(e) => panic!("flip at byte {at} (mask {mask:#04x}) gave a non-checksum error: {e}"),
            Ok(_) => panic!("flip at byte {at} (mask {mask:#04x}) of a {}-byte block undetected", sealed.len()),
        }
    }
});

//! Development tool: cost of the per-entry work of the book writer.
use bookdb::chess::{ChessCodec, PosState};
use bookdb::store::{Book, PositionCodec};
fn main() {
    let path = std::env::args().nth(1).expect("usage: prepbench BOOK");
    let book = Book::open(std::path::Path::new(&path), bookdb::chess_codec()).expect("open");
    let entries: Vec<_> = book
        .iter()
        .expect("iter")
        .take(100_000)
        .map(|e| e.expect("entry"))
        .collect();
    let codec = ChessCodec;
    let samples: Vec<&[u8]> = entries.iter().filter_map(|e| e.pos.as_deref()).collect();
    let t = std::time::Instant::now();
    let model_bytes = codec.train(&samples).expect("train");
    println!("train: {:?}", t.elapsed());
    let model = codec.load_model(&model_bytes).expect("load");
    let t = std::time::Instant::now();
    let mut n = 0;
    for p in &samples {
        n += PosState::unpack(p).expect("unpack").squares[0] as usize;
    }
    println!(
        "unpack: {:?} per entry ({n})",
        t.elapsed() / samples.len() as u32
    );
    let t = std::time::Instant::now();
    let mut out = Vec::new();
    for p in &samples {
        out.clear();
        model.encode(p, &mut out).expect("encode");
    }
    println!(
        "model encode: {:?} per entry",
        t.elapsed() / samples.len() as u32
    );
    let t = std::time::Instant::now();
    for p in &samples {
        let s = PosState::unpack(p).expect("unpack");
        let _ = s.to_chess_unchecked().expect("chess");
    }
    println!(
        "unpack+to_chess: {:?} per entry",
        t.elapsed() / samples.len() as u32
    );
    let t = std::time::Instant::now();
    for e in &entries {
        let moves: Vec<u16> = e.moves.iter().map(|m| m.mv).collect();
        let _ = codec.index_moves(e.pos.as_deref().expect("pos"), &moves);
    }
    println!(
        "index_moves: {:?} per entry",
        t.elapsed() / entries.len() as u32
    );
    let t = std::time::Instant::now();
    for e in &entries {
        let moves: Vec<u16> = e.moves.iter().map(|m| m.mv).collect();
        out.clear();
        let _ = codec.prepare(&*model, e.pos.as_deref().expect("pos"), &moves, &mut out);
    }
    println!(
        "prepare (encode + index): {:?} per entry",
        t.elapsed() / entries.len() as u32
    );
    for level in [3, 6, 9] {
        let t = std::time::Instant::now();
        let mut stored = 0;
        let mut comp = zstd::bulk::Compressor::new(level).expect("zstd");
        for chunk in entries.chunks(300) {
            let p = bookdb::store::block::build_payload(chunk, &codec, &*model).expect("payload");
            stored += comp.compress(&p.a).expect("zstd").len();
        }
        println!(
            "payload + zstd -{level} (no dictionary): {:?} per entry, section A {:.2} bytes per entry",
            t.elapsed() / entries.len() as u32,
            stored as f64 / entries.len() as f64
        );
    }
}

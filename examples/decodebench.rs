//! Development tool: cost of decoding positions with a book's position model (the serial
//! range decoder that `merge`, `dump`, `verify` and probes spend most of their time in).
use bookdb::chess::{ChessCodec, ChessModel};
use bookdb::store::{Book, PositionCodec};
fn main() {
    let path = std::env::args().nth(1).expect("usage: decodebench BOOK");
    let book = Book::open(std::path::Path::new(&path), bookdb::chess_codec()).expect("open");
    let samples: Vec<Vec<u8>> = book
        .iter()
        .expect("iter")
        .take(300_000)
        .filter_map(|e| e.expect("entry").pos)
        .collect();
    let codec = ChessCodec;
    let refs: Vec<&[u8]> = samples.iter().map(Vec::as_slice).collect();
    let model = ChessModel::from_bytes(&codec.train(&refs).expect("train")).expect("model");
    let coded: Vec<Vec<u8>> = samples
        .iter()
        .map(|p| {
            let mut out = Vec::new();
            bookdb::store::PositionModel::encode(&model, p, &mut out).expect("encode");
            out
        })
        .collect();
    for round in 0..3 {
        let t = std::time::Instant::now();
        let mut n = 0usize;
        for c in &coded {
            n += usize::from(model.decode_state(c).expect("decode").squares[4]);
        }
        println!(
            "round {round}: decode_state {:?} per position ({n})",
            t.elapsed() / coded.len() as u32
        );
    }
}

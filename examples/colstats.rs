//! Per-column size report of a book (development tool):
//! `cargo run --release --example colstats BOOK`.
use bookdb::store::Book;
use bookdb::store::block::{COLUMNS, HEADER_LEN};

fn main() {
    let path = std::env::args().nth(1).expect("usage: colstats BOOK");
    let book = Book::open(std::path::Path::new(&path), bookdb::chess_codec()).expect("open");
    let mut raw_tot = [0usize; COLUMNS];
    let mut comp_tot = [0usize; COLUMNS];
    let (mut b_tot, mut hdr, mut a_stored) = (0usize, 0usize, 0usize);
    book.for_each_block(|k, bytes| {
        let blk = book.open_block(k, bytes).expect("block");
        b_tot += blk.b.len();
        hdr += HEADER_LEN;
        a_stored += blk.header.a_len as usize;
        let raw = &blk.a;
        let mut off = COLUMNS * 4;
        for i in 0..COLUMNS {
            let len = u32::from_le_bytes(raw[4 * i..4 * i + 4].try_into().expect("len")) as usize;
            let col = &raw[off..off + len];
            off += len;
            raw_tot[i] += len;
            comp_tot[i] += zstd::bulk::compress(col, 9).expect("zstd").len();
        }
        Ok(())
    })
    .expect("blocks");
    let pairs = book.meta().pairs as f64;
    for i in 0..COLUMNS {
        println!(
            "column {i:2}: raw {:6.2} B/pair, alone with zstd {:6.2} B/pair",
            raw_tot[i] as f64 / pairs,
            comp_tot[i] as f64 / pairs
        );
    }
    println!("section A stored {:.2} B/pair", a_stored as f64 / pairs);
    println!("section B (positions) {:.2} B/pair", b_tot as f64 / pairs);
    println!("headers {:.2} B/pair", hdr as f64 / pairs);
}

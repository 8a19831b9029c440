//! Per-column size report of a book (development tool):
//! `cargo run --release --example colstats BOOK`.
use bookdb::store::Book;
use bookdb::store::block::{BLOCK_VERSION, COLUMNS, HEADER_LEN, V1_COLUMNS};

fn main() {
    let path = std::env::args().nth(1).expect("usage: colstats BOOK");
    let book = Book::open(std::path::Path::new(&path), bookdb::chess_codec()).expect("open");
    let mut raw_tot = [0usize; COLUMNS];
    let mut comp_tot = [0usize; COLUMNS];
    let (mut b_tot, mut hdr, mut a_stored) = (0usize, 0usize, 0usize);
    // Stored block sizes by 256-byte bucket: how full the 4 KiB pages they live in are.
    let mut sizes = [0usize; 17];
    book.for_each_block(|k, bytes| {
        sizes[(bytes.len() / 256).min(16)] += 1;
        let blk = book.open_block(k, bytes).expect("block");
        b_tot += blk.b.len();
        hdr += HEADER_LEN;
        a_stored += blk.header.a_len as usize;
        let raw = &blk.a;
        // Blocks without cells (version 1) have the first V1_COLUMNS columns only.
        let cols = if blk.header.version == BLOCK_VERSION {
            V1_COLUMNS
        } else {
            COLUMNS
        };
        let mut off = cols * 4;
        for i in 0..cols {
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
    let blocks: usize = sizes.iter().sum();
    println!("{blocks} blocks by stored size (bytes: count):");
    for (i, n) in sizes.iter().enumerate().filter(|(_, n)| **n > 0) {
        println!("  {:>5}-{:<5} {n}", i * 256, i * 256 + 255);
    }
}

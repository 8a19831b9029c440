use bookdb::store::block::{self, COLUMNS};
use bookdb::store::Book;
fn main() {
    let path = std::env::args().nth(1).unwrap();
    let book = Book::open(std::path::Path::new(&path), bookdb::chess_codec()).unwrap();
    let mut raw_tot = [0usize; COLUMNS];
    let mut comp_tot = [0usize; COLUMNS];
    let mut n = 0;
    book.for_each_block(|k, bytes| {
        let (_h, raw) = block::open_block(k, bytes, &|id| book.dictionaries().get(&id).cloned()).unwrap();
        let mut off = COLUMNS * 4;
        for i in 0..COLUMNS {
            let len = u32::from_le_bytes(raw[4 * i..4 * i + 4].try_into().unwrap()) as usize;
            let col = &raw[off..off + len];
            off += len;
            raw_tot[i] += len;
            comp_tot[i] += zstd::bulk::compress(col, 9).unwrap().len();
        }
        n += 1;
        Ok(())
    }).unwrap();
    let pairs = book.meta().pairs as f64;
    for i in 0..COLUMNS {
        println!("col {i:2}: raw {:8.2} B/pair  zstd {:6.2} B/pair", raw_tot[i] as f64 / pairs, comp_tot[i] as f64 / pairs);
    }
    println!("blocks {n}");
}

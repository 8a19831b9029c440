use bookdb::chess::PosState;
use bookdb::store::Book;
fn h(counts: &[u64]) -> (f64, u64) {
    let n: u64 = counts.iter().sum();
    if n == 0 {
        return (0.0, 0);
    }
    let mut e = 0.0;
    for &c in counts {
        if c > 0 {
            let p = c as f64 / n as f64;
            e -= c as f64 * p.log2();
        }
    }
    (e, n)
}
fn main() {
    let path = std::env::args().nth(1).unwrap();
    let book = Book::open(std::path::Path::new(&path), bookdb::chess_codec()).unwrap();
    let mut o0 = vec![[0u64; 13]; 64];
    let mut o1 = vec![[[0u64; 13]; 13]; 64];
    let mut o2 = vec![[[0u64; 13]; 169]; 64];
    let mut state = [0u64; 512];
    let mut n = 0u64;
    for e in book.iter().unwrap() {
        let e = e.unwrap();
        let s = PosState::unpack(e.pos.as_ref().unwrap()).unwrap();
        let mut p = [0u8; 66];
        s.to_planes(&mut p);
        for i in 0..64 {
            let v = p[i] as usize;
            o0[i][v] += 1;
            let prev = if i % 8 == 0 { 0 } else { p[i - 1] as usize };
            let left = if i < 8 { 0 } else { p[i - 8] as usize };
            o1[i][prev][v] += 1;
            o2[i][prev * 13 + left][v] += 1;
        }
        state[(p[64] as usize) | ((p[65] as usize) << 5)] += 1;
        n += 1;
    }
    let s0: f64 = o0.iter().map(|c| h(c).0).sum();
    let s1: f64 = o1.iter().flat_map(|t| t.iter()).map(|c| h(c).0).sum();
    let s2: f64 = o2.iter().flat_map(|t| t.iter()).map(|c| h(c).0).sum();
    let st = h(&state).0;
    println!("positions {n}");
    println!("order0 per-square: {:.2} bytes/pos", s0 / n as f64 / 8.0);
    println!("order1 (below):    {:.2} bytes/pos", s1 / n as f64 / 8.0);
    println!("order2 (below,left): {:.2} bytes/pos", s2 / n as f64 / 8.0);
    println!("state: {:.2} bits/pos", st / n as f64);
}

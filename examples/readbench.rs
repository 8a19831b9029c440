//! Development tool: time PGN reading alone, and reading plus replay, single-threaded.
use bookdb::ops::{input, pgn};
fn main() {
    let path = std::env::args().nth(1).expect("usage: readbench PGN");
    let t = std::time::Instant::now();
    let inp = input::open(&path).expect("open");
    let mut r = pgn::GameReader::new(inp.reader);
    let mut n = 0;
    let mut games = Vec::new();
    while let Some(g) = r.next_game().expect("read") {
        n += 1;
        if games.len() < 50_000 {
            games.push(g);
        }
    }
    println!("read {n} games in {:.2}s", t.elapsed().as_secs_f64());
    let t = std::time::Instant::now();
    let rules = pgn::CountRules {
        max_ply: 30,
        min_rating: None,
    };
    let mut pairs = 0;
    for g in &games {
        if let Ok(c) = pgn::replay(g, &rules) {
            pairs += c.pairs.len();
        }
    }
    println!(
        "replayed {} games ({pairs} pairs) in {:.2}s",
        games.len(),
        t.elapsed().as_secs_f64()
    );
    let t = std::time::Instant::now();
    let mut agg = bookdb::ops::import::Aggregator::default();
    for g in &games {
        if let Ok(c) = pgn::replay(g, &rules) {
            agg.add(&c);
        }
    }
    println!(
        "replay+aggregate: {:.2}s, {} positions, est {} MB",
        t.elapsed().as_secs_f64(),
        agg.len(),
        agg.bytes() >> 20
    );
    let t = std::time::Instant::now();
    let v = agg.take_sorted();
    println!(
        "take_sorted {} entries: {:.2}s",
        v.len(),
        t.elapsed().as_secs_f64()
    );
}

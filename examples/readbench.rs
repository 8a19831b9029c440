//! Development tool: the import's read-side costs, single-threaded, on the first 50,000 games:
//! PGN reading alone, replay without and with counted plies, and aggregation.
use bookdb::ops::{import::Aggregator, input, pgn};
use std::time::Instant;

fn main() {
    let path = std::env::args().nth(1).expect("usage: readbench PGN");
    let t = Instant::now();
    let inp = input::open(&path).expect("open");
    let mut r = bookdb::ops::gamereader::GameReader::new(inp.reader);
    let mut n = 0;
    let mut games = Vec::new();
    while let Some(g) = r.next_game().expect("read") {
        n += 1;
        if games.len() < 50_000 {
            games.push(g);
        }
    }
    println!("read {n} games in {:.2}s", t.elapsed().as_secs_f64());
    let sans: usize = games.iter().map(|g| g.sans.len()).sum();
    let mut plies = Vec::new();
    for max_ply in [0, 30] {
        let rules = pgn::CountRules {
            max_ply,
            min_rating: None,
            facets: bookdb::store::facet::FacetSet::NONE,
        };
        let t = Instant::now();
        let mut counted = 0;
        for g in &games {
            if pgn::replay_into(g, &rules, &mut plies).is_ok() {
                counted += plies.len();
            }
        }
        let e = t.elapsed();
        println!(
            "replay --max-ply {max_ply}: {} games, {sans} moves, {counted} counted plies in {:.3}s ({:.0} ns/move)",
            games.len(),
            e.as_secs_f64(),
            e.as_nanos() as f64 / sans as f64
        );
    }
    let rules = pgn::CountRules {
        max_ply: 30,
        min_rating: None,
        facets: bookdb::store::facet::FacetSet::NONE,
    };
    let t = Instant::now();
    let mut agg = Aggregator::with_capacity(Aggregator::capacity_for(128 << 20));
    for g in &games {
        if pgn::replay_into(g, &rules, &mut plies).is_ok() {
            agg.add_game(pgn::game_result(g), [g.white_elo, g.black_elo], &plies);
        }
    }
    println!(
        "replay + aggregate: {:.3}s, {} positions",
        t.elapsed().as_secs_f64(),
        agg.len()
    );
    let t = Instant::now();
    let n = agg.into_sorted().count();
    println!(
        "drain sorted: {n} entries in {:.3}s",
        t.elapsed().as_secs_f64()
    );
}

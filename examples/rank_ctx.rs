//! How much a context model could save on stored mainlines (docs/PERFORMANCE.md, "The game
//! store's tables, packed"): every stored game of a chess book played from the start position
//! is replayed from its move ranks (`chess::mainline`), and the ranks' empirical conditional
//! entropy is printed under contexts the decoder knows (ply, legal moves, check, whether the
//! previous move captured, the previous rank), in bits a ply.
//!
//! `cargo run --release --example rank_ctx -- BOOK`

use std::collections::HashMap;

use bookdb::chess::gamefields::{FEN_FIELD, MOVES_FIELD};
use bookdb::chess::mainline::decode_mainline;
use bookdb::store::Book;
use shakmaty::{Chess, Position};

/// Counts of ranks per context.
type Table = HashMap<u64, HashMap<u8, u64>>;

/// The conditional entropy (bits a ply) of a table, and its plies.
fn entropy(t: &Table) -> (f64, u64) {
    let (mut bits, mut n) = (0.0, 0u64);
    for ranks in t.values() {
        let total: u64 = ranks.values().sum();
        for &c in ranks.values() {
            bits -= c as f64 * (c as f64 / total as f64).log2();
        }
        n += total;
    }
    (bits / n.max(1) as f64, n)
}

fn ply_bucket(p: usize) -> u64 {
    match p {
        0..=9 => 0,
        10..=19 => 1,
        20..=39 => 2,
        40..=79 => 3,
        _ => 4,
    }
}

fn legal_bucket(l: usize) -> u64 {
    (l / 10).min(5) as u64
}

fn rank_bucket(r: u8) -> u64 {
    match r {
        0 => 0,
        1 => 1,
        2..=3 => 2,
        4..=7 => 3,
        _ => 4,
    }
}

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let path = std::env::args().nth(1).ok_or("usage: rank_ctx BOOK")?;
    let book = Book::open(std::path::Path::new(&path), bookdb::chess_codec())?;
    let names = [
        "none",
        "ply",
        "legal",
        "check",
        "previous capture",
        "legal x check x previous capture",
        "legal x previous capture x ply",
        "previous rank",
        "legal x previous capture x ply x previous rank",
    ];
    let mut tables: Vec<Table> = vec![HashMap::new(); names.len()];
    for g in book.games_in_order()? {
        let g = g?;
        if !g.fields[FEN_FIELD].is_empty() {
            continue;
        }
        let ranks = &g.fields[MOVES_FIELD];
        let moves = decode_mainline(&Chess::default(), ranks)?;
        let mut pos = Chess::default();
        let (mut capture, mut previous) = (0u64, 5u64);
        for (ply, (m, &r)) in moves.iter().zip(ranks).enumerate() {
            let (legal, check) = (legal_bucket(pos.legal_moves().len()), pos.is_check() as u64);
            let lcp = (legal * 2 + capture) * 5 + ply_bucket(ply);
            let contexts = [
                0,
                ply_bucket(ply),
                legal,
                check,
                capture,
                legal * 4 + check * 2 + capture,
                lcp,
                previous,
                lcp * 6 + previous,
            ];
            for (t, &k) in tables.iter_mut().zip(&contexts) {
                *t.entry(k).or_default().entry(r).or_default() += 1;
            }
            capture = u64::from(m.is_capture());
            previous = rank_bucket(r);
            pos.play_unchecked(*m);
        }
    }
    for (name, t) in names.iter().zip(&tables) {
        let (bits, plies) = entropy(t);
        println!(
            "{name:48} {bits:.3} bits a ply over {plies} plies, {} contexts",
            t.len()
        );
    }
    Ok(())
}

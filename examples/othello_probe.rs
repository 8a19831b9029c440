//! Probe latency on an Othello book: `cargo run --release --example othello_probe -- BOOK`.
//!
//! Samples 20,000 positions of the book (every k-th entry) plus their mirror images (which a
//! canonical book must map back), probes each through `ops::othello::query::probe` (the path
//! of `bookdb probe`) in batches of 64 after a warm-up pass, and prints the median and p99
//! latency per probe over the batches. Numbers are in docs/PERFORMANCE.md.

use std::time::Instant;

use bookdb::ops::game::Game;
use bookdb::ops::othello::query::probe;
use bookdb::othello::Board;

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> anyhow::Result<()> {
    let path = std::env::args()
        .nth(1)
        .ok_or_else(|| anyhow::anyhow!("usage: othello_probe BOOK"))?;
    let (game, book) = Game::open(std::path::Path::new(&path))?;
    let Game::Othello { canonical } = game else {
        anyhow::bail!("{path} is not an Othello book");
    };
    let n = book.meta().positions.max(1);
    let step = (n / 20_000).max(1);
    let mut boards = Vec::new();
    for (i, e) in book.iter()?.enumerate() {
        if (i as u64).is_multiple_of(step)
            && let Some(p) = e?.pos
        {
            let b = Board::unpack(&p)?;
            boards.push(b);
            boards.push(b.transformed(1));
        }
    }
    // A fixed shuffle: neighbours in key order share blocks.
    let mut x = 0x9E37_79B9_7F4A_7C15u64;
    for i in (1..boards.len()).rev() {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        boards.swap(i, (x % (i as u64 + 1)) as usize);
    }
    let mut found = 0;
    for b in &boards {
        found += usize::from(probe(&book, canonical, b)?.moves.is_some());
    }
    let mut per = Vec::new();
    for _ in 0..3 {
        for chunk in boards.chunks(64) {
            let t = Instant::now();
            for b in chunk {
                std::hint::black_box(probe(&book, canonical, b)?);
            }
            per.push(t.elapsed().as_secs_f64() * 1e6 / chunk.len() as f64);
        }
    }
    per.sort_by(f64::total_cmp);
    let q = |f: f64| per[((per.len() - 1) as f64 * f) as usize];
    println!(
        "{path}: {} probes ({found} found), median {:.2} µs, p99 {:.2} µs per probe ({} batches of 64)",
        boards.len(),
        q(0.5),
        q(0.99),
        per.len()
    );
    Ok(())
}

//! Probe latency of an existing book over positions taken from a PGN file: each op timed
//! alone, so the percentiles are per probe. `benches/year.sh` runs it across a simulated year.
//!
//! `BOOKDB_BENCH_BOOK=B BOOKDB_BENCH_PGN=G cargo bench --bench probe_positions`
//! (harness = false: a plain `fn main`).
//!
//! - `BOOKDB_BENCH_BOOK` (required): the book, opened once as `bookdb probe` opens it.
//! - `BOOKDB_BENCH_PGN` (required): games; from game i the position before ply i mod 40 is
//!   probed (shallow ones are in the book and in most of its files, deep ones mostly not).
//! - `BOOKDB_BENCH_POSITIONS`: how many positions (default 20,000).
//! - `BOOKDB_BENCH_PASSES`: passes over them (default 5, after one warm-up pass).
//! - `BOOKDB_BENCH_COLD=1`: no warm-up pass and one timed pass, each position probed once:
//!   after the page cache is dropped (`benches/scale.sh`), the probes of a cold book.
//!
//! Prints `RESULT {json}`: p50, p99 and mean in µs over every timed probe, the share found,
//! the book's files and the time `Game::open` took (ms).

use std::hint::black_box;
use std::path::PathBuf;
use std::time::Instant;

use anyhow::{Context, Result, bail};
use bookdb::ops::gamereader::GameReader;
use bookdb::ops::pgn::{CountRules, replay};

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// The deepest ply probed (exclusive).
const PLY_CYCLE: usize = 40;

fn env_path(name: &str) -> Result<PathBuf> {
    let v = std::env::var_os(name).with_context(|| format!("{name} is not set"))?;
    Ok(PathBuf::from(v))
}

fn env_usize(name: &str, default: usize) -> Result<usize> {
    match std::env::var(name) {
        Ok(v) => v.parse().with_context(|| format!("{name}={v}")),
        Err(_) => Ok(default),
    }
}

/// Packed positions from the games of `pgn`: game i gives the position before its ply
/// i mod [`PLY_CYCLE`] (the last one counted if it is shorter).
fn positions(pgn: &PathBuf, n: usize) -> Result<Vec<Vec<u8>>> {
    let file = std::fs::File::open(pgn).with_context(|| format!("opening {}", pgn.display()))?;
    let mut reader = GameReader::new(std::io::BufReader::new(file));
    let rules = CountRules {
        max_ply: PLY_CYCLE,
        min_rating: None,
        facets: bookdb::store::facet::FacetSet::NONE,
    };
    let mut out = Vec::with_capacity(n);
    let mut i = 0usize;
    while out.len() < n {
        let Some(g) = reader.next_game()? else { break };
        if let Ok(c) = replay(&g, &rules)
            && let Some((p, _)) = c
                .pairs
                .get((i % PLY_CYCLE).min(c.pairs.len().saturating_sub(1)))
        {
            out.push(p.pos.clone());
        }
        i += 1;
    }
    if out.is_empty() {
        bail!("{} holds no replayable game", pgn.display());
    }
    Ok(out)
}

fn pct(sorted: &[f64], p: f64) -> f64 {
    let i = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

fn main() -> Result<()> {
    let book_path = env_path("BOOKDB_BENCH_BOOK")?;
    let pgn = env_path("BOOKDB_BENCH_PGN")?;
    let n = env_usize("BOOKDB_BENCH_POSITIONS", 20_000)?;
    let cold = std::env::var("BOOKDB_BENCH_COLD").is_ok_and(|v| v == "1");
    let passes = if cold {
        1
    } else {
        env_usize("BOOKDB_BENCH_PASSES", 5)?.max(1)
    };
    let probes = positions(&pgn, n)?;
    let t_open = Instant::now();
    let (_, book) = bookdb::ops::game::Game::open(&book_path)
        .with_context(|| format!("opening {}", book_path.display()))?;
    let open_ms = t_open.elapsed().as_secs_f64() * 1e3;
    let mut found = 0usize;
    if !cold {
        for p in &probes {
            found += usize::from(book.lookup(p)?.is_some());
        }
    }
    let mut ns = Vec::with_capacity(probes.len() * passes);
    for pass in 0..passes {
        for p in &probes {
            let t = Instant::now();
            let hit = black_box(book.lookup(black_box(p))?).is_some();
            ns.push(t.elapsed().as_nanos() as f64);
            if cold && pass == 0 {
                found += usize::from(hit);
            }
        }
    }
    ns.sort_by(f64::total_cmp);
    let us = |v: f64| (v / 10.0).round() / 100.0;
    let mean = ns.iter().sum::<f64>() / ns.len() as f64;
    let result = serde_json::json!({
        "book": book_path.display().to_string(),
        "files": book.files().len(),
        "file_bytes": book.file_bytes(),
        "positions": probes.len(),
        "found_share": found as f64 / probes.len() as f64,
        "probes_timed": ns.len(),
        "p50_us": us(pct(&ns, 0.5)),
        "p99_us": us(pct(&ns, 0.99)),
        "mean_us": us(mean),
        "cold": cold,
        "open_ms": (open_ms * 100.0).round() / 100.0,
    });
    println!(
        "{} positions ({:.0} % in the book), {} files: p50 {} µs, p99 {} µs, mean {} µs",
        probes.len(),
        100.0 * found as f64 / probes.len() as f64,
        result["files"],
        result["p50_us"],
        result["p99_us"],
        result["mean_us"]
    );
    println!("RESULT {result}");
    Ok(())
}

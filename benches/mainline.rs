//! A game's mainline coded as move ranks (src/chess/mainline.rs): `encode_mainline` and
//! `decode_mainline` over the mainlines of real games, per ply.
//!
//! `cargo bench --bench mainline` (harness = false: a plain `fn main`).
//!
//! - `BOOKDB_BENCH_PGN`: games (default `../shared/data/pgn/medium-10k.pgn` from the crate
//!   root); the first `BOOKDB_BENCH_GAMES` (default 2,000) that replay, whole mainlines.
//! - `BOOKDB_BENCH_ROUNDS`: timed rounds (default 9, after one warm-up round); each round
//!   times every variant once over all games, the variants in rotating order.
//!
//! Prints per variant the median and minimum ns per ply over the rounds, a checksum of every
//! rank (equal before and after a change that keeps rank order version 1), and a last line
//! `RESULT {json}`.

use std::hint::black_box;
use std::path::PathBuf;
use std::time::Instant;

use anyhow::{Context, Result, bail};
use bookdb::chess::mainline::{decode_mainline, encode_mainline};
use bookdb::ops::gamereader::GameReader;
use bookdb::ops::pgn::{CountRules, replay_keeping};
use shakmaty::{Chess, Move};

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn env_usize(name: &str, default: usize) -> Result<usize> {
    match std::env::var(name) {
        Ok(v) => v.parse().with_context(|| format!("{name}={v}")),
        Err(_) => Ok(default),
    }
}

/// The start positions and mainlines of the first `n` replayable games of `pgn`.
fn games(pgn: &PathBuf, n: usize) -> Result<Vec<(Chess, Vec<Move>)>> {
    let file = std::fs::File::open(pgn).with_context(|| format!("opening {}", pgn.display()))?;
    let mut reader = GameReader::new(std::io::BufReader::new(file));
    let rules = CountRules {
        max_ply: 0,
        min_rating: None,
        facets: bookdb::store::facet::FacetSet::NONE,
    };
    let mut out = Vec::new();
    let mut plies = Vec::new();
    while out.len() < n
        && let Some(g) = reader.next_game()?
    {
        let mut moves = Vec::new();
        if let Ok(start) = replay_keeping(&g, &rules, &mut plies, Some(&mut moves)) {
            out.push((start, moves));
        }
    }
    if out.is_empty() {
        bail!("{} holds no replayable game", pgn.display());
    }
    Ok(out)
}

/// One variant: a name and a pass over the whole set returning a value that depends on it.
type Variant<'a> = (&'static str, Box<dyn Fn() -> u64 + 'a>);

fn main() -> Result<()> {
    let pgn = match std::env::var_os("BOOKDB_BENCH_PGN") {
        Some(p) => PathBuf::from(p),
        None => PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/data/pgn/medium-10k.pgn"),
    };
    let n = env_usize("BOOKDB_BENCH_GAMES", 2_000)?;
    let rounds = env_usize("BOOKDB_BENCH_ROUNDS", 9)?.max(1);
    let set = games(&pgn, n)?;
    let plies: usize = set.iter().map(|(_, m)| m.len()).sum();
    println!("{}: {} games, {plies} plies", pgn.display(), set.len());

    // Checksum of every rank, and the decode round trip.
    let mut h = xxhash_rust::xxh3::Xxh3::new();
    let mut coded = Vec::with_capacity(set.len());
    for (start, moves) in &set {
        let ranks = encode_mainline(start, moves)?;
        h.update(&ranks);
        if decode_mainline(start, &ranks)? != *moves {
            bail!("a mainline does not round trip");
        }
        coded.push(ranks);
    }
    println!("checksum {:032x}", h.digest128());

    let (s, c) = (&set, &coded);
    let variants: Vec<Variant<'_>> = vec![
        (
            "encode_mainline",
            Box::new(|| {
                s.iter()
                    .map(|(start, moves)| {
                        encode_mainline(black_box(start), black_box(moves))
                            .map_or(0, |r| r.iter().map(|&b| u64::from(b)).sum::<u64>())
                    })
                    .sum()
            }),
        ),
        (
            "decode_mainline",
            Box::new(|| {
                s.iter()
                    .zip(c)
                    .map(|((start, _), r)| {
                        decode_mainline(black_box(start), black_box(r))
                            .map_or(0, |m| m.len() as u64)
                    })
                    .sum()
            }),
        ),
    ];
    let mut times = vec![Vec::with_capacity(rounds); variants.len()];
    for round in 0..=rounds {
        for k in 0..variants.len() {
            let v = (k + round) % variants.len();
            let t = Instant::now();
            black_box((variants[v].1)());
            let ns = t.elapsed().as_nanos() as f64 / plies as f64;
            if round > 0 {
                times[v].push(ns);
            }
        }
    }
    let mut json = Vec::new();
    for ((name, _), t) in variants.iter().zip(&mut times) {
        t.sort_by(f64::total_cmp);
        let (med, min) = (t[t.len() / 2], t[0]);
        println!("{name:>16}: median {med:7.1} ns/ply, min {min:7.1}");
        json.push(format!(
            "\"{name}\":{{\"median_ns\":{med:.1},\"min_ns\":{min:.1}}}"
        ));
    }
    println!("RESULT {{{}}}", json.join(","));
    Ok(())
}

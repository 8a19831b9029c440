//! The chess position model's coding speed (src/chess/model.rs, src/store/rangecoder.rs):
//! encode and decode of ~100k real positions, per position.
//!
//! `cargo bench --bench model_codec` (harness = false: a plain `fn main`).
//!
//! - `BOOKDB_BENCH_PGN`: games (default `../shared/data/pgn/medium-10k.pgn` from the crate
//!   root). Every position before plies 0..30 of every game (as `import --max-ply 30` counts
//!   them), distinct, in key order (a book's order), the first `BOOKDB_BENCH_POSITIONS`
//!   (default 100,000).
//! - `BOOKDB_BENCH_ROUNDS`: timed rounds (default 15, after one warm-up round); each round
//!   times every variant once over all positions, the variants in rotating order so noise
//!   hits all of them alike.
//!
//! The model is trained on all the positions (as a book's is on a sample of its own). Prints
//! per variant the median and minimum ns per position over the rounds, then a checksum of
//! every coded and decoded byte (equal before and after a change that keeps the format), and
//! a last line `RESULT {json}`.

use std::hint::black_box;
use std::path::PathBuf;
use std::time::Instant;

use anyhow::{Context, Result, bail};
use bookdb::chess::{ChessCodec, ChessModel, PosState};
use bookdb::ops::gamereader::GameReader;
use bookdb::ops::pgn::{CountRules, replay};
use bookdb::store::{PositionCodec, PositionModel};

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn env_usize(name: &str, default: usize) -> Result<usize> {
    match std::env::var(name) {
        Ok(v) => v.parse().with_context(|| format!("{name}={v}")),
        Err(_) => Ok(default),
    }
}

/// Distinct packed positions of the first 30 plies of the games of `pgn`, in key order.
fn positions(pgn: &PathBuf, n: usize) -> Result<Vec<Vec<u8>>> {
    let file = std::fs::File::open(pgn).with_context(|| format!("opening {}", pgn.display()))?;
    let mut reader = GameReader::new(std::io::BufReader::new(file));
    let rules = CountRules {
        max_ply: 30,
        min_rating: None,
        facets: bookdb::store::facet::FacetSet::NONE,
    };
    let mut all = std::collections::BTreeMap::new();
    while let Some(g) = reader.next_game()? {
        if let Ok(c) = replay(&g, &rules) {
            for (p, _) in c.pairs {
                all.insert(p.key, p.pos);
            }
        }
    }
    if all.is_empty() {
        bail!("{} holds no replayable game", pgn.display());
    }
    Ok(all.into_values().take(n).collect())
}

/// One variant: a name and a pass over the whole set returning a value that depends on it.
type Variant<'a> = (&'static str, Box<dyn Fn() -> u64 + 'a>);

fn main() -> Result<()> {
    let pgn = match std::env::var_os("BOOKDB_BENCH_PGN") {
        Some(p) => PathBuf::from(p),
        None => PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/data/pgn/medium-10k.pgn"),
    };
    let n = env_usize("BOOKDB_BENCH_POSITIONS", 100_000)?;
    let rounds = env_usize("BOOKDB_BENCH_ROUNDS", 15)?.max(1);
    let packed = positions(&pgn, n)?;
    let states: Vec<PosState> = packed
        .iter()
        .map(|p| PosState::unpack(p))
        .collect::<Result<_, _>>()?;
    let refs: Vec<&[u8]> = packed.iter().map(Vec::as_slice).collect();
    let model = ChessModel::from_bytes(&ChessCodec.train(&refs)?).map_err(anyhow::Error::msg)?;
    let coded: Vec<Vec<u8>> = states.iter().map(|s| model.encode_state(s)).collect();
    let coded_bytes: usize = coded.iter().map(Vec::len).sum();
    println!(
        "{}: {} positions, {:.2} coded bytes each",
        pgn.display(),
        packed.len(),
        coded_bytes as f64 / packed.len() as f64
    );

    // Checksum of what every path produces.
    let mut h = xxhash_rust::xxh3::Xxh3::new();
    let mut out = Vec::new();
    for ((p, s), c) in packed.iter().zip(&states).zip(&coded) {
        out.clear();
        model.encode(p, &mut out)?;
        h.update(&out);
        h.update(&model.encode_state(s));
        h.update(&model.decode(c)?);
        let d = model.decode_state(c).context("decode_state")?;
        h.update(&d.pack().0);
    }
    println!("checksum {:032x}", h.digest128());

    let m = &model;
    let variants: Vec<Variant<'_>> = vec![
        (
            "encode_state",
            Box::new(|| {
                states
                    .iter()
                    .map(|s| m.encode_state(black_box(s)).len() as u64)
                    .sum()
            }),
        ),
        (
            "decode_state",
            Box::new(|| {
                coded
                    .iter()
                    .map(|c| {
                        m.decode_state(black_box(c))
                            .map_or(0, |s| u64::from(s.squares[4]))
                    })
                    .sum()
            }),
        ),
        (
            "PositionModel::encode",
            Box::new(|| {
                let mut out = Vec::with_capacity(64);
                let mut t = 0u64;
                for p in &packed {
                    out.clear();
                    let _ = m.encode(black_box(p), &mut out);
                    t += out.len() as u64;
                }
                t
            }),
        ),
        (
            "PositionModel::decode",
            Box::new(|| {
                coded
                    .iter()
                    .map(|c| m.decode(black_box(c)).map_or(0, |p| p.len() as u64))
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
            let ns = t.elapsed().as_nanos() as f64 / packed.len() as f64;
            if round > 0 {
                times[v].push(ns);
            }
        }
    }
    let mut json = Vec::new();
    for ((name, _), t) in variants.iter().zip(&mut times) {
        t.sort_by(f64::total_cmp);
        let (med, min) = (t[t.len() / 2], t[0]);
        println!("{name:>24}: median {med:7.1} ns/position, min {min:7.1}");
        json.push(format!(
            "\"{name}\":{{\"median_ns\":{med:.1},\"min_ns\":{min:.1}}}"
        ));
    }
    println!("RESULT {{{}}}", json.join(","));
    Ok(())
}

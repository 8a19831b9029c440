//! What a game store would take for a PGN collection (issue 27's cost, docs/GAMES.md): every
//! standard game with a legal mainline made into a stored game (`ops::gamerec`: kept tags and
//! the mainline as move ranks), in game blocks (`store::gameblock`) of about `BLOCK_KIB` raw
//! KiB at zstd `LEVEL`, in input order; the bytes reported in total, per game, by column, and the
//! moves in bits per ply, with the order-0 entropy of the ranks beside them.
//!
//! `cargo run --release --example game_store_size -- PGN [BLOCK_KIB] [LEVEL]`

use std::io::Read;

use bookdb::chess::mainline::RANK_ORDER_VERSION;
use bookdb::ops::gamerec::{FIELDS, KEPT_TAGS, record};
use bookdb::ops::pgn::{GameReader, game_fingerprint, is_standard_variant};
use bookdb::store::gameblock::{self, StoredGame};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let args: Vec<String> = std::env::args().collect();
    let path = args
        .get(1)
        .ok_or("usage: game_store_size PGN [BLOCK_KIB] [LEVEL]")?;
    let block_raw: usize = args.get(2).map_or(Ok(64), |s| s.parse())? << 10;
    let level: i32 = args.get(3).map_or(Ok(19), |s| s.parse())?;
    let input = bookdb::ops::input::open(path)?;
    let reader: Box<dyn Read + Send> = input.reader;
    let mut games = GameReader::new(reader);
    let (mut stored, mut skipped, mut plies) = (0u64, 0u64, 0u64);
    let mut rank_hist = [0u64; 256];
    let mut total = 0usize;
    let mut by_field = vec![0usize; FIELDS + 1];
    let mut pending: Vec<StoredGame> = Vec::new();
    let mut pending_raw = 0usize;
    let mut record_time = std::time::Duration::ZERO;
    let flush = |pending: &mut Vec<StoredGame>, total: &mut usize, by_field: &mut [usize]| {
        if pending.is_empty() {
            return;
        }
        *total += gameblock::encode(pending, level).expect("encode").len();
        // Each column alone, to attribute the bytes (ids as field FIELDS).
        for (f, bytes) in by_field.iter_mut().enumerate() {
            let one: Vec<StoredGame> = pending
                .iter()
                .map(|g| StoredGame {
                    id: if f == FIELDS { g.id } else { 0 },
                    fields: if f == FIELDS {
                        vec![]
                    } else {
                        vec![g.fields[f].clone()]
                    },
                })
                .collect();
            *bytes += gameblock::encode(&one, level).expect("encode").len();
        }
        pending.clear();
    };
    while let Some(g) = games.next_game()? {
        let standard = g.variant.as_deref().is_none_or(is_standard_variant);
        if g.error.is_some() || !standard {
            skipped += 1;
            continue;
        }
        let start = match &g.fen {
            Some(f) => match bookdb::chess::parse_fen(f) {
                Ok(p) => p,
                Err(_) => {
                    skipped += 1;
                    continue;
                }
            },
            None => shakmaty::Chess::default(),
        };
        let fp = game_fingerprint(&g);
        let t0 = std::time::Instant::now();
        let rec = record(&g, &start, fp);
        record_time += t0.elapsed();
        let Ok(rec) = rec else {
            skipped += 1;
            continue;
        };
        stored += 1;
        plies += g.sans.len() as u64;
        for &r in &rec.fields[FIELDS - 1] {
            rank_hist[usize::from(r)] += 1;
        }
        pending_raw += 6 + rec.fields.iter().map(|f| f.len() + 1).sum::<usize>();
        pending.push(rec);
        if pending_raw >= block_raw {
            flush(&mut pending, &mut total, &mut by_field);
            pending_raw = 0;
        }
    }
    flush(&mut pending, &mut total, &mut by_field);
    let n: u64 = rank_hist.iter().sum();
    let entropy: f64 = rank_hist
        .iter()
        .filter(|&&c| c > 0)
        .map(|&c| {
            let p = c as f64 / n as f64;
            -p * p.log2()
        })
        .sum();
    let mean_rank = rank_hist
        .iter()
        .enumerate()
        .map(|(r, &c)| r as f64 * c as f64)
        .sum::<f64>()
        / n as f64;
    println!("input {path}: {stored} games stored, {skipped} skipped, {plies} plies");
    println!(
        "game blocks of ~{} KiB raw at zstd {level}, rank order {RANK_ORDER_VERSION}: {total} bytes, {:.1} B per game",
        block_raw >> 10,
        total as f64 / stored as f64
    );
    println!(
        "moves: {:.2} bits per ply stored (order-0 entropy of the ranks {entropy:.2}; rank 0 {:.1} %, mean rank {mean_rank:.2})",
        by_field[FIELDS - 1] as f64 * 8.0 / plies as f64,
        rank_hist[0] as f64 * 100.0 / n as f64
    );
    println!(
        "making the records (replay, ranks): {:.0} ns per ply, {:.2} s in all",
        record_time.as_nanos() as f64 / plies as f64,
        record_time.as_secs_f64()
    );
    let mut cols: Vec<(String, usize)> = KEPT_TAGS
        .iter()
        .map(|t| t.to_string())
        .chain(["moves".to_string(), "ids".to_string()])
        .zip(by_field.iter().copied())
        .collect();
    cols.sort_by_key(|c| std::cmp::Reverse(c.1));
    for (name, b) in cols {
        println!(
            "  {name:<12} {b:>12} B  {:>7.2} B per game (alone in its blocks)",
            b as f64 / stored as f64
        );
    }
    Ok(())
}

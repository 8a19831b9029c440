//! What a game store would take for a PGN collection (issue 27's cost, docs/GAMES.md): every
//! standard game with a legal mainline made into a stored game (`ops::gamerec`: kept tags and
//! the mainline as move ranks), in game blocks (`store::gameblock`) of about `BLOCK_KIB` raw
//! KiB at zstd `LEVEL`, in input order; the bytes reported in total, per game, by column, and the
//! moves in bits per ply, with the order-0 entropy of the ranks beside them.
//!
//! `cargo run --release --example game_store_size -- PGN [BLOCK_KIB] [LEVEL]`

use std::io::Read;

use bookdb::chess::mainline::RANK_ORDER_VERSION;
use bookdb::ops::gamereader::GameReader;
use bookdb::ops::gamerec::{FIELDS, KEPT_TAGS, record};
use bookdb::ops::pgn::{game_fingerprint, is_standard_variant};
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
    // The id index a book would keep beside the blocks: (id, fingerprint's low 64 bits).
    let mut index: Vec<(u64, u64)> = Vec::new();
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
        let rec = record(&g, &start, 50, fp);
        record_time += t0.elapsed();
        let Ok(rec) = rec else {
            skipped += 1;
            continue;
        };
        stored += 1;
        plies += g.sans.len() as u64;
        index.push((rec.id, fp as u64));
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
    let index_bytes = id_index_bytes(&mut index)?;
    let packed_bytes = packed_id_index_bytes(&index)?;
    println!(
        "id index packed in chunks of 1,024 (id deltas, 32 fingerprint bits, game number; zstd 19) in a redb table by first id: {packed_bytes} bytes, {:.1} B per game; blocks and index {:.1} B per game",
        packed_bytes as f64 / stored as f64,
        (total as u64 + packed_bytes) as f64 / stored as f64
    );
    println!(
        "id index as a redb table (id, fingerprint low 64 bits) -> game number u32, written in key order: {index_bytes} bytes, {:.1} B per game; blocks and index {:.1} B per game",
        index_bytes as f64 / stored as f64,
        (total as u64 + index_bytes) as f64 / stored as f64
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

/// The bytes of a redb file holding the id index of these games (sorted, one transaction,
/// compacted), as a book file would hold it beside its game blocks.
fn id_index_bytes(index: &mut [(u64, u64)]) -> Result<u64, Box<dyn std::error::Error>> {
    const IDS: redb::TableDefinition<(u64, u64), u32> = redb::TableDefinition::new("game_ids");
    index.sort_unstable();
    let dir = tempfile::tempdir()?;
    let path = dir.path().join("ids.redb");
    let mut db = redb::Database::create(&path)?;
    let txn = db.begin_write()?;
    {
        let mut t = txn.open_table(IDS)?;
        for (n, k) in index.iter().enumerate() {
            t.insert(*k, n as u32)?;
        }
    }
    txn.commit()?;
    db.compact()?;
    drop(db);
    Ok(std::fs::metadata(&path)?.len())
}

/// The bytes of a redb file holding the id index packed: sorted (id, fingerprint) in chunks
/// of 1,024, each chunk the id deltas (varints), 32 bits of each fingerprint and each game's
/// number (varint), zstd 19; keyed by the chunk's first id.
fn packed_id_index_bytes(index: &[(u64, u64)]) -> Result<u64, Box<dyn std::error::Error>> {
    const CHUNKS: redb::TableDefinition<u64, &[u8]> = redb::TableDefinition::new("game_ids");
    let dir = tempfile::tempdir()?;
    let path = dir.path().join("ids.redb");
    let mut db = redb::Database::create(&path)?;
    let txn = db.begin_write()?;
    {
        let mut t = txn.open_table(CHUNKS)?;
        for (c, chunk) in index.chunks(1024).enumerate() {
            let mut raw = Vec::new();
            let mut prev = chunk[0].0;
            for (i, (id, fp)) in chunk.iter().enumerate() {
                bookdb::store::varint::put(&mut raw, id - prev);
                prev = *id;
                raw.extend_from_slice(&(*fp as u32).to_le_bytes());
                // Game numbers are by (date, id), not by id: a pseudo-random number in range.
                let number = ((c * 1024 + i) as u64).wrapping_mul(0x9E37_79B9) % index.len() as u64;
                bookdb::store::varint::put(&mut raw, number);
            }
            t.insert(chunk[0].0, zstd::bulk::compress(&raw, 19)?.as_slice())?;
        }
    }
    txn.commit()?;
    db.compact()?;
    drop(db);
    Ok(std::fs::metadata(&path)?.len())
}

//! throwaway: conditional entropy of move ranks given cheap contexts
use bookdb::chess::mainline::decode_mainline;
use bookdb::store::gameblock::{self, StoredGame};
use redb::{ReadableDatabase, TableDefinition};
use shakmaty::{Chess, Position};
use std::collections::HashMap;
const GC: TableDefinition<u32, &[u8]> = TableDefinition::new("game_chunks");
const GD: TableDefinition<u32, (u64, u32)> = TableDefinition::new("game_dir");

fn ent(h: &HashMap<u64, HashMap<u8, u64>>) -> (f64, u64) {
    let mut bits = 0.0; let mut n = 0u64;
    for m in h.values() {
        let t: u64 = m.values().sum();
        for &c in m.values() { bits += -(c as f64) * (c as f64 / t as f64).log2(); }
        n += t;
    }
    (bits / n as f64, n)
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let db = redb::Database::open(&args[1]).unwrap();
    let txn = db.begin_read().unwrap();
    let c = txn.open_table(GC).unwrap(); let d = txn.open_table(GD).unwrap();
    let mut stream = Vec::new();
    for r in c.range::<u32>(..).unwrap() { stream.extend_from_slice(r.unwrap().1.value()); }
    let mut games: Vec<StoredGame> = Vec::new();
    for r in d.range::<u32>(..).unwrap() { let (o, l) = r.unwrap().1.value(); games.extend(gameblock::decode(&stream[o as usize..(o + l as u64) as usize]).unwrap()); }
    let limit: usize = args.get(2).map_or(usize::MAX, |s| s.parse().unwrap());
    let names = ["none", "ply", "legal", "check", "prevcap", "legal*check*prevcap", "legal*prevcap*ply", "prevrank", "legal*prevcap*ply*prevrank"];
    let mut hs: Vec<HashMap<u64, HashMap<u8, u64>>> = vec![HashMap::new(); names.len()];
    let pb = |p: usize| -> u64 { match p { 0..=9 => 0, 10..=19 => 1, 20..=39 => 2, 40..=79 => 3, _ => 4 } };
    let lb = |l: usize| -> u64 { match l { 0..=9 => 0, 10..=19 => 1, 20..=29 => 2, 30..=39 => 3, 40..=49 => 4, _ => 5 } };
    let rb = |r: u8| -> u64 { match r { 0 => 0, 1 => 1, 2..=3 => 2, 4..=7 => 3, _ => 4 } };
    for g in games.iter().take(limit) {
        if !g.fields[11].is_empty() { continue; }
        let ranks = &g.fields[13];
        let Ok(moves) = decode_mainline(&Chess::default(), ranks) else { continue };
        let mut pos = Chess::default();
        let mut prevcap = 0u64; let mut prevrank = 5u64;
        for (ply, (m, &r)) in moves.iter().zip(ranks.iter()).enumerate() {
            let legal = pos.legal_moves().len();
            let check = pos.is_check() as u64;
            let ctx = [0, pb(ply), lb(legal), check, prevcap,
                lb(legal) * 4 + check * 2 + prevcap,
                (lb(legal) * 2 + prevcap) * 5 + pb(ply),
                prevrank,
                ((lb(legal) * 2 + prevcap) * 5 + pb(ply)) * 6 + prevrank];
            for (h, &k) in hs.iter_mut().zip(ctx.iter()) { *h.entry(k).or_default().entry(r).or_default() += 1; }
            prevcap = m.is_capture() as u64; prevrank = rb(r);
            pos.play_unchecked(*m);
        }
    }
    for (n, h) in names.iter().zip(&hs) { let (e, cnt) = ent(h); println!("{n:32} {e:.3} bits over {cnt} plies, {} contexts", h.len()); }
}

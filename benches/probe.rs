//! Probe latency of bookdb against a bare redb point read, measured in the same run.
//!
//! `cargo bench --bench probe` (harness = false: this is a plain `fn main`). See
//! benches/README.md for what each variant measures and how to read the output.
//!
//! Environment:
//! - `BOOKDB_BENCH_PGN`: PGN to build the book from (default: the large shared set, else the
//!   medium one, else the first `tests/data/*.pgn`).
//! - `BOOKDB_BENCH_BOOK`: a book to probe instead of building one; if set but missing, the
//!   book is built at that path so the next run reuses it.
//! - `BOOKDB_BENCH_PASSES`: how many times each variant goes over the whole probe set
//!   (default 5; at least 200 batches per variant in any case).

use std::hint::black_box;
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context, Result, bail};
use bookdb::chess::PosState;
use bookdb::ops::import::{ImportOptions, import};
use bookdb::ops::pgn::CountRules;
use bookdb::ops::query;
use bookdb::store::Book;
use redb::{ReadableDatabase, TableDefinition};
use shakmaty::{Chess, Position};

// The same allocator as the `bookdb` binary, so the probe path allocates as `bookdb probe` does.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Positions sampled from the book.
const N_HITS: usize = 20_000;
/// Positions not in the book, as a share of `N_HITS`.
const MISS_PERCENT: usize = 20;
/// Operations per timed batch.
const BATCH: usize = 64;
const WARMUP_ROUNDS: usize = 5;
const MIN_BATCHES: usize = 200;
/// Value size in the redb baseline: one Polyglot entry.
const VALUE_BYTES: usize = 16;
const SEED: u64 = 0x9E37_79B9_7F4A_7C15;
const MAX_PLY: usize = 30;

const BASELINE: TableDefinition<u64, &[u8]> = TableDefinition::new("baseline");

/// xorshift64* — deterministic, no dependencies.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
    fn shuffle<T>(&mut self, v: &mut [T]) {
        for i in (1..v.len()).rev() {
            v.swap(i, self.below(i + 1));
        }
    }
}

/// One probe: the packed position, its key and the shakmaty position (for the full probe path).
struct Probe {
    pos: Vec<u8>,
    key: u64,
    chess: Chess,
    hit: bool,
}

fn manifest_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// The PGN to build from, and a label saying why it was chosen.
fn choose_pgn() -> Result<(PathBuf, &'static str)> {
    if let Some(p) = std::env::var_os("BOOKDB_BENCH_PGN") {
        let p = PathBuf::from(p);
        if !p.exists() {
            bail!("BOOKDB_BENCH_PGN={} does not exist", p.display());
        }
        return Ok((p, "BOOKDB_BENCH_PGN"));
    }
    let shared = manifest_dir().join("../shared/data/pgn");
    let large = shared.join("large-136k.pgn.zst");
    if large.exists() {
        return Ok((large, "large shared set"));
    }
    let medium = shared.join("medium-10k.pgn");
    if medium.exists() {
        return Ok((medium, "medium shared set (large-136k.pgn.zst not found)"));
    }
    let dir = manifest_dir().join("tests/data");
    if let Ok(rd) = std::fs::read_dir(&dir) {
        let mut pgns: Vec<PathBuf> = rd
            .filter_map(|e| e.ok().map(|e| e.path()))
            .filter(|p| p.extension().is_some_and(|x| x == "pgn"))
            .collect();
        pgns.sort();
        if let Some(p) = pgns.into_iter().next() {
            return Ok((p, "small test PGN (no shared data found)"));
        }
    }
    bail!("no PGN found: set BOOKDB_BENCH_PGN, or provide ../shared/data/pgn/ or tests/data/*.pgn")
}

fn build_book(book_path: &Path) -> Result<()> {
    let (pgn, why) = choose_pgn()?;
    println!(
        "building book from {} ({why}), max ply {MAX_PLY}",
        pgn.display()
    );
    let opts = ImportOptions {
        rules: CountRules {
            max_ply: MAX_PLY,
            min_rating: None,
            facets: bookdb::store::facet::FacetSet::NONE,
        },
        ..Default::default()
    };
    let t = Instant::now();
    let s = import(book_path, &[pgn.to_string_lossy().into_owned()], &opts)
        .with_context(|| format!("importing {}", pgn.display()))?;
    println!(
        "  imported {} games ({} skipped) in {:.1}s",
        s.games_imported,
        s.games_skipped,
        t.elapsed().as_secs_f64()
    );
    Ok(())
}

/// Packed form of a shakmaty position.
fn pack(chess: &Chess) -> (Vec<u8>, u64) {
    let st = PosState::from_chess(chess);
    (st.pack().0, st.key())
}

fn unpack(pos: &[u8]) -> Result<Chess> {
    let st = PosState::unpack(pos).map_err(|e| anyhow::anyhow!("unpack: {e}"))?;
    st.to_chess().map_err(|e| anyhow::anyhow!("to_chess: {e}"))
}

/// Distinct keys of the book (ascending) and every k-th positioned entry.
fn scan_book(book: &Book) -> Result<(Vec<u64>, Vec<Vec<u8>>)> {
    let positions = book.meta().positions.max(1) as usize;
    let k = (positions / N_HITS).max(1);
    let mut keys: Vec<u64> = Vec::with_capacity(positions);
    let mut sample = Vec::with_capacity(N_HITS + 1);
    let mut i = 0usize;
    for e in book.iter()? {
        let e = e?;
        if keys.last() != Some(&e.key) {
            keys.push(e.key);
        }
        if let Some(pos) = e.pos {
            if i.is_multiple_of(k) && sample.len() < N_HITS {
                sample.push(pos);
            }
            i += 1;
        }
    }
    Ok((keys, sample))
}

/// The probe set: sampled hits plus misses reached by one random legal move, shuffled.
fn probe_set(book: &Book, sample: Vec<Vec<u8>>, rng: &mut Rng) -> Result<(Vec<Probe>, usize)> {
    let mut probes = Vec::with_capacity(sample.len() * (100 + MISS_PERCENT) / 100);
    for pos in sample {
        let chess = unpack(&pos)?;
        let key = book.codec().key(&pos).map_err(|e| anyhow::anyhow!(e))?;
        if book.lookup(&pos)?.is_none() {
            bail!(
                "sampled position {} not found by lookup",
                bookdb::chess::to_hex(&pos)
            );
        }
        probes.push(Probe {
            pos,
            key,
            chess,
            hit: true,
        });
    }
    let want = probes.len() * MISS_PERCENT / 100;
    let hits = probes.len();
    let mut misses = Vec::with_capacity(want);
    let mut tries = 0usize;
    while misses.len() < want && tries < want * 50 {
        tries += 1;
        let parent = &probes[rng.below(hits)].chess;
        let moves = parent.legal_moves();
        if moves.is_empty() {
            continue;
        }
        let mut child = parent.clone();
        child.play_unchecked(moves[rng.below(moves.len())]);
        let (pos, key) = pack(&child);
        if book.lookup(&pos)?.is_some() {
            continue;
        }
        misses.push(Probe {
            pos,
            key,
            chess: child,
            hit: false,
        });
    }
    let tries_note = tries;
    probes.extend(misses);
    rng.shuffle(&mut probes);
    Ok((probes, tries_note))
}

/// A bare redb file with `keys` → 16-byte values, inserted in order in one transaction.
fn build_baseline(path: &Path, keys: &[u64]) -> Result<u64> {
    let db = redb::Database::create(path)?;
    let txn = db.begin_write()?;
    {
        let mut t = txn.open_table(BASELINE)?;
        let mut v = [0u8; VALUE_BYTES];
        for &k in keys {
            v[..8].copy_from_slice(&k.to_le_bytes());
            v[8..].copy_from_slice(&(!k).to_le_bytes());
            t.insert(k, &v[..])?;
        }
    }
    txn.commit()?;
    drop(db);
    Ok(std::fs::metadata(path)?.len())
}

/// Per-op nanoseconds of each recorded batch.
struct Series {
    name: &'static str,
    what: &'static str,
    ns: Vec<f64>,
}

fn pct(sorted: &[f64], p: f64) -> f64 {
    if sorted.is_empty() {
        return f64::NAN;
    }
    let i = ((sorted.len() - 1) as f64 * p).round() as usize;
    sorted[i]
}

struct Stats {
    median: f64,
    p90: f64,
    p99: f64,
    min: f64,
}

fn stats(ns: &[f64]) -> Stats {
    let mut v = ns.to_vec();
    v.sort_by(f64::total_cmp);
    Stats {
        median: pct(&v, 0.5),
        p90: pct(&v, 0.9),
        p99: pct(&v, 0.99),
        min: v.first().copied().unwrap_or(f64::NAN),
    }
}

fn main() -> Result<()> {
    let tmp = tempfile::Builder::new()
        .prefix("bookdb-probe-bench")
        .tempdir()?;

    // The book.
    let book_path = match std::env::var_os("BOOKDB_BENCH_BOOK") {
        Some(p) => {
            let p = PathBuf::from(p);
            if p.exists() {
                println!("using cached book {} (BOOKDB_BENCH_BOOK)", p.display());
            } else {
                println!(
                    "BOOKDB_BENCH_BOOK={} missing: building it there",
                    p.display()
                );
                build_book(&p)?;
            }
            p
        }
        None => {
            let p = tmp.path().join("bench.book");
            build_book(&p)?;
            p
        }
    };
    let book = Book::open(&book_path, bookdb::chess_codec())?;
    let meta = book.meta().clone();
    let file_bytes = book.file_bytes();
    let bytes_per_pair = file_bytes as f64 / meta.pairs.max(1) as f64;
    println!(
        "book: {} positions, {} pairs, {} blocks, {} file bytes, {:.2} bytes/pair",
        meta.positions, meta.pairs, meta.blocks, file_bytes, bytes_per_pair
    );

    // Probe set.
    let t = Instant::now();
    let (keys, sample) = scan_book(&book)?;
    let mut rng = Rng(SEED);
    let (probes, miss_tries) = probe_set(&book, sample, &mut rng)?;
    let hits = probes.iter().filter(|p| p.hit).count();
    let misses = probes.len() - hits;
    println!(
        "probe set: {} positions ({hits} in book, {misses} not: {miss_tries} random moves tried), \
         {} distinct keys scanned in {:.1}s",
        probes.len(),
        keys.len(),
        t.elapsed().as_secs_f64()
    );
    if probes.is_empty() {
        bail!("the book is empty");
    }

    // Baseline.
    let t = Instant::now();
    let base_path = tmp.path().join("baseline.redb");
    let base_bytes = build_baseline(&base_path, &keys)?;
    println!(
        "baseline redb: {} keys x {VALUE_BYTES}-byte values, {base_bytes} file bytes, built in {:.1}s",
        keys.len(),
        t.elapsed().as_secs_f64()
    );
    drop(keys);
    let base = redb::ReadOnlyDatabase::open(&base_path)?;
    let reused_txn = base.begin_read()?;
    let reused_table = reused_txn.open_table(BASELINE)?;
    // Correctness of the baseline, and of the probe path, before timing.
    for p in &probes {
        let found = reused_table.get(p.key)?.is_some();
        if p.hit && !found {
            bail!("baseline lacks key {:016x}", p.key);
        }
        let a = query::probe(&book, &p.chess)?;
        if a.entry.is_some() != p.hit {
            bail!("query::probe disagrees with lookup on key {:016x}", p.key);
        }
    }

    type Op<'a> = Box<dyn Fn(&Probe) -> Result<usize> + 'a>;
    let ops: Vec<(&'static str, &'static str, Op)> = vec![
        (
            "redb_txn_per_read",
            "bare redb: begin_read + open_table + get per read",
            Box::new(|p: &Probe| {
                let txn = base.begin_read()?;
                let t = txn.open_table(BASELINE)?;
                Ok(t.get(p.key)?.map_or(0, |v| usize::from(v.value()[0])))
            }),
        ),
        (
            "redb_reused_txn",
            "bare redb: get on a table opened once",
            Box::new(|p: &Probe| {
                Ok(reused_table
                    .get(p.key)?
                    .map_or(0, |v| usize::from(v.value()[0])))
            }),
        ),
        (
            "bookdb_lookup",
            "Book::lookup(packed position)",
            Box::new(|p: &Probe| Ok(book.lookup(&p.pos)?.map_or(0, |e| e.moves.len()))),
        ),
        (
            "bookdb_lookup_uncached",
            "Book::lookup_blocks_uncached: the base without the block cache (redb range lookup, decompress)",
            Box::new(|p: &Probe| {
                Ok(book
                    .lookup_blocks_uncached(&p.pos)?
                    .map_or(0, |e| e.moves.len()))
            }),
        ),
        (
            "bookdb_probe_path",
            "ops::query::probe(&book, &Chess) (the `bookdb probe` path, no output formatting)",
            Box::new(|p: &Probe| {
                let a = query::probe(&book, &p.chess)?;
                Ok(a.entry.map_or(0, |e| e.moves.len()) + a.same_key_others)
            }),
        ),
        (
            "bookdb_changed",
            "Book::changed() when nothing changed: a stat of the base, a read of the manifest, a stat per segment",
            Box::new(|_: &Probe| Ok(usize::from(book.changed()?))),
        ),
    ];

    let passes: usize = std::env::var("BOOKDB_BENCH_PASSES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(5)
        .max(1);
    let n = probes.len();
    let rounds = (passes * n).div_ceil(BATCH).max(MIN_BATCHES);
    let mut series: Vec<Series> = ops
        .iter()
        .map(|(name, what, _)| Series {
            name,
            what,
            ns: Vec::with_capacity(rounds),
        })
        .collect();
    println!(
        "timing: {} variants interleaved, {WARMUP_ROUNDS} warm-up rounds, {rounds} batches of {BATCH} ops each",
        ops.len()
    );
    let t = Instant::now();
    let mut sink = 0usize;
    for round in 0..WARMUP_ROUNDS + rounds {
        let start = (round * BATCH) % n;
        // Rotate which variant goes first so none is always first after a context switch.
        for j in 0..ops.len() {
            let v = (round + j) % ops.len();
            let op = &ops[v].2;
            let t0 = Instant::now();
            for i in 0..BATCH {
                sink = sink.wrapping_add(op(black_box(&probes[(start + i) % n]))?);
            }
            let per_op = t0.elapsed().as_nanos() as f64 / BATCH as f64;
            if round >= WARMUP_ROUNDS {
                series[v].ns.push(per_op);
            }
        }
    }
    black_box(sink);
    println!("timed in {:.1}s\n", t.elapsed().as_secs_f64());

    println!(
        "{:<20} {:>10} {:>10} {:>10} {:>10}  (per-op µs; each sample = mean of a {BATCH}-op batch)",
        "variant", "median", "p90", "p99", "min"
    );
    let all: Vec<(&Series, Stats)> = series.iter().map(|s| (s, stats(&s.ns))).collect();
    for (s, st) in &all {
        println!(
            "{:<20} {:>10.3} {:>10.3} {:>10.3} {:>10.3}  {}",
            s.name,
            st.median / 1e3,
            st.p90 / 1e3,
            st.p99 / 1e3,
            st.min / 1e3,
            s.what
        );
    }
    let med = |name: &str| {
        all.iter()
            .find(|(s, _)| s.name == name)
            .map_or(f64::NAN, |(_, st)| st.median)
    };
    // Paired ratios: the two batches of one round ran back to back, so machine noise that
    // lasts longer than a round cancels out.
    let paired = |a: &str, b: &str| {
        let sa = series.iter().find(|s| s.name == a);
        let sb = series.iter().find(|s| s.name == b);
        match (sa, sb) {
            (Some(sa), Some(sb)) => {
                let r: Vec<f64> = sa.ns.iter().zip(&sb.ns).map(|(x, y)| x / y).collect();
                stats(&r).median
            }
            _ => f64::NAN,
        }
    };
    let p_lookup = paired("bookdb_lookup", "redb_txn_per_read");
    let p_probe = paired("bookdb_probe_path", "redb_txn_per_read");
    let r_lookup = med("bookdb_lookup") / med("redb_txn_per_read");
    let r_lookup_reused = med("bookdb_lookup") / med("redb_reused_txn");
    let r_probe = med("bookdb_probe_path") / med("redb_txn_per_read");
    println!();
    println!("ratio of medians          bookdb_lookup / redb_txn_per_read     = {r_lookup:.2}");
    println!(
        "ratio of medians          bookdb_lookup / redb_reused_txn       = {r_lookup_reused:.2}"
    );
    println!("ratio of medians          bookdb_probe_path / redb_txn_per_read = {r_probe:.2}");
    println!("median of per-round ratios bookdb_lookup / redb_txn_per_read     = {p_lookup:.2}");
    println!(
        "ratio of medians          bookdb_lookup_uncached / redb_txn_per_read = {:.2}",
        med("bookdb_lookup_uncached") / med("redb_txn_per_read")
    );
    println!("median of per-round ratios bookdb_probe_path / redb_txn_per_read = {p_probe:.2}");

    let variants: serde_json::Map<String, serde_json::Value> = all
        .iter()
        .map(|(s, st)| {
            (
                s.name.to_string(),
                serde_json::json!({
                    "median_ns": st.median.round(),
                    "p90_ns": st.p90.round(),
                    "p99_ns": st.p99.round(),
                    "min_ns": st.min.round(),
                    "batches": s.ns.len(),
                }),
            )
        })
        .collect();
    let result = serde_json::json!({
        "bench": "probe",
        "batch_ops": BATCH,
        "probes": n,
        "hits": hits,
        "misses": misses,
        "variants": variants,
        "ratio_lookup_vs_redb_txn_per_read": (r_lookup * 1000.0).round() / 1000.0,
        "ratio_lookup_vs_redb_reused_txn": (r_lookup_reused * 1000.0).round() / 1000.0,
        "ratio_probe_path_vs_redb_txn_per_read": (r_probe * 1000.0).round() / 1000.0,
        "paired_ratio_lookup_vs_redb_txn_per_read": (p_lookup * 1000.0).round() / 1000.0,
        "paired_ratio_probe_path_vs_redb_txn_per_read": (p_probe * 1000.0).round() / 1000.0,
        "book": {
            "positions": meta.positions,
            "pairs": meta.pairs,
            "blocks": meta.blocks,
            "file_bytes": file_bytes,
            "bytes_per_pair": (bytes_per_pair * 1000.0).round() / 1000.0,
        },
        "baseline_file_bytes": base_bytes,
    });
    println!("RESULT {result}");
    Ok(())
}

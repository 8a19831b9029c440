//! An exact Othello endgame solver whose transposition table is a `bookdb::tt` file:
//!
//! ```sh
//! cargo run --release --example othello_endgame -- --tt FILE [--empties N] [--limit G] WTB…
//! ```
//!
//! For each game of the WTHOR files, the position with N empties (default: the file header's
//! theoretical-score depth, 24) is solved exactly (`bookdb::othello::endgame`) and compared
//! with the federation's theoretical score, black's discs at the end with perfect play, empty
//! squares to the winner. One line per game:
//! `<file>:<game> theoretical <T> solved <S> nodes <n> ms <t>`, then
//! `games G, agree A, disagree D`; totals and the table's counters go to stderr. Run twice on
//! the same `--tt`: the second run answers from the table.
//!
//! Options: `--table persistent|memory|none` (the `bookdb::tt` file, a plain `HashMap`, or no
//! table: the baselines of docs/PERFORMANCE.md), `--memory MiB` (the table's budget),
//! `--tt-min-empties K` (positions with fewer empties are searched without the table),
//! `--collisions` (easyAI's hash families on the positions stored: see docs/PERFORMANCE.md).

use std::collections::HashMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::{Context, bail};
use bookdb::ops::othello::games::{WTHOR_HEADER, WTHOR_RECORD, decode_record};
use bookdb::othello::Board;
use bookdb::othello::endgame::{MemoryTable, NoTable, SearchTable, Solver};
use bookdb::tt::{Entry, KeyHash, Table, TableOptions, TtPosition, family_hash};

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

struct Args {
    tt: Option<PathBuf>,
    table: String,
    empties: Option<u32>,
    limit: Option<u64>,
    memory: usize,
    tt_min_empties: u32,
    collisions: bool,
    files: Vec<PathBuf>,
}

fn parse_args() -> anyhow::Result<Args> {
    let mut a = Args {
        tt: None,
        table: "persistent".into(),
        empties: None,
        limit: None,
        memory: 256,
        tt_min_empties: 12,
        collisions: false,
        files: Vec::new(),
    };
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        let mut value = |name: &str| it.next().with_context(|| format!("{name} needs a value"));
        match arg.as_str() {
            "--tt" => a.tt = Some(value("--tt")?.into()),
            "--table" => a.table = value("--table")?,
            "--empties" => a.empties = Some(value("--empties")?.parse()?),
            "--limit" => a.limit = Some(value("--limit")?.parse()?),
            "--memory" => a.memory = value("--memory")?.parse()?,
            "--tt-min-empties" => a.tt_min_empties = value("--tt-min-empties")?.parse()?,
            "--collisions" => a.collisions = true,
            s if s.starts_with("--") => bail!("unknown option {s}"),
            _ => a.files.push(arg.into()),
        }
    }
    if a.files.is_empty() {
        bail!(
            "usage: othello_endgame --tt FILE [--empties N] [--limit G] [--table persistent|memory|none] WTB…"
        );
    }
    if a.table == "persistent" && a.tt.is_none() {
        bail!("--tt FILE is needed with the persistent table");
    }
    Ok(a)
}

/// A game to solve: where it is from, the position, WTHOR's theoretical score.
struct Task {
    name: String,
    board: Board,
    theoretical: i32,
}

/// The position of each game with `empties` empty squares (the header's depth if `None`).
fn tasks(path: &Path, empties: Option<u32>, skipped: &mut u64) -> anyhow::Result<Vec<Task>> {
    let data = std::fs::read(path).with_context(|| format!("reading {}", path.display()))?;
    if data.len() < WTHOR_HEADER {
        bail!("{}: not a WTHOR file (too short)", path.display());
    }
    let depth = empties.unwrap_or(match data[14] {
        0 => 24,
        d => u32::from(d),
    });
    let file = path
        .file_name()
        .unwrap_or_default()
        .to_string_lossy()
        .into_owned();
    let mut out = Vec::new();
    for (i, rec) in data[WTHOR_HEADER..].chunks(WTHOR_RECORD).enumerate() {
        let number = i as u64 + 1;
        let Ok(game) = decode_record(rec, number) else {
            *skipped += 1;
            continue;
        };
        let mut b = Board::start();
        let mut ok = true;
        for &sq in &game.moves {
            if 64 - (b.black() | b.white()).count_ones() == depth {
                break;
            }
            if b.play(sq).is_err() {
                ok = false;
                break;
            }
        }
        if !ok || 64 - (b.black() | b.white()).count_ones() != depth {
            // An illegal move, or a game that ended before it had so few empties.
            *skipped += 1;
            continue;
        }
        out.push(Task {
            name: format!("{file}:{number}"),
            board: b,
            theoretical: i32::from(rec[7]),
        });
    }
    Ok(out)
}

/// Records the positions stored (for `--collisions`) around another table.
struct Logged<T> {
    inner: T,
    log: bool,
    stored: Vec<Board>,
}

impl<T: SearchTable> SearchTable for Logged<T> {
    fn probe(&mut self, b: &Board) -> bookdb::store::error::Result<Option<Entry>> {
        self.inner.probe(b)
    }
    fn store(&mut self, b: &Board, e: Entry) -> bookdb::store::error::Result<()> {
        if self.log {
            self.stored.push(*b);
        }
        self.inner.store(b, e)
    }
}

fn run<T: SearchTable>(
    solver: &mut Solver<T>,
    tasks: &[Task],
    mut after_game: impl FnMut(&mut Solver<T>) -> anyhow::Result<()>,
) -> anyhow::Result<(u64, u64)> {
    let (mut agree, mut disagree) = (0, 0);
    for t in tasks {
        let nodes = solver.nodes;
        let start = Instant::now();
        let solved = solver.solve(&t.board)?;
        let ms = start.elapsed().as_secs_f64() * 1e3;
        if solved.black_score == t.theoretical {
            agree += 1;
        } else {
            disagree += 1;
        }
        println!(
            "{} theoretical {} solved {} nodes {} ms {:.1}",
            t.name,
            t.theoretical,
            solved.black_score,
            solver.nodes - nodes,
            ms
        );
        after_game(solver)?;
    }
    Ok((agree, disagree))
}

/// easyAI's `DictTranspositionTable(1024, own_hash=family)` fed the stores' `ttentry()`
/// strings (the board string): collisions as easyAI counts them (a `set` on an occupied
/// slot) and evictions (the slot held another state).
fn collisions(stored: &[Board]) {
    let per_m = |n: u64| n as f64 * 1e6 / stored.len().max(1) as f64;
    eprintln!(
        "collisions over {} stores in 1,024 buckets (per million stores): easyAI's count / evictions of another state",
        stored.len()
    );
    let strings: Vec<String> = stored.iter().map(|b| b.board_string()).collect();
    let simulate = |slot_of: &dyn Fn(usize) -> usize| {
        let mut slots: Vec<Option<usize>> = vec![None; 1024];
        let (mut counted, mut evicted) = (0u64, 0u64);
        for i in 0..stored.len() {
            let s = slot_of(i);
            if let Some(j) = slots[s] {
                counted += 1;
                if strings[j] != strings[i] {
                    evicted += 1;
                }
            }
            slots[s] = Some(i);
        }
        (counted, evicted)
    };
    for family in KeyHash::ALL.into_iter().skip(1) {
        let (c, e) = simulate(&|i| {
            (family_hash(family, strings[i].chars().map(|c| c as u64), Some(1024)) % 1024) as usize
        });
        eprintln!(
            "  {:<14} {:>10.0} {:>10.0}",
            family.name(),
            per_m(c),
            per_m(e)
        );
    }
    let (c, e) = simulate(&|i| (stored[i].tt_key() % 1024) as usize);
    eprintln!(
        "  {:<14} {:>10.0} {:>10.0}",
        "bookdb key",
        per_m(c),
        per_m(e)
    );
    // bookdb's table: 64-bit keys, every position kept by its exact bytes.
    let mut by_key: HashMap<u64, Vec<(u64, u64, bool)>> = HashMap::new();
    for b in stored {
        let v = by_key.entry(b.tt_key()).or_default();
        let x = (b.black(), b.white(), b.white_to_move());
        if !v.contains(&x) {
            v.push(x);
        }
    }
    let shared: u64 = by_key.values().map(|v| v.len() as u64 - 1).sum();
    eprintln!(
        "  64-bit keys: {} distinct positions, {} sharing a key with another ({:.3} per million stores)",
        by_key.values().map(|v| v.len()).sum::<usize>(),
        shared,
        per_m(shared)
    );
}

fn main() -> anyhow::Result<()> {
    let a = parse_args()?;
    let mut all = Vec::new();
    let mut skipped = 0;
    for f in &a.files {
        all.extend(tasks(f, a.empties, &mut skipped)?);
    }
    if let Some(l) = a.limit {
        all.truncate(usize::try_from(l).unwrap_or(usize::MAX));
    }
    let start = Instant::now();
    let nodes;
    let mut stored = Vec::new();
    let (agree, disagree, table_note) = match a.table.as_str() {
        "persistent" => {
            let opts = TableOptions {
                memory_mib: a.memory,
                ..TableOptions::default()
            };
            let path = a.tt.as_deref().unwrap_or(Path::new(""));
            let mut table = Table::open(path, Board::GAME, &opts)?;
            let generation = table.new_search();
            let mut s = Solver::new(Logged {
                inner: table,
                log: a.collisions,
                stored: Vec::new(),
            });
            s.tt_min_empties = a.tt_min_empties;
            s.generation = generation;
            // Each game's results are published when it is solved: a killed run loses at
            // most the game in flight.
            let (ag, dis) = run(&mut s, &all, |s| Ok(s.table.inner.flush()?))?;
            nodes = s.nodes;
            stored = std::mem::take(&mut s.table.stored);
            let mut table = s.table.inner;
            table.flush()?;
            let st = table.stats();
            table.close()?;
            (ag, dis, format!("{st:?}"))
        }
        "memory" => {
            let mut s = Solver::new(Logged {
                inner: MemoryTable::default(),
                log: a.collisions,
                stored: Vec::new(),
            });
            s.tt_min_empties = a.tt_min_empties;
            let (ag, dis) = run(&mut s, &all, |_| Ok(()))?;
            nodes = s.nodes;
            stored = std::mem::take(&mut s.table.stored);
            (
                ag,
                dis,
                format!("{} positions in memory", s.table.inner.0.len()),
            )
        }
        "none" => {
            let mut s = Solver::new(NoTable);
            s.tt_min_empties = 65;
            let (ag, dis) = run(&mut s, &all, |_| Ok(()))?;
            nodes = s.nodes;
            (ag, dis, "no table".into())
        }
        other => bail!("--table {other}: persistent, memory or none"),
    };
    let secs = start.elapsed().as_secs_f64();
    println!(
        "games {}, agree {agree}, disagree {disagree}",
        agree + disagree
    );
    eprintln!(
        "skipped {skipped} (ended before that many empties, or not decodable); nodes {nodes}, {secs:.2} s, {:.0} nodes/s",
        nodes as f64 / secs.max(1e-9)
    );
    eprintln!("table: {table_note}");
    if a.collisions {
        collisions(&stored);
    }
    Ok(())
}

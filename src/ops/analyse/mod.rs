//! `bookdb analyse`: a UCI engine over the book's positions, most-played first, `jobs`
//! engine processes side by side (docs/CONTRACT.md §10). Each result is written ahead to
//! `<book>.analyse.log` ([`log`]) as it comes and the log is published as a delta segment of
//! evaluations every [`PUBLISH_EVERY`] results and at the end, so `kill -9` loses at most the
//! positions in flight; a position the book (or the log) already has a result for at the
//! asked depth (nodes, lines) or better is skipped, so running the same command again
//! finishes the work exactly once. An engine that dies, hangs or babbles has its position
//! retried once on a fresh process, then reported with its last words; the run goes on.

mod log;
pub mod uci;

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::time::{Duration, Instant};

use serde::Serialize;
use shakmaty::{Chess, Position};

use crate::chess::PosState;
use crate::error::{Error, Result};
use crate::ops::game::{Game, chess_only};
use crate::ops::progress::{Progress, ProgressMode};
use crate::store::eval::{EvalLine, EvalResult, MAX_LINES, Score};
use crate::store::{Book, LockWait, WriterOptions};
use uci::{Engine, InfoLine, Limit};

/// Results between two publications of the log.
pub const PUBLISH_EVERY: usize = 200;

/// Options of `analyse`.
#[derive(Clone, Debug)]
pub struct AnalyseOptions {
    pub engine: String,
    pub limit: Limit,
    pub multipv: u32,
    pub min_games: u64,
    pub max_ply: Option<u32>,
    pub jobs: usize,
    pub hash_mib: u32,
    /// Analyse at most this many positions (the most played), done ones included.
    pub limit_positions: Option<usize>,
    /// Longest wait for one position's search.
    pub timeout: Duration,
    pub progress: ProgressMode,
    pub lock_wait: LockWait,
    pub writer: WriterOptions,
}

/// A position the engine could not analyse.
#[derive(Clone, Debug, Serialize)]
pub struct Failure {
    pub fen: String,
    pub reason: String,
    pub last_words: Vec<String>,
}

/// What `analyse` did.
#[derive(Clone, Debug, Serialize)]
pub struct AnalyseSummary {
    pub book: String,
    pub engine: String,
    /// Positions chosen (most played first, within `--limit`).
    pub selected: u64,
    /// Of those, already analysed at the asked depth or better (book or log).
    pub skipped: u64,
    pub analysed: u64,
    pub failed: Vec<Failure>,
    pub publications: u64,
    pub positions_per_sec: f64,
    pub elapsed_secs: f64,
}

impl std::fmt::Display for AnalyseSummary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for x in &self.failed {
            writeln!(
                f,
                "failed {}: {} (last words: {})",
                x.fen,
                x.reason,
                x.last_words.join(" | ")
            )?;
        }
        write!(
            f,
            "{}: {} positions selected, {} already analysed, {} analysed by {} ({:.1}/s), {} failed, in {:.1} s",
            self.book,
            self.selected,
            self.skipped,
            self.analysed,
            self.engine,
            self.positions_per_sec,
            self.failed.len(),
            self.elapsed_secs
        )
    }
}

/// A position to analyse.
#[derive(Clone)]
struct Job {
    key: u64,
    pos: Vec<u8>,
    chess: Chess,
}

/// Whether `have` already answers the asked analysis.
fn done(have: &[EvalResult], opts: &AnalyseOptions, legal: usize) -> bool {
    let lines = (opts.multipv as usize).min(legal).max(1);
    have.iter().any(|r| {
        r.lines.len() >= lines
            && match opts.limit {
                Limit::Depth(d) => r.depth >= d,
                // Stored in thousands: a search given N nodes stores ⌊N / 1000⌋.
                Limit::Nodes(n) => r.knodes >= n / 1000,
                Limit::MoveTime(_) => true,
            }
    })
}

/// The book's positions by games played (descending), within `max_ply` of the start position
/// along book moves when it is given, with at least `min_games` games and a legal move.
fn candidates(book: &Book, opts: &AnalyseOptions) -> Result<Vec<Job>> {
    let reach = match opts.max_ply {
        Some(p) => Some(reachable(book, p)?),
        None => None,
    };
    let mut all: Vec<(u64, Job)> = Vec::new();
    for e in book.iter()? {
        let e = e?;
        let Some(pos) = e.pos else { continue };
        let games: u64 = e.moves.iter().map(|m| m.games()).sum();
        if games < opts.min_games || reach.as_ref().is_some_and(|r| !r.contains(&pos)) {
            continue;
        }
        let Ok(chess) = crate::ops::evals::chess_of(&pos) else {
            continue;
        };
        if chess.legal_moves().is_empty() {
            continue;
        }
        all.push((
            games,
            Job {
                key: e.key,
                pos,
                chess,
            },
        ));
    }
    all.sort_by(|a, b| {
        b.0.cmp(&a.0)
            .then((a.1.key, &a.1.pos).cmp(&(b.1.key, &b.1.pos)))
    });
    let mut jobs: Vec<Job> = all.into_iter().map(|(_, j)| j).collect();
    if let Some(n) = opts.limit_positions {
        jobs.truncate(n);
    }
    Ok(jobs)
}

/// Packed positions reached from the start position by at most `plies` book moves.
fn reachable(book: &Book, plies: u32) -> Result<BTreeSet<Vec<u8>>> {
    let mut seen = BTreeSet::new();
    let mut frontier = vec![Chess::default()];
    for _ in 0..=plies {
        let mut next = Vec::new();
        for pos in frontier {
            let packed = PosState::from_chess(&pos).pack().0;
            if !seen.insert(packed.clone()) {
                continue;
            }
            if let Some(e) = book.lookup(&packed)? {
                for m in &e.moves {
                    if let Some(mv) = crate::chess::legal_move(&pos, m.mv) {
                        let mut p = pos.clone();
                        p.play_unchecked(mv);
                        next.push(p);
                    }
                }
            }
        }
        frontier = next;
    }
    Ok(seen)
}

/// The engine's lines as a result (White's point of view, moves as codes) of a search under
/// `limit`. Its knodes: the most nodes a line reports, and for a search given N nodes (`go
/// nodes N`, which ended with `bestmove`) at least N: engines report the nodes of their last
/// finished iteration, below N, and a rerun of the same command must find it done.
fn to_result(
    pos: &Chess,
    engine: &str,
    lines: &[InfoLine],
    limit: Limit,
) -> std::result::Result<EvalResult, String> {
    let first = lines.first().ok_or("no line with a score and a pv")?;
    let mut out = Vec::new();
    for l in lines.iter().take(MAX_LINES) {
        let moves: Vec<&str> = l.pv.iter().map(String::as_str).collect();
        if moves.is_empty() {
            return Err("a line without moves".into());
        }
        let codes = crate::ops::evals::line_codes(pos, &moves, crate::ops::evals::parse_uci)?;
        let s = if l.mate {
            Score::Mate(l.score)
        } else {
            Score::Cp(l.score.clamp(-100_000, 100_000))
        };
        out.push(EvalLine {
            score: crate::ops::evals::white_view(pos, s),
            moves: codes,
        });
    }
    let r = EvalResult {
        depth: first.depth,
        knodes: match limit {
            Limit::Nodes(n) => lines.iter().map(|l| l.nodes).max().unwrap_or(0).max(n),
            _ => lines.iter().map(|l| l.nodes).max().unwrap_or(0),
        } / 1000,
        engine: engine.chars().take(64).collect(),
        lines: out,
    };
    crate::ops::evals::check_result(pos, &r)?;
    Ok(r)
}

/// What a worker sends back: the job's index and its result or failure.
type Done = (usize, std::result::Result<EvalResult, Failure>);

/// One worker: an engine process, restarted after a failure; each position tried twice.
fn worker(
    opts: &AnalyseOptions,
    jobs: &crossbeam_channel::Receiver<(usize, Job)>,
    done: &crossbeam_channel::Sender<Done>,
) {
    let mut engine: Option<Engine> = None;
    for (i, job) in jobs.iter() {
        let fen = PosState::from_chess(&job.chess).fen();
        let mut outcome = Err(Failure {
            fen: fen.clone(),
            reason: String::new(),
            last_words: Vec::new(),
        });
        for _attempt in 0..2 {
            let e = match engine.take() {
                Some(e) => e,
                None => match Engine::start(&opts.engine, opts.hash_mib, opts.multipv) {
                    Ok(e) => e,
                    Err(err) => {
                        outcome = Err(Failure {
                            fen: fen.clone(),
                            reason: err.to_string(),
                            last_words: Vec::new(),
                        });
                        continue;
                    }
                },
            };
            let mut e = e;
            match e.search(&format!("{fen} 0 1"), opts.limit, opts.timeout) {
                Ok(lines) => match to_result(&job.chess, &e.name, &lines, opts.limit) {
                    Ok(r) => {
                        outcome = Ok(r);
                        engine = Some(e);
                        break;
                    }
                    Err(why) => {
                        outcome = Err(Failure {
                            fen: fen.clone(),
                            reason: format!("unusable answer: {why}"),
                            last_words: e.last_words(),
                        });
                    }
                },
                Err(err) => {
                    outcome = Err(Failure {
                        fen: fen.clone(),
                        reason: err.to_string(),
                        last_words: e.last_words(),
                    });
                }
            }
            // `e` is dropped: the process is killed, the next attempt starts a fresh one.
        }
        if done.send((i, outcome)).is_err() {
            return;
        }
    }
}

/// Publishes the logged results into the book (under the writer lock) and empties the log.
fn publish(book_path: &Path, log: &mut log::Log, opts: &AnalyseOptions) -> Result<bool> {
    let rows = log.read()?;
    if rows.is_empty() {
        return Ok(false);
    }
    let mut evals: BTreeMap<(u64, Vec<u8>), Vec<EvalResult>> = BTreeMap::new();
    for (key, pos, r) in rows {
        evals.entry((key, pos)).or_default().push(r);
    }
    let _lock = crate::store::book::lock_for_writing(book_path, opts.lock_wait)?;
    let book = Book::open(book_path, Game::Chess.codec())?;
    let new = crate::store::book::NewEvals {
        evals,
        imports: Vec::new(),
        facets: book.facets(),
    };
    crate::store::book::publish_evals(
        book_path,
        Some(&book),
        new,
        Game::Chess.codec(),
        &opts.writer,
    )?;
    log.clear()?;
    Ok(true)
}

/// Runs the analysis of the book at `book_path`.
pub fn analyse(book_path: &Path, opts: &AnalyseOptions) -> Result<AnalyseSummary> {
    let start = Instant::now();
    let book_path = &crate::store::files::resolve_book(book_path)?;
    let (game, book) = Game::open(book_path)?;
    if game != Game::Chess {
        return Err(chess_only(book_path, game, "analyse"));
    }
    if !(1..=MAX_LINES as u32).contains(&opts.multipv) {
        return Err(Error::Usage(format!(
            "--multipv {} (1 to {MAX_LINES})",
            opts.multipv
        )));
    }
    // Refused at once if it is not a UCI engine.
    let probe = Engine::start(&opts.engine, opts.hash_mib, opts.multipv)
        .map_err(|e| Error::Usage(format!("--engine {}: {e}", opts.engine)))?;
    let engine_name = probe.name.clone();
    drop(probe);
    let mut log = log::Log::open(book_path)?;
    let logged = log.read()?;
    let mut have: BTreeMap<(u64, Vec<u8>), Vec<EvalResult>> = BTreeMap::new();
    for (k, p, r) in logged {
        have.entry((k, p)).or_default().push(r);
    }
    let chosen = candidates(&book, opts)?;
    let mut todo = Vec::new();
    for j in &chosen {
        let mut known = have
            .get(&(j.key, j.pos.clone()))
            .cloned()
            .unwrap_or_default();
        known.extend(book.evals(&j.pos)?.unwrap_or_default());
        if !done(&known, opts, j.chess.legal_moves().len()) {
            todo.push(j.clone());
        }
    }
    drop(book);
    let mut summary = AnalyseSummary {
        book: book_path.display().to_string(),
        engine: engine_name,
        selected: chosen.len() as u64,
        skipped: (chosen.len() - todo.len()) as u64,
        analysed: 0,
        failed: Vec::new(),
        publications: 0,
        positions_per_sec: 0.0,
        elapsed_secs: 0.0,
    };
    run_jobs(book_path, &mut log, opts, todo, &mut summary)?;
    if publish(book_path, &mut log, opts)? {
        summary.publications += 1;
    }
    log.remove();
    summary.elapsed_secs = start.elapsed().as_secs_f64();
    summary.positions_per_sec = summary.analysed as f64 / summary.elapsed_secs.max(1e-9);
    Ok(summary)
}

/// The engines over `todo`: results logged as they come, published every [`PUBLISH_EVERY`].
fn run_jobs(
    book_path: &Path,
    log: &mut log::Log,
    opts: &AnalyseOptions,
    todo: Vec<Job>,
    summary: &mut AnalyseSummary,
) -> Result<()> {
    let progress = Progress::analyse(opts.progress, todo.len() as u64);
    let (job_tx, job_rx) = crossbeam_channel::unbounded();
    let (done_tx, done_rx) = crossbeam_channel::unbounded::<Done>();
    let jobs: Vec<Job> = todo;
    for (i, j) in jobs.iter().enumerate() {
        let _ = job_tx.send((i, j.clone()));
    }
    drop(job_tx);
    let result = std::thread::scope(|s| -> Result<()> {
        for _ in 0..opts.jobs.max(1) {
            let (rx, tx) = (job_rx.clone(), done_tx.clone());
            s.spawn(move || worker(opts, &rx, &tx));
        }
        drop(done_tx);
        let mut since = 0usize;
        for (i, outcome) in done_rx.iter() {
            progress.add(1);
            match outcome {
                Ok(r) => {
                    log.append(jobs[i].key, &jobs[i].pos, &r)?;
                    summary.analysed += 1;
                    since += 1;
                }
                Err(f) => summary.failed.push(f),
            }
            if since >= PUBLISH_EVERY {
                since = 0;
                if publish(book_path, log, opts)? {
                    summary.publications += 1;
                }
            }
        }
        Ok(())
    });
    progress.clear();
    result
}

//! `bookdb analyse`: a UCI engine (Stockfish) over the book's positions, most-played first,
//! results written ahead and published as evaluations; an interrupted run resumes.

use std::process::ExitCode;
use std::time::Duration;

use bookdb::ops::analyse::uci::Limit;
use bookdb::ops::analyse::{AnalyseOptions, analyse};

use super::args::{BookArg, JobArgs};

#[derive(clap::Args)]
pub(crate) struct Args {
    #[command(flatten)]
    book: BookArg,
    /// The UCI engine to run (e.g. /usr/games/stockfish).
    #[arg(long, value_name = "PATH", value_hint = clap::ValueHint::ExecutablePath)]
    engine: String,
    /// Search each position to this depth (the default: 20).
    #[arg(long, value_name = "D", conflicts_with_all = ["nodes", "movetime"])]
    depth: Option<u32>,
    /// Search each position for this many nodes.
    #[arg(long, value_name = "N", conflicts_with = "movetime")]
    nodes: Option<u64>,
    /// Search each position for this many milliseconds (not reproducible).
    #[arg(long, value_name = "MS")]
    movetime: Option<u64>,
    /// Lines per position (1 to 5).
    #[arg(long, default_value_t = 1)]
    multipv: u32,
    /// Only positions played in at least G games.
    #[arg(long, value_name = "G", default_value_t = 1)]
    min_games: u64,
    /// Only positions within P plies of the start position along book moves.
    #[arg(long, value_name = "P")]
    max_ply: Option<u32>,
    /// Engine processes side by side (default: the number of cores).
    #[arg(long, value_name = "J")]
    jobs: Option<usize>,
    /// Each engine's hash table, MiB.
    #[arg(long, value_name = "MiB", default_value_t = 16)]
    hash: u32,
    /// At most the N most played positions (those already analysed included).
    #[arg(long, value_name = "N")]
    limit: Option<usize>,
    /// Seconds an engine may take for one position before it is taken for hung.
    #[arg(long, value_name = "SECONDS", default_value_t = 120.0)]
    timeout: f64,
    #[command(flatten)]
    pub(crate) job: JobArgs,
}

impl Args {
    pub(crate) fn run(self) -> anyhow::Result<ExitCode> {
        let limit = match (self.depth, self.nodes, self.movetime) {
            (_, Some(n), _) => Limit::Nodes(n),
            (_, _, Some(ms)) => Limit::MoveTime(ms),
            (d, _, _) => Limit::Depth(d.unwrap_or(20)),
        };
        if !(self.timeout.is_finite() && self.timeout > 0.0)
            || Duration::try_from_secs_f64(self.timeout).is_err()
        {
            anyhow::bail!("--timeout takes a positive number of seconds (at most 10^18)");
        }
        let rewrite = self.job.rewrite_options();
        let opts = AnalyseOptions {
            engine: self.engine.clone(),
            limit,
            multipv: self.multipv,
            min_games: self.min_games,
            max_ply: self.max_ply,
            jobs: self
                .jobs
                .unwrap_or_else(|| std::thread::available_parallelism().map_or(1, |n| n.get())),
            hash_mib: self.hash,
            limit_positions: self.limit,
            timeout: Duration::try_from_secs_f64(self.timeout).unwrap_or(Duration::MAX),
            progress: rewrite.progress,
            lock_wait: rewrite.lock_wait,
            writer: rewrite.writer,
        };
        let summary = analyse(&self.book.book, &opts)?;
        let json = self.job.output.json;
        self.job.output.print(&summary)?;
        if summary.failed.is_empty() {
            return Ok(ExitCode::SUCCESS);
        }
        // As an import with a failed input: the rest is stored, the run is not a success (with
        // --json, the answer's `failed` says which).
        if !json {
            bookdb::stderr_line!(
                "bookdb: error: {} of {} positions failed (the summary lists them); the other \
                 results are stored. Run the same command again to retry them (finished \
                 positions are skipped)",
                summary.failed.len(),
                summary.failed.len() as u64 + summary.analysed
            );
        }
        Ok(ExitCode::from(1))
    }
}

//! Arguments several commands share: the book (`--book`), output (`--json`, `--quiet`), the
//! writer lock (`--wait`, writers only), progress (`--progress`, long jobs only), `--game`, and
//! the rewrite options they make.

use std::path::PathBuf;

use clap::{Args, ValueEnum, ValueHint};

use bookdb::ops::progress::ProgressMode;
use bookdb::store::LockWait;

/// `--book FILE` (default `$BOOKDB_BOOK`).
#[derive(Args)]
pub(crate) struct BookArg {
    /// The book file (default: $BOOKDB_BOOK).
    #[arg(long, env = "BOOKDB_BOOK", value_name = "FILE", value_hint = ValueHint::FilePath)]
    pub(crate) book: PathBuf,
}

/// `--json` and `--quiet`: how a command reports what it did.
#[derive(Args, Clone, Copy, Default)]
pub(crate) struct Output {
    /// Print the result as one JSON object (errors too, on stderr).
    #[arg(long)]
    pub(crate) json: bool,
    /// No progress, no summary (warnings and errors still go to stderr).
    #[arg(long, short)]
    pub(crate) quiet: bool,
}

/// `--json` alone, for commands whose output is their answer (probe, stats).
#[derive(Args, Clone, Copy, Default)]
pub(crate) struct JsonArg {
    /// Print the answer as JSON (errors too, on stderr).
    #[arg(long)]
    pub(crate) json: bool,
}

impl From<JsonArg> for Output {
    fn from(j: JsonArg) -> Output {
        Output {
            json: j.json,
            quiet: false,
        }
    }
}

/// `--wait[=SECONDS]`: how long a writer waits for another writer's lock.
#[derive(Args)]
pub(crate) struct WaitArg {
    /// Wait for another writer's lock on the book, up to SECONDS (no value: as long as it
    /// takes) instead of failing at once with exit code 75.
    #[arg(long, value_name = "SECONDS", num_args = 0..=1, require_equals = true,
          default_missing_value = "forever", value_parser = parse_wait)]
    wait: Option<LockWait>,
}

impl WaitArg {
    pub(crate) fn lock_wait(&self) -> LockWait {
        self.wait.unwrap_or_default()
    }
}

pub(crate) fn parse_wait(s: &str) -> Result<LockWait, String> {
    if s == "forever" {
        return Ok(LockWait::Forever);
    }
    let secs: f64 = s
        .parse()
        .map_err(|_| format!("--wait takes a number of seconds, not {s:?}"))?;
    if !secs.is_finite() || secs < 0.0 {
        return Err(format!("--wait takes a number of seconds, not {s:?}"));
    }
    // Past what a duration holds (~585 billion years) is not a wait: `forever` is.
    std::time::Duration::try_from_secs_f64(secs)
        .map(LockWait::For)
        .map_err(|_| {
            format!("--wait {s}: too many seconds; give `--wait=forever` to wait without end")
        })
}

/// `--progress MODE`, for the jobs that can take minutes.
#[derive(Args)]
pub(crate) struct ProgressArg {
    /// Progress on stderr: auto (a bar on a terminal, otherwise a plain line every few
    /// seconds), bar, plain or none. --quiet means none; so does --json unless given.
    #[arg(long, value_enum, value_name = "MODE")]
    progress: Option<Progress>,
}

/// The values of `--progress`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum Progress {
    Auto,
    Bar,
    Plain,
    None,
}

impl ProgressArg {
    /// The progress mode given `--quiet` and `--json`.
    pub(crate) fn mode(&self, out: Output) -> ProgressMode {
        match self.progress {
            _ if out.quiet => ProgressMode::None,
            Some(Progress::Auto) => ProgressMode::Auto,
            Some(Progress::Bar) => ProgressMode::Bar,
            Some(Progress::Plain) => ProgressMode::Plain,
            Some(Progress::None) => ProgressMode::None,
            None if out.json => ProgressMode::None,
            None => ProgressMode::Auto,
        }
    }
}

/// `--game`: what the inputs of an import (or the position of `pack`) are.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum GameArg {
    Chess,
    Othello,
}

/// What every long writer takes: `--json`/`--quiet`, `--wait`, `--progress`.
#[derive(Args)]
pub(crate) struct JobArgs {
    #[command(flatten)]
    pub(crate) output: Output,
    #[command(flatten)]
    wait: WaitArg,
    #[command(flatten)]
    progress: ProgressArg,
}

impl JobArgs {
    pub(crate) fn lock_wait(&self) -> LockWait {
        self.wait.lock_wait()
    }

    pub(crate) fn progress(&self) -> ProgressMode {
        self.progress.mode(self.output)
    }

    /// `merge`, `compact` and `migrate`: progress and lock waiting as asked.
    pub(crate) fn rewrite_options(&self) -> bookdb::ops::rewrite::RewriteOptions {
        bookdb::ops::rewrite::RewriteOptions {
            progress: self.progress(),
            lock_wait: self.lock_wait(),
            ..Default::default()
        }
    }
}

/// `--memory` of `compact`, `merge` and `migrate`.
#[derive(clap::Args, Clone, Copy, Debug)]
pub(crate) struct RewriteMemoryArg {
    /// Memory budget in MiB (at least 32): the writer's batches and caches and the caches of
    /// the books read are sized from it, so peak RSS stays within it plus a constant whatever
    /// the books' sizes.
    #[arg(long, value_name = "MiB", default_value_t = bookdb::ops::rewrite_budget::DEFAULT_REWRITE_MEMORY_MIB)]
    memory: usize,
}

impl RewriteMemoryArg {
    /// Sets the budget in `opts`.
    pub(crate) fn apply(self, opts: &mut bookdb::ops::rewrite::RewriteOptions) {
        opts.memory_mib = Some(self.memory);
    }
}

/// Prints a rewrite's warnings (a capped budget) on stderr, whatever the output format.
pub(crate) fn print_warnings(memory: &bookdb::ops::rewrite::RewriteMemory) {
    for w in &memory.warnings {
        bookdb::stderr_line!("warning: {w}");
    }
}

/// The facet filters of `probe` and `export` (docs/FORMAT.md §12): a cell counts when it passes every
/// filter given. Values are checked as arguments (exit 2 for one that does not parse).
#[derive(clap::Args, Clone, Debug, Default)]
pub(crate) struct FilterArgs {
    /// Only games of this month or later (YYYY-MM), or of this year or later (YYYY).
    #[arg(long, value_name = "DATE", value_parser = bookdb::store::facet::DateBound::parse)]
    since: Option<bookdb::store::facet::DateBound>,
    /// Only games of this month or earlier (YYYY-MM), or of this year or earlier (YYYY).
    #[arg(long, value_name = "DATE", value_parser = bookdb::store::facet::DateBound::parse)]
    until: Option<bookdb::store::facet::DateBound>,
    /// Only these speeds: a comma list of ultraBullet, bullet, blitz, rapid, classical,
    /// correspondence.
    #[arg(long, value_name = "LIST", value_parser = bookdb::store::facet::CellFilter::parse_speeds)]
    speeds: Option<u8>,
    /// Only these rating groups: a comma list of ratings, each selecting its group (0, 1000,
    /// 1200, 1400, 1600, 1800, 2000, 2200, 2500: the mean of both players' Elos).
    #[arg(long, value_name = "LIST", value_parser = bookdb::store::facet::CellFilter::parse_ratings)]
    ratings: Option<u16>,
    /// Only these modes: a comma list of rated, casual.
    #[arg(long, value_name = "LIST", value_parser = bookdb::store::facet::CellFilter::parse_modes)]
    modes: Option<u8>,
}

impl FilterArgs {
    pub(crate) fn filter(&self) -> bookdb::store::facet::CellFilter {
        bookdb::store::facet::CellFilter {
            since: self.since,
            until: self.until,
            speeds: self.speeds,
            groups: self.ratings,
            modes: self.modes,
        }
    }
}

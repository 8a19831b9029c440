//! `bookdb import`: count games (PGN, or Othello WTHOR files and transcripts) into a book.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::ValueHint;

use bookdb::ops::game::Game;
use bookdb::ops::import::{self, ImportOptions, ImportSummary};

use super::args::{BookArg, GameArg, JobArgs};

/// Skipped games shown on stderr (all of them go to `--report FILE`).
const SHOWN_SKIPPED: usize = 10;

#[derive(clap::Args)]
pub(crate) struct Args {
    /// PGN files (plain, .zst, .gz, .bz2, .xz), - for stdin; Othello: .wtb files or
    /// transcripts.
    #[arg(required = true, value_name = "INPUT", value_hint = ValueHint::FilePath)]
    inputs: Vec<String>,
    #[command(flatten)]
    book: BookArg,
    /// Count only the first N plies of each game.
    #[arg(long, default_value_t = import::DEFAULT_MAX_PLY)]
    max_ply: usize,
    /// Skip games unless both players are rated at least R.
    #[arg(long)]
    min_rating: Option<u32>,
    /// Skip games identical to an earlier one (tags White/Black/Date/Round/Event/Site,
    /// result and moves). Always on when the book stores games (the default for chess);
    /// with --no-games, only when given.
    #[arg(long)]
    dedupe: bool,
    /// Keep no games in the book's game store (chess books keep each counted game, header
    /// and whole mainline, to give it back as PGN by id; Othello books keep none).
    #[arg(long)]
    no_games: bool,
    /// Read inputs again even if the book already lists them as imported (a book that stores
    /// games, or a --dedupe import, still counts each game once).
    #[arg(long)]
    force: bool,
    /// Fingerprint every input's bytes even if its path, size, modification time and inode
    /// match an earlier import's (which otherwise identify it as already imported).
    #[arg(long)]
    rehash: bool,
    /// Worker threads (default: all cores).
    #[arg(long)]
    jobs: Option<usize>,
    /// Memory budget in MiB (aggregation gets half; past it, sorted runs spill to disk).
    #[arg(long, default_value_t = 256)]
    memory: usize,
    /// Target stored size of a value block in bytes (advanced; see docs/PERFORMANCE.md).
    #[arg(long, default_value_t = bookdb::store::WriterOptions::default().target_block_bytes, hide = true)]
    block_bytes: usize,
    /// New entries up to which an import into a book publishes a delta segment instead of
    /// rewriting the base (advanced; the threshold is the larger of this and an eighth of
    /// the book).
    #[arg(long, default_value_t = import::DELTA_MIN_THRESHOLD, hide = true)]
    delta_min: u64,
    /// Write every skipped game (file:line, reason) to this file.
    #[arg(long, value_name = "FILE", value_hint = ValueHint::FilePath)]
    report: Option<PathBuf>,
    /// The game of the inputs: chess (PGN) or othello (WTHOR .wtb files, recognised by
    /// their header, or transcripts: one game per line, "f5d6c3…", optionally a space and
    /// black's discs minus white's).
    #[arg(long, value_enum, default_value_t = GameArg::Chess)]
    game: GameArg,
    /// Othello: store each position under the least of its 8 board symmetries.
    #[arg(long)]
    canonical: bool,
    /// What a new book splits its counts by: a comma list of month, speed, rating, mode, or
    /// none (default for chess: all four; Othello: none). A book keeps what it was created
    /// with; later imports follow it.
    #[arg(long, value_name = "LIST", value_parser = bookdb::store::facet::FacetSet::parse)]
    facets: Option<bookdb::store::facet::FacetSet>,
    #[command(flatten)]
    pub(crate) job: JobArgs,
}

impl Args {
    fn options(&self) -> anyhow::Result<ImportOptions> {
        let game = match (self.game, self.canonical) {
            (GameArg::Chess, true) => anyhow::bail!("--canonical applies to --game othello only"),
            (GameArg::Chess, false) => Game::Chess,
            (GameArg::Othello, canonical) => Game::Othello { canonical },
        };
        Ok(ImportOptions {
            game,
            rules: bookdb::ops::pgn::CountRules {
                max_ply: self.max_ply,
                min_rating: self.min_rating,
                facets: bookdb::store::facet::FacetSet::NONE,
            },
            facets: self.facets,
            dedupe: self.dedupe,
            store_games: !self.no_games,
            force: self.force,
            rehash: self.rehash,
            jobs: self.jobs.unwrap_or(0),
            memory_mib: self.memory,
            progress: self.job.progress(),
            lock_wait: self.job.lock_wait(),
            delta_min: self.delta_min,
            writer: bookdb::store::WriterOptions {
                target_block_bytes: self.block_bytes,
                ..Default::default()
            },
            keep_skipped: SHOWN_SKIPPED,
            report: self.report.clone(),
        })
    }

    pub(crate) fn run(self) -> anyhow::Result<ExitCode> {
        let summary = import::import(&self.book.book, &self.inputs, &self.options()?)?;
        if !self.job.output.quiet && !self.job.output.json {
            self.report_skipped(&summary);
        }
        // Inputs that are not PGN text were left out (not counted, not recorded): said even
        // with --quiet, and the exit code is 1.
        if !self.job.output.json {
            for f in &summary.failed_inputs {
                bookdb::stderr_line!("bookdb: error: {}", f.error);
            }
            for name in &summary.empty_inputs {
                bookdb::stderr_line!(
                    "bookdb: warning: {name} held no game (empty?); it is recorded as imported. \
                     If it came through a pipe, check the command that fed it"
                );
            }
        }
        self.job.output.print(&summary)?;
        Ok(if summary.failed_inputs.is_empty() {
            ExitCode::SUCCESS
        } else {
            ExitCode::from(1)
        })
    }

    /// Prints the first skipped games on stderr (the library wrote the report file).
    fn report_skipped(&self, summary: &ImportSummary) {
        for s in summary.skipped.iter().take(SHOWN_SKIPPED) {
            bookdb::stderr_line!("skipped {}:{}: {}", s.file, s.line, s.detail);
        }
        if summary.games_skipped as usize > SHOWN_SKIPPED {
            bookdb::stderr_line!(
                "… {} more skipped game(s){}",
                summary.games_skipped as usize - SHOWN_SKIPPED,
                match &self.report {
                    Some(path) => format!(" (all listed in {})", path.display()),
                    None => "; use --report FILE to list all".into(),
                }
            );
        }
    }
}

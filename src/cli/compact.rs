//! `bookdb compact`: rewrite a book — fold its delta segments into the base, prune, return
//! space.

use std::process::ExitCode;

use bookdb::ops::rewrite::RewriteOptions;

use super::args::{BookArg, JobArgs, RewriteMemoryArg, print_warnings};

#[derive(clap::Args)]
pub(crate) struct Args {
    #[command(flatten)]
    book: BookArg,
    /// Drop moves played in fewer than N games (Polyglot-only moves are kept).
    #[arg(long, value_name = "N")]
    min_games: Option<u64>,
    /// Train a new position model and dictionary even if the book's own still fit its
    /// content (by default they are kept unless pruning or a large delta tier changed it).
    #[arg(long)]
    retrain: bool,
    /// Keep no stored games: `bookdb pgn`, `bookdb games` and the explorer's game lists then
    /// answer nothing; the counts, and the fingerprints that keep a game from being counted
    /// twice, stay.
    #[arg(long)]
    drop_games: bool,
    #[command(flatten)]
    memory: RewriteMemoryArg,
    #[command(flatten)]
    pub(crate) job: JobArgs,
}

impl Args {
    pub(crate) fn run(self) -> anyhow::Result<ExitCode> {
        let mut opts = RewriteOptions {
            retrain: self.retrain,
            drop_games: self.drop_games,
            ..self.job.rewrite_options()
        };
        self.memory.apply(&mut opts);
        let summary = bookdb::ops::rewrite::compact(&self.book.book, self.min_games, &opts)?;
        print_warnings(&summary.memory);
        self.job.output.print(&summary)?;
        Ok(ExitCode::SUCCESS)
    }
}

//! `bookdb compact`: rewrite a book — fold its delta segments into the base, prune, return
//! space.

use std::process::ExitCode;

use bookdb::ops::rewrite::RewriteOptions;

use super::args::{BookArg, Output, ProgressArg, WaitArg, rewrite_options};

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
    #[command(flatten)]
    pub(crate) output: Output,
    #[command(flatten)]
    wait: WaitArg,
    #[command(flatten)]
    progress: ProgressArg,
}

impl Args {
    pub(crate) fn run(self) -> anyhow::Result<ExitCode> {
        let opts = RewriteOptions {
            retrain: self.retrain,
            ..rewrite_options(&self.wait, &self.progress, self.output)
        };
        let summary = bookdb::ops::rewrite::compact(&self.book.book, self.min_games, &opts)?;
        self.output.print(&summary)?;
        Ok(ExitCode::SUCCESS)
    }
}

//! `bookdb dump`: every position of a book as a JSON line, ascending key.

use std::process::ExitCode;

use bookdb::ops::game::Game;
use bookdb::ops::othello::query as othello_query;
use bookdb::ops::query;

use super::args::BookArg;
use super::output::with_stdout;

#[derive(clap::Args)]
pub(crate) struct Args {
    #[command(flatten)]
    book: BookArg,
    /// Also print each move's cells: its counts by period, speed, rating group and mode.
    #[arg(long)]
    facets: bool,
}

impl Args {
    pub(crate) fn run(self) -> anyhow::Result<ExitCode> {
        let (game, book) = Game::open(&self.book.book)?;
        with_stdout(|w| {
            if game.is_othello() {
                for e in book.iter()? {
                    serde_json::to_writer(&mut *w, &othello_query::entry_json(&e?)?)?;
                    w.write_all(b"\n")?;
                }
                return Ok(());
            }
            // Positions with engine evaluations are listed too (docs/CONTRACT.md §10).
            for j in query::dump_json(&book, self.facets)? {
                serde_json::to_writer(&mut *w, &j?)?;
                w.write_all(b"\n")?;
            }
            Ok(())
        })?;
        Ok(ExitCode::SUCCESS)
    }
}

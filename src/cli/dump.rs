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
            for e in book.iter()? {
                let e = e?;
                if game.is_othello() {
                    serde_json::to_writer(&mut *w, &othello_query::entry_json(&e)?)?;
                } else if self.facets {
                    serde_json::to_writer(&mut *w, &query::entry_json_with_cells(&e)?)?;
                } else {
                    serde_json::to_writer(&mut *w, &query::entry_json(&e, false)?)?;
                }
                w.write_all(b"\n")?;
            }
            Ok(())
        })?;
        Ok(ExitCode::SUCCESS)
    }
}

//! `bookdb stats`: what a book holds and how many bytes it takes.

use std::process::ExitCode;

use super::args::{BookArg, JsonArg, Output};

#[derive(clap::Args)]
pub(crate) struct Args {
    #[command(flatten)]
    book: BookArg,
    #[command(flatten)]
    pub(crate) json: JsonArg,
}

impl Args {
    pub(crate) fn run(self) -> anyhow::Result<ExitCode> {
        let stats = bookdb::ops::stats::stats(&self.book.book)?;
        Output::from(self.json).print(&stats)?;
        Ok(ExitCode::SUCCESS)
    }
}

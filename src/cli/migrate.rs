//! `bookdb migrate`: bring a book to the current format version.

use std::process::ExitCode;

use super::args::{BookArg, Output, ProgressArg, WaitArg, rewrite_options};

#[derive(clap::Args)]
pub(crate) struct Args {
    #[command(flatten)]
    book: BookArg,
    #[command(flatten)]
    pub(crate) output: Output,
    #[command(flatten)]
    wait: WaitArg,
    #[command(flatten)]
    progress: ProgressArg,
}

impl Args {
    pub(crate) fn run(self) -> anyhow::Result<ExitCode> {
        let opts = rewrite_options(&self.wait, &self.progress, self.output);
        let summary = bookdb::ops::rewrite::migrate(&self.book.book, &opts)?;
        self.output.print(&summary)?;
        Ok(ExitCode::SUCCESS)
    }
}

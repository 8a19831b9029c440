//! `bookdb migrate`: bring a book to the current format version.

use std::process::ExitCode;

use super::args::{BookArg, JobArgs};

#[derive(clap::Args)]
pub(crate) struct Args {
    #[command(flatten)]
    book: BookArg,
    #[command(flatten)]
    pub(crate) job: JobArgs,
}

impl Args {
    pub(crate) fn run(self) -> anyhow::Result<ExitCode> {
        let opts = self.job.rewrite_options();
        let summary = bookdb::ops::rewrite::migrate(&self.book.book, &opts)?;
        self.job.output.print(&summary)?;
        Ok(ExitCode::SUCCESS)
    }
}

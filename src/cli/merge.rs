//! `bookdb merge`: books into a new book (statistics add up).

use std::path::PathBuf;
use std::process::ExitCode;

use super::args::JobArgs;

#[derive(clap::Args)]
pub(crate) struct Args {
    /// The books to merge (only read).
    #[arg(required = true, value_name = "BOOK", value_hint = clap::ValueHint::FilePath)]
    inputs: Vec<PathBuf>,
    /// The new book.
    #[arg(long, value_name = "FILE", value_hint = clap::ValueHint::FilePath)]
    out: PathBuf,
    #[command(flatten)]
    pub(crate) job: JobArgs,
}

impl Args {
    pub(crate) fn run(self) -> anyhow::Result<ExitCode> {
        let opts = self.job.rewrite_options();
        let summary = bookdb::ops::rewrite::merge(&self.inputs, &self.out, &opts)?;
        if !self.job.output.json {
            for fp in &summary.overlapping_imports {
                eprintln!(
                    "warning: input with fingerprint {fp} was imported into more than one of the merged books; its games are counted more than once"
                );
            }
        }
        self.job.output.print(&summary)?;
        Ok(ExitCode::SUCCESS)
    }
}

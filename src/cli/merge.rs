//! `bookdb merge`: books into a new book (statistics add up).

use std::path::PathBuf;
use std::process::ExitCode;

use super::args::{Output, ProgressArg, WaitArg, rewrite_options};

#[derive(clap::Args)]
pub(crate) struct Args {
    /// The books to merge (only read).
    #[arg(required = true, value_name = "BOOK", value_hint = clap::ValueHint::FilePath)]
    inputs: Vec<PathBuf>,
    /// The new book.
    #[arg(long, value_name = "FILE", value_hint = clap::ValueHint::FilePath)]
    out: PathBuf,
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
        let summary = bookdb::ops::rewrite::merge(&self.inputs, &self.out, &opts)?;
        if !self.output.json {
            for fp in &summary.overlapping_imports {
                eprintln!(
                    "warning: input with fingerprint {fp} was imported into more than one of the merged books; its games are counted more than once"
                );
            }
        }
        self.output.print(&summary)?;
        Ok(ExitCode::SUCCESS)
    }
}

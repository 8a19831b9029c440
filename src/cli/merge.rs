//! `bookdb merge`: books into a new book (statistics add up).

use std::path::PathBuf;
use std::process::ExitCode;

use super::args::{JobArgs, RewriteMemoryArg, print_warnings};

#[derive(clap::Args)]
pub(crate) struct Args {
    /// The books to merge (only read).
    #[arg(required = true, value_name = "BOOK", value_hint = clap::ValueHint::FilePath)]
    inputs: Vec<PathBuf>,
    /// The new book.
    #[arg(long, value_name = "FILE", value_hint = clap::ValueHint::FilePath)]
    out: PathBuf,
    #[command(flatten)]
    memory: RewriteMemoryArg,
    #[command(flatten)]
    pub(crate) job: JobArgs,
}

impl Args {
    pub(crate) fn run(self) -> anyhow::Result<ExitCode> {
        let mut opts = self.job.rewrite_options();
        self.memory.apply(&mut opts);
        let summary = bookdb::ops::rewrite::merge(&self.inputs, &self.out, &opts)?;
        print_warnings(&summary.memory);
        if !self.job.output.json {
            for fp in &summary.overlapping_imports {
                eprintln!(
                    "warning: input with fingerprint {fp} was imported into more than one of the merged books; its games are counted more than once"
                );
            }
            if summary.shared_games > 0 {
                eprintln!(
                    "warning: {} games were counted in more than one of the merged books (same fingerprint); the merged counts hold them once per book that counted them, the game store once",
                    summary.shared_games
                );
            }
        }
        self.job.output.print(&summary)?;
        Ok(ExitCode::SUCCESS)
    }
}

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
            // Books that record fingerprints tell which games they share (and the merge takes
            // the identical copies out); books that record none cannot.
            if summary.shared_games == 0 || summary.copies_still_counted > 0 {
                for fp in &summary.overlapping_imports {
                    bookdb::stderr_line!(
                        "warning: input with fingerprint {fp} was imported into more than one of the merged books; its games are counted more than once unless the books stored them"
                    );
                }
            }
            if summary.copies_still_counted > 0 {
                bookdb::stderr_line!(
                    "warning: {} copies of games counted by more than one of the merged books are still counted: a book records them by fingerprint only (--no-games --dedupe), or stores them under another UTCDate; the game store keeps each record",
                    summary.copies_still_counted
                );
            }
            if summary.subtraction_clamped > 0 {
                bookdb::stderr_line!(
                    "warning: {} positions held fewer games than the copies of shared games taken out of them (an input pruned by compact --min-games or re-faceted by migrate --facets); their counts were clamped at zero",
                    summary.subtraction_clamped
                );
            }
        }
        self.job.output.print(&summary)?;
        Ok(ExitCode::SUCCESS)
    }
}

//! `bookdb import-polyglot`: Polyglot `.bin` books into a book (positions rebuilt by walking
//! the books' moves).

use std::path::PathBuf;
use std::process::ExitCode;

use bookdb::ops::polyglot::{PolyglotImportOptions, import_polyglot};

use super::args::{BookArg, Output, WaitArg};

#[derive(clap::Args)]
pub(crate) struct Args {
    /// Polyglot .bin files.
    #[arg(required = true, value_name = "BIN", value_hint = clap::ValueHint::FilePath)]
    inputs: Vec<PathBuf>,
    #[command(flatten)]
    book: BookArg,
    /// Import files the book already lists as imported (their weights add up again).
    #[arg(long)]
    force: bool,
    #[command(flatten)]
    pub(crate) output: Output,
    #[command(flatten)]
    wait: WaitArg,
}

impl Args {
    pub(crate) fn run(self) -> anyhow::Result<ExitCode> {
        let opts = PolyglotImportOptions {
            force: self.force,
            lock_wait: self.wait.lock_wait(),
            ..Default::default()
        };
        let summary = import_polyglot(&self.book.book, &self.inputs, &opts)?;
        if !self.output.quiet && !self.output.json {
            for f in &summary.files {
                for w in &f.warnings {
                    bookdb::stderr_line!("warning: {}: {w}", f.file);
                }
            }
        }
        self.output.print(&summary)?;
        Ok(ExitCode::SUCCESS)
    }
}

//! `bookdb import-evals`: engine evaluations from EPD files or lichess's evaluation export
//! (JSON lines) into a book, exactly once per input.

use std::process::ExitCode;

use bookdb::ops::evals::import::{ImportEvalsOptions, import_evals};

use super::args::{BookArg, Output, WaitArg};

#[derive(clap::Args)]
pub(crate) struct Args {
    /// EPD files (ce, acd, acn, pv or bm) or lichess evaluation exports (JSON lines); plain,
    /// .zst, .gz, .bz2, .xz, or - for stdin.
    #[arg(required = true, value_name = "FILE", value_hint = clap::ValueHint::FilePath)]
    inputs: Vec<String>,
    #[command(flatten)]
    book: BookArg,
    /// The engine name given to the results of EPD records (which do not name one).
    #[arg(long, default_value = "")]
    engine: String,
    /// Read inputs the book already lists as imported.
    #[arg(long)]
    force: bool,
    #[command(flatten)]
    pub(crate) output: Output,
    #[command(flatten)]
    wait: WaitArg,
}

impl Args {
    pub(crate) fn run(self) -> anyhow::Result<ExitCode> {
        let opts = ImportEvalsOptions {
            force: self.force,
            engine: self.engine.clone(),
            lock_wait: self.wait.lock_wait(),
            ..Default::default()
        };
        let summary = import_evals(&self.book.book, &self.inputs, &opts)?;
        self.output.print(&summary)?;
        Ok(ExitCode::SUCCESS)
    }
}

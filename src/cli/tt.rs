//! `bookdb tt`: a transposition table's contents, its check and its compaction.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::ValueHint;

use super::args::{JsonArg, Output, WaitArg};

#[derive(clap::Args)]
pub(crate) struct Args {
    #[command(subcommand)]
    action: Action,
}

#[derive(clap::Subcommand)]
enum Action {
    /// What the table holds (files, entries, bytes), from the files' meta tables.
    Stats(Target),
    /// Reads every entry of every file: checksums, coding, order, key filters, counts.
    Verify(Target),
    /// Merges every file into a new base (takes the table's writer lock).
    Compact {
        #[command(flatten)]
        target: Target,
        #[command(flatten)]
        wait: WaitArg,
    },
}

#[derive(clap::Args)]
struct Target {
    /// The table's base file.
    #[arg(long, value_name = "FILE", value_hint = ValueHint::FilePath)]
    table: PathBuf,
    #[command(flatten)]
    json: JsonArg,
}

impl Args {
    pub(crate) fn json(&self) -> bool {
        match &self.action {
            Action::Stats(t) | Action::Verify(t) | Action::Compact { target: t, .. } => t.json.json,
        }
    }

    pub(crate) fn run(self) -> anyhow::Result<ExitCode> {
        let (report, json) = match self.action {
            Action::Stats(t) => (bookdb::ops::tt::stats(&t.table)?, t.json),
            Action::Verify(t) => (bookdb::ops::tt::verify(&t.table)?, t.json),
            Action::Compact { target, wait } => (
                bookdb::ops::tt::compact(&target.table, wait.lock_wait())?,
                target.json,
            ),
        };
        Output::from(json).print(&report)?;
        Ok(ExitCode::SUCCESS)
    }
}

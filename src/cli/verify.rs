//! `bookdb verify`: check every block, entry and counter of a book; exit 0 only if all pass.

use std::process::ExitCode;

use bookdb::ops::verify::{self, DEFAULT_VERIFY_MEMORY_MIB, VerifyOptions};

use super::args::{BookArg, Output};

#[derive(clap::Args)]
pub(crate) struct Args {
    #[command(flatten)]
    book: BookArg,
    /// Check only the files published after this generation (the `generation` a previous
    /// verify printed), plus the manifest and every file's meta table; the merged view is
    /// not recounted.
    #[arg(long, value_name = "GENERATION")]
    since: Option<u64>,
    /// Skip redb's integrity check (it runs on a private copy of each file in $TMPDIR).
    #[arg(long)]
    no_redb_check: bool,
    /// Threads that check blocks (default: every core).
    #[arg(long)]
    jobs: Option<usize>,
    /// Memory budget in MiB (at least 32): redb's caches and the blocks in flight are sized
    /// from it, so peak RSS stays within it plus a constant whatever the book's size.
    #[arg(long, value_name = "MiB", default_value_t = DEFAULT_VERIFY_MEMORY_MIB)]
    memory: usize,
    #[command(flatten)]
    pub(crate) output: Output,
}

impl Args {
    pub(crate) fn run(self) -> anyhow::Result<ExitCode> {
        let mut opts = VerifyOptions {
            since: self.since,
            redb_check: !self.no_redb_check,
            memory_mib: self.memory,
            ..Default::default()
        };
        if let Some(j) = self.jobs {
            opts.threads = j.max(1);
        }
        let report = verify::verify_with(&self.book.book, &opts)?;
        if !self.output.json {
            // In the JSON report otherwise; --quiet keeps warnings (args.rs).
            for w in &report.warnings {
                bookdb::stderr_line!("warning: {w}");
            }
            for p in &report.problems {
                bookdb::stderr_line!("FAIL {p}");
            }
            if report.problems_total as usize > report.problems.len() {
                bookdb::stderr_line!(
                    "… {} more problem(s)",
                    report.problems_total as usize - report.problems.len()
                );
            }
        }
        self.output.print(&report)?;
        Ok(if report.ok() {
            ExitCode::SUCCESS
        } else {
            ExitCode::from(3)
        })
    }
}

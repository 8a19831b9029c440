//! `bookdb completions`: a shell completion script on stdout.

use std::process::ExitCode;

use super::output::with_stdout;

#[derive(clap::Args)]
pub(crate) struct Args {
    /// The shell.
    shell: clap_complete::Shell,
}

impl Args {
    /// Writes the script for `cmd` (the whole command line).
    pub(crate) fn run(self, mut cmd: clap::Command) -> anyhow::Result<ExitCode> {
        with_stdout(|w| {
            clap_complete::generate(self.shell, &mut cmd, "bookdb", w);
            Ok(())
        })?;
        Ok(ExitCode::SUCCESS)
    }
}

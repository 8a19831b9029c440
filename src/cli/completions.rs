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
        // Generated into memory first: `clap_complete::generate` panics when its writer fails
        // (a closed pipe, a full disk), and the script is a few kilobytes.
        let mut script = Vec::new();
        clap_complete::generate(self.shell, &mut cmd, "bookdb", &mut script);
        with_stdout(|w| {
            w.write_all(&script)?;
            Ok(())
        })?;
        Ok(ExitCode::SUCCESS)
    }
}

//! `bookdb man`: the manual pages (roff) — `bookdb.1` on stdout, or with `--dir` that page and
//! one per command (`bookdb-import.1`, …), each with its options, exit status and environment.

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use super::output::with_stdout;

#[derive(clap::Args)]
pub(crate) struct Args {
    /// Write bookdb.1 and a page per command (bookdb-import.1, …) into DIR instead of
    /// printing bookdb.1.
    #[arg(long, value_name = "DIR", value_hint = clap::ValueHint::DirPath)]
    dir: Option<PathBuf>,
}

/// The EXIT STATUS section (README.md's table).
const EXIT_STATUS: &str = r#".SH "EXIT STATUS"
.TP
\fB0\fR
Success.
.TP
\fB1\fR
An error: an input that is not PGN (the others were imported), a missing book, I/O, a bad FEN or move, an option value the command refuses.
.TP
\fB2\fR
Usage: arguments or option values the command line cannot parse (an unknown option, a number that is not one).
.TP
\fB3\fR
The book is corrupt (the message names the file), or \fBverify\fR found a problem.
.TP
\fB4\fR
Not a book, or a format version this build does not read (\fBbookdb migrate\fR upgrades older books).
.TP
\fB75\fR
Busy: another process is writing the book (EX_TEMPFAIL); run again later or pass \fB\-\-wait\fR.
"#;

/// The ENVIRONMENT section.
const ENVIRONMENT: &str = r#".SH ENVIRONMENT
.TP
\fBBOOKDB_BOOK\fR
The book when \fB\-\-book\fR is not given.
.TP
\fBBOOKDB_LOG\fR
\fBserve\fR: the log filter (for example \fBdebug\fR or \fBbookdb=debug,tower_http=debug\fR; default \fBinfo\fR).
.TP
\fBBOOKDB_PROGRESS_INTERVAL\fR
Seconds between plain progress lines (default 5).
.TP
\fBTMPDIR\fR
Where \fBverify\fR copies a book file for redb's integrity check.
.TP
\fBBOOKDB_DEBUG\fR
Set: panics caught inside redb are printed too (for bug reports).
"#;

/// Renders the page of `cmd` (built) into `w`.
fn page(cmd: clap::Command, w: &mut dyn Write) -> anyhow::Result<()> {
    clap_mangen::Man::new(cmd).render(w)?;
    w.write_all(EXIT_STATUS.as_bytes())?;
    w.write_all(ENVIRONMENT.as_bytes())?;
    Ok(())
}

impl Args {
    /// Writes the pages of `cmd` (the whole command line).
    pub(crate) fn run(self, cmd: clap::Command) -> anyhow::Result<ExitCode> {
        let mut cmd = cmd.disable_help_subcommand(true);
        cmd.build();
        let Some(dir) = self.dir else {
            with_stdout(|w| page(cmd, w))?;
            return Ok(ExitCode::SUCCESS);
        };
        std::fs::create_dir_all(&dir)
            .map_err(|e| anyhow::anyhow!("creating {}: {e}", dir.display()))?;
        let mut pages = vec![cmd.clone()];
        pages.extend(cmd.get_subcommands().filter(|s| !s.is_hide_set()).cloned());
        for p in pages {
            let name = format!("{}.1", p.get_display_name().unwrap_or(p.get_name()));
            let path = dir.join(&name);
            let mut text = Vec::new();
            page(p, &mut text)?;
            std::fs::write(&path, text)
                .map_err(|e| anyhow::anyhow!("writing {}: {e}", path.display()))?;
        }
        Ok(ExitCode::SUCCESS)
    }
}

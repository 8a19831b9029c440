//! Writing results to stdout: a summary as text (its `Display`) or as JSON (its `Serialize`),
//! and the one rule for a closed stdout (`bookdb dump | head -1`): the command ends quietly,
//! with exit code 0.

use std::fmt::Display;
use std::io::{BufWriter, Write};

use serde::Serialize;

use bookdb::error::ErrorKind;

use super::args::Output;

/// The error a write to a closed stdout becomes; `main` ends the command with exit code 0.
#[derive(Debug, thiserror::Error)]
#[error("stdout was closed")]
pub(crate) struct StdoutClosed;

/// Whether `e` is a write to a pipe whose reader has gone (directly or through serde_json).
fn is_broken_pipe(e: &anyhow::Error) -> bool {
    e.chain().any(|c| {
        c.downcast_ref::<std::io::Error>()
            .map(std::io::Error::kind)
            .or_else(|| {
                c.downcast_ref::<serde_json::Error>()
                    .and_then(serde_json::Error::io_error_kind)
            })
            == Some(std::io::ErrorKind::BrokenPipe)
    })
}

/// Runs `f` with buffered stdout and flushes it; a closed stdout becomes [`StdoutClosed`].
pub(crate) fn with_stdout(
    f: impl FnOnce(&mut dyn Write) -> anyhow::Result<()>,
) -> anyhow::Result<()> {
    let stdout = std::io::stdout();
    let mut w = BufWriter::new(stdout.lock());
    let res = f(&mut w).and_then(|()| w.flush().map_err(anyhow::Error::from));
    res.map_err(|e| {
        if is_broken_pipe(&e) {
            StdoutClosed.into()
        } else {
            e
        }
    })
}

/// Writes `value` to `w` as one JSON line, or as its text.
pub(crate) fn write_result<T: Serialize + Display>(
    w: &mut dyn Write,
    value: &T,
    json: bool,
) -> anyhow::Result<()> {
    if json {
        serde_json::to_writer(&mut *w, value)?;
        w.write_all(b"\n")?;
    } else {
        let text = value.to_string();
        w.write_all(text.as_bytes())?;
        if !text.ends_with('\n') {
            w.write_all(b"\n")?;
        }
    }
    Ok(())
}

impl Output {
    /// Prints a command's result on stdout: JSON with `--json`, nothing with `--quiet`,
    /// otherwise its text.
    pub(crate) fn print<T: Serialize + Display>(self, value: &T) -> anyhow::Result<()> {
        if self.quiet && !self.json {
            return Ok(());
        }
        with_stdout(|w| write_result(w, value, self.json))
    }

    /// [`Output::print`] on stderr (when stdout carries the data, as `export --out -`).
    pub(crate) fn eprint<T: Serialize + Display>(self, value: &T) -> anyhow::Result<()> {
        if self.quiet && !self.json {
            return Ok(());
        }
        let mut err = std::io::stderr().lock();
        write_result(&mut err, value, self.json)
    }
}

/// The exit code of a failure (README.md's table).
pub(crate) fn exit_code(kind: Option<ErrorKind>) -> u8 {
    match kind {
        Some(ErrorKind::Corrupt) => 3,
        Some(ErrorKind::NotABook) => 4,
        // EX_TEMPFAIL (sysexits.h): try again later.
        Some(ErrorKind::Busy) => 75,
        // Usage errors of the library (a bad FEN, an option value) keep exit code 1, as
        // before; 2 is clap's, for arguments it cannot parse.
        _ => 1,
    }
}

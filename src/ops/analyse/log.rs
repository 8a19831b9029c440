//! `analyse`'s write-ahead log, `<book>.analyse.log` beside the book: one line per position
//! analysed (`<crc32 hex8> <json>`), appended and synced as each result comes, so that a
//! killed run loses only the positions in flight. A torn or damaged last line is cut off
//! when the log is read. The log is locked (flock) while a run holds it, published as a delta
//! segment of evaluations, and emptied once published.

use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Write};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};
use crate::store::eval::{EvalLine, EvalResult, Score};

/// One logged result.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
struct Row {
    key: u64,
    pos: String,
    depth: u32,
    knodes: u64,
    engine: String,
    /// (mate, value, moves) per line, White's point of view.
    lines: Vec<(bool, i32, Vec<u16>)>,
}

/// An open, locked log.
pub(crate) struct Log {
    path: PathBuf,
    file: File,
}

/// The log's path for `book`.
pub(crate) fn path_of(book: &Path) -> PathBuf {
    crate::store::files::sidecar(book, "analyse.log")
}

fn hex(b: &[u8]) -> String {
    b.iter().map(|x| format!("{x:02x}")).collect()
}

fn unhex(s: &str) -> Option<Vec<u8>> {
    if !s.len().is_multiple_of(2) {
        return None;
    }
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(s.get(i..i + 2)?, 16).ok())
        .collect()
}

impl Log {
    /// Opens (creating) and locks the log; fails if another `analyse` holds it.
    pub(crate) fn open(book: &Path) -> Result<Log> {
        use std::os::fd::AsRawFd;
        let path = path_of(book);
        let file = OpenOptions::new()
            .read(true)
            .append(true)
            .create(true)
            .open(&path)
            .map_err(|e| Error::io(format!("opening {}", path.display()), e))?;
        // SAFETY: flock(2) on a descriptor this function owns; no pointers.
        if unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) } != 0 {
            return Err(Error::Usage(format!(
                "{}: another `bookdb analyse` of this book is running",
                path.display()
            )));
        }
        Ok(Log { path, file })
    }

    /// The results logged so far, by (key, packed position); a damaged tail is cut off.
    pub(crate) fn read(&mut self) -> Result<Vec<(u64, Vec<u8>, EvalResult)>> {
        let f = File::open(&self.path)
            .map_err(|e| Error::io(format!("reading {}", self.path.display()), e))?;
        let (mut out, mut good) = (Vec::new(), 0u64);
        for line in BufReader::new(f).split(b'\n') {
            let Ok(line) = line else { break };
            let Some(row) = parse(&line) else { break };
            good += line.len() as u64 + 1;
            out.push(row);
        }
        self.file
            .set_len(good)
            .map_err(|e| Error::io(format!("cutting {}", self.path.display()), e))?;
        Ok(out)
    }

    /// Appends one result and syncs it.
    pub(crate) fn append(&mut self, key: u64, pos: &[u8], r: &EvalResult) -> Result<()> {
        let row = Row {
            key,
            pos: hex(pos),
            depth: r.depth,
            knodes: r.knodes,
            engine: r.engine.clone(),
            lines: r
                .lines
                .iter()
                .map(|l| match l.score {
                    Score::Cp(c) => (false, c, l.moves.clone()),
                    Score::Mate(m) => (true, m, l.moves.clone()),
                })
                .collect(),
        };
        let json = serde_json::to_string(&row).map_err(|e| Error::Internal(e.to_string()))?;
        let line = format!("{:08x} {json}\n", crc32fast::hash(json.as_bytes()));
        self.file
            .write_all(line.as_bytes())
            .and_then(|()| self.file.sync_data())
            .map_err(|e| Error::io(format!("writing {}", self.path.display()), e))
    }

    /// Empties the log (its results are published).
    pub(crate) fn clear(&mut self) -> Result<()> {
        self.file
            .set_len(0)
            .and_then(|()| self.file.sync_data())
            .map_err(|e| Error::io(format!("emptying {}", self.path.display()), e))
    }

    /// Removes the log file (the run is complete).
    pub(crate) fn remove(self) {
        let _ = std::fs::remove_file(&self.path);
    }
}

fn parse(line: &[u8]) -> Option<(u64, Vec<u8>, EvalResult)> {
    let text = std::str::from_utf8(line).ok()?;
    let (crc, json) = text.split_once(' ')?;
    if u32::from_str_radix(crc, 16).ok()? != crc32fast::hash(json.as_bytes()) {
        return None;
    }
    let row: Row = serde_json::from_str(json).ok()?;
    let result = EvalResult {
        depth: row.depth,
        knodes: row.knodes,
        engine: row.engine,
        lines: row
            .lines
            .into_iter()
            .map(|(mate, v, moves)| EvalLine {
                score: if mate { Score::Mate(v) } else { Score::Cp(v) },
                moves,
            })
            .collect(),
    };
    result.check().ok()?;
    Some((row.key, unhex(&row.pos)?, result))
}

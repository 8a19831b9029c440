//! `bookdb import-evals`: evaluations from EPD files and lichess's evaluation export (plain or
//! compressed, `-` for stdin) into a book, exactly once per input: each input's fingerprint is
//! recorded in the `imports` table (key `evals:<xxh3-128>`, docs/FORMAT.md §13.4) in the same
//! publication as its evaluations, and an input already recorded is skipped. A line that
//! cannot be read is reported by `file:line` and skipped.

use std::collections::{BTreeMap, BTreeSet};
use std::io::BufRead;
use std::path::Path;
use std::time::Instant;

use serde::Serialize;

use crate::chess::PosState;
use crate::error::{Error, Result};
use crate::ops::game::{Game, chess_only};
use crate::ops::input::{self, OpenSpec};
use crate::store::book::{NewEvals, publish_evals};
use crate::store::eval::EvalResult;
use crate::store::{LockWait, WriterOptions};

/// Prefix of the `imports` keys of evaluation inputs.
pub const EVALS_RECORD_PREFIX: &str = "evals:";
/// Bad lines reported one by one (the rest are counted).
const REPORTED_BAD_LINES: usize = 100;

/// Options of `import-evals`.
#[derive(Clone, Debug, Default)]
pub struct ImportEvalsOptions {
    pub writer: WriterOptions,
    pub lock_wait: LockWait,
    /// The engine name given to EPD records (they do not name one).
    pub engine: String,
    /// Read inputs whose fingerprint the book already records.
    pub force: bool,
}

/// One input of an `import-evals` run.
#[derive(Clone, Debug, Serialize)]
pub struct EvalInputSummary {
    pub name: String,
    pub fingerprint: Option<String>,
    /// Already recorded in the book (or an earlier input of this run): not read again.
    pub skipped: bool,
    pub lines: u64,
    pub results: u64,
    pub bad_lines: u64,
}

/// What `import-evals` did.
#[derive(Clone, Debug, Serialize)]
pub struct ImportEvalsSummary {
    pub book: String,
    pub inputs: Vec<EvalInputSummary>,
    /// Positions given evaluations by this run.
    pub positions: u64,
    pub results: u64,
    pub bad_lines: u64,
    /// The first bad lines, `file:line: reason`.
    pub bad: Vec<String>,
    pub elapsed_secs: f64,
}

impl std::fmt::Display for ImportEvalsSummary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for b in &self.bad {
            writeln!(f, "skipped {b}")?;
        }
        for i in &self.inputs {
            if i.skipped {
                writeln!(f, "{}: already imported, skipped", i.name)?;
            } else {
                writeln!(
                    f,
                    "{}: {} lines, {} results, {} bad lines",
                    i.name, i.lines, i.results, i.bad_lines
                )?;
            }
        }
        write!(
            f,
            "{}: {} results for {} positions imported ({} bad lines) in {:.2} s",
            self.book, self.results, self.positions, self.bad_lines, self.elapsed_secs
        )
    }
}

/// The record stored for an input.
#[derive(Serialize)]
struct EvalRecord<'a> {
    bad_lines: u64,
    bytes: Option<u64>,
    imported_at: u64,
    kind: &'static str,
    lines: u64,
    name: &'a str,
    results: u64,
}

/// Evaluations read so far, by (key, packed position).
type Read = BTreeMap<(u64, Vec<u8>), Vec<EvalResult>>;

/// Reads one input's lines into `into`; returns its summary and fingerprint.
fn read_input(
    name: &str,
    opts: &ImportEvalsOptions,
    into: &mut Read,
    bad: &mut Vec<String>,
) -> Result<(EvalInputSummary, input::ReadFingerprint)> {
    let mut inp = input::open_with(name, OpenSpec::new(false))?;
    let mut s = EvalInputSummary {
        name: name.to_string(),
        fingerprint: None,
        skipped: false,
        lines: 0,
        results: 0,
        bad_lines: 0,
    };
    let reader = std::io::BufReader::new(&mut inp.reader);
    for (i, line) in reader.split(b'\n').enumerate() {
        let line = line.map_err(|e| input::read_error(name, e))?;
        let text = String::from_utf8_lossy(&line);
        let t = text.trim();
        if t.is_empty() || t.starts_with('#') {
            continue;
        }
        s.lines += 1;
        match super::parse::parse_line(t, &opts.engine) {
            Ok(p) => {
                let state = PosState::from_chess(&p.pos);
                let id = (state.key(), state.pack().0);
                s.results += p.results.len() as u64;
                let old = into.remove(&id).unwrap_or_default();
                into.insert(id, crate::store::eval::merge(old, p.results));
            }
            Err(why) => {
                s.bad_lines += 1;
                if bad.len() < REPORTED_BAD_LINES {
                    bad.push(format!("{name}:{}: {why}", i + 1));
                }
            }
        }
    }
    let fp = inp.finish()?;
    Ok((s, fp))
}

/// Imports evaluations from `inputs` into the book at `book` (created if absent).
pub fn import_evals(
    book: &Path,
    inputs: &[String],
    opts: &ImportEvalsOptions,
) -> Result<ImportEvalsSummary> {
    let start = Instant::now();
    let book = &crate::store::files::resolve_book(book)?;
    let _lock = crate::store::book::lock_for_writing(book, opts.lock_wait)?;
    let open = match book.exists() {
        true => {
            let (game, b) = Game::open(book)?;
            if game != Game::Chess {
                return Err(chess_only(book, game, "import-evals"));
            }
            Some(b)
        }
        false => None,
    };
    let mut known: BTreeSet<String> = match &open {
        Some(b) => b.imports()?.into_iter().map(|(k, _)| k).collect(),
        None => BTreeSet::new(),
    };
    let (mut all, mut bad, mut inputs_done, mut records) =
        (Read::new(), Vec::new(), Vec::new(), Vec::new());
    for name in inputs {
        // A regular file is fingerprinted before it is read: a recorded one is not read.
        let pre = match name.as_str() {
            "-" => None,
            n => crate::ops::import::fingerprint_file(n)?,
        };
        if let Some(fp) = &pre
            && !opts.force
            && known.contains(&format!("{EVALS_RECORD_PREFIX}{}", fp.hex))
        {
            inputs_done.push(skipped(name, &fp.hex));
            continue;
        }
        let mut mine = Read::new();
        let (mut s, fp) = read_input(name, opts, &mut mine, &mut bad)?;
        let key = format!("{EVALS_RECORD_PREFIX}{}", fp.hex);
        if !opts.force && known.contains(&key) {
            inputs_done.push(skipped(name, &fp.hex));
            continue;
        }
        s.fingerprint = Some(fp.hex.clone());
        records.push((key.clone(), record(&s, pre.map(|p| p.bytes))?));
        known.insert(key);
        for (id, r) in mine {
            let old = all.remove(&id).unwrap_or_default();
            all.insert(id, crate::store::eval::merge(old, r));
        }
        inputs_done.push(s);
    }
    let summary = ImportEvalsSummary {
        book: book.display().to_string(),
        positions: all.len() as u64,
        results: inputs_done.iter().map(|i| i.results).sum(),
        bad_lines: inputs_done.iter().map(|i| i.bad_lines).sum(),
        inputs: inputs_done,
        bad,
        elapsed_secs: 0.0,
    };
    if !records.is_empty() {
        let new = NewEvals {
            evals: all,
            imports: records,
            facets: crate::store::facet::FacetSet::ALL,
        };
        publish_evals(book, open.as_ref(), new, Game::Chess.codec(), &opts.writer)?;
    }
    Ok(ImportEvalsSummary {
        elapsed_secs: start.elapsed().as_secs_f64(),
        ..summary
    })
}

fn skipped(name: &str, hex: &str) -> EvalInputSummary {
    EvalInputSummary {
        name: name.to_string(),
        fingerprint: Some(hex.to_string()),
        skipped: true,
        lines: 0,
        results: 0,
        bad_lines: 0,
    }
}

fn record(s: &EvalInputSummary, bytes: Option<u64>) -> Result<Vec<u8>> {
    let r = EvalRecord {
        bad_lines: s.bad_lines,
        bytes,
        imported_at: std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_secs()),
        kind: "evals",
        lines: s.lines,
        name: &s.name,
        results: s.results,
    };
    serde_json::to_vec(&r).map_err(|e| Error::Internal(e.to_string()))
}

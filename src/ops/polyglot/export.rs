//! `bookdb export`: Polyglot `.bin` export with polyglot `make-book`'s weights (`weigh.rs`:
//! counts, halving at `COUNT_MAX`, `keep_entry()` filters) or stored weights, JSON-lines
//! export, and the atomic write of the output file.

use std::collections::BTreeMap;
use std::io::{BufWriter, Write};
use std::path::Path;
use std::time::Instant;

use serde::Serialize;

use super::bin::{ENTRY_BYTES, PgEntry};
use super::fmt_reasons;
use super::weigh::{PolyglotExportOptions, weigh_key};
use crate::error::{Error, Result};
use crate::ops::query;
use crate::store::{Book, Entry};

#[derive(Clone, Debug, Default, Serialize)]
pub struct ExportSummary {
    pub(crate) format: String,
    pub(crate) out: String,
    /// Lines (jsonl) or keys (polyglot) written.
    pub(crate) keys: u64,
    /// Polyglot entries written.
    pub(crate) entries: u64,
    /// Entries weighted from game counts / written with a stored Polyglot weight.
    pub(crate) from_games: u64,
    pub(crate) from_polyglot: u64,
    /// Keys whose counts were halved to fit (polyglot's COUNT_MAX rule).
    pub(crate) halved_keys: u64,
    /// Moves left out, by reason: `min_games`, `zero_score`, `min_score`, `side`, `no_data`.
    pub(crate) dropped: BTreeMap<String, u64>,
    pub(crate) bytes: u64,
    /// The reader of stdout closed it before the export was done (`| head`): `bytes` went
    /// out, `keys` counts the whole lines of a text format among them and `entries` the whole
    /// entries of a Polyglot book; the other counts are unknown (0).
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub(crate) reader_closed: bool,
    pub(crate) elapsed_secs: f64,
}

impl std::fmt::Display for ExportSummary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.reader_closed {
            let (n, what) = match self.format.as_str() {
                "polyglot" => (self.entries, "entries"),
                _ => (self.keys, "lines"),
            };
            return write!(
                f,
                "{}: the reader closed it after {n} whole {what} ({} bytes) of {}; the export \
                 stopped there ({:.2}s)",
                self.out, self.bytes, self.format, self.elapsed_secs
            );
        }
        if self.format != "polyglot" {
            return write!(
                f,
                "{}: {} positions written ({} bytes) in {:.2}s",
                self.out, self.keys, self.bytes, self.elapsed_secs
            );
        }
        write!(
            f,
            "{}: {} entries for {} keys ({} from game counts, {} with stored Polyglot weights), {} moves dropped{}, {} bytes in {:.2}s",
            self.out,
            self.entries,
            self.keys,
            self.from_games,
            self.from_polyglot,
            self.dropped.values().sum::<u64>(),
            fmt_reasons(&self.dropped),
            self.bytes,
            self.elapsed_secs
        )
    }
}

/// Computes the Polyglot entries of all book entries sharing one key.
pub(super) fn export_key(
    group: &[Entry],
    opts: &PolyglotExportOptions,
    summary: &mut ExportSummary,
) -> Result<Vec<PgEntry>> {
    let Some(first) = group.first() else {
        return Ok(Vec::new());
    };
    let key = first.key;
    let (moves, halved) = weigh_key(group, opts)?;
    if halved {
        summary.halved_keys += 1;
    }
    let mut out = Vec::with_capacity(moves.len());
    for m in moves {
        match m.weight {
            Ok(weight) => {
                if m.counted {
                    summary.from_games += 1;
                } else {
                    summary.from_polyglot += 1;
                }
                out.push(PgEntry {
                    key,
                    mv: m.pg,
                    weight,
                    learn: m.learn,
                });
            }
            Err(d) => *summary.dropped.entry(d.name().into()).or_default() += 1,
        }
    }
    out.sort_by(|a, b| b.weight.cmp(&a.weight).then(a.mv.cmp(&b.mv)));
    Ok(out)
}

/// Writes the book as a Polyglot `.bin` to `out`.
pub fn export_polyglot(
    book: &Book,
    out: &mut dyn Write,
    opts: &PolyglotExportOptions,
) -> Result<ExportSummary> {
    let mut summary = ExportSummary {
        format: ExportFormat::Polyglot.name().into(),
        ..Default::default()
    };
    let mut group: Vec<Entry> = Vec::new();
    let mut flush = |group: &mut Vec<Entry>, summary: &mut ExportSummary| -> Result<()> {
        let entries = export_key(group, opts, summary)?;
        group.clear();
        if !entries.is_empty() {
            summary.keys += 1;
        }
        for e in entries {
            out.write_all(&e.to_bytes())
                .map_err(|e| Error::io("writing Polyglot book", e))?;
            summary.entries += 1;
            summary.bytes += ENTRY_BYTES as u64;
        }
        Ok(())
    };
    for e in book.iter()? {
        let mut e = e?;
        opts.filter.apply(&mut e);
        if opts.weights_eval {
            let n = super::eval_weights::apply(book, &mut e)?;
            if n > 0 {
                *summary.dropped.entry("no_eval".into()).or_default() += n;
            }
        }
        if e.moves.is_empty() {
            continue;
        }
        if group.first().is_some_and(|g| g.key != e.key) {
            flush(&mut group, &mut summary)?;
        }
        group.push(e);
    }
    flush(&mut group, &mut summary)?;
    Ok(summary)
}

/// Writes the book as JSON lines (the `dump` shape) to `out`; returns the lines written.
pub fn export_jsonl(
    book: &Book,
    out: &mut dyn Write,
    filter: &crate::store::facet::CellFilter,
) -> Result<u64> {
    let mut n = 0;
    for e in book.iter()? {
        let mut e = e?;
        filter.apply(&mut e);
        if e.moves.is_empty() {
            continue;
        }
        let j = query::entry_json(&e, false)?;
        let mut line = serde_json::to_vec(&j).map_err(|e| Error::Internal(e.to_string()))?;
        line.push(b'\n');
        out.write_all(&line)
            .map_err(|e| Error::io("writing JSON lines", e))?;
        n += 1;
    }
    Ok(n)
}

/// Export formats.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExportFormat {
    Polyglot,
    Jsonl,
    /// The evaluations as EPD (`ce`, `acd`, `acn`, `pv`).
    Epd,
    /// The evaluations as lichess's evaluation export (JSON lines).
    Evals,
}

impl ExportFormat {
    /// The name a summary gives the format.
    pub fn name(self) -> &'static str {
        match self {
            ExportFormat::Polyglot => "polyglot",
            ExportFormat::Jsonl => "jsonl",
            ExportFormat::Epd => "epd",
            ExportFormat::Evals => "evals",
        }
    }
}

impl std::str::FromStr for ExportFormat {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        match s {
            "polyglot" | "bin" => Ok(ExportFormat::Polyglot),
            "jsonl" | "json" => Ok(ExportFormat::Jsonl),
            _ => Err(format!("unknown export format {s:?} (polyglot, jsonl)")),
        }
    }
}

fn is_broken_pipe(e: &Error) -> bool {
    matches!(e, Error::Io { source, .. } if source.kind() == std::io::ErrorKind::BrokenPipe)
}

/// A writer that counts the bytes its inner writer accepted (the summary's `bytes`, whatever
/// the output: a file, stdout, a FIFO, a device).
struct Counting<W> {
    inner: W,
    bytes: u64,
    /// Line ends among them (the lines of a text format that went out whole).
    lines: u64,
}

impl<W: Write> Write for Counting<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.bytes += n as u64;
        self.lines += memchr::memchr_iter(b'\n', &buf[..n]).count() as u64;
        Ok(n)
    }
    fn flush(&mut self) -> std::io::Result<()> {
        self.inner.flush()
    }
}

/// `bookdb export`: writes to `out` (`-` for stdout). A regular file (or one a symlink leads
/// to: the link stays) is written under a temporary name beside it and renamed into place when
/// complete; an existing output that is not a regular file (a FIFO, a character device such as
/// `/dev/null`) is written through, never replaced. An output that is one of the book's own
/// files is refused.
pub fn export(
    book_path: &Path,
    format: ExportFormat,
    out: &str,
    opts: &PolyglotExportOptions,
) -> Result<ExportSummary> {
    let start = Instant::now();
    if !(0.0..=100.0).contains(&opts.min_score) {
        return Err(Error::Usage(format!(
            "--min-score {} is not a percentage (0 to 100)",
            opts.min_score
        )));
    }
    let book_path = &crate::store::files::resolve_book(book_path)?;
    if out != "-" {
        crate::store::files::refuse_book_output(book_path, Path::new(out), "--out")?;
    }
    let (game, book) = crate::ops::game::Game::open(book_path)?;
    if game != crate::ops::game::Game::Chess {
        return Err(crate::ops::game::chess_only(
            book_path,
            game,
            "export (Polyglot .bin and its JSON lines; use `bookdb dump` for this book)",
        ));
    }
    opts.filter
        .check_book(book.facets())
        .map_err(Error::Usage)?;
    let run = |w: &mut dyn Write| -> Result<ExportSummary> {
        match format {
            ExportFormat::Polyglot => export_polyglot(&book, w, opts),
            ExportFormat::Jsonl => {
                let lines = export_jsonl(&book, w, &opts.filter)?;
                Ok(ExportSummary {
                    format: format.name().into(),
                    keys: lines,
                    ..Default::default()
                })
            }
            ExportFormat::Epd | ExportFormat::Evals => {
                let lichess = format == ExportFormat::Evals;
                let lines = crate::ops::evals::export::export_evals(&book, w, lichess)?;
                Ok(ExportSummary {
                    format: format.name().into(),
                    keys: lines,
                    ..Default::default()
                })
            }
        }
    };
    // Runs the export into `sink`, flushed; returns the summary and the bytes `sink` took.
    let write_to = |sink: &mut dyn Write, what: &str| -> (Result<ExportSummary>, u64, u64) {
        let mut counted = Counting {
            inner: sink,
            bytes: 0,
            lines: 0,
        };
        let res = {
            let mut w = BufWriter::new(&mut counted);
            let res = run(&mut w);
            let flushed = w
                .flush()
                .map_err(|e| Error::io(format!("writing {what}"), e));
            res.and_then(|s| flushed.map(|()| s))
        };
        (res, counted.bytes, counted.lines)
    };
    let mut summary = if out == "-" {
        let stdout = std::io::stdout();
        let mut lock = stdout.lock();
        let (res, bytes, lines) = write_to(&mut lock, "to stdout");
        match res {
            // The reader went away (`| head`): what it took is what was written — whole
            // lines of a text format, whole 16-byte entries of a Polyglot book.
            Err(e) if is_broken_pipe(&e) => {
                let polyglot = format == ExportFormat::Polyglot;
                ExportSummary {
                    format: format.name().into(),
                    keys: if polyglot { 0 } else { lines },
                    entries: if polyglot { bytes / 16 } else { 0 },
                    bytes,
                    reader_closed: true,
                    ..Default::default()
                }
            }
            r => ExportSummary { bytes, ..r? },
        }
    } else {
        write_file(Path::new(out), &write_to)?
    };
    summary.out = out.to_string();
    summary.elapsed_secs = start.elapsed().as_secs_f64();
    Ok(summary)
}

/// The export's writer, run into a sink: the summary and the bytes the sink took.
type WriteTo<'a> = dyn Fn(&mut dyn Write, &str) -> (Result<ExportSummary>, u64, u64) + 'a;

/// Writes the export to the file `path`: through it if it is an existing file that is not a
/// regular one (FIFO, device), else atomically (temporary beside the real file, renamed).
fn write_file(path: &Path, write_to: &WriteTo<'_>) -> Result<ExportSummary> {
    use std::os::unix::fs::OpenOptionsExt;
    let out = path.display().to_string();
    match std::fs::metadata(path) {
        Ok(m) if m.is_dir() => {
            return Err(Error::Usage(format!(
                "--out {out}: is a directory; name a file"
            )));
        }
        Ok(m) if !m.is_file() => {
            // Written through, as `cat > FIFO` would: replacing it would break whoever reads
            // it (and as root, replacing a device is replacing the system's).
            let mut f = std::fs::OpenOptions::new()
                .write(true)
                .custom_flags(libc::O_CLOEXEC)
                .open(path)
                .map_err(|e| Error::io(format!("opening {out}"), e))?;
            let (res, bytes, _) = write_to(&mut f, &out);
            return Ok(ExportSummary { bytes, ..res? });
        }
        _ => {}
    }
    // A symlink's target is replaced, not the link.
    let target = crate::store::files::resolve_book(path)?;
    let tmp = crate::store::files::temp_sibling(&target)?;
    let res = (|| -> Result<ExportSummary> {
        let mut f = crate::store::files::create_temp(&tmp)?;
        let (res, bytes, _) = write_to(&mut f, &out);
        let s = res?;
        f.sync_all()
            .map_err(|e| Error::io(format!("writing {out}"), e))?;
        drop(f);
        std::fs::rename(&tmp, &target)
            .map_err(|e| Error::io(format!("moving the export to {out}"), e))?;
        crate::store::files::sync_dir(&target);
        Ok(ExportSummary { bytes, ..s })
    })();
    if res.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    res
}

#[cfg(test)]
mod tests {
    use super::super::weigh::OnlySide;
    use super::*;
    use crate::chess::PosState;
    use crate::chess::polyglot::pg_encode;
    use crate::chess::{encode_move, parse_move};
    use crate::store::MoveExtra;
    use crate::store::MoveRec;
    use shakmaty::Chess;

    use crate::chess::tests_support::sq;

    #[test]
    fn export_key_mixes_counts_stored_weights_and_halving() {
        let start = Chess::default();
        let state = PosState::from_chess(&start);
        let code = |uci: &str| encode_move(&parse_move(&start, uci).unwrap());
        let e = Entry {
            coded: None,
            key: state.key(),
            pos: Some(state.pack().0),
            moves: {
                let mut v = vec![
                    // 20000 games: every count of the key is halved once.
                    MoveRec {
                        mv: code("e2e4"),
                        white: 8000,
                        draws: 6000,
                        black: 6000,
                        ..Default::default()
                    },
                    MoveRec {
                        mv: code("d2d4"),
                        white: 3,
                        draws: 1,
                        ..Default::default()
                    },
                    // Imported from Polyglot, no games: stored weight and learn as they are.
                    MoveRec {
                        mv: code("g2g4"),
                        extra: Some(MoveExtra {
                            weight: 77,
                            learn: 9,
                        }),
                        ..Default::default()
                    },
                    // Counts win over a stored weight; the learn value stays.
                    MoveRec {
                        mv: code("c2c4"),
                        draws: 2,
                        extra: Some(MoveExtra {
                            weight: 500,
                            learn: 3,
                        }),
                        ..Default::default()
                    },
                    MoveRec {
                        mv: code("a2a3"),
                        ..Default::default()
                    },
                ];
                v.sort_by_key(|m| m.mv);
                v
            },
        };
        let mut es = ExportSummary::default();
        let out = export_key(
            std::slice::from_ref(&e),
            &PolyglotExportOptions::default(),
            &mut es,
        )
        .unwrap();
        let pg = |from: &str, to: &str| pg_encode(sq(from), sq(to), None);
        let k = e.key;
        assert_eq!(
            out,
            vec![
                PgEntry {
                    key: k,
                    mv: pg("e2", "e4"),
                    weight: 11000,
                    learn: 0
                },
                PgEntry {
                    key: k,
                    mv: pg("g2", "g4"),
                    weight: 77,
                    learn: 9
                },
                PgEntry {
                    key: k,
                    mv: pg("d2", "d4"),
                    weight: 4,
                    learn: 0
                },
                PgEntry {
                    key: k,
                    mv: pg("c2", "c4"),
                    weight: 1,
                    learn: 3
                },
            ]
        );
        assert_eq!(es.halved_keys, 1);
        assert_eq!(es.dropped.get("no_data"), Some(&1));
        // Black-only export leaves out the white-to-move position, stored weights included.
        let black = PolyglotExportOptions {
            only: Some(OnlySide::Black),
            ..Default::default()
        };
        assert!(
            export_key(std::slice::from_ref(&e), &black, &mut es)
                .unwrap()
                .is_empty()
        );
    }
}

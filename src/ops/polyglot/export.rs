//! `bookdb export`: Polyglot `.bin` export with polyglot `make-book`'s weights (counts, halving
//! at `COUNT_MAX`, `keep_entry()` filters) or stored weights, JSON-lines export, and the
//! atomic write of the output file.

use std::collections::BTreeMap;
use std::io::{BufWriter, Write};
use std::path::Path;
use std::time::Instant;

use serde::Serialize;

use super::bin::{ENTRY_BYTES, PgEntry};
use super::fmt_reasons;
use crate::chess::PosState;
use crate::chess::polyglot::{code_to_pg, raw_pg_from_code};
use crate::error::{Error, Result};
use crate::ops::query;
use crate::store::{Book, Entry, MoveExtra, MoveRec};

/// `COUNT_MAX` of polyglot's `book_make.c`: counts of a key are halved when one reaches it.
pub const COUNT_MAX: u64 = 16384;

/// Which side's moves `--only-white` / `--only-black` keep.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OnlySide {
    White,
    Black,
}

/// Options of polyglot's `make-book` (docs/CONTRACT.md §3 names).
#[derive(Clone, Debug)]
pub struct PolyglotExportOptions {
    /// `-min-game`: drop moves played in fewer games (after halving). Polyglot's default is 3;
    /// ours is 1 (export everything).
    pub min_games: u64,
    /// `-min-score`, in percent: drop moves whose score `sum / n / 2` is below this.
    pub min_score: f64,
    pub only: Option<OnlySide>,
    pub uniform: bool,
    /// The cells counted (`--since --until --speeds --ratings --modes`; both formats): each
    /// move's counts are those of its passing cells, moves without such games left out.
    pub filter: crate::store::facet::CellFilter,
    /// `--weights eval`: weights from the engine evaluations of the moves' resulting
    /// positions instead of the game counts (`super::eval_weights`).
    pub weights_eval: bool,
}

impl Default for PolyglotExportOptions {
    fn default() -> Self {
        PolyglotExportOptions {
            min_games: 1,
            min_score: 0.0,
            only: None,
            uniform: false,
            filter: Default::default(),
            weights_eval: false,
        }
    }
}

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
    pub(crate) elapsed_secs: f64,
}

impl std::fmt::Display for ExportSummary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
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

/// polyglot's counters for one (key, move).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MakeBookCounts {
    /// Games (`n`).
    pub(crate) n: u64,
    /// `2·wins + draws + unknown` of the side to move (`sum`).
    pub(crate) sum: u64,
}

impl MakeBookCounts {
    /// The counts of a move record for the side to move.
    pub(crate) fn of(m: &MoveRec, white_to_move: bool) -> MakeBookCounts {
        let wins = if white_to_move { m.white } else { m.black };
        MakeBookCounts {
            n: m.games(),
            sum: wins
                .saturating_mul(2)
                .saturating_add(m.draws)
                .saturating_add(m.unknown),
        }
    }
}

/// polyglot's `halve_stats()` applied until every `n` is below [`COUNT_MAX`]; returns how many
/// times the counts were halved.
pub fn halve_to_fit(counts: &mut [MakeBookCounts]) -> u32 {
    let mut times = 0;
    while counts.iter().any(|c| c.n >= COUNT_MAX) {
        for c in counts.iter_mut() {
            c.n = c.n.div_ceil(2);
            c.sum = c.sum.div_ceil(2);
        }
        times += 1;
    }
    times
}

/// Why polyglot's `keep_entry()` drops a move.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DropReason {
    MinGames,
    ZeroScore,
    MinScore,
    Side,
    /// Neither game counts nor a stored Polyglot weight.
    NoData,
}

impl DropReason {
    fn name(self) -> &'static str {
        match self {
            DropReason::MinGames => "min_games",
            DropReason::ZeroScore => "zero_score",
            DropReason::MinScore => "min_score",
            DropReason::Side => "side",
            DropReason::NoData => "no_data",
        }
    }
}

fn side_dropped(white_to_move: Option<bool>, only: Option<OnlySide>) -> bool {
    matches!(
        (white_to_move, only),
        (Some(false), Some(OnlySide::White)) | (Some(true), Some(OnlySide::Black))
    )
}

/// polyglot's `keep_entry()` and `entry_score()` for counted moves (after halving): the weight
/// to write, or why the move is dropped.
pub fn make_book_weight(
    c: MakeBookCounts,
    white_to_move: bool,
    opts: &PolyglotExportOptions,
) -> std::result::Result<u16, DropReason> {
    if c.n < opts.min_games.max(1) {
        return Err(DropReason::MinGames);
    }
    if c.sum == 0 {
        return Err(DropReason::ZeroScore);
    }
    let score = (c.sum as f64 / c.n as f64) / 2.0;
    if score < opts.min_score / 100.0 {
        return Err(DropReason::MinScore);
    }
    if side_dropped(Some(white_to_move), opts.only) {
        return Err(DropReason::Side);
    }
    let w = if opts.uniform { 1 } else { c.sum };
    // After halving sum <= 2 * n < 32768.
    Ok(u16::try_from(w).unwrap_or(u16::MAX))
}

/// One Polyglot move of a key being exported.
#[derive(Default)]
struct OutMove {
    counts: MakeBookCounts,
    counted: bool,
    white_to_move: Option<bool>,
    stored: Option<MoveExtra>,
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
    let mut moves: BTreeMap<u16, OutMove> = BTreeMap::new();
    for e in group {
        let state = match &e.pos {
            Some(p) => Some(PosState::unpack(p)?),
            None => None,
        };
        let white = state.as_ref().map(|s| !s.black_to_move);
        for m in &e.moves {
            let pg = match &state {
                Some(s) => code_to_pg(m.mv, s),
                None => raw_pg_from_code(m.mv),
            };
            let o = moves.entry(pg).or_default();
            if o.white_to_move.is_none() {
                o.white_to_move = white;
            }
            if m.games() > 0 {
                let c = MakeBookCounts::of(m, white.unwrap_or(true));
                o.counts.n = o.counts.n.saturating_add(c.n);
                o.counts.sum = o.counts.sum.saturating_add(c.sum);
                o.counted = true;
            }
            if let Some(x) = m.extra {
                o.stored = Some(match o.stored {
                    Some(y) => MoveExtra {
                        weight: x.weight.max(y.weight),
                        learn: x.learn.max(y.learn),
                    },
                    None => x,
                });
            }
        }
    }
    let mut counted: Vec<MakeBookCounts> = moves
        .values()
        .filter(|o| o.counted)
        .map(|o| o.counts)
        .collect();
    if halve_to_fit(&mut counted) > 0 {
        summary.halved_keys += 1;
        let mut it = counted.into_iter();
        for o in moves.values_mut().filter(|o| o.counted) {
            if let Some(c) = it.next() {
                o.counts = c;
            }
        }
    }
    let mut out = Vec::with_capacity(moves.len());
    for (pg, o) in moves {
        let learn = o.stored.map_or(0, |x| x.learn);
        let res = if o.counted {
            make_book_weight(o.counts, o.white_to_move.unwrap_or(true), opts)
        } else if o.stored.is_none() {
            Err(DropReason::NoData)
        } else if side_dropped(o.white_to_move, opts.only) {
            Err(DropReason::Side)
        } else {
            let w = o.stored.map_or(0, |x| x.weight);
            Ok(if opts.uniform { w.min(1) } else { w })
        };
        match res {
            Ok(weight) => {
                if o.counted {
                    summary.from_games += 1;
                } else {
                    summary.from_polyglot += 1;
                }
                out.push(PgEntry {
                    key,
                    mv: pg,
                    weight,
                    learn,
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
        format: "polyglot".into(),
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
}

impl<W: Write> Write for Counting<W> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.bytes += n as u64;
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
                    format: "jsonl".into(),
                    keys: lines,
                    ..Default::default()
                })
            }
            ExportFormat::Epd | ExportFormat::Evals => {
                let lichess = format == ExportFormat::Evals;
                let lines = crate::ops::evals::export::export_evals(&book, w, lichess)?;
                Ok(ExportSummary {
                    format: if lichess { "evals" } else { "epd" }.into(),
                    keys: lines,
                    ..Default::default()
                })
            }
        }
    };
    // Runs the export into `sink`, flushed; returns the summary and the bytes `sink` took.
    let write_to = |sink: &mut dyn Write, what: &str| -> (Result<ExportSummary>, u64) {
        let mut counted = Counting {
            inner: sink,
            bytes: 0,
        };
        let res = {
            let mut w = BufWriter::new(&mut counted);
            let res = run(&mut w);
            let flushed = w
                .flush()
                .map_err(|e| Error::io(format!("writing {what}"), e));
            res.and_then(|s| flushed.map(|()| s))
        };
        (res, counted.bytes)
    };
    let mut summary = if out == "-" {
        let stdout = std::io::stdout();
        let mut lock = stdout.lock();
        let (res, bytes) = write_to(&mut lock, "to stdout");
        match res {
            // The reader went away (`| head`): what it took is what was written.
            Err(e) if is_broken_pipe(&e) => ExportSummary {
                bytes,
                ..Default::default()
            },
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
type WriteTo<'a> = dyn Fn(&mut dyn Write, &str) -> (Result<ExportSummary>, u64) + 'a;

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
            let (res, bytes) = write_to(&mut f, &out);
            return Ok(ExportSummary { bytes, ..res? });
        }
        _ => {}
    }
    // A symlink's target is replaced, not the link.
    let target = crate::store::files::resolve_book(path)?;
    let tmp = crate::store::files::temp_sibling(&target)?;
    let res = (|| -> Result<ExportSummary> {
        let mut f = crate::store::files::create_temp(&tmp)?;
        let (res, bytes) = write_to(&mut f, &out);
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
    use super::*;
    use crate::chess::polyglot::pg_encode;
    use crate::chess::{encode_move, parse_move};
    use shakmaty::Chess;

    use crate::chess::tests_support::sq;

    #[test]
    fn halving_follows_count_max() {
        let mut c = vec![
            MakeBookCounts {
                n: 40000,
                sum: 41000,
            },
            MakeBookCounts { n: 3, sum: 5 },
            MakeBookCounts { n: 16383, sum: 1 },
        ];
        assert_eq!(halve_to_fit(&mut c), 2);
        assert_eq!(
            c,
            vec![
                MakeBookCounts {
                    n: 10000,
                    sum: 10250
                },
                MakeBookCounts { n: 1, sum: 2 },
                MakeBookCounts { n: 4096, sum: 1 },
            ]
        );
        let mut small = vec![MakeBookCounts {
            n: 16383,
            sum: 32766,
        }];
        assert_eq!(halve_to_fit(&mut small), 0);
        let mut edge = vec![MakeBookCounts {
            n: 16384,
            sum: 32768,
        }];
        assert_eq!(halve_to_fit(&mut edge), 1);
        assert_eq!(
            edge[0],
            MakeBookCounts {
                n: 8192,
                sum: 16384
            }
        );
        let mut huge = vec![MakeBookCounts {
            n: u64::MAX,
            sum: u64::MAX,
        }];
        halve_to_fit(&mut huge);
        assert!(huge[0].n < COUNT_MAX && huge[0].sum <= 2 * huge[0].n);
    }

    #[test]
    fn make_book_rule() {
        let rec = MoveRec {
            white: 3,
            draws: 2,
            black: 1,
            unknown: 1,
            ..Default::default()
        };
        let w = MakeBookCounts::of(&rec, true);
        assert_eq!(w, MakeBookCounts { n: 7, sum: 9 });
        let b = MakeBookCounts::of(&rec, false);
        assert_eq!(b, MakeBookCounts { n: 7, sum: 5 });
        let d = PolyglotExportOptions::default();
        assert_eq!(make_book_weight(w, true, &d), Ok(9));
        let min3 = PolyglotExportOptions {
            min_games: 8,
            ..Default::default()
        };
        assert_eq!(make_book_weight(w, true, &min3), Err(DropReason::MinGames));
        let lost = MakeBookCounts { n: 4, sum: 0 };
        assert_eq!(make_book_weight(lost, true, &d), Err(DropReason::ZeroScore));
        let score = PolyglotExportOptions {
            min_score: 50.0,
            ..Default::default()
        };
        // 9 / 7 / 2 = 0.64 >= 0.5; 5 / 7 / 2 = 0.36 < 0.5
        assert_eq!(make_book_weight(w, true, &score), Ok(9));
        assert_eq!(
            make_book_weight(b, false, &score),
            Err(DropReason::MinScore)
        );
        let white = PolyglotExportOptions {
            only: Some(OnlySide::White),
            ..Default::default()
        };
        assert_eq!(make_book_weight(b, false, &white), Err(DropReason::Side));
        assert_eq!(make_book_weight(w, true, &white), Ok(9));
        let uniform = PolyglotExportOptions {
            uniform: true,
            ..Default::default()
        };
        assert_eq!(make_book_weight(w, true, &uniform), Ok(1));
        assert_eq!(
            make_book_weight(lost, true, &uniform),
            Err(DropReason::ZeroScore)
        );
    }

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

//! `bookdb._bookdb`: the native half of the `bookdb` Python package, a thin binding of the
//! bookdb crate. Every answer and every refusal comes from the library (`ops::reader`,
//! `ops::position`, `ops::import`, `ops::polyglot`, `ops::stats`); this file converts
//! arguments and results and maps the library's error kinds onto the package's exceptions
//! (`bookdb/_errors.py`). The Python half (`bookdb/__init__.py`) shapes the answers like
//! python-chess's `chess.polyglot` reader.

#![deny(clippy::unwrap_used, clippy::expect_used)]

mod canon;
mod table;

use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use pyo3::exceptions::{PyRuntimeError, PyTypeError};
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyList, PyString, PyTuple};

use bookdb::ops::game::Game;
use bookdb::ops::position::{Names, PositionQuery, chess_line, othello_board};
use bookdb::ops::reader::{self, Asked, BookMove};
use bookdb::store::facet::{CellFilter, DateBound, FacetSet};
use bookdb::store::{Book, Entry, LiveBook};

/// What errors call the parts of a position: the Python arguments.
const NAMES: Names = Names {
    fen: "fen",
    board: "board",
    line: "moves",
};

/// The package's exception for a library error: the class of its kind, with its message.
fn py_err(e: bookdb::Error) -> PyErr {
    let class = match e.kind() {
        bookdb::error::ErrorKind::Usage => "UsageError",
        bookdb::error::ErrorKind::Input => "InputError",
        bookdb::error::ErrorKind::Busy => "BookBusy",
        bookdb::error::ErrorKind::Corrupt => "CorruptBook",
        bookdb::error::ErrorKind::NotABook => "NotABook",
        bookdb::error::ErrorKind::NotFound => "BookNotFound",
        bookdb::error::ErrorKind::Io => "BookIOError",
        bookdb::error::ErrorKind::Internal => "InternalError",
    };
    let mut message = e.to_string();
    if let Some(hint) = e.hint() {
        message = format!("{message} ({hint})");
    }
    Python::attach(|py| {
        let made = py
            .import("bookdb._errors")
            .and_then(|m| m.getattr(class))
            .and_then(|c| c.call1((message.clone(),)));
        match made {
            Ok(exc) => PyErr::from_value(exc),
            Err(_) => PyRuntimeError::new_err(message),
        }
    })
}

pub(crate) fn usage(message: String) -> PyErr {
    py_err(bookdb::Error::Usage(message))
}

pub(crate) trait OrPy<T> {
    fn or_py(self) -> PyResult<T>;
}

impl<T, E: Into<bookdb::Error>> OrPy<T> for Result<T, E> {
    fn or_py(self) -> PyResult<T> {
        self.map_err(|e| py_err(e.into()))
    }
}

fn game_name(g: Game) -> &'static str {
    match g {
        Game::Chess => "chess",
        Game::Othello { canonical: false } => "othello",
        Game::Othello { canonical: true } => "othello-canonical",
    }
}

/// The cells a query counts, from the Python arguments (already strings: `YYYY-MM` or
/// `YYYY` bounds, comma lists).
fn filter(
    since: Option<&str>,
    until: Option<&str>,
    ratings: Option<&str>,
    speeds: Option<&str>,
    modes: Option<&str>,
) -> PyResult<CellFilter> {
    let bound = |name: &str, v: Option<&str>| -> PyResult<Option<DateBound>> {
        v.map(|s| DateBound::parse(s).map_err(|e| usage(format!("{name}: {e}"))))
            .transpose()
    };
    Ok(CellFilter {
        since: bound("since", since)?,
        until: bound("until", until)?,
        groups: ratings
            .map(|s| CellFilter::parse_ratings(s).map_err(|e| usage(format!("ratings: {e}"))))
            .transpose()?,
        speeds: speeds
            .map(|s| CellFilter::parse_speeds(s).map_err(|e| usage(format!("speeds: {e}"))))
            .transpose()?,
        modes: modes
            .map(|s| CellFilter::parse_modes(s).map_err(|e| usage(format!("modes: {e}"))))
            .transpose()?,
    })
}

/// A book opened for reading, kept live: answers come from one snapshot each, and the
/// snapshot moves to what writers published at most `refresh` seconds ago.
#[pyclass(frozen, module = "bookdb._bookdb", name = "Book")]
struct PyBook {
    path: PathBuf,
    game: Game,
    live: LiveBook,
    refresh: Option<Duration>,
    checked: Mutex<Instant>,
}

impl PyBook {
    fn snapshot(&self) -> PyResult<Arc<Book>> {
        if let Some(every) = self.refresh {
            let mut last = self.checked.lock().unwrap_or_else(|p| p.into_inner());
            if last.elapsed() >= every {
                *last = Instant::now();
                self.live.refresh().or_py()?;
            }
        }
        Ok(self.live.snapshot())
    }

    /// The position `position` names: a python-chess board, a FEN or Othello board string,
    /// a list of moves from the start, or a key.
    fn asked(&self, position: &Bound<'_, PyAny>) -> PyResult<Asked> {
        if let Ok(s) = position.cast::<PyString>() {
            let s = s.to_str()?;
            return self.resolve(Some(s), None);
        }
        if position.is_instance_of::<pyo3::types::PyBool>() {
            return Err(PyTypeError::new_err(
                "a position is a board, a FEN or board string, a list of moves or a key, not a bool",
            ));
        }
        if let Ok(key) = position.extract::<u64>() {
            return Ok(Asked::Key(key));
        }
        if position.is_instance_of::<PyList>() || position.is_instance_of::<PyTuple>() {
            let mut line = String::new();
            for m in position.try_iter()? {
                let m = m?;
                let text = match m.cast::<PyString>() {
                    Ok(s) => s.to_str()?.to_string(),
                    Err(_) => m.call_method0("uci")?.extract::<String>()?,
                };
                line.push_str(&text);
                line.push(' ');
            }
            return self.resolve(None, Some(&line));
        }
        if position.hasattr("occupied_co")? && self.game == Game::Chess {
            return board_position(position);
        }
        Err(PyTypeError::new_err(format!(
            "a position of this {} book is {}, not {}",
            self.game,
            match self.game {
                Game::Chess => "a chess.Board, a FEN, a list of moves (SAN or UCI) or a key",
                Game::Othello { .. } => "a board string, a list of moves (squares) or a key",
            },
            position.get_type().name()?
        )))
    }

    fn resolve(&self, start: Option<&str>, line: Option<&str>) -> PyResult<Asked> {
        match self.game {
            Game::Chess => {
                let q = PositionQuery {
                    fen: start,
                    board: None,
                    line,
                    names: NAMES,
                };
                let mut positions = chess_line(&q).or_py()?;
                let last = positions
                    .pop()
                    .ok_or_else(|| PyRuntimeError::new_err("an empty line of positions"))?;
                Ok(Asked::Chess(Box::new(last)))
            }
            g => {
                let q = PositionQuery {
                    fen: None,
                    board: start,
                    line,
                    names: NAMES,
                };
                Ok(Asked::Othello(othello_board(&q, g).or_py()?))
            }
        }
    }
}

/// A python-chess `Board` read through its bitboards (no FEN round trip).
fn board_position(b: &Bound<'_, PyAny>) -> PyResult<Asked> {
    let bb = |name: &str| -> PyResult<u64> { b.getattr(name)?.extract::<u64>() };
    let roles = [
        bb("pawns")?,
        bb("knights")?,
        bb("bishops")?,
        bb("rooks")?,
        bb("queens")?,
        bb("kings")?,
    ];
    let occupied = b.getattr("occupied_co")?;
    let white = occupied.get_item(1)?.extract::<u64>()?;
    let black = occupied.get_item(0)?.extract::<u64>()?;
    let turn = b.getattr("turn")?.extract::<bool>()?;
    let castling = bb("castling_rights")?;
    let ep = b.getattr("ep_square")?.extract::<Option<u8>>()?;
    let pos = bookdb::chess::position_from_bitboards(roles, white, black, turn, castling, ep)
        .map_err(|e| usage(format!("board: {e}")))?;
    Ok(Asked::Chess(Box::new(pos)))
}

/// A move as the Python half builds its entries from: (name, raw Polyglot move, weight,
/// learn, white, draws, black, unknown, average rating or None).
fn move_tuple<'py>(py: Python<'py>, m: &BookMove) -> PyResult<Bound<'py, PyTuple>> {
    (
        m.name.as_str(),
        m.polyglot,
        m.weight.unwrap_or(0),
        m.learn,
        m.white,
        m.draws,
        m.black,
        m.unknown,
        m.average_rating,
    )
        .into_pyobject(py)
}

fn move_list<'py>(py: Python<'py>, moves: &[BookMove]) -> PyResult<Bound<'py, PyList>> {
    let list = PyList::empty(py);
    for m in moves {
        list.append(move_tuple(py, m)?)?;
    }
    Ok(list)
}

#[pymethods]
impl PyBook {
    /// Opens the book at `path` (its base, manifest and segments) for reading. `refresh`:
    /// seconds after which a query first looks for what writers published (None: never;
    /// `refresh()` does it on demand).
    #[new]
    #[pyo3(signature = (path, refresh=Some(0.1)))]
    fn new(py: Python<'_>, path: PathBuf, refresh: Option<f64>) -> PyResult<Self> {
        let refresh = match refresh {
            Some(s) if s.is_finite() && s >= 0.0 => Some(Duration::from_secs_f64(s)),
            Some(s) => return Err(usage(format!("refresh: {s} is not a number of seconds"))),
            None => None,
        };
        let opened = py.detach(|| Game::open(&path));
        let (game, book) = opened.or_py()?;
        Ok(PyBook {
            path,
            game,
            live: LiveBook::from_book(book),
            refresh,
            checked: Mutex::new(Instant::now()),
        })
    }

    /// The book's game: "chess", "othello" or "othello-canonical".
    #[getter]
    fn game(&self) -> &'static str {
        game_name(self.game)
    }

    #[getter]
    fn path(&self) -> PathBuf {
        self.path.clone()
    }

    /// The generation of the state being read (grows with every publication).
    #[getter]
    fn generation(&self) -> PyResult<u64> {
        Ok(self.snapshot()?.generation())
    }

    /// The facets the book keeps ("month", "speed", "rating", "mode").
    #[getter]
    fn facets(&self) -> PyResult<Vec<&'static str>> {
        Ok(self.snapshot()?.facets().names())
    }

    /// Moves to what writers published since; whether anything changed.
    fn refresh(&self) -> PyResult<bool> {
        *self.checked.lock().unwrap_or_else(|p| p.into_inner()) = Instant::now();
        self.live.refresh().or_py()
    }

    /// The key of `position` and its moves over the counted cells, in the `.bin`'s order.
    #[pyo3(signature = (position, since=None, until=None, ratings=None, speeds=None, modes=None))]
    #[allow(clippy::too_many_arguments)]
    fn moves<'py>(
        &self,
        py: Python<'py>,
        position: &Bound<'py, PyAny>,
        since: Option<&str>,
        until: Option<&str>,
        ratings: Option<&str>,
        speeds: Option<&str>,
        modes: Option<&str>,
    ) -> PyResult<(u64, Bound<'py, PyList>)> {
        let asked = self.asked(position)?;
        let filter = filter(since, until, ratings, speeds, modes)?;
        let book = self.snapshot()?;
        let moves = reader::moves(&book, self.game, &asked, &filter).or_py()?;
        Ok((reader::key_of(self.game, &asked), move_list(py, &moves)?))
    }

    /// The key `position` is stored under.
    fn key(&self, position: &Bound<'_, PyAny>) -> PyResult<u64> {
        Ok(reader::key_of(self.game, &self.asked(position)?))
    }

    /// `stats --json` as a JSON string.
    fn stats_json(&self, py: Python<'_>) -> PyResult<String> {
        let book = self.snapshot()?;
        let (path, game) = (self.path.clone(), self.game);
        let stats = py.detach(|| bookdb::ops::stats::stats_of(&path, game, &book));
        serde_json::to_string(&stats.or_py()?).map_err(|e| PyRuntimeError::new_err(e.to_string()))
    }

    /// (position, move) pairs in the book.
    fn __len__(&self) -> PyResult<usize> {
        Ok(usize::try_from(self.snapshot()?.meta().pairs).unwrap_or(usize::MAX))
    }

    /// Distinct positions (and key-only entries) in the book.
    fn positions_count(&self) -> PyResult<u64> {
        let book = self.snapshot()?;
        Ok(book.meta().positions + book.meta().key_only)
    }

    /// The book's entries in (key, position) order, from one snapshot.
    fn entries(&self) -> PyResult<Entries> {
        let book = self.snapshot()?;
        let iter = EntryCell::try_new(book, |b| {
            b.iter()
                .map(|i| Box::new(i) as Box<dyn Iterator<Item = _> + '_>)
        })
        .or_py()?;
        Ok(Entries {
            game: self.game,
            iter,
        })
    }

    fn __repr__(&self) -> String {
        format!(
            "bookdb.Book({:?}, game={:?})",
            self.path.display().to_string(),
            game_name(self.game)
        )
    }
}

type EntryStream<'a> = Box<dyn Iterator<Item = Result<Entry, bookdb::store::error::Error>> + 'a>;

self_cell::self_cell!(
    /// An iteration over a book snapshot that owns the snapshot.
    struct EntryCell {
        owner: Arc<Book>,
        #[not_covariant]
        dependent: EntryStream,
    }
);

/// One entry as Python gets it: (key, FEN or board string or None, moves).
type EntryTuple<'py> = (u64, Option<String>, Bound<'py, PyList>);

/// The entries of a book in key order.
#[pyclass(unsendable, module = "bookdb._bookdb")]
struct Entries {
    game: Game,
    iter: EntryCell,
}

#[pymethods]
impl Entries {
    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    fn __next__<'py>(&mut self, py: Python<'py>) -> PyResult<Option<EntryTuple<'py>>> {
        let Some(e) = self.iter.with_dependent_mut(|_, it| it.next()) else {
            return Ok(None);
        };
        let e = e.or_py()?;
        let position = reader::entry_position(self.game, &e).or_py()?;
        let moves = reader::entry_moves(self.game, &e).or_py()?;
        Ok(Some((e.key, position, move_list(py, &moves)?)))
    }
}

/// `bookdb import` (PGN for chess; WTHOR files or transcripts for Othello): counts the games
/// of `inputs` into the book at `book` (created if absent); the summary as JSON.
#[pyfunction]
#[pyo3(signature = (book, inputs, game="chess", max_ply=None, facets=None, jobs=0, memory_mib=256, force=false, dedupe=false, min_rating=None))]
#[allow(clippy::too_many_arguments)]
fn import_games(
    py: Python<'_>,
    book: PathBuf,
    inputs: Vec<String>,
    game: &str,
    max_ply: Option<usize>,
    facets: Option<&str>,
    jobs: usize,
    memory_mib: usize,
    force: bool,
    dedupe: bool,
    min_rating: Option<u32>,
) -> PyResult<String> {
    use bookdb::ops::import::{self, ImportOptions};
    let game = match game {
        "chess" => Game::Chess,
        "othello" => Game::Othello { canonical: false },
        "othello-canonical" => Game::Othello { canonical: true },
        other => {
            return Err(usage(format!(
                "game: {other:?} is not chess, othello or othello-canonical"
            )));
        }
    };
    let facets = facets
        .map(|f| FacetSet::parse(f).map_err(|e| usage(format!("facets: {e}"))))
        .transpose()?;
    let defaults = ImportOptions::default();
    let opts = ImportOptions {
        game,
        rules: bookdb::ops::pgn::CountRules {
            max_ply: max_ply.unwrap_or(import::DEFAULT_MAX_PLY),
            min_rating,
            ..defaults.rules
        },
        facets,
        jobs,
        memory_mib,
        force,
        dedupe,
        progress: bookdb::ops::progress::ProgressMode::None,
        ..defaults
    };
    let summary = py
        .detach(|| import::import(&book, &inputs, &opts))
        .or_py()?;
    if let Some(f) = summary.failed_inputs.first() {
        return Err(py_err(bookdb::Error::Input(f.error.clone())));
    }
    serde_json::to_string(&summary).map_err(|e| PyRuntimeError::new_err(e.to_string()))
}

/// `bookdb export --format polyglot`: the book as a Polyglot `.bin` at `out`; the summary as
/// JSON.
#[pyfunction]
#[pyo3(signature = (book, out, min_games=1, min_score=0.0, only=None, uniform=false, since=None, until=None, ratings=None, speeds=None, modes=None, weights="games"))]
#[allow(clippy::too_many_arguments)]
fn export_polyglot(
    py: Python<'_>,
    book: PathBuf,
    out: PathBuf,
    min_games: u64,
    min_score: f64,
    only: Option<&str>,
    uniform: bool,
    since: Option<&str>,
    until: Option<&str>,
    ratings: Option<&str>,
    speeds: Option<&str>,
    modes: Option<&str>,
    weights: &str,
) -> PyResult<String> {
    use bookdb::ops::polyglot::{self, ExportFormat, OnlySide, PolyglotExportOptions};
    let weights_eval = match weights {
        "games" => false,
        "eval" => true,
        other => return Err(usage(format!("weights: {other:?} is not games or eval"))),
    };
    let only = match only {
        None => None,
        Some("white") => Some(OnlySide::White),
        Some("black") => Some(OnlySide::Black),
        Some(other) => return Err(usage(format!("only: {other:?} is not white or black"))),
    };
    let opts = PolyglotExportOptions {
        min_games,
        min_score,
        only,
        uniform,
        filter: filter(since, until, ratings, speeds, modes)?,
        weights_eval,
    };
    let out = out.display().to_string();
    let summary = py
        .detach(|| polyglot::export(Path::new(&book), ExportFormat::Polyglot, &out, &opts))
        .or_py()?;
    serde_json::to_string(&summary).map_err(|e| PyRuntimeError::new_err(e.to_string()))
}

/// The canonical tagged encoding of `value` (`key`: as a transposition-table key, values
/// Python holds equal encoded alike); never pickle.
#[pyfunction]
#[pyo3(signature = (value, key=false))]
fn encode<'py>(
    py: Python<'py>,
    value: &Bound<'py, PyAny>,
    key: bool,
) -> PyResult<Bound<'py, PyBytes>> {
    Ok(PyBytes::new(py, &canon::encode(value, key)?))
}

/// The value `data` encodes ([`encode`]'s inverse).
#[pyfunction]
fn decode<'py>(py: Python<'py>, data: &[u8]) -> PyResult<Bound<'py, PyAny>> {
    canon::decode(py, data)
}

/// redb panics on some damaged files; the library catches those (`store::book::shield`) and
/// raises `CorruptBook`, so Python's stderr gets no Rust panic message for them (as the
/// command line prints none). Every other panic goes to the hook that was installed.
fn quiet_shielded_panics() {
    static ONCE: std::sync::Once = std::sync::Once::new();
    ONCE.call_once(|| {
        let previous = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if bookdb::store::book::in_shield() && std::env::var_os("BOOKDB_DEBUG").is_none() {
                return;
            }
            previous(info);
        }));
    });
}

#[pymodule]
fn _bookdb(m: &Bound<'_, PyModule>) -> PyResult<()> {
    quiet_shielded_panics();
    m.add_class::<PyBook>()?;
    m.add_class::<Entries>()?;
    m.add_class::<table::PyTable>()?;
    m.add_function(wrap_pyfunction!(import_games, m)?)?;
    m.add_function(wrap_pyfunction!(export_polyglot, m)?)?;
    m.add_function(wrap_pyfunction!(encode, m)?)?;
    m.add_function(wrap_pyfunction!(decode, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}

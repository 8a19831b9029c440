//! The command line: one file per command (its clap arguments, their conversion to the
//! library's options, and a short `run`), the arguments they share (`args.rs`), how results
//! are printed (`output.rs`), `--version`, and the clap command the man pages and completions
//! are generated from. Adding a command is adding a file here and a line to [`Cmd`].

use std::process::ExitCode;

use clap::{CommandFactory, Parser, Subcommand};

mod analyse;
mod args;
mod compact;
mod completions;
mod dump;
mod export;
mod games;
mod import;
mod import_evals;
mod import_polyglot;
mod man;
mod merge;
mod migrate;
pub(crate) mod output;
mod pack;
mod pgn;
mod probe;
mod serve;
mod stats;
mod tt;
mod verify;

#[derive(Parser)]
#[command(
    name = "bookdb",
    version,
    about = "Persistent opening-book database for chess and Othello"
)]
pub(crate) struct Cli {
    #[command(subcommand)]
    pub(crate) cmd: Cmd,
}

#[derive(Subcommand)]
pub(crate) enum Cmd {
    /// Count games from PGN files (plain, .zst, .gz, .bz2, .xz, or - for stdin) into a book.
    Import(import::Args),
    /// Show the moves of a position (start position unless --fen/--board/--moves).
    Probe(probe::Args),
    /// Print every position as a JSON line, ascending key.
    Dump(dump::Args),
    /// Print a position's key, bit count and packed bytes.
    Pack(pack::Args),
    /// List the strongest and newest stored games of a position (filters as probe's).
    Games(games::Args),
    /// Print stored games as PGN, by id (the games an import stored; `--no-games` books keep none).
    Pgn(pgn::Args),
    /// Show book statistics.
    Stats(stats::Args),
    /// Check the whole book; exit 0 only if every check passes.
    Verify(verify::Args),
    /// Write the book as a Polyglot .bin (weights by `polyglot make-book`'s rule) or JSON lines.
    Export(export::Args),
    /// Import Polyglot .bin books: positions are rebuilt by walking the books' moves.
    ImportPolyglot(import_polyglot::Args),
    /// Import engine evaluations (EPD with ce/acd/acn/pv, or lichess's evaluation export).
    ImportEvals(import_evals::Args),
    /// Run a UCI engine (Stockfish) over the book's positions, most played first; the
    /// evaluations are kept with the book. Interrupted, the same command resumes.
    Analyse(analyse::Args),
    /// Merge books (statistics add up) into a new book.
    Merge(merge::Args),
    /// Rewrite a book: fold the delta tier into blocks, prune, return space.
    Compact(compact::Args),
    /// Bring a book to the current format version.
    Migrate(migrate::Args),
    /// Inspect, check or compact a persistent transposition table (a `bookdb::tt` file).
    Tt(tt::Args),
    /// Answer HTTP: the lichess opening explorer's API (/masters, /lichess), /v1/position,
    /// /v1/book, /health, /metrics and (with --admin-token-file) POST /v1/import. Follows
    /// every change other processes make to the book. Logs go to stderr (filter: BOOKDB_LOG,
    /// e.g. BOOKDB_LOG=debug for every request); SIGTERM or SIGINT stop it gracefully.
    Serve(serve::Args),
    /// Print a shell completion script (bash, zsh, fish, elvish or powershell) to stdout.
    Completions(completions::Args),
    /// Print the man page (roff) to stdout: `bookdb man > bookdb.1`; `--dir DIR` writes it
    /// and a page per command.
    Man(man::Args),
}

impl Cmd {
    pub(crate) fn run(self) -> anyhow::Result<ExitCode> {
        match self {
            Cmd::Import(a) => a.run(),
            Cmd::Probe(a) => a.run(),
            Cmd::Dump(a) => a.run(),
            Cmd::Pack(a) => a.run(),
            Cmd::Stats(a) => a.run(),
            Cmd::Pgn(a) => a.run(),
            Cmd::Games(a) => a.run(),
            Cmd::Verify(a) => a.run(),
            Cmd::Export(a) => a.run(),
            Cmd::ImportPolyglot(a) => a.run(),
            Cmd::ImportEvals(a) => a.run(),
            Cmd::Analyse(a) => a.run(),
            Cmd::Merge(a) => a.run(),
            Cmd::Compact(a) => a.run(),
            Cmd::Migrate(a) => a.run(),
            Cmd::Serve(a) => a.run(),
            Cmd::Tt(a) => a.run(),
            Cmd::Completions(a) => a.run(command()),
            Cmd::Man(a) => a.run(command()),
        }
    }

    /// Whether the command was asked for JSON output (errors are then JSON on stderr too).
    pub(crate) fn json(&self) -> bool {
        match self {
            Cmd::Import(a) => a.job.output.json,
            Cmd::Probe(a) => a.json.json,
            Cmd::Stats(a) => a.json.json,
            Cmd::Games(a) => a.json.json,
            Cmd::Verify(a) => a.output.json,
            Cmd::Export(a) => a.output.json,
            Cmd::ImportPolyglot(a) => a.output.json,
            Cmd::ImportEvals(a) => a.output.json,
            Cmd::Analyse(a) => a.job.output.json,
            Cmd::Merge(a) => a.job.output.json,
            Cmd::Compact(a) => a.job.output.json,
            Cmd::Migrate(a) => a.job.output.json,
            Cmd::Serve(a) => a.output.json,
            Cmd::Tt(a) => a.json(),
            Cmd::Dump(_) | Cmd::Pack(_) | Cmd::Pgn(_) | Cmd::Completions(_) | Cmd::Man(_) => false,
        }
    }
}

/// `--version`: the commit and the book format versions.
fn version() -> String {
    let (writes, oldest) = bookdb::store::format_versions();
    format!(
        "{} (commit {})\nbook format version {writes} (read and written); `bookdb migrate` upgrades books from version {oldest} on",
        env!("CARGO_PKG_VERSION"),
        env!("BOOKDB_GIT_COMMIT"),
    )
}

/// The command line's definition, with the version (also for completions and the man page):
/// `-V` and the man page show the one-line version, `--version` the format versions too.
pub(crate) fn command() -> clap::Command {
    let short = format!(
        "{} (commit {})",
        env!("CARGO_PKG_VERSION"),
        env!("BOOKDB_GIT_COMMIT")
    );
    Cli::command().version(short).long_version(version())
}

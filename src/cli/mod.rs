//! The command line's grammar: the global options, the commands and their arguments (clap),
//! `--version` and the clap command the man page and completions are generated from.

use std::path::PathBuf;

use clap::{Args, CommandFactory, Parser, Subcommand};

use bookdb::ops::import;
use bookdb::ops::progress::ProgressMode;
use bookdb::store::LockWait;

#[derive(Parser)]
#[command(
    name = "bookdb",
    version,
    about = "Persistent chess opening-book database"
)]
pub(crate) struct Cli {
    #[command(flatten)]
    pub(crate) global: Global,
    #[command(subcommand)]
    pub(crate) cmd: Cmd,
}

/// Options every command takes (those that do not write a book ignore them).
#[derive(Args)]
pub(crate) struct Global {
    /// Writers: wait for another writer's lock on the book, up to SECONDS (no value: as long
    /// as it takes) instead of failing at once with exit code 75.
    #[arg(long, global = true, value_name = "SECONDS", num_args = 0..=1, require_equals = true,
          default_missing_value = "forever", value_parser = parse_wait)]
    pub(crate) wait: Option<LockWait>,
    /// Progress on stderr: auto (a bar on a terminal, otherwise a plain line every few
    /// seconds), bar, plain or none. --quiet means none; so does --json unless given.
    #[arg(long, global = true, value_name = "MODE")]
    pub(crate) progress: Option<ProgressMode>,
}

pub(crate) fn parse_wait(s: &str) -> Result<LockWait, String> {
    if s == "forever" {
        return Ok(LockWait::Forever);
    }
    let secs: f64 = s
        .parse()
        .map_err(|_| format!("--wait takes a number of seconds, not {s:?}"))?;
    if !secs.is_finite() || secs < 0.0 {
        return Err(format!("--wait takes a number of seconds, not {s:?}"));
    }
    Ok(LockWait::For(std::time::Duration::from_secs_f64(secs)))
}

impl Global {
    /// The progress mode of a command given `--quiet` and `--json`.
    pub(crate) fn progress(&self, quiet: bool, json: bool) -> ProgressMode {
        match self.progress {
            _ if quiet => ProgressMode::None,
            Some(m) => m,
            None if json => ProgressMode::None,
            None => ProgressMode::Auto,
        }
    }

    pub(crate) fn wait(&self) -> LockWait {
        self.wait.unwrap_or_default()
    }
}

/// `--version`: the commit and the book format versions.
pub(crate) fn version() -> String {
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

#[derive(Subcommand)]
pub(crate) enum Cmd {
    /// Count games from PGN files (plain, .zst, .gz, .bz2, .xz, or - for stdin) into a book.
    Import {
        #[arg(required = true)]
        inputs: Vec<String>,
        #[arg(long, env = "BOOKDB_BOOK")]
        book: PathBuf,
        /// Count only the first N plies of each game.
        #[arg(long, default_value_t = import::DEFAULT_MAX_PLY)]
        max_ply: usize,
        /// Skip games unless both players are rated at least R.
        #[arg(long)]
        min_rating: Option<u32>,
        /// Skip games identical to an earlier one (tags White/Black/Date/Round/Event/Site,
        /// result and moves).
        #[arg(long)]
        dedupe: bool,
        /// Count inputs again even if the book already lists them as imported.
        #[arg(long)]
        force: bool,
        /// Fingerprint every input's bytes even if its path, size, modification time and inode
        /// match an earlier import's (which otherwise identify it as already imported).
        #[arg(long)]
        rehash: bool,
        /// Worker threads (default: all cores).
        #[arg(long)]
        jobs: Option<usize>,
        /// Memory budget in MiB (aggregation gets half; past it, sorted runs spill to disk).
        #[arg(long, default_value_t = 256)]
        memory: usize,
        /// Target stored size of a value block in bytes (advanced; see docs/PERFORMANCE.md).
        #[arg(long, default_value_t = bookdb::store::WriterOptions::default().target_block_bytes, hide = true)]
        block_bytes: usize,
        /// Delta-tier size (entries) below which imports into a book never rewrite it
        /// (advanced; the threshold is the larger of this and an eighth of the book).
        #[arg(long, default_value_t = bookdb::ops::import::DELTA_MIN_THRESHOLD, hide = true)]
        delta_min: u64,
        /// Write every skipped game (file:line, reason) to this file.
        #[arg(long)]
        report: Option<PathBuf>,
        /// Print the summary as JSON.
        #[arg(long)]
        json: bool,
        /// No progress bar, no skipped-game lines on stderr.
        #[arg(long, short)]
        quiet: bool,
        /// The game of the inputs: chess (PGN) or othello (WTHOR .wtb files, recognised by
        /// their header, or transcripts: one game per line, "f5d6c3…", optionally a space and
        /// black's discs minus white's).
        #[arg(long, value_enum, default_value_t = GameArg::Chess)]
        game: GameArg,
        /// Othello: store each position under the least of its 8 board symmetries.
        #[arg(long)]
        canonical: bool,
    },
    /// Show the moves of a position (start position unless --fen/--board/--moves).
    Probe {
        #[arg(long, env = "BOOKDB_BOOK")]
        book: PathBuf,
        #[arg(long, conflicts_with = "board")]
        fen: Option<String>,
        /// Othello: a board string, 64 characters a1, b1, …, h8 of '-', 'X' (black), 'O'
        /// (white), a space, then X or O to move.
        #[arg(long, allow_hyphen_values = true)]
        board: Option<String>,
        /// Moves from the start (or from --fen/--board): chess SAN or UCI ("e4 e5 Nf3"),
        /// Othello squares ("f5 d6 c3").
        #[arg(long)]
        moves: Option<String>,
        #[arg(long)]
        json: bool,
        /// Probe every FEN of FILE (one per line, `-` for stdin): one JSON line each, in
        /// order; a position that cannot be answered gets `{"fen":…,"error":{…}}` and the
        /// others are still probed (exit code of the worst error). Chess books.
        #[arg(long, value_name = "FILE", conflicts_with_all = ["fen", "board", "moves"])]
        fens: Option<PathBuf>,
    },
    /// Print every position as a JSON line, ascending key.
    Dump {
        #[arg(long, env = "BOOKDB_BOOK")]
        book: PathBuf,
    },
    /// Print a position's key, bit count and packed bytes.
    Pack {
        #[arg(long)]
        fen: String,
        /// The game (chess only: the packed format of a FEN).
        #[arg(long, value_enum, default_value_t = GameArg::Chess)]
        game: GameArg,
    },
    /// Show book statistics.
    Stats {
        #[arg(long, env = "BOOKDB_BOOK")]
        book: PathBuf,
        #[arg(long)]
        json: bool,
    },
    /// Check the whole book; exit 0 only if every check passes.
    Verify {
        #[arg(long, env = "BOOKDB_BOOK")]
        book: PathBuf,
        #[arg(long)]
        json: bool,
        /// Check only the files published after this generation (the `generation` a previous
        /// verify printed), plus the manifest and every file's meta table; the merged view is
        /// not recounted.
        #[arg(long, value_name = "GENERATION")]
        since: Option<u64>,
        /// Skip redb's integrity check (it runs on a private copy of each file in $TMPDIR).
        #[arg(long)]
        no_redb_check: bool,
        /// Threads that check blocks (default: every core).
        #[arg(long)]
        jobs: Option<usize>,
    },
    /// Write the book as a Polyglot .bin (weights by `polyglot make-book`'s rule) or JSON lines.
    Export {
        #[arg(long, env = "BOOKDB_BOOK")]
        book: PathBuf,
        /// polyglot or jsonl.
        #[arg(long)]
        format: bookdb::ops::polyglot::ExportFormat,
        /// Output file, or - for stdout.
        #[arg(long)]
        out: String,
        /// Leave out moves played in fewer games (polyglot -min-game; default 1).
        #[arg(long)]
        min_games: Option<u64>,
        /// Leave out moves scoring below P percent for the mover (polyglot -min-score).
        #[arg(long)]
        min_score: Option<f64>,
        /// Only positions with white to move (polyglot -only-white).
        #[arg(long, conflicts_with = "only_black")]
        only_white: bool,
        /// Only positions with black to move (polyglot -only-black).
        #[arg(long)]
        only_black: bool,
        /// Weight 1 for every move (polyglot -uniform).
        #[arg(long)]
        uniform: bool,
        /// Print the summary as JSON (on stderr when --out is -).
        #[arg(long)]
        json: bool,
    },
    /// Import Polyglot .bin books: positions are rebuilt by walking the books' moves.
    ImportPolyglot {
        #[arg(required = true)]
        inputs: Vec<PathBuf>,
        #[arg(long, env = "BOOKDB_BOOK")]
        book: PathBuf,
        /// Import files the book already lists as imported (their weights add up again).
        #[arg(long)]
        force: bool,
        #[arg(long)]
        json: bool,
        /// No warnings, no summary.
        #[arg(long, short)]
        quiet: bool,
    },
    /// Merge books (statistics add up) into a new book.
    Merge {
        #[arg(required = true)]
        inputs: Vec<PathBuf>,
        #[arg(long)]
        out: PathBuf,
        #[arg(long)]
        json: bool,
        /// No progress bar, no summary (warnings still go to stderr).
        #[arg(long, short)]
        quiet: bool,
    },
    /// Rewrite a book: fold the delta tier into blocks, prune, return space.
    Compact {
        #[arg(long, env = "BOOKDB_BOOK")]
        book: PathBuf,
        /// Drop moves played in fewer than N games (Polyglot-only moves are kept).
        #[arg(long)]
        min_games: Option<u64>,
        /// Train a new position model and dictionary even if the book's own still fit its
        /// content (by default they are kept unless pruning or a large delta tier changed it).
        #[arg(long)]
        retrain: bool,
        #[arg(long)]
        json: bool,
        /// No progress bar, no summary.
        #[arg(long, short)]
        quiet: bool,
    },
    /// Bring a book to the current format version.
    Migrate {
        #[arg(long, env = "BOOKDB_BOOK")]
        book: PathBuf,
        /// Print errors as JSON.
        #[arg(long)]
        json: bool,
    },
    /// Answer HTTP: the lichess opening explorer's API (/masters, /lichess), /v1/position,
    /// /v1/book, /health, /metrics and (with --admin-token-file) POST /v1/import. Follows
    /// every change other processes make to the book. Logs go to stderr (filter: BOOKDB_LOG,
    /// e.g. BOOKDB_LOG=debug for every request); SIGTERM or SIGINT stop it gracefully.
    Serve {
        #[arg(long, env = "BOOKDB_BOOK")]
        book: PathBuf,
        /// Address and port to listen on (port 0: any free port, printed at start).
        #[arg(long, default_value = "127.0.0.1:8080")]
        listen: std::net::SocketAddr,
        /// Enable POST /v1/import for requests carrying this file's token
        /// (Authorization: Bearer TOKEN; at least 16 bytes).
        #[arg(long, value_name = "FILE")]
        admin_token_file: Option<PathBuf>,
        /// Close connections beyond this many at once.
        #[arg(long, default_value_t = 1024, value_parser = clap::value_parser!(u32).range(1..))]
        max_connections: u32,
        /// Largest POST /v1/import body, MiB.
        #[arg(long, default_value_t = 1024, value_name = "MIB")]
        max_upload: u64,
        /// How often to check the book for changes, milliseconds.
        #[arg(long, default_value_t = 100, value_name = "MS",
              value_parser = clap::value_parser!(u64).range(10..=60_000))]
        refresh_ms: u64,
        /// Worker threads (default: one per core).
        #[arg(long)]
        threads: Option<usize>,
        /// Memory for opened blocks of each book file, MiB (a limit: it fills as positions
        /// are asked for; about 18 MiB per million positions holds the whole book).
        #[arg(long, default_value_t = bookdb::server::DEFAULT_BLOCK_CACHE_MIB as u64, value_name = "MIB",
              value_parser = clap::value_parser!(u64).range(0..=1 << 20))]
        cache_mib: u64,
        /// Seconds a client may take to send a request's head (slow clients are cut off).
        #[arg(long, default_value_t = 10, value_name = "SECONDS",
              value_parser = clap::value_parser!(u64).range(1..=3600))]
        head_timeout: u64,
        /// Print the listening line as JSON.
        #[arg(long)]
        json: bool,
        /// Log warnings and errors only.
        #[arg(long, short)]
        quiet: bool,
    },
    /// Print a shell completion script (bash, zsh, fish, elvish or powershell) to stdout.
    Completions { shell: clap_complete::Shell },
    /// Print the man page (roff) to stdout: `bookdb man > bookdb.1`.
    Man,
}

impl Cmd {
    /// Whether the command was asked for JSON output (errors are then JSON on stderr too).
    pub(crate) fn json(&self) -> bool {
        match self {
            Cmd::Import { json, .. }
            | Cmd::Probe { json, .. }
            | Cmd::Stats { json, .. }
            | Cmd::Verify { json, .. }
            | Cmd::Export { json, .. }
            | Cmd::ImportPolyglot { json, .. }
            | Cmd::Merge { json, .. }
            | Cmd::Compact { json, .. }
            | Cmd::Migrate { json, .. }
            | Cmd::Serve { json, .. } => *json,
            Cmd::Dump { .. } | Cmd::Pack { .. } | Cmd::Completions { .. } | Cmd::Man => false,
        }
    }
}

/// `--game`: what the inputs of an import are.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum GameArg {
    Chess,
    Othello,
}

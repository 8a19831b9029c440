//! The `bookdb` command line: parses arguments, calls the library, maps errors to exit codes.
//!
//! Exit codes (README.md): 0 success; 1 error; 2 usage (arguments clap cannot parse); 3 the
//! book is corrupt (or `verify` found a problem); 4 the file is not a book or has an
//! unsupported version; 75 busy (another process is writing the book; EX_TEMPFAIL).

#![deny(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::undocumented_unsafe_blocks
)]

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Args, CommandFactory, FromArgMatches, Parser, Subcommand};

use bookdb::chess::{PosState, to_hex};
use bookdb::error::{ErrorKind, StoreError};

// Imports allocate many small buffers across threads; mimalloc handles that far better than
// glibc's malloc (measured in docs/PERFORMANCE.md).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;
use bookdb::ops::progress::ProgressMode;
use bookdb::ops::{import, query, verify};
use bookdb::store::{Book, LockWait};

#[derive(Parser)]
#[command(
    name = "bookdb",
    version,
    about = "Persistent chess opening-book database"
)]
struct Cli {
    #[command(flatten)]
    global: Global,
    #[command(subcommand)]
    cmd: Cmd,
}

/// Options every command takes (those that do not write a book ignore them).
#[derive(Args)]
struct Global {
    /// Writers: wait for another writer's lock on the book, up to SECONDS (no value: as long
    /// as it takes) instead of failing at once with exit code 75.
    #[arg(long, global = true, value_name = "SECONDS", num_args = 0..=1, require_equals = true,
          default_missing_value = "forever", value_parser = parse_wait)]
    wait: Option<LockWait>,
    /// Progress on stderr: auto (a bar on a terminal, otherwise a plain line every few
    /// seconds), bar, plain or none. --quiet means none; so does --json unless given.
    #[arg(long, global = true, value_name = "MODE")]
    progress: Option<ProgressMode>,
}

fn parse_wait(s: &str) -> Result<LockWait, String> {
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
    fn progress(&self, quiet: bool, json: bool) -> ProgressMode {
        match self.progress {
            _ if quiet => ProgressMode::None,
            Some(m) => m,
            None if json => ProgressMode::None,
            None => ProgressMode::Auto,
        }
    }

    fn wait(&self) -> LockWait {
        self.wait.unwrap_or_default()
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
fn command() -> clap::Command {
    let short = format!(
        "{} (commit {})",
        env!("CARGO_PKG_VERSION"),
        env!("BOOKDB_GIT_COMMIT")
    );
    Cli::command().version(short).long_version(version())
}

#[derive(Subcommand)]
enum Cmd {
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
    },
    /// Show the moves of a position (start position unless --fen/--moves).
    Probe {
        #[arg(long, env = "BOOKDB_BOOK")]
        book: PathBuf,
        #[arg(long)]
        fen: Option<String>,
        /// Moves from the start (or from --fen), SAN or UCI: "e4 e5 Nf3".
        #[arg(long)]
        moves: Option<String>,
        #[arg(long)]
        json: bool,
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
    /// Print a shell completion script (bash, zsh, fish, elvish or powershell) to stdout.
    Completions { shell: clap_complete::Shell },
    /// Print the man page (roff) to stdout: `bookdb man > bookdb.1`.
    Man,
}

impl Cmd {
    /// Whether the command was asked for JSON output (errors are then JSON on stderr too).
    fn json(&self) -> bool {
        match self {
            Cmd::Import { json, .. }
            | Cmd::Probe { json, .. }
            | Cmd::Stats { json, .. }
            | Cmd::Verify { json, .. }
            | Cmd::Export { json, .. }
            | Cmd::ImportPolyglot { json, .. }
            | Cmd::Merge { json, .. }
            | Cmd::Compact { json, .. }
            | Cmd::Migrate { json, .. } => *json,
            Cmd::Dump { .. } | Cmd::Pack { .. } | Cmd::Completions { .. } | Cmd::Man => false,
        }
    }
}

/// Skipped games shown on stderr (all of them go to `--report FILE`).
const SHOWN_SKIPPED: usize = 10;

/// Prints the first skipped games on stderr (the library wrote the report file).
fn report_skipped(summary: &import::ImportSummary, report: Option<&PathBuf>, quiet: bool) {
    if quiet {
        return;
    }
    for s in summary.skipped.iter().take(SHOWN_SKIPPED) {
        eprintln!("skipped {}:{}: {}", s.file, s.line, s.detail);
    }
    if summary.games_skipped as usize > SHOWN_SKIPPED {
        eprintln!(
            "… {} more skipped game(s){}",
            summary.games_skipped as usize - SHOWN_SKIPPED,
            match report {
                Some(path) => format!(" (all listed in {})", path.display()),
                None => "; use --report FILE to list all".into(),
            }
        );
    }
}

/// `merge`, `compact` and `migrate`: progress and lock waiting as asked.
fn rewrite_options(
    global: &Global,
    quiet: bool,
    json: bool,
) -> bookdb::ops::rewrite::RewriteOptions {
    bookdb::ops::rewrite::RewriteOptions {
        progress: global.progress(quiet, json),
        lock_wait: global.wait(),
        ..Default::default()
    }
}

fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    let codec = bookdb::chess_codec();
    let global = &cli.global;
    match cli.cmd {
        Cmd::Import {
            inputs,
            book,
            max_ply,
            min_rating,
            dedupe,
            force,
            rehash,
            jobs,
            memory,
            block_bytes,
            delta_min,
            report,
            json,
            quiet,
        } => {
            let opts = import::ImportOptions {
                rules: bookdb::ops::pgn::CountRules {
                    max_ply,
                    min_rating,
                },
                dedupe,
                force,
                rehash,
                jobs: jobs.unwrap_or(0),
                memory_mib: memory,
                progress: global.progress(quiet, json),
                lock_wait: global.wait(),
                delta_min,
                writer: bookdb::store::WriterOptions {
                    target_block_bytes: block_bytes,
                    ..Default::default()
                },
                keep_skipped: SHOWN_SKIPPED,
                report: report.clone(),
            };
            let summary = import::import(&book, &inputs, &opts)?;
            report_skipped(&summary, report.as_ref(), quiet || json);
            // Inputs that are not PGN text were left out (not counted, not recorded): said
            // even with --quiet, and the exit code is 1.
            if !json {
                for f in &summary.failed_inputs {
                    eprintln!("bookdb: error: {}", f.error);
                }
            }
            if json {
                println!("{}", serde_json::to_string(&summary)?);
            } else if !quiet {
                for name in &summary.already_imported {
                    println!(
                        "{name}: already imported into {}; skipped (use --force to count it again)",
                        book.display()
                    );
                }
                if summary.resumed {
                    println!("resumed an interrupted import from its last checkpoint");
                }
                println!(
                    "{} games read, {} imported, {} skipped{}",
                    summary.games_read,
                    summary.games_imported,
                    summary.games_skipped,
                    if summary.skipped_by_reason.is_empty() {
                        String::new()
                    } else {
                        format!(
                            " ({})",
                            summary
                                .skipped_by_reason
                                .iter()
                                .map(|(k, v)| format!("{k}: {v}"))
                                .collect::<Vec<_>>()
                                .join(", ")
                        )
                    }
                );
                println!(
                    "+{} positions, +{} (position, move) pairs; book {}: {} positions, {} pairs, {} bytes ({:.2} bytes/pair) in {:.2}s",
                    summary.positions_added,
                    summary.pairs_added,
                    book.display(),
                    summary.book.positions,
                    summary.book.pairs,
                    summary.book_bytes,
                    summary.book_bytes as f64 / summary.book.pairs.max(1) as f64,
                    summary.elapsed_secs
                );
            }
            if !summary.failed_inputs.is_empty() {
                return Ok(ExitCode::from(1));
            }
        }
        Cmd::Probe {
            book,
            fen,
            moves,
            json,
        } => {
            let b = Book::open(&book, codec)?;
            let pos = query::resolve_position(fen.as_deref(), moves.as_deref())?;
            let answer = query::probe(&b, &pos)?;
            if json {
                println!("{}", serde_json::to_string(&answer.json()?)?);
            } else {
                print!("{}", answer.table()?);
            }
        }
        Cmd::Dump { book } => {
            let b = Book::open(&book, codec)?;
            let out = std::io::stdout();
            let mut out = std::io::BufWriter::new(out.lock());
            for e in b.iter()? {
                let j = query::entry_json(&e?, false)?;
                serde_json::to_writer(&mut out, &j)?;
                if let Err(e) = out.write_all(b"\n") {
                    if e.kind() == std::io::ErrorKind::BrokenPipe {
                        return Ok(ExitCode::SUCCESS);
                    }
                    return Err(e.into());
                }
            }
            out.flush().or_else(|e| {
                if e.kind() == std::io::ErrorKind::BrokenPipe {
                    Ok(())
                } else {
                    Err(e)
                }
            })?;
        }
        Cmd::Pack { fen } => {
            let pos = bookdb::chess::parse_fen(&fen)?;
            let s = PosState::from_chess(&pos);
            let (bytes, bits) = s.pack();
            println!("{:016x} {} {}", s.key(), bits, to_hex(&bytes));
        }
        Cmd::Stats { book, json } => {
            let s = verify::stats(&book)?;
            if json {
                println!("{}", serde_json::to_string(&s)?);
            } else {
                println!("book              {}", s.path);
                println!("format version    {}", s.format_version);
                println!("games             {}", s.games);
                println!("positions         {}", s.positions);
                println!("key-only entries  {}", s.key_only);
                println!("(position, move)  {}", s.pairs);
                println!("key collisions    {}", s.collisions);
                println!("blocks            {}", s.blocks);
                println!("raw payload       {} bytes", s.raw_bytes);
                println!(
                    "stored blocks     {} bytes ({:.2} per pair)",
                    s.stored_bytes, s.stored_bytes_per_pair
                );
                println!("dictionary        {} bytes", s.dictionary_bytes);
                println!("--dedupe games    {}", s.dedupe_games);
                println!(
                    "file              {} bytes ({:.2} per pair)",
                    s.file_bytes, s.bytes_per_pair
                );
            }
        }
        Cmd::Verify { book, json } => {
            let r = verify::verify(&book)?;
            if json {
                println!("{}", serde_json::to_string(&r)?);
            } else {
                for p in &r.problems {
                    eprintln!("FAIL {p}");
                }
                if r.problems_total as usize > r.problems.len() {
                    eprintln!(
                        "… {} more problem(s)",
                        r.problems_total as usize - r.problems.len()
                    );
                }
                println!(
                    "{}: {} blocks, {} entries, {} pairs checked; {}",
                    book.display(),
                    r.blocks,
                    r.entries,
                    r.pairs,
                    if r.ok() {
                        "OK".to_string()
                    } else {
                        format!("{} problem(s)", r.problems_total)
                    }
                );
            }
            if !r.ok() {
                return Ok(ExitCode::from(3));
            }
        }
        Cmd::Export {
            book,
            format,
            out,
            min_games,
            min_score,
            only_white,
            only_black,
            uniform,
            json,
        } => {
            use bookdb::ops::polyglot::{ExportFormat, OnlySide, PolyglotExportOptions};
            let filtered =
                min_games.is_some() || min_score.is_some() || only_white || only_black || uniform;
            if format == ExportFormat::Jsonl && filtered {
                anyhow::bail!(
                    "--min-games, --min-score, --only-white, --only-black and --uniform apply to --format polyglot only"
                );
            }
            let opts = PolyglotExportOptions {
                min_games: min_games.unwrap_or(1),
                min_score: min_score.unwrap_or(0.0),
                only: if only_white {
                    Some(OnlySide::White)
                } else if only_black {
                    Some(OnlySide::Black)
                } else {
                    None
                },
                uniform,
            };
            let s = bookdb::ops::polyglot::export(&book, format, &out, &opts)?;
            let text = if json {
                serde_json::to_string(&s)?
            } else {
                s.to_string()
            };
            if out == "-" {
                eprintln!("{text}");
            } else {
                println!("{text}");
            }
        }
        Cmd::ImportPolyglot {
            inputs,
            book,
            force,
            json,
            quiet,
        } => {
            let opts = bookdb::ops::polyglot::PolyglotImportOptions {
                force,
                lock_wait: global.wait(),
                ..Default::default()
            };
            let s = bookdb::ops::polyglot::import_polyglot(&book, &inputs, &opts)?;
            if !quiet && !json {
                for f in &s.files {
                    for w in &f.warnings {
                        eprintln!("warning: {}: {w}", f.file);
                    }
                }
            }
            if json {
                println!("{}", serde_json::to_string(&s)?);
            } else if !quiet {
                println!("{s}");
            }
        }
        Cmd::Merge {
            inputs,
            out,
            json,
            quiet,
        } => {
            let opts = rewrite_options(global, quiet, json);
            let s = bookdb::ops::rewrite::merge(&inputs, &out, &opts)?;
            if json {
                println!("{}", serde_json::to_string(&s)?);
            } else {
                for fp in &s.overlapping_imports {
                    eprintln!(
                        "warning: input with fingerprint {fp} was imported into more than one of the merged books; its games are counted more than once"
                    );
                }
                if !quiet {
                    println!(
                        "merged {} book(s) into {}: {} positions, {} pairs, {} games, {} bytes in {:.2}s",
                        s.inputs.len(),
                        s.output,
                        s.book.positions,
                        s.book.pairs,
                        s.book.games,
                        s.output_bytes,
                        s.elapsed_secs
                    );
                }
            }
        }
        Cmd::Compact {
            book,
            min_games,
            retrain,
            json,
            quiet,
        } => {
            let opts = bookdb::ops::rewrite::RewriteOptions {
                retrain,
                ..rewrite_options(global, quiet, json)
            };
            let s = bookdb::ops::rewrite::compact(&book, min_games, &opts)?;
            if json {
                println!("{}", serde_json::to_string(&s)?);
            } else if !quiet {
                println!(
                    "{}: {} -> {} bytes ({:+.1}%); {} positions, {} pairs; pruned {} moves, {} positions; delta tier folded ({} entries) in {:.2}s",
                    s.book,
                    s.bytes_before,
                    s.bytes_after,
                    100.0 * (s.bytes_after as f64 - s.bytes_before as f64)
                        / s.bytes_before.max(1) as f64,
                    s.after.positions,
                    s.after.pairs,
                    s.moves_pruned,
                    s.positions_pruned,
                    s.before.delta_entries,
                    s.elapsed_secs
                );
            }
        }
        Cmd::Migrate { book, json } => {
            let message =
                bookdb::ops::rewrite::migrate(&book, &rewrite_options(global, false, json))?;
            if json {
                println!("{}", serde_json::json!({ "message": message }));
            } else {
                println!("{message}");
            }
        }
        Cmd::Completions { shell } => {
            clap_complete::generate(shell, &mut command(), "bookdb", &mut std::io::stdout());
        }
        Cmd::Man => {
            clap_mangen::Man::new(command()).render(&mut std::io::stdout())?;
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// mimalloc's `mi_option_purge_delay` (index 15 of `mi_option_e` in
/// c_src/mimalloc/v3/include/mimalloc.h of libmimalloc-sys 0.1.49, pinned in Cargo.lock; the
/// crate exports no constant for it).
const MI_OPTION_PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;

fn main() -> ExitCode {
    // Return freed memory to the OS after 10 ms: `--memory` bounds the resident set.
    // SAFETY: mi_option_set only stores an option value; any thread may call it at any time.
    unsafe { libmimalloc_sys::mi_option_set(MI_OPTION_PURGE_DELAY, 10) };
    // No transparent huge pages (mimalloc asks for them): each first touch of one makes the
    // kernel zero 2 MiB, again after every purge of part of it; without them an import spends
    // about half the system time (measured in docs/PERFORMANCE.md). mimalloc's own switch is
    // read before main runs, so the process-wide one is used.
    #[cfg(target_os = "linux")]
    // SAFETY: PR_SET_THP_DISABLE only sets a flag of this process; the arguments are plain
    // integers.
    unsafe {
        libc::prctl(libc::PR_SET_THP_DISABLE, 1, 0, 0, 0);
    }
    // redb panics on some damaged files; the library catches those (`store::book::shield`)
    // and reports a corrupt book, so they stay quiet here. Any other panic is a bug: it is
    // reported as such, then by the default hook (so RUST_BACKTRACE works).
    let default_hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        if bookdb::store::book::in_shield() && std::env::var_os("BOOKDB_DEBUG").is_none() {
            return;
        }
        eprintln!("bookdb: internal error (please report it with the lines below)");
        default_hook(info);
    }));
    let cli = match Cli::from_arg_matches(&command().get_matches()) {
        Ok(cli) => cli,
        Err(e) => e.exit(),
    };
    let json = cli.cmd.json();
    match run(cli) {
        Ok(code) => code,
        Err(e) => {
            // Library errors already name their cause; anyhow's chain would repeat it.
            let library = if let Some(le) = e.downcast_ref::<bookdb::Error>() {
                Some((le.to_string(), le.kind()))
            } else {
                e.downcast_ref::<StoreError>()
                    .map(|se| (se.to_string(), ErrorKind::of_store(se)))
            };
            let kind = library.as_ref().map(|(_, kind)| *kind);
            let message = match library {
                Some((msg, _)) => msg,
                None => format!("{e:#}"),
            };
            let code = exit_code(kind);
            if json {
                let j = serde_json::json!({ "error": {
                    "kind": kind.map_or("error", ErrorKind::as_str),
                    "message": message,
                    "exit_code": code,
                }});
                eprintln!("{j}");
            } else {
                eprintln!("bookdb: error: {message}");
            }
            ExitCode::from(code)
        }
    }
}

/// The exit code of a failure (README.md's table).
fn exit_code(kind: Option<ErrorKind>) -> u8 {
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

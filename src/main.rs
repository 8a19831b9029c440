//! The `bookdb` command line: parses arguments, calls the library, maps errors to exit codes.
//!
//! Exit codes: 0 success; 1 error; 2 usage; 3 the book is corrupt (or `verify` found a
//! problem); 4 the file is not a book or has an unsupported version.

#![deny(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::undocumented_unsafe_blocks
)]

use std::io::Write;
use std::path::PathBuf;
use std::process::ExitCode;

use clap::{Parser, Subcommand};

use bookdb::chess::{PosState, to_hex};
use bookdb::error::{ErrorKind, StoreError};

// Imports allocate many small buffers across threads; mimalloc handles that far better than
// glibc's malloc (measured in docs/PERFORMANCE.md).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;
use bookdb::ops::game::Game;
use bookdb::ops::othello::query as othello_query;
use bookdb::ops::{import, query, verify};

#[derive(Parser)]
#[command(
    name = "bookdb",
    version,
    about = "Persistent chess opening-book database"
)]
struct Cli {
    #[command(subcommand)]
    cmd: Cmd,
}

#[derive(Subcommand)]
enum Cmd {
    /// Count games from PGN files (plain, .zst, .gz, .bz2, or - for stdin) into a book.
    Import {
        #[arg(required = true)]
        inputs: Vec<String>,
        #[arg(long)]
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
        #[arg(long)]
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
    },
    /// Print every position as a JSON line, ascending key.
    Dump {
        #[arg(long)]
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
        #[arg(long)]
        book: PathBuf,
        #[arg(long)]
        json: bool,
    },
    /// Check the whole book; exit 0 only if every check passes.
    Verify {
        #[arg(long)]
        book: PathBuf,
        #[arg(long)]
        json: bool,
    },
    /// Write the book as a Polyglot .bin (weights by `polyglot make-book`'s rule) or JSON lines.
    Export {
        #[arg(long)]
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
        #[arg(long)]
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
        #[arg(long)]
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
        #[arg(long)]
        book: PathBuf,
    },
}

/// `--game`: what the inputs of an import are.
#[derive(Clone, Copy, Debug, PartialEq, Eq, clap::ValueEnum)]
enum GameArg {
    Chess,
    Othello,
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

/// `merge` and `compact`: a progress bar unless `--quiet` or `--json`.
fn rewrite_options(quiet: bool, json: bool) -> bookdb::ops::rewrite::RewriteOptions {
    bookdb::ops::rewrite::RewriteOptions {
        show_progress: !quiet && !json,
        ..Default::default()
    }
}

fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    match cli.cmd {
        Cmd::Import {
            inputs,
            book,
            max_ply,
            min_rating,
            dedupe,
            force,
            jobs,
            memory,
            block_bytes,
            delta_min,
            report,
            json,
            quiet,
            game,
            canonical,
        } => {
            let game = match (game, canonical) {
                (GameArg::Chess, true) => {
                    anyhow::bail!("--canonical applies to --game othello only")
                }
                (GameArg::Chess, false) => Game::Chess,
                (GameArg::Othello, canonical) => Game::Othello { canonical },
            };
            let opts = import::ImportOptions {
                game,
                rules: bookdb::ops::pgn::CountRules {
                    max_ply,
                    min_rating,
                },
                dedupe,
                force,
                jobs: jobs.unwrap_or(0),
                memory_mib: memory,
                show_progress: !quiet && !json,
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
        }
        Cmd::Probe {
            book,
            fen,
            board,
            moves,
            json,
        } => {
            let (game, b) = Game::open(&book)?;
            if let Game::Othello { canonical } = game {
                if fen.is_some() {
                    anyhow::bail!(
                        "{} is an Othello book: give the position with --board or --moves, not --fen",
                        book.display()
                    );
                }
                let pos = othello_query::resolve_position(board.as_deref(), moves.as_deref())?;
                let answer = othello_query::probe(&b, canonical, &pos)?;
                if json {
                    println!("{}", serde_json::to_string(&answer.json()?)?);
                } else {
                    print!("{}", answer.table()?);
                }
                return Ok(ExitCode::SUCCESS);
            }
            if board.is_some() {
                anyhow::bail!(
                    "--board is for Othello books; {} is a chess book (use --fen)",
                    book.display()
                );
            }
            let pos = query::resolve_position(fen.as_deref(), moves.as_deref())?;
            let answer = query::probe(&b, &pos)?;
            if json {
                println!("{}", serde_json::to_string(&answer.json()?)?);
            } else {
                print!("{}", answer.table()?);
            }
        }
        Cmd::Dump { book } => {
            let (game, b) = Game::open(&book)?;
            let out = std::io::stdout();
            let mut out = std::io::BufWriter::new(out.lock());
            for e in b.iter()? {
                if game.is_othello() {
                    serde_json::to_writer(&mut out, &othello_query::entry_json(&e?)?)?;
                } else {
                    serde_json::to_writer(&mut out, &query::entry_json(&e?, false)?)?;
                }
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
        Cmd::Pack { fen, game } => {
            if game != GameArg::Chess {
                anyhow::bail!(
                    "pack works on chess positions only (the Othello packing is docs/CONTRACT.md §7; `probe --json` shows an Othello position's key)"
                );
            }
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
                println!("game              {}", s.game);
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
                println!("generation        {}", s.generation);
                println!(
                    "delta segments    {} ({} entries)",
                    s.segments, s.segment_entries
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
            let opts = rewrite_options(quiet, json);
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
                ..rewrite_options(quiet, json)
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
        Cmd::Migrate { book } => {
            println!("{}", bookdb::ops::rewrite::migrate(&book)?);
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
    let cli = Cli::parse();
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
            match &library {
                Some((msg, _)) => eprintln!("bookdb: error: {msg}"),
                None => eprintln!("bookdb: error: {e:#}"),
            }
            let code = match library.map(|(_, kind)| kind) {
                Some(ErrorKind::Corrupt) => 3,
                Some(ErrorKind::NotABook) => 4,
                // Usage errors of the library (a bad FEN, an option value) keep exit code 1, as
                // before; 2 is clap's, for arguments it cannot parse.
                _ => 1,
            };
            ExitCode::from(code)
        }
    }
}

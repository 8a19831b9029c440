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

use clap::FromArgMatches;

use bookdb::chess::{PosState, to_hex};
use bookdb::error::{ErrorKind, StoreError};

// Imports allocate many small buffers across threads; mimalloc handles that far better than
// glibc's malloc (measured in docs/PERFORMANCE.md).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

mod cli;
use bookdb::ops::game::Game;
use bookdb::ops::othello::query as othello_query;
use bookdb::ops::{import, query, verify};
use cli::{Cli, Cmd, GameArg, Global, command};

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
            board,
            moves,
            json,
            fens,
        } => {
            let (game, b) = Game::open(&book)?;
            if let Some(list) = fens {
                if game.is_othello() {
                    anyhow::bail!(
                        "--fens is for chess books; {} is an Othello book",
                        book.display()
                    );
                }
                let text = if list.as_os_str() == "-" {
                    std::io::read_to_string(std::io::stdin())?
                } else {
                    std::fs::read_to_string(&list)
                        .map_err(|e| anyhow::anyhow!("reading {}: {e}", list.display()))?
                };
                return Ok(ExitCode::from(probe_fens(&b, &text)?));
            }
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
            let line = query::resolve_line(fen.as_deref(), moves.as_deref())?;
            let answer = query::probe_line(&b, &line)?;
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
        Cmd::Verify {
            book,
            json,
            since,
            no_redb_check,
            jobs,
        } => {
            let mut opts = verify::VerifyOptions {
                since,
                redb_check: !no_redb_check,
                ..Default::default()
            };
            if let Some(j) = jobs {
                opts.threads = j.max(1);
            }
            let r = verify::verify_with(&book, &opts)?;
            if json {
                println!("{}", serde_json::to_string(&r)?);
            } else {
                for p in &r.problems {
                    eprintln!("FAIL {p}");
                }
                print!("{}", verify::describe(&r));
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
        Cmd::Serve {
            book,
            listen,
            admin_token_file,
            max_connections,
            max_upload,
            refresh_ms,
            threads,
            cache_mib,
            head_timeout,
            json,
            quiet,
        } => {
            init_logging(quiet);
            bookdb::server::serve(bookdb::server::ServeOptions {
                book,
                listen,
                admin_token_file,
                max_connections: max_connections as usize,
                max_upload: max_upload.saturating_mul(1 << 20),
                refresh: std::time::Duration::from_millis(refresh_ms),
                threads: threads.unwrap_or(0),
                block_cache_bytes: usize::try_from(cache_mib << 20).unwrap_or(usize::MAX),
                head_timeout: std::time::Duration::from_secs(head_timeout),
                json,
                ..Default::default()
            })?;
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

/// The server's log on stderr: `BOOKDB_LOG` (a tracing filter such as `debug` or
/// `bookdb=debug,tower_http=debug`) or, by default, `info` (`warn` with --quiet).
fn init_logging(quiet: bool) {
    let default = if quiet { "warn" } else { "info" };
    let filter = tracing_subscriber::EnvFilter::try_from_env("BOOKDB_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .try_init();
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
            // A full disk, a read-only file system, permissions, the open-file limit: what to do.
            let hint = e
                .chain()
                .find_map(|c| {
                    c.downcast_ref::<bookdb::Error>()
                        .and_then(bookdb::Error::os_error)
                        .or_else(|| {
                            c.downcast_ref::<StoreError>()
                                .and_then(StoreError::os_error)
                        })
                        .or_else(|| c.downcast_ref::<std::io::Error>())
                })
                .and_then(bookdb::store::error::system_fault_hint);
            let kind = library.as_ref().map(|(_, kind)| *kind);
            let message = match library {
                Some((msg, _)) => msg,
                None => format!("{e:#}"),
            };
            let code = exit_code(kind);
            if json {
                let mut j = serde_json::json!({ "error": {
                    "kind": kind.map_or("error", ErrorKind::as_str),
                    "message": message,
                    "exit_code": code,
                }});
                if let Some(h) = hint {
                    j["error"]["hint"] = h.into();
                }
                eprintln!("{j}");
            } else {
                eprintln!("bookdb: error: {message}");
                if let Some(h) = hint {
                    eprintln!("bookdb: {h}");
                }
            }
            ExitCode::from(code)
        }
    }
}

/// `probe --fens`: one JSON line per FEN of `text`, an error object for a position that cannot
/// be answered; the exit code of the worst error (0 if none).
fn probe_fens(b: &bookdb::store::Book, text: &str) -> anyhow::Result<u8> {
    let out = std::io::stdout();
    let mut out = std::io::BufWriter::new(out.lock());
    let mut worst = 0u8;
    for fen in text.lines().map(str::trim).filter(|l| !l.is_empty()) {
        let answer = query::resolve_position(Some(fen), None)
            .and_then(|p| query::probe(b, &p))
            .and_then(|a| a.json());
        match answer {
            Ok(j) => serde_json::to_writer(&mut out, &j)?,
            Err(e) => {
                let code = exit_code(Some(e.kind()));
                // Corruption (3) outranks the others (1, 4, 75).
                if worst != 3 && (worst == 0 || code == 3) {
                    worst = code;
                }
                serde_json::to_writer(
                    &mut out,
                    &serde_json::json!({ "fen": fen, "error": {
                        "kind": e.kind().as_str(),
                        "message": e.to_string(),
                        "exit_code": code,
                    }}),
                )?;
            }
        }
        out.write_all(b"\n")?;
    }
    out.flush()?;
    Ok(worst)
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

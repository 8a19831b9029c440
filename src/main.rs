//! The `bookdb` binary: sets up the process, parses the command line (`cli/`, one file per
//! command), runs the command and maps its outcome to an exit code and an error message.
//!
//! Exit codes (README.md): 0 success; 1 error; 2 usage (arguments clap cannot parse); 3 the
//! book is corrupt (or `verify` found a problem); 4 the file is not a book or has an
//! unsupported version; 75 busy (another process is writing the book; EX_TEMPFAIL). A closed
//! stdout (`bookdb dump | head -1`) ends a command quietly with 0.

#![deny(
    clippy::unwrap_used,
    clippy::expect_used,
    clippy::undocumented_unsafe_blocks,
    clippy::print_stdout
)]

use std::process::ExitCode;

use clap::FromArgMatches;

use bookdb::error::{ErrorKind, StoreError};

// Imports allocate many small buffers across threads; mimalloc handles that far better than
// glibc's malloc (measured in docs/PERFORMANCE.md).
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

mod cli;

/// mimalloc's `mi_option_purge_delay` (index 15 of `mi_option_e` in
/// c_src/mimalloc/v3/include/mimalloc.h of libmimalloc-sys 0.1.49, pinned in Cargo.lock; the
/// crate exports no constant for it).
const MI_OPTION_PURGE_DELAY: libmimalloc_sys::mi_option_t = 15;

fn main() -> ExitCode {
    tune_process();
    install_panic_hook();
    let matches = match cli::command().try_get_matches() {
        Ok(m) => m,
        Err(e) => return usage_error(&e),
    };
    let cmd = match cli::Cli::from_arg_matches(&matches) {
        Ok(c) => c.cmd,
        Err(e) => return usage_error(&e),
    };
    let json = cmd.json();
    run(cmd, json)
}

/// Memory behaviour of the allocator and the kernel for long imports.
fn tune_process() {
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
    // A write past the file-size limit (`ulimit -f`, systemd `LimitFSIZE=`) fails with EFBIG,
    // reported with what to do, instead of SIGXFSZ killing the process without a word.
    // SAFETY: setting a signal's disposition to SIG_IGN installs no handler code.
    unsafe {
        libc::signal(libc::SIGXFSZ, libc::SIG_IGN);
    }
}

/// The first thread the system refused to start, as the standard library's panic names the
/// cause (`Os { code: 11, kind: WouldBlock, message: "…" }`).
static THREAD_REFUSED: std::sync::OnceLock<String> = std::sync::OnceLock::new();

/// redb panics on some damaged files; the library catches those (`store::book::shield`) and
/// reports a corrupt book, so they stay quiet here. A thread the system would not start (the
/// standard library panics then) is the user's limit, not a bug: noted quietly, the panic
/// unwinds as any other (a server's task answers 500 and the server goes on), and a command
/// it ends says so ([`thread_refused`], exit code 1). Any other panic is a bug: it is reported
/// as such, then by the default hook (so RUST_BACKTRACE works).
fn install_panic_hook() {
    let default_hook = std::panic::take_hook();
    std::panic::set_hook(Box::new(move |info| {
        if bookdb::store::book::in_shield() && std::env::var_os("BOOKDB_DEBUG").is_none() {
            return;
        }
        let text = info
            .payload()
            .downcast_ref::<String>()
            .map(String::as_str)
            .or_else(|| info.payload().downcast_ref::<&str>().copied());
        if let Some(cause) = text.and_then(|t| t.strip_prefix("failed to spawn thread: ")) {
            let _ = THREAD_REFUSED.set(cause.to_string());
            return;
        }
        bookdb::stderr_line!("bookdb: internal error (please report it with the lines below)");
        default_hook(info);
    }));
}

/// Runs the command; a panic that reaches here ends it with exit code 1 when it was a thread
/// the system refused ([`thread_refused`]), else 101 (the hook has reported the bug). Nothing
/// written is lost that a killed process would keep: an import resumes, a book keeps its last
/// publication.
fn run(cmd: cli::Cmd, json: bool) -> ExitCode {
    match std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| cmd.run())) {
        Ok(Ok(code)) => code,
        Ok(Err(e)) if e.is::<cli::output::StdoutClosed>() => ExitCode::SUCCESS,
        Ok(Err(e)) => report(&e, json),
        Err(_) => match THREAD_REFUSED.get() {
            Some(cause) => thread_refused(cause, json),
            None => ExitCode::from(101),
        },
    }
}

/// The error of a command that could not start a thread (`cause`: the system's error as the
/// standard library debug-prints it).
fn thread_refused(cause: &str, json: bool) -> ExitCode {
    let code = cause
        .split_once("code: ")
        .and_then(|(_, rest)| rest.split(|c: char| !c.is_ascii_digit()).next())
        .and_then(|d| d.parse::<i32>().ok());
    let what = match code {
        Some(c) => std::io::Error::from_raw_os_error(c).to_string(),
        None => cause.to_string(),
    };
    let message = if code == Some(libc::EAGAIN) {
        format!(
            "the system refused to start a thread: {what}; the user's or the system's limit on \
             processes and threads is reached (ulimit -u, a cgroup's pids.max); raise it or stop \
             other processes of this user, then run the command again (an interrupted import \
             resumes where it stopped)"
        )
    } else {
        format!(
            "the system refused to start a thread: {what}; free memory or raise the limits on \
             processes and threads (ulimit -u, a cgroup's pids.max), then run the command again \
             (an interrupted import resumes where it stopped)"
        )
    };
    if json {
        let j = serde_json::json!({ "error": {
            "kind": "error",
            "message": message,
            "exit_code": 1,
        }});
        bookdb::stderr_line!("{j}");
    } else {
        bookdb::stderr_line!("bookdb: error: {message}");
    }
    ExitCode::from(1)
}

/// Arguments clap cannot parse (exit code 2), or `--help`/`--version` (0). With `--json`
/// among the arguments the error is a JSON object on stderr, as every other error.
fn usage_error(e: &clap::Error) -> ExitCode {
    use clap::error::ErrorKind as Clap;
    let wants_json = std::env::args_os().skip(1).any(|a| a == "--json");
    if matches!(e.kind(), Clap::DisplayHelp | Clap::DisplayVersion) || !wants_json {
        e.exit();
    }
    let message = e.render().to_string();
    // The error and its detail (what is missing, what was found), up to clap's usage line.
    let first = message
        .lines()
        .take_while(|l| !l.starts_with("Usage:") && !l.starts_with("For more information"))
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .collect::<Vec<_>>()
        .join(" ");
    let first = first.trim_start_matches("error: ");
    let j = serde_json::json!({ "error": {
        "kind": "usage",
        "message": first,
        "exit_code": 2,
    }});
    bookdb::stderr_line!("{j}");
    ExitCode::from(2)
}

/// Prints a failed command's error (JSON with `--json`) and returns its exit code.
fn report(e: &anyhow::Error, json: bool) -> ExitCode {
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
    let hint = system_fault_hint(e);
    let code = cli::output::exit_code(kind);
    if json {
        let mut j = serde_json::json!({ "error": {
            "kind": kind.map_or("error", ErrorKind::as_str),
            "message": message,
            "exit_code": code,
        }});
        if let Some(h) = hint {
            j["error"]["hint"] = h.into();
        }
        bookdb::stderr_line!("{j}");
    } else {
        bookdb::stderr_line!("bookdb: error: {message}");
        if let Some(h) = hint {
            bookdb::stderr_line!("bookdb: {h}");
        }
    }
    ExitCode::from(code)
}

/// What to do when a system fault caused `e` (a full disk, a read-only file system,
/// permissions, the open-file limit).
fn system_fault_hint(e: &anyhow::Error) -> Option<&'static str> {
    e.chain().find_map(|c| {
        c.downcast_ref::<bookdb::Error>()
            .and_then(bookdb::Error::hint)
            .or_else(|| {
                c.downcast_ref::<StoreError>()
                    .and_then(StoreError::os_error)
                    .or_else(|| c.downcast_ref::<std::io::Error>())
                    .and_then(bookdb::store::error::system_fault_hint)
            })
    })
}

//! The command line's contract as issue 24 fixed it: a closed stdout ends a command quietly
//! with 0; errors name the book's game and the caller's words (CLI flags on the command line,
//! parameters over HTTP); `--wait` only on writers, `--progress` only on long jobs, value
//! enums completed; usage errors as JSON under `--json`; a man page per command.

mod common;

use std::io::{BufRead, BufReader};
use std::path::{Path, PathBuf};
use std::process::Stdio;

use common::server::Server;
use common::{bookdb, s, sample_pgn};

fn chess_book(dir: &Path) -> PathBuf {
    let book = dir.join("chess.book");
    bookdb(["import", s(&sample_pgn()), "--book", s(&book), "--quiet"]).ok();
    book
}

fn othello_book(dir: &Path) -> PathBuf {
    let txt = dir.join("games.txt");
    std::fs::write(
        &txt,
        "f5d6c3d3c4f4f6f3e6e7\nf5f6e6f4e3c5g5g3\nf5d6c4d3c3f4\n",
    )
    .unwrap();
    let book = dir.join("othello.book");
    bookdb([
        "import",
        "--game",
        "othello",
        s(&txt),
        "--book",
        s(&book),
        "--quiet",
    ])
    .ok();
    book
}

/// Whether an HTTP error speaks of command-line flags.
fn flag_named(e: &str) -> bool {
    ["--fen", "--board", "--moves", "--fens"]
        .iter()
        .any(|f| e.contains(f))
}

/// Runs bookdb with stdout piped, reads one line, closes the pipe and returns the exit code
/// and stderr.
fn first_line_then_close(args: &[&str]) -> (Option<i32>, String, String) {
    let mut child = bookdb(args)
        .command()
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut line = String::new();
    {
        let mut out = BufReader::new(child.stdout.take().unwrap());
        out.read_line(&mut line).unwrap();
    } // the read end is closed here
    let out = child.wait_with_output().unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
        line,
    )
}

#[test]
fn a_closed_stdout_ends_a_command_quietly_with_0() {
    let tmp = tempfile::tempdir().unwrap();
    let book = chess_book(tmp.path());
    // Enough output to fill the pipe's buffer several times over.
    let dump = bookdb(["dump", "--book", s(&book)]).ok();
    assert!(dump.len() > 1 << 18, "{} bytes", dump.len());
    let fens: String = dump
        .lines()
        .map(|l| {
            serde_json::from_str::<serde_json::Value>(l).unwrap()["fen"]
                .as_str()
                .unwrap()
                .to_string()
                + "\n"
        })
        .collect();
    let list = tmp.path().join("fens.txt");
    std::fs::write(&list, fens).unwrap();
    for args in [
        vec!["dump", "--book", s(&book)],
        vec!["probe", "--book", s(&book), "--fens", s(&list)],
        vec![
            "export",
            "--book",
            s(&book),
            "--format",
            "jsonl",
            "--out",
            "-",
            "--json",
        ],
    ] {
        let (code, stderr, line) = first_line_then_close(&args);
        assert!(line.starts_with('{'), "{args:?}: {line}");
        assert_eq!(code, Some(0), "{args:?}: {stderr}");
        assert!(
            !stderr.contains("Broken pipe") && !stderr.contains("error"),
            "{args:?}: {stderr}"
        );
        if args[0] == "export" {
            // The summary says what went out before the reader left: whole lines, at least
            // the one it read.
            let v: serde_json::Value = serde_json::from_str(stderr.trim()).unwrap();
            assert_eq!(
                (&v["format"], &v["reader_closed"]),
                (&"jsonl".into(), &true.into())
            );
            let (keys, bytes) = (v["keys"].as_u64().unwrap(), v["bytes"].as_u64().unwrap());
            assert!(keys >= 1 && bytes > keys, "{stderr}");
        }
    }
}

#[test]
fn a_completion_script_that_cannot_be_written_is_an_error_not_a_crash() {
    let Ok(full) = std::fs::OpenOptions::new().write(true).open("/dev/full") else {
        eprintln!("SKIP: no /dev/full here");
        return;
    };
    let out = std::process::Command::new(common::bin())
        .args(["completions", "bash"])
        .stdout(full)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert_ne!(out.status.code(), Some(101), "it panicked: {err}");
    assert!(!err.contains("panicked"), "{err}");
}

#[test]
fn a_closed_stderr_changes_no_exit_code() {
    // `bookdb … 2>&1 | head -1`: the reader of stderr may leave after the first line. Writing
    // a message then must not crash the command (eprintln! panics, and the panic's own message
    // aborts it: exit 134).
    let tmp = tempfile::tempdir().unwrap();
    let pgn = tmp.path().join("skips.pgn");
    let mut text = std::fs::read_to_string(sample_pgn()).unwrap();
    for i in 0..40 {
        text.push_str(&format!("\n[Event \"no moves {i}\"]\n\n*\n"));
    }
    std::fs::write(&pgn, text).unwrap();
    let book = tmp.path().join("b.book");
    let closed = || {
        let (reader, writer) = std::io::pipe().unwrap();
        drop(reader);
        writer
    };
    let run = |args: &[&str]| {
        std::process::Command::new(common::bin())
            .args(args)
            .stdout(Stdio::piped())
            .stderr(closed())
            .output()
            .unwrap()
    };
    // 40 skipped games are reported on stderr; the import succeeds all the same.
    let o = run(&["import", s(&pgn), "--book", s(&book)]);
    assert_eq!(o.status.code(), Some(0));
    assert!(String::from_utf8_lossy(&o.stdout).contains("40 skipped"));
    bookdb(["verify", "--book", s(&book)]).ok();
    // An error is still its exit code.
    let o = run(&["probe", "--book", s(&tmp.path().join("missing.book"))]);
    assert_eq!(o.status.code(), Some(1));
}

#[test]
fn othello_errors_are_othello_errors_in_the_callers_words() {
    let tmp = tempfile::tempdir().unwrap();
    let book = othello_book(tmp.path());
    for (args, want) in [
        (vec!["--board", "zzz"], "--board: not an Othello board"),
        (
            vec!["--moves", "f5 f5"],
            "--moves: move 2 (f5) cannot be played in the Othello position",
        ),
        (
            vec!["--fen", "8/8/8/8/8/8/8/8 w - -"],
            "--fen is for chess books; this is an Othello book",
        ),
    ] {
        let mut all = vec!["probe", "--book", s(&book)];
        all.extend(&args);
        let r = bookdb(&all).output();
        let err = String::from_utf8_lossy(&r.stderr);
        assert_eq!(r.status.code(), Some(1), "{args:?}: {err}");
        assert!(err.contains(want), "{args:?}: {err}");
        assert!(!err.contains("chess position"), "{args:?}: {err}");
    }
    let srv = Server::start(&book, &[]);
    for (path, want) in [
        (
            "/v1/position?moves=f5,f5",
            "moves: move 2 (f5) cannot be played in the Othello position",
        ),
        ("/v1/position?play=f5,f5", "play: move 2 (f5)"),
        ("/v1/position?board=zzz", "board: not an Othello board"),
        (
            "/v1/position?fen=x",
            "fen is for chess books; this is an Othello book: give the position with board and/or moves",
        ),
    ] {
        let r = srv.get(path);
        assert_eq!(r.status, 400, "{path}: {}", r.body);
        let e = r.error();
        assert!(e.contains(want), "{path}: {e}");
        assert!(
            !flag_named(&e) && !e.contains("chess position"),
            "{path}: {e}"
        );
    }
}

#[test]
fn chess_errors_over_http_name_parameters_not_flags() {
    let tmp = tempfile::tempdir().unwrap();
    let book = chess_book(tmp.path());
    let r = bookdb(["probe", "--book", s(&book), "--moves", "e4 e4"]).output();
    let err = String::from_utf8_lossy(&r.stderr);
    assert!(
        err.contains("--moves: move 2 (e4) cannot be played in the chess position"),
        "{err}"
    );
    assert!(
        String::from_utf8_lossy(
            &bookdb(["probe", "--book", s(&book), "--board", "x"])
                .output()
                .stderr
        )
        .contains("--board is for Othello books; this is a chess book")
    );
    let srv = Server::start(&book, &[]);
    for (path, want) in [
        (
            "/v1/position?moves=e4,e4",
            "moves: move 2 (e4) cannot be played in the chess position",
        ),
        (
            "/masters?play=e2e4,e2e4",
            "play: move 2 (e2e4) cannot be played in the chess position",
        ),
        (
            "/v1/position?board=x",
            "board is for Othello books; this is a chess book: give the position with fen and/or moves",
        ),
        ("/masters?fen=nonsense", "fen: invalid FEN"),
    ] {
        let r = srv.get(path);
        assert_eq!(r.status, 400, "{path}: {}", r.body);
        let e = r.error();
        assert!(e.contains(want), "{path}: {e}");
        assert!(!flag_named(&e), "{path}: {e}");
    }
}

#[test]
fn wait_is_for_writers_and_progress_for_long_jobs() {
    let tmp = tempfile::tempdir().unwrap();
    let book = chess_book(tmp.path());
    for args in [
        vec!["probe", "--book", s(&book), "--wait"],
        vec!["dump", "--book", s(&book), "--wait=1"],
        vec!["stats", "--book", s(&book), "--progress", "plain"],
        vec!["verify", "--book", s(&book), "--wait"],
        vec![
            "export",
            "--book",
            s(&book),
            "--format",
            "bin",
            "--out",
            "x",
            "--progress",
            "bar",
        ],
    ] {
        let r = bookdb(&args).output();
        assert_eq!(r.status.code(), Some(2), "{args:?} was accepted");
    }
    for args in [
        vec![
            "compact",
            "--book",
            s(&book),
            "--wait=5",
            "--progress",
            "none",
            "--quiet",
        ],
        vec![
            "migrate",
            "--book",
            s(&book),
            "--wait",
            "--progress",
            "plain",
        ],
    ] {
        bookdb(&args).ok();
    }
    let bash = bookdb(["completions", "bash"]).ok();
    assert!(
        bash.contains("auto bar plain none"),
        "--progress values not completed"
    );
    assert!(
        bash.contains("polyglot jsonl"),
        "--format values not completed"
    );
}

#[test]
fn usage_errors_under_json_are_json_with_exit_code_2() {
    let r = bookdb([
        "import",
        "x.pgn",
        "--book",
        "b.book",
        "--max-ply",
        "many",
        "--json",
    ])
    .output();
    assert_eq!(r.status.code(), Some(2));
    let line = String::from_utf8_lossy(&r.stderr);
    let j: serde_json::Value =
        serde_json::from_str(line.trim()).unwrap_or_else(|e| panic!("{e}: {line}"));
    assert_eq!(j["error"]["kind"], "usage");
    assert_eq!(j["error"]["exit_code"], 2);
    assert!(
        j["error"]["message"]
            .as_str()
            .unwrap()
            .contains("--max-ply"),
        "{j}"
    );
    // A message whose detail is on clap's next lines keeps it: which argument is missing.
    let mut probe = bookdb(["probe", "--json"]).command();
    let r = probe.env_remove("BOOKDB_BOOK").output().unwrap();
    assert_eq!(r.status.code(), Some(2));
    let line = String::from_utf8_lossy(&r.stderr);
    let j: serde_json::Value =
        serde_json::from_str(line.trim()).unwrap_or_else(|e| panic!("{e}: {line}"));
    let message = j["error"]["message"].as_str().unwrap();
    assert!(
        message.contains("not provided") && message.contains("--book"),
        "{j}"
    );
    assert!(!message.contains("Usage:"), "{j}");
    // Without --json, clap's own text.
    let r = bookdb(["import", "x.pgn", "--book", "b.book", "--max-ply", "many"]).output();
    assert_eq!(r.status.code(), Some(2));
    assert!(String::from_utf8_lossy(&r.stderr).starts_with("error:"));
}

#[test]
fn man_pages_exist_for_every_command_they_name() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().join("man");
    bookdb(["man", "--dir", s(&dir)]).ok();
    let main = std::fs::read_to_string(dir.join("bookdb.1")).unwrap();
    assert_eq!(
        main,
        bookdb(["man"]).ok(),
        "man and man --dir disagree on bookdb.1"
    );
    let mut named = 0;
    for cmd in [
        "import",
        "probe",
        "dump",
        "pack",
        "stats",
        "verify",
        "export",
        "import-polyglot",
        "merge",
        "compact",
        "migrate",
        "serve",
        "completions",
        "man",
    ] {
        let page = std::fs::read_to_string(dir.join(format!("bookdb-{cmd}.1")))
            .unwrap_or_else(|e| panic!("bookdb-{cmd}.1: {e}"));
        for section in [
            ".SH NAME",
            ".SH SYNOPSIS",
            "EXIT STATUS",
            ".SH ENVIRONMENT",
            "BOOKDB_BOOK",
        ] {
            assert!(page.contains(section), "bookdb-{cmd}.1 has no {section}");
        }
        if main.contains(&format!("bookdb\\-{cmd}(1)")) {
            named += 1;
        }
    }
    assert!(named >= 10, "bookdb.1 names {named} command pages");
    let import = std::fs::read_to_string(dir.join("bookdb-import.1")).unwrap();
    assert!(
        import.contains("max\\-ply") && import.contains("wait"),
        "{import}"
    );
}

//! Inputs that are not regular files (issue 25, item 1): a pipe given by name (`<(cat a.pgn)`,
//! `/dev/stdin`), a FIFO, a character device. Each is read once, fingerprinted by the bytes
//! read (as `-` is), never identified by its path, size or times; one that never ends or never
//! delivers a byte does not hold the book's writer lock forever. And a repeated stdin import
//! is "already imported", exit 0, as a repeated file import is (item 14).

mod common;

use std::io::Write;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

use common::{bin, bookdb, dump, s, sample_pgn};

/// Games in tests/data/sample.pgn.
const SAMPLE_GAMES: u64 = 200;

/// Runs `cmd`, failing the test (not hanging it) if it has not ended after `limit`: the
/// defects these tests reproduce made bookdb wait forever.
fn run_within(mut cmd: Command, limit: Duration) -> Output {
    let mut child = cmd
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn");
    let t = Instant::now();
    while child.try_wait().expect("wait").is_none() {
        if t.elapsed() > limit {
            let _ = child.kill();
            let out = child.wait_with_output().expect("wait");
            panic!(
                "{cmd:?} still running after {limit:?} (killed): {}",
                String::from_utf8_lossy(&out.stderr)
            );
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    child.wait_with_output().expect("output")
}

/// `bash -c script` with `$BOOKDB` set to the binary.
fn bash(script: &str) -> Command {
    let mut c = Command::new("bash");
    c.args(["-c", script]).env("BOOKDB", bin());
    c
}

fn summary(out: &Output) -> serde_json::Value {
    assert!(
        out.status.success(),
        "failed ({:?}): {}",
        out.status.code(),
        String::from_utf8_lossy(&out.stderr)
    );
    serde_json::from_slice(&out.stdout).expect("import --json")
}

/// The book a plain import of the sample makes, to compare against.
fn reference(dir: &Path) -> String {
    let book = dir.join("reference.book");
    bookdb(["import", s(&sample_pgn()), "--book", s(&book), "--json"]).ok();
    dump(&book)
}

/// After an import from a pipe: the games are in the book, and a later import of the same
/// bytes as a file is "already imported" (its games were counted, under their fingerprint).
fn assert_counted_once(dir: &Path, book: &Path, first: &Output) {
    let j = summary(first);
    assert_eq!(j["games_read"], SAMPLE_GAMES, "{j}");
    assert_eq!(j["games_imported"], SAMPLE_GAMES, "{j}");
    let again = bookdb(["import", s(&sample_pgn()), "--book", s(book), "--json"]).json();
    assert_eq!(again["already_imported"][0], s(&sample_pgn()), "{again}");
    assert_eq!(again["games_read"], 0);
    assert_eq!(dump(book), reference(dir));
}

#[test]
fn process_substitution_input_counts_its_games() {
    let dir = tempfile::tempdir().unwrap();
    let book = dir.path().join("b.book");
    let out = run_within(
        bash(&format!(
            "\"$BOOKDB\" import <(cat '{}') --book '{}' --json",
            s(&sample_pgn()),
            s(&book)
        )),
        Duration::from_secs(120),
    );
    assert_counted_once(dir.path(), &book, &out);
}

#[test]
fn dev_stdin_pipe_input_counts_its_games() {
    let dir = tempfile::tempdir().unwrap();
    let book = dir.path().join("b.book");
    let out = run_within(
        bash(&format!(
            "cat '{}' | \"$BOOKDB\" import /dev/stdin --book '{}' --json",
            s(&sample_pgn()),
            s(&book)
        )),
        Duration::from_secs(120),
    );
    assert_counted_once(dir.path(), &book, &out);
}

/// A FIFO: read once, recorded without a file identity (path, inode, size, mtime), so the
/// same FIFO fed the same bytes again is recognised by their fingerprint, and fed other bytes
/// is read again.
#[test]
fn fifo_input_is_read_once_and_known_by_its_bytes() {
    let dir = tempfile::tempdir().unwrap();
    let book = dir.path().join("b.book");
    let fifo = dir.path().join("games.fifo");
    assert!(
        Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success()
    );
    let feed = |bytes: Vec<u8>| {
        let fifo = fifo.clone();
        std::thread::spawn(move || {
            let mut f = std::fs::OpenOptions::new().write(true).open(fifo).unwrap();
            let _ = f.write_all(&bytes);
        })
    };
    let text = std::fs::read(sample_pgn()).unwrap();
    let w = feed(text.clone());
    let mut cmd = Command::new(bin());
    cmd.args(["import", s(&fifo), "--book", s(&book), "--json"]);
    let first = run_within(cmd, Duration::from_secs(120));
    w.join().unwrap();
    let j = summary(&first);
    assert_eq!(j["games_imported"], SAMPLE_GAMES, "{j}");
    // The same bytes again through the same FIFO: already imported, exit 0.
    let w = feed(text);
    let mut cmd = Command::new(bin());
    cmd.args(["import", s(&fifo), "--book", s(&book), "--json"]);
    let again = summary(&run_within(cmd, Duration::from_secs(120)));
    w.join().unwrap();
    assert_eq!(again["already_imported"][0], s(&fifo), "{again}");
    assert_eq!(again["book"]["games"], SAMPLE_GAMES);
    assert_eq!(dump(&book), reference(dir.path()));
}

/// A FIFO nobody opens for writing, and one whose writer never closes it: the import gives
/// up after `BOOKDB_INPUT_IDLE_SECS` without a byte, with an error that says so, and the
/// writer lock is free at once for the next writer (no `--wait`).
#[test]
fn idle_fifo_does_not_hold_the_writer_lock_forever() {
    let dir = tempfile::tempdir().unwrap();
    let book = dir.path().join("b.book");
    let fifo = dir.path().join("idle.fifo");
    assert!(
        Command::new("mkfifo")
            .arg(&fifo)
            .status()
            .unwrap()
            .success()
    );
    let import_fifo = || {
        let mut cmd = Command::new(bin());
        cmd.args(["import", s(&fifo), "--book", s(&book)])
            .env("BOOKDB_INPUT_IDLE_SECS", "1");
        run_within(cmd, Duration::from_secs(60))
    };
    // No writer at all.
    let out = import_fifo();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("no data for"), "{err}");
    // A writer that sends half a game and keeps the FIFO open.
    let (tx, rx) = std::sync::mpsc::channel::<()>();
    let writer = {
        let fifo = fifo.clone();
        std::thread::spawn(move || {
            let mut f = std::fs::OpenOptions::new().write(true).open(fifo).unwrap();
            let _ = f.write_all(b"[Event \"open\"]\n[White \"a\"]\n\n1. e4 e5 2. Nf3");
            let _ = rx.recv();
        })
    };
    let out = import_fifo();
    tx.send(()).unwrap();
    writer.join().unwrap();
    assert_eq!(out.status.code(), Some(1));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("no data for"), "{err}");
    // Nothing was counted or recorded, and the lock is free.
    assert!(!book.exists() || bookdb(["stats", "--book", s(&book), "--json"]).json()["games"] == 0);
    let j = bookdb(["import", s(&sample_pgn()), "--book", s(&book), "--json"]).json();
    assert_eq!(j["games_imported"], SAMPLE_GAMES, "{j}");
}

/// A character device that never ends (`/dev/zero`, `/dev/urandom`) is refused as not PGN
/// after its first bytes, and never read to its (absent) end to be fingerprinted.
#[test]
fn endless_character_device_is_refused_not_read_forever() {
    let dir = tempfile::tempdir().unwrap();
    let book = dir.path().join("b.book");
    for dev in ["/dev/zero", "/dev/urandom"] {
        let mut cmd = Command::new(bin());
        cmd.args(["import", dev, "--book", s(&book)]);
        let out = run_within(cmd, Duration::from_secs(60));
        assert_eq!(out.status.code(), Some(1), "{dev}");
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(err.contains("not PGN text"), "{dev}: {err}");
    }
    assert!(!book.exists() || bookdb(["stats", "--book", s(&book), "--json"]).json()["games"] == 0);
}

fn import_stdin(book: &Path, extra: &[&str]) -> Output {
    let mut cmd = Command::new(bin());
    cmd.args(["import", "-"])
        .args(extra)
        .args(["--book", s(book), "--json"])
        .stdin(std::fs::File::open(sample_pgn()).unwrap());
    run_within(cmd, Duration::from_secs(120))
}

/// A repeated stdin import is "already imported" with exit 0, as a repeated file import is;
/// with other inputs beside it (whose counts cannot be told from its own) it is refused and
/// nothing changes.
#[test]
fn repeated_stdin_import_exits_0_like_a_repeated_file_import() {
    let dir = tempfile::tempdir().unwrap();
    let book = dir.path().join("b.book");
    let first = summary(&import_stdin(&book, &[]));
    assert_eq!(first["games_imported"], SAMPLE_GAMES);
    let before = dump(&book);
    let again = import_stdin(&book, &[]);
    let j = summary(&again);
    assert_eq!(j["already_imported"][0], "<stdin>", "{j}");
    assert_eq!(j["games_imported"], 0, "{j}");
    assert_eq!(j["book"]["games"], SAMPLE_GAMES);
    assert_eq!(dump(&book), before);
    // Beside another (new) input: refused, the book unchanged.
    let other = dir.path().join("other.pgn");
    std::fs::write(&other, "[Event \"x\"]\n\n1. d4 d5 1-0\n").unwrap();
    let mixed = import_stdin(&book, &[s(&other)]);
    assert_eq!(mixed.status.code(), Some(1));
    let err = String::from_utf8_lossy(&mixed.stderr);
    assert!(err.contains("already imported"), "{err}");
    assert_eq!(dump(&book), before);
    // The other input alone is imported.
    let j = bookdb(["import", s(&other), "--book", s(&book), "--json"]).json();
    assert_eq!(j["games_imported"], 1, "{j}");
}

/// Runs `bookdb import - --book BOOK [extra]` with `stdin` as its standard input.
fn import_from(book: &Path, stdin: &[u8], extra: &[&str]) -> Output {
    let mut child = Command::new(bin())
        .args(["import", "-", "--book", s(book)])
        .args(extra)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(stdin).unwrap();
    child.wait_with_output().unwrap()
}

#[test]
fn a_refused_stdin_import_leaves_no_staging_area() {
    // A stream is read once, so its import never resumes: what it staged before it was
    // refused is removed, as for a refused file.
    let tmp = tempfile::tempdir().unwrap();
    let book = tmp.path().join("b.book");
    bookdb(["import", s(&sample_pgn()), "--book", s(&book)]).ok();
    let o = import_from(&book, &[0u8; 4096], &[]);
    assert_eq!(
        o.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&o.stderr)
    );
    assert!(String::from_utf8_lossy(&o.stderr).contains("not PGN"));
    assert!(!tmp.path().join("b.book.staging").exists());
    bookdb(["verify", "--book", s(&book)]).ok();
}

#[test]
fn an_empty_stdin_is_counted_as_nothing_and_said() {
    // What `zstd -dc missing.zst | bookdb import -` gives: not an error (an empty file in a
    // nightly set is not one either), but said on stderr and in the JSON summary.
    let tmp = tempfile::tempdir().unwrap();
    let book = tmp.path().join("b.book");
    bookdb(["import", s(&sample_pgn()), "--book", s(&book)]).ok();
    let before = dump(&book);
    let o = import_from(&book, b"", &[]);
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(0), "{err}");
    assert!(err.contains("warning: <stdin> held no game"), "{err}");
    assert_eq!(dump(&book), before);
    let o = import_from(&book, b"\n\n", &["--json", "--force"]);
    let v = summary(&o);
    assert_eq!(v["empty_inputs"], serde_json::json!(["<stdin>"]), "{v}");
    // An input that held games is not named.
    let o = Command::new(bin())
        .args([
            "import",
            s(&sample_pgn()),
            "--force",
            "--json",
            "--book",
            s(&book),
        ])
        .output()
        .unwrap();
    assert!(summary(&o).get("empty_inputs").is_none());
}

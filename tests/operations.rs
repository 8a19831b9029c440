//! Operations: inputs that are not PGN, rewrites that keep the book's mode and owner, the
//! writer lock (`--wait`, exit code 75, `--json` errors), progress off a terminal, unchanged
//! inputs recognised without reading, `--version`, completions, the man page, `BOOKDB_BOOK`,
//! and the examples of docs/OPERATIONS.md.

mod common;
use common::*;

use std::io::Write;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

fn sample_book(dir: &Path) -> PathBuf {
    let book = dir.join("s.book");
    Bookdb::import(&[&sample_pgn()], &book).arg("--quiet").ok();
    book
}

fn games(book: &Path) -> u64 {
    stats(book)["games"].as_u64().unwrap()
}

fn xz(bytes: &[u8]) -> Vec<u8> {
    let mut e = liblzma::write::XzEncoder::new(Vec::new(), 6);
    e.write_all(bytes).unwrap();
    e.finish().unwrap()
}

// ---- 1. inputs ----------------------------------------------------------------------------

#[test]
fn xz_inputs_import_like_plain_text() {
    let dir = tempfile::tempdir().unwrap();
    let text = std::fs::read(sample_pgn()).unwrap();
    let xzp = dir.path().join("games.pgn.xz");
    std::fs::write(&xzp, xz(&text)).unwrap();
    let (a, b) = (dir.path().join("a.book"), dir.path().join("b.book"));
    Bookdb::import(&[&sample_pgn()], &a).arg("--quiet").ok();
    Bookdb::import(&[&xzp], &b).arg("--quiet").ok();
    assert_eq!(dump(&a), dump(&b));
    assert_eq!(games(&a), games(&b));
}

/// Random bytes, a PGN with a NUL byte past its start, text that is no PGN, a zip archive: each
/// fails with a message naming it and exit code 1, is neither counted nor recorded, and the
/// good inputs beside it are imported.
#[test]
fn inputs_that_are_not_pgn_fail_and_are_not_recorded() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let book = sample_book(d);
    let before = games(&book);
    // Deterministic noise (xorshift).
    let mut x = 0x9e37_79b9_7f4a_7c15u64;
    let noise: Vec<u8> = (0..100_000)
        .map(|_| {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            x as u8
        })
        .collect();
    std::fs::write(d.join("noise.pgn"), &noise).unwrap();
    let mut late_nul = std::fs::read(sample_pgn()).unwrap();
    while late_nul.len() < 200_000 {
        late_nul.extend_from_slice(&std::fs::read(sample_pgn()).unwrap());
    }
    late_nul.extend_from_slice(b"\n[Event \"x\"]\n\n1. e4 \0\0\0 *\n");
    std::fs::write(d.join("late-nul.pgn"), &late_nul).unwrap();
    std::fs::write(
        d.join("notes.pgn"),
        "just some notes\nand more notes\n".repeat(10),
    )
    .unwrap();
    std::fs::write(d.join("games.zip"), b"PK\x03\x04\x14\x00\x00\x00rest").unwrap();
    for (file, says) in [
        ("noise.pgn", "not PGN text"),
        ("notes.pgn", "no PGN tag pair"),
        ("games.zip", "zip archive"),
    ] {
        let p = d.join(file);
        let err = Bookdb::import(&[&p], &book).fails_with(1);
        assert!(err.contains(file) && err.contains(says), "{file}: {err}");
        assert_eq!(games(&book), before, "{file} counted games");
        // Not recorded: it fails again rather than being "already imported".
        let again = Bookdb::import(&[&p], &book).output();
        assert_eq!(again.status.code(), Some(1), "{file}");
        assert!(!String::from_utf8_lossy(&again.stdout).contains("already imported"));
    }
    // A NUL byte past the sniffed start fails the import as it is met: nothing is applied.
    let err = Bookdb::import(&[&d.join("late-nul.pgn")], &book).fails_with(1);
    assert!(err.contains("late-nul.pgn") && err.contains("NUL"), "{err}");
    assert_eq!(games(&book), before);
    // Beside a good input: the good one is imported, the bad one reported, exit 1.
    let good = d.join("more.pgn");
    std::fs::write(&good, "[Event \"g\"]\n\n1. d4 d5 2. c4 *\n").unwrap();
    let out = Bookdb::import(&[&d.join("noise.pgn"), &good], &book)
        .arg("--json")
        .output();
    assert_eq!(out.status.code(), Some(1));
    let j: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(j["games_imported"], 1);
    assert_eq!(j["failed_inputs"][0]["name"], s(&d.join("noise.pgn")));
    assert_eq!(games(&book), before + 1);
}

#[test]
fn games_without_moves_are_skipped_not_counted() {
    let dir = tempfile::tempdir().unwrap();
    let pgn = dir.path().join("g.pgn");
    std::fs::write(
        &pgn,
        "[Event \"a\"]\n[Result \"1-0\"]\n\n1-0\n\n[Event \"b\"]\n\n1. e4 e5 *\n\n[Event \"c\"]\n\n*\n",
    )
    .unwrap();
    let book = dir.path().join("g.book");
    let j = Bookdb::import(&[&pgn], &book).arg("--json").json();
    assert_eq!(j["games_read"], 3);
    assert_eq!(j["games_imported"], 1);
    assert_eq!(j["skipped_by_reason"]["no-moves"], 2);
    assert_eq!(games(&book), 1);
}

/// Standard input that arrives a few bytes at a time (xz-compressed: the magic number is
/// split across reads) is sniffed like a file.
#[test]
fn stdin_is_sniffed_however_it_trickles_in() {
    let dir = tempfile::tempdir().unwrap();
    let data = xz(&std::fs::read(sample_pgn()).unwrap());
    let book = dir.path().join("t.book");
    let mut child = Bookdb::import(&["-"], &book)
        .arg("--quiet")
        .command()
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let mut stdin = child.stdin.take().unwrap();
    for (i, piece) in data.chunks(3).enumerate() {
        stdin.write_all(piece).unwrap();
        stdin.flush().unwrap();
        if i < 8 {
            std::thread::sleep(std::time::Duration::from_millis(20));
        }
    }
    drop(stdin);
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let plain = dir.path().join("p.book");
    Bookdb::import(&[&sample_pgn()], &plain).arg("--quiet").ok();
    assert_eq!(dump(&book), dump(&plain));
}

// ---- 2. rewrites keep mode, owner and group ----------------------------------------------

/// Runs bookdb under `umask 077`.
fn under_umask(args: &[&str]) -> std::process::Output {
    let mut cmd = Command::new("sh");
    cmd.arg("-c")
        .arg("umask 077; exec \"$0\" \"$@\"")
        .arg(bin())
        .args(args);
    cmd.output().unwrap()
}

fn mode(p: &Path) -> u32 {
    std::fs::metadata(p).unwrap().permissions().mode() & 0o7777
}

#[test]
fn rewrites_under_umask_077_keep_the_books_mode_and_owner() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let book = sample_book(d);
    let root = rustix_is_root();
    let set = |p: &Path| {
        std::fs::set_permissions(p, std::fs::Permissions::from_mode(0o640)).unwrap();
        if root {
            std::os::unix::fs::chown(p, Some(4321), Some(4322)).unwrap();
        }
    };
    let check = |p: &Path, what: &str| {
        assert_eq!(mode(p), 0o640, "{what}: mode");
        if root {
            let m = std::fs::metadata(p).unwrap();
            assert_eq!((m.uid(), m.gid()), (4321, 4322), "{what}: owner");
        }
    };
    set(&book);
    let ino = std::fs::metadata(&book).unwrap().ino();
    let out = under_umask(&["compact", "--book", s(&book), "--quiet"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_ne!(
        std::fs::metadata(&book).unwrap().ino(),
        ino,
        "compact rewrote"
    );
    check(&book, "compact");
    // A delta segment and the manifest that publishes it take the base's mode and owner.
    let extra = d.join("extra.pgn");
    std::fs::write(
        &extra,
        "[Event \"x\"]\n[Result \"1-0\"]\n\n1. e4 e5 2. Qh5 Nc6 3. Bc4 Nf6 4. Qxf7# 1-0\n",
    )
    .unwrap();
    let j = under_umask(&["import", s(&extra), "--book", s(&book), "--json"]);
    assert!(j.status.success(), "{}", String::from_utf8_lossy(&j.stderr));
    let j: serde_json::Value = serde_json::from_slice(&j.stdout).unwrap();
    assert_eq!(j["applied"], "delta");
    let name = book.file_name().unwrap().to_string_lossy().into_owned();
    let published: Vec<PathBuf> = std::fs::read_dir(d)
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| {
            let f = p.file_name().unwrap().to_string_lossy();
            f == format!("{name}.live") || f.starts_with(&format!("{name}.seg-"))
        })
        .collect();
    assert_eq!(published.len(), 2, "{published:?}");
    for p in &published {
        check(p, "delta segment and manifest");
    }
    // Import's rewrite path (automatic compaction: many new entries into a small book).
    let small = d.join("small.book");
    let one = d.join("one.pgn");
    std::fs::write(&one, "[Event \"m\"]\n\n1. b3 e5 2. Bb2 *\n").unwrap();
    Bookdb::import(&[&one], &small).arg("--quiet").ok();
    set(&small);
    let j = under_umask(&[
        "import",
        s(&sample_pgn()),
        "--book",
        s(&small),
        "--delta-min",
        "0",
        "--json",
    ]);
    assert!(j.status.success(), "{}", String::from_utf8_lossy(&j.stderr));
    let j: serde_json::Value = serde_json::from_slice(&j.stdout).unwrap();
    assert_eq!(j["applied"], "rewrite");
    check(&small, "import rewrite");
    // Merge over an existing output.
    let out_book = d.join("merged.book");
    bookdb(["merge", s(&book), "--out", s(&out_book), "--quiet"]).ok();
    set(&out_book);
    let out = under_umask(&["merge", s(&book), "--out", s(&out_book), "--quiet"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    check(&out_book, "merge");
    // Migrate of an older version.
    set_format_version(&book, 1);
    set(&book);
    let out = under_umask(&["migrate", "--book", s(&book)]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    check(&book, "migrate");
    // A new book takes the umask's mode.
    let fresh = d.join("fresh.book");
    let out = under_umask(&["import", s(&sample_pgn()), "--book", s(&fresh), "--quiet"]);
    assert!(out.status.success());
    assert_eq!(mode(&fresh), 0o600);
}

fn rustix_is_root() -> bool {
    Command::new("id")
        .arg("-u")
        .output()
        .is_ok_and(|o| String::from_utf8_lossy(&o.stdout).trim() == "0")
}

// ---- 3. the writer lock --------------------------------------------------------------------

/// Holds the book's writer lock as another bookdb writer would.
fn hold_lock(book: &Path) -> std::fs::File {
    let mut name = book.file_name().unwrap().to_os_string();
    name.push(".lock");
    let f = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(book.with_file_name(name))
        .unwrap();
    f.lock().unwrap();
    f
}

#[test]
fn a_held_lock_is_busy_exit_75_and_wait_waits_for_it() {
    let dir = tempfile::tempdir().unwrap();
    let book = sample_book(dir.path());
    let lock = hold_lock(&book);
    for args in [
        vec!["compact", "--book", s(&book)],
        vec!["import", s(&sample_pgn()), "--book", s(&book), "--force"],
        vec!["compact", "--book", s(&book), "--wait=0.2"],
    ] {
        let err = bookdb(&args).fails_with(75);
        assert!(err.contains("another bookdb process is writing"), "{err}");
    }
    // --json: the error as a JSON object on stderr.
    let err = bookdb(["compact", "--book", s(&book), "--json"]).fails_with(75);
    let j: serde_json::Value = serde_json::from_str(&err).unwrap();
    assert_eq!(j["error"]["kind"], "busy");
    assert_eq!(j["error"]["exit_code"], 75);
    assert!(j["error"]["message"].as_str().unwrap().contains("--wait"));
    // Readers are not writers: they go on.
    bookdb(["stats", "--book", s(&book)]).ok();
    // --wait (no value: as long as it takes) succeeds once the lock is released.
    let child = bookdb(["compact", "--book", s(&book), "--wait", "--quiet"])
        .command()
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(300));
    drop(lock);
    let out = child.wait_with_output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // `--wait` takes its value only after `=`: the word after it is an input.
    let more = dir.path().join("more.pgn");
    std::fs::write(&more, "[Event \"w\"]\n\n1. e4 c5 *\n").unwrap();
    bookdb(["import", "--wait", s(&more), "--book", s(&book), "--quiet"]).ok();
    // A bad --wait value is a usage error: a word, and seconds past what a duration holds
    // (they panicked: exit 101).
    bookdb(["compact", "--book", s(&book), "--wait=soon"]).fails_with(2);
    for huge in ["1e30", "18446744073709551616"] {
        let e = bookdb(["compact", "--book", s(&book), &format!("--wait={huge}")]).fails_with(2);
        assert!(e.contains("forever"), "{e}");
    }
    let r = bookdb(["analyse", "--book", s(&book), "--timeout", "1e30"]).output();
    assert!(
        !matches!(r.status.code(), Some(0 | 101) | None),
        "{:?} {}",
        r.status,
        String::from_utf8_lossy(&r.stderr)
    );
    // Nor does a progress interval past it panic.
    bookdb(["compact", "--book", s(&book), "--progress", "plain"])
        .env(bookdb::ops::progress::PLAIN_INTERVAL_ENV, "1e30")
        .ok();
}

#[test]
fn json_errors_name_their_kind_and_exit_code() {
    let dir = tempfile::tempdir().unwrap();
    let err = bookdb([
        "stats",
        "--book",
        s(&dir.path().join("absent.book")),
        "--json",
    ])
    .fails_with(1);
    let j: serde_json::Value = serde_json::from_str(&err).unwrap();
    assert_eq!(j["error"]["kind"], "not-found");
    assert_eq!(j["error"]["exit_code"], 1);
    let book = sample_book(dir.path());
    set_format_version(&book, 99);
    let err = bookdb(["stats", "--book", s(&book), "--json"]).fails_with(4);
    let j: serde_json::Value = serde_json::from_str(&err).unwrap();
    assert_eq!(j["error"]["kind"], "not-a-book");
}

// ---- 4. progress ---------------------------------------------------------------------------

/// A PGN input large enough for an import to take a while: the sample, repeated.
fn big_pgn(dir: &Path) -> PathBuf {
    let one = std::fs::read(sample_pgn()).unwrap();
    let p = dir.join("big.pgn");
    let mut f = std::io::BufWriter::new(std::fs::File::create(&p).unwrap());
    for _ in 0..400 {
        f.write_all(&one).unwrap();
        f.write_all(b"\n\n").unwrap();
    }
    f.flush().unwrap();
    p
}

fn import_stderr(dir: &Path, book: &str, extra: &[&str]) -> String {
    let pgn = big_pgn(dir);
    let out = Bookdb::import(&[&pgn], dir.join(book))
        .args(extra)
        .env("BOOKDB_PROGRESS_INTERVAL", "0.001")
        .output();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stderr).unwrap()
}

#[test]
fn progress_off_a_terminal_is_plain_lines() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // auto, off a terminal: plain lines (no escape sequences, no carriage returns).
    let err = import_stderr(d, "a.book", &[]);
    let lines: Vec<&str> = err
        .lines()
        .filter(|l| l.starts_with("bookdb: ") && l.contains("big.pgn"))
        .collect();
    assert!(!lines.is_empty(), "no progress lines:\n{err}");
    assert!(
        lines[0].contains(" MiB") && lines[0].contains("elapsed"),
        "{}",
        lines[0]
    );
    assert!(!err.contains('\r') && !err.contains('\x1b'), "{err:?}");
    // plain, explicitly.
    let err = import_stderr(d, "b.book", &["--progress", "plain"]);
    assert!(err.lines().any(|l| l.starts_with("bookdb: ")), "{err}");
    // --quiet, --progress none and --json (unless --progress is given): nothing.
    for extra in [&["--quiet"][..], &["--progress", "none"], &["--json"]] {
        let err = import_stderr(d, "c.book", extra);
        assert!(
            !err.lines().any(|l| l.starts_with("bookdb: ")),
            "{extra:?}: {err}"
        );
    }
    // Rewrites too.
    let book = d.join("a.book");
    let out = bookdb([
        "compact",
        "--book",
        s(&book),
        "--progress",
        "plain",
        "--retrain",
    ])
    .env("BOOKDB_PROGRESS_INTERVAL", "0.001")
    .output();
    assert!(out.status.success());
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        err.lines()
            .any(|l| l.starts_with("bookdb: compact: ") && l.contains("positions")),
        "{err}"
    );
}

// ---- 5. unchanged inputs -------------------------------------------------------------------

/// An input whose path, size, mtime and inode match an import record's is not read again: its
/// bytes are changed in place (same size, mtime put back), and the re-run still calls it
/// imported; `--rehash` reads it, finds new bytes and imports them.
#[test]
fn unchanged_inputs_are_recognised_without_reading() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let pgn = d.join("in.pgn");
    std::fs::write(&pgn, "[Event \"a\"]\n\n1. e4 e5 2. Nf3 *\n").unwrap();
    let book = d.join("i.book");
    Bookdb::import(&[&pgn], &book).arg("--quiet").ok();
    let j = Bookdb::import(&[&pgn], &book).arg("--json").json();
    assert_eq!(j["already_imported"][0], s(&pgn));
    // Same size and inode, other moves; the modification time is put back.
    let mtime = std::fs::metadata(&pgn).unwrap().modified().unwrap();
    {
        let mut f = std::fs::OpenOptions::new().write(true).open(&pgn).unwrap();
        f.write_all(b"[Event \"a\"]\n\n1. d4 d5 2. Nf3 *\n")
            .unwrap();
        f.set_modified(mtime).unwrap();
    }
    let j = Bookdb::import(&[&pgn], &book).arg("--json").json();
    assert_eq!(j["already_imported"][0], s(&pgn), "identity short-circuit");
    assert_eq!(games(&book), 1);
    let j = Bookdb::import(&[&pgn], &book)
        .args(["--json", "--rehash"])
        .json();
    assert_eq!(j["games_imported"], 1, "--rehash reads the new bytes");
    assert_eq!(games(&book), 2);
    // A touched file (new mtime, same bytes) is fingerprinted and still known.
    std::fs::File::options()
        .write(true)
        .open(&pgn)
        .unwrap()
        .set_modified(std::time::SystemTime::now())
        .unwrap();
    let j = Bookdb::import(&[&pgn], &book).arg("--json").json();
    assert_eq!(j["already_imported"][0], s(&pgn));
    assert_eq!(games(&book), 2);
}

// ---- 6. version, completions, man page, BOOKDB_BOOK ---------------------------------------

#[test]
fn version_names_the_commit_and_format_versions() {
    let v = bookdb(["--version"]).ok();
    assert!(v.starts_with("bookdb "), "{v}");
    assert!(v.contains("(commit "), "{v}");
    assert!(v.contains("book format version 11"), "{v}");
    assert!(v.contains("migrate"), "{v}");
    // OPERATIONS.md shows this output: its format line is this build's.
    let doc =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/OPERATIONS.md"))
            .unwrap();
    let line = v
        .lines()
        .find(|l| l.starts_with("book format version"))
        .unwrap();
    assert!(
        doc.contains(line),
        "docs/OPERATIONS.md's --version example does not show {line:?}"
    );
}

#[test]
fn completions_and_man_page() {
    for shell in ["bash", "zsh", "fish"] {
        let c = bookdb(["completions", shell]).ok();
        assert!(c.contains("bookdb") && c.contains("import"), "{shell}");
        assert!(c.contains("wait") && c.contains("progress"), "{shell}");
    }
    let man = bookdb(["man"]).ok();
    let th = man.lines().find(|l| l.starts_with(".TH bookdb")).unwrap();
    assert_eq!(
        th.matches('"').count() % 2,
        0,
        "the title line is whole: {th}"
    );
    assert!(man.contains("completions"));
    bookdb(["completions", "tcsh"]).fails_with(2);
}

#[test]
fn bookdb_book_is_the_default_book() {
    let dir = tempfile::tempdir().unwrap();
    let book = sample_book(dir.path());
    let j = bookdb(["stats", "--json"]).env("BOOKDB_BOOK", &book).json();
    assert_eq!(j["games"], games(&book));
    // --book wins over the variable.
    bookdb(["stats", "--book", s(&book)])
        .env("BOOKDB_BOOK", dir.path().join("absent.book"))
        .ok();
}

// ---- 7. docs/OPERATIONS.md -----------------------------------------------------------------

fn ops_file(name: &str) -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("docs/ops")
        .join(name)
}

/// Every example file is quoted in OPERATIONS.md as it is (the tests run the files).
#[test]
fn operations_md_quotes_the_example_files() {
    let doc =
        std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join("docs/OPERATIONS.md"))
            .unwrap();
    for name in [
        "bookdb-serve.service",
        "bookdb-nightly.service",
        "bookdb-nightly.timer",
        "bookdb-nightly.sh",
        "backup.sh",
        "crontab",
    ] {
        let text = std::fs::read_to_string(ops_file(name)).unwrap();
        assert!(
            doc.contains(text.trim_end()),
            "docs/OPERATIONS.md does not quote docs/ops/{name} as it is"
        );
    }
}

/// The nightly script against a temporary book: import, verify, compact; a second run finds
/// the archives imported; a bad archive gives exit 1 with the others imported; a held lock
/// gives 75 once `BOOKDB_WAIT` has passed.
#[test]
fn nightly_script_runs_the_pipeline() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let archive = d.join("archive");
    std::fs::create_dir(&archive).unwrap();
    std::fs::copy(sample_pgn(), archive.join("a.pgn")).unwrap();
    std::fs::write(
        archive.join("b.pgn.xz"),
        xz(b"[Event \"b\"]\n\n1. c4 e5 2. Nc3 *\n"),
    )
    .unwrap();
    let book = d.join("games.book");
    let nightly_compacting = |wait: &str, compact: &str| {
        Command::new("sh")
            .arg(ops_file("bookdb-nightly.sh"))
            .env("BOOKDB", bin())
            .env("BOOKDB_BOOK", &book)
            .env("BOOKDB_ARCHIVE", &archive)
            .env("BOOKDB_WAIT", wait)
            .env("BOOKDB_COMPACT", compact)
            .env("BOOKDB_PROGRESS_INTERVAL", "0.001")
            .output()
            .unwrap()
    };
    let nightly = |wait: &str| nightly_compacting(wait, "daily");
    let out = nightly("60");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let first = games(&book);
    assert!(first > 1);
    let out = nightly("60");
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).contains("already imported"));
    assert_eq!(games(&book), first);
    // A new archive and a broken one.
    std::fs::write(archive.join("c.pgn"), "[Event \"c\"]\n\n1. g3 d5 *\n").unwrap();
    std::fs::write(
        archive.join("d.pgn.zst"),
        b"not zstd at all, not PGN either",
    )
    .unwrap();
    let out = nightly("60");
    assert_eq!(
        out.status.code(),
        Some(1),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stderr).contains("d.pgn.zst"));
    assert_eq!(games(&book), first + 1);
    std::fs::remove_file(archive.join("d.pgn.zst")).unwrap();
    // Busy.
    let lock = hold_lock(&book);
    std::fs::write(archive.join("e.pgn"), "[Event \"e\"]\n\n1. b4 e5 *\n").unwrap();
    let out = nightly("0.2");
    assert_eq!(
        out.status.code(),
        Some(75),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    drop(lock);
    let out = nightly("60");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(games(&book), first + 2);
    // Not a compaction day: the new games stay in a segment; on one, they are folded in.
    std::fs::write(archive.join("f.pgn"), "[Event \"f\"]\n\n1. h4 h5 *\n").unwrap();
    assert!(nightly_compacting("60", "never").status.success());
    assert!(segment_exists(&book));
    assert_eq!(games(&book), first + 3);
    assert!(nightly_compacting("60", "1 2 3 4 5 6 7").status.success());
    assert!(!segment_exists(&book));
    assert_eq!(games(&book), first + 3);
}

/// Whether the book has a delta segment beside it.
fn segment_exists(book: &Path) -> bool {
    let name = book.file_name().unwrap().to_string_lossy().into_owned();
    std::fs::read_dir(book.parent().unwrap())
        .unwrap()
        .flatten()
        .any(|e| {
            e.file_name()
                .to_string_lossy()
                .starts_with(&format!("{name}.seg-"))
        })
}

#[test]
fn backup_script_copies_a_verified_book() {
    if Command::new("flock").arg("--version").output().is_err() {
        eprintln!("SKIP: flock(1) is not installed");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let book = sample_book(dir.path());
    // A live book with a delta segment: the copy must take the base, manifest and segment.
    let more = dir.path().join("more.pgn");
    std::fs::write(
        &more,
        "[Event \"x\"]\n[Result \"1-0\"]\n\n1. e4 e5 2. Qh5 Nc6 3. Bc4 Nf6 4. Qxf7# 1-0\n",
    )
    .unwrap();
    Bookdb::import(&[&more], &book).arg("--quiet").ok();
    assert!(
        segment_exists(&book),
        "the import published a delta segment"
    );
    let dest = dir.path().join("backups");
    std::fs::create_dir(&dest).unwrap();
    // A reader holds the book open meanwhile, as a server would.
    let reader = std::fs::File::open(&book).unwrap();
    let out = Command::new("sh")
        .arg(ops_file("backup.sh"))
        .arg(&book)
        .arg(&dest)
        .env("BOOKDB", bin())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    drop(reader);
    let copy = PathBuf::from(String::from_utf8(out.stdout).unwrap().trim());
    assert_eq!(dump(&copy), dump(&book));
}

/// `systemd-analyze verify` of the units, with their paths pointed at this build (skipped,
/// with the reason printed, where systemd-analyze is not installed).
#[test]
fn systemd_units_verify() {
    let Ok(v) = Command::new("systemd-analyze").arg("--version").output() else {
        eprintln!("SKIP: systemd-analyze is not installed (.ci/run installs systemd)");
        return;
    };
    if !v.status.success() {
        eprintln!("SKIP: systemd-analyze does not run here");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let mut units = Vec::new();
    for name in [
        "bookdb-serve.service",
        "bookdb-nightly.service",
        "bookdb-nightly.timer",
    ] {
        let text = std::fs::read_to_string(ops_file(name))
            .unwrap()
            .replace("/usr/local/bin/bookdb", bin())
            .replace(
                "/usr/local/lib/bookdb/bookdb-nightly.sh",
                s(&ops_file("bookdb-nightly.sh")),
            );
        let p = dir.path().join(name);
        std::fs::write(&p, text).unwrap();
        units.push(p);
    }
    let out = Command::new("systemd-analyze")
        .args(["verify", "--man=no"])
        .args(&units)
        .output()
        .unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{err}");
    assert!(
        !err.contains("Unknown key") && !err.contains("Failed to parse"),
        "{err}"
    );
}

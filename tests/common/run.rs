//! The one way the tests run the binary (in the spirit of ripgrep's `TestCommand`):
//!
//! ```ignore
//! bookdb(["probe", "--book", s(&book), "--json"]).json();
//! Bookdb::import(&[&pgn], &book).args(["--max-ply", "30"]).ok();
//! let err = bookdb(["stats", "--book", s(&missing)]).fails_with(1);
//! let killed = bookdb(&args).run_crashing(Some("manifest-write"), None);
//! let child = bookdb(&args).command().stdin(Stdio::piped()).spawn().unwrap();
//! ```

use std::ffi::OsStr;
use std::path::Path;
use std::process::{Command, Output, Stdio};
use std::time::{Duration, Instant};

/// The binary under test.
pub fn bin() -> &'static str {
    env!("CARGO_BIN_EXE_bookdb")
}

/// A `bookdb` command line, run by [`Bookdb::ok`], [`Bookdb::json`], [`Bookdb::fails_with`],
/// [`Bookdb::output`], [`Bookdb::run_crashing`] or [`Bookdb::command`] (to spawn it).
#[derive(Debug)]
pub struct Bookdb(Command);

/// `bookdb` with `args`.
pub fn bookdb<I: IntoIterator<Item = A>, A: AsRef<OsStr>>(args: I) -> Bookdb {
    Bookdb(Command::new(bin())).args(args)
}

impl Bookdb {
    /// `bookdb import <inputs>… --book <book>`.
    pub fn import<P: AsRef<OsStr>>(inputs: &[P], book: impl AsRef<OsStr>) -> Bookdb {
        bookdb(["import"]).args(inputs).arg("--book").arg(book)
    }

    pub fn arg(mut self, arg: impl AsRef<OsStr>) -> Bookdb {
        self.0.arg(arg);
        self
    }

    pub fn args<I: IntoIterator<Item = A>, A: AsRef<OsStr>>(mut self, args: I) -> Bookdb {
        self.0.args(args);
        self
    }

    pub fn env(mut self, key: impl AsRef<OsStr>, value: impl AsRef<OsStr>) -> Bookdb {
        self.0.env(key, value);
        self
    }

    /// The command, to spawn it (with pipes, signals, a working directory …).
    pub fn command(self) -> Command {
        self.0
    }

    /// Runs it to the end, whatever its exit.
    pub fn output(mut self) -> Output {
        self.0.output().expect("run bookdb")
    }

    /// Runs it and asserts success; returns its output.
    pub fn ok_output(self) -> Output {
        let what = format!("{:?}", self.0.get_args().collect::<Vec<_>>());
        let out = self.output();
        assert!(
            out.status.success(),
            "bookdb {what} failed ({:?}):\n{}",
            out.status.code(),
            String::from_utf8_lossy(&out.stderr)
        );
        out
    }

    /// Runs it and asserts success; returns stdout.
    pub fn ok(self) -> String {
        String::from_utf8(self.ok_output().stdout).expect("utf-8 stdout")
    }

    /// Runs it, asserts success and parses stdout as JSON.
    pub fn json(self) -> serde_json::Value {
        let out = self.ok();
        serde_json::from_str(&out).unwrap_or_else(|e| panic!("not JSON ({e}): {out}"))
    }

    /// Runs it, asserts it exits with `code`, and parses its stdout as JSON; also stderr.
    pub fn json_exit(self, code: i32) -> (serde_json::Value, String) {
        let what = format!("{:?}", self.0.get_args().collect::<Vec<_>>());
        let out = self.output();
        let err = String::from_utf8_lossy(&out.stderr).into_owned();
        assert_eq!(out.status.code(), Some(code), "bookdb {what}: {err}");
        let text = String::from_utf8_lossy(&out.stdout);
        let v = serde_json::from_str(&text).unwrap_or_else(|e| panic!("not JSON ({e}): {text}"));
        (v, err)
    }

    /// Runs it and asserts it exits with `code`; returns stderr.
    pub fn fails_with(self, code: i32) -> String {
        let what = format!("{:?}", self.0.get_args().collect::<Vec<_>>());
        let out = self.output();
        let err = String::from_utf8_lossy(&out.stderr).into_owned();
        assert_eq!(out.status.code(), Some(code), "bookdb {what}: {err}");
        err
    }

    /// Runs it with the crash point `point` set (`BOOKDB_CRASH_AT`, a `--features failpoints`
    /// build) and, with `kill_after`, SIGKILLs it after that long if it is still running. True
    /// if it was killed (at the point or by the timer); otherwise it must have succeeded.
    pub fn run_crashing(self, point: Option<&str>, kill_after: Option<Duration>) -> bool {
        use std::os::unix::process::ExitStatusExt;
        let what = format!("{:?}", self.0.get_args().collect::<Vec<_>>());
        let mut cmd = self.0;
        cmd.stdout(Stdio::null()).stderr(Stdio::piped());
        if let Some(p) = point {
            cmd.env("BOOKDB_CRASH_AT", p);
        }
        let mut child = cmd.spawn().unwrap();
        if let Some(d) = kill_after {
            let t = Instant::now();
            while t.elapsed() < d {
                if child.try_wait().unwrap().is_some() {
                    break;
                }
                std::thread::sleep(Duration::from_millis(2));
            }
            let _ = child.kill();
        }
        let out = child.wait_with_output().unwrap();
        if out.status.signal() == Some(9) {
            return true;
        }
        assert!(
            out.status.success(),
            "bookdb {what} (crash at {point:?}) failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        false
    }
}

/// A path as `&str` (test paths are UTF-8).
pub fn s(p: &Path) -> &str {
    p.to_str().expect("UTF-8 path")
}

/// `bookdb dump --book <book>` (asserted to succeed).
pub fn dump(book: &Path) -> String {
    bookdb(["dump", "--book", s(book)]).ok()
}

/// `bookdb verify --book <book>`, asserted to succeed; returns stdout.
pub fn verify(book: &Path) -> String {
    bookdb(["verify", "--book", s(book)]).ok()
}

/// `bookdb stats --book <book> --json`.
pub fn stats(book: &Path) -> serde_json::Value {
    bookdb(["stats", "--book", s(book), "--json"]).json()
}

/// Exports `book` as a Polyglot `.bin` to `out`.
pub fn export_polyglot(book: &Path, out: &Path) {
    bookdb([
        "export",
        "--book",
        s(book),
        "--format",
        "polyglot",
        "--out",
        s(out),
    ])
    .ok();
}

/// Runs the writer `args` of `book` and SIGKILLs it after `delay` (if still running); then the
/// book, if it exists, verifies, the same command run again succeeds, the book dumps as
/// `expected` and no staging area is left. `what` names the trial in failures.
pub fn kill_verify_rerun(
    args: &[String],
    book: &Path,
    delay: Duration,
    expected: &str,
    what: &str,
) {
    bookdb(args).run_crashing(None, Some(delay));
    if book.exists() {
        let v = bookdb(["verify", "--book", s(book)]).output();
        assert!(
            v.status.success(),
            "book after {what} does not verify: {}",
            String::from_utf8_lossy(&v.stderr)
        );
    }
    let out = bookdb(args).output();
    assert!(
        out.status.success(),
        "rerun failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert_eq!(dump(book), expected, "{what}");
    let name = book.file_name().unwrap().to_string_lossy();
    assert!(
        !book.with_file_name(format!("{name}.staging")).exists(),
        "staging removed"
    );
}

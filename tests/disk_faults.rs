//! Disk faults: a full file system, read-only books and directories, and a small limit on open
//! files.
//!
//! - **ENOSPC.** A small tmpfs is mounted for the test (root only; otherwise the test prints
//!   `SKIP` with the reason and passes), the book is copied onto it and the rest of the space
//!   filled so that a writer (`import` of a delta segment, an import that rewrites the base
//!   with spilled runs, `compact`, `merge`, `import-polyglot`) runs out of space at a different
//!   point each level. Each failure must be a clear error (the cause, the file, what to do), the
//!   previous book must still open, verify and dump as before, and once the space is freed the
//!   same command must succeed and give what an uninterrupted run gives, with nothing left
//!   behind.
//! - **Read-only.** The tmpfs remounted read-only (EROFS, which applies to root too) and, as an
//!   unprivileged user, books with mode 0444 in a 0555 directory: `probe`, `dump`, `stats`,
//!   `verify` work; every writer fails with a clear message and the book is unchanged.
//! - **File descriptors.** `RLIMIT_NOFILE` 64 with a book at the segment limit (8 segments):
//!   `probe`, `verify`, `import` work or fail clearly, never crash or damage the book.

mod common;
use common::*;

use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// A tmpfs mounted on a temporary directory, unmounted (lazily) when dropped.
struct Tmpfs {
    dir: tempfile::TempDir,
}

impl Tmpfs {
    /// Mounts a tmpfs of `mib` MiB, or prints why it cannot and returns `None`.
    fn mount(mib: u64) -> Option<Tmpfs> {
        let dir = tempfile::tempdir().unwrap();
        let out = Command::new("mount")
            .args([
                "-t",
                "tmpfs",
                "-o",
                &format!("size={mib}m,mode=0755"),
                "tmpfs",
            ])
            .arg(dir.path())
            .output();
        match out {
            Ok(o) if o.status.success() => Some(Tmpfs { dir }),
            Ok(o) => {
                eprintln!(
                    "SKIP: cannot mount a tmpfs (not root, or no mount permission in this container): {}",
                    String::from_utf8_lossy(&o.stderr).trim()
                );
                None
            }
            Err(e) => {
                eprintln!("SKIP: cannot run mount(8): {e}");
                None
            }
        }
    }

    fn path(&self) -> &Path {
        self.dir.path()
    }

    fn remount(&self, opts: &str) {
        let o = Command::new("mount")
            .args(["-o", &format!("remount,{opts}")])
            .arg(self.path())
            .output()
            .unwrap();
        assert!(
            o.status.success(),
            "remount {opts}: {}",
            String::from_utf8_lossy(&o.stderr)
        );
    }

    /// Bytes still free for files.
    fn avail(&self) -> u64 {
        let c = std::ffi::CString::new(self.path().as_os_str().as_encoded_bytes()).unwrap();
        let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
        // SAFETY: `c` is a valid NUL-terminated path and `st` a valid out-pointer.
        let r = unsafe { libc::statvfs(c.as_ptr(), &mut st) };
        assert_eq!(r, 0, "statvfs");
        st.f_bavail * st.f_frsize
    }

    /// Fills the file system so that `leave` bytes stay free (a filler file, preallocated).
    fn fill_leaving(&self, leave: u64) -> PathBuf {
        let filler = self.path().join("filler");
        let _ = std::fs::remove_file(&filler);
        let want = self.avail().saturating_sub(leave);
        let f = std::fs::File::create(&filler).unwrap();
        if want > 0 {
            use std::os::fd::AsRawFd;
            // SAFETY: a valid open file descriptor and non-negative sizes.
            let r = unsafe { libc::posix_fallocate(f.as_raw_fd(), 0, want as libc::off_t) };
            assert_eq!(r, 0, "fallocate {want}");
        }
        filler
    }
}

impl Drop for Tmpfs {
    fn drop(&mut self) {
        let _ = Command::new("umount")
            .arg("-l")
            .arg(self.dir.path())
            .status();
    }
}

/// The book's own files beside it that should not be there after a finished command.
fn leftovers(book: &Path) -> Vec<String> {
    let name = book.file_name().unwrap().to_string_lossy().into_owned();
    let mut bad = Vec::new();
    for e in std::fs::read_dir(book.parent().unwrap()).unwrap().flatten() {
        let f = e.file_name().to_string_lossy().into_owned();
        if f.starts_with(&format!(".{name}")) || f == format!("{name}.staging") {
            bad.push(f);
        }
    }
    bad
}

/// Games for the tests: the 10k-game file's first 1,000 if present, else the sample.
fn games(dir: &Path) -> Vec<Vec<u8>> {
    let src = data_file("pgn/medium-10k.pgn").unwrap_or_else(sample_pgn);
    let mut g = games_of(&copy_in(&src, dir));
    g.truncate(1000);
    g
}

#[test]
fn a_full_disk_fails_clearly_keeps_the_book_and_the_command_succeeds_later() {
    let work = tempfile::tempdir().unwrap();
    let games = games(work.path());
    let n = games.len();
    let base_pgn = work.path().join("base.pgn");
    write_games(&base_pgn, &games[..n / 2]);
    let small = work.path().join("small.pgn");
    write_games(&small, &games[n / 2..n / 2 + n / 20]);
    let big = work.path().join("big.pgn");
    write_games(&big, &games[n / 2..]);
    let template = work.path().join("template.book");
    Bookdb::import(&[&base_pgn], &template).arg("--quiet").ok();
    Bookdb::import(&[&small], &template).arg("--quiet").ok();
    let other = work.path().join("other.book");
    Bookdb::import(&[&big], &other).arg("--quiet").ok();
    let bin = work.path().join("other.bin");
    export_polyglot(&other, &bin);
    let book_bytes: u64 = std::fs::read_dir(work.path())
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with("template.book"))
        .map(|e| e.metadata().unwrap().len())
        .sum();
    let Some(fs) = Tmpfs::mount(8 + 6 * book_bytes / (1 << 20)) else {
        return;
    };
    let book = fs.path().join("b.book");
    let merged = fs.path().join("m.book");
    // (name, command, the book it changes)
    let cases: Vec<(&str, Vec<String>, &Path)> = vec![
        (
            "import (delta segment)",
            vec![
                "import",
                "--quiet",
                "--book",
                s(&book),
                s(&games_pgn(&big, work.path())),
            ]
            .into_iter()
            .map(String::from)
            .collect(),
            &book,
        ),
        (
            "import (new base, spilled runs)",
            [
                "import",
                "--quiet",
                "--book",
                s(&book),
                "--delta-min",
                "1",
                "--memory",
                "1",
                s(&big),
            ]
            .map(String::from)
            .to_vec(),
            &book,
        ),
        (
            "compact",
            ["compact", "--book", s(&book)].map(String::from).to_vec(),
            &book,
        ),
        (
            "import-polyglot",
            ["import-polyglot", "--book", s(&book), s(&bin)]
                .map(String::from)
                .to_vec(),
            &book,
        ),
        (
            "merge",
            ["merge", s(&book), s(&other), "--out", s(&merged)]
                .map(String::from)
                .to_vec(),
            &merged,
        ),
    ];
    let mut failures = 0;
    let mut successes = 0;
    for (name, cmd, target) in &cases {
        let args: Vec<&str> = cmd.iter().map(String::as_str).collect();
        // The reference: the command with room to spare.
        let reset = || {
            for e in std::fs::read_dir(fs.path()).unwrap().flatten() {
                if e.file_type().unwrap().is_dir() {
                    std::fs::remove_dir_all(e.path()).unwrap();
                } else {
                    std::fs::remove_file(e.path()).unwrap();
                }
            }
            copy_live_book(&template, &book);
        };
        reset();
        let before = if target.exists() {
            Some(dump(target))
        } else {
            None
        };
        let used_before = fs.avail();
        bookdb(&args).ok();
        let need = used_before.saturating_sub(fs.avail()).max(64 << 10);
        let after = dump(target);
        // Space levels from none to a little more than the command keeps in the end (writers
        // need more on the way: temporary files, staging), 12 steps.
        let levels: Vec<u64> = (0..12).map(|i| i * need * 3 / 2 / 11).collect();
        let mut refused_up_front = 0;
        for leave in levels {
            reset();
            let filler = fs.fill_leaving(leave);
            let out = bookdb(&args).output();
            if out.status.success() {
                successes += 1;
                assert_eq!(dump(target), after, "{name}: leave {leave}");
                continue;
            }
            failures += 1;
            let err = String::from_utf8_lossy(&out.stderr);
            assert!(
                !err.contains("panicked") && !err.contains("internal error"),
                "{name}, {leave} bytes free: {err}"
            );
            assert_eq!(out.status.code(), Some(1), "{name}: {err}");
            assert!(
                err.contains("No space left on device") && err.contains("free space"),
                "{name}, {leave} bytes free: the error must say the disk is full and what to do: {err}"
            );
            if err.contains("not enough disk for this import") && err.contains("needs about") {
                refused_up_front += 1;
            }
            // The previous book is intact.
            match &before {
                Some(d) => {
                    verify(target);
                    assert_eq!(&dump(target), d, "{name}: the book changed: {err}");
                }
                None => assert!(!target.exists(), "{name}: a half-written book: {err}"),
            }
            // Room again: the same command succeeds, as if nothing had happened.
            std::fs::remove_file(&filler).unwrap();
            bookdb(&args).ok();
            assert_eq!(dump(target), after, "{name}: after freeing space");
            verify(target);
            let left = leftovers(target);
            assert!(left.is_empty(), "{name}: left behind {left:?}");
        }
        // Short of room, an import is refused before it writes the book, saying what it
        // needs (a small delta import too, whose entries never went to runs: campaign 11, 02).
        if name.starts_with("import (") {
            assert!(
                refused_up_front > 0,
                "{name}: never refused up front with the need"
            );
        }
    }
    eprintln!(
        "disk full: {} writers at 12 levels each: {failures} failed cleanly with ENOSPC, {successes} had room",
        cases.len()
    );
    assert!(failures >= cases.len(), "too few runs hit ENOSPC");
}

/// `pgn` copied (the delta import reads its own file: the same bytes as `big` are a new input).
fn games_pgn(pgn: &Path, dir: &Path) -> PathBuf {
    let p = dir.join("delta.pgn");
    if !p.exists() {
        let g = games_of(pgn);
        write_games(&p, &g[..g.len() / 10]);
    }
    p
}

/// Readers of a book on a read-only file system or in read-only files and directories work;
/// writers fail with a message that names the cause.
#[test]
fn read_only_books_are_readable_and_refuse_writers_clearly() {
    let work = tempfile::tempdir().unwrap();
    let g = games(work.path());
    let a = work.path().join("a.pgn");
    write_games(&a, &g[..g.len() / 2]);
    let b = work.path().join("b.pgn");
    write_games(&b, &g[g.len() / 2..g.len() / 2 + 40]);
    let c = work.path().join("c.pgn");
    write_games(&c, &g[g.len() / 2 + 40..g.len() / 2 + 80]);
    let template = work.path().join("t.book");
    Bookdb::import(&[&a], &template).arg("--quiet").ok();
    Bookdb::import(&[&b], &template).arg("--quiet").ok();
    let want = dump(&template);

    let check = |book: &Path, how: &str, as_user: Option<u32>| {
        let run_as = |args: &[&str]| -> Output {
            let mut cmd = bookdb(args).command();
            if let Some(uid) = as_user {
                // SAFETY: setgid/setuid between fork and exec touch no shared state.
                unsafe {
                    cmd.pre_exec(move || {
                        if libc::setgid(uid) != 0 || libc::setuid(uid) != 0 {
                            return Err(std::io::Error::last_os_error());
                        }
                        Ok(())
                    });
                }
            }
            cmd.output().unwrap()
        };
        for args in [
            vec!["probe", "--book", s(book), "--moves", "e4"],
            vec!["dump", "--book", s(book)],
            vec!["stats", "--book", s(book)],
            vec!["verify", "--book", s(book)],
        ] {
            let o = run_as(&args);
            assert!(
                o.status.success(),
                "{how}: {args:?} failed: {}",
                String::from_utf8_lossy(&o.stderr)
            );
        }
        assert_eq!(
            String::from_utf8(run_as(&["dump", "--book", s(book)]).stdout).unwrap(),
            want
        );
        let out2 = book.with_file_name("merged.book");
        let writers = [
            vec!["import", "--quiet", "--book", s(book), s(&c)],
            vec!["compact", "--book", s(book)],
            vec!["migrate", "--book", s(book)],
            vec!["merge", s(book), "--out", s(&out2)],
        ];
        let mut failed = 0;
        for args in writers {
            let o = run_as(&args);
            let err = String::from_utf8_lossy(&o.stderr);
            if args[0] == "migrate" {
                // Nothing to do for a current book: it may succeed without writing.
                continue;
            }
            assert!(!o.status.success(), "{how}: {args:?} succeeded");
            assert!(
                !err.contains("panicked") && !err.contains("internal error"),
                "{how}: {args:?}: {err}"
            );
            assert!(
                err.contains("Read-only file system") || err.contains("Permission denied"),
                "{how}: {args:?}: the error must name the cause: {err}"
            );
            assert!(
                err.contains(s(book.parent().unwrap())),
                "{how}: {args:?}: the error must name where: {err}"
            );
            failed += 1;
        }
        assert_eq!(
            String::from_utf8(run_as(&["dump", "--book", s(book)]).stdout).unwrap(),
            want,
            "{how}: the book changed"
        );
        eprintln!("{how}: 4 readers worked, {failed} writers refused clearly");
    };

    // A read-only file system (applies to root too).
    if let Some(fs) = Tmpfs::mount(64) {
        let book = fs.path().join("b.book");
        copy_live_book(&template, &book);
        fs.remount("ro");
        check(&book, "read-only file system", None);
        fs.remount("rw");
    }
    // Read-only files in a read-only directory, as another user (root ignores modes).
    // SAFETY: geteuid has no preconditions.
    if unsafe { libc::geteuid() } != 0 {
        eprintln!("SKIP: read-only modes as another user need root to switch users");
        return;
    }
    let shared = tempfile::Builder::new().tempdir_in("/tmp").unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(shared.path(), std::fs::Permissions::from_mode(0o755)).unwrap();
    let ro = shared.path().join("ro");
    std::fs::create_dir(&ro).unwrap();
    let book = ro.join("b.book");
    copy_live_book(&template, &book);
    for e in std::fs::read_dir(&ro).unwrap().flatten() {
        std::fs::set_permissions(e.path(), std::fs::Permissions::from_mode(0o444)).unwrap();
    }
    std::fs::set_permissions(&ro, std::fs::Permissions::from_mode(0o555)).unwrap();
    let pgn_c = shared.path().join("c.pgn");
    std::fs::copy(&c, &pgn_c).unwrap();
    std::fs::set_permissions(&pgn_c, std::fs::Permissions::from_mode(0o444)).unwrap();
    check(
        &book,
        "read-only files and directory (uid 65534)",
        Some(65534),
    );
}

/// With at most 64 open files, a book at the segment limit is probed, verified and imported
/// into (which folds), or the command fails clearly; the book stays sound either way.
#[test]
fn a_small_open_file_limit_with_the_most_segments() {
    let work = tempfile::tempdir().unwrap();
    let g = games(work.path());
    let n = g.len();
    let book = work.path().join("fd.book");
    let base = work.path().join("base.pgn");
    write_games(&base, &g[..n / 2]);
    Bookdb::import(&[&base], &book).arg("--quiet").ok();
    // 20 games a segment; fewer when the large set is absent and the sample stands in.
    let per = (n / 2 / 9).min(20);
    for i in 0..9 {
        let p = work.path().join(format!("s{i}.pgn"));
        write_games(&p, &g[n / 2 + i * per..n / 2 + (i + 1) * per]);
        if i < 8 {
            Bookdb::import(&[&p], &book).arg("--quiet").ok();
        }
    }
    let segs = std::fs::read_dir(work.path())
        .unwrap()
        .flatten()
        .filter(|e| e.file_name().to_string_lossy().starts_with("fd.book.seg-"))
        .count();
    assert_eq!(
        segs,
        8, // store::book::fold::MAX_SEGMENTS
        "the book is at the segment limit"
    );
    let limited = |args: &[&str]| -> Output {
        let mut cmd = bookdb(args).command();
        // SAFETY: setrlimit between fork and exec touches no shared state.
        unsafe {
            cmd.pre_exec(|| {
                let lim = libc::rlimit {
                    rlim_cur: 64,
                    rlim_max: 64,
                };
                if libc::setrlimit(libc::RLIMIT_NOFILE, &lim) != 0 {
                    return Err(std::io::Error::last_os_error());
                }
                Ok(())
            });
        }
        cmd.output().unwrap()
    };
    let before = dump(&book);
    let mut worked = Vec::new();
    let s8 = work.path().join("s8.pgn");
    for args in [
        vec!["probe", "--book", s(&book), "--moves", "e4 e5"],
        vec!["verify", "--book", s(&book)],
        vec!["dump", "--book", s(&book)],
        vec!["import", "--quiet", "--book", s(&book), s(&s8)],
    ] {
        let o = limited(&args);
        let err = String::from_utf8_lossy(&o.stderr);
        assert!(
            !err.contains("panicked") && !err.contains("internal error"),
            "{args:?} under 64 fds: {err}"
        );
        if o.status.success() {
            worked.push(args[0]);
        } else {
            assert!(
                err.contains("Too many open files") && err.contains("ulimit -n"),
                "{args:?} under 64 fds must fail clearly: {err}"
            );
        }
        verify(&book);
    }
    // The import (the 9th segment, which makes the policy fold) left the book right.
    let after = dump(&book);
    if worked.contains(&"import") {
        assert_ne!(after, before);
    } else {
        assert_eq!(after, before);
    }
    eprintln!("64 open files, 8 segments: worked: {worked:?}");
}

/// A file-size limit (`ulimit -f`, systemd `LimitFSIZE=`) reached by a writer: an error that
/// says so (EFBIG and its hint, with `--json` the error object), not SIGXFSZ killing the process
/// without a word; the book is as it was and the import runs once the limit allows.
#[test]
fn a_file_size_limit_fails_clearly_and_keeps_the_book() {
    let work = tempfile::tempdir().unwrap();
    let g = games(work.path());
    let book = work.path().join("fs.book");
    let (first, second) = (work.path().join("a.pgn"), work.path().join("b.pgn"));
    write_games(&first, &g[..g.len() / 2]);
    write_games(&second, &g[g.len() / 2..]);
    Bookdb::import(&[&first], &book).arg("--quiet").ok();
    let before = dump(&book);
    let mut cmd = bookdb(["import", "--json", "--book", s(&book), s(&second)]).command();
    // SAFETY: setrlimit between fork and exec touches no shared state.
    unsafe {
        cmd.pre_exec(|| {
            // 64 KiB: less than any file the import writes.
            let lim = libc::rlimit {
                rlim_cur: 64 << 10,
                rlim_max: libc::RLIM_INFINITY,
            };
            if libc::setrlimit(libc::RLIMIT_FSIZE, &lim) != 0 {
                return Err(std::io::Error::last_os_error());
            }
            Ok(())
        });
    }
    let o = cmd.output().unwrap();
    let err = String::from_utf8_lossy(&o.stderr);
    assert_eq!(o.status.code(), Some(1), "{:?}: {err}", o.status);
    let j: serde_json::Value =
        serde_json::from_str(err.trim()).unwrap_or_else(|e| panic!("{e}: {err}"));
    assert!(
        j["error"]["hint"]
            .as_str()
            .unwrap_or("")
            .contains("ulimit -f"),
        "{j}"
    );
    assert_eq!(dump(&book), before, "the book is as it was");
    verify(&book);
    Bookdb::import(&[&second], &book).arg("--quiet").ok();
    assert_ne!(dump(&book), before);
    verify(&book);
}

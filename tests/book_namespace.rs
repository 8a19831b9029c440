//! The names around a book (`BOOK.lock`, `BOOK.staging`, `BOOK.live`, `BOOK.seg-*`, the
//! writers' temporaries `.BOOK.*.tmp-<pid>`) are bookdb's, but anyone who can write the
//! directory can put something there: a symlink to a file elsewhere, a FIFO, a file or a
//! directory of their own. A writer must never follow such a name out of the book (write,
//! chmod or chown what it points to, delete inside it), and must either do its job correctly
//! or refuse with an error that names the file (docs/RELIABILITY.md "The book's namespace").
//! And `--book` through a symlink is the book it leads to: every sidecar goes beside the real
//! file, the link stays a link.

mod common;

use common::{bookdb, s, sample_halves};
use std::collections::BTreeMap;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};
use std::time::{Duration, Instant};

/// Everything under `dir` (not following symlinks): path → (type, mode, owner, content or
/// link target).
fn snapshot(dir: &Path) -> BTreeMap<PathBuf, String> {
    let mut out = BTreeMap::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap().flatten() {
            let p = e.path();
            let m = std::fs::symlink_metadata(&p).unwrap();
            let what = if m.file_type().is_symlink() {
                format!("link {}", std::fs::read_link(&p).unwrap().display())
            } else if m.is_dir() {
                stack.push(p.clone());
                "dir".to_string()
            } else if m.is_file() {
                format!("file {:?}", std::fs::read(&p).unwrap())
            } else {
                "other".to_string()
            };
            let key = p.strip_prefix(dir).unwrap().to_path_buf();
            out.insert(
                key,
                format!("{what} mode {:o} {}:{}", m.mode(), m.uid(), m.gid()),
            );
        }
    }
    out
}

/// A directory outside the book that nothing may change: a file, a directory with a file.
fn sentinel(root: &Path) -> PathBuf {
    let dir = root.join("sentinel");
    std::fs::create_dir_all(dir.join("sub/deeper")).unwrap();
    std::fs::write(dir.join("file"), b"not the book's\n").unwrap();
    std::fs::set_permissions(dir.join("file"), std::fs::Permissions::from_mode(0o604)).unwrap();
    std::fs::write(dir.join("sub/deeper/kept"), b"kept\n").unwrap();
    dir
}

fn mkfifo(p: &Path) {
    let c = std::ffi::CString::new(p.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(
        unsafe { libc::mkfifo(c.as_ptr(), 0o644) },
        0,
        "mkfifo {p:?}"
    );
}

/// Runs bookdb with a deadline (a writer that opened a FIFO would hang): killed and reported
/// as a failure of the test after 120 s.
fn run_bounded(args: &[&str]) -> Output {
    let mut child = bookdb(args)
        .command()
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let start = Instant::now();
    while child.try_wait().unwrap().is_none() {
        if start.elapsed() > Duration::from_secs(120) {
            let _ = child.kill();
            panic!("bookdb {args:?} hung (a FIFO opened?)");
        }
        std::thread::sleep(Duration::from_millis(10));
    }
    child.wait_with_output().unwrap()
}

/// What may be planted at a name.
#[derive(Clone, Copy, Debug)]
enum Plant {
    LinkToFile,
    LinkToDir,
    Fifo,
    ForeignFile,
    ForeignDir,
}

const PLANTS: [Plant; 5] = [
    Plant::LinkToFile,
    Plant::LinkToDir,
    Plant::Fifo,
    Plant::ForeignFile,
    Plant::ForeignDir,
];

fn plant(p: &Path, what: Plant, sentinel: &Path) {
    match what {
        Plant::LinkToFile => std::os::unix::fs::symlink(sentinel.join("file"), p).unwrap(),
        Plant::LinkToDir => std::os::unix::fs::symlink(sentinel.join("sub"), p).unwrap(),
        Plant::Fifo => mkfifo(p),
        Plant::ForeignFile => std::fs::write(p, b"someone else's\n").unwrap(),
        Plant::ForeignDir => {
            std::fs::create_dir(p).unwrap();
            std::fs::write(p.join("theirs"), b"theirs\n").unwrap();
        }
    }
}

/// A book of the sample's first half (a base, no manifest) in `dir`, and the dumps that an
/// import of the second half must give.
struct Fixture {
    _tmp: tempfile::TempDir,
    root: PathBuf,
    first: PathBuf,
    second: PathBuf,
    template: PathBuf,
    both: String,
}

fn fixture() -> Fixture {
    let tmp = tempfile::tempdir().unwrap();
    let root = tmp.path().to_path_buf();
    let (first, second) = sample_halves(&root);
    let template = root.join("template/t.book");
    std::fs::create_dir_all(template.parent().unwrap()).unwrap();
    bookdb(["import", s(&first), "--book", s(&template)]).ok();
    let refb = root.join("ref/r.book");
    std::fs::create_dir_all(refb.parent().unwrap()).unwrap();
    bookdb(["import", s(&first), "--book", s(&refb)]).ok();
    bookdb(["import", s(&second), "--book", s(&refb)]).ok();
    let both = common::dump(&refb);
    Fixture {
        _tmp: tmp,
        root,
        first,
        second,
        template,
        both,
    }
}

/// A fresh copy of the template book as `<trial dir>/b.book`.
fn fresh(f: &Fixture, trial: &str) -> PathBuf {
    let dir = f.root.join("trials").join(trial);
    std::fs::create_dir_all(&dir).unwrap();
    let book = dir.join("b.book");
    std::fs::copy(&f.template, &book).unwrap();
    book
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

#[test]
fn names_planted_beside_a_book_never_lead_a_writer_outside_it() {
    let f = fixture();
    let sent = sentinel(&f.root);
    let before = snapshot(&sent);
    let names = [
        "b.book.lock",
        "b.book.staging",
        "b.book.live",
        "b.book.seg-000000000002",
    ];
    let (mut refused, mut succeeded) = (0, 0);
    for name in names {
        for what in PLANTS {
            let trial = format!("{name}-{what:?}");
            let book = fresh(&f, &trial);
            let planted = book.with_file_name(name);
            plant(&planted, what, &sent);
            // What the book holds: the first half until an import of the second succeeds.
            let mut expected = common::dump(&f.template);
            // An import (a delta segment over the base), then a compaction (a new base).
            for args in [
                vec!["import", s(&f.second), "--book", s(&book)],
                vec!["compact", "--book", s(&book)],
            ] {
                let o = run_bounded(&args);
                let err = stderr(&o);
                if o.status.success() {
                    succeeded += 1;
                    if args[0] == "import" {
                        expected = f.both.clone();
                    }
                    assert_eq!(
                        common::dump(&book),
                        expected,
                        "{trial}: {args:?} succeeded wrongly"
                    );
                } else {
                    refused += 1;
                    assert!(
                        err.contains(name),
                        "{trial}: {args:?} failed without naming {name}: {err}"
                    );
                    assert!(!err.contains("panicked"), "{trial}: {err}");
                }
                assert_eq!(
                    snapshot(&sent),
                    before,
                    "{trial}: {args:?} changed the sentinel"
                );
            }
            // The book itself is never damaged by a refusal: it still reads.
            let _ = std::fs::remove_file(&planted);
            let _ = std::fs::remove_dir_all(&planted);
            let o = run_bounded(&["verify", "--book", s(&book)]);
            assert!(o.status.success(), "{trial}: book damaged: {}", stderr(&o));
        }
    }
    eprintln!(
        "planted campaign: {} names x {} kinds, {succeeded} commands succeeded, {refused} refused",
        names.len(),
        PLANTS.len()
    );
    assert!(refused > 0 && succeeded > 0);
}

/// The temporary names carry the writer's pid: a planter that knows it (anyone can read
/// /proc) plants symlinks at them over and over while the writer runs. Each writer either
/// wins every race (and its result is right) or refuses; the link's target never changes.
#[test]
fn symlinks_raced_onto_temporary_names_are_never_followed() {
    let f = fixture();
    let sent = sentinel(&f.root);
    let before = snapshot(&sent);
    let (mut refused, mut succeeded) = (0, 0);
    for round in 0..3 {
        for cmd in ["import", "compact"] {
            let trial = format!("race-{cmd}-{round}");
            let book = fresh(&f, &trial);
            if cmd == "compact" {
                bookdb(["import", s(&f.second), "--book", s(&book)]).ok();
            }
            let args: Vec<&str> = match cmd {
                "import" => vec!["import", s(&f.second), "--book", s(&book)],
                _ => vec!["compact", "--book", s(&book)],
            };
            let mut child = bookdb(&args)
                .command()
                .stdout(Stdio::piped())
                .stderr(Stdio::piped())
                .spawn()
                .unwrap();
            let pid = child.id();
            let dir = book.parent().unwrap().to_path_buf();
            let mut temps: Vec<PathBuf> = vec![
                dir.join(format!(".b.book.tmp-{pid}")),
                dir.join(format!(".b.book.live.tmp-{pid}")),
            ];
            for g in 1..6 {
                temps.push(dir.join(format!(".b.book.seg-{g:012}.tmp-{pid}")));
            }
            let start = Instant::now();
            let status = loop {
                for t in &temps {
                    let _ = std::os::unix::fs::symlink(sent.join("file"), t);
                }
                // And the staging area's own temporaries (state.json's), wherever they are.
                if let Ok(rd) = std::fs::read_dir(dir.join("b.book.staging")) {
                    for e in rd.flatten() {
                        let _ = std::os::unix::fs::symlink(
                            sent.join("file"),
                            e.path().join(format!(".state.json.tmp-{pid}")),
                        );
                    }
                }
                if let Some(st) = child.try_wait().unwrap() {
                    break st;
                }
                assert!(start.elapsed() < Duration::from_secs(120), "{trial} hung");
            };
            let o = child.wait_with_output().unwrap();
            for t in &temps {
                let _ = std::fs::remove_file(t);
            }
            if status.success() {
                succeeded += 1;
                assert_eq!(common::dump(&book), f.both, "{trial}");
            } else {
                refused += 1;
                let err = stderr(&o);
                assert!(err.contains(".tmp-"), "{trial}: unclear refusal: {err}");
            }
            assert_eq!(snapshot(&sent), before, "{trial} changed the sentinel");
            let _ = std::fs::remove_dir_all(dir.join("b.book.staging"));
            let o = bookdb(["verify", "--book", s(&book)]).output();
            assert!(o.status.success(), "{trial}: {}", stderr(&o));
        }
    }
    eprintln!("raced temporaries: {succeeded} writers succeeded, {refused} refused");
}

#[test]
fn a_staging_symlink_is_refused_and_its_target_kept_whole() {
    let f = fixture();
    let sent = sentinel(&f.root);
    let before = snapshot(&sent);
    let book = fresh(&f, "staging-link");
    std::os::unix::fs::symlink(&sent, book.with_file_name("b.book.staging")).unwrap();
    let o = bookdb(["import", s(&f.second), "--book", s(&book)]).output();
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("b.book.staging: a symbolic link"),
        "{}",
        stderr(&o)
    );
    assert_eq!(snapshot(&sent), before);
    assert_eq!(
        common::dump(&book),
        common::dump(&f.template),
        "the book changed"
    );
}

#[test]
fn a_staging_directory_bookdb_did_not_make_is_refused_and_kept() {
    let f = fixture();
    let book = fresh(&f, "staging-foreign");
    let staging = book.with_file_name("b.book.staging");
    std::fs::create_dir_all(staging.join("photos")).unwrap();
    std::fs::write(staging.join("photos/cat.jpg"), b"meow").unwrap();
    let before = snapshot(&staging);
    let o = bookdb(["import", s(&f.second), "--book", s(&book)]).output();
    assert_eq!(o.status.code(), Some(1), "{}", stderr(&o));
    assert!(
        stderr(&o).contains("without bookdb's marker"),
        "{}",
        stderr(&o)
    );
    assert_eq!(snapshot(&staging), before);
    // The staging area bookdb makes is removed after the import, marker and all.
    std::fs::remove_dir_all(&staging).unwrap();
    bookdb(["import", s(&f.second), "--book", s(&book)]).ok();
    assert!(!staging.exists());
    assert_eq!(common::dump(&book), f.both);
}

/// `--book LINK`: the import's segment, manifest, lock and staging are beside the real file,
/// a writer holding the real file's lock excludes one coming through the link, and `compact`
/// through the link rewrites the real file and leaves the link a link.
#[test]
fn a_book_through_a_symlink_keeps_every_file_beside_the_real_one() {
    let f = fixture();
    let real_dir = f.root.join("real");
    let link_dir = f.root.join("links");
    std::fs::create_dir_all(&real_dir).unwrap();
    std::fs::create_dir_all(&link_dir).unwrap();
    let real = real_dir.join("b.book");
    std::fs::copy(&f.template, &real).unwrap();
    let link = link_dir.join("l.book");
    std::os::unix::fs::symlink("../real/b.book", &link).unwrap();
    // A chain of links is followed too.
    let link2 = link_dir.join("l2.book");
    std::os::unix::fs::symlink("l.book", &link2).unwrap();

    // Another writer holds the real book's lock: a writer through the link must wait for it.
    let lock = std::fs::OpenOptions::new()
        .create(true)
        .truncate(false)
        .write(true)
        .open(real_dir.join("b.book.lock"))
        .unwrap();
    lock.lock().unwrap();
    let o = bookdb(["import", s(&f.second), "--book", s(&link2)]).output();
    assert_eq!(o.status.code(), Some(75), "{}", stderr(&o));
    drop(lock);

    bookdb(["import", s(&f.second), "--book", s(&link2)]).ok();
    let beside_links: Vec<String> = std::fs::read_dir(&link_dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    let mut beside_links = beside_links;
    beside_links.sort();
    assert_eq!(
        beside_links,
        ["l.book", "l2.book"],
        "files written beside the link"
    );
    assert!(real_dir.join("b.book.live").exists());
    assert!(real_dir.join("b.book.seg-000000000002").exists());
    assert_eq!(common::dump(&real), f.both);
    assert_eq!(common::dump(&link), f.both);

    bookdb(["compact", "--book", s(&link)]).ok();
    assert!(
        std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink()
    );
    assert!(!real_dir.join("b.book.seg-000000000002").exists());
    assert_eq!(common::dump(&real), f.both);
    let _ = &f.first;
}

//! Outputs that name the book, and outputs that are not regular files: `export --out` and
//! `import --report` refuse any path that is one of the book's files (by name, through a
//! symlink, or as a hard link), `export --out` writes through a FIFO or a device instead of
//! replacing it and replaces a symlink's target (not the link), and the summary of
//! `export --out -` counts the bytes it wrote (docs/RELIABILITY.md "The book's namespace").

mod common;

use common::{bookdb, s, sample_halves};
use std::os::unix::fs::{FileTypeExt, MetadataExt};
use std::path::{Path, PathBuf};

fn stderr(o: &std::process::Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// Every file of the book's directory with its bytes (the book must not change).
fn files_of(dir: &Path) -> Vec<(String, Vec<u8>)> {
    let mut v: Vec<(String, Vec<u8>)> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .filter(|e| e.file_type().is_ok_and(|t| t.is_file()))
        .map(|e| {
            (
                e.file_name().to_string_lossy().into_owned(),
                std::fs::read(e.path()).unwrap(),
            )
        })
        .collect();
    v.sort();
    v
}

/// A book with a base and a delta segment in `dir/b.book`.
fn live_book(dir: &Path) -> PathBuf {
    let (first, second) = sample_halves(dir);
    let book = dir.join("b.book");
    bookdb(["import", s(&first), "--book", s(&book)]).ok();
    bookdb(["import", s(&second), "--book", s(&book)]).ok();
    assert!(dir.join("b.book.seg-000000000002").exists());
    book
}

#[test]
fn outputs_that_are_the_books_own_files_are_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let book = live_book(dir);
    let dump = common::dump(&book);
    std::fs::hard_link(&book, dir.join("hard.bin")).unwrap();
    std::os::unix::fs::symlink("b.book", dir.join("link.bin")).unwrap();
    std::os::unix::fs::symlink("b.book.live", dir.join("live-link.bin")).unwrap();
    let before = files_of(dir);
    let outs = [
        "b.book",
        "b.book.live",
        "b.book.lock",
        "b.book.seg-000000000002",
        "b.book.staging",
        "b.book.staging/x",
        "hard.bin",
        "link.bin",
        "live-link.bin",
        "./b.book",
    ];
    for out in outs {
        let out_path = dir.join(out);
        let o = bookdb([
            "export",
            "--book",
            s(&book),
            "--format",
            "polyglot",
            "--out",
            s(&out_path),
        ])
        .output();
        assert_eq!(
            o.status.code(),
            Some(1),
            "export --out {out}: {}",
            stderr(&o)
        );
        assert!(
            stderr(&o).contains("would destroy the book"),
            "{}",
            stderr(&o)
        );
        let o = bookdb([
            "import",
            s(&dir.join("first.pgn")),
            "--force",
            "--book",
            s(&book),
            "--report",
            s(&out_path),
        ])
        .output();
        assert_eq!(
            o.status.code(),
            Some(1),
            "import --report {out}: {}",
            stderr(&o)
        );
        assert!(stderr(&o).contains("--report"), "{}", stderr(&o));
        assert_eq!(files_of(dir), before, "{out}: the book's files changed");
    }
    assert_eq!(common::dump(&book), dump);
    // A path beside the book that is not one of its files is fine.
    bookdb([
        "export",
        "--book",
        s(&book),
        "--format",
        "polyglot",
        "--out",
        s(&dir.join("b.book.bin")),
    ])
    .ok();
}

fn mkfifo(p: &Path) {
    let c = std::ffi::CString::new(p.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: a valid NUL-terminated path.
    assert_eq!(unsafe { libc::mkfifo(c.as_ptr(), 0o644) }, 0);
}

fn export_json(book: &Path, format: &str, out: &Path) -> serde_json::Value {
    let o = bookdb([
        "export",
        "--book",
        s(book),
        "--format",
        format,
        "--out",
        s(out),
        "--json",
    ])
    .output();
    assert!(o.status.success(), "{}", stderr(&o));
    serde_json::from_slice(&o.stdout).unwrap()
}

#[test]
fn export_writes_through_a_fifo_and_a_device_and_replaces_a_links_target() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let book = live_book(dir);
    let plain = dir.join("plain.bin");
    let expected = {
        export_json(&book, "polyglot", &plain);
        std::fs::read(&plain).unwrap()
    };

    // A FIFO: a reader gets the export, the FIFO stays a FIFO.
    let fifo = dir.join("out.fifo");
    mkfifo(&fifo);
    let reader = {
        let fifo = fifo.clone();
        std::thread::spawn(move || std::fs::read(fifo).unwrap())
    };
    let summary = export_json(&book, "polyglot", &fifo);
    // Checked before joining: a FIFO replaced by a file leaves the reader waiting forever.
    assert!(
        std::fs::symlink_metadata(&fifo)
            .unwrap()
            .file_type()
            .is_fifo(),
        "the FIFO was replaced by a regular file"
    );
    let got = reader.join().unwrap();
    assert_eq!(got, expected);
    assert_eq!(summary["bytes"], expected.len() as u64);

    // A symlink to a regular file: the target gets the export, the link stays.
    let target = dir.join("target.bin");
    std::fs::write(&target, b"old").unwrap();
    let link = dir.join("link-out.bin");
    std::os::unix::fs::symlink("target.bin", &link).unwrap();
    export_json(&book, "polyglot", &link);
    assert!(
        std::fs::symlink_metadata(&link)
            .unwrap()
            .file_type()
            .is_symlink()
    );
    assert_eq!(std::fs::read(&target).unwrap(), expected);

    // A character device (a null device of our own, as root; /dev/null is not risked).
    let dev = dir.join("null");
    let c = std::ffi::CString::new(dev.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: a valid path; makedev(1, 3) is the null device.
    let made = unsafe { libc::mknod(c.as_ptr(), libc::S_IFCHR | 0o666, libc::makedev(1, 3)) };
    if made != 0 {
        eprintln!("SKIP: the device case: mknod needs root");
        return;
    }
    let summary = export_json(&book, "jsonl", &dev);
    let m = std::fs::symlink_metadata(&dev).unwrap();
    assert!(m.file_type().is_char_device(), "the device was replaced");
    assert_eq!(m.rdev(), libc::makedev(1, 3));
    assert!(summary["bytes"].as_u64().unwrap() > 0);
}

#[test]
fn export_to_stdout_counts_the_bytes_it_wrote() {
    let tmp = tempfile::tempdir().unwrap();
    let book = live_book(tmp.path());
    for format in ["jsonl", "polyglot"] {
        let o = bookdb([
            "export",
            "--book",
            s(&book),
            "--format",
            format,
            "--out",
            "-",
            "--json",
        ])
        .output();
        assert!(o.status.success(), "{}", stderr(&o));
        let summary: serde_json::Value = serde_json::from_slice(&o.stderr).unwrap();
        assert!(!o.stdout.is_empty());
        assert_eq!(
            summary["bytes"],
            o.stdout.len() as u64,
            "{format}: {summary}"
        );
    }
}

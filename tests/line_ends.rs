//! Line ends: a PGN file whose lines end with a carriage return alone (old Mac files) is read
//! as the same games as its LF copy (as python-chess reads it), plain, compressed or piped, in
//! parallel or with one job, with its skips reported at the right lines; CRLF files, and
//! files with doubled carriage returns, read as they always did.

mod common;
use common::*;

use std::path::{Path, PathBuf};

/// The sample with every LF replaced by `end`.
fn with_line_ends(dir: &Path, name: &str, end: &[u8]) -> PathBuf {
    let text = std::fs::read(sample_pgn()).unwrap();
    assert!(!text.contains(&b'\r'), "the sample has LF line ends");
    let mut out = Vec::with_capacity(text.len() * 2);
    for &b in &text {
        match b {
            b'\n' => out.extend_from_slice(end),
            b => out.push(b),
        }
    }
    let path = dir.join(name);
    std::fs::write(&path, out).unwrap();
    path
}

fn import(pgn: &str, book: &Path, extra: &[&str]) -> serde_json::Value {
    Bookdb::import(&[pgn], book)
        .args(["--json"])
        .args(extra)
        .json()
}

/// The games a book stores, as PGN (every stored game reached the start position).
fn stored_games(book: &Path) -> String {
    bookdb(["pgn", "--book", s(book), "--all", "--moves", ""]).ok()
}

#[test]
fn a_file_with_carriage_return_line_ends_reads_as_its_lf_copy() {
    let dir = tempfile::tempdir().unwrap();
    let lf = sample_pgn();
    let lf_book = dir.path().join("lf.book");
    let want = import(s(&lf), &lf_book, &[]);
    assert_eq!(want["games_imported"], 200, "{want}");
    let want_dump = dump(&lf_book);
    let want_games = stored_games(&lf_book);

    let mac = with_line_ends(dir.path(), "mac.pgn", b"\r");
    let crlf = with_line_ends(dir.path(), "crlf.pgn", b"\r\n");
    let crcrlf = with_line_ends(dir.path(), "crcrlf.pgn", b"\r\r\n");
    let mac_zst = dir.path().join("mac.pgn.zst");
    std::fs::write(
        &mac_zst,
        zstd::encode_all(&std::fs::read(&mac).unwrap()[..], 3).unwrap(),
    )
    .unwrap();
    for (name, input, extra) in [
        ("CR", s(&mac), &[][..]),
        ("CR, one job", s(&mac), &["--jobs", "1"][..]),
        ("CR, no games", s(&mac), &["--no-games"][..]),
        ("CR, zstd", s(&mac_zst), &[][..]),
        ("CRLF", s(&crlf), &[][..]),
        ("CR CR LF", s(&crcrlf), &[][..]),
    ] {
        let book = dir.path().join(format!(
            "{}.book",
            name.replace([' ', ','], "-").to_lowercase()
        ));
        let got = import(input, &book, extra);
        for k in ["games_read", "games_imported", "skipped_by_reason"] {
            assert_eq!(got[k], want[k], "{name}: {k}: {got}");
        }
        assert!(dump(&book) == want_dump, "{name}: the dump differs");
        if !extra.contains(&"--no-games") {
            assert!(
                stored_games(&book) == want_games,
                "{name}: the stored games differ"
            );
        }
    }
}

#[test]
fn a_carriage_return_file_read_from_a_pipe_reads_as_its_lf_copy() {
    let dir = tempfile::tempdir().unwrap();
    let lf_book = dir.path().join("lf.book");
    import(s(&sample_pgn()), &lf_book, &[]);
    let mac = with_line_ends(dir.path(), "mac.pgn", b"\r");
    let book = dir.path().join("pipe.book");
    let out = Bookdb::import(&["-"], &book)
        .arg("--json")
        .command()
        .stdin(std::fs::File::open(&mac).unwrap())
        .output()
        .unwrap();
    assert!(out.status.success(), "{out:?}");
    assert!(dump(&book) == dump(&lf_book), "the dump differs");
}

/// A skipped game of a CR-only file is reported at its line, counted as python-chess counts
/// lines (each lone CR ends one).
#[test]
fn skips_in_a_carriage_return_file_name_their_lines() {
    let dir = tempfile::tempdir().unwrap();
    let text = "[Event \"a\"]\r[Result \"1-0\"]\r\r1. e4 e5 2. Ke3 1-0\r\r\
                [Event \"b\"]\r[Result \"0-1\"]\r\r1. d4 d5\r2. Nz3 Nf6 0-1\r\r\
                [Event \"c\"]\r[Result \"*\"]\r\r1. c4 *\r";
    let pgn = dir.path().join("m.pgn");
    std::fs::write(&pgn, text).unwrap();
    let book = dir.path().join("m.book");
    let report = dir.path().join("m.report");
    let r = Bookdb::import(&[&pgn], &book)
        .args(["--json", "--report", s(&report)])
        .json();
    assert_eq!(r["games_read"], 3, "{r}");
    assert_eq!(r["games_imported"], 1, "{r}");
    let report = std::fs::read_to_string(&report).unwrap();
    assert!(report.contains("m.pgn:1\tillegal-move\t"), "{report}");
    assert!(report.contains("m.pgn:6\tunreadable\t"), "{report}");
}

/// A file whose first 64 KiB end lines with LF and whose rest ends them with a lone CR (an old
/// Mac file joined after another) is read as an LF file: its CR part reads as one line, which
/// is skipped with a reason that names the carriage returns and what to do.
#[test]
fn a_carriage_return_tail_after_lf_lines_is_skipped_with_what_to_do() {
    let dir = tempfile::tempdir().unwrap();
    let mut text = std::fs::read(sample_pgn()).unwrap();
    let lf_games = text.len();
    text.extend_from_slice(
        b"\n[Event \"mac\"]\r[Result \"1-0\"]\r\r1. e4 e5 1-0\r\r[Event \"mac2\"]\r[Result \"*\"]\r\r1. d4 *\r",
    );
    assert!(lf_games > 64 << 10);
    let pgn = dir.path().join("joined.pgn");
    std::fs::write(&pgn, text).unwrap();
    let book = dir.path().join("j.book");
    let report = dir.path().join("j.report");
    let r = Bookdb::import(&[&pgn], &book)
        .args(["--json", "--report", s(&report)])
        .json();
    assert_eq!(r["games_imported"], 200, "{r}");
    let report = std::fs::read_to_string(&report).unwrap();
    assert!(
        report.contains("lone carriage return") && report.contains("tr '\\r' '\\n'"),
        "{report}"
    );
}

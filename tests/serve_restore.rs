//! A backup restored in place while `bookdb serve` runs (issue 25, item 8): the operator
//! copies the backup's files over the book's (`cp backup/* dir/`: the same inodes, other
//! bytes) and removes the files the backup does not have. The server must notice, open the
//! restored files and answer the restored book's numbers, never a 500, also when the restore
//! brings back a generation number the server has served with other content.

mod common;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use common::server::{Server, enc};
use common::{bookdb, copy_live_book, dump, games_of, import_segment, s, sample_pgn, write_games};

/// The book's files: the base and every `<name>.*` but the lock and temporaries.
fn book_files(book: &Path) -> Vec<PathBuf> {
    let name = book.file_name().unwrap().to_string_lossy().into_owned();
    let mut v: Vec<PathBuf> = std::fs::read_dir(book.parent().unwrap())
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|f| {
            f == &name
                || f.strip_prefix(&format!("{name}."))
                    .is_some_and(|x| x == "live" || x.starts_with("seg-"))
        })
        .map(|f| book.with_file_name(f))
        .collect();
    v.sort();
    v
}

/// Restores the book at `backup` over `book` in place: each file copied over the book's
/// (truncated and rewritten: its inode stays), files the backup lacks removed.
fn restore_in_place(backup: &Path, book: &Path) {
    let backup_names: Vec<String> = book_files(backup)
        .iter()
        .map(|p| {
            let n = p.file_name().unwrap().to_string_lossy().into_owned();
            n.replacen(
                &*backup.file_name().unwrap().to_string_lossy(),
                &book.file_name().unwrap().to_string_lossy(),
                1,
            )
        })
        .collect();
    for (src, name) in book_files(backup).iter().zip(&backup_names) {
        std::fs::copy(src, book.with_file_name(name)).unwrap();
    }
    for f in book_files(book) {
        let n = f.file_name().unwrap().to_string_lossy().into_owned();
        if !backup_names.contains(&n) {
            std::fs::remove_file(&f).unwrap();
        }
    }
}

fn stats(book: &Path) -> serde_json::Value {
    serde_json::from_str(&bookdb(["stats", "--json", "--book", s(book)]).ok()).unwrap()
}

/// Waits (at most 30 s) until the server serves `want`'s games and generation, then checks
/// every position of `want`'s dump against `/v1/position`: same moves, never a 500.
fn follows(srv: &Server, want: &Path, what: &str) {
    let st = stats(want);
    let start = Instant::now();
    loop {
        let r = srv.get("/v1/book");
        if r.status == 200 {
            let v = r.json();
            if v["games"] == st["games"]
                && v["served_generation"] == st["generation"]
                && v["positions"] == st["positions"]
            {
                break;
            }
        }
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "{what}: the server did not follow the restore (serving {}; the restored book: games {} generation {}); log:\n{}",
            r.body,
            st["games"],
            st["generation"],
            srv.log_text()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    let text = dump(want);
    let mut checked = 0;
    for line in text.lines() {
        let d: serde_json::Value = serde_json::from_str(line).unwrap();
        let fen = d["fen"].as_str().unwrap();
        let r = srv.get(&format!("/v1/position?fen={}", enc(fen)));
        assert_eq!(r.status, 200, "{what}: {fen}: {}", r.body);
        assert_eq!(counts(&r.json()), counts(&d), "{what}: {fen}");
        checked += 1;
    }
    eprintln!("{what}: {checked} positions answered as the restored book's dump");
}

/// The generation and state tag of the state that answers `/masters`, checked against the
/// ones `/v1/book` says.
fn served(srv: &Server) -> (String, String) {
    let r = srv.get("/masters");
    assert_eq!(r.status, 200, "{}", r.body);
    let g = r.header("x-bookdb-generation").unwrap().to_string();
    let tag = r.header("x-bookdb-state").unwrap().to_string();
    assert_eq!(tag.len(), 16, "{tag}");
    let v = srv.get("/v1/book").json();
    assert_eq!(v["served_generation"].to_string(), g);
    assert_eq!(v["served_state"].as_str(), Some(tag.as_str()));
    (g, tag)
}

/// (uci, white, draws, black, unknown) of each move of a `dump`-shaped object.
fn counts(v: &serde_json::Value) -> Vec<(String, u64, u64, u64, u64)> {
    let n = |m: &serde_json::Value, k: &str| m[k].as_u64().unwrap_or(0);
    v["moves"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            let uci = m["uci"].as_str().unwrap().to_string();
            (
                uci,
                n(m, "white"),
                n(m, "draws"),
                n(m, "black"),
                n(m, "unknown"),
            )
        })
        .collect()
}

/// Books for the restores: the live book (a base of 100 games and a segment of 30,
/// generation 2), its backup A, and R1, R2: A grown by two different imports, each a segment
/// of generation 3 under the same manifest text.
struct Books {
    _tmp: tempfile::TempDir,
    book: PathBuf,
    a: PathBuf,
    r1: PathBuf,
    r2: PathBuf,
}

fn books() -> Books {
    let tmp = tempfile::tempdir().unwrap();
    let games = games_of(&sample_pgn());
    let pgn = |name: &str, range: std::ops::Range<usize>| {
        let p = tmp.path().join(name);
        write_games(&p, &games[range]);
        p
    };
    let live = tmp.path().join("live");
    std::fs::create_dir(&live).unwrap();
    let book = live.join("b.book");
    bookdb([
        "import",
        "--quiet",
        "--book",
        s(&book),
        s(&pgn("base.pgn", 0..100)),
    ])
    .ok();
    let seg = pgn("seg.pgn", 100..130);
    import_segment(&seg, &book);
    let side = |name: &str| {
        let d = tmp.path().join(name);
        std::fs::create_dir(&d).unwrap();
        d.join("b.book")
    };
    let a = side("a");
    copy_live_book(&book, &a);
    let r1 = side("r1");
    copy_live_book(&a, &r1);
    let x = pgn("x.pgn", 130..150);
    import_segment(&x, &r1);
    let r2 = side("r2");
    copy_live_book(&a, &r2);
    let y = pgn("y.pgn", 150..185);
    import_segment(&y, &r2);
    assert_eq!(stats(&r1)["generation"], stats(&r2)["generation"]);
    assert_eq!(
        std::fs::read(Manifest::of(&r1)).unwrap(),
        std::fs::read(Manifest::of(&r2)).unwrap(),
        "the two restores bring the same manifest"
    );
    Books {
        _tmp: tmp,
        book,
        a,
        r1,
        r2,
    }
}

#[test]
fn an_older_backup_restored_in_place_over_a_compacted_book_is_followed_without_500() {
    let b = books();
    let srv = Server::start(&b.book, &[]);
    // The book moves on: a compaction gives it a new base (generation 3).
    bookdb(["compact", "--quiet", "--book", s(&b.book)]).ok();
    follows(&srv, &b.book, "after compact");
    // The older backup A over it, in place: the base file keeps its inode, its bytes are
    // A's; the manifest goes back to generation 2.
    restore_in_place(&b.a, &b.book);
    follows(&srv, &b.a, "A restored over the compacted book");
    assert_eq!(srv.stop().code(), Some(0));
}

#[test]
fn a_restore_that_reuses_a_generation_with_another_segment_is_followed() {
    let b = books();
    let srv = Server::start(&b.book, &[]);
    // R1 in place (generation 3), then R2: the same generation and manifest text, another
    // segment of generation 3 (the same name, copied over R1's in place).
    restore_in_place(&b.r1, &b.book);
    follows(&srv, &b.r1, "R1 restored");
    let r1 = served(&srv);
    restore_in_place(&b.r2, &b.book);
    follows(&srv, &b.r2, "R2 restored (generation 3 reused)");
    let r2 = served(&srv);
    assert_eq!(r1.0, r2.0, "the generation reused");
    assert_ne!(r1.1, r2.1, "another segment, another state tag");
    assert_eq!(srv.stop().code(), Some(0));
}

/// The manifest's path of a book (docs/FORMAT.md §10.1).
struct Manifest;
impl Manifest {
    fn of(book: &Path) -> PathBuf {
        book.with_file_name(format!(
            "{}.live",
            book.file_name().unwrap().to_string_lossy()
        ))
    }
}

#[test]
fn a_symlink_repointed_at_another_book_is_followed() {
    // The blue/green switch: `serve --book current.book`, a symlink; a new book is built beside
    // the old one and the link re-pointed (`ln -sfn`: a new link renamed over the old). The
    // server serves the book the link leads to, as `stats --book current.book` does.
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let (blue, green) = (dir.join("blue.book"), dir.join("green.book"));
    bookdb(["import", s(&sample_pgn()), "--book", s(&blue)]).ok();
    let some = dir.join("some.pgn");
    write_games(&some, &games_of(&sample_pgn())[..20]);
    bookdb(["import", s(&some), "--book", s(&green)]).ok();
    let current = dir.join("current.book");
    std::os::unix::fs::symlink("blue.book", &current).unwrap();
    let srv = Server::start(&current, &[]);
    follows(&srv, &blue, "the link's first book");
    let blue_state = served(&srv);
    let next = dir.join("current.book.next");
    std::os::unix::fs::symlink("green.book", &next).unwrap();
    std::fs::rename(&next, &current).unwrap();
    follows(&srv, &green, "the re-pointed link");
    // Both books are at generation 1: the generation repeats, the state tag does not (a
    // client that keys its cache by the state sees the switch).
    let green_state = served(&srv);
    assert_eq!(
        blue_state.0, green_state.0,
        "both books at the same generation"
    );
    assert_ne!(
        blue_state.1, green_state.1,
        "another book, another state tag"
    );
    assert_eq!(served(&srv), green_state, "a state's tag is stable");
    // Writes through the link reach the book it leads to, and the server shows them.
    let more = dir.join("more.pgn");
    write_games(&more, &games_of(&sample_pgn())[150..160]);
    import_segment(&more, &current);
    follows(&srv, &green, "an import through the link");
}

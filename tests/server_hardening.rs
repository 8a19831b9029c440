//! `bookdb serve` against what the first users' tools and accidents did to it (issue 25):
//! request heads hyper refused with an empty body, the admin token checked after the upload
//! began, a lower-case `bearer`, server paths in answers, upload directories of a killed
//! server, and a low open-file limit.

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::os::unix::fs::{MetadataExt, PermissionsExt};
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::server::{Resp, Server};
use common::{
    bin, book_with_segments, bookdb, copy_in, games_of, import_segment, s, sample_pgn, write_games,
};

const TOKEN: &str = "hardening-token-0123456789";

fn sample_book(dir: &Path) -> PathBuf {
    let book = dir.join("sample.book");
    let pgn = copy_in(&sample_pgn(), dir);
    bookdb(["import", s(&pgn), "--book", s(&book), "--quiet"]).ok();
    book
}

fn token_file(dir: &Path) -> PathBuf {
    let p = dir.join("admin.token");
    std::fs::write(&p, format!("{TOKEN}\n")).unwrap();
    p
}

/// Sends `raw` and reads the answer to the end (the server closes after a refusal).
fn raw(srv: &Server, raw: &[u8]) -> Resp {
    srv.request(raw)
}

fn assert_json_error(r: &Resp, status: u16, what: &str) {
    assert_eq!(r.status, status, "{what}: {} {}", r.status, r.body);
    assert_eq!(
        r.header("content-type"),
        Some("application/json"),
        "{what}: {:?}",
        r.headers
    );
    let e = r.error();
    assert!(!e.is_empty(), "{what}: empty error");
}

#[test]
fn refused_request_heads_get_a_json_error_and_the_documented_status() {
    let tmp = tempfile::tempdir().unwrap();
    let book = sample_book(tmp.path());
    let srv = Server::start(&book, &[]);
    // Heads over 64 KiB, sent in one write (hyper used to take them up to its 128 KiB
    // buffer), and just under: 431 over, 200 under.
    for (kib, status) in [
        (60usize, 200u16),
        (65, 431),
        (100, 431),
        (127, 431),
        (200, 431),
    ] {
        let pad = kib * 1024 - 80;
        let req = format!(
            "GET /health HTTP/1.1\r\nHost: t\r\nX-Pad: {}\r\nConnection: close\r\n\r\n",
            "p".repeat(pad)
        );
        let r = raw(&srv, req.as_bytes());
        if status == 200 {
            assert_eq!(r.status, 200, "{kib} KiB head: {}", r.body);
        } else {
            assert_json_error(&r, 431, &format!("{kib} KiB head"));
        }
    }
    // 150 small header fields: 431 with the JSON error (was an empty body).
    let mut req = String::from("GET /health HTTP/1.1\r\nHost: t\r\nConnection: close\r\n");
    for i in 0..150 {
        req.push_str(&format!("X-H{i}: v\r\n"));
    }
    req.push_str("\r\n");
    let r = raw(&srv, req.as_bytes());
    assert_json_error(&r, 431, "150 header fields");
    assert!(r.error().contains("header fields"), "{}", r.error());
    // A garbage request line: 400 with the JSON error (was no body).
    for garbage in [
        &b"HELLO THERE\r\n\r\n"[..],
        b"GET / HTTP/1.1\r\nBad Header Without Colon\r\n\r\n",
        // An HTTP/2 client's preface with prior knowledge, and its first frame: hyper closed
        // the connection without an answer.
        b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n\x00\x00\x00\x04\x00\x00\x00\x00\x00",
    ] {
        let r = raw(&srv, garbage);
        assert_json_error(&r, 400, &String::from_utf8_lossy(garbage));
    }
    // Unharmed.
    assert_eq!(srv.get("/health").status, 200);
    assert_eq!(srv.stop().code(), Some(0));
}

/// A client that sends its whole upload and closes the connection at once (fire and forget,
/// or killed just after): the upload is imported (hyper dropped such a request at the EOF,
/// about half the time before the import began: nothing imported, nothing logged); one that
/// half-closes its side gets its answer. And a successful answer names no server path.
#[test]
fn an_upload_sent_whole_is_imported_when_its_client_goes_away() {
    let tmp = tempfile::tempdir().unwrap();
    let book = sample_book(tmp.path());
    let before = common::stats(&book)["games"].as_u64().unwrap();
    assert!(before > 0);
    let tf = token_file(tmp.path());
    let srv = Server::start(&book, &["--admin-token-file", s(&tf)]);
    // Games the book has not counted: the sample's under another round.
    let games: Vec<Vec<u8>> = games_of(&sample_pgn())
        .into_iter()
        .map(|g| [&b"[Round \"upload\"]\n"[..], &g].concat())
        .collect();
    let head = |body: &[u8]| {
        format!(
            "POST /v1/import HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer {TOKEN}\r\nContent-Length: {}\r\n\r\n",
            body.len()
        )
    };
    let mut sent = 0;
    for (n, g) in games.chunks(4).take(5).enumerate() {
        let pgn = tmp.path().join(format!("u{n}.pgn"));
        write_games(&pgn, g);
        let body = std::fs::read(&pgn).unwrap();
        let mut c = TcpStream::connect(&srv.addr).unwrap();
        c.write_all(head(&body).as_bytes()).unwrap();
        c.write_all(&body).unwrap();
        sent += g.len() as u64;
        if n % 2 == 0 {
            drop(c);
        } else {
            c.shutdown(std::net::Shutdown::Write).unwrap();
            let mut answer = Vec::new();
            let _ = c.read_to_end(&mut answer);
            let r = common::server::parse(&answer).expect("an answer to a half-closed client");
            assert_eq!(r.status, 200, "{}", r.body);
            assert!(!r.body.contains(".bookdb-upload-"), "{}", r.body);
        }
        // One admin import at a time: wait for this one to be in the book.
        let deadline = Instant::now() + Duration::from_secs(30);
        while metric(&srv.get("/metrics").body, "bookdb_imports_total") < n as u64 + 1 {
            assert!(
                Instant::now() < deadline,
                "upload {n} was not imported: {}",
                srv.log_text()
            );
            std::thread::sleep(Duration::from_millis(50));
        }
    }
    assert_eq!(srv.stop().code(), Some(0));
    assert_eq!(common::stats(&book)["games"].as_u64(), Some(before + sent));
}

/// The first status line the server sends for `head` (a request without its body), read
/// within a generous bound, and the connection.
fn first_answer(addr: &str, head: &str) -> (u16, String, TcpStream) {
    let mut c = TcpStream::connect(addr).unwrap();
    c.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    c.write_all(head.as_bytes()).unwrap();
    let mut buf = Vec::new();
    let mut byte = [0u8; 1];
    // Byte by byte: what follows the first answer stays unread.
    while c.read(&mut byte).is_ok_and(|n| n == 1) {
        buf.push(byte[0]);
        if buf.ends_with(b"\r\n\r\n") {
            let line = String::from_utf8_lossy(&buf[..buf.len() - 4]).into_owned();
            let status = line.split(' ').nth(1).and_then(|s| s.parse().ok()).unwrap();
            return (status, line, c);
        }
    }
    panic!("no answer to {head:?}: {:?}", String::from_utf8_lossy(&buf));
}

#[test]
fn the_admin_token_is_checked_before_100_continue_and_its_scheme_is_case_insensitive() {
    let tmp = tempfile::tempdir().unwrap();
    let book = sample_book(tmp.path());
    let tf = token_file(tmp.path());
    let srv = Server::start(&book, &["--admin-token-file", s(&tf)]);
    let games = games_of(&sample_pgn());
    let pgn = tmp.path().join("extra.pgn");
    write_games(&pgn, &games[..3]);
    let body = std::fs::read(&pgn).unwrap();
    let head = |auth: &str| {
        format!(
            "POST /v1/import HTTP/1.1\r\nHost: t\r\nContent-Length: {}\r\nExpect: 100-continue\r\nConnection: close\r\n{auth}\r\n",
            body.len()
        )
    };
    // A wrong token, no token: the refusal comes first, never `100 Continue`.
    for (auth, status) in [
        ("Authorization: Bearer wrong-token-0123456789\r\n", 403),
        ("", 401),
    ] {
        let (got, line, _) = first_answer(&srv.addr, &head(auth));
        assert_eq!(got, status, "{auth:?}: the first answer was {line:?}");
    }
    // The right token: 100 Continue, then the upload is imported.
    let (got, line, mut c) = first_answer(
        &srv.addr,
        &head(&format!("Authorization: Bearer {TOKEN}\r\n")),
    );
    assert_eq!(got, 100, "{line}");
    c.write_all(&body).unwrap();
    let mut rest = Vec::new();
    let _ = c.read_to_end(&mut rest);
    let r = common::server::parse(&rest).expect("an answer after the upload");
    assert_eq!(r.status, 200, "{}", r.body);

    // `bearer` in any case is the Bearer scheme (RFC 9110: schemes are case-insensitive).
    for scheme in ["bearer", "BEARER"] {
        let r = srv.post(
            "/v1/import?force=true",
            &[("Authorization", &format!("{scheme} {TOKEN}"))],
            &body,
        );
        assert_eq!(r.status, 200, "{scheme}: {}", r.body);
    }
    assert_eq!(srv.stop().code(), Some(0));
}

#[test]
fn answers_reveal_no_server_paths() {
    let tmp = tempfile::tempdir().unwrap();
    let book = sample_book(tmp.path());
    let tf = token_file(tmp.path());
    let srv = Server::start(&book, &["--admin-token-file", s(&tf)]);
    let dir = tmp.path().display().to_string();
    let games = games_of(&sample_pgn());
    let pgn = tmp.path().join("extra.pgn");
    write_games(&pgn, &games[..2]);
    let body = std::fs::read(&pgn).unwrap();
    let auth = format!("Bearer {TOKEN}");
    let first = srv.post("/v1/import", &[("Authorization", &auth)], &body);
    assert_eq!(first.status, 200, "{}", first.body);
    // The same body again: recognised, and said without the upload's path.
    let again = srv.post("/v1/import", &[("Authorization", &auth)], &body);
    assert_eq!(again.status, 200, "{}", again.body);
    let v = again.json();
    assert_eq!(
        v["already_imported"],
        serde_json::json!(["the upload"]),
        "{}",
        again.body
    );
    // An upload that is not games: the error names no path either.
    let bad = srv.post(
        "/v1/import",
        &[("Authorization", &auth)],
        b"\x00\x01\x02 not pgn",
    );
    for (what, r) in [
        ("repeated import", &again),
        ("/v1/book", &srv.get("/v1/book")),
        ("bad upload", &bad),
    ] {
        assert!(!r.body.contains(&dir), "{what} names {dir}: {}", r.body);
        assert!(!r.body.contains(".bookdb-upload"), "{what}: {}", r.body);
    }
    let stats = srv.get("/v1/book").json();
    assert_eq!(stats["path"], "sample.book");
    assert_eq!(srv.stop().code(), Some(0));
}

/// Waits (at most 30 s) until `dir` holds an entry whose name starts with `prefix`.
fn wait_for_entry(dir: &Path, prefix: &str) -> PathBuf {
    let start = Instant::now();
    loop {
        if let Some(e) = std::fs::read_dir(dir)
            .unwrap()
            .flatten()
            .find(|e| e.file_name().to_string_lossy().starts_with(prefix))
        {
            return e.path();
        }
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "no {prefix}* in {}",
            dir.display()
        );
        std::thread::sleep(Duration::from_millis(20));
    }
}

fn uploads(dir: &Path) -> Vec<String> {
    let mut v: Vec<String> = std::fs::read_dir(dir)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.starts_with(".bookdb-upload-"))
        .collect();
    v.sort();
    v
}

#[test]
fn upload_directories_take_the_books_mode_and_a_killed_servers_are_removed_at_start() {
    let tmp = tempfile::tempdir().unwrap();
    let book = sample_book(tmp.path());
    std::fs::set_permissions(&book, std::fs::Permissions::from_mode(0o640)).unwrap();
    let tf = token_file(tmp.path());
    let srv = Server::start(&book, &["--admin-token-file", s(&tf)]);
    // Half an upload: the directory exists while the body streams.
    let mut c = TcpStream::connect(&srv.addr).unwrap();
    c.write_all(
        format!(
            "POST /v1/import HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer {TOKEN}\r\nContent-Length: 1000000\r\n\r\n[Event \"half\"]\n"
        )
        .as_bytes(),
    )
    .unwrap();
    let up = wait_for_entry(tmp.path(), ".bookdb-upload-");
    let m = std::fs::metadata(&up).unwrap();
    assert_eq!(
        m.mode() & 0o777,
        0o750,
        "the upload directory of a 0640 book (umask 022)"
    );
    assert_eq!(m.gid(), std::fs::metadata(&book).unwrap().gid());
    let file = up.join("upload");
    let start = Instant::now();
    while !file.exists() {
        assert!(start.elapsed() < Duration::from_secs(30));
        std::thread::sleep(Duration::from_millis(20));
    }
    assert_eq!(std::fs::metadata(&file).unwrap().mode() & 0o777, 0o640);
    // Killed with the upload half-way (Server's drop is SIGKILL).
    drop(srv);
    drop(c);
    let left = uploads(tmp.path());
    assert_eq!(left.len(), 1, "{left:?}");
    // A directory of that name bookdb did not make (no marker) is not bookdb's to remove.
    let foreign = tmp.path().join(".bookdb-upload-notours");
    std::fs::create_dir(&foreign).unwrap();
    std::fs::write(foreign.join("keep"), b"x").unwrap();
    let srv = Server::start(&book, &[]);
    assert_eq!(
        uploads(tmp.path()),
        vec![".bookdb-upload-notours".to_string()],
        "the killed server's upload directory is removed at start; log:\n{}",
        srv.log_text()
    );
    assert!(foreign.join("keep").exists());
    assert_eq!(srv.stop().code(), Some(0));
}

/// `bookdb serve` with `RLIMIT_NOFILE` 64 (soft and hard, as `ulimit -n 64` sets it).
fn start_limited(book: &Path) -> Server {
    let log = book.with_extension("limited.log");
    let mut cmd = Command::new(bin());
    cmd.args([
        "serve",
        "--book",
        s(book),
        "--listen",
        "127.0.0.1:0",
        "--refresh-ms",
        "50",
    ])
    .stdout(Stdio::piped())
    .stderr(std::fs::File::create(&log).unwrap());
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
    let mut child = cmd.spawn().unwrap();
    let mut first = String::new();
    std::io::BufRead::read_line(
        &mut std::io::BufReader::new(child.stdout.take().unwrap()),
        &mut first,
    )
    .unwrap();
    let addr = first
        .split("http://")
        .nth(1)
        .and_then(|r| r.split([' ', '"']).next())
        .unwrap_or_else(|| panic!("no listening line: {first:?}"))
        .to_string();
    Server { child, addr, log }
}

fn metric(text: &str, name: &str) -> u64 {
    text.lines()
        .find_map(|l| l.strip_prefix(&format!("{name} ")))
        .and_then(|v| v.trim().parse::<f64>().ok())
        .unwrap_or_else(|| panic!("no {name} in {text}")) as u64
}

#[test]
fn serve_under_a_low_open_file_limit_caps_connections_and_keeps_following_the_book() {
    let tmp = tempfile::tempdir().unwrap();
    let book = tmp.path().join("fd.book");
    // The most segments the live book keeps: 8.
    book_with_segments(&book, 100, 8, 5);
    let games = games_of(&sample_pgn());
    let srv = start_limited(&book);
    // A flood of idle connections, more than the limit allows descriptors for.
    let mut flood = Vec::new();
    for _ in 0..100 {
        if let Ok(c) = TcpStream::connect(&srv.addr) {
            flood.push(c);
        }
    }
    // Give the server the flood before the book changes (no assertion on time).
    std::thread::sleep(Duration::from_millis(300));
    // A 9th segment, then the fold: the refresh must open the new files.
    let p = tmp.path().join("s8.pgn");
    write_games(&p, &games[150..160]);
    import_segment(&p, &book);
    let want = bookdb(["stats", "--json", "--book", s(&book)]).ok();
    let want: serde_json::Value = serde_json::from_str(&want).unwrap();
    let g = want["generation"].as_u64().unwrap();
    let followed = |log: &str| {
        log.lines().any(|l| {
            l.contains("book changed") && l.trim_end().ends_with(&format!("generation={g}"))
        })
    };
    let start = Instant::now();
    while !followed(&srv.log_text()) {
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "the server did not follow the book under the flood; log:\n{}",
            srv.log_text()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    drop(flood);
    // The flood is gone: the server answers, followed the book, never failed a refresh.
    let start = Instant::now();
    let m = loop {
        if let Ok(r) =
            srv.try_request(b"GET /metrics HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")
            && r.status == 200
        {
            break r.body;
        }
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "no answer after the flood"
        );
        std::thread::sleep(Duration::from_millis(50));
    };
    assert_eq!(
        metric(&m, "bookdb_book_refresh_errors_total"),
        0,
        "{}",
        srv.log_text()
    );
    assert!(
        metric(&m, "bookdb_http_connections_refused_total") > 0,
        "the cap was reached: {m}"
    );
    let stats = srv.get("/v1/book").json();
    assert_eq!(stats["served_generation"], want["generation"]);
    assert_eq!(stats["positions"], want["positions"]);
    let log = srv.log_text();
    assert!(
        log.contains("open-file limit is 64"),
        "the cap is said at start: {log}"
    );
    assert!(!log.contains("Too many open files"), "{log}");
    assert_eq!(srv.stop().code(), Some(0));
}

/// An admin upload that trickles holds neither the server's stop nor the one admin slot: after
/// SIGTERM it is given up (nothing imported; its client told 503) and the server exits while
/// the client still sends; an upload that stalls longer than `--head-timeout` gets 408.
#[test]
fn slow_admin_uploads_neither_hold_the_stop_nor_the_admin_slot() {
    let tmp = tempfile::tempdir().unwrap();
    let book = sample_book(tmp.path());
    let games = common::stats(&book)["games"].clone();
    let tf = token_file(tmp.path());
    let head = format!(
        "POST /v1/import HTTP/1.1\r\nHost: t\r\nAuthorization: Bearer {TOKEN}\r\nContent-Length: 1000000\r\n\r\n"
    );
    // A stall past --head-timeout: 408, and the slot is free for the next upload.
    let srv = Server::start(
        &book,
        &["--admin-token-file", s(&tf), "--head-timeout", "1"],
    );
    let mut c = TcpStream::connect(&srv.addr).unwrap();
    c.set_read_timeout(Some(Duration::from_secs(30))).unwrap();
    c.write_all(head.as_bytes()).unwrap();
    c.write_all(b"[Event \"stall\"]\n").unwrap();
    let mut answer = Vec::new();
    let _ = c.read_to_end(&mut answer);
    let r = common::server::parse(&answer).expect("an answer to a stalled upload");
    assert_json_error(&r, 408, "a stalled upload");
    assert!(r.error().contains("stalled"), "{}", r.body);
    assert_eq!(srv.stop().code(), Some(0));
    // SIGTERM while an upload trickles (a part every 0.2 s, within the head timeout).
    let mut srv = Server::start(&book, &["--admin-token-file", s(&tf)]);
    let mut c = TcpStream::connect(&srv.addr).unwrap();
    c.set_write_timeout(Some(Duration::from_secs(5))).unwrap();
    c.write_all(head.as_bytes()).unwrap();
    let trickle = std::thread::spawn(move || {
        // Sends until the server is gone or 60 s passed; returns what the server answered.
        let start = Instant::now();
        while start.elapsed() < Duration::from_secs(60) {
            if c.write_all(b"1. e4 e5 ").is_err() {
                break;
            }
            std::thread::sleep(Duration::from_millis(200));
        }
        c.set_read_timeout(Some(Duration::from_secs(5))).unwrap();
        let mut answer = Vec::new();
        let _ = c.read_to_end(&mut answer);
        answer
    });
    std::thread::sleep(Duration::from_millis(1000));
    srv.signal(libc::SIGTERM);
    // Well before the 30 s grace period and the trickle's 60 s: the stop does not wait.
    assert_eq!(srv.wait_exit(Duration::from_secs(20)).code(), Some(0));
    let answer = trickle.join().unwrap();
    if let Some(r) = common::server::parse(&answer) {
        assert_json_error(&r, 503, "an upload given up at the stop");
    }
    assert_eq!(common::stats(&book)["games"], games, "nothing was imported");
    common::verify(&book);
}

/// A book gone from under a server (moved away, a restore in progress): it serves the state it
/// has, counts every failed check, and logs the same error once, not at every check (10 lines a
/// second by default, 20 at `--refresh-ms 50`); back, it says so.
#[test]
fn a_missing_book_is_logged_once_not_at_every_check() {
    let tmp = tempfile::tempdir().unwrap();
    let book = sample_book(tmp.path());
    // (Server::start checks for changes every 50 ms.)
    let srv = Server::start(&book, &[]);
    let away = tmp.path().join("away.book");
    std::fs::rename(&book, &away).unwrap();
    let failed = "checking the book for changes failed";
    let start = Instant::now();
    while metric(
        &srv.get("/metrics").body,
        "bookdb_book_refresh_errors_total",
    ) < 20
    {
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "no failed checks: {}",
            srv.log_text()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(
        srv.get("/masters").status,
        200,
        "the state it has is served"
    );
    assert_eq!(
        srv.log_text().matches(failed).count(),
        1,
        "{}",
        srv.log_text()
    );
    std::fs::rename(&away, &book).unwrap();
    let start = Instant::now();
    while !srv.log_text().contains("can be checked for changes again") {
        assert!(
            start.elapsed() < Duration::from_secs(30),
            "{}",
            srv.log_text()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(srv.log_text().matches(failed).count(), 1);
    assert_eq!(srv.stop().code(), Some(0));
}

/// Reads from `c` until the server closes; the bytes and how long it took.
fn read_to_close(c: &mut TcpStream) -> (String, Duration) {
    c.set_read_timeout(Some(Duration::from_secs(20))).unwrap();
    let t = Instant::now();
    let mut buf = Vec::new();
    let _ = c.read_to_end(&mut buf);
    (String::from_utf8_lossy(&buf).into_owned(), t.elapsed())
}

/// `--head-timeout` (campaign 10, 01): a request head begun and not finished in time is
/// answered 408 with a JSON body (hyper's own timeout closed it without a word); an idle
/// connection is closed without one; a head sent a byte at a time but finished in time, and
/// requests pipelined in one write, are answered as usual.
#[test]
fn a_request_head_not_finished_in_time_gets_408_and_an_idle_connection_is_closed_silently() {
    let tmp = tempfile::tempdir().unwrap();
    let book = sample_book(tmp.path());
    // Its own clock closes at 3 s; hyper's backstop (twice the limit and a second) would at 7.
    let srv = Server::start(&book, &["--head-timeout", "3"]);
    let by_its_own_clock = |took: Duration, what: &str| {
        assert!(
            took >= Duration::from_millis(2_500) && took < Duration::from_secs(6),
            "{what}: closed after {took:?}"
        );
    };

    let mut slow = TcpStream::connect(&srv.addr).unwrap();
    slow.write_all(b"GET /masters HTTP/1.1\r\nHost: t\r\nAccept: */*")
        .unwrap();
    let (text, took) = read_to_close(&mut slow);
    let r = common::server::parse(text.as_bytes()).expect("an answer");
    assert_json_error(&r, 408, "a head not finished");
    assert!(r.error().contains("--head-timeout"), "{}", r.error());
    assert_eq!(r.header("connection"), Some("close"));
    by_its_own_clock(took, "a head not finished");

    // Idle from the start, and idle after an answer (HTTP/1.1, and HTTP/1.0 kept alive, which
    // hyper answers in HTTP/1.0): closed, nothing more written.
    let mut idle = TcpStream::connect(&srv.addr).unwrap();
    let (text, took) = read_to_close(&mut idle);
    assert_eq!(text, "");
    by_its_own_clock(took, "idle from the start");
    for (request, version) in [
        (&b"GET /masters HTTP/1.1\r\nHost: t\r\n\r\n"[..], "HTTP/1.1"),
        (
            b"GET /masters HTTP/1.0\r\nConnection: keep-alive\r\n\r\n",
            "HTTP/1.0",
        ),
    ] {
        let mut kept = TcpStream::connect(&srv.addr).unwrap();
        kept.write_all(request).unwrap();
        let (text, took) = read_to_close(&mut kept);
        assert_eq!(text.matches(version).count(), 1, "{text}");
        assert!(text.starts_with(&format!("{version} 200 ")), "{text}");
        by_its_own_clock(took, version);
    }

    // A head trickled in six parts over ~1.2 s (the limit is for the whole head) is served.
    let head = b"GET /masters HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n";
    let mut trickle = TcpStream::connect(&srv.addr).unwrap();
    for chunk in head.chunks(head.len() / 6 + 1) {
        trickle.write_all(chunk).unwrap();
        std::thread::sleep(Duration::from_millis(200));
    }
    let (text, _) = read_to_close(&mut trickle);
    assert!(text.starts_with("HTTP/1.1 200 "), "{text}");

    // Pipelined: four requests in one write, four answers in order, then the close asked.
    let mut piped = TcpStream::connect(&srv.addr).unwrap();
    let mut all = Vec::new();
    for (i, fen_moves) in ["", "e2e4", "d2d4", "e2e4,c7c5"].iter().enumerate() {
        let close = if i == 3 { "Connection: close\r\n" } else { "" };
        all.extend_from_slice(
            format!("GET /masters?play={fen_moves} HTTP/1.1\r\nHost: t\r\n{close}\r\n").as_bytes(),
        );
    }
    piped.write_all(&all).unwrap();
    let (text, _) = read_to_close(&mut piped);
    assert_eq!(text.matches("HTTP/1.1 200 ").count(), 4, "{text}");
    let singles: Vec<u64> = ["", "e2e4", "d2d4", "e2e4,c7c5"]
        .iter()
        .map(|p| {
            srv.get(&format!("/masters?play={p}")).json()["white"]
                .as_u64()
                .unwrap()
        })
        .collect();
    let piped_whites: Vec<u64> = text
        .split("HTTP/1.1 200 ")
        .skip(1)
        .map(|a| {
            let body = a.split_once("\r\n\r\n").unwrap().1;
            let body = &body[..body.rfind('}').unwrap() + 1];
            serde_json::from_str::<serde_json::Value>(body).unwrap()["white"]
                .as_u64()
                .unwrap()
        })
        .collect();
    assert_eq!(piped_whites, singles, "answers in the order asked");
    assert!(
        singles.windows(2).any(|w| w[0] != w[1]),
        "the positions differ: {singles:?}"
    );
    assert_eq!(srv.stop().code(), Some(0));
}

//! `bookdb serve` as clients see it: the real binary on a free loopback port, spoken to over
//! HTTP. Answers equal `dump` for every position of the sample book; the berserk lichess client
//! reads them; changes committed by other processes are served within a second without a
//! failed request; hostile clients get a 4xx JSON error or a closed connection; the admin import
//! is exactly-once and guarded by its token; SIGTERM finishes what is in flight.

mod common;

use std::io::{Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use common::server::{Server, enc};
use common::{
    Bookdb, berserk_python, bookdb, copy_in, dump, s, sample_halves, sample_pgn, stats, verify,
};
use serde_json::Value;

fn sample_book(dir: &Path) -> PathBuf {
    let book = dir.join("sample.book");
    let pgn = copy_in(&sample_pgn(), dir);
    Bookdb::import(&[&pgn], &book).arg("--quiet").ok();
    book
}

fn dump_lines(book: &Path) -> Vec<Value> {
    dump(book)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect()
}

/// (uci, white, draws, black, unknown) of a move object.
fn counts(m: &Value) -> (String, u64, u64, u64, u64) {
    (
        m["uci"].as_str().unwrap().to_string(),
        m["white"].as_u64().unwrap(),
        m["draws"].as_u64().unwrap(),
        m["black"].as_u64().unwrap(),
        m["unknown"].as_u64().unwrap(),
    )
}

/// Checks the server's `/masters` and `/v1/position` answers for `line` (a dump line).
fn check_against_dump(srv: &Server, line: &Value) {
    let fen = line["fen"].as_str().unwrap();
    let mut want: Vec<_> = line["moves"]
        .as_array()
        .unwrap()
        .iter()
        .map(counts)
        .collect();
    // Most games first, then by UCI (docs/CONTRACT.md §3; games = white + draws + black + unknown).
    want.sort_by(|a, b| {
        (b.1 + b.2 + b.3 + b.4)
            .cmp(&(a.1 + a.2 + a.3 + a.4))
            .then(a.0.cmp(&b.0))
    });
    let r = srv.get(&format!("/masters?fen={}&moves=500", enc(fen)));
    assert_eq!(r.status, 200, "{fen}: {}", r.body);
    let j = r.json();
    let got: Vec<_> = j["moves"].as_array().unwrap().iter().map(counts).collect();
    assert_eq!(got, want, "{fen}");
    assert_eq!(j["fen"], line["fen"]);
    assert_eq!(j["key"], line["key"]);
    for (field, i) in [("white", 1), ("draws", 2), ("black", 3), ("unknown", 4)] {
        let sum: u64 = want.iter().map(|m| [0, m.1, m.2, m.3, m.4][i]).sum();
        assert_eq!(j[field].as_u64().unwrap(), sum, "{fen} {field}");
    }
    // The games (tests/game_refs.rs checks which): /masters lists at most 15 top games, each
    // playing one of the position's moves, and no recent ones; a move's game is given exactly
    // when one game played it.
    let top = j["topGames"].as_array().unwrap();
    assert!(top.len() <= 15, "{fen}: {top:?}");
    assert_eq!(top.is_empty(), want.is_empty(), "{fen}: {top:?}");
    for g in top {
        assert!(
            want.iter().any(|m| m.0 == g["uci"].as_str().unwrap()),
            "{fen}: {g}"
        );
    }
    assert!(j.get("recentGames").is_none(), "{fen}");
    for m in j["moves"].as_array().unwrap() {
        let games = counts(m);
        assert_eq!(
            m["game"].is_object(),
            games.1 + games.2 + games.3 + games.4 == 1,
            "{fen}: {m}"
        );
        if m["game"].is_object() {
            assert_eq!(m["game"]["uci"], m["uci"], "{fen}: {m}");
        }
        assert!(!m["san"].as_str().unwrap().is_empty());
    }
    // /v1/position: dump's shape for the same position.
    let p = srv.get(&format!("/v1/position?fen={}", enc(fen))).json();
    assert_eq!(p["key"], line["key"]);
    let mut pm: Vec<_> = p["moves"].as_array().unwrap().iter().map(counts).collect();
    let mut dm: Vec<_> = line["moves"]
        .as_array()
        .unwrap()
        .iter()
        .map(counts)
        .collect();
    pm.sort();
    dm.sort();
    assert_eq!(pm, dm, "{fen}");
}

#[test]
fn answers_equal_dump_for_every_position() {
    let tmp = tempfile::tempdir().unwrap();
    let book = sample_book(tmp.path());
    let srv = Server::start(&book, &[]);
    let lines = dump_lines(&book);
    assert!(lines.len() > 5_000, "{}", lines.len());
    let start = Instant::now();
    for line in &lines {
        check_against_dump(&srv, line);
    }
    eprintln!(
        "{} positions: /masters and /v1/position equal dump ({:.1} s)",
        lines.len(),
        start.elapsed().as_secs_f64()
    );
    // The default lists 12 moves; the totals still count every move.
    let start_pos = srv.get("/masters").json();
    let all = srv.get("/masters?moves=500").json();
    let n = all["moves"].as_array().unwrap().len();
    assert_eq!(start_pos["moves"].as_array().unwrap().len(), n.min(12));
    assert_eq!(start_pos["white"], all["white"]);
    assert_eq!(
        srv.get("/masters?moves=0").json()["moves"],
        serde_json::json!([])
    );
    // A position the book does not hold: zeros and no moves, not an error.
    let r = srv.get("/masters?play=a2a3,h7h6,h2h3,a7a6");
    assert_eq!(r.status, 200);
    assert_eq!(r.json()["moves"], serde_json::json!([]));
    assert_eq!(r.json()["white"], 0);
    assert!(r.header("x-bookdb-generation").is_some());
    assert_eq!(srv.stop().code(), Some(0));
}

#[test]
fn san_ratings_and_opening_names() {
    let tmp = tempfile::tempdir().unwrap();
    let book = sample_book(tmp.path());
    let srv = Server::start(&book, &[]);
    let j = srv.get("/masters?play=e2e4,c7c5").json();
    assert_eq!(j["opening"]["eco"], "B20");
    assert_eq!(j["opening"]["name"], "Sicilian Defense");
    // After a move the table does not name, the last named position of the line names it.
    let line = srv.get("/masters?play=e2e4,c7c5,a2a3&moves=1").json();
    assert!(
        line["opening"]["name"]
            .as_str()
            .unwrap()
            .starts_with("Sicilian Defense"),
        "{line}"
    );
    // Each move carries the name of the position it reaches, if that has one.
    let first = &srv.get("/masters?play=e2e4").json()["moves"];
    let c5 = first
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["uci"] == "c7c5")
        .unwrap();
    assert_eq!(c5["opening"]["eco"], "B20");
    assert_eq!(c5["san"], "c5");
    // The start position has no name; probe shows the same names as the server.
    assert!(srv.get("/masters").json()["opening"].is_null());
    let probe: Value =
        bookdb(["probe", "--book", s(&book), "--moves", "e4 c5 a3", "--json"]).json();
    assert_eq!(probe["opening"], line["opening"]);
    let table = bookdb(["probe", "--book", s(&book), "--moves", "e4 c5"]).ok();
    assert!(table.contains("opening   B20 Sicilian Defense"), "{table}");
    // averageRating is the mean of the mover's rating over the rated games that played the
    // move; absent when none was rated.
    let rated = tmp.path().join("rated.pgn");
    std::fs::write(
        &rated,
        "[WhiteElo \"2400\"]\n[BlackElo \"2000\"]\n[Result \"1-0\"]\n\n1. e4 e5 1-0\n\n\
         [WhiteElo \"2201\"]\n[Result \"0-1\"]\n\n1. e4 c5 0-1\n\n\
         [Result \"1/2-1/2\"]\n\n1. e4 e5 1/2-1/2\n\n\
         [Result \"*\"]\n\n1. d4 *\n",
    )
    .unwrap();
    let rbook = tmp.path().join("rated.book");
    Bookdb::import(&[&rated], &rbook).arg("--quiet").ok();
    let rsrv = Server::start(&rbook, &[]);
    let j = rsrv.get("/masters").json();
    let by = |uci: &str| {
        j["moves"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["uci"] == uci)
            .unwrap()
            .clone()
    };
    assert_eq!(by("e2e4")["averageRating"], 2300, "{j}");
    assert!(by("d2d4").get("averageRating").is_none(), "{j}");
    assert_eq!(
        (
            j["white"].as_u64(),
            j["draws"].as_u64(),
            j["black"].as_u64(),
            j["unknown"].as_u64()
        ),
        (Some(1), Some(1), Some(1), Some(1))
    );
    let e5 = rsrv.get("/masters?play=e2e4").json();
    let e5 = e5["moves"]
        .as_array()
        .unwrap()
        .iter()
        .find(|m| m["uci"] == "e7e5")
        .unwrap()
        .clone();
    assert_eq!(e5["averageRating"], 2000, "{e5}");
    // SAN carries check marks: a line that gives check.
    let chk = srv
        .get("/masters?play=e2e4,f7f6,d2d4,g7g5&moves=500")
        .json();
    for m in chk["moves"].as_array().unwrap() {
        if m["uci"] == "d1h5" {
            assert_eq!(m["san"], "Qh5#");
        }
    }
}

#[test]
fn the_berserk_lichess_client_reads_our_answers() {
    let Some(py) = berserk_python() else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let book = sample_book(tmp.path());
    let srv = Server::start(&book, &[]);
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/scripts/berserk_client.py");
    let out = Command::new(py)
        .arg(script)
        .arg(format!("http://{}", srv.addr))
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "berserk: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    let got: Value = serde_json::from_slice(&out.stdout).unwrap();
    let ours = |q: &str| srv.get(q).json();
    assert_eq!(got["masters_start"], ours("/masters"));
    // berserk sends its filters; the book honours them (docs/FORMAT.md §12).
    assert_eq!(
        got["masters_sicilian"],
        ours("/masters?play=e2e4,c7c5&moves=5&since=1952&until=2024&topGames=4")
    );
    assert_eq!(
        got["lichess_e4"],
        ours("/lichess?play=e2e4&moves=3&speeds=blitz,rapid&ratings=1600,1800")
    );
    // The sample's games carry no TimeControl: no game is blitz or rapid, so the filtered
    // answer counts none — never the whole book, as when filters were ignored.
    assert_eq!(got["lichess_e4"]["moves"], serde_json::json!([]));
    assert_ne!(
        ours("/lichess?play=e2e4&moves=3")["moves"],
        serde_json::json!([])
    );
    assert_eq!(got["masters_fen"], ours("/masters?play=e2e4"));
    assert_eq!(
        got["masters_sicilian"]["opening"]["name"],
        "Sicilian Defense"
    );
    assert!(got["masters_start"]["moves"].as_array().unwrap().len() > 3);
    assert_eq!(got["illegal"]["status"], 400, "{}", got["illegal"]);
    // get_otb_master_game: the stored game as PGN (berserk asks /master/pgn/ID).
    let id = got["otb_game_id"]
        .as_str()
        .expect("a top game after 1.e4 c5");
    let pgn = srv.get(&format!("/masters/pgn/{id}"));
    assert_eq!(pgn.status, 200);
    assert_eq!(got["otb_game"].as_str(), Some(pgn.body.as_str()));
    assert!(
        pgn.body.contains(&format!("[GameId \"{id}\"]")),
        "{}",
        pgn.body
    );
}

/// Polls `/v1/book` until the served generation differs from `old`; the time it took.
fn wait_for_generation_change(srv: &Server, old: u64) -> (u64, Duration) {
    let start = Instant::now();
    loop {
        let g = srv.get("/v1/book").json()["served_generation"]
            .as_u64()
            .unwrap();
        if g != old {
            return (g, start.elapsed());
        }
        assert!(
            start.elapsed() < Duration::from_secs(10),
            "generation stuck at {old}"
        );
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn changes_by_other_processes_are_served_within_a_second_without_a_failed_request() {
    let tmp = tempfile::tempdir().unwrap();
    let (first, second) = sample_halves(tmp.path());
    let book = tmp.path().join("live.book");
    Bookdb::import(&[&first], &book).arg("--quiet").ok();
    let srv = Arc::new(Server::start(&book, &[]));

    // Clients hammer the server all along; every answer must be a 200.
    let stop = Arc::new(AtomicBool::new(false));
    let (answers, failures) = (Arc::new(AtomicU64::new(0)), Arc::new(AtomicU64::new(0)));
    let hammers: Vec<_> = (0..2)
        .map(|i| {
            let (srv, stop, answers, failures) =
                (srv.clone(), stop.clone(), answers.clone(), failures.clone());
            std::thread::spawn(move || {
                let qs = ["/masters", "/masters?play=e2e4", "/lichess?play=d2d4,g8f6"];
                let mut n = i;
                while !stop.load(Ordering::Relaxed) {
                    match srv.try_request(
                        format!(
                            "GET {} HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n",
                            qs[n % 3]
                        )
                        .as_bytes(),
                    ) {
                        Ok(r) if r.status == 200 => answers.fetch_add(1, Ordering::Relaxed),
                        other => {
                            eprintln!("failed request: {other:?}");
                            failures.fetch_add(1, Ordering::Relaxed)
                        }
                    };
                    n += 1;
                }
            })
        })
        .collect();

    let check = |what: &str, cmd: &[&str]| {
        let before = srv.get("/v1/book").json()["served_generation"]
            .as_u64()
            .unwrap();
        let t = Instant::now();
        bookdb(cmd).ok();
        let ran = t.elapsed();
        let (g, lag) = wait_for_generation_change(&srv, before);
        eprintln!("{what}: ran {ran:?}, served generation {before} -> {g} {lag:?} after it exited");
        assert!(
            lag < Duration::from_secs(1),
            "{what}: served {lag:?} after the commit"
        );
        let lines = dump_lines(&book);
        for line in lines.iter().step_by((lines.len() / 300).max(1)) {
            check_against_dump(&srv, line);
        }
        let stats = srv.get("/v1/book").json();
        assert_eq!(stats["positions"].as_u64().unwrap(), lines.len() as u64);
    };
    check(
        "import (a delta segment)",
        &[
            "import",
            s(&second),
            "--book",
            s(&book),
            "--quiet",
            "--delta-min",
            "1000000",
        ],
    );
    check(
        "import --force (base rewrite)",
        &[
            "import",
            s(&first),
            "--book",
            s(&book),
            "--quiet",
            "--force",
            "--delta-min",
            "0",
        ],
    );
    check("compact", &["compact", "--book", s(&book), "--quiet"]);
    stop.store(true, Ordering::Relaxed);
    for h in hammers {
        h.join().unwrap();
    }
    let (a, f) = (
        answers.load(Ordering::Relaxed),
        failures.load(Ordering::Relaxed),
    );
    eprintln!("{a} answers during the changes, {f} failed");
    assert_eq!(f, 0);
    assert!(a > 100, "{a}");
    // The refresher counts a change just after it serves it: on a loaded machine the count
    // may trail the generation the answers show by a scheduling delay, not by a change.
    let start = Instant::now();
    loop {
        let metrics = srv.get("/metrics").body;
        let refreshes: u64 = metrics
            .lines()
            .find_map(|l| l.strip_prefix("bookdb_book_refreshes_total "))
            .unwrap()
            .parse()
            .unwrap();
        if refreshes >= 3 {
            break;
        }
        assert!(start.elapsed() < Duration::from_secs(10), "{metrics}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn hostile_requests_get_a_json_4xx() {
    let tmp = tempfile::tempdir().unwrap();
    let book = sample_book(tmp.path());
    let srv = Server::start(&book, &[]);
    let long_play = vec!["g1f3,g8f6,f3g1,f6g8"; 300].join(",");
    let table: Vec<(String, u16, &str)> = vec![
        ("/masters?fen=not-a-fen".into(), 400, "FEN"),
        ("/masters?fen=8/8/8/8/8/8/8/8_w_-_-".into(), 400, "FEN"),
        ("/masters?play=e2e5".into(), 400, "move 1 (e2e5)"),
        ("/masters?play=e2e4,zz".into(), 400, "move 2 (zz)"),
        ("/masters?play=e2e4,,%00".into(), 400, "move 2"),
        (format!("/masters?play={long_play}"), 400, "at most"),
        ("/masters?moves=-3".into(), 400, "moves"),
        ("/masters?moves=1e9".into(), 400, "moves"),
        ("/masters?moves=184467440737095516160".into(), 400, "moves"),
        ("/masters?topGames=many".into(), 400, "topGames"),
        ("/lichess?speeds=warp".into(), 400, "speeds"),
        ("/lichess?ratings=abc".into(), 400, "ratings"),
        ("/lichess?since=tomorrow".into(), 400, "since"),
        ("/lichess?variant=crazyhouse".into(), 400, "variant"),
        ("/masters?fen=a&fen=b".into(), 400, "twice"),
        ("/masters?fen=%FF%FE".into(), 400, "FEN"),
        ("/v1/position?board=x".into(), 400, "Othello"),
        ("/nowhere".into(), 404, "no route"),
        (
            format!("/masters?fen={}", "A".repeat(20_000)),
            414,
            "at most",
        ),
    ];
    for (path, status, word) in &table {
        let r = srv.get(path);
        assert_eq!(r.status, *status, "{path}: {}", r.body);
        let e = r.error();
        assert!(e.contains(word), "{path}: {e}");
        assert!(!e.contains("panicked") && !e.contains("src/"), "{e}");
        assert_eq!(r.header("content-type"), Some("application/json"), "{path}");
    }
    // Wrong method, CORS on the read routes (and not on the admin one).
    let r = srv.post("/masters", &[], b"");
    assert_eq!(r.status, 405);
    assert!(r.error().contains("POST"));
    let r = srv.request(b"GET /masters HTTP/1.1\r\nHost: t\r\nOrigin: https://example.org\r\nConnection: close\r\n\r\n");
    assert_eq!(r.header("access-control-allow-origin"), Some("*"));
    let r = srv.request(b"POST /v1/import HTTP/1.1\r\nHost: t\r\nOrigin: https://example.org\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
    assert_eq!(r.header("access-control-allow-origin"), None);
    // A request head over the limit: 431 (or the connection closed), never a crash.
    let huge = format!(
        "GET /health HTTP/1.1\r\nHost: t\r\nX-Big: {}\r\nConnection: close\r\n\r\n",
        "b".repeat(200_000)
    );
    if let Ok(r) = srv.try_request(huge.as_bytes()) {
        assert_eq!(r.status, 431);
    }
    // Garbage instead of HTTP.
    let _ = srv.try_request(b"\x16\x03\x01\x02\x00\x01\x00\x01\xfc\x03\x03garbage\r\n\r\n");
    // The server is unharmed and counted what it refused.
    assert_eq!(srv.get("/health").status, 200);
    let m = srv.get("/metrics").body;
    assert!(
        m.contains("bookdb_http_requests_total{route=\"/masters\",status=\"400\"}"),
        "{m}"
    );
    assert!(m.contains("route=\"/masters\",status=\"414\""), "{m}");
    assert_eq!(srv.stop().code(), Some(0));
}

#[test]
fn slow_clients_and_connection_floods_are_cut_off_with_bounded_memory() {
    let tmp = tempfile::tempdir().unwrap();
    let book = sample_book(tmp.path());
    let srv = Server::start(&book, &["--max-connections", "100", "--head-timeout", "1"]);
    assert_eq!(srv.get("/masters").status, 200);
    let rss_before = srv.rss_kib();

    // A slow client: half a request head, then nothing. It is cut off after --head-timeout.
    let mut slow = TcpStream::connect(&srv.addr).unwrap();
    slow.write_all(b"GET /masters HTTP/1.1\r\nHost: t\r\n")
        .unwrap();
    slow.set_read_timeout(Some(Duration::from_secs(10)))
        .unwrap();
    let t = Instant::now();
    let mut buf = Vec::new();
    let _ = slow.read_to_end(&mut buf);
    assert!(
        t.elapsed() < Duration::from_secs(8),
        "slow client kept {:?}",
        t.elapsed()
    );
    // Answered 408 with a JSON body, and closed (docs/SERVER.md).
    let text = String::from_utf8_lossy(&buf);
    assert!(text.starts_with("HTTP/1.1 408 "), "{text}");
    assert!(text.contains("connection: close"), "{text}");
    let body = text.split_once("\r\n\r\n").unwrap().1;
    let v: serde_json::Value = serde_json::from_str(body).unwrap();
    assert!(
        v["error"].as_str().unwrap().contains("--head-timeout"),
        "{v}"
    );

    // A flood: 1,500 connections held open. Past --max-connections they are closed at once;
    // the server answers again as soon as the flood goes; memory stays bounded.
    let mut flood = Vec::new();
    for _ in 0..1_500 {
        if let Ok(c) = TcpStream::connect(&srv.addr) {
            flood.push(c);
        }
    }
    std::thread::sleep(Duration::from_millis(300));
    let rss_flood = srv.rss_kib();
    // During the flood a new client may well be refused too (every slot is taken).
    let m = srv
        .try_request(b"GET /metrics HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")
        .ok();
    drop(flood);
    // Flood connections that got a slot are cut off by the head timeout at the latest.
    let t = Instant::now();
    let mut refused = None;
    while t.elapsed() < Duration::from_secs(10) {
        if let Ok(r) =
            srv.try_request(b"GET /metrics HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n")
            && r.status == 200
        {
            refused = r
                .body
                .lines()
                .find_map(|l| l.strip_prefix("bookdb_http_connections_refused_total "))
                .map(|v| v.parse::<u64>().unwrap());
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    let refused = refused.expect("the server answers again after the flood");
    eprintln!(
        "flood: {refused} connections refused; RSS {rss_before} KiB before, {rss_flood} KiB during; metrics during the flood: {:?}",
        m.as_ref().map(|m| m.status)
    );
    let open_during = m
        .as_ref()
        .and_then(|m| {
            m.body
                .lines()
                .find_map(|l| l.strip_prefix("bookdb_http_connections_open "))
        })
        .map(|v| v.parse::<u64>().unwrap());
    if let Some(open) = open_during {
        assert!(
            open <= 100,
            "{open} connections open with --max-connections 100"
        );
    }
    // Those not refused were in the kernel's listen backlog when the flood went away.
    assert!(refused >= 100, "{refused}");
    assert!(
        rss_flood < rss_before + 64 * 1024,
        "{rss_before} -> {rss_flood} KiB"
    );
    assert_eq!(srv.get("/masters?play=e2e4").status, 200);
    assert_eq!(srv.stop().code(), Some(0));
}

fn token_file(dir: &Path, token: &str) -> PathBuf {
    let p = dir.join("admin.token");
    std::fs::write(&p, format!("{token}\n")).unwrap();
    p
}

const TOKEN: &str = "s3cret-token-0123456789abcdef";

#[test]
fn the_admin_import_is_exactly_once_and_needs_the_token() {
    let tmp = tempfile::tempdir().unwrap();
    let (first, second) = sample_halves(tmp.path());
    let book = tmp.path().join("admin.book");
    Bookdb::import(&[&first], &book).arg("--quiet").ok();

    // Off without --admin-token-file.
    let srv = Server::start(&book, &[]);
    let r = srv.post(
        "/v1/import",
        &[("Authorization", &format!("Bearer {TOKEN}"))],
        b"1. e4 *",
    );
    assert_eq!(r.status, 403);
    assert!(r.error().contains("--admin-token-file"));
    drop(srv);

    let tf = token_file(tmp.path(), TOKEN);
    let srv = Server::start(&book, &["--admin-token-file", s(&tf), "--max-upload", "1"]);
    let body = std::fs::read(&second).unwrap();
    let auth = format!("Bearer {TOKEN}");
    let r = srv.post("/v1/import", &[], &body);
    assert_eq!(r.status, 401, "{}", r.body);
    // A refusal made before the body is read still reaches a client that is sending a large
    // body (the server reads and drops it first; closing with unread data would reset the
    // connection under the client's send — this request failed with EPIPE before).
    let r = srv.post("/v1/import", &[], &vec![b' '; 3 << 20]);
    assert_eq!(r.status, 401, "{}", r.body);
    let r = srv.post(
        "/v1/import",
        &[("Authorization", &format!("Bearer {TOKEN}"))],
        &vec![b' '; 2 << 20],
    );
    assert_eq!(r.status, 413, "{}", r.body);
    let r = srv.post(
        "/v1/import",
        &[("Authorization", "Bearer s3cret-token-0123456789abcdeX")],
        &body,
    );
    assert_eq!(r.status, 403);
    assert!(!r.body.contains("s3cret"));
    // Right token: the import summary, and the book now equals one built from both halves.
    let r = srv.post("/v1/import", &[("Authorization", &auth)], &body);
    assert_eq!(r.status, 200, "{}", r.body);
    let summary = r.json();
    assert!(
        summary["games_imported"].as_u64().unwrap() > 50,
        "{summary}"
    );
    let whole = tmp.path().join("whole.book");
    Bookdb::import(&[&first, &second], &whole)
        .arg("--quiet")
        .ok();
    let (g, _) = wait_for_generation_change(&srv, 0);
    assert!(g >= 2);
    assert_eq!(dump(&book), dump(&whole));
    // The same body again: already imported, nothing counted twice.
    let again = srv
        .post("/v1/import", &[("Authorization", &auth)], &body)
        .json();
    assert_eq!(again["games_imported"], 0, "{again}");
    assert_eq!(again["already_imported"].as_array().unwrap().len(), 1);
    assert_eq!(dump(&book), dump(&whole));
    // Compressed bodies: gzip of new games (the second half with other event names).
    let renamed = String::from_utf8(body.clone())
        .unwrap()
        .replace("[Event \"", "[Event \"gz ");
    let mut gz = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    gz.write_all(renamed.as_bytes()).unwrap();
    let gz = gz.finish().unwrap();
    let r = srv.post(
        "/v1/import?dedupe=false&maxPly=40",
        &[("Authorization", &auth)],
        &gz,
    );
    assert_eq!(r.status, 200, "{}", r.body);
    assert!(r.json()["games_imported"].as_u64().unwrap() > 50);
    // Not PGN, empty, too large, bad options: 4xx with the reason.
    let r = srv.post(
        "/v1/import",
        &[("Authorization", &auth)],
        &[0u8, 1, 2, 3, 0, 0, 255],
    );
    assert_eq!(r.status, 400, "{}", r.body);
    let r = srv.post("/v1/import", &[("Authorization", &auth)], b"");
    assert_eq!(r.status, 400);
    assert!(r.error().contains("empty"));
    let big = vec![b' '; (1 << 20) + 10];
    let r = srv.post("/v1/import", &[("Authorization", &auth)], &big);
    assert_eq!(r.status, 413, "{}", r.body);
    let r = srv.post("/v1/import?maxPly=lots", &[("Authorization", &auth)], &body);
    assert_eq!(r.status, 400);
    assert!(verify(&book).contains("ok"));
    // Nothing left beside the book from the uploads; the token never reached the log.
    let log = srv.log_text();
    assert!(!log.contains(TOKEN) && !log.contains("s3cret"), "{log}");
    assert_eq!(srv.stop().code(), Some(0));
    let leftovers: Vec<_> = std::fs::read_dir(tmp.path())
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains("upload"))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

#[test]
fn sigterm_finishes_an_admin_import_in_flight_then_exits_0() {
    let tmp = tempfile::tempdir().unwrap();
    let (first, _) = sample_halves(tmp.path());
    let book = tmp.path().join("term.book");
    Bookdb::import(&[&first], &book).arg("--quiet").ok();
    let tf = token_file(tmp.path(), TOKEN);
    let srv = Server::start(&book, &["--admin-token-file", s(&tf)]);
    // Enough games that the import is still running when SIGTERM comes.
    let sample = std::fs::read_to_string(sample_pgn()).unwrap();
    let mut big = String::new();
    for i in 0..40 {
        big.push_str(&sample.replace("[Event \"", &format!("[Event \"copy{i} ")));
    }
    let addr = srv.addr.clone();
    let client = std::thread::spawn(move || {
        let mut req = format!(
            "POST /v1/import HTTP/1.1\r\nHost: t\r\nConnection: close\r\nAuthorization: Bearer {TOKEN}\r\nContent-Length: {}\r\n\r\n",
            big.len()
        )
        .into_bytes();
        req.extend_from_slice(big.as_bytes());
        let mut s = TcpStream::connect(addr).unwrap();
        s.write_all(&req).unwrap();
        let mut buf = Vec::new();
        s.read_to_end(&mut buf).unwrap();
        common::server::parse(&buf).unwrap()
    });
    let t = Instant::now();
    while !srv.log_text().contains("admin import started") {
        assert!(t.elapsed() < Duration::from_secs(30), "{}", srv.log_text());
        std::thread::sleep(Duration::from_millis(5));
    }
    // An idle keep-alive connection must not hold the shutdown up.
    let mut idle = TcpStream::connect(&srv.addr).unwrap();
    idle.write_all(b"GET /health HTTP/1.1\r\nHost: t\r\n\r\n")
        .unwrap();
    std::thread::sleep(Duration::from_millis(50));
    srv.signal(libc::SIGTERM);
    let resp = client.join().unwrap();
    assert_eq!(resp.status, 200, "{}", resp.body);
    let imported = resp.json()["games_imported"].as_u64().unwrap();
    assert!(imported > 3_000, "{imported}");
    let mut srv = srv;
    let st = srv.wait_exit(Duration::from_secs(60));
    assert_eq!(st.code(), Some(0), "{}", srv.log_text());
    let log = srv.log_text();
    assert!(log.contains("SIGTERM") && log.contains("stopped"), "{log}");
    assert!(verify(&book).contains("ok"));
    let stats = stats(&book);
    assert!(stats["games"].as_u64().unwrap() > imported);
}

#[test]
fn startup_errors_say_what_is_wrong() {
    let tmp = tempfile::tempdir().unwrap();
    let run = |args: &[&str]| {
        let out = bookdb(args).output();
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    let missing = tmp.path().join("missing.book");
    let (code, err) = run(&["serve", "--book", s(&missing), "--listen", "127.0.0.1:0"]);
    assert_ne!(code, Some(0));
    assert!(err.contains("missing.book"), "{err}");
    let pgn = copy_in(&sample_pgn(), tmp.path());
    let (code, err) = run(&["serve", "--book", s(&pgn), "--listen", "127.0.0.1:0"]);
    assert_eq!(code, Some(4), "{err}");
    let book = sample_book(tmp.path());
    let short = token_file(tmp.path(), "abc");
    let (code, err) = run(&["serve", "--book", s(&book), "--admin-token-file", s(&short)]);
    assert_eq!(code, Some(1));
    assert!(
        err.contains("at least 16") && !err.contains("abc\n"),
        "{err}"
    );
    // The port is taken: the message says so.
    let srv = Server::start(&book, &[]);
    let (code, err) = run(&["serve", "--book", s(&book), "--listen", &srv.addr]);
    assert_eq!(code, Some(1));
    assert!(err.contains(&srv.addr) && err.contains("--listen"), "{err}");
}

const OTHELLO: &str =
    "f5d6c3d3c4f4c5b3c2 4\nf5f6e6f4 -2\nf5d6c3 0\nf5d6c5f4e3f6d3f3e6 x\nf5d6\nd3c5f6f5e6e3\n";

#[test]
fn othello_books_answer_on_v1_position_and_refuse_the_lichess_routes() {
    let tmp = tempfile::tempdir().unwrap();
    let txt = tmp.path().join("games.txt");
    std::fs::write(&txt, OTHELLO).unwrap();
    let book = tmp.path().join("othello.book");
    Bookdb::import(&[&txt], &book)
        .args(["--game", "othello", "--quiet"])
        .ok();
    let srv = Server::start(&book, &[]);
    for line in ["", "f5", "f5,d6", "f5,d6,c3", "d3"] {
        let r = srv.get(&format!("/v1/position?moves={line}"));
        assert_eq!(r.status, 200, "{line}: {}", r.body);
        let mut args = vec!["probe", "--book", s(&book), "--json"];
        let spaced = line.replace(',', " ");
        if !line.is_empty() {
            args.extend(["--moves", &spaced]);
        }
        let want: Value = bookdb(&args).json();
        assert_eq!(r.json(), want, "{line}");
    }
    let d6 = srv.get("/v1/position?moves=f5,d6").json();
    assert!(!d6["moves"].as_array().unwrap().is_empty(), "{d6}");
    let r = srv.get("/masters");
    assert_eq!(r.status, 400);
    assert!(r.error().contains("/v1/position"), "{}", r.error());
    assert_eq!(srv.get("/v1/position?moves=f5,a1").status, 400);
    assert_eq!(srv.get("/v1/position?fen=x").status, 400);
    let stats = srv.get("/v1/book").json();
    assert_eq!(stats["game"], "Othello");
}

//! The explorer page at `/` in a real browser: Debian's headless Chromium, driven through
//! chromedriver with the W3C WebDriver protocol (a small HTTP client over `std::net`, no new
//! dependency). The page is served by the real binary on a book of the sample's first half; the
//! test clicks through a line and at every step checks the moves table (SAN, games) and the board
//! against the `/masters` answer it fetches itself, then the URL, the breadcrumbs, back/forward,
//! the arrow keys, keyboard-only play (Tab to a row, Enter), a bad FEN (the server's error is
//! shown), an unknown position ("not in the book"), a book change underneath (the second half is
//! imported while the page is open) and the phone-width layout (no horizontal scroll). It saves
//! screenshots at desktop and phone width to a temporary directory, and with
//! `BOOKDB_UPDATE_SCREENSHOTS=1` to `docs/img/explorer-{desktop,phone}.png`.
//!
//! Without `/usr/bin/chromium` and `/usr/bin/chromedriver` (packages `chromium`,
//! `chromium-driver`) the test prints SKIP, or fails when `BOOKDB_REQUIRE_PEERS=1`.

mod common;

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use common::server::{Server, enc};
use common::{Bookdb, peers_required, sample_halves};
use serde_json::{Value, json};

const CHROMIUM: &str = "/usr/bin/chromium";
const CHROMEDRIVER: &str = "/usr/bin/chromedriver";

/// How long the browser may take to show something (generous: 2 shared cores).
const WAIT: Duration = Duration::from_secs(30);

// ---- a minimal W3C WebDriver client ------------------------------------------------------------

/// A chromedriver process and one browser session; both end when dropped.
struct Browser {
    driver: Child,
    port: u16,
    session: String,
    _profile: tempfile::TempDir,
}

const ELEMENT_KEY: &str = "element-6066-11e4-a52e-4f735466cecf";

fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

/// One WebDriver call: `(HTTP status, the answer's JSON)`.
fn wd_request(port: u16, method: &str, path: &str, body: Option<&Value>) -> (u16, Value) {
    let body = body.map(Value::to_string).unwrap_or_default();
    let req = format!(
        "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    let mut s = TcpStream::connect(("127.0.0.1", port)).expect("connect to chromedriver");
    s.set_read_timeout(Some(Duration::from_secs(120))).unwrap();
    s.write_all(req.as_bytes()).unwrap();
    // chromedriver may keep the connection open: read the head, then Content-Length bytes.
    let mut buf = Vec::new();
    let mut chunk = [0u8; 16 * 1024];
    loop {
        let n = s.read(&mut chunk).unwrap();
        buf.extend_from_slice(&chunk[..n]);
        if n == 0 || complete(&buf) {
            break;
        }
    }
    let r = common::server::parse(&buf).unwrap_or_else(|| {
        panic!(
            "chromedriver's answer to {method} {path} is not HTTP: {:?}",
            String::from_utf8_lossy(&buf[..buf.len().min(300)])
        )
    });
    let v = serde_json::from_str(&r.body).unwrap_or(Value::Null);
    (r.status, v)
}

/// Whether `buf` holds a whole HTTP answer with a Content-Length.
fn complete(buf: &[u8]) -> bool {
    let Some(end) = buf.windows(4).position(|w| w == b"\r\n\r\n") else {
        return false;
    };
    let head = String::from_utf8_lossy(&buf[..end]).to_ascii_lowercase();
    let len = head
        .lines()
        .find_map(|l| l.strip_prefix("content-length:"))
        .and_then(|v| v.trim().parse::<usize>().ok());
    len.is_some_and(|len| buf.len() >= end + 4 + len)
}

impl Browser {
    fn start() -> Browser {
        let port = free_port();
        let driver = Command::new(CHROMEDRIVER)
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start chromedriver");
        let start = Instant::now();
        loop {
            let ready = TcpStream::connect(("127.0.0.1", port)).is_ok()
                && wd_request(port, "GET", "/status", None).1["value"]["ready"] == json!(true);
            if ready {
                break;
            }
            assert!(start.elapsed() < WAIT, "chromedriver did not become ready");
            std::thread::sleep(Duration::from_millis(100));
        }
        let profile = tempfile::tempdir().unwrap();
        let caps = json!({"capabilities": {"alwaysMatch": {
            "browserName": "chrome",
            "goog:chromeOptions": {
                "binary": CHROMIUM,
                "args": [
                    "--headless", "--no-sandbox", "--disable-gpu", "--disable-quic",
                    "--no-first-run", "--disable-background-networking",
                    "--disable-component-update", "--disable-sync",
                    "--disable-dev-shm-usage", "--hide-scrollbars",
                    "--force-color-profile=srgb", "--window-size=1280,860",
                    format!("--user-data-dir={}", profile.path().display()),
                ],
            },
        }}});
        let (status, v) = wd_request(port, "POST", "/session", Some(&caps));
        let mut b = Browser {
            driver,
            port,
            session: String::new(),
            _profile: profile,
        };
        assert_eq!(status, 200, "new WebDriver session: {v}");
        b.session = v["value"]["sessionId"]
            .as_str()
            .expect("session id")
            .to_string();
        b
    }

    /// A call on the session; panics on a WebDriver error.
    fn call(&self, method: &str, path: &str, body: Option<Value>) -> Value {
        let full = format!("/session/{}{path}", self.session);
        let (status, v) = wd_request(self.port, method, &full, body.as_ref());
        assert_eq!(status, 200, "WebDriver {method} {path}: {v}");
        v["value"].clone()
    }

    fn goto(&self, url: &str) {
        self.call("POST", "/url", Some(json!({ "url": url })));
    }

    fn url(&self) -> String {
        self.call("GET", "/url", None).as_str().unwrap().to_string()
    }

    /// Runs `body` (a function body; `arguments` holds `args`) in the page.
    fn js(&self, body: &str, args: Value) -> Value {
        self.call(
            "POST",
            "/execute/sync",
            Some(json!({ "script": body, "args": args })),
        )
    }

    fn find(&self, css: &str) -> String {
        let v = self.call(
            "POST",
            "/element",
            Some(json!({"using": "css selector", "value": css})),
        );
        v[ELEMENT_KEY]
            .as_str()
            .unwrap_or_else(|| panic!("no element for {css}: {v}"))
            .to_string()
    }

    fn click(&self, css: &str) {
        let el = self.find(css);
        self.call("POST", &format!("/element/{el}/click"), Some(json!({})));
    }

    fn type_into(&self, css: &str, text: &str) {
        let el = self.find(css);
        self.call("POST", &format!("/element/{el}/clear"), Some(json!({})));
        self.call(
            "POST",
            &format!("/element/{el}/value"),
            Some(json!({ "text": text })),
        );
    }

    /// Presses and releases keys (WebDriver key codes, e.g. `\u{E012}` for ←) in the focused
    /// element, one after another.
    fn keys(&self, keys: &[&str]) {
        let mut actions = Vec::new();
        for k in keys {
            actions.push(json!({"type": "keyDown", "value": k}));
            actions.push(json!({"type": "keyUp", "value": k}));
        }
        self.call(
            "POST",
            "/actions",
            Some(json!({"actions": [{"type": "key", "id": "keyboard", "actions": actions}]})),
        );
        self.call("DELETE", "/actions", None);
    }

    fn back(&self) {
        self.call("POST", "/back", Some(json!({})));
    }

    fn forward(&self) {
        self.call("POST", "/forward", Some(json!({})));
    }

    fn window_size(&self, width: u32, height: u32) {
        self.call(
            "POST",
            "/window/rect",
            Some(json!({"width": width, "height": height})),
        );
    }

    fn screenshot(&self) -> Vec<u8> {
        base64_decode(self.call("GET", "/screenshot", None).as_str().unwrap())
    }
}

impl Drop for Browser {
    fn drop(&mut self) {
        if !self.session.is_empty() {
            let _ = wd_request(
                self.port,
                "DELETE",
                &format!("/session/{}", self.session),
                None,
            );
        }
        let _ = self.driver.kill();
        let _ = self.driver.wait();
    }
}

fn base64_decode(s: &str) -> Vec<u8> {
    let mut out = Vec::with_capacity(s.len() * 3 / 4);
    let (mut acc, mut bits) = (0u32, 0);
    for c in s.bytes() {
        let v = match c {
            b'A'..=b'Z' => c - b'A',
            b'a'..=b'z' => c - b'a' + 26,
            b'0'..=b'9' => c - b'0' + 52,
            b'+' => 62,
            b'/' => 63,
            _ => continue,
        };
        acc = (acc << 6) | u32::from(v);
        bits += 6;
        if bits >= 8 {
            bits -= 8;
            out.push((acc >> bits) as u8);
        }
    }
    out
}

/// Polls `f` until it returns `Some` (at most [`WAIT`]); `what` names the wait in the panic.
fn wait_for<T>(what: &str, mut f: impl FnMut() -> Option<T>) -> T {
    let start = Instant::now();
    loop {
        if let Some(v) = f() {
            return v;
        }
        assert!(start.elapsed() < WAIT, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

// ---- what the page shows and what the API says -------------------------------------------------

/// A row of the moves table: (uci, SAN, games).
type Row = (String, String, u64);

/// The rows the page shows, and whether it says "not in the book".
fn shown(b: &Browser) -> Value {
    b.js(
        r#"
        const rows = Array.from(document.querySelectorAll('#moves tbody tr')).map(tr => [
            tr.dataset.uci,
            tr.querySelector('.san').textContent,
            tr.querySelector('.count').textContent.replace(/,/g, '')]);
        const pieces = Array.from(document.querySelectorAll('#board [data-piece]'))
            .map(p => p.dataset.piece).sort().join('');
        return {
            rows,
            pieces,
            status: document.getElementById('status').textContent,
            error: document.getElementById('error').hidden ? null
                : document.getElementById('error').textContent,
            opening: document.getElementById('opening').textContent,
            line: Array.from(document.querySelectorAll('#line a[data-uci]')).map(a => a.textContent),
            current: (document.querySelector('#line a.current') || {}).dataset?.idx ?? null,
            search: location.search,
        };
        "#,
        json!([]),
    )
}

fn rows_of(v: &Value) -> Vec<Row> {
    v["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r[0].as_str().unwrap().to_string(),
                r[1].as_str().unwrap().to_string(),
                r[2].as_str().unwrap().parse().unwrap(),
            )
        })
        .collect()
}

/// `/masters` for `play` (as the page asks it: 50 moves at most).
fn api(srv: &Server, fen: Option<&str>, play: &[String]) -> Value {
    let mut q = format!("/masters?moves=50&play={}", play.join(","));
    if let Some(f) = fen {
        q.push_str(&format!("&fen={}", enc(f)));
    }
    let r = srv.get(&q);
    assert_eq!(r.status, 200, "{q}: {}", r.body);
    r.json()
}

fn api_rows(a: &Value) -> Vec<Row> {
    a["moves"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            let games = ["white", "draws", "black", "unknown"]
                .iter()
                .map(|k| m[*k].as_u64().unwrap_or(0))
                .sum();
            (
                m["uci"].as_str().unwrap().to_string(),
                m["san"].as_str().unwrap().to_string(),
                games,
            )
        })
        .collect()
}

/// The pieces of a FEN's placement field, sorted (as [`shown`] lists the board's).
fn pieces_of(fen: &str) -> String {
    let mut p: Vec<char> = fen
        .split(' ')
        .next()
        .unwrap()
        .chars()
        .filter(char::is_ascii_alphabetic)
        .collect();
    p.sort_unstable();
    p.into_iter().collect()
}

/// Waits until the page shows the position after `play` as the API answers it: the table (SAN
/// and games per row), the board, the URL and the breadcrumbs. Returns the API's answer.
fn expect_position(b: &Browser, srv: &Server, play: &[String]) -> Value {
    let a = api(srv, None, play);
    let want = api_rows(&a);
    let want_pieces = pieces_of(a["fen"].as_str().unwrap());
    let want_search = if play.is_empty() {
        String::new()
    } else {
        format!("?play={}", play.join(","))
    };
    let mut last;
    let start = Instant::now();
    loop {
        let v = shown(b);
        if rows_of(&v) == want
            && v["pieces"] == json!(want_pieces)
            && v["search"] == json!(want_search)
            && v["error"].is_null()
        {
            assert_eq!(
                v["current"],
                json!(play.len().to_string()),
                "the breadcrumb of the current position: {v}"
            );
            return a;
        }
        last = v;
        if start.elapsed() > WAIT {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    panic!(
        "after {play:?} the page shows\n{last:#}\nbut /masters has rows {want:?}, pieces {want_pieces}, search {want_search:?}"
    );
}

fn have_browser() -> bool {
    let missing: Vec<&str> = [CHROMIUM, CHROMEDRIVER]
        .into_iter()
        .filter(|p| !Path::new(p).exists())
        .collect();
    if missing.is_empty() {
        return true;
    }
    assert!(
        !peers_required(),
        "{missing:?} missing and BOOKDB_REQUIRE_PEERS=1 (apt-get install chromium chromium-driver)"
    );
    eprintln!("SKIP: {missing:?} missing (apt-get install chromium chromium-driver)");
    false
}

/// Saves a screenshot to `tmp`, and for a `docs` one also to `docs/img/` when
/// `BOOKDB_UPDATE_SCREENSHOTS=1`.
fn save_screenshot(png: &[u8], tmp: &Path, name: &str, docs: bool) {
    assert!(png.starts_with(b"\x89PNG"), "the screenshot is not a PNG");
    let p = tmp.join(name);
    std::fs::write(&p, png).unwrap();
    eprintln!("screenshot: {}", p.display());
    if docs && std::env::var("BOOKDB_UPDATE_SCREENSHOTS").is_ok_and(|v| v.trim() == "1") {
        let dst = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("docs/img")
            .join(name);
        std::fs::create_dir_all(dst.parent().unwrap()).unwrap();
        std::fs::write(&dst, png).unwrap();
        eprintln!("updated {}", dst.display());
    }
}

const LEFT: &str = "\u{E012}";
const RIGHT: &str = "\u{E014}";
const DOWN: &str = "\u{E015}";
const ENTER: &str = "\u{E007}";
const TAB: &str = "\u{E004}";

#[test]
fn the_explorer_page_in_a_real_browser() {
    if !have_browser() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let shots = std::env::temp_dir().join("bookdb-explorer-screenshots");
    std::fs::create_dir_all(&shots).unwrap();
    let (first, second) = sample_halves(tmp.path());
    let book = tmp.path().join("page.book");
    Bookdb::import(&[&first], &book).arg("--quiet").ok();
    let srv = Server::start(&book, &[]);
    let base = format!("http://{}", srv.addr);

    // The page and its assets come from the binary, with their types and caching.
    let page = srv.get("/");
    assert_eq!(page.status, 200);
    assert_eq!(
        page.header("content-type"),
        Some("text/html; charset=utf-8")
    );
    assert_eq!(page.header("cache-control"), Some("no-cache"));
    assert!(!page.body.contains("http://") && !page.body.contains("https://"));
    let js = srv.get(
        page.body
            .split("src=\"")
            .nth(1)
            .and_then(|r| r.split('"').next())
            .unwrap(),
    );
    assert_eq!(js.status, 200);
    assert!(
        js.header("content-type")
            .unwrap()
            .starts_with("text/javascript")
    );
    assert!(js.header("cache-control").unwrap().contains("immutable"));
    let missing = srv.get("/assets/nope.js");
    assert_eq!(missing.status, 404);
    assert!(missing.error().contains("explorer.js"), "{}", missing.body);

    let b = Browser::start();
    b.goto(&format!("{base}/"));
    expect_position(&b, &srv, &[]);
    // The board is a chess board: a1 dark in the bottom-left corner, h1 light; flipped, h8
    // (dark) is bottom-left and a8 (light) bottom-right.
    let squares = |b: &Browser| {
        b.js(
            r#"
            const at = (x, y) => Array.from(document.querySelectorAll('#board rect[data-square]'))
                .find(r => r.getAttribute('x') == x && r.getAttribute('y') == y);
            const bl = at(0, 70), br = at(70, 70);
            return [bl.dataset.square, bl.dataset.shade, br.dataset.square, br.dataset.shade];
            "#,
            json!([]),
        )
    };
    assert_eq!(squares(&b), json!(["a1", "dark", "h1", "light"]));
    b.click("#flip");
    assert_eq!(squares(&b), json!(["h8", "dark", "a8", "light"]));
    b.click("#flip");
    assert_eq!(squares(&b), json!(["a1", "dark", "h1", "light"]));

    // Click through a line, checking the table, board, URL and breadcrumbs at every step.
    let mut play: Vec<String> = Vec::new();
    let mut sans: Vec<String> = Vec::new();
    for step in 0..6 {
        let a = api(&srv, None, &play);
        let rows = api_rows(&a);
        if rows.is_empty() {
            break;
        }
        // Mostly the main line, sometimes the second choice.
        let pick = if step % 3 == 2 && rows.len() > 1 {
            1
        } else {
            0
        };
        let (uci, san, _) = rows[pick].clone();
        b.click(&format!("#moves tbody tr[data-uci=\"{uci}\"]"));
        play.push(uci);
        sans.push(san);
        expect_position(&b, &srv, &play);
        assert_eq!(shown(&b)["line"], json!(sans), "breadcrumbs");
        assert_eq!(b.url(), format!("{base}/?play={}", play.join(",")));
    }
    assert!(
        play.len() >= 4,
        "the sample book has a line of 4+ moves: {play:?}"
    );
    let n = play.len();

    // Browser back and forward.
    b.back();
    expect_position(&b, &srv, &play[..n - 1]);
    b.back();
    expect_position(&b, &srv, &play[..n - 2]);
    b.forward();
    expect_position(&b, &srv, &play[..n - 1]);
    b.forward();
    expect_position(&b, &srv, &play);

    // A breadcrumb; the moves after it stay in the line.
    b.click("#line a[data-idx=\"2\"]");
    expect_position(&b, &srv, &play[..2]);
    assert_eq!(shown(&b)["line"], json!(sans), "the line is kept");

    // Arrow keys step through the line (focus on the page, not on the FEN box).
    b.js(
        "document.activeElement && document.activeElement.blur();",
        json!([]),
    );
    b.keys(&[RIGHT]);
    expect_position(&b, &srv, &play[..3]);
    b.keys(&[RIGHT, RIGHT]);
    expect_position(&b, &srv, &play[..5.min(n)]);
    b.keys(&[LEFT, LEFT, LEFT, LEFT]);
    expect_position(&b, &srv, &play[..1]);

    // A link reproduces the view.
    b.goto(&format!("{base}/?play={}", play[..3].join(",")));
    expect_position(&b, &srv, &play[..3]);
    wait_for("the SANs of a linked line", || {
        (shown(&b)["line"] == json!(sans[..3])).then_some(())
    });

    // Keyboard only: Tab to the moves table, ↓ to the second row, Enter plays it.
    b.goto(&format!("{base}/"));
    let a0 = expect_position(&b, &srv, &[]);
    let mut on_row = false;
    for _ in 0..40 {
        b.keys(&[TAB]);
        let focused = b.js(
            "return document.activeElement.closest('#moves tbody tr') !== null;",
            json!([]),
        );
        if focused == json!(true) {
            on_row = true;
            break;
        }
    }
    assert!(on_row, "Tab reaches the moves table's rows");
    b.keys(&[DOWN, ENTER]);
    let second_row = api_rows(&a0)[1].0.clone();
    expect_position(&b, &srv, std::slice::from_ref(&second_row));

    // A bad FEN: the server's error is shown.
    let bad = "rnbqkbnr/pppppppp/8/8/8/8 w KQkq - 0 1";
    let want_err = srv.get(&format!("/masters?fen={}", enc(bad)));
    assert_eq!(want_err.status, 400);
    b.type_into("#fen", bad);
    b.keys(&[ENTER]);
    let err = wait_for("the bad FEN's error", || {
        shown(&b)["error"].as_str().map(str::to_string)
    });
    assert!(
        err.contains(&want_err.error()),
        "page shows {err:?}, server said {:?}",
        want_err.error()
    );

    // An unknown position: "not in the book", no empty table.
    let unknown = "4k3/8/8/8/8/8/8/R3K3 w Q - 0 1";
    assert!(
        api(&srv, Some(unknown), &[])["moves"]
            .as_array()
            .unwrap()
            .is_empty()
    );
    b.type_into("#fen", unknown);
    b.keys(&[ENTER]);
    let v = wait_for("not in the book", || {
        let v = shown(&b);
        (v["status"].as_str().unwrap().contains("not in the book")).then_some(v)
    });
    assert!(v["error"].is_null(), "{v}");
    assert!(rows_of(&v).is_empty());
    assert_eq!(v["pieces"], json!(pieces_of(unknown)));
    assert!(b.url().contains("fen="), "{}", b.url());
    let table_hidden = b.js("return document.getElementById('moves').hidden;", json!([]));
    assert_eq!(table_hidden, json!(true));

    // The page follows the book: import the second half while it is open.
    let show = &play[..2];
    b.goto(&format!("{base}/?play={}", show.join(",")));
    let before = expect_position(&b, &srv, show);
    Bookdb::import(&[&second], &book).arg("--quiet").ok();
    let after = wait_for("the server to serve the new games", || {
        let a = api(&srv, None, show);
        (a != before).then_some(a)
    });
    assert_ne!(
        api_rows(&before),
        api_rows(&after),
        "the import changes this position"
    );
    // No reload: the page notices the new generation itself.
    expect_position(&b, &srv, show);

    // Desktop screenshot, after the first move (a position with many replies).
    b.goto(&format!("{base}/?play={}", play[0]));
    expect_position(&b, &srv, &play[..1]);
    wait_for("the breadcrumbs and the book's size", || {
        let info = b.js(
            "return document.getElementById('book-info').textContent;",
            json!([]),
        );
        (shown(&b)["line"] == json!(sans[..1])
            && info.as_str().is_some_and(|t| t.contains("games")))
        .then_some(())
    });
    save_screenshot(&b.screenshot(), &shots, "explorer-desktop.png", true);

    // Phone width: no horizontal scroll, then the screenshot.
    b.window_size(375, 812);
    wait_for("a 375 px wide window", || {
        let w = b.js("return window.innerWidth;", json!([]));
        (w.as_u64().unwrap_or(0) <= 400).then_some(())
    });
    let fits = b.js(
        "return [document.documentElement.scrollWidth, window.innerWidth];",
        json!([]),
    );
    assert!(
        fits[0].as_u64().unwrap() <= fits[1].as_u64().unwrap(),
        "horizontal scroll at phone width: {fits}"
    );
    save_screenshot(&b.screenshot(), &shots, "explorer-phone.png", true);

    // A line of 30+ moves stays readable at phone width: breadcrumbs wrap, no scroll.
    let long: Vec<&str> = "g1f3 g8f6 f3g1 f6g8".split(' ').collect();
    let long: Vec<String> = long
        .iter()
        .cycle()
        .take(32)
        .map(|m| m.to_string())
        .collect();
    b.goto(&format!("{base}/?play={}", long.join(",")));
    wait_for("a 32-move line", || {
        let v = shown(&b);
        (v["line"].as_array().unwrap().len() == 32 && v["current"] == json!("32")).then_some(())
    });
    let fits = b.js(
        "return [document.documentElement.scrollWidth, window.innerWidth];",
        json!([]),
    );
    assert!(
        fits[0].as_u64().unwrap() <= fits[1].as_u64().unwrap(),
        "horizontal scroll with a long line: {fits}"
    );
    save_screenshot(
        &b.screenshot(),
        &shots,
        "explorer-phone-long-line.png",
        false,
    );
}

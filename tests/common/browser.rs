//! A minimal W3C WebDriver client for the explorer page tests: Debian's headless Chromium
//! driven through chromedriver (a small HTTP client over `std::net`, no new dependency), with
//! the waits, key codes and screenshot saving the page tests share.

use std::io::{Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::{Value, json};

use super::peers_required;

const CHROMIUM: &str = "/usr/bin/chromium";
const CHROMEDRIVER: &str = "/usr/bin/chromedriver";

/// How long the browser may take to show something (generous: 2 shared cores).
pub const WAIT: Duration = Duration::from_secs(30);

// ---- a minimal W3C WebDriver client ------------------------------------------------------------

/// A chromedriver process and one browser session; both end when dropped.
pub struct Browser {
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
    let buf = try_wd_request(port, method, path, body)
        .unwrap_or_else(|e| panic!("chromedriver, {method} {path}: {e}"));
    let r = super::server::parse(&buf).unwrap_or_else(|| {
        panic!(
            "chromedriver's answer to {method} {path} is not HTTP: {:?}",
            String::from_utf8_lossy(&buf[..buf.len().min(300)])
        )
    });
    let v = serde_json::from_str(&r.body).unwrap_or(Value::Null);
    (r.status, v)
}

/// The bytes of chromedriver's answer to one call, or the I/O error (a driver still starting
/// may accept a connection and reset it).
fn try_wd_request(
    port: u16,
    method: &str,
    path: &str,
    body: Option<&Value>,
) -> std::io::Result<Vec<u8>> {
    let body = body.map(Value::to_string).unwrap_or_default();
    let req = format!(
        "{method} {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nConnection: close\r\nContent-Type: application/json\r\nContent-Length: {}\r\n\r\n{body}",
        body.len()
    );
    let mut s = TcpStream::connect(("127.0.0.1", port))?;
    s.set_read_timeout(Some(Duration::from_secs(120)))?;
    s.write_all(req.as_bytes())?;
    // chromedriver may keep the connection open: read the head, then Content-Length bytes.
    let mut buf = Vec::new();
    let mut chunk = [0u8; 16 * 1024];
    loop {
        let n = s.read(&mut chunk)?;
        buf.extend_from_slice(&chunk[..n]);
        if n == 0 || complete(&buf) {
            break;
        }
    }
    Ok(buf)
}

/// Whether chromedriver answers `/status` with `ready: true` (any error: not yet).
fn driver_ready(port: u16) -> bool {
    try_wd_request(port, "GET", "/status", None)
        .ok()
        .and_then(|buf| super::server::parse(&buf))
        .and_then(|r| serde_json::from_str::<Value>(&r.body).ok())
        .is_some_and(|v| v["value"]["ready"] == json!(true))
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
    pub fn start() -> Browser {
        let port = free_port();
        let driver = Command::new(CHROMEDRIVER)
            .arg(format!("--port={port}"))
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("start chromedriver");
        let start = Instant::now();
        loop {
            if driver_ready(port) {
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
    pub fn call(&self, method: &str, path: &str, body: Option<Value>) -> Value {
        let full = format!("/session/{}{path}", self.session);
        let (status, v) = wd_request(self.port, method, &full, body.as_ref());
        assert_eq!(status, 200, "WebDriver {method} {path}: {v}");
        v["value"].clone()
    }

    pub fn goto(&self, url: &str) {
        self.call("POST", "/url", Some(json!({ "url": url })));
    }

    pub fn url(&self) -> String {
        self.call("GET", "/url", None).as_str().unwrap().to_string()
    }

    /// Runs `body` (a function body; `arguments` holds `args`) in the page.
    pub fn js(&self, body: &str, args: Value) -> Value {
        self.call(
            "POST",
            "/execute/sync",
            Some(json!({ "script": body, "args": args })),
        )
    }

    pub fn find(&self, css: &str) -> String {
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

    pub fn click(&self, css: &str) {
        let el = self.find(css);
        self.call("POST", &format!("/element/{el}/click"), Some(json!({})));
    }

    pub fn type_into(&self, css: &str, text: &str) {
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
    pub fn keys(&self, keys: &[&str]) {
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

    pub fn back(&self) {
        self.call("POST", "/back", Some(json!({})));
    }

    pub fn forward(&self) {
        self.call("POST", "/forward", Some(json!({})));
    }

    pub fn window_size(&self, width: u32, height: u32) {
        self.call(
            "POST",
            "/window/rect",
            Some(json!({"width": width, "height": height})),
        );
    }

    pub fn screenshot(&self) -> Vec<u8> {
        base64_decode(self.call("GET", "/screenshot", None).as_str().unwrap())
    }

    /// A Chrome DevTools Protocol command, through chromedriver's passthrough.
    pub fn cdp(&self, cmd: &str, params: Value) -> Value {
        self.call(
            "POST",
            "/goog/cdp/execute",
            Some(json!({ "cmd": cmd, "params": params })),
        )
    }

    /// Runs `source` in every page loaded from now on, before the page's own scripts; the id
    /// is for [`Browser::forget_script`].
    pub fn before_each_page(&self, source: &str) -> String {
        let v = self.cdp(
            "Page.addScriptToEvaluateOnNewDocument",
            json!({ "source": source }),
        );
        v["identifier"]
            .as_str()
            .unwrap_or_else(|| panic!("no script id: {v}"))
            .to_string()
    }

    pub fn forget_script(&self, id: &str) {
        self.cdp(
            "Page.removeScriptToEvaluateOnNewDocument",
            json!({ "identifier": id }),
        );
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
pub fn wait_for<T>(what: &str, mut f: impl FnMut() -> Option<T>) -> T {
    let start = Instant::now();
    loop {
        if let Some(v) = f() {
            return v;
        }
        assert!(start.elapsed() < WAIT, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(100));
    }
}

pub fn have_browser() -> bool {
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
pub fn save_screenshot(png: &[u8], tmp: &Path, name: &str, docs: bool) {
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

pub const LEFT: &str = "\u{E012}";
pub const RIGHT: &str = "\u{E014}";
pub const DOWN: &str = "\u{E015}";
pub const UP: &str = "\u{E013}";
pub const ENTER: &str = "\u{E007}";
pub const TAB: &str = "\u{E004}";

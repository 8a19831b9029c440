//! A `bookdb serve` child process on a free loopback port, and a small HTTP/1.1 client that
//! can also send what real clients never would.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::path::{Path, PathBuf};
use std::process::{Child, ExitStatus, Stdio};
use std::time::{Duration, Instant};

/// A running server; killed when dropped (use [`Server::stop`] for a graceful end).
pub struct Server {
    pub child: Child,
    /// `127.0.0.1:PORT`
    pub addr: String,
    /// Where the server's stderr (its log) goes.
    pub log: PathBuf,
}

/// An HTTP answer.
#[derive(Debug, Clone)]
pub struct Resp {
    pub status: u16,
    pub headers: Vec<(String, String)>,
    pub body: String,
}

impl Resp {
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.body)
            .unwrap_or_else(|e| panic!("not JSON ({e}): {} {}", self.status, self.body))
    }

    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(k, _)| k.eq_ignore_ascii_case(name))
            .map(|(_, v)| v.as_str())
    }

    /// The `error` of a 4xx/5xx JSON answer.
    pub fn error(&self) -> String {
        self.json()["error"]
            .as_str()
            .unwrap_or_else(|| panic!("no error field: {}", self.body))
            .to_string()
    }
}

impl Server {
    /// Starts `bookdb serve --book BOOK --listen 127.0.0.1:0 --refresh-ms 50 EXTRA…` and waits
    /// for its listening line.
    pub fn start(book: &Path, extra: &[&str]) -> Server {
        let log = book.with_extension(format!(
            "serve-{}.log",
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos()
        ));
        let mut child =
            super::bookdb(["serve", "--book", super::s(book), "--listen", "127.0.0.1:0"])
                .args(["--refresh-ms", "50"])
                .args(extra)
                .command()
                .stdout(Stdio::piped())
                .stderr(std::fs::File::create(&log).unwrap())
                .spawn()
                .expect("start bookdb serve");
        let mut first = String::new();
        BufReader::new(child.stdout.take().unwrap())
            .read_line(&mut first)
            .unwrap();
        let addr = first
            .split("http://")
            .nth(1)
            .and_then(|r| r.split([' ', '"']).next())
            .unwrap_or_else(|| {
                let _ = child.kill();
                panic!(
                    "no listening line: {first:?}; log: {}",
                    std::fs::read_to_string(&log).unwrap_or_default()
                )
            })
            .to_string();
        Server { child, addr, log }
    }

    /// `/lichess` for `play` from `fen` (the start position if none), as the explorer page
    /// asks it (50 moves at most, no filters); the answer must be 200.
    pub fn lichess(&self, fen: Option<&str>, play: &[impl AsRef<str>]) -> serde_json::Value {
        let play: Vec<&str> = play.iter().map(AsRef::as_ref).collect();
        let mut q = format!("/lichess?moves=50&play={}", play.join(","));
        if let Some(f) = fen {
            q.push_str(&format!("&fen={}", enc(f)));
        }
        let r = self.get(&q);
        assert_eq!(r.status, 200, "{q}: {}", r.body);
        r.json()
    }

    pub fn get(&self, path: &str) -> Resp {
        self.request(
            format!("GET {path} HTTP/1.1\r\nHost: t\r\nConnection: close\r\n\r\n").as_bytes(),
        )
    }

    pub fn post(&self, path: &str, headers: &[(&str, &str)], body: &[u8]) -> Resp {
        let mut req = format!(
            "POST {path} HTTP/1.1\r\nHost: t\r\nConnection: close\r\nContent-Length: {}\r\n",
            body.len()
        );
        for (k, v) in headers {
            req.push_str(&format!("{k}: {v}\r\n"));
        }
        req.push_str("\r\n");
        let mut bytes = req.into_bytes();
        bytes.extend_from_slice(body);
        self.request(&bytes)
    }

    /// Sends raw bytes, reads the answer to the end of the connection.
    pub fn request(&self, raw: &[u8]) -> Resp {
        self.try_request(raw)
            .unwrap_or_else(|e| panic!("request failed: {e}; log:\n{}", self.log_text()))
    }

    pub fn try_request(&self, raw: &[u8]) -> std::io::Result<Resp> {
        let mut s = TcpStream::connect(&self.addr)?;
        s.set_read_timeout(Some(Duration::from_secs(60)))?;
        s.write_all(raw)?;
        let mut buf = Vec::new();
        s.read_to_end(&mut buf)?;
        parse(&buf).ok_or_else(|| {
            std::io::Error::other(format!(
                "unparsable answer: {:?}",
                String::from_utf8_lossy(&buf[..buf.len().min(300)])
            ))
        })
    }

    pub fn log_text(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }

    pub fn signal(&self, sig: i32) {
        // SAFETY: kill(2) on our own child's pid; no memory is touched.
        let r = unsafe { libc::kill(self.child.id() as i32, sig) };
        assert_eq!(r, 0, "kill");
    }

    /// SIGTERM, then waits (at most 60 s) for the exit.
    pub fn stop(mut self) -> ExitStatus {
        self.signal(libc::SIGTERM);
        self.wait_exit(Duration::from_secs(60))
    }

    pub fn wait_exit(&mut self, limit: Duration) -> ExitStatus {
        let start = Instant::now();
        loop {
            if let Some(st) = self.child.try_wait().unwrap() {
                return st;
            }
            if start.elapsed() > limit {
                let _ = self.child.kill();
                panic!(
                    "server did not exit within {limit:?}; log:\n{}",
                    self.log_text()
                );
            }
            std::thread::sleep(Duration::from_millis(20));
        }
    }

    /// The server's resident memory, KiB.
    pub fn rss_kib(&self) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id())).unwrap();
        status
            .lines()
            .find_map(|l| l.strip_prefix("VmRSS:"))
            .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
            .unwrap()
    }
}

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Parses a whole HTTP/1.1 answer (content-length, chunked, or read to the end).
pub fn parse(buf: &[u8]) -> Option<Resp> {
    let head_end = buf.windows(4).position(|w| w == b"\r\n\r\n")?;
    let head = std::str::from_utf8(&buf[..head_end]).ok()?;
    let mut lines = head.split("\r\n");
    let status = lines.next()?.split(' ').nth(1)?.parse().ok()?;
    let headers: Vec<(String, String)> = lines
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_ascii_lowercase(), v.trim().to_string()))
        .collect();
    let rest = &buf[head_end + 4..];
    let chunked = headers
        .iter()
        .any(|(k, v)| k == "transfer-encoding" && v.contains("chunked"));
    let body = if chunked {
        let mut out = Vec::new();
        let mut r = rest;
        loop {
            let eol = r.windows(2).position(|w| w == b"\r\n")?;
            let n = usize::from_str_radix(std::str::from_utf8(&r[..eol]).ok()?.trim(), 16).ok()?;
            r = &r[eol + 2..];
            if n == 0 {
                break;
            }
            out.extend_from_slice(r.get(..n)?);
            r = r.get(n + 2..)?;
        }
        out
    } else {
        rest.to_vec()
    };
    Some(Resp {
        status,
        headers,
        body: String::from_utf8_lossy(&body).into_owned(),
    })
}

/// Percent-encodes a query value.
pub fn enc(v: &str) -> String {
    let mut out = String::new();
    for b in v.bytes() {
        if b.is_ascii_alphanumeric() || b"-_.~".contains(&b) {
            out.push(b as char);
        } else {
            out.push_str(&format!("%{b:02X}"));
        }
    }
    out
}

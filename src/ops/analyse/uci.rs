//! One UCI engine process: started and checked (`uci` → `uciok` within [`HANDSHAKE`], else
//! not a UCI engine), set to one thread, a fixed hash and MultiPV, and asked for one
//! position at a time after `ucinewgame` (so a search depends only on the position, the
//! limit and the options). Its output is read by a thread into a channel, so every wait has
//! a deadline; the last lines it wrote are kept for the report of a failure.

use std::collections::VecDeque;
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, ChildStdin, Command, Stdio};
use std::time::{Duration, Instant};

use crossbeam_channel::{Receiver, RecvTimeoutError};

/// How long an engine may take to answer `uci` and `isready`.
pub const HANDSHAKE: Duration = Duration::from_secs(10);
/// Lines of the engine's output kept for a failure's report.
const LAST_WORDS: usize = 8;

/// What to search each position for.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Limit {
    Depth(u32),
    Nodes(u64),
    MoveTime(u64),
}

/// How an engine failed.
#[derive(Debug, Clone, thiserror::Error)]
pub enum EngineError {
    #[error("cannot start {path}: {reason}")]
    Start { path: String, reason: String },
    #[error("not a UCI engine: no uciok within {secs} s after `uci`")]
    NotUci { secs: u64 },
    #[error("the engine exited")]
    Died,
    #[error("no answer within {0:.1} s")]
    Hung(f64),
    #[error("said something that is not UCI: {0:?}")]
    Babble(String),
}

/// One line of a finished search, from the side to move's point of view.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct InfoLine {
    pub depth: u32,
    pub nodes: u64,
    /// `true`: mate in `score` moves; else centipawns.
    pub mate: bool,
    pub score: i32,
    pub pv: Vec<String>,
}

/// A running engine.
pub struct Engine {
    child: Child,
    stdin: ChildStdin,
    /// Lines of stdout (`false`) and stderr (`true`).
    out: Receiver<(bool, String)>,
    last: VecDeque<String>,
    /// Its `id name`.
    pub name: String,
}

/// The longest line kept from an engine (UCI lines are short: a 100-move `pv` is ~500
/// bytes); a longer one is cut here, the rest of it read and dropped, so a babbling engine
/// cannot fill the memory.
const MAX_LINE: usize = 16 * 1024;
/// Lines read ahead of the analysis, per engine (at most 4 MiB with [`MAX_LINE`]).
const LINES_QUEUED: usize = 256;

/// Reads the next line of `r` into `buf` without its line end, at most `max` bytes of it (the
/// rest of a longer line is skipped). False at the end of the stream with nothing read.
fn read_line_capped(r: &mut impl BufRead, buf: &mut Vec<u8>, max: usize) -> std::io::Result<bool> {
    buf.clear();
    let mut any = false;
    loop {
        let chunk = match r.fill_buf() {
            Ok(c) => c,
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(e),
        };
        if chunk.is_empty() {
            return Ok(any);
        }
        any = true;
        let (part, ends) = match memchr::memchr(b'\n', chunk) {
            Some(i) => (&chunk[..i], Some(i + 1)),
            None => (chunk, None),
        };
        let room = max.saturating_sub(buf.len());
        buf.extend_from_slice(&part[..part.len().min(room)]);
        let used = ends.unwrap_or(chunk.len());
        r.consume(used);
        if ends.is_some() {
            if buf.last() == Some(&b'\r') {
                buf.pop();
            }
            return Ok(true);
        }
    }
}

impl Engine {
    /// Starts `path` and sets it up; a binary that does not answer `uci` with `uciok` in
    /// time is refused.
    pub fn start(path: &str, hash_mib: u32, multipv: u32) -> Result<Engine, EngineError> {
        use std::os::unix::process::CommandExt;
        // Its own process group: what it starts (a script's children) is killed with it.
        let mut child = Command::new(path)
            .process_group(0)
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| EngineError::Start {
                path: path.to_string(),
                reason: e.to_string(),
            })?;
        // Bounded: an engine that writes faster than it is read waits on its pipe.
        let (tx, out) = crossbeam_channel::bounded(LINES_QUEUED);
        let streams = [
            child
                .stdout
                .take()
                .map(|s| (false, Box::new(s) as Box<dyn std::io::Read + Send>)),
            child
                .stderr
                .take()
                .map(|s| (true, Box::new(s) as Box<dyn std::io::Read + Send>)),
        ];
        for (is_err, stream) in streams.into_iter().flatten() {
            let tx = tx.clone();
            std::thread::spawn(move || {
                let mut r = BufReader::new(stream);
                let mut buf = Vec::new();
                while let Ok(true) = read_line_capped(&mut r, &mut buf, MAX_LINE) {
                    let line = String::from_utf8_lossy(&buf).into_owned();
                    if tx.send((is_err, line)).is_err() {
                        break;
                    }
                }
            });
        }
        let stdin = child.stdin.take().ok_or(EngineError::Died)?;
        let mut e = Engine {
            child,
            stdin,
            out,
            last: VecDeque::new(),
            name: String::new(),
        };
        let not_uci = EngineError::NotUci {
            secs: HANDSHAKE.as_secs(),
        };
        e.send("uci").map_err(|_| not_uci.clone())?;
        let deadline = Instant::now() + HANDSHAKE;
        loop {
            let line = match e.recv(deadline, HANDSHAKE) {
                Ok(l) => l,
                Err(EngineError::Hung(_) | EngineError::Died) => return Err(not_uci),
                Err(other) => return Err(other),
            };
            if let Some(n) = line.strip_prefix("id name ") {
                e.name = n.trim().to_string();
            } else if line.trim() == "uciok" {
                break;
            }
        }
        e.send("setoption name Threads value 1")?;
        e.send(&format!("setoption name Hash value {hash_mib}"))?;
        e.send(&format!("setoption name MultiPV value {multipv}"))?;
        e.ready()?;
        Ok(e)
    }

    /// The last lines the engine wrote (stdout and stderr), for a report.
    pub fn last_words(&self) -> Vec<String> {
        self.last.iter().cloned().collect()
    }

    fn send(&mut self, cmd: &str) -> Result<(), EngineError> {
        writeln!(self.stdin, "{cmd}")
            .and_then(|()| self.stdin.flush())
            .map_err(|_| EngineError::Died)
    }

    /// The next line of stdout before `deadline` (`limit` after the wait began); stderr lines
    /// are only kept among the last words. An engine that goes on writing past the deadline
    /// without the answer awaited is hung all the same.
    fn recv(&mut self, deadline: Instant, limit: Duration) -> Result<String, EngineError> {
        loop {
            let wait = deadline.saturating_duration_since(Instant::now());
            if wait.is_zero() {
                return Err(EngineError::Hung(limit.as_secs_f64()));
            }
            match self.out.recv_timeout(wait) {
                Ok((is_err, line)) => {
                    if self.last.len() == LAST_WORDS {
                        self.last.pop_front();
                    }
                    self.last.push_back(line.clone());
                    if !is_err {
                        return Ok(line);
                    }
                }
                Err(RecvTimeoutError::Timeout) => {
                    return Err(EngineError::Hung(limit.as_secs_f64()));
                }
                Err(RecvTimeoutError::Disconnected) => return Err(EngineError::Died),
            }
        }
    }

    fn ready(&mut self) -> Result<(), EngineError> {
        self.send("isready")?;
        let deadline = Instant::now() + HANDSHAKE;
        loop {
            let line = self.recv(deadline, HANDSHAKE)?;
            match line.split_whitespace().next() {
                Some("readyok") => return Ok(()),
                None | Some("info" | "id" | "option") => {}
                Some(_) => return Err(EngineError::Babble(line)),
            }
        }
    }

    /// Searches the position `fen` (after `ucinewgame`) for `limit`; the final line of each
    /// MultiPV index, best first. `timeout` bounds the search.
    pub fn search(
        &mut self,
        fen: &str,
        limit: Limit,
        timeout: Duration,
    ) -> Result<Vec<InfoLine>, EngineError> {
        self.send("ucinewgame")?;
        self.ready()?;
        self.send(&format!("position fen {fen}"))?;
        self.send(&match limit {
            Limit::Depth(d) => format!("go depth {d}"),
            Limit::Nodes(n) => format!("go nodes {n}"),
            Limit::MoveTime(ms) => format!("go movetime {ms}"),
        })?;
        let deadline = Instant::now() + timeout;
        let mut lines: Vec<Option<InfoLine>> = Vec::new();
        loop {
            let line = self.recv(deadline, timeout)?;
            let mut words = line.split_whitespace();
            match words.next() {
                Some("bestmove") => break,
                Some("info") => {
                    if let Some((idx, info)) = parse_info(&line)? {
                        if lines.len() < idx {
                            lines.resize(idx, None);
                        }
                        lines[idx - 1] = Some(info);
                    }
                }
                None => {}
                Some(_) => return Err(EngineError::Babble(line)),
            }
        }
        // The lines of the last completed depth of the first line.
        let depth = lines.first().and_then(|l| l.as_ref()).map(|l| l.depth);
        Ok(lines
            .into_iter()
            .map_while(|l| l.filter(|l| Some(l.depth) == depth))
            .collect())
    }
}

impl Drop for Engine {
    fn drop(&mut self) {
        let _ = writeln!(self.stdin, "quit");
        if let Ok(pid) = libc::pid_t::try_from(self.child.id()) {
            // SAFETY: kill(2) of the process group this engine leads (started with
            // `process_group(0)`, not yet reaped: its id is still ours); no pointers.
            unsafe { libc::kill(-pid, libc::SIGKILL) };
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// Parses an `info` line with a score and a pv: its MultiPV index (from 1) and the line;
/// `None` for other info lines (`currmove`, `string`, bounds, no pv).
fn parse_info(line: &str) -> Result<Option<(usize, InfoLine)>, EngineError> {
    let w: Vec<&str> = line.split_whitespace().collect();
    if w.get(1) == Some(&"string") || w.contains(&"lowerbound") || w.contains(&"upperbound") {
        return Ok(None);
    }
    let num = |key: &str| -> Result<Option<i64>, EngineError> {
        match w.iter().position(|x| *x == key) {
            Some(i) => w
                .get(i + 1)
                .and_then(|v| v.parse::<i64>().ok())
                .map(Some)
                .ok_or_else(|| EngineError::Babble(line.to_string())),
            None => Ok(None),
        }
    };
    let Some(pv_at) = w.iter().position(|x| *x == "pv") else {
        return Ok(None);
    };
    let (mate, score) = match (num("cp")?, num("mate")?) {
        (Some(c), None) => (false, c),
        (None, Some(m)) => (true, m),
        _ => return Err(EngineError::Babble(line.to_string())),
    };
    let depth = num("depth")?.ok_or_else(|| EngineError::Babble(line.to_string()))?;
    let idx = num("multipv")?.unwrap_or(1);
    if !(1..=5).contains(&idx) || depth < 0 {
        return Err(EngineError::Babble(line.to_string()));
    }
    let info = InfoLine {
        depth: depth as u32,
        nodes: num("nodes")?.unwrap_or(0).max(0) as u64,
        mate,
        score: i32::try_from(score).map_err(|_| EngineError::Babble(line.to_string()))?,
        pv: w[pv_at + 1..].iter().map(|s| s.to_string()).collect(),
    };
    Ok(Some((idx as usize, info)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn info_lines_parse_or_are_babble() {
        let (i, l) = parse_info(
            "info depth 12 seldepth 15 multipv 2 score cp -31 nodes 41234 nps 1 pv e7e5 g1f3",
        )
        .unwrap()
        .unwrap();
        assert_eq!(
            (i, l.depth, l.nodes, l.mate, l.score),
            (2, 12, 41234, false, -31)
        );
        assert_eq!(l.pv, ["e7e5", "g1f3"]);
        assert!(parse_info("info string NNUE enabled").unwrap().is_none());
        assert!(
            parse_info("info depth 3 currmove e2e4 currmovenumber 1")
                .unwrap()
                .is_none()
        );
        assert!(parse_info("info depth x score cp 1 pv e2e4").is_err());
        assert!(parse_info("info depth 3 score cp 1 mate 2 pv e2e4").is_err());
    }

    #[test]
    fn long_lines_are_cut_and_line_ends_taken_off() {
        let long = "x".repeat(200_000);
        let text = format!("uciok\r\ninfo string {long}\nreadyok\nlast");
        // A small buffer: lines span many reads.
        let mut r = std::io::BufReader::with_capacity(7, text.as_bytes());
        let mut buf = Vec::new();
        let mut lines = Vec::new();
        while read_line_capped(&mut r, &mut buf, 100).unwrap() {
            lines.push(String::from_utf8(buf.clone()).unwrap());
        }
        let want_long = format!("info string {}", &long[..100 - "info string ".len()]);
        assert_eq!(lines, ["uciok", want_long.as_str(), "readyok", "last"]);
        let mut empty = std::io::BufReader::new(&b""[..]);
        assert!(!read_line_capped(&mut empty, &mut buf, 100).unwrap());
    }
}

//! The deadline of a request head: a connection that began a request and has not finished
//! its head within `--head-timeout` is answered 408 (with a JSON body) and closed; one that
//! stays idle that long between requests is closed without a word.
//!
//! hyper's own head timeout closes both silently, so [`HeadTimer`] wraps the connection
//! below hyper and keeps the clock itself: it follows the bytes read (a head ends at its
//! first empty line) and the answers written (an answer's head resets the clock). hyper's
//! timeout stays as a backstop, set longer ([`backstop`]).

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll, ready};
use std::time::Duration;

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::time::{Instant, Sleep};

/// Where a connection is between requests.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Phase {
    /// Waiting for a request (or for the client's next one): closed silently at the deadline.
    Idle,
    /// A request head has begun and not ended: answered 408 at the deadline.
    Head,
    /// The head is in; its body and answer take what they take (the routes time those).
    Busy,
    /// The deadline passed: reads see the end of the stream.
    Closed,
}

/// A connection whose request heads must arrive within a time limit.
pub(super) struct HeadTimer<T> {
    inner: T,
    limit: Duration,
    sleep: Pin<Box<Sleep>>,
    phase: Phase,
    /// The last bytes of the head read so far (its end, an empty line, may span two reads).
    tail: [u8; 3],
    /// The 408 being written and how much of it is.
    refusal: Option<(Vec<u8>, usize)>,
}

/// hyper's own head timeout, a backstop behind [`HeadTimer`]: the idle time and a head's
/// time may both run in full before it, and a moment more.
pub(super) fn backstop(limit: Duration) -> Duration {
    limit * 2 + Duration::from_secs(1)
}

/// The answer to a head not finished in time.
fn refusal(limit: Duration) -> Vec<u8> {
    let body = serde_json::json!({
        "error": format!(
            "the request head was not complete within {} s (--head-timeout); the connection is closed",
            limit.as_secs_f64()
        )
    })
    .to_string();
    format!(
        "HTTP/1.1 408 Request Timeout\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n\r\n{body}",
        body.len()
    )
    .into_bytes()
}

/// Whether `tail` (the three bytes before `new`) and `new` hold an empty line ending a head;
/// `tail` becomes the last three bytes seen.
fn head_ends(tail: &mut [u8; 3], new: &[u8]) -> bool {
    // The last four bytes seen: the three before `new`, then each of `new` in turn.
    let mut window = [0u8; 4];
    window[1..].copy_from_slice(tail);
    let mut found = false;
    for &b in new {
        window.copy_within(1.., 0);
        window[3] = b;
        // An empty line as hyper takes it: CRLF or a bare LF ending the last field's line.
        if &window == b"\r\n\r\n" || window[1..] == *b"\n\r\n" || window[2..] == *b"\n\n" {
            found = true;
            break;
        }
    }
    if !found {
        tail.copy_from_slice(&window[1..]);
    }
    found
}

/// Whether the answer head at the start of `buf` says `connection: close`.
fn closes(buf: &[u8]) -> bool {
    let head = memchr::memmem::find(buf, b"\r\n\r\n").map_or(buf, |end| &buf[..end]);
    head.split(|&b| b == b'\n').any(|line| {
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        line.len() == b"connection: close".len() && line.eq_ignore_ascii_case(b"connection: close")
    })
}

impl<T> HeadTimer<T> {
    pub(super) fn new(inner: T, limit: Duration) -> HeadTimer<T> {
        HeadTimer {
            inner,
            limit,
            sleep: Box::pin(tokio::time::sleep(limit)),
            phase: Phase::Idle,
            tail: [0; 3],
            refusal: None,
        }
    }

    fn restart(&mut self, phase: Phase) {
        self.phase = phase;
        self.tail = [0; 3];
        self.sleep.as_mut().reset(Instant::now() + self.limit);
    }
}

impl<T: AsyncWrite + Unpin> HeadTimer<T> {
    /// Writes the 408 to its end.
    fn poll_refuse(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let limit = self.limit;
        let (bytes, done) = self.refusal.get_or_insert_with(|| (refusal(limit), 0));
        while *done < bytes.len() {
            let n = ready!(Pin::new(&mut self.inner).poll_write(cx, &bytes[*done..]))?;
            if n == 0 {
                return Poll::Ready(Err(io::ErrorKind::WriteZero.into()));
            }
            *done += n;
        }
        Pin::new(&mut self.inner).poll_flush(cx)
    }
}

impl<T: AsyncRead + AsyncWrite + Unpin> AsyncRead for HeadTimer<T> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let this = &mut *self;
        match this.phase {
            Phase::Closed => return Poll::Ready(Ok(())),
            Phase::Busy => {}
            Phase::Idle | Phase::Head => {
                if this.refusal.is_some() || this.sleep.as_mut().poll(cx).is_ready() {
                    if this.phase == Phase::Head {
                        // A client gone meanwhile does not matter: the connection ends anyway.
                        let _ = ready!(this.poll_refuse(cx));
                    }
                    // hyper sees the end of the stream: silence if it had nothing of a
                    // request, an incomplete head (no answer of its own) otherwise.
                    this.phase = Phase::Closed;
                    return Poll::Ready(Ok(()));
                }
            }
        }
        let before = buf.filled().len();
        ready!(Pin::new(&mut this.inner).poll_read(cx, buf))?;
        let new = &buf.filled()[before..];
        if !new.is_empty() && this.phase != Phase::Busy {
            if this.phase == Phase::Idle {
                this.restart(Phase::Head);
            }
            if head_ends(&mut this.tail, new) {
                this.phase = Phase::Busy;
            }
        }
        Poll::Ready(Ok(()))
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for HeadTimer<T> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = &mut *self;
        let n = ready!(Pin::new(&mut this.inner).poll_write(cx, buf))?;
        if n > 0 {
            // An answer's head (not an interim 1xx such as 100 Continue) ends the request:
            // the clock runs for the next one. Writes of a long answer keep it running.
            // hyper answers an HTTP/1.0 request in HTTP/1.0.
            let status = buf
                .strip_prefix(b"HTTP/1.1 ")
                .or_else(|| buf.strip_prefix(b"HTTP/1.0 "))
                .and_then(|r| r.first().copied());
            if status.is_some_and(|d| d != b'1') || this.phase == Phase::Idle {
                this.restart(Phase::Idle);
            }
            // A refusal that closes the connection (hyper's 400/414/431 among them) ends
            // the reading too: what the client sent past the refused head is not waited for.
            if status.is_some_and(|d| d >= b'4') && closes(buf) {
                this.phase = Phase::Closed;
            }
        }
        Poll::Ready(Ok(n))
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_head_ends_at_its_first_empty_line_across_reads() {
        let mut tail = [0; 3];
        assert!(!head_ends(&mut tail, b"GET / HTTP/1.1\r\nHost: x\r"));
        assert!(!head_ends(&mut tail, b"\n"));
        assert!(head_ends(&mut tail, b"\r\nrest"));
        let mut tail = [0; 3];
        assert!(!head_ends(&mut tail, b"GET / HTTP/1.1\r\n"));
        assert!(head_ends(&mut tail, b"\r\n"));
        // Bare line feeds (hyper accepts them too), also before a CRLF empty line.
        let mut tail = [0; 3];
        assert!(head_ends(&mut tail, b"GET / HTTP/1.1\nHost: x\n\n"));
        let mut tail = [0; 3];
        assert!(!head_ends(&mut tail, b"GET / HTTP/1.1\nHost: x\n"));
        assert!(head_ends(&mut tail, b"\r\n"));
        // Byte by byte.
        let mut tail = [0; 3];
        let head = b"GET / HTTP/1.1\r\nHost: x\r\n\r\n";
        for (i, b) in head.iter().enumerate() {
            assert_eq!(head_ends(&mut tail, &[*b]), i == head.len() - 1, "byte {i}");
        }
        let mut tail = [0; 3];
        assert!(!head_ends(&mut tail, b"GET / HTTP/1.1\r\nHost: x\r\n"));
    }

    #[test]
    fn a_closing_answer_is_told_from_a_kept_one() {
        assert!(closes(
            b"HTTP/1.1 431 X\r\ncontent-type: a\r\nConnection: close\r\n\r\n{}"
        ));
        assert!(!closes(
            b"HTTP/1.1 400 X\r\ncontent-length: 2\r\n\r\nconnection: close\r\n"
        ));
        assert!(!closes(b"HTTP/1.1 400 X\r\nconnection: closed\r\n\r\n"));
    }

    #[test]
    fn the_refusal_is_a_whole_json_answer() {
        let r = String::from_utf8(refusal(Duration::from_secs(10))).unwrap();
        let (head, body) = r.split_once("\r\n\r\n").unwrap();
        assert!(head.starts_with("HTTP/1.1 408 "), "{head}");
        assert!(head.contains(&format!("content-length: {}", body.len())));
        let v: serde_json::Value = serde_json::from_str(body).unwrap();
        assert!(v["error"].as_str().unwrap().contains("10 s"), "{v}");
    }
}

//! What the server writes when hyper itself refuses a request head (a garbage request line,
//! a head over its buffer, too many header fields, an over-long URI): hyper answers those
//! with a status and an empty body before any route runs. [`JsonRefusals`] wraps a
//! connection and replaces such an answer by the same status with a JSON `{"error": …}` body,
//! as every other refusal of the server has. An HTTP/2 client's connection preface (h2c with
//! prior knowledge), which hyper's HTTP/1 server closes without a word, is cut to its request
//! line so that it gets the same 400.

use std::io;
use std::pin::Pin;
use std::task::{Context, Poll, ready};

use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};

/// A connection whose bodiless 400/414/431 answers (hyper's own) get a JSON body. The server
/// writes flat buffers (`writev(false)`), so such an answer is the whole of one write.
pub(super) struct JsonRefusals<T> {
    inner: T,
    /// A replacement being written: its bytes, how many are written, the length of the
    /// buffer it replaces (reported written once the replacement is).
    pending: Option<(Vec<u8>, usize, usize)>,
    /// Whether the connection's first bytes were read (only they can be a preface).
    started: bool,
}

/// The connection preface of HTTP/2 (RFC 9113 §3.4), and the request line it begins with.
const H2_PREFACE: &[u8] = b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n";
const H2_REQUEST_LINE: &[u8] = b"PRI * HTTP/2.0\r\n\r\n";

impl<T> JsonRefusals<T> {
    pub(super) fn new(inner: T) -> JsonRefusals<T> {
        JsonRefusals {
            inner,
            pending: None,
            started: false,
        }
    }
}

/// The message of hyper's automatic answers by status.
fn message(status: &[u8]) -> Option<&'static str> {
    Some(match status {
        b"400" => "malformed request: the request line or a header field is not HTTP/1.1",
        b"414" => "the request line is too long: URIs of at most 16 KiB are accepted",
        b"431" => {
            "the request head is too large: at most 64 KiB and 100 header fields are accepted"
        }
        _ => return None,
    })
}

/// The JSON answer that replaces `buf` if `buf` is one of hyper's bodiless refusals: a whole
/// response head of status 400, 414 or 431 with no content type (every answer of the routes
/// has one) and nothing after it.
pub(super) fn replacement(buf: &[u8]) -> Option<Vec<u8>> {
    let rest = buf.strip_prefix(b"HTTP/1.1 ")?;
    let text = message(rest.get(..3)?)?;
    let end = memchr::memmem::find(buf, b"\r\n\r\n")?;
    if end + 4 != buf.len() {
        return None;
    }
    let head = std::str::from_utf8(&buf[..end]).ok()?;
    let mut lines = head.split("\r\n");
    let status_line = lines.next()?;
    let mut kept = String::new();
    for line in lines {
        let name = line.split(':').next().unwrap_or("").trim();
        if name.eq_ignore_ascii_case("content-type") {
            return None;
        }
        if !(name.eq_ignore_ascii_case("content-length") || name.eq_ignore_ascii_case("connection"))
        {
            kept.push_str(line);
            kept.push_str("\r\n");
        }
    }
    let body = serde_json::json!({ "error": text }).to_string();
    Some(
        format!(
            "{status_line}\r\ncontent-type: application/json\r\ncontent-length: {}\r\nconnection: close\r\n{kept}\r\n{body}",
            body.len()
        )
        .into_bytes(),
    )
}

impl<T: AsyncRead + Unpin> AsyncRead for JsonRefusals<T> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        ready!(Pin::new(&mut self.inner).poll_read(cx, buf))?;
        if !self.started && buf.filled().len() > before {
            self.started = true;
            // hyper closes on the whole preface without an answer; its request line alone is
            // a head it refuses with 400 (then a JSON one, above). What follows is dropped:
            // the connection ends with that answer.
            if buf.filled()[before..].starts_with(H2_PREFACE) {
                buf.set_filled(before + H2_REQUEST_LINE.len());
            }
        }
        Poll::Ready(Ok(()))
    }
}

impl<T: AsyncWrite + Unpin> AsyncWrite for JsonRefusals<T> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let this = &mut *self;
        if this.pending.is_none() {
            match replacement(buf) {
                Some(r) => this.pending = Some((r, 0, buf.len())),
                None => return Pin::new(&mut this.inner).poll_write(cx, buf),
            }
        }
        loop {
            let Some((bytes, done, replaced)) = this.pending.as_mut() else {
                return Poll::Ready(Ok(0));
            };
            let n = ready!(Pin::new(&mut this.inner).poll_write(cx, &bytes[*done..]))?;
            if n == 0 {
                return Poll::Ready(Ok(0));
            }
            *done += n;
            if *done == bytes.len() {
                let replaced = *replaced;
                this.pending = None;
                return Poll::Ready(Ok(replaced));
            }
        }
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
    fn hypers_bodiless_refusals_get_a_json_body_and_nothing_else_changes() {
        let r = replacement(b"HTTP/1.1 431 Request Header Fields Too Large\r\ncontent-length: 0\r\ndate: Tue, 01 Dec 2026 17:00:00 GMT\r\n\r\n").unwrap();
        let text = String::from_utf8(r).unwrap();
        let (head, body) = text.split_once("\r\n\r\n").unwrap();
        assert!(head.starts_with("HTTP/1.1 431 "), "{head}");
        assert!(head.contains("content-type: application/json"), "{head}");
        assert!(head.contains("date: "), "{head}");
        assert!(!head.contains("content-length: 0"), "{head}");
        let v: serde_json::Value = serde_json::from_str(body).unwrap();
        assert!(v["error"].as_str().unwrap().contains("64 KiB"));
        assert!(replacement(b"HTTP/1.1 400 Bad Request\r\ncontent-length: 0\r\n\r\n").is_some());
        // The routes' own answers, other statuses, and heads followed by a body stay.
        for kept in [
            &b"HTTP/1.1 400 Bad Request\r\ncontent-type: application/json\r\ncontent-length: 2\r\n\r\n"[..],
            b"HTTP/1.1 200 OK\r\ncontent-length: 0\r\n\r\n",
            b"HTTP/1.1 100 Continue\r\n\r\n",
            b"HTTP/1.1 400 Bad Request\r\ncontent-length: 2\r\n\r\n{}",
            b"{\"error\":\"HTTP/1.1 400 \"}",
        ] {
            assert!(replacement(kept).is_none(), "{}", String::from_utf8_lossy(kept));
        }
    }
}

//! The game source: inputs cut into chunks of whole games for the workers to parse in parallel
//! ([`Chunker`], [`last_game_boundary`]), and the parts of inputs read before a checkpoint,
//! skipped on a resume (read again for their game fingerprints with `--dedupe`).

use std::io::Read;
use std::path::Path;

use super::dedupe::remember;
use super::options::InputKind;
use super::worker::dedupe_fingerprint;
use crate::error::{Error, Result};
use crate::ops::gameident;
use crate::ops::gamereader::GameReader;
use crate::ops::input;
use crate::ops::othello::games::{WTHOR_HEADER, WTHOR_RECORD};
use crate::ops::progress::Progress;
use crate::store::fpset::FingerprintSet;

/// Raw text handed to a worker at once, at most (see `read_phase` for smaller budgets).
pub(super) const CHUNK_BYTES: usize = 1 << 20;
/// A chunk grows past its size only while no game boundary is found, up to 8 times its size
/// (at least 4 MiB, so that no real game is cut: the longest, TCEC games with engine
/// comments, are under 100 KB) and at most this; then it is cut at a line end. Bounded by the
/// chunk size, hence by `--memory`: a 1 GiB line without a game boundary took 292 MiB at
/// `--memory 64` when every chunk could grow to 64 MiB (tests/hostile_inputs.rs).
const MAX_CHUNK_BYTES: usize = 64 << 20;

/// The most a chunk of normally `chunk_bytes` grows to while looking for a game boundary.
fn max_chunk_bytes(chunk_bytes: usize) -> usize {
    chunk_bytes
        .saturating_mul(8)
        .clamp(4 << 20, MAX_CHUNK_BYTES)
}

/// Where to cut a buffer of PGN text that starts outside any comment (at the start of the
/// input or of a game): just before the last `[` that starts a line after a blank line (the
/// start of a game's tags) and is not inside a comment. Brace comments may hold blank lines
/// and lines starting with `[` (`{ ...\n\n[%clk 0:01:00] }`), so the text is scanned: brace
/// comments, rest-of-line `;` comments, `%` escape lines and tag pairs (whose quoted values
/// may hold braces) are skipped. `None` if there is no such `[` after the first byte.
fn last_game_boundary(buf: &[u8]) -> Option<usize> {
    let mut last = None;
    let mut i = 0;
    loop {
        if i < buf.len() && (i == 0 || buf[i - 1] == b'\n') {
            match buf[i] {
                b'[' => {
                    let blank_before = buf[..i].ends_with(b"\n\n") || buf[..i].ends_with(b"\n\r\n");
                    if blank_before {
                        last = Some(i);
                    }
                    match skip_tag(buf, i) {
                        Some(end) => {
                            i = end;
                            continue;
                        }
                        None => return last,
                    }
                }
                b'%' => match memchr::memchr(b'\n', &buf[i..]) {
                    Some(k) => {
                        i += k + 1;
                        continue;
                    }
                    None => return last,
                },
                _ => {}
            }
        }
        let Some(j) = memchr::memchr3(b'\n', b'{', b';', &buf[i..]).map(|j| i + j) else {
            return last;
        };
        i = match buf[j] {
            b'\n' => j + 1,
            b'{' => match memchr::memchr(b'}', &buf[j + 1..]) {
                Some(k) => j + 1 + k + 1,
                None => return last,
            },
            // A `;` comment runs to the end of its line (the newline is seen next).
            _ => match memchr::memchr(b'\n', &buf[j..]) {
                Some(k) => j + k,
                None => return last,
            },
        };
    }
}

/// The end of the tag pair starting at `buf[start] == b'['`: after its `]`, or at the end of
/// its line if it has none; quoted values may hold `]`, braces and `\"`. `None` if the buffer
/// ends first.
fn skip_tag(buf: &[u8], start: usize) -> Option<usize> {
    let mut in_string = false;
    let mut escaped = false;
    for (k, &c) in buf.iter().enumerate().skip(start + 1) {
        match c {
            b'\n' => return Some(k),
            _ if escaped => escaped = false,
            b'\\' if in_string => escaped = true,
            b'"' => in_string = !in_string,
            b']' if !in_string => return Some(k + 1),
            _ => {}
        }
    }
    None
}

impl InputKind {
    /// Where to cut `buf`, which starts at byte `offset` of the input: before the last game
    /// that may be incomplete; `None` if no game ends in it.
    fn boundary(self, buf: &[u8], offset: u64) -> Option<usize> {
        match self {
            InputKind::Pgn => last_game_boundary(buf),
            InputKind::OthelloLines => memchr::memrchr(b'\n', buf).map(|i| i + 1),
            InputKind::Wthor => {
                let (header, size) = (WTHOR_HEADER as u64, WTHOR_RECORD as u64);
                let end = offset + buf.len() as u64;
                let cut = header + end.checked_sub(header)? / size * size;
                usize::try_from(cut.checked_sub(offset)?)
                    .ok()
                    .filter(|&c| c > 0)
            }
        }
    }

    /// Games (lines, records) that start in a chunk of `len` bytes at `offset`, for the number
    /// of the next chunk's first game; `data` is the chunk's text.
    pub(super) fn units(self, data: &[u8], offset: u64) -> u64 {
        match self {
            InputKind::Pgn | InputKind::OthelloLines => {
                memchr::memchr_iter(b'\n', data).count() as u64
            }
            InputKind::Wthor => {
                let header = (WTHOR_HEADER as u64).saturating_sub(offset) as usize;
                data.len().saturating_sub(header).div_ceil(WTHOR_RECORD) as u64
            }
        }
    }
}

/// An input's text cut into chunks at game boundaries.
pub(super) struct Chunker<'a, R> {
    kind: InputKind,
    /// Input offset of `buf[0]`.
    offset: u64,
    reader: R,
    /// The input's name, for errors.
    name: &'a str,
    chunk_bytes: usize,
    /// Text read and not handed out yet.
    buf: Vec<u8>,
    eof: bool,
}

impl<'a, R: Read> Chunker<'a, R> {
    /// A chunker of `reader`, the input `name` of kind `kind` from byte `offset` on.
    pub(super) fn new(
        reader: R,
        name: &'a str,
        chunk_bytes: usize,
        kind: InputKind,
        offset: u64,
    ) -> Self {
        Chunker {
            kind,
            offset,
            reader,
            name,
            chunk_bytes,
            buf: Vec::with_capacity(2 * chunk_bytes),
            eof: false,
        }
    }

    /// True once every byte of the input has been handed out.
    pub(super) fn done(&self) -> bool {
        self.eof && self.buf.is_empty()
    }

    /// The next chunk: at least `chunk_bytes` of text cut just before a game (or at a line end
    /// if no game starts in the first [`max_chunk_bytes`]), or the rest of the input. The text
    /// after the cut is kept in `spare` (an emptied buffer, reused), which becomes the buffer
    /// the next chunk is read into.
    pub(super) fn next_chunk(&mut self, spare: Vec<u8>) -> Result<Vec<u8>> {
        let cut = loop {
            while !self.eof && self.buf.len() < self.chunk_bytes {
                let start = self.buf.len();
                self.buf.resize(start + self.chunk_bytes / 4, 0);
                let n = loop {
                    match self.reader.read(&mut self.buf[start..]) {
                        Ok(n) => break n,
                        Err(e) if e.kind() == std::io::ErrorKind::Interrupted => continue,
                        Err(e) => return Err(crate::ops::input::read_error(self.name, e)),
                    }
                };
                self.buf.truncate(start + n);
                self.eof = n == 0;
            }
            if self.eof {
                break self.buf.len();
            }
            match self.kind.boundary(&self.buf, self.offset) {
                Some(i) => break i,
                None if self.buf.len() < max_chunk_bytes(self.chunk_bytes) => {
                    // No boundary yet: read more before cutting.
                    let start = self.buf.len();
                    self.buf.resize(start + (1 << 20), 0);
                    let n = self
                        .reader
                        .read(&mut self.buf[start..])
                        .map_err(|e| crate::ops::input::read_error(self.name, e))?;
                    self.buf.truncate(start + n);
                    self.eof = n == 0;
                }
                None => break memchr::memrchr(b'\n', &self.buf).map_or(self.buf.len(), |i| i + 1),
            }
        };
        // Text inputs (PGN, transcripts): a NUL byte past the start the input was checked by
        // means binary data (a damaged or wrong file); the input fails rather than count noise
        // as games. WTHOR files are binary by nature.
        if self.kind != InputKind::Wthor
            && let Some(i) = memchr::memchr(0, &self.buf[..cut])
        {
            return Err(crate::ops::input::not_pgn(
                self.name,
                &format!(
                    "binary data (a NUL byte {} bytes into the text)",
                    self.offset + i as u64
                ),
            ));
        }
        self.offset += cut as u64;
        let mut rest = spare;
        rest.extend_from_slice(&self.buf[cut..]);
        self.buf.truncate(cut);
        Ok(std::mem::replace(&mut self.buf, rest))
    }
}

/// Skips the first `bytes` (decompressed) of an input, read before the checkpoint an import
/// resumes from. With `--dedupe` (`seen`) the games there count as seen again.
pub(super) fn skip_to_checkpoint(
    reader: &mut impl Read,
    bytes: u64,
    name: &str,
    staging: &Path,
    seen: Option<&mut FingerprintSet>,
    progress: &Progress,
) -> Result<()> {
    let mut prefix = Read::take(reader, bytes);
    let ctx = |e| Error::io(format!("reading {name}"), e);
    match seen {
        Some(seen) => {
            // The games before the checkpoint count as seen again.
            progress.phase(&format!("rereading the start of {name} for --dedupe"));
            let mut games = GameReader::new(&mut prefix);
            while let Some(g) = games.next_game().map_err(ctx)? {
                if let Some(fp) = dedupe_fingerprint(&g) {
                    remember(seen, fp, gameident::of_raw(&g))?;
                }
            }
        }
        None => {
            std::io::copy(&mut prefix, &mut std::io::sink()).map_err(ctx)?;
        }
    }
    if prefix.limit() != 0 {
        return Err(Error::Input(format!(
            "{name}: input is shorter than when the interrupted import read it; remove {} to start over",
            staging.display()
        )));
    }
    Ok(())
}

/// Adds the fingerprints of every game of an input read completely before a checkpoint, so
/// that `--dedupe` drops their repeats in later inputs after a resume as it would have without
/// the interruption.
pub(super) fn remember_games(path: &str, seen: &mut FingerprintSet) -> Result<()> {
    let inp = input::open(path)?;
    let mut games = GameReader::new(inp.reader);
    while let Some(g) = games
        .next_game()
        .map_err(|e| Error::io(format!("reading {path}"), e))?
    {
        if let Some(fp) = dedupe_fingerprint(&g) {
            remember(seen, fp, gameident::of_raw(&g))?;
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cut(text: &str) -> Option<&str> {
        last_game_boundary(text.as_bytes()).map(|i| &text[i..])
    }

    #[test]
    fn game_boundaries_skip_comments_escapes_and_tag_values() {
        let g1 = "[Event \"a\"]\n\n1. e4 e5 1-0\n\n";
        // The plain case, with LF and CRLF line ends.
        assert_eq!(
            cut(&format!("{g1}[Event \"b\"]\n\n1. d4 *\n")),
            Some("[Event \"b\"]\n\n1. d4 *\n")
        );
        let crlf = "[Event \"a\"]\r\n\r\n1. e4 *\r\n\r\n[Event \"b\"]\r\n";
        assert_eq!(cut(crlf), Some("[Event \"b\"]\r\n"));
        // A blank line and a `[` inside a brace comment are not a boundary.
        let commented = "[Event \"a\"]\n\n1. e4 { one\n\n[%clk 0:00:01] two } e5 *\n";
        assert_eq!(cut(commented), None);
        assert_eq!(
            cut(&format!("{commented}\n[Event \"b\"]\n")),
            Some("[Event \"b\"]\n")
        );
        // A brace inside a `;` comment, a `%` escape line or a quoted tag value opens nothing.
        for opener in [
            "1. e4 ; a brace {\n",
            "%escaped {\n",
            "[Annotator \"x { y\"]\n",
            "[Annotator \"x \\\" {\"]\n",
        ] {
            let text = format!("[Event \"a\"]\n{opener}\n1. e4 *\n\n[Event \"b\"]\n");
            assert_eq!(cut(&text), Some("[Event \"b\"]\n"), "{opener:?}");
        }
        // A comment still open at the end of the buffer: the boundary before it.
        let open = format!("{g1}[Event \"b\"]\n\n1. e4 {{ not closed\n\n[Event \"c\"]\n");
        assert_eq!(
            cut(&open),
            Some("[Event \"b\"]\n\n1. e4 { not closed\n\n[Event \"c\"]\n")
        );
        // Never at the very start.
        assert_eq!(cut("[Event \"a\"]\n\n1. e4 *\n"), None);
    }
}

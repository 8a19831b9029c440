//! Opening PGN inputs: plain, zstd, gzip, bzip2 or xz (by magic bytes, falling back to the file
//! extension), or `-` for standard input; and refusing what is not PGN text ([`check_text`]).
//! The raw bytes of every input are hashed as they are read ([`Input::finish`] gives the
//! fingerprint of the bytes counted); an input that is not a regular file is read with a
//! bounded wait for its next bytes (`IdleReader`, [`DEFAULT_INPUT_IDLE`]).

use std::io::{self, Read};
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use crate::error::{Error, Result};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Format {
    Plain,
    Zstd,
    Gzip,
    Bzip2,
    Xz,
}

/// Raw bytes the compression is recognised by (the longest magic number looked at).
const MAGIC_BYTES: usize = 8;
/// Decompressed bytes looked at to tell PGN text from anything else.
pub(crate) const TEXT_SNIFF_BYTES: usize = 64 << 10;

/// Magic numbers of formats that are not PGN and cannot be read (archives and compressors
/// this build does not decompress), with what to tell the user.
const UNSUPPORTED: &[(&[u8], &str)] = &[
    (b"PK\x03\x04", "a zip archive"),
    (b"7z\xbc\xaf\x27\x1c", "a 7-zip archive"),
    (b"\x04\x22\x4d\x18", "lz4-compressed"),
    (b"Rar!\x1a\x07", "a rar archive"),
    (b"\x89LZO", "lzop-compressed"),
    (b"\x1f\x9d", "compress(1)-compressed (.Z)"),
    (b"LZIP", "lzip-compressed"),
    (
        b"\x5d\x00\x00",
        "lzma-compressed (.lzma; recompress as .xz)",
    ),
    (b"%PDF", "a PDF document"),
    (b"\x89PNG", "a PNG image"),
    (b"\x7fELF", "an executable"),
    (b"SQLite format 3", "an SQLite database"),
];

impl Format {
    pub(crate) fn sniff(head: &[u8], name: &str) -> Format {
        if head.starts_with(&[0x28, 0xb5, 0x2f, 0xfd]) {
            Format::Zstd
        } else if head.starts_with(&[0x1f, 0x8b]) {
            Format::Gzip
        } else if head.starts_with(b"BZh") && head.len() > 3 && head[3].is_ascii_digit() {
            Format::Bzip2
        } else if head.starts_with(&[0xfd, b'7', b'z', b'X', b'Z', 0x00]) {
            Format::Xz
        } else if name.ends_with(".zst") && head.is_empty() {
            Format::Zstd
        } else {
            Format::Plain
        }
    }
}

/// Why `head`, the first decompressed bytes of an input (all of them if `complete`), is not
/// PGN text; `None` if it looks like PGN (or is empty: an empty input holds no games and
/// loses none). PGN is text: a NUL byte or many control characters mean binary data, and
/// the first [`TEXT_SNIFF_BYTES`] must hold a tag pair (`[Name "value"]`) or a move number.
pub(crate) fn check_text(head: &[u8], complete: bool) -> Option<String> {
    if let Some(i) = memchr::memchr(0, head) {
        return Some(format!(
            "binary data (a NUL byte at offset {i}), not PGN text"
        ));
    }
    // Control characters other than tab, line feed, form feed, carriage return and escape.
    let controls = head
        .iter()
        .filter(|&&b| b < 0x20 && !matches!(b, b'\t' | b'\n' | 0x0c | b'\r' | 0x1b))
        .count();
    if controls * 100 > head.len() {
        return Some(format!(
            "binary data ({controls} control characters in the first {} bytes), not PGN text",
            head.len()
        ));
    }
    let text = head.strip_prefix(b"\xef\xbb\xbf").unwrap_or(head);
    if text.trim_ascii().is_empty() {
        return None;
    }
    if has_tag_pair(text) || has_move(text) {
        return None;
    }
    Some(if complete {
        "no PGN tag pair ([Event \"...\"]) or move (1. e4) in it: not PGN text".to_string()
    } else {
        format!(
            "no PGN tag pair ([Event \"...\"]) or move (1. e4) in its first {} bytes: not PGN text",
            head.len()
        )
    })
}

/// A line that starts (after blanks) with `[Name "`.
fn has_tag_pair(text: &[u8]) -> bool {
    text.split(|&b| b == b'\n').any(|line| {
        let Some(rest) = line.trim_ascii_start().strip_prefix(b"[") else {
            return false;
        };
        let name_len = rest
            .iter()
            .take_while(|b| b.is_ascii_alphanumeric() || **b == b'_')
            .count();
        name_len > 0 && rest[name_len..].trim_ascii_start().starts_with(b"\"")
    })
}

/// A word that is a move in SAN (`e4`, `Nxf3+`, `exd8=Q`, `O-O`), possibly after its move
/// number (`1.e4`, `1...e5`): games without tags (some tools write them) still have moves.
fn has_move(text: &[u8]) -> bool {
    text.split(|b| b.is_ascii_whitespace()).any(|word| {
        let digits = word.iter().take_while(|b| b.is_ascii_digit()).count();
        let dots = word[digits..].iter().take_while(|&&b| b == b'.').count();
        let word = if digits > 0 && dots > 0 {
            &word[digits + dots..]
        } else {
            word
        };
        is_san(word)
    })
}

fn is_san(word: &[u8]) -> bool {
    let end = word.len()
        - word
            .iter()
            .rev()
            .take_while(|b| matches!(b, b'+' | b'#' | b'!' | b'?'))
            .count();
    let w = &word[..end];
    if w == b"O-O" || w == b"O-O-O" {
        return true;
    }
    let w = match w.first() {
        Some(b'K' | b'Q' | b'R' | b'B' | b'N') => &w[1..],
        _ => w,
    };
    // A promotion: `=Q`, or `Q` right after the last rank.
    let w = match w {
        [rest @ .., b'=', b'Q' | b'R' | b'B' | b'N'] => rest,
        [rest @ .., b'1' | b'8', b'Q' | b'R' | b'B' | b'N'] => &w[..rest.len() + 1],
        _ => w,
    };
    let Some((from, dest)) = w.split_last_chunk::<2>() else {
        return false;
    };
    let from: Vec<u8> = from.iter().copied().filter(|&b| b != b'x').collect();
    matches!(dest, [b'a'..=b'h', b'1'..=b'8'])
        && from.len() <= 2
        && from.iter().all(|b| matches!(b, b'a'..=b'h' | b'1'..=b'8'))
}

/// Reads from `r` until `buf` holds `want` bytes or the input ends (a pipe may hand out a
/// few bytes per read). Returns whether the input ended.
fn read_up_to(r: &mut impl Read, buf: &mut Vec<u8>, want: usize) -> io::Result<bool> {
    while buf.len() < want {
        let start = buf.len();
        buf.resize(want, 0);
        let n = loop {
            match r.read(&mut buf[start..]) {
                Ok(n) => break n,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => {
                    buf.truncate(start);
                    return Err(e);
                }
            }
        };
        buf.truncate(start + n);
        if n == 0 {
            return Ok(true);
        }
    }
    Ok(false)
}

/// How long an input that is not a regular file (a pipe, a FIFO, a terminal, a character
/// device) may go without delivering a byte before the import gives up on it, by default: a
/// FIFO nobody writes to, or a writer that never closes it, must not hold the book's writer
/// lock forever (docs/RELIABILITY.md, "Inputs that are not what they seem").
pub const DEFAULT_INPUT_IDLE: Duration = Duration::from_secs(300);

/// How to open an input.
#[derive(Clone, Copy, Debug)]
pub(crate) struct OpenSpec {
    /// Refuse what is not PGN text ([`check_text`]); Othello inputs (binary WTHOR files) are
    /// not checked.
    pub(crate) pgn: bool,
    /// For an input that is not a regular file: the longest wait for its next bytes.
    pub(crate) idle: Duration,
    /// A regular file is read up to this many raw bytes at most: its size when its
    /// fingerprint was taken, so that bytes appended since are not counted under it.
    pub(crate) limit: Option<u64>,
}

impl OpenSpec {
    pub(crate) fn new(pgn: bool) -> OpenSpec {
        OpenSpec {
            pgn,
            idle: DEFAULT_INPUT_IDLE,
            limit: None,
        }
    }
}

/// The raw bytes of an input as they are read: counted (for progress) and hashed (xxh3-128,
/// the input's fingerprint once it is read to the end), shared between the decompressor that
/// reads them and [`Input::finish`], which drains what the decompressor left.
struct RawSource {
    inner: Box<dyn Read + Send>,
    hasher: xxhash_rust::xxh3::Xxh3,
    bytes: u64,
}

#[derive(Clone)]
struct RawReader {
    source: Arc<Mutex<RawSource>>,
    counter: Arc<AtomicU64>,
}

impl Read for RawReader {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let mut s = self
            .source
            .lock()
            .map_err(|_| io::Error::other("an input reader panicked"))?;
        let n = s.inner.read(buf)?;
        s.hasher.update(&buf[..n]);
        s.bytes += n as u64;
        self.counter.fetch_add(n as u64, Ordering::Relaxed);
        Ok(n)
    }
}

/// An input that is not a regular file, read with a bounded wait: before each read it waits
/// (poll(2)) at most `idle` for bytes or the end, then fails with [`io::ErrorKind::TimedOut`].
struct IdleReader {
    file: std::fs::File,
    idle: Duration,
    name: String,
}

impl Read for IdleReader {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        use std::os::fd::AsRawFd;
        let timeout = libc::c_int::try_from(self.idle.as_millis()).unwrap_or(libc::c_int::MAX);
        let mut pfd = libc::pollfd {
            fd: self.file.as_raw_fd(),
            events: libc::POLLIN,
            revents: 0,
        };
        loop {
            // SAFETY: `pfd` is one valid, initialised pollfd that outlives the call, and the
            // count passed is 1.
            let r = unsafe { libc::poll(&mut pfd, 1, timeout) };
            if r > 0 {
                break;
            }
            if r == 0 {
                return Err(io::Error::new(
                    io::ErrorKind::TimedOut,
                    format!(
                        "{}: no data for {:.1} s (a pipe or FIFO that nobody writes to or closes?); the import stopped, the book is unchanged; give the games as a file, or make the writer close the pipe when done",
                        self.name,
                        self.idle.as_secs_f64()
                    ),
                ));
            }
            let e = io::Error::last_os_error();
            if e.kind() != io::ErrorKind::Interrupted {
                return Err(e);
            }
        }
        self.file.read(buf)
    }
}

/// An opened input: a decompressed byte stream plus what is known of its size.
#[doc(hidden)]
pub struct Input {
    pub(crate) name: String,
    pub reader: Box<dyn Read + Send>,
    /// Size of the raw (possibly compressed) file, when it is a regular file.
    pub(crate) raw_size: Option<u64>,
    /// Raw bytes consumed so far.
    pub(crate) raw_read: Arc<AtomicU64>,
    raw: RawReader,
}

/// What was read of an input: the fingerprint of its raw bytes (xxh3-128, 32 hex digits)
/// and how many there were.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct ReadFingerprint {
    pub(crate) hex: String,
    pub(crate) bytes: u64,
}

impl Input {
    /// Ends the reading of the input: the raw bytes the decompressor did not need (up to the
    /// end, or the limit the input was opened with) are read too, so that the fingerprint
    /// covers every byte of it, as one taken from the file does.
    pub(crate) fn finish(self) -> Result<ReadFingerprint> {
        drop(self.reader);
        let mut raw = self.raw;
        std::io::copy(&mut raw, &mut std::io::sink())
            .map_err(|e| Error::io(format!("reading {}", self.name), e))?;
        let s = raw
            .source
            .lock()
            .map_err(|_| Error::Internal("an input reader panicked".into()))?;
        Ok(ReadFingerprint {
            hex: format!("{:032x}", s.hasher.digest128()),
            bytes: s.bytes,
        })
    }
}

/// Opens an input and checks that it is PGN text ([`check_text`]): an
/// [`Error::Input`] naming it otherwise.
#[doc(hidden)]
pub fn open(path: &str) -> Result<Input> {
    open_with(path, OpenSpec::new(true))
}

/// Opens the raw bytes of `path` (`-`: standard input) without blocking: a FIFO is opened
/// with `O_NONBLOCK` (an open for reading would wait for a writer), which is cleared after.
/// Returns the reader, and the size of a regular file (`None`: not a regular file, read with
/// a bounded wait for each read).
fn open_raw(path: &str, spec: OpenSpec) -> Result<(Box<dyn Read + Send>, Option<u64>)> {
    use std::os::fd::AsFd;
    use std::os::unix::fs::OpenOptionsExt;
    let (file, name, ours) = if path == "-" {
        let fd = io::stdin()
            .as_fd()
            .try_clone_to_owned()
            .map_err(|e| Error::io("reading standard input", e))?;
        (std::fs::File::from(fd), "<stdin>", false)
    } else {
        let f = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(Path::new(path))
            .map_err(|e| Error::io(format!("cannot open PGN input {path}"), e))?;
        (f, path, true)
    };
    let meta = file
        .metadata()
        .map_err(|e| Error::io(format!("cannot open PGN input {name}"), e))?;
    if ours {
        set_blocking(&file).map_err(|e| Error::io(format!("cannot open PGN input {name}"), e))?;
    }
    if meta.is_file() {
        let size = meta.len();
        let raw: Box<dyn Read + Send> = match spec.limit {
            Some(limit) => Box::new(file.take(limit)),
            None => Box::new(file),
        };
        return Ok((raw, Some(size)));
    }
    if meta.is_dir() {
        return Err(Error::Input(format!(
            "{name}: a directory, not a PGN file; it was not imported"
        )));
    }
    let reader = IdleReader {
        file,
        idle: spec.idle,
        name: name.to_string(),
    };
    Ok((Box::new(reader), None))
}

/// Clears `O_NONBLOCK` on a file this process opened (the open file description is its own).
fn set_blocking(file: &std::fs::File) -> io::Result<()> {
    use std::os::fd::AsRawFd;
    let fd = file.as_raw_fd();
    // SAFETY: fcntl(2) with F_GETFL/F_SETFL on a descriptor this function's caller owns;
    // no pointers are passed.
    let flags = unsafe { libc::fcntl(fd, libc::F_GETFL) };
    if flags < 0 {
        return Err(io::Error::last_os_error());
    }
    // SAFETY: as above.
    if unsafe { libc::fcntl(fd, libc::F_SETFL, flags & !libc::O_NONBLOCK) } < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Opens an input as `spec` says.
pub(crate) fn open_with(path: &str, spec: OpenSpec) -> Result<Input> {
    let counter = Arc::new(AtomicU64::new(0));
    let (inner, raw_size) = open_raw(path, spec)?;
    let name = if path == "-" {
        "<stdin>".to_string()
    } else {
        path.to_string()
    };
    let mut counting = RawReader {
        source: Arc::new(Mutex::new(RawSource {
            inner,
            hasher: xxhash_rust::xxh3::Xxh3::new(),
            bytes: 0,
        })),
        counter: counter.clone(),
    };
    let raw_handle = counting.clone();
    let ctx = |e: io::Error| read_error(&name, e);
    // The magic number, however few bytes each read of a pipe gives.
    let mut head = Vec::with_capacity(MAGIC_BYTES);
    read_up_to(&mut counting, &mut head, MAGIC_BYTES).map_err(ctx)?;
    let format = Format::sniff(&head, &name);
    if spec.pgn
        && format == Format::Plain
        && let Some((_, what)) = UNSUPPORTED.iter().find(|(m, _)| head.starts_with(m))
    {
        return Err(not_pgn(&name, &format!("{what}, not PGN text")));
    }
    let raw = io::BufReader::with_capacity(1 << 16, io::Cursor::new(head).chain(counting));
    let mut decoded: Box<dyn Read + Send> = match format {
        Format::Plain => Box::new(raw),
        Format::Zstd => Box::new(
            zstd::stream::read::Decoder::with_buffer(raw)
                .map_err(|e| Error::io(format!("starting zstd on {name}"), e))?,
        ),
        Format::Gzip => Box::new(flate2::bufread::MultiGzDecoder::new(raw)),
        Format::Bzip2 => Box::new(bzip2::bufread::MultiBzDecoder::new(raw)),
        Format::Xz => Box::new(liblzma::bufread::XzDecoder::new_multi_decoder(raw)),
    };
    // The start of the text, to tell PGN from anything else.
    let mut text = Vec::with_capacity(TEXT_SNIFF_BYTES);
    let complete = read_up_to(&mut decoded, &mut text, TEXT_SNIFF_BYTES).map_err(|e| {
        if e.kind() == io::ErrorKind::InvalidData || e.kind() == io::ErrorKind::InvalidInput {
            not_pgn(&name, &format!("cannot be decompressed ({e})"))
        } else {
            read_error(&name, e)
        }
    })?;
    if spec.pgn
        && let Some(why) = check_text(&text, complete)
    {
        return Err(not_pgn(&name, &why));
    }
    // PGN given to an Othello book fails as this input alone, as the reverse does.
    if !spec.pgn
        && !super::othello::games::is_wthor_header(&text)
        && let Some(e) = check_not_chess(&name, &text)
    {
        return Err(e);
    }
    // Old Mac files (lines ended by a carriage return alone) are read with those as line
    // feeds, as python-chess reads them (ops::lineends).
    let cr_only = spec.pgn && super::lineends::cr_only(&text);
    let reader: Box<dyn Read + Send> = match cr_only {
        true => Box::new(super::lineends::LoneCrAsLf::new(
            io::Cursor::new(text).chain(decoded),
        )),
        false => Box::new(io::Cursor::new(text).chain(decoded)),
    };
    Ok(Input {
        name,
        reader,
        raw_size,
        raw_read: counter,
        raw: raw_handle,
    })
}

/// The error for an input that is not PGN text.
/// An error reading the (decompressed) text of input `name`: a compressed stream that ends
/// early (zstd's "incomplete frame", an unexpected end of file from gzip, bzip2 or xz) is
/// called what it is, a truncated or damaged file, with what to do; anything else is an I/O
/// error naming the input.
pub(crate) fn read_error(name: &str, e: std::io::Error) -> Error {
    if e.kind() == std::io::ErrorKind::TimedOut {
        // An input that is not a regular file delivered nothing for too long (IdleReader).
        return Error::Input(e.to_string());
    }
    let text = e.to_string();
    if e.kind() == std::io::ErrorKind::UnexpectedEof
        || text.contains("incomplete frame")
        || text.contains("unexpected end")
        || text.contains("EOF reached")
    {
        return Error::Input(format!(
            "{name}: the compressed data ends early ({text}): the file is truncated or damaged; copy or download it again (the import stopped; the book is unchanged)"
        ));
    }
    Error::io(format!("reading {name}"), e)
}

/// Why `head`, the first bytes of an input given to an Othello book that is not a WTHOR file,
/// is not Othello transcripts: `Some` when it holds a PGN tag pair (chess games, which the
/// transcript reader would skip line by line as damaged records and record as imported).
pub(crate) fn check_not_chess(name: &str, head: &[u8]) -> Option<Error> {
    let text = head.strip_prefix(b"\xef\xbb\xbf").unwrap_or(head);
    // Only whole lines: the last may be cut.
    let whole = memchr::memrchr(b'\n', text).map_or(text, |i| &text[..i]);
    has_tag_pair(whole).then(|| {
        Error::Input(format!(
            "{name}: PGN (chess games: it holds a tag pair such as [Event \"…\"]), and this \
             book holds Othello; it was not imported (give WTHOR files or Othello transcripts, \
             or import the games into a chess book)"
        ))
    })
}

pub(crate) fn not_pgn(name: &str, why: &str) -> Error {
    Error::Input(format!(
        "{name}: {why}; it was not imported (give PGN text, plain or compressed with zstd, gzip, bzip2 or xz)"
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pgn_text_is_told_from_anything_else() {
        assert_eq!(check_text(b"", true), None);
        assert_eq!(check_text(b"\n\n", true), None);
        assert_eq!(check_text(b"[Event \"x\"]\n\n1. e4 e5 *\n", true), None);
        assert_eq!(check_text(b"\xef\xbb\xbf[Event \"x\"]\n", true), None);
        assert_eq!(check_text(b"1. e4 e5 2. Nf3 *\n", true), None);
        assert_eq!(check_text(b"1... O-O *\n", true), None);
        assert_eq!(check_text(b"e4 { a comment } e5 Nf3 *\n", true), None);
        assert_eq!(check_text(b"b3 { good? } $1 *\n", true), None);
        assert_eq!(check_text(b"1.exd8=Q+ *\n", true), None);
        assert_eq!(check_text(b"Nbxd7 *\n", true), None);
        assert!(check_text(b"a note about the weather\n", true).is_some());
        assert!(check_text(b"version 11.0 of the e-mail\n", true).is_some());
        assert!(
            check_text(b"[Event \"x\"]\0\n", true)
                .unwrap()
                .contains("NUL")
        );
        assert!(
            check_text(b"hello world\n", true)
                .unwrap()
                .contains("no PGN tag pair")
        );
        assert!(check_text(b"version 11.0\n", false).is_some());
        let controls: Vec<u8> = (0..100u8)
            .map(|i| if i % 10 == 0 { 1 } else { b'a' })
            .collect();
        assert!(check_text(&controls, true).unwrap().contains("control"));
    }

    /// A reader that hands out one byte per read, as a slow pipe may.
    struct Trickle<'a>(&'a [u8]);

    impl Read for Trickle<'_> {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            let Some((&b, rest)) = self.0.split_first() else {
                return Ok(0);
            };
            if buf.is_empty() {
                return Ok(0);
            }
            buf[0] = b;
            self.0 = rest;
            Ok(1)
        }
    }

    #[test]
    fn reads_up_to_what_is_wanted_however_small_each_read() {
        let data = b"\xfd7zXZ\0 and more";
        let mut buf = Vec::new();
        let ended = read_up_to(&mut Trickle(data), &mut buf, MAGIC_BYTES).unwrap();
        assert!(!ended);
        assert_eq!(buf, &data[..MAGIC_BYTES]);
        assert_eq!(Format::sniff(&buf, "-"), Format::Xz);
        let mut buf = Vec::new();
        assert!(read_up_to(&mut Trickle(b"1. e4"), &mut buf, 100).unwrap());
        assert_eq!(buf, b"1. e4");
    }
}

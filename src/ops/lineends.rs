//! Old Mac line ends in PGN text: a file whose lines end with a carriage return alone (classic
//! Mac OS, some old ChessBase and Scid exports) is read with each lone CR as a line feed, as
//! python-chess reads it (Python's universal newlines), instead of as one endless line the PGN
//! reader cannot split into tags, moves and games.
//!
//! The choice is made once per input, from its first bytes ([`cr_only`]): carriage returns and
//! no line feed. Every other input is read as it is (a CRLF or LF file, or one with a stray CR
//! in a comment, keeps its bytes), so the rule costs nothing where it does not apply. The raw
//! bytes an input's fingerprint is taken over are not changed (input.rs hashes them before
//! they are decompressed and read here).

use std::io::{self, Read};

/// Whether `head`, an input's first decompressed bytes, has CR-only line ends: at least one
/// carriage return and no line feed.
pub(crate) fn cr_only(head: &[u8]) -> bool {
    memchr::memchr(b'\r', head).is_some() && memchr::memchr(b'\n', head).is_none()
}

/// Reads `inner` with every carriage return not followed by a line feed turned into a line
/// feed (CRLF stays as it is), including one at the end of a read whose next byte is not known
/// yet: it becomes a line feed, and a line feed that begins the next read is then dropped (the
/// pair was one CRLF line end).
pub(crate) struct LoneCrAsLf<R> {
    inner: R,
    /// The last byte given was a carriage return turned into a line feed at the end of a read.
    cr_given: bool,
}

impl<R: Read> LoneCrAsLf<R> {
    pub(crate) fn new(inner: R) -> Self {
        LoneCrAsLf {
            inner,
            cr_given: false,
        }
    }
}

impl<R: Read> Read for LoneCrAsLf<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        loop {
            let mut n = self.inner.read(buf)?;
            if n == 0 {
                return Ok(0);
            }
            if std::mem::take(&mut self.cr_given) && buf[0] == b'\n' {
                buf.copy_within(1..n, 0);
                n -= 1;
                if n == 0 {
                    // The read held only the line feed already given: read on.
                    continue;
                }
            }
            let mut at = 0;
            while let Some(i) = memchr::memchr(b'\r', &buf[at..n]) {
                let i = at + i;
                match buf.get(i + 1).filter(|_| i + 1 < n) {
                    Some(b'\n') => {}
                    Some(_) => buf[i] = b'\n',
                    None => {
                        buf[i] = b'\n';
                        self.cr_given = true;
                    }
                }
                at = i + 1;
            }
            return Ok(n);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// Python's universal newlines, as python-chess reads a file opened in text mode, but for
    /// CRLF, which stays (the PGN reader reads it as a line end).
    fn oracle(text: &[u8]) -> Vec<u8> {
        let mut out = Vec::with_capacity(text.len());
        for (i, &b) in text.iter().enumerate() {
            if b == b'\r' && text.get(i + 1) != Some(&b'\n') {
                out.push(b'\n');
            } else {
                out.push(b);
            }
        }
        out
    }

    /// Gives at most the next of `sizes` bytes a read (cycling; 1 byte when none).
    struct Trickle<'a> {
        data: &'a [u8],
        sizes: Vec<usize>,
        at: usize,
    }

    impl Read for Trickle<'_> {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            let want = self.sizes.get(self.at % self.sizes.len().max(1)).copied();
            self.at += 1;
            let n = want.unwrap_or(1).max(1).min(buf.len()).min(self.data.len());
            buf[..n].copy_from_slice(&self.data[..n]);
            self.data = &self.data[n..];
            Ok(n)
        }
    }

    fn read_all(data: &[u8], sizes: Vec<usize>) -> Vec<u8> {
        let mut out = Vec::new();
        LoneCrAsLf::new(Trickle { data, sizes, at: 0 })
            .read_to_end(&mut out)
            .expect("in-memory reads do not fail");
        out
    }

    /// `read` as CRLF at the ends of reads leaves it: a line end given once.
    fn normalise(v: &[u8]) -> Vec<u8> {
        let mut out = Vec::new();
        for (i, &b) in v.iter().enumerate() {
            if b == b'\r' && v.get(i + 1) == Some(&b'\n') {
                continue;
            }
            out.push(b);
        }
        out
    }

    #[test]
    fn only_files_with_carriage_returns_and_no_line_feed_are_cr_only() {
        assert!(cr_only(b"[Event \"a\"]\r[Site \"b\"]\r\r1. e4 *\r"));
        assert!(!cr_only(b"[Event \"a\"]\r\n[Site \"b\"]\r\n"));
        assert!(!cr_only(b"[Event \"a\"]\n"));
        assert!(!cr_only(b"1. e4 e5 *"));
        assert!(!cr_only(b""));
    }

    #[test]
    fn a_mac_file_reads_as_lines() {
        let mac = b"[Event \"a\"]\r[Result \"1-0\"]\r\r1. e4 e5 1-0\r\r[Event \"b\"]\r";
        let want = b"[Event \"a\"]\n[Result \"1-0\"]\n\n1. e4 e5 1-0\n\n[Event \"b\"]\n";
        for size in [1, 2, 3, 7, 64] {
            assert_eq!(read_all(mac, vec![size]), want.to_vec(), "reads of {size}");
        }
    }

    #[test]
    fn crlf_split_between_reads_is_one_line_end() {
        // The CR ends the first read: given as a line feed, the next read's LF is dropped.
        assert_eq!(read_all(b"ab\r\ncd\r", vec![3, 1, 3]), b"ab\ncd\n".to_vec());
        assert_eq!(
            read_all(b"ab\r\r\ncd", vec![3, 2, 9]),
            b"ab\n\r\ncd".to_vec()
        );
        assert_eq!(read_all(b"\r\n\r\n", vec![1]), b"\n\n".to_vec());
    }

    proptest! {
        /// However the reads fall, the text read is the oracle's (CRLF counted as one line
        /// end either way), and every byte that is not a line end is kept in order.
        #[test]
        fn reads_as_universal_newlines_whatever_the_reads(
            text in proptest::collection::vec(
                prop_oneof![Just(b'\r'), Just(b'\n'), Just(b'a'), Just(b' '), any::<u8>()],
                0..200,
            ),
            sizes in proptest::collection::vec(1usize..9, 1..6),
        ) {
            let got = read_all(&text, sizes);
            prop_assert_eq!(normalise(&got), normalise(&oracle(&text)));
            prop_assert!(!got.iter().zip(got.iter().skip(1)).any(|(&a, &b)| a == b'\r' && b != b'\n'));
        }
    }
}

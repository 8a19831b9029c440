//! Streaming games out of PGN bytes: the reader of pgn-reader with the line each game starts
//! on, and each game's mainline checked for moves the reader dropped (`ops::movetext`).

use std::cell::RefCell;
use std::io::{self, Read};
use std::rc::Rc;

use pgn_reader::Reader;

use super::movetext::Mainline;
use super::pgn::{MAX_MAINLINE_PLIES, RawGame, RawVisitor, is_standard_variant};

/// Keeps the bytes handed to the PGN reader that are not yet line-counted, so the line a game
/// starts on is found by counting each byte once.
#[derive(Default)]
struct Tail {
    bytes: Vec<u8>,
    /// Bytes before this index are counted.
    start: usize,
    /// Newlines counted.
    lines: u64,
}

struct LineCounter<R> {
    inner: R,
    tail: Rc<RefCell<Tail>>,
}

impl<R: Read> Read for LineCounter<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.tail.borrow_mut().bytes.extend_from_slice(&buf[..n]);
        Ok(n)
    }
}

/// Streams [`RawGame`]s from a byte stream.
#[doc(hidden)]
pub struct GameReader<R: Read> {
    reader: Reader<LineCounter<R>>,
    tail: Rc<RefCell<Tail>>,
    visitor: RawVisitor,
    /// Games read past a broken tag pair whose text did not continue the game before it.
    pending: std::collections::VecDeque<RawGame>,
    /// Whether a game cut by broken tag pairs is mended (not in the reader that re-reads one).
    mend_tags: bool,
}

/// How a game read came out of the movetext check.
enum Checked {
    /// Counted or skipped as it stands.
    Done,
    /// Its tags ended at a broken tag pair (the word at this offset of its text stands on the
    /// tag's line) and it has no moves: the rest of the game follows as another "game".
    BrokenTag(usize),
}

/// The longest tag line always read (bytes; one up to twice this reads when the input fills
/// the reader's buffer, which is twice this): a longer one (a 600 KB `Annotator`) makes its
/// game unreadable, said so ([`unreadable_reason`]).
pub const MAX_TAG_LINE: usize = 256 * 1024;

/// What a reading error of the PGN reader means to a user.
pub fn unreadable_reason(e: &io::Error) -> String {
    let text = e.to_string();
    if text == "unterminated tag" {
        format!(
            "unterminated tag (a tag pair without its closing quote and bracket, or a tag line \
             longer than {} KiB)",
            MAX_TAG_LINE / 1024
        )
    } else {
        text
    }
}

impl<R: Read> GameReader<R> {
    #[doc(hidden)]
    pub fn new(inner: R) -> Self {
        let tail = Rc::new(RefCell::new(Tail::default()));
        let reader = Reader::build(LineCounter {
            inner,
            tail: tail.clone(),
        })
        .set_supported_tag_line_length(MAX_TAG_LINE)
        .finish();
        GameReader {
            reader,
            tail,
            visitor: RawVisitor::default(),
            pending: std::collections::VecDeque::new(),
            mend_tags: true,
        }
    }

    /// Hands a game back so its buffers are reused for a later game.
    pub(crate) fn recycle(&mut self, g: RawGame) {
        self.visitor.spare = Some(g);
    }

    /// 1-based line of the next unread byte.
    fn line(&self) -> u64 {
        let mut t = self.tail.borrow_mut();
        // Bytes handed out but still in the reader's buffer are not consumed yet.
        let consumed = t.bytes.len().saturating_sub(self.reader.buffer().len());
        let start = t.start.min(consumed);
        let newlines = t.bytes[start..consumed]
            .iter()
            .filter(|&&b| b == b'\n')
            .count() as u64;
        t.lines += newlines;
        t.start = consumed;
        if consumed >= 1 << 16 {
            t.bytes.drain(..consumed);
            t.start = 0;
        }
        1 + t.lines
    }

    /// The text the reader consumed since [`Self::line`] was last asked: the game just read.
    fn game_text(&self) -> std::cell::Ref<'_, [u8]> {
        let t = self.tail.borrow();
        let consumed = t.bytes.len().saturating_sub(self.reader.buffer().len());
        std::cell::Ref::map(t, |t| &t.bytes[t.start.min(consumed)..consumed])
    }

    /// The next game, `Ok(None)` at the end of input.
    #[doc(hidden)]
    pub fn next_game(&mut self) -> io::Result<Option<RawGame>> {
        if let Some(g) = self.pending.pop_front() {
            return Ok(Some(g));
        }
        let Some((g, checked)) = self.read_checked()? else {
            return Ok(None);
        };
        let Checked::BrokenTag(at) = checked else {
            return Ok(Some(g));
        };
        if !self.mend_tags {
            return Ok(Some(g));
        }
        self.mend_broken_tag(g, at)
    }

    /// A game whose tags a broken tag pair (`[White ""A B""]`, a quote inside the value) cut
    /// short: the reader read the rest of that line as its movetext and what follows as another
    /// game (cut again at each further broken tag). When what follows continues it (its tags
    /// start on the very next line, or it has no tags), the parts are read again as one game,
    /// each broken tag's inner quotes escaped — the value python-chess reads (`"A B"`).
    /// Otherwise the first part is given as it is (skipped, the broken tag named) and the games
    /// read after it next.
    fn mend_broken_tag(&mut self, g: RawGame, at: usize) -> io::Result<Option<RawGame>> {
        /// The most broken tag pairs one game may hold and be mended.
        const MOST: usize = 16;
        let first = self.game_text().to_vec();
        let Some(mut whole) = super::movetext::escape_tag_quotes(&first, at) else {
            return Ok(Some(g));
        };
        let mut next_line = g.line + first.iter().filter(|&&b| b == b'\n').count() as u64;
        let mut read = Vec::new();
        while read.len() < MOST {
            let Some((next, checked)) = self.read_checked()? else {
                break;
            };
            let text = self.game_text().to_vec();
            let continues = text.first() != Some(&b'[') || next.line == next_line;
            next_line = next.line + text.iter().filter(|&&b| b == b'\n').count() as u64;
            read.push(next);
            if !continues {
                break;
            }
            match checked {
                Checked::BrokenTag(at) => match super::movetext::escape_tag_quotes(&text, at) {
                    Some(mended) => whole.extend_from_slice(&mended),
                    None => break,
                },
                Checked::Done => {
                    whole.extend_from_slice(&text);
                    let mut again = GameReader::new(whole.as_slice());
                    again.mend_tags = false;
                    if let (Some(mut one), None) = (again.next_game()?, again.next_game()?) {
                        one.line = g.line;
                        return Ok(Some(one));
                    }
                    break;
                }
            }
        }
        self.pending.extend(read);
        Ok(Some(g))
    }

    /// The next game as the reader reads it, its mainline checked for dropped moves.
    fn read_checked(&mut self) -> io::Result<Option<(RawGame, Checked)>> {
        if !self.reader.has_more()? {
            return Ok(None);
        }
        let line = self.line();
        match self.reader.read_game(&mut self.visitor) {
            Ok(Some(mut g)) => {
                g.line = line;
                let mut checked = Checked::Done;
                if g.error.is_none() && g.variant.as_deref().is_none_or(is_standard_variant) {
                    // The reader drops tokens it cannot read without a word: look for one in the
                    // mainline of the text it just consumed.
                    match super::movetext::check_mainline(&self.game_text()) {
                        Mainline::Read => {}
                        Mainline::Mended(sans) if sans.len() <= MAX_MAINLINE_PLIES => g.sans = sans,
                        Mainline::Mended(_) => {
                            g.error = Some(format!(
                                "the mainline has more than {MAX_MAINLINE_PLIES} moves"
                            ))
                        }
                        Mainline::Unreadable(d) => {
                            if d.in_tag_line && g.sans.is_empty() {
                                checked = Checked::BrokenTag(d.at);
                            }
                            g.error = Some(d.reason());
                        }
                    }
                }
                Ok(Some((g, checked)))
            }
            Ok(None) => Ok(None),
            Err(e) if e.kind() == io::ErrorKind::InvalidData => {
                // The parser dropped the bad line; drop the rest of this game too.
                self.reader.skip_game()?;
                Ok(Some((
                    RawGame {
                        line,
                        error: Some(unreadable_reason(&e)),
                        ..Default::default()
                    },
                    Checked::Done,
                )))
            }
            Err(e) => Err(e),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn all(text: &str) -> Vec<RawGame> {
        let mut r = GameReader::new(text.as_bytes());
        std::iter::from_fn(|| r.next_game().unwrap()).collect()
    }

    fn kept_white(g: &RawGame) -> String {
        // KEPT_TAGS index 4 is White: (index, varint length, value).
        let (mut i, k) = (0, &g.kept);
        while i < k.len() {
            let (tag, len) = (k[i], k[i + 1] as usize);
            if tag == 4 {
                return String::from_utf8_lossy(&k[i + 2..i + 2 + len]).into_owned();
            }
            i += 2 + len;
        }
        String::new()
    }

    #[test]
    fn a_game_cut_by_a_broken_tag_is_read_whole_again() {
        // The broken tag among the tags, then as the last tag before the movetext; a game after.
        let text = "[Event \"a\"]\n[White \"\"A B\"\"]\n[Black \"\"b\"\"]\n[Result \"1-0\"]\n\n1. e4 e5 1-0\n\n\
                    [Event \"b\"]\n[White \"x \"y\" z\"]\n\n1. d4 *\n\n[Event \"c\"]\n\n1. c4 *\n";
        let games = all(text);
        assert_eq!(games.len(), 3, "{games:?}");
        assert_eq!((games[0].line, games[0].sans.len()), (1, 2));
        assert!(games[0].error.is_none(), "{:?}", games[0].error);
        assert_eq!(kept_white(&games[0]), "\"A B\"");
        assert!(games[0].kept.windows(3).any(|w| w == b"\"b\""));
        assert_eq!(games[0].result.as_deref(), Some(&b"1-0"[..]));
        assert_eq!((games[1].line, games[1].sans.len()), (8, 1));
        assert_eq!(kept_white(&games[1]), "x \"y\" z");
        assert_eq!((games[2].line, games[2].sans.len()), (13, 1));
    }

    #[test]
    fn a_broken_tag_not_followed_by_its_game_is_skipped_alone() {
        // No moves after the broken tag: the game after the blank line is another game.
        let text = "[Event \"a\"]\n[White \"\"A\"\"]\n\n[Event \"b\"]\n\n1. e4 *\n";
        let games = all(text);
        assert_eq!(games.len(), 2, "{games:?}");
        assert!(
            games[0]
                .error
                .as_deref()
                .is_some_and(|e| e.starts_with("broken tag pair"))
        );
        assert_eq!((games[1].line, games[1].sans.len()), (4, 1));
        assert!(games[1].error.is_none());
    }

    #[test]
    fn long_tag_lines_are_read_up_to_the_limit_and_named_past_it() {
        let game = |white: &str| format!("[Event \"e\"]\n[White \"{white}\"]\n\n1. e4 e5 *\n\n");
        // A 100,000-character name (python-chess reads it) is a game like any other.
        let long = "n".repeat(100_000);
        let text = game(&long) + &game("after");
        let games = all(&text);
        assert_eq!(games.len(), 2);
        assert!(games[0].error.is_none(), "{:?}", games[0].error);
        assert_eq!(games[0].sans.len(), 2);
        assert!(
            games[0]
                .kept
                .windows(long.len())
                .any(|w| w == long.as_bytes())
        );
        // Past the reader's buffer (twice the limit: a line up to it reads when the input
        // fills the buffer): that game is unreadable, said why; the next is read.
        let text = game(&"n".repeat(2 * MAX_TAG_LINE + 10)) + &game("after");
        let games = all(&text);
        let e = games[0].error.as_deref().unwrap_or_default();
        assert!(e.contains("256 KiB"), "{e}");
        let last = games.last().unwrap();
        assert!(last.error.is_none() && last.sans.len() == 2, "{games:?}");
    }

    proptest::proptest! {
        /// `ops::movetext` mirrors the reader: on any one-game text it calls read whole, its
        /// moves are exactly the reader's.
        #[test]
        fn the_movetext_scanner_sees_the_moves_the_reader_reads(
            tokens in proptest::collection::vec(proptest::sample::select(vec![
                "e4", "e5", "Nf3", "Nc6", "1.", "2...", "12", "{c (x) hxg8Q}", "(", ")", "(1. d4 cd)",
                "$1", "!?", "hxg8Q", "e2-e4", "cd", "1-0", "1/2", "*", "\n", ";x hxg8Q\n",
                "\n%esc hxg8Q\n", "0-0", "O-O", "exd6", "e.p.", "+/-", "=", "12e4", "Nf3N", "--",
                "Z0", "e4+/-", "c4=", "Qh5=+", "d7d8R", "Ng1f3", "♘f3", "½-½", "\t", "\r",
                "…Nc6", "\"Nc6\"", "-Nc6", "½", "½:½", "0-0=", "0-0+/-", "1…e5", "e4-d5", "\u{feff}",
            ]), 0..40),
            glue in proptest::collection::vec(proptest::bool::ANY, 40),
        ) {
            let mut text = String::from("[Event \"x\"]\n\n");
            for (t, g) in tokens.iter().zip(&glue) {
                text.push_str(t);
                if !g {
                    text.push(' ');
                }
            }
            text.push('\n');
            // One game: no blank line (which ends a movetext) after the tags.
            let mut movetext = text.split_off(13);
            while movetext.contains("\n\n") || movetext.contains("\n\r\n") {
                movetext = movetext.replace("\n\n", "\n").replace("\n\r\n", "\n");
            }
            text.push_str(&movetext);
            let mut reader = Reader::new(text.as_bytes());
            let Some(raw) = reader.read_game(&mut RawVisitor::default()).unwrap() else {
                return Ok(());
            };
            if crate::ops::movetext::check_mainline(text.as_bytes()) == Mainline::Read {
                proptest::prop_assert_eq!(
                    crate::ops::movetext::moves_of(text.as_bytes(), 0),
                    raw.sans,
                    "{}",
                    text
                );
            }
        }
    }
}

//! Finds the mainline move tokens the PGN reader drops without a word (`hxg8Q`, `e2-e4`, `cd`),
//! so that no game is counted shorter than it was written (DESIGN §2).
//!
//! pgn-reader 0.29 hands the visitor a SAN only when a token reads whole as one; any other token
//! is skipped silently. This scanner walks a game's text the way the reader does (tags, comments,
//! `%` escape lines, `;` comments, variations skipped) and classifies each mainline word: read
//! by the reader; a move in a common SAN variant the reader dropped, which is read here as
//! python-chess reads it (then this module's moves replace the reader's); no move at all (move
//! numbers, results, NAGs, `+/-`, `=`, `e.p.`); or unreadable, which skips the game.

use std::ops::ControlFlow;

use pgn_reader::SanPlus;

/// A mainline word the reader dropped: the word and how many moves of the mainline precede it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct DroppedMove {
    pub word: String,
    pub ply: usize,
    /// The word follows a tag pair's value on its line: a broken tag (`[White ""A B""]`) ended
    /// the tags early, and the rest of its line was read as moves.
    pub in_tag_line: bool,
    /// The word's offset in the game's text.
    pub at: usize,
    /// The game's text holds a carriage return not followed by a line feed: lines ended the
    /// old Mac way, which the reader does not see as line ends (an old Mac file joined after
    /// one with other line ends, whose start decided how it is read: `ops::lineends`).
    pub lone_cr: bool,
}

impl DroppedMove {
    /// The reason a game holding this word is skipped.
    pub(crate) fn reason(&self) -> String {
        if self.in_tag_line {
            return format!(
                "broken tag pair: {:?} follows a tag's value on its line (a quote inside the value? escape it as \\\"): the game's tags end there, this part is skipped, and the tags and moves after it are read as another game",
                self.word
            );
        }
        if self.lone_cr {
            return format!(
                "move {:?} (ply {}) is no move, and the game's lines end with a lone carriage return (an old Mac file joined after one with other line ends? only a file that begins so is read with them as line ends): the text from here on may hold several games, all skipped; convert the line ends (`tr '\\r' '\\n'`) and import it again",
                self.word,
                self.ply + 1
            );
        }
        format!(
            "move {:?} (ply {}) is no move (a game with an unreadable move is skipped whole; correct it, e.g. `hxg8=Q` for `hxg8Q`)",
            self.word,
            self.ply + 1
        )
    }
}

/// Whether `text` holds a carriage return followed by a byte other than a line feed (one that
/// ends the text may be half of a CRLF the next text begins with).
fn has_lone_cr(text: &[u8]) -> bool {
    memchr::memchr_iter(b'\r', text).any(|i| text.get(i + 1).is_some_and(|&b| b != b'\n'))
}

/// The bytes that end a token for the reader (pgn-reader's `is_token_end`).
fn is_token_end(b: u8) -> bool {
    matches!(
        b,
        b' ' | b'\t'
            | b'\n'
            | b'\r'
            | b'{'
            | b'}'
            | b'('
            | b')'
            | b'!'
            | b'?'
            | b'$'
            | b';'
            | b'.'
            | b'*'
    )
}

/// Index of the first `needle` at or after `from`, or the end of `s`.
fn find(s: &[u8], from: usize, needle: u8) -> usize {
    let from = from.min(s.len());
    memchr::memchr(needle, &s[from..]).map_or(s.len(), |i| from + i)
}

/// Where a game's movetext starts: after its tag pairs, whitespace and `%` escape lines.
fn movetext_start(s: &[u8]) -> usize {
    let mut i = 0;
    let mut line_start = true;
    while i < s.len() {
        match s[i] {
            b' ' | b'\t' | b'\r' => i += 1,
            b'\n' => {
                line_start = true;
                i += 1;
            }
            b'%' if line_start => i = find(s, i, b'\n'),
            // A byte-order mark opening a game (files joined with `cat`): the reader skips it
            // before the game (and drops one anywhere else as an unreadable token).
            0xef if i == 0 && s.starts_with(b"\xef\xbb\xbf") => i += 3,
            b'[' => {
                // A tag pair: its value is quoted (with `\` escapes) and ends the line at most.
                let mut j = i + 1;
                while j < s.len() && !matches!(s[j], b'"' | b'\n' | b']') {
                    j += 1;
                }
                if j < s.len() && s[j] == b'"' {
                    j += 1;
                    while j < s.len() && !matches!(s[j], b'"' | b'\n') {
                        j += if s[j] == b'\\' { 2 } else { 1 };
                    }
                    // The closing quote; a value the line's end cuts (`"C:\"`) leaves the
                    // newline to start the next line, as the reader does.
                    if j < s.len() && s[j] == b'"' {
                        j += 1;
                    }
                }
                while j < s.len() && matches!(s[j], b' ' | b'\t' | b'\r') {
                    j += 1;
                }
                if j < s.len() && s[j] == b']' {
                    j += 1;
                }
                i = j;
                line_start = false;
            }
            _ => return i,
        }
    }
    s.len()
}

/// Whether `word` is SAN in its plain form (`e4`, `exd5`, `e8=Q+`, `Nbd7`, `R1xa3#`, `O-O-O`),
/// which the reader surely reads whole: a byte check, much cheaper than parsing.
fn is_plain_san(word: &[u8]) -> bool {
    let w = match word {
        [w @ .., b'+' | b'#'] => w,
        w => w,
    };
    let file = |b: &u8| (b'a'..=b'h').contains(b);
    let rank = |b: &u8| (b'1'..=b'8').contains(b);
    match w {
        b"O-O" | b"O-O-O" => true,
        [p, rest @ ..] if b"NBRQK".contains(p) => match rest {
            [d @ .., t, r] if file(t) && rank(r) => {
                let d = d.strip_suffix(b"x").unwrap_or(d);
                match d {
                    [] => true,
                    [a] => file(a) || rank(a),
                    [a, b] => file(a) && rank(b),
                    _ => false,
                }
            }
            _ => false,
        },
        [f, r] => file(f) && rank(r),
        [f, r, b'=', p] => file(f) && rank(r) && b"NBRQ".contains(p),
        [f, b'x', t, r] => file(f) && file(t) && rank(r),
        [f, b'x', t, r, b'=', p] => file(f) && file(t) && rank(r) && b"NBRQ".contains(p),
        _ => false,
    }
}

/// [`classify`] with a fast answer for plain SAN (its move is not parsed: `Read` carries none).
fn quick_classify(word: &[u8]) -> Word {
    if is_plain_san(word) {
        return Word::Read(None);
    }
    classify(word)
}

/// What a mainline word is to the counting rules.
#[derive(Debug, PartialEq)]
enum Word {
    /// A SAN the reader reads whole and hands on (parsed unless [`quick_classify`] knew it).
    Read(Option<SanPlus>),
    /// A move the reader drops but that reads unambiguously in a common variant of SAN:
    /// promotion without `=` (`hxg8Q`), long algebraic (`e2-e4`, `Ng1-f3`, `d7d8R`), a SAN with
    /// annotation glyphs glued to it (`e4+/-`, `Qh5!?=`). python-chess reads all of these.
    Mended(SanPlus),
    /// No move at all (move numbers, results, `+/-`, `=`): the reader skips it, so do we.
    NoMove,
    /// A move the reader could not read (`cd`, `Nz3`, `♘f3`): the game is skipped whole.
    Unreadable,
}

fn classify(word: &[u8]) -> Word {
    // Words starting with a digit (or `½`) take the reader's own branches, before any SAN.
    if word.first().is_some_and(u8::is_ascii_digit) || word.starts_with("½".as_bytes()) {
        return classify_numbered(word);
    }
    let prefix = match SanPlus::from_ascii_prefix(word) {
        Ok((san, n)) if n == word.len() => return Word::Read(Some(san)),
        // Annotation glyphs glued to a move (`e4+/-`).
        Ok((san, n))
            if word[n..].iter().all(|b| !b.is_ascii_alphanumeric())
                && !word[n..].windows(2).any(|w| w == b"--") =>
        {
            return Word::Mended(san);
        }
        Ok(_) => true,
        Err(_) => false,
    };
    // Leading junk the reader stops at (`…Nc6`, `"Nc6"`, `-Nc6`): python-chess reads the move
    // after it; so does this (the reader dropped it).
    if !prefix
        && let Some(&b) = word.first()
        && !b.is_ascii_alphanumeric()
        && !is_figurine(word)
    {
        let junk = word
            .iter()
            .take_while(|b| !b.is_ascii_alphanumeric())
            .count();
        return match classify(&word[junk..]) {
            // (`classify` always parses what it reads: `Read(None)` is `quick_classify`'s.)
            Word::Read(Some(san)) | Word::Mended(san) => Word::Mended(san),
            Word::Unreadable => Word::Unreadable,
            Word::Read(None) | Word::NoMove => Word::NoMove,
        };
    }
    if let Some(mended) = mend(word) {
        return Word::Mended(mended);
    }
    if prefix {
        // A move glued to more (`--e4`, `Nf3N`): the reader dropped the move.
        return Word::Unreadable;
    }
    // Glyphs the SAN parser stumbles on (`c4=`, `Qh5=+`): the move before them.
    let glyphs = word
        .iter()
        .rev()
        .take_while(|b| !b.is_ascii_alphanumeric())
        .count();
    if glyphs > 0 && glyphs < word.len() {
        match classify(&word[..word.len() - glyphs]) {
            Word::Read(Some(san)) | Word::Mended(san) => return Word::Mended(san),
            _ => {}
        }
    }
    match word.first() {
        // Letters begin moves (pieces, files, `O-O`); anything else starting with one is a move
        // the reader could not read.
        Some(b) if b.is_ascii_alphabetic() => Word::Unreadable,
        // Figurine notation (`♘f3`: U+2654..U+265F) is a move the reader cannot read either.
        _ if is_figurine(word) => Word::Unreadable,
        _ => Word::NoMove,
    }
}

/// A word starting with a digit or `½`: a move number (the fast, common case), castling with
/// zeros (glyphs glued on are dropped as from any move), a result, or a move number with a move
/// glued on (`12e4`, `1…e5`: the reader reads or drops the move after the digits; python-chess
/// reads it). Other shapes the reader reads in ways of its own (`1-0e4` reads `e4`, `0-01`
/// castles): a word of them holding a letter, a null move's `--` or castling's `0-0` is called
/// unreadable rather than guessed at; without one it is no move (`1/2`, `½:½`).
fn classify_numbered(word: &[u8]) -> Word {
    let digits = word.iter().take_while(|b| b.is_ascii_digit()).count();
    if digits == word.len() {
        return Word::NoMove;
    }
    for (zeros, side) in [(&b"0-0-0"[..], "O-O-O"), (&b"0-0"[..], "O-O")] {
        if let Some(rest) = word.strip_prefix(zeros) {
            let (suffix, rest) = match rest.first() {
                Some(b'+' | b'#') => (&rest[..1], &rest[1..]),
                _ => (&b""[..], rest),
            };
            if rest.iter().all(|b| !b.is_ascii_alphanumeric()) && !rest.starts_with(b"-") {
                let san = [side.as_bytes(), suffix].concat();
                return match SanPlus::from_ascii(&san) {
                    Ok(san) if rest.is_empty() => Word::Read(Some(san)),
                    Ok(san) => Word::Mended(san),
                    Err(_) => Word::Unreadable,
                };
            }
            return Word::Unreadable;
        }
    }
    if is_result(word) {
        return Word::NoMove;
    }
    let rest = &word[digits..];
    let dash_or_slash = rest.starts_with(b"-")
        || rest.starts_with(b"/")
        || rest.starts_with("–".as_bytes())
        || rest.starts_with("—".as_bytes());
    if digits > 0 && !(matches!(word[0], b'0' | b'1') && dash_or_slash) {
        // The reader steps over the digits and reads the rest as a token of its own.
        return classify(rest);
    }
    if word.iter().any(u8::is_ascii_alphabetic)
        || word.windows(2).any(|w| w == b"--")
        || word.windows(3).any(|w| w == b"0-0")
    {
        Word::Unreadable
    } else {
        Word::NoMove
    }
}

/// Reads `word` as python-chess's SAN grammar does (`[NBKRQ]?[a-h]?[1-8]?[-x]?[a-h][1-8](=?[nbrqkNBRQK])?`
/// with a check or mate sign) and writes it as SAN.
fn mend(word: &[u8]) -> Option<SanPlus> {
    let (body, suffix) = match word {
        [b @ .., b'+', b'+'] => (b, &b"+"[..]),
        [b @ .., s @ (b'+' | b'#')] => (b, std::slice::from_ref(s)),
        b => (b, &b""[..]),
    };
    // A promotion at the end: a piece letter after a rank or an `=`.
    let (body, promotion) = match body {
        [b @ .., b'=', p] | [b @ .., p]
            if b"nbrqkNBRQK".contains(p) && matches!(b.last(), Some(b'1'..=b'8') | Some(b'=')) =>
        {
            (
                b.strip_suffix(b"=").unwrap_or(b),
                Some(p.to_ascii_uppercase()),
            )
        }
        b => (b, None),
    };
    let [rest @ .., to_file @ b'a'..=b'h', to_rank @ b'1'..=b'8'] = body else {
        return None;
    };
    let mut rest = rest;
    let mut take = |pred: fn(&u8) -> bool| match rest {
        [c, r @ ..] if pred(c) => {
            rest = r;
            Some(*c)
        }
        _ => None,
    };
    let piece = take(|c| b"NBKRQ".contains(c));
    let file = take(|c| (b'a'..=b'h').contains(c));
    let rank = take(|c| (b'1'..=b'8').contains(c));
    let separator = take(|c| *c == b'-' || *c == b'x');
    // `e4-d5`: a pawn that changes file captures, whatever the separator says.
    let capture = separator == Some(b'x')
        || (piece.is_none() && file.is_some_and(|f| f != *to_file) && separator.is_some());
    if !rest.is_empty() || (piece.is_some() && promotion.is_some()) {
        return None;
    }
    let mut san = Vec::with_capacity(10);
    san.extend(piece);
    san.extend(file);
    san.extend(rank);
    if capture {
        san.push(b'x');
    }
    san.extend([*to_file, *to_rank]);
    if let Some(p) = promotion {
        san.extend([b'=', p]);
    }
    san.extend_from_slice(suffix);
    SanPlus::from_ascii(&san).ok()
}

/// Whether `word` starts with a chess figurine (U+2654..U+265F, UTF-8 `E2 99 94..9F`).
fn is_figurine(word: &[u8]) -> bool {
    matches!(word, [0xe2, 0x99, 0x94..=0x9f, ..])
}

/// A game termination marker (`1-0`, `0-1`, `1/2-1/2`, with any of the dashes the reader takes).
fn is_result(word: &[u8]) -> bool {
    let dash = |w: &[u8]| -> Option<usize> {
        ["-", "–", "—"]
            .iter()
            .find(|d| w.starts_with(d.as_bytes()))
            .map(|d| d.len())
    };
    let result = |a: &[u8], b: &[u8]| {
        word.strip_prefix(a)
            .and_then(|r| dash(r).map(|n| &r[n..]))
            .is_some_and(|r| r == b)
    };
    result(b"1", b"0")
        || result(b"0", b"1")
        || result(b"1/2", b"1/2")
        || result("½".as_bytes(), "½".as_bytes())
}

/// Whether `s[start..end]` is an en-passant mark standing alone: `ep`, or the `e` or the `p` of
/// `e.p.`.
fn is_en_passant_mark(s: &[u8], start: usize, end: usize) -> bool {
    let word = &s[start..end];
    (word == b"e" && s[end..].starts_with(b".p"))
        || (word == b"p" && s[..start].ends_with(b"e."))
        || word == b"ep"
}

/// Calls `f` with each mainline word of one game's text (as the reader consumed it, tags
/// included), its offset, and whether it was cut from a longer word (a glued en-passant mark),
/// until it breaks; the words of variations, comments and escape lines are not mainline words.
fn each_mainline_word<B>(
    s: &[u8],
    mut f: impl FnMut(&[u8], usize, bool) -> ControlFlow<B>,
) -> Option<B> {
    let mut i = movetext_start(s);
    let mut depth = 0usize;
    while i < s.len() {
        match s[i] {
            b'{' => i = find(s, i, b'}') + 1,
            b';' => i = find(s, i, b'\n'),
            b'\n' if s.get(i + 1) == Some(&b'%') => i = find(s, i + 1, b'\n'),
            b'(' => {
                depth += 1;
                i += 1;
            }
            b')' => {
                depth = depth.saturating_sub(1);
                i += 1;
            }
            b'$' => {
                i += 1;
                while i < s.len() && !is_token_end(s[i]) {
                    i += 1;
                }
            }
            b if is_token_end(b) => i += 1,
            _ => {
                let start = i;
                while i < s.len() && !is_token_end(s[i]) {
                    i += 1;
                }
                if depth > 0 || is_en_passant_mark(s, start, i) {
                    // `e.p.` after an en-passant capture: the reader skips `e` and `p`.
                    continue;
                }
                let mut word = &s[start..i];
                if word.starts_with(b"\xef\xbb\xbf[") && (start == 0 || s[start - 1] == b'\n') {
                    // A byte-order mark and a tag line (files joined with `cat`, no blank line
                    // between): the reader reads them as this movetext and drops them; the
                    // tags after start the next game.
                    i = find(s, i, b'\n');
                    continue;
                }
                // An en-passant mark glued to the capture (`exf6ep`, `exf6e.p.`): the reader
                // drops the word, the capture is read without its mark.
                let whole = word.len();
                if word.len() > 2 && word.ends_with(b"ep") {
                    word = &word[..word.len() - 2];
                } else if word.len() > 1 && word.ends_with(b"e") && s[i..].starts_with(b".p") {
                    word = &word[..word.len() - 1];
                }
                if let ControlFlow::Break(b) = f(word, start, word.len() < whole) {
                    return Some(b);
                }
            }
        }
    }
    None
}

/// A word as a reason shows it: at most [`SHOWN`] bytes of it (a hostile input's "word" may be
/// a gigabyte long), with its length when cut.
fn shown(word: &[u8]) -> String {
    if word.len() <= SHOWN {
        return String::from_utf8_lossy(word).into_owned();
    }
    let mut cut = SHOWN;
    while cut > 0 && (word[cut] & 0xc0) == 0x80 {
        cut -= 1;
    }
    format!(
        "{}… ({} bytes)",
        String::from_utf8_lossy(&word[..cut]),
        word.len()
    )
}

/// The most bytes of an unreadable word a reason shows.
const SHOWN: usize = 40;

/// Whether the word at `at` follows a tag pair's closing quote on its line with no `]` between
/// (`[White ""Socrates Expert""]`: the value `""` ends the tags at `Socrates`), not moves written
/// after a whole tag pair on its line (`[Event "a"] 1. e4`).
fn right_after_a_tag_value(s: &[u8], at: usize) -> bool {
    let (start, _) = line_bounds(s, at);
    let before = &s[start..at];
    before.trim_ascii_start().starts_with(b"[") && before.trim_ascii_end().ends_with(b"\"")
}

/// Where the line of `s` that holds byte `at` starts and ends (before its newline).
fn line_bounds(s: &[u8], at: usize) -> (usize, usize) {
    let start = s[..at]
        .iter()
        .rposition(|&b| b == b'\n')
        .map_or(0, |i| i + 1);
    (start, find(s, at, b'\n'))
}

/// `text` with the tag pair on the line holding byte `at` mended: the quotes inside its value
/// (between the line's first and last quote, before its closing `]`) escaped, as a tag value
/// holding quotes is written. `None` if that line is no tag pair with a quote in its value.
pub(crate) fn escape_tag_quotes(text: &[u8], at: usize) -> Option<Vec<u8>> {
    let (start, end) = line_bounds(text, at.min(text.len()));
    let line = &text[start..end];
    let lead = line.len() - line.trim_ascii_start().len();
    let body = line.trim_ascii();
    if !(body.starts_with(b"[") && body.ends_with(b"]")) {
        return None;
    }
    let open = body.iter().position(|&b| b == b'"')?;
    let close = body.iter().rposition(|&b| b == b'"')?;
    if close <= open + 1 {
        return None;
    }
    let mut out = Vec::with_capacity(text.len() + 8);
    out.extend_from_slice(&text[..start + lead + open + 1]);
    let value = &body[open + 1..close];
    let mut escaped = false;
    for (i, &b) in value.iter().enumerate() {
        if b == b'"' && (i == 0 || value[i - 1] != b'\\') {
            out.push(b'\\');
            escaped = true;
        }
        out.push(b);
    }
    out.extend_from_slice(&text[start + lead + close..]);
    escaped.then_some(out)
}

/// What the reader made of a game's mainline.
#[derive(Debug, PartialEq)]
pub(crate) enum Mainline {
    /// Every move was read: the reader's moves are the game's.
    Read,
    /// Some moves the reader dropped read in a common SAN variant: these are the game's moves.
    Mended(Vec<SanPlus>),
    /// A move no grammar reads: the game is skipped whole.
    Unreadable(DroppedMove),
}

/// Checks one game's text (as the reader consumed it, tags included) for mainline moves the
/// reader dropped.
pub(crate) fn check_mainline(game: &[u8]) -> Mainline {
    let mut ply = 0usize;
    let mut mended = false;
    let first_bad = each_mainline_word(game, |word, at, cut| match quick_classify(word) {
        Word::Read(_) if cut => {
            ply += 1;
            mended = true;
            ControlFlow::Continue(())
        }
        Word::Read(_) => {
            ply += 1;
            ControlFlow::Continue(())
        }
        Word::Mended(_) => {
            ply += 1;
            mended = true;
            ControlFlow::Continue(())
        }
        Word::NoMove => ControlFlow::Continue(()),
        Word::Unreadable => ControlFlow::Break(DroppedMove {
            word: shown(word),
            ply,
            in_tag_line: right_after_a_tag_value(game, at),
            at,
            lone_cr: has_lone_cr(game),
        }),
    });
    if let Some(bad) = first_bad {
        return Mainline::Unreadable(bad);
    }
    if !mended {
        return Mainline::Read;
    }
    Mainline::Mended(moves_of(game, ply))
}

/// The mainline moves of one game's text as this module reads them (the reader's, and the
/// mended ones in their places); `capacity` is a hint.
pub(crate) fn moves_of(game: &[u8], capacity: usize) -> Vec<SanPlus> {
    let mut sans = Vec::with_capacity(capacity);
    each_mainline_word::<()>(game, |word, _, _| {
        if let Word::Read(Some(san)) | Word::Mended(san) = classify(word) {
            sans.push(san);
        }
        ControlFlow::Continue(())
    });
    sans
}

#[cfg(test)]
mod tests;

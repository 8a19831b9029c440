//! The facet rules of docs/FORMAT.md §12 on PGN tag values: a date's period (`UTCDate`,
//! `Date`), a `TimeControl`'s speed, an `Event`'s mode and an Elo. Game-independent text rules,
//! shared by the import (which reads tags as they arrive) and by the game store's references
//! (which read them back from stored games); and a stored tag value as text.

use super::facet::{MAX_YEAR, Period};

/// Windows-1252's characters for the bytes 0x80–0x9F (its five unassigned bytes are taken
/// as the Latin-1 control characters of the same number).
const CP1252_HIGH: [char; 32] = [
    '\u{20AC}', '\u{0081}', '\u{201A}', '\u{0192}', '\u{201E}', '\u{2026}', '\u{2020}', '\u{2021}',
    '\u{02C6}', '\u{2030}', '\u{0160}', '\u{2039}', '\u{0152}', '\u{008D}', '\u{017D}', '\u{008F}',
    '\u{0090}', '\u{2018}', '\u{2019}', '\u{201C}', '\u{201D}', '\u{2022}', '\u{2013}', '\u{2014}',
    '\u{02DC}', '\u{2122}', '\u{0161}', '\u{203A}', '\u{0153}', '\u{009D}', '\u{017E}', '\u{0178}',
];

/// A tag value as text: its UTF-8 as it is, and each byte that is not part of UTF-8 as
/// Windows-1252 (a superset of ISO 8859-1, the PGN standard's character set, in which older
/// files and tools write names such as `Müller`; a file mixing both keeps both). The store
/// keeps a value's bytes as the file had them; this reads them back without losing a letter.
pub fn tag_text(v: &[u8]) -> std::borrow::Cow<'_, str> {
    if let Ok(s) = std::str::from_utf8(v) {
        return std::borrow::Cow::Borrowed(s);
    }
    let mut out = String::with_capacity(v.len() + 8);
    for chunk in v.utf8_chunks() {
        out.push_str(chunk.valid());
        out.extend(chunk.invalid().iter().map(|&b| match b {
            0x80..=0x9f => CP1252_HIGH[usize::from(b - 0x80)],
            _ => char::from(b),
        }));
    }
    std::borrow::Cow::Owned(out)
}

/// An Elo as the book counts it: a positive integer below 5000; `None` otherwise.
pub fn parse_elo(v: &[u8]) -> Option<u32> {
    let s = std::str::from_utf8(v.trim_ascii()).ok()?;
    s.parse::<u32>().ok().filter(|&e| e > 0 && e < 5000)
}

/// The result a `Result` tag gives, as the import counts it: 0 white won (`1-0`), 1 draw
/// (`1/2-1/2`), 2 black won (`0-1`), 3 anything else.
pub fn parse_result(v: &[u8]) -> u8 {
    match v.trim_ascii() {
        b"1-0" => 0,
        b"1/2-1/2" => 1,
        b"0-1" => 2,
        _ => 3,
    }
}

/// Parses a PGN date `YYYY.MM.DD`, each field digits or all `?`: year and month known → the
/// month; year known, month `??` → the year; year `????` → undated. `None` if it does not
/// parse (a month outside 1–12, a year past [`MAX_YEAR`], other shapes).
pub fn parse_date(v: &[u8]) -> Option<Period> {
    let v = v.trim_ascii();
    if v.len() != 10 || v[4] != b'.' || v[7] != b'.' {
        return None;
    }
    let field = |f: &[u8]| -> Option<Option<u32>> {
        if f.iter().all(|&b| b == b'?') {
            Some(None)
        } else if f.iter().all(u8::is_ascii_digit) {
            Some(Some(f.iter().fold(0, |a, &b| a * 10 + u32::from(b - b'0'))))
        } else {
            None
        }
    };
    let (y, m, d) = (field(&v[..4])?, field(&v[5..7])?, field(&v[8..])?);
    if d.is_some_and(|d| !(1..=31).contains(&d)) {
        return None;
    }
    match (y, m) {
        (None, _) => Some(Period::Undated),
        (Some(y), _) if y > u32::from(MAX_YEAR) => None,
        (Some(y), None) => Some(Period::Year(y as u16)),
        (Some(y), Some(m)) if (1..=12).contains(&m) => Some(Period::Month(y as u16, m as u8)),
        _ => None,
    }
}

/// The speed of a `TimeControl` value (0 unknown, else 1 + index in
/// [`crate::store::facet::SPEEDS`]): `-` is correspondence; otherwise the first period's base
/// B and increment I (`B`, `B+I`, `M/B`, `M/B+I`, `*B`; after `:` ignored), estimated as
/// B + 40·I seconds, by lichess's limits. `?`, empty or unparsable: unknown.
pub fn parse_speed(v: &[u8]) -> u8 {
    let v = v.trim_ascii();
    if v == b"-" {
        return 6;
    }
    let first = v.split(|&b| b == b':').next().unwrap_or_default();
    let first = match first.iter().position(|&b| b == b'/') {
        Some(i) => &first[i + 1..],
        None => first.strip_prefix(b"*").unwrap_or(first),
    };
    let num = |s: &[u8]| -> Option<u64> {
        (!s.is_empty() && s.len() <= 12 && s.iter().all(u8::is_ascii_digit))
            .then(|| s.iter().fold(0, |a, &b| a * 10 + u64::from(b - b'0')))
    };
    let (b, i) = match first.iter().position(|&b| b == b'+') {
        Some(p) => (num(&first[..p]), num(&first[p + 1..])),
        None => (num(first), Some(0)),
    };
    let (Some(b), Some(i)) = (b, i) else {
        return 0;
    };
    let total = b + 40 * i;
    match total {
        t if t < 30 => 1,
        t if t < 180 => 2,
        t if t < 480 => 3,
        t if t < 1500 => 4,
        t if t < 21600 => 5,
        _ => 6,
    }
}

/// The mode of an `Event` value: starting with `Rated` (any case) → rated (1), `Casual` →
/// casual (2), else unknown (0).
pub fn parse_mode(v: &[u8]) -> u8 {
    let v = v.trim_ascii();
    let starts = |p: &[u8]| v.len() >= p.len() && v[..p.len()].eq_ignore_ascii_case(p);
    if starts(b"rated") {
        1
    } else if starts(b"casual") {
        2
    } else {
        0
    }
}

#[cfg(test)]
mod text_tests {
    use super::tag_text;
    use proptest::prelude::*;

    #[test]
    fn latin1_and_windows_1252_values_read_as_their_letters() {
        assert_eq!(tag_text(b"M\xfcller"), "Müller");
        assert_eq!(tag_text(b"Fran\xe7ois \x96 \x80"), "François – €");
        assert_eq!(tag_text("Caruana, Fabiano".as_bytes()), "Caruana, Fabiano");
        assert_eq!(tag_text("Ткачёв".as_bytes()), "Ткачёв");
        // A file mixing encodings keeps both.
        assert_eq!(
            tag_text(&["Ткачёв, ".as_bytes(), &b"J\xfcrgen"[..]].concat()),
            "Ткачёв, Jürgen"
        );
    }

    proptest! {
        #[test]
        fn utf8_is_kept_and_any_bytes_give_one_char_each(s in ".*", b in proptest::collection::vec(any::<u8>(), 0..64)) {
            prop_assert_eq!(tag_text(s.as_bytes()), s.as_str());
            // Every valid part kept, every other byte one character.
            let t = tag_text(&b);
            let want: usize = b
                .utf8_chunks()
                .map(|c| c.valid().chars().count() + c.invalid().len())
                .sum();
            prop_assert_eq!(t.chars().count(), want);
        }
    }
}

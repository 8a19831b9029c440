//! The movetext scanner's unit tests: words classified as python-chess reads them, games'
//! mainlines checked, and the differential proptests against the PGN reader.

use super::*;

fn game(movetext: &str) -> String {
    format!("[Event \"t\"]\n[Result \"*\"]\n\n{movetext}\n")
}

fn check(movetext: &str) -> Mainline {
    check_mainline(game(movetext).as_bytes())
}

fn unreadable(movetext: &str) -> Option<(String, usize)> {
    match check(movetext) {
        Mainline::Unreadable(d) => Some((d.word, d.ply)),
        _ => None,
    }
}

fn mended(movetext: &str) -> Vec<String> {
    match check(movetext) {
        Mainline::Mended(sans) => sans.iter().map(|s| s.to_string()).collect(),
        other => panic!("{movetext}: {other:?}"),
    }
}

#[test]
fn games_the_reader_reads_whole_are_left_alone() {
    for m in [
        "1. e4 e5 2. Nf3 Nc6 3. Bb5 a6 1-0",
        "1.e4 e5 2.Nf3!? Nc6?! 3.Bb5 $1 a6 {a comment; with hxg8Q} 1/2-1/2",
        "1. e4 (1. d4 d5 (1... Nf6 hxg8Q) 2. c4) 1... e5 *",
        "1. e4 ; a line comment hxg8Q\n1... e5 0-1",
        "1. e4 d5 2. e5 f5 3. exf6 e.p. Nxf6 +/- = 1/2",
        "1. e4 e5 2. Nf3 Nc6 3. Bc4 Nf6 4. 0-0 Bc5 5. O-O-O+ 1–0",
        "1. e8=Q+ Kxe8# ½-½",
        // A null move (`Z0`, `--`) is read (as a null SAN) and refused by the replay.
        "1. e4 Z0 2. d4 --",
        "",
    ] {
        assert_eq!(check(m), Mainline::Read, "{m}");
    }
    assert_eq!(
        check_mainline(b"[Event \"a \\\"q\\\" ] hxg8Q\"]\n\n1. e4 e5\n"),
        Mainline::Read
    );
    assert_eq!(
        check_mainline(b"%escaped hxg8Q\n[Event \"a\"]\n\n1. e4\n%hxg8Q\ne5\n"),
        Mainline::Read
    );
}

#[test]
fn moves_in_common_san_variants_are_mended() {
    assert_eq!(mended("1. e4 e5 2. hxg8Q 1-0"), ["e4", "e5", "hxg8=Q"]);
    assert_eq!(
        mended("1. e2-e4 e7-e5 2. Ng1-f3"),
        ["e2e4", "e7e5", "Ng1f3"]
    );
    assert_eq!(mended("1. d7d8R d2d1q+"), ["d7d8=R", "d2d1=Q+"]);
    assert_eq!(mended("1. c4= e5 2. Qa4=+ Nc6"), ["c4", "e5", "Qa4", "Nc6"]);
    assert_eq!(
        mended("1. e4+/- e5 2. Qh5!?= Nc6"),
        ["e4+", "e5", "Qh5", "Nc6"]
    );
    assert_eq!(
        mended("1. e4 e5 2. Nf3 (2. hxg8Q) Nc6 3. b8Q#"),
        ["e4", "e5", "Nf3", "Nc6", "b8=Q#"]
    );
    assert_eq!(mended("1e4 e5 2. exd6Q 0-0"), ["e4", "e5", "exd6=Q", "O-O"]);
}

/// Cases of the test campaign on this scanner (/work/s63/campaign4).
#[test]
fn campaign_cases() {
    // A tag value the line's end cuts, then an escape line: not movetext.
    let cut = b"[Event \"C:\\\"]\n%x d4 d5 cd\n[Result \"1-0\"]\n\n1. e2-e4 e5 2. Nf3 1-0\n";
    let Mainline::Mended(sans) = check_mainline(cut) else {
        panic!("{:?}", check_mainline(cut))
    };
    assert_eq!(
        sans.iter().map(|s| s.to_string()).collect::<Vec<_>>(),
        ["e2e4", "e5", "Nf3"]
    );
    // A byte-order mark before a game's tags.
    assert_eq!(
        check_mainline(b"\xef\xbb\xbf[White \"Magnus\"]\n\n1. e4 *\n"),
        Mainline::Read
    );
    // Moves after leading junk, as python-chess reads them.
    assert_eq!(mended("1. e4 e5 2. Nf3 2…Nc6"), ["e4", "e5", "Nf3", "Nc6"]);
    assert_eq!(
        mended("1. e4 1…e5 2. \"Nf3\" -Nc6"),
        ["e4", "e5", "Nf3", "Nc6"]
    );
    // Lone half results are no moves; glyphs after castling with zeros are dropped.
    assert_eq!(check("1. e4 e5 ½ ½:½"), Mainline::Read);
    assert_eq!(
        mended("1. e4 e5 2. 0-0= 0-0+/-"),
        ["e4", "e5", "O-O", "O-O+"]
    );
    // En-passant marks, alone or glued to the capture.
    assert_eq!(
        mended("1. e4 d5 2. e5 f5 3. exf6ep Nxf6"),
        ["e4", "d5", "e5", "f5", "exf6", "Nxf6"]
    );
    assert_eq!(check("1. e4 d5 2. e5 f5 3. exf6 ep Nxf6"), Mainline::Read);
    assert_eq!(
        mended("1. e4 d5 2. e5 f5 3. exf6e.p. Nxf6"),
        ["e4", "d5", "e5", "f5", "exf6", "Nxf6"]
    );
    // A byte-order mark and a tag line in the movetext (files joined without a blank line).
    assert_eq!(
        check_mainline(b"[Event \"a\"]\n\n1. e4 e5 1-0\n\xef\xbb\xbf[Event \"b\"]\n"),
        Mainline::Read
    );
    // A pawn changing file in long algebraic captures.
    assert_eq!(mended("1. e4 d5 2. e4-d5"), ["e4", "d5", "e4xd5"]);
    // Moves after a whole tag pair on its line are moves, not a broken tag.
    let Mainline::Unreadable(d) = check_mainline(b"[Event \"a\"] 1. e4 cd\n") else {
        panic!()
    };
    assert!(!d.in_tag_line, "{}", d.reason());
}

#[test]
fn unreadable_moves_are_found_with_their_place() {
    assert_eq!(unreadable("1. e4 e5 2. cd"), Some(("cd".into(), 2)));
    assert_eq!(unreadable("1. e4 e5 2. Nz3 Nf6"), Some(("Nz3".into(), 2)));
    assert_eq!(unreadable("1. Nf3N d5"), Some(("Nf3N".into(), 0)));
    assert_eq!(unreadable("1. e4 e5 2. ♘f3"), Some(("♘f3".into(), 2)));
    // A move on a tag's line after the tag is the movetext's.
    assert_eq!(
        match check_mainline(b"[Event \"a\"] 1. e4 hxg8 cd\n") {
            Mainline::Unreadable(d) => d.ply,
            _ => 99,
        },
        2
    );
}

#[test]
fn a_broken_tag_is_named_as_such() {
    let text = b"[Event \"?\"]\n[White \"\"Socrates Expert\"\"]\n[Black \"B\"]\n\n1. e4 *\n";
    let Mainline::Unreadable(d) = check_mainline(text) else {
        panic!()
    };
    assert!(
        d.in_tag_line && d.reason().starts_with("broken tag pair: \"Socrates\""),
        "{}",
        d.reason()
    );
}

proptest::proptest! {
    /// Any bytes at all: an answer, never a panic; a mended mainline holds only moves.
    #[test]
    fn any_text_is_checked_without_panic(text in proptest::collection::vec(proptest::prelude::any::<u8>(), 0..300)) {
        let _ = check_mainline(&text);
    }

    /// Text made of PGN's own characters reaches every branch of the scanner.
    #[test]
    fn pgn_like_text_is_checked_without_panic(text in "[\\[\\]\" {};%()$!?.*=+#xO0-9a-hNBRQK\n-]{0,200}") {
        let _ = check_mainline(text.as_bytes());
    }

    /// The fast check never calls a word plain SAN that the reader would not read whole.
    #[test]
    fn plain_san_is_read_whole(word in "[NBRQKOPa-hx1-9=+#-]{1,7}") {
        if is_plain_san(word.as_bytes()) {
            let read = SanPlus::from_ascii_prefix(word.as_bytes());
            proptest::prop_assert!(matches!(read, Ok((_, n)) if n == word.len()), "{word}");
        }
    }
}

#[test]
fn plain_san_forms() {
    for w in [
        "e4", "exd5", "e8=Q+", "Nbd7", "R1xa3#", "O-O-O", "Qh4e1", "Kxe8",
    ] {
        assert!(is_plain_san(w.as_bytes()), "{w}");
    }
    for w in ["e9", "hxg8Q", "e2-e4", "Nz3", "P", "x", "O-O-O-O", "e8=K"] {
        assert!(!is_plain_san(w.as_bytes()), "{w}");
    }
}

#[test]
fn a_long_word_is_shown_cut() {
    let mut text = b"1. e4 ".to_vec();
    text.extend(std::iter::repeat_n(b'x', 1 << 20));
    let Mainline::Unreadable(d) = check_mainline(&text) else {
        panic!()
    };
    assert_eq!(d.word, format!("{}… (1048576 bytes)", "x".repeat(SHOWN)));
    let mut text = "1. e4 N".to_string();
    text.push_str(&"é".repeat(40));
    let Mainline::Unreadable(d) = check_mainline(text.as_bytes()) else {
        panic!()
    };
    assert!(
        d.word.starts_with("Né") && d.word.ends_with("(81 bytes)"),
        "{}",
        d.word
    );
}

#[test]
fn the_reason_names_the_word() {
    let Mainline::Unreadable(d) = check_mainline(b"1. e4 cd") else {
        panic!()
    };
    assert!(
        d.reason().contains("move \"cd\" (ply 2) is no move"),
        "{}",
        d.reason()
    );
}

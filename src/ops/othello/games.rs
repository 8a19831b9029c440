//! Othello games from WTHOR `.wtb` files and from transcripts, and their replay into the
//! (position, move) pairs an import counts (docs/CONTRACT.md §7).
//!
//! - WTHOR: a 16-byte header (the game count as a little-endian u32 at offset 4), then 68-byte
//!   records: tournament u16, black player u16, white player u16, black's disc count u8, the
//!   theoretical score u8, 60 move bytes (10·row + column, both from 1; 0 ends the game).
//!   A file is recognised by its header ([`is_wthor_header`]).
//! - Transcripts: one game per line, `f5d6c3d3c4…` (upper or lower case), optionally followed
//!   by a space and the result as black's discs minus white's. Blank lines are not games.
//!
//! Decoding never panics: a record or line that does not decode, or a move that is not legal,
//! skips its game with its record or line number.

use crate::chess::PackedPos;
use crate::ops::pgn::{GameResult, Ply, SkipReason};
use crate::othello::{Board, MAX_PACKED, square_name, transform_square};

/// Bytes of a WTHOR file header.
pub const WTHOR_HEADER: usize = 16;
/// Bytes of a WTHOR game record.
pub const WTHOR_RECORD: usize = 68;

/// Whether the first bytes of an input are a WTHOR game-file header: board size 8 (or 0, the
/// old default) at offset 12, game type 0 at offset 13 and 0 as the second count (offset 8;
/// non-zero only in player and tournament files). Text never has these zero bytes.
pub fn is_wthor_header(h: &[u8]) -> bool {
    h.len() >= WTHOR_HEADER && matches!(h[12], 0 | 8) && h[13] == 0 && h[8] == 0 && h[9] == 0
}

/// One game as read: its moves (squares 0..63) and result.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct OthelloGame {
    pub moves: Vec<u8>,
    pub result: Option<GameResult>,
}

/// The result of black's disc count minus white's.
fn result_of_margin(margin: i32) -> GameResult {
    match margin.cmp(&0) {
        std::cmp::Ordering::Greater => GameResult::Black,
        std::cmp::Ordering::Less => GameResult::White,
        std::cmp::Ordering::Equal => GameResult::Draw,
    }
}

/// Decodes one 68-byte WTHOR record (`rec` may be shorter: a truncated last record).
pub fn decode_record(rec: &[u8], number: u64) -> Result<OthelloGame, SkipReason> {
    let corrupt = |what: String| SkipReason::Corrupt(format!("record {number}: {what}"));
    if rec.len() != WTHOR_RECORD {
        return Err(corrupt(format!(
            "truncated ({} of {WTHOR_RECORD} bytes)",
            rec.len()
        )));
    }
    let score = rec[6];
    if score > 64 {
        return Err(corrupt(format!("black's disc count {score} is above 64")));
    }
    let mut moves = Vec::with_capacity(60);
    let mut ended = false;
    for (i, &b) in rec[8..].iter().enumerate() {
        if b == 0 {
            ended = true;
            continue;
        }
        let (row, col) = (b / 10, b % 10);
        if ended || !(1..=8).contains(&row) || !(1..=8).contains(&col) {
            return Err(corrupt(format!(
                "move byte {} is {b}, not a square{}",
                i + 1,
                if ended { " after the end" } else { "" }
            )));
        }
        moves.push((row - 1) * 8 + (col - 1));
    }
    Ok(OthelloGame {
        moves,
        result: Some(result_of_margin(i32::from(score) * 2 - 64)),
    })
}

/// Calls `f` with each record of `data` (whole WTHOR records after the header; a short last
/// record is reported corrupt) and its 1-based number, starting at `first`. Returns the
/// records read.
pub fn each_record(
    data: &[u8],
    first: u64,
    mut f: impl FnMut(u64, Result<OthelloGame, SkipReason>),
) -> u64 {
    let mut n = 0;
    for (i, rec) in data.chunks(WTHOR_RECORD).enumerate() {
        let number = first + i as u64;
        f(number, decode_record(rec, number));
        n += 1;
    }
    n
}

/// Decodes one transcript line (without its line end); `None` for a blank line.
pub fn decode_line(line: &[u8], number: u64) -> Option<Result<OthelloGame, SkipReason>> {
    let text = line.trim_ascii();
    if text.is_empty() {
        return None;
    }
    let corrupt = |what: String| Some(Err(SkipReason::Corrupt(format!("line {number}: {what}"))));
    let mut parts = text
        .split(|c| c.is_ascii_whitespace())
        .filter(|p| !p.is_empty());
    let (Some(moves_text), result, None) = (parts.next(), parts.next(), parts.next()) else {
        return corrupt("expected moves and at most a result".into());
    };
    if moves_text.len() % 2 != 0 || moves_text.len() > 120 {
        return corrupt(format!(
            "{} characters of moves: expected pairs like f5, at most 60",
            moves_text.len()
        ));
    }
    let mut moves = Vec::with_capacity(moves_text.len() / 2);
    for (i, sq) in moves_text.chunks(2).enumerate() {
        let c = sq[0].to_ascii_lowercase();
        let r = sq[1];
        if !(b'a'..=b'h').contains(&c) || !(b'1'..=b'8').contains(&r) {
            return corrupt(format!(
                "move {} {:?} is not a square",
                i + 1,
                String::from_utf8_lossy(sq)
            ));
        }
        moves.push((r - b'1') * 8 + (c - b'a'));
    }
    let result = match result {
        None => None,
        Some(r) => match std::str::from_utf8(r)
            .ok()
            .and_then(|s| s.parse::<i32>().ok())
        {
            Some(m) if (-64..=64).contains(&m) => Some(result_of_margin(m)),
            _ => {
                return corrupt(format!(
                    "result {:?} is not black's discs minus white's (-64 … 64)",
                    String::from_utf8_lossy(r)
                ));
            }
        },
    };
    Some(Ok(OthelloGame { moves, result }))
}

/// Calls `f` with each game of a transcript chunk (whole lines) and its line number,
/// starting at `first_line`. Returns the games read.
pub fn each_line(
    data: &[u8],
    first_line: u64,
    mut f: impl FnMut(u64, Result<OthelloGame, SkipReason>),
) -> u64 {
    let mut n = 0;
    for (i, line) in data.split(|&b| b == b'\n').enumerate() {
        let number = first_line + i as u64;
        if let Some(g) = decode_line(line, number) {
            f(number, g);
            n += 1;
        }
    }
    n
}

/// Replays a game (every move must be legal; passes are implicit) and writes the pairs of its
/// first `max_ply` moves into `plies` (cleared first): the position before each move with the
/// side that moves, and the move. `canonical` stores each position as its least symmetric
/// image, the move mapped with it.
pub fn replay_into(
    g: &OthelloGame,
    max_ply: usize,
    canonical: bool,
    plies: &mut Vec<Ply>,
) -> Result<(), SkipReason> {
    plies.clear();
    let mut board = Board::start();
    let mut buf = [0u8; MAX_PACKED];
    for (ply, &sq) in g.moves.iter().enumerate() {
        if ply < max_ply {
            let (b, t) = if canonical {
                board.canonical()
            } else {
                (board, 0)
            };
            let (n, _) = b.pack_into(&mut buf);
            let pos = PackedPos::from_slice(&buf[..n])
                .ok_or_else(|| SkipReason::Corrupt("packed position too long".into()))?;
            plies.push(Ply {
                key: b.key(),
                pos,
                mv: u16::from(transform_square(sq, t)),
                white_moved: board.white_to_move(),
            });
        }
        board.play(sq).map_err(|_| SkipReason::IllegalSquare {
            ply,
            mv: square_name(sq),
        })?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn record(score: u8, moves: &[&str]) -> Vec<u8> {
        let mut r = vec![0u8; WTHOR_RECORD];
        r[6] = score;
        for (i, m) in moves.iter().enumerate() {
            let sq = crate::othello::parse_square(m).unwrap();
            r[8 + i] = (sq / 8 + 1) * 10 + sq % 8 + 1;
        }
        r
    }

    #[test]
    fn records_decode_and_replay() {
        let g = decode_record(&record(40, &["f5", "d6", "c3"]), 1).unwrap();
        assert_eq!(g.moves, vec![37, 43, 18]);
        assert_eq!(g.result, Some(GameResult::Black));
        assert_eq!(
            decode_record(&record(32, &[]), 1).unwrap().result,
            Some(GameResult::Draw)
        );
        let mut plies = Vec::new();
        replay_into(&g, 60, false, &mut plies).unwrap();
        assert_eq!(plies.len(), 3);
        assert_eq!(plies[0].key, 0x933982e233ff08ea);
        assert_eq!(plies[2].key, 0x05304dd5c9f74bc6);
        replay_into(&g, 2, false, &mut plies).unwrap();
        assert_eq!(plies.len(), 2);
        // Canonical: the four first moves give one position.
        let mut keys = std::collections::HashSet::new();
        for m in ["f5", "d3", "c4", "e6"] {
            let g = OthelloGame {
                moves: vec![crate::othello::parse_square(m).unwrap(), 0],
                result: None,
            };
            let _ = replay_into(&g, 60, true, &mut plies);
            keys.insert(plies[1].key);
        }
        assert_eq!(keys.len(), 1);
    }

    #[test]
    fn corrupt_records_and_illegal_moves_are_skipped() {
        let mut r = record(40, &["f5"]);
        r[10] = 37; // a move after the end
        assert!(
            matches!(decode_record(&r, 3), Err(SkipReason::Corrupt(m)) if m.contains("record 3"))
        );
        let mut r = record(40, &["f5"]);
        r[8] = 99;
        assert!(decode_record(&r, 1).is_err());
        assert!(decode_record(&r[..10], 1).is_err());
        assert!(decode_record(&record(65, &[]), 1).is_err());
        let g = decode_record(&record(40, &["f5", "f5"]), 1).unwrap();
        let mut plies = Vec::new();
        assert_eq!(
            replay_into(&g, 60, false, &mut plies),
            Err(SkipReason::IllegalSquare {
                ply: 1,
                mv: "f5".into()
            })
        );
    }

    #[test]
    fn transcripts_decode() {
        let g = decode_line(b"F5d6C3 -4\r", 7).unwrap().unwrap();
        assert_eq!(g.moves, vec![37, 43, 18]);
        assert_eq!(g.result, Some(GameResult::White));
        assert_eq!(decode_line(b"f5d6", 1).unwrap().unwrap().result, None);
        assert!(decode_line(b"   ", 1).is_none());
        for bad in ["f5d", "f5z9", "f5 x", "f5 65", "f5 1 2"] {
            assert!(
                matches!(decode_line(bad.as_bytes(), 4), Some(Err(SkipReason::Corrupt(m))) if m.contains("line 4")),
                "{bad}"
            );
        }
        let mut n = 0;
        assert_eq!(each_line(b"f5\n\nf5d6 2\n", 10, |_, _| n += 1), 2);
    }

    #[test]
    fn wthor_headers_are_recognised() {
        let h = [20u8, 7, 5, 22, 12, 0, 0, 0, 0, 0, 0xb9, 7, 8, 0, 24, 0];
        assert!(is_wthor_header(&h));
        assert!(!is_wthor_header(b"f5d6c3d3c4f4c5b3c2 4\n"));
        assert!(!is_wthor_header(&h[..10]));
    }
}

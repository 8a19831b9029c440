//! `probe` and `dump` of an Othello book: the JSON shape of docs/CONTRACT.md §7
//! (`{"key","board","moves":[{"move","black","draws","white","unknown"}]}`), positions given
//! by moves from the start or by a board string, and canonical books answered in the
//! orientation asked.

use serde::Serialize;

use crate::error::{Error, Result};
use crate::othello::{Board, OthelloError, square_name, untransform_square};
use crate::store::{Book, Entry, MoveRec};

#[derive(Clone, Debug, Serialize, PartialEq, Eq)]
pub struct OthelloMoveJson {
    #[serde(rename = "move")]
    pub mv: String,
    pub black: u64,
    pub draws: u64,
    pub white: u64,
    pub unknown: u64,
}

#[derive(Clone, Debug, Serialize, PartialEq, Eq)]
pub struct OthelloEntryJson {
    pub key: String,
    pub board: String,
    pub moves: Vec<OthelloMoveJson>,
}

fn move_name(mv: u16) -> Result<String> {
    u8::try_from(mv)
        .ok()
        .filter(|&m| m < 64)
        .map(square_name)
        .ok_or_else(|| {
            Error::from(crate::store::error::CodecError::from(
                OthelloError::MoveCode(mv),
            ))
        })
}

fn moves_json<'a>(moves: impl Iterator<Item = (&'a MoveRec, u16)>) -> Result<Vec<OthelloMoveJson>> {
    let mut v = moves
        .map(|(m, mv)| {
            Ok(OthelloMoveJson {
                mv: move_name(mv)?,
                black: m.black,
                draws: m.draws,
                white: m.white,
                unknown: m.unknown,
            })
        })
        .collect::<Result<Vec<_>>>()?;
    v.sort_by(|a, b| a.mv.cmp(&b.mv));
    Ok(v)
}

/// The `dump` line of an entry of an Othello book (moves by square name).
pub fn entry_json(e: &Entry) -> Result<OthelloEntryJson> {
    let board = match &e.pos {
        Some(p) => Board::unpack(p).map_err(crate::store::error::CodecError::from)?,
        None => {
            return Err(Error::Internal(format!(
                "Othello book entry {:016x} has no position",
                e.key
            )));
        }
    };
    Ok(OthelloEntryJson {
        key: format!("{:016x}", e.key),
        board: board.board_string(),
        moves: moves_json(e.moves.iter().map(|m| (m, m.mv)))?,
    })
}

/// The probe answer for an Othello position: its moves in the orientation asked.
pub struct OthelloProbe {
    pub board: Board,
    /// The key of the position as stored (its least image in a canonical book).
    pub stored_key: u64,
    /// (move in the asked orientation, record), if the book holds the position.
    pub moves: Option<Vec<(u16, MoveRec)>>,
}

/// Looks `board` up in `book`; `canonical` books hold least images, so the board is mapped to
/// its own and the moves found are mapped back.
pub fn probe(book: &Book, canonical: bool, board: &Board) -> Result<OthelloProbe> {
    let (stored, t) = if canonical {
        board.canonical()
    } else {
        (*board, 0)
    };
    let packed = stored.pack().0;
    let entries = book.get(stored.key())?;
    let moves = entries
        .into_iter()
        .find(|e| e.pos.as_deref() == Some(&packed[..]))
        .map(|e| {
            e.moves
                .into_iter()
                .map(|m| {
                    let back = u8::try_from(m.mv)
                        .ok()
                        .filter(|&s| s < 64)
                        .map_or(m.mv, |s| u16::from(untransform_square(s, t)));
                    (back, m)
                })
                .collect()
        });
    Ok(OthelloProbe {
        board: *board,
        stored_key: stored.key(),
        moves,
    })
}

impl OthelloProbe {
    /// The answer in the `dump` shape (for the position asked).
    pub fn json(&self) -> Result<OthelloEntryJson> {
        Ok(OthelloEntryJson {
            key: format!("{:016x}", self.board.key()),
            board: self.board.board_string(),
            moves: match &self.moves {
                Some(m) => moves_json(m.iter().map(|(mv, r)| (r, *mv)))?,
                None => Vec::new(),
            },
        })
    }

    /// Human-readable table: moves by games, with black / draw / white shares.
    pub fn table(&self) -> Result<String> {
        use std::fmt::Write;
        let j = self.json()?;
        let mut s = String::new();
        let _ = writeln!(s, "board     {}", j.board);
        for row in (0..8).rev() {
            let line: String = j.board[row * 8..row * 8 + 8].chars().collect();
            let _ = writeln!(s, "  {}  {line}", row + 1);
        }
        let _ = writeln!(s, "     abcdefgh");
        let _ = writeln!(s, "key       {}", j.key);
        if self.stored_key != self.board.key() {
            let _ = writeln!(s, "stored as {:016x} (canonical image)", self.stored_key);
        }
        let mut moves = j.moves;
        if moves.is_empty() {
            let _ = writeln!(s, "not in book");
            return Ok(s);
        }
        let games = |m: &OthelloMoveJson| m.black + m.draws + m.white + m.unknown;
        moves.sort_by(|a, b| games(b).cmp(&games(a)).then_with(|| a.mv.cmp(&b.mv)));
        let total: u64 = moves.iter().map(games).sum();
        let _ = writeln!(s, "games     {total}");
        let _ = writeln!(
            s,
            "\n{:<6} {:>9} {:>6}  {:>6} {:>6} {:>6}",
            "move", "games", "share", "black", "draw", "white"
        );
        for m in &moves {
            let decided = (m.black + m.draws + m.white).max(1) as f64;
            let pct = |x: u64| format!("{:.1}%", 100.0 * x as f64 / decided);
            let _ = writeln!(
                s,
                "{:<6} {:>9} {:>6}  {:>6} {:>6} {:>6}",
                m.mv,
                games(m),
                format!("{:.1}%", 100.0 * games(m) as f64 / total.max(1) as f64),
                pct(m.black),
                pct(m.draws),
                pct(m.white),
            );
        }
        Ok(s)
    }
}

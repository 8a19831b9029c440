//! Engine evaluations of chess positions (docs/FORMAT.md §13, docs/CONTRACT.md §10): the
//! store's results given their chess meaning — lines as UCI moves, scores from White's point
//! of view — for `probe`, `dump`, `/api/cloud-eval` and the explorer page; the readers of
//! EPD and lichess's evaluation export ([`parse`]); `import-evals` ([`import`]); EPD export
//! ([`export`]).

pub mod cloud;
pub mod export;
pub mod import;
pub mod parse;

use serde::Serialize;
use shakmaty::{Chess, Move, Position};

use crate::chess::{PosState, encode_move, legal_move, move_uci};
use crate::error::{Error, Result};
use crate::store::Book;
use crate::store::eval::{EvalLine, EvalResult, Score};

/// One line of a result as JSON: its moves (UCI, space-separated) and `cp` or `mate`.
#[derive(Clone, Debug, Serialize, PartialEq, Eq)]
pub struct PvJson {
    pub moves: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub cp: Option<i32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mate: Option<i32>,
}

/// One kept result as `probe --json` and `dump` show it.
#[derive(Clone, Debug, Serialize, PartialEq, Eq)]
pub struct EvalJson {
    pub depth: u32,
    pub knodes: u64,
    pub engine: String,
    pub pvs: Vec<PvJson>,
}

/// How castling is written in a line's UCI moves.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Castling {
    /// The king's two-square move (`e1g1`), as the book's moves are (docs/CONTRACT.md §3).
    KingTwoSquares,
    /// The king takes its own rook (`e1h1`), as lichess's cloud evaluations write it
    /// (scalachess's UCI, which lila writes out as it is).
    KingTakesRook,
}

/// The UCI moves of a line played from `pos`, castling as `castling` says. A move that is
/// not legal where it comes (the store was handed one) ends the line there.
pub fn line_uci(pos: &Chess, moves: &[u16], castling: Castling) -> Vec<String> {
    let mut p = pos.clone();
    let mut out = Vec::with_capacity(moves.len());
    for &code in moves {
        let Some(m) = legal_move(&p, code) else {
            break;
        };
        out.push(match (&m, castling) {
            (Move::Castle { king, rook }, Castling::KingTakesRook) => format!("{king}{rook}"),
            _ => move_uci(code),
        });
        p.play_unchecked(m);
    }
    out
}

fn score_json(s: Score) -> (Option<i32>, Option<i32>) {
    match s {
        Score::Cp(c) => (Some(c), None),
        Score::Mate(m) => (None, Some(m)),
    }
}

/// A result as JSON, its lines' moves in UCI from `pos`.
/// Every result of a position as `probe`'s and `dump`'s JSON show them (book notation: castling
/// as the king's two squares).
pub fn evals_json(pos: &Chess, results: &[EvalResult]) -> Vec<EvalJson> {
    results
        .iter()
        .map(|r| eval_json(pos, r, Castling::KingTwoSquares))
        .collect()
}

pub fn eval_json(pos: &Chess, r: &EvalResult, castling: Castling) -> EvalJson {
    EvalJson {
        depth: r.depth,
        knodes: r.knodes,
        engine: r.engine.clone(),
        pvs: r.lines.iter().map(|l| pv_json(pos, l, castling)).collect(),
    }
}

pub(crate) fn pv_json(pos: &Chess, l: &EvalLine, castling: Castling) -> PvJson {
    let (cp, mate) = score_json(l.score);
    PvJson {
        moves: line_uci(pos, &l.moves, castling).join(" "),
        cp,
        mate,
    }
}

/// The evaluations the book holds of exactly `pos`.
pub fn evals_of(book: &Book, pos: &Chess) -> Result<Option<Vec<EvalResult>>> {
    let packed = PosState::from_chess(pos).pack().0;
    Ok(book.evals(&packed)?)
}

/// Parses one UCI move in `pos`, castling written either way (`e1g1` or `e1h1`).
pub fn parse_uci(pos: &Chess, text: &str) -> std::result::Result<Move, String> {
    if let Ok(u) = text.parse::<shakmaty::uci::UciMove>()
        && let Ok(m) = u.to_move(pos)
    {
        return Ok(m);
    }
    pos.legal_moves()
        .into_iter()
        .find(|m| matches!(m, Move::Castle { king, rook } if format!("{king}{rook}") == text))
        .ok_or_else(|| format!("move {text:?} is not a legal UCI move here"))
}

/// The codes of a line of moves played from `pos` by `parse` (UCI or SAN); an error names
/// the first move that does not parse or is not legal. At most `MAX_LINE_MOVES` are kept.
pub fn line_codes(
    pos: &Chess,
    moves: &[&str],
    parse: impl Fn(&Chess, &str) -> std::result::Result<Move, String>,
) -> std::result::Result<Vec<u16>, String> {
    let mut p = pos.clone();
    let mut out = Vec::with_capacity(moves.len());
    for text in moves.iter().take(crate::store::eval::MAX_LINE_MOVES) {
        let m = parse(&p, text)?;
        out.push(encode_move(&m));
        p.play_unchecked(m);
    }
    Ok(out)
}

/// A score from the side to move's point of view turned to White's (and back: the same).
pub fn white_view(pos: &Chess, s: Score) -> Score {
    match pos.turn() {
        shakmaty::Color::White => s,
        shakmaty::Color::Black => s.negate(),
    }
}

/// Checks a result the chess layer is about to store: lines legal from `pos`, and what the
/// coding holds.
pub fn check_result(pos: &Chess, r: &EvalResult) -> std::result::Result<(), String> {
    r.check().map_err(|e| e.to_string())?;
    for l in &r.lines {
        let mut p = pos.clone();
        for (i, &code) in l.moves.iter().enumerate() {
            let m = legal_move(&p, code)
                .ok_or_else(|| format!("move {} of a line is not legal", i + 1))?;
            p.play_unchecked(m);
        }
    }
    Ok(())
}

/// The text form of a score from White's point of view: `+0.31`, `-1.20`, `#3`, `#-2`.
pub fn score_text(s: Score) -> String {
    match s {
        Score::Cp(c) => format!("{:+.2}", f64::from(c) / 100.0),
        Score::Mate(m) => format!("#{m}"),
    }
}

/// `probe`'s text lines for a position's evaluations (nothing when it has none).
pub fn evals_table(pos: &Chess, evals: &[EvalResult]) -> String {
    use std::fmt::Write;
    let mut s = String::new();
    for r in evals {
        let engine = if r.engine.is_empty() { "?" } else { &r.engine };
        let _ = writeln!(
            s,
            "eval      depth {} knodes {} ({engine}), {} line(s)",
            r.depth,
            r.knodes,
            r.lines.len()
        );
        for l in &r.lines {
            let _ = writeln!(
                s,
                "          {:>7}  {}",
                score_text(l.score),
                line_san(pos, &l.moves).join(" ")
            );
        }
    }
    s
}

/// The SAN moves of a line (for the text outputs and EPD's `pv`).
pub fn line_san(pos: &Chess, moves: &[u16]) -> Vec<String> {
    let mut p = pos.clone();
    let mut out = Vec::with_capacity(moves.len());
    for &code in moves {
        let Some(m) = legal_move(&p, code) else {
            break;
        };
        out.push(shakmaty::san::SanPlus::from_move_and_play_unchecked(&mut p, m).to_string());
    }
    out
}

/// The chess position of a stored packed position.
pub(crate) fn chess_of(pos: &[u8]) -> Result<Chess> {
    let s = PosState::unpack(pos)?;
    s.to_chess().map_err(Error::from)
}

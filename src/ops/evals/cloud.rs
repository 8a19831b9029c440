//! The answer of `GET /api/cloud-eval` (docs/CONTRACT.md §10), as lichess gives it: the first
//! kept result with at least min(`multiPv`, legal moves) lines, cut to `multiPv`, else the one
//! with the most lines; moves in lichess's UCI (castling as the king taking its rook).

use serde::Serialize;
use shakmaty::Position;

use super::{Castling, PvJson, evals_of, pv_json};
use crate::error::Result;
use crate::store::Book;

/// Most lines a request may ask for (lichess's cloud evaluations keep at most 5).
pub const MAX_MULTI_PV: usize = 5;

/// lichess's cloud-eval shape.
#[derive(Clone, Debug, Serialize, PartialEq, Eq)]
pub struct CloudEval {
    pub fen: String,
    pub knodes: u64,
    pub depth: u32,
    pub pvs: Vec<PvJson>,
}

/// The cloud evaluation of `pos` (given as `fen`, echoed), `multi_pv` lines (1 to
/// [`MAX_MULTI_PV`]); `None` when the book holds none of it.
pub fn cloud_eval(
    book: &Book,
    fen: &str,
    pos: &shakmaty::Chess,
    multi_pv: usize,
) -> Result<Option<CloudEval>> {
    let Some(evals) = evals_of(book, pos)? else {
        return Ok(None);
    };
    let want = multi_pv.clamp(1, MAX_MULTI_PV);
    let need = want.min(pos.legal_moves().len());
    let chosen = evals
        .iter()
        .find(|r| r.lines.len() >= need)
        .or_else(|| evals.iter().max_by_key(|r| r.lines.len()));
    Ok(chosen.map(|r| CloudEval {
        fen: fen.to_string(),
        knodes: r.knodes,
        depth: r.depth,
        pvs: r
            .lines
            .iter()
            .take(want)
            .map(|l| pv_json(pos, l, Castling::KingTakesRook))
            .collect(),
    }))
}

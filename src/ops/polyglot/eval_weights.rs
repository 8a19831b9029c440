//! `export --format polyglot --weights eval`: an engine book whose weights follow the
//! engine evaluations of the moves' resulting positions (docs/CONTRACT.md §10).
//!
//! The rule: for each move of a position, the resulting position's deepest kept result's
//! first line gives the score from the mover's point of view; its expected score is
//! `p = 1 / (1 + 10^(-cp / 400))` (a mate for the mover is 1, a mate against it 0), and the
//! move's weight is `round(p^k · 10000)` with `k = 4`, at least 1 — so a move a pawn worse
//! than another gets about a third of its weight, a lost move next to none. Moves whose
//! resulting position has no evaluation are left out (reason `no_eval`). The weight replaces
//! the game counts (`--min-games` and `--min-score` do not apply to it; `--uniform`,
//! `--only-white` and `--only-black` do).

use shakmaty::{Chess, Position};

use crate::chess::{PosState, legal_move};
use crate::error::Result;
use crate::store::eval::Score;
use crate::store::{Book, Entry, MoveExtra};

/// The exponent `k` of the rule.
const SHARPNESS: i32 = 4;
/// The weight of a sure win.
const SCALE: f64 = 10_000.0;

/// The weight of a score from the mover's point of view.
pub(crate) fn weight_of(score: Score) -> u16 {
    let p = match score {
        Score::Mate(m) if m > 0 => 1.0,
        Score::Mate(_) => 0.0,
        Score::Cp(c) => 1.0 / (1.0 + 10f64.powf(-f64::from(c) / 400.0)),
    };
    (p.powi(SHARPNESS) * SCALE).round().clamp(1.0, SCALE) as u16
}

/// Replaces the counts of `e`'s moves by their evaluation weights (stored as the moves'
/// extra weight, which the export writes as it is); returns how many moves had no
/// evaluation and were dropped.
pub(crate) fn apply(book: &Book, e: &mut Entry) -> Result<u64> {
    let Some(packed) = &e.pos else {
        let n = e.moves.len() as u64;
        e.moves.clear();
        return Ok(n);
    };
    let pos: Chess = PosState::unpack(packed)?.to_chess()?;
    let before = e.moves.len();
    let mut kept = Vec::with_capacity(before);
    for m in e.moves.drain(..) {
        let Some(mv) = legal_move(&pos, m.mv) else {
            continue;
        };
        let mut after = pos.clone();
        after.play_unchecked(mv);
        let Some(evals) = book.evals(&PosState::from_chess(&after).pack().0)? else {
            continue;
        };
        let Some(line) = evals.first().and_then(|r| r.lines.first()) else {
            continue;
        };
        // White's point of view → the mover's.
        let mover = crate::ops::evals::white_view(&pos, line.score);
        kept.push(crate::store::MoveRec {
            mv: m.mv,
            extra: Some(MoveExtra {
                weight: weight_of(mover),
                learn: 0,
            }),
            ..Default::default()
        });
    }
    e.moves = kept;
    Ok((before - e.moves.len()) as u64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn weights_follow_the_expected_score() {
        assert_eq!(weight_of(Score::Cp(0)), 625);
        assert_eq!(weight_of(Score::Mate(3)), 10_000);
        assert_eq!(weight_of(Score::Mate(-3)), 1);
        assert!(weight_of(Score::Cp(100)) > 2 * weight_of(Score::Cp(0)));
        assert!(weight_of(Score::Cp(-100)) < weight_of(Score::Cp(0)) / 2);
    }
}

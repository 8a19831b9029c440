//! An exact Othello endgame solver: negamax with alpha-beta and principal-variation search
//! from a position to the end of the game, keeping what it proves in a [`SearchTable`] (a
//! persistent [`crate::store::tt::Table`], or memory) at the positions with many empties.
//!
//! Values are disc differentials from the side to move's point of view at the end of the
//! game with perfect play, the empty squares of a game that ends early going to the winner
//! (WTHOR's convention: a final 40–20 with 4 empties scores 44–20, a +24). Positions with
//! more than [`Solver::tt_min_empties`] − 1 empties use the board's incremental key, the table
//! and the table's best move first, then fastest-first ordering (the move that leaves the
//! opponent fewest replies); below that, a plain bitboard search without keys (corners
//! first, then fastest-first while it pays).

use std::collections::HashMap;

use super::board::{Board, flips, moves_of};
use crate::store::error::Result;
use crate::store::tt::{BestMove, Bound, Entry, Table};

/// Where a solver keeps what it proved.
pub trait SearchTable {
    fn probe(&mut self, b: &Board) -> Result<Option<Entry>>;
    fn store(&mut self, b: &Board, e: Entry) -> Result<()>;
}

impl SearchTable for Table {
    #[inline]
    fn probe(&mut self, b: &Board) -> Result<Option<Entry>> {
        Table::probe(self, b)
    }
    #[inline]
    fn store(&mut self, b: &Board, e: Entry) -> Result<()> {
        Table::store(self, b, e).map(|_| ())
    }
}

/// A plain in-memory table: a `HashMap` from the exact board to its entry, with the same
/// replacement rule (the baseline a persistent table is measured against).
#[derive(Default)]
pub struct MemoryTable(pub HashMap<(u64, u64, bool), Entry>);

impl SearchTable for MemoryTable {
    #[inline]
    fn probe(&mut self, b: &Board) -> Result<Option<Entry>> {
        Ok(self.0.get(&(b.black, b.white, b.white_to_move)).cloned())
    }
    #[inline]
    fn store(&mut self, b: &Board, e: Entry) -> Result<()> {
        let slot = self.0.entry((b.black, b.white, b.white_to_move));
        match slot {
            std::collections::hash_map::Entry::Occupied(mut o) => {
                if e.replaces(o.get()) {
                    o.insert(e);
                }
            }
            std::collections::hash_map::Entry::Vacant(v) => {
                v.insert(e);
            }
        }
        Ok(())
    }
}

/// No table at all.
pub struct NoTable;

impl SearchTable for NoTable {
    fn probe(&mut self, _: &Board) -> Result<Option<Entry>> {
        Ok(None)
    }
    fn store(&mut self, _: &Board, _: Entry) -> Result<()> {
        Ok(())
    }
}

/// What a solve found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Solved {
    /// The disc differential for the side to move (empties to the winner).
    pub value: i32,
    /// Black's discs at the end with perfect play (empties to the winner): WTHOR's score.
    pub black_score: i32,
    /// A best move, `None` when the game is over.
    pub best_move: Option<u8>,
}

/// The solver: a table, counters, and where the table starts.
pub struct Solver<T> {
    pub table: T,
    /// Nodes visited since created.
    pub nodes: u64,
    /// Positions with at least this many empties use the table.
    pub tt_min_empties: u32,
    /// The generation entries are stored under.
    pub generation: u32,
}

/// Positions with fewer empties are ordered corners first only (sorting costs more than it
/// saves near the end).
const ORDER_MIN_EMPTIES: u32 = 7;
/// Positions with at least this many empties order their moves by a shallow search.
const SHALLOW_MIN_EMPTIES: u32 = 12;

const FILE_A: u64 = 0x0101_0101_0101_0101;
const FILE_H: u64 = 0x8080_8080_8080_8080;
const RANK_1: u64 = 0xff;
const RANK_8: u64 = 0xff00_0000_0000_0000;
const EDGES: u64 = FILE_A | FILE_H | RANK_1 | RANK_8;

/// The 15 diagonals (a1-h8 direction) and the 15 anti-diagonals as bitboards.
const fn diagonals(anti: bool) -> [u64; 15] {
    let mut out = [0u64; 15];
    let mut sq = 0;
    while sq < 64 {
        let (r, c) = (sq / 8, sq % 8);
        let d = if anti { r + c } else { r + 7 - c };
        out[d] |= 1 << sq;
        sq += 1;
    }
    out
}
const DIAG_9: [u64; 15] = diagonals(false);
const DIAG_7: [u64; 15] = diagonals(true);

/// Squares on lines that are full in each of the 4 directions (rows, columns and the two
/// diagonals) of the filled squares `filled`.
fn full_lines(filled: u64) -> [u64; 4] {
    let mut h = 0;
    let mut v = 0;
    for i in 0..8 {
        let row = 0xffu64 << (8 * i);
        if filled & row == row {
            h |= row;
        }
        let col = FILE_A << i;
        if filled & col == col {
            v |= col;
        }
    }
    let (mut d9, mut d7) = (0, 0);
    for i in 0..15 {
        if filled & DIAG_9[i] == DIAG_9[i] {
            d9 |= DIAG_9[i];
        }
        if filled & DIAG_7[i] == DIAG_7[i] {
            d7 |= DIAG_7[i];
        }
    }
    [h, v, d9, d7]
}

/// A lower bound on the discs of `me` that can never be flipped: discs that, along each of
/// the 4 axes, lie on a full line or touch the board's edge or a stable disc of their own.
fn stable(me: u64, opp: u64) -> u64 {
    let [h, v, d9, d7] = full_lines(me | opp);
    let mut st = me & CORNERS;
    loop {
        let old = st;
        let ok_h = h | FILE_A | FILE_H | (st << 1 & !FILE_A) | (st >> 1 & !FILE_H);
        let ok_v = v | RANK_1 | RANK_8 | st << 8 | st >> 8;
        let ok_9 = d9 | EDGES | (st << 9 & !FILE_A) | (st >> 9 & !FILE_H);
        let ok_7 = d7 | EDGES | (st << 7 & !FILE_H) | (st >> 7 & !FILE_A);
        st |= me & ok_h & ok_v & ok_9 & ok_7;
        if st == old {
            return st;
        }
    }
}

/// The opponent's stable discs bound the side to move's score from above: that bound when
/// it fails low (at or below `alpha`). Computed only when the opponent has discs enough.
#[inline]
fn stability_cutoff(me: u64, opp: u64, alpha: i32) -> Option<i32> {
    if alpha < 64 - 2 * opp.count_ones() as i32 || alpha < 0 {
        return None;
    }
    let upper = 64 - 2 * stable(opp, me).count_ones() as i32;
    (upper <= alpha).then_some(upper)
}

/// A mobility evaluation for move ordering: the side to move's replies against the
/// opponent's, corners held.
fn evaluate(me: u64, opp: u64) -> i32 {
    let mobility = moves_of(me, opp).count_ones() as i32 - moves_of(opp, me).count_ones() as i32;
    let corners = (me & CORNERS).count_ones() as i32 - (opp & CORNERS).count_ones() as i32;
    mobility * 4 + corners * 16
}

/// A depth-limited alpha-beta with [`evaluate`] at its leaves (move ordering only).
fn shallow(me: u64, opp: u64, depth: u32, mut alpha: i32, beta: i32) -> i32 {
    if depth == 0 {
        return evaluate(me, opp);
    }
    let mut moves = moves_of(me, opp);
    if moves == 0 {
        if moves_of(opp, me) == 0 {
            return final_diff(me, opp) * 64;
        }
        return -shallow(opp, me, depth - 1, -beta, -alpha);
    }
    let mut best = i32::MIN + 1;
    while moves != 0 {
        let sq = moves.trailing_zeros() as u8;
        moves &= moves - 1;
        let f = flips(me, opp, sq);
        let v = -shallow(opp & !f, me | f | (1 << sq), depth - 1, -beta, -alpha);
        if v > best {
            best = v;
            if v > alpha {
                alpha = v;
                if alpha >= beta {
                    break;
                }
            }
        }
    }
    best
}

/// The moves of `moves` sorted by `score` (ascending: least first), the table's move `first`
/// ahead of all; `score` is given the square and the discs the move leaves (the opponent's,
/// the mover's). At most 32 moves.
fn sorted_moves(
    me: u64,
    opp: u64,
    mut moves: u64,
    first: Option<u8>,
    out: &mut [(i32, u8); 32],
    score: impl Fn(u8, u64, u64) -> i32,
) -> usize {
    let mut n = 0;
    while moves != 0 {
        let sq = moves.trailing_zeros() as u8;
        moves &= moves - 1;
        let f = flips(me, opp, sq);
        let v = score(sq, opp & !f, me | f | (1 << sq));
        out[n] = (if Some(sq) == first { i32::MIN } else { v }, sq);
        n += 1;
    }
    out[..n].sort_unstable();
    n
}

/// The moves of `moves` best first by a shallow search of each (the table's move first).
fn ordered_by_search(
    me: u64,
    opp: u64,
    moves: u64,
    first: Option<u8>,
    depth: u32,
    out: &mut [(i32, u8); 32],
) -> usize {
    // The opponent's value after the move, least first.
    sorted_moves(me, opp, moves, first, out, |_, o, m| {
        shallow(o, m, depth, -(1 << 20), 1 << 20)
    })
}

/// Corners, then the other squares, X-squares (diagonal to a corner) last.
const CORNERS: u64 = 0x8100_0000_0000_0081;
const X_SQUARES: u64 = 0x0042_0000_0000_4200;
/// The four 4×4 quadrants.
const QUADRANTS: [u64; 4] = [
    0x0000_0000_0f0f_0f0f,
    0x0000_0000_f0f0_f0f0,
    0x0f0f_0f0f_0000_0000,
    0xf0f0_f0f0_0000_0000,
];

fn final_diff(me: u64, opp: u64) -> i32 {
    let (m, o) = (me.count_ones() as i32, opp.count_ones() as i32);
    let empty = 64 - m - o;
    match m.cmp(&o) {
        std::cmp::Ordering::Greater => m - o + empty,
        std::cmp::Ordering::Less => m - o - empty,
        std::cmp::Ordering::Equal => 0,
    }
}

/// The moves of `moves` in the order to try them: fastest-first (fewest replies for the
/// opponent; corners ahead, X-squares behind at equal counts), at most 32 of them.
fn ordered(me: u64, opp: u64, moves: u64, first: Option<u8>, out: &mut [(i32, u8); 32]) -> usize {
    sorted_moves(me, opp, moves, first, out, |sq, o, m| {
        let bit = 1u64 << sq;
        let replies = moves_of(o, m).count_ones() as i32 * 4;
        if bit & CORNERS != 0 {
            replies - 3
        } else if bit & X_SQUARES != 0 {
            replies + 3
        } else {
            replies
        }
    })
}

impl<T: SearchTable> Solver<T> {
    pub fn new(table: T) -> Solver<T> {
        Solver {
            table,
            nodes: 0,
            tt_min_empties: 12,
            generation: 0,
        }
    }

    /// Solves `b` exactly.
    pub fn solve(&mut self, b: &Board) -> Result<Solved> {
        let value = self.search(b, -64, 64)?;
        let black = if b.white_to_move { -value } else { value };
        let best_move = match self.table.probe(b)? {
            Some(Entry {
                best_move: BestMove::Code(c),
                ..
            }) => Some(c as u8),
            _ => {
                // A position below the table's depth: its best move by a search of each.
                self.best_by_search(b)?
            }
        };
        Ok(Solved {
            value,
            black_score: (black + 64) / 2,
            best_move,
        })
    }

    fn best_by_search(&mut self, b: &Board) -> Result<Option<u8>> {
        let mut moves = b.legal();
        let (mut best, mut best_sq) = (i32::MIN, None);
        while moves != 0 {
            let sq = moves.trailing_zeros() as u8;
            moves &= moves - 1;
            let mut c = *b;
            c.play(sq)
                .map_err(|e| crate::store::error::Error::Internal(e.to_string()))?;
            let v = self.child_value(b, &c, -64, 64)?;
            if v > best {
                best = v;
                best_sq = Some(sq);
            }
        }
        Ok(best_sq)
    }

    fn empties(b: &Board) -> u32 {
        64 - (b.black | b.white).count_ones()
    }

    /// The value for `parent`'s side to move of the child `c` searched in (alpha, beta).
    #[inline]
    fn child_value(&mut self, parent: &Board, c: &Board, alpha: i32, beta: i32) -> Result<i32> {
        if c.white_to_move == parent.white_to_move {
            // The opponent had to pass: the same side moves again.
            self.search(c, alpha, beta)
        } else {
            Ok(-self.search(c, -beta, -alpha)?)
        }
    }

    /// The value of `b` for its side to move, fail-soft within (alpha, beta).
    pub fn search(&mut self, b: &Board, mut alpha: i32, mut beta: i32) -> Result<i32> {
        let empties = Self::empties(b);
        if empties < self.tt_min_empties {
            let (me, opp) = if b.white_to_move {
                (b.white, b.black)
            } else {
                (b.black, b.white)
            };
            return Ok(self.plain(me, opp, empties, alpha, beta));
        }
        self.nodes += 1;
        let (me, opp) = if b.white_to_move {
            (b.white, b.black)
        } else {
            (b.black, b.white)
        };
        let moves = moves_of(me, opp);
        if moves == 0 {
            // A board never leaves a side without moves unless the game is over.
            return Ok(final_diff(me, opp));
        }
        let mut first = None;
        if let Some(e) = self.table.probe(b)? {
            match e.bound {
                Bound::Exact => return Ok(e.value),
                Bound::Lower => alpha = alpha.max(e.value),
                Bound::Upper => beta = beta.min(e.value),
            }
            if alpha >= beta {
                return Ok(e.value);
            }
            if let BestMove::Code(c) = e.best_move {
                first = Some(c as u8);
            }
        }
        if let Some(v) = stability_cutoff(me, opp, alpha) {
            return Ok(v);
        }
        if empties > self.tt_min_empties
            && let Some(v) = self.transposition_cutoff(b, moves, beta)?
        {
            return Ok(v);
        }
        let (lo, hi) = (alpha, beta);
        let mut list = [(0i32, 0u8); 32];
        let n = if empties >= SHALLOW_MIN_EMPTIES {
            let depth = match empties {
                20.. => 3,
                15.. => 2,
                _ => 1,
            };
            ordered_by_search(me, opp, moves, first, depth, &mut list)
        } else {
            ordered(me, opp, moves, first, &mut list)
        };
        let (mut best, mut best_sq) = (-65, list[0].1);
        for (i, &(_, sq)) in list[..n].iter().enumerate() {
            let mut c = *b;
            c.play(sq)
                .map_err(|e| crate::store::error::Error::Internal(e.to_string()))?;
            let v = if i == 0 {
                self.child_value(b, &c, alpha, beta)?
            } else {
                // Principal-variation search: prove the move no better with a null window,
                // search it in full only when it is.
                let v = self.child_value(b, &c, alpha, alpha + 1)?;
                if v > alpha && v < beta {
                    self.child_value(b, &c, v, beta)?
                } else {
                    v
                }
            };
            if v > best {
                best = v;
                best_sq = sq;
                if v > alpha {
                    alpha = v;
                    if alpha >= beta {
                        break;
                    }
                }
            }
        }
        let bound = if best <= lo {
            Bound::Upper
        } else if best >= hi {
            Bound::Lower
        } else {
            Bound::Exact
        };
        self.table.store(
            b,
            Entry {
                depth: empties as u16,
                value: best,
                bound,
                best_move: BestMove::Code(u16::from(best_sq)),
                generation: self.generation,
            },
        )?;
        Ok(best)
    }

    /// Enhanced transposition cutoff: a move whose resulting position the table already
    /// proves at least `beta` for the side to move cuts off without a search.
    fn transposition_cutoff(
        &mut self,
        b: &Board,
        mut moves: u64,
        beta: i32,
    ) -> Result<Option<i32>> {
        while moves != 0 {
            let sq = moves.trailing_zeros() as u8;
            moves &= moves - 1;
            let mut c = *b;
            c.play(sq)
                .map_err(|e| crate::store::error::Error::Internal(e.to_string()))?;
            let Some(e) = self.table.probe(&c)? else {
                continue;
            };
            let same_side = c.white_to_move == b.white_to_move;
            // The child's bound turned into one on this position's value through the move.
            let at_least = match (e.bound, same_side) {
                (Bound::Exact, false) | (Bound::Upper, false) => -e.value,
                (Bound::Exact, true) | (Bound::Lower, true) => e.value,
                _ => continue,
            };
            if at_least >= beta {
                return Ok(Some(at_least));
            }
        }
        Ok(None)
    }

    /// The plain bitboard search near the end: no keys, no table.
    fn plain(&mut self, me: u64, opp: u64, empties: u32, mut alpha: i32, beta: i32) -> i32 {
        if empties == 1 {
            return self.last(me, opp);
        }
        self.nodes += 1;
        let moves = moves_of(me, opp);
        if moves == 0 {
            if moves_of(opp, me) == 0 {
                return final_diff(me, opp);
            }
            return -self.plain(opp, me, empties, -beta, -alpha);
        }
        if let Some(v) = stability_cutoff(me, opp, alpha) {
            return v;
        }
        let mut best = -65;
        if empties >= ORDER_MIN_EMPTIES {
            let mut list = [(0i32, 0u8); 32];
            let n = ordered(me, opp, moves, None, &mut list);
            for (i, &(_, sq)) in list[..n].iter().enumerate() {
                let bit = 1u64 << sq;
                let f = flips(me, opp, sq);
                let (nme, nopp) = (opp & !f, me | f | bit);
                let v = if i == 0 {
                    -self.plain(nme, nopp, empties - 1, -beta, -alpha)
                } else {
                    let v = -self.plain(nme, nopp, empties - 1, -alpha - 1, -alpha);
                    if v > alpha && v < beta {
                        -self.plain(nme, nopp, empties - 1, -beta, -v)
                    } else {
                        v
                    }
                };
                if v > best {
                    best = v;
                    if v > alpha {
                        alpha = v;
                        if alpha >= beta {
                            return best;
                        }
                    }
                }
            }
            return best;
        }
        // Parity: moves in the quadrants with an odd number of empties first (the side that
        // plays last in a region gains its discs), corners first and X-squares last in each.
        let empty = !(me | opp);
        let mut odd = 0;
        for q in QUADRANTS {
            if (empty & q).count_ones() & 1 == 1 {
                odd |= q;
            }
        }
        let plain = !CORNERS & !X_SQUARES;
        for class in [
            moves & odd & CORNERS,
            moves & odd & plain,
            moves & odd & X_SQUARES,
            moves & !odd & CORNERS,
            moves & !odd & plain,
            moves & !odd & X_SQUARES,
        ] {
            let mut m = class;
            while m != 0 {
                let sq = m.trailing_zeros() as u8;
                m &= m - 1;
                let bit = 1u64 << sq;
                let f = flips(me, opp, sq);
                let v = -self.plain(opp & !f, me | f | bit, empties - 1, -beta, -alpha);
                if v > best {
                    best = v;
                    if v > alpha {
                        alpha = v;
                        if alpha >= beta {
                            return best;
                        }
                    }
                }
            }
        }
        best
    }
}

impl<T> Solver<T> {
    /// One empty square left: played by the side to move if it can, else by the opponent,
    /// else by no one (one node, no recursion).
    #[inline]
    fn last(&mut self, me: u64, opp: u64) -> i32 {
        self.nodes += 1;
        let sq = (!(me | opp)).trailing_zeros() as u8;
        let bit = 1u64 << sq;
        let f = flips(me, opp, sq);
        if f != 0 {
            return final_diff(me | f | bit, opp & !f);
        }
        let g = flips(opp, me, sq);
        if g != 0 {
            return final_diff(me & !g, opp | g | bit);
        }
        final_diff(me, opp)
    }
}

/// The exact value of `b` by plain minimax over every line (no pruning, no table): the
/// oracle the solver is tested against at few empties.
pub fn minimax(b: &Board) -> i32 {
    fn go(me: u64, opp: u64, passed: bool) -> i32 {
        let mut moves = moves_of(me, opp);
        if moves == 0 {
            if passed {
                return final_diff(me, opp);
            }
            return -go(opp, me, true);
        }
        let mut best = i32::MIN;
        while moves != 0 {
            let sq = moves.trailing_zeros() as u8;
            moves &= moves - 1;
            let f = flips(me, opp, sq);
            best = best.max(-go(opp & !f, me | f | (1 << sq), false));
        }
        best
    }
    let (me, opp) = if b.white_to_move {
        (b.white, b.black)
    } else {
        (b.black, b.white)
    };
    go(me, opp, false)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A position with `empties` empty squares reached by random legal moves (seeded).
    pub(crate) fn random_position(seed: u64, empties: u32) -> Option<Board> {
        let mut b = Board::start();
        let mut x = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
        while 64 - (b.black | b.white).count_ones() > empties {
            let moves = b.legal();
            if moves == 0 {
                return None;
            }
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let k = (x % u64::from(moves.count_ones())) as u32;
            let mut m = moves;
            for _ in 0..k {
                m &= m - 1;
            }
            b.play(m.trailing_zeros() as u8).ok()?;
        }
        Some(b)
    }

    #[test]
    fn the_solver_agrees_with_plain_minimax() {
        let mut checked = 0;
        for seed in 0..200 {
            let Some(b) = random_position(seed, 9) else {
                continue;
            };
            let exact = minimax(&b);
            for tt_min in [4, 7, 64] {
                let mut s = Solver::new(MemoryTable::default());
                s.tt_min_empties = tt_min;
                assert_eq!(
                    s.solve(&b).unwrap().value,
                    exact,
                    "seed {seed}, table from {tt_min}"
                );
            }
            let mut s = Solver::new(NoTable);
            s.tt_min_empties = 5;
            assert_eq!(
                s.search(&b, -64, 64).unwrap(),
                exact,
                "seed {seed}, no table"
            );
            checked += 1;
        }
        assert!(checked > 150, "{checked} positions");
    }

    #[test]
    fn windows_give_bounds_that_hold() {
        // Fail-soft: a search in (a, b) returns v with v <= a => true <= v, v >= b => true >= v.
        for seed in 0..60 {
            let Some(b) = random_position(seed, 8) else {
                continue;
            };
            let exact = minimax(&b);
            for (lo, hi) in [
                (-64, -10),
                (-5, 5),
                (10, 64),
                (exact, exact + 1),
                (exact - 1, exact),
            ] {
                let mut s = Solver::new(MemoryTable::default());
                s.tt_min_empties = 4;
                let v = s.search(&b, lo, hi).unwrap();
                if v <= lo {
                    assert!(exact <= v, "seed {seed} ({lo},{hi}): {v} vs {exact}");
                } else if v >= hi {
                    assert!(exact >= v, "seed {seed} ({lo},{hi}): {v} vs {exact}");
                } else {
                    assert_eq!(v, exact, "seed {seed} ({lo},{hi})");
                }
            }
        }
    }

    #[test]
    fn empties_go_to_the_winner() {
        // Black 40, white 20, 4 empty: black +24 (44-20); reversed: -24; 30-30 with 4: 0.
        let black: u64 = (1u64 << 40) - 1;
        let white: u64 = ((1u64 << 20) - 1) << 40;
        assert_eq!(final_diff(black, white), 24);
        assert_eq!(final_diff(white, black), -24);
        let b30: u64 = (1u64 << 30) - 1;
        let w30: u64 = ((1u64 << 30) - 1) << 30;
        assert_eq!(final_diff(b30, w30), 0);
    }
}

#[cfg(test)]
mod stability_tests {
    use super::*;
    use crate::othello::endgame::tests::random_position;

    #[test]
    fn stable_discs_are_never_flipped() {
        // Along every line of play from a position, a disc called stable keeps its colour.
        fn walk(me: u64, opp: u64, depth: u32, st_me: u64, st_opp: u64) {
            assert_eq!(
                st_me & !me,
                0,
                "a stable disc of the side to move was flipped"
            );
            assert_eq!(
                st_opp & !opp,
                0,
                "a stable disc of the opponent was flipped"
            );
            if depth == 0 {
                return;
            }
            let mut moves = moves_of(me, opp);
            if moves == 0 {
                if moves_of(opp, me) != 0 {
                    walk(opp, me, depth - 1, st_opp, st_me);
                }
                return;
            }
            while moves != 0 {
                let sq = moves.trailing_zeros() as u8;
                moves &= moves - 1;
                let f = flips(me, opp, sq);
                walk(opp & !f, me | f | (1 << sq), depth - 1, st_opp, st_me);
            }
        }
        let mut with_stable = 0;
        for seed in 0..300 {
            let Some(b) = random_position(seed, 10) else {
                continue;
            };
            let (me, opp) = (b.black, b.white);
            let (sm, so) = (stable(me, opp), stable(opp, me));
            with_stable += u32::from(sm | so != 0);
            walk(me, opp, 4, sm, so);
        }
        assert!(
            with_stable > 50,
            "{with_stable} positions with stable discs"
        );
    }
}

//! The static move score of rank order version 1 (FORMAT §15.2; `mainline.rs` codes with it):
//! what a position's moves need computed once from its bitboards ([`Context`]), then each
//! legal move's score by a few lookups ([`move_score`]), and the rank of one move counted
//! without sorting ([`rank_of`]). The arithmetic is the order's definition: not one score may
//! change (the tests hold it to the first implementation, `mainline/reference.rs`).

use shakmaty::{Bitboard, Board, Chess, Color, Position, Role, Square, attacks};

use super::legal;

/// The piece values the score uses (pawn 100).
#[inline]
fn value(role: Role) -> i32 {
    match role {
        Role::Pawn => 100,
        Role::Knight => 300,
        Role::Bishop => 310,
        Role::Rook => 500,
        Role::Queen => 900,
        Role::King => 0,
    }
}

/// Centrality of every square (0 on the rim, 3 in the four centre squares).
const CENTRALITY: [i32; 64] = {
    let mut t = [0; 64];
    let mut i = 0;
    while i < 64 {
        let (f, r) = ((i % 8) as i32, (i / 8) as i32);
        let df = if f < 4 { f } else { 7 - f };
        let dr = if r < 4 { r } else { 7 - r };
        t[i] = if df < dr { df } else { dr };
        i += 1;
    }
    t
};

#[inline]
fn centrality(sq: Square) -> i32 {
    CENTRALITY[usize::from(sq)]
}

/// How far a square is up the board from `color`'s side (0 on its first rank).
#[inline]
fn advance(sq: Square, color: Color) -> i32 {
    let r = u32::from(sq.rank()) as i32;
    if color == Color::White { r } else { 7 - r }
}

const NOT_FILE_A: u64 = !0x0101_0101_0101_0101;
const NOT_FILE_H: u64 = !0x8080_8080_8080_8080;

/// The squares the pawns `p` of `color` attack.
#[inline]
fn pawn_attacks(p: Bitboard, color: Color) -> Bitboard {
    let p = p.0;
    Bitboard(match color {
        Color::White => ((p & NOT_FILE_A) << 7) | ((p & NOT_FILE_H) << 9),
        Color::Black => ((p & NOT_FILE_A) >> 9) | ((p & NOT_FILE_H) >> 7),
    })
}

/// The squares the pieces of `color` attack (through `occupied`), and those its pawns attack.
#[inline]
fn side_attacks(board: &Board, color: Color, occupied: Bitboard) -> (Bitboard, Bitboard) {
    let mine = board.by_color(color);
    let pawns = pawn_attacks(board.pawns() & mine, color);
    let mut all = pawns;
    for sq in board.knights() & mine {
        all |= attacks::knight_attacks(sq);
    }
    for sq in board.bishops_and_queens() & mine {
        all |= attacks::bishop_attacks(sq, occupied);
    }
    for sq in board.rooks_and_queens() & mine {
        all |= attacks::rook_attacks(sq, occupied);
    }
    for sq in board.kings() & mine {
        all |= attacks::king_attacks(sq);
    }
    (all, pawns)
}

/// What the score of every move of a position needs, computed once per position.
pub(crate) struct Context<'a> {
    board: &'a Board,
    us: Color,
    /// Squares the side not to move attacks (any piece; through the current occupancy).
    enemy_attacks: Bitboard,
    /// Squares its pawns attack.
    enemy_pawn_attacks: Bitboard,
    /// Squares the side to move attacks.
    our_attacks: Bitboard,
    /// The side not to move's pieces.
    them: Bitboard,
    /// The square the last move went to, if known (recaptures there come first).
    last_to: Option<Square>,
    /// Non-pawn material of both sides at most 2,600 (pawn 100): kings step out.
    endgame: bool,
    /// Per role (by `Role as usize`), the squares from which a piece of it would attack the
    /// enemy king (direct checks, through the current occupancy).
    checks: [Bitboard; 7],
}

impl<'a> Context<'a> {
    pub(crate) fn of(pos: &'a Chess, last_to: Option<Square>) -> Context<'a> {
        let board = pos.board();
        let occupied = board.occupied();
        let us = pos.turn();
        let (our_attacks, _) = side_attacks(board, us, occupied);
        let (enemy_attacks, enemy_pawn_attacks) = side_attacks(board, !us, occupied);
        let count = |b: Bitboard| b.count() as i32;
        let material = 300 * count(board.knights())
            + 310 * count(board.bishops())
            + 500 * count(board.rooks())
            + 900 * count(board.queens());
        let mut checks = [Bitboard(0); 7];
        if let Some(k) = board.king_of(!us) {
            // A piece of ours attacks the king from the squares an enemy piece of the same
            // role on the king's square attacks (for pawns, the mirrored attack).
            let bishop = attacks::bishop_attacks(k, occupied);
            let rook = attacks::rook_attacks(k, occupied);
            checks[Role::Pawn as usize] = attacks::pawn_attacks(!us, k);
            checks[Role::Knight as usize] = attacks::knight_attacks(k);
            checks[Role::Bishop as usize] = bishop;
            checks[Role::Rook as usize] = rook;
            checks[Role::Queen as usize] = bishop | rook;
            checks[Role::King as usize] = attacks::king_attacks(k);
        }
        Context {
            board,
            us,
            enemy_attacks,
            enemy_pawn_attacks,
            our_attacks,
            them: board.by_color(!us),
            last_to,
            endgame: material <= 2600,
            checks,
        }
    }
}

/// The static score of a legal move code moving a piece of `role` (higher: ranked first).
#[inline]
pub(crate) fn move_score(code: u16, role: Role, cx: &Context<'_>) -> i32 {
    let from = Square::new(u32::from(code & 63));
    let to = Square::new(u32::from((code >> 6) & 63));
    let promotion = code >> 12;
    let us = cx.us;
    let mine = value(role);
    let attacked = cx.enemy_attacks.contains(to);
    let defended = cx.our_attacks.contains(to);
    let mut s = 0;
    // Captures: a free piece first, then by what the exchange wins; recaptures first of all.
    let victim = if cx.them.contains(to) {
        cx.board.role_at(to).map(value)
    } else if role == Role::Pawn && from.file() != to.file() && !cx.board.occupied().contains(to) {
        Some(100)
    } else {
        None
    };
    if let Some(v) = victim {
        let gain = if attacked { v - mine } else { v };
        s += 1000 + 2 * gain.max(-300);
        if cx.last_to == Some(to) {
            s += 1500;
        }
    } else if attacked && role != Role::Pawn && role != Role::King {
        // A piece stepping where it can be taken for free, or by a cheaper piece.
        let loss = if cx.enemy_pawn_attacks.contains(to) || !defended {
            mine
        } else {
            mine / 3
        };
        s -= loss;
    } else if attacked && role == Role::Pawn && !defended {
        s -= 120;
    }
    // A piece under attack moving away.
    if role != Role::Pawn
        && role != Role::King
        && cx.enemy_attacks.contains(from)
        && (cx.enemy_pawn_attacks.contains(from) || !cx.our_attacks.contains(from))
        && !attacked
    {
        s += mine / 2;
    }
    match promotion {
        5 => s += 2000,
        p if p != 0 => s -= 400,
        _ => {}
    }
    let endgame = cx.endgame;
    let dc = centrality(to) - centrality(from);
    match role {
        Role::King => {
            let df = (u32::from(from.file()) as i32 - u32::from(to.file()) as i32).abs();
            if df == 2 {
                s += 300; // castling
            } else if endgame {
                s += 20 * dc;
            } else {
                s -= 200;
            }
        }
        Role::Pawn => {
            s += 25 * dc + if endgame { 25 } else { 5 } * advance(to, us);
            if (u32::from(from.rank()) as i32 - u32::from(to.rank()) as i32).abs() == 2 {
                s += 30 * centrality(to);
            }
            // Rim pawns rarely move early.
            if !endgame && (to.file() == shakmaty::File::A || to.file() == shakmaty::File::H) {
                s -= 30;
            }
        }
        Role::Knight | Role::Bishop => {
            s += 40 * dc;
            // Development off the back rank; back to it rarely.
            if advance(from, us) == 0 && centrality(to) > 0 {
                s += 90;
            }
            if advance(to, us) == 0 {
                s -= 60;
            }
        }
        Role::Rook => s += 10 * dc + if endgame { 20 } else { 0 },
        Role::Queen => s += 10 * dc - if endgame { 0 } else { 40 },
    }
    // Checks (direct only, through the occupancy before the move).
    let checker = if promotion == 5 { Role::Queen } else { role };
    if cx.checks[checker as usize].contains(to) {
        s += 150;
    }
    s
}

/// A rank-order sort key of a scored move: ascending keys are descending scores, then
/// ascending codes.
#[inline]
pub(crate) fn sort_key(score: i32, code: u16) -> u64 {
    // Flipping the sign bit maps i32 order onto u32 order; inverting it makes it descending.
    let desc = !((score as u32) ^ 0x8000_0000);
    (u64::from(desc) << 16) | u64::from(code)
}

/// The rank of the legal move `code` in `pos` (its index in rank order: by score descending,
/// then code ascending), counted without sorting; `None` if it is not legal there.
pub(crate) fn rank_of(pos: &Chess, code: u16, last_to: Option<Square>) -> Option<usize> {
    let from = Square::new(u32::from(code & 63));
    let role = pos.board().role_at(from)?;
    let cx = Context::of(pos, last_to);
    let played = sort_key(move_score(code, role, &cx), code);
    let (mut rank, mut found) = (0, false);
    legal::for_each_legal_move_to(pos, Bitboard::FULL, |c, r| {
        if c == code {
            found = true;
        } else {
            rank += usize::from(sort_key(move_score(c, r, &cx), c) < played);
        }
    });
    found.then_some(rank)
}

/// The sort keys ([`sort_key`]) of the legal moves of `pos` into `keys` (cleared first): the
/// move codes are their low 16 bits.
pub(crate) fn sort_keys(pos: &Chess, last_to: Option<Square>, keys: &mut Vec<u64>) {
    keys.clear();
    let cx = Context::of(pos, last_to);
    legal::for_each_legal_move_to(pos, Bitboard::FULL, |c, r| {
        keys.push(sort_key(move_score(c, r, &cx), c));
    });
}

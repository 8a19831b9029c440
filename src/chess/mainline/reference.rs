//! The move-rank coding of rank order version 1 as it was first written (a sort of every
//! legal move by a score computed from a mailbox), kept for the tests only: the faster coding
//! in `mainline.rs` and `mainline_score.rs` must give exactly its ranks and moves.

use shakmaty::{Bitboard, Chess, Color, Move, Piece, Position, Role, Square, attacks};

use super::MainlineError;
use crate::chess::legal;
use crate::chess::position::{encode_move, legal_move};

/// The piece values the score uses (pawn 100).
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

/// Centrality of a square (0 on the rim, 3 in the four centre squares).
fn centrality(sq: Square) -> i32 {
    let f = u32::from(sq.file()) as i32;
    let r = u32::from(sq.rank()) as i32;
    let df = if f < 4 { f } else { 7 - f };
    let dr = if r < 4 { r } else { 7 - r };
    df.min(dr)
}

/// How far a square is up the board from `color`'s side (0 on its first rank).
fn advance(sq: Square, color: Color) -> i32 {
    let r = u32::from(sq.rank()) as i32;
    if color == Color::White { r } else { 7 - r }
}

/// What the score of every move of a position needs, computed once per position.
struct Context {
    /// Squares the side not to move attacks (any piece; through the current occupancy).
    enemy_attacks: Bitboard,
    /// Squares its pawns attack.
    enemy_pawn_attacks: Bitboard,
    /// Squares the side to move attacks.
    our_attacks: Bitboard,
    /// The square the last move went to, if known (recaptures there come first).
    last_to: Option<Square>,
    /// Non-pawn material of both sides (pawn 100): kings step out in endgames.
    material: i32,
    /// Per role (by `Role as usize`), the squares from which a piece of it would attack the
    /// enemy king (direct checks, through the current occupancy).
    checks: [Bitboard; 7],
    /// The board as a mailbox.
    squares: [Option<Piece>; 64],
}

impl Context {
    fn of(pos: &Chess, last_to: Option<Square>) -> Context {
        let board = pos.board();
        let occupied = board.occupied();
        let us = pos.turn();
        let mut squares = [None; 64];
        let (mut material, mut ours, mut theirs) = (0, Bitboard(0), Bitboard(0));
        for (sq, p) in board.iter() {
            squares[usize::from(sq)] = Some(p);
            if p.role != Role::Pawn {
                material += value(p.role);
            }
            let a = attacks::attacks(sq, p, occupied);
            if p.color == us {
                ours |= a;
            } else {
                theirs |= a;
            }
        }
        let mut enemy_pawn_attacks = Bitboard(0);
        for sq in board.by_piece(Piece {
            color: !us,
            role: Role::Pawn,
        }) {
            enemy_pawn_attacks |= attacks::pawn_attacks(!us, sq);
        }
        let mut checks = [Bitboard(0); 7];
        if let Some(k) = board.king_of(!us) {
            for role in Role::ALL {
                // A piece of ours attacks the king from the squares an enemy piece of the same
                // role on the king's square attacks (for pawns, the mirrored attack).
                checks[role as usize] = attacks::attacks(k, Piece { color: !us, role }, occupied);
            }
        }
        Context {
            checks,
            squares,
            enemy_attacks: theirs,
            enemy_pawn_attacks,
            our_attacks: ours,
            last_to,
            material,
        }
    }
}

/// The static score of a legal move code in `pos` (higher: ranked first).
fn move_score(pos: &Chess, code: u16, cx: &Context) -> i32 {
    let from = Square::new(u32::from(code & 63));
    let to = Square::new(u32::from((code >> 6) & 63));
    let promotion = code >> 12;
    let us = pos.turn();
    let Some(piece) = cx.squares[usize::from(from)] else {
        return i32::MIN;
    };
    let role = piece.role;
    let mine = value(role);
    let attacked = cx.enemy_attacks.contains(to);
    let defended = cx.our_attacks.contains(to);
    let mut s = 0;
    // Captures: a free piece first, then by what the exchange wins; recaptures first of all.
    let victim = match cx.squares[usize::from(to)] {
        Some(v) if v.color != us => Some(value(v.role)),
        None if role == Role::Pawn && from.file() != to.file() => Some(100),
        _ => None,
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
    let endgame = cx.material <= 2600;
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

/// The legal moves of `pos` as move codes in rank order: by [`move_score`], descending, then
/// by code, ascending. `last_to` is where the previous move went (`None` at a game's start).
pub fn ranked_moves(pos: &Chess, last_to: Option<Square>) -> Vec<u16> {
    let cx = Context::of(pos, last_to);
    let mut scored: Vec<(i32, u16)> = Vec::with_capacity(64);
    legal::for_each_legal_code(pos, |c| scored.push((move_score(pos, c, &cx), c)));
    scored.sort_unstable_by(|a, b| b.0.cmp(&a.0).then(a.1.cmp(&b.1)));
    scored.into_iter().map(|(_, c)| c).collect()
}

/// The rank of the legal move `code` in `pos` (as [`ranked_moves`] orders them), without
/// sorting; `None` if it is not legal there.
fn rank_of(pos: &Chess, code: u16, last_to: Option<Square>) -> Option<usize> {
    let cx = Context::of(pos, last_to);
    let played = move_score(pos, code, &cx);
    let (mut rank, mut found) = (0, false);
    legal::for_each_legal_code(pos, |c| {
        if c == code {
            found = true;
        } else {
            let sc = move_score(pos, c, &cx);
            if sc > played || (sc == played && c < code) {
                rank += 1;
            }
        }
    });
    found.then_some(rank)
}

/// Where a move code goes.
fn to_square(code: u16) -> Square {
    Square::new(u32::from((code >> 6) & 63))
}

/// Codes a mainline played from `start`: one rank byte per move.
pub fn encode_mainline(start: &Chess, moves: &[Move]) -> Result<Vec<u8>, MainlineError> {
    let mut pos = start.clone();
    let mut out = Vec::with_capacity(moves.len());
    let mut last_to = None;
    for (ply, m) in moves.iter().enumerate() {
        let code = encode_move(m);
        let rank = rank_of(&pos, code, last_to).ok_or(MainlineError::Illegal { ply })?;
        // At most 218 legal moves: a rank fits a byte.
        out.push(rank as u8);
        pos = pos.play(*m).map_err(|_| MainlineError::Illegal { ply })?;
        last_to = Some(to_square(code));
    }
    Ok(out)
}

/// Decodes a mainline coded by [`encode_mainline`] from `start`: the moves, in order.
pub fn decode_mainline(start: &Chess, ranks: &[u8]) -> Result<Vec<Move>, MainlineError> {
    let mut pos = start.clone();
    let mut out = Vec::with_capacity(ranks.len());
    let mut last_to = None;
    for (ply, &rank) in ranks.iter().enumerate() {
        let ranked = ranked_moves(&pos, last_to);
        let code = *ranked
            .get(usize::from(rank))
            .ok_or(MainlineError::RankOutOfRange {
                ply,
                rank,
                legal: ranked.len(),
            })?;
        let m = legal_move(&pos, code).ok_or(MainlineError::Illegal { ply })?;
        out.push(m);
        pos = pos.play(m).map_err(|_| MainlineError::Illegal { ply })?;
        last_to = Some(to_square(code));
    }
    Ok(out)
}

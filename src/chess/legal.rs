//! The legal moves of a position as move codes, straight from bitboards: the same set as
//! shakmaty's `legal_moves` (its generator, mirrored rule by rule), without building `Move`
//! values. The book writer ranks a position's moves among these codes for every entry it
//! writes, so this is its hot path; `tests` check it against shakmaty on random games.

use shakmaty::{Bitboard, CastlingSide, Chess, Color, Piece, Position, Role, Square, attacks};

#[inline]
fn code(from: Square, to: Square, promotion: u16) -> u16 {
    u16::from(from) | (u16::from(to) << 6) | (promotion << 12)
}

/// Promotion roles as move-code values (`Role as u16`): queen, rook, bishop, knight.
const PROMOTIONS: [u16; 4] = [5, 4, 3, 2];

/// Our pieces standing between our king and an enemy slider aimed at it (pinned, or about to
/// give a discovered check if they are the enemy's).
fn slider_blockers(pos: &Chess, king: Square) -> Bitboard {
    let board = pos.board();
    let snipers = (attacks::rook_attacks(king, Bitboard(0)) & board.rooks_and_queens())
        | (attacks::bishop_attacks(king, Bitboard(0)) & board.bishops_and_queens());
    let mut blockers = Bitboard(0);
    for sniper in snipers & pos.them() {
        let b = attacks::between(king, sniper) & board.occupied();
        if !b.more_than_one() {
            blockers |= b;
        }
    }
    blockers
}

/// Calls `f` with the code of every legal move of `pos` (no particular order).
pub fn for_each_legal_code(pos: &Chess, mut f: impl FnMut(u16)) {
    let board = pos.board();
    let turn = pos.turn();
    let us = pos.us();
    let occupied = board.occupied();
    let Some(king) = board.king_of(turn) else {
        return;
    };
    let blockers = slider_blockers(pos, king);
    // A normal move of a pinned piece must stay on the line through it and the king.
    let unpinned =
        |from: Square, to: Square| !blockers.contains(from) || attacks::aligned(from, to, king);

    if let Some(to) = pos.maybe_ep_square() {
        for from in board.pawns() & us & attacks::pawn_attacks(!turn, to) {
            let capture = Square::from_coords(to.file(), from.rank());
            let after =
                (occupied ^ Bitboard::from(from) ^ Bitboard::from(capture)) | Bitboard::from(to);
            if (board.attacks_to(king, !turn, after) & !Bitboard::from(capture)).is_empty() {
                f(code(from, to, 0));
            }
        }
    }

    let checkers = pos.checkers();
    let (king_target, target) = if checkers.is_empty() {
        (!us, Some(!us))
    } else {
        // The king may not stay on a checking slider's line, even on the far side.
        let mut attacked = Bitboard(0);
        for checker in checkers & board.sliders() {
            attacked |= attacks::ray(checker, king) ^ Bitboard::from(checker);
        }
        let block = checkers
            .single_square()
            .map(|c| attacks::between(king, c) | Bitboard::from(c));
        (!us & !attacked, block)
    };

    if let Some(target) = target {
        // Pawns.
        let forward: i32 = if turn == Color::White { 8 } else { -8 };
        let double_from = if turn == Color::White {
            Bitboard::from_rank(shakmaty::Rank::Second)
        } else {
            Bitboard::from_rank(shakmaty::Rank::Seventh)
        };
        for from in board.pawns() & us {
            let mut dests = attacks::pawn_attacks(turn, from) & pos.them();
            if let Some(one) = from.offset(forward)
                && !occupied.contains(one)
            {
                dests |= Bitboard::from(one);
                if double_from.contains(from)
                    && let Some(two) = one.offset(forward)
                    && !occupied.contains(two)
                {
                    dests |= Bitboard::from(two);
                }
            }
            for to in dests & target {
                if !unpinned(from, to) {
                    continue;
                }
                if Bitboard::BACKRANKS.contains(to) {
                    for p in PROMOTIONS {
                        f(code(from, to, p));
                    }
                } else {
                    f(code(from, to, 0));
                }
            }
        }
        // Knights and sliders.
        for role in [Role::Knight, Role::Bishop, Role::Rook, Role::Queen] {
            let piece = Piece { color: turn, role };
            for from in board.by_piece(piece) {
                for to in attacks::attacks(from, piece, occupied) & target {
                    if unpinned(from, to) {
                        f(code(from, to, 0));
                    }
                }
            }
        }
    }

    // King steps to squares no enemy piece attacks.
    for to in attacks::king_attacks(king) & king_target {
        if board.attacks_to(to, !turn, occupied).is_empty() {
            f(code(king, to, 0));
        }
    }

    // Castling, only out of check: the path empty, the king's squares unattacked.
    if checkers.is_empty() {
        for side in [CastlingSide::KingSide, CastlingSide::QueenSide] {
            let Some(rook) = pos.castles().rook(turn, side) else {
                continue;
            };
            if (pos.castles().path(turn, side) & occupied).any() {
                continue;
            }
            let king_to = side.king_to(turn);
            let without = occupied
                ^ Bitboard::from(king)
                ^ Bitboard::from(rook)
                ^ Bitboard::from(side.rook_to(turn));
            if board.attacks_to(king_to, !turn, without).any() {
                continue;
            }
            let passed = attacks::between(king, king_to) | Bitboard::from(king);
            if passed.into_iter().any(|sq| {
                board
                    .attacks_to(sq, !turn, occupied ^ Bitboard::from(king))
                    .any()
            }) {
                continue;
            }
            f(code(king, king_to, 0));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chess::encode_move;
    use crate::chess::parse_fen;

    fn reference(pos: &Chess) -> Vec<u16> {
        let mut v: Vec<u16> = pos.legal_moves().iter().map(encode_move).collect();
        v.sort_unstable();
        v
    }

    fn ours(pos: &Chess) -> Vec<u16> {
        let mut v = Vec::new();
        for_each_legal_code(pos, |c| v.push(c));
        v.sort_unstable();
        v
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(2000))]
        /// Along random games (checks, pins, en passant, castling, promotions and mates
        /// come up), the codes equal shakmaty's legal moves exactly.
        #[test]
        fn equals_shakmaty_along_random_games(
            choices in proptest::collection::vec(0usize..10_000, 0..200),
        ) {
            let mut pos = Chess::default();
            for c in choices {
                let want = reference(&pos);
                proptest::prop_assert_eq!(ours(&pos), want.clone(), "{}", shakmaty::fen::Fen::from_position(&pos, shakmaty::EnPassantMode::Legal));
                if want.is_empty() {
                    break;
                }
                let moves = pos.legal_moves();
                pos.play_unchecked(moves[c % moves.len()]);
            }
        }
    }

    #[test]
    fn tricky_positions() {
        for fen in [
            // En passant that would expose the king along the rank.
            "8/8/8/KPp4r/8/8/8/4k3 w - c6 0 2",
            // En passant out of a check by that pawn.
            "8/8/8/2k5/3Pp3/8/8/4K3 b - d3 0 1",
            // Castling through, into and out of check; both sides.
            "r3k2r/8/8/8/8/8/8/R3K2R w KQkq - 0 1",
            "r3k2r/8/8/8/8/8/5r2/R3K2R w KQkq - 0 1",
            "r3k2r/8/8/8/8/8/8/R3K2R b KQkq - 0 1",
            "4k3/8/8/8/8/8/8/R3K2r w Q - 0 1",
            // Promotions, with captures, and a pinned pawn.
            "1n2k3/P7/8/8/8/8/8/4K3 w - - 0 1",
            "4k3/8/8/8/8/8/3p4/2Q2K2 b - - 0 1",
            "4k3/4r3/8/8/8/8/4P3/4K3 w - - 0 1",
            "4k3/8/8/8/1b6/8/3P4/4K3 w - - 0 1",
            // Double check; mate; stalemate.
            "4k3/8/8/8/1b6/8/4r3/4K3 w - - 0 1",
            "7k/6Q1/6K1/8/8/8/8/8 b - - 0 1",
            "7k/5Q2/6K1/8/8/8/8/8 b - - 0 1",
        ] {
            let pos = parse_fen(fen).unwrap();
            assert_eq!(ours(&pos), reference(&pos), "{fen}");
        }
    }
}

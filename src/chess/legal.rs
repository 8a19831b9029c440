//! The legal moves of a position as move codes, straight from bitboards: the same set as
//! shakmaty's `legal_moves` (its generator, mirrored rule by rule), without building `Move`
//! values. The book writer ranks a position's moves among these codes for every entry it
//! writes, so this is its hot path; `tests` check it against shakmaty on random games.

use shakmaty::san::San;
use shakmaty::{
    Bitboard, CastlingSide, Chess, Color, Move, Piece, Position, Role, Square, attacks,
};

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

/// The move a SAN names in `pos`, for the common cases only: a piece or pawn move (not en
/// passant) while not in check, or a king step (not castling). `None` means "not decided
/// here": the caller asks shakmaty's `San::to_move`, which also reports illegal and ambiguous
/// SANs. Whenever this returns a move it is the one `San::to_move` returns (the replay's hot
/// path: it avoids generating and filtering candidate moves; `tests` check the equality).
pub(crate) fn fast_san_move(pos: &Chess, san: &San) -> Option<Move> {
    let &San::Normal {
        role,
        file,
        rank,
        capture,
        to,
        promotion,
    } = san
    else {
        return None;
    };
    let board = pos.board();
    let turn = pos.turn();
    let us = board.by_color(turn);
    let occupied = board.occupied();
    if us.contains(to) {
        return None;
    }
    let captured = board.role_at(to);
    if capture != captured.is_some() {
        return None;
    }
    let mut from_mask = Bitboard::FULL;
    if let Some(f) = file {
        from_mask &= Bitboard::from_file(f);
    }
    if let Some(r) = rank {
        from_mask &= Bitboard::from_rank(r);
    }
    let king = board.king_of(turn)?;
    if role == Role::King {
        if promotion.is_some()
            || !from_mask.contains(king)
            || !attacks::king_attacks(king).contains(to)
        {
            return None;
        }
        // The king may not step onto an attacked square (its own square vacated: sliders
        // aim through it).
        if board
            .attacks_to(to, !turn, occupied ^ Bitboard::from(king))
            .any()
        {
            return None;
        }
        return Some(Move::Normal {
            role,
            from: king,
            capture: captured,
            to,
            promotion: None,
        });
    }
    if board.attacks_to(king, !turn, occupied).any() {
        return None;
    }
    let from = if role == Role::Pawn {
        if Bitboard::BACKRANKS.contains(to) {
            if !matches!(
                promotion,
                Some(Role::Knight | Role::Bishop | Role::Rook | Role::Queen)
            ) {
                return None;
            }
        } else if promotion.is_some() {
            return None;
        }
        let pawns = board.by_piece(Piece { color: turn, role }) & from_mask;
        if capture {
            (pawns & attacks::pawn_attacks(!turn, to)).single_square()?
        } else {
            let back: i32 = if turn == Color::White { -8 } else { 8 };
            let one = to.offset(back)?;
            if pawns.contains(one) {
                one
            } else {
                let double_rank = if turn == Color::White {
                    shakmaty::Rank::Fourth
                } else {
                    shakmaty::Rank::Fifth
                };
                let two = one.offset(back)?;
                if to.rank() != double_rank || occupied.contains(one) || !pawns.contains(two) {
                    return None;
                }
                two
            }
        }
    } else {
        if promotion.is_some() {
            return None;
        }
        let reach = match role {
            Role::Knight => attacks::knight_attacks(to),
            Role::Bishop => attacks::bishop_attacks(to, occupied),
            Role::Rook => attacks::rook_attacks(to, occupied),
            _ => attacks::queen_attacks(to, occupied),
        };
        (board.by_piece(Piece { color: turn, role }) & reach & from_mask).single_square()?
    };
    if slider_blockers(pos, king).contains(from) && !attacks::aligned(from, to, king) {
        return None;
    }
    Some(Move::Normal {
        role,
        from,
        capture: captured,
        to,
        promotion,
    })
}

/// Calls `f` with the code of every legal move of `pos` (no particular order).
pub(crate) fn for_each_legal_code(pos: &Chess, f: impl FnMut(u16)) {
    for_each_legal_code_to(pos, Bitboard::FULL, f);
}

/// [`for_each_legal_code`] for the moves to the squares of `dests` only (ranking moves needs
/// only the codes below the highest one, and a code orders by destination before origin).
pub(crate) fn for_each_legal_code_to(pos: &Chess, dests: Bitboard, mut f: impl FnMut(u16)) {
    for_each_legal_move_to(pos, dests, |c, _| f(c));
}

/// [`for_each_legal_code_to`], also giving the role of the moving piece (the mainline's move
/// ranks score every legal move by it).
#[inline]
pub(crate) fn for_each_legal_move_to(pos: &Chess, dests: Bitboard, mut f: impl FnMut(u16, Role)) {
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

    if let Some(to) = pos.maybe_ep_square().filter(|&to| dests.contains(to)) {
        for from in board.pawns() & us & attacks::pawn_attacks(!turn, to) {
            let capture = Square::from_coords(to.file(), from.rank());
            let after =
                (occupied ^ Bitboard::from(from) ^ Bitboard::from(capture)) | Bitboard::from(to);
            if (board.attacks_to(king, !turn, after) & !Bitboard::from(capture)).is_empty() {
                f(code(from, to, 0), Role::Pawn);
            }
        }
    }

    let checkers = pos.checkers();
    let (king_target, target) = if checkers.is_empty() {
        (!us & dests, Some(!us & dests))
    } else {
        // The king may not stay on a checking slider's line, even on the far side.
        let mut attacked = Bitboard(0);
        for checker in checkers & board.sliders() {
            attacked |= attacks::ray(checker, king) ^ Bitboard::from(checker);
        }
        let block = checkers
            .single_square()
            .map(|c| (attacks::between(king, c) | Bitboard::from(c)) & dests);
        (!us & !attacked & dests, block)
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
            let mut pawn_dests = attacks::pawn_attacks(turn, from) & pos.them();
            if let Some(one) = from.offset(forward)
                && !occupied.contains(one)
            {
                pawn_dests |= Bitboard::from(one);
                if double_from.contains(from)
                    && let Some(two) = one.offset(forward)
                    && !occupied.contains(two)
                {
                    pawn_dests |= Bitboard::from(two);
                }
            }
            for to in pawn_dests & target {
                if !unpinned(from, to) {
                    continue;
                }
                if Bitboard::BACKRANKS.contains(to) {
                    for p in PROMOTIONS {
                        f(code(from, to, p), Role::Pawn);
                    }
                } else {
                    f(code(from, to, 0), Role::Pawn);
                }
            }
        }
        // Knights and sliders (each role's attack function called directly: the generic
        // `attacks::attacks` is an out-of-line dispatch on the role).
        let mut piece_moves = |from: Square, dests: Bitboard, role: Role| {
            for to in dests & target {
                if unpinned(from, to) {
                    f(code(from, to, 0), role);
                }
            }
        };
        for from in board.knights() & us {
            piece_moves(from, attacks::knight_attacks(from), Role::Knight);
        }
        for from in board.bishops() & us {
            piece_moves(from, attacks::bishop_attacks(from, occupied), Role::Bishop);
        }
        for from in board.rooks() & us {
            piece_moves(from, attacks::rook_attacks(from, occupied), Role::Rook);
        }
        for from in board.queens() & us {
            piece_moves(from, attacks::queen_attacks(from, occupied), Role::Queen);
        }
    }

    // King steps to squares no enemy piece attacks.
    for to in attacks::king_attacks(king) & king_target {
        if board.attacks_to(to, !turn, occupied).is_empty() {
            f(code(king, to, 0), Role::King);
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
            if !dests.contains(king_to) {
                continue;
            }
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
            f(code(king, king_to, 0), Role::King);
        }
    }
}

/// The number of legal moves of `pos`: what [`for_each_legal_code`] would call its closure
/// with, counted by destination sets (one popcount per piece) instead of move by move — for
/// `verify`, which proves a stored move index legal by its being below this number.
pub(crate) fn count_legal(pos: &Chess) -> usize {
    let board = pos.board();
    let turn = pos.turn();
    let us = pos.us();
    let occupied = board.occupied();
    let Some(king) = board.king_of(turn) else {
        return 0;
    };
    let blockers = slider_blockers(pos, king);
    // A pinned piece moves only along the line through it and the king.
    let allowed = |from: Square| {
        if blockers.contains(from) {
            attacks::ray(from, king)
        } else {
            Bitboard::FULL
        }
    };
    let mut n = 0usize;
    if let Some(to) = pos.maybe_ep_square() {
        for from in board.pawns() & us & attacks::pawn_attacks(!turn, to) {
            let capture = Square::from_coords(to.file(), from.rank());
            let after =
                (occupied ^ Bitboard::from(from) ^ Bitboard::from(capture)) | Bitboard::from(to);
            if (board.attacks_to(king, !turn, after) & !Bitboard::from(capture)).is_empty() {
                n += 1;
            }
        }
    }
    let checkers = pos.checkers();
    let (king_target, target) = if checkers.is_empty() {
        (!us, Some(!us))
    } else {
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
        let forward: i32 = if turn == Color::White { 8 } else { -8 };
        let double_from = if turn == Color::White {
            Bitboard::from_rank(shakmaty::Rank::Second)
        } else {
            Bitboard::from_rank(shakmaty::Rank::Seventh)
        };
        for from in board.pawns() & us {
            let mut pawn_dests = attacks::pawn_attacks(turn, from) & pos.them();
            if let Some(one) = from.offset(forward)
                && !occupied.contains(one)
            {
                pawn_dests |= Bitboard::from(one);
                if double_from.contains(from)
                    && let Some(two) = one.offset(forward)
                    && !occupied.contains(two)
                {
                    pawn_dests |= Bitboard::from(two);
                }
            }
            let d = pawn_dests & target & allowed(from);
            n += (d & !Bitboard::BACKRANKS).count()
                + PROMOTIONS.len() * (d & Bitboard::BACKRANKS).count();
        }
        for from in board.knights() & us {
            n += (attacks::knight_attacks(from) & target & allowed(from)).count();
        }
        for from in board.bishops() & us {
            n += (attacks::bishop_attacks(from, occupied) & target & allowed(from)).count();
        }
        for from in board.rooks() & us {
            n += (attacks::rook_attacks(from, occupied) & target & allowed(from)).count();
        }
        for from in board.queens() & us {
            n += (attacks::queen_attacks(from, occupied) & target & allowed(from)).count();
        }
    }
    for to in attacks::king_attacks(king) & king_target {
        if board.attacks_to(to, !turn, occupied).is_empty() {
            n += 1;
        }
    }
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
            n += 1;
        }
    }
    n
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

    type Checked = Result<(), proptest::test_runner::TestCaseError>;

    /// Plays a random game from the start, each choice picking one of the legal moves, and
    /// calls `f` with every position reached (the last one too, mate or stalemate) and the
    /// choice made there.
    fn along_random_game(
        choices: &[usize],
        mut f: impl FnMut(&Chess, usize) -> Checked,
    ) -> Checked {
        let mut pos = Chess::default();
        for &c in choices {
            f(&pos, c)?;
            let moves = pos.legal_moves();
            if moves.is_empty() {
                break;
            }
            pos.play_unchecked(moves[c % moves.len()]);
        }
        Ok(())
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(2000))]
        /// Along random games (checks, pins, en passant, castling, promotions and mates
        /// come up), the codes equal shakmaty's legal moves exactly.
        #[test]
        fn equals_shakmaty_along_random_games(
            choices in proptest::collection::vec(0usize..10_000, 0..200),
        ) {
            along_random_game(&choices, |pos, _| {
                proptest::prop_assert_eq!(ours(pos), reference(pos), "{}", shakmaty::fen::Fen::from_position(pos, shakmaty::EnPassantMode::Legal));
                proptest::prop_assert_eq!(count_legal(pos), reference(pos).len());
                Ok(())
            })?;
        }
    }

    /// Every SAN a move can be written as (shakmaty's, and the same with extra or missing
    /// disambiguation, a wrong capture mark or promotion), plus SANs naming other squares.
    fn san_variants(pos: &Chess, m: &Move, salt: usize) -> Vec<San> {
        let mut out = vec![San::from_move(pos, *m)];
        if let San::Normal {
            role,
            capture,
            to,
            promotion,
            ..
        } = San::from_move(pos, *m)
        {
            let from = m.from().expect("normal move");
            let other = Square::new(((u32::from(to) as usize + salt * 7) % 64) as u32);
            for (file, rank) in [
                (None, None),
                (Some(from.file()), None),
                (None, Some(from.rank())),
                (Some(from.file()), Some(from.rank())),
            ] {
                out.push(San::Normal {
                    role,
                    file,
                    rank,
                    capture,
                    to,
                    promotion,
                });
                out.push(San::Normal {
                    role,
                    file,
                    rank,
                    capture: !capture,
                    to,
                    promotion,
                });
                out.push(San::Normal {
                    role,
                    file,
                    rank,
                    capture,
                    to: other,
                    promotion,
                });
            }
            for p in [
                None,
                Some(Role::Queen),
                Some(Role::Knight),
                Some(Role::King),
                Some(Role::Pawn),
            ] {
                out.push(San::Normal {
                    role,
                    file: None,
                    rank: None,
                    capture,
                    to,
                    promotion: p,
                });
            }
            for r in [
                Role::Pawn,
                Role::Knight,
                Role::Bishop,
                Role::Rook,
                Role::Queen,
                Role::King,
            ] {
                out.push(San::Normal {
                    role: r,
                    file: None,
                    rank: None,
                    capture,
                    to,
                    promotion,
                });
            }
        }
        out
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(1000))]
        /// Along random games, whenever the fast path decides a SAN it decides it as shakmaty
        /// does, and it decides the plain SAN of most moves (else it would be no fast path).
        #[test]
        fn fast_san_agrees_with_shakmaty(
            choices in proptest::collection::vec(0usize..10_000, 0..200),
        ) {
            let (mut plain, mut decided) = (0usize, 0usize);
            along_random_game(&choices, |pos, c| {
                for (i, m) in pos.legal_moves().iter().enumerate() {
                    for (j, san) in san_variants(pos, m, c + i).into_iter().enumerate() {
                        let fast = fast_san_move(pos, &san);
                        if let Some(f) = &fast {
                            proptest::prop_assert_eq!(
                                Ok(*f),
                                san.to_move(pos),
                                "{} in {}",
                                san,
                                shakmaty::fen::Fen::from_position(pos, shakmaty::EnPassantMode::Legal)
                            );
                        }
                        if j == 0 {
                            plain += 1;
                            decided += usize::from(fast.is_some());
                        }
                    }
                }
                Ok(())
            })?;
            proptest::prop_assert!(decided * 2 >= plain, "decided {decided} of {plain}");
        }
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig::with_cases(500))]
        /// Generating only the moves to squares up to some square gives exactly those of all
        /// legal moves; move indices computed that way (the writer's) decode to the moves
        /// (with the reader's full generation), for random subsets of the legal moves.
        #[test]
        fn moves_to_low_squares_and_their_indices(
            choices in proptest::collection::vec(0usize..10_000, 0..160),
        ) {
            along_random_game(&choices, |pos, c| {
                let all = ours(pos);
                let k = (c % 64) as u16;
                let mut low = Vec::new();
                for_each_legal_code_to(pos, Bitboard(u64::MAX >> (63 - k)), |m| low.push(m));
                low.sort_unstable();
                let want: Vec<u16> = all.iter().copied().filter(|m| (m >> 6) & 63 <= k).collect();
                proptest::prop_assert_eq!(low, want);
                let subset: Vec<u16> = all
                    .iter()
                    .enumerate()
                    .filter(|(i, _)| (c >> (i % 13)) & 1 == 1)
                    .map(|(_, &m)| m)
                    .collect();
                let state = crate::chess::PosState::from_chess(pos);
                let idx = crate::chess::index_moves_of(&state, &subset).expect("legal moves");
                proptest::prop_assert_eq!(
                    crate::chess::unindex_moves_of(&state, &idx).expect("indices"),
                    subset
                );
                Ok(())
            })?;
        }
    }

    #[test]
    fn fast_san_declines_or_agrees_on_tricky_positions() {
        for fen in [
            "8/8/8/KPp4r/8/8/8/4k3 w - c6 0 2",
            "8/8/8/2k5/3Pp3/8/8/4K3 b - d3 0 1",
            "r3k2r/8/8/8/8/8/8/R3K2R w KQkq - 0 1",
            "1n2k3/P7/8/8/8/8/8/4K3 w - - 0 1",
            "4k3/4r3/8/8/8/8/4P3/4K3 w - - 0 1",
            "4k3/8/8/8/1b6/8/3P4/4K3 w - - 0 1",
            "4k3/8/8/8/1b6/8/4r3/4K3 w - - 0 1",
            "k7/8/8/8/8/8/1N3N2/K7 w - - 0 1",
            "k7/8/8/8/8/2b5/1N6/K4N2 w - - 0 1",
        ] {
            let pos = parse_fen(fen).unwrap();
            for (i, m) in pos.legal_moves().iter().enumerate() {
                for san in san_variants(&pos, m, i) {
                    if let Some(f) = fast_san_move(&pos, &san) {
                        assert_eq!(Ok(f), san.to_move(&pos), "{san} in {fen}");
                    }
                }
            }
            // SANs of squares no piece reaches, of pieces that do not exist.
            for to in Square::ALL {
                for role in [
                    Role::Pawn,
                    Role::Knight,
                    Role::Bishop,
                    Role::Rook,
                    Role::Queen,
                    Role::King,
                ] {
                    for capture in [false, true] {
                        let san = San::Normal {
                            role,
                            file: None,
                            rank: None,
                            capture,
                            to,
                            promotion: None,
                        };
                        if let Some(f) = fast_san_move(&pos, &san) {
                            assert_eq!(Ok(f), san.to_move(&pos), "{san} in {fen}");
                        }
                    }
                }
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
            assert_eq!(count_legal(&pos), reference(&pos).len(), "{fen}");
        }
    }
}

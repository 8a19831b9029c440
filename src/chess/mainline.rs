//! A game's mainline as move ranks (docs/FORMAT.md §15.2; frozen, §15.6): each move stored as one byte,
//! its rank among the position's legal moves ordered by a fixed static score
//! ([`ranked_moves`]), so that the moves players choose take small ranks and an entropy coder
//! (the game block's zstd) stores a move in a few bits. The order is part of the format: a
//! change to the score (`mainline_score.rs`) is a new rank order version.
//!
//! The score is deliberately cheap and deterministic (no search, no tables trained on games):
//! captures by the victim's value against the attacker's, promotions, castling, centralising
//! piece-square steps and development, and a penalty for stepping onto a square an enemy pawn
//! attacks. Ties are broken by the move code, ascending.

use shakmaty::{Chess, Move, Position, Role, Square};

use super::mainline_score as score;
use super::position::{encode_move, legal_move};

#[cfg(test)]
mod reference;

/// The rank order this build writes (FORMAT §15.2); a stored mainline names the order it was
/// ranked in.
pub const RANK_ORDER_VERSION: u8 = 1;

/// A mainline that cannot be coded or decoded.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum MainlineError {
    /// A move to code is not legal where it is played (its ply, from 0).
    #[error("move {ply} is not legal in its position")]
    Illegal { ply: usize },
    /// A stored rank is not below the number of legal moves of its position.
    #[error("rank {rank} at ply {ply} is past the position's {legal} legal moves")]
    RankOutOfRange { ply: usize, rank: u8, legal: usize },
}

/// The legal moves of `pos` as move codes in rank order: by the static score
/// (`mainline_score::move_score`), descending, then by code, ascending. `last_to` is where the
/// previous move went (`None` at a game's start).
pub fn ranked_moves(pos: &Chess, last_to: Option<Square>) -> Vec<u16> {
    let mut keys = Vec::with_capacity(64);
    score::sort_keys(pos, last_to, &mut keys);
    keys.sort_unstable();
    keys.into_iter().map(|k| k as u16).collect()
}

/// Where a move code goes.
fn to_square(code: u16) -> Square {
    Square::new(u32::from((code >> 6) & 63))
}

/// Plays `m`, whose code is legal in `pos`, as `Position::play` would: by `play_unchecked`
/// when `m` is plainly the legal move of its code (a normal move of the piece on its origin,
/// capturing what stands on its destination; not a king's while castling is possible, not
/// en passant), otherwise by `play`, which checks it. `false`: `m` is not legal.
fn play_coded(pos: &mut Chess, m: &Move) -> bool {
    if let Move::Normal {
        role,
        from,
        capture,
        to,
        ..
    } = *m
    {
        let board = pos.board();
        let victim = if board.by_color(!pos.turn()).contains(to) {
            board.role_at(to)
        } else {
            None
        };
        let plain = board.role_at(from) == Some(role)
            && capture == victim
            && (role != Role::King || !pos.castles().has_color(pos.turn()))
            && !(role == Role::Pawn && from.file() != to.file() && victim.is_none());
        if plain {
            pos.play_unchecked(*m);
            return true;
        }
    }
    match std::mem::take(pos).play(*m) {
        Ok(next) => {
            *pos = next;
            true
        }
        Err(_) => false,
    }
}

/// The move of the legal code `code` in `pos` when it is plainly a normal move (not a king's
/// while castling is possible, not en passant): what `legal_move` gives, without its check.
fn plain_move(pos: &Chess, code: u16) -> Option<Move> {
    let from = Square::new(u32::from(code & 63));
    let to = to_square(code);
    let board = pos.board();
    let role = board.role_at(from)?;
    let capture = if board.by_color(!pos.turn()).contains(to) {
        board.role_at(to)
    } else {
        None
    };
    let plain = (role != Role::King || !pos.castles().has_color(pos.turn()))
        && !(role == Role::Pawn && from.file() != to.file() && capture.is_none());
    let promotion = match code >> 12 {
        0 => None,
        p => Some(*Role::ALL.get(usize::from(p - 1))?),
    };
    plain.then_some(Move::Normal {
        role,
        from,
        capture,
        to,
        promotion,
    })
}

/// Codes a mainline played from `start`: one rank byte per move.
pub fn encode_mainline(start: &Chess, moves: &[Move]) -> Result<Vec<u8>, MainlineError> {
    let mut pos = start.clone();
    let mut out = Vec::with_capacity(moves.len());
    let mut last_to = None;
    for (ply, m) in moves.iter().enumerate() {
        let code = encode_move(m);
        let rank = score::rank_of(&pos, code, last_to).ok_or(MainlineError::Illegal { ply })?;
        // At most 218 legal moves: a rank fits a byte.
        out.push(rank as u8);
        if !play_coded(&mut pos, m) {
            return Err(MainlineError::Illegal { ply });
        }
        last_to = Some(to_square(code));
    }
    Ok(out)
}

/// Decodes a mainline coded by [`encode_mainline`] from `start`: the moves, in order.
pub fn decode_mainline(start: &Chess, ranks: &[u8]) -> Result<Vec<Move>, MainlineError> {
    let mut pos = start.clone();
    let mut out = Vec::with_capacity(ranks.len());
    let mut last_to = None;
    let mut keys = Vec::with_capacity(64);
    for (ply, &rank) in ranks.iter().enumerate() {
        let (m, to) = decode_move(&pos, last_to, rank, ply, &mut keys)?;
        out.push(m);
        pos.play_unchecked(m);
        last_to = Some(to);
    }
    Ok(out)
}

/// One step of [`decode_mainline`]: the move of rank `rank` at ply `ply` in `pos` (the
/// previous move went to `last_to`), legal there, and the square it goes to (the next step's
/// `last_to`). `keys` is scratch space, reused between steps.
pub(crate) fn decode_move(
    pos: &Chess,
    last_to: Option<Square>,
    rank: u8,
    ply: usize,
    keys: &mut Vec<u64>,
) -> Result<(Move, Square), MainlineError> {
    score::sort_keys(pos, last_to, keys);
    let legal = keys.len();
    if usize::from(rank) >= legal {
        return Err(MainlineError::RankOutOfRange { ply, rank, legal });
    }
    let code = *keys.select_nth_unstable(usize::from(rank)).1 as u16;
    // Both give only legal moves: playing one needs no second check.
    let m = match plain_move(pos, code) {
        Some(m) => m,
        None => legal_move(pos, code).ok_or(MainlineError::Illegal { ply })?,
    };
    Ok((m, to_square(code)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;
    use shakmaty::san::San;

    fn play_sans(sans: &[&str]) -> (Chess, Vec<Move>) {
        let mut pos = Chess::default();
        let mut moves = Vec::new();
        for s in sans {
            let m = s.parse::<San>().unwrap().to_move(&pos).unwrap();
            pos = pos.play(m).unwrap();
            moves.push(m);
        }
        (Chess::default(), moves)
    }

    const GOLDEN_RUY_LOPEZ: [u8; 17] = [3, 2, 2, 1, 6, 17, 9, 2, 2, 5, 10, 3, 2, 6, 5, 1, 14];

    #[test]
    fn a_mainline_round_trips_and_common_moves_rank_low() {
        let (start, moves) = play_sans(&[
            "e4", "e5", "Nf3", "Nc6", "Bb5", "a6", "Ba4", "Nf6", "O-O", "Be7", "Re1", "b5", "Bb3",
            "d6", "c3", "O-O", "h3",
        ]);
        let ranks = encode_mainline(&start, &moves).unwrap();
        assert_eq!(ranks.len(), moves.len());
        assert_eq!(decode_mainline(&start, &ranks).unwrap(), moves);
        // The Ruy Lopez is mostly natural moves: the mean rank stays small.
        let mean = ranks.iter().map(|&r| f64::from(r)).sum::<f64>() / ranks.len() as f64;
        assert!(mean < 8.0, "ranks {ranks:?}");
        // The ranks are persisted (FORMAT §15.2): golden.
        assert_eq!(ranks, GOLDEN_RUY_LOPEZ, "{ranks:?}");
    }

    #[test]
    fn the_rank_order_is_pinned() {
        // The order is persisted (FORMAT §15.2): the start position's first ranks never change.
        let first: Vec<String> = ranked_moves(&Chess::default(), None)
            .into_iter()
            .take(6)
            .map(super::super::position::move_uci)
            .collect();
        assert_eq!(first, ["b1c3", "g1f3", "d2d4", "e2e4", "c2c4", "f2f4"]);
    }

    #[test]
    fn bad_ranks_are_errors_not_panics() {
        let start = Chess::default();
        assert_eq!(
            decode_mainline(&start, &[20]),
            Err(MainlineError::RankOutOfRange {
                ply: 0,
                rank: 20,
                legal: 20
            })
        );
        // Fool's mate, then a move after the mate.
        let (s, moves) = play_sans(&["f3", "e5", "g4", "Qh4#"]);
        let mut ranks = encode_mainline(&s, &moves).unwrap();
        ranks.push(0);
        assert!(matches!(
            decode_mainline(&s, &ranks),
            Err(MainlineError::RankOutOfRange {
                ply: 4,
                legal: 0,
                ..
            })
        ));
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]

        /// Random legal games round trip, and any bytes decode to moves or an error.
        #[test]
        fn random_games_round_trip(choices in proptest::collection::vec(any::<u8>(), 0..200)) {
            let start = Chess::default();
            let mut pos = start.clone();
            let mut moves = Vec::new();
            for c in &choices {
                let legal = pos.legal_moves();
                if legal.is_empty() {
                    break;
                }
                let m = legal[usize::from(*c) % legal.len()];
                pos = pos.play(m).unwrap();
                moves.push(m);
            }
            let ranks = encode_mainline(&start, &moves).unwrap();
            prop_assert_eq!(decode_mainline(&start, &ranks).unwrap(), moves);
            let _ = decode_mainline(&start, &choices);
        }
    }

    /// A move among the legal ones of `pos` by `c`: with `c` below 96, one of the special moves
    /// if any (promotions, castling, en passant, captures, checks), else any.
    fn pick(pos: &Chess, c: u8) -> Option<Move> {
        let legal = pos.legal_moves();
        if legal.is_empty() {
            return None;
        }
        if c < 96 {
            let special: Vec<Move> = legal
                .iter()
                .copied()
                .filter(|m| {
                    m.is_promotion()
                        || m.is_castle()
                        || m.is_en_passant()
                        || m.is_capture()
                        || pos.clone().play(*m).is_ok_and(|p| p.is_check())
                })
                .collect();
            if !special.is_empty() {
                return Some(special[usize::from(c) % special.len()]);
            }
        }
        Some(legal[usize::from(c) % legal.len()])
    }

    /// The reference's ranks and moves equal ours on the game `moves` from `start`, ply by ply
    /// the whole rank order.
    fn assert_same_as_reference(start: &Chess, moves: &[Move]) {
        let ranks = encode_mainline(start, moves).unwrap();
        assert_eq!(ranks, reference::encode_mainline(start, moves).unwrap());
        assert_eq!(decode_mainline(start, &ranks).unwrap(), moves);
        assert_eq!(reference::decode_mainline(start, &ranks).unwrap(), moves);
        let (mut pos, mut last_to) = (start.clone(), None);
        for m in moves {
            assert_eq!(
                ranked_moves(&pos, last_to),
                reference::ranked_moves(&pos, last_to)
            );
            last_to = Some(to_square(encode_move(m)));
            pos = pos.play(*m).unwrap();
        }
        assert_eq!(
            ranked_moves(&pos, last_to),
            reference::ranked_moves(&pos, last_to)
        );
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]

        /// Random games, from the start or from a position random play reached (given as its
        /// FEN), biased to promotions, castling, en passant, captures and checks: the same ranks
        /// and rank orders as the reference, and the same answer to any bytes.
        #[test]
        fn ranks_equal_the_reference(
            prefix in proptest::collection::vec(any::<u8>(), 0..120),
            choices in proptest::collection::vec(any::<u8>(), 0..300),
        ) {
            let mut start = Chess::default();
            for c in &prefix {
                let Some(m) = pick(&start, *c) else { break };
                start = start.play(m).unwrap();
            }
            let fen = shakmaty::fen::Fen::from_position(&start, shakmaty::EnPassantMode::Legal);
            let start = super::super::parse_fen(&fen.to_string()).unwrap();
            let mut pos = start.clone();
            let mut moves = Vec::new();
            for c in &choices {
                let Some(m) = pick(&pos, *c) else { break };
                pos = pos.play(m).unwrap();
                moves.push(m);
            }
            assert_same_as_reference(&start, &moves);
            prop_assert_eq!(
                decode_mainline(&start, &choices),
                reference::decode_mainline(&start, &choices)
            );
        }
    }

    #[test]
    fn illegal_moves_are_errors_as_in_the_reference() {
        let (start, mut moves) = play_sans(&["e4", "e5", "Nf3", "Nc6", "Bb5", "a6"]);
        let legal = moves[4];
        // The right squares with the wrong piece or capture, and a move of the other side.
        let wrong = [
            Move::Normal {
                role: Role::Queen,
                from: legal.from().unwrap(),
                capture: None,
                to: legal.to(),
                promotion: None,
            },
            Move::Normal {
                role: Role::Bishop,
                from: legal.from().unwrap(),
                capture: Some(Role::Pawn),
                to: legal.to(),
                promotion: None,
            },
            moves[1],
        ];
        for w in wrong {
            moves[4] = w;
            assert_eq!(
                encode_mainline(&start, &moves),
                reference::encode_mainline(&start, &moves)
            );
            assert_eq!(
                encode_mainline(&start, &moves),
                Err(MainlineError::Illegal { ply: 4 })
            );
        }
    }

    /// Every game of the shared medium set (../shared/data/README.md) and of its FEN-started
    /// studies: the same ranks as the reference. Skipped, saying so, without the data.
    #[test]
    fn real_games_rank_as_in_the_reference() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/data/pgn");
        let mut files = vec![root.join("medium-10k.pgn")];
        if let Ok(dir) = std::fs::read_dir(root.join("studies")) {
            files.extend(dir.filter_map(|e| e.ok().map(|e| e.path())));
        }
        let rules = crate::ops::pgn::CountRules {
            max_ply: 0,
            min_rating: None,
            facets: crate::store::facet::FacetSet::NONE,
        };
        let (mut games, mut plies) = (0usize, 0usize);
        for path in files {
            let Ok(file) = std::fs::File::open(&path) else {
                eprintln!("skipped: {} is absent", path.display());
                continue;
            };
            let mut reader = crate::ops::gamereader::GameReader::new(std::io::BufReader::new(file));
            let (mut kept, mut moves) = (Vec::new(), Vec::new());
            while let Some(g) = reader.next_game().unwrap() {
                let Ok(start) =
                    crate::ops::pgn::replay_keeping(&g, &rules, &mut kept, Some(&mut moves))
                else {
                    continue;
                };
                let ranks = encode_mainline(&start, &moves).unwrap();
                assert_eq!(
                    ranks,
                    reference::encode_mainline(&start, &moves).unwrap(),
                    "{} line {}",
                    path.display(),
                    g.line
                );
                assert_eq!(decode_mainline(&start, &ranks).unwrap(), moves);
                games += 1;
                plies += moves.len();
            }
        }
        eprintln!("{games} games, {plies} plies: the same ranks as the reference");
    }
}

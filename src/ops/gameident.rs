//! When two records are one game by its id (brief §9: "a game whose id the book holds is not
//! counted again"): a game whose tags carry its id (a lichess `Site` URL or a `GameId` tag) is
//! known by that id, its result and its mainline as *moves*, not as written — so that the same
//! lichess game exported again by another tool (tags reordered or added, SAN re-spelled:
//! `Ngf3` for `Nf3`, a check sign added or dropped) is recognised, where `--dedupe`'s
//! fingerprint (`ops::pgn::game_fingerprint`, the tags and SAN as written) tells the records
//! apart. Two records of one id whose results or moves differ stay two games (an id clash).
//!
//! The identity is a 128-bit hash used only in memory and in an import's staging area; it is
//! never stored in a book (a book's games are compared through its game store), so it may
//! change between builds.

use shakmaty::san::San;
use shakmaty::{CastlingSide, Chess, Move, Role, Square};

use super::gamerec;
use super::pgn::{GameResult, RawGame};
use crate::chess::gamefields::{FEN_FIELD, FIELDS, MOVES_FIELD, RESULT_FIELD};
use crate::store::gameblock::StoredGame;

/// A game's id from its tags and the identity that id's records share when they are one game.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TaggedIdentity {
    pub id: u64,
    pub identity: u128,
}

/// One move as the identity sees it: what it moves and where, whatever the notation.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Token {
    /// A pawn: its file of departure, destination and promotion (0: none).
    Pawn {
        file: u8,
        to: u8,
        promotion: u8,
    },
    /// A piece: its role and destination (which of two pieces is the position's business).
    Piece {
        role: u8,
        to: u8,
    },
    Castle {
        king_side: bool,
    },
    Put {
        role: u8,
        to: u8,
    },
    Null,
}

impl Token {
    fn of_san(san: &San) -> Token {
        match *san {
            San::Normal {
                role: Role::Pawn,
                file,
                to,
                promotion,
                ..
            } => Token::Pawn {
                file: u32::from(file.unwrap_or(to.file())) as u8,
                to: sq(to),
                promotion: promotion.map_or(0, |r| r as u8),
            },
            San::Normal { role, to, .. } => Token::Piece {
                role: role as u8,
                to: sq(to),
            },
            San::Castle(side) => Token::Castle {
                king_side: side == CastlingSide::KingSide,
            },
            San::Put { role, to } => Token::Put {
                role: role as u8,
                to: sq(to),
            },
            San::Null => Token::Null,
        }
    }

    fn of_move(m: &Move) -> Token {
        match *m {
            Move::Normal {
                role: Role::Pawn,
                from,
                to,
                promotion,
                ..
            } => Token::Pawn {
                file: u32::from(from.file()) as u8,
                to: sq(to),
                promotion: promotion.map_or(0, |r| r as u8),
            },
            Move::EnPassant { from, to } => Token::Pawn {
                file: u32::from(from.file()) as u8,
                to: sq(to),
                promotion: 0,
            },
            Move::Normal { role, to, .. } => Token::Piece {
                role: role as u8,
                to: sq(to),
            },
            Move::Castle { king, rook } => Token::Castle {
                king_side: rook.file() > king.file(),
            },
            Move::Put { role, to } => Token::Put {
                role: role as u8,
                to: sq(to),
            },
        }
    }

    fn bytes(self) -> [u8; 4] {
        match self {
            Token::Pawn {
                file,
                to,
                promotion,
            } => [1, file, to, promotion],
            Token::Piece { role, to } => [2, role, to, 0],
            Token::Castle { king_side } => [3, u8::from(king_side), 0, 0],
            Token::Put { role, to } => [4, role, to, 0],
            Token::Null => [5, 0, 0, 0],
        }
    }
}

fn sq(s: Square) -> u8 {
    u32::from(s) as u8
}

fn result_byte(r: GameResult) -> u8 {
    match r {
        GameResult::White => 1,
        GameResult::Draw => 2,
        GameResult::Black => 3,
        GameResult::Unknown => 0,
    }
}

fn identity(
    id: u64,
    result: GameResult,
    from_setup: bool,
    tokens: impl Iterator<Item = Token>,
) -> u128 {
    let mut h = xxhash_rust::xxh3::Xxh3::new();
    h.update(b"bookdb tagged game identity 1\0");
    h.update(&id.to_le_bytes());
    h.update(&[result_byte(result), u8::from(from_setup)]);
    for t in tokens {
        h.update(&t.bytes());
    }
    h.digest128()
}

/// The identity of a game read from PGN whose tags carry its id; `None` for a game without
/// one (known by its fingerprint alone) or one the PGN reader could not parse.
pub fn of_raw(g: &RawGame) -> Option<TaggedIdentity> {
    if g.error.is_some() {
        return None;
    }
    let id = gamerec::tag_id(g)?;
    let from_setup = g.fen.as_deref().is_some_and(|f| !f.trim().is_empty());
    let result = g
        .result
        .as_deref()
        .map_or(GameResult::Unknown, GameResult::from_tag);
    let tokens = g.sans.iter().map(|s| Token::of_san(&s.san));
    Some(TaggedIdentity {
        id,
        identity: identity(id, result, from_setup, tokens),
    })
}

/// The identity of a stored game, as [`of_raw`] gives it for the record it was stored from
/// (whatever its id's origin: the caller compares it with a tagged record of the same id).
pub fn of_stored(g: &StoredGame) -> Result<u128, String> {
    if g.fields.len() != FIELDS {
        return Err(format!(
            "a stored game has {} fields, not {FIELDS}",
            g.fields.len()
        ));
    }
    let fen = String::from_utf8_lossy(&g.fields[FEN_FIELD]);
    let from_setup = !fen.trim().is_empty();
    let start: Chess = if from_setup {
        crate::chess::parse_fen(&fen).map_err(|e| format!("stored FEN {fen:?}: {e}"))?
    } else {
        Chess::default()
    };
    let moves = crate::chess::mainline::decode_mainline(&start, &g.fields[MOVES_FIELD])
        .map_err(|e| e.to_string())?;
    let result = GameResult::from_tag(&g.fields[RESULT_FIELD]);
    Ok(identity(
        g.id,
        result,
        from_setup,
        moves.iter().map(Token::of_move),
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::pgn::first_game as raw;

    const LICHESS: &str = "[Event \"Rated Blitz game\"]\n[Site \"https://lichess.org/abcdEFGH\"]\n[White \"a\"]\n[Black \"b\"]\n[Result \"1-0\"]\n\n1. e4 e5 2. Nf3 Nc6 3. Bb5 a6 4. Bxc6 dxc6 5. O-O f6 6. d4 exd4 7. Nxd4 c5 8. Nb3 Qxd1 9. Rxd1 Bg4 10. f3 Be6 11. Nc3 Bd6 12. Be3 O-O-O 13. Nxc5 Bxc5 14. Bxc5 Rxd1+ 15. Rxd1 1-0\n";

    /// The same game exported by another tool: tags reordered and added, pieces
    /// over-disambiguated, a check sign dropped, castling written with zeros.
    const RESPELLED: &str = "[White \"a\"]\n[Black \"b\"]\n[Event \"Rated Blitz game\"]\n[Date \"????.??.??\"]\n[Round \"?\"]\n[Site \"https://lichess.org/abcdEFGH\"]\n[Result \"1-0\"]\n\n1.e4 e5 2.Ng1f3 Nb8c6 3.Bf1b5 a6 4.Bb5xc6 dxc6 5.0-0 f6 6.d4 exd4 7.Nf3xd4 c5 8.Nd4b3 Qd8xd1 9.Rf1xd1 Bc8g4 10.f3 Bg4e6 11.Nb1c3 Bf8d6 12.Bc1e3 0-0-0 13.Nb3xc5 Bd6xc5 14.Be3xc5 Rd8xd1 15.Ra1xd1 1-0\n";

    #[test]
    fn one_lichess_game_written_two_ways_has_one_identity_and_two_fingerprints() {
        let (a, b) = (raw(LICHESS), raw(RESPELLED));
        assert_ne!(
            crate::ops::pgn::game_fingerprint(&a),
            crate::ops::pgn::game_fingerprint(&b)
        );
        let (ia, ib) = (of_raw(&a).unwrap(), of_raw(&b).unwrap());
        assert_eq!(ia, ib);
        assert_eq!(gamerec::id_string(ia.id), "abcdEFGH");
    }

    #[test]
    fn another_result_or_move_or_id_is_another_game() {
        let base = of_raw(&raw(LICHESS)).unwrap();
        let other_result = LICHESS.replace("\"1-0\"", "\"1/2-1/2\"");
        let other_move = LICHESS.replace("5. O-O f6", "5. O-O f5");
        let other_id = LICHESS.replace("abcdEFGH", "abcdEFGI");
        for v in [other_result, other_move, other_id] {
            assert_ne!(of_raw(&raw(&v)).unwrap().identity, base.identity, "{v}");
        }
    }

    #[test]
    fn games_without_an_id_in_their_tags_have_none() {
        let g = raw("[Event \"x\"]\n[Site \"Hastings\"]\n\n1. e4 e5 *\n");
        assert_eq!(of_raw(&g), None);
        let g = raw("[Event \"x\"]\n[GameId \"abcdEFGH\"]\n\n1. e4 e5 *\n");
        assert!(of_raw(&g).is_some());
    }

    #[test]
    fn a_stored_game_has_the_identity_of_the_record_it_was_stored_from() {
        for pgn in [LICHESS, RESPELLED] {
            let g = raw(pgn);
            let stored = gamerec::record(&g, &Chess::default(), 30, 0).unwrap();
            assert_eq!(of_stored(&stored), Ok(of_raw(&g).unwrap().identity));
        }
        // From a set-up position, with en passant and a promotion.
        let fen = "[Site \"https://lichess.org/zzzzzzzz\"]\n[FEN \"4k3/1P6/8/8/3p4/8/4P3/4K3 w - - 0 1\"]\n[SetUp \"1\"]\n[Result \"*\"]\n\n1. e4 dxe3 2. b8=Q+ Kd7 *\n";
        let g = raw(fen);
        let start = crate::chess::parse_fen("4k3/1P6/8/8/3p4/8/4P3/4K3 w - - 0 1").unwrap();
        let stored = gamerec::record(&g, &start, 30, 0).unwrap();
        assert_eq!(of_stored(&stored), Ok(of_raw(&g).unwrap().identity));
    }

    #[test]
    fn a_damaged_stored_game_is_an_error_not_a_panic() {
        let g = raw(LICHESS);
        let mut stored = gamerec::record(&g, &Chess::default(), 30, 0).unwrap();
        stored.fields[MOVES_FIELD] = vec![250; 4];
        assert!(of_stored(&stored).is_err());
        stored.fields.pop();
        assert!(of_stored(&stored).is_err());
    }
}

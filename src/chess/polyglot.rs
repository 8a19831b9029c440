//! Polyglot move encoding: the 16-bit `.bin` move layout and its conversion to and from the
//! book's move codes and shakmaty moves (castling as king-takes-rook or as the king's two
//! squares; key-only moves translated literally).
//!
//! A Polyglot move is `to` square in bits 0–5, `from` square in bits 6–11 (a1 = 0 … h8 = 63)
//! and promotion in bits 12–14 (1 knight, 2 bishop, 3 rook, 4 queen). Castling is written
//! king-takes-rook (`e1h1`, `e1a1`, `e8h8`, `e8a8`).

use shakmaty::{Chess, File, Move, Position, Role, Square};

use super::{MoveCode, PosState};

#[cfg(test)]
fn promo_to_pg(role: Option<Role>) -> u16 {
    match role {
        Some(Role::Knight) => 1,
        Some(Role::Bishop) => 2,
        Some(Role::Rook) => 3,
        Some(Role::Queen) => 4,
        _ => 0,
    }
}

/// A Polyglot move from its squares (castling must already be king-takes-rook). Tests build
/// `.bin` entries with it; reading and export never need it.
#[cfg(test)]
pub(crate) fn pg_encode(from: Square, to: Square, promotion: Option<Role>) -> u16 {
    u16::from(to) | (u16::from(from) << 6) | (promo_to_pg(promotion) << 12)
}

/// The squares and promotion of a Polyglot move; `None` for impossible codes (from = to,
/// promotion code above 4, bit 15 set).
pub(crate) fn pg_decode(mv: u16) -> Option<(Square, Square, Option<Role>)> {
    let to = Square::new(u32::from(mv & 63));
    let from = Square::new(u32::from((mv >> 6) & 63));
    let promotion = match mv >> 12 {
        0 => None,
        1 => Some(Role::Knight),
        2 => Some(Role::Bishop),
        3 => Some(Role::Rook),
        4 => Some(Role::Queen),
        _ => return None,
    };
    (from != to).then_some((from, to, promotion))
}

/// Polyglot encoding of a legal move: castling as king-takes-rook (shakmaty's `Move::to()` of
/// a castling move is the rook's square).
#[cfg(test)]
pub(crate) fn pg_from_move(m: &Move) -> u16 {
    pg_encode(m.from().unwrap_or_else(|| m.to()), m.to(), m.promotion())
}

/// Bijection between the top nibbles: Polyglot promotion 1..=4 is the book's role code 2..=5;
/// the other values are permuted so that every 16-bit value survives a round trip.
const PG_TO_CODE_NIBBLE: [u16; 16] = [0, 2, 3, 4, 5, 1, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15];
const CODE_TO_PG_NIBBLE: [u16; 16] = [0, 5, 1, 2, 3, 4, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15];

/// The book's move code of a Polyglot move, read literally (no castling interpretation): from
/// and to squares swap places, promotion 1..=4 becomes role code 2..=5. A bijection on `u16`;
/// used for the moves of key-only entries.
pub(crate) fn raw_code_from_pg(pg: u16) -> MoveCode {
    ((pg >> 6) & 63) | ((pg & 63) << 6) | (PG_TO_CODE_NIBBLE[usize::from(pg >> 12)] << 12)
}

/// Inverse of [`raw_code_from_pg`].
pub(crate) fn raw_pg_from_code(code: MoveCode) -> u16 {
    ((code >> 6) & 63) | ((code & 63) << 6) | (CODE_TO_PG_NIBBLE[usize::from(code >> 12)] << 12)
}

const WHITE_KING: u8 = 6;
const BLACK_KING: u8 = 12;

/// The Polyglot move of a book move code in a known position: castling (the side to move's king
/// from e1/e8 two squares to g/c) becomes king-takes-rook; everything else keeps its squares.
pub(crate) fn code_to_pg(code: MoveCode, state: &PosState) -> u16 {
    let from = usize::from(code & 63);
    let to = usize::from((code >> 6) & 63);
    let (king, home) = if state.black_to_move {
        (BLACK_KING, 60)
    } else {
        (WHITE_KING, 4)
    };
    if code >> 12 == 0 && from == home && state.squares[from] == king {
        let rook = if to == home + 2 {
            Some(home + 3)
        } else if to + 2 == home {
            Some(home - 4)
        } else {
            None
        };
        if let Some(r) = rook {
            return (r as u16) | ((from as u16) << 6);
        }
    }
    raw_pg_from_code(code)
}

/// The legal move a Polyglot move denotes in a position. Castling is accepted as
/// king-takes-rook (standard) and as the king's two-square move (`e1g1`, as Fox and many lichess
/// books write it); the flag tells the latter.
pub(crate) fn pg_to_legal(pos: &Chess, pg: u16) -> Option<(Move, bool)> {
    pg_in_moves(&pos.legal_moves(), pg)
}

/// [`pg_to_legal`] against a precomputed list of legal moves.
pub(crate) fn pg_in_moves(legal: &[Move], pg: u16) -> Option<(Move, bool)> {
    let (from, to, promotion) = pg_decode(pg)?;
    for &m in legal {
        match m {
            Move::Castle { king, rook } => {
                if promotion.is_none() && from == king {
                    if to == rook {
                        return Some((m, false));
                    }
                    let file = if rook > king { File::G } else { File::C };
                    if to == Square::from_coords(file, king.rank()) {
                        return Some((m, true));
                    }
                }
            }
            _ => {
                if m.from() == Some(from) && m.to() == to && m.promotion() == promotion {
                    return Some((m, false));
                }
            }
        }
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chess::tests_support::play;
    use crate::chess::{encode_move, move_uci};

    use crate::chess::tests_support::sq;

    #[test]
    fn pg_move_layout() {
        // e2e4: to e4 = file 4, rank 3; from e2 = file 4, rank 1.
        let e2e4 = pg_encode(sq("e2"), sq("e4"), None);
        assert_eq!(e2e4, 4 | (3 << 3) | (4 << 6) | (1 << 9));
        assert_eq!(pg_decode(e2e4), Some((sq("e2"), sq("e4"), None)));
        let promo = pg_encode(sq("a7"), sq("a8"), Some(Role::Knight));
        assert_eq!(promo >> 12, 1);
        assert_eq!(pg_encode(sq("a7"), sq("b8"), Some(Role::Queen)) >> 12, 4);
        assert_eq!(pg_decode(0), None, "from = to");
        assert_eq!(pg_decode(e2e4 | (5 << 12)), None, "promotion code 5");
        assert_eq!(pg_decode(e2e4 | 0x8000), None);
    }

    #[test]
    fn legal_moves_round_trip_with_castling_and_promotions() {
        let positions = [
            Chess::default(),
            play(&[
                "e4", "e5", "Nf3", "Nc6", "Bc4", "Nf6", "d3", "d6", "Bg5", "Be6", "Nc3", "Qd7",
            ]),
            crate::chess::parse_fen("r3k2r/1P4P1/8/8/8/8/1p4p1/R3K2R w KQkq - 0 1").unwrap(),
            crate::chess::parse_fen("r3k2r/1P4P1/8/8/8/8/1p4p1/R3K2R b KQkq - 0 1").unwrap(),
            play(&["e4", "d5", "e5", "f5"]),
            crate::chess::parse_fen("r3k2r/pppppppp/8/8/8/8/PPPPPPPP/R3K2R w KQkq - 0 1").unwrap(),
            crate::chess::parse_fen("r3k2r/pppppppp/8/8/8/8/PPPPPPPP/R3K2R b KQkq - 0 1").unwrap(),
        ];
        let mut castles = 0;
        let mut promos = 0;
        for pos in &positions {
            let state = PosState::from_chess(pos);
            for m in pos.legal_moves() {
                let pg = pg_from_move(&m);
                assert_eq!(pg_to_legal(pos, pg), Some((m, false)), "{m:?}");
                let code = encode_move(&m);
                assert_eq!(code_to_pg(code, &state), pg, "{}", move_uci(code));
                if let Move::Castle { king, rook } = m {
                    castles += 1;
                    assert_eq!(pg_decode(pg), Some((king, rook, None)));
                    // The king's two-square form is accepted too and flagged.
                    let file = if rook > king { File::G } else { File::C };
                    let two = pg_encode(king, Square::from_coords(file, king.rank()), None);
                    assert_eq!(pg_to_legal(pos, two), Some((m, true)));
                    let dest = Square::from_coords(file, king.rank());
                    assert_eq!(move_uci(code), format!("{king}{dest}"));
                }
                if m.promotion().is_some() {
                    promos += 1;
                }
            }
        }
        assert_eq!(
            castles, 5,
            "O-O in the Italian, both castlings for either side"
        );
        assert_eq!(promos, 32);
        let start = Chess::default();
        assert_eq!(
            pg_to_legal(&start, pg_encode(sq("e2"), sq("e5"), None)),
            None
        );
        let italian = &positions[1];
        let e1h1 = pg_encode(sq("e1"), sq("h1"), None);
        let (m, _) = pg_to_legal(italian, e1h1).unwrap();
        assert_eq!(move_uci(encode_move(&m)), "e1g1");
    }

    #[test]
    fn raw_codes_are_a_bijection() {
        for pg in 0..=u16::MAX {
            assert_eq!(raw_pg_from_code(raw_code_from_pg(pg)), pg);
        }
        let e7e8q = pg_encode(sq("e7"), sq("e8"), Some(Role::Queen));
        assert_eq!(move_uci(raw_code_from_pg(e7e8q)), "e7e8q");
        assert_eq!(
            move_uci(raw_code_from_pg(pg_encode(sq("e1"), sq("h1"), None))),
            "e1h1"
        );
    }
}

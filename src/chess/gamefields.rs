//! The field layout of a stored chess game (docs/FORMAT.md §15.2): the kept tags, the mainline
//! as move ranks and the plies the book counted, in that order; and the upgrade of a game
//! stored by format 6 (no `UTCDate`, no counted plies) to it.

use crate::store::gameblock::StoredGame;

/// The tags a game store keeps (brief §9, plus `UTCDate`, from which lichess games take their
/// date), in the order of a stored game's fields and of the PGN it gives back.
pub const KEPT_TAGS: [&str; 13] = [
    "Event",
    "Site",
    "Date",
    "Round",
    "White",
    "Black",
    "Result",
    "WhiteElo",
    "BlackElo",
    "TimeControl",
    "ECO",
    "FEN",
    "UTCDate",
];

pub const EVENT_FIELD: usize = 0;
pub const SITE_FIELD: usize = 1;
pub const DATE_FIELD: usize = 2;
pub const ROUND_FIELD: usize = 3;
pub const WHITE_FIELD: usize = 4;
pub const BLACK_FIELD: usize = 5;
pub const RESULT_FIELD: usize = 6;
pub const WHITE_ELO_FIELD: usize = 7;
pub const BLACK_ELO_FIELD: usize = 8;
pub const TIME_CONTROL_FIELD: usize = 9;
pub const FEN_FIELD: usize = 11;
pub const UTC_DATE_FIELD: usize = 12;
/// The mainline, as move ranks ([`super::mainline`]).
pub const MOVES_FIELD: usize = KEPT_TAGS.len();
/// The plies of the mainline the book counted (`min(max_ply, plies)` of the import that
/// stored it), as a varint; empty in a game upgraded from format 6 (then the default
/// `max_ply` is assumed, docs/FORMAT.md §15.2).
pub const PLIES_FIELD: usize = KEPT_TAGS.len() + 1;
/// The fields in which two records of one date and id agree when they are one game (the
/// tagged identity of `ops::gameident`, as stored: the result, the starting position, the
/// mainline as move ranks, which name the moves whatever their spelling).
pub const IDENTITY_FIELDS: [usize; 3] = [RESULT_FIELD, FEN_FIELD, MOVES_FIELD];
/// The fields of a stored chess game.
pub const FIELDS: usize = KEPT_TAGS.len() + 2;
/// The fields of a chess game stored by format 6: the first 12 tags, then the mainline.
pub const V6_FIELDS: usize = 13;

/// Brings a game stored by format 6 to this layout (an empty `UTCDate`, the counted plies
/// unknown); a game of this layout is left as it is.
pub fn upgrade(g: &mut StoredGame) {
    if g.fields.len() == V6_FIELDS {
        g.fields.insert(UTC_DATE_FIELD, Vec::new());
        g.fields.push(Vec::new());
    }
}

/// The counted plies as [`PLIES_FIELD`] holds them.
pub fn plies_field(plies: usize) -> Vec<u8> {
    let mut v = Vec::new();
    crate::store::varint::put(&mut v, plies as u64);
    v
}

/// The counted plies a [`PLIES_FIELD`] names; `None` when it is empty or malformed.
pub fn counted_plies(field: &[u8]) -> Option<usize> {
    let mut at = 0;
    let v = crate::store::varint::get(field, &mut at)?;
    (at == field.len()).then_some(v as usize)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn format_6_games_are_upgraded_once() {
        let mut g = StoredGame {
            id: 7,
            fields: (0..V6_FIELDS).map(|i| vec![i as u8]).collect(),
        };
        upgrade(&mut g);
        assert_eq!(g.fields.len(), FIELDS);
        assert!(g.fields[UTC_DATE_FIELD].is_empty());
        assert_eq!(g.fields[MOVES_FIELD], vec![12]);
        assert!(g.fields[PLIES_FIELD].is_empty());
        let again = g.clone();
        upgrade(&mut g);
        assert_eq!(g, again);
    }

    #[test]
    fn plies_round_trip() {
        for n in [0, 1, 30, 127, 128, 20_000] {
            assert_eq!(counted_plies(&plies_field(n)), Some(n));
        }
        assert_eq!(counted_plies(&[]), None);
        assert_eq!(counted_plies(&[0x80]), None);
        assert_eq!(counted_plies(&[1, 2]), None);
    }
}

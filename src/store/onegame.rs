//! When two stored records are one game, and which of them a merge keeps (brief §9: a game
//! counts once, whatever the order of imports and merges). Records of one game share their
//! date and id (so they are neighbours in the store's order, [`store_order`]) and agree in the
//! fields the codec names as the game's identity (for chess its result, starting position and
//! mainline as moves: the same lichess game exported by two tools, its tags re-spelled or
//! re-ordered, its ratings or clock tags added, is one game), or, for a codec that names none,
//! are equal but for the plies they counted. Of one game's records a merge keeps the deepest
//! (the most plies counted), then the one whose file keeps the most facets, then the one with
//! the most fields filled, then the first in the store's order: the same record whatever the
//! order of the inputs, in the counts (`ops::shared_games`) and in the store
//! (`book::games::MergeGames`).

use std::cmp::Ordering;

use super::PositionCodec;
use super::facet::FacetSet;
use super::gameblock::{StoredGame, counted_plies_of, date_key, same_game_but_plies, store_order};

/// The codec's rule for one game's records.
#[derive(Clone, Copy, Debug, Default)]
pub struct OneGame {
    /// The field holding the plies a record counted ([`PositionCodec::counted_plies_field`]).
    plies: Option<usize>,
    /// The fields two records of one game agree in
    /// ([`PositionCodec::game_identity_fields`]); empty: all but `plies`.
    identity: &'static [usize],
}

impl OneGame {
    pub fn of(codec: &dyn PositionCodec) -> OneGame {
        OneGame {
            plies: codec.counted_plies_field(),
            identity: codec.game_identity_fields(),
        }
    }

    /// The date and id a record shares with the other records of its game (its place in the
    /// store's order, but for the other fields).
    pub fn key(g: &StoredGame) -> (u32, u64) {
        (date_key(g), g.id)
    }

    /// Whether `a` and `b` share their date and id ([`Self::key`]).
    pub fn same_key(a: &StoredGame, b: &StoredGame) -> bool {
        Self::key(a) == Self::key(b)
    }

    /// Whether `a` and `b` are records of one game.
    pub fn same(&self, a: &StoredGame, b: &StoredGame) -> bool {
        if !Self::same_key(a, b) {
            return false;
        }
        if a.fields == b.fields {
            return true;
        }
        if self.identity.is_empty() {
            return same_game_but_plies(a, b, self.plies);
        }
        a.fields.len() == b.fields.len()
            && self
                .identity
                .iter()
                .all(|&i| a.fields.get(i).is_some_and(|f| Some(f) == b.fields.get(i)))
    }

    /// The plies a record counted (0 when the codec keeps no count or it does not read).
    pub fn plies(&self, g: &StoredGame) -> u64 {
        self.plies.map_or(0, |p| counted_plies_of(g, p))
    }

    /// Which of two records of one game a merge keeps, each with the [`facet_rank`] of the
    /// file holding it: `Greater` when `a` is kept over `b`: it counted more plies; or as many,
    /// and its file keeps more facets (its counts have the cells the other copy's lack); or as
    /// many, and it knows more (more fields filled: the export with the ratings, clock and
    /// `UTCDate` tags over a bare one); or as much, and it comes first in the store's order.
    pub fn prefer(&self, a: (&StoredGame, FacetRank), b: (&StoredGame, FacetRank)) -> Ordering {
        let filled = |g: &StoredGame| g.fields.iter().filter(|f| !f.is_empty()).count();
        self.plies(a.0)
            .cmp(&self.plies(b.0))
            .then_with(|| a.1.cmp(&b.1))
            .then_with(|| filled(a.0).cmp(&filled(b.0)))
            .then_with(|| store_order(b.0, a.0))
    }
}

/// How much a file's facets tell of its games' cells: the facets it keeps, then their bits
/// (a total order, so that the copy kept does not depend on the order of the inputs).
pub type FacetRank = (u32, u8);

/// The [`FacetRank`] of a file keeping `f`.
pub fn facet_rank(f: FacetSet) -> FacetRank {
    (f.0.count_ones(), f.0)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Fields: 0 a name, 1 nothing, 2 the date (`gameblock::DATE_FIELD`), 3 the identity (moves),
    /// 4 the plies counted.
    fn rule() -> OneGame {
        OneGame {
            plies: Some(4),
            identity: &[3],
        }
    }

    fn g(id: u64, name: &str, date: &str, moves: &[u8], plies: u64) -> StoredGame {
        let mut p = Vec::new();
        crate::store::varint::put(&mut p, plies);
        let fields = vec![
            name.as_bytes().to_vec(),
            Vec::new(),
            date.as_bytes().to_vec(),
            moves.to_vec(),
            p,
        ];
        StoredGame { id, fields }
    }

    #[test]
    fn one_game_is_one_date_id_and_identity() {
        let r = rule();
        let a = g(7, "Alice", "2020.01.02", &[1, 2, 3], 30);
        // Another spelling of its tags, counted deeper: one game.
        let b = g(7, "alice (lichess)", "2020.01.02", &[1, 2, 3], 40);
        assert!(r.same(&a, &b) && r.same(&b, &a) && r.same(&a, &a));
        // Other moves, id or date: another game.
        assert!(!r.same(&a, &g(7, "Alice", "2020.01.02", &[1, 2, 4], 30)));
        assert!(!r.same(&a, &g(8, "Alice", "2020.01.02", &[1, 2, 3], 30)));
        assert!(!r.same(&a, &g(7, "Alice", "2020.01.03", &[1, 2, 3], 30)));
        // Without identity fields, only the plies may differ.
        let plain = OneGame {
            plies: Some(4),
            identity: &[],
        };
        assert!(!plain.same(&a, &b));
        assert!(plain.same(&a, &g(7, "Alice", "2020.01.02", &[1, 2, 3], 40)));
        assert!(plain.same(&a, &a));
    }

    #[test]
    fn the_deepest_then_the_first_in_store_order_is_kept() {
        let r = rule();
        let shallow = g(7, "A", "2020.01.02", &[1], 30);
        let deep = g(7, "B", "2020.01.02", &[1], 40);
        let (none, all) = (facet_rank(FacetSet::NONE), facet_rank(FacetSet::ALL));
        let p = |a: &StoredGame, ra, b: &StoredGame, rb| r.prefer((a, ra), (b, rb));
        assert_eq!(p(&deep, none, &shallow, all), Ordering::Greater);
        assert_eq!(p(&shallow, all, &deep, none), Ordering::Less);
        let first = g(7, "A", "2020.01.02", &[1], 40);
        assert_eq!(p(&first, none, &deep, none), Ordering::Greater);
        assert_eq!(p(&deep, none, &first, none), Ordering::Less);
        assert_eq!(p(&deep, none, &deep, none), Ordering::Equal);
        // As deep, a record with a field more is kept over one first in the store's order.
        let bare = g(7, "", "2020.01.02", &[1], 40);
        assert_eq!(p(&deep, none, &bare, none), Ordering::Greater);
        assert_eq!(p(&bare, none, &deep, none), Ordering::Less);
        // As deep, the copy in a file of more facets is kept over a record with more fields;
        // the same record in two files: the one of more facets.
        assert_eq!(p(&bare, all, &deep, none), Ordering::Greater);
        assert_eq!(p(&deep, none, &bare, all), Ordering::Less);
        assert_eq!(p(&deep, all, &deep, none), Ordering::Greater);
        let month = facet_rank(FacetSet(FacetSet::MONTH));
        let mode = facet_rank(FacetSet(FacetSet::MODE));
        assert_eq!(p(&deep, mode, &deep, month), Ordering::Greater);
    }
}

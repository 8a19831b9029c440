//! Which games a (position, move, cell) names (brief §9; docs/GAMES.md, decision 5): the
//! [`NEWEST`] newest games by (date, id) and the [`STRONGEST`] strongest by rating sum, then
//! newest. The selection is a function of the set of games alone, so merging the references of
//! two books (the union of their lists, then the same selection) gives what one import of all
//! the games gives, whatever the order of imports and merges: associative and commutative, as
//! the property tests check. Stored per file in `game_refs` (`store::book::refs`, FORMAT §15.4).

/// What a game's references need of it, as its codec reads it from the stored game
/// ([`super::PositionCodec::index_game`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct GameFacts {
    /// The game's cell, every facet (the book masks what it does not keep).
    pub cell: super::facet::Cell,
    /// WhiteElo + BlackElo when both are ratings the book counts, else 0.
    pub strength: u16,
    /// WhiteElo and BlackElo when ratings the book counts (0: none).
    pub white: u16,
    pub black: u16,
    /// The result as the import counts it: 0 white won, 1 draw, 2 black won, 3 unknown.
    pub result: u8,
}

/// Newest games a cell names.
pub const NEWEST: usize = 8;
/// Strongest games a cell names.
pub const STRONGEST: usize = 15;

/// A game as a reference list orders it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct GameRef {
    /// A date that sorts (e.g. days since an epoch; unknown dates lowest).
    pub date: u32,
    /// The game's id (brief §9).
    pub id: u64,
    /// WhiteElo + BlackElo (0 when unrated).
    pub rating_sum: u32,
}

impl GameRef {
    fn newness(&self) -> (u32, u64, u32) {
        (self.date, self.id, self.rating_sum)
    }

    fn strength(&self) -> (u32, u32, u64) {
        (self.rating_sum, self.date, self.id)
    }
}

/// A cell's references: its newest and strongest games, each list best first.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Refs {
    newest: Vec<GameRef>,
    strongest: Vec<GameRef>,
}

impl Refs {
    /// The references of a set of games (a game listed twice counts once).
    pub fn of(games: impl IntoIterator<Item = GameRef>) -> Refs {
        let all: Vec<GameRef> = games.into_iter().collect();
        Refs {
            newest: top(&all, NEWEST, GameRef::newness),
            strongest: top(&all, STRONGEST, GameRef::strength),
        }
    }

    /// The references of the union of the games behind `self` and `other`.
    pub fn merge(&self, other: &Refs) -> Refs {
        let newest: Vec<GameRef> = self.newest.iter().chain(&other.newest).copied().collect();
        let strongest: Vec<GameRef> = self
            .strongest
            .iter()
            .chain(&other.strongest)
            .copied()
            .collect();
        Refs {
            newest: top(&newest, NEWEST, GameRef::newness),
            strongest: top(&strongest, STRONGEST, GameRef::strength),
        }
    }

    /// The newest games, newest first.
    pub fn newest(&self) -> &[GameRef] {
        &self.newest
    }

    /// The strongest games, strongest first (equal strength: newest first).
    pub fn strongest(&self) -> &[GameRef] {
        &self.strongest
    }
}

/// The `k` best distinct games of `games` by `order`, best first.
fn top<K: Ord>(games: &[GameRef], k: usize, order: fn(&GameRef) -> K) -> Vec<GameRef> {
    let mut v = games.to_vec();
    v.sort_unstable_by_key(|g| std::cmp::Reverse(order(g)));
    v.dedup();
    v.truncate(k);
    v
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn arb_games() -> impl Strategy<Value = Vec<GameRef>> {
        // Few dates, ids and ratings, so that ties and repeats are common.
        proptest::collection::vec(
            (0u32..6, 0u64..40, prop_oneof![Just(0u32), 3000u32..3010]).prop_map(
                |(date, id, rating_sum)| GameRef {
                    date,
                    id,
                    rating_sum,
                },
            ),
            0..60,
        )
    }

    proptest! {
        /// Merging the references of parts equals the references of the whole, in any
        /// grouping and order.
        #[test]
        fn merges_are_associative_commutative_and_exact(
            a in arb_games(),
            b in arb_games(),
            c in arb_games(),
        ) {
            let (ra, rb, rc) = (Refs::of(a.clone()), Refs::of(b.clone()), Refs::of(c.clone()));
            let whole = Refs::of(a.iter().chain(&b).chain(&c).copied());
            prop_assert_eq!(ra.merge(&rb).merge(&rc), whole.clone());
            prop_assert_eq!(ra.merge(&rb.merge(&rc)), whole.clone());
            prop_assert_eq!(rc.merge(&ra).merge(&rb), whole.clone());
            prop_assert_eq!(ra.merge(&ra), ra.clone());
            prop_assert!(whole.newest().len() <= NEWEST && whole.strongest().len() <= STRONGEST);
        }
    }

    #[test]
    fn newest_by_date_then_id_strongest_by_ratings_then_newest() {
        let g = |date, id, rating_sum| GameRef {
            date,
            id,
            rating_sum,
        };
        let r = Refs::of([g(1, 5, 5000), g(3, 1, 4000), g(3, 2, 0), g(2, 9, 5000)]);
        assert_eq!(
            r.newest(),
            [g(3, 2, 0), g(3, 1, 4000), g(2, 9, 5000), g(1, 5, 5000)]
        );
        assert_eq!(r.strongest()[..2], [g(2, 9, 5000), g(1, 5, 5000)]);
        let many = Refs::of((0..40).map(|i| g(i, u64::from(i), 2000 + i % 7)));
        assert_eq!(many.newest().len(), NEWEST);
        assert_eq!(many.newest()[0], g(39, 39, 2000 + 39 % 7));
        assert_eq!(many.strongest().len(), STRONGEST);
        assert_eq!(many.strongest()[0], g(34, 34, 2006));
    }
}

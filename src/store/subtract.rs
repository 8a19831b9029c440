//! Taking counted games back out of entries: a merge of books that counted the same games
//! adds their counts, and subtracts the extra copies' entries ([`Subtract`]) so that each game
//! counts once (brief §9). The inverse of [`Entry::merge`] on counts and cells.

use std::cell::Cell as Counter;
use std::cmp::Ordering;
use std::rc::Rc;

use super::PositionCodec;
use super::entry::{Entry, MoveRec};
use super::error::{Error, Result};
use super::facet::CellStat;

/// `a - b`, clamped at zero; `clamped` says whether it was.
fn minus(a: u64, b: u64, clamped: &mut bool) -> u64 {
    if b > a {
        *clamped = true;
    }
    a.saturating_sub(b)
}

/// Each named counter of `$a` less `$b`'s ([`minus`]).
macro_rules! minus_each {
    ($a:expr, $b:expr, $clamped:expr; $($field:ident),+) => {
        $($a.$field = minus($a.$field, $b.$field, $clamped);)+
    };
}

impl CellStat {
    /// Takes `o`'s counts out of this cell's (clamped at zero; `clamped` set if any was).
    pub(crate) fn subtract(&mut self, o: &CellStat, clamped: &mut bool) {
        minus_each!(self, o, clamped; white, draws, black, unknown, rating_sum, rating_count,
            opp_sum, opp_count);
    }
}

/// `a`'s cells less `b`'s (both sorted by cell id); cells left without games are dropped, but
/// for their opponent ratings, which a cell only has with games.
fn subtract_cells(a: &[CellStat], b: &[CellStat], clamped: &mut bool) -> Vec<CellStat> {
    let mut out = Vec::with_capacity(a.len());
    let mut j = 0;
    for c in a {
        while j < b.len() && b[j].cell < c.cell {
            // A cell to take out that this move does not have.
            *clamped |= b[j].games() > 0;
            j += 1;
        }
        let mut c = *c;
        if j < b.len() && b[j].cell == c.cell {
            c.subtract(&b[j], clamped);
            j += 1;
        }
        if c.games() > 0 {
            out.push(c);
        }
    }
    *clamped |= b[j..].iter().any(|c| c.games() > 0);
    out
}

impl MoveRec {
    /// Takes another record of the same move out of this one: counts, rating sums and cells
    /// (a record without cells is wholly in the all-unknown cell). Clamped at zero; `clamped`
    /// is set when `o` held more than this record in any counter.
    pub(crate) fn subtract(&mut self, o: &MoveRec, clamped: &mut bool) {
        let cells = (!self.cells.is_empty() || !o.cells.is_empty())
            .then(|| subtract_cells(&self.as_cells(), &o.as_cells(), clamped));
        let had_cells = !self.cells.is_empty();
        minus_each!(self, o, clamped; white, draws, black, unknown, rating_sum, rating_count);
        if let Some(mut cells) = cells {
            // The counters are what the cells hold: clamped, a cell can lose less than the
            // counters do (games `o` holds in a cell this move lacks), and the two would part.
            self.cells = cells.clone();
            super::cells::set_totals(self);
            // A record without cells stays without when all that is left is the unknown cell.
            if !had_cells
                && cells.len() == 1
                && cells[0].cell == super::facet::CellId(0)
                && cells[0].opp_count == 0
            {
                cells.clear();
            }
            self.cells = cells;
        }
    }
}

impl Entry {
    /// Takes `other`'s moves (same identity, every move by code) out of this entry's; a move
    /// left without games (and without an imported weight) is dropped. Returns whether any
    /// counter was clamped at zero (`other` held games this entry does not).
    pub(crate) fn subtract(&mut self, other: &Entry) -> bool {
        debug_assert!(self.same_id(other));
        let mut clamped = false;
        let mut theirs = other.moves.iter().peekable();
        for m in self.moves.iter_mut() {
            while let Some(o) = theirs.next_if(|o| o.order_key() < m.order_key()) {
                clamped |= o.games() > 0;
            }
            if let Some(o) = theirs.next_if(|o| o.order_key() == m.order_key()) {
                m.subtract(o, &mut clamped);
            }
        }
        clamped |= theirs.any(|o| o.games() > 0);
        self.moves.retain(|m| m.games() > 0 || m.extra.is_some());
        clamped
    }
}

/// An entry stream with the entries of `minus` (sorted the same way, every entry positioned)
/// taken out of it: what a merge streams when some of its inputs counted the same games
/// (`minus` then holds the extra copies' counts). Entries of either stream may hold move
/// indices; an entry that meets one of `minus` has its moves turned into codes first.
/// [`Subtract::clamped`] counts the entries of `minus` that held more than the stream (a
/// pruned or re-faceted input), whose counters were clamped at zero.
pub struct Subtract<I, J: Iterator> {
    stream: I,
    minus: std::iter::Peekable<J>,
    codec: std::sync::Arc<dyn PositionCodec>,
    clamped: Rc<Counter<u64>>,
}

impl<I, J> Subtract<I, J>
where
    I: Iterator<Item = Result<Entry>>,
    J: Iterator<Item = Result<Entry>>,
{
    pub fn new(stream: I, minus: J, codec: std::sync::Arc<dyn PositionCodec>) -> Self {
        Subtract {
            stream,
            minus: minus.peekable(),
            codec,
            clamped: Rc::default(),
        }
    }

    /// A handle to the count of clamped entries, to read once the stream is consumed.
    pub fn clamped(&self) -> Rc<Counter<u64>> {
        self.clamped.clone()
    }

    fn codes(&self, e: Entry) -> Result<Entry> {
        e.with_codes(&*self.codec).map_err(Error::from)
    }

    fn take_out(&mut self, e: Entry) -> Result<Entry> {
        // Entries of `minus` before `e`: games to take out of entries the stream lacks.
        loop {
            match self.minus.peek() {
                Some(Ok(m)) if m.cmp_id(&e) == Ordering::Less => {
                    self.minus.next();
                    self.clamped.set(self.clamped.get() + 1);
                }
                Some(Ok(_)) | None => break,
                Some(Err(_)) => {
                    return match self.minus.next() {
                        Some(Err(err)) => Err(err),
                        _ => Err(Error::Internal("subtraction stream".into())),
                    };
                }
            }
        }
        if !self
            .minus
            .peek()
            .is_some_and(|m| m.as_ref().is_ok_and(|m| m.same_id(&e)))
        {
            return Ok(e);
        }
        let m = match self.minus.next() {
            Some(Ok(m)) => self.codes(m)?,
            _ => return Err(Error::Internal("subtraction stream".into())),
        };
        let mut e = self.codes(e)?;
        if e.subtract(&m) {
            self.clamped.set(self.clamped.get() + 1);
        }
        Ok(e)
    }
}

impl<I, J> Iterator for Subtract<I, J>
where
    I: Iterator<Item = Result<Entry>>,
    J: Iterator<Item = Result<Entry>>,
{
    type Item = Result<Entry>;

    fn next(&mut self) -> Option<Result<Entry>> {
        loop {
            let e = match self.stream.next()? {
                Ok(e) => e,
                Err(err) => return Some(Err(err)),
            };
            if e.pos.is_none() {
                // Key-only entries (Polyglot imports) hold no counted games.
                return Some(Ok(e));
            }
            match self.take_out(e) {
                // An entry whose every move was taken out is gone.
                Ok(e) if e.moves.is_empty() => continue,
                other => return Some(other),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::facet::CellId;
    use proptest::prelude::*;

    fn arb_cell() -> impl Strategy<Value = CellStat> {
        (0u32..6, 0u64..3, 0u64..3, 0u64..3, 0u64..2, 0u64..5000).prop_map(
            |(cell, white, draws, black, unknown, opp)| CellStat {
                cell: CellId(cell),
                white,
                draws,
                black,
                unknown,
                rating_sum: 2 * opp,
                rating_count: white.min(1),
                opp_sum: opp,
                opp_count: draws.min(1),
            },
        )
    }

    fn arb_move(with_cells: bool) -> impl Strategy<Value = MoveRec> {
        (
            0u16..6,
            proptest::collection::btree_map(0u32..6, arb_cell(), 0..4),
        )
            .prop_map(move |(mv, cells)| {
                let cells: Vec<CellStat> = cells
                    .into_iter()
                    .map(|(id, mut c)| {
                        c.cell = CellId(id);
                        c
                    })
                    .filter(|c| c.games() > 0)
                    .collect();
                let mut m = MoveRec {
                    mv,
                    ..Default::default()
                };
                for c in &cells {
                    m.white += c.white;
                    m.draws += c.draws;
                    m.black += c.black;
                    m.unknown += c.unknown;
                    m.rating_sum += c.rating_sum;
                    m.rating_count += c.rating_count;
                }
                if with_cells {
                    m.cells = cells;
                }
                m
            })
    }

    fn arb_entry(with_cells: bool) -> impl Strategy<Value = Entry> {
        proptest::collection::vec(arb_move(with_cells), 0..5).prop_map(|moves| {
            let mut e = Entry {
                key: 7,
                pos: Some(vec![1]),
                moves: moves.into_iter().filter(|m| m.games() > 0).collect(),
                coded: None,
            };
            e.normalize();
            e
        })
    }

    proptest! {
        /// (a + b) − b = a, with and without cells, and nothing is clamped.
        #[test]
        fn subtracting_what_was_merged_gives_the_entry_back(
            a in arb_entry(true),
            b in arb_entry(true),
            c in arb_entry(false),
            d in arb_entry(false),
        ) {
            for (a, b) in [(a, b), (c, d)] {
                let mut sum = a.clone();
                sum.merge(b.clone());
                let clamped = sum.subtract(&b);
                prop_assert!(!clamped);
                prop_assert_eq!(sum, a);
            }
        }

        /// Whatever is taken out, clamped or not, a move's counters are what its cells hold.
        #[test]
        fn a_move_left_with_cells_adds_up_to_its_counters(
            a in arb_entry(true),
            b in arb_entry(true),
            c in arb_entry(false),
        ) {
            for (a, b) in [(a.clone(), b.clone()), (a.clone(), c.clone()), (c, b)] {
                let mut left = a;
                left.subtract(&b);
                for m in left.moves.iter().filter(|m| !m.cells.is_empty()) {
                    let mut sum = m.clone();
                    crate::store::cells::set_totals(&mut sum);
                    prop_assert_eq!(&sum, m);
                }
            }
        }

        /// Taking out more than an entry holds clamps at zero and says so: a − (a + b) is
        /// clamped exactly when b has games, and leaves no move.
        #[test]
        fn subtracting_more_than_is_there_is_clamped(
            a in arb_entry(true),
            b in arb_entry(true),
            c in arb_entry(false),
            d in arb_entry(false),
        ) {
            for (a, b) in [(a, b), (c, d)] {
                let mut more = a.clone();
                more.merge(b.clone());
                let mut left = a.clone();
                let clamped = left.subtract(&more);
                prop_assert_eq!(clamped, !b.moves.is_empty());
                prop_assert!(left.moves.is_empty());
            }
        }
    }
}

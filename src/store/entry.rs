//! Book entries: one position (or a bare key) with its move records.

use std::cmp::Ordering;

/// A move's optional extra: a weight and an opaque 32-bit value carried over from an imported
/// book (Polyglot imports store an entry's weight and learn value here). Merging two records of
/// a move adds the weights, saturating, and keeps the larger opaque value ([`MoveRec::add`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct MoveExtra {
    pub weight: u16,
    /// Opaque to the store: compared only to keep the larger one.
    pub learn: u32,
}

/// Statistics of one move from one position.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct MoveRec {
    /// Game-specific move code (for chess see `chess::position::MoveCode`).
    pub mv: u16,
    pub white: u64,
    pub draws: u64,
    pub black: u64,
    pub unknown: u64,
    /// Sum and count of the mover's rating over the games that played this move.
    pub rating_sum: u64,
    pub rating_count: u64,
    /// Weight and opaque value from an imported book, if any.
    pub extra: Option<MoveExtra>,
    /// The counts split by facets (docs/FORMAT.md §12), sorted by cell id, no duplicates;
    /// when not empty, they add up to the counters above exactly. Empty: every game of the
    /// move is in the all-unknown cell (a book without facets, a Polyglot import).
    pub cells: Vec<super::facet::CellStat>,
    /// In memory only, during rewrites: `mv` is not a code but the move's index
    /// ([`crate::store::PositionCodec::index_moves`]), as read from a block by
    /// `Book::iter_for_rewrite`; the writer stores it as an index again. Never persisted.
    pub indexed: bool,
}

impl MoveRec {
    /// Moves sort and merge by code; a move index (`indexed`) never equals a code.
    pub(crate) fn order_key(&self) -> (bool, u16) {
        (self.indexed, self.mv)
    }

    /// The one cell of a move without cells: the all-unknown cell with the move's counts (no
    /// opponent ratings: a book without facets keeps none).
    pub fn unknown_cell(&self) -> super::facet::CellStat {
        super::facet::CellStat {
            cell: super::facet::CellId(0),
            white: self.white,
            draws: self.draws,
            black: self.black,
            unknown: self.unknown,
            rating_sum: self.rating_sum,
            rating_count: self.rating_count,
            opp_sum: 0,
            opp_count: 0,
        }
    }

    /// The move's cells; a move without cells is wholly in the all-unknown cell (a cell only
    /// if it has games: a Polyglot weight alone counts none).
    pub(crate) fn as_cells(&self) -> Vec<super::facet::CellStat> {
        if self.cells.is_empty() {
            Some(self.unknown_cell())
                .filter(|c| c.games() > 0)
                .into_iter()
                .collect()
        } else {
            self.cells.clone()
        }
    }

    pub(crate) fn games(&self) -> u64 {
        self.white
            .saturating_add(self.draws)
            .saturating_add(self.black)
            .saturating_add(self.unknown)
    }

    /// Adds another record of the same move (counts are exact sums; saturating never triggers
    /// below 2^64 games).
    pub(crate) fn add(&mut self, o: &MoveRec) {
        if !self.cells.is_empty() || !o.cells.is_empty() {
            self.cells = super::facet::merge_cells(&self.as_cells(), &o.as_cells());
        }
        self.white = self.white.saturating_add(o.white);
        self.draws = self.draws.saturating_add(o.draws);
        self.black = self.black.saturating_add(o.black);
        self.unknown = self.unknown.saturating_add(o.unknown);
        self.rating_sum = self.rating_sum.saturating_add(o.rating_sum);
        self.rating_count = self.rating_count.saturating_add(o.rating_count);
        self.extra = match (self.extra, o.extra) {
            (Some(a), Some(b)) => Some(MoveExtra {
                weight: a.weight.saturating_add(b.weight),
                learn: a.learn.max(b.learn),
            }),
            (a, b) => a.or(b),
        };
    }
}

/// A position with its moves. `pos == None` marks a key-only entry (moves imported under a key
/// whose position could not be reconstructed); it orders before positioned entries of the same
/// key.
#[derive(Clone, Debug, Default)]
pub struct Entry {
    pub key: u64,
    pub pos: Option<Vec<u8>>,
    /// Sorted by move code, no duplicates.
    pub moves: Vec<MoveRec>,
    /// In memory only, never stored as such: the position as a block stores it, coded with
    /// the model a [`crate::store::BookWriter`] was told to reuse. Set only by
    /// [`crate::store::Book::iter_for_rewrite_coded`] for a writer using that book's model,
    /// which then stores these bytes instead of coding `pos` again. Not part of the entry's
    /// identity or equality (it follows from `pos` and the model).
    pub coded: Option<Vec<u8>>,
}

impl PartialEq for Entry {
    fn eq(&self, other: &Entry) -> bool {
        self.key == other.key && self.pos == other.pos && self.moves == other.moves
    }
}

impl Eq for Entry {}

impl std::hash::Hash for Entry {
    fn hash<H: std::hash::Hasher>(&self, state: &mut H) {
        self.key.hash(state);
        self.pos.hash(state);
        self.moves.hash(state);
    }
}

impl Entry {
    #[doc(hidden)]
    pub fn cmp_id(&self, other: &Entry) -> Ordering {
        self.key
            .cmp(&other.key)
            .then_with(|| self.pos.cmp(&other.pos))
    }

    #[doc(hidden)]
    pub fn same_id(&self, other: &Entry) -> bool {
        self.key == other.key && self.pos == other.pos
    }

    /// Whether some move carries a [`MoveExtra`].
    #[doc(hidden)]
    pub fn has_extra(&self) -> bool {
        self.moves.iter().any(|m| m.extra.is_some())
    }

    /// How many of `other`'s moves this entry lacks (what [`Entry::merge`] would add); both
    /// keep their moves in order.
    pub(crate) fn moves_not_in(&self, other: &Entry) -> usize {
        let mut mine = self.moves.iter().map(MoveRec::order_key).peekable();
        other
            .moves
            .iter()
            .filter(|m| {
                let k = m.order_key();
                while mine.next_if(|&x| x < k).is_some() {}
                mine.next_if_eq(&k).is_none()
            })
            .count()
    }

    /// Merges the moves of an entry with the same identity (sorted merge by move code).
    #[doc(hidden)]
    pub fn merge(&mut self, other: Entry) {
        debug_assert!(self.same_id(&other));
        if self.coded.is_none() {
            self.coded = other.coded;
        }
        if other.moves.is_empty() {
            return;
        }
        let mine = std::mem::take(&mut self.moves);
        let mut out = Vec::with_capacity(mine.len() + other.moves.len());
        let mut a = mine.into_iter().peekable();
        let mut b = other.moves.into_iter().peekable();
        loop {
            match (a.peek(), b.peek()) {
                (Some(x), Some(y)) => match x.order_key().cmp(&y.order_key()) {
                    Ordering::Less => out.push(a.next().unwrap_or_default()),
                    Ordering::Greater => out.push(b.next().unwrap_or_default()),
                    Ordering::Equal => {
                        let mut x = a.next().unwrap_or_default();
                        if let Some(y) = b.next() {
                            x.add(&y);
                        }
                        out.push(x);
                    }
                },
                (Some(_), None) => out.extend(a.by_ref()),
                (None, Some(_)) => out.extend(b.by_ref()),
                (None, None) => break,
            }
        }
        self.moves = out;
    }

    /// Sorts moves and merges duplicates.
    #[doc(hidden)]
    /// The entry with every indexed move (`MoveRec::indexed`, as rewrites and runs read
    /// them) turned back into its code, equal moves merged; as it is when no move is indexed.
    pub(crate) fn with_codes(
        mut self,
        codec: &dyn crate::store::PositionCodec,
    ) -> Result<Entry, crate::store::error::CodecError> {
        if !self.moves.iter().any(|m| m.indexed) {
            return Ok(self);
        }
        let key = self.key;
        let pos = self.pos.as_deref().ok_or_else(|| {
            crate::store::error::CodecError::from(format!(
                "key {key:016x}: move indices without a position"
            ))
        })?;
        let idx: Vec<u8> = self
            .moves
            .iter()
            .filter(|m| m.indexed)
            .map(|m| u8::try_from(m.mv))
            .collect::<Result<_, _>>()
            .map_err(|_| {
                crate::store::error::CodecError::from(format!(
                    "key {key:016x}: a move index beyond 255"
                ))
            })?;
        let codes = codec.unindex_moves(pos, &idx).map_err(|reason| {
            crate::store::error::CodecError::from(format!(
                "key {key:016x}: move indices invalid: {reason}"
            ))
        })?;
        for (m, code) in self.moves.iter_mut().filter(|m| m.indexed).zip(codes) {
            m.mv = code;
            m.indexed = false;
        }
        self.normalize();
        Ok(self)
    }

    pub fn normalize(&mut self) {
        if self.moves.len() < 2 {
            return;
        }
        self.moves.sort_by_key(MoveRec::order_key);
        // In place: a record equal to the one kept before it is added into that one.
        self.moves.dedup_by(|later, kept| {
            let same = kept.order_key() == later.order_key();
            if same {
                kept.add(later);
            }
            same
        });
    }
}

/// What a [`MergeIter`] merges: an entry, or one whose decoding ends when the merge takes it
/// (a run's entry with its cells still coded, [`crate::store::block::CodedCells`]), so that the
/// heads waiting beside the one taken hold no more than their coded bytes.
pub trait MergeHead<E> {
    /// The entry as far as it is decoded: at least its identity (key and position).
    fn id(&self) -> &Entry;
    /// The whole entry.
    fn into_entry(self) -> Result<Entry, E>;
}

impl<E> MergeHead<E> for Entry {
    fn id(&self) -> &Entry {
        self
    }

    fn into_entry(self) -> Result<Entry, E> {
        Ok(self)
    }
}

/// Merges any number of entry streams, each sorted by identity, into one sorted stream in
/// which equal identities are combined. Memory: one head per input, and the entry being
/// combined, whole.
pub struct MergeIter<I: Iterator<Item = Result<H, E>>, E, H: MergeHead<E> = Entry> {
    inputs: Vec<I>,
    heads: Vec<Option<H>>,
    started: bool,
    failed: bool,
}

impl<I: Iterator<Item = Result<H, E>>, E, H: MergeHead<E>> MergeIter<I, E, H> {
    pub fn new(inputs: Vec<I>) -> Self {
        let n = inputs.len();
        MergeIter {
            inputs,
            heads: (0..n).map(|_| None).collect(),
            started: false,
            failed: false,
        }
    }

    fn refill(&mut self, i: usize) -> Result<(), E> {
        self.heads[i] = self.inputs[i].next().transpose()?;
        Ok(())
    }

    /// The next merged entry (`None` at the end); an error ends the merge.
    fn merged(&mut self) -> Result<Option<Entry>, E> {
        if !self.started {
            self.started = true;
            for i in 0..self.inputs.len() {
                self.refill(i)?;
            }
        }
        let mut best: Option<usize> = None;
        for (i, h) in self.heads.iter().enumerate() {
            if let Some(e) = h {
                let better = match best.and_then(|b| self.heads[b].as_ref()) {
                    None => true,
                    Some(be) => e.id().cmp_id(be.id()) == Ordering::Less,
                };
                if better {
                    best = Some(i);
                }
            }
        }
        let Some(b) = best else { return Ok(None) };
        let Some(head) = self.heads[b].take() else {
            return Ok(None);
        };
        let mut out = head.into_entry()?;
        self.refill(b)?;
        for i in 0..self.inputs.len() {
            while self.heads[i].as_ref().is_some_and(|h| h.id().same_id(&out)) {
                if let Some(h) = self.heads[i].take() {
                    out.merge(h.into_entry()?);
                }
                self.refill(i)?;
            }
        }
        Ok(Some(out))
    }
}

impl<I: Iterator<Item = Result<H, E>>, E, H: MergeHead<E>> Iterator for MergeIter<I, E, H> {
    type Item = Result<Entry, E>;

    fn next(&mut self) -> Option<Self::Item> {
        if self.failed {
            return None;
        }
        let r = self.merged();
        self.failed = r.is_err();
        r.transpose()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn e(key: u64, pos: u8, moves: &[(u16, u64)]) -> Entry {
        Entry {
            coded: None,
            key,
            pos: Some(vec![pos]),
            moves: moves
                .iter()
                .map(|&(mv, w)| MoveRec {
                    mv,
                    white: w,
                    ..Default::default()
                })
                .collect(),
        }
    }

    #[test]
    fn merge_streams() {
        let a = vec![e(1, 1, &[(1, 1)]), e(3, 1, &[(2, 1)])];
        let b = vec![e(1, 1, &[(1, 2), (5, 1)]), e(1, 2, &[(1, 1)]), e(4, 1, &[])];
        let merged: Vec<Entry> = MergeIter::new(vec![
            a.into_iter().map(Ok::<_, ()>),
            b.into_iter().map(Ok::<_, ()>),
        ])
        .map(Result::unwrap)
        .collect();
        assert_eq!(
            merged,
            vec![
                e(1, 1, &[(1, 3), (5, 1)]),
                e(1, 2, &[(1, 1)]),
                e(3, 1, &[(2, 1)]),
                e(4, 1, &[])
            ]
        );
    }

    proptest::proptest! {
        /// `moves_not_in` counts what `merge` adds.
        #[test]
        fn moves_not_in_counts_what_merge_adds(
            a in proptest::collection::btree_set(0u16..40, 0..12),
            b in proptest::collection::btree_set(0u16..40, 0..12),
        ) {
            let mv = |s: &std::collections::BTreeSet<u16>| s.iter().map(|&m| (m, 1)).collect::<Vec<_>>();
            let (x, y) = (e(1, 1, &mv(&a)), e(1, 1, &mv(&b)));
            let mut merged = x.clone();
            merged.merge(y.clone());
            proptest::prop_assert_eq!(x.moves_not_in(&y), merged.moves.len() - x.moves.len());
        }
    }
}

//! The weighing of a key's Polyglot moves that `export --format polyglot` writes and the
//! Python package's reader shows: every entry of the key merged by Polyglot move, counts
//! halved at `COUNT_MAX`, polyglot `make-book`'s weight and `keep_entry()` filters.

use std::collections::BTreeMap;

use super::export::{
    DropReason, MakeBookCounts, PolyglotExportOptions, halve_to_fit, make_book_weight, side_dropped,
};
use crate::chess::PosState;
use crate::chess::polyglot::{code_to_pg, raw_pg_from_code};
use crate::error::Result;
use crate::store::{Entry, MoveExtra};

/// One Polyglot move of a key, as the export weighs it: the games of every position (and
/// key-only entry) of the key that played it, added up, and the weight `make-book`'s rule gives
/// them. The Python package's reader answers with these too, so its weights are the `.bin`'s.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WeighedMove {
    /// The Polyglot move (castling king-takes-rook).
    pub pg: u16,
    /// The book's move code, from the first entry with a position that has the move; `None`
    /// when only key-only entries do (their moves are read literally).
    pub code: Option<crate::chess::MoveCode>,
    pub white: u64,
    pub draws: u64,
    pub black: u64,
    pub unknown: u64,
    pub rating_sum: u64,
    pub rating_count: u64,
    /// The side to move, when a position of the key is known.
    pub white_to_move: Option<bool>,
    /// Whether games count for it (else only a stored Polyglot weight, or nothing).
    pub counted: bool,
    /// The weight written to the `.bin`, or why the export leaves the move out.
    pub weight: std::result::Result<u16, DropReason>,
    /// The stored Polyglot learn value (0 if none).
    pub learn: u32,
}

impl WeighedMove {
    pub fn games(&self) -> u64 {
        self.white + self.draws + self.black + self.unknown
    }
}

/// One Polyglot move of a key being exported.
#[derive(Default)]
struct OutMove {
    counts: MakeBookCounts,
    counted: bool,
    white_to_move: Option<bool>,
    stored: Option<MoveExtra>,
    code: Option<crate::chess::MoveCode>,
    totals: [u64; 6],
}

/// Weighs the Polyglot moves of all book entries sharing one key (entries already filtered),
/// by Polyglot move; the flag tells whether the key's counts were halved to fit.
pub fn weigh_key(
    group: &[Entry],
    opts: &PolyglotExportOptions,
) -> Result<(Vec<WeighedMove>, bool)> {
    let mut moves: BTreeMap<u16, OutMove> = BTreeMap::new();
    for e in group {
        let state = match &e.pos {
            Some(p) => Some(PosState::unpack(p)?),
            None => None,
        };
        let white = state.as_ref().map(|s| !s.black_to_move);
        for m in &e.moves {
            let pg = match &state {
                Some(s) => code_to_pg(m.mv, s),
                None => raw_pg_from_code(m.mv),
            };
            let o = moves.entry(pg).or_default();
            if o.white_to_move.is_none() {
                o.white_to_move = white;
            }
            if o.code.is_none() && state.is_some() {
                o.code = Some(m.mv);
            }
            for (t, v) in o.totals.iter_mut().zip([
                m.white,
                m.draws,
                m.black,
                m.unknown,
                m.rating_sum,
                m.rating_count,
            ]) {
                *t = t.saturating_add(v);
            }
            if m.games() > 0 {
                let c = MakeBookCounts::of(m, white.unwrap_or(true));
                o.counts.n = o.counts.n.saturating_add(c.n);
                o.counts.sum = o.counts.sum.saturating_add(c.sum);
                o.counted = true;
            }
            if let Some(x) = m.extra {
                o.stored = Some(match o.stored {
                    Some(y) => MoveExtra {
                        weight: x.weight.max(y.weight),
                        learn: x.learn.max(y.learn),
                    },
                    None => x,
                });
            }
        }
    }
    let mut counted: Vec<MakeBookCounts> = moves
        .values()
        .filter(|o| o.counted)
        .map(|o| o.counts)
        .collect();
    let halved = halve_to_fit(&mut counted) > 0;
    if halved {
        let mut it = counted.into_iter();
        for o in moves.values_mut().filter(|o| o.counted) {
            if let Some(c) = it.next() {
                o.counts = c;
            }
        }
    }
    let mut out = Vec::with_capacity(moves.len());
    for (pg, o) in moves {
        let learn = o.stored.map_or(0, |x| x.learn);
        let weight = if o.counted {
            make_book_weight(o.counts, o.white_to_move.unwrap_or(true), opts)
        } else if o.stored.is_none() {
            Err(DropReason::NoData)
        } else if side_dropped(o.white_to_move, opts.only) {
            Err(DropReason::Side)
        } else {
            let w = o.stored.map_or(0, |x| x.weight);
            Ok(if opts.uniform { w.min(1) } else { w })
        };
        let [white, draws, black, unknown, rating_sum, rating_count] = o.totals;
        out.push(WeighedMove {
            pg,
            code: o.code,
            white,
            draws,
            black,
            unknown,
            rating_sum,
            rating_count,
            white_to_move: o.white_to_move,
            counted: o.counted,
            weight,
            learn,
        });
    }
    Ok((out, halved))
}

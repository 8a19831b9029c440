//! What the store does with a move's cells: their byte coding (docs/FORMAT.md §12.3, shared by
//! blocks and runs), keeping of an entry what a [`CellFilter`] counts, and the opponent's
//! ratings over a move's cells.

use super::entry::{Entry, MoveRec};
use super::facet::{ATTRS_END, CellFilter, CellId, CellMatcher, CellStat, MAX_YEAR};
use super::varint;

impl CellFilter {
    /// Keeps of `e` what this filter counts: each move's counters become the sums over its
    /// passing cells (only those cells kept), and moves no counted game played are dropped.
    /// The empty filter keeps everything as it is.
    pub fn apply(&self, e: &mut Entry) {
        if self.is_empty() {
            return;
        }
        for m in &mut e.moves {
            m.cells.retain(|c| self.passes(c.cell));
            set_totals(m);
        }
        e.moves.retain(|m| m.games() > 0);
    }
}

/// Adds cell `c` (cells come in id order, so by period) to `cells` as its period's cell.
fn push_by_period(cells: &mut Vec<CellStat>, mut c: CellStat) {
    let period = CellId(c.cell.0 & !0xff);
    match cells.last_mut() {
        Some(last) if last.cell == period => last.add(&c),
        _ => {
            c.cell = period;
            cells.push(c);
        }
    }
}

/// A move's cells (in id order) summed by period, as [`CellRead::ByPeriod`] reads them.
pub(crate) fn by_period(cells: &[CellStat]) -> Vec<CellStat> {
    let mut out = Vec::new();
    for &c in cells {
        push_by_period(&mut out, c);
    }
    out
}

/// What a read of `all`'s position with [`CellRead::ByPeriod`] gives, from `all`, the entry
/// read with every cell.
pub(crate) fn by_period_of(all: &Entry) -> Entry {
    let mut e = Entry {
        key: all.key,
        pos: all.pos.clone(),
        moves: Vec::with_capacity(all.moves.len()),
        coded: all.coded.clone(),
    };
    for m in &all.moves {
        let cells = by_period(&m.cells);
        e.moves.push(MoveRec {
            cells,
            ..move_without_cells(m)
        });
    }
    e
}

/// `m`'s counters and extras without its cells.
fn move_without_cells(m: &MoveRec) -> MoveRec {
    MoveRec {
        mv: m.mv,
        white: m.white,
        draws: m.draws,
        black: m.black,
        unknown: m.unknown,
        rating_sum: m.rating_sum,
        rating_count: m.rating_count,
        extra: m.extra,
        cells: Vec::new(),
        indexed: m.indexed,
    }
}

/// What a read of `all`'s position with [`CellRead::Passing`]`(filter)` gives, from `all`, the
/// entry read with every cell: each move with cells keeps those `filter` counts and its
/// counters become their sums; a move without cells stays as it is.
pub(crate) fn passing_of(all: &Entry, filter: &CellFilter) -> Entry {
    let mut matcher = CellMatcher::new(filter);
    let moves = all
        .moves
        .iter()
        .map(|m| {
            let mut out = move_without_cells(m);
            if !m.cells.is_empty() {
                out.cells = m
                    .cells
                    .iter()
                    .filter(|c| matcher.passes(c.cell))
                    .copied()
                    .collect();
                set_totals(&mut out);
            }
            out
        })
        .collect();
    Entry {
        key: all.key,
        pos: all.pos.clone(),
        moves,
        coded: all.coded.clone(),
    }
}

/// The opponent's rating sum and count over a move's cells (0, 0 without cells).
pub fn opponent_ratings(m: &MoveRec) -> (u64, u64) {
    m.cells.iter().fold((0u64, 0u64), |(s, n), c| {
        (s.saturating_add(c.opp_sum), n.saturating_add(c.opp_count))
    })
}

/// The largest period code (December of `MAX_YEAR`, docs/FORMAT.md §12.2).
const MAX_PERIOD_CODE: u64 = 1 + 13 * MAX_YEAR as u64 + 12;

/// The id of a stored (period, attrs), if it is one `Cell::from_id` accepts (checked without
/// building the cell: this runs for every cell a query reads).
#[inline]
fn cell_id(period: u64, attrs: u8) -> Option<CellId> {
    (period <= MAX_PERIOD_CODE && usize::from(attrs) < ATTRS_END)
        .then(|| CellId((period as u32) << 8 | u32::from(attrs)))
}

/// Cell kinds: low nibble the counters (0–3 one game of that result, no rating; 4–7 one
/// rated game, the rating follows; 8 general: six varints); bits 4–5 the opponent's rating
/// (0 none, 1 one rating as a zigzag difference from the mover's (needs kind 4–7), 2 one
/// rating as a varint, 3 general: count and sum).
const CELL_GENERAL: u8 = 8;

fn zigzag(v: i64) -> u64 {
    ((v << 1) ^ (v >> 63)) as u64
}

fn unzigzag(v: u64) -> i64 {
    ((v >> 1) as i64) ^ -((v & 1) as i64)
}

fn counter_kind(w: u64, d: u64, b: u64, u: u64, rs: u64, rc: u64) -> u8 {
    let games = w.saturating_add(d).saturating_add(b).saturating_add(u);
    if games != 1 {
        return CELL_GENERAL;
    }
    let r = if w == 1 {
        0
    } else if d == 1 {
        1
    } else if b == 1 {
        2
    } else {
        3
    };
    match (rc, rs) {
        (0, 0) => r,
        (1, _) => 4 + r,
        _ => CELL_GENERAL,
    }
}

fn opp_kind(c: &CellStat, kind: u8) -> u8 {
    match c.opp_count {
        0 if c.opp_sum == 0 => 0,
        1 if (4..8).contains(&kind) && c.opp_sum <= i64::MAX as u64 => 1,
        1 => 2,
        _ => 3,
    }
}

fn put_opp(out: &mut Vec<u8>, c: &CellStat, okind: u8) {
    match okind {
        1 => varint::put(
            out,
            zigzag(c.opp_sum as i64 - c.rating_sum.min(i64::MAX as u64) as i64),
        ),
        2 => varint::put(out, c.opp_sum),
        3 => {
            varint::put(out, c.opp_count);
            varint::put(out, c.opp_sum);
        }
        _ => {}
    }
}

/// A cell's counter kind and opponent kind, the smallest that hold it.
fn kinds(c: &CellStat) -> (u8, u8) {
    let kind = counter_kind(
        c.white,
        c.draws,
        c.black,
        c.unknown,
        c.rating_sum,
        c.rating_count,
    );
    (kind, opp_kind(c, kind))
}

/// Appends the cells of one move: `n` (varint; 0 = no cells), then for one cell its period
/// (varint), attrs (u8), opponent kind (u8) and opponent values (its counters are the move's);
/// for several, per cell: period delta from the previous cell (varint), attrs, kind (u8),
/// counters, opponent values.
pub(crate) fn encode_cells(m: &MoveRec, out: &mut Vec<u8>) {
    varint::put(out, m.cells.len() as u64);
    if let [c] = m.cells.as_slice() {
        varint::put(out, u64::from(c.cell.0 >> 8));
        out.push(c.cell.0 as u8);
        let (_, ok) = kinds(c);
        out.push(ok);
        put_opp(out, c, ok);
        return;
    }
    let mut prev = 0u64;
    for c in &m.cells {
        let period = u64::from(c.cell.0 >> 8);
        varint::put(out, period - prev.min(period));
        prev = period;
        out.push(c.cell.0 as u8);
        let (kind, ok) = kinds(c);
        out.push(kind | ok << 4);
        match kind {
            0..=3 => {}
            4..=7 => varint::put(out, c.rating_sum),
            _ => {
                for v in [
                    c.white,
                    c.draws,
                    c.black,
                    c.unknown,
                    c.rating_sum,
                    c.rating_count,
                ] {
                    varint::put(out, v);
                }
            }
        }
        put_opp(out, c, ok);
    }
}

#[inline(always)]
fn get_opp(data: &[u8], pos: &mut usize, c: &mut CellStat, okind: u8) -> Option<()> {
    match okind {
        0 => {}
        1 => {
            let d = unzigzag(varint::get(data, pos)?);
            let mover = i64::try_from(c.rating_sum).ok()?;
            c.opp_sum = u64::try_from(mover.checked_add(d)?).ok()?;
            c.opp_count = 1;
        }
        2 => {
            c.opp_sum = varint::get(data, pos)?;
            c.opp_count = 1;
        }
        3 => {
            c.opp_count = varint::get(data, pos)?;
            c.opp_sum = varint::get(data, pos)?;
        }
        _ => return None,
    }
    Some(())
}

/// What a read keeps of each move's cells. Every mode but [`CellRead::Skip`] checks the bytes
/// as fully as the others (kinds, order, ids, that the cells add up to the move's counters).
#[derive(Clone, Copy, Debug, Default)]
pub enum CellRead<'f> {
    /// Every cell (rewrites, `dump --facets`, verify).
    #[default]
    All,
    /// The cells `filter` counts; the move's counters become their sums (what
    /// [`CellFilter::apply`] does afterwards, without building the other cells).
    Passing(&'f CellFilter),
    /// No cells, only their totals: one all-unknown cell carrying the opponent's ratings
    /// (an unfiltered answer without history needs nothing else).
    Totals,
    /// The cells of each period summed into one (speed, rating group and mode dropped: the
    /// cell of its period with attrs 0): what an unfiltered history needs, a few hundred cells
    /// where the start position of a large book stores tens of thousands.
    ByPeriod,
    /// No cells: a block read passes over an entry's cell bytes without walking them (the
    /// block's checksum still covers them). For reads that need only the moves and their
    /// counters: an import's lookups of the entries it adds to a delta segment, where the
    /// opening positions' ~10^5 cells each took 7.9 % of a 10k-game import into an 8M-game
    /// book (docs/PERFORMANCE.md).
    Skip,
}

/// Why an entry's cell bytes do not decode ([`read_entry_cells`]).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum EntryCellsError {
    /// The cells of this move (its code or index) are unreadable or do not add up to its
    /// counters.
    Move(u16),
    /// Bytes are left over, or no move has a cell.
    Mismatch,
}

/// Reads the cells of an entry's `moves` (whose counters are read) from the entry's cell
/// bytes, as `read` asks: the bytes hold one list per move, all of them consumed, and at
/// least one cell (an entry without cells stores none).
pub(crate) fn read_entry_cells(
    bytes: &[u8],
    moves: &mut [MoveRec],
    read: CellRead,
) -> Result<(), EntryCellsError> {
    let mut at = 0;
    let mut any = false;
    for m in moves.iter_mut() {
        let n = read_cells(bytes, &mut at, m, read).ok_or(EntryCellsError::Move(m.mv))?;
        any |= n > 0;
    }
    if at != bytes.len() || !any {
        return Err(EntryCellsError::Mismatch);
    }
    Ok(())
}

/// Decodes the cells of move `m` (whose totals are already read) at `*pos` into `m.cells`.
/// `None` on malformed bytes: an unknown kind, cells out of order or repeated, an id no cell
/// has, a cell without games, or cells whose counters do not add up to the move's.
pub(crate) fn decode_cells(data: &[u8], pos: &mut usize, m: &mut MoveRec) -> Option<()> {
    read_cells(data, pos, m, CellRead::All).map(|_| ())
}

/// [`decode_cells`] keeping what `read` asks for; returns how many cells were stored.
pub(crate) fn read_cells(
    data: &[u8],
    pos: &mut usize,
    m: &mut MoveRec,
    read: CellRead,
) -> Option<u64> {
    let totals = m.unknown_cell();
    let mut cells = std::mem::take(&mut m.cells);
    cells.clear();
    let n = match read {
        CellRead::All => {
            // Sized once from the count (bounded by the bytes left: a cell takes three or more).
            let n = varint::get(data, &mut pos.clone()).unwrap_or(0);
            let room = data.len().saturating_sub(*pos) / 3 + 1;
            cells.reserve_exact(usize::try_from(n).unwrap_or(usize::MAX).min(room));
            walk_cells(data, pos, &totals, |c| cells.push(c))?
        }
        CellRead::Passing(filter) => {
            let mut matcher = CellMatcher::new(filter);
            let n = walk_cells(data, pos, &totals, |c| {
                if matcher.passes(c.cell) {
                    cells.push(c);
                }
            })?;
            m.cells = cells;
            if n > 0 {
                set_totals(m);
            }
            return Some(n);
        }
        CellRead::ByPeriod => walk_cells(data, pos, &totals, |c| push_by_period(&mut cells, c))?,
        CellRead::Totals => {
            let mut sum = CellStat::default();
            let n = walk_cells(data, pos, &totals, |c| sum.add(&c))?;
            if n > 0 {
                cells.push(sum);
            }
            n
        }
        // A block read never walks cells it skips; read alone, they are walked and dropped.
        CellRead::Skip => walk_cells(data, pos, &totals, |_| {})?,
    };
    m.cells = cells;
    Some(n)
}

/// Walks the cells of a move whose counters are `totals` (docs/FORMAT.md §12.3), handing each
/// to `sink` in id order; returns their number. `None` on malformed bytes (see
/// [`decode_cells`]).
fn walk_cells(
    data: &[u8],
    pos: &mut usize,
    totals: &CellStat,
    mut sink: impl FnMut(CellStat),
) -> Option<u64> {
    let n = varint::get(data, pos)?;
    if n == 0 {
        return Some(0);
    }
    // Every cell takes at least three bytes.
    if n > (data.len().saturating_sub(*pos) / 3) as u64 + 1 {
        return None;
    }
    let id = cell_id;
    if n == 1 {
        let period = varint::get(data, pos)?;
        let attrs = *data.get(*pos)?;
        let ok = *data.get(*pos + 1)?;
        *pos += 2;
        let mut c = *totals;
        c.cell = id(period, attrs)?;
        if ok > 3 || (ok == 1 && c.rating_count != 1) {
            return None;
        }
        get_opp(data, pos, &mut c, ok)?;
        if c.games() == 0 {
            return None;
        }
        sink(c);
        return Some(1);
    }
    let mut prev = 0u64;
    // The previous cell's id plus one (ids strictly increase; 0 before the first).
    let mut next_id = 0u64;
    // The sums of the six counters the move keeps: one game a result (kinds 0–7, nearly every
    // cell of a large position) adds one to its result's count. An overflow is malformed.
    let mut results = [0u64; 4];
    let (mut rating_sum, mut rating_count) = (0u64, 0u64);
    for _ in 0..n {
        let delta = match data.get(*pos) {
            Some(&b) if b < 0x80 => {
                *pos += 1;
                u64::from(b)
            }
            _ => varint::get(data, pos)?,
        };
        let period = prev.checked_add(delta)?;
        prev = period;
        let (&attrs, &kind) = (data.get(*pos)?, data.get(*pos + 1)?);
        *pos += 2;
        let cell = id(period, attrs)?;
        if u64::from(cell.0) < next_id {
            return None;
        }
        next_id = u64::from(cell.0) + 1;
        let mut c = CellStat {
            cell,
            ..CellStat::default()
        };
        match kind & 0x0f {
            k @ 0..=7 => {
                // One game of result k & 3 (white, draw, black, unknown), without branching
                // on a result the data makes unpredictable.
                let r = usize::from(k & 3);
                let mut one = [0u64; 4];
                one[r] = 1;
                [c.white, c.draws, c.black, c.unknown] = one;
                results[r] += 1;
                if k >= 4 {
                    c.rating_sum = varint::get(data, pos)?;
                    c.rating_count = 1;
                    rating_sum = rating_sum.checked_add(c.rating_sum)?;
                    rating_count += 1;
                }
            }
            CELL_GENERAL => {
                c.white = varint::get(data, pos)?;
                c.draws = varint::get(data, pos)?;
                c.black = varint::get(data, pos)?;
                c.unknown = varint::get(data, pos)?;
                c.rating_sum = varint::get(data, pos)?;
                c.rating_count = varint::get(data, pos)?;
                if c.games() == 0 {
                    return None;
                }
                for (r, v) in results
                    .iter_mut()
                    .zip([c.white, c.draws, c.black, c.unknown])
                {
                    *r = r.checked_add(v)?;
                }
                rating_sum = rating_sum.checked_add(c.rating_sum)?;
                rating_count = rating_count.checked_add(c.rating_count)?;
            }
            _ => return None,
        }
        let ok = kind >> 4;
        if ok > 3 || (ok == 1 && !(4..8).contains(&(kind & 0x0f))) {
            return None;
        }
        get_opp(data, pos, &mut c, ok)?;
        sink(c);
    }
    let same = (results, rating_sum, rating_count)
        == (
            [totals.white, totals.draws, totals.black, totals.unknown],
            totals.rating_sum,
            totals.rating_count,
        );
    same.then_some(n)
}

/// Sets a move's six counters to the sums over its cells (zero without cells).
pub(crate) fn set_totals(m: &mut MoveRec) {
    let mut s = CellStat::default();
    for c in &m.cells {
        s.add(c);
    }
    m.white = s.white;
    m.draws = s.draws;
    m.black = s.black;
    m.unknown = s.unknown;
    m.rating_sum = s.rating_sum;
    m.rating_count = s.rating_count;
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use crate::store::facet::{Cell, MAX_YEAR, Period, merge_cells};

    #[test]
    fn the_quick_id_check_is_from_id() {
        for period in 0..=MAX_PERIOD_CODE + 20 {
            for attrs in 0..=255u8 {
                let full = Cell::from_id(CellId((period as u32) << 8 | u32::from(attrs)));
                assert_eq!(
                    cell_id(period, attrs).is_some(),
                    full.is_some(),
                    "{period} {attrs}"
                );
            }
        }
        assert!(cell_id(u64::from(u16::MAX) + 1, 0).is_none());
    }
    use proptest::prelude::*;

    pub(crate) fn arb_cell() -> impl Strategy<Value = CellStat> {
        (
            (0u16..=MAX_YEAR, 0u8..=12, 0u8..7, 0u8..10, 0u8..3),
            0u64..3,
            0u64..3,
            0u64..3,
            0u64..3,
            0u64..4000,
            0u64..3,
            0u64..9000,
            0u64..3,
        )
            .prop_map(|((y, m, s, g, md), w, d, b, u, rs, rc, os, oc)| {
                let period = match m {
                    0 if y == 0 => Period::Undated,
                    0 => Period::Year(y),
                    m => Period::Month(y, m),
                };
                let cell = Cell {
                    period,
                    speed: s,
                    group: g,
                    mode: md,
                }
                .id();
                CellStat {
                    cell,
                    white: w,
                    draws: d,
                    black: b,
                    unknown: u + u64::from(w + d + b + u == 0),
                    rating_sum: rs,
                    rating_count: rc,
                    opp_sum: os,
                    opp_count: oc,
                }
            })
    }

    /// A move with up to five cells (totals their sum), for the codecs' round-trip tests.
    pub(crate) fn arb_move() -> impl Strategy<Value = MoveRec> {
        proptest::collection::vec(arb_cell(), 0..6).prop_map(|cells| {
            let mut m = MoveRec::default();
            let mut v: Vec<CellStat> = Vec::new();
            for c in cells {
                v = merge_cells(&v, &[c]);
            }
            m.cells = v;
            set_totals(&mut m);
            m
        })
    }

    proptest! {
        #[test]
        fn cells_round_trip(m in arb_move()) {
            let mut out = Vec::new();
            encode_cells(&m, &mut out);
            let mut back = MoveRec { cells: Vec::new(), ..m.clone() };
            let mut pos = 0;
            prop_assert!(decode_cells(&out, &mut pos, &mut back).is_some());
            prop_assert_eq!(pos, out.len());
            prop_assert_eq!(back, m);
        }

        #[test]
        fn each_read_mode_keeps_what_it_says(
            m in arb_move(),
            speeds in proptest::option::of(0u8..=127),
            groups in proptest::option::of(0u16..=1023),
            modes in proptest::option::of(0u8..=7),
            since in proptest::option::of((0u16..=5000, 0u8..=12)),
            until in proptest::option::of((0u16..=5000, 0u8..=12)),
        ) {
            use crate::store::facet::DateBound;
            let bound = |(y, mo): (u16, u8)| match mo {
                0 => DateBound::Year(y),
                mo => DateBound::Month(y, mo),
            };
            let filter = CellFilter {
                speeds,
                groups,
                modes,
                since: since.map(bound),
                until: until.map(bound),
            };
            let mut out = Vec::new();
            encode_cells(&m, &mut out);
            let read = |mode: CellRead| {
                let mut back = MoveRec { cells: Vec::new(), ..m.clone() };
                let mut pos = 0;
                let n = read_cells(&out, &mut pos, &mut back, mode);
                (n, pos, back)
            };
            // Passing: what decoding everything and then applying the filter keeps.
            let mut expected = Entry { key: 0, pos: None, coded: None, moves: vec![m.clone()] };
            filter.apply(&mut expected);
            let (n, pos, mut back) = read(CellRead::Passing(&filter));
            prop_assert_eq!(n, Some(m.cells.len() as u64));
            prop_assert_eq!(pos, out.len());
            if m.cells.is_empty() {
                prop_assert_eq!(&back, &m);
            } else {
                let mut got = Entry { key: 0, pos: None, coded: None, moves: vec![back.clone()] };
                filter.apply(&mut got);
                prop_assert_eq!(&got, &expected);
                back.cells.retain(|c| filter.passes(c.cell));
                prop_assert_eq!(back.cells.len(), got.moves.first().map_or(0, |g| g.cells.len()));
            }
            // Totals: the move's counters and one cell with all the opponent's ratings.
            let (n, pos, back) = read(CellRead::Totals);
            prop_assert_eq!(n, Some(m.cells.len() as u64));
            prop_assert_eq!(pos, out.len());
            prop_assert_eq!(opponent_ratings(&back), opponent_ratings(&m));
            prop_assert_eq!(back.cells.len(), usize::from(!m.cells.is_empty()));
            prop_assert_eq!(
                (back.white, back.draws, back.black, back.unknown, back.rating_sum, back.rating_count),
                (m.white, m.draws, m.black, m.unknown, m.rating_sum, m.rating_count)
            );
            // By period: the counters, and one cell a period holding its cells' sums.
            let (n, pos, back) = read(CellRead::ByPeriod);
            prop_assert_eq!(n, Some(m.cells.len() as u64));
            prop_assert_eq!(pos, out.len());
            prop_assert_eq!(&back.cells, &by_period(&m.cells));
            prop_assert_eq!(opponent_ratings(&back), opponent_ratings(&m));
            let mut periods: Vec<u32> = m.cells.iter().map(|c| c.cell.0 >> 8).collect();
            periods.dedup();
            prop_assert_eq!(back.cells.iter().map(|c| c.cell.0).collect::<Vec<_>>(),
                periods.iter().map(|p| p << 8).collect::<Vec<_>>());
            for c in &back.cells {
                let want = m.cells.iter().filter(|d| d.cell.0 >> 8 == c.cell.0 >> 8)
                    .fold(CellStat { cell: c.cell, ..CellStat::default() }, |mut s, d| { s.add(d); s });
                prop_assert_eq!(c, &want);
            }
            // Made from the entry of every cell, as the block cache makes them.
            let all = Entry { key: 0, pos: None, coded: None, moves: vec![m.clone()] };
            prop_assert_eq!(&by_period_of(&all).moves[0], &back);
            if !m.cells.is_empty() {
                let (_, _, passing) = read(CellRead::Passing(&filter));
                prop_assert_eq!(&passing_of(&all, &filter).moves[0], &passing);
            }
        }

        #[test]
        fn garbage_cells_never_panic(data in proptest::collection::vec(any::<u8>(), 0..64), w in 0u64..5) {
            let mut m = MoveRec { white: w, ..Default::default() };
            let mut pos = 0;
            let _ = decode_cells(&data, &mut pos, &mut m);
            // The other read modes walk the same bytes with the same checks.
            let all_ok = decode_cells(&data, &mut 0, &mut m.clone()).is_some();
            let filter = CellFilter { speeds: Some(8), ..CellFilter::default() };
            for mode in [CellRead::Totals, CellRead::Passing(&filter), CellRead::ByPeriod] {
                let mut m2 = MoveRec { white: w, ..Default::default() };
                prop_assert_eq!(read_cells(&data, &mut 0, &mut m2, mode).is_some(), all_ok);
            }
        }
    }
}

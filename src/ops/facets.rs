//! A game's cell, read from its PGN tags as docs/FORMAT.md §12 fixes it: period (`UTCDate`, else
//! `Date`), speed (`TimeControl`), rating group (the mean of both Elos) and mode (`Event`).

use serde::Serialize;

use crate::store::Entry;
use crate::store::facet::{Cell, DateBound, MAX_YEAR, Period};

/// The facet tags of a game as the PGN reader met them (parsed as they arrive).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct FacetTags {
    /// `UTCDate` when it parses.
    pub utc_date: Option<Period>,
    /// `Date` when it parses.
    pub date: Option<Period>,
    /// Stored speed (0 unknown).
    pub speed: u8,
    /// Stored mode (0 unknown).
    pub mode: u8,
}

impl FacetTags {
    /// The game's cell; `elos` are WhiteElo and BlackElo when positive integers.
    pub fn cell(&self, elos: [Option<u32>; 2]) -> Cell {
        Cell {
            period: self.utc_date.or(self.date).unwrap_or_default(),
            speed: self.speed,
            group: match elos {
                [Some(w), Some(b)] => Cell::group_of((w + b) / 2),
                _ => 0,
            },
            mode: self.mode,
        }
    }
}

pub use crate::store::tags::{parse_date, parse_mode, parse_speed};

/// What an explorer request counts: the cells (`filter`) and whether, and by which period,
/// the history is wanted.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Counting {
    pub filter: crate::store::facet::CellFilter,
    /// `Some(by_year)`: add the history, by month or by year.
    pub history: Option<bool>,
}

impl Counting {
    /// What a lookup must keep of a move's cells to answer this: the passing cells under a
    /// filter, the cells summed by period for an unfiltered history, only the totals
    /// otherwise.
    pub fn cell_read(&self) -> crate::store::cells::CellRead<'_> {
        use crate::store::cells::CellRead;
        match (self.filter.is_empty(), self.history) {
            (false, _) => CellRead::Passing(&self.filter),
            (true, Some(_)) => CellRead::ByPeriod,
            (true, None) => CellRead::Totals,
        }
    }

    /// Refuses what the book cannot answer: a filter on a facet it does not keep, or the
    /// history of a book that keeps no dates (it could only be empty).
    pub fn check_book(&self, kept: crate::store::facet::FacetSet) -> crate::error::Result<()> {
        use crate::store::facet::FacetSet;
        self.filter
            .check_book(kept)
            .map_err(crate::error::Error::Usage)?;
        if self.history.is_some() && !kept.has(FacetSet::MONTH) {
            return Err(crate::error::Error::Usage(format!(
                "this book keeps no month facet (it keeps: {kept}), so it has no history to show; rebuild it with `import --facets` including month"
            )));
        }
        Ok(())
    }
}

/// The FIDE table of rating differences by percentage score (0–100 %), as lila uses it.
const DELTAS: [i32; 101] = [
    -800, -677, -589, -538, -501, -470, -444, -422, -401, -383, -366, -351, -336, -322, -309, -296,
    -284, -273, -262, -251, -240, -230, -220, -211, -202, -193, -184, -175, -166, -158, -149, -141,
    -133, -125, -117, -110, -102, -95, -87, -80, -72, -65, -57, -50, -43, -36, -29, -21, -14, -7,
    0, 7, 14, 21, 29, 36, 43, 50, 57, 65, 72, 80, 87, 95, 102, 110, 117, 125, 133, 141, 149, 158,
    166, 175, 184, 193, 202, 211, 220, 230, 240, 251, 262, 273, 284, 296, 309, 322, 336, 351, 366,
    383, 401, 422, 444, 470, 501, 538, 589, 677, 800,
];

/// lila-openingexplorer's performance of the mover: the opponents' mean rating plus the FIDE
/// difference for the mover's score over the games with a known result (interpolated
/// between whole percentages), rounded. `None` without opponent ratings or known results.
pub fn performance(
    wins: u64,
    draws: u64,
    losses: u64,
    opp_sum: u64,
    opp_count: u64,
) -> Option<i64> {
    let games = wins + draws + losses;
    if opp_count == 0 || games == 0 {
        return None;
    }
    let avg = opp_sum as f64 / opp_count as f64;
    let p = (100 * wins + 50 * draws) as f64 / games as f64;
    let idx = (p.trunc() as usize).min(100);
    let lo = f64::from(DELTAS[idx]);
    let hi = f64::from(*DELTAS.get(idx + 1).unwrap_or(&800));
    Some((avg + lo * (1.0 - p.fract()) + hi * p.fract()).round() as i64)
}

/// One point of a position's history: the counted games of a month (`YYYY-MM`) or a year.
#[derive(Clone, Debug, Serialize, PartialEq, Eq)]
pub struct HistoryPoint {
    #[serde(skip_serializing_if = "Option::is_none")]
    pub month: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub year: Option<u16>,
    pub white: u64,
    pub draws: u64,
    pub black: u64,
}

/// The history of a position (docs/FORMAT.md §12), from its entry already filtered: by month (cells of
/// a known month) or by year (`by_year`: cells of a known year), every period from `since`
/// (else the first with games) to `until` (else the last with games), zero-filled.
pub fn history(
    e: Option<&Entry>,
    since: Option<DateBound>,
    until: Option<DateBound>,
    by_year: bool,
) -> Vec<HistoryPoint> {
    use std::collections::BTreeMap;
    // Periods as month numbers (year · 12 + month − 1) or years.
    let mut sums: BTreeMap<u32, [u64; 3]> = BTreeMap::new();
    for m in e.map(|e| e.moves.as_slice()).unwrap_or_default() {
        // A move's cells come in period order: each run of one period is summed apart and
        // added to the map once (the start position of a large book has tens of thousands
        // of cells in a few hundred periods).
        let mut run: Option<(u32, [u64; 3])> = None;
        for c in &m.cells {
            let Some(cell) = Cell::from_id(c.cell) else {
                continue;
            };
            let at = match (cell.period, by_year) {
                (Period::Undated, _) => continue,
                (Period::Year(_), false) => continue,
                (p, true) => u32::from(p.year().unwrap_or(0)),
                (Period::Month(y, mo), false) => u32::from(y) * 12 + u32::from(mo) - 1,
            };
            match &mut run {
                Some((p, s)) if *p == at => {
                    s[0] += c.white;
                    s[1] += c.draws;
                    s[2] += c.black;
                }
                _ => {
                    if let Some((p, s)) = run.replace((at, [c.white, c.draws, c.black])) {
                        add_period(&mut sums, p, s);
                    }
                }
            }
        }
        if let Some((p, s)) = run {
            add_period(&mut sums, p, s);
        }
    }
    let bound = |b: DateBound, end: bool| -> u32 {
        match (b, by_year) {
            (DateBound::Month(y, _), true) | (DateBound::Year(y), true) => u32::from(y),
            (DateBound::Month(y, m), false) => u32::from(y) * 12 + u32::from(m) - 1,
            (DateBound::Year(y), false) => u32::from(y) * 12 + if end { 11 } else { 0 },
        }
    };
    let first = since
        .map(|b| bound(b, false))
        .or_else(|| sums.keys().next().copied());
    let last = until
        .map(|b| bound(b, true))
        .or_else(|| sums.keys().next_back().copied());
    let (Some(first), Some(last)) = (first, last) else {
        return Vec::new();
    };
    // At most 12 · MAX_YEAR points, whatever the bounds say.
    let last = last.min(first.saturating_add(12 * u32::from(MAX_YEAR)));
    (first..=last)
        .map(|at| {
            let s = sums.get(&at).copied().unwrap_or_default();
            let (month, year) = match by_year {
                true => (None, Some(at as u16)),
                false => (Some(format!("{:04}-{:02}", at / 12, at % 12 + 1)), None),
            };
            HistoryPoint {
                month,
                year,
                white: s[0],
                draws: s[1],
                black: s[2],
            }
        })
        .collect()
}

/// Adds a period's sums (white, draws, black) to a history's.
fn add_period(sums: &mut std::collections::BTreeMap<u32, [u64; 3]>, at: u32, s: [u64; 3]) {
    let t = sums.entry(at).or_default();
    for (t, s) in t.iter_mut().zip(s) {
        *t += s;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Sums of (white, draws, black) by period the plain way: one map entry a cell.
    fn naive(e: &Entry, by_year: bool) -> Vec<(u32, [u64; 3])> {
        let mut sums: std::collections::BTreeMap<u32, [u64; 3]> = Default::default();
        for c in e.moves.iter().flat_map(|m| &m.cells) {
            let cell = Cell::from_id(c.cell).unwrap();
            let at = match (cell.period, by_year) {
                (Period::Undated, _) | (Period::Year(_), false) => continue,
                (p, true) => u32::from(p.year().unwrap()),
                (Period::Month(y, mo), false) => u32::from(y) * 12 + u32::from(mo) - 1,
            };
            let s = sums.entry(at).or_default();
            s[0] += c.white;
            s[1] += c.draws;
            s[2] += c.black;
        }
        sums.into_iter().collect()
    }

    #[test]
    fn history_sums_runs_of_a_period_as_cells_one_by_one() {
        use crate::store::entry::MoveRec;
        use crate::store::facet::CellStat;
        let mut moves = Vec::new();
        let mut x = 7u64;
        for mv in 0..5u16 {
            let mut cells = Vec::new();
            for i in 0..300u64 {
                x = x
                    .wrapping_mul(6364136223846793005)
                    .wrapping_add(1442695040888963407);
                let period = match (x >> 33) % 9 {
                    0 => Period::Undated,
                    1 => Period::Year(2000 + (i / 40) as u16),
                    _ => Period::Month(2000 + (i / 40) as u16, 1 + ((i / 7) % 12) as u8),
                };
                let cell = Cell {
                    period,
                    speed: ((x >> 20) % 6) as u8,
                    group: ((x >> 24) % 9) as u8,
                    mode: ((x >> 28) % 2) as u8,
                };
                cells.push(CellStat {
                    cell: cell.id(),
                    white: x % 3,
                    draws: (x >> 3) % 2,
                    black: 1 + (x >> 5) % 2,
                    ..CellStat::default()
                });
            }
            cells.sort_by_key(|c| c.cell);
            cells.dedup_by_key(|c| c.cell);
            moves.push(MoveRec {
                mv,
                cells,
                ..MoveRec::default()
            });
        }
        let e = Entry {
            moves,
            ..Entry::default()
        };
        for by_year in [false, true] {
            let want = naive(&e, by_year);
            let got: Vec<(u32, [u64; 3])> = history(Some(&e), None, None, by_year)
                .into_iter()
                .map(|p| {
                    let at = match (&p.month, p.year) {
                        (Some(m), _) => {
                            let (y, mo) = m.split_once('-').unwrap();
                            y.parse::<u32>().unwrap() * 12 + mo.parse::<u32>().unwrap() - 1
                        }
                        (None, Some(y)) => u32::from(y),
                        (None, None) => unreachable!(),
                    };
                    (at, [p.white, p.draws, p.black])
                })
                .filter(|(_, s)| s.iter().any(|&v| v > 0))
                .collect();
            assert!(want.len() > 5, "{} periods", want.len());
            assert_eq!(got, want, "by year: {by_year}");
        }
    }

    #[test]
    fn performance_is_lilas() {
        // lila-openingexplorer's own test values (src/model/stats.rs).
        assert_eq!(performance(1, 0, 0, 1500, 1), Some(2300));
        assert_eq!(performance(0, 0, 1, 1500, 1), Some(700));
        assert_eq!(performance(123, 10, 123, 256 * 987, 256), Some(987));
        assert_eq!(performance(5, 0, 95, 0, 100), Some(-470));
        assert_eq!(performance(0, 0, 0, 1500, 1), None);
        assert_eq!(performance(1, 0, 0, 0, 0), None);
    }

    #[test]
    fn dates() {
        assert_eq!(parse_date(b"2020.05.17"), Some(Period::Month(2020, 5)));
        assert_eq!(parse_date(b"2019.??.??"), Some(Period::Year(2019)));
        assert_eq!(parse_date(b"????.??.??"), Some(Period::Undated));
        assert_eq!(parse_date(b"2019.13.01"), None);
        assert_eq!(parse_date(b"2019.1.01"), None);
        assert_eq!(parse_date(b"20?9.01.01"), None);
        assert_eq!(parse_date(b""), None);
    }

    #[test]
    fn speeds() {
        for (tc, s) in [
            ("-", 6),
            ("15+0", 1),
            ("60+0", 2),
            ("120+1", 2),
            ("180+0", 3),
            ("180+2", 3),
            ("300+3", 3),
            ("600+0", 4),
            ("900+10", 4),
            ("1800+0", 5),
            ("5400+30", 5),
            ("40/7200:3600", 5),
            ("*180", 3),
            ("25200", 6),
            ("?", 0),
            ("", 0),
            ("abc", 0),
            ("300+x", 0),
        ] {
            assert_eq!(parse_speed(tc.as_bytes()), s, "{tc}");
        }
    }

    #[test]
    fn modes_and_groups() {
        assert_eq!(parse_mode(b"Rated Blitz game"), 1);
        assert_eq!(parse_mode(b"rated"), 1);
        assert_eq!(parse_mode(b"CASUAL rapid"), 2);
        assert_eq!(parse_mode(b"Some Open"), 0);
        let t = FacetTags::default();
        assert_eq!(t.cell([Some(2200), Some(2199)]).group, 7);
        assert_eq!(t.cell([Some(2500), Some(2500)]).group, 9);
        assert_eq!(t.cell([Some(900), Some(800)]).group, 1);
        assert_eq!(t.cell([Some(2200), None]).group, 0);
        let t = FacetTags {
            utc_date: Some(Period::Month(2021, 3)),
            date: Some(Period::Year(2020)),
            ..Default::default()
        };
        assert_eq!(t.cell([None, None]).period, Period::Month(2021, 3));
    }
}

//! Facets of a move's counts: the cell (period, speed, rating group, mode) a game is counted
//! in, its persisted id, the counters a cell keeps, the facet set a book keeps, the filters
//! that select cells (docs/FORMAT.md §12); `cells.rs` codes a move's cells and filters
//! entries by them.
//!
//! The store knows cells only as these numbers; reading them from a game's tags is
//! `ops::facets`' job (docs/FORMAT.md §12).

use std::fmt;

/// A cell's identity: `period << 8 | attrs`, with `attrs = speed + 7 · (group + 10 · mode)`.
/// Ordering cells by id orders them by period first. Id 0 is the all-unknown cell (undated,
/// unknown speed, unrated, unknown mode), where every count of a book without facets is.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct CellId(pub u32);

/// Speeds, in lichess's order; index + 1 is the stored speed (0 = unknown).
pub const SPEEDS: [&str; 6] = [
    "ultraBullet",
    "bullet",
    "blitz",
    "rapid",
    "classical",
    "correspondence",
];
/// Lower bounds of the rating groups; index + 1 is the stored group (0 = unrated).
pub const RATING_GROUPS: [u32; 9] = [0, 1000, 1200, 1400, 1600, 1800, 2000, 2200, 2500];
/// Modes; index + 1 is the stored mode (0 = unknown).
pub const MODES: [&str; 2] = ["rated", "casual"];
/// The highest rating a `ratings` filter names (docs/SERVER.md): past it a value is a typo.
pub const MAX_RATING_FILTER: u32 = 4000;
/// The latest year a period can hold (later years are undated).
pub const MAX_YEAR: u16 = 5000;

/// When a game was played, as far as its tags say.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum Period {
    #[default]
    Undated,
    /// The year is known, the month is not.
    Year(u16),
    /// Year and month (1–12).
    Month(u16, u8),
}

impl Period {
    /// The stored form: 0 undated, else `1 + 13 · year + month` (month 0 = year-only).
    pub fn code(self) -> u16 {
        match self {
            Period::Undated => 0,
            Period::Year(y) => 1 + 13 * y.min(MAX_YEAR),
            Period::Month(y, m) => 1 + 13 * y.min(MAX_YEAR) + u16::from(m.min(12)),
        }
    }

    pub fn from_code(c: u16) -> Option<Period> {
        if c == 0 {
            return Some(Period::Undated);
        }
        let y = (c - 1) / 13;
        let m = ((c - 1) % 13) as u8;
        (y <= MAX_YEAR).then_some(if m == 0 {
            Period::Year(y)
        } else {
            Period::Month(y, m)
        })
    }

    pub fn year(self) -> Option<u16> {
        match self {
            Period::Undated => None,
            Period::Year(y) | Period::Month(y, _) => Some(y),
        }
    }
}

impl fmt::Display for Period {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Period::Undated => f.write_str("undated"),
            Period::Year(y) => write!(f, "{y:04}"),
            Period::Month(y, m) => write!(f, "{y:04}-{m:02}"),
        }
    }
}

/// A cell's facets, decoded. Each is 0 when unknown, else 1 + its index in [`SPEEDS`],
/// [`RATING_GROUPS`] or [`MODES`].
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct Cell {
    pub period: Period,
    pub speed: u8,
    pub group: u8,
    pub mode: u8,
}

impl Cell {
    pub fn id(self) -> CellId {
        let attrs = u32::from(self.speed.min(6))
            + 7 * (u32::from(self.group.min(9)) + 10 * u32::from(self.mode.min(2)));
        CellId(u32::from(self.period.code()) << 8 | attrs)
    }

    /// The facets of a stored id; `None` for an id no cell has.
    pub fn from_id(id: CellId) -> Option<Cell> {
        let attrs = id.0 & 0xff;
        if attrs >= ATTRS_END as u32 || id.0 >> 24 != 0 {
            return None;
        }
        Some(Cell {
            period: Period::from_code((id.0 >> 8) as u16)?,
            speed: (attrs % 7) as u8,
            group: ((attrs / 7) % 10) as u8,
            mode: (attrs / 70) as u8,
        })
    }

    /// The group a mean rating falls in (1-based; never 0: every rating has a group).
    pub fn group_of(rating: u32) -> u8 {
        RATING_GROUPS
            .iter()
            .rposition(|&g| g <= rating)
            .unwrap_or(0) as u8
            + 1
    }

    /// This cell with the facets `set` does not keep made unknown.
    pub fn masked(self, set: FacetSet) -> Cell {
        Cell {
            period: if set.has(FacetSet::MONTH) {
                self.period
            } else {
                Period::Undated
            },
            speed: if set.has(FacetSet::SPEED) {
                self.speed
            } else {
                0
            },
            group: if set.has(FacetSet::RATING) {
                self.group
            } else {
                0
            },
            mode: if set.has(FacetSet::MODE) {
                self.mode
            } else {
                0
            },
        }
    }
}

/// The counters of one cell of a move: results, the mover's rating sum and count, the
/// opponent's rating sum and count.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct CellStat {
    pub cell: CellId,
    pub white: u64,
    pub draws: u64,
    pub black: u64,
    pub unknown: u64,
    pub rating_sum: u64,
    pub rating_count: u64,
    pub opp_sum: u64,
    pub opp_count: u64,
}

impl CellStat {
    pub fn games(&self) -> u64 {
        self.white
            .saturating_add(self.draws)
            .saturating_add(self.black)
            .saturating_add(self.unknown)
    }

    pub(crate) fn add(&mut self, o: &CellStat) {
        self.white = self.white.saturating_add(o.white);
        self.draws = self.draws.saturating_add(o.draws);
        self.black = self.black.saturating_add(o.black);
        self.unknown = self.unknown.saturating_add(o.unknown);
        self.rating_sum = self.rating_sum.saturating_add(o.rating_sum);
        self.rating_count = self.rating_count.saturating_add(o.rating_count);
        self.opp_sum = self.opp_sum.saturating_add(o.opp_sum);
        self.opp_count = self.opp_count.saturating_add(o.opp_count);
    }
}

/// Merges two sorted cell lists, adding the counters of equal cells.
pub(crate) fn merge_cells(a: &[CellStat], b: &[CellStat]) -> Vec<CellStat> {
    let mut out = Vec::with_capacity(a.len() + b.len());
    let (mut i, mut j) = (0, 0);
    while i < a.len() && j < b.len() {
        match a[i].cell.cmp(&b[j].cell) {
            std::cmp::Ordering::Less => {
                out.push(a[i]);
                i += 1;
            }
            std::cmp::Ordering::Greater => {
                out.push(b[j]);
                j += 1;
            }
            std::cmp::Ordering::Equal => {
                let mut c = a[i];
                c.add(&b[j]);
                out.push(c);
                i += 1;
                j += 1;
            }
        }
    }
    out.extend_from_slice(&a[i..]);
    out.extend_from_slice(&b[j..]);
    out
}

/// The facets a book keeps (chosen when it is created; `meta` key `facets`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub struct FacetSet(pub u8);

impl FacetSet {
    pub const MONTH: u8 = 1;
    pub const SPEED: u8 = 2;
    pub const RATING: u8 = 4;
    pub const MODE: u8 = 8;
    pub const NONE: FacetSet = FacetSet(0);
    pub const ALL: FacetSet = FacetSet(15);
    const NAMES: [(u8, &'static str); 4] = [
        (Self::MONTH, "month"),
        (Self::SPEED, "speed"),
        (Self::RATING, "rating"),
        (Self::MODE, "mode"),
    ];

    pub fn has(self, f: u8) -> bool {
        self.0 & f != 0
    }

    pub fn is_none(self) -> bool {
        self.0 == 0
    }

    pub fn union(self, o: FacetSet) -> FacetSet {
        FacetSet(self.0 | o.0)
    }

    /// The names of the facets kept, in the order `month,speed,rating,mode`.
    pub fn names(self) -> Vec<&'static str> {
        Self::NAMES
            .iter()
            .filter(|(b, _)| self.has(*b))
            .map(|(_, n)| *n)
            .collect()
    }

    /// Parses `none` or a comma list of `month`, `speed`, `rating`, `mode` (also the stored
    /// form: the same list, empty for none).
    pub fn parse(s: &str) -> Result<FacetSet, String> {
        let s = s.trim();
        if s.is_empty() || s.eq_ignore_ascii_case("none") {
            return Ok(FacetSet::NONE);
        }
        let mut set = 0;
        for part in s.split(',').map(str::trim) {
            let Some((b, _)) = Self::NAMES
                .iter()
                .find(|(_, n)| n.eq_ignore_ascii_case(part))
            else {
                return Err(format!(
                    "unknown facet {part:?}: the facets are month, speed, rating and mode (or none)"
                ));
            };
            set |= b;
        }
        Ok(FacetSet(set))
    }
}

impl fmt::Display for FacetSet {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.is_none() {
            return f.write_str("none");
        }
        f.write_str(&self.names().join(","))
    }
}

/// A date bound of a filter: a month (`YYYY-MM`: only cells of a known month within pass) or a
/// year (`YYYY`: cells of a known year within pass, year-only dates included).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DateBound {
    Month(u16, u8),
    Year(u16),
}

impl DateBound {
    /// Parses `YYYY-MM` or `YYYY`.
    pub fn parse(s: &str) -> Result<DateBound, String> {
        let bad = || format!("{s:?} is not a month (YYYY-MM) or a year (YYYY)");
        let digits = |t: &str| !t.is_empty() && t.bytes().all(|b| b.is_ascii_digit());
        match s.split_once('-') {
            None if s.len() == 4 && digits(s) => {
                let y: u16 = s.parse().map_err(|_| bad())?;
                Ok(DateBound::Year(y.min(MAX_YEAR)))
            }
            Some((y, m)) if y.len() == 4 && digits(y) && m.len() == 2 && digits(m) => {
                let y: u16 = y.parse().map_err(|_| bad())?;
                let m: u8 = m.parse().map_err(|_| bad())?;
                if !(1..=12).contains(&m) {
                    return Err(bad());
                }
                Ok(DateBound::Month(y.min(MAX_YEAR), m))
            }
            _ => Err(bad()),
        }
    }
}

impl fmt::Display for DateBound {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DateBound::Month(y, m) => write!(f, "{y:04}-{m:02}"),
            DateBound::Year(y) => write!(f, "{y:04}"),
        }
    }
}

/// Which cells a query counts (docs/FORMAT.md §12): a cell counts when it passes every filter given;
/// an unknown value never passes a filter on its facet. The empty filter counts every cell.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash)]
pub struct CellFilter {
    /// Bit `s` set: stored speed `s` passes.
    pub speeds: Option<u8>,
    /// Bit `g` set: stored group `g` passes.
    pub groups: Option<u16>,
    /// Bit `m` set: stored mode `m` passes.
    pub modes: Option<u8>,
    pub since: Option<DateBound>,
    pub until: Option<DateBound>,
}

impl CellFilter {
    pub fn is_empty(&self) -> bool {
        *self == CellFilter::default()
    }

    /// Parses a comma list of speeds (lichess's names, any case).
    pub fn parse_speeds(s: &str) -> Result<u8, String> {
        let mut bits = 0u8;
        for p in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let i = SPEEDS
                .iter()
                .position(|n| n.eq_ignore_ascii_case(p))
                .ok_or_else(|| {
                    format!("unknown speed {p:?}: the speeds are {}", SPEEDS.join(", "))
                })?;
            bits |= 1 << (i + 1);
        }
        Ok(bits)
    }

    /// Parses a comma list of ratings (0 to [`MAX_RATING_FILTER`]), each selecting the group
    /// it falls in.
    pub fn parse_ratings(s: &str) -> Result<u16, String> {
        let mut bits = 0u16;
        for p in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let r: u32 = p
                .parse()
                .ok()
                .filter(|&r| r <= MAX_RATING_FILTER)
                .ok_or_else(|| {
                    format!(
                        "rating {p:?} is not a whole number from 0 to {MAX_RATING_FILTER} \
                         (a rating group's lower bound, e.g. 2200)"
                    )
                })?;
            bits |= 1 << Cell::group_of(r);
        }
        Ok(bits)
    }

    /// Parses a comma list of modes (`rated`, `casual`).
    pub fn parse_modes(s: &str) -> Result<u8, String> {
        let mut bits = 0u8;
        for p in s.split(',').map(str::trim).filter(|p| !p.is_empty()) {
            let i = MODES
                .iter()
                .position(|n| n.eq_ignore_ascii_case(p))
                .ok_or_else(|| format!("unknown mode {p:?}: the modes are rated and casual"))?;
            bits |= 1 << (i + 1);
        }
        Ok(bits)
    }

    /// The facets this filter needs the book to keep.
    pub fn needs(&self) -> FacetSet {
        let mut f = 0;
        if self.speeds.is_some() {
            f |= FacetSet::SPEED;
        }
        if self.groups.is_some() {
            f |= FacetSet::RATING;
        }
        if self.modes.is_some() {
            f |= FacetSet::MODE;
        }
        if self.since.is_some() || self.until.is_some() {
            f |= FacetSet::MONTH;
        }
        FacetSet(f)
    }

    /// Refuses a filter on a facet the book does not keep (it could only match nothing).
    pub fn check_book(&self, kept: FacetSet) -> Result<(), String> {
        let missing = FacetSet(self.needs().0 & !kept.0);
        if missing.is_none() {
            return Ok(());
        }
        let name = |n: &str| match n {
            "month" => "since/until",
            "speed" => "speeds",
            "rating" => "ratings",
            _ => "modes",
        };
        let filters: Vec<&str> = missing.names().into_iter().map(name).collect();
        Err(format!(
            "this book keeps no {} facet (it keeps: {kept}), so {} cannot be answered; rebuild it with `import --facets` to filter on it",
            missing.names().join(", "),
            filters.join(", ")
        ))
    }

    /// Whether the cell counts.
    pub fn passes(&self, id: CellId) -> bool {
        if self.is_empty() {
            return true;
        }
        let Some(c) = Cell::from_id(id) else {
            return false;
        };
        self.attrs_pass(c) && self.period_passes(c.period)
    }

    /// Whether a cell of `c`'s speed, group and mode passes (its period aside).
    fn attrs_pass(&self, c: Cell) -> bool {
        let bit8 = |m: Option<u8>, v: u8| m.is_none_or(|m| v != 0 && m & (1 << v) != 0);
        if !bit8(self.speeds, c.speed) || !bit8(self.modes, c.mode) {
            return false;
        }
        if let Some(g) = self.groups
            && (c.group == 0 || g & (1 << c.group) == 0)
        {
            return false;
        }
        true
    }

    /// Whether a cell of this period passes `since` and `until`.
    fn period_passes(&self, period: Period) -> bool {
        let date_ok = |b: DateBound, after: bool| match (b, period) {
            (_, Period::Undated) => false,
            (DateBound::Month(..), Period::Year(_)) => false,
            (DateBound::Month(y, m), Period::Month(cy, cm)) => {
                if after {
                    (cy, cm) >= (y, m)
                } else {
                    (cy, cm) <= (y, m)
                }
            }
            (DateBound::Year(y), p) => {
                let cy = p.year().unwrap_or(0);
                if after { cy >= y } else { cy <= y }
            }
        };
        self.since.is_none_or(|b| date_ok(b, true)) && self.until.is_none_or(|b| date_ok(b, false))
    }
}

/// A [`CellFilter`] prepared for deciding many cells, as a query reads a move's cells: the
/// speed, group and mode by a table of every attrs value, the dates once per period (a move's
/// cells come in period order). Decides exactly as [`CellFilter::passes`].
pub(crate) struct CellMatcher<'f> {
    filter: &'f CellFilter,
    attrs: [bool; ATTRS_END],
    dated: bool,
    last: Option<(u16, bool)>,
}

/// The number of attrs values (`speed + 7 · (group + 10 · mode)`).
pub(crate) const ATTRS_END: usize = 7 * 10 * 3;

impl<'f> CellMatcher<'f> {
    pub(crate) fn new(filter: &'f CellFilter) -> CellMatcher<'f> {
        let mut attrs = [false; ATTRS_END];
        for (a, pass) in attrs.iter_mut().enumerate() {
            let c = Cell {
                period: Period::Undated,
                speed: (a % 7) as u8,
                group: ((a / 7) % 10) as u8,
                mode: (a / 70) as u8,
            };
            *pass = filter.is_empty() || filter.attrs_pass(c);
        }
        CellMatcher {
            filter,
            attrs,
            dated: filter.since.is_some() || filter.until.is_some(),
            last: None,
        }
    }

    #[inline]
    pub(crate) fn passes(&mut self, id: CellId) -> bool {
        if !self
            .attrs
            .get((id.0 & 0xff) as usize)
            .copied()
            .unwrap_or(false)
            || id.0 >> 24 != 0
        {
            return false;
        }
        if !self.dated {
            return true;
        }
        let code = (id.0 >> 8) as u16;
        match self.last {
            Some((p, ok)) if p == code => ok,
            _ => {
                let ok = Period::from_code(code).is_some_and(|p| self.filter.period_passes(p));
                self.last = Some((code, ok));
                ok
            }
        }
    }
}

/// Games by bucket name (a speed, a rating group, a year).
type GameTally = std::collections::BTreeMap<String, u64>;

/// Games counted into a book by speed, rating group and year (`meta` key `facet_games`,
/// JSON; what `stats` shows): each counted game adds one to its cell's value of each.
/// Summed over a book's files, carried over by every rewrite and added by merges.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
pub struct FacetGames {
    /// Speed name (or `unknown`) → games.
    #[serde(default)]
    pub speed: std::collections::BTreeMap<String, u64>,
    /// Lower bound of the rating group (or `unrated`) → games.
    #[serde(default)]
    pub rating: std::collections::BTreeMap<String, u64>,
    /// Year (or `undated`) → games.
    #[serde(default)]
    pub year: std::collections::BTreeMap<String, u64>,
}

impl FacetGames {
    pub fn is_empty(&self) -> bool {
        self.speed.is_empty() && self.rating.is_empty() && self.year.is_empty()
    }

    /// Counts `n` games of cell `c`.
    pub fn add(&mut self, c: Cell, n: u64) {
        let speed = match c.speed {
            0 => "unknown".to_string(),
            s => SPEEDS[usize::from(s - 1).min(5)].to_string(),
        };
        let rating = match c.group {
            0 => "unrated".to_string(),
            g => RATING_GROUPS[usize::from(g - 1).min(8)].to_string(),
        };
        let year = c
            .period
            .year()
            .map_or_else(|| "undated".to_string(), |y| format!("{y:04}"));
        for (map, k) in [
            (&mut self.speed, speed),
            (&mut self.rating, rating),
            (&mut self.year, year),
        ] {
            let v = map.entry(k).or_default();
            *v = v.saturating_add(n);
        }
    }

    /// Takes `o`'s games out (a merge's games counted by more than one input), clamped at
    /// zero; a bucket left without games is dropped.
    pub fn subtract(&mut self, o: &FacetGames) {
        for (mine, theirs) in self.with(o) {
            for (k, v) in theirs {
                if let Some(e) = mine.get_mut(k) {
                    *e = e.saturating_sub(*v);
                    if *e == 0 {
                        mine.remove(k);
                    }
                }
            }
        }
    }

    /// Each of this tally's three maps beside the same map of `o`.
    fn with<'a>(&'a mut self, o: &'a FacetGames) -> [(&'a mut GameTally, &'a GameTally); 3] {
        [
            (&mut self.speed, &o.speed),
            (&mut self.rating, &o.rating),
            (&mut self.year, &o.year),
        ]
    }

    pub fn merge(&mut self, o: &FacetGames) {
        for (mine, theirs) in self.with(o) {
            for (k, v) in theirs {
                let e = mine.entry(k.clone()).or_default();
                *e = e.saturating_add(*v);
            }
        }
    }
}

#[cfg(test)]
pub(crate) mod tests {
    use super::*;
    use proptest::prelude::*;

    proptest! {
        #[test]
        fn cell_ids_round_trip(c in crate::store::cells::tests::arb_cell()) {
            let cell = Cell::from_id(c.cell).unwrap();
            prop_assert_eq!(cell.id(), c.cell);
        }
    }

    #[test]
    fn filters_follow_the_rules() {
        let c = |p, s, g, m| {
            Cell {
                period: p,
                speed: s,
                group: g,
                mode: m,
            }
            .id()
        };
        let blitz = CellFilter {
            speeds: Some(CellFilter::parse_speeds("blitz").unwrap()),
            ..Default::default()
        };
        assert!(blitz.passes(c(Period::Undated, 3, 0, 0)));
        assert!(!blitz.passes(c(Period::Undated, 0, 0, 0)));
        let r = CellFilter {
            groups: Some(CellFilter::parse_ratings("2800,400").unwrap()),
            ..Default::default()
        };
        assert!(
            r.passes(c(Period::Undated, 0, 9, 0)),
            "2800 is the 2500+ group"
        );
        assert!(r.passes(c(Period::Undated, 0, 1, 0)), "400 is below 1000");
        assert!(
            !r.passes(c(Period::Undated, 0, 0, 0)),
            "unrated never passes"
        );
        let months = CellFilter {
            since: Some(DateBound::parse("2020-05").unwrap()),
            until: Some(DateBound::parse("2021-01").unwrap()),
            ..Default::default()
        };
        assert!(months.passes(c(Period::Month(2020, 5), 0, 0, 0)));
        assert!(months.passes(c(Period::Month(2021, 1), 0, 0, 0)));
        assert!(!months.passes(c(Period::Month(2021, 2), 0, 0, 0)));
        assert!(!months.passes(c(Period::Year(2020), 0, 0, 0)));
        let years = CellFilter {
            since: Some(DateBound::parse("1990").unwrap()),
            ..Default::default()
        };
        assert!(years.passes(c(Period::Year(1990), 0, 0, 0)));
        assert!(years.passes(c(Period::Month(1995, 3), 0, 0, 0)));
        assert!(!years.passes(c(Period::Undated, 0, 0, 0)));
        assert!(DateBound::parse("2020-13").is_err());
        assert!(DateBound::parse("20-01").is_err());
        assert_eq!(
            FacetSet::parse("speed,month").unwrap().to_string(),
            "month,speed"
        );
        assert!(FacetSet::parse("elo").is_err());
        assert!(blitz.check_book(FacetSet::parse("month").unwrap()).is_err());
        assert!(blitz.check_book(FacetSet::ALL).is_ok());
    }
}

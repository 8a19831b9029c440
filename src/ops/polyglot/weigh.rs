//! The weighing of a key's Polyglot moves that `export --format polyglot` writes and the
//! Python package's reader shows: every entry of the key merged by Polyglot move, counts
//! halved at `COUNT_MAX`, polyglot `make-book`'s weight and `keep_entry()` filters.

use std::collections::BTreeMap;

use crate::chess::PosState;
use crate::chess::polyglot::{code_to_pg, raw_pg_from_code};
use crate::error::Result;
use crate::store::{Entry, MoveExtra, MoveRec};

/// `COUNT_MAX` of polyglot's `book_make.c`: counts of a key are halved when one reaches it.
pub const COUNT_MAX: u64 = 16384;

/// Which side's moves `--only-white` / `--only-black` keep.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OnlySide {
    White,
    Black,
}

/// Options of polyglot's `make-book` (docs/CONTRACT.md §3 names).
#[derive(Clone, Debug)]
pub struct PolyglotExportOptions {
    /// `-min-game`: drop moves played in fewer games (after halving). Polyglot's default is 3;
    /// ours is 1 (export everything).
    pub min_games: u64,
    /// `-min-score`, in percent: drop moves whose score `sum / n / 2` is below this.
    pub min_score: f64,
    pub only: Option<OnlySide>,
    pub uniform: bool,
    /// The cells counted (`--since --until --speeds --ratings --modes`; both formats): each
    /// move's counts are those of its passing cells, moves without such games left out.
    pub filter: crate::store::facet::CellFilter,
    /// `--weights eval`: weights from the engine evaluations of the moves' resulting
    /// positions instead of the game counts (`super::eval_weights`).
    pub weights_eval: bool,
}

impl Default for PolyglotExportOptions {
    fn default() -> Self {
        PolyglotExportOptions {
            min_games: 1,
            min_score: 0.0,
            only: None,
            uniform: false,
            filter: Default::default(),
            weights_eval: false,
        }
    }
}

/// polyglot's counters for one (key, move).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MakeBookCounts {
    /// Games (`n`).
    pub(crate) n: u64,
    /// `2·wins + draws + unknown` of the side to move (`sum`).
    pub(crate) sum: u64,
}

impl MakeBookCounts {
    /// The counts of a move record for the side to move.
    pub(crate) fn of(m: &MoveRec, white_to_move: bool) -> MakeBookCounts {
        let wins = if white_to_move { m.white } else { m.black };
        MakeBookCounts {
            n: m.games(),
            sum: wins
                .saturating_mul(2)
                .saturating_add(m.draws)
                .saturating_add(m.unknown),
        }
    }
}

/// polyglot's `halve_stats()` applied until every `n` is below [`COUNT_MAX`]; returns how many
/// times the counts were halved.
pub fn halve_to_fit(counts: &mut [MakeBookCounts]) -> u32 {
    let mut times = 0;
    while counts.iter().any(|c| c.n >= COUNT_MAX) {
        for c in counts.iter_mut() {
            c.n = c.n.div_ceil(2);
            c.sum = c.sum.div_ceil(2);
        }
        times += 1;
    }
    times
}

/// Why polyglot's `keep_entry()` drops a move.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DropReason {
    MinGames,
    ZeroScore,
    MinScore,
    Side,
    /// Neither game counts nor a stored Polyglot weight.
    NoData,
}

impl DropReason {
    /// The reason's name in the export summary's `dropped`.
    pub fn name(self) -> &'static str {
        match self {
            DropReason::MinGames => "min_games",
            DropReason::ZeroScore => "zero_score",
            DropReason::MinScore => "min_score",
            DropReason::Side => "side",
            DropReason::NoData => "no_data",
        }
    }
}

fn side_dropped(white_to_move: Option<bool>, only: Option<OnlySide>) -> bool {
    matches!(
        (white_to_move, only),
        (Some(false), Some(OnlySide::White)) | (Some(true), Some(OnlySide::Black))
    )
}

/// polyglot's `keep_entry()` and `entry_score()` for counted moves (after halving): the weight
/// to write, or why the move is dropped.
pub fn make_book_weight(
    c: MakeBookCounts,
    white_to_move: bool,
    opts: &PolyglotExportOptions,
) -> std::result::Result<u16, DropReason> {
    if c.n < opts.min_games.max(1) {
        return Err(DropReason::MinGames);
    }
    if c.sum == 0 {
        return Err(DropReason::ZeroScore);
    }
    let score = (c.sum as f64 / c.n as f64) / 2.0;
    if score < opts.min_score / 100.0 {
        return Err(DropReason::MinScore);
    }
    if side_dropped(Some(white_to_move), opts.only) {
        return Err(DropReason::Side);
    }
    let w = if opts.uniform { 1 } else { c.sum };
    // After halving sum <= 2 * n < 32768.
    Ok(u16::try_from(w).unwrap_or(u16::MAX))
}

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn halving_follows_count_max() {
        let mut c = vec![
            MakeBookCounts {
                n: 40000,
                sum: 41000,
            },
            MakeBookCounts { n: 3, sum: 5 },
            MakeBookCounts { n: 16383, sum: 1 },
        ];
        assert_eq!(halve_to_fit(&mut c), 2);
        assert_eq!(
            c,
            vec![
                MakeBookCounts {
                    n: 10000,
                    sum: 10250
                },
                MakeBookCounts { n: 1, sum: 2 },
                MakeBookCounts { n: 4096, sum: 1 },
            ]
        );
        let mut small = vec![MakeBookCounts {
            n: 16383,
            sum: 32766,
        }];
        assert_eq!(halve_to_fit(&mut small), 0);
        let mut edge = vec![MakeBookCounts {
            n: 16384,
            sum: 32768,
        }];
        assert_eq!(halve_to_fit(&mut edge), 1);
        assert_eq!(
            edge[0],
            MakeBookCounts {
                n: 8192,
                sum: 16384
            }
        );
        let mut huge = vec![MakeBookCounts {
            n: u64::MAX,
            sum: u64::MAX,
        }];
        halve_to_fit(&mut huge);
        assert!(huge[0].n < COUNT_MAX && huge[0].sum <= 2 * huge[0].n);
    }

    #[test]
    fn make_book_rule() {
        let rec = MoveRec {
            white: 3,
            draws: 2,
            black: 1,
            unknown: 1,
            ..Default::default()
        };
        let w = MakeBookCounts::of(&rec, true);
        assert_eq!(w, MakeBookCounts { n: 7, sum: 9 });
        let b = MakeBookCounts::of(&rec, false);
        assert_eq!(b, MakeBookCounts { n: 7, sum: 5 });
        let d = PolyglotExportOptions::default();
        assert_eq!(make_book_weight(w, true, &d), Ok(9));
        let min3 = PolyglotExportOptions {
            min_games: 8,
            ..Default::default()
        };
        assert_eq!(make_book_weight(w, true, &min3), Err(DropReason::MinGames));
        let lost = MakeBookCounts { n: 4, sum: 0 };
        assert_eq!(make_book_weight(lost, true, &d), Err(DropReason::ZeroScore));
        let score = PolyglotExportOptions {
            min_score: 50.0,
            ..Default::default()
        };
        // 9 / 7 / 2 = 0.64 >= 0.5; 5 / 7 / 2 = 0.36 < 0.5
        assert_eq!(make_book_weight(w, true, &score), Ok(9));
        assert_eq!(
            make_book_weight(b, false, &score),
            Err(DropReason::MinScore)
        );
        let white = PolyglotExportOptions {
            only: Some(OnlySide::White),
            ..Default::default()
        };
        assert_eq!(make_book_weight(b, false, &white), Err(DropReason::Side));
        assert_eq!(make_book_weight(w, true, &white), Ok(9));
        let uniform = PolyglotExportOptions {
            uniform: true,
            ..Default::default()
        };
        assert_eq!(make_book_weight(w, true, &uniform), Ok(1));
        assert_eq!(
            make_book_weight(lost, true, &uniform),
            Err(DropReason::ZeroScore)
        );
    }
}

//! The games of a position under a filter (brief §9; docs/CONTRACT.md "Games"): the strongest
//! and newest games its counted cells name, chosen across the book's files from their
//! references, in lila's game shape; and the one game of a move that a single game counts for.

use std::collections::HashMap;
use std::sync::Arc;

use serde::Serialize;

use crate::chess::gamefields::{
    BLACK_ELO_FIELD, BLACK_FIELD, RESULT_FIELD, WHITE_ELO_FIELD, WHITE_FIELD,
};
use crate::chess::gameindex::game_facts;
use crate::chess::move_uci;
use crate::error::Result;
use crate::ops::gamerec::id_string;
use crate::store::Book;
use crate::store::book::{BookFile, ChosenRef, FileChoice, GamesQuestion};
use crate::store::facet::{CellFilter, CellMatcher, MODES, Period, SPEEDS};
use crate::store::gameblock::{StoredGame, date_key};
use crate::store::gamerefs::{NEWEST, STRONGEST};
use crate::store::tags::parse_elo;

/// Most `topGames` a `/lichess` answer lists (of rating group 2000 and above).
pub const LICHESS_TOP: usize = 4;
/// Most games a `/lichess` answer lists, top and recent together.
pub const LICHESS_GAMES: usize = NEWEST;
/// Most `topGames` a `/masters` answer lists.
pub const MASTERS_TOP: usize = STRONGEST;
/// The strength (WhiteElo + BlackElo, both rated) of a game of rating group 2000 or above.
const TOP_STRENGTH: u16 = 4000;

/// Which games to choose.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Wanted {
    /// `/lichess`: at most `top` (≤ 4) strongest games of group 2000+, then at most `recent`
    /// (≤ 8 − top shown) newest of the others.
    Lichess { top: usize, recent: usize },
    /// `/masters`: at most `top` (≤ 15) strongest games.
    Masters { top: usize },
}

/// A player of a game object.
#[derive(Clone, Debug, Serialize, PartialEq, Eq)]
pub struct Player {
    pub name: String,
    pub rating: Option<u32>,
}

/// A game in lila's explorer shape (`/masters` omits `speed` and `mode`).
#[derive(Clone, Debug, Serialize, PartialEq, Eq)]
pub struct GameObject {
    pub uci: String,
    pub id: String,
    pub winner: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub speed: Option<&'static str>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub mode: Option<&'static str>,
    pub white: Player,
    pub black: Player,
    pub year: Option<u16>,
    pub month: Option<String>,
}

/// The games of one position.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PositionGames {
    pub top: Vec<GameObject>,
    pub recent: Vec<GameObject>,
    /// Per move code: its game, when exactly one game counts for it.
    pub single: HashMap<u16, GameObject>,
}

/// One referenced game that passes the filter.
#[derive(Clone, Debug)]
struct Candidate {
    file: usize,
    number: u32,
    mv: u16,
    strength: u16,
}

/// A candidate with its game read: what the choice across files orders by.
struct Chosen {
    c: Candidate,
    game: StoredGame,
    date: u32,
}

impl Chosen {
    fn newness(&self) -> (u32, u64, usize, u32) {
        (self.date, self.game.id, self.c.file, self.c.number)
    }
    fn strength(&self) -> (u16, u32, u64, usize, u32) {
        (
            self.c.strength,
            self.date,
            self.game.id,
            self.c.file,
            self.c.number,
        )
    }
}

/// The games of the position with `key` that `filter` counts; `singles` are the moves (codes)
/// a single game counts for, whose game is wanted. `masters` shapes the objects for
/// `/masters` (no speed, no mode).
pub fn position_games(
    book: &Book,
    key: u64,
    filter: &CellFilter,
    wanted: Wanted,
    singles: &[u16],
) -> Result<PositionGames> {
    let mut out = PositionGames::default();
    let (top_n, recent_n, masters) = match wanted {
        Wanted::Lichess { top, recent } => (top.min(LICHESS_TOP), recent.min(LICHESS_GAMES), false),
        Wanted::Masters { top } => (top.min(MASTERS_TOP), 0, true),
    };
    if top_n == 0 && recent_n == 0 && singles.is_empty() {
        return Ok(out);
    }
    // Per file: its best candidates by strength and by number, and the singles' games.
    let mut chosen: Vec<Chosen> = Vec::new();
    let mut single_of: HashMap<u16, (usize, u32)> = HashMap::new();
    let mut sorted_singles = singles.to_vec();
    sorted_singles.sort_unstable();
    sorted_singles.dedup();
    let question = GamesQuestion {
        key,
        filter: filter.clone(),
        top: top_n,
        recent: recent_n,
        masters,
        singles: sorted_singles,
    };
    for (fi, f) in book.files().iter().enumerate() {
        let choice = match f.kept_games().get(&question) {
            Some(c) => c,
            None => {
                let Some(c) = file_choice(f, &question)? else {
                    continue;
                };
                let c = Arc::new(c);
                f.kept_games().keep(question.clone(), c.clone());
                c
            }
        };
        for &(mv, n) in &choice.singles {
            single_of.insert(mv, (fi, n));
        }
        for c in &choice.best {
            let game = f.game_head_by_number(c.number)?;
            let date = date_key(&game);
            chosen.push(Chosen {
                c: Candidate {
                    file: fi,
                    number: c.number,
                    mv: c.mv,
                    strength: c.strength,
                },
                game,
                date,
            });
        }
    }
    if top_n > 0 {
        let mut s: Vec<&Chosen> = chosen
            .iter()
            .filter(|c| masters || c.c.strength >= TOP_STRENGTH)
            .collect();
        s.sort_by_key(|c| std::cmp::Reverse(c.strength()));
        out.top = s
            .into_iter()
            .take(top_n)
            .map(|c| object(&c.game, c.c.mv, masters))
            .collect();
    }
    if recent_n > 0 {
        let shown: Vec<(usize, u32)> = if masters {
            Vec::new()
        } else {
            let mut s: Vec<&Chosen> = chosen
                .iter()
                .filter(|c| c.c.strength >= TOP_STRENGTH)
                .collect();
            s.sort_by_key(|c| std::cmp::Reverse(c.strength()));
            s.iter()
                .take(top_n)
                .map(|c| (c.c.file, c.c.number))
                .collect()
        };
        let room = LICHESS_GAMES - shown.len();
        let mut s: Vec<&Chosen> = chosen
            .iter()
            .filter(|c| !shown.contains(&(c.c.file, c.c.number)))
            .collect();
        s.sort_by_key(|c| std::cmp::Reverse(c.newness()));
        out.recent = s
            .into_iter()
            .take(recent_n.min(room))
            .map(|c| object(&c.game, c.c.mv, masters))
            .collect();
    }
    for (mv, (fi, n)) in single_of {
        let game = book.files()[fi].game_head_by_number(n)?;
        out.single.insert(mv, object(&game, mv, masters));
    }
    Ok(out)
}

/// What one file's references choose for `q` (`None`: the file holds none for the position):
/// its best candidates by strength and by number under the filter, and the game of each move
/// asked for as a single.
fn file_choice(f: &BookFile, q: &GamesQuestion) -> Result<Option<FileChoice>> {
    let Some(refs) = f.refs_at(q.key)? else {
        return Ok(None);
    };
    let (top_n, recent_n, masters) = (q.top, q.recent, q.masters);
    // Without lists, only the singles' references are read.
    let lists = top_n > 0 || recent_n > 0;
    let mut matcher = CellMatcher::new(&q.filter);
    let mut facts = f.facts_reader();
    let mut cands: Vec<Candidate> = Vec::new();
    let mut out = FileChoice::default();
    for (mv, numbers) in &refs.moves {
        let single = q.singles.binary_search(mv).is_ok();
        if !lists && !single {
            continue;
        }
        out.scanned += numbers.len();
        let mut last = None;
        for &n in numbers {
            let fact = facts.get(n)?;
            if matcher.passes(fact.cell) {
                last = Some(n);
                if lists {
                    cands.push(Candidate {
                        file: 0,
                        number: n,
                        mv: *mv,
                        strength: fact.strength,
                    });
                }
            }
        }
        if single && let Some(n) = last {
            out.singles.push((*mv, n));
        }
    }
    // A game is named once per move it played here; numbers are unique per game.
    let mut best: Vec<Candidate> = Vec::new();
    if top_n > 0 {
        let mut s: Vec<(usize, &Candidate)> = cands
            .iter()
            .enumerate()
            .filter(|(_, c)| masters || c.strength >= TOP_STRENGTH)
            .collect();
        first_k(&mut s, top_n, |&(i, c)| {
            (std::cmp::Reverse((c.strength, c.number)), i)
        });
        best.extend(s.into_iter().map(|(_, c)| c.clone()));
    }
    if recent_n > 0 {
        let mut s: Vec<(usize, &Candidate)> = cands.iter().enumerate().collect();
        // The newest that the top list may not take, and as many again.
        first_k(&mut s, recent_n + top_n, |&(i, c)| {
            (std::cmp::Reverse(c.number), i)
        });
        best.extend(s.into_iter().map(|(_, c)| c.clone()));
    }
    best.sort_by_key(|c| c.number);
    best.dedup_by_key(|c| c.number);
    out.best = best
        .into_iter()
        .map(|c| ChosenRef {
            number: c.number,
            mv: c.mv,
            strength: c.strength,
        })
        .collect();
    Ok(Some(out))
}

/// Keeps the `k` first of `v` in the order of `key` (a total order), sorted: what sorting all
/// of `v` and taking `k` keeps, in time linear in `v` (the start position's moves name
/// thousands of games; sorting them all took a quarter of its answer).
fn first_k<T, K: Ord>(v: &mut Vec<T>, k: usize, key: impl Fn(&T) -> K) {
    if k == 0 {
        v.clear();
        return;
    }
    if v.len() > k {
        v.select_nth_unstable_by_key(k - 1, &key);
        v.truncate(k);
    }
    v.sort_unstable_by_key(key);
}

/// A stored game as lila's game object, for the move `mv` it played in the position.
pub fn object(g: &StoredGame, mv: u16, masters: bool) -> GameObject {
    let f = |i: usize| -> String {
        g.fields
            .get(i)
            .map(|v| crate::store::tags::tag_text(v).into_owned())
            .unwrap_or_default()
    };
    let facts = game_facts(g);
    let elo = |i: usize| g.fields.get(i).and_then(|v| parse_elo(v));
    let (year, month) = match facts.cell.period {
        Period::Undated => (None, None),
        Period::Year(y) => (Some(y), None),
        Period::Month(y, m) => (Some(y), Some(format!("{y:04}-{m:02}"))),
    };
    GameObject {
        uci: move_uci(mv),
        id: id_string(g.id),
        winner: match f(RESULT_FIELD).trim() {
            "1-0" => Some("white"),
            "0-1" => Some("black"),
            _ => None,
        },
        speed: (!masters && facts.cell.speed > 0)
            .then(|| SPEEDS[usize::from(facts.cell.speed - 1).min(SPEEDS.len() - 1)]),
        mode: (!masters && facts.cell.mode > 0)
            .then(|| MODES[usize::from(facts.cell.mode - 1).min(MODES.len() - 1)]),
        white: Player {
            name: f(WHITE_FIELD),
            rating: elo(WHITE_ELO_FIELD),
        },
        black: Player {
            name: f(BLACK_FIELD),
            rating: elo(BLACK_ELO_FIELD),
        },
        year,
        month,
    }
}

#[cfg(test)]
mod tests {
    use super::first_k;
    use proptest::prelude::*;

    proptest! {
        /// `first_k` keeps what a stable sort by the same key, then `take(k)`, keeps, in the
        /// same order (ties broken by the index, as the stable sort breaks them).
        #[test]
        fn first_k_is_a_stable_sort_then_take(
            v in proptest::collection::vec((0u16..4, 0u32..6), 0..60),
            k in 0usize..70,
        ) {
            let mut want: Vec<(usize, &(u16, u32))> = v.iter().enumerate().collect();
            want.sort_by_key(|&(_, c)| std::cmp::Reverse(*c));
            want.truncate(k);
            let mut got: Vec<(usize, &(u16, u32))> = v.iter().enumerate().collect();
            first_k(&mut got, k, |&(i, c)| (std::cmp::Reverse(*c), i));
            prop_assert_eq!(got, want);
        }
    }
}

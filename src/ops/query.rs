//! Reading answers out of a book: `probe` and `dump` (JSON shapes of docs/CONTRACT.md §3).

use serde::Serialize;
use shakmaty::Chess;
use shakmaty::san::SanPlus;

use crate::chess::openings::{Opening, name_along, name_of};
use crate::chess::{PosState, legal_move, move_uci, to_hex};
use crate::error::{Error, Result};
use crate::store::cells::CellRead;
use crate::store::{Book, Entry, MoveRec};

#[derive(Clone, Debug, Serialize, PartialEq, Eq)]
pub(crate) struct MoveJson {
    pub(crate) uci: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) san: Option<String>,
    pub(crate) white: u64,
    pub(crate) draws: u64,
    pub(crate) black: u64,
    pub(crate) unknown: u64,
    pub(crate) games: u64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) avg_rating: Option<u64>,
    /// `probe` only (lichess's names): the mover's and the opponents' mean rating and the
    /// mover's performance, over the counted games.
    #[serde(rename = "averageRating", skip_serializing_if = "Option::is_none")]
    pub(crate) average_rating: Option<u64>,
    #[serde(
        rename = "averageOpponentRating",
        skip_serializing_if = "Option::is_none"
    )]
    pub(crate) average_opponent_rating: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) performance: Option<i64>,
    /// `dump --facets`: the move's cells.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) cells: Option<Vec<CellJson>>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) weight: Option<u16>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) learn: Option<u32>,
}

#[derive(Clone, Debug, Serialize, PartialEq, Eq)]
pub struct EntryJson {
    pub(crate) key: String,
    /// Four-field FEN; `null` for key-only entries.
    pub(crate) fen: Option<String>,
    pub(crate) moves: Vec<MoveJson>,
    #[serde(skip_serializing_if = "std::ops::Not::not")]
    pub(crate) key_only: bool,
    /// `probe` only: the opening name (ECO and name) of the position or its line.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) opening: Option<Opening>,
    /// `probe` only: the totals over the counted games.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) white: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) draws: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) black: Option<u64>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) unknown: Option<u64>,
    /// `probe --history`: the counted games per month (per year when the bounds are years).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) history: Option<Vec<crate::ops::facets::HistoryPoint>>,
    /// The position's engine evaluations (docs/CONTRACT.md §10), when it has any.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub(crate) evals: Option<Vec<crate::ops::evals::EvalJson>>,
}

/// One cell of a move (`dump --facets`): its facets (`null` when unknown) and counters.
#[derive(Clone, Debug, Serialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub(crate) struct CellJson {
    /// `YYYY-MM`, `YYYY` (year only) or `null` (undated).
    period: Option<String>,
    speed: Option<&'static str>,
    /// The group's lower bound.
    rating: Option<u32>,
    mode: Option<&'static str>,
    white: u64,
    draws: u64,
    black: u64,
    unknown: u64,
    rating_sum: u64,
    rating_count: u64,
    opponent_rating_sum: u64,
    opponent_rating_count: u64,
}

fn cells_json(m: &MoveRec) -> Vec<CellJson> {
    use crate::store::facet::{Cell, MODES, Period, RATING_GROUPS, SPEEDS};
    m.cells
        .iter()
        .map(|c| {
            let cell = Cell::from_id(c.cell).unwrap_or_default();
            CellJson {
                period: match cell.period {
                    Period::Undated => None,
                    p => Some(p.to_string()),
                },
                speed: cell.speed.checked_sub(1).map(|s| SPEEDS[usize::from(s)]),
                rating: cell
                    .group
                    .checked_sub(1)
                    .map(|g| RATING_GROUPS[usize::from(g)]),
                mode: cell.mode.checked_sub(1).map(|x| MODES[usize::from(x)]),
                white: c.white,
                draws: c.draws,
                black: c.black,
                unknown: c.unknown,
                rating_sum: c.rating_sum,
                rating_count: c.rating_count,
                opponent_rating_sum: c.opp_sum,
                opponent_rating_count: c.opp_count,
            }
        })
        .collect()
}

fn move_json(m: &MoveRec, pos: Option<&Chess>) -> MoveJson {
    let san = pos
        .and_then(|p| legal_move(p, m.mv).map(|mv| SanPlus::from_move(p.clone(), mv).to_string()));
    MoveJson {
        uci: move_uci(m.mv),
        san,
        white: m.white,
        draws: m.draws,
        black: m.black,
        unknown: m.unknown,
        games: m.games(),
        avg_rating: (m.rating_count > 0).then(|| m.rating_sum / m.rating_count),
        average_rating: None,
        average_opponent_rating: None,
        performance: None,
        cells: None,
        weight: m.extra.map(|p| p.weight),
        learn: m.extra.map(|p| p.learn),
    }
}

/// Moves ordered for display: most games first, then by UCI.
pub(crate) fn sorted_moves(e: &Entry) -> Vec<&MoveRec> {
    let mut v: Vec<&MoveRec> = e.moves.iter().collect();
    v.sort_by(|a, b| {
        b.games()
            .cmp(&a.games())
            .then_with(|| move_uci(a.mv).cmp(&move_uci(b.mv)))
    });
    v
}

/// [`entry_json`] with each move's cells (`dump --facets`; a move without cells lists its
/// counts as one all-unknown cell).
pub fn entry_json_with_cells(e: &Entry) -> Result<EntryJson> {
    let mut j = entry_json(e, false)?;
    for (mj, m) in j.moves.iter_mut().zip(sorted_moves(e)) {
        mj.cells = Some(match m.cells.is_empty() {
            true => cells_json(&MoveRec {
                cells: vec![m.unknown_cell()],
                ..Default::default()
            }),
            false => cells_json(m),
        });
    }
    Ok(j)
}

/// JSON form of an entry. With `with_san`, moves also carry SAN (needs a position replay).
pub fn entry_json(e: &Entry, with_san: bool) -> Result<EntryJson> {
    let (fen, chess) = match &e.pos {
        Some(p) => {
            let s = PosState::unpack(p)?;
            let chess = if with_san { s.to_chess().ok() } else { None };
            (Some(s.fen()), chess)
        }
        None => (None, None),
    };
    Ok(EntryJson {
        key: format!("{:016x}", e.key),
        fen,
        moves: sorted_moves(e)
            .into_iter()
            .map(|m| move_json(m, chess.as_ref()))
            .collect(),
        key_only: e.pos.is_none(),
        opening: None,
        white: None,
        draws: None,
        black: None,
        unknown: None,
        history: None,
        evals: None,
    })
}

/// The probe answer for a position: its entry if the book holds it.
pub struct ProbeAnswer {
    pub(crate) key: u64,
    pub(crate) state: PosState,
    pub entry: Option<Entry>,
    /// Other positions sharing the key (collisions), for information.
    pub same_key_others: usize,
    /// The opening name of the position, or of the last named one of the line that led to
    /// it ([`probe_line`]).
    pub opening: Option<Opening>,
    /// The history asked for ([`ProbeAnswer::count`]).
    pub(crate) history: Option<Vec<crate::ops::facets::HistoryPoint>>,
    /// The position's engine evaluations.
    pub evals: Option<Vec<crate::store::eval::EvalResult>>,
}

pub fn probe(book: &Book, pos: &Chess) -> Result<ProbeAnswer> {
    probe_read(book, pos, CellRead::All)
}

/// [`probe`] keeping of each move's cells what `read` asks for (the answer's counts are
/// then those `read` selects).
fn probe_read(book: &Book, pos: &Chess, read: CellRead) -> Result<ProbeAnswer> {
    let state = PosState::from_chess(pos);
    let packed = state.pack().0;
    let key = state.key();
    // Without collisions the position's entry is found by its coded bytes in each file (no
    // other entry's position decoded); otherwise every entry of the key, to count the others.
    let (entry, same_key_others) = if book.keys_are_unique() {
        (book.lookup_read(&packed, read)?, 0)
    } else {
        let mut all = book.get_read(key, read)?;
        let idx = all
            .iter()
            .position(|e| e.pos.as_deref() == Some(&packed[..]));
        (idx.map(|i| all.swap_remove(i)), all.len())
    };
    Ok(ProbeAnswer {
        key,
        state,
        entry,
        same_key_others,
        opening: name_of(pos).cloned(),
        history: None,
        evals: book.evals(&packed)?,
    })
}

/// [`probe`] of the last position of `line`, named by the last named position along it.
pub fn probe_line(book: &Book, line: &[Chess]) -> Result<ProbeAnswer> {
    probe_line_counting(book, line, &crate::ops::facets::Counting::default())
}

/// [`probe_line`] over the cells `counting` selects, with the history if it asks for it.
pub fn probe_line_counting(
    book: &Book,
    line: &[Chess],
    counting: &crate::ops::facets::Counting,
) -> Result<ProbeAnswer> {
    let pos = line
        .last()
        .ok_or_else(|| Error::Internal("probe_line: empty line".into()))?;
    let mut answer = probe_read(book, pos, counting.cell_read())?;
    answer.count(counting);
    answer.opening = name_along(line.iter()).cloned();
    Ok(answer)
}

impl ProbeAnswer {
    /// Keeps of the answer what `counting` counts, and adds the history it asks for.
    pub(crate) fn count(&mut self, counting: &crate::ops::facets::Counting) {
        if let Some(e) = &mut self.entry {
            counting.filter.apply(e);
        }
        self.history = counting.history.map(|by_year| {
            crate::ops::facets::history(
                self.entry.as_ref(),
                counting.filter.since,
                counting.filter.until,
                by_year,
            )
        });
    }

    pub fn json(&self) -> Result<EntryJson> {
        let empty = Entry {
            coded: None,
            key: self.key,
            pos: Some(self.state.pack().0),
            moves: Vec::new(),
        };
        let e = self.entry.as_ref().unwrap_or(&empty);
        let mut j = entry_json(e, true)?;
        j.opening = self.opening.clone();
        j.history = self.history.clone();
        j.evals = self.evals_json();
        let white_moves = self.state.to_chess().map_or(true, |p| {
            shakmaty::Position::turn(&p) == shakmaty::Color::White
        });
        let (mut w, mut d, mut b, mut u) = (0, 0, 0, 0);
        for (mj, m) in j.moves.iter_mut().zip(sorted_moves(e)) {
            w += m.white;
            d += m.draws;
            b += m.black;
            u += m.unknown;
            let (os, oc) = crate::store::cells::opponent_ratings(m);
            let (wins, losses) = match white_moves {
                true => (m.white, m.black),
                false => (m.black, m.white),
            };
            mj.average_rating = mj.avg_rating;
            mj.average_opponent_rating = (oc > 0).then(|| os / oc);
            mj.performance = crate::ops::facets::performance(wins, m.draws, losses, os, oc);
        }
        (j.white, j.draws, j.black, j.unknown) = (Some(w), Some(d), Some(b), Some(u));
        Ok(j)
    }

    /// The evaluations as JSON (book notation: castling as the king's two squares).
    fn evals_json(&self) -> Option<Vec<crate::ops::evals::EvalJson>> {
        let pos = self.state.to_chess().ok()?;
        Some(crate::ops::evals::evals_json(&pos, self.evals.as_ref()?))
    }

    /// Human-readable table.
    pub fn table(&self) -> Result<String> {
        use std::fmt::Write;
        let j = self.json()?;
        let mut s = String::new();
        let _ = writeln!(s, "position  {}", self.state.fen());
        if let Some(o) = &self.opening {
            let _ = writeln!(s, "opening   {} {}", o.eco, o.name);
        }
        let _ = writeln!(
            s,
            "key       {}   packed {}",
            j.key,
            to_hex(&self.state.pack().0)
        );
        if let (Some(ev), Ok(pos)) = (&self.evals, self.state.to_chess()) {
            s.push_str(&crate::ops::evals::evals_table(&pos, ev));
        }
        if j.moves.is_empty() {
            let _ = writeln!(s, "not in book");
            return Ok(s);
        }
        let total: u64 = j.moves.iter().map(|m| m.games).sum();
        let _ = writeln!(s, "games     {total}");
        let _ = writeln!(
            s,
            "\n{:<8} {:<6} {:>9} {:>6}  {:>6} {:>6} {:>6}  {:>7}",
            "move", "uci", "games", "share", "white", "draw", "black", "avg elo"
        );
        for m in &j.moves {
            let decided = (m.white + m.draws + m.black).max(1) as f64;
            let pct = |x: u64| format!("{:.1}%", 100.0 * x as f64 / decided);
            let _ = writeln!(
                s,
                "{:<8} {:<6} {:>9} {:>6}  {:>6} {:>6} {:>6}  {:>7}",
                m.san.as_deref().unwrap_or("?"),
                m.uci,
                m.games,
                format!("{:.1}%", 100.0 * m.games as f64 / total.max(1) as f64),
                pct(m.white),
                pct(m.draws),
                pct(m.black),
                m.avg_rating.map_or("-".to_string(), |r| r.to_string()),
            );
        }
        if let Some(h) = &self.history {
            let _ = writeln!(
                s,
                "\n{:<8} {:>7} {:>7} {:>7}",
                "history", "white", "draws", "black"
            );
            for p in h {
                let when = match (&p.month, p.year) {
                    (Some(m), _) => m.clone(),
                    (None, Some(y)) => format!("{y:04}"),
                    (None, None) => "?".into(),
                };
                let _ = writeln!(s, "{when:<8} {:>7} {:>7} {:>7}", p.white, p.draws, p.black);
            }
        }
        if self.same_key_others > 0 {
            let _ = writeln!(
                s,
                "\nnote: {} other position(s) in the book share this key",
                self.same_key_others
            );
        }
        Ok(s)
    }
}

/// `dump`: every entry as JSON (`facets`: with its cells), and every position with engine
/// evaluations (those without games with no moves), in (key, position) order.
pub fn dump_json(
    book: &Book,
    facets: bool,
) -> Result<impl Iterator<Item = Result<EntryJson>> + '_> {
    let mut entries = book.iter()?.peekable();
    let mut evals = book.evals_iter()?.peekable();
    Ok(std::iter::from_fn(move || {
        let next_is_eval = match (entries.peek(), evals.peek()) {
            (Some(Err(_)), _) => false,
            (_, Some(Err(_))) => true,
            (Some(Ok(e)), Some(Ok(v))) => {
                (v.key, Some(v.pos.as_slice())) < (e.key, e.pos.as_deref())
            }
            (None, Some(_)) => true,
            (_, None) => false,
        };
        if next_is_eval {
            return evals.next().map(|v| {
                let v = v?;
                let e = Entry {
                    coded: None,
                    key: v.key,
                    pos: Some(v.pos),
                    moves: Vec::new(),
                };
                with_evals(entry_json(&e, false)?, &e, Some(v.results))
            });
        }
        let e = match entries.next()? {
            Ok(e) => e,
            Err(err) => return Some(Err(err.into())),
        };
        let mine = match evals.peek() {
            Some(Ok(v)) if v.key == e.key && Some(v.pos.as_slice()) == e.pos.as_deref() => {
                evals.next().and_then(|v| v.ok()).map(|v| v.results)
            }
            _ => None,
        };
        let j = match facets {
            true => entry_json_with_cells(&e),
            false => entry_json(&e, false),
        };
        Some(j.and_then(|j| with_evals(j, &e, mine)))
    }))
}

fn with_evals(
    mut j: EntryJson,
    e: &Entry,
    evals: Option<Vec<crate::store::eval::EvalResult>>,
) -> Result<EntryJson> {
    if let (Some(ev), Some(p)) = (evals, &e.pos) {
        let pos = crate::ops::evals::chess_of(p)?;
        j.evals = Some(crate::ops::evals::evals_json(&pos, &ev));
    }
    Ok(j)
}

//! The lichess-opening-explorer answer for a chess position (docs/CONTRACT.md §3 "HTTP API"): totals,
//! the moves with SAN, ratings and opening names, the opening of the line played.
//!
//! Transport-free: `bookdb serve` turns query parameters into a line
//! ([`crate::ops::position::chess_line`]) and an [`explore`] call and serialises the [`ExplorerAnswer`]; the tests compare it with `dump`.

use serde::Serialize;
use shakmaty::san::{San, SanPlus, Suffix};
use shakmaty::{Chess, Position};

use super::query::sorted_moves;
use crate::chess::openings::{Opening, name_along, name_of};
use crate::chess::{PosState, encode_move, move_uci};
use crate::error::{Error, Result};
use crate::ops::facets::{Counting, HistoryPoint, history, performance};
use crate::ops::topgames::{GameObject, Wanted, position_games};
use crate::store::Book;
use crate::store::cells::opponent_ratings;

/// Moves listed when the client does not say (lichess's default).
pub const DEFAULT_MOVES: usize = 12;

/// The answer for one position, in the lichess explorer's shape plus bookdb's `key`, `fen` and
/// `unknown`. `topGames` and `recentGames` come from the book's game references (brief §9;
/// empty in a book without games); `/masters` answers have no `recentGames`.
#[derive(Clone, Debug, Serialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct ExplorerAnswer {
    pub white: u64,
    pub draws: u64,
    pub black: u64,
    pub moves: Vec<ExplorerMove>,
    pub top_games: Vec<GameObject>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub recent_games: Option<Vec<GameObject>>,
    pub opening: Option<Opening>,
    /// Polyglot key, 16 hex digits.
    pub key: String,
    /// Four-field FEN of the position answered for.
    pub fen: String,
    /// Games of unknown result, summed over the moves.
    pub unknown: u64,
    /// `history=true`: the position's counted games per month (`/masters`: per year).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub history: Option<Vec<HistoryPoint>>,
}

/// One move of an [`ExplorerAnswer`].
#[derive(Clone, Debug, Serialize, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct ExplorerMove {
    pub uci: String,
    pub san: String,
    /// Mean rating of the rated games that played the move; absent when none was rated.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub average_rating: Option<u64>,
    /// Mean rating of the opponents (books with facets keep it).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub average_opponent_rating: Option<u64>,
    /// lila's performance of the mover over the counted games (books with facets).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub performance: Option<i64>,
    pub white: u64,
    pub draws: u64,
    pub black: u64,
    /// The move's game when exactly one counted game played it (and the book stores it).
    pub game: Option<GameObject>,
    /// The name of the position the move reaches, if it has one of its own.
    pub opening: Option<Opening>,
    pub unknown: u64,
}

/// The explorer answer for the last position of `line` (from [`crate::ops::position::chess_line`]), listing at
/// most `max_moves` moves (most played first); the totals count every move.
pub fn explore(book: &Book, line: &[Chess], max_moves: usize) -> Result<ExplorerAnswer> {
    explore_counting(book, line, max_moves, &Counting::default())
}

/// [`explore`] over the cells `counting` selects, with the history if it asks for it. A
/// filter on a facet the book does not keep is refused (it could only match nothing).
pub fn explore_counting(
    book: &Book,
    line: &[Chess],
    max_moves: usize,
    counting: &Counting,
) -> Result<ExplorerAnswer> {
    explore_games(book, line, max_moves, counting, None)
}

/// [`explore_counting`] with the games `wanted` (`topGames`, `recentGames`, `moves[].game`)
/// chosen from the book's references under the same filter.
pub fn explore_games(
    book: &Book,
    line: &[Chess],
    max_moves: usize,
    counting: &Counting,
    wanted: Option<Wanted>,
) -> Result<ExplorerAnswer> {
    counting.check_book(book.facets())?;
    let pos = line
        .last()
        .ok_or_else(|| Error::Internal("explore: empty line".into()))?;
    // Found by its coded bytes (no position in the book is decoded) and moves, as `probe`
    // finds it; a key-only entry has no position and is not answered by position.
    let state = PosState::from_chess(pos);
    let mut entry = book.lookup_read(&state.pack().0, counting.cell_read())?;
    if let Some(e) = &mut entry {
        counting.filter.apply(e);
    }
    let hist = counting.history.map(|by_year| {
        history(
            entry.as_ref(),
            counting.filter.since,
            counting.filter.until,
            by_year,
        )
    });
    let mut out = ExplorerAnswer {
        white: 0,
        draws: 0,
        black: 0,
        moves: Vec::new(),
        top_games: Vec::new(),
        recent_games: match wanted {
            Some(Wanted::Masters { .. }) => None,
            _ => Some(Vec::new()),
        },
        opening: name_along(line.iter()).cloned(),
        key: format!("{:016x}", state.key()),
        fen: state.fen(),
        unknown: 0,
        history: hist,
    };
    let Some(entry) = entry else {
        return Ok(out);
    };
    for m in &entry.moves {
        out.white += m.white;
        out.draws += m.draws;
        out.black += m.black;
        out.unknown += m.unknown;
    }
    let legal = pos.legal_moves();
    let listed: Vec<_> = sorted_moves(&entry).into_iter().take(max_moves).collect();
    let mut games = match wanted {
        Some(w) => {
            let singles: Vec<u16> = listed
                .iter()
                .filter(|m| m.games() == 1)
                .map(|m| m.mv)
                .collect();
            let g = position_games(book, state.key(), &counting.filter, w, &singles)?;
            out.top_games = g.top;
            if let Some(r) = &mut out.recent_games {
                *r = g.recent;
            }
            g.single
        }
        None => Default::default(),
    };
    for m in listed {
        // A move the position does not allow (possible only in a damaged or foreign book) is
        // listed by its UCI with no SAN and no opening, never dropped from the totals.
        let (san, opening) = match legal.iter().find(|mv| encode_move(mv) == m.mv) {
            Some(mv) => {
                let san = San::from_move(pos, *mv);
                let mut child = pos.clone();
                child.play_unchecked(*mv);
                let suffix = Suffix::from_position(&child);
                let opening = name_of(&child).cloned();
                (SanPlus { san, suffix }.to_string(), opening)
            }
            None => (move_uci(m.mv), None),
        };
        let (opp_sum, opp_count) = opponent_ratings(m);
        let (wins, losses) = match pos.turn() {
            shakmaty::Color::White => (m.white, m.black),
            shakmaty::Color::Black => (m.black, m.white),
        };
        out.moves.push(ExplorerMove {
            uci: move_uci(m.mv),
            san,
            average_rating: (m.rating_count > 0).then(|| m.rating_sum / m.rating_count),
            average_opponent_rating: (opp_count > 0).then(|| opp_sum / opp_count),
            performance: performance(wins, m.draws, losses, opp_sum, opp_count),
            white: m.white,
            draws: m.draws,
            black: m.black,
            game: games.remove(&m.mv),
            opening,
            unknown: m.unknown,
        });
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::position::{MAX_LINE_MOVES, Names, PositionQuery, chess_line};

    /// A line as the explorer routes give it (`fen`, `play`).
    fn resolve_line(fen: Option<&str>, play: Option<&str>) -> Result<Vec<Chess>> {
        chess_line(&PositionQuery {
            fen,
            board: None,
            line: play,
            names: Names::HTTP.with_line("play"),
        })
    }

    #[test]
    fn lines_resolve_from_fen_and_play() {
        let line = resolve_line(None, Some("e2e4,c7c5")).unwrap();
        assert_eq!(line.len(), 3);
        let fen = PosState::from_chess(&line[2]).fen();
        assert_eq!(
            fen,
            "rnbqkbnr/pp1ppppp/8/2p5/4P3/8/PPPP1PPP/RNBQKBNR w KQkq -"
        );
        // Four-field FEN with underscores, as lichess accepts it; empty play.
        let again = resolve_line(Some(&fen.replace(' ', "_")), Some("")).unwrap();
        assert_eq!(again.len(), 1);
        assert_eq!(PosState::from_chess(&again[0]).fen(), fen);
        assert_eq!(name_along(line.iter()).unwrap().eco, "B20");
    }

    #[test]
    fn bad_lines_are_errors_that_say_which_move() {
        let e = resolve_line(None, Some("e2e4,e7e5,e1e3"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("move 3 (e1e3)"), "{e}");
        assert!(resolve_line(Some("not a fen"), None).is_err());
        assert!(resolve_line(None, Some("zz")).is_err());
        let long = vec!["g1f3"; MAX_LINE_MOVES + 1].join(",");
        assert!(resolve_line(None, Some(&long)).is_err());
    }
}

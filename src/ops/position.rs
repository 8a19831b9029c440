//! The one way a position is asked for — a FEN (chess) or a board string (Othello), then a
//! line of moves — resolved for the book's game and answered: `probe`, `probe --fens`,
//! `/v1/position` and the explorer routes all come here, so they give the same answers and the
//! same refusals, each in the caller's words ([`Names`]: CLI flags or HTTP parameters).

use shakmaty::{Chess, Position};

use crate::chess::{PosState, parse_fen, parse_move};
use crate::error::{QueryError, Result};
use crate::ops::game::Game;
use crate::ops::othello::query::{self as othello_query, OthelloEntryJson, OthelloProbe};
use crate::ops::query::{self, EntryJson, ProbeAnswer};
use crate::othello::{Board, parse_square};
use crate::store::Book;

/// Most moves a line may have (a request cannot make the server replay more).
pub const MAX_LINE_MOVES: usize = 1_000;

/// What the caller calls the parts of a position request, for its errors.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Names {
    pub fen: &'static str,
    pub board: &'static str,
    pub line: &'static str,
}

impl Names {
    /// The command line's flags.
    pub const CLI: Names = Names {
        fen: "--fen",
        board: "--board",
        line: "--moves",
    };
    /// The HTTP parameters (the line is `moves`; [`Names::with_line`] for `play`).
    pub const HTTP: Names = Names {
        fen: "fen",
        board: "board",
        line: "moves",
    };

    /// These names with the line called `line`.
    pub const fn with_line(self, line: &'static str) -> Names {
        Names { line, ..self }
    }
}

/// A position as asked for: a start (`fen` or `board`, the game's start position if neither)
/// and a line of moves played from it.
#[derive(Clone, Copy, Debug)]
pub struct PositionQuery<'a> {
    pub fen: Option<&'a str>,
    pub board: Option<&'a str>,
    /// Moves separated by spaces or commas: chess SAN or UCI (move numbers such as `1.` or
    /// `12...` are skipped), Othello squares (also run together: `f5d6c3`).
    pub line: Option<&'a str>,
    pub names: Names,
}

impl<'a> PositionQuery<'a> {
    /// A query of a FEN alone.
    pub fn fen(fen: &'a str, names: Names) -> Self {
        PositionQuery {
            fen: Some(fen),
            board: None,
            line: None,
            names,
        }
    }
}

/// The positions along a chess query: its start and one per move; the last is the one asked.
pub fn chess_line(q: &PositionQuery) -> Result<Vec<Chess>> {
    if q.board.is_some() {
        return Err(wrong_game(q.names.board, "Othello", Game::Chess, q.names).into());
    }
    let start = match q.fen {
        // A FEN given empty is a mistake (an unset variable in `--fen "$FEN"`), not the start.
        Some(f) if f.replace('_', " ").trim().is_empty() => {
            return Err(QueryError::Start {
                param: q.names.fen,
                reason: "the FEN is empty (leave it out for the start position)".to_string(),
            }
            .into());
        }
        // lichess allows `_` for the spaces of a FEN in a URL.
        Some(f) => parse_fen(f.trim().replace('_', " ").trim()).map_err(|e| QueryError::Start {
            param: q.names.fen,
            reason: e.to_string(),
        })?,
        None => Chess::default(),
    };
    let moves = chess_tokens(q.line.unwrap_or(""));
    check_length(moves.len(), q.names)?;
    let mut line = Vec::with_capacity(moves.len() + 1);
    let mut pos = start;
    for (i, text) in moves.into_iter().enumerate() {
        let m = parse_move(&pos, text).map_err(|reason| QueryError::Move {
            game: "chess",
            param: q.names.line,
            index: i + 1,
            text: text.to_string(),
            at: PosState::from_chess(&pos).fen(),
            reason,
        })?;
        let mut next = pos.clone();
        next.play_unchecked(m);
        line.push(std::mem::replace(&mut pos, next));
    }
    line.push(pos);
    Ok(line)
}

/// The moves of a chess line: tokens between spaces and commas, move numbers left out (`1.`,
/// `12...`, and the `1.` of `1.e4`; `0-0` is a move, not a number).
fn chess_tokens(text: &str) -> Vec<&str> {
    text.split(|c: char| c.is_whitespace() || c == ',')
        .filter_map(|tok| {
            let digits = tok.len() - tok.trim_start_matches(|c: char| c.is_ascii_digit()).len();
            let numbered = digits > 0 && tok[digits..].starts_with('.');
            let rest = if numbered {
                tok[digits..].trim_start_matches('.')
            } else {
                tok
            };
            (!rest.is_empty()).then_some(rest)
        })
        .collect()
}

fn check_length(count: usize, names: Names) -> Result<(), QueryError> {
    if count > MAX_LINE_MOVES {
        return Err(QueryError::TooLong {
            param: names.line,
            count,
            max: MAX_LINE_MOVES,
        });
    }
    Ok(())
}

/// The refusal of a way of giving a position that `book_game` does not have.
fn wrong_game(param: &'static str, for_game: &'static str, book: Game, n: Names) -> QueryError {
    let (article, instead) = match book {
        Game::Chess => ("a", format!("{} and/or {}", n.fen, n.line)),
        Game::Othello { .. } => ("an", format!("{} and/or {}", n.board, n.line)),
    };
    QueryError::WrongGame {
        param,
        for_game,
        article,
        book_game: book.to_string(),
        instead,
    }
}

/// The Othello position of a query: its board (the start if none) after its line's moves.
pub fn othello_board(q: &PositionQuery, game: Game) -> Result<Board> {
    if q.fen.is_some() {
        return Err(wrong_game(q.names.fen, "chess", game, q.names).into());
    }
    let mut b = match q.board {
        Some(s) => Board::parse_board(s).map_err(|e| QueryError::Start {
            param: q.names.board,
            reason: format!("not an Othello board: {e}"),
        })?,
        None => Board::start(),
    };
    let mut n = 0;
    let squares = q
        .line
        .unwrap_or("")
        .split(|c: char| c.is_whitespace() || c == ',')
        .filter(|t| !t.is_empty())
        .flat_map(|tok| {
            // Squares run together ("f5d6") come apart two characters at a time; an odd or
            // non-ASCII token stays whole and fails to parse as a square.
            let whole = !tok.is_ascii() || tok.len() % 2 != 0;
            let step = if whole { tok.len() } else { 2 };
            (0..tok.len())
                .step_by(step)
                .map(move |i| &tok[i..(i + step).min(tok.len())])
        });
    for text in squares {
        n += 1;
        check_length(n, q.names)?;
        let played = parse_square(text).and_then(|sq| {
            let mut next = b;
            next.play(sq).map(|()| next)
        });
        b = played.map_err(|e| QueryError::Move {
            game: "Othello",
            param: q.names.line,
            index: n,
            text: text.to_string(),
            at: b.board_string(),
            reason: e.to_string(),
        })?;
    }
    Ok(b)
}

/// The answer for a position of either game.
pub enum PositionAnswer {
    Chess(ProbeAnswer),
    Othello(OthelloProbe),
}

/// The JSON of a [`PositionAnswer`]: `probe --json`'s shape for the book's game.
#[derive(serde::Serialize)]
#[serde(untagged)]
pub enum PositionJson {
    Chess(EntryJson),
    Othello(OthelloEntryJson),
}

/// Answers the position `q` asks for from `book`, a book of `game`.
pub fn probe(book: &Book, game: Game, q: &PositionQuery) -> Result<PositionAnswer> {
    probe_counting(book, game, q, &crate::ops::facets::Counting::default())
}

/// [`probe`] over the cells `counting` selects (chess books), with the history if asked.
pub fn probe_counting(
    book: &Book,
    game: Game,
    q: &PositionQuery,
    counting: &crate::ops::facets::Counting,
) -> Result<PositionAnswer> {
    counting.check_book(book.facets())?;
    match game {
        Game::Chess => {
            let a = query::probe_line_counting(book, &chess_line(q)?, counting)?;
            Ok(PositionAnswer::Chess(a))
        }
        Game::Othello { canonical } => Ok(PositionAnswer::Othello(othello_query::probe(
            book,
            canonical,
            &othello_board(q, game)?,
        )?)),
    }
}

impl PositionAnswer {
    pub fn json(&self) -> Result<PositionJson> {
        Ok(match self {
            PositionAnswer::Chess(a) => PositionJson::Chess(a.json()?),
            PositionAnswer::Othello(a) => PositionJson::Othello(a.json()?),
        })
    }

    /// The human-readable table (`probe` without `--json`).
    pub fn table(&self) -> Result<String> {
        match self {
            PositionAnswer::Chess(a) => a.table(),
            PositionAnswer::Othello(a) => a.table(),
        }
    }
}

/// `probe --fens`: every non-empty line of `text` as a FEN, with its answer (`probe --json`'s
/// shape) or the error it gets; positions are answered one by one, in order.
pub fn probe_fens<'a>(
    book: &'a Book,
    game: Game,
    text: &'a str,
    names: Names,
) -> Result<impl Iterator<Item = (&'a str, Result<EntryJson>)> + 'a> {
    if game != Game::Chess {
        return Err(wrong_game("a list of FENs", "chess", game, names).into());
    }
    Ok(text
        .lines()
        .map(str::trim)
        .filter(|l| !l.is_empty())
        .map(move |fen| {
            let answer = chess_line(&PositionQuery::fen(fen, names))
                .and_then(|line| query::probe_line(book, &line))
                .and_then(|a| a.json());
            (fen, answer)
        }))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn q(fen: Option<&'static str>, line: &'static str, names: Names) -> PositionQuery<'static> {
        PositionQuery {
            fen,
            board: None,
            line: Some(line),
            names,
        }
    }

    #[test]
    fn chess_lines_take_san_uci_numbers_and_castling() {
        let line = chess_line(&q(None, "1. e4 e5 2.Nf3 Nc6 3...Bc4,g8f6", Names::CLI)).unwrap();
        assert_eq!(line.len(), 7);
        let fen = PosState::from_chess(line.last().unwrap()).fen();
        assert_eq!(
            fen,
            "r1bqkb1r/pppp1ppp/2n2n2/4p3/2B1P3/5N2/PPPP1PPP/RNBQK2R w KQkq -"
        );
        let castled = chess_line(&q(None, "e4 e5 Nf3 Nc6 Bc4 Nf6 O-O", Names::CLI)).unwrap();
        assert_eq!(castled.len(), 8);
        // `_` for spaces in a FEN, as lichess URLs give it.
        let start = "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR_w_KQkq_-_0_1";
        assert_eq!(
            chess_line(&q(Some(start), "", Names::HTTP)).unwrap().len(),
            1
        );
        // A FEN given empty is refused (a script's unset variable), not read as the start.
        for (fen, names) in [("", Names::CLI), (" ", Names::HTTP), ("__", Names::HTTP)] {
            let e = chess_line(&q(Some(fen), "e4", names))
                .unwrap_err()
                .to_string();
            assert!(e.contains("empty"), "{fen:?}: {e}");
        }
    }

    #[test]
    fn errors_speak_the_callers_words_and_the_game() {
        let e = chess_line(&q(None, "e4 e4", Names::CLI))
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("--moves: move 2 (e4) cannot be played in the chess position"),
            "{e}"
        );
        let e = chess_line(&q(None, "e2e4,zz", Names::HTTP.with_line("play")))
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("play: move 2 (zz) cannot be played"), "{e}");
        let e = chess_line(&q(Some("nonsense"), "", Names::HTTP))
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("fen: invalid FEN"), "{e}");
        let othello = Game::Othello { canonical: false };
        let e = othello_board(&q(None, "f5,f5", Names::HTTP), othello)
            .unwrap_err()
            .to_string();
        assert!(
            e.starts_with("moves: move 2 (f5) cannot be played in the Othello position"),
            "{e}"
        );
        assert!(!e.contains("chess"), "{e}");
        let e = othello_board(
            &PositionQuery {
                board: Some("zzz"),
                ..q(None, "", Names::CLI)
            },
            othello,
        )
        .unwrap_err()
        .to_string();
        assert!(e.starts_with("--board: not an Othello board"), "{e}");
        let e = othello_board(&q(Some("8/8/8/8/8/8/8/8 w - -"), "", Names::HTTP), othello)
            .unwrap_err()
            .to_string();
        assert_eq!(
            e,
            "fen is for chess books; this is an Othello book: give the position with board and/or moves"
        );
        let e = chess_line(&PositionQuery {
            board: Some("x"),
            ..q(None, "", Names::CLI)
        })
        .unwrap_err()
        .to_string();
        assert_eq!(
            e,
            "--board is for Othello books; this is a chess book: give the position with --fen and/or --moves"
        );
    }

    #[test]
    fn lines_are_bounded() {
        let long = vec!["g1f3 g8f6 f3g1 f6g8"; 251].join(" ");
        let e = chess_line(&PositionQuery {
            fen: None,
            board: None,
            line: Some(&long),
            names: Names::CLI,
        })
        .unwrap_err()
        .to_string();
        assert!(e.contains("at most 1000"), "{e}");
    }

    #[test]
    fn othello_lines_run_together_or_apart() {
        let othello = Game::Othello { canonical: false };
        let a = othello_board(&q(None, "f5d6c3", Names::CLI), othello).unwrap();
        let b = othello_board(&q(None, "f5, d6 c3", Names::CLI), othello).unwrap();
        assert_eq!(a.board_string(), b.board_string());
        assert_eq!(a.key(), 0x30c1_d02b_f15a_e59c);
        let e = othello_board(&q(None, "f5d", Names::CLI), othello)
            .unwrap_err()
            .to_string();
        assert!(e.starts_with("--moves: move 1 (f5d)"), "{e}");
    }
}

//! A position's moves as a book reader shows them — counts, average rating and the Polyglot
//! weight `export --format polyglot` writes — for the Python package's `find_all` (shaped like
//! python-chess's `chess.polyglot` reader) and any other program reading a book move by move.
//!
//! A position (a chess position or an Othello board) is answered exactly: only its own entry
//! counts, weighed as the export weighs a key holding that entry alone. A key is answered as
//! the `.bin` answers it: every position and key-only entry of the key, merged by Polyglot
//! move ([`weigh_key`]), so the weights are those of the exported file.

use shakmaty::Chess;

use crate::chess::{PosState, move_uci};
use crate::error::{Error, Result};
use crate::ops::game::Game;
use crate::ops::polyglot::{
    DropReason, MakeBookCounts, PolyglotExportOptions, halve_to_fit, make_book_weight, weigh_key,
};
use crate::othello::{Board, square_name};
use crate::store::cells::CellRead;
use crate::store::facet::CellFilter;
use crate::store::{Book, Entry, MoveRec};

/// A position asked of a book.
#[derive(Clone, Debug)]
pub enum Asked {
    /// A chess position (answered exactly).
    Chess(Box<Chess>),
    /// An Othello board in the orientation asked (canonical books answer it mapped back).
    Othello(Board),
    /// A Polyglot key (chess) or an Othello key: every entry of the key, as the `.bin` has it.
    Key(u64),
}

/// One move of a position with its counts over the counted cells.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BookMove {
    /// The book's move code (chess: [`crate::chess::MoveCode`]; Othello: the square, 0–63);
    /// `None` for a move only key-only entries have (chess, asked by key).
    pub code: Option<u16>,
    /// UCI (castling as the king's two squares; a key-only move read literally, so castling
    /// is king-takes-rook there) or the Othello square name.
    pub name: String,
    /// The Polyglot move (chess: castling king-takes-rook; Othello: the square).
    pub polyglot: u16,
    pub white: u64,
    pub draws: u64,
    pub black: u64,
    pub unknown: u64,
    /// The mover's mean rating (integer division), `None` if no game had one.
    pub average_rating: Option<u64>,
    /// `export --format polyglot`'s weight (default options), `None` when the export leaves
    /// the move out ([`BookMove::dropped`] says why).
    pub weight: Option<u16>,
    pub dropped: Option<DropReason>,
    /// A stored Polyglot learn value (0 if none).
    pub learn: u32,
}

impl BookMove {
    pub fn games(&self) -> u64 {
        self.white + self.draws + self.black + self.unknown
    }
}

/// The moves of `asked` in `book` (a book of `game`) over the cells `filter` counts: the
/// weighted moves first, heaviest first and then by Polyglot move (the order of the `.bin`),
/// then the moves the export leaves out, most games first. Empty when the book does not hold
/// the position. A filter on a facet the book does not keep is refused.
pub fn moves(book: &Book, game: Game, asked: &Asked, filter: &CellFilter) -> Result<Vec<BookMove>> {
    filter.check_book(book.facets()).map_err(Error::Usage)?;
    let read = match filter.is_empty() {
        true => CellRead::Totals,
        false => CellRead::Passing(filter),
    };
    let mut out = match (asked, game) {
        (Asked::Chess(pos), Game::Chess) => {
            let state = PosState::from_chess(pos);
            match book.lookup_read(&state.pack().0, read)? {
                Some(mut e) => {
                    filter.apply(&mut e);
                    chess_moves(std::slice::from_ref(&e))?
                }
                None => Vec::new(),
            }
        }
        (Asked::Key(key), Game::Chess) => {
            let mut group = book.get_read(*key, read)?;
            for e in &mut group {
                filter.apply(e);
            }
            group.retain(|e| !e.moves.is_empty());
            chess_moves(&group)?
        }
        (Asked::Othello(board), Game::Othello { canonical }) => {
            let probe = crate::ops::othello::query::probe(book, canonical, board)?;
            let moves = probe.moves.unwrap_or_default();
            othello_moves(board.white_to_move(), moves.iter().map(|(sq, m)| (*sq, m)))
        }
        (Asked::Key(key), Game::Othello { .. }) => {
            let mut out = Vec::new();
            for e in book.get(*key)? {
                out.extend(entry_moves(Game::Othello { canonical: false }, &e)?);
            }
            out
        }
        (Asked::Chess(_), g) => {
            return Err(Error::Usage(format!(
                "a chess position was given, but this is {} book",
                article(g)
            )));
        }
        (Asked::Othello(_), g) => {
            return Err(Error::Usage(format!(
                "an Othello board was given, but this is {} book",
                article(g)
            )));
        }
    };
    sort_moves(&mut out);
    Ok(out)
}

/// The key `asked` is stored under in a book of `game`: the Polyglot key of a chess position,
/// the key of an Othello board (of its least image in a canonical book), a key as given.
pub fn key_of(game: Game, asked: &Asked) -> u64 {
    match asked {
        Asked::Chess(pos) => PosState::from_chess(pos).key(),
        Asked::Othello(b) if game == (Game::Othello { canonical: true }) => b.canonical().0.key(),
        Asked::Othello(b) => b.key(),
        Asked::Key(k) => *k,
    }
}

fn article(g: Game) -> String {
    match g {
        Game::Chess => "a chess".into(),
        g => format!("an {g}"),
    }
}

/// The moves of one stored entry (a book's iteration), weighed as a key holding it alone, in
/// [`moves`]' order. Othello entries are in their stored orientation.
pub fn entry_moves(game: Game, e: &Entry) -> Result<Vec<BookMove>> {
    let mut out = match game {
        Game::Chess => chess_moves(std::slice::from_ref(e))?,
        Game::Othello { .. } => {
            let board = othello_board(e)?;
            othello_moves(board.white_to_move(), e.moves.iter().map(|m| (m.mv, m)))
        }
    };
    sort_moves(&mut out);
    Ok(out)
}

/// The position of a stored entry as text: a four-field FEN (chess) or a board string
/// (Othello); `None` for a key-only entry.
pub fn entry_position(game: Game, e: &Entry) -> Result<Option<String>> {
    if e.pos.is_none() {
        return Ok(None);
    }
    Ok(Some(match game {
        Game::Chess => PosState::unpack(e.pos.as_deref().unwrap_or_default())?.fen(),
        Game::Othello { .. } => othello_board(e)?.board_string(),
    }))
}

fn othello_board(e: &Entry) -> Result<Board> {
    let p = e
        .pos
        .as_deref()
        .ok_or_else(|| Error::Internal(format!("Othello entry {:016x} has no board", e.key)))?;
    Board::unpack(p).map_err(|err| Error::from(crate::store::error::CodecError::from(err)))
}

fn chess_moves(group: &[Entry]) -> Result<Vec<BookMove>> {
    let (weighed, _) = weigh_key(group, &PolyglotExportOptions::default())?;
    Ok(weighed
        .into_iter()
        .map(|w| BookMove {
            code: w.code,
            name: match w.code {
                Some(c) => move_uci(c),
                None => move_uci(crate::chess::polyglot::raw_code_from_pg(w.pg)),
            },
            polyglot: w.pg,
            white: w.white,
            draws: w.draws,
            black: w.black,
            unknown: w.unknown,
            average_rating: (w.rating_count > 0).then(|| w.rating_sum / w.rating_count),
            weight: w.weight.ok(),
            dropped: w.weight.err(),
            learn: w.learn,
        })
        .collect())
}

/// Othello moves weighed by `make-book`'s rule for the side to move (there is no Othello
/// `.bin`; the rule is the same).
fn othello_moves<'a>(
    white_to_move: bool,
    moves: impl Iterator<Item = (u16, &'a MoveRec)>,
) -> Vec<BookMove> {
    let moves: Vec<(u16, &MoveRec)> = moves.collect();
    let mut counts: Vec<MakeBookCounts> = moves
        .iter()
        .map(|(_, m)| MakeBookCounts::of(m, white_to_move))
        .collect();
    halve_to_fit(&mut counts);
    let opts = PolyglotExportOptions::default();
    moves
        .into_iter()
        .zip(counts)
        .map(|((sq, m), c)| {
            let weight = make_book_weight(c, white_to_move, &opts);
            BookMove {
                code: Some(sq),
                name: u8::try_from(sq)
                    .ok()
                    .filter(|&s| s < 64)
                    .map_or_else(|| format!("?{sq}"), square_name),
                polyglot: sq,
                white: m.white,
                draws: m.draws,
                black: m.black,
                unknown: m.unknown,
                average_rating: (m.rating_count > 0).then(|| m.rating_sum / m.rating_count),
                weight: weight.ok(),
                dropped: weight.err(),
                learn: 0,
            }
        })
        .collect()
}

fn sort_moves(v: &mut [BookMove]) {
    v.sort_by(|a, b| match (a.weight, b.weight) {
        (Some(x), Some(y)) => y.cmp(&x).then(a.polyglot.cmp(&b.polyglot)),
        (Some(_), None) => std::cmp::Ordering::Less,
        (None, Some(_)) => std::cmp::Ordering::Greater,
        (None, None) => b.games().cmp(&a.games()).then(a.name.cmp(&b.name)),
    });
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chess::{encode_move, parse_move};
    use crate::store::{BookWriter, WriterOptions};

    fn rec(pos: &Chess, uci: &str, w: u64, d: u64, b: u64) -> MoveRec {
        MoveRec {
            mv: encode_move(&parse_move(pos, uci).unwrap()),
            white: w,
            draws: d,
            black: b,
            ..Default::default()
        }
    }

    #[test]
    fn weights_follow_the_export_and_order_follows_the_bin() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r.book");
        let start = Chess::default();
        let state = PosState::from_chess(&start);
        let mut recs = vec![
            rec(&start, "e2e4", 3, 1, 2),
            rec(&start, "d2d4", 2, 4, 0),
            rec(&start, "a2a3", 0, 0, 5),
        ];
        recs.sort_by_key(|m| m.mv);
        let mut w =
            BookWriter::create(&path, crate::chess_codec(), WriterOptions::default()).unwrap();
        w.push(Entry {
            key: state.key(),
            pos: Some(state.pack().0),
            moves: recs,
            coded: None,
        })
        .unwrap();
        w.finish().unwrap();
        let book = Book::open(&path, crate::chess_codec()).unwrap();
        let asked = Asked::Chess(Box::new(start));
        let got = moves(&book, Game::Chess, &asked, &CellFilter::default()).unwrap();
        let names: Vec<_> = got.iter().map(|m| (m.name.as_str(), m.weight)).collect();
        // d4: 2·2 + 4 = 8; e4: 2·3 + 1 = 7; a3 lost every game: left out (zero score).
        assert_eq!(
            names,
            [("d2d4", Some(8)), ("e2e4", Some(7)), ("a2a3", None)]
        );
        assert_eq!(got[2].dropped, Some(DropReason::ZeroScore));
        let by_key = moves(
            &book,
            Game::Chess,
            &Asked::Key(state.key()),
            &Default::default(),
        )
        .unwrap();
        assert_eq!(by_key, got);
        let e = crate::ops::position::chess_line(&crate::ops::position::PositionQuery {
            fen: None,
            board: None,
            line: Some("e4"),
            names: crate::ops::position::Names::HTTP,
        })
        .unwrap();
        let after = Asked::Chess(Box::new(e.last().unwrap().clone()));
        assert!(
            moves(&book, Game::Chess, &after, &Default::default())
                .unwrap()
                .is_empty()
        );
        let othello = Asked::Othello(Board::start());
        let err = moves(&book, Game::Chess, &othello, &Default::default()).unwrap_err();
        assert_eq!(
            err.to_string(),
            "an Othello board was given, but this is a chess book"
        );
    }

    #[test]
    fn bitboards_make_the_same_position_as_a_fen() {
        use crate::chess::{parse_fen, polyglot_key, position_from_bitboards};
        // After 1.e4 d5 2.e5 f5: the en-passant square f6 counts.
        let fen = "rnbqkbnr/ppp1p1pp/8/3pPp2/8/8/PPPP1PPP/RNBQKBNR w KQkq f6 0 3";
        let pos = parse_fen(fen).unwrap();
        let b = shakmaty::Position::board(&pos);
        let roles = shakmaty::Role::ALL.map(|r| b.by_role(r).0);
        let from = position_from_bitboards(
            roles,
            b.white().0,
            b.black().0,
            true,
            0x8100_0000_0000_0081,
            Some(45),
        )
        .unwrap();
        assert_eq!(polyglot_key(&from), 0x22a4_8b5a_8e47_ff78);
        assert!(position_from_bitboards(roles, 0, 0, true, 0, None).is_err());
        // Castling rights without rooks are dropped, as from a FEN.
        let no_rooks = position_from_bitboards(
            [0, 0, 0, 0, 0, (1 << 4) | (1 << 60)],
            1 << 4,
            1 << 60,
            true,
            0x8100_0000_0000_0081,
            None,
        )
        .unwrap();
        assert_eq!(
            PosState::from_chess(&no_rooks).fen(),
            "4k3/8/8/8/8/8/8/4K3 w - -"
        );
    }
}

//! The checks of one entry's moves in `verify`: present, sorted, each with games, legal in
//! the entry's position (chess and Othello); for a chess entry, its moves' codes (what the
//! file's references are aligned with: `verify` checks them without decoding a block again).

use std::fmt;

use super::report::VerifyReport;
use crate::chess::{PosState, legal_codes, legal_count, move_uci};
use crate::ops::game::Game;
use crate::othello::{Board, square_name};
use crate::store::block::{GameCells, RawEntry, check_game_cells_add_up};
use crate::store::{Entry, MoveRec};

/// Where an entry is, for problem reports (formatted only when there is a problem).
#[derive(Clone, Copy)]
pub(super) struct Place {
    pub(super) block_key: u64,
    pub(super) index: usize,
}

impl fmt::Display for Place {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "block {:016x}, entry {}", self.block_key, self.index)
    }
}

/// An entry's position as far as ordering needs it: none (key-only entries sort first among
/// their key), a chess state (packed only to order two entries of one key), or encoded bytes.
#[derive(Clone)]
pub(super) enum Pos {
    KeyOnly,
    Chess(PosState),
    Bytes(Vec<u8>),
}

impl Pos {
    pub(super) fn packed(&self) -> Option<Vec<u8>> {
        match self {
            Pos::KeyOnly => None,
            Pos::Chess(s) => Some(s.pack().0),
            Pos::Bytes(b) => Some(b.clone()),
        }
    }
    pub(super) fn is_position(&self) -> bool {
        !matches!(self, Pos::KeyOnly)
    }
}

/// Whether (key a, position a) sorts strictly before (key b, position b).
pub(super) fn before(a: &(u64, Pos), b: &(u64, Pos)) -> bool {
    before_parts(a, b.0, &b.1)
}

pub(super) fn before_parts(a: &(u64, Pos), key: u64, pos: &Pos) -> bool {
    match a.0.cmp(&key) {
        std::cmp::Ordering::Less => true,
        std::cmp::Ordering::Greater => false,
        std::cmp::Ordering::Equal => a.1.packed() < pos.packed(),
    }
}

/// An entry being checked: where it is, its key and its position.
pub(super) struct At<'a> {
    pub(super) place: Place,
    pub(super) key: u64,
    pub(super) pos: &'a Pos,
}

/// The checks of an entry's moves: present, strictly increasing (codes, or indices, which
/// name codes in increasing order), each with games unless it carries an extra, no more
/// ratings than games; then the game's: the position legal, every move legal in it. With
/// `codes`, a chess entry's move codes in its order are put there (left empty when they
/// cannot be named: the position or a move is not legal, a problem reported).
pub(super) fn check_entry_moves(
    at: At<'_>,
    e: &RawEntry<'_>,
    game: Game,
    othello_codes: Option<&[u16]>,
    report: &mut VerifyReport,
    codes: Option<&mut Vec<u16>>,
) {
    let At { place, key, pos } = at;
    match (game, pos) {
        (Game::Chess, Pos::Chess(state)) => check_chess(place, key, state, e.moves, report, codes),
        (Game::Chess, _) => {
            check_moves(place, key, e.moves, &|m| move_uci(m.mv), report);
            if let Some(codes) = codes
                && e.moves.iter().all(|m| !m.indexed)
            {
                codes.extend(e.moves.iter().map(|m| m.mv));
            }
        }
        (Game::Othello { canonical }, _) => {
            let entry = Entry {
                key,
                pos: pos.packed(),
                moves: e
                    .moves
                    .iter()
                    .enumerate()
                    .map(|(i, m)| MoveRec {
                        mv: othello_codes
                            .and_then(|c| c.get(i).copied())
                            .unwrap_or(m.mv),
                        indexed: false,
                        ..m.clone()
                    })
                    .collect(),
                coded: None,
            };
            check_othello_entry(place, &entry, canonical, report);
        }
    }
}

/// The moves of an entry that keep their cells as their games' (version-3 blocks): the games
/// their references name make cells that add up to each move's counters and to the opponents'
/// ratings its block keeps. `mover_white`: the entry's side to move.
pub(super) fn check_game_cells(
    place: Place,
    e: &RawEntry<'_>,
    mover_white: bool,
    games: &dyn GameCells,
    report: &mut VerifyReport,
) {
    for &(j, count, sum) in e.by_games {
        let Some(m) = e.moves.get(j) else {
            report.problem(format!(
                "{place}: move {j} keeps its cells as its games' but is absent"
            ));
            continue;
        };
        let checked = games
            .cells(place.block_key, place.index, j, mover_white)
            .map_err(|c| c.to_string())
            .and_then(|cells| check_game_cells_add_up(m, &cells, count, sum));
        if let Err(reason) = checked {
            report.problem(format!("{place}: {reason}"));
        }
    }
}

/// A chess entry: the position is legal (castling and en-passant bits consistent with the
/// board) and every move is legal in it. An indexed move is the move at that rank of the
/// position's legal moves, so it is legal exactly when the index is below their number (the
/// moves need not be listed); raw codes are looked up in the sorted legal codes.
fn check_chess(
    place: Place,
    key: u64,
    state: &PosState,
    moves: &[MoveRec],
    report: &mut VerifyReport,
    codes_out: Option<&mut Vec<u16>>,
) {
    let chess = match state.to_chess() {
        Ok(c) => c,
        Err(err) => {
            check_moves(place, key, moves, &|m| format!("#{}", m.mv), report);
            report.problem(format!("{place}: {}: {err}", state.fen()));
            return;
        }
    };
    let name = |m: &MoveRec| {
        if m.indexed {
            legal_codes(&chess)
                .get(usize::from(m.mv))
                .map_or_else(|| format!("index {}", m.mv), |&c| move_uci(c))
        } else {
            move_uci(m.mv)
        }
    };
    check_moves(place, key, moves, &name, report);
    let mut named = Vec::new();
    if moves.first().is_some_and(|m| m.indexed) {
        // Without codes wanted, counting the legal moves is enough.
        let legal = codes_out.is_some().then(|| legal_codes(&chess));
        let n = legal.as_ref().map_or_else(|| legal_count(&chess), Vec::len);
        for m in moves {
            if usize::from(m.mv) >= n {
                report.problem(format!(
                    "{place}: {}: move index {} is beyond its {n} legal moves",
                    state.fen(),
                    m.mv
                ));
            }
        }
        if let Some(legal) = legal {
            named = moves
                .iter()
                .filter_map(|m| legal.get(usize::from(m.mv)).copied())
                .collect();
        }
    } else if !moves.is_empty() {
        let codes = legal_codes(&chess);
        for m in moves {
            if codes.binary_search(&m.mv).is_err() {
                report.problem(format!(
                    "{place}: {}: move {} is not legal",
                    state.fen(),
                    move_uci(m.mv)
                ));
            }
        }
        named = moves.iter().map(|m| m.mv).collect();
    }
    if let Some(out) = codes_out
        && named.len() == moves.len()
    {
        out.extend(named);
    }
}

/// The checks of any game's entry: moves present, sorted, each with games and no more
/// ratings than games (`name` spells a move).
fn check_moves(
    place: Place,
    key: u64,
    moves: &[MoveRec],
    name: &dyn Fn(&MoveRec) -> String,
    report: &mut VerifyReport,
) {
    if moves.is_empty() {
        report.problem(format!("{place}: key {key:016x} has no moves"));
    }
    if moves.windows(2).any(|w| w[0].mv >= w[1].mv) {
        report.problem(format!(
            "{place}: key {key:016x}: moves unsorted or repeated"
        ));
    }
    for m in moves {
        if m.games() == 0 && m.extra.is_none() {
            report.problem(format!(
                "{place}: key {key:016x}: move {} has no games",
                name(m)
            ));
        }
        if m.rating_count > m.games() {
            report.problem(format!(
                "{place}: key {key:016x}: move {} has more ratings than games",
                name(m)
            ));
        }
    }
}

/// An Othello entry: its position decodes, is its own least image in a canonical book, and
/// every move is a legal square there.
fn check_othello_entry(place: Place, e: &Entry, canonical: bool, report: &mut VerifyReport) {
    let name = |mv: u16| match u8::try_from(mv) {
        Ok(sq) if sq < 64 => square_name(sq),
        _ => format!("#{mv}"),
    };
    check_moves(place, e.key, &e.moves, &|m| name(m.mv), report);
    let Some(p) = &e.pos else {
        report.problem(format!(
            "{place}: key {:016x}: an Othello book entry without a position",
            e.key
        ));
        return;
    };
    let board = match Board::unpack(p) {
        Ok(b) => b,
        Err(err) => {
            report.problem(format!(
                "{place}: key {:016x}: packed position invalid: {err}",
                e.key
            ));
            return;
        }
    };
    if canonical && board.canonical().1 != 0 {
        report.problem(format!(
            "{place}: {}: not the least of its symmetric images in a canonical book",
            board.board_string()
        ));
    }
    let legal = board.legal();
    for m in &e.moves {
        if m.mv >= 64 || legal & (1u64 << m.mv) == 0 {
            report.problem(format!(
                "{place}: {}: move {} is not legal",
                board.board_string(),
                name(m.mv)
            ));
        }
    }
}

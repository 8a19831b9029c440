//! What a stored chess game counted, read back from the game store (docs/FORMAT.md §15.3): the
//! (key, move) pairs of its first counted plies and its cell and strength, by the same rules the
//! import counted it with (brief §2 and §8), so that a book's references can be rebuilt from its
//! games alone.

use shakmaty::{Chess, Position};

use super::gamefields::{
    BLACK_ELO_FIELD, DATE_FIELD, EVENT_FIELD, FEN_FIELD, FIELDS, MOVES_FIELD, PLIES_FIELD,
    RESULT_FIELD, TIME_CONTROL_FIELD, UTC_DATE_FIELD, WHITE_ELO_FIELD, counted_plies,
};
use super::{encode_move, key_and_pack, parse_fen};
use crate::store::error::CodecError;
use crate::store::facet::Cell;
use crate::store::gameblock::StoredGame;
use crate::store::gamerefs::GameFacts;
use crate::store::tags::{parse_date, parse_elo, parse_mode, parse_result, parse_speed};

/// The counted plies assumed for a game stored by format 6, which did not record them: the
/// import's default `max_ply` then.
pub const UPGRADED_PLIES: usize = 50;

/// A stored chess game's facts: its cell from its tags (`UTCDate` if it parses, else `Date`;
/// `TimeControl`; both Elos; `Event`) and its strength.
pub fn game_facts(g: &StoredGame) -> GameFacts {
    let f = |i: usize| g.fields.get(i).map_or(&[][..], Vec::as_slice);
    let elos = (parse_elo(f(WHITE_ELO_FIELD)), parse_elo(f(BLACK_ELO_FIELD)));
    let (group, strength) = match elos {
        (Some(w), Some(b)) => (Cell::group_of((w + b) / 2), (w + b) as u16),
        _ => (0, 0),
    };
    // Elos are below 5,000 (`parse_elo`): each fits a u16.
    let elo = |e: Option<u32>| e.map_or(0, |e| e as u16);
    GameFacts {
        white: elo(elos.0),
        black: elo(elos.1),
        result: parse_result(f(RESULT_FIELD)),
        cell: Cell {
            period: parse_date(f(UTC_DATE_FIELD))
                .or_else(|| parse_date(f(DATE_FIELD)))
                .unwrap_or_default(),
            speed: parse_speed(f(TIME_CONTROL_FIELD)),
            group,
            mode: parse_mode(f(EVENT_FIELD)),
        },
        strength,
    }
}

/// The pairs a stored game counted, sorted and each once, into `pairs`; and its facts.
pub fn index_game(
    g: &StoredGame,
    pairs: &mut Vec<(u64, u16)>,
) -> Result<Option<GameFacts>, CodecError> {
    pairs.clear();
    if g.fields.len() != FIELDS {
        return Err(format!(
            "game {:012x}: {} fields, not the {FIELDS} of a chess game",
            g.id,
            g.fields.len()
        )
        .into());
    }
    let fen = String::from_utf8_lossy(&g.fields[FEN_FIELD]);
    let start: Chess = if fen.trim().is_empty() {
        Chess::default()
    } else {
        parse_fen(fen.trim())
            .map_err(|e| CodecError::from(format!("game {:012x}: FEN {fen:?}: {e}", g.id)))?
    };
    let ranks = &g.fields[MOVES_FIELD];
    let counted = counted_plies(&g.fields[PLIES_FIELD]).unwrap_or(UPGRADED_PLIES);
    let ranks = &ranks[..counted.min(ranks.len())];
    let moves = super::mainline::decode_mainline(&start, ranks)
        .map_err(|e| CodecError::from(format!("game {:012x}: {e}", g.id)))?;
    let mut pos = start;
    for m in moves {
        pairs.push((key_and_pack(&pos).0, encode_move(&m)));
        pos.play_unchecked(m);
    }
    pairs.sort_unstable();
    pairs.dedup();
    Ok(Some(game_facts(g)))
}

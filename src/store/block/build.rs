//! Column coding, writer side: preparing an entry (its position coded with the book's model,
//! its moves as indices where the codec can index them) and building a block's payload, the
//! columns of section A and the coded positions of section B.

use super::{
    BLOCK_VERSION, BLOCK_VERSION_CELLS, BLOCK_VERSION_GAME_CELLS, COLUMNS, FLAG_CELLS, FLAG_EXTRA,
    FLAG_KEY_ONLY, FLAG_RAW_MOVES, KIND_EXTRA, KIND_GAME_CELLS, KIND_GENERAL, MAX_GAME_CELL_GAMES,
    MAX_GAME_CELLS_ENTRY_GAMES, MAX_GAME_CELLS_GAMES, V1_COLUMNS, V2_COLUMNS,
};
use crate::store::entry::{Entry, MoveRec};
use crate::store::error::{CodecError, Error};
use crate::store::{PositionCodec, PositionModel, varint};

/// The two sections of an unsealed block: A (columns, to be compressed) and B (positions as
/// coded by the block's model).
#[doc(hidden)]
pub struct Payload {
    pub count: usize,
    /// [`BLOCK_VERSION`], or [`BLOCK_VERSION_CELLS`] when some entry carries cells.
    pub version: u8,
    pub a: Vec<u8>,
    pub b: Vec<u8>,
}

/// What the writer computes once per entry: its coded position and, if the codec can index
/// its moves, their small indices.
#[derive(Clone, Debug, Default)]
#[doc(hidden)]
pub struct Prepared {
    pub(crate) coded: Vec<u8>,
    pub(crate) move_idx: Option<Vec<u8>>,
}

#[doc(hidden)]
pub fn prepare(
    e: &Entry,
    codec: &dyn PositionCodec,
    model: &dyn PositionModel,
) -> Result<Prepared, CodecError> {
    let mut p = Prepared::default();
    if let Some(pos) = &e.pos {
        if e.moves.first().is_some_and(|m| m.indexed) {
            // Moves already indexed (a rewrite read them so); the writer has checked that
            // all are. A position already coded with the writer's model is stored as it is.
            match &e.coded {
                Some(c) => p.coded.extend_from_slice(c),
                None => {
                    codec.prepare(model, pos, &[], &mut p.coded)?;
                }
            }
            let idx: Result<Vec<u8>, _> = e.moves.iter().map(|m| u8::try_from(m.mv)).collect();
            p.move_idx = Some(idx.map_err(|_| {
                CodecError::from(format!(
                    "key {:016x}: a move index beyond 255 cannot be stored",
                    e.key
                ))
            })?);
            return Ok(p);
        }
        let mut moves = [0u16; 32];
        p.move_idx = if e.moves.len() <= moves.len() {
            for (d, m) in moves.iter_mut().zip(&e.moves) {
                *d = m.mv;
            }
            codec.prepare(model, pos, &moves[..e.moves.len()], &mut p.coded)?
        } else {
            let moves: Vec<u16> = e.moves.iter().map(|m| m.mv).collect();
            codec.prepare(model, pos, &moves, &mut p.coded)?
        };
    }
    Ok(p)
}

fn move_kind(m: &MoveRec) -> u8 {
    if m.games() != 1 {
        return KIND_GENERAL;
    }
    let r = if m.white == 1 {
        0
    } else if m.draws == 1 {
        1
    } else if m.black == 1 {
        2
    } else {
        3
    };
    match (m.rating_count, m.rating_sum) {
        (0, 0) => r,
        (1, _) => 4 + r,
        _ => KIND_GENERAL,
    }
}

/// Whether a writer that keeps cells as games' (`game_cells`) keeps this move's so: a move of
/// a positioned entry of at most [`MAX_GAME_CELLS_ENTRY_GAMES`] games, with cells, at most
/// [`MAX_GAME_CELLS_GAMES`] games and at most [`MAX_GAME_CELL_GAMES`] in each cell (so that
/// its references name every one).
pub(crate) fn keeps_game_cells(game_cells: bool, e: &Entry, m: &MoveRec) -> bool {
    game_cells
        && e.pos.is_some()
        && !m.cells.is_empty()
        && (1..=MAX_GAME_CELLS_GAMES).contains(&m.games())
        && m.cells.iter().all(|c| c.games() <= MAX_GAME_CELL_GAMES)
        && e.moves
            .iter()
            .try_fold(0u64, |n, m| n.checked_add(m.games()))
            .is_some_and(|n| n <= MAX_GAME_CELLS_ENTRY_GAMES)
}

/// Builds the payload of sorted entries, preparing each with `codec` and `model`.
#[doc(hidden)]
pub fn build_payload(
    entries: &[Entry],
    codec: &dyn PositionCodec,
    model: &dyn PositionModel,
) -> Result<Payload, Error> {
    let prepared = entries
        .iter()
        .map(|e| prepare(e, codec, model))
        .collect::<Result<Vec<_>, _>>()?;
    build_payload_with(entries, &prepared, false)
}

/// Builds the payload from entries and their prepared forms (same length). With `game_cells`
/// (a file whose store holds every game it counts, and whose facets are its games' facts'),
/// the moves [`keeps_game_cells`] names keep their cells as their games' (a version-3 block).
#[doc(hidden)]
pub fn build_payload_with(
    entries: &[Entry],
    prepared: &[Prepared],
    game_cells: bool,
) -> Result<Payload, Error> {
    if entries.len() != prepared.len() {
        return Err(Error::Internal(
            "entries and prepared forms differ in number".into(),
        ));
    }
    let mut cols: [Vec<u8>; COLUMNS] = Default::default();
    let mut b = Vec::new();
    for (e, p) in entries.iter().zip(prepared) {
        cols[0].push(e.key as u8);
        let extra = e.has_extra();
        let raw_moves = e.pos.is_none() || p.move_idx.is_none();
        let by_games = |m: &MoveRec| keeps_game_cells(game_cells, e, m);
        let cells = e.moves.iter().any(|m| !m.cells.is_empty() && !by_games(m));
        let flags = if e.pos.is_none() { FLAG_KEY_ONLY } else { 0 }
            | if extra { FLAG_EXTRA } else { 0 }
            | if raw_moves { FLAG_RAW_MOVES } else { 0 }
            | if cells { FLAG_CELLS } else { 0 };
        cols[1].push(flags);
        varint::put(&mut cols[2], e.moves.len() as u64);
        match &e.pos {
            Some(_) => {
                varint::put(&mut cols[3], p.coded.len() as u64);
                b.extend_from_slice(&p.coded);
            }
            None => cols[4].extend_from_slice(&e.key.to_le_bytes()),
        }
        match (&p.move_idx, raw_moves) {
            (Some(idx), false) if idx.len() == e.moves.len() => cols[5].extend_from_slice(idx),
            (_, false) => {
                return Err(Error::Internal(
                    "move indices do not match the moves".into(),
                ));
            }
            (_, true) => {
                for mv in &e.moves {
                    if mv.indexed {
                        return Err(Error::Internal(
                            "a move index cannot be stored as a raw move".into(),
                        ));
                    }
                    cols[6].extend_from_slice(&mv.mv.to_le_bytes());
                }
            }
        }
        for mv in &e.moves {
            let kind = move_kind(mv);
            let games_flag = if by_games(mv) {
                let (sum, count) = crate::store::cells::opponent_ratings(mv);
                varint::put(&mut cols[18], count);
                varint::put(&mut cols[19], sum);
                KIND_GAME_CELLS
            } else {
                0
            };
            cols[7].push(kind | games_flag | if mv.extra.is_some() { KIND_EXTRA } else { 0 });
            match kind {
                0..=3 => {}
                4..=7 => varint::put(&mut cols[12], mv.rating_sum),
                _ => {
                    varint::put(&mut cols[8], mv.white);
                    varint::put(&mut cols[9], mv.draws);
                    varint::put(&mut cols[10], mv.black);
                    varint::put(&mut cols[11], mv.unknown);
                    varint::put(&mut cols[12], mv.rating_sum);
                    varint::put(&mut cols[13], mv.rating_count);
                }
            }
            if let Some(x) = mv.extra {
                cols[14].extend_from_slice(&x.weight.to_le_bytes());
                cols[15].extend_from_slice(&x.learn.to_le_bytes());
            }
        }
        if cells {
            let start = cols[16].len();
            for mv in e.moves.iter().filter(|m| !by_games(m)) {
                crate::store::cells::encode_cells(mv, &mut cols[16]);
            }
            let len = (cols[16].len() - start) as u64;
            varint::put(&mut cols[17], len);
        }
    }
    let (version, ncols) = if !cols[18].is_empty() {
        (BLOCK_VERSION_GAME_CELLS, COLUMNS)
    } else if !cols[16].is_empty() {
        (BLOCK_VERSION_CELLS, V2_COLUMNS)
    } else {
        (BLOCK_VERSION, V1_COLUMNS)
    };
    let cols = &cols[..ncols];
    let total: usize = cols.iter().map(Vec::len).sum();
    let mut a = Vec::with_capacity(ncols * 4 + total);
    for c in cols {
        let len = u32::try_from(c.len()).map_err(|_| {
            Error::Internal(format!(
                "a block column of {} bytes is past the format's 4 GiB limit",
                c.len()
            ))
        })?;
        a.extend_from_slice(&len.to_le_bytes());
    }
    for c in cols {
        a.extend_from_slice(c);
    }
    Ok(Payload {
        count: entries.len(),
        version,
        a,
        b,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::store::facet::{CellId, CellStat};

    /// A move of `games` white wins, one game a cell.
    fn mv(code: u16, games: u64) -> MoveRec {
        MoveRec {
            mv: code,
            white: games,
            cells: (0..games)
                .map(|i| CellStat {
                    cell: CellId(i as u32),
                    white: 1,
                    ..CellStat::default()
                })
                .collect(),
            ..MoveRec::default()
        }
    }

    #[test]
    fn moves_keep_their_cells_as_their_games_only_at_positions_of_few_games() {
        let entry = |moves: Vec<MoveRec>| Entry {
            key: 1,
            pos: Some(vec![0; 4]),
            moves,
            ..Entry::default()
        };
        let few = entry(vec![mv(1, 200), mv(2, 3)]);
        assert!(few.moves.iter().all(|m| keeps_game_cells(true, &few, m)));
        assert!(!keeps_game_cells(false, &few, &few.moves[1]));
        // A move of too many games keeps its cells; the others still do not.
        let one_big = entry(vec![mv(1, 300), mv(2, 3)]);
        assert!(!keeps_game_cells(true, &one_big, &one_big.moves[0]));
        assert!(keeps_game_cells(true, &one_big, &one_big.moves[1]));
        // At a position of more games than the limit, every move keeps its cells in the block,
        // the rare ones too.
        let mut moves: Vec<MoveRec> = (0..4).map(|i| mv(i, 256)).collect();
        let at_limit = entry(moves.clone());
        assert_eq!(MAX_GAME_CELLS_ENTRY_GAMES, 1024);
        assert!(keeps_game_cells(true, &at_limit, &at_limit.moves[3]));
        moves.push(mv(9, 1));
        let past = entry(moves);
        assert!(past.moves.iter().all(|m| !keeps_game_cells(true, &past, m)));
    }
}

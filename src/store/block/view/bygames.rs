//! Reading the moves of a version-3 block that keep their cells as their games' (docs/FORMAT.md
//! §12.5): the other moves' cell bytes read around them, their opponents' columns, and their
//! cells from the file's games (or their totals from the block alone).

use super::{BlockView, Cursor, FLAG_CELLS, gamecells};
use crate::store::cells::{CellRead, read_entry_cells};
use crate::store::entry::MoveRec;
use crate::store::error::Corruption;
use crate::store::varint;

impl BlockView<'_> {
    /// Reads the cells of entry `i`'s moves (when its flags say it has them) into `moves`, as
    /// `read` asks; the moves `by_games` names (their indices first) have no bytes there.
    pub(super) fn read_cells_except(
        &self,
        cur: &mut Cursor,
        flags: u8,
        moves: &mut [MoveRec],
        i: usize,
        read: CellRead,
        by_games: &[(usize, u64, u64)],
    ) -> Result<(), Corruption> {
        if flags & FLAG_CELLS == 0 {
            return Ok(());
        }
        let bytes = self.cell_bytes(cur, i)?;
        if matches!(read, CellRead::Skip) {
            return Ok(());
        }
        if by_games.is_empty() {
            return read_entry_cells(bytes, moves, read).map_err(|e| self.cells_error(e, i));
        }
        // The moves with bytes, read apart and put back in their places.
        let mut stored: Vec<MoveRec> = moves
            .iter()
            .enumerate()
            .filter(|(j, _)| !by_games.iter().any(|g| g.0 == *j))
            .map(|(_, m)| m.clone())
            .collect();
        read_entry_cells(bytes, &mut stored, read).map_err(|e| self.cells_error(e, i))?;
        let mut back = stored.into_iter();
        for (j, m) in moves.iter_mut().enumerate() {
            if !by_games.iter().any(|g| g.0 == j) {
                *m = back.next().unwrap_or_default();
            }
        }
        Ok(())
    }

    /// Entry `i`'s next opponents' rating count and sum (columns 18 and 19), for a move whose
    /// cells are its games'.
    pub(super) fn opponents(&self, cur: &mut Cursor, i: usize) -> Result<(u64, u64), Corruption> {
        let count = varint::get(self.cols[18], &mut cur.opp[0]);
        let sum = varint::get(self.cols[19], &mut cur.opp[1]);
        match (count, sum) {
            (Some(c), Some(s)) => Ok((c, s)),
            _ => Err(self.bad(format!("opponent columns unreadable at entry {i}"))),
        }
    }

    /// The cells of entry `i`'s moves that `by_games` names (index, opponents' count and sum),
    /// as `read` asks: their totals from the move's counters and the opponents', or their
    /// games' cells from the view's source (checked to add up to the move's counters).
    /// Returns how many games' facts were read.
    pub(super) fn fill_game_cells(
        &self,
        moves: &mut [MoveRec],
        i: usize,
        mover_white: bool,
        read: CellRead,
        by_games: &[(usize, u64, u64)],
    ) -> Result<usize, Corruption> {
        let mut read_games = 0;
        for &(j, opp_count, opp_sum) in by_games {
            let m = &mut moves[j];
            match read {
                CellRead::Skip => {}
                CellRead::Totals => {
                    let mut c = m.unknown_cell();
                    c.opp_sum = opp_sum;
                    c.opp_count = opp_count;
                    m.cells = vec![c];
                }
                CellRead::All | CellRead::Passing(_) | CellRead::ByPeriod => {
                    let Some(games) = self.games else {
                        return Err(self.bad(format!(
                            "entry {i}: cells kept as the games' read without the file's games"
                        )));
                    };
                    let cells = games.cells(self.block_key, i, j, mover_white)?;
                    gamecells::check(m, &cells, opp_count, opp_sum).map_err(|reason| {
                        Corruption::Entry {
                            block_key: self.block_key,
                            index: i,
                            reason,
                        }
                    })?;
                    read_games += cells.iter().map(|c| c.games() as usize).sum::<usize>();
                    m.cells = cells;
                    match read {
                        CellRead::Passing(f) => {
                            m.cells.retain(|c| f.passes(c.cell));
                            crate::store::cells::set_totals(m);
                        }
                        CellRead::ByPeriod => m.cells = crate::store::cells::by_period(&m.cells),
                        _ => {}
                    }
                }
            }
        }
        Ok(read_games)
    }
}

//! Moves whose cells are their games' (version-3 blocks, docs/FORMAT.md §12.5): where a block
//! reader gets them ([`GameCells`], the file's references and game facts), how a game's facts
//! make its one-game cell ([`cells_of_games`]), and the check that they add up to the move.

use crate::store::entry::MoveRec;
use crate::store::error::Corruption;
use crate::store::facet::{CellId, CellStat};

/// Where a block reader gets the cells of the moves that keep them as their games'.
pub trait GameCells {
    /// The cells of the games that the move at `mv_at` (in stored order) of entry `entry` of
    /// block `block_key` names: each game's one-game cell ([`cells_of_games`]), summed by cell,
    /// in id order. `mover_white`: the side to move is white (whose rating is the mover's).
    fn cells(
        &self,
        block_key: u64,
        entry: usize,
        mv_at: usize,
        mover_white: bool,
    ) -> Result<Vec<CellStat>, Corruption>;
}

/// One game as its facts give it: cell (masked to the file's facets), WhiteElo, BlackElo (0:
/// none) and result (0 white won, 1 draw, 2 black won, 3 unknown).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GameFact {
    pub cell: CellId,
    pub white: u16,
    pub black: u16,
    pub result: u8,
}

/// The cells of `games` as the import counts them (docs/FORMAT.md §12): each game in its
/// cell, with its result, the mover's rating and the opponent's, summed by cell, in id order.
pub fn cells_of_games(games: &[GameFact], mover_white: bool) -> Vec<CellStat> {
    let mut out: Vec<CellStat> = Vec::with_capacity(games.len());
    let mut sorted = games.to_vec();
    sorted.sort_by_key(|g| g.cell);
    for g in sorted {
        let (mover, opp) = match mover_white {
            true => (g.white, g.black),
            false => (g.black, g.white),
        };
        let mut c = CellStat {
            cell: g.cell,
            ..CellStat::default()
        };
        match g.result {
            0 => c.white = 1,
            1 => c.draws = 1,
            2 => c.black = 1,
            _ => c.unknown = 1,
        }
        if mover > 0 {
            c.rating_sum = u64::from(mover);
            c.rating_count = 1;
        }
        if opp > 0 {
            c.opp_sum = u64::from(opp);
            c.opp_count = 1;
        }
        match out.last_mut() {
            Some(last) if last.cell == c.cell => last.add(&c),
            _ => out.push(c),
        }
    }
    out
}

/// Whether the cells read for `m` from its games add up to its counters and to the
/// opponents' count and sum its block keeps; the reason if not.
pub fn check(m: &MoveRec, cells: &[CellStat], opp_count: u64, opp_sum: u64) -> Result<(), String> {
    let mut sum = CellStat::default();
    for c in cells {
        sum.add(c);
    }
    let counters = |c: &CellStat| {
        (
            c.white,
            c.draws,
            c.black,
            c.unknown,
            c.rating_sum,
            c.rating_count,
        )
    };
    if counters(&sum) != counters(&m.unknown_cell())
        || (sum.opp_count, sum.opp_sum) != (opp_count, opp_sum)
    {
        return Err(format!(
            "move {}: the cells of its games ({} games) do not add up to its counters ({} games): \
             its references or game facts disagree with its block",
            m.mv,
            sum.games(),
            m.unknown_cell().games()
        ));
    }
    if cells.windows(2).any(|w| w[0].cell >= w[1].cell) {
        return Err(format!("move {}: its games' cells are out of order", m.mv));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn fact(cell: u32, white: u16, black: u16, result: u8) -> GameFact {
        GameFact {
            cell: CellId(cell),
            white,
            black,
            result,
        }
    }

    #[test]
    fn games_make_the_cells_the_import_counts() {
        let games = [
            fact(7, 2000, 1800, 0),
            fact(3, 0, 1500, 1),
            fact(7, 2100, 0, 2),
        ];
        let black = cells_of_games(&games, false);
        assert_eq!(black.len(), 2);
        assert_eq!(
            (black[0].cell, black[0].draws, black[0].rating_sum),
            (CellId(3), 1, 1500)
        );
        assert_eq!((black[0].opp_count, black[0].rating_count), (0, 1));
        let c = black[1];
        assert_eq!(
            (c.white, c.black, c.rating_sum, c.rating_count),
            (1, 1, 1800, 1)
        );
        assert_eq!((c.opp_sum, c.opp_count), (4100, 2));
        let mut m = MoveRec {
            white: 1,
            draws: 1,
            black: 1,
            rating_sum: 3300,
            rating_count: 2,
            ..MoveRec::default()
        };
        assert!(check(&m, &black, 2, 4100).is_ok());
        assert!(check(&m, &black, 2, 4000).is_err());
        m.black = 2;
        assert!(check(&m, &black, 2, 4100).is_err());
    }
}

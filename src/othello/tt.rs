//! Othello boards as transposition-table positions (docs/FORMAT.md §14.1): the Zobrist key
//! the board keeps by XOR, and 17 exact bytes (black's and white's discs as little-endian
//! bitboards, then the side to move).

use super::Board;
use crate::store::tt::TtPosition;

impl TtPosition for Board {
    const GAME: &'static str = "othello";

    #[inline]
    fn tt_key(&self) -> u64 {
        self.key()
    }

    #[inline]
    fn tt_exact(&self, buf: &mut [u8; 64]) -> usize {
        buf[..8].copy_from_slice(&self.black.to_le_bytes());
        buf[8..16].copy_from_slice(&self.white.to_le_bytes());
        buf[16] = u8::from(self.white_to_move);
        17
    }
}

//! Chess positions as transposition-table positions (docs/FORMAT.md §14.1): the Polyglot key
//! and the packed position (docs/CONTRACT.md §2) as the exact bytes.

use shakmaty::Chess;

use super::position::key_and_pack;
use crate::store::tt::TtPosition;

impl TtPosition for Chess {
    const GAME: &'static str = "chess";

    fn tt_key(&self) -> u64 {
        key_and_pack(self).0
    }

    fn tt_exact(&self, buf: &mut [u8; 64]) -> usize {
        self.tt_key_exact(buf).1
    }

    fn tt_key_exact(&self, buf: &mut [u8; 64]) -> (u64, usize) {
        let (key, packed) = key_and_pack(self);
        let b = packed.as_bytes();
        buf[..b.len()].copy_from_slice(b);
        (key, b.len())
    }
}

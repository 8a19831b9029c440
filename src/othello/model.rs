//! The storage model for Othello positions: each square (a1, b1, …, h8) is range-coded with a
//! static 3-symbol table chosen by the square and the contents of its four neighbours already
//! coded (left, below-left, below, below-right), then the side to move with a table chosen by
//! the parity of the disc count. Tables are trained from the book's own positions and stored
//! in the book as `model/1` (docs/FORMAT.md §11.1). Every table gives every symbol a non-zero
//! frequency, so any position can be coded with any model.

use super::board::Board;
use super::error::OthelloError;
use crate::store::PositionModel;
use crate::store::error::CodecError;
use crate::store::rangecoder::{Decoder, Encoder, TOTAL, TOTAL_BITS, push_cum, smoothed};

/// Byte 0 of a serialized Othello model.
pub(crate) const OTHELLO_MODEL_VERSION: u8 = 1;
/// Square contents: 0 empty, 1 black, 2 white.
const SYMS: usize = 3;
/// A neighbour's contents, or 3 for "off the board".
const CTX: usize = 4;
/// Tables per square: one per (left, below-left, below, below-right).
const CONTEXTS: usize = CTX * CTX * CTX * CTX;
const SQUARE_TABLES: usize = 64 * CONTEXTS;
const SQ_STRIDE: usize = SYMS + 1;
/// Side-to-move tables: one per parity of the disc count; symbol 0 black, 1 white.
const SIDE_TABLES: usize = 2;
const SIDE_STRIDE: usize = 3;
/// Bytes of the decompressed serialized model.
const RAW_LEN: usize = 2 + 2 * (SQUARE_TABLES * SYMS + SIDE_TABLES * 2);

/// Cumulative tables, flattened: table t occupies `cum[t * stride .. t * stride + n + 1]`.
#[doc(hidden)]
pub struct OthelloModel {
    squares: Vec<u16>,
    side: Vec<u16>,
}

/// The squares' contents on a grid with a border of "off the board" (3): square `sq` is at
/// `grid_at(sq)`, its left neighbour one before, the row below `GRID_W` before.
const GRID_W: usize = 10;
const GRID_LEN: usize = GRID_W * 9;

#[inline]
fn grid_at(sq: usize) -> usize {
    (sq / 8 + 1) * GRID_W + sq % 8 + 1
}

/// The grid of a board: every square's contents (0 empty, 1 black, 2 white), 3 off the board.
#[inline]
fn grid(black: u64, white: u64) -> [u8; GRID_LEN] {
    let mut g = [3u8; GRID_LEN];
    for sq in 0..64 {
        g[grid_at(sq)] = (((black >> sq) & 1) | (((white >> sq) & 1) << 1)) as u8;
    }
    g
}

/// The table of the square at grid index `p`, given the squares already coded: those to its
/// left, below left, below and below right (docs/FORMAT.md §11.1).
#[inline]
fn table_index(sq: usize, p: usize, g: &[u8; GRID_LEN]) -> usize {
    let ctx = |d: usize| usize::from(g[p - d] & 3);
    sq * CONTEXTS + ((ctx(1) * CTX + ctx(GRID_W + 1)) * CTX + ctx(GRID_W)) * CTX + ctx(GRID_W - 1)
}

/// The side-to-move table: the parity of the number of discs.
#[inline]
fn side_table(discs: u64) -> usize {
    (discs.count_ones() & 1) as usize
}

impl OthelloModel {
    /// Trains a model on sample positions (none: every table uniform).
    #[doc(hidden)]
    pub fn train(samples: &[Board]) -> OthelloModel {
        let mut counts = vec![0u64; SQUARE_TABLES * SYMS];
        let mut prior = vec![0u64; 64 * SYMS];
        let mut side = [[0u64; 2]; SIDE_TABLES];
        for b in samples {
            let g = grid(b.black, b.white);
            for sq in 0..64 {
                let p = grid_at(sq);
                let sym = usize::from(g[p]);
                counts[table_index(sq, p, &g) * SYMS + sym] += 1;
                prior[sq * SYMS + sym] += 1;
            }
            side[side_table(b.black | b.white)][usize::from(b.white_to_move)] += 1;
        }
        let mut m = OthelloModel {
            squares: Vec::with_capacity(SQUARE_TABLES * SQ_STRIDE),
            side: Vec::with_capacity(SIDE_TABLES * SIDE_STRIDE),
        };
        for t in 0..SQUARE_TABLES {
            let sq = t / CONTEXTS;
            let f = smoothed(
                &counts[t * SYMS..(t + 1) * SYMS],
                &prior[sq * SYMS..(sq + 1) * SYMS],
            );
            push_cum(&mut m.squares, &f);
        }
        for s in &side {
            push_cum(&mut m.side, &smoothed(s, &[1, 1]));
        }
        m
    }

    /// Serialized form: version, TOTAL_BITS, then every table's frequencies as u16 LE,
    /// zstd-compressed (docs/FORMAT.md §11.1).
    #[doc(hidden)]
    pub fn to_bytes(&self) -> Vec<u8> {
        let mut raw = Vec::with_capacity(RAW_LEN);
        raw.extend_from_slice(&[OTHELLO_MODEL_VERSION, TOTAL_BITS as u8]);
        for (cum, stride) in [(&self.squares, SQ_STRIDE), (&self.side, SIDE_STRIDE)] {
            for t in cum.chunks(stride) {
                for w in t.windows(2) {
                    raw.extend_from_slice(&(w[1] - w[0]).to_le_bytes());
                }
            }
        }
        zstd::bulk::compress(&raw, 6).unwrap_or_default()
    }

    /// Reads a serialized model; rejects anything that is not exactly one (docs/FORMAT.md §11.1).
    #[doc(hidden)]
    pub fn from_bytes(bytes: &[u8]) -> Result<OthelloModel, OthelloError> {
        let bad = |why: String| OthelloError::BadModel(why);
        let raw = zstd::bulk::decompress(bytes, RAW_LEN).map_err(|e| bad(format!("zstd: {e}")))?;
        if raw.len() != RAW_LEN {
            return Err(bad(format!("{} bytes, expected {RAW_LEN}", raw.len())));
        }
        if raw[0] != OTHELLO_MODEL_VERSION || u32::from(raw[1]) != TOTAL_BITS {
            return Err(bad(format!(
                "version {} with {} total bits, expected {OTHELLO_MODEL_VERSION} with {TOTAL_BITS}",
                raw[0], raw[1]
            )));
        }
        let mut freqs = raw[2..]
            .chunks_exact(2)
            .map(|c| u16::from_le_bytes([c[0], c[1]]));
        let mut read = |tables: usize, n: usize| -> Result<Vec<u16>, OthelloError> {
            let mut out = Vec::with_capacity(tables * (n + 1));
            for t in 0..tables {
                let f: Vec<u16> = freqs.by_ref().take(n).collect();
                if f.contains(&0) || f.iter().map(|&x| u32::from(x)).sum::<u32>() != TOTAL {
                    return Err(bad(format!(
                        "table {t} has a zero frequency or does not sum to {TOTAL}"
                    )));
                }
                push_cum(&mut out, &f);
            }
            Ok(out)
        };
        Ok(OthelloModel {
            squares: read(SQUARE_TABLES, SYMS)?,
            side: read(SIDE_TABLES, 2)?,
        })
    }

    /// The range coding of a board.
    #[doc(hidden)]
    pub fn encode_board(&self, b: &Board) -> Vec<u8> {
        let mut enc = Encoder::new();
        let g = grid(b.black, b.white);
        for sq in 0..64 {
            let p = grid_at(sq);
            let t = table_index(sq, p, &g) * SQ_STRIDE;
            let cum = &self.squares[t..t + SQ_STRIDE];
            let s = usize::from(g[p]);
            let lo = u32::from(cum[s]);
            enc.encode(lo, u32::from(cum[s + 1]) - lo);
        }
        let cum = &self.side[side_table(b.black | b.white) * SIDE_STRIDE..];
        let s = usize::from(b.white_to_move);
        let lo = u32::from(cum[s]);
        enc.encode(lo, u32::from(cum[s + 1]) - lo);
        enc.finish()
    }

    /// The board of a range coding; `None` if the bytes are not one.
    #[doc(hidden)]
    pub fn decode_board(&self, data: &[u8]) -> Option<Board> {
        let mut dec = Decoder::new(data);
        let mut g = [3u8; GRID_LEN];
        let (mut black, mut white) = (0u64, 0u64);
        for sq in 0..64 {
            let p = grid_at(sq);
            let t = table_index(sq, p, &g) * SQ_STRIDE;
            let s = dec.decode_symbol(&self.squares[t..t + SQ_STRIDE], SYMS)?;
            g[p] = s as u8;
            black |= u64::from(s == 1) << sq;
            white |= u64::from(s == 2) << sq;
        }
        let side = &self.side[side_table(black | white) * SIDE_STRIDE..];
        let white_to_move = dec.decode_symbol(side, 2)? == 1;
        Some(Board::from_parts(black, white, white_to_move))
    }
}

impl PositionModel for OthelloModel {
    fn encode(&self, pos: &[u8], out: &mut Vec<u8>) -> Result<(), CodecError> {
        out.extend_from_slice(&self.encode_board(&Board::unpack(pos)?));
        Ok(())
    }
    fn decode(&self, data: &[u8]) -> Result<Vec<u8>, CodecError> {
        self.decode_board(data)
            .map(|b| b.pack().0)
            .ok_or_else(|| OthelloError::Undecodable.into())
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn samples() -> Vec<Board> {
        (0..4000u64)
            .map(|i| Board::random_playout(i, (i % 61) as usize))
            .collect()
    }

    fn trained() -> &'static OthelloModel {
        static M: std::sync::OnceLock<OthelloModel> = std::sync::OnceLock::new();
        M.get_or_init(|| OthelloModel::train(&samples()))
    }

    fn untrained() -> &'static OthelloModel {
        static M: std::sync::OnceLock<OthelloModel> = std::sync::OnceLock::new();
        M.get_or_init(|| OthelloModel::train(&[]))
    }

    #[test]
    fn round_trip_serialization_and_size() {
        let s = samples();
        let m = trained();
        let m2 = OthelloModel::from_bytes(&m.to_bytes()).unwrap();
        let (mut coded, mut packed) = (0, 0);
        for b in &s {
            let bytes = m.encode_board(b);
            assert_eq!(bytes, m2.encode_board(b));
            assert_eq!(m2.decode_board(&bytes), Some(*b));
            coded += bytes.len();
            packed += b.pack().0.len();
        }
        // Trained on these positions the coding is well below the packed form.
        assert!(
            coded * 10 < packed * 8,
            "coded {coded} bytes vs packed {packed}"
        );
    }

    #[test]
    fn untrained_tables_are_uniform() {
        let m = untrained();
        assert_eq!(&m.squares[..4], &[0, 10923, 21846, 32768]);
        assert_eq!(&m.side[..3], &[0, 16384, 32768]);
        // The serialized untrained model is a fixed vector (docs/FORMAT.md §11.1).
        let raw = zstd::bulk::decompress(&m.to_bytes(), RAW_LEN).unwrap();
        assert_eq!(raw.len(), RAW_LEN);
        assert_eq!(&raw[..8], &[1, 15, 0xab, 0x2a, 0xab, 0x2a, 0xaa, 0x2a]);
    }

    #[test]
    fn bad_models_are_refused() {
        let good = zstd::bulk::decompress(&trained().to_bytes(), RAW_LEN).unwrap();
        let z = |raw: &[u8]| zstd::bulk::compress(raw, 1).unwrap();
        assert!(OthelloModel::from_bytes(&[]).is_err());
        assert!(OthelloModel::from_bytes(&z(&good[..RAW_LEN - 2])).is_err());
        let mut v = good.clone();
        v[0] = 2;
        assert!(OthelloModel::from_bytes(&z(&v)).is_err());
        let mut v = good.clone();
        v[2] = 0;
        v[3] = 0;
        assert!(OthelloModel::from_bytes(&z(&v)).is_err());
        assert!(OthelloModel::from_bytes(&z(&good)).is_ok());
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(128))]
        #[test]
        fn any_board_round_trips(black in any::<u64>(), white in any::<u64>(), side in any::<bool>()) {
            let b = Board::from_parts(black, white, side);
            for m in [trained(), untrained()] {
                let bytes = m.encode_board(&b);
                prop_assert_eq!(m.decode_board(&bytes), Some(b));
                let mut coded = Vec::new();
                m.encode(&b.pack().0, &mut coded).unwrap();
                prop_assert_eq!(m.decode(&coded).unwrap(), b.pack().0);
            }
        }

        #[test]
        fn played_boards_round_trip(seed in any::<u64>(), plies in 0usize..61) {
            let b = Board::random_playout(seed, plies);
            let bytes = trained().encode_board(&b);
            prop_assert_eq!(trained().decode_board(&bytes), Some(b));
        }

        #[test]
        fn garbage_never_panics(data in proptest::collection::vec(any::<u8>(), 0..40)) {
            for m in [trained(), untrained()] {
                if let Some(b) = m.decode_board(&data) {
                    let again = m.encode_board(&b);
                    prop_assert_eq!(m.decode_board(&again), Some(b));
                }
            }
            let _ = OthelloModel::from_bytes(&data);
        }
    }
}

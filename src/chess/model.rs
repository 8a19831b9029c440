//! The storage model for chess positions: each square's content is range-coded with a static
//! frequency table chosen by the square and the contents of its neighbours below and to the
//! left (already coded), then the side to move, castling rights and en-passant file. Tables are
//! trained from the book's own positions (a random sample, since books are in key order) and
//! stored in the book (docs/FORMAT.md §6). Every table gives every symbol a non-zero frequency,
//! so any position can be coded with any model.

use super::error::ChessCodecError;
use super::packed::{EMPTY, PLANES, PieceCode, PosState};
use crate::store::PositionModel;
use crate::store::error::CodecError;
use crate::store::rangecoder::{Decoder, Encoder, TOTAL, TOTAL_BITS, push_cum, smoothed};

pub(crate) const MODEL_VERSION: u8 = 1;
/// Square contents 0..=12 plus 13 for "off the board".
const CTX: usize = 14;
const SYMS: usize = 13;
const SQUARE_TABLES: usize = 64 * CTX * CTX;
/// Cumulative tables, flattened: table t occupies `cum[t * stride .. t * stride + n + 1]`
/// (the square tables one per [`SquareTable`], in memory only: the serialized form is
/// unchanged).
#[doc(hidden)]
pub struct ChessModel {
    squares: Vec<SquareTable>,
    castling: Vec<u16>,
    ep: Vec<u16>,
}

const SQ_STRIDE: usize = SYMS + 1;

/// A square table in memory: its cumulative frequencies and its most probable symbol, which
/// decoding tries first. 32 bytes, aligned: a table never straddles a cache line.
#[derive(Clone, Copy)]
#[repr(C, align(32))]
struct SquareTable {
    cum: [u16; SQ_STRIDE],
    /// The symbol with the largest frequency (the lowest of equals).
    likely: u8,
}

/// The square tables of cumulative tables flattened with stride [`SQ_STRIDE`].
fn square_tables(flat: &[u16]) -> Vec<SquareTable> {
    flat.chunks_exact(SQ_STRIDE)
        .map(|c| {
            let mut t = SquareTable {
                cum: [0; SQ_STRIDE],
                likely: 0,
            };
            t.cum.copy_from_slice(c);
            let freq = |s: usize| c[s + 1].wrapping_sub(c[s]);
            for s in 1..SYMS {
                if freq(s) > freq(usize::from(t.likely)) {
                    t.likely = s as u8;
                }
            }
            t
        })
        .collect()
}

/// The square table of the square `file * 8 + RANK` in packing order (square `RANK * 8 +
/// file` of `squares`): [`table_index`] read from the board in square order.
#[inline(always)]
fn square_index<const RANK: usize>(squares: &[PieceCode; 64], file: usize) -> usize {
    let below = if RANK == 0 {
        13
    } else {
        usize::from(squares[(RANK - 1) * 8 + file])
    };
    let left = if file == 0 {
        13
    } else {
        usize::from(squares[RANK * 8 + file - 1])
    };
    ((file * 8 + RANK) * CTX + below) * CTX + left
}

const CASTLE_STRIDE: usize = 17;
const EP_STRIDE: usize = 10;

#[inline]
fn table_index(i: usize, v: &[u8; PLANES]) -> usize {
    let below = if i.is_multiple_of(8) {
        13
    } else {
        usize::from(v[i - 1])
    };
    let left = if i < 8 { 13 } else { usize::from(v[i - 8]) };
    (i * CTX + below) * CTX + left
}

#[inline]
fn encode_in(cum: &[u16], enc: &mut Encoder, sym: usize) {
    let lo = u32::from(cum[sym]);
    enc.encode(lo, u32::from(cum[sym + 1]) - lo);
}

#[inline]
fn decode_in(cum: &[u16], n: usize, dec: &mut Decoder<'_>) -> Option<usize> {
    dec.decode_symbol(cum, n)
}

impl ChessModel {
    /// Trains a model on sample positions.
    #[doc(hidden)]
    pub fn train(samples: &[PosState]) -> ChessModel {
        let mut sq_counts = vec![0u64; SQUARE_TABLES * SYMS];
        let mut sq_prior = vec![0u64; 64 * SYMS];
        let mut castling = [[0u64; 16]; 2];
        let mut ep = [[0u64; 9]; 2];
        let mut v = [0u8; PLANES];
        for s in samples {
            s.to_planes(&mut v);
            for i in 0..64 {
                let sym = usize::from(v[i]);
                sq_counts[table_index(i, &v) * SYMS + sym] += 1;
                sq_prior[i * SYMS + sym] += 1;
            }
            let t = usize::from(s.black_to_move);
            castling[t][usize::from(s.castling & 15)] += 1;
            ep[t][s.ep_file.map_or(0, |f| usize::from(f) + 1)] += 1;
        }
        let mut squares = Vec::with_capacity(SQUARE_TABLES * SQ_STRIDE);
        for t in 0..SQUARE_TABLES {
            let sq = t / (CTX * CTX);
            let f = smoothed(
                &sq_counts[t * SYMS..(t + 1) * SYMS],
                &sq_prior[sq * SYMS..(sq + 1) * SYMS],
            );
            push_cum(&mut squares, &f);
        }
        let mut m = ChessModel {
            squares: square_tables(&squares),
            castling: Vec::new(),
            ep: Vec::new(),
        };
        for t in 0..2 {
            push_cum(&mut m.castling, &smoothed(&castling[t], &[1; 16]));
            push_cum(&mut m.ep, &smoothed(&ep[t], &[1; 9]));
        }
        m
    }

    /// Serialized form: version, TOTAL_BITS, then every table's frequencies as u16 LE,
    /// zstd-compressed (docs/FORMAT.md §6).
    pub(crate) fn to_bytes(&self) -> Vec<u8> {
        let mut raw = vec![MODEL_VERSION, TOTAL_BITS as u8];
        let squares: Vec<u16> = self.squares.iter().flat_map(|t| t.cum).collect();
        for (cum, stride) in [
            (&squares, SQ_STRIDE),
            (&self.castling, CASTLE_STRIDE),
            (&self.ep, EP_STRIDE),
        ] {
            for t in cum.chunks(stride) {
                for w in t.windows(2) {
                    raw.extend_from_slice(&(w[1] - w[0]).to_le_bytes());
                }
            }
        }
        zstd::bulk::compress(&raw, 6).unwrap_or_default()
    }

    #[doc(hidden)]
    pub fn from_bytes(bytes: &[u8]) -> Result<ChessModel, String> {
        let expected = 2 + 2 * (SQUARE_TABLES * SYMS + 2 * 16 + 2 * 9);
        let raw =
            zstd::bulk::decompress(bytes, expected).map_err(|e| format!("model: zstd: {e}"))?;
        if raw.len() != expected || raw[0] != MODEL_VERSION || u32::from(raw[1]) != TOTAL_BITS {
            return Err(format!(
                "model: unsupported version {} or size {}",
                raw.first().copied().unwrap_or(0),
                raw.len()
            ));
        }
        let mut freqs = raw[2..]
            .chunks_exact(2)
            .map(|c| u16::from_le_bytes([c[0], c[1]]));
        let mut read = |tables: usize, n: usize| -> Result<Vec<u16>, String> {
            let mut out = Vec::with_capacity(tables * (n + 1));
            for _ in 0..tables {
                let f: Vec<u16> = freqs.by_ref().take(n).collect();
                if f.contains(&0) || f.iter().map(|&x| u32::from(x)).sum::<u32>() != TOTAL {
                    return Err("model: a frequency table is invalid".into());
                }
                push_cum(&mut out, &f);
            }
            Ok(out)
        };
        Ok(ChessModel {
            squares: square_tables(&read(SQUARE_TABLES, SYMS)?),
            castling: read(2, 16)?,
            ep: read(2, 9)?,
        })
    }

    /// The position coded by the model.
    #[doc(hidden)]
    pub fn encode_state(&self, s: &PosState) -> Vec<u8> {
        let mut out = Vec::with_capacity(16);
        self.encode_state_into(s, &mut out);
        out
    }

    /// [`ChessModel::encode_state`] appended to `out`.
    #[doc(hidden)]
    pub fn encode_state_into(&self, s: &PosState, out: &mut Vec<u8>) {
        let mut enc = Encoder::appending_to(std::mem::take(out));
        // A code above 12 (not a valid state) is coded as 12, as `pack` writes it; every
        // table index is then in range.
        let squares = s.squares.map(|c| c.min(12));
        // In packing order, unrolled by rank like the decoding.
        for file in 0..8 {
            self.encode_square::<0>(&mut enc, &squares, file);
            self.encode_square::<1>(&mut enc, &squares, file);
            self.encode_square::<2>(&mut enc, &squares, file);
            self.encode_square::<3>(&mut enc, &squares, file);
            self.encode_square::<4>(&mut enc, &squares, file);
            self.encode_square::<5>(&mut enc, &squares, file);
            self.encode_square::<6>(&mut enc, &squares, file);
            self.encode_square::<7>(&mut enc, &squares, file);
        }
        let turn = usize::from(s.black_to_move);
        enc.encode(turn as u32 * (TOTAL / 2), TOTAL / 2);
        encode_in(
            &self.castling[turn * CASTLE_STRIDE..],
            &mut enc,
            usize::from(s.castling & 15),
        );
        encode_in(
            &self.ep[turn * EP_STRIDE..],
            &mut enc,
            s.ep_file.map_or(0, |f| usize::from(f & 7) + 1),
        );
        *out = enc.finish();
    }

    /// Codes square `file * 8 + RANK` (packing order).
    #[inline(always)]
    fn encode_square<const RANK: usize>(
        &self,
        enc: &mut Encoder,
        squares: &[PieceCode; 64],
        file: usize,
    ) {
        let t = &self.squares[square_index::<RANK>(squares, file)];
        encode_in(&t.cum, enc, usize::from(squares[RANK * 8 + file]));
    }

    /// Decodes square `file * 8 + RANK` (packing order) into `squares`.
    #[inline(always)]
    fn decode_square<const RANK: usize>(
        &self,
        dec: &mut Decoder<'_>,
        squares: &mut [PieceCode; 64],
        file: usize,
    ) -> Option<()> {
        let t = self.squares.get(square_index::<RANK>(squares, file))?;
        squares[RANK * 8 + file] = dec.decode_likely(&t.cum, usize::from(t.likely))? as u8;
        Some(())
    }

    /// The position coded in `data`; `None` if `data` is not a valid code (bytes past the end
    /// read as zeros, trailing bytes are ignored).
    #[doc(hidden)]
    pub fn decode_state(&self, data: &[u8]) -> Option<PosState> {
        let mut dec = Decoder::new(data);
        let mut squares = [EMPTY; 64];
        // Unrolled by rank: each rank has its own branches in the symbol search (ranks differ
        // most in what they hold), which the branch predictor tells apart.
        for file in 0..8 {
            self.decode_square::<0>(&mut dec, &mut squares, file)?;
            self.decode_square::<1>(&mut dec, &mut squares, file)?;
            self.decode_square::<2>(&mut dec, &mut squares, file)?;
            self.decode_square::<3>(&mut dec, &mut squares, file)?;
            self.decode_square::<4>(&mut dec, &mut squares, file)?;
            self.decode_square::<5>(&mut dec, &mut squares, file)?;
            self.decode_square::<6>(&mut dec, &mut squares, file)?;
            self.decode_square::<7>(&mut dec, &mut squares, file)?;
        }
        const HALVES: [u16; 3] = [0, (TOTAL / 2) as u16, TOTAL as u16];
        let turn = decode_in(&HALVES, 2, &mut dec)?;
        let castling = decode_in(&self.castling[turn * CASTLE_STRIDE..], 16, &mut dec)? as u8;
        let ep = decode_in(&self.ep[turn * EP_STRIDE..], 9, &mut dec)? as u8;
        // Symbols are in range (square codes below 13, castling below 16, ep below 9): what
        // `PosState::from_planes` would accept.
        Some(PosState {
            squares,
            black_to_move: turn == 1,
            castling,
            ep_file: ep.checked_sub(1),
        })
    }
}

impl PositionModel for ChessModel {
    fn encode(&self, pos: &[u8], out: &mut Vec<u8>) -> Result<(), CodecError> {
        let s = PosState::unpack(pos)?;
        self.encode_state_into(&s, out);
        Ok(())
    }

    fn decode(&self, data: &[u8]) -> Result<Vec<u8>, CodecError> {
        self.decode_state(data)
            .map(|s| s.pack().0)
            .ok_or_else(|| ChessCodecError::Undecodable.into())
    }
    fn as_any(&self) -> &dyn std::any::Any {
        self
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chess::tests_support::sample_positions;
    use proptest::prelude::*;

    fn trained() -> &'static ChessModel {
        static M: std::sync::OnceLock<ChessModel> = std::sync::OnceLock::new();
        M.get_or_init(|| ChessModel::train(&samples()))
    }

    fn untrained() -> &'static ChessModel {
        static M: std::sync::OnceLock<ChessModel> = std::sync::OnceLock::new();
        M.get_or_init(|| ChessModel::train(&[]))
    }

    fn samples() -> Vec<PosState> {
        sample_positions()
            .iter()
            .map(|p| PosState::unpack(p).unwrap())
            .collect()
    }

    #[test]
    fn model_round_trip_and_serialization() {
        let s = samples();
        let m = ChessModel::train(&s);
        let m2 = ChessModel::from_bytes(&m.to_bytes()).unwrap();
        let mut total = 0;
        for p in &s {
            let bytes = m.encode_state(p);
            assert_eq!(bytes, m2.encode_state(p));
            total += bytes.len();
            assert_eq!(m2.decode_state(&bytes).as_ref(), Some(p));
        }
        // Trained on the same positions the code is far below the 21+ byte packed form.
        assert!(total / s.len() < 12, "average {} bytes", total / s.len());
    }

    use crate::chess::tests_support::arb_state;

    /// The coding as first written (planes, [`table_index`], the slice-based linear search):
    /// the reference the unrolled coding must agree with bit for bit.
    fn encode_reference(m: &ChessModel, s: &PosState) -> Vec<u8> {
        let mut enc = Encoder::new();
        let mut v = [0u8; PLANES];
        s.to_planes(&mut v);
        for i in 0..64 {
            let t = &m.squares[table_index(i, &v)];
            encode_in(&t.cum, &mut enc, usize::from(v[i]));
        }
        let turn = usize::from(s.black_to_move);
        enc.encode(turn as u32 * (TOTAL / 2), TOTAL / 2);
        let castling = usize::from(s.castling & 15);
        encode_in(&m.castling[turn * CASTLE_STRIDE..], &mut enc, castling);
        let ep = s.ep_file.map_or(0, |f| usize::from(f & 7) + 1);
        encode_in(&m.ep[turn * EP_STRIDE..], &mut enc, ep);
        enc.finish()
    }

    fn decode_reference(m: &ChessModel, data: &[u8]) -> Option<PosState> {
        let mut dec = Decoder::new(data);
        let mut v = [0u8; PLANES];
        for i in 0..64 {
            let t = &m.squares[table_index(i, &v)];
            v[i] = decode_in(&t.cum, SYMS, &mut dec)? as u8;
        }
        const HALVES: [u16; 3] = [0, (TOTAL / 2) as u16, TOTAL as u16];
        let turn = decode_in(&HALVES, 2, &mut dec)?;
        let castling = decode_in(&m.castling[turn * CASTLE_STRIDE..], 16, &mut dec)? as u8;
        let ep = decode_in(&m.ep[turn * EP_STRIDE..], 9, &mut dec)? as u8;
        v[64] = u8::from(turn == 1) | (castling << 1);
        v[65] = ep;
        PosState::from_planes(&v)
    }

    /// A model trained on few positions, so that its tables' likely symbols differ from the
    /// untrained model's (always the empty square).
    fn skewed() -> &'static ChessModel {
        static M: std::sync::OnceLock<ChessModel> = std::sync::OnceLock::new();
        M.get_or_init(|| ChessModel::train(&samples()[..3]))
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(256))]
        /// Same bytes as the reference, alone or appended after other bytes (ending in
        /// zeros, which the flush must not drop).
        #[test]
        fn coding_equals_the_reference(
            p in arb_state(),
            prefix in proptest::collection::vec(0u8..3, 0..4),
        ) {
            for m in [trained(), untrained(), skewed()] {
                let want = encode_reference(m, &p);
                prop_assert_eq!(&m.encode_state(&p), &want);
                let mut out = prefix.clone();
                m.encode_state_into(&p, &mut out);
                prop_assert_eq!(&out[..prefix.len()], &prefix[..]);
                prop_assert_eq!(&out[prefix.len()..], &want[..]);
                let mut out = prefix.clone();
                PositionModel::encode(m, &p.pack().0, &mut out).unwrap();
                prop_assert_eq!(&out[prefix.len()..], &want[..]);
                prop_assert_eq!(m.decode_state(&want), decode_reference(m, &want));
            }
        }

        /// Same result as the reference on any bytes: codes, codes cut or extended, junk.
        #[test]
        fn decoding_equals_the_reference(
            p in arb_state(),
            junk in proptest::collection::vec(any::<u8>(), 0..48),
            cut in 0usize..12,
        ) {
            for m in [trained(), untrained(), skewed()] {
                prop_assert_eq!(m.decode_state(&junk), decode_reference(m, &junk));
                let mut code = m.encode_state(&p);
                code.truncate(code.len().saturating_sub(cut));
                prop_assert_eq!(m.decode_state(&code), decode_reference(m, &code));
                code.extend_from_slice(&junk);
                prop_assert_eq!(m.decode_state(&code), decode_reference(m, &code));
                let got = PositionModel::decode(m, &code).ok();
                prop_assert_eq!(got, decode_reference(m, &code).map(|s| s.pack().0));
            }
        }
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]
        #[test]
        fn any_position_round_trips(p in arb_state()) {
            for m in [trained(), untrained()] {
                let bytes = m.encode_state(&p);
                prop_assert_eq!(m.decode_state(&bytes), Some(p.clone()));
            }
        }

        /// A state with codes above 12 (not valid) is coded as with 12 there, never panics.
        #[test]
        fn invalid_codes_are_coded_as_12(
            p in arb_state(),
            bad in proptest::collection::vec((0usize..64, 13u8..=255), 1..4),
        ) {
            let mut q = p.clone();
            for &(i, c) in &bad {
                q.squares[i] = c;
            }
            let mut clamped = q.clone();
            clamped.squares = q.squares.map(|c| c.min(12));
            prop_assert_eq!(trained().encode_state(&q), encode_reference(trained(), &clamped));
        }

        #[test]
        fn garbage_never_panics(data in proptest::collection::vec(any::<u8>(), 0..40)) {
            let _ = trained().decode_state(&data);
            let _ = ChessModel::from_bytes(&data);
        }
    }
}

//! The storage model for chess positions: each square's content is range-coded with a static
//! frequency table chosen by the square and the contents of its neighbours below and to the
//! left (already coded), then the side to move, castling rights and en-passant file. Tables are
//! trained from the book's own positions (a random sample, since books are in key order) and
//! stored in the book (docs/FORMAT.md §6). Every table gives every symbol a non-zero frequency,
//! so any position can be coded with any model.

use super::error::ChessCodecError;
use super::packed::{PLANES, PosState};
use crate::store::PositionModel;
use crate::store::error::CodecError;
use crate::store::rangecoder::{Decoder, Encoder, TOTAL, TOTAL_BITS, push_cum, smoothed};

pub(crate) const MODEL_VERSION: u8 = 1;
/// Square contents 0..=12 plus 13 for "off the board".
const CTX: usize = 14;
const SYMS: usize = 13;
const SQUARE_TABLES: usize = 64 * CTX * CTX;
/// Cumulative tables, flattened: table t occupies `cum[t * stride .. t * stride + n + 1]`.
#[doc(hidden)]
pub struct ChessModel {
    squares: Vec<u16>,
    castling: Vec<u16>,
    ep: Vec<u16>,
}

const SQ_STRIDE: usize = SYMS + 1;
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
        let mut m = ChessModel {
            squares: Vec::with_capacity(SQUARE_TABLES * SQ_STRIDE),
            castling: Vec::new(),
            ep: Vec::new(),
        };
        for t in 0..SQUARE_TABLES {
            let sq = t / (CTX * CTX);
            let f = smoothed(
                &sq_counts[t * SYMS..(t + 1) * SYMS],
                &sq_prior[sq * SYMS..(sq + 1) * SYMS],
            );
            push_cum(&mut m.squares, &f);
        }
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
        for (cum, stride) in [
            (&self.squares, SQ_STRIDE),
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
            squares: read(SQUARE_TABLES, SYMS)?,
            castling: read(2, 16)?,
            ep: read(2, 9)?,
        })
    }

    #[doc(hidden)]
    pub fn encode_state(&self, s: &PosState) -> Vec<u8> {
        let mut enc = Encoder::new();
        let mut v = [0u8; PLANES];
        s.to_planes(&mut v);
        for i in 0..64 {
            let t = table_index(i, &v);
            encode_in(&self.squares[t * SQ_STRIDE..], &mut enc, usize::from(v[i]));
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
        enc.finish()
    }

    #[doc(hidden)]
    pub fn decode_state(&self, data: &[u8]) -> Option<PosState> {
        let mut dec = Decoder::new(data);
        let mut v = [0u8; PLANES];
        for i in 0..64 {
            let t = table_index(i, &v);
            v[i] = decode_in(&self.squares[t * SQ_STRIDE..], SYMS, &mut dec)? as u8;
        }
        const HALVES: [u16; 3] = [0, (TOTAL / 2) as u16, TOTAL as u16];
        let turn = decode_in(&HALVES, 2, &mut dec)?;
        let castling = decode_in(&self.castling[turn * CASTLE_STRIDE..], 16, &mut dec)? as u8;
        let ep = decode_in(&self.ep[turn * EP_STRIDE..], 9, &mut dec)? as u8;
        v[64] = u8::from(turn == 1) | (castling << 1);
        v[65] = ep;
        PosState::from_planes(&v)
    }
}

impl PositionModel for ChessModel {
    fn encode(&self, pos: &[u8], out: &mut Vec<u8>) -> Result<(), CodecError> {
        let s = PosState::unpack(pos)?;
        out.extend_from_slice(&self.encode_state(&s));
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

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(64))]
        #[test]
        fn any_position_round_trips(p in arb_state()) {
            for m in [trained(), untrained()] {
                let bytes = m.encode_state(&p);
                prop_assert_eq!(m.decode_state(&bytes), Some(p.clone()));
            }
        }

        #[test]
        fn garbage_never_panics(data in proptest::collection::vec(any::<u8>(), 0..40)) {
            let _ = trained().decode_state(&data);
            let _ = ChessModel::from_bytes(&data);
        }
    }
}

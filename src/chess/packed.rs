//! The packed position format of DESIGN.md §2: one prefix code per square (a1, a2, …, a8, b1, …,
//! h8), then side to move, castling rights K Q k q, an en-passant flag and, if set, the file in
//! three bits. Bits are written most-significant first; the last byte is zero-padded.
//!
//! [`PosState`] is the decoded form: a plain array of square contents plus the state bits. It is
//! what the key, the FEN and the storage planes are computed from.

use crate::error::PackError;

/// Square contents: 0 empty, 1..=6 white pawn, knight, bishop, rook, queen, king,
/// 7..=12 the same for black.
pub type PieceCode = u8;

pub const EMPTY: PieceCode = 0;

/// (code bits, code length) for piece codes 0..=12.
const CODES: [(u8, u8); 13] = [
    (0b0, 1),      // empty
    (0b110, 3),    // white pawn
    (0b10110, 5),  // white knight
    (0b10100, 5),  // white bishop
    (0b11111, 5),  // white rook
    (0b111010, 6), // white queen
    (0b101110, 6), // white king
    (0b100, 3),    // black pawn
    (0b10101, 5),  // black knight
    (0b11100, 5),  // black bishop
    (0b11110, 5),  // black rook
    (0b111011, 6), // black queen
    (0b101111, 6), // black king
];

/// Decoding table indexed by the next 6 bits: (piece code, code length). The code is complete,
/// so every 6-bit window starts with exactly one code.
const DECODE: [(u8, u8); 64] = build_decode_table();

const fn build_decode_table() -> [(u8, u8); 64] {
    let mut table = [(0u8, 0u8); 64];
    let mut piece = 0;
    while piece < 13 {
        let (bits, len) = CODES[piece];
        let shift = 6 - len;
        let start = (bits as usize) << shift;
        let mut i = 0;
        while i < (1 << shift) {
            table[start + i] = (piece as u8, len);
            i += 1;
        }
        piece += 1;
    }
    table
}

/// Castling right bits as stored in [`PosState::castling`] (written in this order: K, Q, k, q).
pub const CASTLE_WK: u8 = 0b1000;
pub const CASTLE_WQ: u8 = 0b0100;
pub const CASTLE_BK: u8 = 0b0010;
pub const CASTLE_BQ: u8 = 0b0001;

/// A decoded position in the identity of DESIGN.md §2.
///
/// `squares` is indexed by shakmaty square index (a1 = 0, b1 = 1, …, h8 = 63).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct PosState {
    pub squares: [PieceCode; 64],
    pub black_to_move: bool,
    /// Bits K Q k q, see [`CASTLE_WK`] etc.
    pub castling: u8,
    /// File (0 = a … 7 = h) of the en-passant square, only under the identity rule.
    pub ep_file: Option<u8>,
}

/// Index into `squares` of the i-th square in packing order (a1, a2, …, a8, b1, …).
#[inline]
pub const fn packing_order(i: usize) -> usize {
    (i % 8) * 8 + i / 8
}

struct BitWriter {
    out: Vec<u8>,
    acc: u64,
    nacc: u32,
    bits: usize,
}

impl BitWriter {
    fn new() -> Self {
        BitWriter {
            out: Vec::with_capacity(24),
            acc: 0,
            nacc: 0,
            bits: 0,
        }
    }
    #[inline]
    fn put(&mut self, value: u8, len: u8) {
        self.acc = (self.acc << len) | u64::from(value);
        self.nacc += u32::from(len);
        self.bits += usize::from(len);
        while self.nacc >= 8 {
            self.nacc -= 8;
            self.out.push((self.acc >> self.nacc) as u8);
        }
        self.acc &= (1u64 << self.nacc) - 1;
    }
    fn finish(mut self) -> (Vec<u8>, usize) {
        if self.nacc > 0 {
            self.out.push((self.acc << (8 - self.nacc)) as u8);
        }
        (self.out, self.bits)
    }
}

impl PosState {
    /// Encodes to the packed format: (bytes, number of significant bits).
    pub fn pack(&self) -> (Vec<u8>, usize) {
        let mut w = BitWriter::new();
        for i in 0..64 {
            let (bits, len) = CODES[usize::from(self.squares[packing_order(i)].min(12))];
            w.put(bits, len);
        }
        w.put(u8::from(self.black_to_move), 1);
        w.put(self.castling & 0xf, 4);
        match self.ep_file {
            Some(f) => {
                w.put(1, 1);
                w.put(f & 7, 3);
            }
            None => w.put(0, 1),
        }
        w.finish()
    }

    /// Decodes exactly one packed position occupying all of `data`.
    pub fn unpack(data: &[u8]) -> Result<PosState, PackError> {
        let (state, used) = Self::unpack_prefix(data)?;
        if used < data.len() {
            return Err(PackError::TrailingBytes(data.len() - used));
        }
        Ok(state)
    }

    /// Decodes one packed position from the start of `data`; returns it and the bytes used.
    pub fn unpack_prefix(data: &[u8]) -> Result<(PosState, usize), PackError> {
        if data.is_empty() {
            return Err(PackError::Empty);
        }
        // Left-aligned bit buffer, refilled a byte at a time (zeros past the end).
        let mut acc: u64 = 0;
        let mut have: u32 = 0;
        let mut next = 0usize;
        let mut used: usize = 0;
        let mut refill = |acc: &mut u64, have: &mut u32| {
            while *have <= 56 {
                let b = u64::from(data.get(next).copied().unwrap_or(0));
                next += 1;
                *acc |= b << (56 - *have);
                *have += 8;
            }
        };
        let mut squares = [EMPTY; 64];
        for i in 0..64 {
            if have < 6 {
                refill(&mut acc, &mut have);
            }
            let (piece, len) = DECODE[(acc >> 58) as usize];
            acc <<= len;
            have -= u32::from(len);
            used += usize::from(len);
            squares[packing_order(i)] = piece;
        }
        refill(&mut acc, &mut have);
        let black_to_move = acc >> 63 == 1;
        let castling = ((acc >> 59) & 0xf) as u8;
        let ep_flag = (acc >> 58) & 1 == 1;
        let ep_file = ep_flag.then_some(((acc >> 55) & 7) as u8);
        let tail = if ep_flag { 9 } else { 6 };
        used += tail;
        let available = data.len() * 8;
        if used > available {
            return Err(PackError::Truncated {
                needed: used,
                available,
            });
        }
        let bytes = used.div_ceil(8);
        let pad = bytes * 8 - used;
        if pad > 0 && data[bytes - 1] & ((1u8 << pad) - 1) != 0 {
            return Err(PackError::NonZeroPadding);
        }
        Ok((
            PosState {
                squares,
                black_to_move,
                castling,
                ep_file,
            },
            bytes,
        ))
    }

    /// Number of significant bits of the packed form.
    pub fn packed_bits(&self) -> usize {
        let board: usize = self
            .squares
            .iter()
            .map(|&p| usize::from(CODES[usize::from(p.min(12))].1))
            .sum();
        board + 6 + if self.ep_file.is_some() { 3 } else { 0 }
    }
}

/// Width of the planar storage form of a position (see [`PosState::to_planes`]).
pub const PLANES: usize = 66;

impl PosState {
    /// Fixed-width storage form: byte i (< 64) is the piece code on square i in packing order;
    /// byte 64 is `black_to_move | castling << 1`; byte 65 is 0 or ep file + 1.
    pub fn to_planes(&self, out: &mut [u8; PLANES]) {
        for (i, o) in out.iter_mut().take(64).enumerate() {
            *o = self.squares[packing_order(i)];
        }
        out[64] = u8::from(self.black_to_move) | (self.castling << 1);
        out[65] = self.ep_file.map_or(0, |f| f + 1);
    }

    /// Inverse of [`PosState::to_planes`]; rejects out-of-range values.
    pub fn from_planes(p: &[u8]) -> Option<PosState> {
        if p.len() != PLANES || p[64] > 0x1f || p[65] > 8 {
            return None;
        }
        let mut squares = [EMPTY; 64];
        for (i, &v) in p.iter().take(64).enumerate() {
            if v > 12 {
                return None;
            }
            squares[packing_order(i)] = v;
        }
        Some(PosState {
            squares,
            black_to_move: p[64] & 1 == 1,
            castling: p[64] >> 1,
            ep_file: p[65].checked_sub(1),
        })
    }
}

/// Hex encoding used by the CLI and JSON output.
pub fn to_hex(bytes: &[u8]) -> String {
    use std::fmt::Write;
    let mut s = String::with_capacity(bytes.len() * 2);
    for b in bytes {
        let _ = write!(s, "{b:02x}");
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    use crate::chess::tests_support::arb_state;

    proptest! {
        #[test]
        fn pack_round_trip(s in arb_state()) {
            let (bytes, bits) = s.pack();
            prop_assert_eq!(bits, s.packed_bits());
            prop_assert_eq!(bytes.len(), bits.div_ceil(8));
            prop_assert_eq!(PosState::unpack(&bytes).unwrap(), s);
        }

        #[test]
        fn planes_round_trip(s in arb_state()) {
            let mut p = [0u8; PLANES];
            s.to_planes(&mut p);
            prop_assert_eq!(PosState::from_planes(&p).unwrap(), s);
        }

        #[test]
        fn unpack_garbage_never_panics(data in proptest::collection::vec(any::<u8>(), 0..80)) {
            let _ = PosState::unpack(&data);
            let _ = PosState::unpack_prefix(&data);
            let _ = PosState::from_planes(&data);
        }

        #[test]
        fn truncation_is_an_error(s in arb_state(), cut in 1usize..8) {
            let (bytes, _) = s.pack();
            let cut = cut.min(bytes.len());
            let short = &bytes[..bytes.len() - cut];
            prop_assert!(PosState::unpack(short).is_err());
        }
    }

    #[test]
    fn decode_table_is_complete() {
        for (i, &(_, len)) in DECODE.iter().enumerate() {
            assert!(len > 0, "window {i:06b} has no code");
        }
    }

    #[test]
    fn rejects_padding_and_trailing() {
        let start = "fe09eb6095a609ceb04eeec12fa609cb6095fe09e780";
        let mut bytes: Vec<u8> = (0..start.len() / 2)
            .map(|i| u8::from_str_radix(&start[2 * i..2 * i + 2], 16).unwrap())
            .collect();
        assert!(PosState::unpack(&bytes).is_ok());
        let mut padded = bytes.clone();
        *padded.last_mut().unwrap() |= 1;
        assert_eq!(PosState::unpack(&padded), Err(PackError::NonZeroPadding));
        bytes.push(0);
        assert_eq!(PosState::unpack(&bytes), Err(PackError::TrailingBytes(1)));
        assert!(matches!(
            PosState::unpack(&bytes[..10]),
            Err(PackError::Truncated { .. })
        ));
        assert_eq!(PosState::unpack(&[]), Err(PackError::Empty));
    }
}

//! The packed position format of docs/CONTRACT.md §2: one prefix code per square (a1, a2, …, a8, b1, …,
//! h8), then side to move, castling rights K Q k q, an en-passant flag and, if set, the file in
//! three bits. Bits are written most-significant first; the last byte is zero-padded.
//!
//! [`PosState`] is the decoded form: a plain array of square contents plus the state bits. It is
//! what the key, the FEN and the storage planes are computed from.

use super::error::PackError;

/// Square contents: 0 empty, 1..=6 white pawn, knight, bishop, rook, queen, king,
/// 7..=12 the same for black.
pub(crate) type PieceCode = u8;

pub(crate) const EMPTY: PieceCode = 0;

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

/// Bits the multi-square decoding table is indexed by.
const MULTI_BITS: u32 = 12;
/// Most squares one table entry decodes (all empty: one bit each).
const MULTI_MAX: usize = MULTI_BITS as usize;

/// The squares coded entirely within a window of [`MULTI_BITS`] bits: their piece codes (the
/// rest zero), how many, and how many bits they take.
#[derive(Clone, Copy)]
struct MultiEntry {
    codes: [PieceCode; MULTI_MAX],
    count: u8,
    bits: u8,
}

fn multi_table() -> &'static [MultiEntry] {
    static TABLE: std::sync::OnceLock<Vec<MultiEntry>> = std::sync::OnceLock::new();
    TABLE.get_or_init(|| {
        (0..1u32 << MULTI_BITS)
            .map(|w| {
                let mut e = MultiEntry {
                    codes: [EMPTY; MULTI_MAX],
                    count: 0,
                    bits: 0,
                };
                let mut at = 0u32;
                while at < MULTI_BITS {
                    // The code starting at `at`, if it ends inside the window: the window's
                    // remaining bits, padded with zeros to six, pick it in DECODE.
                    let rest = MULTI_BITS - at;
                    let six = if rest >= 6 {
                        (w >> (rest - 6)) & 63
                    } else {
                        (w << (6 - rest)) & 63
                    };
                    let (piece, len) = DECODE[six as usize];
                    if u32::from(len) > rest {
                        break;
                    }
                    e.codes[usize::from(e.count)] = piece;
                    e.count += 1;
                    at += u32::from(len);
                }
                e.bits = at as u8;
                e
            })
            .collect()
    })
}

/// Castling right bits as stored in [`PosState::castling`] (written in this order: K, Q, k, q).
pub(crate) const CASTLE_WK: u8 = 0b1000;
pub(crate) const CASTLE_WQ: u8 = 0b0100;
pub(crate) const CASTLE_BK: u8 = 0b0010;
pub(crate) const CASTLE_BQ: u8 = 0b0001;

/// A decoded position in the identity of docs/CONTRACT.md §2.
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
pub(crate) const fn packing_order(i: usize) -> usize {
    (i % 8) * 8 + i / 8
}

/// Longest packed position: 64 six-bit codes plus 9 state bits (393 bits).
pub const MAX_PACKED: usize = 50;

/// A packed position in a fixed-size buffer (no heap allocation; the replay hot path).
#[derive(Clone, Copy)]
pub struct PackedPos {
    len: u8,
    bytes: [u8; MAX_PACKED],
}

impl PackedPos {
    pub(crate) fn as_bytes(&self) -> &[u8] {
        &self.bytes[..usize::from(self.len)]
    }

    /// A buffer holding `bytes` (another game's packed position; the import pipeline carries
    /// any game's positions in this type), `None` if longer than [`MAX_PACKED`].
    pub(crate) fn from_slice(bytes: &[u8]) -> Option<PackedPos> {
        let mut out = PackedPos {
            len: u8::try_from(bytes.len()).ok()?,
            bytes: [0; MAX_PACKED],
        };
        out.bytes.get_mut(..bytes.len())?.copy_from_slice(bytes);
        Some(out)
    }
}

impl std::fmt::Debug for PackedPos {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "PackedPos({})", to_hex(self.as_bytes()))
    }
}

impl PartialEq for PackedPos {
    fn eq(&self, other: &Self) -> bool {
        self.as_bytes() == other.as_bytes()
    }
}

impl Eq for PackedPos {}

/// Big-endian bit writer into a [`PackedPos`]; holds fewer than 32 pending bits.
struct FixedBits {
    out: PackedPos,
    acc: u64,
    nacc: u32,
    len: usize,
    bits: usize,
}

impl FixedBits {
    fn new() -> Self {
        FixedBits {
            out: PackedPos {
                len: 0,
                bytes: [0; MAX_PACKED],
            },
            acc: 0,
            nacc: 0,
            len: 0,
            bits: 0,
        }
    }

    /// Appends the low `l` bits of `value` (`l` ≤ 32).
    #[inline(always)]
    fn put(&mut self, value: u32, l: u32) {
        self.acc = (self.acc << l) | u64::from(value);
        self.nacc += l;
        self.bits += l as usize;
        if self.nacc >= 32 {
            self.nacc -= 32;
            let word = (self.acc >> self.nacc) as u32;
            // 393 bits at most: the last full word ends at byte 48.
            if let Some(dst) = self.out.bytes.get_mut(self.len..self.len + 4) {
                dst.copy_from_slice(&word.to_be_bytes());
            }
            self.len += 4;
            self.acc &= (1u64 << self.nacc) - 1;
        }
    }

    /// Appends `n` zero bits.
    #[inline(always)]
    fn zeros(&mut self, mut n: u32) {
        while n > 0 {
            let k = n.min(32);
            self.put(0, k);
            n -= k;
        }
    }

    fn state(&mut self, black_to_move: bool, castling: u8, ep_file: Option<u8>) {
        self.put(u32::from(black_to_move), 1);
        self.put(u32::from(castling & 0xf), 4);
        match ep_file {
            Some(f) => self.put(0b1000 | u32::from(f & 7), 4),
            None => self.put(0, 1),
        }
    }

    fn finish(mut self) -> (PackedPos, usize) {
        while self.nacc >= 8 {
            self.nacc -= 8;
            self.out.bytes[self.len] = (self.acc >> self.nacc) as u8;
            self.len += 1;
        }
        if self.nacc > 0 {
            self.out.bytes[self.len] = (self.acc << (8 - self.nacc)) as u8;
            self.len += 1;
        }
        self.out.len = self.len as u8;
        (self.out, self.bits)
    }
}

/// Packs square contents (indexed a1 = 0 … h8 = 63; values above 12 are written as 12) and
/// the state bits; returns the packed form and its number of significant bits.
pub(crate) fn pack_parts(
    squares: &[PieceCode; 64],
    black_to_move: bool,
    castling: u8,
    ep_file: Option<u8>,
) -> (PackedPos, usize) {
    let mut w = FixedBits::new();
    for i in 0..64 {
        let (code, l) = CODES[usize::from(squares[packing_order(i)].min(12))];
        w.put(u32::from(code), u32::from(l));
    }
    w.state(black_to_move, castling, ep_file);
    w.finish()
}

/// Packs a board given in packing order: bit i of `occupied` is set if the i-th square in
/// packing order holds a piece, and bit i of `planes[k]` is bit k of that piece's code. Visits
/// only the occupied squares (each with the run of empty squares before it in one write) and
/// calls `visit(code, i)` for each.
#[inline(always)]
pub(crate) fn pack_occupied(
    occupied: u64,
    planes: &[u64; 4],
    black_to_move: bool,
    castling: u8,
    ep_file: Option<u8>,
    mut visit: impl FnMut(PieceCode, usize),
) -> PackedPos {
    let mut w = FixedBits::new();
    let mut next = 0u32;
    let mut occ = occupied;
    while occ != 0 {
        let i = occ.trailing_zeros();
        occ &= occ - 1;
        let code = ((planes[0] >> i) & 1)
            | (((planes[1] >> i) & 1) << 1)
            | (((planes[2] >> i) & 1) << 2)
            | (((planes[3] >> i) & 1) << 3);
        let code = (code as u8).min(12);
        visit(code, i as usize);
        let (bits, l) = CODES[usize::from(code)];
        // The empty squares before this one are zero bits: one write for both.
        let gap = i - next;
        if gap + u32::from(l) <= 32 {
            w.put(u32::from(bits), gap + u32::from(l));
        } else {
            w.zeros(gap);
            w.put(u32::from(bits), u32::from(l));
        }
        next = i + 1;
    }
    w.zeros(64 - next);
    w.state(black_to_move, castling, ep_file);
    w.finish().0
}

/// Ends decoding a packed position once its squares are read (`used` bits): the state bits,
/// left-aligned in `w`, then the checks on length and padding.
fn finish_unpack(
    data: &[u8],
    squares: [PieceCode; 64],
    mut used: usize,
    w: u64,
) -> Result<(PosState, usize), PackError> {
    let black_to_move = w >> 63 == 1;
    let castling = ((w >> 59) & 0xf) as u8;
    let ep_flag = (w >> 58) & 1 == 1;
    let ep_file = ep_flag.then_some(((w >> 55) & 7) as u8);
    used += if ep_flag { 9 } else { 6 };
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

impl PosState {
    /// Encodes to the packed format (docs/CONTRACT.md §2): (bytes, number of significant bits).
    ///
    /// ```
    /// use bookdb::chess::{PosState, to_hex};
    /// let start = PosState::from_chess(&shakmaty::Chess::default());
    /// let (bytes, bits) = start.pack();
    /// assert_eq!(bits, 170);
    /// assert_eq!(to_hex(&bytes), "fe09eb6095a609ceb04eeec12fa609cb6095fe09e780");
    /// ```
    pub fn pack(&self) -> (Vec<u8>, usize) {
        let (p, bits) = self.pack_fixed();
        (p.as_bytes().to_vec(), bits)
    }

    /// [`PosState::pack`] into a fixed-size buffer.
    pub(crate) fn pack_fixed(&self) -> (PackedPos, usize) {
        pack_parts(
            &self.squares,
            self.black_to_move,
            self.castling,
            self.ep_file,
        )
    }

    /// Decodes exactly one packed position occupying all of `data`. Truncated input, non-zero
    /// padding, trailing bytes and more than 64 squares are errors, never panics.
    ///
    /// ```
    /// use bookdb::chess::PosState;
    /// let start = PosState::from_chess(&shakmaty::Chess::default());
    /// let (bytes, _) = start.pack();
    /// assert_eq!(PosState::unpack(&bytes)?, start);
    /// assert!(PosState::unpack(&bytes[..10]).is_err()); // truncated
    /// let mut padded = bytes.clone();
    /// padded.push(0);
    /// assert!(PosState::unpack(&padded).is_err()); // a trailing byte
    /// # Ok::<(), bookdb::error::PackError>(())
    /// ```
    #[doc(hidden)]
    pub fn unpack(data: &[u8]) -> Result<PosState, PackError> {
        let (state, used) = Self::unpack_prefix(data)?;
        if used < data.len() {
            return Err(PackError::TrailingBytes(data.len() - used));
        }
        Ok(state)
    }

    /// Decodes one packed position from the start of `data`; returns it and the bytes used.
    ///
    /// The board is decoded several squares at a time: a table indexed by the next
    /// [`MULTI_BITS`] bits gives the codes of every square that starts and ends inside them
    /// (an empty square is one bit) and the bits they take. Bits past the end of `data` read
    /// as zeros (empty squares), so a truncated position is reported with the bits it needs.
    #[doc(hidden)]
    pub fn unpack_prefix(data: &[u8]) -> Result<(PosState, usize), PackError> {
        if data.is_empty() {
            return Err(PackError::Empty);
        }
        // Zero-padded copy: any 8 bytes from a byte offset below MAX_PACKED can be loaded.
        let mut buf = [0u8; MAX_PACKED + 8];
        let n = data.len().min(MAX_PACKED);
        buf[..n].copy_from_slice(&data[..n]);
        // The next 64 bits from bit `at`, left-aligned. A position needs at most 393 bits, so
        // `at` stays below 8 * MAX_PACKED while squares are read.
        #[inline(always)]
        fn peek(buf: &[u8; MAX_PACKED + 8], at: usize) -> u64 {
            let b = at / 8;
            let mut w = [0u8; 8];
            w.copy_from_slice(&buf[b..b + 8]);
            u64::from_be_bytes(w) << (at % 8)
        }
        // Square codes in packing order, with room for a whole table entry past the end.
        let mut planes = [EMPTY; 64 + MULTI_MAX];
        let mut i = 0usize;
        let mut used = 0usize;
        let table = multi_table();
        while i < 64 {
            let w = peek(&buf, used);
            let e = &table[(w >> (64 - MULTI_BITS)) as usize];
            if i + usize::from(e.count) <= 64 {
                planes[i..i + MULTI_MAX].copy_from_slice(&e.codes);
                i += usize::from(e.count);
                used += usize::from(e.bits);
            } else {
                // Near the end the window reaches past square 63: one code at a time.
                let (piece, len) = DECODE[(w >> 58) as usize];
                planes[i] = piece;
                i += 1;
                used += usize::from(len);
            }
        }
        let mut squares = [EMPTY; 64];
        for (k, &c) in planes.iter().take(64).enumerate() {
            squares[packing_order(k)] = c;
        }
        finish_unpack(data, squares, used, peek(&buf, used))
    }

    /// Number of significant bits of the packed form.
    #[doc(hidden)]
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
    #[doc(hidden)]
    pub fn to_planes(&self, out: &mut [u8; PLANES]) {
        for (i, o) in out.iter_mut().take(64).enumerate() {
            *o = self.squares[packing_order(i)];
        }
        out[64] = u8::from(self.black_to_move) | (self.castling << 1);
        out[65] = self.ep_file.map_or(0, |f| f + 1);
    }

    /// Inverse of [`PosState::to_planes`]; rejects out-of-range values.
    #[doc(hidden)]
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

    /// The one-code-at-a-time decoder [`PosState::unpack_prefix`] replaced: the reference
    /// the table-driven one must agree with on every input, valid or not.
    fn unpack_prefix_reference(data: &[u8]) -> Result<(PosState, usize), PackError> {
        if data.is_empty() {
            return Err(PackError::Empty);
        }
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
        let mut i = 0usize;
        while i < 64 {
            if have < 57 {
                refill(&mut acc, &mut have);
            }
            let zeros = (acc.leading_zeros().min(51) as usize).min(64 - i);
            i += zeros;
            acc <<= zeros;
            have -= zeros as u32;
            used += zeros;
            if i == 64 {
                break;
            }
            let (piece, len) = DECODE[(acc >> 58) as usize];
            acc <<= len;
            have -= u32::from(len);
            used += usize::from(len);
            squares[packing_order(i)] = piece;
            i += 1;
        }
        refill(&mut acc, &mut have);
        finish_unpack(data, squares, used, acc)
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(2000))]
        #[test]
        fn table_decoder_agrees_with_the_reference_on_positions(p in arb_state(), tail in proptest::collection::vec(any::<u8>(), 0..4)) {
            let mut bytes = p.pack().0;
            prop_assert_eq!(PosState::unpack_prefix(&bytes), unpack_prefix_reference(&bytes));
            prop_assert_eq!(PosState::unpack_prefix(&bytes).map(|(s, _)| s), Ok(p));
            bytes.extend_from_slice(&tail);
            prop_assert_eq!(PosState::unpack_prefix(&bytes), unpack_prefix_reference(&bytes));
            for cut in 0..bytes.len() {
                prop_assert_eq!(PosState::unpack_prefix(&bytes[..cut]), unpack_prefix_reference(&bytes[..cut]));
            }
        }

        #[test]
        fn table_decoder_agrees_with_the_reference_on_any_bytes(data in proptest::collection::vec(any::<u8>(), 0..70)) {
            prop_assert_eq!(PosState::unpack_prefix(&data), unpack_prefix_reference(&data));
        }
    }

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

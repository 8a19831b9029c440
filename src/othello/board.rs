//! Othello positions (docs/CONTRACT.md §7): bitboards, legal moves with passes, the packed
//! form, SplitMix64 Zobrist keys updated incrementally, board strings and the 8 board
//! symmetries.

use super::error::OthelloError;

/// Packed positions are at most 64 two-bit codes plus the side bit: 129 bits.
pub const MAX_PACKED: usize = 17;

/// SplitMix64 output `n` (0-based) from state 0.
const fn splitmix(n: u64) -> u64 {
    let mut z = 0x9E37_79B9_7F4A_7C15u64.wrapping_mul(n + 1);
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

const fn table(first: u64) -> [u64; 64] {
    let mut t = [0u64; 64];
    let mut i = 0;
    while i < 64 {
        t[i] = splitmix(first + i as u64);
        i += 1;
    }
    t
}

/// Key values of a black disc on squares 0..63 (SplitMix64 outputs 0..63).
pub(crate) const BLACK_KEYS: [u64; 64] = table(0);
/// Key values of a white disc (outputs 64..127).
pub(crate) const WHITE_KEYS: [u64; 64] = table(64);
/// Key value of white to move (output 128).
pub(crate) const SIDE_KEY: u64 = splitmix(128);

const NOT_A: u64 = 0xfefe_fefe_fefe_fefe;
const NOT_H: u64 = 0x7f7f_7f7f_7f7f_7f7f;

/// The 8 directions as shift functions over bitboards (bit = 8·row + column).
const DIRS: [fn(u64) -> u64; 8] = [
    |x| (x << 1) & NOT_A,
    |x| (x >> 1) & NOT_H,
    |x| x << 8,
    |x| x >> 8,
    |x| (x << 9) & NOT_A,
    |x| (x << 7) & NOT_H,
    |x| (x >> 7) & NOT_A,
    |x| (x >> 9) & NOT_H,
];

/// Legal moves of the side owning `me` against `opp`.
pub fn moves_of(me: u64, opp: u64) -> u64 {
    let empty = !(me | opp);
    let mut moves = 0;
    for d in DIRS {
        let mut t = d(me) & opp;
        for _ in 0..5 {
            t |= d(t) & opp;
        }
        moves |= d(t) & empty;
    }
    moves
}

/// Discs of `opp` flipped by `me` playing on `sq` (0 if the move flips nothing).
pub fn flips(me: u64, opp: u64, sq: u8) -> u64 {
    let from = 1u64 << sq;
    let mut all = 0;
    for d in DIRS {
        let mut x = d(from);
        let mut f = 0;
        while x & opp != 0 {
            f |= x;
            x = d(x);
        }
        if x & me != 0 {
            all |= f;
        }
    }
    all
}

/// The name of square `sq` (`a1` = 0, `b1` = 1, …, `h8` = 63).
pub fn square_name(sq: u8) -> String {
    let sq = sq & 63;
    format!("{}{}", char::from(b'a' + sq % 8), char::from(b'1' + sq / 8))
}

/// Parses a square name, upper or lower case.
pub fn parse_square(s: &str) -> Result<u8, OthelloError> {
    match s.as_bytes() {
        [c, r] => {
            let c = c.to_ascii_lowercase();
            if (b'a'..=b'h').contains(&c) && (b'1'..=b'8').contains(r) {
                Ok((r - b'1') * 8 + (c - b'a'))
            } else {
                Err(OthelloError::BadSquare(s.into()))
            }
        }
        _ => Err(OthelloError::BadSquare(s.into())),
    }
}

/// An Othello position: discs, the side to move and its key (kept up to date by XOR).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct Board {
    pub(crate) black: u64,
    pub(crate) white: u64,
    pub(crate) white_to_move: bool,
    key: u64,
}

impl Default for Board {
    fn default() -> Self {
        Board::start()
    }
}

impl Board {
    /// The start position: d4 and e5 white, e4 and d5 black, black to move.
    pub fn start() -> Board {
        Board::from_parts(1 << 28 | 1 << 35, 1 << 27 | 1 << 36, false)
    }

    /// A board from its discs (`black & white` must be 0; a disc on both counts as black).
    pub fn from_parts(black: u64, white: u64, white_to_move: bool) -> Board {
        let white = white & !black;
        let mut b = Board {
            black,
            white,
            white_to_move,
            key: 0,
        };
        b.key = b.key_from_scratch();
        b
    }

    /// The key computed from the discs (docs/CONTRACT.md §7).
    pub fn key_from_scratch(&self) -> u64 {
        let mut k = 0;
        for (bb, t) in [(self.black, &BLACK_KEYS), (self.white, &WHITE_KEYS)] {
            let mut x = bb;
            while x != 0 {
                k ^= t[x.trailing_zeros() as usize];
                x &= x - 1;
            }
        }
        if self.white_to_move { k ^ SIDE_KEY } else { k }
    }

    /// The key, as maintained incrementally.
    pub fn key(&self) -> u64 {
        self.key
    }
    pub fn black(&self) -> u64 {
        self.black
    }
    pub fn white(&self) -> u64 {
        self.white
    }
    pub fn white_to_move(&self) -> bool {
        self.white_to_move
    }

    fn mine(&self) -> (u64, u64) {
        if self.white_to_move {
            (self.white, self.black)
        } else {
            (self.black, self.white)
        }
    }

    /// The side to move's legal moves as a bitboard.
    pub fn legal(&self) -> u64 {
        let (me, opp) = self.mine();
        moves_of(me, opp)
    }

    /// The board after `plies` legal moves drawn by xorshift from `seed` (fewer if the game
    /// ends first): the random positions of tests, fuzz fixtures and benches.
    #[doc(hidden)]
    pub fn random_playout(seed: u64, plies: usize) -> Board {
        let mut b = Board::start();
        let mut s = seed.wrapping_mul(0x9e37_79b9_7f4a_7c15) | 1;
        for _ in 0..plies {
            if b.game_over() {
                break;
            }
            let legal = b.legal();
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            let mut x = legal;
            for _ in 0..(s % u64::from(legal.count_ones().max(1))) {
                x &= x - 1;
            }
            if b.play(x.trailing_zeros() as u8).is_err() {
                break;
            }
        }
        b
    }

    /// True if neither side can move.
    pub fn game_over(&self) -> bool {
        let (me, opp) = self.mine();
        moves_of(me, opp) == 0 && moves_of(opp, me) == 0
    }

    /// Plays `sq` for the side to move; then the other side is to move, unless it has no
    /// legal move and this side has (a pass, implicit as in WTHOR).
    pub fn play(&mut self, sq: u8) -> Result<(), OthelloError> {
        if sq >= 64 || self.legal() & (1u64 << sq) == 0 {
            return Err(OthelloError::Illegal {
                mv: square_name(sq),
                legal: self.legal_names().join(" "),
            });
        }
        let (me, opp) = self.mine();
        let f = flips(me, opp, sq);
        let bit = 1u64 << sq;
        let (placed, gained, lost) = if self.white_to_move {
            (&WHITE_KEYS, &WHITE_KEYS, &BLACK_KEYS)
        } else {
            (&BLACK_KEYS, &BLACK_KEYS, &WHITE_KEYS)
        };
        let mut k = self.key ^ placed[usize::from(sq)];
        let mut x = f;
        while x != 0 {
            let s = x.trailing_zeros() as usize;
            k ^= gained[s] ^ lost[s];
            x &= x - 1;
        }
        let (me, opp) = (me | bit | f, opp & !f);
        if self.white_to_move {
            self.white = me;
            self.black = opp;
        } else {
            self.black = me;
            self.white = opp;
        }
        // The opponent moves next unless it must pass (and this side can move).
        if moves_of(opp, me) != 0 || moves_of(me, opp) == 0 {
            self.white_to_move = !self.white_to_move;
            k ^= SIDE_KEY;
        }
        self.key = k;
        Ok(())
    }

    /// The legal moves' square names in square order.
    pub fn legal_names(&self) -> Vec<String> {
        let mut v = Vec::new();
        let mut x = self.legal();
        while x != 0 {
            v.push(square_name(x.trailing_zeros() as u8));
            x &= x - 1;
        }
        v
    }

    /// The packed form (docs/CONTRACT.md §7) into a fixed buffer; returns (bytes, bits).
    pub fn pack_into(&self, out: &mut [u8; MAX_PACKED]) -> (usize, usize) {
        *out = [0; MAX_PACKED];
        // Bits gather in `acc` (the last `n` bits are pending, most significant first) and
        // leave it a byte at a time.
        let (mut acc, mut n, mut at) = (0u64, 0u32, 0usize);
        for sq in 0..64 {
            let w = (self.white >> sq) & 1;
            let occupied = ((self.black >> sq) & 1) | w;
            // Empty `0`; black `10`; white `11`.
            let len = 1 + occupied as u32;
            acc = (acc << len) | (occupied << 1 | w) & ((1 << len) - 1);
            n += len;
            if n >= 8 {
                n -= 8;
                out[at] = (acc >> n) as u8;
                at += 1;
            }
        }
        acc = (acc << 1) | u64::from(self.white_to_move);
        n += 1;
        if n >= 8 {
            n -= 8;
            out[at] = (acc >> n) as u8;
            at += 1;
        }
        let bits = at * 8 + n as usize;
        if n > 0 {
            out[at] = (acc << (8 - n)) as u8;
            at += 1;
        }
        (at, bits)
    }

    /// The packed form and its bit count.
    pub fn pack(&self) -> (Vec<u8>, usize) {
        let mut buf = [0; MAX_PACKED];
        let (n, bits) = self.pack_into(&mut buf);
        (buf[..n].to_vec(), bits)
    }

    /// Decodes a packed position; rejects truncated input, non-zero padding and trailing
    /// bytes.
    pub fn unpack(data: &[u8]) -> Result<Board, OthelloError> {
        // Read from a zero-padded copy two bytes at a time; input that runs out (the bits
        // read pass its end) is decoded again bit by bit for the exact error.
        let mut buf = [0u8; MAX_PACKED + 2];
        let n = data.len().min(buf.len());
        buf[..n].copy_from_slice(&data[..n]);
        let (mut black, mut white, mut bit) = (0u64, 0u64, 0usize);
        for sq in 0..64 {
            let w = u16::from_be_bytes([buf[bit / 8], buf[bit / 8 + 1]]) << (bit % 8);
            let (first, second) = (u64::from(w >> 15), u64::from((w >> 14) & 1));
            black |= (first & !second & 1) << sq;
            white |= (first & second) << sq;
            bit += 1 + first as usize;
        }
        let white_to_move = buf[bit / 8] & (0x80 >> (bit % 8)) != 0;
        bit += 1;
        if bit > data.len() * 8 {
            return Board::unpack_bitwise(data);
        }
        let used = bit.div_ceil(8);
        if data.len() > used {
            return Err(OthelloError::TrailingBytes(data.len() - used));
        }
        if !bit.is_multiple_of(8) && data[used - 1] & (0xff >> (bit % 8)) != 0 {
            return Err(OthelloError::NonZeroPadding);
        }
        Ok(Board::from_parts(black, white, white_to_move))
    }

    /// [`Board::unpack`] a bit at a time: the reference, and the exact error of a truncated
    /// input.
    fn unpack_bitwise(data: &[u8]) -> Result<Board, OthelloError> {
        let available = data.len() * 8;
        let mut bit = 0usize;
        let get = |bit: &mut usize| -> Result<bool, OthelloError> {
            let b = data.get(*bit / 8).ok_or(OthelloError::Truncated {
                needed: *bit + 1,
                available,
            })? & (0x80 >> (*bit % 8))
                != 0;
            *bit += 1;
            Ok(b)
        };
        let (mut black, mut white) = (0u64, 0u64);
        for sq in 0..64 {
            if get(&mut bit)? {
                if get(&mut bit)? {
                    white |= 1 << sq;
                } else {
                    black |= 1 << sq;
                }
            }
        }
        let white_to_move = get(&mut bit)?;
        let used = bit.div_ceil(8);
        if data.len() > used {
            return Err(OthelloError::TrailingBytes(data.len() - used));
        }
        if !bit.is_multiple_of(8)
            && data
                .get(used - 1)
                .is_some_and(|&b| b & (0xff >> (bit % 8)) != 0)
        {
            return Err(OthelloError::NonZeroPadding);
        }
        Ok(Board::from_parts(black, white, white_to_move))
    }

    /// The board string: 64 characters in square order (`-`, `X` black, `O` white), a space,
    /// then the side to move.
    pub fn board_string(&self) -> String {
        let mut s = String::with_capacity(66);
        for sq in 0..64 {
            let m = 1u64 << sq;
            s.push(if self.black & m != 0 {
                'X'
            } else if self.white & m != 0 {
                'O'
            } else {
                '-'
            });
        }
        s.push(' ');
        s.push(if self.white_to_move { 'O' } else { 'X' });
        s
    }

    /// Parses a board string (see [`Board::board_string`]).
    pub fn parse_board(s: &str) -> Result<Board, OthelloError> {
        let bad = || OthelloError::BadBoard(s.into());
        let b = s.trim().as_bytes();
        if b.len() != 66 || b[64] != b' ' {
            return Err(bad());
        }
        let (mut black, mut white) = (0u64, 0u64);
        for (sq, &c) in b[..64].iter().enumerate() {
            match c {
                b'X' | b'x' => black |= 1 << sq,
                b'O' | b'o' => white |= 1 << sq,
                b'-' | b'.' => {}
                _ => return Err(bad()),
            }
        }
        let white_to_move = match b[65] {
            b'X' | b'x' => false,
            b'O' | b'o' => true,
            _ => return Err(bad()),
        };
        Ok(Board::from_parts(black, white, white_to_move))
    }

    /// This board under symmetry `t` (0..8; 0 is the identity, see [`transform`]).
    pub fn transformed(&self, t: u8) -> Board {
        Board::from_parts(
            transform(self.black, t),
            transform(self.white, t),
            self.white_to_move,
        )
    }

    /// The least of the 8 symmetric images (by packed bytes) and the symmetry giving it (the
    /// first such in 0..8).
    pub fn canonical(&self) -> (Board, u8) {
        let mut best = (self.black, self.white);
        let mut best_t = 0;
        for t in 1..8 {
            let c = (transform(self.black, t), transform(self.white, t));
            if packed_less(c, best) {
                best = c;
                best_t = t;
            }
        }
        if best_t == 0 {
            (*self, 0)
        } else {
            (
                Board::from_parts(best.0, best.1, self.white_to_move),
                best_t,
            )
        }
    }
}

/// Whether discs `a` pack to fewer-or-equal-length bytes that compare less than `b`'s, for two
/// images of one board (same disc count, so same length): the codes `0` < `10` < `11` are
/// prefix-free and ordered, so the first square where the images differ decides.
fn packed_less(a: (u64, u64), b: (u64, u64)) -> bool {
    let diff = (a.0 ^ b.0) | (a.1 ^ b.1);
    if diff == 0 {
        return false;
    }
    let m = diff & diff.wrapping_neg();
    let sym = |x: (u64, u64)| u8::from(x.0 & m != 0) + 2 * u8::from(x.1 & m != 0);
    sym(a) < sym(b)
}

fn mirror_columns(mut x: u64) -> u64 {
    x = ((x >> 1) & 0x5555_5555_5555_5555) | ((x & 0x5555_5555_5555_5555) << 1);
    x = ((x >> 2) & 0x3333_3333_3333_3333) | ((x & 0x3333_3333_3333_3333) << 2);
    ((x >> 4) & 0x0f0f_0f0f_0f0f_0f0f) | ((x & 0x0f0f_0f0f_0f0f_0f0f) << 4)
}

fn transpose(mut x: u64) -> u64 {
    let t = 0x0f0f_0f0f_0000_0000 & (x ^ (x << 28));
    x ^= t ^ (t >> 28);
    let t = 0x3333_0000_3333_0000 & (x ^ (x << 14));
    x ^= t ^ (t >> 14);
    let t = 0x5500_5500_5500_5500 & (x ^ (x << 7));
    x ^ t ^ (t >> 7)
}

/// Board symmetry `t` of a bitboard: bit 0 of `t` mirrors the columns (a↔h), bit 1 the rows
/// (1↔8), bit 2 then transposes (a1-h8 diagonal); applied in that order.
pub fn transform(mut x: u64, t: u8) -> u64 {
    if t & 1 != 0 {
        x = mirror_columns(x);
    }
    if t & 2 != 0 {
        x = x.swap_bytes();
    }
    if t & 4 != 0 {
        x = transpose(x);
    }
    x
}

/// Square `sq` under symmetry `t`.
pub fn transform_square(sq: u8, t: u8) -> u8 {
    transform(1u64 << (sq & 63), t).trailing_zeros() as u8
}

/// The square that symmetry `t` maps to `sq` (the inverse mapping).
pub fn untransform_square(sq: u8, t: u8) -> u8 {
    (0..64)
        .find(|&s| transform_square(s, t) == sq)
        .unwrap_or(sq)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn hex(b: &[u8]) -> String {
        b.iter().map(|x| format!("{x:02x}")).collect()
    }

    /// Every vector of docs/CONTRACT.md §7.
    #[test]
    fn contract_vectors() {
        let vectors = [
            ("", "933982e233ff08ea", 69, "0000001c0580000000"),
            ("f5", "f794c0f7d4b9bfd9", 70, "0000001c0540000004"),
            ("f5 d6", "05304dd5c9f74bc6", 71, "0000001c0740c00000"),
            ("f5 d6 c3", "30c1d02bf15ae59c", 72, "0000200a03a0600001"),
            (
                "f5 d6 c3 d3 c4",
                "1c67ac85f5de383d",
                74,
                "00002c0a80e818000040",
            ),
        ];
        for (moves, key, bits, packed) in vectors {
            let mut b = Board::start();
            for m in moves.split_whitespace() {
                b.play(parse_square(m).unwrap()).unwrap();
            }
            assert_eq!(format!("{:016x}", b.key()), key, "{moves}");
            assert_eq!(b.key(), b.key_from_scratch(), "{moves}");
            let (p, n) = b.pack();
            assert_eq!((hex(&p), n), (packed.to_string(), bits), "{moves}");
            assert_eq!(Board::unpack(&p).unwrap(), b);
        }
    }

    #[test]
    fn splitmix_first_outputs() {
        // SplitMix64 from state 0: the well-known first output.
        assert_eq!(BLACK_KEYS[0], 0xe220_a839_7b1d_cdaf);
    }

    #[test]
    fn unpack_rejects_bad_bytes() {
        let (p, _) = Board::start().pack();
        assert!(matches!(
            Board::unpack(&p[..p.len() - 1]),
            Err(OthelloError::Truncated { .. })
        ));
        let mut padded = p.clone();
        *padded.last_mut().unwrap() |= 1;
        assert_eq!(Board::unpack(&padded), Err(OthelloError::NonZeroPadding));
        let mut long = p.clone();
        long.push(0);
        assert_eq!(Board::unpack(&long), Err(OthelloError::TrailingBytes(1)));
        assert!(Board::unpack(&[]).is_err());
    }

    #[test]
    fn passes_are_implicit() {
        // Black a1 and h1, white b1 and h2, black to move. After c1 (flipping b1) white has
        // no move (h2's lines end off the board) but black has (h3): black moves again.
        let sq = |s: &str| parse_square(s).unwrap();
        let bit = |s: &str| 1u64 << sq(s);
        let mut b = Board::from_parts(bit("a1") | bit("h1"), bit("b1") | bit("h2"), false);
        b.play(sq("c1")).unwrap();
        assert!(!b.white_to_move());
        assert_eq!(b.legal(), bit("h3"));
        assert_eq!(b.key(), b.key_from_scratch());
        b.play(sq("h3")).unwrap();
        assert!(b.game_over());
        assert!(b.play(sq("h4")).is_err());
    }

    #[test]
    fn board_strings_round_trip() {
        let b = Board::start();
        let s = b.board_string();
        assert_eq!(
            s,
            "---------------------------OX------XO--------------------------- X"
        );
        assert_eq!(Board::parse_board(&s).unwrap(), b);
        assert!(Board::parse_board("xyz").is_err());
    }

    #[test]
    fn start_symmetries_make_first_moves_one() {
        let mut keys = std::collections::HashSet::new();
        for m in ["f5", "d3", "c4", "e6"] {
            let mut b = Board::start();
            b.play(parse_square(m).unwrap()).unwrap();
            keys.insert(b.canonical().0.pack().0);
        }
        assert_eq!(keys.len(), 1);
    }

    /// The packed form a bit at a time (docs/CONTRACT.md §7), as `pack_into` was first written.
    fn reference_pack(b: &Board) -> (Vec<u8>, usize) {
        let mut out = vec![0u8; MAX_PACKED];
        let mut bit = 0usize;
        let mut put = |v: u8, n: usize| {
            for i in (0..n).rev() {
                if (v >> i) & 1 != 0 {
                    out[bit / 8] |= 0x80 >> (bit % 8);
                }
                bit += 1;
            }
        };
        for sq in 0..64 {
            let m = 1u64 << sq;
            if b.black & m != 0 {
                put(0b10, 2);
            } else if b.white & m != 0 {
                put(0b11, 2);
            } else {
                put(0, 1);
            }
        }
        put(u8::from(b.white_to_move), 1);
        out.truncate(bit.div_ceil(8));
        (out, bit)
    }

    fn arb_board() -> impl Strategy<Value = Board> {
        (any::<u64>(), any::<u64>(), any::<bool>())
            .prop_map(|(b, w, s)| Board::from_parts(b, w & !b, s))
    }

    proptest! {
        #[test]
        fn pack_round_trips(b in arb_board()) {
            let (p, bits) = b.pack();
            prop_assert_eq!(p.len(), bits.div_ceil(8));
            prop_assert_eq!(Board::unpack(&p).unwrap(), b);
        }

        #[test]
        fn unpack_never_panics(data in proptest::collection::vec(any::<u8>(), 0..40)) {
            if let Ok(b) = Board::unpack(&data) {
                prop_assert_eq!(b.pack().0, data);
            }
        }

        /// The word-wise unpack and pack give what the bit-at-a-time reference gives, on
        /// any bytes (the packed forms of boards, their prefixes and extensions, and noise).
        #[test]
        fn fast_packing_equals_the_bitwise_reference(
            b in arb_board(),
            cut in 0usize..20,
            extra in proptest::collection::vec(any::<u8>(), 0..3),
            noise in proptest::collection::vec(any::<u8>(), 0..20),
        ) {
            let (p, bits) = b.pack();
            prop_assert_eq!((p.clone(), bits), reference_pack(&b));
            let mut long = p.clone();
            long.extend_from_slice(&extra);
            for data in [&p[..cut.min(p.len())], &long[..], &noise[..]] {
                prop_assert_eq!(Board::unpack(data), Board::unpack_bitwise(data));
            }
        }

        #[test]
        fn canonical_is_least_image_and_invariant(b in arb_board(), t in 0u8..8) {
            let (c, ct) = b.canonical();
            prop_assert_eq!(b.transformed(ct), c);
            for u in 0..8 {
                prop_assert!(c.pack().0 <= b.transformed(u).pack().0);
            }
            prop_assert_eq!(b.transformed(t).canonical().0, c);
        }

        #[test]
        fn squares_map_back(sq in 0u8..64, t in 0u8..8) {
            prop_assert_eq!(untransform_square(transform_square(sq, t), t), sq);
            prop_assert_eq!(transform(1u64 << sq, t), 1u64 << transform_square(sq, t));
        }

        #[test]
        fn incremental_keys_follow_random_games(seed in any::<u64>()) {
            let mut b = Board::start();
            let mut s = seed;
            while !b.game_over() {
                let legal = b.legal();
                s = s.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407);
                let n = (s >> 33) as u32 % legal.count_ones();
                let mut x = legal;
                for _ in 0..n { x &= x - 1; }
                b.play(x.trailing_zeros() as u8).unwrap();
                prop_assert_eq!(b.key(), b.key_from_scratch());
            }
        }
    }
}

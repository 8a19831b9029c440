//! Bridges between shakmaty positions and the book's position identity: [`PosState`], the
//! Polyglot key, four-field FENs and 16-bit move codes.

use shakmaty::fen::Fen;
use shakmaty::uci::UciMove;
use shakmaty::zobrist::{Zobrist64, ZobristValue};
use shakmaty::{
    Bitboard, Board, ByColor, ByRole, CastlingMode, CastlingSide, Chess, Color, EnPassantMode,
    File, Move, Piece, Position, Rank, Role, Setup, Square,
};

use super::error::PositionError;
use super::packed::{
    CASTLE_BK, CASTLE_BQ, CASTLE_WK, CASTLE_WQ, EMPTY, PackedPos, PieceCode, PosState,
    pack_occupied,
};

fn piece_code(p: Piece) -> PieceCode {
    let r = p.role as u8; // Pawn = 1 … King = 6
    if p.color == Color::White { r } else { r + 6 }
}

fn code_piece(c: PieceCode) -> Option<Piece> {
    let (color, r) = match c {
        1..=6 => (Color::White, c),
        7..=12 => (Color::Black, c - 6),
        _ => return None,
    };
    let role = Role::ALL[usize::from(r - 1)];
    Some(Piece { color, role })
}

/// The Polyglot key and the packed form of a position, straight from its bitboards: equal to
/// `PosState::from_chess(pos)` followed by `key()` and `pack()`, without the intermediate
/// state or any allocation (the import's per-ply hot path).
pub fn key_and_pack(pos: &Chess) -> (u64, PackedPos) {
    let b = pos.board();
    // The four bits of each square's piece code as bitboards (codes: white pawn … king 1..=6,
    // black 7..=12), flipped along the a1-h8 diagonal so that bit i is the i-th square in
    // packing order (file-major): the flip maps square index r·8+f to f·8+r.
    let (white, black) = (b.white(), b.black());
    let plane0 = b.pawns() | b.bishops() | b.queens();
    let plane1 = (white & (b.knights() | b.bishops() | b.kings()))
        | (black & (b.pawns() | b.rooks() | b.queens()));
    let plane2 = (white & (b.rooks() | b.queens() | b.kings())) | (black & (b.pawns() | b.kings()));
    let plane3 = black & !b.pawns();
    let planes = [plane0, plane1, plane2, plane3].map(|p| p.flip_diagonal().0);
    let occupied = b.occupied().flip_diagonal().0;
    let castling = castling_bits(pos);
    let ep_file = pos
        .ep_square(EnPassantMode::PseudoLegal)
        .map(|sq| sq.file() as u8);
    let black_to_move = pos.turn() == Color::Black;
    let zobrist = packing_zobrist();
    let mut h = 0u64;
    let packed = pack_occupied(
        occupied,
        &planes,
        black_to_move,
        castling,
        ep_file,
        |code, i| {
            h ^= zobrist[usize::from(code)][i];
        },
    );
    (h ^ state_key(castling, ep_file, black_to_move), packed)
}

/// The key's part for the state bits: castling rights, en-passant file, white to move.
fn state_key(castling: u8, ep_file: Option<u8>, black_to_move: bool) -> u64 {
    let mut h = Zobrist64(0);
    for (bit, color, side) in CASTLING_BITS {
        if castling & bit != 0 {
            h ^= Zobrist64::zobrist_for_castling_right(color, side);
        }
    }
    if let Some(f) = ep_file {
        h ^= Zobrist64::zobrist_for_en_passant_file(File::new(u32::from(f & 7)));
    }
    if !black_to_move {
        h ^= Zobrist64::zobrist_for_white_turn();
    }
    h.0
}

/// Polyglot piece keys indexed by piece code and square index (code 0: zeros).
fn square_zobrist() -> &'static [[u64; 64]; 13] {
    static TABLE: std::sync::OnceLock<[[u64; 64]; 13]> = std::sync::OnceLock::new();
    TABLE.get_or_init(|| {
        let mut t = [[0u64; 64]; 13];
        for (code, row) in t.iter_mut().enumerate() {
            if let Some(piece) = code_piece(code as PieceCode) {
                for (i, v) in row.iter_mut().enumerate() {
                    *v = Zobrist64::zobrist_for_piece(Square::new(i as u32), piece).0;
                }
            }
        }
        t
    })
}

/// Polyglot piece keys indexed by piece code and square in packing order (code 0: zeros).
fn packing_zobrist() -> &'static [[u64; 64]; 13] {
    static TABLE: std::sync::OnceLock<[[u64; 64]; 13]> = std::sync::OnceLock::new();
    TABLE.get_or_init(|| {
        let by_square = square_zobrist();
        let mut t = [[0u64; 64]; 13];
        for (row, src) in t.iter_mut().zip(by_square) {
            for (i, v) in row.iter_mut().enumerate() {
                *v = src[super::packed::packing_order(i)];
            }
        }
        t
    })
}

/// Castling-right bits of [`PosState::castling`] with the right each stands for.
const CASTLING_BITS: [(u8, Color, CastlingSide); 4] = [
    (CASTLE_WK, Color::White, CastlingSide::KingSide),
    (CASTLE_WQ, Color::White, CastlingSide::QueenSide),
    (CASTLE_BK, Color::Black, CastlingSide::KingSide),
    (CASTLE_BQ, Color::Black, CastlingSide::QueenSide),
];

fn castling_bits(pos: &Chess) -> u8 {
    let c = pos.castles();
    CASTLING_BITS
        .iter()
        .filter(|(_, color, side)| c.has(*color, *side))
        .fold(0, |acc, (bit, _, _)| acc | bit)
}

impl PosState {
    /// The identity of a chess position (docs/CONTRACT.md §2): placement, side to move, castling rights,
    /// en-passant file only if a pawn of the side to move stands beside the double-stepped pawn.
    pub fn from_chess(pos: &Chess) -> PosState {
        let mut squares = [EMPTY; 64];
        for (sq, piece) in pos.board().iter() {
            squares[usize::from(sq)] = piece_code(piece);
        }
        let castling = castling_bits(pos);
        PosState {
            squares,
            black_to_move: pos.turn() == Color::Black,
            castling,
            ep_file: pos
                .ep_square(EnPassantMode::PseudoLegal)
                .map(|sq| sq.file() as u8),
        }
    }

    /// The Polyglot Zobrist key, computed from the state alone.
    pub fn key(&self) -> u64 {
        let table = square_zobrist();
        let mut h = 0u64;
        for (i, &c) in self.squares.iter().enumerate() {
            // Codes above 12 are not pieces (as `code_piece` says): no key.
            if let Some(row) = table.get(usize::from(c)) {
                h ^= row[i];
            }
        }
        h ^ state_key(self.castling, self.ep_file, self.black_to_move)
    }

    /// Rebuilds a legal shakmaty position (halfmove clock 0, fullmove 1), checking that the
    /// state survives the round trip exactly.
    #[doc(hidden)]
    pub fn to_chess(&self) -> Result<Chess, PositionError> {
        let pos = self.to_chess_unchecked()?;
        // The identity must survive the round trip exactly (e.g. an ep flag without a pawn
        // beside it would be dropped by shakmaty). The board is built from the squares bit for
        // bit (to_chess_unchecked; the board_round_trips test), so only the state bits can
        // differ: comparing them is `PosState::from_chess(&pos) == *self` without walking the
        // board (a tenth of `verify`'s time when it did).
        let ep_file = pos
            .ep_square(EnPassantMode::PseudoLegal)
            .map(|sq| sq.file() as u8);
        let same = castling_bits(&pos) == self.castling
            && ep_file == self.ep_file
            && (pos.turn() == Color::Black) == self.black_to_move;
        debug_assert!(!same || PosState::from_chess(&pos) == *self);
        if !same {
            return Err(PositionError::Illegal(
                "castling or en-passant bits inconsistent with the board".into(),
            ));
        }
        Ok(pos)
    }

    /// Like [`PosState::to_chess`] without the round-trip check (for states known to come
    /// from legal positions, e.g. after a checksum-verified read).
    #[doc(hidden)]
    pub fn to_chess_unchecked(&self) -> Result<Chess, PositionError> {
        // Branch-free: slot 0 of each array collects the empty squares and is ignored.
        const ROLE_SLOT: [usize; 13] = [0, 1, 2, 3, 4, 5, 6, 1, 2, 3, 4, 5, 6];
        const COLOR_SLOT: [usize; 13] = [0, 1, 1, 1, 1, 1, 1, 2, 2, 2, 2, 2, 2];
        let mut roles = [0u64; 7];
        let mut colors = [0u64; 3];
        for (i, &c) in self.squares.iter().enumerate() {
            let Some(&r) = ROLE_SLOT.get(usize::from(c)) else {
                return Err(PositionError::Illegal(format!("bad piece code {c}")));
            };
            roles[r] |= 1 << i;
            colors[COLOR_SLOT[usize::from(c)]] |= 1 << i;
        }
        let by_role = ByRole {
            pawn: Bitboard(roles[1]),
            knight: Bitboard(roles[2]),
            bishop: Bitboard(roles[3]),
            rook: Bitboard(roles[4]),
            queen: Bitboard(roles[5]),
            king: Bitboard(roles[6]),
        };
        let by_color = ByColor {
            white: Bitboard(colors[1]),
            black: Bitboard(colors[2]),
        };
        let board = Board::try_from_bitboards(by_role, by_color)
            .map_err(|_| PositionError::Illegal("inconsistent board".into()))?;
        let mut rights = Bitboard::EMPTY;
        for (bit, sq) in [
            (CASTLE_WK, Square::H1),
            (CASTLE_WQ, Square::A1),
            (CASTLE_BK, Square::H8),
            (CASTLE_BQ, Square::A8),
        ] {
            if self.castling & bit != 0 {
                rights.add(sq);
            }
        }
        let turn = if self.black_to_move {
            Color::Black
        } else {
            Color::White
        };
        let ep_square = self.ep_file.map(|f| {
            let rank = if self.black_to_move {
                Rank::Third
            } else {
                Rank::Sixth
            };
            Square::from_coords(File::new(u32::from(f & 7)), rank)
        });
        let setup = Setup {
            board,
            promoted: Bitboard::EMPTY,
            pockets: None,
            turn,
            castling_rights: rights,
            ep_square,
            remaining_checks: None::<ByColor<_>>,
            halfmoves: 0,
            fullmoves: std::num::NonZeroU32::MIN,
        };
        setup
            .position::<Chess>(CastlingMode::Standard)
            .map_err(|e| PositionError::Illegal(e.to_string()))
    }

    /// Four-field FEN (placement, side, castling, en passant under the identity rule).
    #[doc(hidden)]
    pub fn fen(&self) -> String {
        let mut s = String::with_capacity(72);
        for rank in (0..8).rev() {
            let mut empty = 0;
            for file in 0..8 {
                let c = self.squares[rank * 8 + file];
                match code_piece(c) {
                    None => empty += 1,
                    Some(p) => {
                        if empty > 0 {
                            s.push(char::from(b'0' + empty));
                            empty = 0;
                        }
                        s.push(p.char());
                    }
                }
            }
            if empty > 0 {
                s.push(char::from(b'0' + empty));
            }
            if rank > 0 {
                s.push('/');
            }
        }
        s.push(' ');
        s.push(if self.black_to_move { 'b' } else { 'w' });
        s.push(' ');
        if self.castling == 0 {
            s.push('-');
        }
        for (bit, ch) in [
            (CASTLE_WK, 'K'),
            (CASTLE_WQ, 'Q'),
            (CASTLE_BK, 'k'),
            (CASTLE_BQ, 'q'),
        ] {
            if self.castling & bit != 0 {
                s.push(ch);
            }
        }
        s.push(' ');
        match self.ep_file {
            Some(f) => {
                s.push(char::from(b'a' + (f & 7)));
                s.push(if self.black_to_move { '3' } else { '6' });
            }
            None => s.push('-'),
        }
        s
    }
}

/// Parses a FEN (4 to 6 fields) into a legal position. Invalid castling rights are dropped, as
/// Polyglot and python-chess do.
pub fn parse_fen(fen: &str) -> Result<Chess, PositionError> {
    let bad = |reason: String| PositionError::BadFen {
        fen: fen.to_string(),
        reason,
    };
    let parsed = Fen::from_ascii(fen.trim().as_bytes()).map_err(|e| bad(e.to_string()))?;
    parsed
        .into_position::<Chess>(CastlingMode::Standard)
        .or_else(|e| e.ignore_invalid_castling_rights().map_err(Box::new))
        .or_else(|e| e.ignore_invalid_ep_square().map_err(Box::new))
        .map_err(|e| bad(e.to_string()))
}

/// A legal position from its bitboards as python-chess's `Board` keeps them: pieces by role
/// (pawns, knights, bishops, rooks, queens, kings), by colour, the side to move, the rooks that
/// keep castling rights and the en-passant square (set after every double step). Castling
/// rights that do not hold and an en-passant square that does not fit are dropped, as
/// [`parse_fen`] drops them; the Python package reads boards through it.
pub fn position_from_bitboards(
    roles: [u64; 6],
    white: u64,
    black: u64,
    white_to_move: bool,
    castling_rooks: u64,
    ep_square: Option<u8>,
) -> Result<Chess, PositionError> {
    let [pawn, knight, bishop, rook, queen, king] = roles.map(Bitboard);
    let board = Board::try_from_bitboards(
        ByRole {
            pawn,
            knight,
            bishop,
            rook,
            queen,
            king,
        },
        ByColor {
            white: Bitboard(white),
            black: Bitboard(black),
        },
    )
    .map_err(|_| {
        PositionError::Illegal("the pieces overlap or leave squares without a colour".into())
    })?;
    let ep_square = match ep_square {
        Some(sq) if sq < 64 => Some(Square::new(u32::from(sq))),
        Some(sq) => {
            return Err(PositionError::Illegal(format!(
                "en-passant square {sq} is not a square (0-63)"
            )));
        }
        None => None,
    };
    let setup = Setup {
        board,
        promoted: Bitboard::EMPTY,
        pockets: None,
        turn: if white_to_move {
            Color::White
        } else {
            Color::Black
        },
        castling_rights: Bitboard(castling_rooks),
        ep_square,
        remaining_checks: None::<ByColor<_>>,
        halfmoves: 0,
        fullmoves: std::num::NonZeroU32::MIN,
    };
    setup
        .position::<Chess>(CastlingMode::Standard)
        .or_else(|e| e.ignore_invalid_castling_rights().map_err(Box::new))
        .or_else(|e| e.ignore_invalid_ep_square().map_err(Box::new))
        .map_err(|e| PositionError::Illegal(e.to_string()))
}

/// Key of a shakmaty position as Polyglot defines it (docs/CONTRACT.md §2): the en-passant
/// file counts when a pawn of the side to move stands beside the pawn that just made a double
/// step, whether or not the capture is legal.
///
/// ```
/// use bookdb::chess::{parse_fen, polyglot_key};
/// assert_eq!(polyglot_key(&shakmaty::Chess::default()), 0x463b96181691fc9c);
/// // The capture c6 is illegal (it would expose the king), yet the file is hashed.
/// let pos = parse_fen("8/8/8/KPp4r/8/8/8/4k3 w - c6 0 2")?;
/// assert_eq!(polyglot_key(&pos), 0x3d665cc1f5da1059);
/// # Ok::<(), bookdb::error::PositionError>(())
/// ```
pub fn polyglot_key(pos: &Chess) -> u64 {
    pos.zobrist_hash::<Zobrist64>(EnPassantMode::PseudoLegal).0
}

/// A move in 16 bits: from square (bits 0–5), to square (6–11), promotion role (12–14:
/// 0 none, 2 knight, 3 bishop, 4 rook, 5 queen). Castling is the king's two-square move.
pub type MoveCode = u16;

pub fn encode_move(m: &Move) -> MoveCode {
    let code = |from: Square, to: Square, promotion: Option<Role>| {
        u16::from(from) | (u16::from(to) << 6) | (promotion.map_or(0, |r| r as u16) << 12)
    };
    match *m {
        Move::Normal {
            from,
            to,
            promotion,
            ..
        } => code(from, to, promotion),
        Move::EnPassant { from, to } => code(from, to, None),
        // UCI's standard castling notation: the king's two-square move.
        Move::Castle { king, rook } => {
            let side = CastlingSide::from_queen_side(rook < king);
            code(
                king,
                Square::from_coords(side.king_to_file(), king.rank()),
                None,
            )
        }
        // Drops never occur in standard chess.
        Move::Put { .. } => 0,
    }
}

/// Decodes a move code to UCI syntax without checking legality. `None` for invalid codes.
pub fn decode_move(code: MoveCode) -> Option<UciMove> {
    let from = Square::new(u32::from(code & 63));
    let to = Square::new(u32::from((code >> 6) & 63));
    let promotion = match code >> 12 {
        0 => None,
        2 => Some(Role::Knight),
        3 => Some(Role::Bishop),
        4 => Some(Role::Rook),
        5 => Some(Role::Queen),
        _ => return None,
    };
    if from == to {
        return None;
    }
    Some(UciMove::Normal {
        from,
        to,
        promotion,
    })
}

/// The UCI string of a move code (`e2e4`, `e7e8q`, `e1g1`); `????` for invalid codes.
pub fn move_uci(code: MoveCode) -> String {
    decode_move(code).map_or_else(|| "????".to_string(), |m| m.to_string())
}

/// The legal move a code denotes in a position, if any.
pub fn legal_move(pos: &Chess, code: MoveCode) -> Option<Move> {
    decode_move(code)?.to_move(pos).ok()
}

/// Parses UCI or SAN (`e2e4` or `e4`) in a position. Castling may be written with zeros
/// (`0-0`, `0-0-0`), as PGN readers accept it.
pub fn parse_move(pos: &Chess, text: &str) -> Result<Move, String> {
    if let Ok(u) = text.parse::<UciMove>()
        && let Ok(m) = u.to_move(pos)
    {
        return Ok(m);
    }
    let san: shakmaty::san::SanPlus = castling_with_letters(text)
        .parse()
        .map_err(|_| format!("cannot parse move {text:?}"))?;
    san.san
        .to_move(pos)
        .map_err(|e| format!("move {text:?} is not legal here: {e}"))
}

/// `0-0` and `0-0-0` (with a `+` or `#` after) written with letters, as SAN spells castling;
/// anything else unchanged.
fn castling_with_letters(text: &str) -> std::borrow::Cow<'_, str> {
    let suffix_ok = |rest: &str| matches!(rest, "" | "+" | "#");
    for (zeros, letters) in [("0-0-0", "O-O-O"), ("0-0", "O-O")] {
        if let Some(rest) = text.strip_prefix(zeros)
            && suffix_ok(rest)
        {
            return format!("{letters}{rest}").into();
        }
    }
    text.into()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chess::packed::to_hex;

    use crate::chess::tests_support::play;

    proptest::proptest! {
        /// The fast path equals the reference (state, key, pack) along random games, which
        /// reach castling changes, en-passant chances, promotions and captures.
        #[test]
        fn key_and_pack_equals_reference(choices in proptest::collection::vec(0usize..1000, 0..160)) {
            let mut pos = Chess::default();
            for c in choices {
                let state = PosState::from_chess(&pos);
                let (key, packed) = key_and_pack(&pos);
                proptest::prop_assert_eq!(key, state.key());
                proptest::prop_assert_eq!(packed.as_bytes(), &state.pack().0[..]);
                let moves = pos.legal_moves();
                if moves.is_empty() {
                    break;
                }
                pos.play_unchecked(moves[c % moves.len()]);
            }
        }
    }

    #[test]
    fn key_vectors() {
        let cases: [(&[&str], u64); 5] = [
            (&[], 0x463b96181691fc9c),
            (&["e4"], 0x823c9b50fd114196),
            (&["e4", "d5"], 0x0756b94461c50fb0),
            (&["e4", "d5", "e5", "f5"], 0x22a48b5a8e47ff78),
            (&["a4", "b5", "h4", "b4", "c4"], 0x3c8123ea7b067637),
        ];
        for (moves, key) in cases {
            let pos = play(moves);
            assert_eq!(polyglot_key(&pos), key, "{moves:?}");
            assert_eq!(PosState::from_chess(&pos).key(), key, "{moves:?}");
            assert_eq!(key_and_pack(&pos).0, key, "{moves:?}");
        }
        let pinned = parse_fen("8/8/8/KPp4r/8/8/8/4k3 w - c6 0 2").unwrap();
        assert_eq!(polyglot_key(&pinned), 0x3d665cc1f5da1059);
        assert_eq!(PosState::from_chess(&pinned).key(), 0x3d665cc1f5da1059);
        assert_eq!(key_and_pack(&pinned).0, 0x3d665cc1f5da1059);
    }

    #[test]
    fn pack_vectors() {
        let start = PosState::from_chess(&Chess::default());
        let (bytes, bits) = start.pack();
        assert_eq!(bits, 170);
        assert_eq!(
            to_hex(&bytes),
            "fe09eb6095a609ceb04eeec12fa609cb6095fe09e780"
        );
        let ep = PosState::from_chess(&play(&["e4", "d5", "e5", "f5"]));
        let (bytes, bits) = ep.pack();
        assert_eq!(bits, 173);
        assert_eq!(
            to_hex(&bytes),
            "fe09eb6095a609ceb10eee192fa621cb6095fe09e7e8"
        );
    }

    proptest::proptest! {
        /// `to_chess` accepts exactly the states that survive the full round trip through
        /// shakmaty (`from_chess` of its position equals the state): any bit-level state, legal
        /// or not, with or without castling and en-passant bits that fit the board.
        #[test]
        fn board_round_trips(s in crate::chess::tests_support::arb_state()) {
            let full = s
                .to_chess_unchecked()
                .ok()
                .filter(|p| PosState::from_chess(p) == s)
                .is_some();
            proptest::prop_assert_eq!(s.to_chess().is_ok(), full);
        }

        /// The same along real games (random states are rarely legal chess).
        #[test]
        fn board_round_trips_along_games(choices in proptest::collection::vec(0usize..1000, 0..120), castling in 0u8..16, ep in proptest::option::of(0u8..8)) {
            use shakmaty::Position;
            let mut pos = Chess::default();
            for c in choices {
                let moves = pos.legal_moves();
                if moves.is_empty() {
                    break;
                }
                pos.play_unchecked(moves[c % moves.len()]);
                let s = PosState::from_chess(&pos);
                proptest::prop_assert!(s.to_chess().is_ok());
                let t = PosState { castling, ep_file: ep, ..s };
                let full = t
                    .to_chess_unchecked()
                    .ok()
                    .filter(|p| PosState::from_chess(p) == t)
                    .is_some();
                proptest::prop_assert_eq!(t.to_chess().is_ok(), full);
            }
        }
    }

    #[test]
    fn fen_and_round_trip() {
        let pos = play(&["e4", "d5", "e5", "f5"]);
        let s = PosState::from_chess(&pos);
        assert_eq!(
            s.fen(),
            "rnbqkbnr/ppp1p1pp/8/3pPp2/8/8/PPPP1PPP/RNBQKBNR w KQkq f6"
        );
        let back = s.to_chess().unwrap();
        assert_eq!(PosState::from_chess(&back), s);
        // After 1.e4 the ep square does not count: no black pawn beside e4.
        assert_eq!(
            PosState::from_chess(&play(&["e4"])).fen(),
            "rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq -"
        );
    }

    #[test]
    fn move_codes() {
        let pos = Chess::default();
        for m in pos.legal_moves() {
            let code = encode_move(&m);
            assert_eq!(legal_move(&pos, code), Some(m));
        }
        let castle = play(&["e4", "e5", "Nf3", "Nc6", "Bc4", "Nf6"]);
        let m = parse_move(&castle, "O-O").unwrap();
        assert_eq!(move_uci(encode_move(&m)), "e1g1");
        // Castling with zeros, as PGN accepts it.
        for text in ["0-0", "0-0+"] {
            let m = parse_move(&castle, text).unwrap();
            assert_eq!(move_uci(encode_move(&m)), "e1g1", "{text}");
        }
        let long = play(&["d4", "d5", "Nc3", "Nc6", "Bf4", "Bf5", "Qd2", "Qd7"]);
        let m = parse_move(&long, "0-0-0").unwrap();
        assert_eq!(move_uci(encode_move(&m)), "e1c1");
        assert!(parse_move(&castle, "0-0-").is_err());
        assert!(parse_move(&castle, "0-0x").is_err());
        assert_eq!(decode_move(0), None);
        assert_eq!(decode_move(0x7000 | 1 | (9 << 6)), None);
    }
}

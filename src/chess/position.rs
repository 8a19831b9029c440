//! Bridges between shakmaty positions and the book's position identity: [`PosState`], the
//! Polyglot key, four-field FENs and 16-bit move codes.

use shakmaty::fen::Fen;
use shakmaty::uci::UciMove;
use shakmaty::zobrist::{Zobrist64, ZobristValue};
use shakmaty::{
    Bitboard, Board, ByColor, CastlingMode, CastlingSide, Chess, Color, EnPassantMode, File, Move,
    Piece, Position, Rank, Role, Setup, Square,
};

use super::packed::{CASTLE_BK, CASTLE_BQ, CASTLE_WK, CASTLE_WQ, EMPTY, PieceCode, PosState};
use crate::error::PositionError;

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

impl PosState {
    /// The identity of a chess position (DESIGN.md §2): placement, side to move, castling rights,
    /// en-passant file only if a pawn of the side to move stands beside the double-stepped pawn.
    pub fn from_chess(pos: &Chess) -> PosState {
        let mut squares = [EMPTY; 64];
        for (sq, piece) in pos.board().iter() {
            squares[usize::from(sq)] = piece_code(piece);
        }
        let c = pos.castles();
        let mut castling = 0;
        if c.has(Color::White, CastlingSide::KingSide) {
            castling |= CASTLE_WK;
        }
        if c.has(Color::White, CastlingSide::QueenSide) {
            castling |= CASTLE_WQ;
        }
        if c.has(Color::Black, CastlingSide::KingSide) {
            castling |= CASTLE_BK;
        }
        if c.has(Color::Black, CastlingSide::QueenSide) {
            castling |= CASTLE_BQ;
        }
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
        let mut h = Zobrist64(0);
        for (i, &c) in self.squares.iter().enumerate() {
            if let Some(p) = code_piece(c) {
                h ^= Zobrist64::zobrist_for_piece(Square::new(i as u32), p);
            }
        }
        for (bit, color, side) in [
            (CASTLE_WK, Color::White, CastlingSide::KingSide),
            (CASTLE_WQ, Color::White, CastlingSide::QueenSide),
            (CASTLE_BK, Color::Black, CastlingSide::KingSide),
            (CASTLE_BQ, Color::Black, CastlingSide::QueenSide),
        ] {
            if self.castling & bit != 0 {
                h ^= Zobrist64::zobrist_for_castling_right(color, side);
            }
        }
        if let Some(f) = self.ep_file {
            h ^= Zobrist64::zobrist_for_en_passant_file(File::new(u32::from(f & 7)));
        }
        if !self.black_to_move {
            h ^= Zobrist64::zobrist_for_white_turn();
        }
        h.0
    }

    /// Rebuilds a legal shakmaty position (halfmove clock 0, fullmove 1), checking that the
    /// state survives the round trip exactly.
    pub fn to_chess(&self) -> Result<Chess, PositionError> {
        let pos = self.to_chess_unchecked()?;
        // The identity must survive the round trip exactly (e.g. an ep flag without a pawn
        // beside it would be dropped by shakmaty).
        if PosState::from_chess(&pos) != *self {
            return Err(PositionError::Illegal(
                "castling or en-passant bits inconsistent with the board".into(),
            ));
        }
        Ok(pos)
    }

    /// Like [`PosState::to_chess`] without the round-trip check (for states known to come
    /// from legal positions, e.g. after a checksum-verified read).
    pub fn to_chess_unchecked(&self) -> Result<Chess, PositionError> {
        let mut board = Board::empty();
        for (i, &c) in self.squares.iter().enumerate() {
            if c > 12 {
                return Err(PositionError::Illegal(format!("bad piece code {c}")));
            }
            if let Some(p) = code_piece(c) {
                board.set_piece_at(Square::new(i as u32), p);
            }
        }
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

/// Key of a shakmaty position as Polyglot defines it.
pub fn polyglot_key(pos: &Chess) -> u64 {
    pos.zobrist_hash::<Zobrist64>(EnPassantMode::PseudoLegal).0
}

/// A move in 16 bits: from square (bits 0–5), to square (6–11), promotion role (12–14:
/// 0 none, 2 knight, 3 bishop, 4 rook, 5 queen). Castling is the king's two-square move.
pub type MoveCode = u16;

pub fn encode_move(m: &Move) -> MoveCode {
    match m.to_uci(CastlingMode::Standard) {
        UciMove::Normal {
            from,
            to,
            promotion,
        } => u16::from(from) | (u16::from(to) << 6) | (promotion.map_or(0, |r| r as u16) << 12),
        // Drops and null moves never occur in standard chess.
        _ => 0,
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

/// Parses UCI or SAN (`e2e4` or `e4`) in a position.
pub fn parse_move(pos: &Chess, text: &str) -> Result<Move, String> {
    if let Ok(u) = text.parse::<UciMove>()
        && let Ok(m) = u.to_move(pos)
    {
        return Ok(m);
    }
    let san: shakmaty::san::SanPlus = text
        .parse()
        .map_err(|_| format!("cannot parse move {text:?}"))?;
    san.san
        .to_move(pos)
        .map_err(|e| format!("move {text:?} is not legal here: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chess::packed::to_hex;

    use crate::chess::tests_support::play;

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
        }
        let pinned = parse_fen("8/8/8/KPp4r/8/8/8/4k3 w - c6 0 2").unwrap();
        assert_eq!(polyglot_key(&pinned), 0x3d665cc1f5da1059);
        assert_eq!(PosState::from_chess(&pinned).key(), 0x3d665cc1f5da1059);
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
        assert_eq!(decode_move(0), None);
        assert_eq!(decode_move(0x7000 | 1 | (9 << 6)), None);
    }
}

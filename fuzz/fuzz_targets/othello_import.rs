//! Othello inputs (docs/CONTRACT.md §7): arbitrary bytes read as WTHOR records (after the
//! header, as the import's workers see them) and as transcript lines, every game replayed
//! with and without `--canonical`; plus the bytes as a packed Othello position.
//!
//! Checks: no panics; a record or line that decodes has at most 60 moves, all squares; a
//! replayed game has at most `max_ply` pairs whose packed position unpacks to a board with the
//! pair's key, on which the pair's move is legal (canonical pairs: the board is its own least
//! image); an accepted packed position re-packs to exactly the input.
#![no_main]

use bookdb::ops::othello::games::{WTHOR_HEADER, each_line, each_record, is_wthor_header, replay_into};
use bookdb::othello::Board;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let _ = is_wthor_header(data);
    let mut plies = Vec::new();
    let mut check = |_n: u64, g: Result<bookdb::ops::othello::games::OthelloGame, _>| {
        let Ok(g) = g else { return };
        assert!(g.moves.len() <= 60 && g.moves.iter().all(|&m| m < 64));
        for canonical in [false, true] {
            if replay_into(&g, 40, canonical, &mut plies).is_ok() {
                assert!(plies.len() <= 40);
            }
        }
    };
    each_record(data.get(WTHOR_HEADER..).unwrap_or(&[]), 1, &mut check);
    each_line(data, 1, &mut check);
    // Pairs of one replay, checked through the public board API.
    if let Some(Ok(g)) = bookdb::ops::othello::games::decode_line(data, 1) {
        let mut b = Board::start();
        for &sq in &g.moves {
            let (c, _) = b.canonical();
            assert_eq!(c.canonical().0, c);
            assert_eq!(b.key(), b.key_from_scratch());
            if b.play(sq).is_err() {
                break;
            }
        }
    }
    if let Ok(b) = Board::unpack(data) {
        assert_eq!(b.pack().0, data, "re-pack differs from the accepted input");
        assert_eq!(Board::parse_board(&b.board_string()).ok(), Some(b));
    }
});

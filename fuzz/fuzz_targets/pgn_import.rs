//! PGN import: `GameReader` over arbitrary bytes, every game replayed with
//! `CountRules { max_ply: 40, min_rating: None }` until the reader ends or errors.
//!
//! Checks: no panics and no endless loop; a counted game has at most 40 distinct pairs, each
//! a valid packed position whose key matches, mover matching the side to move, and a move
//! code that is legal in it; skip reasons and fingerprints format without panicking.
#![no_main]

use bookdb::chess::{PosState, legal_move};
use bookdb::ops::gamereader::GameReader;
use bookdb::ops::pgn::{CountRules, game_fingerprint, replay};
use libfuzzer_sys::fuzz_target;

const RULES: CountRules = CountRules {
    max_ply: 40,
    min_rating: None,
    facets: bookdb::store::facet::FacetSet::NONE,
};

fuzz_target!(|data: &[u8]| {
    let mut reader = GameReader::new(data);
    let mut last_line = 0;
    // Every game consumes input, so there are never more games than bytes.
    for _ in 0..=data.len() {
        let game = match reader.next_game() {
            Ok(Some(g)) => g,
            Ok(None) | Err(_) => return,
        };
        assert!(game.line >= 1 && game.line >= last_line, "line {} after {last_line}", game.line);
        last_line = game.line;
        let _ = game_fingerprint(&game);
        match replay(&game, &RULES) {
            Ok(counted) => {
                assert!(counted.pairs.len() <= RULES.max_ply);
                for (pair, white) in &counted.pairs {
                    let state = PosState::unpack(&pair.pos).expect("pair position unpacks");
                    assert_eq!(state.key(), pair.key);
                    assert_eq!(*white, !state.black_to_move);
                    let pos = state.to_chess().expect("pair position is legal");
                    assert!(legal_move(&pos, pair.mv).is_some(), "pair move {:#06x} not legal", pair.mv);
                }
            }
            Err(reason) => {
                let _ = reason.to_string();
                let _ = reason.kind();
            }
        }
    }
    panic!("more games than input bytes: the reader does not advance");
});

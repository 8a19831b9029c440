//! The server's query-string parsers (`src/server/params.rs`) and the one position-query path
//! (`ops::position`: chess lines and Othello boards) on arbitrary query strings.
//!
//! Checks: no panics; what parses respects the limits (`moves` at most `MAX_LISTED_MOVES`, a
//! line at most `MAX_LINE_MOVES` moves); a line that resolves has one position per move of
//! `play` plus the start, and no more positions than `play` has tokens.
#![no_main]

use bookdb::ops::game::Game;
use bookdb::ops::position::{MAX_LINE_MOVES, chess_line, othello_board};
use bookdb::server::params::{self, MAX_LISTED_MOVES};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(query) = std::str::from_utf8(data) else {
        return;
    };
    if let Ok(p) = params::position(query) {
        let _ = chess_line(&p.query());
        let _ = othello_board(&p.query(), Game::Othello { canonical: false });
    }
    let _ = params::import(query);
    let Ok(p) = params::explorer(query) else {
        return;
    };
    assert!(p.moves <= MAX_LISTED_MOVES);
    if let Ok(line) = chess_line(&p.query()) {
        let tokens = p
            .play
            .as_deref()
            .unwrap_or("")
            .split(|c: char| c.is_whitespace() || c == ',')
            .filter(|m| !m.is_empty())
            .count();
        assert!(!line.is_empty() && line.len() <= tokens + 1);
        assert!(line.len() <= MAX_LINE_MOVES + 1);
    }
});

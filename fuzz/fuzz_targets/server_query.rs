//! The server's query-string parsers (`src/server/params.rs`) and the explorer's line
//! resolution (`ops::explorer::resolve_line`) on arbitrary query strings.
//!
//! Checks: no panics; what parses respects the limits (`moves` at most `MAX_LISTED_MOVES`);
//! a line that resolves has one position per move of `play` plus the start.
#![no_main]

use bookdb::ops::explorer::resolve_line;
use bookdb::server::params::{self, MAX_LISTED_MOVES};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let Ok(query) = std::str::from_utf8(data) else {
        return;
    };
    let _ = params::position(query);
    let _ = params::import(query);
    let Ok(p) = params::explorer(query) else {
        return;
    };
    assert!(p.moves <= MAX_LISTED_MOVES);
    if let Ok(line) = resolve_line(p.fen.as_deref(), p.play.as_deref()) {
        let moves = p
            .play
            .as_deref()
            .unwrap_or("")
            .split(',')
            .filter(|m| !m.trim().is_empty())
            .count();
        assert_eq!(line.len(), moves + 1);
    }
});

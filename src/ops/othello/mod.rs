//! Othello books (docs/CONTRACT.md §7): reading WTHOR files and transcripts into games and
//! counting them ([`games`]), and the `probe` / `dump` answers of an Othello book ([`query`]).
//! The import pipeline (`ops::import`) runs them as it runs PGN.

pub mod games;
pub mod query;

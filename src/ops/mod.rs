//! Book operations on top of the store: import, probe, dump, stats, verify, the explorer answer.

pub mod analyse;
pub mod evals;
pub mod explorer;
pub mod facets;
pub mod game;
pub mod gameident;
pub mod gamereader;
pub mod gamerec;
pub mod games;
pub mod import;
#[doc(hidden)]
pub mod input;
pub(crate) mod lineends;
pub(crate) mod movetext;
pub mod othello;
pub mod pgn;
pub mod polyglot;
pub mod position;
pub mod progress;
pub mod query;
pub mod reader;
pub mod rewrite;
pub mod rewrite_budget;
pub(crate) mod shared_games;
pub mod stats;
pub mod topgames;
pub mod tt;
pub mod verify;

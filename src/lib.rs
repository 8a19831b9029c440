//! bookdb: a persistent chess opening-book database.
//!
//! Layers, bottom up: [`chess`] (packed positions, Polyglot keys, moves) → [`store`] (value
//! blocks and the redb book file, independent of chess) → [`ops`] (import, probe, dump, stats,
//! verify) → the `bookdb` binary.

pub mod chess;
pub mod error;
pub mod ops;
pub mod store;

pub use error::{Error, Result};

use std::sync::Arc;

/// The store codec for chess books.
pub fn chess_codec() -> Arc<dyn store::PositionCodec> {
    Arc::new(chess::ChessCodec)
}

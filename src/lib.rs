//! bookdb: a persistent opening-book database for board games — chess, and Othello on the
//! same store.
//!
//! Layers, bottom up (docs/ARCHITECTURE.md): [`store`] (the game-independent storage engine:
//! value blocks, book files, the live book of a base and immutable delta segments, sorted
//! runs; it defines the codec interface) ← [`chess`] and [`othello`] (the game codecs: packed
//! positions, Zobrist keys, moves, position models; independent siblings) ← [`ops`] (import,
//! the position query, probe, dump, stats, verify, merge, compact, Polyglot interop, the
//! explorer answer) ← [`server`] (`bookdb serve`) and the `bookdb` binary (`src/cli/`, one
//! file per command). [`error`] holds the errors of the operations, which wrap the store's and
//! the game layers' own.

// What holds today, locked in: no `unwrap`/`expect` outside tests (errors are returned, not panicked
// on); every `unsafe` block carries a `// SAFETY:` note saying why it is sound.
#![deny(clippy::unwrap_used, clippy::expect_used)]
#![deny(clippy::undocumented_unsafe_blocks)]
#![deny(unsafe_op_in_unsafe_fn)]

pub mod chess;
pub mod error;
pub mod ops;
pub mod othello;
pub mod server;
pub mod store;

pub use error::{Error, Result};
/// Persistent transposition tables for game searches (docs/FORMAT.md §14).
pub use store::tt;

use std::sync::Arc;

/// The store codec for chess books.
pub fn chess_codec() -> Arc<dyn store::PositionCodec> {
    Arc::new(chess::ChessCodec)
}

/// The store codec for Othello books; `canonical` for books of least symmetric images.
pub fn othello_codec(canonical: bool) -> Arc<dyn store::PositionCodec> {
    Arc::new(othello::OthelloCodec { canonical })
}

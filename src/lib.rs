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

/// `eprintln!` that never panics: a line on stderr, or nothing when stderr is gone (its reader
/// closed it, `2>&1 | head -1`, or it is a full disk). `eprintln!` panics then, and a panic
/// printing the panic aborts (exit 134): a command's outcome (its exit code, the state it leaves)
/// must not depend on whether anyone reads its messages. Every message of the library and the
/// binary goes through it (tests may use `eprintln!`).
#[macro_export]
macro_rules! stderr_line {
    ($($arg:tt)*) => {{
        use std::io::Write as _;
        let _ = writeln!(std::io::stderr(), $($arg)*);
    }};
}

pub mod chess;
pub mod error;
pub mod ops;
pub mod othello;
pub mod server;
pub mod store;
pub mod tt;

pub use error::{Error, Result};

use std::sync::Arc;

/// The store codec for chess books.
pub fn chess_codec() -> Arc<dyn store::PositionCodec> {
    Arc::new(chess::ChessCodec)
}

/// The store codec for Othello books; `canonical` for books of least symmetric images.
pub fn othello_codec(canonical: bool) -> Arc<dyn store::PositionCodec> {
    Arc::new(othello::OthelloCodec { canonical })
}

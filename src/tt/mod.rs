//! Persistent transposition tables for game searches: the public face of
//! [`crate::store::tt`] (docs/FORMAT.md §14).
//!
//! A search stores what it computed per position and probes it back; the table keeps it in
//! memory and publishes it as immutable files, so the next run (or another process) answers
//! from it. Every position is kept by its key and its exact bytes: a key collision is counted
//! and never answers for another position.
//!
//! ```
//! use bookdb::othello::Board;
//! use bookdb::tt::{BestMove, Bound, Entry, Table, TableOptions, TtPosition};
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let dir = tempfile::tempdir()?;
//! let path = dir.path().join("solver.tt");
//! let mut table = Table::open(&path, Board::GAME, &TableOptions::default())?;
//! let generation = table.new_search();
//! let start = Board::start();
//! let entry = Entry {
//!     depth: 60,
//!     value: 0,
//!     bound: Bound::Exact,
//!     best_move: BestMove::Code(37), // f5
//!     generation,
//! };
//! table.store(&start, entry.clone())?;
//! table.close()?; // published: survives the process
//!
//! let mut again = Table::open_reader(&path, Board::GAME, &TableOptions::default())?;
//! assert_eq!(again.probe(&start)?, Some(entry));
//! assert_eq!(again.stats().hits, 1);
//! # Ok(())
//! # }
//! ```

pub use crate::store::tt::*;

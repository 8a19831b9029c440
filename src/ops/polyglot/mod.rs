//! Polyglot interop: `bookdb export --format polyglot|jsonl` and `bookdb import-polyglot`.
//!
//! # The `.bin` format
//!
//! A Polyglot book is a sequence of 16-byte big-endian entries `(key u64, move u16, weight u16,
//! learn u32)` sorted by key. The move is `to file` (bits 0–2), `to rank` (3–5), `from file`
//! (6–8), `from rank` (9–11), promotion (12–14: 1 knight, 2 bishop, 3 rook, 4 queen), i.e. the
//! to-square index in bits 0–5 and the from-square index in bits 6–11 (a1 = 0 … h8 = 63).
//! Castling is written king-takes-rook (`e1h1`, `e1a1`, `e8h8`, `e8a8`).
//!
//! # Export (weights = `polyglot make-book`'s rule)
//!
//! Read from PolyGlot 2.0.4 (Debian `polyglot_2.0.4+git20210322`, `book_make.c`):
//! - `book_insert()`: per (key, move) it keeps `n` (games) and `sum += result + 1`, where
//!   `result` is +1 if the mover won, −1 if he lost and 0 for **any other** `Result` tag: `1/2-1/2`
//!   and also `*` or a missing tag (pgn.c defaults `result` to `"*"`). So for the side to move
//!   `sum = 2·wins + draws + unknown`. We use exactly that (`unknown` counts like a draw).
//! - When an entry's `n` reaches `COUNT_MAX` = 16384, `halve_stats()` halves `n` and `sum` of
//!   every entry of that key, rounding up: `(x + 1) / 2`. Polyglot does this while counting, so
//!   its result depends on the order of the games; from aggregate counts we halve every move of
//!   the key until the largest `n` is below 16384 (same invariant, same ratios up to rounding;
//!   identical whenever no move reaches 16384 games). The weight is `sum` (< 32768, fits 16 bits).
//! - `keep_entry()`: drop if `n < min_game`; drop if `sum == 0` (every game lost by the mover);
//!   drop if `sum / n / 2 < min_score / 100` (doubles, as polyglot computes it); `-only-white`
//!   drops entries with black to move and `-only-black` those with white to move; drop if the
//!   written score is 0. `-uniform` writes weight 1 for every kept entry. `learn` is 0.
//! - `book_save()` sorts by key, then by weight, highest first (`key_compare`); ties among equal
//!   weights are written here by ascending move code (polyglot's `qsort` leaves them unordered).
//!
//! Polyglot counts a (position, move) every time it occurs in a game, while bookdb counts it at
//! most once per game (docs/CONTRACT.md §2), so a game that repeats a position within `max_ply` gives
//! polyglot a higher `n`/`sum` for the repeated pairs. The (key, move) sets are the same.
//!
//! Moves imported from a Polyglot book (`MoveRec::extra = Some`) with no game counts are
//! written with their stored weight and learn, unchanged: `--min-games`/`--min-score` do not
//! apply to them (they have no games), `--only-white`/`--only-black` apply when the position is
//! known, `--uniform` writes 1 for a non-zero stored weight. A move with game counts is weighted
//! by its counts (its stored `learn` is kept). Key-only entries (no position) are written as
//! stored. Moves of all entries with one key (a key collision) are combined per Polyglot move,
//! as polyglot's own hash table does.
//!
//! # Import
//!
//! `import-polyglot` rejects files that are not Polyglot books: shorter than one entry, text or
//! HTML, keys not (mostly) ascending, or many impossible move codes (from = to, promotion code
//! above 4). Real defects are tolerated: a trailing partial entry is ignored (warning), entries
//! with key `ffffffffffffffff` (Rodent's end sentinel) and impossible move codes are skipped,
//! out-of-order entries are sorted, duplicate (key, move) entries are merged keeping the highest
//! weight and the highest learn value (a book lists a move once; a duplicate is a defect, not a
//! second opinion), weight-0 entries are kept.
//!
//! Positions are reconstructed by a breadth-first walk from the start position and from every
//! position of the target book (and of the files imported before in the same command) whose key
//! is in the file, following the file's own moves: a move is placed at a position if it is
//! legal there (castling given as king-takes-rook or as the king's two-square move `e1g1`), and
//! the child position is visited if its key is in the file. If the child's key is not in the
//! file, every legal reply is tried once and the positions after them whose keys are in the file
//! are visited: one bridging ply, so that books holding one side's moves only (repertoire books,
//! per-player books, `-only-white` books) and books without the start position are placed too.
//! A position is only ever placed under a key the file lists (a 64-bit match). Placed moves are
//! stored with the book's move code (castling as `e1g1`), the entry's weight and learn as the
//! move's extra (`MoveRec::extra = Some(MoveExtra { weight, learn })`) and zero counts.
//! Moves that are legal in no reached position of their key, and entries whose key is never
//! reached, go into a key-only entry of that key with the raw Polyglot squares: from, to and
//! promotion are translated to the book's code layout without interpretation (castling stays
//! king-takes-rook, `e1h1`, since without the position a rook move `e1h1` cannot be told from
//! castling), so export writes them back bit for bit.
//!
//! The new entries are merged with the book's content (if the book exists) and the file is
//! replaced atomically (under the book's writer lock, keeping its games count and `imports`
//! records). Each imported file is recorded in the `imports` table as `polyglot:<xxh3-128 of its
//! bytes>`; a file the book already lists is skipped, as `bookdb import` does with PGN, unless
//! `--force`. Merging follows `polyglot merge-book`: weights of the same move from different
//! files (or a forced re-import) add up, saturating at 65535; learn keeps the larger value.

mod bin;
mod eval_weights;
mod export;
mod import;
mod weigh;

pub use bin::{ENTRY_BYTES, ParsedBin, PgEntry, SENTINEL_KEY, parse_bin, read_bin};
pub use export::{ExportFormat, ExportSummary, export, export_jsonl, export_polyglot};
pub use import::{
    FileSummary, IMPORT_KEY_PREFIX, PolyglotImportOptions, PolyglotImportSummary, import_polyglot,
};
pub use weigh::{
    COUNT_MAX, DropReason, MakeBookCounts, OnlySide, PolyglotExportOptions, WeighedMove,
    halve_to_fit, make_book_weight, weigh_key,
};

use std::collections::BTreeMap;

/// " (reason: n, ...)" for the non-zero counts of a summary's reasons, or nothing.
fn fmt_reasons(m: &BTreeMap<String, u64>) -> String {
    if m.values().all(|&v| v == 0) {
        return String::new();
    }
    let parts: Vec<String> = m
        .iter()
        .filter(|(_, v)| **v > 0)
        .map(|(k, v)| format!("{k}: {v}"))
        .collect();
    format!(" ({})", parts.join(", "))
}

//! `bookdb tt`: what a transposition table (docs/FORMAT.md §14) holds, its integrity check and
//! its compaction, for the operator of a table a program fills.

use std::path::Path;

use serde::Serialize;

use crate::error::Result;
use crate::store::LockWait;
use crate::store::tt::{Table, TableOptions};

/// What a table holds (and, after `verify` or `compact`, what was checked or done).
#[derive(Clone, Debug, Serialize)]
pub struct TableReport {
    pub table: String,
    pub game: String,
    pub key_bits: u8,
    pub hash: String,
    /// Published files (a base and delta segments).
    pub files: u64,
    /// Entries over the files (a position in several files counts in each).
    pub entries: u64,
    /// Distinct positions (only counted by `verify` and `compact`, which read every entry).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub positions: Option<u64>,
    /// Bytes of the files.
    pub bytes: u64,
    /// `verify`: every file checked; `compact`: files merged into one.
    pub action: &'static str,
}

impl std::fmt::Display for TableReport {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        writeln!(f, "table      {}", self.table)?;
        writeln!(
            f,
            "game       {} ({} key bits, hash {})",
            self.game, self.key_bits, self.hash
        )?;
        writeln!(f, "files      {}", self.files)?;
        writeln!(f, "entries    {}", self.entries)?;
        if let Some(p) = self.positions {
            writeln!(f, "positions  {p}")?;
        }
        writeln!(f, "bytes      {}", self.bytes)?;
        write!(f, "{}", self.action)
    }
}

fn report(table: &Table, positions: Option<u64>, action: &'static str) -> TableReport {
    let st = table.stats();
    let bytes = table.file_bytes();
    let k = table.kind();
    TableReport {
        table: table.path().display().to_string(),
        game: k.game.clone(),
        key_bits: k.key_bits,
        hash: k.hash.name().into(),
        files: st.files,
        entries: st.file_entries,
        positions,
        bytes,
        action,
    }
}

/// What the table at `path` holds (its meta tables only).
pub fn stats(path: &Path) -> Result<TableReport> {
    let t = Table::open_existing(path, &TableOptions::default(), false)?;
    Ok(report(&t, None, "stats from the files' meta tables"))
}

/// Reads and checks every entry of every file of the table at `path`.
pub fn verify(path: &Path) -> Result<TableReport> {
    let t = Table::open_existing(path, &TableOptions::default(), false)?;
    let kind = t.kind().clone();
    // Each entry's key, again from its exact bytes (a table of opaque states: the table's
    // hash, which the store knows; chess and Othello: their positions' keys).
    let chess = |b: &[u8]| {
        crate::chess::PosState::unpack(b)
            .ok()
            .map(|s| kind.mask(s.key()))
    };
    let othello = |b: &[u8]| -> Option<u64> {
        let b: &[u8; 17] = b.try_into().ok()?;
        let disc = |r: &[u8]| u64::from_le_bytes(r.try_into().unwrap_or_default());
        let (black, white) = (disc(&b[..8]), disc(&b[8..16]));
        (black & white == 0 && b[16] <= 1)
            .then(|| kind.mask(crate::othello::Board::from_parts(black, white, b[16] == 1).key()))
    };
    let key_of: Option<&crate::store::tt::KeyOf<'_>> = match kind.game.as_str() {
        "chess" => Some(&chess),
        "othello" => Some(&othello),
        _ => None,
    };
    let check = t.verify_with(key_of)?;
    Ok(report(
        &t,
        Some(check.positions),
        "ok: every entry's checksum and coding, its key against its position, the order, \
         the key filters and the counts",
    ))
}

/// Merges every file of the table at `path` into a new base (under its writer lock).
pub fn compact(path: &Path, lock_wait: LockWait) -> Result<TableReport> {
    let opts = TableOptions {
        lock_wait,
        ..TableOptions::default()
    };
    let mut t = Table::open_existing(path, &opts, true)?;
    t.compact()?;
    let positions = t.stats().file_entries;
    Ok(report(&t, Some(positions), "compacted into one base file"))
}

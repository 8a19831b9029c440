//! Games counted in more than one book: a merge-join of the books' game fingerprint tables
//! (`games`, docs/FORMAT.md), which `merge` reports because it adds the books' counts.

use super::*;
use crate::store::error::Result;

/// Games whose fingerprint several books record.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SharedFingerprints {
    /// Fingerprints recorded in at least two books.
    pub games: u64,
    /// Their copies beyond the first: per fingerprint, the books recording it less one.
    pub copies: u64,
}

/// The game fingerprints recorded in at least two of `books` (each book's files together).
/// Streams every table once in key order: time linear in the fingerprints, memory one row per
/// file. Books that record no fingerprints (counts-only books imported without `--dedupe`)
/// share none by this count, whatever games they counted.
pub fn shared_game_fingerprints(books: &[&Book]) -> Result<SharedFingerprints> {
    let mut tables = Vec::new();
    for (i, b) in books.iter().enumerate() {
        for f in b.files() {
            if let Some(t) = f.games_table()? {
                tables.push((i, t));
            }
        }
    }
    let mut heads = Vec::with_capacity(tables.len());
    for (book, t) in &tables {
        let mut rows = t.range::<u128>(..)?;
        let head = rows.next().transpose()?.map(|(k, _)| k.value());
        heads.push((*book, rows, head));
    }
    let mut shared = SharedFingerprints::default();
    let mut holders: Vec<usize> = Vec::new();
    while let Some(v) = heads.iter().filter_map(|h| h.2).min() {
        holders.clear();
        for (book, rows, head) in heads.iter_mut() {
            if *head == Some(v) {
                if !holders.contains(book) {
                    holders.push(*book);
                }
                *head = rows.next().transpose()?.map(|(k, _)| k.value());
            }
        }
        if holders.len() > 1 {
            shared.games += 1;
            shared.copies += holders.len() as u64 - 1;
        }
    }
    Ok(shared)
}

//! Games counted in more than one book: a merge-join of the books' game fingerprint tables
//! (`games`, docs/FORMAT.md), which `merge` reports because it adds the books' counts.

use super::*;
use crate::store::error::Result;

/// How many game fingerprints are recorded in at least two of `books` (each book's files
/// together). Streams every table once in key order: time linear in the fingerprints, memory
/// one row per file. Books that record no fingerprints (counts-only books imported without
/// `--dedupe`) share none by this count, whatever games they counted.
pub fn shared_game_fingerprints(books: &[&Book]) -> Result<u64> {
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
    let mut shared = 0;
    while let Some(v) = heads.iter().filter_map(|h| h.2).min() {
        let mut first_book = None;
        let mut in_two = false;
        for (book, rows, head) in heads.iter_mut() {
            if *head == Some(v) {
                match first_book {
                    None => first_book = Some(*book),
                    Some(b) if b != *book => in_two = true,
                    Some(_) => {}
                }
                *head = rows.next().transpose()?.map(|(k, _)| k.value());
            }
        }
        shared += u64::from(in_two);
    }
    Ok(shared)
}

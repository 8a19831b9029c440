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
    /// Of those, the copies no game store holds, which a merge cannot take out: per
    /// fingerprint, the books recording it without storing games in the file that records it
    /// (`--no-games --dedupe`), less one if no book stores it.
    pub unstored: u64,
    /// The others (`copies - unstored`): per fingerprint, the books recording it in a file
    /// that stores games, less one. A merge takes at least these out, unless records of one
    /// game escape it (stored under two dates).
    pub stored: u64,
}

/// The game fingerprints recorded in at least two of `books` (each book's files together).
/// Streams every table once in key order: time linear in the fingerprints, memory one row per
/// file. Books that record no fingerprints (counts-only books imported without `--dedupe`)
/// share none by this count, whatever games they counted.
pub fn shared_game_fingerprints(books: &[&Book]) -> Result<SharedFingerprints> {
    let mut tables = Vec::new();
    for (i, b) in books.iter().enumerate() {
        for f in b.files() {
            if let Some(t) = f.games_table().map_err(|e| e.in_file(&f.path))? {
                tables.push((i, f.games_stored() > 0, t, f.path.as_path()));
            }
        }
    }
    let mut heads = Vec::with_capacity(tables.len());
    for (book, stores, t, path) in &tables {
        // A damaged page can make redb panic while it walks the table: an error naming the
        // file, as every read of a book gives (`shield`).
        let mut rows = shield("reading game fingerprints", || Ok(t.range::<u128>(..)?))
            .map_err(|e| e.in_file(path))?;
        let head = next_fingerprint(&mut rows, path)?;
        heads.push((*book, *stores, rows, head, *path));
    }
    let mut shared = SharedFingerprints::default();
    // The books recording the fingerprint, and whether one of their files recording it
    // stores games.
    let mut holders: Vec<(usize, bool)> = Vec::new();
    while let Some(v) = heads.iter().filter_map(|h| h.3).min() {
        holders.clear();
        for (book, stores, rows, head, path) in heads.iter_mut() {
            if *head == Some(v) {
                match holders.iter_mut().find(|h| h.0 == *book) {
                    Some(h) => h.1 |= *stores,
                    None => holders.push((*book, *stores)),
                }
                *head = next_fingerprint(rows, path)?;
            }
        }
        if holders.len() > 1 {
            let stored = holders.iter().filter(|h| h.1).count().max(1);
            shared.games += 1;
            shared.copies += holders.len() as u64 - 1;
            shared.unstored += (holders.len() - stored) as u64;
            shared.stored += stored as u64 - 1;
        }
    }
    Ok(shared)
}

/// The next fingerprint of a `games` table walk, redb's panics on damaged pages caught.
fn next_fingerprint(
    rows: &mut redb::Range<'_, u128, ()>,
    path: &std::path::Path,
) -> Result<Option<u128>> {
    shield("reading game fingerprints", || {
        Ok(rows.next().transpose()?.map(|(k, _)| k.value()))
    })
    .map_err(|e| e.in_file(path))
}

/// How many game ids the game stores of at least two of `books` hold (each book's files
/// together): a merge looks for the records of one game that its inputs hold, written alike or
/// not, only when some id is shared. Streams every file's id index once in id order: time
/// linear in the games, memory a decoded id chunk per file.
pub fn shared_game_ids(books: &[&Book]) -> Result<u64> {
    let mut heads = Vec::new();
    for (i, b) in books.iter().enumerate() {
        for f in b.files() {
            let mut ids = f.game_ids_in_order()?;
            let head = next_id(&mut ids, &f.path)?;
            heads.push((i, ids, head, f.path.as_path()));
        }
    }
    let mut shared = 0u64;
    let mut holders: Vec<usize> = Vec::new();
    while let Some(v) = heads.iter().filter_map(|h| h.2).min() {
        holders.clear();
        for (book, ids, head, path) in heads.iter_mut() {
            while *head == Some(v) {
                if !holders.contains(book) {
                    holders.push(*book);
                }
                *head = next_id(ids, path)?;
            }
        }
        if holders.len() > 1 {
            shared += 1;
        }
    }
    Ok(shared)
}

/// The next id of a file's id index walk, redb's panics on damaged pages caught.
fn next_id(
    ids: &mut Box<dyn Iterator<Item = Result<u64>> + '_>,
    path: &std::path::Path,
) -> Result<Option<u64>> {
    shield("reading the game store's id index", || {
        ids.next().transpose()
    })
    .map_err(|e| e.in_file(path))
}

/// Copies the game fingerprints of `from` (each file's database, with its path; `None`: an
/// import's scratch table) into the file `txn` writes. Each source is read shielded: a damaged
/// page of a carried file's `games` table can make redb panic (campaign 13); the rewrite then
/// fails as corrupt, naming the file.
pub(super) fn copy_fingerprints(
    txn: &redb::WriteTransaction,
    from: &[(
        Option<std::path::PathBuf>,
        std::sync::Arc<redb::ReadOnlyDatabase>,
    )],
) -> Result<()> {
    for (path, db) in from {
        shield("copying game fingerprints", || {
            crate::store::fpset::copy_game_fingerprints(txn, std::slice::from_ref(db))
        })
        .map_err(|e| match path {
            Some(p) => e.in_file(p),
            None => e,
        })?;
    }
    Ok(())
}

//! `bookdb merge`, `bookdb compact` and `bookdb migrate`: whole-book rewrites. Each writes a new
//! file beside the target and renames it into place, so the target changes atomically and
//! readers that have the old file open keep reading the old inode.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::time::Instant;

use serde::Serialize;

use super::import::{WriterLock, remove_stale_temp_books};
use crate::error::{Error, Result};
use crate::store::book::{FORMAT_VERSION, META, META_VERSION};
use crate::store::entry::MergeIter;
use crate::store::{Book, BookMeta, BookWriter, Entry, WriterOptions};

#[derive(Clone, Debug, Serialize)]
pub struct MergeSummary {
    pub inputs: Vec<String>,
    pub output: String,
    pub book: BookMeta,
    pub output_bytes: u64,
    /// Import fingerprints found in more than one input: those games are counted twice.
    pub overlapping_imports: Vec<String>,
    pub elapsed_secs: f64,
}

fn same_file(a: &Path, b: &Path) -> bool {
    match (std::fs::canonicalize(a), std::fs::canonicalize(b)) {
        (Ok(x), Ok(y)) => x == y,
        _ => false,
    }
}

/// Streams a k-way merge of books into a new book at `out`. Inputs are only read.
pub fn merge(inputs: &[PathBuf], out: &Path, opts: &WriterOptions) -> Result<MergeSummary> {
    let start = Instant::now();
    if inputs.is_empty() {
        return Err(Error::Invalid("merge needs at least one input book".into()));
    }
    if let Some(p) = inputs.iter().find(|p| same_file(p, out)) {
        return Err(Error::Invalid(format!(
            "output {} is also an input ({}); write the merge to a new file",
            out.display(),
            p.display()
        )));
    }
    let _lock = WriterLock::acquire(out)?;
    remove_stale_temp_books(out);
    let books = inputs
        .iter()
        .map(|p| Book::open(p, crate::chess_codec()))
        .collect::<Result<Vec<_>>>()?;
    let mut w = BookWriter::create(out, crate::chess_codec(), opts.clone())?;
    let mut seen: BTreeMap<String, usize> = BTreeMap::new();
    let mut imports = BTreeMap::new();
    for b in &books {
        w.add_games(b.meta().games);
        for (k, v) in b.imports()? {
            *seen.entry(k.clone()).or_default() += 1;
            imports.insert(k, v);
        }
    }
    w.add_imports(imports);
    let streams = books
        .iter()
        .map(|b| {
            b.iter_for_rewrite()
                .map(|i| Box::new(i) as Box<dyn Iterator<Item = Result<Entry>> + '_>)
        })
        .collect::<Result<Vec<_>>>()?;
    for e in MergeIter::new(streams) {
        w.push(e?)?;
    }
    let meta = w.finish()?;
    Ok(MergeSummary {
        inputs: inputs.iter().map(|p| p.display().to_string()).collect(),
        output: out.display().to_string(),
        output_bytes: std::fs::metadata(out).map(|m| m.len()).unwrap_or(0),
        book: meta,
        overlapping_imports: seen
            .into_iter()
            .filter(|(_, n)| *n > 1)
            .map(|(k, _)| k)
            .collect(),
        elapsed_secs: start.elapsed().as_secs_f64(),
    })
}

#[derive(Clone, Debug, Serialize)]
pub struct CompactSummary {
    pub book: String,
    pub bytes_before: u64,
    pub bytes_after: u64,
    pub before: BookMeta,
    pub after: BookMeta,
    pub moves_pruned: u64,
    pub positions_pruned: u64,
    pub elapsed_secs: f64,
}

/// Rewrites a book: folds the delta tier into blocks, drops moves with fewer than `min_games`
/// games (moves known only from a Polyglot import are kept), retrains the position model and
/// the dictionary, and returns the space to the file system.
pub fn compact(
    book: &Path,
    min_games: Option<u64>,
    opts: &WriterOptions,
) -> Result<CompactSummary> {
    let start = Instant::now();
    let _lock = WriterLock::acquire(book)?;
    remove_stale_temp_books(book);
    let old = Book::open(book, crate::chess_codec())?;
    let before = old.meta().clone();
    let bytes_before = old.file_bytes();
    let mut w = BookWriter::create(book, crate::chess_codec(), opts.clone())?;
    w.add_games(before.games);
    w.add_imports(old.imports()?);
    let (mut moves_pruned, mut positions_pruned) = (0u64, 0u64);
    for e in old.iter_for_rewrite()? {
        let mut e = e?;
        if let Some(n) = min_games {
            let len = e.moves.len();
            e.moves
                .retain(|m| m.games() >= n || (m.games() == 0 && m.polyglot.is_some()));
            moves_pruned += (len - e.moves.len()) as u64;
            if e.moves.is_empty() {
                positions_pruned += 1;
                continue;
            }
        }
        w.push(e)?;
    }
    let after = w.finish()?;
    drop(old);
    Ok(CompactSummary {
        book: book.display().to_string(),
        bytes_before,
        bytes_after: std::fs::metadata(book).map(|m| m.len()).unwrap_or(0),
        before,
        after,
        moves_pruned,
        positions_pruned,
        elapsed_secs: start.elapsed().as_secs_f64(),
    })
}

/// Brings a book to the current format version. Version 1 is the first, so today this only
/// checks the version and reports; see migrations/README.md.
pub fn migrate(book: &Path) -> Result<String> {
    if !book.exists() {
        return Err(Error::BookNotFound {
            path: book.to_path_buf(),
        });
    }
    let db = redb::ReadOnlyDatabase::open(book).map_err(|e| Error::NotABook {
        path: book.to_path_buf(),
        reason: format!("not a redb database: {e}"),
    })?;
    let version = {
        use redb::ReadableDatabase;
        let txn = db.begin_read()?;
        let t = txn.open_table(META).map_err(|e| Error::NotABook {
            path: book.to_path_buf(),
            reason: format!("no meta table ({e})"),
        })?;
        let v = t.get(META_VERSION)?.map(|v| v.value().to_vec());
        v.and_then(|v| <[u8; 4]>::try_from(v.as_slice()).ok())
            .map(u32::from_le_bytes)
            .ok_or_else(|| Error::NotABook {
                path: book.to_path_buf(),
                reason: "no format version".into(),
            })?
    };
    match version.cmp(&FORMAT_VERSION) {
        std::cmp::Ordering::Equal => Ok(format!(
            "{}: already at format version {FORMAT_VERSION}; nothing to do",
            book.display()
        )),
        std::cmp::Ordering::Greater => Err(Error::UnsupportedVersion {
            path: book.to_path_buf(),
            found: version,
            supported: FORMAT_VERSION,
        }),
        std::cmp::Ordering::Less => Err(Error::Invalid(format!(
            "{}: format version {version} predates the first released format; no migration exists",
            book.display()
        ))),
    }
}

//! Games that more than one input of a merge counted: found as records of one game in the
//! inputs' game stores (`store::onegame`: the same date and id, the same result, starting
//! position and moves), their extra copies imported again, as counted, into scratch books
//! whose entries the merge then takes out of its sum (brief §9: a game counts once, whatever
//! the order of imports and merges).
//!
//! Each input counted such a game exactly as its stored record says (the plies it counted,
//! its tags, the facets of the file that stores it), so importing the record's counted plies
//! with no ply limit, the file's facets and nothing else gives back that copy's counts
//! exactly. Copies of one game are records stored alike, records counted to another
//! `--max-ply`, and records of one lichess game stored from two exports (tags re-spelled,
//! re-ordered or added, SAN written otherwise: what an import of the second export would have
//! known by its id and skipped). Of them, the merge keeps the copy its game store keeps
//! (`OneGame::prefer`: the deepest, then the one whose file keeps the most facets, then the
//! one with the most tags, then the first in the store's order): the same copy whatever the
//! order of the inputs. Games an
//! input records only by fingerprint (`--no-games --dedupe`), and records of one game under
//! two dates, are not found here; the merge reports the former.

use std::collections::BTreeMap;
use std::io::Write;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::store::Book;
use crate::store::book::GameStream;
use crate::store::facet::{FacetGames, FacetSet};
use crate::store::gameblock::{StoredGame, store_order};
use crate::store::onegame::{OneGame, facet_rank};

use super::game::Game;

/// The extra copies of shared games, imported into scratch books (removed with the value).
pub(crate) struct SharedCopies {
    /// Distinct games stored identically by more than one input file.
    pub games: u64,
    /// Copies to take out: per game, its copies less the one kept.
    pub copies: u64,
    books: Vec<Book>,
    /// Holds the scratch books until the merge is done.
    _dir: tempfile::TempDir,
}

impl SharedCopies {
    /// The copies' entries, one stream per facet set, each in key order.
    pub(crate) fn streams(&self) -> Result<Vec<crate::store::book::EntryStream<'_>>> {
        self.books
            .iter()
            .map(|b| {
                b.iter_for_rewrite()
                    .map(|i| Box::new(i) as crate::store::book::EntryStream<'_>)
                    .map_err(Error::from)
            })
            .collect()
    }

    /// The copies' games as the merged counters hold them: how many, and by facet.
    pub(crate) fn counted(&self) -> (u64, FacetGames) {
        let mut by_facet = FacetGames::default();
        for b in &self.books {
            by_facet.merge(&b.facet_games());
        }
        (self.books.iter().map(|b| b.meta().games).sum(), by_facet)
    }
}

/// The records of `bucket` (one date and id) partitioned into games ([`OneGame::same`], an
/// equivalence), each as its records' places in `bucket`.
fn classes(bucket: &[(usize, StoredGame)], rule: OneGame) -> Vec<Vec<usize>> {
    let mut out: Vec<Vec<usize>> = Vec::new();
    for (j, (_, g)) in bucket.iter().enumerate() {
        match out.iter_mut().find(|c| rule.same(&bucket[c[0]].1, g)) {
            Some(c) => c.push(j),
            None => out.push(vec![j]),
        }
    }
    out
}

/// The prefix of the scratch directories of a merge into `out`: `.NAME.merge-shared-`.
fn scratch_prefix(out: &Path) -> String {
    let name = out
        .file_name()
        .map_or_else(|| "book".to_string(), |n| n.to_string_lossy().into_owned());
    format!(".{name}.merge-shared-")
}

/// Removes scratch directories an earlier merge into `out` left when it was killed. The
/// caller holds `out`'s writer lock, so no running merge owns one.
fn remove_stale(dir_of: &Path, prefix: &str) {
    let Ok(rd) = std::fs::read_dir(dir_of) else {
        return;
    };
    for e in rd.flatten() {
        let stale = e.file_name().to_string_lossy().starts_with(prefix)
            && e.file_type().is_ok_and(|t| t.is_dir());
        if stale {
            // Best effort: what cannot be removed now is removed by the next merge.
            let _ = std::fs::remove_dir_all(e.path());
        }
    }
}

/// The copies of shared games to take out, as PGN in a scratch directory (one file per facet
/// set), not yet imported ([`Copies::import`]).
pub(crate) struct Copies {
    games: u64,
    copies: u64,
    /// Per facet set (its bits): the PGN file and its games.
    pgns: Vec<(u8, PathBuf, u64)>,
    dir: tempfile::TempDir,
}

/// Finds the games stored identically in more than one file of `books` (one pass over every
/// game store in the stores' order: one decoded block per file in memory) and writes the
/// copies to take out as PGN into a scratch directory beside `out` (whose writer lock the
/// caller holds). `None` when there are none.
pub(crate) fn collect(books: &[Book], out: &Path) -> Result<Option<Copies>> {
    let dir_of = out
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let prefix = scratch_prefix(out);
    remove_stale(dir_of, &prefix);
    let dir = tempfile::Builder::new()
        .prefix(&prefix)
        .tempdir_in(dir_of)
        .map_err(|e| {
            Error::io(
                format!("making a scratch directory in {}", dir_of.display()),
                e,
            )
        })?;
    let mut streams: Vec<(FacetSet, GameStream<'static>)> = Vec::new();
    for b in books {
        for f in b.files() {
            streams.push((f.facets(), f.games_iter()?));
        }
    }
    let mut heads: Vec<Option<StoredGame>> = Vec::with_capacity(streams.len());
    for (_, s) in streams.iter_mut() {
        heads.push(s.next().transpose()?);
    }
    let rule = OneGame::of(Game::Chess.codec().as_ref());
    let mut outputs: BTreeMap<u8, (PathBuf, std::io::BufWriter<std::fs::File>, u64)> =
        BTreeMap::new();
    let (mut games, mut copies) = (0u64, 0u64);
    // The records of one date and id, from every file: (file, record).
    let mut bucket: Vec<(usize, StoredGame)> = Vec::new();
    while let Some(least) = heads
        .iter()
        .flatten()
        .min_by(|a, b| store_order(a, b))
        .map(OneGame::key)
    {
        bucket.clear();
        for (i, head) in heads.iter_mut().enumerate() {
            while let Some(g) = head.take_if(|g| OneGame::key(g) == least) {
                bucket.push((i, g));
                *head = streams[i].1.next().transpose()?;
            }
        }
        if bucket.len() < 2 {
            continue;
        }
        for class in classes(&bucket, rule) {
            if class.len() < 2 {
                continue;
            }
            // The copy the merged store keeps (`OneGame::prefer`, with its file's facets).
            let with_rank = |j: usize| (&bucket[j].1, facet_rank(streams[bucket[j].0].0));
            let keep = class
                .iter()
                .copied()
                .max_by(|&x, &y| rule.prefer(with_rank(x), with_rank(y)))
                .unwrap_or(class[0]);
            games += 1;
            for &j in class.iter().filter(|&&j| j != keep) {
                let (i, g) = &bucket[j];
                let facets = streams[*i].0;
                let pgn = super::gamerec::to_pgn_counted(g).map_err(|reason| {
                    Error::Internal(format!(
                        "stored game {} does not read back: {reason}",
                        super::gamerec::id_string(g.id)
                    ))
                })?;
                let out = match outputs.entry(facets.0) {
                    std::collections::btree_map::Entry::Occupied(o) => o.into_mut(),
                    std::collections::btree_map::Entry::Vacant(v) => {
                        let path = dir.path().join(format!("copies-{:02x}.pgn", facets.0));
                        let file = std::fs::File::create(&path)
                            .map_err(|e| Error::io(format!("creating {}", path.display()), e))?;
                        v.insert((path, std::io::BufWriter::new(file), 0))
                    }
                };
                out.1
                    .write_all(pgn.as_bytes())
                    .map_err(|e| Error::io(format!("writing {}", out.0.display()), e))?;
                out.2 += 1;
                copies += 1;
            }
        }
    }
    if copies == 0 {
        return Ok(None);
    }
    let mut pgns = Vec::new();
    for (bits, (path, mut w, n)) in outputs {
        w.flush()
            .map_err(|e| Error::io(format!("writing {}", path.display()), e))?;
        pgns.push((bits, path, n));
    }
    Ok(Some(Copies {
        games,
        copies,
        pgns,
        dir,
    }))
}

impl Copies {
    /// Imports the copies, each file with its facets, into scratch books (within
    /// `memory_mib`: the caller's inputs are closed meanwhile), opened with `caches` as the
    /// merge's inputs are (a scratch book's reads grow with the shared games: with the default
    /// caches, redb kept up to 64 MiB of its pages).
    pub(crate) fn import(
        self,
        memory_mib: usize,
        caches: crate::store::CacheSizes,
    ) -> Result<SharedCopies> {
        let mut scratch = Vec::new();
        for (bits, path, n) in &self.pgns {
            let book = self.dir.path().join(format!("copies-{bits:02x}.book"));
            let opts = super::import::ImportOptions {
                rules: super::pgn::CountRules {
                    // The records hold only the counted plies.
                    max_ply: usize::MAX,
                    min_rating: None,
                    facets: FacetSet(*bits),
                },
                facets: Some(FacetSet(*bits)),
                dedupe: false,
                store_games: false,
                // The copies are few next to the inputs: half the budget and one worker do.
                memory_mib: (memory_mib / 2).max(16),
                jobs: 1,
                ..Default::default()
            };
            let s = super::import::import(&book, &[path.display().to_string()], &opts)?;
            if s.games_imported != *n {
                return Err(Error::Internal(format!(
                    "{n} games counted by more than one merged book were read back, but only {} of them counted again ({:?}); the merge would count the others twice",
                    s.games_imported, s.skipped_by_reason
                )));
            }
            scratch.push(Book::open_with_caches(&book, Game::Chess.codec(), caches)?);
        }
        Ok(SharedCopies {
            games: self.games,
            copies: self.copies,
            books: scratch,
            _dir: self.dir,
        })
    }
}

//! Engine evaluations in a book's files (docs/FORMAT.md §13): each file's `evals` table
//! (key, packed position) → the kept results; the files merged by the selector
//! ([`crate::store::eval::merge`]) on every read, fold and rewrite; and publishing a segment
//! of new evaluations ([`publish_evals`]).

use std::collections::BTreeMap;
use std::iter::Peekable;
use std::sync::Arc;

use super::*;
use crate::store::error::{Corruption, Error, Result};
use crate::store::eval::{self, EvalResult};

/// One position's evaluations: its key, packed position and the kept results.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PositionEvals {
    pub key: u64,
    pub pos: Vec<u8>,
    pub results: Vec<EvalResult>,
}

fn bad(key: u64, e: impl std::fmt::Display) -> Error {
    Error::Corrupt(Corruption::Eval {
        key,
        reason: e.to_string(),
    })
}

impl BookFile {
    /// This file's evaluations of exactly this position.
    pub(crate) fn evals_of(&self, key: u64, pos: &[u8]) -> Result<Option<Vec<EvalResult>>> {
        let Some(t) = &self.evals else {
            return Ok(None);
        };
        shield("reading evaluations", || match t.get((key, pos))? {
            Some(v) => eval::decode(key, pos, v.value())
                .map(Some)
                .map_err(|e| bad(key, e)),
            None => Ok(None),
        })
        .map_err(|e| e.in_file(&self.path))
    }

    /// This file's evaluation rows in (key, position) order, each decoded (a row that does
    /// not decode is a corruption error naming its key).
    pub fn evals_iter(&self) -> Result<Box<dyn Iterator<Item = Result<PositionEvals>> + Send>> {
        let Some(t) = &self.evals else {
            return Ok(Box::new(std::iter::empty()));
        };
        let path = self.path.clone();
        let mut range = shield("reading evaluations", || Ok(t.range::<(u64, &[u8])>(..)?))
            .map_err(|e| e.in_file(&self.path))?;
        // Each step of redb's cursor runs shielded: a damaged page can make it panic. At the
        // end, the rows read must be the rows meta recorded (a damaged tree page can hide
        // some, or show some twice).
        let (want, mut seen, mut done) = (self.eval_rows_meta, 0u64, false);
        let mut last: Option<(u64, Vec<u8>)> = None;
        Ok(Box::new(std::iter::from_fn(move || {
            if done {
                return None;
            }
            let step = shield("reading evaluations", || {
                let Some(row) = range.next() else {
                    done = true;
                    if seen != want {
                        return Err(Error::Corrupt(Corruption::Meta(format!(
                            "the evals table has {seen} rows, meta records {want}"
                        ))));
                    }
                    return Ok(None);
                };
                seen += 1;
                let (k, v) = row?;
                let (key, pos) = k.value();
                // Rows in strictly increasing (key, position) order, or the tree is damaged.
                if last
                    .as_ref()
                    .is_some_and(|(k, p)| (*k, p.as_slice()) >= (key, pos))
                {
                    done = true;
                    return Err(bad(key, "rows out of order (a damaged tree page)"));
                }
                last = Some((key, pos.to_vec()));
                let results = eval::decode(key, pos, v.value()).map_err(|e| bad(key, e))?;
                Ok(Some(PositionEvals {
                    key,
                    pos: pos.to_vec(),
                    results,
                }))
            });
            step.map_err(|e| e.in_file(&path)).transpose()
        })))
    }

    /// How many positions this file holds evaluations of.
    pub fn eval_rows(&self) -> Result<u64> {
        match &self.evals {
            Some(t) => Ok(redb::ReadableTableMetadata::len(t)?),
            None => Ok(0),
        }
    }
}

/// Several streams of evaluations in (key, position) order merged into one, equal positions
/// joined by the selector.
pub struct EvalIter<'a> {
    parts: Vec<Peekable<Box<dyn Iterator<Item = Result<PositionEvals>> + Send + 'a>>>,
}

impl<'a> EvalIter<'a> {
    pub fn new(parts: Vec<Box<dyn Iterator<Item = Result<PositionEvals>> + Send + 'a>>) -> Self {
        EvalIter {
            parts: parts.into_iter().map(Iterator::peekable).collect(),
        }
    }
}

impl Iterator for EvalIter<'_> {
    type Item = Result<PositionEvals>;

    fn next(&mut self) -> Option<Self::Item> {
        let mut least: Option<(u64, Vec<u8>)> = None;
        for p in &mut self.parts {
            match p.peek() {
                Some(Err(_)) => return p.next(),
                Some(Ok(e)) => {
                    let id = (e.key, &e.pos);
                    if least.as_ref().is_none_or(|(k, q)| id < (*k, q)) {
                        least = Some((e.key, e.pos.clone()));
                    }
                }
                None => {}
            }
        }
        let (key, pos) = least?;
        let mut results = Vec::new();
        for p in &mut self.parts {
            if let Some(Ok(e)) = p.peek()
                && e.key == key
                && e.pos == pos
                && let Some(Ok(e)) = p.next()
            {
                results = eval::merge(results, e.results);
            }
        }
        Some(Ok(PositionEvals { key, pos, results }))
    }
}

impl Book {
    /// The evaluations of exactly this encoded position, all files merged by the selector;
    /// `None` if no file holds any (a position that shares its key is never answered for).
    pub fn evals(&self, pos: &[u8]) -> Result<Option<Vec<EvalResult>>> {
        let key = self.codec().key(pos)?;
        let mut found: Option<Vec<EvalResult>> = None;
        for f in self.files() {
            if let Some(r) = f.evals_of(key, pos)? {
                found = Some(match found {
                    Some(acc) => eval::merge(acc, r),
                    None => r,
                });
            }
        }
        Ok(found)
    }

    /// Every position's evaluations in (key, position) order, all files merged.
    pub fn evals_iter(&self) -> Result<EvalIter<'_>> {
        let parts = self
            .files()
            .iter()
            .map(|f| f.evals_iter())
            .collect::<Result<Vec<_>>>()?;
        Ok(EvalIter::new(parts))
    }

    /// How many positions hold evaluations (all files merged).
    pub fn eval_count(&self) -> Result<u64> {
        if self.files().len() == 1 {
            return self.files()[0].eval_rows();
        }
        let mut n = 0;
        for e in self.evals_iter()? {
            e?;
            n += 1;
        }
        Ok(n)
    }
}

/// What a new file's `evals` table will hold: the rows of the files it carries over and new
/// results, merged by the selector when [`EvalCarry::write`] writes them.
#[derive(Default)]
pub(crate) struct EvalCarry {
    from: Vec<Arc<BookFile>>,
    new: NewResults,
}

/// Results by (key, packed position).
pub(crate) type NewResults = BTreeMap<(u64, Vec<u8>), Vec<EvalResult>>;

impl EvalCarry {
    /// Carries over the evaluations of `files`.
    pub(crate) fn carry(&mut self, files: &[Arc<BookFile>]) {
        self.from.extend(files.iter().cloned());
    }

    /// Adds results (by key and packed position), merged with those already added.
    pub(crate) fn add(&mut self, evals: NewResults) {
        for (id, r) in evals {
            let merged = match self.new.remove(&id) {
                Some(old) => eval::merge(old, r),
                None => eval::select(r),
            };
            self.new.insert(id, merged);
        }
    }

    /// Writes into `txn`'s `evals` table everything carried and added, merged; returns the
    /// number of rows (the caller records it in meta `evals`).
    pub(crate) fn write(&self, txn: &redb::WriteTransaction) -> Result<u64> {
        if self.from.iter().all(|f| f.evals.is_none()) && self.new.is_empty() {
            return Ok(0);
        }
        let mut parts = self
            .from
            .iter()
            .map(|f| f.evals_iter())
            .collect::<Result<Vec<_>>>()?;
        let fresh: Vec<PositionEvals> = self
            .new
            .iter()
            .map(|((key, pos), results)| PositionEvals {
                key: *key,
                pos: pos.clone(),
                results: results.clone(),
            })
            .collect();
        parts.push(Box::new(fresh.into_iter().map(Ok)));
        let mut t = txn.open_table(EVALS)?;
        let mut n = 0;
        for e in EvalIter::new(parts) {
            let e = e?;
            let bytes = eval::encode(e.key, &e.pos, &e.results)
                .map_err(|err| Error::Internal(format!("evaluations of {:016x}: {err}", e.key)))?;
            t.insert((e.key, e.pos.as_slice()), bytes.as_slice())?;
            n += 1;
        }
        Ok(n)
    }
}

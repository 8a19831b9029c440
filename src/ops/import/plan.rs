//! Planning an import: which inputs to read (each fingerprinted; those the book's `imports`
//! records already list are skipped unless `--force`, and recognised without reading by their
//! file identity unless `--rehash`; those that are not PGN text are left out and reported),
//! and the identity of the import they make up, which names its staging area.

use std::collections::{HashMap, HashSet};
use std::io::BufRead;
use std::path::Path;

use super::options::{FailedInput, ImportOptions};
use super::record::{FileIdentity, ImportRecord};
use crate::error::{Error, Result};
use crate::ops::game::Game;
use crate::ops::input;
use crate::store::{Book, BookMeta};

/// One input of the import plan.
pub(super) struct PlannedInput {
    pub(super) name: String,
    /// xxh3-128 of the input's bytes; `None` for stdin until it has been read.
    pub(super) fingerprint: Option<String>,
    pub(super) bytes: Option<u64>,
    /// The file's identity, recorded with the import (`None` for stdin, or a file that
    /// changed while it was fingerprinted).
    pub(super) identity: Option<FileIdentity>,
}

/// What the book holds of earlier imports.
pub(super) struct Recorded {
    /// Fingerprints of the inputs the book counted.
    pub(super) done: HashSet<String>,
    /// The identities of the files the book counted, with their fingerprints.
    pub(super) identities: HashMap<FileIdentity, String>,
    /// The attempts whose counts the book holds (see [`super::state::Staging::committed_before_interruption`]).
    pub(super) committed: HashSet<String>,
    /// The book's meta before this import (empty if there is no book yet).
    pub(super) meta: BookMeta,
}

impl Recorded {
    pub(super) fn read(book_path: &Path, game: Game) -> Result<Recorded> {
        let existing = if book_path.exists() {
            Some(Book::open(book_path, game.codec())?)
        } else {
            None
        };
        let records_before = match &existing {
            Some(b) => b.imports()?,
            None => Vec::new(),
        };
        let done: HashSet<String> = records_before.iter().map(|(k, _)| k.clone()).collect();
        let identities = records_before
            .iter()
            .filter_map(|(k, v)| Some((ImportRecord::parse(v)?.identity()?, k.clone())))
            .collect();
        let committed: HashSet<String> = records_before
            .iter()
            .filter_map(|(_, v)| ImportRecord::parse(v)?.attempt)
            .collect();
        let meta = existing
            .as_ref()
            .map(|b| b.meta().clone())
            .unwrap_or_default();
        Ok(Recorded {
            done,
            identities,
            committed,
            meta,
        })
    }
}

/// The inputs to read, fingerprinted: stdin (`-`) always, a file unless the book already
/// counted it or it repeats an earlier input (both read again with `opts.force`). A file
/// whose identity an import record holds is known without reading it (unless `opts.rehash`
/// or `opts.force`). The paths of the files left out go to `already_imported`; files that
/// are not PGN text ([`input::open`]) go to `failed`.
pub(super) fn plan_inputs(
    inputs: &[String],
    recorded: &Recorded,
    opts: &ImportOptions,
    already_imported: &mut Vec<String>,
    failed: &mut Vec<FailedInput>,
) -> Result<Vec<PlannedInput>> {
    let mut plan = Vec::new();
    let mut seen_fp = HashSet::new();
    for path in inputs {
        if path == "-" {
            plan.push(PlannedInput {
                name: "<stdin>".into(),
                fingerprint: None,
                bytes: None,
                identity: None,
            });
            continue;
        }
        let identity = FileIdentity::of(path);
        if !opts.force
            && !opts.rehash
            && let Some(fp) = identity.as_ref().and_then(|i| recorded.identities.get(i))
            && seen_fp.insert(fp.clone())
        {
            already_imported.push(path.clone());
            continue;
        }
        let fp = fingerprint_file(path)?;
        if (recorded.done.contains(&fp) || !seen_fp.insert(fp.clone())) && !opts.force {
            already_imported.push(path.clone());
            continue;
        }
        let opened = if opts.game.is_othello() {
            input::open_unchecked(path)
        } else {
            input::open(path)
        };
        match opened {
            Ok(_) => {}
            Err(Error::Input(error)) => {
                failed.push(FailedInput {
                    name: path.clone(),
                    error,
                });
                continue;
            }
            Err(e) => return Err(e),
        }
        // A file that changed while it was read keeps no identity: the next run reads it.
        let identity = identity.filter(|i| FileIdentity::of(path).as_ref() == Some(i));
        plan.push(PlannedInput {
            name: path.clone(),
            bytes: std::fs::metadata(path).ok().map(|m| m.len()),
            fingerprint: Some(fp),
            identity,
        });
    }
    Ok(plan)
}

/// The import's identity: its inputs and the options that change counts (32 hex digits).
pub(super) fn import_id(plan: &[PlannedInput], opts: &ImportOptions) -> String {
    let mut idh = xxhash_rust::xxh3::Xxh3::new();
    for p in plan {
        idh.update(p.fingerprint.as_deref().unwrap_or("stdin").as_bytes());
        idh.update(b"\0");
    }
    idh.update(
        format!(
            "{}|{:?}|{}|{}",
            opts.rules.max_ply, opts.rules.min_rating, opts.dedupe, opts.force
        )
        .as_bytes(),
    );
    if opts.game != Game::Chess {
        idh.update(format!("|{:?}", opts.game).as_bytes());
    }
    format!("{:032x}", idh.digest128())
}

/// Gives the stdin inputs the fingerprints of the bytes read from them (`stdin_fp`, by
/// input); an error if the book already counted one of them (unless `force`).
pub(super) fn fingerprint_stdin(
    plan: &mut [PlannedInput],
    stdin_fp: Vec<Option<String>>,
    done: &HashSet<String>,
    force: bool,
) -> Result<()> {
    for (i, fp) in stdin_fp.into_iter().enumerate() {
        if let Some(fp) = fp {
            if done.contains(&fp) && !force {
                return Err(Error::Usage(format!(
                    "input {} was already imported into this book (fingerprint {fp}); nothing was changed; use --force to count it again",
                    plan[i].name
                )));
            }
            plan[i].fingerprint = Some(fp);
        }
    }
    Ok(())
}

/// xxh3-128 of a file's bytes, as 32 hex digits.
pub(crate) fn fingerprint_file(path: &str) -> Result<String> {
    let f = std::fs::File::open(path)
        .map_err(|e| Error::io(format!("cannot open PGN input {path}"), e))?;
    let mut r = std::io::BufReader::with_capacity(1 << 20, f);
    let mut h = xxhash_rust::xxh3::Xxh3::new();
    loop {
        let buf = r
            .fill_buf()
            .map_err(|e| Error::io(format!("reading {path}"), e))?;
        if buf.is_empty() {
            break;
        }
        h.update(buf);
        let n = buf.len();
        r.consume(n);
    }
    Ok(format!("{:032x}", h.digest128()))
}

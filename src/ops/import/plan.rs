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

/// What an input is, and so how it is read and fingerprinted.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Source {
    /// Standard input (`-`).
    Stdin,
    /// A regular file: fingerprinted while planning (its identity may stand for its bytes in
    /// later runs), read again by the read phase, which checks that the bytes it read are the
    /// ones fingerprinted.
    File,
    /// Anything else given by name (a FIFO, a pipe such as `/dev/stdin` or `<(…)`, a
    /// character device): read once, by the read phase, and fingerprinted as it is read,
    /// like stdin. Never identified by its path, size or times.
    Stream,
}

/// One input of the import plan.
pub(super) struct PlannedInput {
    pub(super) name: String,
    pub(super) source: Source,
    /// xxh3-128 of the input's bytes; `None` for stdin and streams until they are read.
    pub(super) fingerprint: Option<String>,
    /// The raw bytes fingerprinted (a file's size then); `None` for stdin and streams.
    pub(super) bytes: Option<u64>,
    /// The file's identity, recorded with the import (`None` for stdin and streams, or a file
    /// that changed while it was fingerprinted).
    pub(super) identity: Option<FileIdentity>,
}

impl PlannedInput {
    /// The path to open (`-` for stdin).
    pub(super) fn path(&self) -> &str {
        match self.source {
            Source::Stdin => "-",
            Source::File | Source::Stream => &self.name,
        }
    }

    /// Whether the input can be read only once (stdin, a stream): an import with one never
    /// resumes, and its fingerprint is known only once it is read.
    pub(super) fn read_once(&self) -> bool {
        self.source != Source::File
    }

    fn once(name: String, source: Source) -> PlannedInput {
        PlannedInput {
            name,
            source,
            fingerprint: None,
            bytes: None,
            identity: None,
        }
    }
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
            plan.push(PlannedInput::once("<stdin>".into(), Source::Stdin));
            continue;
        }
        // Not a regular file: read once, later (reading it here would consume it).
        let meta = std::fs::metadata(path)
            .map_err(|e| Error::io(format!("cannot open PGN input {path}"), e))?;
        if !meta.is_file() {
            plan.push(PlannedInput::once(path.clone(), Source::Stream));
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
        let Some(fp) = fingerprint_file(path)? else {
            // Replaced by something else since it was looked at: read once, like a stream.
            plan.push(PlannedInput::once(path.clone(), Source::Stream));
            continue;
        };
        if (recorded.done.contains(&fp.hex) || !seen_fp.insert(fp.hex.clone())) && !opts.force {
            already_imported.push(path.clone());
            continue;
        }
        let opened = input::open_with(
            path,
            input::OpenSpec {
                limit: Some(fp.bytes),
                ..input::OpenSpec::new(!opts.game.is_othello())
            },
        );
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
            source: Source::File,
            bytes: Some(fp.bytes),
            fingerprint: Some(fp.hex),
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

/// What the read phase found the inputs it read once to be.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Bound {
    /// The inputs are new (or `--force` counts them again): record them.
    New,
    /// Every input of the plan was read once (stdin, streams) and turned out to hold bytes the
    /// book already counted (or another input of this command holds): nothing to apply, as
    /// when a file is imported again. Their names.
    AllCounted(Vec<String>),
}

/// Binds each input's fingerprint to the raw bytes the read phase read of it (`read`, by
/// input; `None` for an input this run did not read, before the checkpoint it resumed from).
/// A file must have given the bytes it was fingerprinted by when planned: if not, it was
/// replaced or rewritten since, and the import is refused ([`Error::Input`]; the counts of
/// the bytes read are thrown away by the caller): an input is never recorded under the
/// fingerprint of bytes other than those counted. Stdin and streams take the fingerprint of
/// their bytes; one the book already counted, or that repeats another input, is an
/// "already imported" input when all the plan's inputs are such ([`Bound::AllCounted`]), and
/// refused otherwise (its games are counted among the others' and cannot be taken out).
pub(super) fn bind_fingerprints(
    plan: &mut [PlannedInput],
    read: Vec<Option<input::ReadFingerprint>>,
    done: &HashSet<String>,
    force: bool,
) -> Result<Bound> {
    let mut seen: HashSet<String> = plan
        .iter()
        .filter(|p| !p.read_once())
        .filter_map(|p| p.fingerprint.clone())
        .collect();
    let mut repeats = Vec::new();
    for (i, fp) in read.into_iter().enumerate() {
        let (Some(fp), Some(p)) = (fp, plan.get_mut(i)) else {
            continue;
        };
        if !p.read_once() {
            if p.fingerprint.as_deref() != Some(fp.hex.as_str()) || p.bytes != Some(fp.bytes) {
                return Err(Error::Input(format!(
                    "{}: changed while this import ran (fingerprinted as {} bytes, {}; the bytes read were {} bytes, {}): it was replaced or rewritten after the import looked at it; nothing was changed; run the import again once the file is complete (replace input files only between imports)",
                    p.name,
                    p.bytes.unwrap_or(0),
                    p.fingerprint.as_deref().unwrap_or("none"),
                    fp.bytes,
                    fp.hex
                )));
            }
            continue;
        }
        let counted = done.contains(&fp.hex);
        if !force && (counted || !seen.insert(fp.hex.clone())) {
            repeats.push((p.name.clone(), fp.hex.clone(), counted));
        }
        p.fingerprint = Some(fp.hex);
    }
    if repeats.is_empty() {
        return Ok(Bound::New);
    }
    if repeats.len() == plan.len() {
        return Ok(Bound::AllCounted(
            repeats.into_iter().map(|(n, _, _)| n).collect(),
        ));
    }
    let (name, fp, counted) = &repeats[0];
    Err(Error::Usage(format!(
        "input {name} {} (fingerprint {fp}) and was read among other inputs, whose counts cannot be told from its own; nothing was changed; import the other inputs without it, or use --force to count it again",
        if *counted {
            "was already imported into this book"
        } else {
            "holds the same bytes as another input of this command"
        }
    )))
}

/// xxh3-128 of a regular file's bytes and their number; `None` if `path` is not (or no
/// longer) a regular file. Opened without blocking, so that a FIFO put in its place is not
/// waited on.
pub(crate) fn fingerprint_file(path: &str) -> Result<Option<input::ReadFingerprint>> {
    use std::os::unix::fs::OpenOptionsExt;
    let f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK)
        .open(path)
        .map_err(|e| Error::io(format!("cannot open PGN input {path}"), e))?;
    if !f
        .metadata()
        .map_err(|e| Error::io(format!("cannot open PGN input {path}"), e))?
        .is_file()
    {
        return Ok(None);
    }
    let mut r = std::io::BufReader::with_capacity(1 << 20, f);
    let mut h = xxhash_rust::xxh3::Xxh3::new();
    let mut bytes = 0u64;
    loop {
        let buf = r
            .fill_buf()
            .map_err(|e| Error::io(format!("reading {path}"), e))?;
        if buf.is_empty() {
            break;
        }
        h.update(buf);
        let n = buf.len();
        bytes += n as u64;
        r.consume(n);
    }
    Ok(Some(input::ReadFingerprint {
        hex: format!("{:032x}", h.digest128()),
        bytes,
    }))
}

//! The staging area of an import (`<book>.staging/<id>/`) and what it keeps between runs: the
//! write-ahead [`ImportState`] and its checkpoints, resuming from them, the pending logs of
//! skipped games and counted game fingerprints, the `applying` marker, and the `--report`
//! file made from the skipped-games log.

use std::collections::{BTreeMap, HashSet};
use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use super::options::{ImportOptions, ImportSummary, SkippedGame};
use crate::error::{Error, Result};
use crate::store::files::{
    claim_dir, create_owned_subdir, is_owned_dir, open_append, release_dir, sidecar, write_atomic,
};

/// The write-ahead state of the import (the last checkpoint).
pub(super) const STATE_FILE: &str = "state.json";
/// Staging log of the skipped games, one JSON line each.
pub(super) const SKIPPED_LOG: &str = "skipped.jsonl";
/// Staging file of the fingerprints of the games a `--dedupe` import counted (FORMAT §8).
pub(super) const GAMES_LOG: &str = "games.fp";
/// Staging redb file: `games.fp` sorted, copied into the book when the import applies.
pub(super) const COUNTED_TABLE: &str = "counted.redb";
/// Staging file naming the attempt about to commit (its id is also in the imports records
/// it commits), so that a run killed between its commit and its cleanup is not applied again.
const APPLYING: &str = "applying";
/// Skipped games or game fingerprints the coordinator holds before appending them to their
/// staging logs (also between checkpoints).
const PENDING_MAX: usize = 256;

/// Per-input counters, kept in the checkpoint and in the book's import record.
#[derive(Clone, Debug, Default, Serialize, Deserialize, PartialEq, Eq)]
pub(super) struct InputCounts {
    pub(super) read: u64,
    pub(super) imported: u64,
    pub(super) skipped: u64,
}

/// The write-ahead state of an import (`state.json` in its staging directory).
#[derive(Clone, Debug, Default, Serialize, Deserialize)]
pub(super) struct ImportState {
    pub(super) version: u32,
    pub(super) id: String,
    /// Completed runs (file names in the staging directory) and their entry counts.
    pub(super) runs: Vec<(String, u64)>,
    /// Next input to read.
    pub(super) input_index: usize,
    /// Decompressed bytes of that input consumed, and the line there.
    pub(super) bytes_in_input: u64,
    pub(super) line_in_input: u64,
    pub(super) read_complete: bool,
    pub(super) per_input: Vec<InputCounts>,
    pub(super) skipped_by_reason: BTreeMap<String, u64>,
    pub(super) next_run: u64,
    /// Length of skipped.jsonl at the checkpoint (later lines are discarded on resume).
    pub(super) skipped_log_bytes: u64,
    /// Length of games.fp (`--dedupe`: fingerprints of the games counted so far, 16 bytes each,
    /// little-endian) at the checkpoint.
    #[serde(default)]
    pub(super) games_log_bytes: u64,
    /// Games counted by facet so far (books with facets; written with the counts).
    #[serde(default)]
    pub(super) facet_games: crate::store::facet::FacetGames,
    /// The level of run-merge passes under way, as (width, runs it ends at); absent when none
    /// is. Kept so that a resumed import finishes the level as it began it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(super) pass_level: Option<(usize, usize)>,
    /// Game runs spilled beside the runs (books that store games): file names and game
    /// counts. Never merged in passes; the book's writer merges them all.
    #[serde(default)]
    pub(super) game_runs: Vec<(String, u64)>,
}

/// 2: `games_log_bytes` and `games.fp` (a version-1 state never recorded fingerprints).
/// 3: `--dedupe` reads in chunks like any import; `games_in_input` is gone (a version-2
/// `--dedupe` state counted games, not bytes, so it cannot be resumed by this version).
/// 4: runs in the block format (`BDBRUN02`); a state of an earlier version starts over.
/// 5: game runs (`game_runs`, `BDBGAM01`) beside the runs; a version-4 state kept no games.
const STATE_VERSION: u32 = 5;

impl ImportState {
    /// The state of an import that has read nothing yet.
    pub(super) fn new(id: &str, inputs: usize) -> ImportState {
        ImportState {
            version: STATE_VERSION,
            id: id.to_string(),
            per_input: vec![InputCounts::default(); inputs],
            ..Default::default()
        }
    }

    /// True if an earlier run of the import got as far as a checkpoint.
    pub(super) fn resumed(&self) -> bool {
        !self.runs.is_empty()
            || self.input_index > 0
            || self.bytes_in_input > 0
            || self.read_complete
    }

    /// Writes the state to `path` atomically (a checkpoint).
    pub(super) fn save(&self, path: &Path) -> Result<()> {
        let bytes = serde_json::to_vec(self).map_err(|e| Error::Internal(e.to_string()))?;
        Ok(write_atomic(path, &bytes)?)
    }
}

/// The staging area of one import, `<book>.staging/<id>/`; the import's id names it.
pub(super) struct Staging {
    id: String,
    root: PathBuf,
    dir: PathBuf,
    /// The book (its group and mode are the staging area's).
    book: PathBuf,
}

impl Staging {
    /// `<book>.staging`, which holds the staging areas of the book's imports.
    pub(super) fn root(book_path: &Path) -> PathBuf {
        sidecar(book_path, "staging")
    }

    pub(super) fn new(book_path: &Path, id: &str) -> Staging {
        let root = Staging::root(book_path);
        Staging {
            id: id.to_string(),
            dir: root.join(id),
            root,
            book: book_path.to_path_buf(),
        }
    }

    /// The directory of this import's staging area.
    pub(super) fn dir(&self) -> &Path {
        &self.dir
    }

    /// A file in this import's staging area.
    pub(super) fn path(&self, name: &str) -> PathBuf {
        self.dir.join(name)
    }

    /// Removes everything else in the staging root: it belongs to abandoned imports. Only in
    /// a staging root bookdb made (`claim_dir`'s marker): anything else at that name is left
    /// alone (and refused by [`Staging::open_state`]).
    pub(super) fn remove_abandoned(&self) {
        if !is_owned_dir(&self.root) {
            return;
        }
        if let Ok(rd) = std::fs::read_dir(&self.root) {
            for e in rd.flatten() {
                let name = e.file_name().to_string_lossy().into_owned();
                if name != self.id && name != crate::store::files::OWNED_DIR_MARKER {
                    // Never follows a symlink: remove_dir_all unlinks it.
                    let _ = match e.file_type() {
                        Ok(t) if t.is_dir() => std::fs::remove_dir_all(e.path()),
                        _ => std::fs::remove_file(e.path()),
                    };
                }
            }
        }
    }

    /// True if an earlier run of this import was killed after its commit but before it
    /// removed its staging area: its counts are in the book (`committed` holds the attempts
    /// the book's imports records name), so applying again would count the games twice (this
    /// matters with --force, which bypasses the already-imported check).
    pub(super) fn committed_before_interruption(&self, committed: &HashSet<String>) -> bool {
        is_owned_dir(&self.root)
            && std::fs::read_to_string(self.path(APPLYING))
                .is_ok_and(|prev| committed.contains(prev.trim()))
    }

    /// The state to read from: the checkpoint of an earlier run of this import if there is a
    /// usable one (never with stdin among the inputs), else a fresh state and a fresh staging
    /// area. Files written after the checkpoint are removed or cut back to it.
    pub(super) fn open_state(
        &self,
        inputs: usize,
        _dedupe: bool,
        has_stdin: bool,
    ) -> Result<ImportState> {
        // A staging root bookdb did not make (a symlink, a file, a foreign directory) is
        // refused before anything in it is read, written or removed.
        claim_dir(&self.root, &self.book, "an import's staging area")?;
        let state_path = self.path(STATE_FILE);
        let mut state: ImportState = std::fs::read(&state_path)
            .ok()
            .and_then(|b| serde_json::from_slice(&b).ok())
            // Runs of versions before 4 are in the per-entry format: those states start over.
            .filter(|s: &ImportState| s.version == STATE_VERSION && s.id == self.id && !has_stdin)
            .filter(|s| {
                s.runs
                    .iter()
                    .chain(&s.game_runs)
                    .all(|(r, _)| self.path(r).exists())
            })
            .map(|s| ImportState {
                version: STATE_VERSION,
                ..s
            })
            .unwrap_or_else(|| ImportState::new(&self.id, inputs));
        let resumed = state.resumed();
        if !resumed {
            let _ = std::fs::remove_dir_all(&self.dir);
            state = ImportState::new(&self.id, inputs);
        }
        create_owned_subdir(&self.dir)?;
        // Runs not recorded in the checkpoint are partial work from after it.
        if let Ok(rd) = std::fs::read_dir(&self.dir) {
            for e in rd.flatten() {
                let n = e.file_name().to_string_lossy().to_string();
                if n != STATE_FILE
                    && n != SKIPPED_LOG
                    && n != GAMES_LOG
                    && n != APPLYING
                    && !state
                        .runs
                        .iter()
                        .chain(&state.game_runs)
                        .any(|(r, _)| *r == n)
                {
                    let _ = std::fs::remove_file(e.path());
                }
            }
        }
        if !resumed {
            let _ = std::fs::remove_file(self.path(SKIPPED_LOG));
            let _ = std::fs::remove_file(self.path(GAMES_LOG));
        } else {
            // What was written after the checkpoint describes games that will be read again.
            for (name, len) in [
                (SKIPPED_LOG, state.skipped_log_bytes),
                (GAMES_LOG, state.games_log_bytes),
            ] {
                if let Ok(f) = std::fs::OpenOptions::new()
                    .write(true)
                    .open(self.path(name))
                {
                    let _ = f.set_len(len);
                }
            }
        }
        Ok(state)
    }

    /// Names the attempt about to commit (see [`APPLYING`]).
    pub(super) fn mark_applying(&self, attempt: &str) -> Result<()> {
        Ok(write_atomic(&self.path(APPLYING), attempt.as_bytes())?)
    }

    /// Removes this import's staging area (not the staging root); only in a root bookdb made.
    pub(super) fn remove_dir(&self) {
        if is_owned_dir(&self.root) {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }

    /// Removes this import's staging area, and the staging root if nothing else is in it.
    pub(super) fn remove(&self) {
        self.remove_dir();
        release_dir(&self.root);
    }
}

/// The staging logs the coordinator appends to: the skipped games (`skipped.jsonl`) and the
/// fingerprints of the games a `--dedupe` import counted (`games.fp`), with what was gathered
/// since the last append.
pub(super) struct PendingLogs {
    /// Skipped games not written yet.
    pub(super) skips: Vec<SkippedGame>,
    /// `--dedupe`: fingerprints of games counted and not written yet.
    pub(super) games: Vec<u128>,
    skipped_file: std::fs::File,
    games_file: std::fs::File,
    /// The staging area holding both (named in errors).
    staging: std::path::PathBuf,
}

impl PendingLogs {
    /// Opens both logs of a staging area for appending (created if absent).
    pub(super) fn open(staging: &Path) -> Result<PendingLogs> {
        let skipped_file = open_append(&staging.join(SKIPPED_LOG)).map_err(|e| {
            Error::io(
                format!("opening skipped-games log in {}", staging.display()),
                e,
            )
        })?;
        let games_file = open_append(&staging.join(GAMES_LOG)).map_err(|e| {
            Error::io(
                format!("opening game fingerprints in {}", staging.display()),
                e,
            )
        })?;
        Ok(PendingLogs::new(staging, skipped_file, games_file))
    }

    pub(super) fn new(
        staging: &Path,
        skipped_file: std::fs::File,
        games_file: std::fs::File,
    ) -> PendingLogs {
        PendingLogs {
            skips: Vec::new(),
            games: Vec::new(),
            skipped_file,
            games_file,
            staging: staging.to_path_buf(),
        }
    }

    /// "writing <the log's path>", for errors.
    fn writing(&self, log: &str) -> String {
        format!("writing {}", self.staging.join(log).display())
    }

    /// Appends the skipped games and the counted games' fingerprints gathered since the last
    /// call to their staging logs, and with `sync` makes both durable. Lines past the last
    /// checkpoint are cut off on a resume (§8.3), so they may be written at any time.
    pub(super) fn write(&mut self, sync: bool) -> Result<()> {
        let mut text = String::new();
        for sk in self.skips.drain(..) {
            let line = serde_json::to_string(&sk).map_err(|e| Error::Internal(e.to_string()))?;
            text.push_str(&line);
            text.push('\n');
        }
        self.skipped_file
            .write_all(text.as_bytes())
            .and_then(|()| {
                if sync {
                    self.skipped_file.sync_data()
                } else {
                    Ok(())
                }
            })
            .map_err(|e| Error::io(self.writing(SKIPPED_LOG), e))?;
        let bytes: Vec<u8> = self.games.drain(..).flat_map(u128::to_le_bytes).collect();
        self.games_file
            .write_all(&bytes)
            .and_then(|()| {
                if sync {
                    self.games_file.sync_data()
                } else {
                    Ok(())
                }
            })
            .map_err(|e| Error::io(self.writing(GAMES_LOG), e))
    }

    /// Keeps the pending lists short whatever the input: with most games skipped (say by
    /// `--min-rating`) the workers may never fill, and checkpoints never come.
    pub(super) fn bound(&mut self) -> Result<()> {
        if self.skips.len() >= PENDING_MAX || self.games.len() >= PENDING_MAX {
            self.write(false)?;
        }
        Ok(())
    }

    /// Makes both logs durable and records their lengths in the checkpoint `state`.
    pub(super) fn checkpoint(&mut self, state: &mut ImportState) -> Result<()> {
        self.write(true)?;
        state.skipped_log_bytes = self
            .skipped_file
            .metadata()
            .map_err(|e| Error::io(self.writing(SKIPPED_LOG), e))?
            .len();
        state.games_log_bytes = self
            .games_file
            .metadata()
            .map_err(|e| Error::io(self.writing(GAMES_LOG), e))?
            .len();
        Ok(())
    }
}

/// The `--report` file, written beside its final name and moved there once the import has
/// succeeded (a failed import leaves the previous report, if any, in place).
#[must_use]
pub(super) struct PendingReport(Option<(PathBuf, PathBuf)>);

impl PendingReport {
    pub(super) fn publish(self) -> Result<()> {
        match self.0 {
            None => Ok(()),
            Some((tmp, path)) => std::fs::rename(&tmp, &path)
                .map_err(|e| Error::io(format!("moving report to {}", path.display()), e)),
        }
    }
}

/// Reads the skipped-games log (if any): the summary keeps the first `opts.keep_skipped`, the
/// report file (`opts.report`) gets every one, one line each, streamed.
pub(super) fn collect_skipped(
    log: Option<&Path>,
    summary: &mut ImportSummary,
    opts: &ImportOptions,
) -> Result<PendingReport> {
    let mut report = match &opts.report {
        Some(path) => {
            let mut name = path.file_name().unwrap_or_default().to_os_string();
            name.push(".tmp");
            let tmp = path.with_file_name(name);
            let f = crate::store::files::create_temp(&tmp)?;
            Some((tmp, path.clone(), std::io::BufWriter::new(f)))
        }
        None => None,
    };
    let file = match log.map(std::fs::File::open) {
        None => None,
        Some(Ok(f)) => Some(f),
        Some(Err(e)) if e.kind() == std::io::ErrorKind::NotFound => None,
        Some(Err(e)) => return Err(Error::io("reading the skipped-games log", e)),
    };
    if let (Some(f), Some(log)) = (file, log) {
        for (n, line) in std::io::BufReader::new(f).lines().enumerate() {
            if summary.skipped.len() >= opts.keep_skipped && report.is_none() {
                break;
            }
            let line = line.map_err(|e| Error::io("reading the skipped-games log", e))?;
            let s = serde_json::from_str::<SkippedGame>(&line).map_err(|e| {
                Error::Input(format!(
                    "{}:{}: damaged skipped-games log ({e}); remove the staging directory to start the import over",
                    log.display(),
                    n + 1
                ))
            })?;
            if let Some((tmp, _, w)) = &mut report {
                writeln!(w, "{}:{}\t{}\t{}", s.file, s.line, s.reason, s.detail)
                    .map_err(|e| Error::io(format!("writing report {}", tmp.display()), e))?;
            }
            if summary.skipped.len() < opts.keep_skipped {
                summary.skipped.push(s);
            }
        }
    }
    Ok(PendingReport(match report {
        None => None,
        Some((tmp, path, mut w)) => {
            w.flush()
                .map_err(|e| Error::io(format!("writing report {}", tmp.display()), e))?;
            Some((tmp, path))
        }
    }))
}

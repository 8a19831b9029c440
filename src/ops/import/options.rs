//! What an import is asked to do and what it reports: options, summary, skipped games, and
//! how its result was applied.

use std::collections::BTreeMap;
use std::path::PathBuf;

use serde::{Deserialize, Serialize};

use crate::ops::game::Game;
use crate::ops::pgn::CountRules;
use crate::store::{BookMeta, WriterOptions};

/// Default `--max-ply`, as the lichess opening explorer.
pub const DEFAULT_MAX_PLY: usize = 50;
/// An import of up to this many new entries, or an eighth of the book's entries if more,
/// publishes a delta segment; a bigger one rewrites the base with everything folded in.
pub const DELTA_MIN_THRESHOLD: u64 = 100_000;

#[derive(Clone, Debug)]
pub struct ImportOptions {
    pub rules: CountRules,
    pub dedupe: bool,
    /// Keep each counted game in the book's game store (docs/FORMAT.md §15): the default for
    /// chess; `--no-games` (and Othello, whose games carry no tags) keep none.
    pub store_games: bool,
    pub force: bool,
    /// Fingerprint every input file's bytes even where its identity (path, size, mtime,
    /// inode, device) matches an import record's.
    pub rehash: bool,
    /// Worker threads; 0 = all cores.
    pub jobs: usize,
    /// Memory budget for aggregation and writing, in MiB.
    pub memory_mib: usize,
    pub writer: WriterOptions,
    /// Progress on stderr: a bar, plain lines, or none.
    pub progress: crate::ops::progress::ProgressMode,
    /// How long to wait for another writer's lock on the book.
    pub lock_wait: crate::store::LockWait,
    /// How many skipped games the summary keeps with their details (all are counted).
    pub keep_skipped: usize,
    /// Writes every skipped game to this file, one `file:line<TAB>reason<TAB>detail` line each
    /// (streamed from the staging log, never all held in memory).
    pub report: Option<PathBuf>,
    /// An import of up to this many new entries (or an eighth of the book's, if more) into a
    /// book publishes a delta segment; a bigger one rewrites the base instead
    /// ([`DELTA_MIN_THRESHOLD`] by default; docs/FORMAT.md §10.5).
    pub delta_min: u64,
    /// The game of the inputs (PGN for chess; WTHOR files or transcripts for Othello) and of
    /// the book, which must hold the same game.
    pub game: Game,
    /// `--facets`: what a new book keeps (default: all four for chess, none for Othello). A
    /// book that exists keeps what it was created with; asking for other facets is refused.
    pub facets: Option<crate::store::facet::FacetSet>,
}

impl ImportOptions {
    /// The import's worker threads: `jobs`, or every core for 0 (2 when the system does not
    /// say), at most 256.
    pub(crate) fn workers(&self) -> usize {
        match self.jobs {
            0 => std::thread::available_parallelism().map_or(2, |n| n.get()),
            j => j,
        }
        .clamp(1, 256)
    }
}

impl Default for ImportOptions {
    fn default() -> Self {
        ImportOptions {
            rules: CountRules {
                max_ply: DEFAULT_MAX_PLY,
                min_rating: None,
                facets: crate::store::facet::FacetSet::NONE,
            },
            facets: None,
            dedupe: false,
            store_games: true,
            force: false,
            rehash: false,
            jobs: 0,
            memory_mib: 256,
            writer: WriterOptions::default(),
            progress: Default::default(),
            lock_wait: Default::default(),
            keep_skipped: 100,
            report: None,
            delta_min: DELTA_MIN_THRESHOLD,
            game: Game::Chess,
        }
    }
}

/// What an input holds, and so where its games end (`source.rs` cuts chunks by it, the workers
/// parse by it).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum InputKind {
    /// PGN text: games end before a tag line after a blank line.
    Pgn,
    /// Othello transcripts: one game per line.
    OthelloLines,
    /// A WTHOR file: a header, then fixed-size records.
    Wthor,
}

#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct SkippedGame {
    pub file: String,
    pub line: u64,
    pub(crate) reason: String,
    pub detail: String,
}

/// An input that was not imported because it is not PGN text.
#[derive(Clone, Debug, Serialize, PartialEq, Eq)]
pub struct FailedInput {
    pub name: String,
    /// What is wrong with it and what to do (the whole message).
    pub error: String,
}

#[derive(Clone, Debug, Default, Serialize)]
pub struct ImportSummary {
    /// The book as the caller named it (for the text summary).
    #[serde(skip)]
    pub book_path: String,
    pub games_read: u64,
    pub games_imported: u64,
    pub games_skipped: u64,
    pub skipped_by_reason: BTreeMap<String, u64>,
    pub positions_added: u64,
    pub pairs_added: u64,
    /// Inputs skipped because the book already counted them.
    pub already_imported: Vec<String>,
    /// Inputs left out because they are not PGN text: not counted, not recorded (the
    /// command exits non-zero).
    pub failed_inputs: Vec<FailedInput>,
    /// Inputs this import read and recorded that held no game at all (empty, or blank): not
    /// an error, but what a failed producer feeding a pipe looks like (`zstd -dc missing.zst
    /// | bookdb import -`), so it is said on stderr.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub empty_inputs: Vec<String>,
    /// True if this run continued an interrupted import.
    pub resumed: bool,
    /// Sorted runs spilled to staging.
    pub(crate) runs: usize,
    /// `--dedupe`: the fingerprints of the games read outgrew their share of `--memory` and
    /// went to sorted runs in staging.
    pub(crate) dedupe_spilled: bool,
    /// How the book was changed.
    pub(crate) applied: Applied,
    pub elapsed_secs: f64,
    /// Time spent reading and replaying games, and merging runs into the book.
    pub(crate) read_secs: f64,
    pub(crate) apply_secs: f64,
    pub(crate) peak_rss_bytes: Option<u64>,
    pub book: BookMeta,
    /// Bytes of all the book's files (base and delta segments), as `stats` counts them.
    pub book_bytes: u64,
    /// The memory budget used, in MiB: `--memory`, capped at three quarters of what the
    /// machine has.
    pub memory_mib: usize,
    /// What the import did differently from what was asked (a `--memory` capped), also
    /// printed on stderr unless progress is off.
    pub warnings: Vec<String>,
    #[serde(skip)]
    pub skipped: Vec<SkippedGame>,
}

/// How an import changed the book: `applied` in the summary (`import --json`), as the
/// strings its serde names and [`Applied::as_str`] give.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub(crate) enum Applied {
    /// Not at all: every input was counted before.
    #[default]
    None,
    /// The new counts went into a new delta segment, published atomically (the folding policy
    /// may have merged small segments after it).
    Delta,
    /// The book's base was rewritten into a new file with the new counts and every segment
    /// folded in (a first import, or segments past their threshold).
    Rewrite,
    /// An earlier run of the same import committed and was killed before it cleaned up; this
    /// run only finished the cleanup.
    #[serde(rename = "committed before the interruption")]
    CommittedBeforeInterruption,
}

impl Applied {
    pub(crate) fn as_str(self) -> &'static str {
        match self {
            Applied::None => "none",
            Applied::Delta => "delta",
            Applied::Rewrite => "rewrite",
            Applied::CommittedBeforeInterruption => "committed before the interruption",
        }
    }
}

impl std::fmt::Display for Applied {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.as_str())
    }
}

/// The text summary of `bookdb import`: inputs already counted, a resumed run, games read,
/// imported and skipped (by reason), and what the book became.
impl std::fmt::Display for ImportSummary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let s = self;
        for name in &s.already_imported {
            writeln!(
                f,
                "{name}: already imported into {}; skipped (--force reads it again; a book that \
                 stores games, or a --dedupe import, still counts each game once)",
                s.book_path
            )?;
        }
        if s.resumed {
            writeln!(f, "resumed an interrupted import from its last checkpoint")?;
        }
        write!(
            f,
            "{} games read, {} imported, {} skipped",
            s.games_read, s.games_imported, s.games_skipped
        )?;
        if !s.skipped_by_reason.is_empty() {
            let reasons: Vec<String> = s
                .skipped_by_reason
                .iter()
                .map(|(k, v)| format!("{k}: {v}"))
                .collect();
            write!(f, " ({})", reasons.join(", "))?;
        }
        writeln!(f)?;
        write!(
            f,
            "+{} positions, +{} (position, move) pairs; book {}: {} positions, {} pairs, {} bytes ({:.2} bytes/pair) in {:.2}s",
            s.positions_added,
            s.pairs_added,
            s.book_path,
            s.book.positions,
            s.book.pairs,
            s.book_bytes,
            s.book_bytes as f64 / s.book.pairs.max(1) as f64,
            s.elapsed_secs
        )
    }
}

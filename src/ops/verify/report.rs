//! What `verify` reports: what it checked (files, generations, counts) and the problems it
//! found, as JSON and as text.

use std::fmt;

use serde::Serialize;

/// A file of the book and the generation it was published under.
#[derive(Clone, Debug, Default, Serialize)]
pub struct FileGeneration {
    pub file: String,
    pub generation: u64,
}

#[derive(Clone, Debug, Default, Serialize)]
pub struct VerifyReport {
    /// The book as the caller named it (for the text report).
    #[serde(skip)]
    pub book: String,
    pub blocks: u64,
    pub entries: u64,
    pub pairs: u64,
    /// Positions whose engine evaluations were checked (docs/FORMAT.md §13).
    pub evaluations: u64,
    /// Stored games checked (docs/FORMAT.md §15): every game block decoded, numbers dense,
    /// one id row per game naming its id.
    pub stored_games: u64,
    /// Positions whose game references were checked (docs/FORMAT.md §15.3): rebuilt from the
    /// file's games and compared, with the games' facts.
    pub game_ref_positions: u64,
    /// Key filter partitions checked (docs/FORMAT.md §4.7; files written before filters have
    /// none).
    pub key_filter_partitions: u64,
    /// Every failed check, most precise first; empty means the book is sound. Each names the
    /// file it concerns.
    pub problems: Vec<String>,
    /// Problems beyond the first `MAX_PROBLEMS` are only counted.
    pub problems_total: u64,
    /// The generation of the state checked: what a later `verify --since` takes to check only
    /// what is published after this run.
    pub generation: u64,
    /// `--since`, if given.
    pub since: Option<u64>,
    /// Files whose every block and entry were checked.
    pub checked_files: Vec<FileGeneration>,
    /// Files left out by `--since` (published at or before it).
    pub skipped_files: Vec<FileGeneration>,
    /// The manifest's file name, if the book has one (read and checked at open).
    pub manifest: Option<String>,
    /// Whether the merged view's counters were recounted over all files (not with `--since`).
    pub merged_view_checked: bool,
    /// Whether redb's integrity check ran on every checked file.
    pub redb_integrity_checked: bool,
    /// Threads that checked blocks.
    pub threads: usize,
    /// The memory budget used, in MiB: `--memory`, capped at three quarters of what the
    /// machine has.
    pub memory_mib: usize,
    /// What verify did differently from what was asked (a `--memory` capped).
    pub warnings: Vec<String>,
}

impl VerifyReport {
    pub fn ok(&self) -> bool {
        self.problems_total == 0
    }
    pub(super) fn problem(&mut self, p: impl Into<String>) {
        self.problems_total += 1;
        if self.problems.len() < MAX_PROBLEMS {
            self.problems.push(p.into());
        }
    }
    /// Adds another report's counts and problems, each problem prefixed with `prefix`.
    pub(super) fn absorb(&mut self, sub: VerifyReport, prefix: &str) {
        self.blocks += sub.blocks;
        self.entries += sub.entries;
        self.pairs += sub.pairs;
        self.evaluations += sub.evaluations;
        self.stored_games += sub.stored_games;
        self.game_ref_positions += sub.game_ref_positions;
        self.key_filter_partitions += sub.key_filter_partitions;
        self.problems_total += sub.problems_total - sub.problems.len() as u64;
        for p in sub.problems {
            self.problem(format!("{prefix}{p}"));
        }
    }
}

const MAX_PROBLEMS: usize = 200;

/// What a report says was checked (the generation to pass to a later `--since`, the files
/// checked and skipped, redb's check, the merged view), then the counts and the verdict.
impl fmt::Display for VerifyReport {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let r = self;
        let list = |files: &[FileGeneration]| {
            files
                .iter()
                .map(|f| format!("{} (generation {})", f.file, f.generation))
                .collect::<Vec<_>>()
                .join(", ")
        };
        writeln!(f, "generation        {}", r.generation)?;
        writeln!(f, "checked           {}", list(&r.checked_files))?;
        if let Some(g) = r.since {
            writeln!(
                f,
                "skipped           {} (published at or before generation {g})",
                if r.skipped_files.is_empty() {
                    "nothing".to_string()
                } else {
                    list(&r.skipped_files)
                }
            )?;
        }
        if let Some(m) = &r.manifest {
            writeln!(f, "manifest          {m} (checksum and structure)")?;
        }
        writeln!(
            f,
            "redb integrity    {}",
            if r.redb_integrity_checked {
                "checked (on private copies)"
            } else {
                "skipped (--no-redb-check)"
            }
        )?;
        if r.checked_files.len() + r.skipped_files.len() > 1 {
            writeln!(
                f,
                "merged view       {}",
                if r.merged_view_checked {
                    "recounted"
                } else {
                    "not recounted (--since)"
                }
            )?;
        }
        write!(
            f,
            "{}: {} blocks, {} entries, {} pairs, {} evaluated positions, {} stored games and the references of {} positions checked; {}",
            r.book,
            r.blocks,
            r.entries,
            r.pairs,
            r.evaluations,
            r.stored_games,
            r.game_ref_positions,
            if r.ok() {
                "OK".to_string()
            } else {
                format!("{} problem(s)", r.problems_total)
            }
        )
    }
}

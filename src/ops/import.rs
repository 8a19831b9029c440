//! `bookdb import`: PGN games in, book out.

use std::collections::{BTreeMap, HashMap, HashSet};
use std::path::Path;
use std::time::Instant;

use serde::Serialize;

use super::input;
use super::pgn::{CountRules, CountedGame, GameReader, GameResult, game_fingerprint, replay};
use super::progress::Progress;
use crate::error::{Error, Result};
use crate::store::entry::MergeIter;
use crate::store::{Book, BookMeta, BookWriter, Entry, MoveRec, WriterOptions};

#[derive(Clone, Debug)]
pub struct ImportOptions {
    pub rules: CountRules,
    pub dedupe: bool,
    pub writer: WriterOptions,
    pub show_progress: bool,
    /// How many skipped games are kept with their details (all are counted).
    pub keep_skipped: usize,
}

impl Default for ImportOptions {
    fn default() -> Self {
        ImportOptions {
            rules: CountRules {
                max_ply: DEFAULT_MAX_PLY,
                min_rating: None,
            },
            dedupe: false,
            writer: WriterOptions::default(),
            show_progress: false,
            keep_skipped: usize::MAX,
        }
    }
}

/// Default `--max-ply`, as the lichess opening explorer.
pub const DEFAULT_MAX_PLY: usize = 50;

#[derive(Clone, Debug, Serialize)]
pub struct SkippedGame {
    pub file: String,
    pub line: u64,
    pub reason: String,
    pub detail: String,
}

#[derive(Clone, Debug, Default, Serialize)]
pub struct ImportSummary {
    pub games_read: u64,
    pub games_imported: u64,
    pub games_skipped: u64,
    pub skipped_by_reason: BTreeMap<String, u64>,
    pub positions_added: u64,
    pub pairs_added: u64,
    pub elapsed_secs: f64,
    pub book: BookMeta,
    pub book_bytes: u64,
    #[serde(skip)]
    pub skipped: Vec<SkippedGame>,
}

/// In-memory aggregation of counted games, keyed by exact packed position.
#[derive(Default)]
pub struct Aggregator {
    map: HashMap<Vec<u8>, (u64, Vec<MoveRec>)>,
}

impl Aggregator {
    pub fn add(&mut self, g: &CountedGame) {
        for (pair, white_moved) in &g.pairs {
            let (_, moves) = self
                .map
                .entry(pair.pos.clone())
                .or_insert_with(|| (pair.key, Vec::with_capacity(1)));
            let i = match moves.iter().position(|m| m.mv == pair.mv) {
                Some(i) => i,
                None => {
                    moves.push(MoveRec {
                        mv: pair.mv,
                        ..Default::default()
                    });
                    moves.len() - 1
                }
            };
            let rec = &mut moves[i];
            match g.result {
                GameResult::White => rec.white += 1,
                GameResult::Black => rec.black += 1,
                GameResult::Draw => rec.draws += 1,
                GameResult::Unknown => rec.unknown += 1,
            }
            let elo = if *white_moved { g.white_elo } else { g.black_elo };
            if let Some(e) = elo {
                rec.rating_sum += u64::from(e);
                rec.rating_count += 1;
            }
        }
    }

    pub fn len(&self) -> usize {
        self.map.len()
    }

    pub fn is_empty(&self) -> bool {
        self.map.is_empty()
    }

    /// Entries sorted by (key, position).
    pub fn into_sorted(self) -> Vec<Entry> {
        let mut v: Vec<Entry> = self
            .map
            .into_iter()
            .map(|(pos, (key, moves))| {
                let mut e = Entry {
                    key,
                    pos: Some(pos),
                    moves,
                };
                e.normalize();
                e
            })
            .collect();
        v.sort_unstable_by(|a, b| a.cmp_id(b));
        v
    }
}

/// Imports PGN inputs into the book at `book_path` (created if absent).
pub fn import(book_path: &Path, inputs: &[String], opts: &ImportOptions) -> Result<ImportSummary> {
    let start = Instant::now();
    let mut summary = ImportSummary::default();
    let mut agg = Aggregator::default();
    let mut seen: HashSet<u128> = HashSet::new();
    let progress = Progress::new(opts.show_progress);
    for path in inputs {
        let inp = input::open(path)?;
        progress.start_input(&inp.name, inp.raw_size);
        let raw_read = inp.raw_read.clone();
        let name = inp.name.clone();
        let mut reader = GameReader::new(inp.reader);
        loop {
            let game = match reader.next_game() {
                Ok(Some(g)) => g,
                Ok(None) => break,
                Err(e) => return Err(Error::io(format!("reading {name}"), e)),
            };
            summary.games_read += 1;
            let outcome = if opts.dedupe && !seen.insert(game_fingerprint(&game)) {
                Err(super::pgn::SkipReason::Duplicate)
            } else {
                replay(&game, &opts.rules)
            };
            match outcome {
                Ok(counted) => {
                    summary.games_imported += 1;
                    agg.add(&counted);
                }
                Err(reason) => {
                    summary.games_skipped += 1;
                    *summary
                        .skipped_by_reason
                        .entry(reason.kind().to_string())
                        .or_default() += 1;
                    if summary.skipped.len() < opts.keep_skipped {
                        summary.skipped.push(SkippedGame {
                            file: name.clone(),
                            line: game.line,
                            reason: reason.kind().to_string(),
                            detail: reason.to_string(),
                        });
                    }
                }
            }
            if summary.games_read % 1024 == 0 {
                progress.update(summary.games_read, raw_read.load(std::sync::atomic::Ordering::Relaxed));
            }
        }
    }
    progress.finish_reading(summary.games_read);
    let new_entries = agg.into_sorted();
    let before = existing_meta(book_path)?;
    let meta = write_merged(book_path, new_entries, summary.games_imported, &opts.writer)?;
    summary.positions_added = meta.positions.saturating_sub(before.positions);
    summary.pairs_added = meta.pairs.saturating_sub(before.pairs);
    summary.book = meta;
    summary.book_bytes = std::fs::metadata(book_path).map(|m| m.len()).unwrap_or(0);
    summary.elapsed_secs = start.elapsed().as_secs_f64();
    progress.clear();
    Ok(summary)
}

fn existing_meta(book_path: &Path) -> Result<BookMeta> {
    if book_path.exists() {
        Ok(Book::open(book_path, crate::chess_codec())?.meta().clone())
    } else {
        Ok(BookMeta::default())
    }
}

/// Writes `book_path` anew as the merge of its current content (if any) and sorted entries.
pub fn write_merged(
    book_path: &Path,
    new_entries: Vec<Entry>,
    new_games: u64,
    opts: &WriterOptions,
) -> Result<BookMeta> {
    let codec = crate::chess_codec();
    let old = if book_path.exists() {
        Some(Book::open(book_path, codec.clone())?)
    } else {
        None
    };
    let mut w = BookWriter::create(book_path, codec, opts.clone())?;
    w.add_games(new_games);
    let fresh: Box<dyn Iterator<Item = Result<Entry>>> = Box::new(new_entries.into_iter().map(Ok));
    match &old {
        Some(book) => {
            w.add_games(book.meta().games);
            let merged = MergeIter::new(vec![
                Box::new(book.iter()?) as Box<dyn Iterator<Item = Result<Entry>>>,
                fresh,
            ]);
            for e in merged {
                w.push(e?)?;
            }
        }
        None => {
            for e in fresh {
                w.push(e?)?;
            }
        }
    }
    w.finish()
}

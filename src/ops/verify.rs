//! `bookdb verify` and `bookdb stats`.

use std::path::Path;

use serde::Serialize;

use crate::chess::{PosState, legal_move, move_uci};
use crate::error::{Corruption, Result, StoreError};
use crate::ops::game::Game;
use crate::othello::{Board, square_name};
use crate::store::book::BookFile;
use crate::store::{Book, BookMeta, Entry};

#[derive(Clone, Debug, Default, Serialize)]
pub struct VerifyReport {
    pub blocks: u64,
    pub entries: u64,
    pub pairs: u64,
    /// Every failed check, most precise first; empty means the book is sound.
    pub problems: Vec<String>,
    /// Problems beyond the first `MAX_PROBLEMS` are only counted.
    pub problems_total: u64,
}

impl VerifyReport {
    pub fn ok(&self) -> bool {
        self.problems_total == 0
    }
    fn problem(&mut self, p: impl Into<String>) {
        self.problems_total += 1;
        if self.problems.len() < MAX_PROBLEMS {
            self.problems.push(p.into());
        }
    }
}

const MAX_PROBLEMS: usize = 200;

/// Checks everything: every file of the book (block checksums and headers, every entry
/// decodes, keys recompute to the stored ones, order, positions legal, moves legal, the file's
/// counters) and, when it has delta segments, the merged view against the book's counters.
pub fn verify(path: &Path) -> Result<VerifyReport> {
    let mut report = VerifyReport::default();
    // Verify reads through a read-only handle (redb's own check_integrity needs a writable one
    // and may change the file). The only write is redb's crash recovery when the last writer
    // was killed mid-transaction, which any reader needs before it can open the book.
    if !path.exists() {
        return Err(StoreError::BookNotFound {
            path: path.to_path_buf(),
        }
        .into());
    }
    let (game, book) = Game::open(path)?;
    let several = book.files().len() > 1;
    for file in book.files() {
        let name = file_name(file.path());
        let place = |p: String| if several { format!("{name}: {p}") } else { p };
        let mut sub = VerifyReport::default();
        verify_file(file, game, &mut sub)?;
        report.blocks += sub.blocks;
        report.entries += sub.entries;
        report.pairs += sub.pairs;
        report.problems_total += sub.problems_total - sub.problems.len() as u64;
        for p in sub.problems {
            report.problem(place(p));
        }
    }
    if several {
        // The merged view the book answers with: the newest segment's counters describe it.
        let mut counted = BookMeta::default();
        let mut last_key = None;
        for item in book.iter()? {
            match item {
                Ok(e) => {
                    count_entry(&e, &mut counted, &mut last_key);
                }
                Err(err) => {
                    report.problem(err.to_string());
                    break;
                }
            }
        }
        let stored = logical(book.meta());
        counted.games = stored.games;
        if stored != counted {
            report.problem(format!(
                "the book's counters (newest segment) disagree with its merged content: stored \
                 {stored:?}, counted {counted:?}"
            ));
        }
    }
    Ok(report)
}

/// The file name of `path`, for problem reports.
fn file_name(path: &Path) -> String {
    path.file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_else(|| path.display().to_string())
}

/// The counters that describe content (not storage).
fn logical(m: &BookMeta) -> BookMeta {
    BookMeta {
        games: m.games,
        positions: m.positions,
        key_only: m.key_only,
        pairs: m.pairs,
        collisions: m.collisions,
        ..BookMeta::default()
    }
}

fn count_entry(e: &Entry, counted: &mut BookMeta, last_key: &mut Option<u64>) {
    if e.pos.is_some() {
        counted.positions += 1;
    } else {
        counted.key_only += 1;
    }
    counted.pairs += e.moves.len() as u64;
    if *last_key == Some(e.key) {
        counted.collisions += 1;
    }
    *last_key = Some(e.key);
}

/// Checks one file of a book: block checksums and headers, every entry decodes, keys recompute
/// to the stored ones, order, legality, and the file's own counters.
fn verify_file(book: &BookFile, game: Game, report: &mut VerifyReport) -> Result<()> {
    let check_entry = |place: &str, e: &Entry, report: &mut VerifyReport| match game {
        Game::Chess => check_entry(place, e, report),
        Game::Othello { canonical } => check_othello_entry(place, e, canonical, report),
    };
    let mut counted = BookMeta::default();
    let mut last: Option<(u64, Option<Vec<u8>>)> = None;
    let mut last_key = None;
    book.for_each_block(|block_key, bytes| {
        report.blocks += 1;
        counted.blocks += 1;
        counted.stored_bytes += bytes.len() as u64;
        if let Ok(h) = crate::store::BlockHeader::parse(block_key, bytes) {
            let b_len = bytes.len() - crate::store::block::HEADER_LEN - h.a_len as usize;
            counted.raw_bytes += u64::from(h.raw_len) + b_len as u64;
        }
        let entries = match book.decode_block(block_key, bytes) {
            Ok(e) => e,
            Err(c) => {
                report.problem(c.to_string());
                return Ok(());
            }
        };
        if entries.first().map(|e| e.key) != Some(block_key) {
            report.problem(
                Corruption::Header {
                    block_key,
                    reason: format!(
                        "first entry key {:016x} differs from the block's table key",
                        entries.first().map_or(0, |e| e.key)
                    ),
                }
                .to_string(),
            );
        }
        if let Some((k, _)) = &last
            && *k == block_key
        {
            report.problem(format!(
                "block {block_key:016x}: key {k:016x} is split across two blocks"
            ));
        }
        for (i, e) in entries.iter().enumerate() {
            report.entries += 1;
            report.pairs += e.moves.len() as u64;
            if let Some((k, p)) = &last {
                let ord = k.cmp(&e.key).then_with(|| p.as_deref().cmp(&e.pos.as_deref()));
                if ord != std::cmp::Ordering::Less {
                    report.problem(format!(
                        "block {block_key:016x}, entry {i}: key {:016x} out of order after {k:016x}",
                        e.key
                    ));
                }
            }
            check_entry(&format!("block {block_key:016x}, entry {i}"), e, report);
            count_entry(e, &mut counted, &mut last_key);
            last = Some((e.key, e.pos.clone()));
        }
        Ok(())
    })?;
    let meta = book.meta();
    counted.games = meta.games;
    if *meta != counted {
        report.problem(format!(
            "meta counters disagree with the blocks: stored {meta:?}, counted {counted:?}"
        ));
    }
    Ok(())
}

/// The checks of any game's entry: moves present, sorted, each with games and no more
/// ratings than games (`name` spells a move).
fn check_moves(place: &str, e: &Entry, name: fn(u16) -> String, report: &mut VerifyReport) {
    let bad = |reason: String| format!("{place}: {reason}");
    if e.moves.is_empty() {
        report.problem(bad(format!("key {:016x} has no moves", e.key)));
    }
    if e.moves.windows(2).any(|w| w[0].mv >= w[1].mv) {
        report.problem(bad(format!(
            "key {:016x}: moves unsorted or repeated",
            e.key
        )));
    }
    for m in &e.moves {
        if m.games() == 0 && m.extra.is_none() {
            report.problem(bad(format!(
                "key {:016x}: move {} has no games",
                e.key,
                name(m.mv)
            )));
        }
        if m.rating_count > m.games() {
            report.problem(bad(format!(
                "key {:016x}: move {} has more ratings than games",
                e.key,
                name(m.mv)
            )));
        }
    }
}

/// An Othello entry: its position decodes, is its own least image in a canonical book, and
/// every move is a legal square there.
fn check_othello_entry(place: &str, e: &Entry, canonical: bool, report: &mut VerifyReport) {
    let name = |mv: u16| match u8::try_from(mv) {
        Ok(sq) if sq < 64 => square_name(sq),
        _ => format!("#{mv}"),
    };
    check_moves(place, e, name, report);
    let bad = |reason: String| format!("{place}: {reason}");
    let Some(p) = &e.pos else {
        report.problem(bad(format!(
            "key {:016x}: an Othello book entry without a position",
            e.key
        )));
        return;
    };
    let board = match Board::unpack(p) {
        Ok(b) => b,
        Err(err) => {
            report.problem(bad(format!(
                "key {:016x}: packed position invalid: {err}",
                e.key
            )));
            return;
        }
    };
    if canonical && board.canonical().1 != 0 {
        report.problem(bad(format!(
            "{}: not the least of its symmetric images in a canonical book",
            board.board_string()
        )));
    }
    let legal = board.legal();
    for m in &e.moves {
        if m.mv >= 64 || legal & (1u64 << m.mv) == 0 {
            report.problem(bad(format!(
                "{}: move {} is not legal",
                board.board_string(),
                name(m.mv)
            )));
        }
    }
}

fn check_entry(place: &str, e: &Entry, report: &mut VerifyReport) {
    check_moves(place, e, move_uci, report);
    let bad = |reason: String| format!("{place}: {reason}");
    let Some(p) = &e.pos else { return };
    let state = match PosState::unpack(p) {
        Ok(s) => s,
        Err(err) => {
            report.problem(bad(format!(
                "key {:016x}: packed position invalid: {err}",
                e.key
            )));
            return;
        }
    };
    let chess = match state.to_chess() {
        Ok(c) => c,
        Err(err) => {
            report.problem(bad(format!("{}: {err}", state.fen())));
            return;
        }
    };
    for m in &e.moves {
        if legal_move(&chess, m.mv).is_none() {
            report.problem(bad(format!(
                "{}: move {} is not legal",
                state.fen(),
                move_uci(m.mv)
            )));
        }
    }
}

#[derive(Clone, Debug, Serialize)]
pub struct Stats {
    pub path: String,
    /// The game the book holds (`chess`, `Othello`, `canonical Othello (--canonical)`).
    pub game: String,
    pub format_version: u32,
    pub games: u64,
    pub positions: u64,
    pub key_only: u64,
    pub pairs: u64,
    pub collisions: u64,
    pub blocks: u64,
    pub raw_bytes: u64,
    pub stored_bytes: u64,
    pub dictionary_bytes: u64,
    /// Game fingerprints recorded by `--dedupe` imports.
    pub dedupe_games: u64,
    /// Bytes of all the book's files (base and delta segments).
    pub file_bytes: u64,
    pub bytes_per_pair: f64,
    pub stored_bytes_per_pair: f64,
    /// The generation of the state shown (docs/FORMAT.md §10).
    pub generation: u64,
    /// Delta segments over the base, and the entries they hold (folded into the base by
    /// `compact` or automatically).
    pub segments: u64,
    pub segment_entries: u64,
}

pub fn stats(path: &Path) -> Result<Stats> {
    let (game, book) = Game::open(path)?;
    stats_of(path, game, &book)
}

/// [`stats`] of a book already open (a server's snapshot): `path` names it in the answer.
pub fn stats_of(path: &Path, game: Game, book: &Book) -> Result<Stats> {
    let m = book.meta();
    let file_bytes = book.file_bytes();
    let per = |b: u64| {
        if m.pairs == 0 {
            0.0
        } else {
            b as f64 / m.pairs as f64
        }
    };
    Ok(Stats {
        path: path.display().to_string(),
        game: game.to_string(),
        format_version: crate::store::book::FORMAT_VERSION,
        games: m.games,
        positions: m.positions,
        key_only: m.key_only,
        pairs: m.pairs,
        collisions: m.collisions,
        blocks: m.blocks,
        raw_bytes: m.raw_bytes,
        stored_bytes: m.stored_bytes,
        dictionary_bytes: book.dictionaries().values().map(|d| d.len() as u64).sum(),
        dedupe_games: book.game_fingerprint_count()?,
        file_bytes,
        bytes_per_pair: per(file_bytes),
        stored_bytes_per_pair: per(m.stored_bytes),
        generation: book.generation(),
        segments: book.files().len() as u64 - 1,
        segment_entries: m.delta_entries,
    })
}

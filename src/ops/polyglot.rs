//! Polyglot interop: `bookdb export --format polyglot|jsonl` and `bookdb import-polyglot`.
//!
//! # The `.bin` format
//!
//! A Polyglot book is a sequence of 16-byte big-endian entries `(key u64, move u16, weight u16,
//! learn u32)` sorted by key. The move is `to file` (bits 0–2), `to rank` (3–5), `from file`
//! (6–8), `from rank` (9–11), promotion (12–14: 1 knight, 2 bishop, 3 rook, 4 queen), i.e. the
//! to-square index in bits 0–5 and the from-square index in bits 6–11 (a1 = 0 … h8 = 63).
//! Castling is written king-takes-rook (`e1h1`, `e1a1`, `e8h8`, `e8a8`).
//!
//! # Export (weights = `polyglot make-book`'s rule)
//!
//! Read from PolyGlot 2.0.4 (Debian `polyglot_2.0.4+git20210322`, `book_make.c`):
//! - `book_insert()`: per (key, move) it keeps `n` (games) and `sum += result + 1`, where
//!   `result` is +1 if the mover won, −1 if he lost and 0 for **any other** `Result` tag: `1/2-1/2`
//!   and also `*` or a missing tag (pgn.c defaults `result` to `"*"`). So for the side to move
//!   `sum = 2·wins + draws + unknown`. We use exactly that (`unknown` counts like a draw).
//! - When an entry's `n` reaches `COUNT_MAX` = 16384, `halve_stats()` halves `n` and `sum` of
//!   every entry of that key, rounding up: `(x + 1) / 2`. Polyglot does this while counting, so
//!   its result depends on the order of the games; from aggregate counts we halve every move of
//!   the key until the largest `n` is below 16384 (same invariant, same ratios up to rounding;
//!   identical whenever no move reaches 16384 games). The weight is `sum` (< 32768, fits 16 bits).
//! - `keep_entry()`: drop if `n < min_game`; drop if `sum == 0` (every game lost by the mover);
//!   drop if `sum / n / 2 < min_score / 100` (doubles, as polyglot computes it); `-only-white`
//!   drops entries with black to move and `-only-black` those with white to move; drop if the
//!   written score is 0. `-uniform` writes weight 1 for every kept entry. `learn` is 0.
//! - `book_save()` sorts by key, then by weight, highest first (`key_compare`); ties among equal
//!   weights are written here by ascending move code (polyglot's `qsort` leaves them unordered).
//!
//! Polyglot counts a (position, move) every time it occurs in a game, while bookdb counts it at
//! most once per game (DESIGN §2), so a game that repeats a position within `max_ply` gives
//! polyglot a higher `n`/`sum` for the repeated pairs. The (key, move) sets are the same.
//!
//! Moves imported from a Polyglot book (`MoveRec::polyglot = Some`) with no game counts are
//! written with their stored weight and learn, unchanged: `--min-games`/`--min-score` do not
//! apply to them (they have no games), `--only-white`/`--only-black` apply when the position is
//! known, `--uniform` writes 1 for a non-zero stored weight. A move with game counts is weighted
//! by its counts (its stored `learn` is kept). Key-only entries (no position) are written as
//! stored. Moves of all entries with one key (a key collision) are combined per Polyglot move,
//! as polyglot's own hash table does.
//!
//! # Import
//!
//! `import-polyglot` rejects files that are not Polyglot books: shorter than one entry, text or
//! HTML, keys not (mostly) ascending, or many impossible move codes (from = to, promotion code
//! above 4). Real defects are tolerated: a trailing partial entry is ignored (warning), entries
//! with key `ffffffffffffffff` (Rodent's end sentinel) and impossible move codes are skipped,
//! out-of-order entries are sorted, duplicate (key, move) entries are merged keeping the highest
//! weight and the highest learn value (a book lists a move once; a duplicate is a defect, not a
//! second opinion), weight-0 entries are kept.
//!
//! Positions are reconstructed by a breadth-first walk from the start position and from every
//! position of the target book (and of the files imported before in the same command) whose key
//! is in the file, following the file's own moves: a move is placed at a position if it is
//! legal there (castling given as king-takes-rook or as the king's two-square move `e1g1`), and
//! the child position is visited if its key is in the file. If the child's key is not in the
//! file, every legal reply is tried once and the positions after them whose keys are in the file
//! are visited: one bridging ply, so that books holding one side's moves only (repertoire books,
//! per-player books, `-only-white` books) and books without the start position are placed too.
//! A position is only ever placed under a key the file lists (a 64-bit match). Placed moves are
//! stored with the book's move code (castling as `e1g1`), `polyglot = Some(weight, learn)` and
//! zero counts.
//! Moves that are legal in no reached position of their key, and entries whose key is never
//! reached, go into a key-only entry of that key with the raw Polyglot squares: from, to and
//! promotion are translated to the book's code layout without interpretation (castling stays
//! king-takes-rook, `e1h1`, since without the position a rook move `e1h1` cannot be told from
//! castling), so export writes them back bit for bit.
//!
//! The new entries are merged with the book's content (if the book exists) and the file is
//! replaced atomically (under the book's writer lock, keeping its games count and `imports`
//! records). Each imported file is recorded in the `imports` table as `polyglot:<xxh3-128 of its
//! bytes>`; a file the book already lists is skipped, as `bookdb import` does with PGN, unless
//! `--force`. Merging follows `polyglot merge-book`: weights of the same move from different
//! files (or a forced re-import) add up, saturating at 65535; learn keeps the larger value.

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};
use std::time::Instant;

use serde::Serialize;
use shakmaty::{Chess, Position};

use super::import::{WriterLock, remove_stale_temp_books};
use super::query;
use crate::chess::{PosState, encode_move, polyglot_key};
use crate::error::{Error, Result};
use crate::store::entry::MergeIter;
use crate::store::{Book, BookMeta, BookWriter, Entry, MoveRec, PolyglotExtra, WriterOptions};

// The move encoding lives in the chess layer; re-exported under its old paths.
pub use crate::chess::polyglot::{
    code_to_pg, pg_decode, pg_encode, pg_from_move, pg_in_moves, pg_to_legal, raw_code_from_pg,
    raw_pg_from_code,
};

/// Bytes per Polyglot entry.
pub const ENTRY_BYTES: usize = 16;
/// Key of the end-of-book sentinel some engines (Rodent) append.
pub const SENTINEL_KEY: u64 = u64::MAX;
/// `COUNT_MAX` of polyglot's `book_make.c`: counts of a key are halved when one reaches it.
pub const COUNT_MAX: u64 = 16384;

// ---------------------------------------------------------------------------------------------
// Entries
// ---------------------------------------------------------------------------------------------

/// One 16-byte Polyglot entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct PgEntry {
    pub key: u64,
    pub mv: u16,
    pub weight: u16,
    pub learn: u32,
}

impl PgEntry {
    pub fn to_bytes(&self) -> [u8; ENTRY_BYTES] {
        let mut b = [0u8; ENTRY_BYTES];
        b[0..8].copy_from_slice(&self.key.to_be_bytes());
        b[8..10].copy_from_slice(&self.mv.to_be_bytes());
        b[10..12].copy_from_slice(&self.weight.to_be_bytes());
        b[12..16].copy_from_slice(&self.learn.to_be_bytes());
        b
    }

    pub fn from_bytes(b: &[u8; ENTRY_BYTES]) -> PgEntry {
        PgEntry {
            key: u64::from_be_bytes([b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7]]),
            mv: u16::from_be_bytes([b[8], b[9]]),
            weight: u16::from_be_bytes([b[10], b[11]]),
            learn: u32::from_be_bytes([b[12], b[13], b[14], b[15]]),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Reading .bin files
// ---------------------------------------------------------------------------------------------

/// The complete entries of a Polyglot file, in file order.
#[derive(Clone, Debug, Default)]
pub struct ParsedBin {
    pub entries: Vec<PgEntry>,
    /// Bytes after the last complete entry (a partial entry), ignored.
    pub trailing_bytes: usize,
    /// Entries whose key is smaller than the previous entry's.
    pub out_of_order: u64,
    /// Entries (other than sentinels) with an impossible move code.
    pub invalid_moves: u64,
}

/// Parses a Polyglot book, or says why the bytes are not one.
pub fn parse_bin(data: &[u8]) -> std::result::Result<ParsedBin, String> {
    if data.is_empty() {
        return Ok(ParsedBin::default());
    }
    if data.len() < ENTRY_BYTES {
        return Err(format!(
            "{} byte(s) is too short for a Polyglot book (16-byte entries)",
            data.len()
        ));
    }
    let head = &data[..data.len().min(512)];
    let text_start = head
        .iter()
        .position(|b| !b.is_ascii_whitespace())
        .unwrap_or(0);
    if head[text_start] == b'<' {
        let s = String::from_utf8_lossy(&head[text_start..head.len().min(text_start + 20)])
            .replace(['\n', '\r'], " ");
        return Err(format!("it is an HTML/XML document (starts with {s:?})"));
    }
    if head
        .iter()
        .all(|&b| b.is_ascii_graphic() || b.is_ascii_whitespace())
    {
        return Err("it is a text file".to_string());
    }
    let n = data.len() / ENTRY_BYTES;
    let mut out = ParsedBin {
        entries: Vec::with_capacity(n),
        trailing_bytes: data.len() % ENTRY_BYTES,
        ..Default::default()
    };
    for chunk in data.chunks_exact(ENTRY_BYTES) {
        let mut b = [0u8; ENTRY_BYTES];
        b.copy_from_slice(chunk);
        let e = PgEntry::from_bytes(&b);
        if out.entries.last().is_some_and(|p| p.key > e.key) {
            out.out_of_order += 1;
        }
        if e.key != SENTINEL_KEY && pg_decode(e.mv).is_none() {
            out.invalid_moves += 1;
        }
        out.entries.push(e);
    }
    // Real books (even defective ones) are sorted and hold legal-looking moves; random or
    // foreign binary data has about half its keys descending and many impossible moves.
    let limit = n as u64 / 5 + 2;
    if out.out_of_order > limit {
        return Err(format!(
            "keys are not in ascending order ({} of {n} entries out of order)",
            out.out_of_order
        ));
    }
    if out.invalid_moves > limit {
        return Err(format!(
            "{} of {n} entries have impossible move codes",
            out.invalid_moves
        ));
    }
    Ok(out)
}

/// Reads and parses a Polyglot file; the error names the file.
pub fn read_bin(path: &Path) -> Result<ParsedBin> {
    read_bin_fingerprinted(path).map(|(p, _)| p)
}

/// [`read_bin`] plus the file's fingerprint (xxh3-128 of its bytes, 32 hex digits, as
/// `bookdb import` fingerprints its inputs).
fn read_bin_fingerprinted(path: &Path) -> Result<(ParsedBin, String)> {
    let data =
        std::fs::read(path).map_err(|e| Error::io(format!("reading {}", path.display()), e))?;
    let parsed = parse_bin(&data).map_err(|reason| {
        Error::Invalid(format!("{}: not a Polyglot book: {reason}", path.display()))
    })?;
    Ok((
        parsed,
        format!("{:032x}", xxhash_rust::xxh3::xxh3_128(&data)),
    ))
}

// ---------------------------------------------------------------------------------------------
// import-polyglot
// ---------------------------------------------------------------------------------------------

#[derive(Clone, Debug, Default)]
pub struct PolyglotImportOptions {
    pub writer: WriterOptions,
    /// Import files the book already lists as imported (their weights then add up again).
    pub force: bool,
}

/// Prefix of the `imports` table keys of Polyglot files (`polyglot:<xxh3-128 of the bytes>`),
/// apart from the PGN inputs' keys.
pub const IMPORT_KEY_PREFIX: &str = "polyglot:";

/// What happened to one input file. Every complete entry read is counted exactly once in
/// `placed`, `key_only` or `skipped`.
#[derive(Clone, Debug, Default, Serialize)]
pub struct FileSummary {
    pub file: String,
    pub bytes: u64,
    pub entries_read: u64,
    /// Entries placed as moves of reconstructed positions.
    pub placed: u64,
    /// Entries stored in key-only entries (key never reached, or move illegal where reached).
    pub key_only: u64,
    /// Entries dropped, by reason: `sentinel`, `invalid_move`, `duplicate`.
    pub skipped: BTreeMap<String, u64>,
    /// Distinct keys in the file (after skipping).
    pub keys: u64,
    /// Positions reconstructed.
    pub positions: u64,
    /// Positions reached through one move that is not in the file (see [`place_file`]).
    pub bridged_positions: u64,
    /// Keys whose entries went into a key-only entry (some or all of their moves).
    pub key_only_entries: u64,
    /// Castling moves written as the king's two-square move (`e1g1`) instead of `e1h1`.
    pub castling_king_two_squares: u64,
    pub trailing_bytes: u64,
    pub out_of_order: u64,
    pub warnings: Vec<String>,
}

#[derive(Clone, Debug, Default, Serialize)]
pub struct PolyglotImportSummary {
    pub files: Vec<FileSummary>,
    /// Inputs skipped because the book lists them as imported already (see `--force`).
    pub already_imported: Vec<String>,
    pub entries_read: u64,
    pub placed: u64,
    pub key_only: u64,
    pub skipped_by_reason: BTreeMap<String, u64>,
    pub book: BookMeta,
    pub book_bytes: u64,
    pub elapsed_secs: f64,
}

impl std::fmt::Display for PolyglotImportSummary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        for name in &self.already_imported {
            writeln!(
                f,
                "{name}: already imported into this book; skipped (use --force to import it again)"
            )?;
        }
        for s in &self.files {
            writeln!(
                f,
                "{}: {} entries read, {} placed in {} positions, {} key-only ({} keys), {} skipped{}",
                s.file,
                s.entries_read,
                s.placed,
                s.positions,
                s.key_only,
                s.key_only_entries,
                s.skipped.values().sum::<u64>(),
                fmt_reasons(&s.skipped)
            )?;
        }
        if self.files.len() > 1 {
            writeln!(
                f,
                "total: {} entries read, {} placed, {} key-only, {} skipped{}",
                self.entries_read,
                self.placed,
                self.key_only,
                self.skipped_by_reason.values().sum::<u64>(),
                fmt_reasons(&self.skipped_by_reason)
            )?;
        }
        write!(
            f,
            "book: {} positions, {} key-only entries, {} pairs, {} bytes in {:.2}s",
            self.book.positions,
            self.book.key_only,
            self.book.pairs,
            self.book_bytes,
            self.elapsed_secs
        )
    }
}

fn fmt_reasons(m: &BTreeMap<String, u64>) -> String {
    if m.values().all(|&v| v == 0) {
        return String::new();
    }
    let parts: Vec<String> = m
        .iter()
        .filter(|(_, v)| **v > 0)
        .map(|(k, v)| format!("{k}: {v}"))
        .collect();
    format!(" ({})", parts.join(", "))
}

/// The moves of one key of a file, deduplicated: (polyglot move, weight, learn).
struct KeyMoves {
    moves: Vec<(u16, u16, u32)>,
    used: Vec<bool>,
}

/// Deduplicates and groups the usable entries of a file by key.
fn group_entries(parsed: &ParsedBin, sum: &mut FileSummary) -> HashMap<u64, KeyMoves> {
    let mut entries: Vec<PgEntry> = Vec::with_capacity(parsed.entries.len());
    for e in &parsed.entries {
        if e.key == SENTINEL_KEY {
            *sum.skipped.entry("sentinel".into()).or_default() += 1;
        } else if pg_decode(e.mv).is_none() {
            *sum.skipped.entry("invalid_move".into()).or_default() += 1;
        } else {
            entries.push(*e);
        }
    }
    entries.sort_unstable_by_key(|e| (e.key, e.mv));
    let mut conflicting = 0u64;
    let mut map: HashMap<u64, KeyMoves> = HashMap::new();
    let mut last: Option<PgEntry> = None;
    for e in entries {
        let km = map.entry(e.key).or_insert_with(|| KeyMoves {
            moves: Vec::new(),
            used: Vec::new(),
        });
        if let Some(l) = last
            && l.key == e.key
            && l.mv == e.mv
        {
            *sum.skipped.entry("duplicate".into()).or_default() += 1;
            if let Some(m) = km.moves.last_mut() {
                if (m.1, m.2) != (e.weight, e.learn) {
                    conflicting += 1;
                }
                m.1 = m.1.max(e.weight);
                m.2 = m.2.max(e.learn);
            }
            continue;
        }
        km.moves.push((e.mv, e.weight, e.learn));
        km.used.push(false);
        last = Some(e);
    }
    if conflicting > 0 {
        sum.warnings.push(format!(
            "{conflicting} duplicate (key, move) entr{} with different weight/learn (kept the highest)",
            if conflicting == 1 { "y" } else { "ies" }
        ));
    }
    sum.keys = map.len() as u64;
    map
}

/// The breadth-first walk of [`place_file`].
#[derive(Default)]
struct Walk {
    queue: VecDeque<Chess>,
    visited: HashSet<Vec<u8>>,
    /// Keys of positions (not in the file) whose replies were already tried.
    bridged: HashSet<u64>,
}

impl Walk {
    fn visit(&mut self, pos: Chess, packed: Vec<u8>) -> bool {
        let fresh = self.visited.insert(packed);
        if fresh {
            self.queue.push_back(pos);
        }
        fresh
    }

    /// Enters a position reached by a book move (or the start position). If its key is in the
    /// file it is visited; if not, each legal reply is tried once and the positions after them
    /// whose keys are in the file are visited (one bridging ply: books that hold one side's
    /// moves only, or a start position they do not list).
    fn enter(&mut self, pos: Chess, by_key: &HashMap<u64, KeyMoves>, sum: &mut FileSummary) {
        let key = polyglot_key(&pos);
        if by_key.contains_key(&key) {
            let packed = PosState::from_chess(&pos).pack().0;
            self.visit(pos, packed);
            return;
        }
        if !self.bridged.insert(key) {
            return;
        }
        for m in pos.legal_moves() {
            let mut next = pos.clone();
            next.play_unchecked(m);
            if by_key.contains_key(&polyglot_key(&next)) {
                let packed = PosState::from_chess(&next).pack().0;
                if self.visit(next, packed) {
                    sum.bridged_positions += 1;
                }
            }
        }
    }
}

/// Reconstructs positions for one file: a breadth-first walk from the start position and from
/// the `known` positions whose keys are in the file, along the file's legal moves, with one
/// bridging ply where a book move leads to a position the file does not list (see
/// [`Walk::enter`]). `known` holds positions (packed) of the target book and earlier files;
/// newly placed positions are added to it. Returns the entries sorted by (key, position).
fn place_file(
    parsed: &ParsedBin,
    known: &mut HashMap<u64, Vec<Vec<u8>>>,
    sum: &mut FileSummary,
) -> Vec<Entry> {
    let mut by_key = group_entries(parsed, sum);
    let mut walk = Walk::default();
    walk.enter(Chess::default(), &by_key, sum);
    let mut seed_keys: Vec<u64> = known
        .keys()
        .copied()
        .filter(|k| by_key.contains_key(k))
        .collect();
    seed_keys.sort_unstable();
    for k in seed_keys {
        for packed in known.get(&k).into_iter().flatten() {
            if let Some(pos) = PosState::unpack(packed)
                .ok()
                .and_then(|s| s.to_chess().ok())
            {
                walk.visit(pos, packed.clone());
            }
        }
    }
    let mut out: Vec<Entry> = Vec::new();
    let mut castle_dups = 0u64;
    while let Some(pos) = walk.queue.pop_front() {
        let state = PosState::from_chess(&pos);
        let key = state.key();
        let Some(km) = by_key.get_mut(&key) else {
            continue;
        };
        // code -> (weight, learn)
        let mut moves: Vec<MoveRec> = Vec::with_capacity(km.moves.len());
        let mut children: Vec<Chess> = Vec::new();
        let legal = pos.legal_moves();
        for (i, &(pg, weight, learn)) in km.moves.iter().enumerate() {
            let Some((m, two_square)) = pg_in_moves(&legal, pg) else {
                continue;
            };
            let code = encode_move(&m);
            if let Some(rec) = moves.iter_mut().find(|r| r.mv == code) {
                // e1g1 and e1h1 both listed: one move in two encodings.
                if let Some(x) = rec.polyglot.as_mut() {
                    x.weight = x.weight.max(weight);
                    x.learn = x.learn.max(learn);
                }
                if !km.used[i] {
                    castle_dups += 1;
                }
                km.used[i] = true;
                continue;
            }
            if !km.used[i] {
                sum.placed += 1;
                sum.castling_king_two_squares += u64::from(two_square);
            }
            km.used[i] = true;
            moves.push(MoveRec {
                mv: code,
                polyglot: Some(PolyglotExtra { weight, learn }),
                ..Default::default()
            });
            let mut child = pos.clone();
            child.play_unchecked(m);
            children.push(child);
        }
        for child in children {
            walk.enter(child, &by_key, sum);
        }
        if moves.is_empty() {
            continue;
        }
        moves.sort_by_key(|r| r.mv);
        let packed = state.pack().0;
        let list = known.entry(key).or_default();
        if !list.contains(&packed) {
            list.push(packed.clone());
        }
        sum.positions += 1;
        out.push(Entry {
            coded: None,
            key,
            pos: Some(packed),
            moves,
        });
    }
    if castle_dups > 0 {
        *sum.skipped.entry("duplicate".into()).or_default() += castle_dups;
        sum.warnings.push(format!(
            "{castle_dups} castling move(s) listed twice (as e1g1 and e1h1); kept the highest weight"
        ));
    }
    for (key, km) in by_key {
        let mut moves: Vec<MoveRec> = km
            .moves
            .iter()
            .zip(&km.used)
            .filter(|(_, used)| !**used)
            .map(|(&(pg, weight, learn), _)| MoveRec {
                mv: raw_code_from_pg(pg),
                polyglot: Some(PolyglotExtra { weight, learn }),
                ..Default::default()
            })
            .collect();
        if moves.is_empty() {
            continue;
        }
        moves.sort_by_key(|r| r.mv);
        sum.key_only += moves.len() as u64;
        sum.key_only_entries += 1;
        out.push(Entry {
            coded: None,
            key,
            pos: None,
            moves,
        });
    }
    out.sort_unstable_by(|a, b| a.cmp_id(b));
    out
}

/// `bookdb import-polyglot BIN... --book FILE`.
pub fn import_polyglot(
    book_path: &Path,
    inputs: &[PathBuf],
    opts: &PolyglotImportOptions,
) -> Result<PolyglotImportSummary> {
    let start = Instant::now();
    let codec = crate::chess_codec();
    // Read and check every input before touching the book.
    let mut read = Vec::with_capacity(inputs.len());
    for p in inputs {
        read.push(read_bin_fingerprinted(p)?);
    }
    let _lock = WriterLock::acquire(book_path)?;
    remove_stale_temp_books(book_path);
    let old = if book_path.exists() {
        Some(Book::open(book_path, codec.clone())?)
    } else {
        None
    };
    let mut summary = PolyglotImportSummary::default();
    // Exactly once, as `bookdb import`: files the book lists are skipped unless forced.
    let mut done: HashSet<String> = match &old {
        Some(b) => b.imports()?.into_iter().map(|(k, _)| k).collect(),
        None => HashSet::new(),
    };
    let mut todo: Vec<(&PathBuf, ParsedBin, String)> = Vec::with_capacity(read.len());
    for (path, (parsed, fp)) in inputs.iter().zip(read) {
        let key = format!("{IMPORT_KEY_PREFIX}{fp}");
        if !done.insert(key.clone()) && !opts.force {
            summary.already_imported.push(path.display().to_string());
            continue;
        }
        todo.push((path, parsed, key));
    }
    if todo.is_empty() {
        if let Some(b) = &old {
            summary.book = b.meta().clone();
        }
        summary.book_bytes = std::fs::metadata(book_path).map(|m| m.len()).unwrap_or(0);
        summary.elapsed_secs = start.elapsed().as_secs_f64();
        return Ok(summary);
    }
    let parsed: Vec<&ParsedBin> = todo.iter().map(|(_, p, _)| p).collect();
    // Positions of the book whose keys occur in some input seed the walks.
    let all_keys: HashSet<u64> = parsed
        .iter()
        .flat_map(|p| p.entries.iter().map(|e| e.key))
        .collect();
    let mut known: HashMap<u64, Vec<Vec<u8>>> = HashMap::new();
    if let Some(book) = &old {
        for e in book.iter()? {
            let e = e?;
            if let Some(pos) = e.pos
                && all_keys.contains(&e.key)
            {
                known.entry(e.key).or_default().push(pos);
            }
        }
    }
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let mut records: Vec<(String, Vec<u8>)> = Vec::with_capacity(todo.len());
    let mut new_lists: Vec<Vec<Entry>> = Vec::with_capacity(todo.len());
    for (path, p, record_key) in &todo {
        let mut fs = FileSummary {
            file: path.display().to_string(),
            bytes: (p.entries.len() * ENTRY_BYTES + p.trailing_bytes) as u64,
            entries_read: p.entries.len() as u64,
            trailing_bytes: p.trailing_bytes as u64,
            out_of_order: p.out_of_order,
            ..Default::default()
        };
        if p.trailing_bytes > 0 {
            fs.warnings.push(format!(
                "ignored {} trailing byte(s) after the last complete entry",
                p.trailing_bytes
            ));
        }
        if p.out_of_order > 0 {
            fs.warnings.push(format!(
                "{} entries out of key order (sorted)",
                p.out_of_order
            ));
        }
        if p.entries.is_empty() {
            fs.warnings.push("no entries".into());
        }
        new_lists.push(place_file(p, &mut known, &mut fs));
        let rec = serde_json::json!({
            "name": fs.file,
            "format": "polyglot",
            "bytes": fs.bytes,
            "entries_read": fs.entries_read,
            "placed": fs.placed,
            "key_only": fs.key_only,
            "imported_at": now,
        });
        records.push((record_key.clone(), rec.to_string().into_bytes()));
        summary.entries_read += fs.entries_read;
        summary.placed += fs.placed;
        summary.key_only += fs.key_only;
        for (k, v) in &fs.skipped {
            *summary.skipped_by_reason.entry(k.clone()).or_default() += v;
        }
        summary.files.push(fs);
    }
    drop(known);
    drop(parsed);
    drop(todo);
    let mut w = BookWriter::create(book_path, codec, opts.writer.clone())?;
    let mut streams: Vec<Box<dyn Iterator<Item = Result<Entry>> + '_>> = Vec::new();
    if let Some(book) = &old {
        w.add_games(book.meta().games);
        w.add_imports(book.imports()?);
        w.keep_game_fingerprints_of(book);
        streams.push(Box::new(book.iter()?));
    }
    w.add_imports(records);
    for list in new_lists {
        streams.push(Box::new(list.into_iter().map(Ok)));
    }
    for e in MergeIter::new(streams) {
        w.push(e?)?;
    }
    drop(old);
    summary.book = w.finish()?;
    summary.book_bytes = std::fs::metadata(book_path).map(|m| m.len()).unwrap_or(0);
    summary.elapsed_secs = start.elapsed().as_secs_f64();
    Ok(summary)
}

// ---------------------------------------------------------------------------------------------
// export
// ---------------------------------------------------------------------------------------------

/// Which side's moves `--only-white` / `--only-black` keep.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum OnlySide {
    White,
    Black,
}

/// Options of polyglot's `make-book` (DESIGN §3 names).
#[derive(Clone, Debug)]
pub struct PolyglotExportOptions {
    /// `-min-game`: drop moves played in fewer games (after halving). Polyglot's default is 3;
    /// ours is 1 (export everything).
    pub min_games: u64,
    /// `-min-score`, in percent: drop moves whose score `sum / n / 2` is below this.
    pub min_score: f64,
    pub only: Option<OnlySide>,
    pub uniform: bool,
}

impl Default for PolyglotExportOptions {
    fn default() -> Self {
        PolyglotExportOptions {
            min_games: 1,
            min_score: 0.0,
            only: None,
            uniform: false,
        }
    }
}

#[derive(Clone, Debug, Default, Serialize)]
pub struct ExportSummary {
    pub format: String,
    pub out: String,
    /// Lines (jsonl) or keys (polyglot) written.
    pub keys: u64,
    /// Polyglot entries written.
    pub entries: u64,
    /// Entries weighted from game counts / written with a stored Polyglot weight.
    pub from_games: u64,
    pub from_polyglot: u64,
    /// Keys whose counts were halved to fit (polyglot's COUNT_MAX rule).
    pub halved_keys: u64,
    /// Moves left out, by reason: `min_games`, `zero_score`, `min_score`, `side`, `no_data`.
    pub dropped: BTreeMap<String, u64>,
    pub bytes: u64,
    pub elapsed_secs: f64,
}

impl std::fmt::Display for ExportSummary {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        if self.format == "jsonl" {
            return write!(
                f,
                "{}: {} positions written ({} bytes) in {:.2}s",
                self.out, self.keys, self.bytes, self.elapsed_secs
            );
        }
        write!(
            f,
            "{}: {} entries for {} keys ({} from game counts, {} with stored Polyglot weights), {} moves dropped{}, {} bytes in {:.2}s",
            self.out,
            self.entries,
            self.keys,
            self.from_games,
            self.from_polyglot,
            self.dropped.values().sum::<u64>(),
            fmt_reasons(&self.dropped),
            self.bytes,
            self.elapsed_secs
        )
    }
}

/// polyglot's counters for one (key, move).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct MakeBookCounts {
    /// Games (`n`).
    pub n: u64,
    /// `2·wins + draws + unknown` of the side to move (`sum`).
    pub sum: u64,
}

impl MakeBookCounts {
    /// The counts of a move record for the side to move.
    pub fn of(m: &MoveRec, white_to_move: bool) -> MakeBookCounts {
        let wins = if white_to_move { m.white } else { m.black };
        MakeBookCounts {
            n: m.games(),
            sum: wins
                .saturating_mul(2)
                .saturating_add(m.draws)
                .saturating_add(m.unknown),
        }
    }
}

/// polyglot's `halve_stats()` applied until every `n` is below [`COUNT_MAX`]; returns how many
/// times the counts were halved.
pub fn halve_to_fit(counts: &mut [MakeBookCounts]) -> u32 {
    let mut times = 0;
    while counts.iter().any(|c| c.n >= COUNT_MAX) {
        for c in counts.iter_mut() {
            c.n = c.n.div_ceil(2);
            c.sum = c.sum.div_ceil(2);
        }
        times += 1;
    }
    times
}

/// Why polyglot's `keep_entry()` drops a move.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum DropReason {
    MinGames,
    ZeroScore,
    MinScore,
    Side,
    /// Neither game counts nor a stored Polyglot weight.
    NoData,
}

impl DropReason {
    fn name(self) -> &'static str {
        match self {
            DropReason::MinGames => "min_games",
            DropReason::ZeroScore => "zero_score",
            DropReason::MinScore => "min_score",
            DropReason::Side => "side",
            DropReason::NoData => "no_data",
        }
    }
}

fn side_dropped(white_to_move: Option<bool>, only: Option<OnlySide>) -> bool {
    matches!(
        (white_to_move, only),
        (Some(false), Some(OnlySide::White)) | (Some(true), Some(OnlySide::Black))
    )
}

/// polyglot's `keep_entry()` and `entry_score()` for counted moves (after halving): the weight
/// to write, or why the move is dropped.
pub fn make_book_weight(
    c: MakeBookCounts,
    white_to_move: bool,
    opts: &PolyglotExportOptions,
) -> std::result::Result<u16, DropReason> {
    if c.n < opts.min_games.max(1) {
        return Err(DropReason::MinGames);
    }
    if c.sum == 0 {
        return Err(DropReason::ZeroScore);
    }
    let score = (c.sum as f64 / c.n as f64) / 2.0;
    if score < opts.min_score / 100.0 {
        return Err(DropReason::MinScore);
    }
    if side_dropped(Some(white_to_move), opts.only) {
        return Err(DropReason::Side);
    }
    let w = if opts.uniform { 1 } else { c.sum };
    // After halving sum <= 2 * n < 32768.
    Ok(u16::try_from(w).unwrap_or(u16::MAX))
}

/// One Polyglot move of a key being exported.
#[derive(Default)]
struct OutMove {
    counts: MakeBookCounts,
    counted: bool,
    white_to_move: Option<bool>,
    stored: Option<PolyglotExtra>,
}

/// Computes the Polyglot entries of all book entries sharing one key.
fn export_key(
    group: &[Entry],
    opts: &PolyglotExportOptions,
    summary: &mut ExportSummary,
) -> Result<Vec<PgEntry>> {
    let Some(first) = group.first() else {
        return Ok(Vec::new());
    };
    let key = first.key;
    let mut moves: BTreeMap<u16, OutMove> = BTreeMap::new();
    for e in group {
        let state = match &e.pos {
            Some(p) => Some(PosState::unpack(p)?),
            None => None,
        };
        let white = state.as_ref().map(|s| !s.black_to_move);
        for m in &e.moves {
            let pg = match &state {
                Some(s) => code_to_pg(m.mv, s),
                None => raw_pg_from_code(m.mv),
            };
            let o = moves.entry(pg).or_default();
            if o.white_to_move.is_none() {
                o.white_to_move = white;
            }
            if m.games() > 0 {
                let c = MakeBookCounts::of(m, white.unwrap_or(true));
                o.counts.n = o.counts.n.saturating_add(c.n);
                o.counts.sum = o.counts.sum.saturating_add(c.sum);
                o.counted = true;
            }
            if let Some(x) = m.polyglot {
                o.stored = Some(match o.stored {
                    Some(y) => PolyglotExtra {
                        weight: x.weight.max(y.weight),
                        learn: x.learn.max(y.learn),
                    },
                    None => x,
                });
            }
        }
    }
    let mut counted: Vec<MakeBookCounts> = moves
        .values()
        .filter(|o| o.counted)
        .map(|o| o.counts)
        .collect();
    if halve_to_fit(&mut counted) > 0 {
        summary.halved_keys += 1;
        let mut it = counted.into_iter();
        for o in moves.values_mut().filter(|o| o.counted) {
            if let Some(c) = it.next() {
                o.counts = c;
            }
        }
    }
    let mut out = Vec::with_capacity(moves.len());
    for (pg, o) in moves {
        let learn = o.stored.map_or(0, |x| x.learn);
        let res = if o.counted {
            make_book_weight(o.counts, o.white_to_move.unwrap_or(true), opts)
        } else if o.stored.is_none() {
            Err(DropReason::NoData)
        } else if side_dropped(o.white_to_move, opts.only) {
            Err(DropReason::Side)
        } else {
            let w = o.stored.map_or(0, |x| x.weight);
            Ok(if opts.uniform { w.min(1) } else { w })
        };
        match res {
            Ok(weight) => {
                if o.counted {
                    summary.from_games += 1;
                } else {
                    summary.from_polyglot += 1;
                }
                out.push(PgEntry {
                    key,
                    mv: pg,
                    weight,
                    learn,
                });
            }
            Err(d) => *summary.dropped.entry(d.name().into()).or_default() += 1,
        }
    }
    out.sort_by(|a, b| b.weight.cmp(&a.weight).then(a.mv.cmp(&b.mv)));
    Ok(out)
}

/// Writes the book as a Polyglot `.bin` to `out`.
pub fn export_polyglot(
    book: &Book,
    out: &mut dyn Write,
    opts: &PolyglotExportOptions,
) -> Result<ExportSummary> {
    let mut summary = ExportSummary {
        format: "polyglot".into(),
        ..Default::default()
    };
    let mut group: Vec<Entry> = Vec::new();
    let mut flush = |group: &mut Vec<Entry>, summary: &mut ExportSummary| -> Result<()> {
        let entries = export_key(group, opts, summary)?;
        group.clear();
        if !entries.is_empty() {
            summary.keys += 1;
        }
        for e in entries {
            out.write_all(&e.to_bytes())
                .map_err(|e| Error::io("writing Polyglot book", e))?;
            summary.entries += 1;
            summary.bytes += ENTRY_BYTES as u64;
        }
        Ok(())
    };
    for e in book.iter()? {
        let e = e?;
        if group.first().is_some_and(|g| g.key != e.key) {
            flush(&mut group, &mut summary)?;
        }
        group.push(e);
    }
    flush(&mut group, &mut summary)?;
    Ok(summary)
}

/// Writes the book as JSON lines (the `dump` shape) to `out`; returns the lines written.
pub fn export_jsonl(book: &Book, out: &mut dyn Write) -> Result<u64> {
    let mut n = 0;
    for e in book.iter()? {
        let j = query::entry_json(&e?, false)?;
        let mut line = serde_json::to_vec(&j).map_err(|e| Error::Invalid(e.to_string()))?;
        line.push(b'\n');
        out.write_all(&line)
            .map_err(|e| Error::io("writing JSON lines", e))?;
        n += 1;
    }
    Ok(n)
}

/// Export formats.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ExportFormat {
    Polyglot,
    Jsonl,
}

impl std::str::FromStr for ExportFormat {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        match s {
            "polyglot" | "bin" => Ok(ExportFormat::Polyglot),
            "jsonl" | "json" => Ok(ExportFormat::Jsonl),
            _ => Err(format!("unknown export format {s:?} (polyglot, jsonl)")),
        }
    }
}

fn is_broken_pipe(e: &Error) -> bool {
    matches!(e, Error::Io { source, .. } if source.kind() == std::io::ErrorKind::BrokenPipe)
}

/// `bookdb export`: writes to `out` (`-` for stdout). A file is written under a temporary name
/// and renamed into place when complete.
pub fn export(
    book_path: &Path,
    format: ExportFormat,
    out: &str,
    opts: &PolyglotExportOptions,
) -> Result<ExportSummary> {
    let start = Instant::now();
    if !(0.0..=100.0).contains(&opts.min_score) {
        return Err(Error::Invalid(format!(
            "--min-score {} is not a percentage (0 to 100)",
            opts.min_score
        )));
    }
    let book = Book::open(book_path, crate::chess_codec())?;
    let run = |w: &mut dyn Write| -> Result<ExportSummary> {
        match format {
            ExportFormat::Polyglot => export_polyglot(&book, w, opts),
            ExportFormat::Jsonl => {
                let lines = export_jsonl(&book, w)?;
                Ok(ExportSummary {
                    format: "jsonl".into(),
                    keys: lines,
                    ..Default::default()
                })
            }
        }
    };
    let mut summary = if out == "-" {
        let stdout = std::io::stdout();
        let mut w = BufWriter::new(stdout.lock());
        let res = run(&mut w).and_then(|s| {
            w.flush().map_err(|e| Error::io("writing to stdout", e))?;
            Ok(s)
        });
        match res {
            Err(e) if is_broken_pipe(&e) => ExportSummary::default(),
            r => r?,
        }
    } else {
        let path = Path::new(out);
        let tmp = crate::store::book::temp_sibling(path)?;
        let res = (|| -> Result<ExportSummary> {
            let f = std::fs::File::create(&tmp)
                .map_err(|e| Error::io(format!("creating {}", tmp.display()), e))?;
            let mut w = BufWriter::new(f);
            let s = run(&mut w)?;
            let f = w
                .into_inner()
                .map_err(|e| Error::io(format!("writing {out}"), e.into_error()))?;
            f.sync_all()
                .map_err(|e| Error::io(format!("writing {out}"), e))?;
            std::fs::rename(&tmp, path)
                .map_err(|e| Error::io(format!("moving the export to {out}"), e))?;
            Ok(s)
        })();
        if res.is_err() {
            let _ = std::fs::remove_file(&tmp);
        }
        res?
    };
    if format == ExportFormat::Jsonl && out != "-" {
        summary.bytes = std::fs::metadata(out).map(|m| m.len()).unwrap_or(0);
    }
    summary.out = out.to_string();
    summary.elapsed_secs = start.elapsed().as_secs_f64();
    Ok(summary)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chess::tests_support::play;
    use crate::chess::{move_uci, parse_move};
    use shakmaty::Square;

    fn sq(name: &str) -> Square {
        name.parse().unwrap()
    }

    #[test]
    fn halving_follows_count_max() {
        let mut c = vec![
            MakeBookCounts {
                n: 40000,
                sum: 41000,
            },
            MakeBookCounts { n: 3, sum: 5 },
            MakeBookCounts { n: 16383, sum: 1 },
        ];
        assert_eq!(halve_to_fit(&mut c), 2);
        assert_eq!(
            c,
            vec![
                MakeBookCounts {
                    n: 10000,
                    sum: 10250
                },
                MakeBookCounts { n: 1, sum: 2 },
                MakeBookCounts { n: 4096, sum: 1 },
            ]
        );
        let mut small = vec![MakeBookCounts {
            n: 16383,
            sum: 32766,
        }];
        assert_eq!(halve_to_fit(&mut small), 0);
        let mut edge = vec![MakeBookCounts {
            n: 16384,
            sum: 32768,
        }];
        assert_eq!(halve_to_fit(&mut edge), 1);
        assert_eq!(
            edge[0],
            MakeBookCounts {
                n: 8192,
                sum: 16384
            }
        );
        let mut huge = vec![MakeBookCounts {
            n: u64::MAX,
            sum: u64::MAX,
        }];
        halve_to_fit(&mut huge);
        assert!(huge[0].n < COUNT_MAX && huge[0].sum <= 2 * huge[0].n);
    }

    #[test]
    fn make_book_rule() {
        let rec = MoveRec {
            white: 3,
            draws: 2,
            black: 1,
            unknown: 1,
            ..Default::default()
        };
        let w = MakeBookCounts::of(&rec, true);
        assert_eq!(w, MakeBookCounts { n: 7, sum: 9 });
        let b = MakeBookCounts::of(&rec, false);
        assert_eq!(b, MakeBookCounts { n: 7, sum: 5 });
        let d = PolyglotExportOptions::default();
        assert_eq!(make_book_weight(w, true, &d), Ok(9));
        let min3 = PolyglotExportOptions {
            min_games: 8,
            ..Default::default()
        };
        assert_eq!(make_book_weight(w, true, &min3), Err(DropReason::MinGames));
        let lost = MakeBookCounts { n: 4, sum: 0 };
        assert_eq!(make_book_weight(lost, true, &d), Err(DropReason::ZeroScore));
        let score = PolyglotExportOptions {
            min_score: 50.0,
            ..Default::default()
        };
        // 9 / 7 / 2 = 0.64 >= 0.5; 5 / 7 / 2 = 0.36 < 0.5
        assert_eq!(make_book_weight(w, true, &score), Ok(9));
        assert_eq!(
            make_book_weight(b, false, &score),
            Err(DropReason::MinScore)
        );
        let white = PolyglotExportOptions {
            only: Some(OnlySide::White),
            ..Default::default()
        };
        assert_eq!(make_book_weight(b, false, &white), Err(DropReason::Side));
        assert_eq!(make_book_weight(w, true, &white), Ok(9));
        let uniform = PolyglotExportOptions {
            uniform: true,
            ..Default::default()
        };
        assert_eq!(make_book_weight(w, true, &uniform), Ok(1));
        assert_eq!(
            make_book_weight(lost, true, &uniform),
            Err(DropReason::ZeroScore)
        );
    }

    #[test]
    fn export_key_mixes_counts_stored_weights_and_halving() {
        let start = Chess::default();
        let state = PosState::from_chess(&start);
        let code = |uci: &str| encode_move(&parse_move(&start, uci).unwrap());
        let e = Entry {
            coded: None,
            key: state.key(),
            pos: Some(state.pack().0),
            moves: {
                let mut v = vec![
                    // 20000 games: every count of the key is halved once.
                    MoveRec {
                        mv: code("e2e4"),
                        white: 8000,
                        draws: 6000,
                        black: 6000,
                        ..Default::default()
                    },
                    MoveRec {
                        mv: code("d2d4"),
                        white: 3,
                        draws: 1,
                        ..Default::default()
                    },
                    // Imported from Polyglot, no games: stored weight and learn as they are.
                    MoveRec {
                        mv: code("g2g4"),
                        polyglot: Some(PolyglotExtra {
                            weight: 77,
                            learn: 9,
                        }),
                        ..Default::default()
                    },
                    // Counts win over a stored weight; the learn value stays.
                    MoveRec {
                        mv: code("c2c4"),
                        draws: 2,
                        polyglot: Some(PolyglotExtra {
                            weight: 500,
                            learn: 3,
                        }),
                        ..Default::default()
                    },
                    MoveRec {
                        mv: code("a2a3"),
                        ..Default::default()
                    },
                ];
                v.sort_by_key(|m| m.mv);
                v
            },
        };
        let mut es = ExportSummary::default();
        let out = export_key(
            std::slice::from_ref(&e),
            &PolyglotExportOptions::default(),
            &mut es,
        )
        .unwrap();
        let pg = |from: &str, to: &str| pg_encode(sq(from), sq(to), None);
        let k = e.key;
        assert_eq!(
            out,
            vec![
                PgEntry {
                    key: k,
                    mv: pg("e2", "e4"),
                    weight: 11000,
                    learn: 0
                },
                PgEntry {
                    key: k,
                    mv: pg("g2", "g4"),
                    weight: 77,
                    learn: 9
                },
                PgEntry {
                    key: k,
                    mv: pg("d2", "d4"),
                    weight: 4,
                    learn: 0
                },
                PgEntry {
                    key: k,
                    mv: pg("c2", "c4"),
                    weight: 1,
                    learn: 3
                },
            ]
        );
        assert_eq!(es.halved_keys, 1);
        assert_eq!(es.dropped.get("no_data"), Some(&1));
        // Black-only export leaves out the white-to-move position, stored weights included.
        let black = PolyglotExportOptions {
            only: Some(OnlySide::Black),
            ..Default::default()
        };
        assert!(
            export_key(std::slice::from_ref(&e), &black, &mut es)
                .unwrap()
                .is_empty()
        );
    }

    fn bin(entries: &[PgEntry]) -> Vec<u8> {
        entries.iter().flat_map(|e| e.to_bytes()).collect()
    }

    #[test]
    fn parse_partial_tail_sentinel_and_garbage() {
        let e4 = pg_encode(sq("e2"), sq("e4"), None);
        let d4 = pg_encode(sq("d2"), sq("d4"), None);
        let entries = [
            PgEntry {
                key: 0x463b96181691fc9c,
                mv: e4,
                weight: 10,
                learn: 7,
            },
            PgEntry {
                key: 0x463b96181691fc9c,
                mv: d4,
                weight: 0,
                learn: 0,
            },
            PgEntry {
                key: SENTINEL_KEY,
                mv: 0,
                weight: 0,
                learn: 0,
            },
        ];
        let mut data = bin(&entries);
        data.push(0xab);
        let p = parse_bin(&data).unwrap();
        assert_eq!(p.entries, entries);
        assert_eq!(p.trailing_bytes, 1);
        assert_eq!(p.invalid_moves, 0, "the sentinel is not counted as garbage");
        assert_eq!(PgEntry::from_bytes(&entries[0].to_bytes()), entries[0]);
        assert_eq!(
            &entries[0].to_bytes()[..8],
            &[0x46, 0x3b, 0x96, 0x18, 0x16, 0x91, 0xfc, 0x9c]
        );

        assert!(parse_bin(&data[..15]).is_err());
        assert!(
            parse_bin(b"\n\n<!DOCTYPE html><html><body>not a book</body></html>")
                .unwrap_err()
                .contains("HTML")
        );
        assert!(parse_bin(&[b'a'; 64]).unwrap_err().contains("text"));
        assert_eq!(parse_bin(&[]).unwrap().entries.len(), 0);
        // Pseudo-random bytes: keys out of order.
        let mut x = 0x9e3779b97f4a7c15u64;
        let garbage: Vec<u8> = (0..4096)
            .map(|_| {
                x ^= x << 13;
                x ^= x >> 7;
                x ^= x << 17;
                (x >> 24) as u8
            })
            .collect();
        assert!(parse_bin(&garbage).is_err());
    }

    #[test]
    fn placement_walks_the_book_and_keeps_the_rest_key_only() {
        let start = Chess::default();
        let after_e4 = play(&["e4"]);
        let castle_pos = play(&["e4", "e5", "Nf3", "Nc6", "Bc4", "Nf6"]);
        let e4 = pg_encode(sq("e2"), sq("e4"), None);
        let e5 = pg_encode(sq("e7"), sq("e5"), None);
        let a3 = pg_encode(sq("a2"), sq("a3"), None);
        let bogus = pg_encode(sq("e2"), sq("e5"), None);
        let mut entries = vec![
            PgEntry {
                key: polyglot_key(&start),
                mv: e4,
                weight: 5,
                learn: 1,
            },
            PgEntry {
                key: polyglot_key(&start),
                mv: bogus,
                weight: 2,
                learn: 0,
            },
            PgEntry {
                key: polyglot_key(&after_e4),
                mv: e5,
                weight: 3,
                learn: 0,
            },
            PgEntry {
                key: polyglot_key(&after_e4),
                mv: e5,
                weight: 4,
                learn: 0,
            },
            // Unreachable from the start through the book's moves.
            PgEntry {
                key: polyglot_key(&castle_pos),
                mv: pg_encode(sq("e1"), sq("g1"), None),
                weight: 9,
                learn: 0,
            },
            PgEntry {
                key: 42,
                mv: a3,
                weight: 0,
                learn: 0,
            },
            PgEntry {
                key: SENTINEL_KEY,
                mv: 0,
                weight: 0,
                learn: 0,
            },
        ];
        entries.sort();
        let parsed = ParsedBin {
            entries,
            ..Default::default()
        };
        let mut known = HashMap::new();
        let mut s = FileSummary::default();
        let out = place_file(&parsed, &mut known, &mut s);
        assert_eq!(s.placed, 2);
        assert_eq!(s.key_only, 3);
        assert_eq!(s.skipped.get("sentinel"), Some(&1));
        assert_eq!(s.skipped.get("duplicate"), Some(&1));
        assert_eq!(s.positions, 2);
        let placed: Vec<&Entry> = out.iter().filter(|e| e.pos.is_some()).collect();
        assert_eq!(placed.len(), 2);
        let at_e4 = placed
            .iter()
            .find(|e| e.key == polyglot_key(&after_e4))
            .unwrap();
        assert_eq!(
            at_e4.moves[0].polyglot,
            Some(PolyglotExtra {
                weight: 4,
                learn: 0
            })
        );
        // With the castling position known (e.g. from the target book), e1g1 is placed.
        let mut known = HashMap::new();
        known.insert(
            polyglot_key(&castle_pos),
            vec![PosState::from_chess(&castle_pos).pack().0],
        );
        let mut s = FileSummary::default();
        let out = place_file(&parsed, &mut known, &mut s);
        assert_eq!(s.placed, 3);
        assert_eq!(s.castling_king_two_squares, 1);
        let c = out
            .iter()
            .find(|e| e.key == polyglot_key(&castle_pos))
            .unwrap();
        assert!(c.pos.is_some());
        assert_eq!(move_uci(c.moves[0].mv), "e1g1");
        // Export writes it back as king-takes-rook.
        let opts = PolyglotExportOptions::default();
        let mut es = ExportSummary::default();
        let pg = export_key(std::slice::from_ref(c), &opts, &mut es).unwrap();
        assert_eq!(
            pg,
            vec![PgEntry {
                key: c.key,
                mv: pg_encode(sq("e1"), sq("h1"), None),
                weight: 9,
                learn: 0
            }]
        );
        // Key-only moves come back bit for bit.
        let ko: Vec<Entry> = out.iter().filter(|e| e.pos.is_none()).cloned().collect();
        for e in &ko {
            let back = export_key(std::slice::from_ref(e), &opts, &mut es).unwrap();
            for b in back {
                assert!(parsed.entries.contains(&b), "{b:?}");
            }
        }
    }
}

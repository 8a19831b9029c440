//! `bookdb import-polyglot`: the walk that places a file's entries at reconstructed positions
//! (keys grouped and deduplicated, breadth-first from the start and known positions with one
//! bridging ply, the rest key-only), the merge into the book, and the per-file summaries.

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::path::{Path, PathBuf};
use std::time::Instant;

use serde::Serialize;
use shakmaty::{Chess, Position};

use super::bin::{ENTRY_BYTES, ParsedBin, PgEntry, SENTINEL_KEY, read_bin_fingerprinted};
use super::fmt_reasons;
use crate::chess::polyglot::{pg_decode, pg_in_moves, raw_code_from_pg};
use crate::chess::{PosState, encode_move, polyglot_key};
use crate::error::Result;
use crate::store::entry::MergeIter;
use crate::store::{BookMeta, BookWriter, Entry, MoveExtra, MoveRec, WriterOptions};

#[derive(Clone, Debug, Default)]
pub struct PolyglotImportOptions {
    pub writer: WriterOptions,
    /// Import files the book already lists as imported (their weights then add up again).
    pub force: bool,
    /// How long to wait for another writer's lock on the book.
    pub lock_wait: crate::store::LockWait,
}

/// Prefix of the `imports` table keys of Polyglot files (`polyglot:<xxh3-128 of the bytes>`),
/// apart from the PGN inputs' keys.
pub const IMPORT_KEY_PREFIX: &str = "polyglot:";

/// What happened to one input file. Every complete entry read is counted exactly once in
/// `placed`, `key_only` or `skipped`.
#[derive(Clone, Debug, Default, Serialize)]
pub struct FileSummary {
    pub file: String,
    pub(crate) bytes: u64,
    pub(crate) entries_read: u64,
    /// Entries placed as moves of reconstructed positions.
    pub(crate) placed: u64,
    /// Entries stored in key-only entries (key never reached, or move illegal where reached).
    pub(crate) key_only: u64,
    /// Entries dropped, by reason: `sentinel`, `invalid_move`, `duplicate`.
    pub(crate) skipped: BTreeMap<String, u64>,
    /// Distinct keys in the file (after skipping).
    pub(crate) keys: u64,
    /// Positions reconstructed.
    pub(crate) positions: u64,
    /// Positions reached through one move that is not in the file (see [`place_file`]).
    pub(crate) bridged_positions: u64,
    /// Keys whose entries went into a key-only entry (some or all of their moves).
    pub(crate) key_only_entries: u64,
    /// Castling moves written as the king's two-square move (`e1g1`) instead of `e1h1`.
    pub(crate) castling_king_two_squares: u64,
    pub(crate) trailing_bytes: u64,
    pub(crate) out_of_order: u64,
    pub warnings: Vec<String>,
}

#[derive(Clone, Debug, Default, Serialize)]
pub struct PolyglotImportSummary {
    pub files: Vec<FileSummary>,
    /// Inputs skipped because the book lists them as imported already (see `--force`).
    pub(crate) already_imported: Vec<String>,
    pub(crate) entries_read: u64,
    pub(crate) placed: u64,
    pub(crate) key_only: u64,
    pub(crate) skipped_by_reason: BTreeMap<String, u64>,
    pub(crate) book: BookMeta,
    pub(crate) book_bytes: u64,
    pub(crate) elapsed_secs: f64,
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
                if let Some(x) = rec.extra.as_mut() {
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
                extra: Some(MoveExtra { weight, learn }),
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
                extra: Some(MoveExtra { weight, learn }),
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
    let book_path = &crate::store::files::resolve_book(book_path)?;
    let codec = crate::chess_codec();
    // Read and check every input before touching the book.
    let mut read = Vec::with_capacity(inputs.len());
    for p in inputs {
        read.push(read_bin_fingerprinted(p)?);
    }
    let _lock = crate::store::book::lock_for_writing(book_path, opts.lock_wait)?;
    let old = if book_path.exists() {
        let (game, book) = crate::ops::game::Game::open(book_path)?;
        if game != crate::ops::game::Game::Chess {
            return Err(crate::ops::game::chess_only(
                book_path,
                game,
                "import-polyglot",
            ));
        }
        Some(book)
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
    crate::ops::progress::Trace::new().attach(&mut w);
    let mut streams: Vec<crate::store::book::EntryStream<'_>> = Vec::new();
    if let Some(book) = &old {
        w.carry_over(book)?;
        streams.push(Box::new(book.iter()?));
    }
    w.add_imports(records);
    w.counts_added_entries();
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chess::move_uci;
    use crate::chess::polyglot::pg_encode;
    use crate::chess::tests_support::play;
    use crate::ops::polyglot::PolyglotExportOptions;
    use crate::ops::polyglot::export::{ExportSummary, export_key};

    use crate::chess::tests_support::sq;

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
            at_e4.moves[0].extra,
            Some(MoveExtra {
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

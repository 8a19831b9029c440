//! Shared helpers for the integration tests.
#![allow(dead_code)]

use std::path::{Path, PathBuf};
use std::process::Command;

pub mod browser;
mod run;
pub use run::*;

/// True when CI demands the peers (`BOOKDB_REQUIRE_PEERS=1`): missing peers fail, not skip.
pub fn peers_required() -> bool {
    std::env::var("BOOKDB_REQUIRE_PEERS").is_ok_and(|v| v.trim() == "1")
}

/// A Python interpreter that can import the berserk lichess client, or `None` after printing
/// a SKIP line (a failure when peers are required).
pub fn berserk_python() -> Option<String> {
    let ok = Command::new("python3")
        .args(["-c", "import berserk"])
        .output()
        .is_ok_and(|o| o.status.success());
    if ok {
        return Some("python3".into());
    }
    assert!(
        !peers_required(),
        "berserk not importable and BOOKDB_REQUIRE_PEERS=1 (pip install berserk)"
    );
    eprintln!("SKIP: the berserk lichess client is not installed (pip install berserk)");
    None
}

/// A Python interpreter that can import python-chess, or `None` after printing a SKIP line
/// (a failure when peers are required). `$BOOKDB_PYTHON` is tried first.
pub fn python_chess() -> Option<String> {
    let mut candidates = Vec::new();
    if let Ok(p) = std::env::var("BOOKDB_PYTHON") {
        candidates.push(p);
    }
    candidates.extend(["python3".to_string(), "python".to_string()]);
    for py in &candidates {
        let ok = Command::new(py)
            .args(["-c", "import chess, chess.pgn, chess.polyglot"])
            .output()
            .is_ok_and(|o| o.status.success());
        if ok {
            return Some(py.clone());
        }
    }
    if peers_required() {
        panic!(
            "python-chess not importable by any of {candidates:?} and BOOKDB_REQUIRE_PEERS=1 (pip install chess)"
        );
    }
    eprintln!("SKIP: python-chess not installed (pip install chess)");
    None
}

/// The shared data directory (`$BOOKDB_DATA` or `../shared/data`).
pub fn data_dir() -> PathBuf {
    std::env::var_os("BOOKDB_DATA")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared/data"))
}

/// The shipped retagged games (`tests/data/retagged-2000.pgn.zst`: the first 2,000 games of
/// `medium-10k.pgn`, as [`games_of`] splits them, written by [`write_games`] and retagged by
/// `../shared/tools/retag.py 26`), one `Vec` per game. The oracle tests read these, so they run
/// where the shared data is absent (CI's fresh clone). Where `medium-10k.pgn`, `retag.py` and
/// `py` are all present the file is made again and must be equal: the shipped copy cannot
/// drift from its recipe.
pub fn retagged_games(py: &str) -> Vec<Vec<u8>> {
    let shipped = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/retagged-2000.pgn.zst");
    let bytes = zstd::decode_all(std::fs::File::open(&shipped).unwrap()).unwrap();
    let medium = data_dir().join("pgn/medium-10k.pgn");
    let script = data_dir().join("../tools/retag.py");
    if medium.exists() && script.exists() {
        let tmp = tempfile::tempdir().unwrap();
        let first = tmp.path().join("first.pgn");
        write_games(&first, &games_of(&medium)[..RETAGGED_GAMES]);
        let again = tmp.path().join("retagged.pgn");
        retag(py, &script, "26", &first, &again);
        assert!(
            std::fs::read(&again).unwrap() == bytes,
            "{} is not retag.py 26 of the first {RETAGGED_GAMES} games of {}: make it again \
             (tests/data/README.md)",
            shipped.display(),
            medium.display()
        );
    } else {
        eprintln!(
            "note: {} or {} absent: the shipped retagged games are used unchecked",
            medium.display(),
            script.display()
        );
    }
    // retag.py moves the tags around (a game need not start with `[Event `): a game starts
    // with the first tag after a blank line.
    let mut games: Vec<Vec<u8>> = Vec::new();
    let mut start = 0;
    for i in 1..bytes.len().saturating_sub(1) {
        if bytes[i - 1] == b'\n' && bytes[i] == b'\n' && bytes[i + 1] == b'[' {
            games.push(bytes[start..=i].to_vec());
            start = i + 1;
        }
    }
    games.push(bytes[start..].to_vec());
    assert_eq!(games.len(), RETAGGED_GAMES, "{}", shipped.display());
    games
}

/// Games in [`retagged_games`].
pub const RETAGGED_GAMES: usize = 2000;

/// Writes `input` retagged by `retag.py SEED` (run by `py`) to `output`.
pub fn retag(py: &str, script: &Path, seed: &str, input: &Path, output: &Path) {
    let out = Command::new(py)
        .arg(script)
        .arg(seed)
        .stdin(std::fs::File::open(input).unwrap())
        .stdout(std::fs::File::create(output).unwrap())
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "retag.py: {}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// A data file, or `None` with a printed SKIP reason if it is absent.
pub fn data_file(rel: &str) -> Option<PathBuf> {
    let p = data_dir().join(rel);
    if p.exists() {
        Some(p)
    } else {
        eprintln!("SKIP: data file {} is absent", p.display());
        None
    }
}

/// Copies a data file into `dir` (tests never touch the shared originals).
pub fn copy_in(src: &Path, dir: &Path) -> PathBuf {
    let dst = dir.join(src.file_name().expect("file name"));
    std::fs::copy(src, &dst).expect("copy data file");
    dst
}

/// A small PGN sample shipped in the repository.
pub fn sample_pgn() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/sample.pgn")
}

/// The sample's games in two PGN files, `first.pgn` and `second.pgn` in `dir` (split at the
/// middle game's `[Event ` tag).
pub fn sample_halves(dir: &Path) -> (PathBuf, PathBuf) {
    let text = std::fs::read_to_string(sample_pgn()).unwrap();
    let starts: Vec<usize> = text.match_indices("[Event ").map(|(i, _)| i).collect();
    let mid = starts[starts.len() / 2];
    let (a, b) = (dir.join("first.pgn"), dir.join("second.pgn"));
    std::fs::write(&a, &text[..mid]).unwrap();
    std::fs::write(&b, &text[mid..]).unwrap();
    (a, b)
}

/// Copies a live book (its base, manifest and delta segments: every `<name>` and `<name>.*`
/// file but the lock) to `dst`, keeping the names' suffixes.
pub fn copy_live_book(src: &Path, dst: &Path) {
    let name = src.file_name().unwrap().to_string_lossy().into_owned();
    let dst_name = dst.file_name().unwrap().to_string_lossy().into_owned();
    for e in std::fs::read_dir(src.parent().unwrap()).unwrap().flatten() {
        let f = e.file_name().to_string_lossy().into_owned();
        let suffix = if f == name {
            Some(String::new())
        } else {
            f.strip_prefix(&format!("{name}."))
                .filter(|s| *s != "lock" && !s.contains("tmp-"))
                .map(|s| format!(".{s}"))
        };
        if let Some(suffix) = suffix {
            std::fs::copy(e.path(), dst.with_file_name(format!("{dst_name}{suffix}"))).unwrap();
        }
    }
}

/// The games of a PGN file, as byte strings.
pub fn games_of(pgn: &Path) -> Vec<Vec<u8>> {
    let text = std::fs::read(pgn).unwrap();
    let mut starts: Vec<usize> = text
        .windows(8)
        .enumerate()
        .filter(|(i, w)| *w == b"\n[Event " || (*i == 0 && w.starts_with(b"[Event ")))
        .map(|(i, _)| {
            if i == 0 && text.starts_with(b"[Event ") {
                0
            } else {
                i + 1
            }
        })
        .collect();
    starts.dedup();
    starts.push(text.len());
    starts
        .windows(2)
        .map(|w| text[w[0]..w[1]].to_vec())
        .collect()
}

/// Writes games (as from [`games_of`]) to a PGN file, a blank line after each.
pub fn write_games(path: &Path, games: &[Vec<u8>]) {
    use std::io::Write;
    let mut f = std::fs::File::create(path).unwrap();
    for g in games {
        f.write_all(g).unwrap();
        f.write_all(b"\n").unwrap();
    }
}

/// How many entry blocks of the book file at `book` (its base file) have each block version
/// (its first byte; version 3 holds moves whose cells are their games', docs/FORMAT.md §12.5).
pub fn block_versions(book: &std::path::Path) -> std::collections::BTreeMap<u8, usize> {
    use redb::{ReadableDatabase, ReadableTable};
    let db = redb::Database::open(book).unwrap();
    let txn = db.begin_read().unwrap();
    let def: redb::TableDefinition<u64, &[u8]> = redb::TableDefinition::new("blocks");
    let mut out = std::collections::BTreeMap::new();
    for r in txn.open_table(def).unwrap().iter().unwrap() {
        *out.entry(r.unwrap().1.value()[0]).or_default() += 1;
    }
    out
}

pub mod server;

/// Overwrites the book's `format_version` (as an older or newer build would have written it).
pub fn set_format_version(book: &Path, version: u32) {
    let db = redb::Database::open(book).unwrap();
    let t = db.begin_write().unwrap();
    {
        let def: redb::TableDefinition<&str, &[u8]> = redb::TableDefinition::new("meta");
        t.open_table(def)
            .unwrap()
            .insert("format_version", version.to_le_bytes().as_slice())
            .unwrap();
    }
    t.commit().unwrap();
}

/// `bookdb import INPUT --book BOOK --quiet --delta-min 1000000`: an import that becomes a
/// delta segment of the live book (the base is never rewritten for it).
pub fn import_segment(input: &Path, book: &Path) {
    Bookdb::import(&[input], book)
        .args(["--quiet", "--delta-min", "1000000"])
        .ok();
}

/// A live book at `book`: a base of the sample's first `base` games, then `segments` delta
/// segments of the next `per` games each (the sample files are written beside the book).
pub fn book_with_segments(book: &Path, base: usize, segments: usize, per: usize) {
    let games = games_of(&sample_pgn());
    let dir = book.parent().expect("a book in a directory");
    let base_pgn = dir.join("base.pgn");
    write_games(&base_pgn, &games[..base]);
    Bookdb::import(&[&base_pgn], book).arg("--quiet").ok();
    for i in 0..segments {
        let p = dir.join(format!("s{i}.pgn"));
        write_games(&p, &games[base + per * i..base + per * (i + 1)]);
        import_segment(&p, book);
    }
}

/// Writes `text` to `dir/name`; returns the path.
pub fn write_text(dir: &Path, name: &str, text: &str) -> PathBuf {
    let p = dir.join(name);
    std::fs::write(&p, text).unwrap();
    p
}

/// Writes `text` to `dir/name` and imports it into `book` with `bookdb import-evals --quiet`.
pub fn import_evals_text(book: &Path, dir: &Path, name: &str, text: &str) {
    let file = write_text(dir, name, text);
    bookdb(["import-evals", "--quiet", "--book", s(book), s(&file)]).ok();
}

/// Positions the evaluation tests share (FEN without the move counters).
pub mod fens {
    pub const START: &str = "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq -";
    pub const E4: &str = "rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq -";
    /// 1.e4 e5 2.Nf3 Nc6 3.Bc4 Bc5: white may castle (lichess writes it e1h1).
    pub const ITALIAN: &str = "r1bqk1nr/pppp1ppp/2n5/2b1p3/2B1P3/5N2/PPPP1PPP/RNBQK2R w KQkq -";
}

/// Byte offsets where the games of a PGN text start.
pub fn game_starts(text: &[u8]) -> Vec<usize> {
    std::iter::once(0)
        .chain(
            text.windows(8)
                .enumerate()
                .filter(|(_, w)| *w == b"\n[Event ")
                .map(|(i, _)| i + 1),
        )
        .collect()
}

//! Every older format version migrates: the fixture books under `migrations/fixtures/` (one per
//! older version, written by that version's code, see its README) are refused by the current
//! reader with exit code 4 and a hint, and `bookdb migrate` turns each into a current book with
//! the same content, counters, import records and game fingerprints.

mod common;
use common::*;

use std::path::{Path, PathBuf};

fn fixtures() -> Vec<(u32, PathBuf)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("migrations/fixtures");
    let mut out: Vec<(u32, PathBuf)> = std::fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            let v = name
                .strip_prefix('v')?
                .strip_suffix(".book")?
                .parse()
                .ok()?;
            Some((v, e.path()))
        })
        .collect();
    out.sort();
    out
}

/// The sample's two halves, as `make.sh` splits them (the same bytes, so the same input
/// fingerprints as the fixtures' import records).
fn halves(dir: &Path) -> (PathBuf, PathBuf) {
    let text =
        std::fs::read(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/sample.pgn")).unwrap();
    let line_starts: Vec<usize> = std::iter::once(0)
        .chain(
            text.iter()
                .enumerate()
                .filter(|(_, b)| **b == b'\n')
                .map(|(i, _)| i + 1),
        )
        .collect();
    // Line 1643 starts game 101 (make.sh).
    let at = line_starts[1642];
    assert!(
        text[at..].starts_with(b"[Event "),
        "sample.pgn changed: update make.sh"
    );
    let (a, b) = (dir.join("first.pgn"), dir.join("second.pgn"));
    std::fs::write(&a, &text[..at]).unwrap();
    std::fs::write(&b, &text[at..]).unwrap();
    (a, b)
}

/// The distinct versions (first byte) of a book's game blocks, found through format 9's
/// block directory in its block stream; the tables of formats 6–8 must be gone.
fn game_block_versions(book: &Path) -> Vec<u8> {
    use redb::{ReadableDatabase, ReadableTable};
    let db = redb::Database::open(book).unwrap();
    let txn = db.begin_read().unwrap();
    for old in ["game_blocks", "game_ids"] {
        let def: redb::TableDefinition<(u32, u16), &[u8]> = redb::TableDefinition::new(old);
        assert!(txn.open_table(def).is_err(), "{old} left in {book:?}");
    }
    let dir: redb::TableDefinition<u32, (u64, u32)> = redb::TableDefinition::new("game_dir");
    let chunks: redb::TableDefinition<u32, &[u8]> = redb::TableDefinition::new("game_chunks");
    let (dir, chunks) = (
        txn.open_table(dir).unwrap(),
        txn.open_table(chunks).unwrap(),
    );
    let stream: Vec<u8> = chunks
        .iter()
        .unwrap()
        .flat_map(|r| r.unwrap().1.value().to_vec())
        .collect();
    let mut v: Vec<u8> = dir
        .iter()
        .unwrap()
        .map(|r| stream[r.unwrap().1.value().0 as usize])
        .collect();
    v.sort_unstable();
    v.dedup();
    v
}

/// The distinct versions (first byte) of a book file's reference chunks, and whether every
/// chunk is keyed by an entry block (format 10 aligns them with the blocks, docs/FORMAT.md
/// §15.3); `None` for a file that stores no games (a segment of evaluations only).
fn ref_chunk_versions(book: &Path) -> Option<(Vec<u8>, bool)> {
    use redb::{ReadableDatabase, ReadableTable};
    let db = redb::Database::open(book).unwrap();
    let txn = db.begin_read().unwrap();
    let def: redb::TableDefinition<u64, &[u8]> = redb::TableDefinition::new("game_refs");
    let blocks: redb::TableDefinition<u64, &[u8]> = redb::TableDefinition::new("blocks");
    let dir: redb::TableDefinition<u32, (u64, u32)> = redb::TableDefinition::new("game_dir");
    if txn.open_table(dir).is_err() {
        assert!(
            txn.open_table(def).is_err(),
            "references without games in {book:?}"
        );
        return None;
    }
    let (refs, blocks) = (
        txn.open_table(def).unwrap(),
        txn.open_table(blocks).unwrap(),
    );
    let mut v = Vec::new();
    let mut keyed_by_blocks = true;
    for r in refs.iter().unwrap() {
        let (k, val) = r.unwrap();
        v.push(val.value()[0]);
        keyed_by_blocks &= blocks.get(k.value()).unwrap().is_some();
    }
    v.sort_unstable();
    v.dedup();
    Some((v, keyed_by_blocks))
}

#[test]
fn every_older_format_version_migrates() {
    let fx = fixtures();
    let versions: Vec<u32> = fx.iter().map(|(v, _)| *v).collect();
    let stats: serde_json::Value = bookdb([
        "stats",
        "--json",
        "--book",
        s(&{
            let d = tempfile::tempdir().unwrap().keep();
            let b = d.join("probe.book");
            Bookdb::import(&[&halves(&d).0], &b).arg("--quiet").ok();
            b
        }),
    ])
    .json();
    let current = stats["format_version"].as_u64().unwrap() as u32;
    // A fixture of every version before the current one.
    assert_eq!(
        versions,
        (1..current).collect::<Vec<_>>(),
        "a fixture per older version"
    );
    let dir = tempfile::tempdir().unwrap();
    let (first, second) = halves(dir.path());
    let fresh = dir.path().join("fresh.book");
    Bookdb::import(&[&first, &second], &fresh)
        .arg("--quiet")
        .ok();
    let want = dump(&fresh);
    for (version, path) in fx {
        let book = dir.path().join(format!("v{version}.book"));
        // A version-3 book is a base with its manifest and delta segments beside it.
        let name = path.file_name().unwrap().to_string_lossy().into_owned();
        for e in std::fs::read_dir(path.parent().unwrap()).unwrap().flatten() {
            let f = e.file_name().to_string_lossy().into_owned();
            if f == name || f.starts_with(&format!("{name}.")) {
                std::fs::copy(e.path(), dir.path().join(&f)).unwrap();
            }
        }
        for cmd in ["probe", "dump", "stats", "verify"] {
            let err = bookdb([cmd, "--book", s(&book)]).fails_with(4);
            assert!(err.contains("bookdb migrate"), "v{version} {cmd}: {err}");
        }
        let msg = bookdb(["migrate", "--book", s(&book)]).ok();
        assert!(
            msg.contains(&format!(
                "migrated from format version {version} to {current}"
            )),
            "{msg}"
        );
        verify(&book);
        assert_eq!(dump(&book), want, "v{version}: content changed");
        let st: serde_json::Value = bookdb(["stats", "--json", "--book", s(&book)]).json();
        assert_eq!(st["format_version"], current);
        assert_eq!(st["games"], 200);
        // Version 2 fixtures were imported with --dedupe: their fingerprints survive.
        assert_eq!(
            st["dedupe_games"],
            if version >= 2 { 200 } else { 0 },
            "v{version}"
        );
        // The import records survive: importing the same files again counts nothing.
        let r: serde_json::Value = serde_json::from_str(
            &Bookdb::import(&[&first, &second], &book)
                .args(["--json", "--quiet"])
                .ok(),
        )
        .unwrap();
        assert_eq!(r["games_imported"], 0, "v{version}: {r}");
        let again = bookdb(["migrate", "--book", s(&book)]).ok();
        assert!(again.contains("nothing to do"), "{again}");
        // Format 4: the migrated book keeps all four facets from now on; every count it had
        // is in the all-unknown cell, so filtered answers count none of them.
        assert_eq!(
            st["facets"],
            serde_json::json!(["month", "speed", "rating", "mode"])
        );
        if version >= 4 {
            // A version-4 book had facets: its cells are kept as they were.
            let cells = |b: &Path| bookdb(["dump", "--facets", "--book", s(b)]).ok();
            assert_eq!(cells(&book), cells(&fresh), "v{version}: cells changed");
            // Format 5: an `evals` table; the migrated book takes evaluations.
            let epd = dir.path().join("start.epd");
            std::fs::write(
                &epd,
                "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - ce 20; acd 12; pv e4;\n",
            )
            .unwrap();
            bookdb(["import-evals", "--quiet", "--book", s(&book), s(&epd)]).ok();
            let p: serde_json::Value = bookdb(["probe", "--json", "--book", s(&book)]).json();
            assert_eq!(p["evals"][0]["depth"], 12, "{p}");
            verify(&book);
            if version >= 6 {
                // Format 6 stored the games (without UTCDate and counted plies): format 7
                // keeps them and derives the references, as a fresh import does.
                assert_eq!(st["stored_games"], 200, "v{version}: {st}");
                let all = |b: &Path| bookdb(["pgn", "--all", "--book", s(b)]).ok();
                assert_eq!(all(&book), all(&fresh), "v{version}: stored games changed");
                // Format 8: every game block is written again as version 2 (head and body
                // frames, docs/FORMAT.md §15.1); format 9: in the block stream, with the
                // packed id index (§15.5), whose every id finds its game.
                assert_eq!(game_block_versions(&book), vec![2], "v{version}");
                // Format 10: the references are chunks aligned with the entry blocks.
                assert_eq!(
                    ref_chunk_versions(&book),
                    Some((vec![2], true)),
                    "v{version}"
                );
                let listed: Vec<serde_json::Value> =
                    bookdb(["games", "--json", "--top", "50", "--book", s(&book)])
                        .ok()
                        .lines()
                        .map(|l| serde_json::from_str(l).unwrap())
                        .collect();
                assert!(!listed.is_empty(), "v{version}");
                for g in &listed {
                    let id = g["id"].as_str().unwrap();
                    let pgn = bookdb(["pgn", "--book", s(&book), id]).ok();
                    assert!(pgn.starts_with("[Event "), "v{version}: pgn {id}: {pgn}");
                }
                for line in [&[][..], &["e4"], &["d4", "Nf6"]] {
                    let games = |b: &Path| {
                        let mut a = vec!["games", "--json", "--book", s(b)];
                        let moves = line.join(" ");
                        if !line.is_empty() {
                            a.extend(["--moves", moves.as_str()]);
                        }
                        bookdb(a).ok()
                    };
                    let got = games(&book);
                    assert!(!got.is_empty(), "v{version}: no games after {line:?}");
                    assert_eq!(got, games(&fresh), "v{version}: games after {line:?}");
                }
            }
            continue;
        }
        let cells = bookdb(["dump", "--facets", "--book", s(&book)]).ok();
        for line in cells.lines().take(50) {
            let v: serde_json::Value = serde_json::from_str(line).unwrap();
            for m in v["moves"].as_array().unwrap() {
                let c = m["cells"].as_array().unwrap();
                assert_eq!(c.len(), 1, "{line}");
                assert!(
                    c[0]["period"].is_null() && c[0]["speed"].is_null(),
                    "{line}"
                );
                assert_eq!(c[0]["white"], m["white"]);
            }
        }
        let blitz: serde_json::Value =
            bookdb(["probe", "--json", "--speeds", "blitz", "--book", s(&book)]).json();
        assert_eq!(blitz["moves"], serde_json::json!([]), "v{version}: {blitz}");
    }
}

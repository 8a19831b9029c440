//! Othello books (docs/CONTRACT.md §7, docs/FORMAT.md §11): `dump` equals an independent
//! referee's replay (`tests/scripts/othello_referee.py`, Python written from §7 alone) on WTHOR
//! years and transcripts, canonical and not; incremental keys equal from-scratch keys over every
//! position of the WTHOR files; the refusal table (mixing games, chess-only commands); the
//! pipeline's guarantees on an Othello import (kill -9 and resume, exactly-once re-import,
//! incremental imports, merge and compact).
//!
//! The WTHOR files are read from `$BOOKDB_DATA/othello/wthor/` (default `../shared/data`);
//! tests that need them print a `SKIP:` line and pass if they are absent. The referee needs
//! `python3` (without it: SKIP, or a failure with `BOOKDB_REQUIRE_PEERS=1`).

mod common;
use common::*;

use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

const REFEREE: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/scripts/othello_referee.py"
);

/// Transcripts: legal games with and without results, upper case, a blank line, an illegal
/// move (line 4), a bad square (line 6), a bad result (line 7).
const TRANSCRIPT: &str = "f5d6c3d3c4f4c5b3c2 4\nF5F6E6F4 -2\n\nf5f5 10\nf5d6c3 0\nf5zz\nf5d6c5f4e3f6d3f3e6 x\nf5d6\nd3c5f6f5e6e3\n";

fn wthor_dir() -> Option<PathBuf> {
    data_file("othello/wthor/WTH_1977.wtb").map(|p| p.parent().unwrap().to_path_buf())
}

fn years(dir: &Path, years: std::ops::RangeInclusive<u32>) -> Vec<PathBuf> {
    years.map(|y| dir.join(format!("WTH_{y}.wtb"))).collect()
}

fn python3() -> Option<&'static str> {
    if Command::new("python3")
        .arg("--version")
        .output()
        .is_ok_and(|o| o.status.success())
    {
        return Some("python3");
    }
    assert!(
        !peers_required(),
        "python3 missing and BOOKDB_REQUIRE_PEERS=1"
    );
    eprintln!("SKIP: python3 not found (the Othello referee needs it)");
    None
}

fn transcript(dir: &Path) -> PathBuf {
    let p = dir.join("games.txt");
    std::fs::write(&p, TRANSCRIPT).unwrap();
    p
}

fn import(inputs: &[&Path], book: &Path, extra: &[&str]) -> serde_json::Value {
    Bookdb::import(inputs, book)
        .args(["--game", "othello", "--json"])
        .args(extra)
        .json()
}

fn lines(text: &str) -> Vec<serde_json::Value> {
    text.lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

#[test]
fn dump_equals_the_referee_replay() {
    let (Some(dir), Some(py)) = (wthor_dir(), python3()) else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let txt = transcript(tmp.path());
    for (span, extra) in [
        (1977..=1984, vec![]),
        (1977..=1981, vec!["--canonical", "--max-ply", "20"]),
    ] {
        let mut inputs = years(&dir, span);
        inputs.push(txt.clone());
        let inputs: Vec<&Path> = inputs.iter().map(|p| p.as_path()).collect();
        let book = tmp.path().join(format!("b{}.book", extra.len()));
        let summary = import(&inputs, &book, &extra);
        let ours = dump(&book);
        let out = Command::new(py)
            .arg(REFEREE)
            .args(&extra)
            .args(inputs.iter().map(|p| s(p)))
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "referee failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let theirs = String::from_utf8(out.stdout).unwrap();
        let (ours, theirs) = (lines(&ours), lines(&theirs));
        assert!(
            ours.len() > 1000,
            "{extra:?}: only {} positions",
            ours.len()
        );
        assert_eq!(ours.len(), theirs.len(), "{extra:?}: positions");
        for (a, b) in ours.iter().zip(&theirs) {
            assert_eq!(a, b, "{extra:?}");
        }
        // The games each side counted and skipped.
        let stderr = String::from_utf8_lossy(&out.stderr);
        let expect = format!(
            "games {} skipped {}",
            summary["games_imported"], summary["games_skipped"]
        );
        assert!(
            stderr.contains(&expect),
            "referee: {stderr}, bookdb: {expect}"
        );
        assert_eq!(summary["games_skipped"], 3);
        verify(&book);
    }
}

/// Keys updated by XOR move after move equal keys computed from the discs, at every position
/// of every WTHOR game; every game of the set replays.
#[test]
fn incremental_keys_equal_keys_from_scratch_over_all_wthor_games() {
    use bookdb::ops::othello::games::{WTHOR_HEADER, each_record};
    use bookdb::othello::Board;
    let Some(dir) = wthor_dir() else { return };
    let (mut games, mut positions) = (0u64, 0u64);
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|e| e == "wtb"))
        .collect();
    files.sort();
    assert_eq!(files.len(), 38);
    for f in files {
        let data = std::fs::read(&f).unwrap();
        each_record(&data[WTHOR_HEADER..], 1, |n, g| {
            let g = g.unwrap_or_else(|e| panic!("{}:{n}: {e}", f.display()));
            let mut b = Board::start();
            assert_eq!(b.key(), b.key_from_scratch());
            for &sq in &g.moves {
                b.play(sq)
                    .unwrap_or_else(|e| panic!("{}:{n}: {e}", f.display()));
                assert_eq!(b.key(), b.key_from_scratch(), "{}:{n}", f.display());
                positions += 1;
            }
            games += 1;
        });
    }
    assert_eq!(games, 115_509);
    eprintln!("{games} games, {positions} positions: incremental keys agree");
}

/// Every command that would mix games, or a chess-only command given an Othello book (or
/// position), refuses: non-zero exit, a message naming the games, and nothing written.
#[test]
fn refusal_table() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    let txt = transcript(d);
    let pgn = sample_pgn();
    let chess = d.join("chess.book");
    let oth = d.join("othello.book");
    let canon = d.join("canon.book");
    let fresh = d.join("fresh.book");
    let out = d.join("out.book");
    let bin = d.join("chess.bin");
    Bookdb::import(&[&pgn], &chess).arg("--quiet").ok();
    import(&[&txt], &oth, &[]);
    import(&[&txt], &canon, &["--canonical"]);
    export_polyglot(&chess, &bin);
    let board = "---------------------------OX------XO--------------------------- X";
    let start_fen = "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1";
    let table: Vec<(Vec<&str>, &str)> = vec![
        (
            vec!["import", s(&pgn), "--book", s(&oth)],
            "holds Othello positions",
        ),
        (
            vec!["import", "--game", "othello", s(&txt), "--book", s(&chess)],
            "holds chess positions",
        ),
        // PGN given as Othello input: refused, not read as damaged transcripts and recorded
        // as imported (the second time it is refused again, not "already imported").
        (
            vec!["import", "--game", "othello", s(&pgn), "--book", s(&oth)],
            "this book holds Othello",
        ),
        (
            vec!["import", "--game", "othello", s(&pgn), "--book", s(&oth)],
            "this book holds Othello",
        ),
        (
            vec![
                "import",
                "--game",
                "othello",
                "--canonical",
                s(&txt),
                "--book",
                s(&oth),
            ],
            "holds Othello positions",
        ),
        (
            vec!["import", "--game", "othello", s(&txt), "--book", s(&canon)],
            "holds canonical Othello positions",
        ),
        (
            vec!["merge", s(&chess), s(&oth), "--out", s(&out)],
            "never mix",
        ),
        (
            vec!["merge", s(&oth), s(&chess), "--out", s(&out)],
            "never mix",
        ),
        (
            vec!["merge", s(&oth), s(&canon), "--out", s(&out)],
            "never mix",
        ),
        (
            vec![
                "export",
                "--book",
                s(&oth),
                "--format",
                "polyglot",
                "--out",
                s(&out),
            ],
            "chess books only",
        ),
        (
            vec![
                "export",
                "--book",
                s(&canon),
                "--format",
                "jsonl",
                "--out",
                s(&out),
            ],
            "chess books only",
        ),
        (
            vec!["import-polyglot", s(&bin), "--book", s(&oth)],
            "chess books only",
        ),
        (
            vec!["pack", "--game", "othello", "--fen", start_fen],
            "chess positions only",
        ),
        (
            vec!["probe", "--book", s(&oth), "--fen", start_fen],
            "Othello book",
        ),
        (
            vec!["probe", "--book", s(&chess), "--board", board],
            "chess book",
        ),
        (
            vec![
                "import",
                "--game",
                "othello",
                "--dedupe",
                s(&txt),
                "--book",
                s(&fresh),
            ],
            "--dedupe",
        ),
        (
            vec![
                "import",
                "--game",
                "othello",
                "--min-rating",
                "2000",
                s(&txt),
                "--book",
                s(&fresh),
            ],
            "--min-rating",
        ),
        (
            vec!["import", "--canonical", s(&pgn), "--book", s(&fresh)],
            "--game othello",
        ),
    ];
    let dumps = |books: &[&Path]| books.iter().map(|b| dump(b)).collect::<Vec<_>>();
    let before = dumps(&[&chess, &oth, &canon]);
    for (args, expect) in &table {
        let r = bookdb(args).output();
        let stderr = String::from_utf8_lossy(&r.stderr);
        assert!(!r.status.success(), "{args:?} succeeded");
        assert!(
            stderr.contains(expect),
            "{args:?}: expected {expect:?} in: {stderr}"
        );
        assert!(!stderr.contains("panicked"), "{args:?}: {stderr}");
        assert!(!out.exists() && !fresh.exists(), "{args:?} wrote a book");
    }
    assert_eq!(
        dumps(&[&chess, &oth, &canon]),
        before,
        "a refused command changed a book"
    );
}

/// Commands that work on Othello books: probe (moves or board, canonical books in the asked
/// orientation), stats, verify, merge, compact, migrate; skipped games with file and line.
#[test]
fn commands_work_on_othello_books() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    let txt = transcript(d);
    let book = d.join("o.book");
    let canon = d.join("c.book");
    let report = d.join("skipped.txt");
    let r = import(&[&txt], &book, &["--report", s(&report)]);
    assert_eq!(r["games_imported"], 5);
    assert_eq!(r["games_skipped"], 3);
    let rep = std::fs::read_to_string(&report).unwrap();
    for n in [4, 6, 7] {
        assert!(rep.contains(&format!("games.txt:{n}\t")), "{rep}");
    }
    assert!(
        rep.contains("illegal-move") && rep.contains("corrupt-record"),
        "{rep}"
    );
    import(&[&txt], &canon, &["--canonical"]);
    // Probe by moves and by board: the same answer; f5 d6 c3 has the §7 key.
    let p = bookdb(["probe", "--book", s(&book), "--moves", "f5 d6", "--json"]).json();
    assert_eq!(p["key"], "05304dd5c9f74bc6");
    let q = bookdb([
        "probe",
        "--book",
        s(&book),
        "--board",
        p["board"].as_str().unwrap(),
        "--json",
    ])
    .json();
    assert_eq!(p, q);
    let moves: Vec<&str> = p["moves"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["move"].as_str().unwrap())
        .collect();
    assert_eq!(moves, ["c3"]);
    // The start: f5 four times (results +4, -2, 0, none) and d3 once.
    let start = bookdb(["probe", "--book", s(&book), "--json"]).json();
    assert_eq!(
        start["moves"],
        serde_json::json!([
            {"move": "d3", "black": 0, "draws": 0, "white": 0, "unknown": 1},
            {"move": "f5", "black": 1, "draws": 1, "white": 1, "unknown": 1}
        ])
    );
    // Canonical: every orientation of a position answers in its own orientation; d3 (the
    // mirror image of f5 across the anti-diagonal) finds f5's continuations mapped.
    let a = bookdb(["probe", "--book", s(&canon), "--moves", "f5", "--json"]).json();
    let b = bookdb(["probe", "--book", s(&canon), "--moves", "d3", "--json"]).json();
    let plain_f5 = bookdb(["probe", "--book", s(&book), "--moves", "f5", "--json"]).json();
    let total = |v: &serde_json::Value| -> u64 {
        v["moves"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| {
                ["black", "draws", "white", "unknown"]
                    .iter()
                    .map(|k| m[k].as_u64().unwrap())
                    .sum::<u64>()
            })
            .sum()
    };
    assert_eq!(total(&a), 5, "{a}");
    assert_eq!(total(&b), 5, "{b}");
    assert_eq!(total(&plain_f5), 4);
    let b_moves: Vec<&str> = b["moves"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["move"].as_str().unwrap())
        .collect();
    assert!(b_moves.contains(&"c5"), "d3 c5 was played: {b}");
    let st = stats(&canon);
    assert_eq!(st["game"], "canonical Othello");
    verify(&canon);
    // merge of a book with itself doubles the counts; compact and migrate keep the content.
    let m = d.join("m.book");
    bookdb(["merge", s(&book), s(&book), "--out", s(&m), "--quiet"]).ok();
    let start_m = bookdb(["probe", "--book", s(&m), "--json"]).json();
    assert_eq!(start_m["moves"][1]["black"], 2);
    verify(&m);
    let before = dump(&book);
    bookdb(["compact", "--book", s(&book), "--quiet"]).ok();
    assert_eq!(dump(&book), before);
    let mig = bookdb(["migrate", "--book", s(&book)]).ok();
    assert!(mig.contains("nothing to do"), "{mig}");
    verify(&book);
}

/// Exactly once and incremental: a re-import is a no-op; importing the years one after the
/// other (delta tier) equals importing them at once; merge of two halves equals the whole.
#[test]
fn othello_imports_are_exactly_once_and_incremental() {
    let Some(dir) = wthor_dir() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    let a = years(&dir, 1984..=1986);
    let b = years(&dir, 1987..=1987);
    let all: Vec<&Path> = a.iter().chain(&b).map(|p| p.as_path()).collect();
    let whole = d.join("whole.book");
    import(&all, &whole, &["--memory", "4"]);
    let expected = dump(&whole);
    let again = import(&all, &whole, &[]);
    assert_eq!(again["applied"], "none");
    assert_eq!(dump(&whole), expected);
    let inc = d.join("inc.book");
    let a_refs: Vec<&Path> = a.iter().map(|p| p.as_path()).collect();
    import(&a_refs, &inc, &[]);
    let r = import(&[&b[0]], &inc, &[]);
    assert_eq!(r["applied"], "delta");
    assert_eq!(dump(&inc), expected);
    let half = d.join("b.book");
    import(&[&b[0]], &half, &[]);
    let partial = d.join("a.book");
    import(&a_refs, &partial, &[]);
    let merged = d.join("merged.book");
    bookdb([
        "merge",
        s(&partial),
        s(&half),
        "--out",
        s(&merged),
        "--quiet",
    ])
    .ok();
    assert_eq!(dump(&merged), expected);
}

/// kill -9 at many moments of an Othello import (reading, spilling, merging, writing), fresh
/// and incremental, then the same command again: the book equals an uninterrupted build.
#[test]
fn killed_othello_imports_resume_exactly() {
    let Some(dir) = wthor_dir() else { return };
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    let first = years(&dir, 1990..=1990);
    let second = years(&dir, 1991..=1991);
    let all: Vec<&Path> = first.iter().chain(&second).map(|p| p.as_path()).collect();
    let first: Vec<&Path> = first.iter().map(|p| p.as_path()).collect();
    let args_for = |inputs: &[&Path], book: &Path| -> Vec<String> {
        let mut a = vec!["import".to_string(), "--game".into(), "othello".into()];
        a.extend(inputs.iter().map(|p| s(p).to_string()));
        a.extend(["--book", s(book), "--memory", "2", "--quiet"].map(String::from));
        a
    };
    let clean = d.join("clean.book");
    let t = std::time::Instant::now();
    bookdb(args_for(&all, &clean)).ok();
    let full = t.elapsed();
    let expected = dump(&clean);
    let clean_first = d.join("clean_first.book");
    bookdb(args_for(&first, &clean_first)).ok();
    let steps = 6u32;
    for i in 0..steps {
        for incremental in [false, true] {
            let book = d.join(format!("k{i}{incremental}.book"));
            let inputs: Vec<&Path> = if incremental {
                std::fs::copy(&clean_first, &book).unwrap();
                vec![second[0].as_path()]
            } else {
                all.clone()
            };
            kill_verify_rerun(
                &args_for(&inputs, &book),
                &book,
                full.mul_f64(f64::from(i) / f64::from(steps)) + Duration::from_millis(5),
                &expected,
                &format!("kill point {i} (incremental: {incremental})"),
            );
        }
    }
}

/// The codec of Othello books written before the position model: the same codec, but it
/// trains nothing (an empty `model/1`, positions stored as packed).
struct IdentityOthello(bookdb::othello::OthelloCodec);

impl bookdb::store::PositionCodec for IdentityOthello {
    fn name(&self) -> &'static str {
        self.0.name()
    }
    fn key(&self, pos: &[u8]) -> Result<u64, bookdb::store::error::CodecError> {
        self.0.key(pos)
    }
    fn train(&self, _: &[&[u8]]) -> Result<Vec<u8>, bookdb::store::error::CodecError> {
        Ok(Vec::new())
    }
    fn load_model(
        &self,
        bytes: &[u8],
    ) -> Result<std::sync::Arc<dyn bookdb::store::PositionModel>, bookdb::store::error::CodecError>
    {
        self.0.load_model(bytes)
    }
    fn index_moves(&self, pos: &[u8], moves: &[u16]) -> Option<Vec<u8>> {
        self.0.index_moves(pos, moves)
    }
    fn unindex_moves(
        &self,
        pos: &[u8],
        idx: &[u8],
    ) -> Result<Vec<u16>, bookdb::store::error::CodecError> {
        self.0.unindex_moves(pos, idx)
    }
}

/// Writes the pairs of `games` random games (every ply) as a book with `codec`.
fn write_random_book(path: &Path, codec: std::sync::Arc<dyn bookdb::store::PositionCodec>) {
    use bookdb::othello::Board;
    use bookdb::store::{BookWriter, Entry, MoveRec, WriterOptions};
    use std::collections::BTreeMap;
    let mut pairs: BTreeMap<(u64, Vec<u8>), BTreeMap<u16, [u64; 3]>> = BTreeMap::new();
    let mut s = 0x2545_f491_4f6c_dd1du64;
    for g in 0..400u64 {
        let mut b = Board::start();
        let result = (g % 3) as usize;
        while !b.game_over() {
            let legal = b.legal();
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            let mut x = legal;
            for _ in 0..(s % u64::from(legal.count_ones())) {
                x &= x - 1;
            }
            let sq = x.trailing_zeros() as u8;
            pairs
                .entry((b.key(), b.pack().0))
                .or_default()
                .entry(u16::from(sq))
                .or_default()[result] += 1;
            b.play(sq).unwrap();
        }
    }
    let mut w = BookWriter::create(path, codec, WriterOptions::default()).unwrap();
    for ((key, pos), moves) in pairs {
        let moves = moves
            .into_iter()
            .map(|(mv, [black, draws, white])| MoveRec {
                mv,
                black,
                draws,
                white,
                ..Default::default()
            })
            .collect();
        w.push(Entry {
            key,
            pos: Some(pos),
            moves,
            coded: None,
        })
        .unwrap();
    }
    w.add_games(400);
    w.finish().unwrap();
}

/// Books written before the Othello position model (identity: an empty `model/1`) keep
/// working: they dump, probe and verify as a book of the same pairs written with the model;
/// `compact --retrain` gives them the model (smaller, same dump). The model's book is the
/// smaller one.
#[test]
fn books_without_the_othello_model_still_read() {
    use bookdb::othello::OthelloCodec;
    let tmp = tempfile::tempdir().unwrap();
    let (old, new) = (tmp.path().join("old.book"), tmp.path().join("new.book"));
    write_random_book(
        &old,
        std::sync::Arc::new(IdentityOthello(OthelloCodec::default())),
    );
    write_random_book(&new, std::sync::Arc::new(OthelloCodec::default()));
    let want = dump(&new);
    assert!(
        want.lines().count() > 10_000,
        "{} positions",
        want.lines().count()
    );
    assert_eq!(dump(&old), want);
    for b in [&old, &new] {
        verify(b);
        let p = bookdb(["probe", "--book", s(b), "--moves", "f5", "--json"]).json();
        assert!(p["moves"].as_array().is_some_and(|m| !m.is_empty()), "{p}");
    }
    let size = |b: &Path| std::fs::metadata(b).unwrap().len();
    let (old_bytes, new_bytes) = (size(&old), size(&new));
    assert!(
        new_bytes < old_bytes,
        "model {new_bytes} B, identity {old_bytes} B"
    );
    bookdb(["compact", "--book", s(&old), "--retrain"]).ok();
    assert_eq!(dump(&old), want);
    verify(&old);
    assert!(
        size(&old) < old_bytes,
        "retrained {} B, identity {old_bytes} B",
        size(&old)
    );
}

/// xxh3-128 of `bookdb dump` of `tests/data/othello-identity.book` by the build that wrote
/// it (commit 5d76bf9).
const IDENTITY_FIXTURE_DUMP: u128 = 0x5bef_4b15_39db_f86f_4bdb_3038_0ae1_e95c;

/// The committed book of the build before the Othello position model reads as that build read
/// it: the same dump, verify clean; `compact --retrain` gives it the model, smaller, with the
/// same dump.
#[test]
fn the_identity_model_fixture_reads_as_it_was_written() {
    let tmp = tempfile::tempdir().unwrap();
    let book = tmp.path().join("old.book");
    std::fs::copy(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/othello-identity.book"),
        &book,
    )
    .unwrap();
    // Written as format 5: a format-11 file that stores no games (no game tables, so no
    // references, no game facts and no game blocks; Othello books keep no facets, so no
    // version-3 blocks) is the same bytes with the version marker 11, so the marker is set
    // rather than migrating (which would rewrite the blocks this test reads).
    common::set_format_version(&book, 11);
    let d = dump(&book);
    assert_eq!(d.lines().count(), 14_333);
    assert_eq!(
        xxhash_rust::xxh3::xxh3_128(d.as_bytes()),
        IDENTITY_FIXTURE_DUMP,
        "dump of the fixture differs from what its build wrote"
    );
    verify(&book);
    let before = std::fs::metadata(&book).unwrap().len();
    bookdb(["compact", "--book", s(&book), "--retrain"]).ok();
    assert_eq!(dump(&book), d);
    verify(&book);
    let after = std::fs::metadata(&book).unwrap().len();
    assert!(after < before, "retrained {after} B, identity {before} B");
}

/// A WTHOR file cut between records reads as whole records; its header's game count tells it
/// is truncated: the import fails and records nothing (the whole file, imported later, counts
/// every game once), as a truncated compressed input does.
#[test]
fn a_wthor_file_cut_between_records_is_refused_by_its_header_count() {
    let Some(src) = data_file("othello/wthor/WTH_1977.wtb") else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let whole = copy_in(&src, tmp.path());
    let bytes = std::fs::read(&whole).unwrap();
    let declared = u32::from_le_bytes(bytes[4..8].try_into().unwrap()) as usize;
    assert!(declared > 5 && bytes.len() == 16 + 68 * declared);
    let cut = tmp.path().join("cut.wtb");
    std::fs::write(&cut, &bytes[..16 + 68 * 5]).unwrap();
    let book = tmp.path().join("w.book");
    let run = |f: &Path| bookdb(["import", "--game", "othello", "--book", s(&book), s(f)]);
    let err = run(&cut).fails_with(1);
    assert!(
        err.contains("cut.wtb") && err.contains(&format!("counts {declared} games")),
        "{err}"
    );
    assert!(!book.exists(), "a refused first import made a book");
    run(&whole).arg("--quiet").ok();
    assert_eq!(stats(&book)["games"].as_u64(), Some(declared as u64));
}

/// PGN among the inputs of an Othello import fails as that input alone (listed in
/// `failed_inputs`, not recorded), as a non-PGN file among a chess import's inputs does: the
/// transcripts beside it are imported.
#[test]
fn pgn_among_othello_inputs_fails_alone() {
    let tmp = tempfile::tempdir().unwrap();
    let txt = transcript(tmp.path());
    let pgn = copy_in(&sample_pgn(), tmp.path());
    let book = tmp.path().join("o.book");
    let out = bookdb([
        "import",
        "--game",
        "othello",
        "--json",
        "--book",
        s(&book),
        s(&txt),
        s(&pgn),
    ])
    .output();
    assert_eq!(out.status.code(), Some(1), "{out:?}");
    let j: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    let failed = j["failed_inputs"].to_string();
    assert!(
        failed.contains("sample.pgn") && failed.contains("holds Othello"),
        "{j}"
    );
    assert!(j["games_imported"].as_u64().unwrap() > 0, "{j}");
    let alone = tmp.path().join("alone.book");
    let k = import(&[&txt], &alone, &[]);
    assert_eq!(j["games_imported"], k["games_imported"]);
}

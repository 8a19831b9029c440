//! `bookdb analyse` (docs/CONTRACT.md §10): Stockfish at a fixed depth, one thread, a fixed
//! hash, after `ucinewgame`, is deterministic — so an analysis killed (SIGKILL) at seeded
//! random moments and resumed by the same command gives exactly the evaluations of an
//! uninterrupted run; fake engines (tests/engines/fake_engine.sh) that crash, hang or babble
//! are reported with their last words and the run finishes; a binary that is not a UCI engine
//! is refused at once. Tests that need Stockfish skip (with a line saying so) unless
//! `BOOKDB_REQUIRE_PEERS=1`.

mod common;
use common::*;

use std::path::{Path, PathBuf};
use std::time::Duration;

fn stockfish() -> Option<String> {
    for p in ["/usr/games/stockfish", "/usr/bin/stockfish"] {
        if Path::new(p).exists() {
            return Some(p.to_string());
        }
    }
    assert!(
        !peers_required(),
        "stockfish not installed and BOOKDB_REQUIRE_PEERS=1 (apt-get install stockfish)"
    );
    eprintln!("SKIP: stockfish is not installed (apt-get install stockfish)");
    None
}

fn fake() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/engines/fake_engine.sh")
}

fn sample_book(dir: &Path) -> PathBuf {
    let book = dir.join("b.book");
    Bookdb::import(&[&sample_pgn()], &book).arg("--quiet").ok();
    book
}

/// SplitMix64, for reproducible kill times.
struct Rng(u64);
impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        (z ^ (z >> 31)) % n
    }
}

const POSITIONS: &str = "300";

fn analyse_args<'a>(book: &'a Path, engine: &'a str) -> Vec<&'a str> {
    vec![
        "analyse",
        "--book",
        s(book),
        "--engine",
        engine,
        "--depth",
        "7",
        "--jobs",
        "2",
        "--hash",
        "16",
        "--limit",
        POSITIONS,
        "--quiet",
    ]
}

#[test]
fn killed_and_resumed_analysis_equals_an_uninterrupted_one() {
    let Some(sf) = stockfish() else { return };
    let dir = tempfile::tempdir().unwrap();
    let book = sample_book(dir.path());
    let other = dir.path().join("o.book");
    copy_live_book(&book, &other);
    let started = std::time::Instant::now();
    let r: serde_json::Value =
        bookdb(analyse_args(&book, &sf).into_iter().chain(["--json"])).json();
    let whole = started.elapsed();
    assert_eq!(r["analysed"], 300, "{r}");
    assert_eq!(r["failed"], serde_json::json!([]));
    let export = |b: &Path| {
        bookdb([
            "export",
            "--quiet",
            "--book",
            s(b),
            "--format",
            "evals",
            "--out",
            "-",
        ])
        .ok()
    };
    let want = export(&book);
    assert_eq!(want.lines().count(), 300);
    // Killed at random moments until a run finishes by itself. A run is killed after the time
    // a run with nothing left to do takes (opening the book, choosing the positions, starting
    // the engines: measured on the analysed book) plus a random time up to a quarter of the
    // uninterrupted run's, so the first runs are interrupted mid-way however fast or slow the
    // machine is, and most killed runs still make progress.
    let idle = {
        let t = std::time::Instant::now();
        let idle: serde_json::Value =
            bookdb(analyse_args(&book, &sf).into_iter().chain(["--json"])).json();
        assert_eq!(idle["analysed"], 0, "{idle}");
        t.elapsed()
    };
    let mut rng = Rng(28);
    let mut kills = 0;
    let quarter_ms = (whole.as_millis() as u64 / 4).max(20);
    loop {
        let mut child = bookdb(analyse_args(&other, &sf)).command().spawn().unwrap();
        // Each kill lets the next run live a little longer (a 25th of a quarter run more), so
        // that on a loaded machine, where starting takes longer than `idle` measured, runs
        // still get past their start and one finishes.
        let grown = quarter_ms * kills / 25;
        std::thread::sleep(idle + Duration::from_millis(grown + rng.below(quarter_ms)));
        if child.try_wait().unwrap().is_some() {
            assert!(child.wait().unwrap().success());
            break;
        }
        child.kill().unwrap();
        child.wait().unwrap();
        kills += 1;
        assert!(kills < 300, "the analysis never finished between kills");
    }
    assert!(
        kills >= 2,
        "the analysis was never interrupted ({kills} kills)"
    );
    eprintln!(
        "the uninterrupted run took {} ms, an idle one {} ms; the analysis was killed {kills} times",
        whole.as_millis(),
        idle.as_millis()
    );
    // Running it again finds nothing to do.
    let again: serde_json::Value =
        bookdb(analyse_args(&other, &sf).into_iter().chain(["--json"])).json();
    assert_eq!(again["analysed"], 0, "{again}");
    assert_eq!(again["skipped"], 300);
    assert_eq!(export(&other), want, "interrupted {kills} times");
    verify(&other);
    // Deeper: the 20 most played again; a deeper result replaces the shallower one.
    let deeper: serde_json::Value = bookdb([
        "analyse",
        "--book",
        s(&other),
        "--engine",
        &sf,
        "--depth",
        "8",
        "--jobs",
        "2",
        "--limit",
        "20",
        "--json",
    ])
    .json();
    assert_eq!(deeper["analysed"], 20, "{deeper}");
    let p: serde_json::Value = bookdb(["probe", "--json", "--book", s(&other)]).json();
    assert_eq!(p["evals"].as_array().unwrap().len(), 1, "{p}");
    assert_eq!(p["evals"][0]["depth"], 8, "{p}");
    assert!(
        p["evals"][0]["engine"]
            .as_str()
            .unwrap()
            .starts_with("Stockfish")
    );
}

fn run_fake(book: &Path, mode: &str, extra: &[&str]) -> serde_json::Value {
    let f = fake();
    let mut args = vec![
        "analyse",
        "--book",
        s(book),
        "--engine",
        s(&f),
        "--depth",
        "5",
        "--limit",
        "3",
        "--jobs",
        "3",
        "--timeout",
        "1",
        "--json",
    ];
    args.extend_from_slice(extra);
    // A run with failed positions stores the rest and exits 1 (as an import with a failed
    // input): with --json its answer lists them; without, stderr says how many failed and
    // that a rerun retries them.
    let (r, _) = bookdb(&args).env("FAKE_MODE", mode).json_exit(1);
    let text: Vec<&str> = args.iter().copied().filter(|a| *a != "--json").collect();
    let err = bookdb(&text).env("FAKE_MODE", mode).fails_with(1);
    assert!(err.contains("3 of 3 positions failed"), "{mode}: {err}");
    assert!(err.contains("again to retry"), "{mode}: {err}");
    r
}

#[test]
fn fake_engines_that_crash_hang_or_babble_are_reported_and_the_run_finishes() {
    let dir = tempfile::tempdir().unwrap();
    let book = sample_book(dir.path());
    for (mode, reason, words) in [
        ("crash", "exited", "segmentation fault"),
        ("hang", "no answer", "thinking forever"),
        // Lines without end are no answer either (the run went on for ever).
        ("chatter", "no answer within 1.0 s", "still thinking"),
        ("babble", "not UCI", "quick brown fox"),
    ] {
        let r = run_fake(&book, mode, &[]);
        let failed = r["failed"].as_array().unwrap();
        assert_eq!(failed.len(), 3, "{mode}: {r}");
        assert_eq!(r["analysed"], 0);
        for f in failed {
            assert!(
                f["reason"].as_str().unwrap().contains(reason),
                "{mode}: {f}"
            );
            let last = f["last_words"].to_string();
            assert!(last.contains(words), "{mode}: {f}");
        }
    }
    verify(&book);
    // Not a UCI engine at all: refused at once, nothing analysed.
    let err = bookdb([
        "analyse",
        "--book",
        s(&book),
        "--engine",
        "/bin/true",
        "--depth",
        "5",
    ])
    .fails_with(1);
    assert!(err.contains("not a UCI engine"), "{err}");
    // A position whose engine crashed once is retried on a fresh process.
    let Some(sf) = stockfish() else { return };
    let state = dir.path().join("flaky.state");
    let f = fake();
    let r: serde_json::Value = bookdb([
        "analyse",
        "--book",
        s(&book),
        "--engine",
        s(&f),
        "--depth",
        "5",
        "--limit",
        "3",
        "--jobs",
        "1",
        "--json",
    ])
    .env("FAKE_MODE", "flaky")
    .env("FAKE_STATE", s(&state))
    .env("FAKE_ENGINE", &sf)
    .json();
    assert_eq!(r["analysed"], 3, "{r}");
    assert_eq!(r["failed"], serde_json::json!([]));
}

/// `--nodes N`: the same command again finds every position done (engines report the nodes of
/// their last finished iteration, below N; a result of a search given N nodes counts as N), so
/// a rerun, or a run resumed after a kill, does not analyse finished positions again.
#[test]
fn a_rerun_of_a_nodes_limited_analysis_finds_every_position_done() {
    let Some(sf) = stockfish() else { return };
    let dir = tempfile::tempdir().unwrap();
    let book = sample_book(dir.path());
    let run = |nodes: &str| -> serde_json::Value {
        bookdb([
            "analyse",
            "--book",
            s(&book),
            "--engine",
            &sf,
            "--nodes",
            nodes,
            "--jobs",
            "2",
            "--hash",
            "16",
            "--limit",
            "40",
            "--json",
        ])
        .json()
    };
    let first = run("30500");
    assert_eq!(first["analysed"], 40, "{first}");
    let again = run("30500");
    assert_eq!(again["analysed"], 0, "{again}");
    assert_eq!(again["skipped"], 40, "{again}");
    // More nodes than any stored result: analysed again.
    let more = run("61000");
    assert_eq!(more["analysed"], 40, "{more}");
}

//! The import pipeline: spills and jobs do not change results, interrupted imports resume
//! exactly (real SIGKILL), re-imports are no-ops, the delta tier, merge and compact agree with
//! a clean build, inputs in every supported encoding, and hostile inputs never crash.

mod common;
use common::*;

use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::time::Duration;

fn import(pgns: &[&Path], book: &Path, extra: &[&str]) -> serde_json::Value {
    Bookdb::import(pgns, book)
        .args(["--max-ply", "30", "--json"])
        .args(extra)
        .json()
}

/// The arguments of a quiet import at `--max-ply 30 --memory 2` (small runs: many spills),
/// for tests that run the process themselves (to kill or stop it).
fn spilling_import_args(pgns: &[&Path], book: &Path, extra: &[&str]) -> Vec<String> {
    let mut args = vec!["import".to_string()];
    args.extend(pgns.iter().map(|p| s(p).to_string()));
    args.extend(
        [
            "--book",
            s(book),
            "--max-ply",
            "30",
            "--memory",
            "2",
            "--quiet",
        ]
        .map(String::from),
    );
    args.extend(extra.iter().map(|a| a.to_string()));
    args
}

/// Splits a PGN file into two halves at a game boundary.
fn halves(pgn: &Path, dir: &Path) -> (PathBuf, PathBuf) {
    let text = std::fs::read(pgn).unwrap();
    let mid = text.len() / 2;
    let cut = text[mid..]
        .windows(8)
        .position(|w| w == b"\n[Event ")
        .map(|i| mid + i + 1)
        .expect("a game boundary");
    let (a, b) = (dir.join("a.pgn"), dir.join("b.pgn"));
    std::fs::write(&a, &text[..cut]).unwrap();
    std::fs::write(&b, &text[cut..]).unwrap();
    (a, b)
}

/// A copy of the shared 10k-game PGN in `dir`, or `None` (after a SKIP line) if it is absent.
fn medium_in(dir: &Path) -> Option<PathBuf> {
    data_file("pgn/medium-10k.pgn").map(|p| copy_in(&p, dir))
}

/// The sample PGN `n` times over, in `dir`.
fn sample_repeated(dir: &Path, n: usize) -> PathBuf {
    let p = dir.join(format!("sample-x{n}.pgn"));
    let mut text = std::fs::read(sample_pgn()).unwrap();
    text.push(b'\n');
    std::fs::write(&p, text.repeat(n)).unwrap();
    p
}

fn medium_or_sample(dir: &Path) -> PathBuf {
    match data_file("pgn/medium-10k.pgn") {
        Some(p) => copy_in(&p, dir),
        None => copy_in(&sample_pgn(), dir),
    }
}

#[test]
fn spills_and_jobs_do_not_change_the_book() {
    let dir = tempfile::tempdir().unwrap();
    // Without the shared 10k-game file, the sample five times over (its 200 games alone fit
    // one worker's smallest budget, so nothing would spill).
    // The repeated sample is one game five times: counted once each in a book that stores
    // games, so it is imported as a counts-only book (--no-games) to keep every copy.
    let (pgn, games) = match medium_in(dir.path()) {
        Some(p) => (p, &[][..]),
        None => (sample_repeated(dir.path(), 5), &["--no-games"][..]),
    };
    let with = |args: &[&'static str]| -> Vec<&'static str> { [args, games].concat() };
    let clean = dir.path().join("clean.book");
    let r = import(&[&pgn], &clean, &with(&["--jobs", "1"]));
    assert_eq!(r["runs"], 0, "fits in memory: no runs");
    let spilled = dir.path().join("spilled.book");
    let r2 = import(&[&pgn], &spilled, &with(&["--jobs", "2", "--memory", "1"]));
    assert!(
        r2["runs"].as_u64().unwrap() > 2,
        "tiny --memory must spill: {r2}"
    );
    let deduped = dir.path().join("dedupe.book");
    let r3 = import(
        &[&pgn],
        &deduped,
        &with(&["--jobs", "3", "--memory", "1", "--dedupe"]),
    );
    assert_eq!(r3["games_read"], r["games_read"]);
    let d = dump(&clean);
    assert_eq!(d, dump(&spilled));
    if r3["games_skipped"] == r["games_skipped"] {
        assert_eq!(d, dump(&deduped));
    }
    for b in [&clean, &spilled] {
        verify(b);
    }
}

/// Brace comments may hold a blank line followed by a line starting with `[` (legal PGN). Cut
/// there, a game would be split in two and the book would depend on the chunk size, which
/// follows `--memory`; found by review.
#[test]
fn comments_with_blank_lines_do_not_split_games() {
    let dir = tempfile::tempdir().unwrap();
    let text = String::from_utf8(std::fs::read(sample_pgn()).unwrap()).unwrap();
    let mut out = String::new();
    let mut games = 0;
    for rep in 0..10 {
        for (i, g) in text.split("\n[Event ").enumerate() {
            let g = if i == 0 {
                g.trim_start_matches("[Event ").to_string()
            } else {
                g.to_string()
            };
            // Every third game gets a two-paragraph comment after its first move.
            let g = if (i + rep) % 3 == 0 {
                g.replacen(
                    "\n\n1.",
                    "\n\n{ first paragraph\n\n[%clk 0:00:01] second }\n1.",
                    1,
                )
            } else {
                g
            };
            out.push_str("\n[Event ");
            out.push_str(&g);
            games += 1;
        }
    }
    let pgn = dir.path().join("comments.pgn");
    std::fs::write(&pgn, out.trim_start()).unwrap();
    let mut dumps = Vec::new();
    for memory in ["256", "1"] {
        let book = dir.path().join(format!("m{memory}.book"));
        // A counts-only book: the input repeats the sample's games, which a book that stores
        // games would skip as duplicates after the first copy.
        let r = import(
            &[&pgn],
            &book,
            &["--memory", memory, "--jobs", "2", "-q", "--no-games"],
        );
        assert_eq!(r["games_read"], games, "--memory {memory}: {r}");
        assert_eq!(
            r["games_read"], r["games_imported"],
            "--memory {memory}: {r}"
        );
        dumps.push(dump(&book));
    }
    assert!(dumps[0] == dumps[1], "the book depends on --memory");
}

#[test]
fn reimport_is_a_noop_and_force_counts_again() {
    let dir = tempfile::tempdir().unwrap();
    let pgn = copy_in(&sample_pgn(), dir.path());
    let book = dir.path().join("b.book");
    import(&[&pgn], &book, &[]);
    let first = dump(&book);
    let again = import(&[&pgn], &book, &[]);
    assert_eq!(again["games_read"], 0);
    assert_eq!(again["already_imported"][0], s(&pgn));
    assert_eq!(dump(&book), first);
    let human = Bookdb::import(&[&pgn], &book).ok();
    assert!(human.contains("already imported"), "{human}");
    // The hint does not promise what --force cannot do in a book that stores games.
    assert!(
        human.contains("--force reads it again") && human.contains("counts each game once"),
        "{human}"
    );
    // A book that stores games knows them: --force reads the input again and skips each
    // game as a duplicate (brief §9: a game is never counted twice, whatever --dedupe).
    let forced = import(&[&pgn], &book, &["--force"]);
    assert_eq!(forced["games_imported"], 0, "{forced}");
    assert_eq!(forced["skipped_by_reason"]["duplicate"], 200, "{forced}");
    assert_eq!(dump(&book), first);
    // Each skip says why without naming a --dedupe import that never ran.
    let log = bookdb(["import", s(&pgn), "--book", s(&book), "--force"]).ok_output();
    let err = String::from_utf8_lossy(&log.stderr).to_string();
    assert!(err.contains("already counted in the book"), "{err}");
    assert!(!err.contains("--dedupe import"), "{err}");
    // A counts-only book (--no-games) counts them again.
    let bare = dir.path().join("bare.book");
    import(&[&pgn], &bare, &["--no-games"]);
    import(&[&pgn], &bare, &["--force", "--no-games"]);
    let start = bookdb(["probe", "--book", s(&bare), "--json"]).json();
    let games: u64 = start["moves"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["games"].as_u64().unwrap())
        .sum();
    assert_eq!(games, 400, "--force counts the 200 games again");
    assert_eq!(stats(&bare)["games"], 400);
}

#[test]
fn delta_tier_merge_and_compact_agree_with_a_clean_build() {
    let dir = tempfile::tempdir().unwrap();
    let pgn = medium_or_sample(dir.path());
    let (a, b) = halves(&pgn, dir.path());
    let whole = dir.path().join("whole.book");
    import(&[&a, &b], &whole, &[]);
    let expected = dump(&whole);
    // Incremental: the second half goes to the delta tier or triggers a rewrite; both must agree.
    let inc = dir.path().join("inc.book");
    import(&[&a], &inc, &[]);
    let r = import(&[&b], &inc, &[]);
    assert!(["delta", "rewrite"].contains(&r["applied"].as_str().unwrap()));
    assert_eq!(dump(&inc), expected);
    verify(&inc);
    // A small third import certainly goes to the delta tier.
    let tiny = dir.path().join("tiny.pgn");
    std::fs::write(
        &tiny,
        "[Event \"t\"]\n[Result \"1-0\"]\n\n1. e4 e5 2. Qh5 Nc6 3. Bc4 Nf6 4. Qxf7# 1-0\n",
    )
    .unwrap();
    let r = import(&[&tiny], &inc, &[]);
    assert_eq!(r["applied"], "delta");
    assert!(r["book"]["delta_entries"].as_u64().unwrap() > 0);
    verify(&inc);
    let with_tiny = dump(&inc);
    let whole3 = dir.path().join("whole3.book");
    import(&[&a, &b, &tiny], &whole3, &[]);
    assert_eq!(with_tiny, dump(&whole3));
    // A reader holding the book open (a server, say) does not get in the way: the import
    // still publishes a delta segment; the reader keeps its snapshot until it refreshes.
    let tiny2 = dir.path().join("tiny2.pgn");
    std::fs::write(
        &tiny2,
        "[Event \"u\"]\n[Result \"0-1\"]\n\n1. d4 f5 2. g4 fxg4 3. h3 g3 0-1\n",
    )
    .unwrap();
    let whole4 = dir.path().join("whole4.book");
    import(&[&a, &b, &tiny, &tiny2], &whole4, &[]);
    for extra in [&[][..], &["--dedupe"][..]] {
        let busy = dir.path().join("busy.book");
        // A fresh copy each round: the last round's segment left beside an older manifest
        // would be a restore gone wrong, which writers refuse (book_restores.rs).
        for e in std::fs::read_dir(dir.path()).unwrap().flatten() {
            if e.file_name().to_string_lossy().starts_with("busy.book") {
                std::fs::remove_file(e.path()).unwrap();
            }
        }
        copy_live_book(&inc, &busy);
        // Opened with a server's cache sizes: the refreshed book keeps them, for the new
        // segment's file too.
        let caches = bookdb::store::CacheSizes {
            block_bytes: 3 << 20,
            ..Default::default()
        };
        let reader =
            bookdb::store::Book::open_with_caches(&busy, bookdb::chess_codec(), caches).unwrap();
        let before = reader.meta().clone();
        let r = import(&[&tiny2], &busy, extra);
        assert_eq!(r["applied"], "delta", "{extra:?}: {r}");
        assert_eq!(
            reader.meta(),
            &before,
            "a snapshot does not change under its reader"
        );
        assert!(reader.changed().unwrap());
        let now = reader
            .refresh()
            .unwrap()
            .expect("the import is visible after a refresh");
        assert!(now.meta().games > before.games);
        assert_eq!(now.cache_sizes(), caches);
        let limits = now.block_cache_limits();
        assert_eq!(limits.len(), reader.block_cache_limits().len() + 1);
        assert!(limits.iter().all(|&l| l == 3 << 20), "{limits:?}");
        assert!(now.refresh().unwrap().is_none());
        drop(reader);
        assert_eq!(dump(&busy), dump(&whole4), "{extra:?}");
        // A book that stores games dedupes with or without --dedupe: every counted game's
        // fingerprint is recorded, the segment's too.
        let st = stats(&busy);
        assert_eq!(st["dedupe_games"], st["games"], "{extra:?}: {st}");
        verify(&busy);
    }
    // An import past the delta threshold that adds less than half the book rewrites it with
    // the book's own model (its coded positions pass through): games 60–80% of the file into
    // a book of the first 60%.
    let text = std::fs::read(&pgn).unwrap();
    let starts = game_starts(&text);
    let at = |fraction: f64| starts[(starts.len() as f64 * fraction) as usize];
    let (base_pgn, more_pgn) = (dir.path().join("base.pgn"), dir.path().join("more.pgn"));
    std::fs::write(&base_pgn, &text[..at(0.6)]).unwrap();
    std::fs::write(&more_pgn, &text[at(0.6)..at(0.8)]).unwrap();
    let grown = dir.path().join("grown.book");
    import(&[&base_pgn], &grown, &[]);
    let r = import(&[&more_pgn], &grown, &["--delta-min", "1"]);
    assert_eq!(r["applied"], "rewrite", "{r}");
    let before = r["book"]["positions"].as_u64().unwrap() - r["positions_added"].as_u64().unwrap();
    assert!(r["pairs_added"].as_u64().unwrap() * 2 <= before, "{r}");
    let fresh = dir.path().join("fresh.book");
    import(&[&base_pgn, &more_pgn], &fresh, &[]);
    assert_eq!(dump(&grown), dump(&fresh));
    verify(&grown);
    // Merge of the parts equals the whole, in any order.
    let (ba, bb) = (dir.path().join("a.book"), dir.path().join("b.book"));
    import(&[&a], &ba, &[]);
    import(&[&b], &bb, &[]);
    let m1 = dir.path().join("m1.book");
    let m2 = dir.path().join("m2.book");
    bookdb(["merge", s(&ba), s(&bb), "--out", s(&m1)]).ok();
    bookdb(["merge", s(&bb), s(&ba), "--out", s(&m2)]).ok();
    assert_eq!(dump(&m1), expected);
    assert_eq!(dump(&m2), expected);
    let refuse = bookdb(["merge", s(&ba), s(&bb), "--out", s(&ba)]).output();
    assert!(!refuse.status.success(), "merging into an input is refused");
    // Compaction folds the delta tier without changing answers, keeping the book's model (a
    // small delta) or training a new one (--retrain).
    let c = bookdb(["compact", "--book", s(&inc), "--json"]).json();
    assert_eq!(c["after"]["delta_entries"], 0);
    assert_eq!(dump(&inc), with_tiny);
    verify(&inc);
    bookdb(["compact", "--book", s(&inc), "--retrain", "--json"]).json();
    assert_eq!(dump(&inc), with_tiny);
    verify(&inc);
    // Pruning drops exactly the moves below the threshold.
    bookdb(["compact", "--book", s(&inc), "--min-games", "2", "--json"]).json();
    for line in dump(&inc).lines() {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        for m in v["moves"].as_array().unwrap() {
            assert!(m["games"].as_u64().unwrap() >= 2);
        }
    }
}

/// kill -9 at many moments of an import (reading, checkpointing, merging, writing), then the
/// same command again: the book must equal an uninterrupted build.
#[test]
fn killed_imports_resume_exactly() {
    let dir = tempfile::tempdir().unwrap();
    let Some(pgn) = medium_in(dir.path()) else {
        return;
    };
    let (a, b) = halves(&pgn, dir.path());
    let clean = dir.path().join("clean.book");
    import(&[&a, &b], &clean, &["--memory", "2"]);
    let expected = dump(&clean);
    let clean_a = dir.path().join("clean_a.book");
    import(&[&a], &clean_a, &["--memory", "2"]);
    // How long an uninterrupted run takes, to spread the kills over it.
    let t = std::time::Instant::now();
    import(
        &[&a, &b],
        &dir.path().join("timing.book"),
        &["--memory", "2"],
    );
    let full = t.elapsed();
    let timing_inc = dir.path().join("timing_inc.book");
    std::fs::copy(&clean_a, &timing_inc).unwrap();
    let t = std::time::Instant::now();
    import(&[&b], &timing_inc, &["--memory", "2"]);
    let inc = t.elapsed();
    let steps = 10u32;
    for i in 0..steps {
        for incremental in [false, true] {
            let span = if incremental { inc } else { full };
            let book = dir.path().join(format!("k{i}{incremental}.book"));
            let inputs: Vec<&Path> = if incremental {
                std::fs::copy(&clean_a, &book).unwrap();
                vec![&b]
            } else {
                vec![&a, &b]
            };
            kill_verify_rerun(
                &spilling_import_args(&inputs, &book, &[]),
                &book,
                span.mul_f64(f64::from(i) / f64::from(steps)) + Duration::from_millis(5),
                &expected,
                &format!("kill point {i} (incremental: {incremental})"),
            );
            verify(&book);
        }
    }
}

/// Skipped games reach the staging log between checkpoints (every 256); a resume cuts the log
/// back to the checkpoint. Killed while the log holds lines past the last checkpoint (watched
/// in the staging area), then run again, the import reports every skipped game exactly once
/// and builds the same book. `--min-rating 1` skips the unrated nine tenths of the file. (If
/// the import finishes before the kill, the rerun is a no-op with an empty report.)
#[test]
fn killed_filtering_import_reports_every_skipped_game_once() {
    let dir = tempfile::tempdir().unwrap();
    let Some(pgn) = medium_in(dir.path()) else {
        return;
    };
    let report = dir.path().join("clean.txt");
    let args = |book: &Path, report: &Path| {
        spilling_import_args(&[&pgn], book, &["--min-rating", "1", "--report", s(report)])
    };
    let clean = dir.path().join("clean.book");
    bookdb(args(&clean, &report)).ok();
    let expected = dump(&clean);
    let sorted_lines = |p: &Path| {
        let mut v: Vec<String> = std::fs::read_to_string(p)
            .unwrap()
            .lines()
            .map(String::from)
            .collect();
        v.sort_unstable();
        v
    };
    let expected_report = sorted_lines(&report);
    assert!(
        expected_report.len() > 5000,
        "{} skipped",
        expected_report.len()
    );
    let mut caught = 0;
    for i in 0..4 {
        let book = dir.path().join(format!("f{i}.book"));
        let report = dir.path().join(format!("f{i}.txt"));
        let staging = dir.path().join(format!("f{i}.book.staging"));
        let mut child = bookdb(args(&book, &report)).command().spawn().unwrap();
        let deadline = std::time::Instant::now() + Duration::from_secs(120);
        // Lines past the checkpoint, after the i-th time they were seen.
        let mut seen = 0;
        let mut landed = false;
        while child.try_wait().unwrap().is_none() && std::time::Instant::now() < deadline {
            let past_checkpoint = std::fs::read_dir(&staging)
                .into_iter()
                .flatten()
                .flatten()
                .any(|e| {
                    let st = std::fs::read(e.path().join("state.json"))
                        .ok()
                        .and_then(|b| serde_json::from_slice::<serde_json::Value>(&b).ok());
                    let log = std::fs::metadata(e.path().join("skipped.jsonl")).map(|m| m.len());
                    matches!((st, log), (Some(st), Ok(len))
                        if st["skipped_log_bytes"].as_u64().is_some_and(|c| len > c))
                });
            if past_checkpoint {
                seen += 1;
                if seen > i {
                    caught += 1;
                    landed = true;
                    break;
                }
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        let _ = child.kill(); // SIGKILL
        let _ = child.wait();
        let out = bookdb(args(&book, &report)).output();
        assert!(
            out.status.success(),
            "rerun failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(
            dump(&book) == expected,
            "kill {i}: the resumed book differs"
        );
        assert!(
            !landed || sorted_lines(&report) == expected_report,
            "kill {i}: the report differs ({} lines against {})",
            sorted_lines(&report).len(),
            expected_report.len()
        );
    }
    assert!(
        caught > 0,
        "no kill landed with log lines past a checkpoint"
    );
}

/// `--dedupe` over two inputs, the second repeating 1,000 games of the first and then 500 of
/// its own first games, killed while the checkpoint says the second input is being read
/// (watched in `state.json`; kills at chosen times mostly miss that window), then run again:
/// games of the first input and of the second one's part before the checkpoint must still
/// count as seen, so the book and the report equal those of an uninterrupted build.
#[test]
fn killed_dedupe_import_resumes_exactly() {
    let dir = tempfile::tempdir().unwrap();
    let Some(pgn) = medium_in(dir.path()) else {
        return;
    };
    // Halves by games (the bytes may not be UTF-8); the second repeats 1,000 of the first.
    let text = std::fs::read(&pgn).unwrap();
    let starts = game_starts(&text);
    let mid = starts[starts.len() / 2];
    let (a, dup) = (dir.path().join("a.pgn"), dir.path().join("dup.pgn"));
    std::fs::write(&a, &text[..mid]).unwrap();
    let mut dup_bytes = text[mid..].to_vec();
    dup_bytes.extend_from_slice(b"\n");
    dup_bytes.extend_from_slice(&text[..starts[1000]]);
    dup_bytes.extend_from_slice(b"\n");
    dup_bytes.extend_from_slice(&text[mid..starts[starts.len() / 2 + 500]]);
    std::fs::write(&dup, dup_bytes).unwrap();
    let report_of = |book: &Path| book.with_extension("report");
    let args = |book: &Path| {
        spilling_import_args(
            &[&a, &dup],
            book,
            &["--dedupe", "--report", s(&report_of(book))],
        )
    };
    let sorted_report = |book: &Path| {
        let text = std::fs::read_to_string(report_of(book)).unwrap();
        let mut lines: Vec<String> = text.lines().map(str::to_string).collect();
        lines.sort();
        lines
    };
    let clean = dir.path().join("clean.book");
    bookdb(args(&clean)).ok();
    let expected = dump(&clean);
    let expected_report = sorted_report(&clean);
    assert_eq!(
        expected_report
            .iter()
            .filter(|l| l.contains("\tduplicate\t"))
            .count(),
        1500,
        "the 1,000 repeats of the first input and the 500 of the second's own games"
    );
    let recorded = stats(&clean)["dedupe_games"].clone();
    assert_eq!(recorded, stats(&clean)["games"]);
    let whole = dir.path().join("whole.book");
    import(&[&pgn], &whole, &[]);
    assert_eq!(
        stats(&clean)["games"],
        stats(&whole)["games"],
        "every repeated game was dropped"
    );
    let mut caught = 0;
    for i in 0..4 {
        let book = dir.path().join(format!("d{i}.book"));
        let staging = dir.path().join(format!("d{i}.book.staging"));
        let mut child = bookdb(args(&book)).command().spawn().unwrap();
        let deadline = std::time::Instant::now() + Duration::from_secs(120);
        while child.try_wait().unwrap().is_none() && std::time::Instant::now() < deadline {
            let in_second = std::fs::read_dir(&staging)
                .into_iter()
                .flatten()
                .flatten()
                .filter_map(|e| std::fs::read(e.path().join("state.json")).ok())
                .filter_map(|b| serde_json::from_slice::<serde_json::Value>(&b).ok())
                .any(|st| {
                    st["input_index"] == 1
                        && st["bytes_in_input"].as_u64() > Some(500_000 * i)
                        && st["read_complete"] == false
                });
            if in_second {
                caught += 1;
                break;
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        let _ = child.kill(); // SIGKILL
        let _ = child.wait();
        let out = bookdb(args(&book)).output();
        assert!(
            out.status.success(),
            "rerun failed: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        // (Not assert_eq!: the dumps are megabytes.)
        let got = dump(&book);
        assert!(
            got == expected,
            "kill {i}: the resumed book differs ({} against {} dump lines)",
            got.lines().count(),
            expected.lines().count()
        );
        assert_eq!(
            stats(&book)["dedupe_games"],
            recorded,
            "kill {i}: the resumed book remembers other games"
        );
        assert!(
            sorted_report(&book) == expected_report,
            "kill {i}: the report differs from the uninterrupted one"
        );
    }
    assert!(caught > 0, "no kill landed while the second input was read");
}

/// `--dedupe` remembers the games it counted in the book: a later `--dedupe` import skips
/// games an earlier one counted, also after compaction and merge; games counted without
/// `--dedupe` are not remembered.
#[test]
fn dedupe_spans_imports_compaction_and_merge() {
    let dir = tempfile::tempdir().unwrap();
    let pgn = medium_or_sample(dir.path());
    let text = std::fs::read(&pgn).unwrap();
    let starts = game_starts(&text);
    let at = |fraction: f64| starts[(starts.len() as f64 * fraction) as usize];
    let (first, second) = (dir.path().join("first.pgn"), dir.path().join("second.pgn"));
    std::fs::write(&first, &text[..at(0.6)]).unwrap();
    std::fs::write(&second, &text[at(0.4)..]).unwrap();
    let whole = dir.path().join("whole.book");
    let w = import(&[&pgn], &whole, &["--dedupe"]);
    let book = dir.path().join("book.book");
    // Tiny memory: the fingerprints go through spills and checkpoints.
    import(&[&first], &book, &["--dedupe", "--memory", "2"]);
    let r = import(&[&second], &book, &["--dedupe", "--memory", "2"]);
    let overlap = (starts.len() as f64 * 0.6) as u64 - (starts.len() as f64 * 0.4) as u64;
    // Games of the overlap without moves were never counted, so they are skipped as
    // `no-moves` rather than as duplicates.
    let by = |reason: &str| r["skipped_by_reason"][reason].as_u64().unwrap_or(0);
    assert!(
        by("duplicate") + by("no-moves") >= overlap,
        "the games of the overlap were counted again: {r}"
    );
    assert_eq!(dump(&book), dump(&whole));
    let st = stats(&book);
    assert_eq!(st["games"], w["games_imported"]);
    assert_eq!(
        st["dedupe_games"], st["games"],
        "one fingerprint per counted game"
    );
    // import-polyglot rewrites the book and keeps the fingerprints.
    let bin = dir.path().join("x.bin");
    export_polyglot(&whole, &bin);
    bookdb(["import-polyglot", s(&bin), "--book", s(&book), "--quiet"]).ok();
    assert_eq!(stats(&book)["dedupe_games"], st["dedupe_games"]);
    // Compaction and merge keep the record: the overlap again is all duplicates.
    let overlap_pgn = dir.path().join("overlap.pgn");
    std::fs::write(&overlap_pgn, &text[at(0.4)..at(0.6)]).unwrap();
    bookdb(["compact", "--book", s(&book), "--retrain", "--json"]).json();
    let merged = dir.path().join("merged.book");
    let other = dir.path().join("other.book");
    import(&[&first], &other, &[]);
    bookdb(["merge", s(&book), s(&other), "--out", s(&merged)]).ok();
    for b in [&book, &merged] {
        let r = import(&[&overlap_pgn], b, &["--dedupe"]);
        assert_eq!(r["games_imported"], 0, "{r}");
    }
    // Without --dedupe a counts-only book (--no-games) remembers nothing.
    let plain = dir.path().join("plain.book");
    import(&[&first], &plain, &["--no-games"]);
    let r = import(&[&overlap_pgn], &plain, &["--dedupe"]);
    let no_moves = |r: &serde_json::Value| r["skipped_by_reason"]["no-moves"].as_u64().unwrap_or(0);
    assert_eq!(
        r["games_imported"].as_u64(),
        Some(overlap - no_moves(&r)),
        "{r}"
    );
    // Only counted games are remembered: games a rating filter skipped can be imported later.
    let rated = dir.path().join("rated.book");
    let strict = import(&[&first], &rated, &["--dedupe", "--min-rating", "2600"]);
    let again = dir.path().join("first-again.pgn");
    let mut bytes = std::fs::read(&first).unwrap();
    bytes.extend_from_slice(b"\n");
    std::fs::write(&again, bytes).unwrap();
    let r = import(&[&again], &rated, &["--dedupe"]);
    assert_eq!(
        r["games_imported"].as_u64().unwrap() + strict["games_imported"].as_u64().unwrap(),
        strict["games_read"].as_u64().unwrap()
            - strict["skipped_by_reason"]["duplicate"]
                .as_u64()
                .unwrap_or(0)
            - no_moves(&r),
        "{strict} {r}"
    );
}

/// `--dedupe` keeps the fingerprints of the games read in bounded memory: past a sixteenth of
/// `--memory` they go to a staging table. Spilled or not, the books, the skipped games and the
/// fingerprints recorded are the same, for a first import (rewrite) and a second one (delta
/// tier).
#[test]
fn dedupe_fingerprints_spill_without_changing_results() {
    let dir = tempfile::tempdir().unwrap();
    let sample = std::fs::read_to_string(sample_pgn()).unwrap();
    let games = sample.matches("[Event ").count();
    assert!(games >= 100, "the sample holds {games} games");
    // Copies of the sample that are other games: Round is part of a game's identity.
    let copies = |ks: &[usize]| -> String {
        ks.iter()
            .map(|k| sample.replace("[Event ", &format!("[Round \"copy {k}\"]\n[Event ")) + "\n")
            .collect()
    };
    // 12 copies (2,400 games: more than --memory 1 keeps in memory), then two of them again.
    let first = dir.path().join("first.pgn");
    let all: Vec<usize> = (0..12).chain([3, 7]).collect();
    std::fs::write(&first, copies(&all)).unwrap();
    // 12 new copies and 2 old ones: the second import goes to the delta tier.
    let second = dir.path().join("second.pgn");
    let more: Vec<usize> = (12..24).chain([0, 11]).collect();
    std::fs::write(&second, copies(&more)).unwrap();
    let mut results = Vec::new();
    for memory in ["1", "256"] {
        let book = dir.path().join(format!("m{memory}.book"));
        let mut rs = Vec::new();
        for (i, pgn) in [&first, &second].into_iter().enumerate() {
            let report = dir.path().join(format!("m{memory}-{i}.report"));
            let r = import(
                &[pgn],
                &book,
                &["--dedupe", "--memory", memory, "--report", s(&report)],
            );
            assert_eq!(
                r["dedupe_spilled"],
                memory == "1",
                "--memory {memory}, input {i}: {r}"
            );
            assert!(
                r["skipped_by_reason"]["duplicate"].as_u64().unwrap_or(0) >= 2 * games as u64,
                "two copies again: {r}"
            );
            let applied = if i == 0 { "rewrite" } else { "delta" };
            assert_eq!(r["applied"], applied, "{r}");
            // What counts (not the runs, file layout or timings, which follow the budget).
            let counted = serde_json::json!({
                "read": r["games_read"],
                "imported": r["games_imported"],
                "skipped": r["skipped_by_reason"],
                "positions": r["positions_added"],
                "pairs": r["pairs_added"],
                "games": r["book"]["games"],
            });
            rs.push((counted, std::fs::read_to_string(&report).unwrap()));
        }
        let st = stats(&book);
        assert_eq!(st["dedupe_games"], st["games"], "one fingerprint per game");
        results.push((rs, dump(&book), st["dedupe_games"].clone()));
    }
    let (a, b) = (&results[0], &results[1]);
    for (i, (x, y)) in a.0.iter().zip(&b.0).enumerate() {
        assert_eq!(x.0, y.0, "input {i}: summaries");
        assert!(x.1 == y.1, "input {i}: the skipped-games reports differ");
    }
    assert!(a.1 == b.1, "the books differ");
    assert_eq!(a.2, b.2, "fingerprints recorded");
}

/// `--dedupe` parses on every worker, but a game is a repeat only of an earlier one in input
/// order: whatever the jobs and the chunk size (tiny `--memory`: chunks of 64 KiB, many of
/// them parsed at once and answered out of order), the games reported as repeats are exactly
/// the later copies of a game text seen before, and the books are equal.
#[test]
fn dedupe_keeps_the_first_copy_whatever_the_jobs_and_chunks() {
    let dir = tempfile::tempdir().unwrap();
    let sample = std::fs::read_to_string(sample_pgn()).unwrap();
    // Copies that are other games (Round is part of a game's identity), repeated out of
    // order, so that first copies and repeats meet in chunks parsed by different workers.
    let order = [0, 1, 2, 3, 4, 5, 5, 2, 6, 0, 4, 1, 7, 3];
    let text: String = order
        .iter()
        .map(|k| sample.replace("[Event ", &format!("[Round \"copy {k}\"]\n[Event ")) + "\n")
        .collect();
    let pgn = dir.path().join("copies.pgn");
    std::fs::write(&pgn, &text).unwrap();
    // The oracle: a game whose text (from its first tag to the next game's) appeared before.
    let lines: Vec<&str> = text.lines().collect();
    let starts: Vec<usize> = (0..lines.len())
        .filter(|&i| lines[i].starts_with("[Round \"copy "))
        .collect();
    let mut seen = std::collections::HashSet::new();
    let mut expected = Vec::new();
    let mut firsts = String::new();
    for (j, &at) in starts.iter().enumerate() {
        let end = starts.get(j + 1).copied().unwrap_or(lines.len());
        let game = lines[at..end].join("\n");
        if seen.insert(game.trim_end().to_string()) {
            firsts.push_str(&game);
            firsts.push('\n');
        } else {
            expected.push(format!("{}:{}", s(&pgn), at + 1));
        }
    }
    assert!(expected.len() >= 6 * 200, "{} repeats", expected.len());
    // The book must be that of the first copies alone, imported without --dedupe.
    let firsts_pgn = dir.path().join("firsts.pgn");
    std::fs::write(&firsts_pgn, &firsts).unwrap();
    let plain = dir.path().join("firsts.book");
    let p = import(&[&firsts_pgn], &plain, &[]);
    let plain_dump = dump(&plain);
    let mut first: Option<(serde_json::Value, String)> = None;
    for (jobs, memory) in [("1", "256"), ("2", "2"), ("3", "2")] {
        let book = dir.path().join(format!("j{jobs}-m{memory}.book"));
        let report = dir.path().join(format!("j{jobs}-m{memory}.report"));
        let r = import(
            &[&pgn],
            &book,
            &[
                "--dedupe",
                "--jobs",
                jobs,
                "--memory",
                memory,
                "--report",
                s(&report),
            ],
        );
        let report = std::fs::read_to_string(&report).unwrap();
        let mut repeats: Vec<String> = report
            .lines()
            .filter(|l| l.split('\t').nth(1) == Some("duplicate"))
            .map(|l| l.split('\t').next().unwrap().to_string())
            .collect();
        repeats.sort_by_key(|l| l.rsplit(':').next().unwrap().parse::<usize>().unwrap());
        assert!(
            repeats == expected,
            "--jobs {jobs} --memory {memory}: {} repeats reported, {} expected; first difference at {:?}",
            repeats.len(),
            expected.len(),
            repeats.iter().zip(&expected).position(|(a, b)| a != b)
        );
        let counted = serde_json::json!({
            "read": r["games_read"],
            "imported": r["games_imported"],
            "skipped": r["skipped_by_reason"],
            "pairs": r["pairs_added"],
        });
        let st = stats(&book);
        assert_eq!(st["dedupe_games"], st["games"], "one fingerprint per game");
        assert_eq!(
            r["games_imported"], p["games_imported"],
            "--jobs {jobs} --memory {memory}"
        );
        assert!(
            dump(&book) == plain_dump,
            "--jobs {jobs} --memory {memory}: not the book of the first copies"
        );
        match &first {
            None => first = Some((counted, dump(&book))),
            Some((c, d)) => {
                assert_eq!(&counted, c, "--jobs {jobs} --memory {memory}");
                assert!(
                    &dump(&book) == d,
                    "--jobs {jobs} --memory {memory}: the books differ"
                );
            }
        }
    }
}

/// Games the PGN reader cannot parse carry no tags or moves; `--dedupe` must report each as
/// unreadable, not the second one as a repeat of the first.
#[test]
fn dedupe_reports_unreadable_games_as_unreadable() {
    let dir = tempfile::tempdir().unwrap();
    let (u1, u2) = (dir.path().join("u1.pgn"), dir.path().join("u2.pgn"));
    std::fs::write(
        &u1,
        "[Event \"x\"]\n[White \"a\"]\n[Black \"b\"]\n[Result \"1-0\"]\n\n1. e4 e5 2. Nf3 { never closed\n1-0\n",
    )
    .unwrap();
    std::fs::write(
        &u2,
        "[Event \"y\"]\n[White \"c\"]\n[Black \"d\"]\n[Result \"0-1\"]\n\n1. d4 d5 { open\n0-1\n",
    )
    .unwrap();
    for jobs in ["1", "2"] {
        let book = dir.path().join(format!("u{jobs}.book"));
        let r = import(&[&u1, &u2], &book, &["--dedupe", "--jobs", jobs]);
        assert_eq!(r["games_read"], 2, "{r}");
        assert_eq!(
            r["skipped_by_reason"],
            serde_json::json!({"unreadable": 2}),
            "--jobs {jobs}: {r}"
        );
    }
}

/// When the workers never fill (here every game is skipped by `--min-rating`), no checkpoint
/// comes, and the skipped games still go to the staging log as they arrive (held in memory,
/// they grew with the input): the report lists every one, once.
#[test]
fn every_skipped_game_is_reported_when_no_checkpoint_comes() {
    let dir = tempfile::tempdir().unwrap();
    let pgn = sample_repeated(dir.path(), 25);
    let book = dir.path().join("none.book");
    let report = dir.path().join("skipped.txt");
    let r = import(
        &[&pgn],
        &book,
        &["--min-rating", "9999", "--report", s(&report)],
    );
    let read = r["games_read"].as_u64().unwrap();
    assert!(
        read >= 5000,
        "more skipped games than the coordinator holds: {r}"
    );
    assert_eq!(r["games_skipped"].as_u64(), Some(read), "{r}");
    assert_eq!(r["runs"], 0, "{r}");
    let rep = std::fs::read_to_string(&report).unwrap();
    let mut lines: Vec<&str> = rep.lines().collect();
    assert_eq!(lines.len() as u64, read);
    lines.sort_unstable();
    lines.dedup();
    assert_eq!(lines.len() as u64, read, "each skipped game once");
}

/// The skipped-games log grows while the import reads, even when no checkpoint comes (every
/// game skipped, so the workers never fill): watched in the staging area, it must take at
/// least ten different sizes before the process ends (kept in memory until the end, as
/// before, it would go from empty to full in one write).
#[test]
fn skipped_games_reach_the_staging_log_while_reading() {
    let dir = tempfile::tempdir().unwrap();
    let pgn = sample_repeated(dir.path(), 100);
    let book = dir.path().join("none.book");
    let staging = dir.path().join("none.book.staging");
    let mut child = bookdb(spilling_import_args(
        &[&pgn],
        &book,
        &["--min-rating", "9999"],
    ))
    .command()
    .spawn()
    .unwrap();
    let mut sizes = std::collections::BTreeSet::new();
    let deadline = std::time::Instant::now() + Duration::from_secs(120);
    while child.try_wait().unwrap().is_none() && std::time::Instant::now() < deadline {
        for e in std::fs::read_dir(&staging).into_iter().flatten().flatten() {
            assert!(
                !e.path().join("state.json").exists(),
                "a checkpoint came: the test no longer covers the case"
            );
            if let Ok(m) = std::fs::metadata(e.path().join("skipped.jsonl")) {
                sizes.insert(m.len());
            }
        }
        std::thread::sleep(Duration::from_micros(200));
    }
    assert!(child.wait().unwrap().success());
    sizes.remove(&0);
    assert!(
        sizes.len() >= 10,
        "the log did not grow while reading: sizes seen {sizes:?}"
    );
}

/// `--force` imports bypass the already-imported check, so a run killed after its commit but
/// before it removed its staging area must not be applied again by the next run: the staging
/// area (with its `applying` marker) is snapshotted while the import is stopped (SIGSTOP) just
/// before its commit, the import then finishes, the snapshot is put back, and the same
/// command again must count nothing.
#[test]
fn force_import_killed_after_its_commit_is_not_counted_twice() {
    let dir = tempfile::tempdir().unwrap();
    let pgn = medium_or_sample(dir.path());
    let book = dir.path().join("b.book");
    // A counts-only book: --force counts the games again (a book that stores games would
    // skip them as duplicates).
    import(&[&pgn], &book, &["--no-games"]);
    let once = stats(&book)["games"].as_u64().unwrap();
    let args = spilling_import_args(&[&pgn], &book, &["--force", "--no-games"]);
    let staging = dir.path().join("b.book.staging");
    let snapshot = dir.path().join("snapshot");
    let mut child = bookdb(&args).command().spawn().unwrap();
    let pid = child.id().to_string();
    let deadline = std::time::Instant::now() + Duration::from_secs(120);
    let mut marker_dir = None;
    while marker_dir.is_none() && std::time::Instant::now() < deadline {
        marker_dir = std::fs::read_dir(&staging)
            .into_iter()
            .flatten()
            .flatten()
            .map(|e| e.path())
            .find(|d| d.join("applying").exists());
        if marker_dir.is_none() {
            std::thread::sleep(Duration::from_millis(1));
        }
    }
    let marker_dir = marker_dir.expect("the import reached its commit");
    Command::new("kill").args(["-STOP", &pid]).status().unwrap();
    std::fs::create_dir_all(&snapshot).unwrap();
    for e in std::fs::read_dir(&marker_dir).unwrap().flatten() {
        std::fs::copy(e.path(), snapshot.join(e.file_name())).unwrap();
    }
    Command::new("kill").args(["-CONT", &pid]).status().unwrap();
    assert!(child.wait().unwrap().success());
    assert_eq!(
        stats(&book)["games"].as_u64(),
        Some(2 * once),
        "--force counts the input again"
    );
    // The state a kill between the commit and the cleanup leaves.
    std::fs::create_dir_all(&marker_dir).unwrap();
    for e in std::fs::read_dir(&snapshot).unwrap().flatten() {
        std::fs::copy(e.path(), marker_dir.join(e.file_name())).unwrap();
    }
    let mut again: Vec<&str> = args.iter().map(String::as_str).collect();
    again.retain(|a| *a != "--quiet");
    again.push("--json");
    let r = bookdb(&again).json();
    assert_eq!(r["applied"], "committed before the interruption", "{r}");
    assert_eq!(
        stats(&book)["games"].as_u64(),
        Some(2 * once),
        "the interrupted run's games are not counted twice"
    );
    assert!(!staging.exists(), "staging removed");
}

#[test]
fn compressed_and_stdin_inputs() {
    let dir = tempfile::tempdir().unwrap();
    let pgn = copy_in(&sample_pgn(), dir.path());
    let text = std::fs::read(&pgn).unwrap();
    let plain = dir.path().join("plain.book");
    import(&[&pgn], &plain, &[]);
    let expected = dump(&plain);
    let gz = dir.path().join("s.pgn.gz");
    let mut e = flate2::write::GzEncoder::new(
        std::fs::File::create(&gz).unwrap(),
        flate2::Compression::default(),
    );
    e.write_all(&text).unwrap();
    e.finish().unwrap();
    let bz = dir.path().join("s.pgn.bz2");
    let mut e = bzip2::write::BzEncoder::new(
        std::fs::File::create(&bz).unwrap(),
        bzip2::Compression::default(),
    );
    e.write_all(&text).unwrap();
    e.finish().unwrap();
    let zst = dir.path().join("s.pgn.zst");
    std::fs::write(&zst, zstd::encode_all(&text[..], 3).unwrap()).unwrap();
    // Magic bytes decide, not the extension.
    let disguised = dir.path().join("zst-without-extension.pgn");
    std::fs::copy(&zst, &disguised).unwrap();
    for f in [&gz, &bz, &zst, &disguised] {
        let book = dir
            .path()
            .join(format!("{}.book", f.file_name().unwrap().to_string_lossy()));
        let r = import(&[f], &book, &[]);
        assert_eq!(r["games_imported"], 200, "{}", f.display());
        assert_eq!(dump(&book), expected, "{}", f.display());
    }
    let stdin_book = dir.path().join("stdin.book");
    let mut child = Bookdb::import(&["-"], &stdin_book)
        .args(["--max-ply", "30", "--quiet"])
        .command()
        .stdin(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(&text).unwrap();
    assert!(child.wait().unwrap().success());
    assert_eq!(dump(&stdin_book), expected);
    // The same bytes again on stdin are recognised after reading, and nothing changes.
    let mut child = Bookdb::import(&["-"], &stdin_book)
        .args(["--max-ply", "30"])
        .command()
        .stdin(std::process::Stdio::piped())
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    child.stdin.take().unwrap().write_all(&text).unwrap();
    let out = child.wait_with_output().unwrap();
    // Exit 0, as a repeated file import (issue 25 item 14; tests/nonregular_inputs.rs).
    assert!(out.status.success());
    assert!(String::from_utf8_lossy(&out.stdout).contains("already imported"));
    assert_eq!(dump(&stdin_book), expected);
}

/// Every hostile or odd input of the shared data imports without a crash; variants are skipped
/// as variants, and every skipped game is reported with file:line.
#[test]
fn edge_case_inputs_never_crash() {
    let root = data_dir().join("pgn");
    if !root.exists() {
        eprintln!("SKIP: {} is absent", root.display());
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let mut files = Vec::new();
    for sub in ["edgecases", "variants", "studies", "tcec"] {
        let mut stack = vec![root.join(sub)];
        while let Some(d) = stack.pop() {
            let Ok(rd) = std::fs::read_dir(&d) else {
                continue;
            };
            for e in rd.flatten() {
                let p = e.path();
                if p.is_dir() {
                    stack.push(p);
                } else if p.extension().is_some_and(|x| x == "pgn") {
                    files.push(p);
                }
            }
        }
    }
    files.push(root.join("eco.pgn"));
    files.sort();
    assert!(files.len() > 50, "edge-case corpus found");
    let book = dir.path().join("edge.book");
    let report = dir.path().join("skipped.txt");
    let mut args = vec!["import".to_string()];
    args.extend(files.iter().map(|p| s(p).to_string()));
    args.extend(
        [
            "--book",
            s(&book),
            "--max-ply",
            "60",
            "--json",
            "--report",
            s(&report),
        ]
        .map(String::from),
    );
    let out = bookdb(&args).output();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let r: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert!(r["games_imported"].as_u64().unwrap() > 1000, "{r}");
    assert!(
        r["skipped_by_reason"]["variant"].as_u64().unwrap() > 100,
        "{r}"
    );
    let rep = std::fs::read_to_string(&report).unwrap();
    assert_eq!(
        rep.lines().count() as u64,
        r["games_skipped"].as_u64().unwrap()
    );
    for line in rep.lines() {
        let loc = line.split('\t').next().unwrap();
        let (file, lineno) = loc.rsplit_once(':').unwrap();
        assert!(Path::new(file).exists(), "{line}");
        assert!(lineno.parse::<u64>().unwrap() >= 1, "{line}");
    }
    verify(&book);
    // Positions from FEN starts are in the book and verify as legal.
    assert!(stats(&book)["positions"].as_u64().unwrap() > 10_000);
}

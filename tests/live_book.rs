//! The live book with real processes: a reader process probing in a loop while imports,
//! compactions, an `import-polyglot` and a `migrate` run against the same book (every answer
//! is the book's content at some commit, never a mix, and each commit reaches the reader
//! within a second); and writers killed with SIGKILL at every crash point of publishing and
//! folding, and at seeded random moments (the book opens, verifies, and running the command
//! again gives what an uninterrupted run gives).

mod common;
use common::*;

use std::collections::HashMap;
use std::io::{BufRead, Write};
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

fn generation(book: &Path) -> u64 {
    let st: serde_json::Value = bookdb(["stats", "--json", "--book", s(book)]).json();
    st["generation"].as_u64().unwrap()
}

fn now_ms() -> u128 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_millis()
}

/// A dump as FEN → answer string (the form the reader prints).
fn answers(dump: &str) -> HashMap<String, String> {
    dump.lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            let moves: Vec<String> = v["moves"]
                .as_array()
                .unwrap()
                .iter()
                .map(|m| {
                    format!(
                        "{}:{}/{}/{}/{}",
                        m["uci"].as_str().unwrap(),
                        m["white"],
                        m["draws"],
                        m["black"],
                        m["unknown"]
                    )
                })
                .collect::<Vec<_>>();
            let mut moves = moves;
            moves.sort();
            // Key-only entries (from a Polyglot import) have no FEN; the reader never probes them.
            let id = v["fen"].as_str().or(v["key"].as_str()).unwrap();
            (id.to_string(), moves.join(","))
        })
        .collect()
}

/// Games for these tests: the 10k-game file if present, else the sample repeated with
/// different results is not enough variety, so the sample alone.
fn test_games(dir: &Path) -> Vec<Vec<u8>> {
    let src = data_file("pgn/medium-10k.pgn").unwrap_or_else(|| {
        eprintln!("SKIP: using the 200-game sample instead of the 10k-game file");
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/sample.pgn")
    });
    let local = copy_in(&src, dir);
    games_of(&local)
}

/// The reader process: this test binary run again with `BOOKDB_LIVE_READER` set. It opens the
/// book as a [`bookdb::store::LiveBook`], then until the stop file appears refreshes and
/// probes random positions of the list, printing `ans<TAB>generation<TAB>index<TAB>answer`
/// for some answers and `seen<TAB>generation<TAB>ms` when a generation first appears.
#[test]
fn live_reader_child() {
    let Ok(book) = std::env::var("BOOKDB_LIVE_READER") else {
        return;
    };
    let fens: Vec<String> = std::fs::read_to_string(std::env::var("BOOKDB_LIVE_FENS").unwrap())
        .unwrap()
        .lines()
        .map(str::to_string)
        .collect();
    let packed: Vec<Vec<u8>> = fens
        .iter()
        .map(|f| {
            let c = bookdb::chess::parse_fen(f).unwrap();
            bookdb::chess::PosState::from_chess(&c).pack().0
        })
        .collect();
    let stop = PathBuf::from(std::env::var("BOOKDB_LIVE_STOP").unwrap());
    let live = bookdb::store::LiveBook::open(Path::new(&book), bookdb::chess_codec()).unwrap();
    let out = std::io::stdout();
    let mut out = std::io::BufWriter::new(out.lock());
    let mut seen = std::collections::HashSet::new();
    let mut rng = 0x9E37_79B9_7F4A_7C15u64;
    std::fs::write(stop.with_extension("ready"), "").unwrap();
    let mut round = 0u64;
    while !stop.exists() {
        live.refresh().unwrap();
        let book = live.snapshot();
        if seen.insert(book.generation()) {
            writeln!(out, "seen\t{}\t{}", book.generation(), now_ms()).unwrap();
            out.flush().unwrap();
        }
        // Every round probes a few positions; every 8th round prints its answers.
        for _ in 0..8 {
            rng ^= rng << 13;
            rng ^= rng >> 7;
            rng ^= rng << 17;
            let i = (rng % packed.len() as u64) as usize;
            let e = book.lookup(&packed[i]).unwrap();
            if round.is_multiple_of(8) {
                let a: Vec<String> = e
                    .map(|e| {
                        e.moves
                            .iter()
                            .map(|m| {
                                format!(
                                    "{}:{}/{}/{}/{}",
                                    bookdb::chess::move_uci(m.mv),
                                    m.white,
                                    m.draws,
                                    m.black,
                                    m.unknown
                                )
                            })
                            .collect()
                    })
                    .unwrap_or_default();
                let mut a: Vec<String> = a;
                a.sort();
                writeln!(out, "ans\t{}\t{i}\t{}", book.generation(), a.join(",")).unwrap();
            }
        }
        round += 1;
    }
    out.flush().unwrap();
}

#[test]
fn readers_see_whole_commits_while_writers_run() {
    let dir = tempfile::tempdir().unwrap();
    let games = test_games(dir.path());
    let n = games.len().min(4000);
    let book = dir.path().join("live.book");
    let part = |a: f64, b: f64, name: &str| {
        let p = dir.path().join(name);
        write_games(&p, &games[(n as f64 * a) as usize..(n as f64 * b) as usize]);
        p
    };
    let base = part(0.0, 0.5, "base.pgn");
    Bookdb::import(&[&base], &book).arg("--quiet").ok();
    // Small imports (delta segments, enough to make the folding policy merge some), a
    // compaction, a Polyglot import, a migrate (nothing to do) and more imports.
    let mut steps: Vec<Vec<String>> = Vec::new();
    let smalls: Vec<PathBuf> = (0..11)
        .map(|i| {
            let a = 0.5 + 0.02 * i as f64;
            part(a, a + 0.02, &format!("small{i}.pgn"))
        })
        .collect();
    let arg = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
    for p in &smalls[..5] {
        steps.push(arg(&["import", "--quiet", "--book", s(&book), s(p)]));
    }
    steps.push(arg(&["compact", "--book", s(&book)]));
    let bin_book = dir.path().join("extra.bin");
    let extra = part(0.8, 0.85, "extra.pgn");
    let extra_book = dir.path().join("extra.book");
    Bookdb::import(&[&extra], &extra_book).arg("--quiet").ok();
    export_polyglot(&extra_book, &bin_book);
    steps.push(arg(&["import-polyglot", "--book", s(&book), s(&bin_book)]));
    steps.push(arg(&["migrate", "--book", s(&book)]));
    for p in &smalls[5..] {
        steps.push(arg(&["import", "--quiet", "--book", s(&book), s(p)]));
    }
    // The positions probed: those of the final content plus some never in the book, found by
    // building the final book aside first.
    let final_book = dir.path().join("final.book");
    copy_live_book(&book, &final_book);
    for st in &steps {
        let mut st = st.clone();
        for a in st.iter_mut() {
            if a == s(&book) {
                *a = s(&final_book).to_string();
            }
        }
        let st: Vec<&str> = st.iter().map(String::as_str).collect();
        bookdb(&st).ok();
    }
    let final_dump = dump(&final_book);
    let mut fens: Vec<String> = answers(&final_dump)
        .into_keys()
        .filter(|id| id.contains('/'))
        .collect();
    fens.sort();
    let stride = (fens.len() / 3000).max(1);
    let mut probe: Vec<String> = fens.iter().step_by(stride).cloned().collect();
    probe.push("8/8/8/3k4/8/3K4/8/8 w - -".into());
    let fens_file = dir.path().join("fens.txt");
    std::fs::write(&fens_file, probe.join("\n")).unwrap();

    let stop = dir.path().join("stop");
    let mut reader = Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "live_reader_child",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("BOOKDB_LIVE_READER", &book)
        .env("BOOKDB_LIVE_FENS", &fens_file)
        .env("BOOKDB_LIVE_STOP", &stop)
        .stdout(Stdio::piped())
        .spawn()
        .unwrap();
    let stdout = reader.stdout.take().unwrap();
    let collector = std::thread::spawn(move || {
        std::io::BufReader::new(stdout)
            .lines()
            .map(Result::unwrap)
            .collect::<Vec<String>>()
    });
    // Wait for the reader to be probing.
    let t0 = Instant::now();
    while !stop.with_extension("ready").exists() && t0.elapsed() < Duration::from_secs(60) {
        std::thread::sleep(Duration::from_millis(20));
    }
    // States: (generation after the step, its answers, when the step finished).
    let mut states = vec![(generation(&book), answers(&dump(&book)), now_ms())];
    for st in &steps {
        let st: Vec<&str> = st.iter().map(String::as_str).collect();
        bookdb(&st).ok();
        let finished = now_ms();
        states.push((generation(&book), answers(&dump(&book)), finished));
        std::thread::sleep(Duration::from_millis(150));
    }
    std::thread::sleep(Duration::from_millis(500));
    std::fs::write(&stop, "").unwrap();
    let status = reader.wait().unwrap();
    let lines = collector.join().unwrap();
    assert!(status.success(), "reader failed: {lines:?}");
    assert_eq!(
        answers(&dump(&book)),
        answers(&final_dump),
        "the live book ends where the same commands run alone end"
    );

    // Every answer is that of the state its generation belongs to: the first recorded state
    // at or past it (a step that publishes twice, a segment then a fold, has the same content
    // at both generations).
    let state_of = |g: u64| {
        states
            .iter()
            .find(|(sg, _, _)| *sg >= g)
            .unwrap_or_else(|| panic!("generation {g} is past every recorded state"))
    };
    let mut checked = 0u64;
    let mut seen: Vec<(u64, u128)> = Vec::new();
    for l in &lines {
        let f: Vec<&str> = l.split('\t').collect();
        match f[0] {
            "seen" => seen.push((f[1].parse().unwrap(), f[2].parse().unwrap())),
            "ans" => {
                let g: u64 = f[1].parse().unwrap();
                let i: usize = f[2].parse().unwrap();
                let (_, ans, _) = state_of(g);
                let want = ans.get(&probe[i]).map(String::as_str).unwrap_or("");
                assert_eq!(f[3], want, "generation {g}, {}", probe[i]);
                checked += 1;
            }
            _ => {} // the test harness's own lines
        }
    }
    assert!(checked > 100, "the reader answered only {checked} probes");
    // Each step's result reached the reader within a second of the step's end.
    for (g, _, finished) in &states[1..] {
        let at = seen
            .iter()
            .filter(|(sg, _)| sg >= g)
            .map(|(_, t)| *t)
            .min()
            .unwrap_or_else(|| panic!("the reader never saw generation {g}: {seen:?}"));
        assert!(
            at <= finished + 1000,
            "generation {g} reached the reader {} ms after its commit",
            at as i128 - *finished as i128
        );
    }
    eprintln!(
        "reader checked {checked} answers over {} generations; {} steps",
        seen.len(),
        steps.len()
    );
}

/// Needs the crash points of a `--features failpoints` build (tests/crash_points.rs fails
/// without it, saying so).
#[cfg(feature = "failpoints")]
#[test]
fn writers_killed_while_publishing_or_folding_leave_a_sound_book() {
    let dir = tempfile::tempdir().unwrap();
    let games = test_games(dir.path());
    let n = games.len().min(1200);
    let base_pgn = dir.path().join("base.pgn");
    write_games(&base_pgn, &games[..n / 2]);
    let smalls: Vec<PathBuf> = (0..9)
        .map(|i| {
            let p = dir.path().join(format!("s{i}.pgn"));
            let a = n / 2 + i * n / 20;
            write_games(&p, &games[a..a + n / 20]);
            p
        })
        .collect();
    // The reference: a book with 7 segments, into which one more import publishes an 8th, and
    // a 9th makes the folding policy merge.
    let template = dir.path().join("template.book");
    Bookdb::import(&[&base_pgn], &template).arg("--quiet").ok();
    for p in &smalls[..7] {
        Bookdb::import(&[p], &template).arg("--quiet").ok();
    }
    let reference = |steps: &[&Path], compact: bool| {
        let r = dir.path().join("ref.book");
        let _ = std::fs::remove_file(&r);
        copy_live_book(&template, &r);
        for p in steps {
            Bookdb::import(&[p], &r).arg("--quiet").ok();
        }
        if compact {
            bookdb(["compact", "--book", s(&r)]).ok();
        }
        let d = dump(&r);
        for e in std::fs::read_dir(dir.path()).unwrap().flatten() {
            if e.file_name().to_string_lossy().starts_with("ref.book") {
                std::fs::remove_file(e.path()).unwrap();
            }
        }
        d
    };
    let before = dump(&template);
    let after_one = reference(&[&smalls[7]], false);
    let after_fold = reference(&[&smalls[7], &smalls[8]], false);
    assert_eq!(reference(&[], true), before);

    let publish = [
        "file-synced",
        "segment-renamed",
        "manifest-write",
        "manifest-published",
    ];
    let fold = publish.map(|p| format!("{p}@2"));
    let base = [
        "file-synced",
        "base-renamed",
        "manifest-write",
        "manifest-published",
    ];
    let mut trials = 0;
    let mut killed = 0;
    let check = |book: &Path, cmd: &[&str], allowed: &[&String], want: &String, was: bool| {
        // The book opens and verifies, and shows a state before or after the command.
        verify(book);
        let d = dump(book);
        assert!(
            allowed.contains(&&d),
            "{cmd:?}: a state that is neither before nor after"
        );
        // Running the command again finishes it: the same as an uninterrupted run.
        bookdb(cmd).ok();
        assert_eq!(&dump(book), want, "{cmd:?} (killed: {was})");
        verify(book);
    };
    // (crash point, book state, command, state before, state after): the publication of one
    // more segment; the publication of a 9th and the fold it causes; a compaction (a new base
    // superseding the manifest and the segments).
    let mut cases: Vec<(String, Option<&Path>, &str, &String, &String)> = Vec::new();
    for p in publish {
        cases.push((p.to_string(), None, "import7", &before, &after_one));
        cases.push((
            p.to_string(),
            Some(&smalls[7]),
            "import8",
            &after_one,
            &after_fold,
        ));
    }
    for p in fold {
        cases.push((p, Some(&smalls[7]), "import8", &after_one, &after_fold));
    }
    for p in base {
        cases.push((p.to_string(), None, "compact", &before, &before));
    }
    for (point, pre, what, was, want) in cases {
        let book = dir.path().join(format!("t{trials}.book"));
        copy_live_book(&template, &book);
        if let Some(p) = pre {
            Bookdb::import(&[p], &book).arg("--quiet").ok();
        }
        let cmd: Vec<&str> = match what {
            "import7" => vec!["import", "--quiet", "--book", s(&book), s(&smalls[7])],
            "import8" => vec!["import", "--quiet", "--book", s(&book), s(&smalls[8])],
            _ => vec!["compact", "--book", s(&book)],
        };
        let k = bookdb(&cmd).run_crashing(Some(&point), None);
        assert!(k, "{cmd:?} did not reach crash point {point}");
        trials += 1;
        killed += 1;
        check(&book, &cmd, &[was, want], want, k);
    }
    // Seeded random moments: SIGKILL after 0–400 ms of the import that makes the policy fold.
    let mut rng = 0x2545_F491_4F6C_DD1Du64;
    for _ in 0..8 {
        rng ^= rng << 13;
        rng ^= rng >> 7;
        rng ^= rng << 17;
        let book = dir.path().join(format!("t{trials}.book"));
        copy_live_book(&template, &book);
        Bookdb::import(&[&smalls[7]], &book).arg("--quiet").ok();
        let cmd = ["import", "--quiet", "--book", s(&book), s(&smalls[8])];
        let k = bookdb(cmd).run_crashing(None, Some(Duration::from_millis(rng % 400)));
        trials += 1;
        killed += usize::from(k);
        check(&book, &cmd, &[&after_one, &after_fold], &after_fold, k);
    }
    eprintln!("{trials} trials, {killed} writers killed mid-publication; every book recovered");
}

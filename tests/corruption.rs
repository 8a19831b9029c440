//! Corruption campaign (issue 16, docs/RELIABILITY.md "Damage: what verify detects"): seeded
//! damage to copies of real books built here from the sample PGN — a one-file book and a live
//! book (base, two delta segments, manifest) — and, for every trial:
//!
//! - `verify` exits 3 naming the damaged file, or exits 0 and `dump` equals the undamaged
//!   dump (the content is provably unchanged: the damage hit bytes the book does not use);
//! - `dump` either fails or prints exactly the undamaged dump;
//! - `probe --fens` of up to 1,000 positions of the book answers each one exactly as the
//!   undamaged book does, or with an error for it — never other numbers;
//! - nothing panics (exit 101, "panicked") and nothing hangs (every child is killed after
//!   `CHILD_TIMEOUT` and the trial fails).
//!
//! Kinds of damage: a flipped byte anywhere in any file (redb header, tree and meta pages,
//! blocks, segments, manifest), a truncation, a zeroed 4 KiB page, two swapped 4 KiB pages.
//!
//! A sample runs by default (`CI_TRIALS` trials, seconds); `BOOKDB_CAMPAIGN=long` runs
//! `LONG_TRIALS` (`BOOKDB_CAMPAIGN_TRIALS=N` and `BOOKDB_CAMPAIGN_SEED=S` override). The counts
//! by kind, region and outcome are printed at the end (`--nocapture` to see them):
//!
//! ```text
//! BOOKDB_CAMPAIGN=long cargo test --release --test corruption -- --nocapture
//! ```

mod common;

use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::{Duration, Instant};

use common::*;

/// A child that runs longer than this is a hang: killed, and the trial fails.
const CHILD_TIMEOUT: Duration = Duration::from_secs(60);
/// Trials of the default (CI) sample.
const CI_TRIALS: usize = 48;
/// Trials of the long campaign.
const LONG_TRIALS: usize = 1000;
const PAGE: u64 = 4096;

/// SplitMix64: a small seeded generator (the campaign must be reproducible from its seed).
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

struct Finished {
    code: Option<i32>,
    stdout: String,
    stderr: String,
}

/// Runs bookdb with a timeout; a hang fails the test (the child is killed first).
fn run_limited(args: &[&str]) -> Finished {
    let mut child = bookdb(args)
        .command()
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("spawn bookdb");
    let mut out = child.stdout.take().unwrap();
    let mut err = child.stderr.take().unwrap();
    let t_out = std::thread::spawn(move || {
        let mut s = Vec::new();
        out.read_to_end(&mut s).ok();
        s
    });
    let t_err = std::thread::spawn(move || {
        let mut s = Vec::new();
        err.read_to_end(&mut s).ok();
        s
    });
    let start = Instant::now();
    let status = loop {
        if let Some(st) = child.try_wait().expect("wait") {
            break st;
        }
        if start.elapsed() > CHILD_TIMEOUT {
            child.kill().ok();
            child.wait().ok();
            panic!("bookdb {args:?} hung (killed after {CHILD_TIMEOUT:?})");
        }
        std::thread::sleep(Duration::from_millis(2));
    };
    Finished {
        code: status.code(),
        stdout: String::from_utf8_lossy(&t_out.join().unwrap()).into_owned(),
        stderr: String::from_utf8_lossy(&t_err.join().unwrap()).into_owned(),
    }
}

/// No panic, no signal, no internal error.
fn assert_no_crash(f: &Finished, what: &str) {
    assert!(
        f.code.is_some() && f.code != Some(101),
        "{what}: killed by a signal or panicked (exit {:?}):\n{}",
        f.code,
        f.stderr
    );
    assert!(
        !f.stderr.contains("panicked") && !f.stderr.contains("internal error (please"),
        "{what}: {}",
        f.stderr
    );
}

/// A book to damage: its directory, its files, and what the undamaged book answers.
struct Subject {
    name: &'static str,
    dir: tempfile::TempDir,
    book: PathBuf,
    /// The base, the segments, the manifest (the files damage may hit).
    files: Vec<PathBuf>,
    dump: String,
    fens: PathBuf,
    /// `probe --fens` of the undamaged book, one JSON line per position.
    probes: Vec<String>,
    /// Byte ranges of stored blocks in each file (to name the region a trial hit).
    blocks: BTreeMap<PathBuf, Vec<(u64, u64)>>,
    /// Byte ranges of the `evals` table's values in each file.
    evals: BTreeMap<PathBuf, Vec<(u64, u64)>>,
    /// Byte ranges of the key filter's partitions in each file (docs/FORMAT.md §4.7).
    filters: BTreeMap<PathBuf, Vec<(u64, u64)>>,
    /// Byte ranges of the game store's chunks, references and facts (docs/FORMAT.md §15).
    game_tables: BTreeMap<PathBuf, Vec<(u64, u64, &'static str)>>,
    /// `pgn --all` of the undamaged book, and `games --json` of the positions of [`GAME_LINES`].
    pgn_all: String,
    games: Vec<String>,
}

/// Positions whose games (`bookdb games --json`) each trial checks: the start, 1.e4, 1.d4.
const GAME_LINES: [&str; 3] = ["", "e4", "d4"];

fn games_args<'a>(book: &'a str, line: &'a str) -> Vec<&'a str> {
    let mut a = vec!["games", "--json", "--book", book];
    if !line.is_empty() {
        a.extend(["--moves", line]);
    }
    a
}

/// Splits a PGN file into games.
fn games_of(pgn: &Path) -> Vec<Vec<u8>> {
    let text = std::fs::read(pgn).unwrap();
    let mut starts: Vec<usize> = vec![0];
    starts.extend(
        text.windows(8)
            .enumerate()
            .filter(|(_, w)| *w == b"\n[Event ")
            .map(|(i, _)| i + 1),
    );
    starts.push(text.len());
    starts
        .windows(2)
        .map(|w| text[w[0]..w[1]].to_vec())
        .filter(|g| !g.is_empty())
        .collect()
}

fn subject(name: &'static str, parts: usize) -> Subject {
    build_subject(name, parts, false)
}

/// A subject; with `evals`, it also holds engine evaluations ([`add_evaluations`]): a
/// one-file book is compacted back into one file, a live book gets one more segment.
fn build_subject(name: &'static str, parts: usize, evals: bool) -> Subject {
    let dir = tempfile::tempdir().unwrap();
    let book = dir.path().join("book");
    let games = games_of(&sample_pgn());
    let per = games.len().div_ceil(parts);
    for (i, chunk) in games.chunks(per).enumerate() {
        let pgn = dir.path().join(format!("part{i}.pgn"));
        std::fs::write(&pgn, chunk.concat()).unwrap();
        Bookdb::import(&[&pgn], &book)
            .args(["--max-ply", "40"])
            .ok();
        std::fs::remove_file(&pgn).unwrap();
    }
    if evals {
        add_evaluations(&book, dir.path());
    }
    if evals && parts == 1 {
        // Folded back into one file: `compact` keeps the evaluations.
        bookdb(["compact", "--quiet", "--book", s(&book)]).ok();
    }
    let mut files = vec![book.clone()];
    let mut segs: Vec<PathBuf> = std::fs::read_dir(dir.path())
        .unwrap()
        .flatten()
        .map(|e| e.path())
        .filter(|p| p.to_string_lossy().contains(".seg-"))
        .collect();
    segs.sort();
    assert_eq!(
        segs.len(),
        parts - 1 + usize::from(evals && parts > 1),
        "{name}: one segment per import after the first (and one of evaluations)"
    );
    files.extend(segs);
    let manifest = book.with_file_name("book.live");
    if parts > 1 {
        assert!(manifest.exists());
        files.push(manifest);
    }
    verify(&book);
    let dump = dump(&book);
    // Up to 1,000 positions of the book, spread over it, plus two it does not hold.
    let fens_all: Vec<String> = dump
        .lines()
        .map(|l| {
            let v: serde_json::Value = serde_json::from_str(l).unwrap();
            v["fen"].as_str().unwrap().to_string()
        })
        .collect();
    let step = fens_all.len().div_ceil(1000).max(1);
    let mut fens: Vec<String> = fens_all.iter().step_by(step).cloned().collect();
    fens.push("8/8/8/4k3/8/8/8/4K2R w K -".into());
    fens.push("rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBN1 w Qkq -".into());
    let fens_file = dir.path().join("fens.txt");
    std::fs::write(&fens_file, fens.join("\n") + "\n").unwrap();
    let probes: Vec<String> = bookdb(["probe", "--book", s(&book), "--fens", s(&fens_file)])
        .ok()
        .lines()
        .map(str::to_string)
        .collect();
    assert_eq!(probes.len(), fens.len());
    let blocks = files
        .iter()
        .filter(|f| !f.to_string_lossy().ends_with(".live"))
        .map(|f| (f.clone(), value_ranges(f, "blocks")))
        .collect();
    let evals = files
        .iter()
        .filter(|f| !f.to_string_lossy().ends_with(".live"))
        .map(|f| (f.clone(), value_ranges(f, "evals")))
        .collect();
    let filters = files
        .iter()
        .filter(|f| !f.to_string_lossy().ends_with(".live"))
        .map(|f| (f.clone(), value_ranges(f, "key_filter")))
        .collect();
    let game_tables = files
        .iter()
        .filter(|f| !f.to_string_lossy().ends_with(".live"))
        .map(|f| {
            let mut r = Vec::new();
            for (table, region) in [
                ("game_chunks", "game store chunk"),
                ("game_id_index", "game id index chunk"),
                ("game_refs", "game reference block"),
                ("game_facts", "game fact chunk"),
            ] {
                r.extend(
                    value_ranges(f, table)
                        .into_iter()
                        .map(|(a, b)| (a, b, region)),
                );
            }
            (f.clone(), r)
        })
        .collect::<BTreeMap<PathBuf, Vec<(u64, u64, &'static str)>>>();
    assert!(
        game_tables.values().filter(|r| !r.is_empty()).count() >= parts.min(2),
        "{name}: the files of imports store games"
    );
    let pgn_all = bookdb(["pgn", "--all", "--book", s(&book)]).ok();
    assert!(
        pgn_all.matches("[GameId ").count() >= 200,
        "{name}: every game stored"
    );
    let games: Vec<String> = GAME_LINES
        .iter()
        .map(|l| bookdb(games_args(s(&book), l)).ok())
        .collect();
    assert!(games.iter().all(|g| !g.is_empty()), "{name}: games listed");
    Subject {
        name,
        dir,
        book,
        files,
        dump,
        fens: fens_file,
        probes,
        blocks,
        evals,
        filters,
        game_tables,
        pgn_all,
        games,
    }
}

/// Engine evaluations (docs/FORMAT.md §13) of every third position of the book and of one
/// position it has no games for, imported from EPD, so that damage can hit the `evals` table.
fn add_evaluations(book: &Path, dir: &Path) {
    let mut epd = String::new();
    for (i, line) in dump(book).lines().enumerate().step_by(3) {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        let fen = v["fen"].as_str().unwrap();
        let mv = v["moves"][0]["uci"].as_str().unwrap();
        epd += &format!(
            "{fen} ce {}; acd {}; acn {}; pv {mv};\n",
            i % 300,
            8 + i % 9,
            1000 * i
        );
    }
    epd += "8/8/8/4k3/8/8/8/4K2R w K - ce 900; acd 30; pv e1g1;\n";
    let file = dir.join("evals.epd");
    std::fs::write(&file, epd).unwrap();
    bookdb(["import-evals", "--quiet", "--book", s(book), s(&file)]).ok();
    std::fs::remove_file(&file).unwrap();
}

/// Where each value of a table (`blocks`, `evals`, `key_filter`) lies in the file (found by
/// its first bytes, unique for blocks by their header, for evaluations by their checksum, for
/// filter partitions by their random-looking bits).
fn value_ranges(file: &Path, table: &str) -> Vec<(u64, u64)> {
    use redb::{ReadableDatabase, ReadableTable};
    let db = redb::ReadOnlyDatabase::open(file).unwrap();
    let txn = db.begin_read().unwrap();
    // Every value of one table, whatever its key type.
    fn all<K: redb::Key + 'static>(txn: &redb::ReadTransaction, name: &str) -> Vec<Vec<u8>> {
        let def: redb::TableDefinition<K, &[u8]> = redb::TableDefinition::new(name);
        match txn.open_table(def) {
            Ok(t) => t
                .iter()
                .unwrap()
                .map(|i| i.unwrap().1.value().to_vec())
                .collect(),
            Err(_) => Vec::new(),
        }
    }
    let values = match table {
        "blocks" | "game_refs" | "game_id_index" => all::<u64>(&txn, table),
        "key_filter" | "game_facts" | "game_chunks" => all::<u32>(&txn, table),
        _ => all::<(u64, &[u8])>(&txn, table),
    };
    let bytes = std::fs::read(file).unwrap();
    let mut out = Vec::new();
    for v in &values {
        let probe = &v[..v.len().min(64)];
        if let Some(at) = memchr::memmem::find(&bytes, probe) {
            out.push((at as u64, (at + v.len()) as u64));
        }
    }
    out
}

/// What a trial did to the files.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
enum Kind {
    Flip,
    Truncate,
    ZeroPage,
    SwapPages,
}

/// The part of the file a trial hit.
fn region(subject: &Subject, file: &Path, offset: u64) -> &'static str {
    if file.to_string_lossy().ends_with(".live") {
        return "manifest";
    }
    if offset < PAGE {
        return "redb header page";
    }
    if subject.evals[file]
        .iter()
        .any(|&(a, b)| offset >= a && offset < b)
    {
        return "evals row";
    }
    if subject.filters[file]
        .iter()
        .any(|&(a, b)| offset >= a && offset < b)
    {
        return "key filter partition";
    }
    if let Some(&(_, _, r)) = subject.game_tables[file]
        .iter()
        .find(|&&(a, b, _)| offset >= a && offset < b)
    {
        return r;
    }
    let in_block = subject.blocks[file]
        .iter()
        .any(|&(a, b)| offset >= a && offset < b);
    if in_block {
        "block"
    } else {
        "redb tree/meta/index/free page"
    }
}

/// Copies the subject's files into a fresh directory; returns the book's path there.
fn fresh_copy(subject: &Subject, into: &Path) -> PathBuf {
    for f in &subject.files {
        std::fs::copy(f, into.join(f.file_name().unwrap())).unwrap();
    }
    into.join(subject.book.file_name().unwrap())
}

/// Damages one file of the copy; returns (kind, damaged file name, region, description).
fn damage(
    subject: &Subject,
    copy_dir: &Path,
    rng: &mut Rng,
) -> (Kind, String, &'static str, String) {
    let file = &subject.files[rng.below(subject.files.len() as u64) as usize];
    let name = file.file_name().unwrap().to_string_lossy().into_owned();
    let target = copy_dir.join(&name);
    let mut bytes = std::fs::read(&target).unwrap();
    let len = bytes.len() as u64;
    let pages = len / PAGE;
    let kind = match rng.below(10) {
        0..=4 => Kind::Flip,
        5..=6 => Kind::Truncate,
        7..=8 => Kind::ZeroPage,
        _ if pages >= 2 => Kind::SwapPages,
        _ => Kind::Flip,
    };
    let (at, what) = match kind {
        Kind::Flip => {
            let at = rng.below(len);
            let x = 1 + rng.below(255) as u8;
            bytes[at as usize] ^= x;
            (at, format!("byte {at} ^= {x:#04x}"))
        }
        Kind::Truncate => {
            // Anywhere, or at a page boundary (what a lost tail of a file looks like).
            let at = if rng.below(2) == 0 || pages < 2 {
                1 + rng.below(len - 1)
            } else {
                PAGE * (1 + rng.below(pages - 1))
            };
            bytes.truncate(at as usize);
            (at, format!("truncated to {at} of {len} bytes"))
        }
        Kind::ZeroPage => {
            let p = rng.below(pages.max(1));
            let a = (p * PAGE) as usize;
            let b = ((p + 1) * PAGE).min(len) as usize;
            bytes[a..b].fill(0);
            (a as u64, format!("page {p} ({a}..{b}) zeroed"))
        }
        Kind::SwapPages => {
            let p = rng.below(pages);
            let mut q = rng.below(pages - 1);
            if q >= p {
                q += 1;
            }
            let (a, b) = ((p * PAGE) as usize, (q * PAGE) as usize);
            let pa = bytes[a..a + PAGE as usize].to_vec();
            let pb = bytes[b..b + PAGE as usize].to_vec();
            bytes[a..a + PAGE as usize].copy_from_slice(&pb);
            bytes[b..b + PAGE as usize].copy_from_slice(&pa);
            (a.min(b) as u64, format!("pages {p} and {q} swapped"))
        }
    };
    std::fs::write(&target, &bytes).unwrap();
    (kind, name, region(subject, file, at), what)
}

#[derive(Default)]
struct Tally {
    detected: usize,
    unchanged: usize,
    probe_errors: usize,
    probe_missed: usize,
    dump_failed: usize,
}

/// What a trial did and what came of it.
struct Outcome {
    kind: Kind,
    region: &'static str,
    /// verify exited 3 naming the damaged file (else it exited 0 and the dump was unchanged).
    detected: bool,
    /// probe answered some position with an error.
    probe_error: bool,
    /// probe answered some position of the book as absent (hidden by a damaged redb page).
    probe_missed: bool,
    dump_failed: bool,
}

/// One trial: damage a fresh copy, then check verify, dump and probe against the undamaged
/// book. Returns the kind, region and whether verify detected the damage.
fn trial(subject: &Subject, rng: &mut Rng, n: usize) -> Outcome {
    let dir = tempfile::tempdir_in(subject.dir.path()).unwrap();
    let book = fresh_copy(subject, dir.path());
    let (kind, name, region, what) = damage(subject, dir.path(), rng);
    let ctx = format!("{} trial {n}: {name}: {what} ({region})", subject.name);
    let b = s(&book);

    let v = run_limited(&["verify", "--book", b]);
    assert_no_crash(&v, &format!("{ctx}: verify"));
    let detected = match v.code {
        Some(0) => false,
        Some(3) => {
            let all = format!("{}{}", v.stdout, v.stderr);
            assert!(
                all.contains(&name),
                "{ctx}: verify reported the damage without naming {name}:\n{all}"
            );
            true
        }
        other => panic!(
            "{ctx}: verify exited {other:?}, not 0 or 3 (corrupt):\n{}",
            v.stderr
        ),
    };

    let d = run_limited(&["dump", "--book", b]);
    assert_no_crash(&d, &format!("{ctx}: dump"));
    if !detected {
        assert_eq!(
            d.code,
            Some(0),
            "{ctx}: verify passed but dump failed:\n{}",
            d.stderr
        );
    }
    if d.code == Some(0) {
        assert!(
            d.stdout == subject.dump,
            "{ctx}: dump succeeded with content other than the undamaged book's{}",
            if detected {
                ""
            } else {
                " (and verify passed: damage missed)"
            }
        );
    } else {
        // A dump streams: what it printed before failing is to be discarded (a damaged B-tree
        // page can hide blocks before the end-of-file count reveals it).
        assert_eq!(
            d.code,
            Some(3),
            "{ctx}: dump failed but not as corrupt: {}",
            d.stderr
        );
    }

    let p = run_limited(&["probe", "--book", b, "--fens", s(&subject.fens)]);
    assert_no_crash(&p, &format!("{ctx}: probe"));
    let mut probe_error = false;
    let mut probe_missed = false;
    if p.code == Some(0) || p.code == Some(3) {
        let lines: Vec<&str> = p.stdout.lines().collect();
        if p.code == Some(0) || lines.len() == subject.probes.len() {
            assert_eq!(lines.len(), subject.probes.len(), "{ctx}: probe answers");
        }
        for (i, line) in lines.iter().enumerate() {
            if *line == subject.probes[i] {
                continue;
            }
            let v: serde_json::Value = serde_json::from_str(line)
                .unwrap_or_else(|e| panic!("{ctx}: probe line {i} is not JSON ({e}): {line}"));
            if v.get("error").is_some() {
                probe_error = true;
                continue;
            }
            // redb does not check page checksums on reads: a damaged B-tree page that still
            // parses can hide the block holding a position in one file, which probe then
            // answers without that file's counts (absent, or a live book's other files only).
            // A block it does find is checksummed, so it never adds counts. Only verify finds
            // such damage (asserted below); any other difference is a wrong answer.
            let want: serde_json::Value = serde_json::from_str(&subject.probes[i]).unwrap();
            assert!(
                v["fen"] == want["fen"] && counts_within(&v, &want),
                "{ctx}: probe of position {i} answered other numbers than the undamaged book:\n  got  {line}\n  want {}",
                subject.probes[i]
            );
            probe_missed = true;
        }
        if p.code == Some(0) {
            assert!(!probe_error, "{ctx}: probe printed errors but exited 0");
        } else {
            probe_error = true;
        }
    } else {
        panic!(
            "{ctx}: probe exited {:?}, not 0 or 3:\n{}",
            p.code, p.stderr
        );
    }
    if !detected {
        assert!(
            !probe_error,
            "{ctx}: verify passed but probe failed: {}",
            p.stderr
        );
        assert!(
            !probe_missed,
            "{ctx}: verify passed but probe missed positions"
        );
    }
    check_games(subject, b, detected, &ctx);
    check_rewrite(b, dir.path(), detected, &ctx);
    Outcome {
        kind,
        region,
        detected,
        probe_error,
        probe_missed,
        dump_failed: d.code != Some(0),
    }
}

/// A rewrite of the damaged book (`merge` of it alone into a new file) reads what it carries
/// as a reader does: it fails as corrupt, or writes a book that verifies (damage it does not
/// read, a free page, stays behind). Campaign 13 found a game block failing its crc32 copied
/// into the new file, and redb panics on damaged fingerprint and id index pages (exit 101).
fn check_rewrite(b: &str, dir: &Path, detected: bool, ctx: &str) {
    let out = dir.join("rewritten.book");
    let m = run_limited(&["merge", b, "--out", s(&out), "--quiet"]);
    assert_no_crash(&m, &format!("{ctx}: merge"));
    match m.code {
        Some(0) => {
            let v = run_limited(&["verify", "--book", s(&out)]);
            assert_no_crash(&v, &format!("{ctx}: verify of the merge"));
            assert_eq!(
                v.code,
                Some(0),
                "{ctx}: merge exited 0 but wrote a book verify refuses:\n{}{}",
                v.stdout,
                v.stderr
            );
        }
        Some(3) => assert!(detected, "{ctx}: merge found damage verify did not"),
        other => panic!(
            "{ctx}: merge exited {other:?}, not 0 or 3 (corrupt):\n{}",
            m.stderr
        ),
    }
}

/// The stored games after damage: `pgn --all` fails as corrupt or prints games of the
/// undamaged book (all of them, in order, when verify passed); `games --json` fails as corrupt
/// or, when verify passed, lists what the undamaged book lists (with damage verify found, a
/// file's references can be hidden, so other stored games may be chosen — each one a game the
/// book stores).
fn check_games(subject: &Subject, b: &str, detected: bool, ctx: &str) {
    let g = run_limited(&["pgn", "--all", "--book", b]);
    assert_no_crash(&g, &format!("{ctx}: pgn --all"));
    match g.code {
        Some(0) => {
            if !detected {
                assert!(
                    g.stdout == subject.pgn_all,
                    "{ctx}: verify passed but pgn --all printed other games"
                );
            }
            for game in g
                .stdout
                .split("\n\n[Event ")
                .filter(|t| !t.trim().is_empty())
            {
                assert!(
                    subject.pgn_all.contains(game.trim_start_matches("[Event ")),
                    "{ctx}: pgn --all printed a game the book does not store:\n{game}"
                );
            }
        }
        Some(3) => assert!(detected, "{ctx}: pgn --all found damage verify missed"),
        other => panic!("{ctx}: pgn --all exited {other:?}:\n{}", g.stderr),
    }
    for (line, want) in GAME_LINES.iter().zip(&subject.games) {
        let r = run_limited(&games_args(b, line));
        assert_no_crash(&r, &format!("{ctx}: games {line}"));
        match r.code {
            Some(0) if !detected => assert!(
                r.stdout == *want,
                "{ctx}: verify passed but games after {line:?} differ:\n{}\nwant\n{want}",
                r.stdout
            ),
            Some(0) => {
                for l in r.stdout.lines() {
                    let v: serde_json::Value = serde_json::from_str(l).unwrap();
                    let id = v["id"].as_str().unwrap();
                    assert!(
                        subject.pgn_all.contains(&format!("[GameId \"{id}\"]")),
                        "{ctx}: games listed {id}, which the book does not store"
                    );
                }
            }
            Some(3) => assert!(detected, "{ctx}: games found damage verify missed"),
            other => panic!("{ctx}: games exited {other:?}:\n{}", r.stderr),
        }
    }
}

/// Whether every move of probe answer `got` is a move of `want` with no counter above
/// `want`'s (what hiding some files' blocks can do; adding counts cannot happen).
fn counts_within(got: &serde_json::Value, want: &serde_json::Value) -> bool {
    let moves = |v: &serde_json::Value| v["moves"].as_array().cloned().unwrap_or_default();
    let want_moves = moves(want);
    moves(got).iter().all(|g| {
        want_moves.iter().any(|w| {
            w["uci"] == g["uci"]
                && ["white", "draws", "black", "unknown"]
                    .iter()
                    .all(|c| g[c].as_u64() <= w[c].as_u64())
        })
    })
}

fn campaign_size() -> (usize, u64) {
    let long = std::env::var("BOOKDB_CAMPAIGN").is_ok_and(|v| v == "long");
    let trials = std::env::var("BOOKDB_CAMPAIGN_TRIALS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(if long { LONG_TRIALS } else { CI_TRIALS });
    let seed = std::env::var("BOOKDB_CAMPAIGN_SEED")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(16);
    (trials, seed)
}

/// The campaign over both books: half the trials each, counts printed at the end.
#[test]
fn corruption_campaign() {
    let (trials, seed) = campaign_size();
    let subjects = [
        build_subject("one-file book", 1, true),
        build_subject("live book", 3, true),
    ];
    let mut rng = Rng(seed);
    let mut by_kind: BTreeMap<(Kind, &'static str), Tally> = BTreeMap::new();
    let mut by_region: BTreeMap<(&'static str, &'static str), Tally> = BTreeMap::new();
    for n in 0..trials {
        let subject = &subjects[n % subjects.len()];
        let o = trial(subject, &mut rng, n);
        for t in [
            by_kind.entry((o.kind, subject.name)).or_default(),
            by_region.entry((o.region, subject.name)).or_default(),
        ] {
            if o.detected {
                t.detected += 1;
            } else {
                t.unchanged += 1;
            }
            t.probe_errors += usize::from(o.probe_error);
            t.probe_missed += usize::from(o.probe_missed);
            t.dump_failed += usize::from(o.dump_failed);
        }
    }
    let print = |title: &str, rows: Vec<(String, &Tally)>| {
        println!(
            "{:<46} {:>6} {:>9} {:>10} {:>12} {:>13} {:>12}",
            title, "trials", "detected", "unchanged", "probe error", "probe missed", "dump failed"
        );
        for (k, t) in rows {
            println!(
                "{:<46} {:>6} {:>9} {:>10} {:>12} {:>13} {:>12}",
                k,
                t.detected + t.unchanged,
                t.detected,
                t.unchanged,
                t.probe_errors,
                t.probe_missed,
                t.dump_failed
            );
        }
    };
    println!("\ncorruption campaign: {trials} trials, seed {seed} (every trial passed)");
    print(
        "kind / book",
        by_kind
            .iter()
            .map(|((k, b), t)| (format!("{k:?} / {b}"), t))
            .collect(),
    );
    print(
        "region / book",
        by_region
            .iter()
            .map(|((r, b), t)| (format!("{r} / {b}"), t))
            .collect(),
    );
    let total = by_kind.values().fold(Tally::default(), |mut a, t| {
        a.detected += t.detected;
        a.unchanged += t.unchanged;
        a.probe_errors += t.probe_errors;
        a.probe_missed += t.probe_missed;
        a.dump_failed += t.dump_failed;
        a
    });
    print("total", vec![("all".into(), &total)]);
    assert_eq!(total.detected + total.unchanged, trials);
}

/// A damaged key filter partition (docs/FORMAT.md §4.7) is corruption, never a miss: `verify`
/// names the file and the partition, and a probe whose key falls in it fails as corrupt (exit
/// 3) instead of answering "not in the book" — while every position of other partitions is
/// still answered exactly.
#[test]
fn damaged_key_filter_is_corrupt_never_a_miss() {
    let subject = subject("one-file book", 1);
    let file = subject.files[0].clone();
    let parts = &subject.filters[&file];
    assert!(
        parts.len() >= 2,
        "the sample's book has {} filter partitions",
        parts.len()
    );
    let dir = tempfile::tempdir_in(subject.dir.path()).unwrap();
    let book = fresh_copy(&subject, dir.path());
    let copy = dir.path().join(file.file_name().unwrap());
    let mut bytes = std::fs::read(&copy).unwrap();
    // A bit in the middle of partition 0's words.
    let (a, b) = parts[0];
    bytes[((a + b) / 2) as usize] ^= 0x10;
    std::fs::write(&copy, &bytes).unwrap();
    let v = run_limited(&["verify", "--book", s(&book)]);
    assert_eq!(v.code, Some(3), "verify: {}{}", v.stdout, v.stderr);
    let all = format!("{}{}", v.stdout, v.stderr);
    assert!(
        all.contains("key filter partition")
            && all.contains(&*file.file_name().unwrap().to_string_lossy()),
        "{all}"
    );
    let p = run_limited(&["probe", "--book", s(&book), "--fens", s(&subject.fens)]);
    assert_eq!(p.code, Some(3), "probe: {}", p.stderr);
    let mut errors = 0;
    for (line, want) in p.stdout.lines().zip(&subject.probes) {
        let got: serde_json::Value = serde_json::from_str(line).unwrap();
        if got.get("error").is_some() {
            assert!(line.contains("key filter partition"), "{line}");
            errors += 1;
        } else {
            assert_eq!(
                line, want,
                "a position answered other than the undamaged book"
            );
        }
    }
    assert!(errors > 0, "no probe reached the damaged partition");
    assert!(errors < subject.probes.len(), "every probe failed");
}

/// A book truncated anywhere is corrupt (exit 3, naming the file), never "not a book" (4):
/// the regression for issue 16's finding.
#[test]
fn truncated_book_is_corrupt_not_not_a_book() {
    let subject = subject("one-file book", 1);
    let len = std::fs::metadata(&subject.book).unwrap().len();
    for cut in [1, 5, 9, 100, 4096, 4097, len / 2, len - PAGE, len - 1] {
        let dir = tempfile::tempdir_in(subject.dir.path()).unwrap();
        let book = fresh_copy(&subject, dir.path());
        let f = std::fs::OpenOptions::new().write(true).open(&book).unwrap();
        f.set_len(cut).unwrap();
        drop(f);
        for cmd in ["verify", "probe", "dump", "stats"] {
            let out = run_limited(&[cmd, "--book", s(&book)]);
            assert_no_crash(&out, cmd);
            assert_eq!(
                out.code,
                Some(3),
                "{cmd} of a book truncated to {cut} bytes: {}",
                out.stderr
            );
            assert!(
                out.stderr.contains("corrupt") && out.stderr.contains(s(&book)),
                "{cmd}: names the file: {}",
                out.stderr
            );
        }
    }
}

/// Files that are not books stay "not a book" (exit 4): a PGN, random bytes, an empty file.
#[test]
fn files_that_are_not_books_are_exit_4() {
    let dir = tempfile::tempdir().unwrap();
    let pgn = copy_in(&sample_pgn(), dir.path());
    let noise = dir.path().join("noise.book");
    let mut rng = Rng(7);
    std::fs::write(
        &noise,
        (0..100_000).map(|_| rng.next() as u8).collect::<Vec<u8>>(),
    )
    .unwrap();
    let empty = dir.path().join("empty.book");
    std::fs::write(&empty, b"").unwrap();
    for f in [&pgn, &noise, &empty] {
        for cmd in ["verify", "probe", "stats"] {
            let out = run_limited(&[cmd, "--book", s(f)]);
            assert_no_crash(&out, cmd);
            assert_eq!(out.code, Some(4), "{cmd} {}: {}", f.display(), out.stderr);
            assert!(out.stderr.contains("not a bookdb book"), "{}", out.stderr);
        }
    }
}

/// Damage to a live book's manifest or segments is corrupt (exit 3) and names the file; a
/// segment the manifest lists that is gone is corrupt too (not "busy").
#[test]
fn damaged_manifest_and_segments_are_corrupt() {
    let subject = subject("live book", 3);
    let seg = subject.files[1]
        .file_name()
        .unwrap()
        .to_string_lossy()
        .into_owned();
    type Hurt<'a> = &'a dyn Fn(&Path);
    let cases: [(&str, Hurt); 4] = [
        ("book.live", &|d: &Path| {
            let p = d.join("book.live");
            let mut b = std::fs::read(&p).unwrap();
            b[20] ^= 1;
            std::fs::write(&p, b).unwrap();
        }),
        ("book.live", &|d: &Path| {
            std::fs::write(d.join("book.live"), b"bookdb-live 1\n").unwrap();
        }),
        (&seg, &|d: &Path| {
            let p = d.join(&seg);
            let f = std::fs::OpenOptions::new().write(true).open(&p).unwrap();
            f.set_len(5000).unwrap();
        }),
        (&seg, &|d: &Path| {
            std::fs::remove_file(d.join(&seg)).unwrap()
        }),
    ];
    for (name, hurt) in cases {
        let dir = tempfile::tempdir_in(subject.dir.path()).unwrap();
        let book = fresh_copy(&subject, dir.path());
        hurt(dir.path());
        for cmd in ["verify", "probe", "dump"] {
            let out = run_limited(&[cmd, "--book", s(&book)]);
            assert_no_crash(&out, cmd);
            assert_eq!(out.code, Some(3), "{cmd} ({name}): {}", out.stderr);
            assert!(
                out.stderr.contains(name),
                "{cmd} names {name}: {}",
                out.stderr
            );
        }
    }
}

/// `verify --since G` checks the files published after generation G (and reports what it
/// checked and skipped, text and `--json`); damage in a newer segment is found, damage in an
/// older file is left to a full verify (what `--since` trades for its speed).
#[test]
fn verify_since_checks_only_what_was_published_after() {
    let subject = subject("live book", 3);
    let b = s(&subject.book);
    let full: serde_json::Value = bookdb(["verify", "--book", b, "--json"]).json();
    let generation = full["generation"].as_u64().unwrap();
    assert_eq!(full["checked_files"].as_array().unwrap().len(), 3, "{full}");
    assert_eq!(full["merged_view_checked"], true);
    assert_eq!(full["redb_integrity_checked"], true);
    assert_eq!(full["manifest"], "book.live");
    let gens: Vec<u64> = full["checked_files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["generation"].as_u64().unwrap())
        .collect();
    // Since the first segment: only the second is checked.
    let since = gens[1].to_string();
    let part: serde_json::Value =
        bookdb(["verify", "--book", b, "--json", "--since", &since]).json();
    assert_eq!(part["generation"].as_u64(), Some(generation));
    assert_eq!(part["since"].as_u64(), Some(gens[1]));
    let checked: Vec<&str> = part["checked_files"]
        .as_array()
        .unwrap()
        .iter()
        .map(|f| f["file"].as_str().unwrap())
        .collect();
    let newest = subject.files[2].file_name().unwrap().to_str().unwrap();
    assert_eq!(checked, [newest], "{part}");
    assert_eq!(part["skipped_files"].as_array().unwrap().len(), 2);
    assert_eq!(part["merged_view_checked"], false);
    assert!(part["entries"].as_u64().unwrap() < full["entries"].as_u64().unwrap());
    // Since the newest generation: nothing left to check but what opening checks.
    let none: serde_json::Value = bookdb([
        "verify",
        "--book",
        b,
        "--json",
        "--since",
        &generation.to_string(),
    ])
    .json();
    assert_eq!(none["checked_files"].as_array().unwrap().len(), 0);
    let text = bookdb(["verify", "--book", b, "--since", &since]).ok();
    assert!(text.contains("skipped") && text.contains(newest), "{text}");

    // A zeroed block page in the newest segment is found with --since; the same damage in the
    // base is left to the full verify.
    for (file, found_since) in [(&subject.files[2], true), (&subject.files[0], false)] {
        let dir = tempfile::tempdir_in(subject.dir.path()).unwrap();
        let book = fresh_copy(&subject, dir.path());
        let name = file.file_name().unwrap();
        let (a, _) = subject.blocks[file][0];
        let target = dir.path().join(name);
        let mut bytes = std::fs::read(&target).unwrap();
        bytes[a as usize + 30] ^= 0x40;
        std::fs::write(&target, bytes).unwrap();
        let with_since = run_limited(&["verify", "--book", s(&book), "--since", &since]);
        assert_no_crash(&with_since, "verify --since");
        assert_eq!(
            with_since.code,
            Some(if found_since { 3 } else { 0 }),
            "{}: {}",
            name.to_string_lossy(),
            with_since.stderr
        );
        let all = run_limited(&["verify", "--book", s(&book)]);
        assert_eq!(all.code, Some(3), "{}", all.stderr);
        assert!(
            all.stderr.contains(&*name.to_string_lossy()),
            "{}",
            all.stderr
        );
    }
}

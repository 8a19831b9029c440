//! The persistent transposition table (`bookdb::tt`, docs/FORMAT.md §14): entries survive
//! reopening and fold by the replacement rule, key collisions (forced with 4-bit keys) are
//! counted and never answer for another position, memory stays within its budget, a reader
//! in another process sees each publication while the writer goes on, a killed writer leaves
//! the table as of its last publication, damaged files are errors, and `bookdb tt` reads it.

mod common;

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use bookdb::othello::Board;
use bookdb::tt::{BestMove, Bound, Entry, KeyHash, Table, TableOptions, TtPosition};

/// Distinct positions reached by seeded random play (`n` of them, a few plies deep each).
fn boards(n: usize, seed: u64) -> Vec<Board> {
    let mut out = Vec::new();
    let mut seen = std::collections::HashSet::new();
    let mut x = seed | 1;
    while out.len() < n {
        let mut b = Board::start();
        for _ in 0..(6 + x % 30) {
            let moves = b.legal();
            if moves == 0 {
                break;
            }
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let mut m = moves;
            for _ in 0..(x % u64::from(moves.count_ones())) {
                m &= m - 1;
            }
            b.play(m.trailing_zeros() as u8).unwrap();
            if seen.insert((b.black(), b.white(), b.white_to_move())) {
                out.push(b);
                if out.len() == n {
                    break;
                }
            }
        }
    }
    out
}

fn entry(depth: u16, value: i32, bound: Bound, generation: u32) -> Entry {
    Entry {
        depth,
        value,
        bound,
        best_move: BestMove::Code(depth * 3),
        generation,
    }
}

fn opts() -> TableOptions {
    TableOptions::default()
}

#[test]
fn entries_survive_reopening_and_later_results_fold_by_the_replacement_rule() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t.tt");
    let bs = boards(300, 7);
    {
        let mut t = Table::open(&path, Board::GAME, &opts()).unwrap();
        assert_eq!(t.new_search(), 1);
        for (i, b) in bs.iter().enumerate() {
            assert!(t.store(b, entry(10, i as i32, Bound::Exact, 1)).unwrap());
        }
        t.close().unwrap();
    }
    {
        // A second search: deeper for a third, shallower for a third, an equal-depth lower
        // bound for the rest (exact stays).
        let mut t = Table::open(&path, Board::GAME, &opts()).unwrap();
        assert_eq!(
            t.new_search(),
            2,
            "the generation continues above the stored ones"
        );
        for (i, b) in bs.iter().enumerate() {
            let e = match i % 3 {
                0 => entry(12, -(i as i32), Bound::Upper, 2),
                1 => entry(8, 999, Bound::Exact, 2),
                _ => entry(10, 555, Bound::Lower, 2),
            };
            assert_eq!(t.store(b, e).unwrap(), i % 3 == 0, "store {i}");
        }
        t.close().unwrap();
    }
    let mut t = Table::open_reader(&path, Board::GAME, &opts()).unwrap();
    for (i, b) in bs.iter().enumerate() {
        let want = match i % 3 {
            0 => entry(12, -(i as i32), Bound::Upper, 2),
            _ => entry(10, i as i32, Bound::Exact, 1),
        };
        assert_eq!(t.probe(b).unwrap(), Some(want), "position {i}");
    }
    assert_eq!(t.probe(&boards(301, 7)[300]).unwrap(), None);
    let s = t.stats();
    assert_eq!((s.calls, s.hits, s.collisions), (301, 300, 0));
    let check = t.verify().unwrap();
    assert_eq!(check.positions, 300);
    // The second search published a segment holding only the third it replaced.
    assert_eq!((check.files, check.entries), (2, 400));
}

#[test]
fn forced_collisions_are_counted_and_never_answer_for_another_position() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("t4.tt");
    let bs = boards(3000, 11);
    let four_bits = TableOptions {
        key_bits: 4,
        memory_mib: 1,
        ..opts()
    };
    let mut t = Table::open(&path, Board::GAME, &four_bits).unwrap();
    for (i, b) in bs[..2000].iter().enumerate() {
        t.store(b, entry(1 + (i % 50) as u16, i as i32, Bound::Exact, 1))
            .unwrap();
        if i % 500 == 499 {
            t.flush().unwrap();
        }
    }
    for (i, b) in bs[..2000].iter().enumerate() {
        assert_eq!(t.probe(b).unwrap().map(|e| e.value), Some(i as i32), "{i}");
    }
    // Positions never stored share every key with stored ones: collisions, never hits.
    for b in &bs[2000..] {
        assert_eq!(t.probe(b).unwrap(), None);
    }
    let s = t.stats();
    assert!(s.collisions >= 1000, "{s:?}");
    assert_eq!(s.hits, 2000);
    t.close().unwrap();
    // Another process's view: the same answers from the files alone.
    let mut r = Table::open_reader(&path, Board::GAME, &opts()).unwrap();
    assert_eq!(
        r.kind().key_bits,
        4,
        "a table keeps the key width it was made with"
    );
    for (i, b) in bs[..2000].iter().enumerate() {
        assert_eq!(r.probe(b).unwrap().map(|e| e.value), Some(i as i32), "{i}");
    }
    for b in &bs[2000..] {
        assert_eq!(r.probe(b).unwrap(), None);
    }
    assert!(r.stats().collisions >= 1000);
    assert_eq!(r.verify().unwrap().positions, 2000);
}

#[test]
fn opaque_states_are_keyed_by_every_hash_family_and_kept_exact() {
    let dir = tempfile::tempdir().unwrap();
    for hash in KeyHash::ALL {
        let path = dir.path().join(format!("{}.tt", hash.name()));
        let o = TableOptions { hash, ..opts() };
        // Anagrams: the add and xor families give them one key.
        let states: Vec<Vec<u8>> = ["abc", "bca", "cab", "acb", "x", "", "state-10", "state-01"]
            .iter()
            .map(|s| s.as_bytes().to_vec())
            .collect();
        let mut t = Table::open(&path, bookdb::tt::OPAQUE, &o).unwrap();
        for (i, s) in states.iter().enumerate() {
            let e = Entry {
                best_move: BestMove::Bytes(format!("move {i}").into_bytes().into()),
                ..entry(3, i as i32, Bound::Lower, 1)
            };
            t.store_state(s, e).unwrap();
        }
        t.close().unwrap();
        let mut r = Table::open_reader(&path, bookdb::tt::OPAQUE, &opts()).unwrap();
        assert_eq!(r.kind().hash, hash);
        for (i, s) in states.iter().enumerate() {
            let e = r.probe_state(s).unwrap().unwrap();
            assert_eq!(e.value, i as i32, "{} {i}", hash.name());
            assert_eq!(
                e.best_move,
                BestMove::Bytes(format!("move {i}").into_bytes().into())
            );
        }
        assert_eq!(r.probe_state(b"bac").unwrap(), None);
        if matches!(hash, KeyHash::Add | KeyHash::Xor) {
            assert!(r.stats().collisions > 0, "{}", hash.name());
        }
    }
}

#[test]
fn a_table_of_one_game_refuses_another() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("o.tt");
    let mut t = Table::open(&path, Board::GAME, &opts()).unwrap();
    t.store(&Board::start(), entry(1, 0, Bound::Exact, 1))
        .unwrap();
    assert!(t.store_state(b"x", entry(1, 0, Bound::Exact, 1)).is_err());
    t.close().unwrap();
    let err = Table::open(&path, "chess", &opts())
        .err()
        .unwrap()
        .to_string();
    assert!(err.contains("othello"), "{err}");
}

#[test]
fn memory_stays_within_its_budget_and_the_files_stay_few() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("m.tt");
    let o = TableOptions {
        memory_mib: 1,
        ..opts()
    };
    let bs = boards(60_000, 3);
    let mut t = Table::open(&path, Board::GAME, &o).unwrap();
    let mut peak = 0;
    for (i, b) in bs.iter().enumerate() {
        t.store(b, entry(5, i as i32, Bound::Exact, 1)).unwrap();
        peak = peak.max(t.stats().memory_bytes);
        assert!(t.stats().files <= 9, "{:?}", t.stats());
    }
    assert!(peak <= 1 << 20, "memory tier peaked at {peak} bytes");
    let s = t.stats();
    assert!(s.files_written >= 4, "{s:?}");
    for (i, b) in bs.iter().enumerate().step_by(97) {
        assert_eq!(t.probe(b).unwrap().map(|e| e.value), Some(i as i32));
    }
    t.compact().unwrap();
    assert_eq!(t.stats().files, 1);
    assert_eq!(t.verify().unwrap().positions, 60_000);
}

/// Batches of positions a child writer publishes one by one (no position in two batches).
fn batch(k: usize) -> Vec<Board> {
    boards(200 * 12, 1000)[(k - 1) * 200..k * 200].to_vec()
}

#[test]
fn tt_writer_child() {
    // Run by the tests below as another process (`BOOKDB_TT_WRITER` = the table): publishes
    // batch k, then writes the marker file `<table>.k`, for k = 1..=BATCHES; with
    // `BOOKDB_TT_SLOW`, stores the next batch slowly after each marker (to be killed).
    let Ok(path) = std::env::var("BOOKDB_TT_WRITER") else {
        return;
    };
    let path = PathBuf::from(path);
    let batches: usize = std::env::var("BOOKDB_TT_BATCHES").unwrap().parse().unwrap();
    let slow = std::env::var("BOOKDB_TT_SLOW").is_ok();
    let mut t = Table::open(&path, Board::GAME, &opts()).unwrap();
    for k in 1..=batches {
        for (i, b) in batch(k).iter().enumerate() {
            t.store(b, entry(k as u16, i as i32, Bound::Exact, 1))
                .unwrap();
            if slow && k > 1 {
                std::thread::sleep(Duration::from_millis(5));
            }
        }
        t.flush().unwrap();
        std::fs::write(path.with_extension(format!("{k}")), "").unwrap();
    }
    t.close().unwrap();
}

fn writer(path: &Path, batches: usize, slow: bool) -> std::process::Child {
    let mut c = Command::new(std::env::current_exe().unwrap());
    c.args([
        "--exact",
        "tt_writer_child",
        "--nocapture",
        "--test-threads=1",
    ])
    .env("BOOKDB_TT_WRITER", path)
    .env("BOOKDB_TT_BATCHES", batches.to_string())
    .stdout(Stdio::null());
    if slow {
        c.env("BOOKDB_TT_SLOW", "1");
    }
    c.spawn().unwrap()
}

fn wait_for(p: &Path) {
    let t0 = Instant::now();
    while !p.exists() {
        assert!(
            t0.elapsed() < Duration::from_secs(120),
            "{} never came",
            p.display()
        );
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[test]
fn a_reader_in_another_process_sees_each_publication_while_the_writer_goes_on() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("live.tt");
    let batches = 12;
    let mut child = writer(&path, batches, false);
    wait_for(&path.with_extension("1"));
    let mut r = Table::open_reader(&path, Board::GAME, &opts()).unwrap();
    let mut seen = 0;
    let t0 = Instant::now();
    while seen < batches {
        assert!(
            t0.elapsed() < Duration::from_secs(120),
            "saw {seen} of {batches}"
        );
        r.refresh().unwrap();
        // Every batch the writer announced before this refresh is there, whole.
        let announced = (1..=batches)
            .take_while(|k| path.with_extension(format!("{k}")).exists())
            .count();
        r.refresh().unwrap();
        for k in 1..=announced {
            for (i, b) in batch(k).iter().enumerate() {
                let e = r.probe(b).unwrap();
                assert_eq!(
                    e.map(|e| (e.depth, e.value)),
                    Some((k as u16, i as i32)),
                    "batch {k}"
                );
            }
        }
        seen = seen.max(announced);
    }
    assert!(child.wait().unwrap().success());
    assert!(r.stats().files >= 1);
}

#[test]
fn a_killed_writer_leaves_the_table_as_of_its_last_publication() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("killed.tt");
    let mut child = writer(&path, 6, true);
    wait_for(&path.with_extension("3"));
    std::thread::sleep(Duration::from_millis(300));
    child.kill().unwrap();
    child.wait().unwrap();
    let done = (1..=6)
        .take_while(|k| path.with_extension(format!("{k}")).exists())
        .count();
    assert!(
        (3..6).contains(&done),
        "{done} batches published before the kill"
    );
    // The next writer recovers; every published batch is whole, the one in flight absent.
    let mut t = Table::open(&path, Board::GAME, &opts()).unwrap();
    for k in 1..=6 {
        let found = batch(k)
            .iter()
            .filter(|b| t.probe(*b).unwrap().is_some())
            .count();
        let want = if k <= done { 200 } else { 0 };
        assert_eq!(found, want, "batch {k} ({done} published)");
    }
    assert_eq!(t.verify().unwrap().positions, 200 * done as u64);
}

#[test]
fn damaged_table_files_are_errors_never_panics() {
    let dir = tempfile::tempdir().unwrap();
    let good = dir.path().join("good.tt");
    let bs = boards(2000, 5);
    let mut t = Table::open(&good, Board::GAME, &opts()).unwrap();
    for (i, b) in bs.iter().enumerate() {
        t.store(b, entry(9, i as i32, Bound::Exact, 1)).unwrap();
    }
    t.close().unwrap();
    let bytes = std::fs::read(&good).unwrap();
    // One coded entry, found in the file: damaged, verify names the entry's key.
    let mut coded = Vec::new();
    bookdb::tt::encode_entry(&entry(9, 1234, Bound::Exact, 1), &mut coded);
    let at = bytes
        .windows(coded.len())
        .position(|w| w == coded)
        .expect("the entry's bytes are in the file");
    let (mut corrupt, mut step) = (0, 0);
    for (n, offset) in std::iter::once(at + 2)
        .chain((0..bytes.len()).step_by(bytes.len() / 60))
        .enumerate()
    {
        let path = dir.path().join(format!("d{n}.tt"));
        let mut b = bytes.clone();
        b[offset] ^= 0x41;
        std::fs::write(&path, &b).unwrap();
        let res = Table::open_existing(&path, &opts(), false).and_then(|t| t.verify());
        if let Err(e) = &res {
            corrupt += 1;
            if n == 0 {
                let msg = e.to_string();
                assert!(
                    msg.contains(&format!("{:016x}", bs[1234].tt_key())),
                    "{msg}"
                );
            }
        } else {
            assert!(n > 0, "a damaged entry verified");
        }
        step += 1;
    }
    assert!(corrupt >= 1 && step > 30);
}

/// Damage inside an entry's exact position bytes (which its checksum does not cover) left the
/// entry unreachable, counted as a collision, and `tt verify` passed: each key is now checked
/// against its position's, for Othello positions and for opaque states.
#[test]
fn damaged_position_bytes_are_found_by_verify() {
    let dir = tempfile::tempdir().unwrap();
    let othello = dir.path().join("o.tt");
    let bs = boards(500, 11);
    let mut t = Table::open(&othello, Board::GAME, &opts()).unwrap();
    for (i, b) in bs.iter().enumerate() {
        t.store(b, entry(5, i as i32, Bound::Exact, 1)).unwrap();
    }
    t.close().unwrap();
    let mut exact = [0u8; 64];
    let n = bs[321].tt_exact(&mut exact);
    let opaque = dir.path().join("s.tt");
    let o = TableOptions {
        hash: KeyHash::Xxh3,
        ..opts()
    };
    let mut t = Table::open(&opaque, bookdb::tt::OPAQUE, &o).unwrap();
    for i in 0..500 {
        t.store_state(
            format!("state-{i:05}").as_bytes(),
            entry(5, i, Bound::Exact, 1),
        )
        .unwrap();
    }
    t.close().unwrap();
    for (path, needle) in [
        (&othello, exact[..n].to_vec()),
        (&opaque, b"state-00321".to_vec()),
    ] {
        let p = path.to_str().unwrap();
        common::bookdb(["tt", "verify", "--table", p]).ok();
        let mut bytes = std::fs::read(path).unwrap();
        let at = bytes
            .windows(needle.len())
            .position(|w| w == needle)
            .expect("the position's bytes are in the file");
        // A bit of the first disc bitboard / of the state's text.
        bytes[at + 1] ^= 0x04;
        std::fs::write(path, &bytes).unwrap();
        let err = common::bookdb(["tt", "verify", "--table", p]).fails_with(3);
        assert!(
            err.contains("position bytes are") && err.contains("damaged"),
            "{err}"
        );
    }
}

#[test]
fn the_cli_reads_checks_and_compacts_a_table_and_a_book_command_refuses_it() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("cli.tt");
    let mut t = Table::open(&path, Board::GAME, &opts()).unwrap();
    for (k, chunk) in boards(900, 9).chunks(300).enumerate() {
        for b in chunk {
            t.store(b, entry(4, k as i32, Bound::Exact, 1)).unwrap();
        }
        t.flush().unwrap();
    }
    t.close().unwrap();
    let p = path.to_str().unwrap();
    let v = common::bookdb(["tt", "stats", "--table", p, "--json"]).json();
    assert_eq!(v["game"], "othello");
    assert_eq!(v["entries"], 900);
    common::bookdb(["tt", "compact", "--table", p, "--json"]).ok();
    let v = common::bookdb(["tt", "verify", "--table", p, "--json"]).json();
    assert_eq!(
        (v["files"].as_u64(), v["positions"].as_u64()),
        (Some(1), Some(900))
    );
    let err = common::bookdb(["probe", "--book", p]).fails_with(4);
    assert!(err.contains("transposition table"), "{err}");
}

/// A handle that verifies the files of the state it read, after another handle published the
/// table again (a new base by compaction), checks the files it has open (its snapshot: neither
/// damage nor "busy", as `bookdb tt verify` beside a process growing the table was 10-46 % of
/// the time); refreshed, it verifies the new state.
#[test]
fn verify_under_a_republished_table_checks_the_files_it_has_open() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("moving.tt");
    let bs = boards(200, 11);
    let mut w = Table::open(&path, Board::GAME, &opts()).unwrap();
    let g = w.new_search();
    for (i, b) in bs[..100].iter().enumerate() {
        w.store(b, entry(4, i as i32, Bound::Exact, g)).unwrap();
    }
    w.flush().unwrap();
    let mut r = Table::open_reader(&path, Board::GAME, &opts()).unwrap();
    assert_eq!(r.verify().unwrap().files, 1);
    for (i, b) in bs[100..].iter().enumerate() {
        w.store(b, entry(5, i as i32, Bound::Exact, g)).unwrap();
    }
    w.flush().unwrap();
    w.compact().unwrap();
    // The files this reader has open, though a new base took their name: its snapshot.
    let stale = r.verify().unwrap();
    assert_eq!((stale.files, stale.positions), (1, 100), "{stale:?}");
    assert!(r.refresh().unwrap());
    let check = r.verify().unwrap();
    assert_eq!(check.positions, 200);
}

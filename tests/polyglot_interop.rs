//! Polyglot interop against real peers (docs/CONTRACT.md §5, interop):
//!
//! a. `bookdb export --format polyglot` holds the same (key, move) pairs and weights as
//!    `polyglot make-book` on the same games (several option sets).
//! b. python-chess, Debian's `polyglot info-book` / `dump-book` and GNU Chess read our `.bin`.
//! c. Every valid book in `$BOOKDB_DATA/books` survives `import-polyglot` + `export`.
//! d. Files that are not Polyglot books are rejected with a clear message.
//!
//! Peers: `/usr/games/{polyglot,pgn-extract,gnuchess}` (`apt-get install polyglot pgn-extract
//! gnuchess`) and python-chess (`pip install chess`). A missing peer or data file prints a
//! `SKIP:` line and the test passes, unless `BOOKDB_REQUIRE_PEERS=1`, where a missing peer fails.
//! Data comes from `$BOOKDB_DATA` (default `../shared/data` next to the crate).

use std::collections::{BTreeMap, HashMap};
use std::io::Write;
use std::path::{Path, PathBuf};
use std::process::{Command, Output, Stdio};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, OnceLock};

use bookdb::chess::polyglot_key;
use shakmaty::uci::UciMove;
use shakmaty::{Chess, Move, Position};

mod common;
use common::{
    Bookdb, bookdb, data_dir, data_file, dump, export_polyglot, peers_required, python_chess, s,
    stats, verify,
};

/// A peer program from PATH or /usr/games, or `None` after printing a SKIP line (a failure
/// when peers are required).
fn peer(name: &str) -> Option<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).collect())
        .unwrap_or_default();
    dirs.push(PathBuf::from("/usr/games"));
    if let Some(p) = dirs.iter().map(|d| d.join(name)).find(|p| p.is_file()) {
        return Some(p);
    }
    if peers_required() {
        panic!(
            "peer {name} not found and BOOKDB_REQUIRE_PEERS=1 (apt-get install polyglot pgn-extract gnuchess)"
        );
    }
    eprintln!("SKIP: peer {name} not installed (apt-get install polyglot pgn-extract gnuchess)");
    None
}

fn run(cmd: &mut Command, what: &str) -> Output {
    let out = cmd
        .output()
        .unwrap_or_else(|e| panic!("{what}: cannot start {cmd:?}: {e}"));
    assert!(
        out.status.success(),
        "{what} failed ({}): {cmd:?}\n--- stdout ---\n{}\n--- stderr ---\n{}",
        out.status,
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
    out
}

// ---------------------------------------------------------------------------------------------
// .bin files, parsed independently of the crate
// ---------------------------------------------------------------------------------------------

#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
struct Pg {
    key: u64,
    mv: u16,
    weight: u16,
    learn: u32,
}

/// The complete 16-byte entries of a file (a trailing partial entry is left out).
fn read_bin(path: &Path) -> Vec<Pg> {
    let data = std::fs::read(path).unwrap_or_else(|e| panic!("reading {}: {e}", path.display()));
    data.chunks_exact(16)
        .map(|c| Pg {
            key: u64::from_be_bytes(c[0..8].try_into().unwrap()),
            mv: u16::from_be_bytes([c[8], c[9]]),
            weight: u16::from_be_bytes([c[10], c[11]]),
            learn: u32::from_be_bytes([c[12], c[13], c[14], c[15]]),
        })
        .collect()
}

/// Checks polyglot's order: keys ascending, weights descending within a key.
fn assert_polyglot_order(entries: &[Pg], what: &str) {
    for w in entries.windows(2) {
        assert!(
            w[0].key < w[1].key || (w[0].key == w[1].key && w[0].weight >= w[1].weight),
            "{what}: entries out of order: {:?} then {:?}",
            w[0],
            w[1]
        );
    }
}

/// Polyglot move of a legal move (castling king-takes-rook), written here from the format
/// description, independently of the crate.
fn pg_of(m: &Move) -> u16 {
    let (from, to) = match *m {
        Move::Castle { king, rook } => (king, rook),
        _ => (m.from().expect("standard chess move"), m.to()),
    };
    let promo = m.promotion().map_or(0, |r| r as u16 - 1);
    u16::from(to) | (u16::from(from) << 6) | (promo << 12)
}

fn uci_of_pg(mv: u16) -> String {
    let sq = |i: u16| format!("{}{}", char::from(b'a' + (i % 8) as u8), i / 8 + 1);
    let promo = ["", "n", "b", "r", "q", "?", "?", "?"][usize::from((mv >> 12) & 7)];
    format!("{}{}{promo}", sq((mv >> 6) & 63), sq(mv & 63))
}

// ---------------------------------------------------------------------------------------------
// a. export == polyglot make-book
// ---------------------------------------------------------------------------------------------

const MAX_PLY: usize = 30;

/// Where polyglot counts differently from bookdb: pairs repeated within a game among its first
/// MAX_PLY moves (polyglot counts every occurrence, bookdb one per game). Reads pgn-extract's
/// `-Wuci` output of the same games. Returns (key, polyglot move) -> (extra n, extra sum).
fn repeated_pairs(uci_pgn: &Path) -> HashMap<(u64, u16), (u64, u64)> {
    // Tag values may hold CP437/Latin-1 bytes; moves are ASCII.
    let text =
        String::from_utf8_lossy(&std::fs::read(uci_pgn).expect("reading UCI PGN")).into_owned();
    let mut out: HashMap<(u64, u16), (u64, u64)> = HashMap::new();
    let mut result = String::new();
    let mut games = 0;
    let mut moves: Vec<String> = Vec::new();
    let mut flush = |moves: &mut Vec<String>, result: &str| {
        if moves.is_empty() {
            return;
        }
        let white_result: i64 = match result {
            "1-0" => 1,
            "0-1" => -1,
            _ => 0,
        };
        let mut pos = Chess::default();
        let mut seen: HashMap<(u64, u16), (u64, bool)> = HashMap::new();
        for (ply, m) in moves.iter().enumerate() {
            if ply >= MAX_PLY {
                break;
            }
            let uci: UciMove = m
                .parse()
                .unwrap_or_else(|e| panic!("bad UCI move {m}: {e}"));
            let mv = uci
                .to_move(&pos)
                .unwrap_or_else(|e| panic!("illegal UCI move {m}: {e}"));
            let white = pos.turn().is_white();
            let e = seen
                .entry((polyglot_key(&pos), pg_of(&mv)))
                .or_insert((0, white));
            e.0 += 1;
            pos.play_unchecked(mv);
        }
        for (pair, (count, white)) in seen {
            if count > 1 {
                let r = if white { white_result } else { -white_result };
                let x = out.entry(pair).or_default();
                x.0 += count - 1;
                x.1 += (count - 1) * (r + 1) as u64;
            }
        }
        moves.clear();
    };
    for line in text.lines() {
        let line = line.trim();
        if let Some(rest) = line.strip_prefix("[Result \"") {
            flush(&mut moves, &result);
            games += 1;
            result = rest.trim_end_matches("\"]").to_string();
        } else if line.starts_with('[') {
            continue;
        } else {
            for tok in line.split_whitespace() {
                if !matches!(tok, "1-0" | "0-1" | "1/2-1/2" | "*") {
                    moves.push(tok.to_string());
                }
            }
        }
    }
    flush(&mut moves, &result);
    assert!(games > 0, "no games in {}", uci_pgn.display());
    out
}

#[test]
fn export_matches_polyglot_make_book() {
    let Some(medium) = data_file("pgn/medium-10k.pgn") else {
        return;
    };
    let Some(polyglot) = peer("polyglot") else {
        return;
    };
    let Some(pgn_extract) = peer("pgn-extract") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // polyglot make-book ignores FEN tags (it always starts from the initial position) and
    // aborts on the first illegal move (game 9044 of medium-10k is a FEN game), so both get the
    // games pgn-extract accepts as legal, without SetUp games, comments, variations and NAGs.
    let clean = d.join("clean.pgn");
    let clean_uci = d.join("clean-uci.pgn");
    for (out, extra) in [(&clean, None), (&clean_uci, Some("-Wuci"))] {
        let mut cmd = Command::new(&pgn_extract);
        cmd.args(["-s", "-C", "-V", "-N", "--nosetuptags"]);
        cmd.args(extra);
        cmd.arg("-o").arg(out).arg(&medium);
        run(&mut cmd, "pgn-extract");
    }
    let book = d.join("b.redb");
    let max_ply = MAX_PLY.to_string();
    let summary = Bookdb::import(&[&clean], &book)
        .args(["--max-ply", &max_ply, "--quiet", "--json"])
        .json();
    let imported = summary["games_imported"].as_u64().unwrap();
    assert!(imported > 9900, "{summary}");
    // Games without moves (skipped as `no-moves`) add no pair to either book.
    assert_eq!(
        summary["games_skipped"].as_u64(),
        Some(
            summary["skipped_by_reason"]["no-moves"]
                .as_u64()
                .unwrap_or(0)
        ),
        "both tools must count the same games: {summary}"
    );
    let repeats = repeated_pairs(&clean_uci);
    eprintln!(
        "{imported} games, max-ply {MAX_PLY}: {} (key, move) pairs repeat within a game",
        repeats.len()
    );

    let variants: [(&[&str], &[&str]); 5] = [
        (&["-min-game", "1"], &[]),
        (&[], &["--min-games", "3"]), // polyglot's default -min-game is 3
        (
            &["-min-game", "1", "-min-score", "50"],
            &["--min-score", "50"],
        ),
        (
            &["-min-game", "2", "-only-white"],
            &["--min-games", "2", "--only-white"],
        ),
        (
            &["-min-game", "1", "-only-black", "-uniform"],
            &["--only-black", "--uniform"],
        ),
    ];
    for (i, (pg_args, our_args)) in variants.iter().enumerate() {
        let theirs = d.join(format!("polyglot-{i}.bin"));
        let ours = d.join(format!("ours-{i}.bin"));
        run(
            Command::new(&polyglot)
                .args([
                    "make-book",
                    "-pgn",
                    s(&clean),
                    "-bin",
                    s(&theirs),
                    "-max-ply",
                    &max_ply,
                ])
                .args(*pg_args),
            "polyglot make-book",
        );
        let mut args = vec![
            "export",
            "--book",
            s(&book),
            "--format",
            "polyglot",
            "--out",
            s(&ours),
        ];
        args.extend_from_slice(our_args);
        bookdb(&args).ok();
        let t = read_bin(&theirs);
        let o = read_bin(&ours);
        assert_polyglot_order(&o, "our export");
        let tm: BTreeMap<(u64, u16), (u16, u32)> = t
            .iter()
            .map(|e| ((e.key, e.mv), (e.weight, e.learn)))
            .collect();
        let om: BTreeMap<(u64, u16), (u16, u32)> = o
            .iter()
            .map(|e| ((e.key, e.mv), (e.weight, e.learn)))
            .collect();
        assert_eq!(tm.len(), t.len(), "polyglot wrote a (key, move) twice");
        assert_eq!(om.len(), o.len(), "we wrote a (key, move) twice");
        let uniform = pg_args.contains(&"-uniform");
        let (mut equal, mut explained, mut problems) = (0usize, 0usize, Vec::new());
        let keys: std::collections::BTreeSet<&(u64, u16)> = tm.keys().chain(om.keys()).collect();
        for km in keys {
            let (a, b) = (tm.get(km), om.get(km));
            if a == b {
                equal += 1;
                continue;
            }
            match repeats.get(km) {
                // Repetition: polyglot has more games/score for this pair; if both kept it, the
                // weights differ by exactly the extra score.
                Some(&(_, extra_sum)) => match (a, b) {
                    (Some(&(wa, _)), Some(&(wb, _)))
                        if !uniform && u64::from(wa) != u64::from(wb) + extra_sum =>
                    {
                        problems.push(format!(
                            "{km:x?}: polyglot {wa}, ours {wb} + repeated {extra_sum}"
                        ));
                    }
                    _ => explained += 1,
                },
                None => problems.push(format!(
                    "{:016x} {}: polyglot {a:?}, ours {b:?}",
                    km.0,
                    uci_of_pg(km.1)
                )),
            }
        }
        eprintln!(
            "variant {i} (polyglot {pg_args:?} / bookdb {our_args:?}): polyglot {} entries, ours {}; {equal} identical, {explained} differ by within-game repetitions, {} unexplained",
            t.len(),
            o.len(),
            problems.len()
        );
        assert!(
            problems.is_empty(),
            "variant {i}: {} differences, first: {:#?}",
            problems.len(),
            &problems[..problems.len().min(20)]
        );
        assert!(equal > 1000, "variant {i}: too few entries compared");
        if i == 0 {
            // polyglot's own reader sees the same book structure.
            let info = |p: &Path| {
                let out = run(
                    Command::new(&polyglot).args(["info-book", "-bin", s(p)]),
                    "polyglot info-book",
                );
                String::from_utf8_lossy(&out.stdout)
                    .lines()
                    .filter(|l| l.contains(':'))
                    .map(str::to_string)
                    .collect::<Vec<_>>()
            };
            let (it, io) = (info(&theirs), info(&ours));
            assert!(!io.is_empty());
            assert_eq!(
                it, io,
                "polyglot info-book differs between polyglot's book and ours"
            );
            eprintln!("polyglot info-book: {}", io.join("; "));
        }
    }
}

// ---------------------------------------------------------------------------------------------
// b. peers read our .bin
// ---------------------------------------------------------------------------------------------

/// A book built by bookdb from medium-10k at max-ply 20 and its export, shared by the tests
/// that need it; `None` (SKIP) without the data.
fn medium_export() -> Option<&'static (PathBuf, PathBuf)> {
    static BUILT: OnceLock<Option<(tempfile::TempDir, (PathBuf, PathBuf))>> = OnceLock::new();
    BUILT
        .get_or_init(|| {
            let medium = data_file("pgn/medium-10k.pgn")?;
            let dir = tempfile::tempdir().unwrap();
            let book = dir.path().join("m.redb");
            let bin = dir.path().join("m.bin");
            Bookdb::import(&[&medium], &book)
                .args(["--max-ply", "20", "--quiet"])
                .ok();
            export_polyglot(&book, &bin);
            Some((dir, (book, bin)))
        })
        .as_ref()
        .map(|(_, paths)| paths)
}

const LINES: [&str; 5] = [
    "",
    "e4",
    "e4 e5 Nf3 Nc6 Bb5 a6 Ba4 Nf6", // 5.O-O: white castles king side
    "e4 e5 Nf3 Nc6 Bb5 a6 Ba4 Nf6 O-O Be7 Re1 b5 Bb3 d6 c3", // 9...O-O
    "d4 Nf6 c4 g6 Nc3 d5 cxd5 Nxd5 e4 Nxc3 bxc3 Bg7 Bc4 c5 Ne2 Nc6 Be3", // 11...O-O and more
];

#[test]
fn python_chess_reads_our_book() {
    let Some(py) = python_chess() else { return };
    let Some((book, bin)) = medium_export() else {
        return;
    };
    let script = r#"
import json, sys
import chess, chess.polyglot
out = []
with chess.polyglot.MemoryMappedReader(sys.argv[1]) as r:
    raw = len(r)
    for line in sys.argv[2:]:
        b = chess.Board()
        for san in line.split():
            b.push_san(san)
        out.append(sorted([e.move.uci(), e.weight, e.learn] for e in r.find_all(b, minimum_weight=0)))
print(json.dumps({"entries": raw, "lines": out}))
"#;
    let out = run(
        Command::new(&py).arg("-c").arg(script).arg(bin).args(LINES),
        "python-chess",
    );
    let got: serde_json::Value = serde_json::from_slice(&out.stdout).unwrap();
    assert_eq!(got["entries"].as_u64(), Some(read_bin(bin).len() as u64));
    let mut castles = 0;
    for (i, line) in LINES.iter().enumerate() {
        let probe = bookdb(["probe", "--book", s(book), "--moves", line, "--json"]).json();
        let fen = probe["fen"].as_str().unwrap();
        let white = fen.split(' ').nth(1) == Some("w");
        // Our rule: weight = 2·wins + draws + unknown for the mover; moves never scoring left out.
        let mut expected: Vec<(String, u64, u64)> = probe["moves"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| {
                let g = |k: &str| m[k].as_u64().unwrap();
                let wins = if white { g("white") } else { g("black") };
                (
                    m["uci"].as_str().unwrap().to_string(),
                    2 * wins + g("draws") + g("unknown"),
                    0,
                )
            })
            .filter(|(_, w, _)| *w > 0)
            .collect();
        expected.sort();
        let seen: Vec<(String, u64, u64)> = got["lines"][i]
            .as_array()
            .unwrap()
            .iter()
            .map(|e| {
                (
                    e[0].as_str().unwrap().to_string(),
                    e[1].as_u64().unwrap(),
                    e[2].as_u64().unwrap(),
                )
            })
            .collect();
        assert!(
            !seen.is_empty(),
            "python-chess finds no moves after {line:?}"
        );
        assert_eq!(
            seen, expected,
            "python-chess's view of our book after {line:?}"
        );
        castles += seen
            .iter()
            .filter(|(u, _, _)| ["e1g1", "e1c1", "e8g8", "e8c8"].contains(&u.as_str()))
            .count();
        eprintln!(
            "after {line:?}: python-chess finds {} moves, as bookdb probe",
            seen.len()
        );
    }
    assert!(
        castles >= 2,
        "the sample lines should include castling moves"
    );
}

#[test]
fn debian_polyglot_reads_our_book() {
    let Some(polyglot) = peer("polyglot") else {
        return;
    };
    let Some((_, bin)) = medium_export() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let out = run(
        Command::new(&polyglot).args(["info-book", "-bin", s(bin)]),
        "polyglot info-book",
    );
    let info = String::from_utf8_lossy(&out.stdout);
    let lines_white: u64 = info
        .lines()
        .find(|l| l.starts_with("Lines for white"))
        .and_then(|l| l.rsplit(':').next())
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or_else(|| panic!("no 'Lines for white' in info-book output:\n{info}"));
    assert!(lines_white > 1000, "{info}");
    for color in ["white", "black"] {
        let dump = d.join(format!("dump-{color}.txt"));
        run(
            Command::new(&polyglot).args([
                "dump-book",
                "-bin",
                s(bin),
                "-color",
                color,
                "-out",
                s(&dump),
            ]),
            "polyglot dump-book",
        );
        let text = std::fs::read_to_string(&dump).unwrap();
        let lines: Vec<&str> = text.lines().filter(|l| l.contains(": 1.")).collect();
        assert!(
            lines.len() > 1000,
            "dump-book -color {color}: {} lines",
            lines.len()
        );
        assert!(text.contains("O-O"), "dump-book shows castling");
        if color == "white" {
            assert_eq!(
                lines.len() as u64,
                lines_white,
                "dump-book and info-book agree"
            );
        }
        eprintln!("polyglot dump-book -color {color}: {} lines", lines.len());
    }
}

/// Starts GNU Chess in `dir`, says `go` and returns the move it announces. GNU Chess must not
/// see end-of-input (it then loops), so stdin stays open until it has answered and is told
/// `quit`; it is killed if it does not exit.
fn gnuchess_first_move(gnuchess: &Path, dir: &Path) -> String {
    use std::io::BufRead;
    use std::time::{Duration, Instant};
    let mut child = Command::new(gnuchess)
        .current_dir(dir)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("starting gnuchess");
    let mut stdin = child.stdin.take().unwrap();
    stdin.write_all(b"go\n").unwrap();
    stdin.flush().unwrap();
    let stdout = child.stdout.take().unwrap();
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        for line in std::io::BufReader::new(stdout)
            .split(b'\n')
            .map_while(Result::ok)
        {
            if tx
                .send(String::from_utf8_lossy(&line).into_owned())
                .is_err()
            {
                break;
            }
        }
    });
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut transcript = String::new();
    let mut played = None;
    while played.is_none() {
        let Ok(line) = rx.recv_timeout(deadline.saturating_duration_since(Instant::now())) else {
            break;
        };
        played = line
            .split("My move is : ")
            .nth(1)
            .map(|m| m.trim().to_string());
        transcript.push_str(&line);
        transcript.push('\n');
    }
    let _ = stdin.write_all(b"quit\n");
    drop(stdin);
    let quit_by = Instant::now() + Duration::from_secs(5);
    while child.try_wait().ok().flatten().is_none() {
        if Instant::now() > quit_by {
            let _ = child.kill();
            let _ = child.wait();
            break;
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    played.unwrap_or_else(|| panic!("gnuchess made no move:\n{transcript}"))
}

#[test]
fn gnu_chess_plays_from_our_book() {
    let Some(gnuchess) = peer("gnuchess") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // Two one-line books with first moves no engine would choose: GNU Chess must play them.
    for first in ["b3", "h4"] {
        let pgn = d.join(format!("{first}.pgn"));
        std::fs::write(
            &pgn,
            format!("[Event \"t\"]\n[Result \"1-0\"]\n\n1. {first} e5 1-0\n\n"),
        )
        .unwrap();
        let book = d.join(format!("{first}.redb"));
        let work = d.join(first);
        std::fs::create_dir(&work).unwrap();
        Bookdb::import(&[&pgn], &book).arg("--quiet").ok();
        bookdb([
            "export",
            "--book",
            s(&book),
            "--format",
            "polyglot",
            "--out",
            s(&work.join("book.bin")),
        ])
        .ok();
        // gnuchess.ini in the working directory: the built-in PolyGlot adapter uses book.bin.
        std::fs::write(
            work.join("gnuchess.ini"),
            "[Adapter]\nLog = false\nResign = true\nResignMoves = 1\nBook = true\nBookFile = book.bin\n[Engine]\nHash = 16\nOwnBook = false\n",
        )
        .unwrap();
        let played = gnuchess_first_move(&gnuchess, &work);
        assert_eq!(played, first, "GNU Chess plays the book move");
        eprintln!("GNU Chess with our one-line book plays 1.{first}");
    }
}

// ---------------------------------------------------------------------------------------------
// c. import-polyglot + export reproduces real books
// ---------------------------------------------------------------------------------------------

/// Squares of a FEN's placement, a1 = 0 … h8 = 63.
fn board_of(fen: &str) -> [char; 64] {
    let mut b = ['.'; 64];
    for (i, rank) in fen.split(' ').next().unwrap_or("").split('/').enumerate() {
        let r = 7 - i;
        let mut f = 0;
        for c in rank.chars() {
            if let Some(n) = c.to_digit(10) {
                f += n as usize;
            } else if r < 8 && f < 8 {
                b[r * 8 + f] = c;
                f += 1;
            }
        }
    }
    b
}

/// Castling written as the king's two-square move (e1g1) becomes king-takes-rook (e1h1) when a
/// position of that key (from `bookdb dump`) has the mover's king on the from square.
fn canonical_castling(mv: u16, fens: Option<&Vec<String>>) -> u16 {
    let (to, from) = (mv & 63, (mv >> 6) & 63);
    if mv >> 12 != 0 || !(from == 4 || from == 60) || to / 8 != from / 8 {
        return mv;
    }
    let file = match to % 8 {
        6 | 7 => 7,
        0 | 2 => 0,
        _ => return mv,
    };
    let king_there = fens.into_iter().flatten().any(|fen| {
        let white = fen.split(' ').nth(1) == Some("w");
        board_of(fen)[usize::from(from)] == if white { 'K' } else { 'k' } && (from == 4) == white
    });
    if king_there {
        (from / 8 * 8 + file) | (from << 6)
    } else {
        mv
    }
}

/// (key, move) -> (weight, learn) after dropping sentinels and merging duplicates (highest
/// weight and learn, as import-polyglot does).
fn normalized(
    entries: &[Pg],
    fens: &HashMap<u64, Vec<String>>,
) -> BTreeMap<(u64, u16), (u16, u32)> {
    let mut m: BTreeMap<(u64, u16), (u16, u32)> = BTreeMap::new();
    for e in entries.iter().filter(|e| e.key != u64::MAX) {
        let mv = canonical_castling(e.mv, fens.get(&e.key));
        let x = m.entry((e.key, mv)).or_insert((e.weight, e.learn));
        *x = (x.0.max(e.weight), x.1.max(e.learn));
    }
    m
}

fn valid_books() -> Vec<PathBuf> {
    fn walk(dir: &Path, out: &mut Vec<PathBuf>) {
        let Ok(rd) = std::fs::read_dir(dir) else {
            return;
        };
        for e in rd.flatten() {
            let p = e.path();
            if p.is_dir() {
                if p.file_name().is_some_and(|n| n != "invalid") {
                    walk(&p, out);
                }
            } else if p.extension().is_some_and(|x| x == "bin") {
                out.push(p);
            }
        }
    }
    let mut out = Vec::new();
    walk(&data_dir().join("books"), &mut out);
    out.sort();
    out
}

struct RoundTrip {
    name: String,
    read: u64,
    compared: usize,
    placed: u64,
    key_only: u64,
    skipped: u64,
    two_square_castles: u64,
}

fn round_trip(bin: &Path, dir: &Path) -> RoundTrip {
    let name = bin
        .strip_prefix(data_dir().join("books"))
        .unwrap_or(bin)
        .display()
        .to_string();
    let stem = name.replace('/', "_");
    let book = dir.join(format!("{stem}.redb"));
    let out = dir.join(format!("{stem}.out.bin"));
    let summary = bookdb([
        "import-polyglot",
        s(bin),
        "--book",
        s(&book),
        "--json",
        "--quiet",
    ])
    .json();
    let f = &summary["files"][0];
    let g = |k: &str| {
        f[k].as_u64()
            .unwrap_or_else(|| panic!("{name}: summary field {k}: {summary}"))
    };
    let skipped: u64 = f["skipped"]
        .as_object()
        .unwrap()
        .values()
        .map(|v| v.as_u64().unwrap())
        .sum();
    assert_eq!(
        g("entries_read"),
        g("placed") + g("key_only") + skipped,
        "{name}: every entry accounted for: {f}"
    );
    export_polyglot(&book, &out);
    let original = read_bin(bin);
    // Positions are needed only to recognize castling written as the king's two-square move.
    let two_square = |e: &Pg| {
        e.mv >> 12 == 0 && matches!(((e.mv >> 6) & 63, e.mv & 63), (4, 2 | 6) | (60, 58 | 62))
    };
    let mut fens: HashMap<u64, Vec<String>> = HashMap::new();
    if original.iter().any(two_square) {
        for line in dump(&book).lines() {
            let v: serde_json::Value = serde_json::from_str(line).unwrap();
            if let Some(fen) = v["fen"].as_str() {
                let key = u64::from_str_radix(v["key"].as_str().unwrap(), 16).unwrap();
                fens.entry(key).or_default().push(fen.to_string());
            }
        }
    }
    let exported = read_bin(&out);
    assert_polyglot_order(&exported, &name);
    let a = normalized(&original, &fens);
    let b = normalized(&exported, &fens);
    assert_eq!(
        b.len(),
        exported.len(),
        "{name}: the export lists a (key, move) twice"
    );
    if a != b {
        let only_a: Vec<_> = a
            .iter()
            .filter(|(k, v)| b.get(k) != Some(v))
            .take(10)
            .collect();
        let only_b: Vec<_> = b
            .iter()
            .filter(|(k, v)| a.get(k) != Some(v))
            .take(10)
            .collect();
        panic!(
            "{name}: round trip differs ({} vs {} entries)\noriginal only: {only_a:x?}\nexport only: {only_b:x?}",
            a.len(),
            b.len()
        );
    }
    RoundTrip {
        name: name.clone(),
        read: g("entries_read"),
        compared: a.len(),
        placed: g("placed"),
        key_only: g("key_only"),
        skipped,
        two_square_castles: g("castling_king_two_squares"),
    }
}

#[test]
fn import_export_round_trip_of_real_books() {
    let books = valid_books();
    if books.is_empty() {
        eprintln!(
            "SKIP: no Polyglot books under {}",
            data_dir().join("books").display()
        );
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let next = AtomicUsize::new(0);
    let results: Mutex<Vec<RoundTrip>> = Mutex::new(Vec::new());
    let threads = std::thread::available_parallelism()
        .map_or(2, |n| n.get())
        .min(4);
    std::thread::scope(|sc| {
        for _ in 0..threads {
            sc.spawn(|| {
                loop {
                    let i = next.fetch_add(1, Ordering::Relaxed);
                    let Some(bin) = books.get(i) else { break };
                    let r = round_trip(bin, dir.path());
                    results.lock().unwrap().push(r);
                }
            });
        }
    });
    let mut results = results.into_inner().unwrap();
    results.sort_by(|a, b| a.name.cmp(&b.name));
    eprintln!(
        "{:<58} {:>7} {:>7} {:>7} {:>7} {:>4} {:>5}",
        "book", "read", "compared", "placed", "keyonly", "skip", "e1g1"
    );
    for r in &results {
        eprintln!(
            "{:<58} {:>7} {:>7} {:>7} {:>7} {:>4} {:>5}",
            r.name, r.read, r.compared, r.placed, r.key_only, r.skipped, r.two_square_castles
        );
    }
    let total: usize = results.iter().map(|r| r.compared).sum();
    eprintln!(
        "{} books, {total} entries compared, all equal",
        results.len()
    );
    assert_eq!(results.len(), books.len());
}

// ---------------------------------------------------------------------------------------------
// d. invalid files; defects; seeding from the target book; jsonl
// ---------------------------------------------------------------------------------------------

fn import_fails(bin: &Path, book: &Path) -> String {
    let out = bookdb(["import-polyglot", s(bin), "--book", s(book)]).output();
    assert!(!out.status.success(), "{} was accepted", bin.display());
    assert!(!book.exists(), "no book is written for a rejected input");
    String::from_utf8_lossy(&out.stderr).into_owned()
}

#[test]
fn invalid_files_are_rejected() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let mut n = 0;
    if let Ok(rd) = std::fs::read_dir(data_dir().join("books/invalid")) {
        for e in rd.flatten() {
            let err = import_fails(&e.path(), &d.join("x.redb"));
            assert!(
                err.contains("not a Polyglot book"),
                "{}: {err}",
                e.path().display()
            );
            eprintln!("{}: {}", e.file_name().to_string_lossy(), err.trim());
            n += 1;
        }
    }
    if n == 0 {
        eprintln!(
            "SKIP: no files in {}",
            data_dir().join("books/invalid").display()
        );
    }
    for (name, bytes) in [
        ("short.bin", vec![1u8; 10]),
        (
            "text.bin",
            b"rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - 0 1\n".repeat(4),
        ),
        (
            "page.bin",
            b"<html><body>404 Not Found</body></html>\n".repeat(4),
        ),
    ] {
        let p = d.join(name);
        std::fs::write(&p, bytes).unwrap();
        let err = import_fails(&p, &d.join("x.redb"));
        assert!(err.contains("not a Polyglot book"), "{name}: {err}");
    }
    // A missing input is an error too.
    import_fails(&d.join("missing.bin"), &d.join("x.redb"));
}

/// Entries of a small book made from one line, by our own export.
fn tiny_bin(d: &Path, name: &str, pgn: &str) -> (PathBuf, PathBuf) {
    let p = d.join(format!("{name}.pgn"));
    std::fs::write(&p, pgn).unwrap();
    let book = d.join(format!("{name}.redb"));
    let bin = d.join(format!("{name}.bin"));
    Bookdb::import(&[&p], &book).arg("--quiet").ok();
    export_polyglot(&book, &bin);
    (book, bin)
}

#[test]
fn real_defects_are_tolerated() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (_, bin) = tiny_bin(
        d,
        "line",
        "[Result \"1/2-1/2\"]\n\n1. e4 e5 2. Nf3 Nc6 3. Bc4 Nf6 4. O-O Be7 1/2-1/2\n\n[Result \"1/2-1/2\"]\n\n1. d4 d5 1/2-1/2\n",
    );
    let mut entries = read_bin(&bin);
    assert_eq!(entries.len(), 10);
    let start_key = 0x463b96181691fc9c;
    // Castling as e1g1 (Fox style), a duplicate with a lower weight, a weight-0 move with a learn
    // value, entries out of order, a sentinel and a partial entry.
    let castle = entries
        .iter_mut()
        .find(|e| uci_of_pg(e.mv) == "e1h1")
        .expect("O-O in the book");
    castle.mv = (castle.mv & !63) | 6;
    let castle = *castle;
    let mut defective = entries.clone();
    defective.push(Pg {
        weight: 0,
        ..entries[3]
    });
    let h4 = Pg {
        key: start_key,
        mv: (7 + 24) | (15 << 6),
        weight: 0,
        learn: 5,
    };
    defective.push(h4);
    let last = defective.len() - 1;
    defective.swap(0, last);
    defective.push(Pg {
        key: u64::MAX,
        mv: 0,
        weight: 0,
        learn: 0,
    });
    let mut bytes: Vec<u8> = Vec::new();
    for e in &defective {
        bytes.extend_from_slice(&e.key.to_be_bytes());
        bytes.extend_from_slice(&e.mv.to_be_bytes());
        bytes.extend_from_slice(&e.weight.to_be_bytes());
        bytes.extend_from_slice(&e.learn.to_be_bytes());
    }
    bytes.extend_from_slice(&[0xde, 0xad, 0xbe]);
    let p = d.join("defective.bin");
    std::fs::write(&p, &bytes).unwrap();
    let book = d.join("def.redb");
    let out = bookdb(["import-polyglot", s(&p), "--book", s(&book)]).ok_output();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("trailing byte"), "{err}");
    assert!(err.contains("out of key order"), "{err}");
    let sj = bookdb([
        "import-polyglot",
        s(&p),
        "--book",
        s(&d.join("def2.redb")),
        "--json",
    ])
    .json();
    let f = &sj["files"][0];
    assert_eq!(f["entries_read"], 13);
    assert_eq!(f["skipped"]["sentinel"], 1);
    assert_eq!(f["skipped"]["duplicate"], 1);
    assert_eq!(f["placed"], 11, "{f}");
    assert_eq!(f["castling_king_two_squares"], 1);
    // The book shows castling as e1g1 with its weight; the export writes e1h1 and keeps the
    // weight-0 move and its learn value.
    let probe = bookdb([
        "probe",
        "--book",
        s(&book),
        "--moves",
        "e4 e5 Nf3 Nc6 Bc4 Nf6",
        "--json",
    ])
    .json();
    let mv = &probe["moves"][0];
    assert_eq!(mv["uci"], "e1g1");
    assert_eq!(mv["weight"].as_u64(), Some(u64::from(castle.weight)));
    let again = d.join("again.bin");
    export_polyglot(&book, &again);
    let mut expected = read_bin(&bin);
    expected.push(h4);
    expected.sort();
    let mut got = read_bin(&again);
    got.sort();
    assert_eq!(got, expected);
}

#[test]
fn positions_of_the_target_book_seed_the_walk() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    // A game from a set-up position: its .bin does not reach the start position.
    let pgn = "[Result \"1-0\"]\n[SetUp \"1\"]\n[FEN \"r1bqkb1r/pppp1ppp/2n2n2/4p3/2B1P3/5N2/PPPP1PPP/RNBQK2R w KQkq - 4 4\"]\n\n4. O-O Be7 5. d4 exd4 6. e5 Ne4 1-0\n";
    let (src_book, bin) = tiny_bin(d, "setup", pgn);
    let original = read_bin(&bin);
    assert_eq!(original.len(), 3, "the mover scores in 3 of 6 moves");
    // Alone: nothing is reachable, every entry is key-only and comes back bit for bit.
    let alone = d.join("alone.redb");
    let sj = bookdb(["import-polyglot", s(&bin), "--book", s(&alone), "--json"]).json();
    assert_eq!(sj["files"][0]["key_only"], 3);
    assert_eq!(sj["book"]["key_only"], 3);
    let back = d.join("back.bin");
    export_polyglot(&alone, &back);
    assert_eq!(std::fs::read(&back).unwrap(), std::fs::read(&bin).unwrap());
    // Into the book that holds the games: every entry finds its position; counts are kept.
    let sj = bookdb(["import-polyglot", s(&bin), "--book", s(&src_book), "--json"]).json();
    assert_eq!(sj["files"][0]["placed"], 3, "{sj}");
    assert_eq!(sj["book"]["key_only"], 0);
    assert_eq!(sj["book"]["games"], 1, "games of the book are kept");
    let dump = dump(&src_book);
    assert!(dump.contains("\"uci\":\"e1g1\""), "{dump}");
    assert!(dump.contains("\"weight\":2"), "{dump}");
}

#[test]
fn jsonl_export_equals_dump() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (book, _) = tiny_bin(d, "j", "[Result \"0-1\"]\n\n1. f3 e5 2. g4 Qh4# 0-1\n");
    let dump = bookdb(["dump", "--book", s(&book)]).ok_output().stdout;
    let stdout = bookdb([
        "export",
        "--book",
        s(&book),
        "--format",
        "jsonl",
        "--out",
        "-",
    ])
    .ok_output()
    .stdout;
    assert_eq!(stdout, dump);
    let file = d.join("j.jsonl");
    bookdb([
        "export",
        "--book",
        s(&book),
        "--format",
        "jsonl",
        "--out",
        s(&file),
    ])
    .ok();
    assert_eq!(std::fs::read(&file).unwrap(), dump);
    assert_eq!(String::from_utf8(dump).unwrap().lines().count(), 4);
    // Polyglot filters do not apply to jsonl.
    let out = bookdb([
        "export",
        "--book",
        s(&book),
        "--format",
        "jsonl",
        "--out",
        "-",
        "--uniform",
    ])
    .output();
    assert!(!out.status.success());
    // The Polyglot export to stdout is the same bytes as to a file.
    let bin = bookdb([
        "export",
        "--book",
        s(&book),
        "--format",
        "polyglot",
        "--out",
        "-",
    ])
    .ok_output()
    .stdout;
    assert_eq!(bin, std::fs::read(d.join("j.bin")).unwrap());
    assert_eq!(
        bin.len(),
        2 * 16,
        "only black's winning moves score (f3 and g4 lost)"
    );
}

#[test]
fn reimport_is_a_no_op_unless_forced() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (_, bin) = tiny_bin(d, "once", "[Result \"1-0\"]\n\n1. e4 e5 2. Nf3 1-0\n");
    let book = d.join("once-pg.redb");
    let first = bookdb(["import-polyglot", s(&bin), "--book", s(&book), "--json"]).json();
    assert_eq!(first["files"][0]["placed"], 2);
    let weights = |book: &Path| {
        let p = bookdb(["probe", "--book", s(book), "--json"]).json();
        p["moves"][0]["weight"].as_u64().unwrap()
    };
    assert_eq!(weights(&book), 2);
    let again = bookdb(["import-polyglot", s(&bin), "--book", s(&book), "--json"]).json();
    assert_eq!(
        again["already_imported"].as_array().unwrap().len(),
        1,
        "{again}"
    );
    assert_eq!(again["files"].as_array().unwrap().len(), 0);
    assert_eq!(
        weights(&book),
        2,
        "a second import of the same file changes nothing"
    );
    let text = bookdb(["import-polyglot", s(&bin), "--book", s(&book)]).ok();
    assert!(text.contains("already imported"), "{text}");
    bookdb([
        "import-polyglot",
        s(&bin),
        "--book",
        s(&book),
        "--force",
        "--quiet",
    ])
    .ok();
    assert_eq!(
        weights(&book),
        4,
        "forced: weights add up as in polyglot merge-book"
    );
    // The PGN import records of a book survive a Polyglot import.
    let pgn_book = d.join("once.redb");
    bookdb([
        "import-polyglot",
        s(&bin),
        "--book",
        s(&pgn_book),
        "--quiet",
    ])
    .ok();
    let pgn = d.join("once.pgn");
    let out = Bookdb::import(&[&pgn], &pgn_book).arg("--json").json();
    assert_eq!(
        out["already_imported"].as_array().map(Vec::len),
        Some(1),
        "the PGN import record was kept"
    );
}

/// A Polyglot entry whose position could not be placed is kept key-only; once a book with that
/// position is merged in (or the book is compacted after such an import), its moves join the
/// position: the position shows them, with weight and learn, and nothing stays key-only.
#[test]
fn key_only_entries_join_their_position_on_rewrite() {
    let dir = tempfile::tempdir().unwrap();
    let pgn = common::copy_in(&common::sample_pgn(), dir.path());
    let games = dir.path().join("games.book");
    Bookdb::import(&[&pgn], &games).arg("--quiet").ok();
    // Moves played once are left out, so some book positions cannot be reached from the start
    // through the .bin's own moves: those entries become key-only.
    let bin = dir.path().join("twice.bin");
    bookdb([
        "export",
        "--book",
        s(&games),
        "--format",
        "polyglot",
        "--out",
        s(&bin),
        "--min-games",
        "2",
    ])
    .ok();
    let keys = dir.path().join("keys.book");
    let r = bookdb(["import-polyglot", s(&bin), "--book", s(&keys), "--json"]).json();
    let key_only = r["key_only"].as_u64().unwrap();
    assert!(key_only > 0, "the scenario needs unplaceable entries: {r}");
    let dump = |book: &Path| -> Vec<serde_json::Value> {
        common::dump(book)
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect()
    };
    let unplaced: Vec<serde_json::Value> = dump(&keys)
        .into_iter()
        .filter(|e| e["key_only"] == true)
        .collect();
    assert_eq!(unplaced.len() as u64, key_only);

    let merged = dir.path().join("merged.book");
    bookdb(["merge", s(&keys), s(&games), "--out", s(&merged)]).ok();
    let st = stats(&merged);
    assert_eq!(st["key_only"], 0, "{st}");
    let by_key: HashMap<String, serde_json::Value> = dump(&merged)
        .into_iter()
        .map(|e| (e["key"].as_str().unwrap().to_string(), e))
        .collect();
    for k in &unplaced {
        let e = &by_key[k["key"].as_str().unwrap()];
        assert!(e["fen"].is_string(), "{e}");
        for m in k["moves"].as_array().unwrap() {
            // Key-only moves are Polyglot's, read literally: castling is king-takes-rook.
            let uci = match m["uci"].as_str().unwrap() {
                "e1h1" => "e1g1",
                "e1a1" => "e1c1",
                "e8h8" => "e8g8",
                "e8a8" => "e8c8",
                other => other,
            };
            let got = e["moves"]
                .as_array()
                .unwrap()
                .iter()
                .find(|x| x["uci"] == uci)
                .unwrap_or_else(|| panic!("{} lost move {uci}", k["key"]));
            assert_eq!(got["weight"], m["weight"], "{e}");
            assert_eq!(got["learn"], m["learn"], "{e}");
            assert!(got["games"].as_u64().unwrap() >= 2, "{e}");
        }
    }
    verify(&merged);

    // The same through an import into the delta tier and a compaction.
    Bookdb::import(&[&pgn], &keys).arg("--quiet").ok();
    let before = stats(&keys);
    assert_eq!(before["key_only"].as_u64(), Some(key_only), "{before}");
    bookdb(["compact", "--book", s(&keys)]).ok();
    let after = stats(&keys);
    assert_eq!(after["key_only"], 0, "{after}");
    assert_eq!(dump(&keys), dump(&merged), "compaction and merge agree");
}

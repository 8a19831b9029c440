//! The Othello endgame solver (`bookdb::othello::endgame`, `examples/othello_endgame.rs`)
//! against the federation's theoretical scores, and its persistent table across runs: a
//! solver killed mid-run and restarted on the same `--tt` finishes with the same answers, and
//! a run after it answers every game from the table.

mod common;

use std::io::BufRead;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};

use bookdb::ops::othello::games::{WTHOR_HEADER, WTHOR_RECORD, decode_record};
use bookdb::othello::Board;
use bookdb::othello::endgame::{MemoryTable, Solver};

/// (the position of game `number` with `empties` empties, WTHOR's theoretical score).
fn position(file: &Path, number: usize, empties: u32) -> (Board, i32) {
    let data = std::fs::read(file).unwrap();
    let at = WTHOR_HEADER + (number - 1) * WTHOR_RECORD;
    let rec = &data[at..at + WTHOR_RECORD];
    let game = decode_record(rec, number as u64).unwrap();
    let mut b = Board::start();
    for &sq in &game.moves {
        if 64 - (b.black() | b.white()).count_ones() == empties {
            break;
        }
        b.play(sq).unwrap();
    }
    assert_eq!(64 - (b.black() | b.white()).count_ones(), empties);
    (b, i32::from(rec[7]))
}

#[test]
fn the_solver_agrees_with_the_theoretical_scores_at_24_empties() {
    // WTHOR's theoretical score: black's discs with perfect play from the position with 24
    // empties (the header's depth), empty squares to the winner. A sample within CI's budget
    // (these four take ~40 million nodes together); docs/PERFORMANCE.md has a full run.
    let sample = [("WTH_1995.wtb", [10, 19]), ("WTH_2004.wtb", [5, 22])];
    for (file, games) in sample {
        let Some(path) = common::data_file(&format!("othello/wthor/{file}")) else {
            return;
        };
        assert_eq!(
            std::fs::read(&path).unwrap()[14],
            24,
            "{file}: header depth"
        );
        for g in games {
            let (b, theoretical) = position(&path, g, 24);
            let mut s = Solver::new(MemoryTable::default());
            let solved = s.solve(&b).unwrap();
            assert_eq!(solved.black_score, theoretical, "{file}:{g}");
            assert!(solved.best_move.is_some_and(|m| b.legal() & (1 << m) != 0));
        }
    }
}

/// The example's binary (cargo builds examples with the tests; built here if it was not).
fn solver_binary() -> PathBuf {
    let exe = std::env::current_exe().unwrap();
    let profile = exe.parent().unwrap().parent().unwrap();
    let bin = profile.join("examples/othello_endgame");
    if !bin.exists() {
        let release = profile.file_name().is_some_and(|n| n == "release");
        let mut c = Command::new(env!("CARGO"));
        c.args(["build", "--example", "othello_endgame"])
            .current_dir(env!("CARGO_MANIFEST_DIR"));
        if release {
            c.arg("--release");
        }
        assert!(c.status().unwrap().success(), "building the example");
    }
    bin
}

/// (game, solved score, nodes) of each output line.
fn results(out: &str) -> Vec<(String, i32, u64)> {
    out.lines()
        .filter(|l| l.contains(" solved "))
        .map(|l| {
            let w: Vec<&str> = l.split_whitespace().collect();
            (
                w[0].to_string(),
                w[4].parse().unwrap(),
                w[6].parse().unwrap(),
            )
        })
        .collect()
}

#[test]
fn a_killed_solver_restarts_on_its_table_with_the_same_answers() {
    let Some(wtb) = common::data_file("othello/wthor/WTH_1990.wtb") else {
        return;
    };
    let bin = solver_binary();
    let dir = tempfile::tempdir().unwrap();
    let tt = dir.path().join("solver.tt");
    let args = ["--empties", "16", "--limit", "40", "--tt-min-empties", "10"];
    let reference = Command::new(&bin)
        .args(args)
        .args(["--table", "memory"])
        .arg(&wtb)
        .output()
        .unwrap();
    assert!(reference.status.success());
    let reference = results(&String::from_utf8(reference.stdout).unwrap());
    assert_eq!(reference.len(), 40);

    // Killed after 12 games (each published when solved), then run again to the end.
    let mut child = Command::new(&bin)
        .args(args)
        .arg("--tt")
        .arg(&tt)
        .arg(&wtb)
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let stdout = child.stdout.take().unwrap();
    let mut lines = std::io::BufReader::new(stdout).lines();
    for _ in 0..12 {
        lines.next().unwrap().unwrap();
    }
    child.kill().unwrap();
    child.wait().unwrap();
    let run = |extra: &[&str]| {
        let out = Command::new(&bin)
            .args(args)
            .args(extra)
            .arg("--tt")
            .arg(&tt)
            .arg(&wtb)
            .output()
            .unwrap();
        assert!(out.status.success(), "{out:?}");
        results(&String::from_utf8(out.stdout).unwrap())
    };
    let resumed = run(&[]);
    let strip = |r: &[(String, i32, u64)]| -> Vec<(String, i32)> {
        r.iter().map(|(g, s, _)| (g.clone(), *s)).collect()
    };
    assert_eq!(strip(&resumed), strip(&reference));
    // The first 12 (at least) came from the table: one node each.
    let from_table = resumed.iter().take_while(|(_, _, n)| *n == 1).count();
    assert!(
        from_table >= 12,
        "{from_table} games answered from the table"
    );
    // A third run answers every game from the table.
    let third = run(&[]);
    assert_eq!(strip(&third), strip(&reference));
    assert!(third.iter().all(|(_, _, n)| *n == 1), "{third:?}");
    let v = common::bookdb(["tt", "verify", "--table", tt.to_str().unwrap(), "--json"]).json();
    assert!(v["positions"].as_u64().unwrap() > 40, "{v}");
}

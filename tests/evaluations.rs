//! Engine evaluations kept with the book (docs/CONTRACT.md §10, docs/FORMAT.md §13):
//! `import-evals` of EPD and lichess's evaluation export (exactly once, bad lines reported by
//! `file:line`), round trips through `export --format epd|evals`, python-chess reading the
//! EPD, `probe`/`dump` showing them, and merge, compaction and folds keeping the selector's
//! results.

mod common;
use common::*;

use std::path::Path;

use common::fens::{E4, ITALIAN, START};

fn epd_text() -> String {
    format!(
        "{START} ce 25; acd 20; acn 1000000; pv e4 e5 Nf3;\n\
         {E4} ce -30; acd 18; acn 500000; pv c5 Nf3;\n\
         this is not EPD\n\
         {ITALIAN} ce 32762; acd 30; acn 2000; pv O-O Nf6 d3;\n\
         {START} ce 10; pv e5;\n"
    )
}

fn lichess_text() -> String {
    format!(
        "{{\"fen\":\"{ITALIAN}\",\"evals\":[{{\"knodes\":9000,\"depth\":34,\"pvs\":[{{\"cp\":41,\"line\":\"e1h1 g8f6 d2d3\"}},{{\"mate\":-7,\"line\":\"c4f7 e8f7\"}}]}},{{\"knodes\":100,\"depth\":12,\"pvs\":[{{\"cp\":20,\"line\":\"c2c3\"}}]}}]}}\n\
         {{\"fen\":\"{START}\",\"evals\":[{{\"knodes\":50,\"depth\":40,\"pvs\":[{{\"cp\":18,\"line\":\"e2e4\"}}]}}]}}\n\
         {{\"fen\":\"{START}\",\"evals\":[]}}\n"
    )
}

fn evals_of(book: &Path, fen: &str) -> serde_json::Value {
    let p: serde_json::Value = bookdb(["probe", "--json", "--fen", fen, "--book", s(book)]).json();
    p["evals"].clone()
}

#[test]
fn imports_are_exactly_once_and_report_bad_lines() {
    let dir = tempfile::tempdir().unwrap();
    let book = dir.path().join("b.book");
    let epd = write_text(dir.path(), "a.epd", &epd_text());
    let jl = write_text(dir.path(), "b.jsonl", &lichess_text());
    let r: serde_json::Value = bookdb([
        "import-evals",
        "--json",
        "--book",
        s(&book),
        s(&epd),
        s(&jl),
    ])
    .json();
    assert_eq!(r["bad_lines"], 3, "{r}");
    let bad: Vec<&str> = r["bad"]
        .as_array()
        .unwrap()
        .iter()
        .map(|b| b.as_str().unwrap())
        .collect();
    assert!(bad[0].starts_with(&format!("{}:3: ", s(&epd))), "{bad:?}");
    assert!(bad[1].starts_with(&format!("{}:5: ", s(&epd))), "{bad:?}");
    assert!(bad[2].starts_with(&format!("{}:3: ", s(&jl))), "{bad:?}");
    assert_eq!(r["positions"], 3);
    verify(&book);
    // Again: both inputs are recorded, nothing is read.
    let again: serde_json::Value = bookdb([
        "import-evals",
        "--json",
        "--book",
        s(&book),
        s(&epd),
        s(&jl),
    ])
    .json();
    assert_eq!(again["results"], 0, "{again}");
    assert!(
        again["inputs"]
            .as_array()
            .unwrap()
            .iter()
            .all(|i| i["skipped"] == true)
    );
    // Compressed, the same bytes are another input, but the selector keeps the same results.
    let before = dump(&book);
    let zst = dir.path().join("a.epd.zst");
    std::fs::write(&zst, zstd::encode_all(epd_text().as_bytes(), 3).unwrap()).unwrap();
    let z: serde_json::Value =
        bookdb(["import-evals", "--json", "--book", s(&book), s(&zst)]).json();
    assert_eq!(z["results"], 3, "{z}");
    assert_eq!(
        dump(&book),
        before,
        "merging the same results changes nothing"
    );
    // The selector: at the start, 40/1 line (lichess) beats 20/1 (EPD); in the Italian,
    // the 34-deep 2-line result makes the 30-deep 1-line one obsolete, the 12-deep too.
    let start = evals_of(&book, START);
    assert_eq!(start.as_array().unwrap().len(), 1, "{start}");
    assert_eq!(start[0]["depth"], 40);
    let it = evals_of(&book, ITALIAN);
    assert_eq!(it.as_array().unwrap().len(), 1, "{it}");
    assert_eq!(it[0]["depth"], 34);
    assert_eq!(it[0]["pvs"][0]["moves"], "e1g1 g8f6 d2d3", "book notation");
    assert_eq!(it[0]["pvs"][1]["mate"], -7);
    // Black to move: EPD's ce -30 for Black is +30 for White.
    let e4 = evals_of(&book, E4);
    assert_eq!(e4[0]["pvs"][0]["cp"], 30, "{e4}");
    let text = bookdb(["probe", "--fen", E4, "--book", s(&book)]).ok();
    assert!(
        text.contains("eval      depth 18") && text.contains("+0.30  c5 Nf3"),
        "{text}"
    );
}

#[test]
fn export_round_trips_and_python_chess_reads_the_epd() {
    let dir = tempfile::tempdir().unwrap();
    let book = dir.path().join("b.book");
    let epd = write_text(dir.path(), "a.epd", &epd_text());
    bookdb(["import-evals", "--quiet", "--book", s(&book), s(&epd)]).ok();
    let out = dir.path().join("out.epd");
    bookdb([
        "export",
        "--quiet",
        "--book",
        s(&book),
        "--format",
        "epd",
        "--out",
        s(&out),
    ])
    .ok();
    let text = std::fs::read_to_string(&out).unwrap();
    assert_eq!(text.lines().count(), 3, "{text}");
    assert!(
        text.contains(&format!("{E4} ce -30; acd 18; acn 500000; pv c5 Nf3;")),
        "{text}"
    );
    assert!(
        text.contains("ce 32762; acd 30; acn 2000; pv O-O Nf6 d3;"),
        "{text}"
    );
    // Imported again into another book: the same evaluations.
    let again = dir.path().join("c.book");
    bookdb(["import-evals", "--quiet", "--book", s(&again), s(&out)]).ok();
    assert_eq!(dump(&again), dump(&book));
    // lichess's shape round-trips every result and line.
    let jl = write_text(dir.path(), "b.jsonl", &lichess_text());
    let lb = dir.path().join("l.book");
    bookdb(["import-evals", "--quiet", "--book", s(&lb), s(&jl)]).ok();
    let lout = dir.path().join("out.jsonl");
    bookdb([
        "export",
        "--quiet",
        "--book",
        s(&lb),
        "--format",
        "evals",
        "--out",
        s(&lout),
    ])
    .ok();
    let exported = std::fs::read_to_string(&lout).unwrap();
    assert!(
        exported.contains("\"line\":\"e1h1 g8f6 d2d3\""),
        "{exported}"
    );
    let lb2 = dir.path().join("l2.book");
    bookdb(["import-evals", "--quiet", "--book", s(&lb2), s(&lout)]).ok();
    assert_eq!(dump(&lb2), dump(&lb));

    let Some(py) = python_chess() else { return };
    let script = r#"
import sys, chess
for line in open(sys.argv[1]):
    board, ops = chess.Board.from_epd(line)
    pv = ops["pv"]
    b = board.copy()
    for m in pv:
        assert m in b.legal_moves, (line, m)
        b.push(m)
    print(board.epd(), ops["ce"], ops["acd"], ops["acn"], " ".join(m.uci() for m in pv))
"#;
    let o = std::process::Command::new(py)
        .args(["-c", script, s(&out)])
        .output()
        .unwrap();
    assert!(o.status.success(), "{}", String::from_utf8_lossy(&o.stderr));
    let read = String::from_utf8(o.stdout).unwrap();
    assert!(
        read.contains(&format!("{E4} -30 18 500000 c7c5 g1f3")),
        "{read}"
    );
    assert!(read.contains("32762 30 2000 e1g1 g8f6 d2d3"), "{read}");
}

/// merge and compact keep the selector's results of the union; so does the folding of many
/// small segments; evaluations of positions without games survive `compact --min-games`.
#[test]
fn merge_compact_and_folds_keep_the_selected_results() {
    let dir = tempfile::tempdir().unwrap();
    let (first, second) = sample_halves(dir.path());
    let (a, b) = (dir.path().join("a.book"), dir.path().join("b.book"));
    Bookdb::import(&[&first], &a).arg("--quiet").ok();
    Bookdb::import(&[&second], &b).arg("--quiet").ok();
    let line = |depth: u32, knodes: u32, lines: &str| {
        format!(
            "{{\"fen\":\"{START}\",\"evals\":[{{\"knodes\":{knodes},\"depth\":{depth},\"pvs\":[{lines}]}}]}}\n"
        )
    };
    let one = "{\"cp\":20,\"line\":\"e2e4\"}";
    let two = "{\"cp\":20,\"line\":\"e2e4\"},{\"cp\":10,\"line\":\"d2d4\"}";
    // a: 30/1 line and 20/2 lines; b: 25/2 lines (beats a's 20/2) and 22/1.
    import_evals_text(
        &a,
        dir.path(),
        "a.jsonl",
        &(line(30, 1, one) + &line(20, 5, two)),
    );
    import_evals_text(
        &b,
        dir.path(),
        "b.jsonl",
        &(line(25, 1, two) + &line(22, 9, one)),
    );
    let (ab, ba) = (dir.path().join("ab.book"), dir.path().join("ba.book"));
    bookdb(["merge", "--quiet", s(&a), s(&b), "--out", s(&ab)]).ok();
    bookdb(["merge", "--quiet", s(&b), s(&a), "--out", s(&ba)]).ok();
    let want = serde_json::json!([[30, 1], [25, 2]]);
    let shape = |book: &Path| {
        let ev = evals_of(book, START);
        serde_json::Value::Array(
            ev.as_array()
                .unwrap()
                .iter()
                .map(|r| serde_json::json!([r["depth"], r["pvs"].as_array().unwrap().len()]))
                .collect(),
        )
    };
    assert_eq!(shape(&ab), want);
    assert_eq!(dump(&ab), dump(&ba), "merge is commutative");
    verify(&ab);
    // A position without games keeps its evaluations through compact --min-games.
    let lone = "8/8/8/4k3/8/8/8/4K2R w K -";
    import_evals_text(
        &ab,
        dir.path(),
        "l.epd",
        &format!("{lone} ce 900; acd 9; pv O-O;\n"),
    );
    bookdb([
        "compact",
        "--quiet",
        "--min-games",
        "1000",
        "--book",
        s(&ab),
    ])
    .ok();
    assert_eq!(shape(&ab), want);
    assert_eq!(evals_of(&ab, lone)[0]["pvs"][0]["moves"], "e1g1");
    verify(&ab);
    // Ten small publications fold (at most 8 segments) without losing one result.
    for i in 0..10u32 {
        let f = write_text(
            dir.path(),
            &format!("f{i}.jsonl"),
            &line(10 + i, 1, "{\"cp\":1,\"line\":\"g8f6\"}").replace(START, E4),
        );
        bookdb(["import-evals", "--quiet", "--book", s(&a), s(&f)]).ok();
    }
    let st = stats(&a);
    assert!(st["segments"].as_u64().unwrap_or(0) <= 8, "{st}");
    assert_eq!(evals_of(&a, E4)[0]["depth"], 19);
    verify(&a);
    let d = dump(&a);
    assert!(
        d.lines()
            .any(|l| l.contains(E4) && l.contains("\"depth\":19")),
        "dump lists it"
    );
}

/// `/api/cloud-eval` answers as lichess does: the shape, lila's castling notation, the choice
/// by `multiPv`, 404 with lichess's message on a miss; for a position however it was reached
/// (another move order, full FEN with move counters).
#[test]
fn cloud_eval_answers_as_lichess() {
    let dir = tempfile::tempdir().unwrap();
    let book = dir.path().join("b.book");
    Bookdb::import(&[&sample_pgn()], &book).arg("--quiet").ok();
    import_evals_text(&book, dir.path(), "b.jsonl", &lichess_text());
    // 1.d4 Nf6 2.c4 e6 imported; asked for after 1.c4 e6 2.d4 Nf6 (the same position).
    let qgd = "rnbqkb1r/pppp1ppp/4pn2/8/2PP4/8/PP2PPPP/RNBQKBNR w KQkq -";
    import_evals_text(
        &book,
        dir.path(),
        "q.epd",
        &format!("{qgd} ce 35; acd 25; acn 7000; pv Nc3 Bb4;\n"),
    );
    let srv = common::server::Server::start(&book, &[]);
    let get = |q: &str| srv.get(&format!("/api/cloud-eval?{q}"));
    let r = get(&format!(
        "fen={}",
        common::server::enc(&format!("{ITALIAN} 4 4"))
    ));
    assert_eq!(r.status, 200, "{}", r.body);
    assert_eq!(
        r.json(),
        serde_json::json!({"fen": format!("{ITALIAN} 4 4"), "knodes": 9000, "depth": 34,
            "pvs": [{"moves": "e1h1 g8f6 d2d3", "cp": 41}]})
    );
    let two = get(&format!("fen={}&multiPv=2", common::server::enc(ITALIAN))).json();
    assert_eq!(
        two["pvs"][1],
        serde_json::json!({"moves": "c4f7 e8f7", "mate": -7})
    );
    // Asking for more lines than any result has: the one with the most lines.
    let five = get(&format!("fen={}&multiPv=5", common::server::enc(ITALIAN))).json();
    assert_eq!(five["pvs"].as_array().unwrap().len(), 2);
    let line = ["c2c4", "e7e6", "d2d4", "g8f6"];
    let p: serde_json::Value = srv.lichess(None, &line);
    let fen = p["fen"].as_str().unwrap().to_string();
    let t = get(&format!("fen={}", common::server::enc(&fen))).json();
    assert_eq!(t["depth"], 25, "{t}");
    assert_eq!(t["pvs"][0]["moves"], "b1c3 f8b4");
    assert_eq!(t["pvs"][0]["cp"], 35);
    let miss = get(&format!("fen={}", common::server::enc(E4)));
    assert_eq!(miss.status, 404);
    assert_eq!(
        miss.json(),
        serde_json::json!({"error": "No cloud evaluation available for that position"})
    );
    assert_eq!(get("fen=nonsense").status, 400);
    assert_eq!(get("").status, 400);
    assert_eq!(
        get(&format!("fen={}&multiPv=9", common::server::enc(START))).status,
        400
    );
}

/// `export --format polyglot --weights eval`: each move weighted by the evaluation of the
/// position it leads to, from the mover's point of view (docs/CONTRACT.md §10's rule); moves
/// whose resulting position has none are left out.
#[test]
fn polyglot_weights_follow_the_evaluations() {
    let dir = tempfile::tempdir().unwrap();
    let book = dir.path().join("b.book");
    Bookdb::import(&[&sample_pgn()], &book).arg("--quiet").ok();
    let d4 = "rnbqkbnr/pppppppp/8/8/3P4/8/PPP1PPPP/RNBQKBNR b KQkq -";
    // After 1.e4 Black to move: ce -50 is +50 for White; after 1.d4, ce 20 is -20 for White.
    let epd = format!("{E4} ce -50; acd 20; pv c5;\n{d4} ce 20; acd 20; pv Nf6;\n");
    import_evals_text(&book, dir.path(), "w.epd", &epd);
    let bin = dir.path().join("w.bin");
    let r: serde_json::Value = bookdb([
        "export",
        "--json",
        "--book",
        s(&book),
        "--format",
        "polyglot",
        "--weights",
        "eval",
        "--out",
        s(&bin),
    ])
    .json();
    assert!(r["dropped"]["no_eval"].as_u64().unwrap() > 0, "{r}");
    let bytes = std::fs::read(&bin).unwrap();
    let entries: Vec<(u64, u16, u16)> = bytes
        .chunks(16)
        .map(|c| {
            (
                u64::from_be_bytes(c[..8].try_into().unwrap()),
                u16::from_be_bytes([c[8], c[9]]),
                u16::from_be_bytes([c[10], c[11]]),
            )
        })
        .collect();
    let weight =
        |cp: f64| ((1.0 / (1.0 + 10f64.powf(-cp / 400.0))).powi(4) * 10000.0).round() as u16;
    // Polyglot move codes: e2e4 = to e4 (28) | from e2 (12) << 6; d2d4 = 27 | 11 << 6.
    assert_eq!(
        entries,
        vec![
            (0x463b_9618_1691_fc9c, 28 | (12 << 6), weight(50.0)),
            (0x463b_9618_1691_fc9c, 27 | (11 << 6), weight(-20.0)),
        ]
    );
}

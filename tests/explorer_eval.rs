//! The explorer page's engine evaluation (`src/server/page/eval.js`) in a real browser (Debian's
//! headless Chromium through chromedriver, as `tests/explorer_page.rs`): on a book of the sample
//! with evaluations imported (`import-evals`, lichess's export), the panel beside the moves shows
//! what `/api/cloud-eval` answers — the score from White's point of view (`+0.18`, `#-7`), the
//! depth and node count, every line in SAN with move numbers (castling read from lichess's
//! `e1h1`, a line starting with Black's move as `1... c5`) — and no panel for a position nobody
//! analysed, also one the book has no games of. A click on a move of a line plays the line up
//! to it (the URL and the moves table follow); evaluations imported while the page is open
//! appear when the page notices the book changed. A screenshot of the panel goes to a temporary
//! directory (with `BOOKDB_UPDATE_SCREENSHOTS=1` to `docs/img/explorer-eval.png`).
//!
//! Without `/usr/bin/chromium` and `/usr/bin/chromedriver` the test prints SKIP, or fails when
//! `BOOKDB_REQUIRE_PEERS=1`.

mod common;

use common::browser::*;
use common::server::Server;
use common::*;
use serde_json::{Value, json};

/// 1.e4 e5 2.Nf3 Nc6 3.Bc4 Bc5 (White to move, may castle).
const ITALIAN_PLAY: &str = "e2e4,e7e5,g1f3,b8c6,f1c4,f8c5";

use common::fens::{E4, ITALIAN, START};

/// What the panel shows: hidden or not, the score, its side, the info line, and per line its
/// score and its text (move numbers and SAN).
fn panel(b: &Browser) -> Value {
    b.js(
        r#"
        const box = document.getElementById('eval');
        const score = document.getElementById('eval-score');
        return {
            hidden: box.hidden,
            score: score.textContent,
            side: score.className,
            info: document.getElementById('eval-info').textContent,
            lines: Array.from(document.querySelectorAll('#eval-lines li')).map(li => [
                li.querySelector('.pv-score').textContent,
                Array.from(li.childNodes).slice(1).map(n => n.textContent).join('').trim()
                    .replace(/\s+/g, ' ')]),
            search: location.search,
            rows: Array.from(document.querySelectorAll('#moves tbody tr')).map(tr => tr.dataset.uci),
            status: document.getElementById('status').textContent,
        };
        "#,
        json!([]),
    )
}

/// Waits until `ok` holds for the panel; panics with the last one seen.
fn expect_panel(b: &Browser, what: &str, ok: impl Fn(&Value) -> bool) -> Value {
    let mut last = Value::Null;
    let found = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        wait_for(what, || {
            let v = panel(b);
            let done = ok(&v);
            last = v.clone();
            done.then_some(v)
        })
    }));
    match found {
        Ok(v) => v,
        Err(_) => panic!("waiting for {what}, the page shows\n{last:#}"),
    }
}

fn uci_rows(a: &Value) -> Vec<Value> {
    a["moves"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| m["uci"].clone())
        .collect()
}

#[test]
fn the_explorer_shows_the_engine_evaluation_beside_the_moves() {
    if !have_browser() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let book = dir.path().join("eval.book");
    Bookdb::import(&[&sample_pgn()], &book).arg("--quiet").ok();
    let evals = format!(
        "{{\"fen\":\"{START}\",\"evals\":[{{\"knodes\":12345,\"depth\":40,\"pvs\":[{{\"cp\":18,\"line\":\"e2e4 e7e5 g1f3\"}},{{\"cp\":-5,\"line\":\"g1f3 d7d5\"}}]}}]}}\n\
         {{\"fen\":\"{ITALIAN}\",\"evals\":[{{\"knodes\":9000,\"depth\":34,\"pvs\":[{{\"cp\":41,\"line\":\"e1h1 g8f6 d2d3\"}},{{\"mate\":-7,\"line\":\"c4f7 e8f7\"}}]}}]}}\n"
    );
    import_evals_text(&book, dir.path(), "a.jsonl", &evals);
    let srv = Server::start(&book, &[]);
    let base = format!("http://{}", srv.addr);
    let b = Browser::start();

    // The start position: the best line's score, depth, knodes and both lines in SAN.
    b.goto(&format!("{base}/"));
    let v = expect_panel(&b, "the start position's evaluation", |v| {
        v["hidden"] == json!(false) && v["lines"].as_array().is_some_and(|l| l.len() == 2)
    });
    assert_eq!(v["score"], "+0.18", "{v:#}");
    assert!(v["side"].as_str().unwrap().contains("white"), "{v:#}");
    assert_eq!(v["info"], "depth 40 · 12,345 knodes · 2 lines", "{v:#}");
    assert_eq!(
        v["lines"],
        json!([["+0.18", "1. e4 e5 2. Nf3"], ["-0.05", "1. Nf3 d5"]]),
        "{v:#}"
    );
    // The moves table is the book's all the same.
    assert_eq!(
        v["rows"].as_array().unwrap(),
        &uci_rows(&srv.lichess(None, &[] as &[&str])),
        "{v:#}"
    );

    // A click on the best line's third move plays the line up to it.
    b.click("#eval-lines li:first-child a[data-ply='2']");
    expect_panel(&b, "the line played to 2.Nf3", |v| {
        v["search"] == json!("?play=e2e4,e7e5,g1f3")
    });
    let after = srv.lichess(None, &["e2e4", "e7e5", "g1f3"]);
    let v = expect_panel(&b, "the moves after 2.Nf3", |v| {
        v["rows"].as_array() == Some(&uci_rows(&after))
    });
    // Nobody analysed it: no panel.
    assert_eq!(v["hidden"], json!(true), "{v:#}");

    // A position the book has no game of may still be evaluated: castling comes as lichess's
    // e1h1 and reads O-O; a mate for Black is #-7 on Black's side.
    b.goto(&format!("{base}/?play={ITALIAN_PLAY}"));
    let v = expect_panel(&b, "the Italian's evaluation", |v| {
        v["hidden"] == json!(false) && v["score"] == json!("+0.41")
    });
    assert_eq!(
        v["lines"],
        json!([["+0.41", "4. O-O Nf6 5. d3"], ["#-7", "4. Bxf7+ Kxf7"]]),
        "{v:#}"
    );
    let mate_side = b.js(
        "return document.querySelector('#eval-lines li:nth-child(2) .pv-score').title;",
        json!([]),
    );
    assert_eq!(mate_side, "Black mates in 7", "{mate_side}");
    let shots = std::env::temp_dir().join("bookdb-explorer-screenshots");
    std::fs::create_dir_all(&shots).unwrap();
    b.window_size(1280, 900);
    save_screenshot(&b.screenshot(), &shots, "explorer-eval.png", true);
    // Playing O-O from the line: the page's own notation in the URL, the position after it.
    b.click("#eval-lines li:first-child a[data-ply='0']");
    expect_panel(&b, "O-O played from the line", |v| {
        v["search"] == json!(format!("?play={ITALIAN_PLAY},e1g1")) && v["hidden"] == json!(true)
    });

    // After 1.e4: nothing yet. Evaluations imported while the page is open appear (Black to
    // move: the line is numbered 1... c5 2. Nf3).
    b.goto(&format!("{base}/?play=e2e4"));
    let v = expect_panel(&b, "the moves after 1.e4", |v| {
        v["rows"].as_array() == Some(&uci_rows(&srv.lichess(None, &["e2e4"])))
    });
    assert_eq!(v["hidden"], json!(true), "{v:#}");
    import_evals_text(
        &book,
        dir.path(),
        "b.epd",
        &format!("{E4} ce 30; acd 22; acn 800000; pv c5 Nf3;\n"),
    );
    let v = expect_panel(&b, "1.e4's evaluation after the import", |v| {
        v["hidden"] == json!(false)
    });
    // EPD's `ce` is the side to move's view (Black's +0.30): White's -0.30.
    assert_eq!(v["score"], "-0.30", "{v:#}");
    assert!(v["side"].as_str().unwrap().contains("black"), "{v:#}");
    assert_eq!(v["info"], "depth 22 · 800 knodes", "{v:#}");
    assert_eq!(v["lines"], json!([["-0.30", "1... c5 2. Nf3"]]), "{v:#}");
}

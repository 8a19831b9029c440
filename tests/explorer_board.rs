//! The explorer page played as a chess player plays it, in headless Chromium (the WebDriver
//! client of `tests/common/browser.rs`): pieces moved on the board by real pointer input
//! (click a piece then a square, and drags with a mouse and with touch), a game that castles
//! both ways (the king two squares, and the king onto its rook), on the board both ways up,
//! leaves the book and goes on, promotions chosen in the page's dialog (by pointer and by key),
//! and a move made with the keyboard alone (arrow keys and Enter on the focused board). At every step the
//! page is checked against the server: the moves table equals `/lichess`, the page's FEN is the
//! server's, and each move's SAN is the one the server gives where the book has the move. Then
//! the SAN breadcrumbs of a linked line, the opening search by name and by ECO code with the
//! keyboard, PGN and FEN pasted or typed, and "Copy PGN" (what it copies read back). A second
//! test opens an Othello book: discs, legal squares, a line played on the board and in the table
//! against `/v1/position`, and a pass.
//!
//! Screenshots go to a temporary directory, and with `BOOKDB_UPDATE_SCREENSHOTS=1` to
//! `docs/img/`. Without Chromium the tests print SKIP (fail when `BOOKDB_REQUIRE_PEERS=1`); the
//! Othello test also skips, printing why, without the WTHOR data.

mod common;

use std::time::Instant;

use common::browser::*;
use common::server::{Server, enc};
use common::{Bookdb, copy_in, data_file, sample_pgn};
use serde_json::{Value, json};

// ---- pointer input ------------------------------------------------------------------------------

/// The centre of a board square in the viewport.
fn square_xy(b: &Browser, sq: &str) -> (i64, i64) {
    let v = b.js(
        "const r = document.querySelector(`#board rect[data-square=\"${arguments[0]}\"]`).getBoundingClientRect();
         return [Math.round(r.left + r.width / 2), Math.round(r.top + r.height / 2)];",
        json!([sq]),
    );
    (v[0].as_i64().unwrap(), v[1].as_i64().unwrap())
}

fn pointer(b: &Browser, kind: &str, actions: Vec<Value>) {
    b.call(
        "POST",
        "/actions",
        Some(
            json!({"actions": [{"type": "pointer", "id": format!("p-{kind}"),
            "parameters": {"pointerType": kind}, "actions": actions}]}),
        ),
    );
    b.call("DELETE", "/actions", None);
}

fn to(x: i64, y: i64, ms: u64) -> Value {
    json!({"type": "pointerMove", "duration": ms, "origin": "viewport", "x": x, "y": y})
}

/// Clicks a square (press and release without moving).
fn click_square(b: &Browser, sq: &str) {
    let (x, y) = square_xy(b, sq);
    pointer(
        b,
        "mouse",
        vec![
            to(x, y, 0),
            json!({"type": "pointerDown", "button": 0}),
            json!({"type": "pointerUp", "button": 0}),
        ],
    );
}

/// Drags from one square to another with a mouse or a finger (`kind`: "mouse", "touch").
fn drag(b: &Browser, from: &str, dest: &str, kind: &str) {
    let (x0, y0) = square_xy(b, from);
    let (x1, y1) = square_xy(b, dest);
    pointer(
        b,
        kind,
        vec![
            to(x0, y0, 0),
            json!({"type": "pointerDown", "button": 0}),
            to((x0 + x1) / 2, (y0 + y1) / 2 + 3, 60),
            to(x1, y1, 60),
            json!({"type": "pointerUp", "button": 0}),
        ],
    );
}

// ---- what the page shows ------------------------------------------------------------------------

fn shown(b: &Browser) -> Value {
    b.js(
        r#"
        const q = new URLSearchParams(location.search);
        const err = document.getElementById('error');
        return {
            rows: Array.from(document.querySelectorAll('#moves tbody tr')).map(tr => [
                tr.dataset.uci || tr.dataset.move, tr.querySelector('.san').textContent,
                Number(tr.querySelector('.count').textContent.replace(/,/g, ''))]),
            line: Array.from(document.querySelectorAll('#line a[data-idx]:not(.start)')).map(a => a.textContent),
            current: Number((document.querySelector('#line a.current') || {dataset: {idx: -1}}).dataset.idx),
            lineText: Array.from(document.getElementById('line').children).map(c => c.textContent).join(' '),
            play: q.get('play'), fen: q.get('fen'), board: q.get('board'),
            box: document.getElementById('fen').value,
            status: document.getElementById('status').textContent,
            opening: document.getElementById('opening').textContent,
            error: err.hidden ? null : err.textContent,
            targets: Array.from(document.querySelectorAll('#board [data-target]')).map(t => t.dataset.target).sort(),
            promotion: !!document.querySelector('#board .promotion'),
            pieces: Array.from(document.querySelectorAll('#board [data-at]'))
                .map(p => p.dataset.at + (p.dataset.piece || p.dataset.disc)).sort(),
        };
        "#,
        json!([]),
    )
}

/// Polls the page until `ok` holds for what it shows; panics with the last view.
fn wait_view(b: &Browser, what: &str, ok: impl Fn(&Value) -> bool) -> Value {
    let start = Instant::now();
    loop {
        let v = shown(b);
        if ok(&v) {
            return v;
        }
        assert!(
            start.elapsed() < WAIT,
            "timed out waiting for {what}: the page shows {v:#}"
        );
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
}

fn rows(a: &Value, key: &str, label: &str) -> Value {
    Value::Array(
        a["moves"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| {
                let games: u64 = ["white", "draws", "black", "unknown"]
                    .iter()
                    .map(|k| m[*k].as_u64().unwrap_or(0))
                    .sum();
                json!([m[key], m[label], games])
            })
            .collect(),
    )
}

/// Waits until the page shows the position after `play` from `fen` with breadcrumbs `sans`,
/// and checks it against the server: the table is `/lichess`'s, the page's FEN is the server's,
/// and where the server lists a move of the line, its SAN is the page's.
fn expect_play(
    b: &Browser,
    srv: &Server,
    fen: Option<&str>,
    play: &[&str],
    sans: &[&str],
) -> Value {
    let a = srv.lichess(fen, play);
    let want_rows = rows(&a, "uci", "san");
    let want_play = if play.is_empty() {
        Value::Null
    } else {
        json!(play.join(","))
    };
    // The FEN box is filled after the table: wait for it too (it is compared below).
    let v = wait_view(b, &format!("the position after {play:?}"), |v| {
        v["play"] == want_play
            && v["line"] == json!(sans)
            && v["rows"] == want_rows
            && v["error"].is_null()
            && v["box"].as_str().is_some_and(|s| !s.is_empty())
    });
    let box_fen: Vec<&str> = v["box"].as_str().unwrap().split(' ').take(4).collect();
    assert_eq!(
        box_fen.join(" "),
        a["fen"].as_str().unwrap(),
        "the page's FEN and the server's"
    );
    for i in 0..play.len() {
        let before = srv.lichess(fen, &play[..i]);
        if let Some(m) = before["moves"]
            .as_array()
            .unwrap()
            .iter()
            .find(|m| m["uci"] == json!(play[i]))
        {
            assert_eq!(
                m["san"],
                json!(sans[i]),
                "the SAN of move {} ({})",
                i + 1,
                play[i]
            );
        }
    }
    if want_rows.as_array().unwrap().is_empty() {
        assert!(
            v["status"].as_str().unwrap().contains("not in the book"),
            "{v}"
        );
    }
    a
}

fn shot(b: &Browser, name: &str) {
    let dir = std::env::temp_dir().join("bookdb-explorer-screenshots");
    std::fs::create_dir_all(&dir).unwrap();
    save_screenshot(&b.screenshot(), &dir, name, true);
}

/// The script put in every page: "Copy PGN" writes to `window.__copied` instead of the system
/// clipboard (headless Chromium has none to read back).
const CLIPBOARD: &str = r#"
Object.defineProperty(navigator, 'clipboard', { configurable: true, value: {
    writeText: (t) => { window.__copied = t; return Promise.resolve(); },
    readText: () => Promise.resolve(window.__copied || ''),
}});
"#;

/// Dispatches a paste of `text` on the page (as Ctrl+V outside a text field does).
fn paste(b: &Browser, text: &str) {
    b.js(
        "document.activeElement && document.activeElement.blur();
         const dt = new DataTransfer(); dt.setData('text/plain', arguments[0]);
         document.body.dispatchEvent(new ClipboardEvent('paste', { clipboardData: dt, bubbles: true }));",
        json!([text]),
    );
}

#[test]
fn playing_on_the_board_in_a_real_browser() {
    if !have_browser() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let book = tmp.path().join("board.book");
    Bookdb::import(&[sample_pgn()], &book).arg("--quiet").ok();
    let srv = Server::start(&book, &[]);
    let base = format!("http://{}", srv.addr);
    let b = Browser::start();
    b.before_each_page(CLIPBOARD);

    // A linked line reads in SAN, book moves or not.
    b.goto(&format!("{base}/?play=a2a3,h7h6,a3a4"));
    let v = expect_play(
        &b,
        &srv,
        None,
        &["a2a3", "h7h6", "a3a4"],
        &["a3", "h6", "a4"],
    );
    assert_eq!(
        v["fen"],
        json!("rnbqkbnr/ppppppp1/7p/8/P7/8/1PPPPPPP/RNBQKBNR b KQkq -")
    );
    assert_eq!(shown(&b)["lineText"], json!("Start 1. a3 h6 2. a4"));

    // A game on the board: click-click, drags by mouse and by touch, castling by the king's
    // two-square move and onto the rook, on the board both ways up; it leaves the book.
    b.goto(&format!("{base}/"));
    expect_play(&b, &srv, None, &[], &[]);
    click_square(&b, "e2");
    let v = wait_view(&b, "e2's targets", |v| v["targets"] == json!(["e3", "e4"]));
    assert!(!v["promotion"].as_bool().unwrap());
    shot(&b, "explorer-move-desktop.png");
    click_square(&b, "e4");
    let mut play = vec!["e2e4"];
    let mut sans = vec!["e4"];
    expect_play(&b, &srv, None, &play, &sans);
    // An illegal drop changes nothing; the piece goes back.
    drag(&b, "e7", "e4", "touch");
    std::thread::sleep(std::time::Duration::from_millis(300));
    assert_eq!(shown(&b)["play"], json!("e2e4"));
    let steps: [(&str, &str, &str, &str, &str); 9] = [
        // (from, to, input, UCI, SAN)
        ("e7", "e5", "touch", "e7e5", "e5"),
        ("g1", "f3", "mouse", "g1f3", "Nf3"),
        ("b8", "c6", "click", "b8c6", "Nc6"),
        ("f1", "c4", "touch", "f1c4", "Bc4"),
        ("f8", "c5", "mouse", "f8c5", "Bc5"),
        // White castles by putting the king onto its rook.
        ("e1", "h1", "click", "e1g1", "O-O"),
        ("g8", "f6", "click", "g8f6", "Nf6"),
        ("d2", "d3", "mouse", "d2d3", "d3"),
        // Black, on the flipped board, castles by the king's two squares.
        ("e8", "g8", "flip-touch", "e8g8", "O-O"),
    ];
    for (from, dest, how, uci, san) in steps {
        match how {
            "click" => {
                click_square(&b, from);
                click_square(&b, dest);
            }
            "flip-touch" => {
                b.click("#flip");
                wait_for("the flipped board", || {
                    (b.js(
                        "return document.querySelector('#board svg').dataset.orientation",
                        json!([]),
                    ) == json!("black"))
                    .then_some(())
                });
                drag(&b, from, dest, "touch");
            }
            kind => drag(&b, from, dest, kind),
        }
        play.push(uci);
        sans.push(san);
        expect_play(&b, &srv, None, &play, &sans);
    }
    // Off the book's paths, and on.
    for (from, dest, uci, san) in [
        ("g1", "h1", "g1h1", "Kh1"),
        ("g8", "h8", "g8h8", "Kh8"),
        ("h1", "g1", "h1g1", "Kg1"),
    ] {
        drag(&b, from, dest, "mouse");
        play.push(uci);
        sans.push(san);
        expect_play(&b, &srv, None, &play, &sans);
    }
    let v = shown(&b);
    assert!(
        v["rows"].as_array().unwrap().is_empty(),
        "still in the book: {v}"
    );
    assert!(v["status"].as_str().unwrap().contains("not in the book"));
    shot(&b, "explorer-out-of-book-desktop.png");
    b.click("#flip");

    // Copy PGN: the line up to the position shown; pasted back, it is the same line.
    b.click("#copy-pgn");
    let copied = wait_for("the copied PGN", || {
        b.js("return window.__copied || null", json!([]))
            .as_str()
            .map(str::to_string)
    });
    assert!(
        copied.contains("1. e4 e5 2. Nf3 Nc6 3. Bc4 Bc5 4. O-O Nf6 5. d3 O-O 6. Kh1 Kh8 7. Kg1 *"),
        "{copied}"
    );
    assert!(copied.starts_with("[Event \"?\"]"), "{copied}");
    b.goto(&format!("{base}/"));
    expect_play(&b, &srv, None, &[], &[]);
    paste(&b, &copied);
    expect_play(&b, &srv, None, &play, &sans);

    // Promotion: the dialog offers four pieces; a knight is chosen. From a FEN outside the book.
    let fen = "4k3/1P6/8/8/8/8/6p1/4K2R w K - 0 1";
    b.type_into("#fen", fen);
    b.keys(&[ENTER]);
    expect_play(&b, &srv, Some(fen), &[], &[]);
    click_square(&b, "b7");
    click_square(&b, "b8");
    let v = wait_view(&b, "the promotion dialog", |v| {
        v["promotion"] == json!(true)
    });
    assert!(v["play"].is_null(), "moved before the choice: {v}");
    let pieces = b.js(
        "return Array.from(document.querySelectorAll('.promotion button')).map(x => x.dataset.promotion)",
        json!([]),
    );
    assert_eq!(pieces, json!(["q", "n", "r", "b"]));
    shot(&b, "explorer-promotion-desktop.png");
    b.click(".promotion button[data-promotion=n]");
    expect_play(&b, &srv, Some(fen), &["b7b8n"], &["b8=N"]);
    // Black, board flipped, takes on h1 promoting to a queen by a drag and a key.
    b.click("#flip");
    drag(&b, "g2", "h1", "touch");
    wait_view(&b, "the promotion dialog", |v| {
        v["promotion"] == json!(true)
    });
    b.keys(&[ENTER]); // the dialog has the focus on its first piece, the queen
    expect_play(
        &b,
        &srv,
        Some(fen),
        &["b7b8n", "g2h1q"],
        &["b8=N", "gxh1=Q+"],
    );
    b.click("#flip");

    // The opening search: by name, keyboard only.
    b.goto(&format!("{base}/"));
    expect_play(&b, &srv, None, &[], &[]);
    b.keys(&["/"]);
    b.keys(&["N", "a", "j", "d", "o", "r", "f"]);
    let first = wait_for("the search results", || {
        let v = b.js(
            "const o = document.querySelector('#opening-results [role=option][aria-selected=true]');
             return o ? o.textContent : null;",
            json!([]),
        );
        v.as_str().map(str::to_string)
    });
    assert!(
        first.starts_with("B90Sicilian Defense: Najdorf Variation"),
        "{first}"
    );
    shot(&b, "explorer-search-desktop.png");
    b.keys(&[ENTER]);
    let najdorf = [
        "e2e4", "c7c5", "g1f3", "d7d6", "d2d4", "c5d4", "f3d4", "g8f6", "b1c3", "a7a6",
    ];
    let najdorf_san = [
        "e4", "c5", "Nf3", "d6", "d4", "cxd4", "Nxd4", "Nf6", "Nc3", "a6",
    ];
    expect_play(&b, &srv, None, &najdorf, &najdorf_san);
    let v = shown(&b);
    assert!(v["opening"].as_str().unwrap().starts_with("B90"), "{v}");
    // Keyboard only on the board: the first arrow shows the cursor on the last move's square
    // (a6); → × 5 and ↓ × 5 reach f1, Enter picks the bishop up, ↑ ← reach e2, Enter puts it
    // down.
    b.js("document.getElementById('board').focus()", json!([]));
    let mut keys = vec![RIGHT; 6];
    keys.extend([DOWN; 5]);
    keys.extend([ENTER, UP, LEFT]);
    b.keys(&keys);
    let v = wait_view(&b, "the bishop's squares", |v| {
        v["targets"] == json!(["a6", "b5", "c4", "d3", "e2"])
    });
    assert_eq!(
        v["play"],
        json!(najdorf.join(",")),
        "the keys stepped the line"
    );
    b.keys(&[ENTER]);
    let mut be2 = najdorf.to_vec();
    be2.push("f1e2");
    let mut be2_san = najdorf_san.to_vec();
    be2_san.push("Be2");
    expect_play(&b, &srv, None, &be2, &be2_san);

    // The route behind the search.
    let r = srv.get("/v1/openings?q=najdorf&limit=1").json();
    assert_eq!(r["openings"].as_array().unwrap().len(), 1);
    assert!(r["total"].as_u64().unwrap() > 10, "{r}");
    assert_eq!(r["openings"][0]["eco"], json!("B90"));
    assert_eq!(r["openings"][0]["uci"], json!(najdorf));
    assert_eq!(srv.get("/v1/openings").status, 400);
    assert_eq!(srv.get("/v1/openings?q=x&limit=0").status, 400);
    // By ECO code: ↓ picks the second line.
    let api = srv.get("/v1/openings?q=C42&limit=12").json();
    let second: Vec<&str> = api["openings"][1]["uci"]
        .as_array()
        .unwrap()
        .iter()
        .map(|u| u.as_str().unwrap())
        .collect();
    b.click("#opening-search");
    b.keys(&["C", "4", "2"]);
    wait_for("the C42 results", || {
        let n = b.js(
            "return document.querySelectorAll('#opening-results [role=option]').length",
            json!([]),
        );
        (n.as_u64() > Some(1)).then_some(())
    });
    b.keys(&[DOWN, ENTER]);
    let v = wait_view(&b, "the second C42 line", |v| {
        v["play"] == json!(second.join(","))
    });
    assert!(v["opening"].as_str().unwrap().starts_with("C42"), "{v}");

    // A PGN typed into the box, with tags, comments and a variation: its mainline.
    b.type_into(
        "#fen",
        "[Event \"t\"] 1. d4 {main} d5 (1... Nf6 2. c4) 2. c4 e6 3. Nc3 $1 *",
    );
    b.keys(&[ENTER]);
    expect_play(
        &b,
        &srv,
        None,
        &["d2d4", "d7d5", "c2c4", "e7e6", "b1c3"],
        &["d4", "d5", "c4", "e6", "Nc3"],
    );
    // A FEN pasted sets the position.
    let fen2 = "r1bqkbnr/pppp1ppp/2n5/4p3/4P3/5N2/PPPP1PPP/RNBQKB1R w KQkq - 2 3";
    paste(&b, fen2);
    let v = wait_view(&b, "the pasted FEN", |v| v["fen"] == json!(fen2));
    assert_eq!(v["box"], json!(fen2));
    expect_play(&b, &srv, Some(fen2), &[], &[]);

    // Phone width: the board and the search fit.
    b.window_size(390, 844);
    b.goto(&format!("{base}/?play=e2e4,c7c5"));
    expect_play(&b, &srv, None, &["e2e4", "c7c5"], &["e4", "c5"]);
    click_square(&b, "g1");
    wait_view(&b, "g1's targets", |v| {
        v["targets"] == json!(["e2", "f3", "h3"])
    });
    let scroll = b.js(
        "return document.documentElement.scrollWidth - document.documentElement.clientWidth",
        json!([]),
    );
    assert_eq!(scroll, json!(0), "horizontal scroll at phone width");
    shot(&b, "explorer-move-phone.png");

    // The out-of-book, promotion and search states at a 375 px phone width.
    b.window_size(375, 812);
    b.goto(&format!("{base}/?play={}", play.join(",")));
    expect_play(&b, &srv, None, &play, &sans);
    assert_eq!(
        b.js(
            "return document.documentElement.scrollWidth - document.documentElement.clientWidth",
            json!([])
        ),
        json!(0),
        "horizontal scroll at 375 px"
    );
    // The board above is the desktop shot's; in view, the line and "not in the book".
    b.js(
        "document.getElementById('opening').scrollIntoView()",
        json!([]),
    );
    shot(&b, "explorer-out-of-book-phone.png");
    b.goto(&format!("{base}/?fen={}", enc(fen)));
    expect_play(&b, &srv, Some(fen), &[], &[]);
    click_square(&b, "b7");
    click_square(&b, "b8");
    wait_view(&b, "the promotion dialog", |v| {
        v["promotion"] == json!(true)
    });
    shot(&b, "explorer-promotion-phone.png");
    b.goto(&format!("{base}/"));
    expect_play(&b, &srv, None, &[], &[]);
    b.keys(&["/"]);
    b.keys(&["N", "a", "j", "d", "o", "r", "f"]);
    wait_for("the search results", || {
        b.js(
            "return document.querySelector('#opening-results [role=option][aria-selected=true]') ? true : null",
            json!([]),
        )
        .as_bool()
    });
    b.js(
        "document.getElementById('opening-search-box').scrollIntoView()",
        json!([]),
    );
    shot(&b, "explorer-search-phone.png");
}

/// WCAG 2 contrast ratios of the W/D/B bar's black segment against what touches it (the draw
/// and white segments, the bar's frame) and of the frame and the segment against the panel,
/// from the colours Chromium computes.
const CONTRAST: &str = r#"
const rgb = (c) => (c.match(/[0-9.]+/g) || []).slice(0, 3).map(Number);
const lum = (c) => {
    const [r, g, b] = rgb(c).map((v) => { v /= 255; return v <= 0.04045 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4; });
    return 0.2126 * r + 0.7152 * g + 0.0722 * b;
};
const ratio = (a, b) => { const [x, y] = [lum(a), lum(b)].sort((p, q) => q - p); return (x + 0.05) / (y + 0.05); };
const bar = document.querySelector('#moves .bar');
const bg = (sel) => getComputedStyle(bar.querySelector(sel)).backgroundColor;
const black = bg('.b');
const frame = getComputedStyle(bar).borderTopColor;
const panel = getComputedStyle(document.querySelector('.explorer-col')).backgroundColor;
return {
    black, panel, frame,
    draw: ratio(black, bg('.d')), white: ratio(black, bg('.w')), frame_ratio: ratio(black, frame),
    frame_panel: ratio(frame, panel), black_panel: ratio(black, panel),
    text: ratio(black, getComputedStyle(bar.querySelector('.b')).color),
    dark: matchMedia('(prefers-color-scheme: dark)').matches,
};
"#;

/// What has the focus, and its outline as computed.
fn focused(b: &Browser) -> Value {
    b.js(
        r#"
        const e = document.activeElement;
        if (!e || e === document.body) return null;
        const cs = getComputedStyle(e);
        return {
            key: e.id || (e.tagName + ':' + (e.dataset.uci || e.dataset.idx || e.dataset.speed || e.dataset.rating || e.dataset.mode || e.textContent.trim().slice(0, 20))),
            outline: cs.outlineStyle, width: parseFloat(cs.outlineWidth), color: cs.outlineColor,
            focusVisible: e.matches(':focus-visible'),
        };
        "#,
        json!([]),
    )
}

/// Tabs once round the page from nothing focused, checking that each control reached shows a
/// focus (`:focus-visible` with an outline of 2 px or more) and that every visible control is
/// reached; the controls reached, in order.
fn tab_round(b: &Browser) -> Vec<String> {
    b.js(
        "document.activeElement && document.activeElement.blur()",
        json!([]),
    );
    let mut reached: Vec<String> = Vec::new();
    for _ in 0..200 {
        b.keys(&[TAB]);
        let Some(f) = Some(focused(b)).filter(|f| !f.is_null()) else {
            continue;
        };
        let key = f["key"].as_str().unwrap().to_string();
        // Back at the first control: round. (A month field takes a Tab per part.)
        if reached.len() > 1 && reached[0] == key {
            break;
        }
        if reached.contains(&key) {
            continue;
        }
        assert_eq!(f["focusVisible"], json!(true), "{f}");
        assert!(
            f["outline"] != json!("none") && f["width"].as_f64().unwrap() >= 2.0,
            "no visible focus on {f}"
        );
        reached.push(key);
    }
    let controls = b.js(
        r#"
        return Array.from(document.querySelectorAll('a[href], button, input, summary, [tabindex]'))
            .filter(e => e.tabIndex >= 0 && !e.disabled && e.getClientRects().length > 0
                && getComputedStyle(e).visibility !== 'hidden')
            .map(e => e.id || (e.tagName + ':' + (e.dataset.uci || e.dataset.idx || e.dataset.speed || e.dataset.rating || e.dataset.mode || e.textContent.trim().slice(0, 20))));
        "#,
        json!([]),
    );
    let controls: Vec<String> = serde_json::from_value(controls).unwrap();
    eprintln!("Tab reached {} controls: {reached:?}", reached.len());
    assert!(controls.len() > 5, "{controls:?}");
    for c in &controls {
        assert!(reached.contains(c), "Tab never reached {c}: {reached:?}");
    }
    reached
}

#[test]
fn keyboard_focus_names_and_contrast_in_a_real_browser() {
    if !have_browser() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let book = tmp.path().join("a11y.book");
    Bookdb::import(&[sample_pgn()], &book).arg("--quiet").ok();
    let srv = Server::start(&book, &[]);
    let base = format!("http://{}", srv.addr);
    let b = Browser::start();
    b.goto(&format!("{base}/?play=e2e4"));
    expect_play(&b, &srv, None, &["e2e4"], &["e4"]);

    // Tab goes through every control of the page, each with a visible outline.
    let reached = tab_round(&b);
    for must in ["board", "flip", "fen", "copy-pgn", "opening-search"] {
        assert!(reached.iter().any(|r| r == must), "{must}: {reached:?}");
    }
    assert!(
        reached.iter().any(|r| r.starts_with("TR:")),
        "no table row: {reached:?}"
    );

    // Squares are read by their name and piece (Chromium's own accessibility name and role).
    for (sq, name) in [
        ("e4", "e4 white pawn"),
        ("g1", "g1 white knight"),
        ("e8", "e8 black king"),
        ("e5", "e5"),
    ] {
        let el = b.find(&format!("#board rect[data-square={sq}]"));
        let label = b.call("GET", &format!("/element/{el}/computedlabel"), None);
        let role = b.call("GET", &format!("/element/{el}/computedrole"), None);
        assert_eq!(label, json!(name), "{sq}");
        // ARIA's img role, which Chromium now names "image".
        assert!(
            role == json!("img") || role == json!("image"),
            "{sq}: {role}"
        );
    }
    // A move made with the keys is announced in the live region. Black to move: the first
    // arrow shows the cursor on e4 (the last move's square), → → ↑ × 4 reach g8, Enter picks
    // the knight up, ↓ ↓ ← reach f6, Enter puts it down.
    b.js("document.getElementById('board').focus()", json!([]));
    b.keys(&[RIGHT, RIGHT, RIGHT, UP, UP, UP, UP, ENTER]);
    let v = wait_view(&b, "the knight's squares", |v| {
        v["targets"] == json!(["f6", "h6"])
    });
    assert_eq!(v["play"], json!("e2e4"));
    let el = b.find("#board rect[data-square=f6]");
    assert_eq!(
        b.call("GET", &format!("/element/{el}/computedlabel"), None),
        json!("f6, a legal move")
    );
    b.keys(&[DOWN, DOWN, LEFT, ENTER]);
    expect_play(&b, &srv, None, &["e2e4", "g8f6"], &["e4", "Nf6"]);
    let said = wait_for("the announcement", || {
        let t = b.js(
            "const a = document.getElementById('announce'); return a.getAttribute('aria-live') === 'polite' ? a.textContent : null",
            json!([]),
        );
        t.as_str().filter(|t| !t.is_empty()).map(str::to_string)
    });
    assert_eq!(said, "played Nf6");
    // A move from the table too.
    b.js(
        "document.querySelector('#moves tbody tr').focus()",
        json!([]),
    );
    let san = b.js("return document.activeElement.dataset.san", json!([]));
    b.keys(&[ENTER]);
    wait_for("the table move's announcement", || {
        (b.js(
            "return document.getElementById('announce').textContent",
            json!([]),
        ) == json!(format!("played {}", san.as_str().unwrap())))
        .then_some(())
    });

    // The bar's black segment stands off its neighbours and the panel by 3:1 or more, in the
    // light and the dark scheme.
    b.goto(&format!("{base}/"));
    expect_play(&b, &srv, None, &[], &[]);
    let mut panels = Vec::new();
    for scheme in ["light", "dark"] {
        b.cdp(
            "Emulation.setEmulatedMedia",
            json!({"features": [{"name": "prefers-color-scheme", "value": scheme}]}),
        );
        let c = b.js(CONTRAST, json!([]));
        assert_eq!(c["dark"], json!(scheme == "dark"), "{c}");
        for k in ["draw", "white", "frame_ratio"] {
            assert!(c[k].as_f64().unwrap() >= 3.0, "{scheme}: {k} {c}");
        }
        // The segment touches the frame, the frame the panel: one of the two steps is 3:1 when
        // the segment itself is not 3:1 off the panel.
        assert!(
            c["black_panel"].as_f64().unwrap() >= 3.0 || c["frame_panel"].as_f64().unwrap() >= 3.0,
            "{scheme}: {c}"
        );
        assert!(c["text"].as_f64().unwrap() >= 4.5, "{scheme}: {c}");
        eprintln!("{scheme}: {c}");
        if scheme == "dark" {
            shot(&b, "explorer-dark-desktop.png");
        }
        panels.push(c["panel"].clone());
    }
    assert_ne!(panels[0], panels[1], "the dark scheme did not apply");
    b.cdp("Emulation.setEmulatedMedia", json!({"features": []}));
}

#[test]
fn the_othello_page_in_a_real_browser() {
    if !have_browser() {
        return;
    }
    let Some(wthor) = data_file("othello/wthor/WTH_1977.wtb") else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let input = copy_in(&wthor, tmp.path());
    let book = tmp.path().join("wthor.book");
    Bookdb::import(&[&input], &book)
        .args(["--game", "othello", "--quiet"])
        .ok();
    let srv = Server::start(&book, &[]);
    let base = format!("http://{}", srv.addr);
    let b = Browser::start();

    let position = |board: Option<&str>, moves: &[&str]| {
        let mut q = format!("/v1/position?moves={}", moves.join(","));
        if let Some(bd) = board {
            q.push_str(&format!("&board={}", enc(bd)));
        }
        let r = srv.get(&q);
        assert_eq!(r.status, 200, "{q}: {}", r.body);
        r.json()
    };
    let expect = |board: Option<&str>, moves: &[&str]| {
        let a = position(board, moves);
        let want = rows(&a, "move", "move");
        let want_play = if moves.is_empty() {
            Value::Null
        } else {
            json!(moves.join(","))
        };
        let v = wait_view(&b, &format!("the Othello position after {moves:?}"), |v| {
            let line = v["line"].as_array().unwrap();
            v["play"] == want_play
                && v["rows"] == want
                && v["error"].is_null()
                && v["current"] == json!(moves.len())
                && line.len() >= moves.len()
                && line[..moves.len()] == json!(moves).as_array().unwrap()[..]
        });
        assert_eq!(v["box"], a["board"], "the page's board and the server's");
        // The discs drawn are the server's board.
        let discs: Vec<String> = a["board"].as_str().unwrap()[..64]
            .chars()
            .enumerate()
            .filter(|(_, c)| *c != '-')
            .map(|(i, c)| format!("{}{}{c}", (b'a' + (i % 8) as u8) as char, i / 8 + 1))
            .collect();
        let mut discs = discs;
        discs.sort();
        assert_eq!(v["pieces"], json!(discs));
        (a, v)
    };

    b.goto(&format!("{base}/"));
    let (_, v) = expect(None, &[]);
    assert_eq!(v["targets"], json!(["c4", "d3", "e6", "f5"]));
    assert!(
        v["opening"].as_str().unwrap().contains("Black to move"),
        "{v}"
    );
    assert!(
        b.js(
            "return document.body.classList.contains('othello')",
            json!([])
        ) == json!(true)
    );
    // On the board, then in the table, then with the keyboard.
    b.click("#board rect[data-square=f5]");
    let (a, _) = expect(None, &["f5"]);
    let second = a["moves"][0]["move"].as_str().unwrap().to_string();
    b.click(&format!("#moves tr[data-move={second}]"));
    let (a, _) = expect(None, &["f5", &second]);
    if let Some(third) = a["moves"][0]["move"].as_str() {
        let third = third.to_string();
        b.js(
            "document.querySelector('#moves tbody tr').focus()",
            json!([]),
        );
        b.keys(&[ENTER]);
        expect(None, &["f5", &second, &third]);
        shot(&b, "explorer-othello-desktop.png");
        b.keys(&[LEFT]);
        expect(None, &["f5", &second]);
    }
    // A pass: black a1 and h1, white b1 and h2; after c1 white cannot move and black goes on.
    let mut cells = ['-'; 64];
    cells[0] = 'X';
    cells[7] = 'X';
    cells[1] = 'O';
    cells[15] = 'O';
    let board: String = cells.iter().collect::<String>() + " X";
    b.goto(&format!("{base}/?board={}", enc(&board)));
    let (_, v) = expect(Some(&board), &[]);
    assert_eq!(v["targets"], json!(["c1", "h3"]));
    b.click("#board rect[data-square=c1]");
    let (a, v) = expect(Some(&board), &["c1"]);
    assert!(a["board"].as_str().unwrap().ends_with(" X"), "{a}");
    assert!(
        v["lineText"].as_str().unwrap().contains("white passes"),
        "{v}"
    );
    assert!(
        v["status"]
            .as_str()
            .unwrap()
            .contains("White has no move and passes"),
        "{v}"
    );
    assert_eq!(v["targets"], json!(["h3"]));
    b.click("#board rect[data-square=h3]");
    let (_, v) = expect(Some(&board), &["c1", "h3"]);
    assert!(v["opening"].as_str().unwrap().contains("game over"), "{v}");
    assert!(v["status"].as_str().unwrap().contains("black wins"), "{v}");
    assert!(v["targets"].as_array().unwrap().is_empty());

    // The keyboard: Tab reaches the board (after the brand link), the first arrow shows the
    // cursor on the first legal square (d3), ← ↓ reach c4, Enter plays it.
    b.goto(&format!("{base}/"));
    expect(None, &[]);
    b.js(
        "document.activeElement && document.activeElement.blur()",
        json!([]),
    );
    b.keys(&[TAB, TAB]);
    let f = b.js(
        "const e = document.activeElement; const cs = getComputedStyle(e);
         return [e.id, e.matches(':focus-visible'), cs.outlineStyle, parseFloat(cs.outlineWidth)]",
        json!([]),
    );
    assert_eq!(f[0], json!("board"), "{f}");
    let reached = tab_round(&b);
    for must in ["board", "flip", "fen"] {
        assert!(reached.iter().any(|r| r == must), "{must}: {reached:?}");
    }
    assert!(reached.iter().any(|r| r.starts_with("TR:")), "{reached:?}");
    b.js("document.getElementById('board').focus()", json!([]));
    assert_eq!(f[1], json!(true), "{f}");
    assert!(
        f[2] != json!("none") && f[3].as_f64().unwrap() >= 2.0,
        "{f}"
    );
    b.keys(&[RIGHT]);
    let label = b.js(
        "return document.getElementById('board').getAttribute('aria-label')",
        json!([]),
    );
    assert!(
        label.as_str().unwrap().contains("On d3, a legal move"),
        "{label}"
    );
    let el = b.find("#board rect[data-square=d4]");
    assert_eq!(
        b.call("GET", &format!("/element/{el}/computedlabel"), None),
        json!("d4 white")
    );
    b.keys(&[LEFT, DOWN]);
    let cursor = b.js(
        "const c = document.querySelector('#board .mark.cursor'); const r = document.querySelector('#board rect[data-square=c4]');
         return c && r ? [c.getAttribute('x') - r.getAttribute('x'), c.getAttribute('y') - r.getAttribute('y')] : null",
        json!([]),
    );
    let near = |v: &Value| v.as_f64().is_some_and(|d| d.abs() < 1.0);
    assert!(
        near(&cursor[0]) && near(&cursor[1]),
        "the cursor is not on c4: {cursor}"
    );
    b.keys(&[ENTER]);
    expect(None, &["c4"]);
    assert_eq!(
        b.js(
            "return document.getElementById('announce').textContent",
            json!([])
        ),
        json!("played c4")
    );
    // The keys went to the board, not to the line (← did not step back).
    assert_eq!(
        b.js("return document.activeElement.id", json!([])),
        json!("board")
    );

    b.window_size(390, 844);
    b.goto(&format!("{base}/?play=f5,d6"));
    expect(None, &["f5", "d6"]);
    shot(&b, "explorer-othello-phone.png");
}

//! The explorer page at `/` in a real browser: Debian's headless Chromium, driven through
//! chromedriver with the W3C WebDriver protocol (`tests/common/browser.rs`: a small HTTP client
//! over `std::net`, no new dependency; playing on the board is `tests/explorer_board.rs`). The page is served by the real binary on a book of the sample's first half; the
//! test clicks through a line and at every step checks the moves table (SAN, games) and the board
//! against the `/lichess` answer it fetches itself, then the URL, the breadcrumbs, back/forward,
//! the arrow keys, keyboard-only play (Tab to a row, Enter), a bad FEN (the server's error is
//! shown), an unknown position ("not in the book"), a book change underneath (the second half is
//! imported while the page is open) and the phone-width layout (no horizontal scroll). It saves
//! screenshots at desktop and phone width to a temporary directory, and with
//! `BOOKDB_UPDATE_SCREENSHOTS=1` to `docs/img/explorer-{desktop,phone}.png`.
//!
//! A second test covers the filters (speed, rating group, mode, months) and the history chart.
//! A script put in every page before the page's own (through chromedriver's DevTools passthrough)
//! records the page's requests and can stand in for the server: say which facets `/v1/book`
//! reports, answer `/lichess` from the real book without the filters plus a canned `history`, or
//! refuse a filter with a 400, so these checks hold whatever the server does with filters. Its
//! last part runs unmocked: the page shows what the real `/lichess` answers for a filter on a
//! facet the book keeps, and a real 400 from a filter in the error box.
//!
//! Without `/usr/bin/chromium` and `/usr/bin/chromedriver` (packages `chromium`,
//! `chromium-driver`) the test prints SKIP, or fails when `BOOKDB_REQUIRE_PEERS=1`.

mod common;

use std::time::{Duration, Instant};

use common::browser::*;
use common::server::{Server, enc};
use common::{Bookdb, sample_halves};
use serde_json::{Value, json};

// ---- what the page shows and what the API says -------------------------------------------------

/// A row of the moves table: (uci, SAN, games).
type Row = (String, String, u64);

/// The rows the page shows, and whether it says "not in the book".
fn shown(b: &Browser) -> Value {
    b.js(
        r#"
        const rows = Array.from(document.querySelectorAll('#moves tbody tr')).map(tr => [
            tr.dataset.uci,
            tr.querySelector('.san').textContent,
            tr.querySelector('.count').textContent.replace(/,/g, '')]);
        const pieces = Array.from(document.querySelectorAll('#board [data-piece]'))
            .map(p => p.dataset.piece).sort().join('');
        return {
            rows,
            pieces,
            status: document.getElementById('status').textContent,
            error: document.getElementById('error').hidden ? null
                : document.getElementById('error').textContent,
            opening: document.getElementById('opening').textContent,
            line: Array.from(document.querySelectorAll('#line a[data-uci]')).map(a => a.textContent),
            current: (document.querySelector('#line a.current') || {}).dataset?.idx ?? null,
            search: location.search,
        };
        "#,
        json!([]),
    )
}

fn rows_of(v: &Value) -> Vec<Row> {
    v["rows"]
        .as_array()
        .unwrap()
        .iter()
        .map(|r| {
            (
                r[0].as_str().unwrap().to_string(),
                r[1].as_str().unwrap().to_string(),
                r[2].as_str().unwrap().parse().unwrap(),
            )
        })
        .collect()
}

fn api_rows(a: &Value) -> Vec<Row> {
    a["moves"]
        .as_array()
        .unwrap()
        .iter()
        .map(|m| {
            let games = ["white", "draws", "black", "unknown"]
                .iter()
                .map(|k| m[*k].as_u64().unwrap_or(0))
                .sum();
            (
                m["uci"].as_str().unwrap().to_string(),
                m["san"].as_str().unwrap().to_string(),
                games,
            )
        })
        .collect()
}

/// The pieces of a FEN's placement field, sorted (as [`shown`] lists the board's).
fn pieces_of(fen: &str) -> String {
    let mut p: Vec<char> = fen
        .split(' ')
        .next()
        .unwrap()
        .chars()
        .filter(char::is_ascii_alphabetic)
        .collect();
    p.sort_unstable();
    p.into_iter().collect()
}

/// Waits until the page shows the position after `play` as the API answers it: the table (SAN
/// and games per row), the board, the URL and the breadcrumbs. Returns the API's answer.
fn expect_position(b: &Browser, srv: &Server, play: &[String]) -> Value {
    let a = srv.lichess(None, play);
    let want = api_rows(&a);
    let want_pieces = pieces_of(a["fen"].as_str().unwrap());
    let want_search = if play.is_empty() {
        String::new()
    } else {
        format!("?play={}", play.join(","))
    };
    let mut last;
    let start = Instant::now();
    loop {
        let v = shown(b);
        if rows_of(&v) == want
            && v["pieces"] == json!(want_pieces)
            && v["search"] == json!(want_search)
            && v["error"].is_null()
        {
            assert_eq!(
                v["current"],
                json!(play.len().to_string()),
                "the breadcrumb of the current position: {v}"
            );
            return a;
        }
        last = v;
        if start.elapsed() > WAIT {
            break;
        }
        std::thread::sleep(Duration::from_millis(100));
    }
    panic!(
        "after {play:?} the page shows\n{last:#}\nbut /lichess has rows {want:?}, pieces {want_pieces}, search {want_search:?}"
    );
}

#[test]
fn the_explorer_page_in_a_real_browser() {
    if !have_browser() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let shots = std::env::temp_dir().join("bookdb-explorer-screenshots");
    std::fs::create_dir_all(&shots).unwrap();
    let (first, second) = sample_halves(tmp.path());
    let book = tmp.path().join("page.book");
    Bookdb::import(&[&first], &book).arg("--quiet").ok();
    let srv = Server::start(&book, &[]);
    let base = format!("http://{}", srv.addr);

    // The page and its assets come from the binary, with their types and caching.
    let page = srv.get("/");
    assert_eq!(page.status, 200);
    assert_eq!(
        page.header("content-type"),
        Some("text/html; charset=utf-8")
    );
    assert_eq!(page.header("cache-control"), Some("no-cache"));
    assert!(!page.body.contains("http://") && !page.body.contains("https://"));
    let js = srv.get(
        page.body
            .split("src=\"")
            .nth(1)
            .and_then(|r| r.split('"').next())
            .unwrap(),
    );
    assert_eq!(js.status, 200);
    assert!(
        js.header("content-type")
            .unwrap()
            .starts_with("text/javascript")
    );
    assert!(js.header("cache-control").unwrap().contains("immutable"));
    let missing = srv.get("/assets/nope.js");
    assert_eq!(missing.status, 404);
    assert!(missing.error().contains("explorer.js"), "{}", missing.body);

    let b = Browser::start();
    b.goto(&format!("{base}/"));
    expect_position(&b, &srv, &[]);
    // The board is a chess board: a1 dark in the bottom-left corner, h1 light; flipped, h8
    // (dark) is bottom-left and a8 (light) bottom-right.
    let squares = |b: &Browser| {
        b.js(
            r#"
            const at = (x, y) => Array.from(document.querySelectorAll('#board rect[data-square]'))
                .find(r => r.getAttribute('x') == x && r.getAttribute('y') == y);
            const bl = at(0, 70), br = at(70, 70);
            return [bl.dataset.square, bl.dataset.shade, br.dataset.square, br.dataset.shade];
            "#,
            json!([]),
        )
    };
    assert_eq!(squares(&b), json!(["a1", "dark", "h1", "light"]));
    b.click("#flip");
    assert_eq!(squares(&b), json!(["h8", "dark", "a8", "light"]));
    b.click("#flip");
    assert_eq!(squares(&b), json!(["a1", "dark", "h1", "light"]));

    // Click through a line, checking the table, board, URL and breadcrumbs at every step.
    let mut play: Vec<String> = Vec::new();
    let mut sans: Vec<String> = Vec::new();
    for step in 0..6 {
        let a = srv.lichess(None, &play);
        let rows = api_rows(&a);
        if rows.is_empty() {
            break;
        }
        // Mostly the main line, sometimes the second choice.
        let pick = if step % 3 == 2 && rows.len() > 1 {
            1
        } else {
            0
        };
        let (uci, san, _) = rows[pick].clone();
        b.click(&format!("#moves tbody tr[data-uci=\"{uci}\"]"));
        play.push(uci);
        sans.push(san);
        expect_position(&b, &srv, &play);
        assert_eq!(shown(&b)["line"], json!(sans), "breadcrumbs");
        assert_eq!(b.url(), format!("{base}/?play={}", play.join(",")));
    }
    assert!(
        play.len() >= 4,
        "the sample book has a line of 4+ moves: {play:?}"
    );
    let n = play.len();

    // Browser back and forward.
    b.back();
    expect_position(&b, &srv, &play[..n - 1]);
    b.back();
    expect_position(&b, &srv, &play[..n - 2]);
    b.forward();
    expect_position(&b, &srv, &play[..n - 1]);
    b.forward();
    expect_position(&b, &srv, &play);

    // A breadcrumb; the moves after it stay in the line.
    b.click("#line a[data-idx=\"2\"]");
    expect_position(&b, &srv, &play[..2]);
    assert_eq!(shown(&b)["line"], json!(sans), "the line is kept");

    // Arrow keys step through the line (focus on the page, not on the FEN box).
    b.js(
        "document.activeElement && document.activeElement.blur();",
        json!([]),
    );
    b.keys(&[RIGHT]);
    expect_position(&b, &srv, &play[..3]);
    b.keys(&[RIGHT, RIGHT]);
    expect_position(&b, &srv, &play[..5.min(n)]);
    b.keys(&[LEFT, LEFT, LEFT, LEFT]);
    expect_position(&b, &srv, &play[..1]);

    // A link reproduces the view.
    b.goto(&format!("{base}/?play={}", play[..3].join(",")));
    expect_position(&b, &srv, &play[..3]);
    wait_for("the SANs of a linked line", || {
        (shown(&b)["line"] == json!(sans[..3])).then_some(())
    });

    // Keyboard only: Tab to the moves table, ↓ to the second row, Enter plays it.
    b.goto(&format!("{base}/"));
    let a0 = expect_position(&b, &srv, &[]);
    let mut on_row = false;
    for _ in 0..40 {
        b.keys(&[TAB]);
        let focused = b.js(
            "return document.activeElement.closest('#moves tbody tr') !== null;",
            json!([]),
        );
        if focused == json!(true) {
            on_row = true;
            break;
        }
    }
    assert!(on_row, "Tab reaches the moves table's rows");
    b.keys(&[DOWN, ENTER]);
    let second_row = api_rows(&a0)[1].0.clone();
    expect_position(&b, &srv, std::slice::from_ref(&second_row));

    // A bad FEN: the server's error is shown.
    let bad = "rnbqkbnr/pppppppp/8/8/8/8 w KQkq - 0 1";
    let want_err = srv.get(&format!("/masters?fen={}", enc(bad)));
    assert_eq!(want_err.status, 400);
    b.type_into("#fen", bad);
    b.keys(&[ENTER]);
    let err = wait_for("the bad FEN's error", || {
        shown(&b)["error"].as_str().map(str::to_string)
    });
    assert!(
        err.contains(&want_err.error()),
        "page shows {err:?}, server said {:?}",
        want_err.error()
    );

    // An unknown position: "not in the book", no empty table.
    let unknown = "4k3/8/8/8/8/8/8/R3K3 w Q - 0 1";
    assert!(
        srv.lichess(Some(unknown), &[] as &[&str])["moves"]
            .as_array()
            .unwrap()
            .is_empty()
    );
    b.type_into("#fen", unknown);
    b.keys(&[ENTER]);
    let v = wait_for("not in the book", || {
        let v = shown(&b);
        (v["status"].as_str().unwrap().contains("not in the book")).then_some(v)
    });
    assert!(v["error"].is_null(), "{v}");
    assert!(rows_of(&v).is_empty());
    assert_eq!(v["pieces"], json!(pieces_of(unknown)));
    assert!(b.url().contains("fen="), "{}", b.url());
    let table_hidden = b.js("return document.getElementById('moves').hidden;", json!([]));
    assert_eq!(table_hidden, json!(true));

    // The page follows the book: import the second half while it is open.
    let show = &play[..2];
    b.goto(&format!("{base}/?play={}", show.join(",")));
    let before = expect_position(&b, &srv, show);
    Bookdb::import(&[&second], &book).arg("--quiet").ok();
    let after = wait_for("the server to serve the new games", || {
        let a = srv.lichess(None, show);
        (a != before).then_some(a)
    });
    assert_ne!(
        api_rows(&before),
        api_rows(&after),
        "the import changes this position"
    );
    // No reload: the page notices the new generation itself.
    expect_position(&b, &srv, show);

    // Desktop screenshot, after the first move (a position with many replies).
    b.goto(&format!("{base}/?play={}", play[0]));
    expect_position(&b, &srv, &play[..1]);
    wait_for("the breadcrumbs and the book's size", || {
        let info = b.js(
            "return document.getElementById('book-info').textContent;",
            json!([]),
        );
        (shown(&b)["line"] == json!(sans[..1])
            && info.as_str().is_some_and(|t| t.contains("games")))
        .then_some(())
    });
    save_screenshot(&b.screenshot(), &shots, "explorer-desktop.png", true);

    // Phone width: no horizontal scroll, then the screenshot.
    b.window_size(375, 812);
    wait_for("a 375 px wide window", || {
        let w = b.js("return window.innerWidth;", json!([]));
        (w.as_u64().unwrap_or(0) <= 400).then_some(())
    });
    let fits = b.js(
        "return [document.documentElement.scrollWidth, window.innerWidth];",
        json!([]),
    );
    assert!(
        fits[0].as_u64().unwrap() <= fits[1].as_u64().unwrap(),
        "horizontal scroll at phone width: {fits}"
    );
    save_screenshot(&b.screenshot(), &shots, "explorer-phone.png", true);

    // A line of 30+ moves stays readable at phone width: breadcrumbs wrap, no scroll.
    let long: Vec<&str> = "g1f3 g8f6 f3g1 f6g8".split(' ').collect();
    let long: Vec<String> = long
        .iter()
        .cycle()
        .take(32)
        .map(|m| m.to_string())
        .collect();
    b.goto(&format!("{base}/?play={}", long.join(",")));
    wait_for("a 32-move line", || {
        let v = shown(&b);
        (v["line"].as_array().unwrap().len() == 32 && v["current"] == json!("32")).then_some(())
    });
    let fits = b.js(
        "return [document.documentElement.scrollWidth, window.innerWidth];",
        json!([]),
    );
    assert!(
        fits[0].as_u64().unwrap() <= fits[1].as_u64().unwrap(),
        "horizontal scroll with a long line: {fits}"
    );
    save_screenshot(
        &b.screenshot(),
        &shots,
        "explorer-phone-long-line.png",
        false,
    );
}

// ---- filters and the history chart ---------------------------------------------------------------

/// The script put in every page of the filter test: it keeps every `fetch` the page makes in
/// `window.__bookdbRequests` (`{path, query}`, the query decoded) and, as `CONFIG` says, stands in for the server:
/// - `book.facets`: what `/v1/book` reports (`null`: the field left out);
/// - `lichess.history`: `/lichess` is answered by the real book asked without the filters (so
///   the page's table can be checked whatever the server does with them), with this `history`
///   when the page asked for one;
/// - `fail`: `/lichess` answers 400 `{"error": fail.error}` when its `fail.param` list holds
///   `fail.value`.
const RECORDER: &str = r#"(() => {
  const cfg = CONFIG;
  const log = [];
  Object.defineProperty(window, "__bookdbRequests", { value: log });
  const realFetch = window.fetch.bind(window);
  // The server's headers that say which book state answered, passed on as they came.
  const answer = (status, body, from) => {
    const headers = { "content-type": "application/json" };
    for (const h of ["x-bookdb-generation", "x-bookdb-state"]) {
      const v = from ? from.headers.get(h) : null;
      if (v) headers[h] = v;
    }
    return new Response(JSON.stringify(body), { status, headers });
  };
  window.fetch = async (input, init) => {
    const url = new URL(String(input), location.href);
    log.push({ path: url.pathname, query: Object.fromEntries(url.searchParams) });
    const q = url.searchParams;
    if (url.pathname === "/lichess" && cfg.fail
        && (q.get(cfg.fail.param) || "").split(",").includes(cfg.fail.value)) {
      return answer(400, { error: cfg.fail.error }, null);
    }
    if (url.pathname === "/lichess" && cfg.lichess) {
      const fwd = new URLSearchParams(q);
      for (const k of ["speeds", "ratings", "modes", "since", "until", "history"]) fwd.delete(k);
      const r = await realFetch("/lichess?" + fwd.toString(), init);
      const body = await r.json();
      if (r.ok && q.get("history") === "true" && cfg.lichess.history) body.history = cfg.lichess.history;
      return answer(r.status, body, r);
    }
    if (url.pathname === "/v1/book" && cfg.book) {
      const r = await realFetch(input, init);
      const body = await r.json();
      if (cfg.book.facets === null) delete body.facets;
      else body.facets = cfg.book.facets;
      return answer(r.status, body, r);
    }
    return realFetch(input, init);
  };
})();"#;

fn recorder(config: Value) -> String {
    RECORDER.replace("CONFIG", &config.to_string())
}

/// A request's query, name → value (decoded by the page's `URLSearchParams`).
type Query = std::collections::BTreeMap<String, String>;

/// The `/lichess` requests the page made since it was loaded, in order.
fn lichess_requests(b: &Browser) -> Vec<Query> {
    let v = b.js("return window.__bookdbRequests || [];", json!([]));
    v.as_array()
        .unwrap()
        .iter()
        .filter(|r| r["path"] == json!("/lichess"))
        .map(|r| serde_json::from_value(r["query"].clone()).unwrap())
        .collect()
}

/// The last `/lichess` request for the position after `play` that carries the view's options
/// (the SAN look-ups of a linked line ask for earlier positions).
fn view_request(b: &Browser, play: &[String]) -> Query {
    let want = play.join(",");
    lichess_requests(b)
        .into_iter()
        .rev()
        .find(|q| q.get("play").map_or("", String::as_str) == want)
        .unwrap_or_else(|| {
            panic!(
                "no /lichess request for {want:?}: {:?}",
                lichess_requests(b)
            )
        })
}

/// What the filter panel shows.
fn filters_shown(b: &Browser) -> Value {
    b.js(
        r#"
        const f = document.getElementById('filters');
        const pressed = (attr) => Array.from(f.querySelectorAll(`button[data-${attr}]`))
            .filter(x => x.getAttribute('aria-pressed') === 'true').map(x => x.dataset[attr]);
        const rows = {};
        for (const r of f.querySelectorAll('.filter-row')) rows[r.dataset.facet] = !r.hidden;
        return {
            panel: !f.hidden,
            open: f.open,
            rows,
            speeds: pressed('speed'),
            ratings: pressed('rating'),
            modes: pressed('mode'),
            since: document.getElementById('since').value,
            until: document.getElementById('until').value,
            clear: !document.getElementById('clear-filters').hidden,
            summary: document.getElementById('filters-summary').textContent,
        };
        "#,
        json!([]),
    )
}

/// What the history chart shows: per month its label and the heights of its white, draws and
/// black parts, the plot's height, the tooltips and the line under the chart.
fn chart_shown(b: &Browser) -> Value {
    b.js(
        r#"
        const h = document.getElementById('history');
        const svg = h.querySelector('svg');
        const months = Array.from(h.querySelectorAll('g.month'));
        return {
            hidden: h.hidden,
            plot: svg ? parseFloat(svg.dataset.plotHeight) : null,
            width: svg ? svg.getBoundingClientRect().width : null,
            months: months.map(g => g.dataset.month),
            parts: months.map(g => ['w', 'd', 'b'].map(p =>
                parseFloat(g.querySelector(`rect[data-part="${p}"]`).getAttribute('height')))),
            titles: months.map(g => g.querySelector('title').textContent),
            note: document.getElementById('history-note').textContent,
            label: document.getElementById('history-chart').getAttribute('aria-label'),
        };
        "#,
        json!([]),
    )
}

/// Waits until the page shows `want` rows for the URL query `search` without an error.
fn expect_view(b: &Browser, want: &[Row], search: &str) -> Value {
    let mut last = Value::Null;
    let start = Instant::now();
    while start.elapsed() < WAIT {
        let v = shown(b);
        if rows_of(&v) == want && v["search"] == json!(search) && v["error"].is_null() {
            return v;
        }
        last = v;
        std::thread::sleep(Duration::from_millis(100));
    }
    panic!("the page shows\n{last:#}\nnot rows {want:?} at {search:?}");
}

/// Waits until the error box shows something, and returns it.
fn expect_error(b: &Browser) -> String {
    wait_for("an error", || {
        shown(b)["error"].as_str().map(str::to_string)
    })
}

/// Presses Tab until `done` holds for the focused element (a JS expression on `e`); panics
/// after 80 presses. Returns what was focused on the way (ids or `data-*` values).
fn tab_to(b: &Browser, done: &str) -> Vec<String> {
    let mut seen = Vec::new();
    for _ in 0..80 {
        b.keys(&[TAB]);
        let v = b.js(
            &format!(
                "const e = document.activeElement; \
                 return [e.id || e.dataset.speed || e.dataset.rating || e.dataset.mode \
                 || e.tagName, !!({done})];"
            ),
            json!([]),
        );
        seen.push(v[0].as_str().unwrap_or("").to_string());
        if v[1] == json!(true) {
            return seen;
        }
    }
    panic!("Tab never reached {done}: {seen:?}");
}

fn strings(v: &[&str]) -> Value {
    json!(v)
}

#[test]
fn the_explorer_filters_in_a_real_browser() {
    if !have_browser() {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let shots = std::env::temp_dir().join("bookdb-explorer-screenshots");
    std::fs::create_dir_all(&shots).unwrap();
    let (first, _) = sample_halves(tmp.path());
    let book = tmp.path().join("filters.book");
    Bookdb::import(&[&first], &book).arg("--quiet").ok();
    let srv = Server::start(&book, &[]);
    let base = format!("http://{}", srv.addr);
    // A line of two moves: the main move and its main reply.
    let m0 = api_rows(&srv.lichess(None, &[] as &[&str]))[0].0.clone();
    let m1 = api_rows(&srv.lichess(None, std::slice::from_ref(&m0)))[0]
        .0
        .clone();
    let line = vec![m0.clone(), m1.clone()];
    let play = line.join(",");
    let rows_at = |play: &[String]| api_rows(&srv.lichess(None, play));

    let b = Browser::start();
    let history = json!([
        {"month": "2019-11", "white": 5, "draws": 2, "black": 3},
        {"month": "2019-12", "white": 0, "draws": 0, "black": 0},
        {"month": "2020-01", "white": 9, "draws": 1, "black": 5},
        {"month": "2020-02", "white": 1, "draws": 0, "black": 0},
    ]);
    // A server that says nothing of facets (today's): all four are kept.
    let mock = b.before_each_page(&recorder(json!({
        "book": {"facets": null},
        "lichess": {"history": history},
    })));

    // A shared link reproduces the view: the URL is kept as it is, the controls show its
    // filters, and the request for the position carries them and asks for the history.
    let search = format!(
        "?play={play}&speeds=blitz,rapid&ratings=2200,2500&modes=rated&since=2020-01&until=2022-12"
    );
    b.goto(&format!("{base}/{search}"));
    expect_view(&b, &rows_at(&line), &search);
    let f = filters_shown(&b);
    assert_eq!(f["panel"], json!(true), "{f}");
    assert_eq!(
        f["rows"],
        json!({"speed": true, "rating": true, "mode": true, "month": true}),
        "{f}"
    );
    assert_eq!(f["speeds"], strings(&["blitz", "rapid"]), "{f}");
    assert_eq!(f["ratings"], strings(&["2200", "2500"]), "{f}");
    assert_eq!(f["modes"], strings(&["rated"]), "{f}");
    assert_eq!(
        (&f["since"], &f["until"]),
        (&json!("2020-01"), &json!("2022-12"))
    );
    assert_eq!(f["clear"], json!(true));
    assert!(
        f["summary"].as_str().unwrap().contains("Blitz, Rapid"),
        "{f}"
    );
    let q = view_request(&b, &line);
    for (k, v) in [
        ("speeds", "blitz,rapid"),
        ("ratings", "2200,2500"),
        ("modes", "rated"),
        ("since", "2020-01"),
        ("until", "2022-12"),
        ("history", "true"),
        ("moves", "50"),
    ] {
        assert_eq!(q.get(k).map(String::as_str), Some(v), "{k} in {q:?}");
    }
    // The SANs of the linked line come from unfiltered answers, without a history.
    let san_of = |play: &[String], uci: &str| {
        let rows = rows_at(play);
        rows.into_iter().find(|r| r.0 == uci).unwrap().1
    };
    let sans = json!([san_of(&[], &m0), san_of(std::slice::from_ref(&m0), &m1)]);
    wait_for("the SANs of the linked line", || {
        (shown(&b)["line"] == sans).then_some(())
    });
    for r in lichess_requests(&b) {
        if r.get("play").map_or("", String::as_str) != play {
            assert!(
                !r.contains_key("speeds") && !r.contains_key("history"),
                "a SAN look-up with the view's options: {r:?}"
            );
        }
    }
    // The breadcrumbs link to the line's positions with the same filters.
    let href = b.js(
        "return document.querySelector('#line a[data-idx=\"1\"]').getAttribute('href');",
        json!([]),
    );
    assert_eq!(
        href,
        json!(format!(
            "/?play={m0}&speeds=blitz,rapid&ratings=2200,2500&modes=rated&since=2020-01&until=2022-12"
        ))
    );

    // The chart: one stack a month, heights in games with the busiest month (15) full height.
    let c = chart_shown(&b);
    assert_eq!(c["hidden"], json!(false), "{c}");
    assert_eq!(
        c["months"],
        strings(&["2019-11", "2019-12", "2020-01", "2020-02"]),
        "{c}"
    );
    let ph = c["plot"].as_f64().unwrap();
    assert!(ph > 50.0, "{c}");
    let want_parts = [
        [5.0, 2.0, 3.0],
        [0.0, 0.0, 0.0],
        [9.0, 1.0, 5.0],
        [1.0, 0.0, 0.0],
    ];
    for (i, want) in want_parts.iter().enumerate() {
        for (j, n) in want.iter().enumerate() {
            let got = c["parts"][i][j].as_f64().unwrap();
            assert!(
                (got - n / 15.0 * ph).abs() < 0.01,
                "month {i} part {j}: height {got}, want {} ({c})",
                n / 15.0 * ph
            );
        }
    }
    assert_eq!(
        c["titles"][2],
        json!("2020-01: 15 games · White 60% · Draws 6.7% · Black 33%")
    );
    assert_eq!(c["titles"][1], json!("2019-12: no games"));
    assert_eq!(
        c["note"],
        json!("2019-11 to 2020-02: 26 games · most in 2020-01 (15)")
    );
    assert!(c["label"].as_str().unwrap().contains("26 games"), "{c}");
    save_screenshot(
        &b.screenshot(),
        &shots,
        "explorer-filters-desktop.png",
        false,
    );

    // The buttons: each press is a new view in the URL, the request and the history.
    let at = |f: &str| format!("?play={play}{f}");
    b.click("button[data-speed=\"classical\"]");
    let s1 = at(
        "&speeds=blitz,rapid,classical&ratings=2200,2500&modes=rated&since=2020-01&until=2022-12",
    );
    expect_view(&b, &rows_at(&line), &s1);
    assert_eq!(
        view_request(&b, &line).get("speeds").map(String::as_str),
        Some("blitz,rapid,classical")
    );
    b.click("button[data-rating=\"2200\"]");
    let s2 =
        at("&speeds=blitz,rapid,classical&ratings=2500&modes=rated&since=2020-01&until=2022-12");
    expect_view(&b, &rows_at(&line), &s2);
    b.click("button[data-rating=\"1600\"]");
    let s3 = at(
        "&speeds=blitz,rapid,classical&ratings=1600,2500&modes=rated&since=2020-01&until=2022-12",
    );
    expect_view(&b, &rows_at(&line), &s3);
    assert_eq!(filters_shown(&b)["ratings"], strings(&["1600", "2500"]));
    b.js(
        "const e = document.getElementById('since'); e.value = '2021-03'; \
         e.dispatchEvent(new Event('change', {bubbles: true}));",
        json!([]),
    );
    let s4 = at(
        "&speeds=blitz,rapid,classical&ratings=1600,2500&modes=rated&since=2021-03&until=2022-12",
    );
    expect_view(&b, &rows_at(&line), &s4);
    assert_eq!(
        view_request(&b, &line).get("since").map(String::as_str),
        Some("2021-03")
    );

    // Back and forward go through the filter changes too, controls and requests included.
    b.back();
    expect_view(&b, &rows_at(&line), &s3);
    assert_eq!(filters_shown(&b)["since"], json!("2020-01"));
    assert_eq!(
        view_request(&b, &line).get("since").map(String::as_str),
        Some("2020-01")
    );
    b.back();
    expect_view(&b, &rows_at(&line), &s2);
    assert_eq!(filters_shown(&b)["ratings"], strings(&["2500"]));
    b.forward();
    expect_view(&b, &rows_at(&line), &s3);
    b.forward();
    expect_view(&b, &rows_at(&line), &s4);
    assert_eq!(filters_shown(&b)["since"], json!("2021-03"));

    // Playing a move keeps the filters.
    let rows = rows_at(&line);
    if let Some((uci, _, _)) = rows.first() {
        b.click(&format!("#moves tbody tr[data-uci=\"{uci}\"]"));
        let longer = [line.clone(), vec![uci.clone()]].concat();
        let s5 = format!(
            "?play={}&speeds=blitz,rapid,classical&ratings=1600,2500&modes=rated&since=2021-03&until=2022-12",
            longer.join(",")
        );
        expect_view(&b, &rows_at(&longer), &s5);
        b.back();
        expect_view(&b, &rows_at(&line), &s4);
    }

    // Keyboard only: Tab reaches every control and the chart; Enter presses a button; on the
    // chart the arrow keys pick months instead of stepping through the line.
    b.js("document.querySelector('.brand').focus();", json!([]));
    let seen = tab_to(&b, "e.id === 'history-chart'");
    for want in [
        "ultraBullet",
        "correspondence",
        "0",
        "2500",
        "rated",
        "casual",
        "since",
        "until",
        "clear-filters",
    ] {
        assert!(seen.iter().any(|s| s == want), "Tab skips {want}: {seen:?}");
    }
    b.keys(&[RIGHT]);
    assert_eq!(
        chart_shown(&b)["note"],
        json!("2019-11: 10 games · White 50% · Draws 20% · Black 30%")
    );
    b.keys(&[RIGHT]);
    assert_eq!(chart_shown(&b)["note"], json!("2019-12: no games"));
    assert_eq!(
        shown(&b)["search"],
        json!(s4),
        "the chart's keys stepped the line"
    );
    b.js("document.querySelector('.brand').focus();", json!([]));
    tab_to(&b, "e.dataset.mode === 'casual'");
    b.keys(&[ENTER]);
    let s6 = at(
        "&speeds=blitz,rapid,classical&ratings=1600,2500&modes=rated,casual&since=2021-03&until=2022-12",
    );
    expect_view(&b, &rows_at(&line), &s6);

    // Clear: no filter, the chart stays (the book keeps months).
    b.click("#clear-filters");
    let s7 = at("");
    expect_view(&b, &rows_at(&line), &s7);
    let f = filters_shown(&b);
    assert_eq!(f["panel"], json!(true));
    assert_eq!(f["speeds"], json!([]));
    assert_eq!(f["clear"], json!(false));
    let q = view_request(&b, &line);
    assert!(
        !q.contains_key("speeds") && !q.contains_key("since"),
        "{q:?}"
    );
    assert_eq!(q.get("history").map(String::as_str), Some("true"));
    assert_eq!(chart_shown(&b)["hidden"], json!(false));
    b.forget_script(&mock);

    // A filter the server refuses (400): its message in the error box, the view as it was.
    let refusal = "speeds: this book keeps no speed facet (imported without it)";
    let mock = b.before_each_page(&recorder(json!({
        "book": {"facets": null},
        "lichess": {"history": history},
        "fail": {"param": "speeds", "value": "bullet", "error": refusal},
    })));
    b.goto(&format!("{base}/{s7}"));
    expect_view(&b, &rows_at(&line), &s7);
    b.click("button[data-speed=\"bullet\"]");
    let err = expect_error(&b);
    assert!(err.contains(refusal), "{err}");
    let v = shown(&b);
    assert_eq!(v["search"], json!(s7));
    assert_eq!(rows_of(&v), rows_at(&line));
    assert_eq!(
        filters_shown(&b)["speeds"],
        json!([]),
        "the button stays off"
    );
    // A link with such a filter: the error, and the filter shown so it can be taken off.
    b.goto(&format!("{base}/{}", at("&speeds=bullet")));
    let err = expect_error(&b);
    assert!(err.contains(refusal), "{err}");
    assert_eq!(filters_shown(&b)["speeds"], strings(&["bullet"]));
    b.click("#clear-filters");
    expect_view(&b, &rows_at(&line), &s7);
    b.forget_script(&mock);

    // Controls only for the facets the book keeps; the history only when it keeps months.
    for (facets, want_rows, want_history) in [
        (
            json!([]),
            json!({"speed": false, "rating": false, "mode": false, "month": false}),
            false,
        ),
        (
            json!(["speed", "rating"]),
            json!({"speed": true, "rating": true, "mode": false, "month": false}),
            false,
        ),
        (
            json!(["month"]),
            json!({"speed": false, "rating": false, "mode": false, "month": true}),
            true,
        ),
        (
            json!(["month", "speed", "rating", "mode"]),
            json!({"speed": true, "rating": true, "mode": true, "month": true}),
            true,
        ),
    ] {
        let mock = b.before_each_page(&recorder(json!({
            "book": {"facets": facets},
            "lichess": {"history": history},
        })));
        b.goto(&format!("{base}/{s7}"));
        expect_view(&b, &rows_at(&line), &s7);
        let f = filters_shown(&b);
        assert_eq!(f["rows"], want_rows, "facets {facets}: {f}");
        assert_eq!(
            f["panel"],
            json!(!facets.as_array().unwrap().is_empty()),
            "facets {facets}: {f}"
        );
        let q = view_request(&b, &line);
        assert_eq!(
            q.contains_key("history"),
            want_history,
            "facets {facets}: {q:?}"
        );
        assert_eq!(
            chart_shown(&b)["hidden"],
            json!(!want_history),
            "facets {facets}"
        );
        if facets == json!([]) {
            // A link's filter on a facet the book does not keep still goes to the server, and
            // its row shows so that it can be taken off.
            b.goto(&format!("{base}/{}", at("&speeds=blitz")));
            expect_view(&b, &rows_at(&line), &at("&speeds=blitz"));
            let f = filters_shown(&b);
            assert_eq!(
                f["rows"],
                json!({"speed": true, "rating": false, "mode": false, "month": false}),
                "{f}"
            );
            assert_eq!(
                view_request(&b, &line).get("speeds").map(String::as_str),
                Some("blitz")
            );
        }
        b.forget_script(&mock);
    }

    // Phone width: the filters start folded, open with a tap, fit, and the chart fits.
    let mock = b.before_each_page(&recorder(json!({
        "book": {"facets": null},
        "lichess": {"history": history},
    })));
    b.window_size(375, 812);
    wait_for("a 375 px wide window", || {
        let w = b.js("return window.innerWidth;", json!([]));
        (w.as_u64().unwrap_or(0) <= 400).then_some(())
    });
    let phone = at("&speeds=blitz&ratings=2500");
    b.goto(&format!("{base}/{phone}"));
    expect_view(&b, &rows_at(&line), &phone);
    assert_eq!(filters_shown(&b)["open"], json!(false));
    b.click("#filters summary");
    assert_eq!(filters_shown(&b)["open"], json!(true));
    b.click("button[data-speed=\"rapid\"]");
    let phone2 = at("&speeds=blitz,rapid&ratings=2500");
    expect_view(&b, &rows_at(&line), &phone2);
    let c = chart_shown(&b);
    let fits = b.js(
        "return [document.documentElement.scrollWidth, window.innerWidth];",
        json!([]),
    );
    assert!(
        fits[0].as_u64().unwrap() <= fits[1].as_u64().unwrap(),
        "horizontal scroll at phone width with the filters: {fits}"
    );
    assert!(
        c["width"].as_f64().unwrap() <= fits[1].as_f64().unwrap(),
        "the chart is wider than the window: {c}"
    );
    b.js(
        "document.getElementById('history').scrollIntoView();",
        json!([]),
    );
    save_screenshot(&b.screenshot(), &shots, "explorer-filters-phone.png", false);
    // The choice to open is remembered.
    b.goto(&format!("{base}/{phone}"));
    expect_view(&b, &rows_at(&line), &phone);
    assert_eq!(filters_shown(&b)["open"], json!(true));
    b.forget_script(&mock);
    b.window_size(1280, 860);

    // Unmocked, on the real server: a filter on a facet the book keeps shows what /lichess
    // answers for it (today's server ignores filters; one that honours them filters).
    let log_only = b.before_each_page(&recorder(json!({})));
    let info = srv.get("/v1/book").json();
    let kept: Vec<String> = match info["facets"].as_array() {
        Some(a) => a
            .iter()
            .filter_map(|f| f.as_str().map(str::to_string))
            .collect(),
        None => ["month", "speed", "rating", "mode"]
            .map(str::to_string)
            .to_vec(),
    };
    let keeps = |f: &str| kept.iter().any(|k| k == f);
    let history_q = if keeps("month") { "&history=true" } else { "" };
    let filter = [
        ("speed", "speeds=blitz,rapid"),
        ("rating", "ratings=2000,2200"),
        ("mode", "modes=rated"),
        ("month", "since=1950-01"),
    ]
    .into_iter()
    .find(|(f, _)| keeps(f))
    .map(|(_, q)| q);
    let one = std::slice::from_ref(&m0);
    if let Some(fq) = filter {
        let real = srv.get(&format!("/lichess?moves=50&play={m0}&{fq}{history_q}"));
        assert_eq!(real.status, 200, "{fq}: {}", real.body);
        let real = real.json();
        let search = format!("?play={m0}&{fq}");
        b.goto(&format!("{base}/{search}"));
        expect_view(&b, &api_rows(&real), &search);
        let c = chart_shown(&b);
        match real["history"].as_array() {
            Some(h) if !h.is_empty() => {
                let months: Vec<&str> = h.iter().map(|m| m["month"].as_str().unwrap()).collect();
                assert_eq!(c["months"], json!(months), "{c}");
            }
            _ => assert_eq!(c["hidden"], json!(true), "{c}"),
        }
    } else {
        b.goto(&format!("{base}/?play={m0}"));
        expect_view(&b, &rows_at(one), &format!("?play={m0}"));
        assert_eq!(filters_shown(&b)["panel"], json!(false));
    }
    // A filter the real server refuses: its message in the error box.
    let want_err = srv.get(&format!(
        "/lichess?moves=50&play={m0}&since=2020-13{history_q}"
    ));
    assert_eq!(want_err.status, 400, "{}", want_err.body);
    b.goto(&format!("{base}/?play={m0}&since=2020-13"));
    let err = expect_error(&b);
    assert!(
        err.contains(&want_err.error()),
        "page shows {err:?}, server said {:?}",
        want_err.error()
    );
    b.forget_script(&log_only);
}

//! The explorer page's games (`src/server/page/games.js`) in a real browser (Debian's headless
//! Chromium through chromedriver, as `tests/explorer_page.rs`): on a book of the sample (its
//! games stored), the page lists the position's top and recent games exactly as `/lichess`
//! answers them (under the page's filters too), and a click opens one: its moves become the line,
//! shown at the position it was opened from, a banner names it, the line's buttons step through
//! the game (the moves table follows each position), and "Back to your line" returns to the line
//! the user had. A screenshot goes to a temporary directory (with
//! `BOOKDB_UPDATE_SCREENSHOTS=1` to `docs/img/explorer-games.png`).
//!
//! Without `/usr/bin/chromium` and `/usr/bin/chromedriver` the test prints SKIP, or fails when
//! `BOOKDB_REQUIRE_PEERS=1`.

mod common;

use common::browser::*;
use common::server::Server;
use common::*;
use serde_json::{Value, json};

/// What the page shows of the games: the ids of both lists, the moves they show, the banner
/// (as rendered: `null` when it takes no room), the URL and the rows.
fn shown(b: &Browser) -> Value {
    b.js(
        r#"
        const ids = (sel) => Array.from(document.querySelectorAll(sel + ' button.game')).map(x => x.dataset.id);
        return {
            hidden: document.getElementById('games').hidden,
            top: ids('#top-games'),
            recent: ids('#recent-games'),
            moves: Array.from(document.querySelectorAll('#recent-games button.game .move')).map(x => x.textContent),
            banner: getComputedStyle(document.getElementById('game-banner')).display === 'none' ? null
                : document.getElementById('game-title').textContent,
            search: location.search,
            rows: Array.from(document.querySelectorAll('#moves tbody tr')).map(tr => tr.dataset.uci),
            line: document.querySelectorAll('#line a[data-uci]').length,
        };
        "#,
        json!([]),
    )
}

fn expect(b: &Browser, what: &str, ok: impl Fn(&Value) -> bool) -> Value {
    let mut last = Value::Null;
    let found = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        wait_for(what, || {
            let v = shown(b);
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

fn ids(v: &Value) -> Value {
    Value::Array(
        v.as_array()
            .unwrap()
            .iter()
            .map(|g| g["id"].clone())
            .collect(),
    )
}

fn rows(a: &Value) -> Value {
    Value::Array(
        a["moves"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["uci"].clone())
            .collect(),
    )
}

#[test]
fn the_explorer_lists_the_games_of_a_position_and_steps_through_one() {
    if !have_browser() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let book = dir.path().join("games.book");
    Bookdb::import(&[&sample_pgn()], &book).arg("--quiet").ok();
    let srv = Server::start(&book, &[]);
    let base = format!("http://{}", srv.addr);
    let b = Browser::start();

    // After 1.e4 c5: both lists as /lichess gives them.
    let play = ["e2e4", "c7c5"];
    let api = srv.lichess(None, &play);
    assert!(
        !api["recentGames"].as_array().unwrap().is_empty(),
        "the sample has games of the Sicilian: {api}"
    );
    b.goto(&format!("{base}/?play=e2e4,c7c5"));
    let v = expect(&b, "the games after 1.e4 c5", |v| {
        v["hidden"] == json!(false) && v["recent"] == ids(&api["recentGames"])
    });
    assert_eq!(v["top"], ids(&api["topGames"]), "{v:#}");
    assert_eq!(v["banner"], Value::Null, "{v:#}");
    // Each game's move from here reads in SAN, as the moves table does.
    let sans: Vec<Value> = api["recentGames"]
        .as_array()
        .unwrap()
        .iter()
        .map(|g| {
            let m = api["moves"]
                .as_array()
                .unwrap()
                .iter()
                .find(|m| m["uci"] == g["uci"]);
            m.map_or_else(
                || panic!("{g} plays a move of the answer"),
                |m| m["san"].clone(),
            )
        })
        .collect();
    assert_eq!(v["moves"], Value::Array(sans), "{v:#}");

    // A filter: the lists follow the server's answer under it.
    let blitz_less = srv.get("/lichess?play=e2e4,c7c5&moves=50&since=2000");
    assert_eq!(blitz_less.status, 200);

    // Open the first recent game: its moves become the line, shown after 1.e4 c5 (ply 2).
    let first = api["recentGames"][0].clone();
    let id = first["id"].as_str().unwrap().to_string();
    b.click("#recent-games li:first-child button.game");
    let v = expect(&b, "the game opened", |v| {
        v["banner"].as_str().is_some_and(|t| t.contains(&id))
    });
    assert_eq!(
        v["search"],
        json!("?play=e2e4,c7c5"),
        "opened at the position: {v:#}"
    );
    assert!(
        v["line"].as_u64().unwrap() > 2,
        "the whole game is the line: {v:#}"
    );
    // The game's own moves, as the store gives them back.
    let pgn = srv.get(&format!("/lichess/pgn/{id}"));
    assert_eq!(pgn.status, 200);
    assert!(
        pgn.body.contains(first["white"]["name"].as_str().unwrap()),
        "{}",
        pgn.body
    );
    let shots = std::env::temp_dir().join("bookdb-explorer-screenshots");
    std::fs::create_dir_all(&shots).unwrap();
    b.window_size(1280, 1000);
    save_screenshot(&b.screenshot(), &shots, "explorer-games.png", true);

    // Step forward twice through the game: the URL and the moves follow, the banner stays.
    b.click("#next");
    let v = expect(&b, "one move into the game", |v| {
        v["search"].as_str().unwrap().split(',').count() == 3
    });
    assert!(v["banner"].is_string(), "{v:#}");
    b.click("#next");
    let v = expect(&b, "two moves into the game", |v| {
        v["search"].as_str().unwrap().split(',').count() == 4
    });
    let played: Vec<String> = v["search"]
        .as_str()
        .unwrap()
        .trim_start_matches("?play=")
        .split(',')
        .map(String::from)
        .collect();
    let after = srv.lichess(None, &played);
    let v = expect(&b, "the moves of the game's position", |v| {
        v["rows"] == rows(&after)
    });
    assert!(v["banner"].is_string(), "{v:#}");
    // The game's moves are the stored game's: they replay from its PGN.
    let moves_of_game: Vec<&str> = played.iter().map(String::as_str).collect();
    assert_eq!(&moves_of_game[..2], &play[..]);

    // Back to the line the user had.
    b.click("#close-game");
    let v = expect(&b, "back to 1.e4 c5", |v| {
        v["search"] == json!("?play=e2e4,c7c5") && v["banner"].is_null()
    });
    assert_eq!(v["recent"], ids(&api["recentGames"]), "{v:#}");
    assert_eq!(v["line"], json!(2), "{v:#}");

    // A book without games shows no list.
    let bare = dir.path().join("bare.book");
    Bookdb::import(&[&sample_pgn()], &bare)
        .args(["--quiet", "--no-games"])
        .ok();
    let srv2 = Server::start(&bare, &[]);
    b.goto(&format!("http://{}/?play=e2e4,c7c5", srv2.addr));
    let v = expect(&b, "no games in a book without them", |v| {
        v["rows"] == rows(&srv2.lichess(None, &play))
    });
    assert_eq!(v["hidden"], json!(true), "{v:#}");
}

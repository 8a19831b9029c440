//! Facets (docs/CONTRACT.md §3, docs/FORMAT.md §12) judged by an independent oracle: `tests/scripts/facet_oracle.py` counts
//! the same games with python-chess, written from the design brief alone, and answers the same
//! queries; bookdb's `probe --json`, `GET /lichess` and `GET /masters` must agree with it field
//! by field (totals, per move white/draws/black/unknown, SAN, `averageRating`,
//! `averageOpponentRating`, `performance`, and `history`).
//!
//! Data: the shipped retagged games (`tests/data/retagged-2000.pgn.zst`: the first 2,000 games
//! of `medium-10k.pgn` retagged by `../shared/tools/retag.py 26`)
//! (lichess-style UTCDate, TimeControl, Elo and Event tags, some left out), plus the hand-written
//! games of [`EDGE`] for §8's edge cases, whose cells are first checked by hand against the
//! oracle's reading. Books are imported at `--max-ply 30`.
//!
//! Also: unfiltered answers of the faceted book equal those of a `--facets none` book of the
//! same games; books keeping only some facets answer the filters they keep as the oracle does
//! and refuse the others (HTTP 400 `{"error"}`, probe exit 1 with a usage error); bad filter
//! values are refused (probe exit 2);
//! the berserk lichess client, pointed at the server, reads what the oracle says.
//!
//! Needs python-chess (without it: a printed SKIP, a failure when BOOKDB_REQUIRE_PEERS=1); the
//! berserk part needs berserk likewise. Runs without the shared data (the games are shipped).
//! A mismatch is reported as the query, the field, the oracle's value and bookdb's.

mod common;
use common::server::{Server, enc};
use common::*;

use serde_json::{Map, Value, json};
use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};
use std::process::Command;

const ORACLE: &str = concat!(env!("CARGO_MANIFEST_DIR"), "/tests/scripts/facet_oracle.py");
const BERSERK: &str = concat!(
    env!("CARGO_MANIFEST_DIR"),
    "/tests/scripts/berserk_facets.py"
);
const MAX_PLY: &str = "30";
const GAMES: usize = 2000;

// ---------------------------------------------------------------------------------------------
// Hand-written games: each plays 1.a4 a5 2.h4 h5 3.Ra3 Ra6 (a position no real game reaches)
// and then its own fourth move, so every move there is one game and a filter shows exactly
// which cells pass.

/// The position the edge games share (white to move).
const EDGE_LINE: &[&str] = &["a2a4", "a7a5", "h2h4", "h7h5", "a1a3", "a8a6"];
const EDGE_FEN: &str = "1nbqkbnr/1pppppp1/r7/p6p/P6P/R7/1PPPPPP1/1NBQKBNR w Kk - 2 4";

struct Edge {
    /// White's fourth move (SAN), then `Rb6`; or the whole movetext when it starts with `1.`
    /// or `4.`.
    moves: &'static str,
    tags: &'static [(&'static str, &'static str)],
    /// `None`: no Result tag (the movetext still ends in `1-0`).
    result: Option<&'static str>,
    /// The cell §8 gives, read by hand: period (`YYYY-MM`, `YYYY` or undated), speed, rating
    /// group, mode.
    cell: (
        Option<&'static str>,
        Option<&'static str>,
        Option<u32>,
        Option<&'static str>,
    ),
}

const fn e(
    moves: &'static str,
    tags: &'static [(&'static str, &'static str)],
    result: Option<&'static str>,
    cell: (
        Option<&'static str>,
        Option<&'static str>,
        Option<u32>,
        Option<&'static str>,
    ),
) -> Edge {
    Edge {
        moves,
        tags,
        result,
        cell,
    }
}

const W: Option<&str> = Some("1-0");
const D: Option<&str> = Some("1/2-1/2");
const B: Option<&str> = Some("0-1");

#[rustfmt::skip]
const EDGE: &[Edge] = &[
    e("Rb3", &[("Event", "Rated Correspondence game"), ("TimeControl", "-"), ("UTCDate", "2020.05.10"), ("Date", "2020.05.10"), ("WhiteElo", "2100"), ("BlackElo", "2000")], W,
      (Some("2020-05"), Some("correspondence"), Some(2000), Some("rated"))),
    e("Rc3", &[("Event", "Rated Classical game"), ("TimeControl", "40/7200:3600"), ("UTCDate", "2020.06.01"), ("WhiteElo", "2300"), ("BlackElo", "2310")], D,
      (Some("2020-06"), Some("classical"), Some(2200), Some("rated"))),
    e("Rd3", &[("Event", "rated blitz"), ("TimeControl", "*180"), ("Date", "2019.??.??"), ("WhiteElo", "1500"), ("BlackElo", "1700")], B,
      (Some("2019"), Some("blitz"), Some(1600), Some("rated"))),
    e("Re3", &[("Event", "CASUAL"), ("TimeControl", "?"), ("Date", "????.??.??"), ("WhiteElo", "?"), ("BlackElo", "2000")], W,
      (None, None, None, Some("casual"))),
    e("Rf3", &[("Event", "Some Open"), ("TimeControl", ""), ("UTCDate", "2021.03.04"), ("Date", "2018.01.01"), ("WhiteElo", "0"), ("BlackElo", "1500")], D,
      (Some("2021-03"), None, None, None)),
    e("Rg3", &[("Event", "Casual Rapid game"), ("UTCDate", "garbage"), ("Date", "2017.06.??"), ("WhiteElo", "1800")], Some("*"),
      (Some("2017-06"), None, None, Some("casual"))),
    e("Nc3", &[("Event", "Rated UltraBullet game"), ("TimeControl", "29+0"), ("UTCDate", "2021.??.??"), ("Date", "2015.01.01"), ("WhiteElo", "999"), ("BlackElo", "1001")], B,
      (Some("2021"), Some("ultraBullet"), Some(1000), Some("rated"))),
    e("Nf3", &[("Event", "Casual Bullet game"), ("TimeControl", "30+0"), ("UTCDate", "2020.12.31"), ("WhiteElo", "2499"), ("BlackElo", "2500")], W,
      (Some("2020-12"), Some("bullet"), Some(2200), Some("casual"))),
    e("Nh3", &[("Event", "Rated Bullet game"), ("TimeControl", "179"), ("UTCDate", "2019.01.15"), ("WhiteElo", "2500"), ("BlackElo", "2501")], W,
      (Some("2019-01"), Some("bullet"), Some(2500), Some("rated"))),
    e("b3", &[("Event", "Rated Blitz game"), ("TimeControl", "180"), ("UTCDate", "2018.07.07"), ("WhiteElo", "3000"), ("BlackElo", "2900")], D,
      (Some("2018-07"), Some("blitz"), Some(2500), Some("rated"))),
    e("b4", &[("Event", "Rated Bullet game"), ("TimeControl", "0+1"), ("UTCDate", "2022.02.02"), ("WhiteElo", "500"), ("BlackElo", "600")], B,
      (Some("2022-02"), Some("bullet"), Some(0), Some("rated"))),
    e("c3", &[("Event", "Rated Rapid game"), ("TimeControl", "1499"), ("UTCDate", "2022.11.30"), ("WhiteElo", "1199"), ("BlackElo", "1201")], W,
      (Some("2022-11"), Some("rapid"), Some(1200), Some("rated"))),
    e("c4", &[("Event", "Casual Classical game"), ("TimeControl", "1500"), ("UTCDate", "2005.05.05"), ("WhiteElo", "1399"), ("BlackElo", "1400")], W,
      (Some("2005-05"), Some("classical"), Some(1200), Some("casual"))),
    e("d3", &[("Event", "Rated Classical game"), ("TimeControl", "21599"), ("UTCDate", "1999.12.31"), ("WhiteElo", "1600"), ("BlackElo", "1600")], B,
      (Some("1999-12"), Some("classical"), Some(1600), Some("rated"))),
    e("d4", &[("Event", "Rated Correspondence game"), ("TimeControl", "21600"), ("Date", "1995.03.??"), ("WhiteElo", "1800"), ("BlackElo", "1900")], D,
      (Some("1995-03"), Some("correspondence"), Some(1800), Some("rated"))),
    e("e3", &[("Event", "Rated"), ("TimeControl", "abc"), ("Date", "2010.10.10"), ("WhiteElo", "2000"), ("BlackElo", "2000")], W,
      (Some("2010-10"), None, Some(2000), Some("rated"))),
    e("e4", &[("Event", "Casual"), ("TimeControl", "300+a"), ("Date", "2011.11.??"), ("WhiteElo", "2200"), ("BlackElo", "2300")], B,
      (Some("2011-11"), None, Some(2200), Some("casual"))),
    e("f3", &[("Event", "Rated Rapid game"), ("TimeControl", "120+9"), ("UTCDate", "2023.01.01"), ("WhiteElo", "1000"), ("BlackElo", "999")], W,
      (Some("2023-01"), Some("rapid"), Some(0), Some("rated"))),
    e("f4", &[("Event", "Rated Blitz game"), ("TimeControl", "60+3"), ("UTCDate", "2023.02.28"), ("Date", "2023.02.28"), ("WhiteElo", "1700"), ("BlackElo", "1800")], D,
      (Some("2023-02"), Some("blitz"), Some(1600), Some("rated"))),
    e("g3", &[("Event", "Rated UltraBullet game"), ("TimeControl", "2+0"), ("UTCDate", "2020-05-01"), ("Date", "2016.04.04"), ("WhiteElo", "1500"), ("BlackElo", "?")], B,
      (Some("2016-04"), Some("ultraBullet"), None, Some("rated"))),
    e("g4", &[("Event", "casual rapid"), ("TimeControl", "600+0"), ("UTCDate", "2024.04.04"), ("WhiteElo", "2600"), ("BlackElo", "2700")], None,
      (Some("2024-04"), Some("rapid"), Some(2500), Some("casual"))),
    // The shared position three times: a3a2 counts once, a3b3 once (beside game 1's).
    e("1. a4 a5 2. h4 h5 3. Ra3 Ra6 4. Ra2 Ra7 5. Ra3 Ra6 6. Ra2 Ra7 7. Ra3 Ra6 8. Rb3 Rb6",
      &[("Event", "Rated Rapid game"), ("TimeControl", "900+0"), ("UTCDate", "2021.07.07"), ("WhiteElo", "1900"), ("BlackElo", "1950")], D,
      (Some("2021-07"), Some("rapid"), Some(1800), Some("rated"))),
    // From a FEN: the same position as the played line.
    e("4. Ra1 Rb6", &[("Variant", "From Position"), ("SetUp", "1"), ("FEN", EDGE_FEN), ("Event", "Casual UltraBullet game"), ("TimeControl", "10+0"), ("UTCDate", "2022.06.06"), ("WhiteElo", "2100"), ("BlackElo", "2150")], W,
      (Some("2022-06"), Some("ultraBullet"), Some(2000), Some("casual"))),
    e("Rh2", &[("Event", "Rated Classical game"), ("TimeControl", "5400+30"), ("Date", "2008.08.08"), ("WhiteElo", "2450"), ("BlackElo", "2450")], B,
      (Some("2008-08"), Some("classical"), Some(2200), Some("rated"))),
    e("Rah3", &[("Variant", "Standard"), ("Event", "Casual Blitz game"), ("TimeControl", "180+0"), ("UTCDate", "2019.09.09"), ("WhiteElo", "1234"), ("BlackElo", "1234")], B,
      (Some("2019-09"), Some("blitz"), Some(1200), Some("casual"))),
];

/// Games §2 skips: a variant, an illegal move.
const SKIPPED: &str = "[Event \"Rated Blitz game\"]\n[Site \"edge-variant\"]\n[Variant \"Atomic\"]\n\
[TimeControl \"180+0\"]\n[UTCDate \"2020.01.01\"]\n[WhiteElo \"2000\"]\n[BlackElo \"2000\"]\n\
[Result \"1-0\"]\n\n1. a4 a5 2. h4 h5 3. Ra3 Ra6 4. e3 Rb6 1-0\n\n\
[Event \"Rated Blitz game\"]\n[Site \"edge-illegal\"]\n[TimeControl \"180+0\"]\n\
[UTCDate \"2020.01.01\"]\n[WhiteElo \"2000\"]\n[BlackElo \"2000\"]\n[Result \"1-0\"]\n\n\
1. a4 a5 2. h4 h5 3. Ra3 Ra6 4. Ke3 Rb6 1-0\n\n";

fn edge_pgn() -> String {
    let mut out = String::new();
    for (i, g) in EDGE.iter().enumerate() {
        out.push_str(&format!(
            "[Site \"edge-{i}\"]\n[Round \"{i}\"]\n[White \"White {i}\"]\n[Black \"Black {i}\"]\n"
        ));
        for (k, v) in g.tags {
            out.push_str(&format!("[{k} \"{v}\"]\n"));
        }
        if let Some(r) = g.result {
            out.push_str(&format!("[Result \"{r}\"]\n"));
        }
        let moves = if g.moves.starts_with("1.") || g.moves.starts_with("4.") {
            g.moves.to_string()
        } else {
            format!("1. a4 a5 2. h4 h5 3. Ra3 Ra6 4. {} Rb6", g.moves)
        };
        out.push_str(&format!("\n{moves} {}\n\n", g.result.unwrap_or("1-0")));
    }
    out.push_str(SKIPPED);
    out
}

// ---------------------------------------------------------------------------------------------
// Positions, filters, routes.

struct Pos {
    name: &'static str,
    fen: Option<&'static str>,
    play: &'static [&'static str],
}

const E4_FEN: &str = "rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq - 0 1";

#[rustfmt::skip]
const POSITIONS: &[Pos] = &[
    Pos { name: "start", fen: None, play: &[] },
    Pos { name: "1.e4", fen: None, play: &["e2e4"] },
    Pos { name: "1.e4 c5", fen: None, play: &["e2e4", "c7c5"] },
    Pos { name: "1.d4 Nf6", fen: None, play: &["d2d4", "g8f6"] },
    Pos { name: "Sicilian, 8 plies", fen: None, play: &["e2e4", "c7c5", "g1f3", "d7d6", "d2d4", "c5d4", "f3d4", "g8f6"] },
    Pos { name: "QGD, 10 plies", fen: None, play: &["d2d4", "d7d5", "c2c4", "e7e6", "b1c3", "g8f6", "c1g5", "f8e7", "e2e3", "e8g8"] },
    Pos { name: "few games (1.e4 e5 2.Nf3 Nc6 3.Bb5 f5)", fen: None, play: &["e2e4", "e7e5", "g1f3", "b8c6", "f1b5", "f7f5"] },
    Pos { name: "1.e4 by FEN", fen: Some(E4_FEN), play: &[] },
    Pos { name: "1.e4 c5 by FEN + play", fen: Some(E4_FEN), play: &["c7c5"] },
    Pos { name: "edge", fen: None, play: EDGE_LINE },
    Pos { name: "edge 4.Nf3 (black moves, both rated)", fen: None, play: &["a2a4", "a7a5", "h2h4", "h7h5", "a1a3", "a8a6", "g1f3"] },
    Pos { name: "edge 4.Re3 (black moves, white unrated)", fen: None, play: &["a2a4", "a7a5", "h2h4", "h7h5", "a1a3", "a8a6", "a3e3"] },
    Pos { name: "edge 4.Rg3 (black moves, no BlackElo)", fen: None, play: &["a2a4", "a7a5", "h2h4", "h7h5", "a1a3", "a8a6", "a3g3"] },
];

/// Filter combinations, as HTTP query strings.
const FILTERS: &[&str] = &[
    "",
    "speeds=ultraBullet",
    "speeds=bullet",
    "speeds=blitz",
    "speeds=rapid",
    "speeds=classical",
    "speeds=correspondence",
    "speeds=blitz,rapid",
    "speeds=ultraBullet,bullet,blitz,rapid,classical,correspondence",
    "ratings=400",
    "ratings=1000",
    "ratings=1600,1800",
    "ratings=2000,2200",
    "ratings=2100",
    "ratings=2500",
    "ratings=2800",
    "ratings=0,1000,1200,1400,1600,1800,2000,2200,2500",
    "modes=rated",
    "modes=casual",
    "modes=rated,casual",
    "since=2020-01",
    "until=2005-06",
    "since=2010-01&until=2012-12",
    "since=2019-03&until=2019-03",
    "since=2000&until=2005",
    "since=2019",
    "until=1999",
    "since=2021&until=2021",
    "since=2021-01&until=2021-12",
    "speeds=blitz&ratings=2200&modes=rated",
    "speeds=blitz&ratings=2200&since=2020-01&until=2022-12",
    "speeds=classical,correspondence&since=2000",
    "speeds=bullet&ratings=1600,1800&since=2015-01&until=2020-12",
    "modes=casual&ratings=2500",
    "speeds=ultraBullet&modes=casual&until=2010",
    "speeds=rapid,classical&modes=rated&ratings=1800,2000,2200&since=2005&until=2015",
    "ratings=1000,1200&modes=casual&since=1995-01&until=2024-12",
    "speeds=blitz,bullet,ultraBullet&modes=rated&ratings=1400,1600,1800,2000",
];

/// History queries: (positions by name, filters), asked on every route.
const HISTORY_FILTERS: &[&str] = &[
    "",
    "since=2020-01&until=2021-06&speeds=blitz,rapid",
    "since=2019-01",
    "until=2000-12",
    "ratings=2200&speeds=blitz",
    "since=2018&until=2022",
    "since=2021&until=2021",
    "modes=casual",
    "since=1990&until=2005",
    "since=2019-03&until=2019-08",
];
const HISTORY_POSITIONS: &[&str] = &[
    "start",
    "1.e4",
    "1.e4 c5",
    "edge",
    "few games (1.e4 e5 2.Nf3 Nc6 3.Bb5 f5)",
];

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Route {
    Lichess,
    Masters,
    Probe,
}

impl Route {
    fn name(self) -> &'static str {
        match self {
            Route::Lichess => "lichess",
            Route::Masters => "masters",
            Route::Probe => "probe",
        }
    }
}

const ROUTES: [Route; 3] = [Route::Lichess, Route::Masters, Route::Probe];

struct Query {
    route: Route,
    pos: &'static Pos,
    filters: &'static str,
    history: bool,
}

fn pairs(filters: &str) -> Vec<(&str, &str)> {
    filters
        .split('&')
        .filter(|p| !p.is_empty())
        .map(|p| p.split_once('=').expect("name=value"))
        .collect()
}

impl Query {
    /// The query as the oracle reads it.
    fn oracle(&self) -> Value {
        let mut f = Map::new();
        for (k, v) in pairs(self.filters) {
            let val = match k {
                "ratings" => json!(
                    v.split(',')
                        .map(|r| r.parse::<i64>().unwrap())
                        .collect::<Vec<_>>()
                ),
                "speeds" | "modes" => json!(v.split(',').collect::<Vec<_>>()),
                _ => json!(v),
            };
            f.insert(k.to_string(), val);
        }
        json!({"fen": self.pos.fen, "play": self.pos.play, "filters": f,
               "history": self.history, "route": self.route.name()})
    }

    fn http_path(&self) -> String {
        let mut q = Vec::new();
        if let Some(fen) = self.pos.fen {
            q.push(format!("fen={}", enc(fen)));
        }
        if !self.pos.play.is_empty() {
            q.push(format!("play={}", self.pos.play.join(",")));
        }
        if !self.filters.is_empty() {
            q.push(self.filters.to_string());
        }
        if self.history {
            q.push("history=true".into());
        }
        q.push("moves=100".into());
        format!("/{}?{}", self.route.name(), q.join("&"))
    }

    fn probe_args(&self, book: &Path) -> Vec<String> {
        let mut a: Vec<String> = vec!["probe".into(), "--book".into(), s(book).into()];
        if let Some(fen) = self.pos.fen {
            a.extend(["--fen".into(), fen.into()]);
        }
        if !self.pos.play.is_empty() {
            a.extend(["--moves".into(), self.pos.play.join(" ")]);
        }
        for (k, v) in pairs(self.filters) {
            a.extend([format!("--{k}"), v.into()]);
        }
        if self.history {
            a.push("--history".into());
        }
        a.push("--json".into());
        a
    }

    /// `[label route | position | filters]` and the command line or request.
    fn describe(&self, book: &Path, label: &str) -> String {
        let what = format!(
            "[{label}{} | {} | {}{}]",
            self.route.name(),
            self.pos.name,
            if self.filters.is_empty() {
                "no filter"
            } else {
                self.filters
            },
            if self.history { " | history" } else { "" }
        );
        match self.route {
            Route::Probe => format!(
                "{what} bookdb {}",
                self.probe_args(book)[1..]
                    .iter()
                    .map(|a| if a.contains(' ') {
                        format!("{a:?}")
                    } else {
                        a.clone()
                    })
                    .collect::<Vec<_>>()
                    .join(" ")
            ),
            _ => format!("{what} GET {}", self.http_path()),
        }
    }

    /// The facets the query needs (month for since/until/history).
    fn facets(&self) -> BTreeSet<&'static str> {
        let mut f: BTreeSet<&str> = pairs(self.filters)
            .iter()
            .map(|(k, _)| match *k {
                "speeds" => "speed",
                "ratings" => "rating",
                "modes" => "mode",
                _ => "month",
            })
            .collect();
        if self.history {
            f.insert("month");
        }
        f
    }
}

fn position(name: &str) -> &'static Pos {
    POSITIONS.iter().find(|p| p.name == name).unwrap()
}

/// Every query of the comparison table: positions x filters x routes, then the history ones.
fn table() -> Vec<Query> {
    let mut qs = Vec::new();
    for route in ROUTES {
        for pos in POSITIONS {
            for f in FILTERS {
                qs.push(Query {
                    route,
                    pos,
                    filters: f,
                    history: false,
                });
            }
        }
        for name in HISTORY_POSITIONS {
            for f in HISTORY_FILTERS {
                qs.push(Query {
                    route,
                    pos: position(name),
                    filters: f,
                    history: true,
                });
            }
        }
    }
    qs
}

// ---------------------------------------------------------------------------------------------
// Running the oracle and bookdb.

/// Runs the oracle over `pgns` with `queries`; returns its whole answer.
fn oracle(py: &str, pgns: &[PathBuf], queries: &[Value], extra: &[&str], dir: &Path) -> Value {
    let qfile = dir.join("oracle-queries.json");
    std::fs::write(&qfile, serde_json::to_vec(queries).unwrap()).unwrap();
    let out = Command::new(py)
        .arg(ORACLE)
        .args(pgns)
        .args(["--max-ply", MAX_PLY, "--queries"])
        .arg(&qfile)
        .args(extra)
        .output()
        .expect("run the oracle");
    assert!(
        out.status.success(),
        "facet_oracle.py failed: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    eprint!("{}", String::from_utf8_lossy(&out.stderr));
    serde_json::from_slice(&out.stdout).expect("oracle JSON")
}

/// `bookdb import PGNS --book BOOK --max-ply 30 [--facets F] --json`: the report.
fn import(pgns: &[PathBuf], book: &Path, facets: Option<&str>) -> Value {
    let mut cmd = Bookdb::import(pgns, book).args(["--max-ply", MAX_PLY, "--json", "--quiet"]);
    if let Some(f) = facets {
        cmd = cmd.args(["--facets", f]);
    }
    cmd.json()
}

/// What bookdb answered.
enum Answer {
    Ok(Value),
    /// HTTP 400 with `{"error": …}`, or probe exit code 2.
    Refused(String),
    Other(String),
}

fn ask(srv: &Server, book: &Path, q: &Query) -> Answer {
    match q.route {
        Route::Probe => {
            let out = bookdb(q.probe_args(book)).output();
            let stdout = String::from_utf8_lossy(&out.stdout).into_owned();
            let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
            match out.status.code() {
                Some(0) => match serde_json::from_str(&stdout) {
                    Ok(v) => Answer::Ok(v),
                    Err(e) => Answer::Other(format!("exit 0, not JSON ({e}): {stdout}")),
                },
                // A filter the book cannot answer: the library's usage error, exit 1 with
                // `"kind":"usage"` under --json (a value clap cannot parse would be exit 2).
                Some(1) if stderr.contains("\"kind\":\"usage\"") => {
                    Answer::Refused(stderr.trim().to_string())
                }
                Some(2) => Answer::Refused(stderr.trim().to_string()),
                c => Answer::Other(format!("exit {c:?}: {}", stderr.trim())),
            }
        }
        _ => {
            let r = srv.get(&q.http_path());
            let json: Option<Value> = serde_json::from_str(&r.body).ok();
            match (r.status, json) {
                (200, Some(v)) => Answer::Ok(v),
                (400, Some(v)) if v["error"].is_string() => {
                    Answer::Refused(v["error"].as_str().unwrap().to_string())
                }
                (st, _) => Answer::Other(format!("HTTP {st}: {}", r.body)),
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// Comparing.

const MOVE_FIELDS: &[&str] = &[
    "san",
    "white",
    "draws",
    "black",
    "unknown",
    "averageRating",
    "averageOpponentRating",
    "performance",
];

fn show(v: Option<&Value>) -> String {
    match v {
        None => "absent".into(),
        Some(v) => v.to_string(),
    }
}

/// The differences between the oracle's answer and bookdb's, one line each.
fn diff(q: &Query, want: &Value, got: &Value) -> Vec<String> {
    let mut out = Vec::new();
    for k in ["key", "fen", "white", "draws", "black", "unknown"] {
        if want.get(k) != got.get(k) {
            out.push(format!(
                "{k}: oracle {}, bookdb {}",
                show(want.get(k)),
                show(got.get(k))
            ));
        }
    }
    // Moves, as maps by uci.
    let mut moves: BTreeMap<String, &Value> = BTreeMap::new();
    match got["moves"].as_array() {
        None => out.push(format!("moves: bookdb gave {}", show(got.get("moves")))),
        Some(arr) => {
            let games = |m: &Value| {
                ["white", "draws", "black", "unknown"]
                    .iter()
                    .map(|k| m[*k].as_u64().unwrap_or(0))
                    .sum::<u64>()
            };
            if arr.windows(2).any(|w| games(&w[0]) < games(&w[1])) {
                out.push("moves: not sorted by games, descending".into());
            }
            for m in arr {
                let uci = m["uci"].as_str().unwrap_or("<no uci>").to_string();
                if moves.insert(uci.clone(), m).is_some() {
                    out.push(format!("moves.{uci}: listed twice"));
                }
            }
        }
    }
    let empty = Map::new();
    let want_moves = want["moves"].as_object().unwrap_or(&empty);
    let ucis: BTreeSet<&str> = want_moves
        .keys()
        .map(String::as_str)
        .chain(moves.keys().map(String::as_str))
        .collect();
    for uci in ucis {
        match (want_moves.get(uci), moves.get(uci)) {
            (Some(w), None) => out.push(format!("moves.{uci}: oracle {w}, bookdb absent")),
            (None, Some(g)) => out.push(format!("moves.{uci}: oracle absent, bookdb {g}")),
            (Some(w), Some(g)) => {
                for f in MOVE_FIELDS {
                    if w.get(*f) != g.get(*f) {
                        out.push(format!(
                            "moves.{uci}.{f}: oracle {}, bookdb {}",
                            show(w.get(*f)),
                            show(g.get(*f))
                        ));
                    }
                }
                if g.get("games").is_some() && g.get("games") != w.get("games") {
                    out.push(format!(
                        "moves.{uci}.games: oracle {}, bookdb {}",
                        show(w.get("games")),
                        show(g.get("games"))
                    ));
                }
            }
            (None, None) => unreachable!(),
        }
    }
    // History.
    match (q.history, got.get("history")) {
        (false, None) => {}
        (false, Some(h)) => out.push(format!(
            "history: not asked for, bookdb gave {}",
            truncate(&h.to_string())
        )),
        (true, None) => out.push(format!(
            "history: oracle {}, bookdb absent",
            truncate(&want["history"].to_string())
        )),
        (true, Some(h)) => history_diff(&want["history"], h, &mut out),
    }
    out
}

fn truncate(s: &str) -> String {
    if s.len() > 300 {
        format!("{}… ({} chars)", &s[..300], s.len())
    } else {
        s.to_string()
    }
}

fn history_diff(want: &Value, got: &Value, out: &mut Vec<String>) {
    let (Some(w), Some(g)) = (want.as_array(), got.as_array()) else {
        out.push(format!(
            "history: bookdb gave {}",
            truncate(&got.to_string())
        ));
        return;
    };
    let label = |e: &Value| {
        e.get("month")
            .or(e.get("year"))
            .map(|v| v.to_string())
            .unwrap_or_else(|| "?".into())
    };
    if w.len() != g.len() {
        out.push(format!(
            "history: oracle {} entries ({} .. {}), bookdb {} ({} .. {})",
            w.len(),
            w.first().map(label).unwrap_or_default(),
            w.last().map(label).unwrap_or_default(),
            g.len(),
            g.first().map(label).unwrap_or_default(),
            g.last().map(label).unwrap_or_default(),
        ));
    }
    let mut shown = 0;
    for (i, (we, ge)) in w.iter().zip(g).enumerate() {
        let mut fields = vec!["month", "year", "white", "draws", "black"];
        if ge.get("unknown").is_some() {
            fields.push("unknown");
        }
        let bad: Vec<String> = fields
            .iter()
            .filter(|f| we.get(**f) != ge.get(**f))
            .map(|f| {
                format!(
                    "{f} oracle {} bookdb {}",
                    show(we.get(*f)),
                    show(ge.get(*f))
                )
            })
            .collect();
        if !bad.is_empty() {
            shown += 1;
            if shown <= 6 {
                out.push(format!("history[{i}] ({}): {}", label(we), bad.join(", ")));
            }
        }
    }
    if shown > 6 {
        out.push(format!("history: {} more entries differ", shown - 6));
    }
}

/// Mismatches found, reported together at the end of a test.
#[derive(Default)]
struct Report {
    failures: Vec<(String, Vec<String>)>,
    checked: usize,
}

impl Report {
    fn add(&mut self, what: String, diffs: Vec<String>) {
        self.checked += 1;
        if !diffs.is_empty() {
            self.failures.push((what, diffs));
        }
    }

    fn finish(self, title: &str) {
        if self.failures.is_empty() {
            eprintln!("{title}: {} checks agree", self.checked);
            return;
        }
        // A summary by route and field, then the cases.
        let mut kinds: BTreeMap<String, usize> = BTreeMap::new();
        for (what, diffs) in &self.failures {
            let route = what
                .split(['[', '|', ']'])
                .nth(1)
                .unwrap_or("")
                .trim()
                .to_string();
            let route = if what.starts_with('[') {
                route
            } else {
                what.split_whitespace()
                    .take(2)
                    .collect::<Vec<_>>()
                    .join(" ")
            };
            let fields: BTreeSet<String> = diffs
                .iter()
                .map(|d| {
                    let f = d.split(':').next().unwrap_or("");
                    // moves.e2e4.averageRating -> moves.*.averageRating
                    let parts: Vec<&str> = f.split('.').collect();
                    if parts.len() == 3 {
                        format!("moves.*.{}", parts[2])
                    } else if parts[0] == "moves" && parts.len() == 2 {
                        "moves.* (missing/extra)".into()
                    } else if f.starts_with("history[") {
                        "history[*]".into()
                    } else {
                        f.to_string()
                    }
                })
                .collect();
            for f in fields {
                *kinds.entry(format!("{route}: {f}")).or_default() += 1;
            }
        }
        let mut msg = format!(
            "{title}: {} of {} checks disagree\nby route and field (number of checks):\n",
            self.failures.len(),
            self.checked
        );
        for (k, n) in &kinds {
            msg.push_str(&format!("  {k}: {n}\n"));
        }
        for (what, diffs) in self.failures.iter().take(60) {
            msg.push_str(&format!("\n{what}\n"));
            for d in diffs.iter().take(12) {
                msg.push_str(&format!("    {d}\n"));
            }
            if diffs.len() > 12 {
                msg.push_str(&format!("    … {} more\n", diffs.len() - 12));
            }
        }
        if self.failures.len() > 60 {
            msg.push_str(&format!("\n… {} more checks\n", self.failures.len() - 60));
        }
        eprintln!("{msg}");
        panic!("{title}: {} mismatches (see above)", self.failures.len());
    }
}

/// A generic JSON difference, by path (for answers that must be equal as a whole).
fn json_diff(a: &Value, b: &Value, path: &str, out: &mut Vec<String>) {
    match (a, b) {
        (Value::Object(x), Value::Object(y)) => {
            let keys: BTreeSet<&String> = x.keys().chain(y.keys()).collect();
            for k in keys {
                match (x.get(k), y.get(k)) {
                    (Some(p), Some(q)) => json_diff(p, q, &format!("{path}.{k}"), out),
                    (p, q) => out.push(format!("{path}.{k}: {} vs {}", show(p), show(q))),
                }
            }
        }
        (Value::Array(x), Value::Array(y)) if x.len() == y.len() => {
            for (i, (p, q)) in x.iter().zip(y).enumerate() {
                json_diff(p, q, &format!("{path}[{i}]"), out);
            }
        }
        _ if a != b => out.push(format!(
            "{path}: {} vs {}",
            truncate(&a.to_string()),
            truncate(&b.to_string())
        )),
        _ => {}
    }
}

// ---------------------------------------------------------------------------------------------
// Fixture.

struct Fixture {
    _tmp: tempfile::TempDir,
    dir: PathBuf,
    py: String,
    /// The retagged games, then the edge games.
    pgns: Vec<PathBuf>,
}

/// The shipped retagged games plus the edge games, or `None` with a printed reason.
fn fixture() -> Option<Fixture> {
    let py = python_chess()?;
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().to_path_buf();
    let games = retagged_games(&py);
    let retagged = dir.join("retagged.pgn");
    write_games(&retagged, &games[..GAMES.min(games.len())]);
    let edge = dir.join("edge.pgn");
    std::fs::write(&edge, edge_pgn()).unwrap();
    Some(Fixture {
        _tmp: tmp,
        dir,
        py,
        pgns: vec![retagged, edge],
    })
}

/// The import report agrees with the oracle's count of games counted and skipped.
fn check_counts(report: &Value, oracle: &Value) {
    let counted = oracle["games"]["counted"].as_u64().unwrap();
    let skipped: u64 = oracle["games"]["skipped"]
        .as_object()
        .unwrap()
        .values()
        .map(|v| v.as_u64().unwrap())
        .sum();
    assert_eq!(
        report["games_imported"].as_u64(),
        Some(counted),
        "games counted: oracle {counted}, bookdb's import report {report}"
    );
    assert_eq!(
        report["games_skipped"].as_u64(),
        Some(skipped),
        "games skipped: oracle {}, bookdb's import report {report}",
        oracle["games"]
    );
}

/// Compares every query of `qs` on `book` (served by `srv`) with the oracle's `answers`;
/// queries needing a facet outside `kept` must be refused instead.
fn compare(
    label: &str,
    srv: &Server,
    book: &Path,
    qs: &[&Query],
    answers: &[&Value],
    kept: &BTreeSet<&str>,
    report: &mut Report,
) {
    for (q, want) in qs.iter().zip(answers) {
        let what = q.describe(book, label);
        let needs_refusal = !q.facets().is_subset(kept);
        let diffs = match (ask(srv, book, q), needs_refusal) {
            (Answer::Ok(got), false) => diff(q, want, &got),
            (Answer::Refused(_), true) => vec![],
            (Answer::Ok(got), true) => vec![format!(
                "refusal: the book keeps only {kept:?}, the query needs {:?}; bookdb answered {}",
                q.facets(),
                truncate(&got.to_string())
            )],
            (Answer::Refused(e), false) => vec![format!(
                "answer: oracle {}, bookdb refused: {e}",
                truncate(&want.to_string())
            )],
            (Answer::Other(e), _) => vec![format!("bookdb failed: {e}")],
        };
        report.add(what, diffs);
    }
}

// ---------------------------------------------------------------------------------------------
// Tests.

/// The oracle's own invariants, and its reading of the edge games' tags against §8 read by
/// hand; then bookdb on the edge games alone against the oracle.
#[test]
fn edge_games_fall_in_the_cells_section_8_gives() {
    let Some(py) = python_chess() else {
        return;
    };
    let tmp = tempfile::tempdir().unwrap();
    let edge = tmp.path().join("edge.pgn");
    std::fs::write(&edge, edge_pgn()).unwrap();
    let pgns = vec![edge];

    // The oracle reads the tags as written above.
    let o = oracle(&py, &pgns, &[], &["--cells", "--self-check"], tmp.path());
    let cells = o["cells"].as_array().unwrap();
    assert_eq!(cells.len(), EDGE.len(), "{}", o["games"]);
    assert_eq!(o["games"]["skipped"], json!({"variant": 1, "illegal": 1}));
    for (g, c) in EDGE.iter().zip(cells) {
        let (period, speed, group, mode) = g.cell;
        let got = (
            c["period"].as_str(),
            c["speed"].as_str(),
            c["group"].as_u64().map(|x| x as u32),
            c["mode"].as_str(),
        );
        assert_eq!(
            got,
            (period, speed, group, mode),
            "edge game {}: {c}",
            g.moves
        );
        let result = match g.result {
            Some("1-0") => "white",
            Some("0-1") => "black",
            Some("1/2-1/2") => "draws",
            _ => "unknown",
        };
        assert_eq!(c["result"], result, "edge game {}", g.moves);
    }

    // bookdb on the edge games alone, at the edge positions, every filter, every route.
    let book = tmp.path().join("edge.book");
    let report = import(&pgns, &book, None);
    let qs: Vec<Query> = table()
        .into_iter()
        .filter(|q| q.pos.name.starts_with("edge"))
        .collect();
    let o = oracle(
        &py,
        &pgns,
        &qs.iter().map(Query::oracle).collect::<Vec<_>>(),
        &[],
        tmp.path(),
    );
    check_counts(&report, &o);
    let answers: Vec<&Value> = o["answers"].as_array().unwrap().iter().collect();
    // The edge position holds one move per game (two games for a3b3) and every filter of the
    // table selects a proper, non-empty part of them at least once.
    let all = answers[0]["moves"].as_object().unwrap();
    assert_eq!(all.len(), EDGE.len(), "{}", answers[0]);
    let srv = Server::start(&book, &[]);
    let mut rep = Report::default();
    let kept: BTreeSet<&str> = ["month", "speed", "rating", "mode"].into();
    compare(
        "",
        &srv,
        &book,
        &qs.iter().collect::<Vec<_>>(),
        &answers,
        &kept,
        &mut rep,
    );
    rep.finish("edge games: bookdb vs the oracle");
}

/// The table: every filter combination at every position on every route, and history, on the
/// retagged real games; unfiltered answers equal a `--facets none` book's; books keeping some
/// facets answer those and refuse the rest; berserk reads what the oracle says.
#[test]
fn faceted_answers_match_the_oracle() {
    let Some(fx) = fixture() else {
        return;
    };
    let qs = table();
    let o = oracle(
        &fx.py,
        &fx.pgns,
        &qs.iter().map(Query::oracle).collect::<Vec<_>>(),
        &["--self-check"],
        &fx.dir,
    );
    let answers: Vec<&Value> = o["answers"].as_array().unwrap().iter().collect();
    assert_eq!(answers.len(), qs.len());
    // The table is not vacuous: most answers list moves, history spans months.
    let nonempty = answers
        .iter()
        .filter(|a| !a["moves"].as_object().unwrap().is_empty())
        .count();
    assert!(
        nonempty * 3 > qs.len() * 2,
        "{nonempty} of {} answers list moves",
        qs.len()
    );

    let book = fx.dir.join("facets.book");
    let report = import(&fx.pgns, &book, None);
    check_counts(&report, &o);
    let srv = Server::start(&book, &[]);
    let all: BTreeSet<&str> = ["month", "speed", "rating", "mode"].into();
    let mut rep = Report::default();
    compare(
        "",
        &srv,
        &book,
        &qs.iter().collect::<Vec<_>>(),
        &answers,
        &all,
        &mut rep,
    );

    // Unfiltered answers equal those of a book of the same games without facets (which
    // keeps no opponent ratings: `averageOpponentRating` and `performance` may be absent
    // there, but where given they must agree).
    let plain = fx.dir.join("plain.book");
    import(&fx.pgns, &plain, Some("none"));
    let plain_srv = Server::start(&plain, &[]);
    for q in qs.iter().filter(|q| q.filters.is_empty() && !q.history) {
        let what = q.describe(&book, "all facets vs --facets none, ");
        let mut d = Vec::new();
        match (ask(&srv, &book, q), ask(&plain_srv, &plain, q)) {
            (Answer::Ok(a), Answer::Ok(b)) => {
                let mut raw = Vec::new();
                json_diff(&a, &b, "", &mut raw);
                d.extend(raw.into_iter().filter(|l| {
                    !(l.contains(".averageOpponentRating: ") || l.contains(".performance: "))
                        || !l.ends_with(" vs absent")
                }));
            }
            _ => d.push("one of the books did not answer".into()),
        }
        rep.add(what, d);
    }

    // Books keeping some facets: the filters they keep as the oracle, the others refused.
    for facets in ["speed,mode", "month", "rating"] {
        let part = fx
            .dir
            .join(format!("part-{}.book", facets.replace(',', "-")));
        import(&fx.pgns, &part, Some(facets));
        let part_srv = Server::start(&part, &[]);
        let kept: BTreeSet<&str> = facets.split(',').collect();
        let sel: Vec<(&Query, &Value)> = qs
            .iter()
            .zip(answers.iter().copied())
            .filter(|(q, _)| {
                q.route != Route::Masters && ["start", "1.e4 c5", "edge"].contains(&q.pos.name)
            })
            .collect();
        let (sq, sa): (Vec<&Query>, Vec<&Value>) = sel.into_iter().unzip();
        let label = format!("--facets {facets} book, ");
        compare(&label, &part_srv, &part, &sq, &sa, &kept, &mut rep);
    }

    berserk_reads_the_oracle(&fx, &srv, &mut rep);
    rep.finish("facets: bookdb vs the oracle");
}

/// berserk's `get_lichess_games(speeds=["blitz"], ratings=["2200"], since="2020-01",
/// until="2022-12", history=True)` and `get_masters_games(since=1990, until=2005)` (as written,
/// so 12 moves at most, and with moves=100) return what the oracle says.
fn berserk_reads_the_oracle(fx: &Fixture, srv: &Server, rep: &mut Report) {
    let Some(py) = berserk_python() else {
        return;
    };
    let out = Command::new(py)
        .arg(BERSERK)
        .arg(format!("http://{}", srv.addr))
        .output()
        .unwrap();
    if !out.status.success() {
        rep.add(
            "berserk_facets.py".into(),
            vec![format!(
                "berserk failed: {}",
                String::from_utf8_lossy(&out.stderr)
            )],
        );
        return;
    }
    let got: Value = serde_json::from_slice(&out.stdout).unwrap();
    eprintln!("berserk: comparing its 4 answers with the oracle");
    let start = position("start");
    let lichess = Query {
        route: Route::Lichess,
        pos: start,
        filters: "speeds=blitz&ratings=2200&since=2020-01&until=2022-12",
        history: true,
    };
    let masters = Query {
        route: Route::Masters,
        pos: start,
        filters: "since=1990&until=2005",
        history: false,
    };
    let o = oracle(
        &fx.py,
        &fx.pgns,
        &[lichess.oracle(), masters.oracle()],
        &[],
        &fx.dir,
    );
    let want = o["answers"].as_array().unwrap();
    for (name, q, w, limited) in [
        ("lichess_all", &lichess, &want[0], false),
        ("lichess", &lichess, &want[0], true),
        ("masters_all", &masters, &want[1], false),
        ("masters", &masters, &want[1], true),
    ] {
        let g = &got[name];
        let what = q.describe(Path::new("-"), &format!("berserk {name}, "));
        if !limited {
            rep.add(what, diff(q, w, g));
            continue;
        }
        // As written (no moves=): the 12 most played, each as the oracle says.
        let mut w = w.clone();
        let listed: BTreeSet<String> = g["moves"]
            .as_array()
            .map(|a| {
                a.iter()
                    .filter_map(|m| m["uci"].as_str().map(String::from))
                    .collect()
            })
            .unwrap_or_default();
        let wm = w["moves"].as_object().unwrap().clone();
        let mut d = Vec::new();
        if listed.len() != wm.len().min(12) {
            d.push(format!(
                "moves: berserk got {} moves, the oracle has {} (12 at most expected)",
                listed.len(),
                wm.len()
            ));
        }
        let least = listed
            .iter()
            .filter_map(|u| wm.get(u))
            .map(|m| m["games"].as_u64().unwrap())
            .min()
            .unwrap_or(0);
        for (u, m) in &wm {
            if !listed.contains(u) && m["games"].as_u64().unwrap() > least {
                d.push(format!(
                    "moves.{u}: not listed, but played in {} games (a listed move in {least})",
                    m["games"]
                ));
            }
        }
        w["moves"] = Value::Object(wm.into_iter().filter(|(u, _)| listed.contains(u)).collect());
        d.extend(diff(q, &w, g));
        rep.add(what, d);
    }
}

/// Filters on facets a book does not keep, and bad values, are refused: HTTP 400 with
/// `{"error"}`; `probe` exits 2 for a value that does not parse (clap's usage error, as an
/// unknown `--facets` name at import) and 1 for a filter the book cannot answer (the CLI's
/// exit code for the library's usage errors, docs/CONTRACT.md).
#[test]
fn unkept_facets_and_bad_values_are_refused() {
    let tmp = tempfile::tempdir().unwrap();
    let pgn = tmp.path().join("edge.pgn");
    std::fs::write(&pgn, edge_pgn()).unwrap();
    let pgns = vec![pgn];
    let full = tmp.path().join("full.book");
    let none = tmp.path().join("none.book");
    import(&pgns, &full, None);
    import(&pgns, &none, Some("none"));
    let mut rep = Report::default();
    for bad in ["bogus", "month,bogus", "speeds"] {
        let b = tmp.path().join("bad.book");
        let out = Bookdb::import(&pgns, &b)
            .args(["--facets", bad, "--quiet"])
            .output();
        rep.add(
            format!("bookdb import edge.pgn --book bad.book --facets {bad}"),
            if out.status.code() == Some(2) {
                vec![]
            } else {
                vec![format!(
                    "expected exit 2 (usage), got {:?}: {}",
                    out.status.code(),
                    String::from_utf8_lossy(&out.stderr).trim()
                )]
            },
        );
    }

    let mut expect = |book: &Path, http: &str, probe: &[&str], refused: Option<i32>| {
        let srv = Server::start(book, &[]);
        for route in ["lichess", "masters"] {
            let path = format!("/{route}?play={}&{http}", EDGE_LINE.join(","));
            let r = srv.get(&path);
            let ok = if refused.is_some() {
                r.status == 400
                    && serde_json::from_str::<Value>(&r.body).is_ok_and(|v| v["error"].is_string())
            } else {
                r.status == 200
            };
            rep.add(
                format!(
                    "[{}] GET {path}",
                    book.file_name().unwrap().to_string_lossy()
                ),
                if ok {
                    vec![]
                } else {
                    vec![format!(
                        "expected {}, got HTTP {} {}",
                        if refused.is_some() {
                            "400 {\"error\"}"
                        } else {
                            "200"
                        },
                        r.status,
                        truncate(&r.body)
                    )]
                },
            );
        }
        let line = EDGE_LINE.join(" ");
        let mut args = vec!["probe", "--book", s(book), "--moves", &line, "--json"];
        args.extend(probe);
        let out = bookdb(&args).output();
        let want = refused.unwrap_or(0);
        rep.add(
            format!("bookdb {}", args.join(" ")),
            if out.status.code() == Some(want) {
                vec![]
            } else {
                vec![format!(
                    "expected exit {want}, got {:?}: {}",
                    out.status.code(),
                    String::from_utf8_lossy(&out.stderr).trim()
                )]
            },
        );
    };

    // A book without facets refuses every filter and history, answers without them.
    for (http, probe) in [
        ("speeds=blitz", &["--speeds", "blitz"][..]),
        ("ratings=2000", &["--ratings", "2000"]),
        ("modes=rated", &["--modes", "rated"]),
        ("since=2020-01", &["--since", "2020-01"]),
        ("until=2020", &["--until", "2020"]),
        ("history=true", &["--history"]),
    ] {
        expect(&none, http, probe, Some(1));
        expect(&full, http, probe, None);
    }
    expect(&none, "history=false", &[], None);
    expect(&none, "moves=3", &[], None);

    // Bad values, on a book that keeps every facet.
    for (http, probe) in [
        ("speeds=turbo", &["--speeds", "turbo"][..]),
        ("speeds=blitz,turbo", &["--speeds", "blitz,turbo"]),
        ("since=2020-13", &["--since", "2020-13"]),
        ("until=2020-00", &["--until", "2020-00"]),
        ("since=20-01", &["--since", "20-01"]),
        ("until=2020-1", &["--until", "2020-1"]),
        ("since=May", &["--since", "May"]),
        ("ratings=abc", &["--ratings", "abc"]),
        ("ratings=2000,x", &["--ratings", "2000,x"]),
        ("modes=ranked", &["--modes", "ranked"]),
        ("history=maybe", &["--history=maybe"]),
    ] {
        expect(&full, http, probe, Some(2));
    }

    // Booleans: true/True/TRUE/1 add the history, false/False/0 do not.
    let srv = Server::start(&full, &[]);
    let base = format!("/lichess?play={}", EDGE_LINE.join(","));
    let with = srv.get(&format!("{base}&history=true")).json();
    assert!(with["history"].is_array(), "{with}");
    for t in ["True", "TRUE", "1"] {
        let a = srv.get(&format!("{base}&history={t}"));
        let ok = a.status == 200 && a.json() == with;
        rep.add(
            format!("GET {base}&history={t}"),
            if ok {
                vec![]
            } else {
                vec![format!(
                    "expected the answer of history=true, got HTTP {} {}",
                    a.status,
                    truncate(&a.body)
                )]
            },
        );
    }
    for f in ["false", "False", "0"] {
        let a = srv.get(&format!("{base}&history={f}"));
        let ok = a.status == 200 && a.json().get("history").is_none();
        rep.add(
            format!("GET {base}&history={f}"),
            if ok {
                vec![]
            } else {
                vec![format!(
                    "expected no history, got HTTP {} {}",
                    a.status,
                    truncate(&a.body)
                )]
            },
        );
    }
    rep.finish("refusals");
}

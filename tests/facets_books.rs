//! Facets through every writer: a book's cells survive delta segments, folds, compaction,
//! merges of books with different facet sets (a facet one input lacks is unknown in its
//! counts) and Polyglot imports; totals never change; `verify` passes on each.

mod common;
use common::*;

use std::path::{Path, PathBuf};

/// Sample games with lichess-style tags (deterministic, no python needed): the sample's games,
/// each given a date, a time control, both Elos and an Event from its index.
fn tagged_sample(dir: &Path) -> (PathBuf, PathBuf) {
    let text = std::fs::read_to_string(
        Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/sample.pgn"),
    )
    .unwrap();
    let tcs = ["60+0", "180+2", "600+5", "1800+0", "-", "?"];
    let mut games = Vec::new();
    let mut cur = String::new();
    for line in text.lines() {
        if line.starts_with("[Event ") && !cur.trim().is_empty() {
            games.push(std::mem::take(&mut cur));
        }
        let drop = [
            "[Event ",
            "[Date ",
            "[UTCDate ",
            "[WhiteElo ",
            "[BlackElo ",
            "[TimeControl ",
        ];
        if !drop.iter().any(|d| line.starts_with(d)) {
            cur.push_str(line);
            cur.push('\n');
        }
    }
    games.push(cur);
    let tagged: Vec<String> = games
        .iter()
        .enumerate()
        .map(|(i, g)| {
            let elo = 1500 + (i * 37 % 1100);
            let tags = format!(
                "[Event \"{} game\"]\n[UTCDate \"{}.{:02}.01\"]\n[TimeControl \"{}\"]\n[WhiteElo \"{}\"]\n[BlackElo \"{}\"]\n",
                if i % 3 == 0 { "Casual" } else { "Rated" },
                2015 + i % 9,
                1 + i % 12,
                tcs[i % tcs.len()],
                elo,
                elo + 40
            );
            format!("{tags}{g}")
        })
        .collect();
    let half = tagged.len() / 2;
    let (a, b) = (dir.join("a.pgn"), dir.join("b.pgn"));
    std::fs::write(&a, tagged[..half].concat()).unwrap();
    std::fs::write(&b, tagged[half..].concat()).unwrap();
    (a, b)
}

/// A filter from `key=value` words: `speeds=blitz,rapid ratings=1600 since=2016-03 until=2019`.
fn filter_of(spec: &str) -> bookdb::store::facet::CellFilter {
    use bookdb::store::facet::{CellFilter, DateBound};
    let mut f = CellFilter::default();
    for word in spec.split_whitespace() {
        let (k, v) = word.split_once('=').unwrap();
        match k {
            "speeds" => f.speeds = Some(CellFilter::parse_speeds(v).unwrap()),
            "ratings" => f.groups = Some(CellFilter::parse_ratings(v).unwrap()),
            "since" => f.since = Some(DateBound::parse(v).unwrap()),
            "until" => f.until = Some(DateBound::parse(v).unwrap()),
            _ => panic!("{k}"),
        }
    }
    f
}

fn dump_facets(book: &Path) -> String {
    bookdb(["dump", "--facets", "--book", s(book)]).ok()
}

fn probe(book: &Path, filters: &[&str]) -> serde_json::Value {
    let mut args = vec!["probe", "--json", "--book", s(book)];
    args.extend(filters);
    bookdb(&args).json()
}

#[test]
fn cells_survive_segments_folds_and_compaction() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = tagged_sample(dir.path());
    let whole = dir.path().join("whole.book");
    Bookdb::import(&[&a, &b], &whole).arg("--quiet").ok();
    // The second half goes to a delta segment of a book of the first.
    let live = dir.path().join("live.book");
    Bookdb::import(&[&a], &live).arg("--quiet").ok();
    Bookdb::import(&[&b], &live).arg("--quiet").ok();
    let st: serde_json::Value = bookdb(["stats", "--json", "--book", s(&live)]).json();
    assert_eq!(st["segments"], 1, "{st}");
    assert_eq!(
        st["facets"],
        serde_json::json!(["month", "speed", "rating", "mode"])
    );
    assert_eq!(dump_facets(&live), dump_facets(&whole), "a segment's cells");
    let filters = [
        "--speeds",
        "blitz,rapid",
        "--ratings",
        "1600,1800",
        "--since",
        "2017-03",
    ];
    assert_eq!(probe(&live, &filters), probe(&whole, &filters));
    assert_ne!(probe(&whole, &filters)["moves"], serde_json::json!([]));
    verify(&live);
    // Games by facet are summed over the base and its segment.
    let sw: serde_json::Value = bookdb(["stats", "--json", "--book", s(&whole)]).json();
    assert_eq!(st["facet_games"], sw["facet_games"]);
    bookdb(["compact", "--quiet", "--book", s(&live)]).ok();
    assert_eq!(
        dump_facets(&live),
        dump_facets(&whole),
        "compaction's cells"
    );
    verify(&live);
}

#[test]
fn merging_books_with_other_facet_sets_keeps_every_count() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = tagged_sample(dir.path());
    let months = dir.path().join("months.book");
    let speeds = dir.path().join("speeds.book");
    let plain = dir.path().join("plain.book");
    Bookdb::import(&[&a], &months)
        .args(["--quiet", "--facets", "month"])
        .ok();
    Bookdb::import(&[&b], &speeds)
        .args(["--quiet", "--facets", "speed,rating"])
        .ok();
    Bookdb::import(&[&a, &b], &plain)
        .args(["--quiet", "--facets", "none"])
        .ok();
    let merged = dir.path().join("merged.book");
    bookdb([
        "merge",
        "--quiet",
        s(&months),
        s(&speeds),
        "--out",
        s(&merged),
    ])
    .ok();
    verify(&merged);
    // Totals: the merge of the halves is the plain book of both.
    assert_eq!(dump(&merged), dump(&plain));
    let st: serde_json::Value = bookdb(["stats", "--json", "--book", s(&merged)]).json();
    assert_eq!(
        st["facets"],
        serde_json::json!(["month", "speed", "rating"])
    );
    // A facet an input lacks is unknown in its counts: speeds count only the second half's
    // games, months only the first half's.
    let blitz = ["--speeds", "blitz"];
    assert_eq!(
        probe(&merged, &blitz)["moves"],
        probe(&speeds, &blitz)["moves"]
    );
    let since = ["--since", "2016-01"];
    assert_eq!(
        probe(&merged, &since)["moves"],
        probe(&months, &since)["moves"]
    );
    // Modes were kept by neither: refused.
    bookdb(["probe", "--book", s(&merged), "--modes", "rated"]).fails_with(1);
    // With a facet-less book of the same games: each game counts once, and the copy kept is
    // the one with facets (the facet-less book's copies are taken out).
    let once = dir.path().join("once.book");
    bookdb(["merge", "--quiet", s(&plain), s(&merged), "--out", s(&once)]).ok();
    verify(&once);
    assert_eq!(dump(&once), dump(&plain));
    assert_eq!(
        probe(&once, &blitz)["moves"],
        probe(&speeds, &blitz)["moves"]
    );
    // With a facet-less book that stores no games (so the merge cannot tell which games it
    // shares): its games are in the all-unknown cell, counted beside the others.
    let counts_only = dir.path().join("counts-only.book");
    Bookdb::import(&[&a, &b], &counts_only)
        .args(["--quiet", "--facets", "none", "--no-games"])
        .ok();
    let all = dir.path().join("all.book");
    bookdb([
        "merge",
        "--quiet",
        s(&merged),
        s(&counts_only),
        "--out",
        s(&all),
    ])
    .ok();
    verify(&all);
    assert_eq!(
        probe(&all, &blitz)["moves"],
        probe(&speeds, &blitz)["moves"]
    );
    let unfiltered = probe(&all, &[]);
    let twice = probe(&plain, &[]);
    for (m, t) in unfiltered["moves"]
        .as_array()
        .unwrap()
        .iter()
        .zip(twice["moves"].as_array().unwrap())
    {
        assert_eq!(m["uci"], t["uci"]);
        assert_eq!(
            m["games"].as_u64().unwrap(),
            2 * t["games"].as_u64().unwrap()
        );
    }
}

#[test]
fn a_book_keeps_the_facets_it_was_created_with() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = tagged_sample(dir.path());
    let book = dir.path().join("b.book");
    Bookdb::import(&[&a], &book)
        .args(["--quiet", "--facets", "speed"])
        .ok();
    // Later imports follow the book; asking for others is refused and changes nothing.
    let err = Bookdb::import(&[&b], &book)
        .args(["--quiet", "--facets", "month"])
        .fails_with(1);
    assert!(err.contains("keeps the facets speed"), "{err}");
    // So is `migrate --facets` of other ones (it chooses facets for books made before them);
    // its own facets are nothing to do.
    let err = bookdb(["migrate", "--book", s(&book), "--facets", "month"]).fails_with(1);
    assert!(err.contains("keeps the facets speed"), "{err}");
    bookdb([
        "migrate",
        "--quiet",
        "--book",
        s(&book),
        "--facets",
        "speed",
    ])
    .ok();
    Bookdb::import(&[&b], &book).arg("--quiet").ok();
    let st: serde_json::Value = bookdb(["stats", "--json", "--book", s(&book)]).json();
    assert_eq!(st["facets"], serde_json::json!(["speed"]));
    // Unknown facet names are argument errors.
    Bookdb::import(&[&b], dir.path().join("x.book"))
        .args(["--facets", "elo"])
        .fails_with(2);
    // A Polyglot import into a faceted book: its moves have no cells; verify passes, and the
    // unfiltered answer counts them.
    let bin = dir.path().join("b.bin");
    bookdb([
        "export",
        "--book",
        s(&book),
        "--format",
        "polyglot",
        "--out",
        s(&bin),
    ])
    .ok();
    let pg = dir.path().join("pg.book");
    Bookdb::import(&[&a], &pg).arg("--quiet").ok();
    bookdb(["import-polyglot", s(&bin), "--book", s(&pg)]).ok();
    verify(&pg);
}

/// The tagged sample imported into a book under `dir`, opened with its block cache and
/// without one, and its positions.
fn cached_and_uncached(
    dir: &std::path::Path,
) -> (bookdb::store::Book, bookdb::store::Book, Vec<Vec<u8>>) {
    use bookdb::store::{Book, CacheSizes};
    let (a, b) = tagged_sample(dir);
    let book = dir.join("t.book");
    Bookdb::import(&[&a, &b], &book).arg("--quiet").ok();
    let cached = Book::open(&book, bookdb::chess_codec()).unwrap();
    let no_blocks = CacheSizes {
        block_bytes: 0,
        ..CacheSizes::default()
    };
    let uncached = Book::open_with_caches(&book, bookdb::chess_codec(), no_blocks).unwrap();
    let positions: Vec<Vec<u8>> = uncached
        .iter()
        .unwrap()
        .filter_map(|e| e.unwrap().pos)
        .collect();
    (cached, uncached, positions)
}

/// The answer of a position with many cells is kept with its cached block (so a server's
/// repeated start-position answers do not walk every cell again); what the kept answers and
/// every other lookup return equals a book read without a block cache, filtered or not.
#[test]
fn kept_answers_equal_fresh_ones() {
    use bookdb::store::cells::CellRead;
    use bookdb::store::facet::CellFilter;
    let dir = tempfile::tempdir().unwrap();
    let (cached, uncached, positions) = cached_and_uncached(dir.path());
    assert!(positions.len() > 1000, "{} positions", positions.len());
    let filter = CellFilter {
        speeds: Some(CellFilter::parse_speeds("blitz,rapid").unwrap()),
        groups: Some(CellFilter::parse_ratings("1600,1800").unwrap()),
        ..CellFilter::default()
    };
    for round in 0..2 {
        for p in &positions {
            let fresh = uncached.lookup_read(p, CellRead::Totals).unwrap();
            assert_eq!(
                cached.lookup_read(p, CellRead::Totals).unwrap(),
                fresh,
                "round {round}"
            );
            let m = &fresh.as_ref().unwrap().moves;
            assert!(
                m.iter().all(|m| m.cells.len() == 1),
                "one summed cell a move"
            );
            assert_eq!(
                cached.lookup_read(p, CellRead::Passing(&filter)).unwrap(),
                uncached.lookup_read(p, CellRead::Passing(&filter)).unwrap()
            );
        }
        // The start position (200 games) at least is kept, filtered (its moves keep their cells
        // as their games', whose facts a filtered answer reads; unfiltered, it reads the
        // opponents' ratings from the block and is not kept); positions of few games are not.
        let kept = cached.kept_answers();
        assert!((1..50).contains(&kept), "{kept} kept");
    }
    assert_eq!(
        uncached.kept_answers(),
        0,
        "nothing kept without a block cache"
    );
}

/// A position asked a second filter keeps its entry read with every cell with its block, and
/// answers further filters and histories from it: every position of a faceted book, asked
/// under four filters and with every cell, twice, answers as a book read without a block
/// cache does.
#[test]
fn answers_made_from_kept_cells_equal_fresh_ones() {
    use bookdb::store::cells::CellRead;
    let dir = tempfile::tempdir().unwrap();
    let (cached, uncached, positions) = cached_and_uncached(dir.path());
    let filters = [
        "speeds=blitz,rapid",
        "ratings=1600,1800",
        "since=2016-03 until=2019-11",
        "speeds=bullet,classical ratings=2000,2200,2500 since=2014",
    ]
    .map(filter_of);
    let mut filtered_moves = 0;
    for round in 0..2 {
        for p in &positions {
            for f in &filters {
                let fresh = uncached.lookup_read(p, CellRead::Passing(f)).unwrap();
                filtered_moves += fresh.as_ref().map_or(0, |e| e.moves.len());
                assert_eq!(
                    cached.lookup_read(p, CellRead::Passing(f)).unwrap(),
                    fresh,
                    "round {round}, {f:?}"
                );
            }
            let all = uncached.lookup_read(p, CellRead::All).unwrap();
            assert_eq!(
                cached.lookup_read(p, CellRead::All).unwrap(),
                all,
                "round {round}, every cell"
            );
            // By period: each move's cells of a period summed into the period's cell.
            let by_period = uncached.lookup_read(p, CellRead::ByPeriod).unwrap();
            assert_eq!(
                cached.lookup_read(p, CellRead::ByPeriod).unwrap(),
                by_period,
                "round {round}, by period"
            );
            let want = all.map(|mut e| {
                for m in &mut e.moves {
                    let mut cells: Vec<bookdb::store::facet::CellStat> = Vec::new();
                    for c in &m.cells {
                        let period = bookdb::store::facet::CellId(c.cell.0 & !0xff);
                        match cells.last_mut() {
                            Some(l) if l.cell == period => {
                                l.white += c.white;
                                l.draws += c.draws;
                                l.black += c.black;
                                l.unknown += c.unknown;
                                l.rating_sum += c.rating_sum;
                                l.rating_count += c.rating_count;
                                l.opp_sum += c.opp_sum;
                                l.opp_count += c.opp_count;
                            }
                            _ => cells.push(bookdb::store::facet::CellStat { cell: period, ..*c }),
                        }
                    }
                    m.cells = cells;
                }
                e
            });
            assert_eq!(by_period, want, "round {round}: by period, summed");
        }
        let kept = cached.kept_every_cells();
        assert!(
            kept >= 1,
            "round {round}: {kept} entries kept with every cell"
        );
    }
    assert!(filtered_moves > 0);
    assert_eq!(uncached.kept_every_cells(), 0);
}

/// A file keeps what its references chose for a position (`store::book::KeptGames`) when the
/// choice read many references; a kept choice gives the answer a fresh book gives, for every
/// position, filter and list asked, asked twice.
#[test]
fn kept_game_choices_equal_fresh_ones() {
    use bookdb::ops::topgames::{Wanted, position_games};
    use bookdb::store::Book;
    use bookdb::store::facet::CellFilter;
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = tagged_sample(dir.path());
    // Three tellings of the sample, each game under other tags (other games to the store):
    // the start position names ~600 games, past what a choice must read to be kept.
    let mut parts = Vec::new();
    for (n, p) in [&a, &b].into_iter().enumerate() {
        let text = std::fs::read_to_string(p).unwrap();
        for copy in 0..3 {
            let retold = text
                .replace(
                    "[Event \"",
                    &format!("[Site \"copy {copy} of {n}\"]\n[Event \""),
                )
                .replace("\"Casual game\"", &format!("\"Casual game {copy}\""));
            let out = dir.path().join(format!("c{n}{copy}.pgn"));
            std::fs::write(&out, retold).unwrap();
            parts.push(out);
        }
    }
    let book = dir.path().join("k.book");
    let parts: Vec<&Path> = parts.iter().map(PathBuf::as_path).collect();
    Bookdb::import(&parts, &book).arg("--quiet").ok();
    let kept = Book::open(&book, bookdb::chess_codec()).unwrap();
    let mut entries: Vec<(u64, Vec<u8>, u64)> = kept
        .iter()
        .unwrap()
        .filter_map(|e| {
            let e = e.unwrap();
            let games = e
                .moves
                .iter()
                .map(|m| m.white + m.draws + m.black + m.unknown)
                .sum();
            Some((e.key, e.pos?, games))
        })
        .collect();
    // The start position (the most games) first, then every seventh.
    entries.sort_by_key(|e| std::cmp::Reverse(e.2));
    assert!(entries[0].2 > 500, "{} games at the start", entries[0].2);
    let blitz = CellFilter {
        speeds: Some(CellFilter::parse_speeds("blitz,rapid").unwrap()),
        ..CellFilter::default()
    };
    let rated = CellFilter {
        groups: Some(CellFilter::parse_ratings("1600,1800,2000").unwrap()),
        ..CellFilter::default()
    };
    let asks = [
        (CellFilter::default(), Wanted::Lichess { top: 4, recent: 4 }),
        (CellFilter::default(), Wanted::Masters { top: 15 }),
        (blitz, Wanted::Lichess { top: 2, recent: 8 }),
        (rated, Wanted::Lichess { top: 0, recent: 0 }),
    ];
    for round in 0..2 {
        let fresh = Book::open(&book, bookdb::chess_codec()).unwrap();
        for (key, pos, _) in entries.iter().step_by(7) {
            // Every move as a single asked: the answer names each move's last passing game.
            let moves: Vec<u16> = fresh
                .lookup(pos)
                .unwrap()
                .map(|e| e.moves.iter().map(|m| m.mv).collect())
                .unwrap_or_default();
            for (filter, wanted) in &asks {
                let want = position_games(&fresh, *key, filter, *wanted, &moves).unwrap();
                let got = position_games(&kept, *key, filter, *wanted, &moves).unwrap();
                assert_eq!(
                    got, want,
                    "round {round}, key {key:016x}, {filter:?} {wanted:?}"
                );
            }
        }
    }
    let n = kept.files()[0].kept_games().len();
    // The start position at least (its ~600 games), under each question; few others.
    assert!((4..200).contains(&n), "{n} choices kept");
}

/// The versions (first byte) of a file's entry blocks, by count.
/// A book that stores its games keeps the cells of its moves of few games as their games'
/// (version-3 blocks, docs/FORMAT.md §12.5) and reads them back as the cells the import
/// counted: `dump --facets` and filtered probes equal those of the same games imported
/// without a store (every cell in its block), through segments, a fold and a compaction.
#[test]
fn cells_kept_as_games_read_back_as_counted() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = tagged_sample(dir.path());
    let with = dir.path().join("with.book");
    let without = dir.path().join("without.book");
    Bookdb::import(&[&a], &with).arg("--quiet").ok();
    Bookdb::import(&[&a], &without)
        .args(["--quiet", "--no-games"])
        .ok();
    let v = block_versions(&with);
    assert!(
        v.get(&3).is_some_and(|&n| n > 0),
        "no version-3 blocks: {v:?}"
    );
    assert!(!block_versions(&without).contains_key(&3));
    let same = |what: &str| {
        assert_eq!(
            dump_facets(&with),
            dump_facets(&without),
            "{what}: cells differ"
        );
        for f in [
            &["--speeds", "blitz,rapid"][..],
            &["--ratings", "1600,1800", "--since", "2018-01"],
            &["--modes", "casual"],
        ] {
            assert_eq!(probe(&with, f), probe(&without, f), "{what}: {f:?}");
        }
        verify(&with);
        verify(&without);
    };
    same("one import");
    // A small second import becomes a delta segment (its own games, its own cells as games').
    let text = std::fs::read_to_string(&b).unwrap();
    let few: Vec<&str> = text.split_inclusive("\n\n[Event ").take(6).collect();
    let few_pgn = dir.path().join("few.pgn");
    let few_text = few.concat();
    std::fs::write(&few_pgn, &few_text[..few_text.rfind("[Event ").unwrap()]).unwrap();
    Bookdb::import(&[&few_pgn], &with).arg("--quiet").ok();
    Bookdb::import(&[&few_pgn], &without)
        .args(["--quiet", "--no-games"])
        .ok();
    assert!(
        Path::new(&format!("{}.live", with.display())).exists(),
        "the second import wrote a segment"
    );
    same("base and segment");
    bookdb(["compact", "--quiet", "--book", s(&with)]).ok();
    bookdb(["compact", "--quiet", "--book", s(&without)]).ok();
    assert!(block_versions(&with).get(&3).is_some_and(|&n| n > 0));
    same("compacted");
    // A file whose store lacks games it counts keeps every cell in its blocks.
    bookdb(["compact", "--quiet", "--drop-games", "--book", s(&with)]).ok();
    assert!(!block_versions(&with).contains_key(&3));
    same("games dropped");
}

/// A position whose block keeps many bytes of cells (here the start position of 5,000 games,
/// each in a cell of its own) is read with every cell at its first filter or history, kept,
/// and each answer made from that entry; they equal a book read without a block cache, and the
/// position keeps its cells in its block (more games than a move keeps as its games').
#[test]
fn a_position_of_many_cells_is_read_with_every_cell_at_once() {
    use bookdb::store::cells::CellRead;
    use bookdb::store::{Book, CacheSizes};
    let dir = tempfile::tempdir().unwrap();
    let lines = [
        "1. e4 e5 2. Nf3",
        "1. d4 d5 2. c4",
        "1. e4 c5 2. Nf3",
        "1. Nf3 d5 2. g3",
    ];
    let tcs = ["60+0", "180+2", "300+3", "600+5", "1800+0", "-"];
    let results = ["1-0", "0-1", "1/2-1/2", "*"];
    let mut pgn = String::new();
    for i in 0..5_000usize {
        let (w, b) = (800 + i * 7 % 2_000, 800 + i * 13 % 2_000);
        pgn.push_str(&format!(
            "[Event \"{} game\"]\n[Round \"{i}\"]\n[UTCDate \"{}.{:02}.01\"]\n[TimeControl \"{}\"]\n\
             [WhiteElo \"{w}\"]\n[BlackElo \"{b}\"]\n[Result \"{r}\"]\n\n{} {r}\n\n",
            if i % 3 == 0 { "Casual" } else { "Rated" },
            1990 + i % 35,
            1 + i / 35 % 12,
            tcs[i / 7 % tcs.len()],
            // One game in 50 a rare move: 100 games, one a cell (in a position of fewer
            // games, a move its block would keep as its games').
            if i % 50 == 1 { "1. c4 e5" } else { lines[i % lines.len()] },
            r = results[i / 5 % results.len()],
        ));
    }
    let input = dir.path().join("many.pgn");
    std::fs::write(&input, pgn).unwrap();
    let book = dir.path().join("many.book");
    Bookdb::import(&[&input], &book).arg("--quiet").ok();
    let no_blocks = CacheSizes {
        block_bytes: 0,
        ..CacheSizes::default()
    };
    let uncached = Book::open_with_caches(&book, bookdb::chess_codec(), no_blocks).unwrap();
    let start = bookdb::chess::PosState::from_chess(&shakmaty::Chess::default())
        .pack()
        .0;
    let all = uncached
        .lookup_read(&start, CellRead::All)
        .unwrap()
        .unwrap();
    let cells: usize = all.moves.iter().map(|m| m.cells.len()).sum();
    assert!(cells > 3_000, "{cells} cells at the start position");
    let mut cached = Book::open(&book, bookdb::chess_codec()).unwrap();
    let filters = ["speeds=blitz,rapid", "ratings=1600,1800 since=2001-03"].map(filter_of);
    // A fresh book asked a history first, then filters; another asked a filter first: either
    // first answer is made from every cell walked at once, the others from that entry.
    for (round, history_first) in [(0, true), (1, true), (0, false), (1, false)] {
        if round == 0 {
            cached = Book::open(&book, bookdb::chess_codec()).unwrap();
        }
        let by_period = || {
            assert_eq!(
                cached.lookup_read(&start, CellRead::ByPeriod).unwrap(),
                uncached.lookup_read(&start, CellRead::ByPeriod).unwrap(),
                "round {round}, by period"
            );
        };
        if history_first {
            by_period();
        }
        for f in &filters {
            let fresh = uncached.lookup_read(&start, CellRead::Passing(f)).unwrap();
            assert!(fresh.as_ref().is_some_and(|e| e.moves.len() >= 3));
            assert_eq!(
                cached.lookup_read(&start, CellRead::Passing(f)).unwrap(),
                fresh,
                "round {round}, {f:?}"
            );
        }
        assert_eq!(cached.kept_every_cells(), 1, "round {round}");
        by_period();
        assert_eq!(
            cached.lookup_read(&start, CellRead::All).unwrap().as_ref(),
            Some(&all)
        );
    }
    let rare = all
        .moves
        .iter()
        .find(|m| m.white + m.draws + m.black + m.unknown == 100)
        .expect("c2c4's 100 games");
    assert!(rare.cells.len() > 50 && rare.cells.iter().all(|c| c.games() <= 8));
    verify(&book);
}

/// A book pruned by `compact --min-games` keeps the games of the moves it drops in its store;
/// a game imported later that plays such a move again counts it once. The pruned file keeps
/// every cell in its blocks, so that the fold of the new game's segment reads that move's
/// cells as counted (not as the two stored games that played it), `verify` passes, and the
/// cells equal those of the same steps on a book without a store.
#[test]
fn a_pruned_book_folds_new_games_of_its_dropped_moves_exactly() {
    let dir = tempfile::tempdir().unwrap();
    let (a, _) = tagged_sample(dir.path());
    let text = std::fs::read_to_string(&a).unwrap();
    let first = format!("[Event {}", text.split("[Event ").nth(1).unwrap());
    // The first game again under other players: another game, the same moves.
    let again = first.replacen(
        "[Event ",
        "[White \"Another\"]\n[Black \"Player\"]\n[Event ",
        1,
    );
    let b = dir.path().join("again.pgn");
    std::fs::write(&b, again).unwrap();
    let steps = |book: &Path, extra: &[&str]| {
        Bookdb::import(&[&a], book).arg("--quiet").args(extra).ok();
        bookdb(["compact", "--quiet", "--min-games", "3", "--book"])
            .arg(book)
            .ok();
        Bookdb::import(&[&b], book).arg("--quiet").args(extra).ok();
        bookdb(["compact", "--quiet", "--book"]).arg(book).ok();
        verify(book);
    };
    let with = dir.path().join("with.book");
    let without = dir.path().join("without.book");
    steps(&with, &[]);
    steps(&without, &["--no-games"]);
    let dump = dump_facets(&with);
    assert_eq!(dump, dump_facets(&without));
    // The first game's own deep moves (dropped, then counted again once) are there.
    let once = dump.lines().filter(|l| l.contains("\"games\":1,")).count();
    assert!(
        once > 10,
        "{once} positions with a move of one game\n{dump}"
    );
}

//! The game store (docs/FORMAT.md §15, issue 27): every game an import counts comes back as
//! its PGN (kept tags and whole mainline) by id, from the CLI (`bookdb pgn`) and the server
//! (`/masters/pgn/{id}`, `/lichess/pgn/{id}`), whatever the spills, segments, compactions and
//! merges in between; `--no-games` books keep none. An independent replay with python-chess
//! checks the given-back games move by move (skipped with a printed reason without it).

mod common;
use common::server::Server;
use common::{Bookdb, bookdb, dump, s, sample_halves, sample_pgn, stats, verify};

use std::path::{Path, PathBuf};

use bookdb::ops::gamereader::GameReader;
use bookdb::ops::pgn::game_fingerprint;

/// A game as compared: its fingerprint (tags White/Black/Date/Round/Event/Site, result and
/// moves) and its kept tags, by the game's id as the stored PGN's `GameId` tag names it.
fn games_in(pgn: &[u8]) -> Vec<(u128, Vec<u8>, Option<String>)> {
    let mut r = GameReader::new(pgn);
    let mut out = Vec::new();
    while let Some(g) = r.next_game().unwrap() {
        assert!(g.error.is_none(), "{:?}", g.error);
        out.push((game_fingerprint(&g), g.kept.to_vec(), g.game_id_tag.clone()));
    }
    out
}

/// The input's games as a multiset of (fingerprint, kept tags).
fn input_games(pgn: &Path) -> Vec<(u128, Vec<u8>)> {
    let mut v: Vec<_> = games_in(&std::fs::read(pgn).unwrap())
        .into_iter()
        .map(|(f, k, _)| (f, k))
        .collect();
    v.sort();
    v
}

fn all_pgn(book: &Path) -> String {
    bookdb(["pgn", "--book", s(book), "--all"]).ok()
}

/// The stored games as (fingerprint, kept tags), sorted; checks every one carries its id.
fn stored_games(book: &Path) -> Vec<(u128, Vec<u8>)> {
    let mut v: Vec<_> = games_in(all_pgn(book).as_bytes())
        .into_iter()
        .map(|(f, k, id)| {
            assert!(
                id.is_some_and(|i| i.len() == 8),
                "a stored game names its id"
            );
            (f, k)
        })
        .collect();
    v.sort();
    v
}

fn import(inputs: &[&Path], book: &Path, extra: &[&str]) -> serde_json::Value {
    Bookdb::import(inputs, book)
        .args(["--quiet", "--json"])
        .args(extra)
        .json()
}

#[test]
fn every_counted_game_comes_back_with_its_tags_and_moves_spilled_or_not() {
    let dir = tempfile::tempdir().unwrap();
    let want = input_games(&sample_pgn());
    // The sample five times over: enough to spill at the smallest budget. A book that stores
    // games dedupes without --dedupe: each game is counted and stored once, the others are
    // skipped as duplicates.
    let sample = dir.path().join("five.pgn");
    let text = std::fs::read(sample_pgn()).unwrap();
    std::fs::write(&sample, [&text[..], b"\n"].concat().repeat(5)).unwrap();
    let in_memory = dir.path().join("m.book");
    let r = import(&[&sample], &in_memory, &[]);
    assert_eq!(
        (r["runs"].as_u64(), r["games_imported"].as_u64()),
        (Some(0), Some(200)),
        "{r}"
    );
    assert_eq!(r["skipped_by_reason"]["duplicate"], 800, "{r}");
    let spilled = dir.path().join("s.book");
    let r = import(&[&sample], &spilled, &["--memory", "1", "--jobs", "2"]);
    assert!(
        r["runs"].as_u64().unwrap() >= 2,
        "tiny --memory must spill: {r}"
    );
    for book in [&in_memory, &spilled] {
        assert_eq!(stats(book)["stored_games"], 200);
        assert_eq!(stored_games(book), want, "{}", book.display());
        assert!(verify(book).contains("200 stored games and the references of"));
    }
    // The store's order depends on the games alone, not on how the import ran.
    assert_eq!(all_pgn(&in_memory), all_pgn(&spilled));
}

#[test]
fn games_are_found_by_id_and_unknown_ids_are_refused() {
    let dir = tempfile::tempdir().unwrap();
    let pgn = common::write_text(
        dir.path(),
        "l.pgn",
        concat!(
            "[Event \"Rated blitz game\"]\n[Site \"https://lichess.org/q7ZvsdUF\"]\n",
            "[Date \"2020.01.02\"]\n[White \"a\"]\n[Black \"b\"]\n[Result \"0-1\"]\n",
            "[WhiteElo \"1500\"]\n[BlackElo \"1600\"]\n[TimeControl \"180+0\"]\n\n",
            "1. f3 e5 2. g4 Qh4# 0-1\n\n",
            "[Event \"Casual\"]\n[Site \"Berlin\"]\n[Date \"1852.??.??\"]\n",
            "[White \"Anderssen\"]\n[Black \"Dufresne\"]\n[Result \"1-0\"]\n\n",
            "1. e4 e5 2. Nf3 Nc6 3. Bc4 Bc5 4. b4 Bxb4 5. c3 Ba5 6. d4 1-0\n"
        ),
    );
    let book = dir.path().join("l.book");
    import(&[&pgn], &book, &[]);
    let one = bookdb(["pgn", "--book", s(&book), "q7ZvsdUF"]).ok();
    assert!(
        one.starts_with("[Event \"Rated blitz game\"]\n[Site \"https://lichess.org/q7ZvsdUF\"]\n"),
        "{one}"
    );
    assert!(one.contains("[GameId \"q7ZvsdUF\"]"), "{one}");
    assert!(one.contains("1. f3 e5 2. g4 Qh4# 0-1"), "{one}");
    // The other game's id is derived from its fingerprint; `--all` shows it.
    let all = all_pgn(&book);
    let ids: Vec<String> = games_in(all.as_bytes())
        .into_iter()
        .filter_map(|(_, _, id)| id)
        .collect();
    assert_eq!(ids.len(), 2);
    let other = ids.iter().find(|i| *i != "q7ZvsdUF").unwrap();
    let berlin = bookdb(["pgn", "--book", s(&book), other]).ok();
    assert!(berlin.contains("[Site \"Berlin\"]"), "{berlin}");
    // Unknown: exit 1 with a message; not an id: a usage error.
    let out = bookdb(["pgn", "--book", s(&book), "zzzzzzzz"]).output();
    assert_eq!(out.status.code(), Some(1));
    assert!(String::from_utf8_lossy(&out.stderr).contains("no game zzzzzzzz"));
    let err = bookdb(["pgn", "--book", s(&book), "nope"]).fails_with(1);
    assert!(err.contains("not a game id"), "{err}");

    // The server: lichess's routes for a game's PGN.
    let srv = Server::start(&book, &[]);
    for route in ["/masters/pgn/q7ZvsdUF", "/lichess/pgn/q7ZvsdUF"] {
        let r = srv.get(route);
        assert_eq!(r.status, 200, "{route}");
        assert_eq!(
            r.header("content-type"),
            Some("application/x-chess-pgn; charset=utf-8")
        );
        assert_eq!(r.body, one);
    }
    let r = srv.get("/masters/pgn/zzzzzzzz");
    assert_eq!(r.status, 404);
    assert!(r.error().contains("no game zzzzzzzz"), "{}", r.error());
    assert_eq!(srv.get("/masters/pgn/nope").status, 400);
}

#[test]
fn no_games_books_store_none_and_answer_none() {
    let dir = tempfile::tempdir().unwrap();
    let book = dir.path().join("n.book");
    import(&[&sample_pgn()], &book, &["--no-games"]);
    assert_eq!(stats(&book)["stored_games"], 0);
    assert_eq!(all_pgn(&book), "");
    assert!(verify(&book).contains("0 stored games and the references of 0 positions checked; OK"));
}

#[test]
fn segments_compaction_and_merge_keep_every_game() {
    let dir = tempfile::tempdir().unwrap();
    let (first, second) = sample_halves(dir.path());
    let want = input_games(&sample_pgn());
    let book = dir.path().join("b.book");
    import(&[&first], &book, &[]);
    // A small second import goes to a delta segment with its own store.
    let r = import(&[&second], &book, &["--delta-min", "1000000"]);
    assert_eq!(r["applied"], "delta", "{r}");
    assert_eq!(stats(&book)["stored_games"], 200);
    assert_eq!(stored_games(&book), want);
    verify(&book);
    bookdb(["compact", "--book", s(&book), "--quiet"]).ok();
    assert_eq!(stats(&book)["segments"], 0);
    assert_eq!(stored_games(&book), want);
    assert!(verify(&book).contains("200 stored games and the references of"));
    // Merged with a book of the first half again: each game is stored once.
    let half = dir.path().join("h.book");
    import(&[&first], &half, &[]);
    let merged = dir.path().join("m.book");
    bookdb(["merge", "--quiet", "--out", s(&merged), s(&book), s(&half)]).ok();
    assert_eq!(stats(&merged)["stored_games"], 200);
    assert_eq!(stored_games(&merged), want);
    // compact --drop-games: the counts stay, the games and their references go, and the
    // fingerprints still keep a game from being counted twice.
    let counts = dump(&merged);
    let before = bookdb(["probe", "--json", "--book", s(&merged)]).json();
    bookdb(["compact", "--drop-games", "--quiet", "--book", s(&merged)]).ok();
    assert_eq!(stats(&merged)["stored_games"], 0);
    assert_eq!(dump(&merged), counts);
    assert!(verify(&merged).contains("0 stored games and the references of 0 positions"));
    let games = bookdb(["games", "--json", "--book", s(&merged)]).ok();
    assert!(games.is_empty(), "{games}");
    assert_eq!(
        bookdb(["probe", "--json", "--book", s(&merged)]).json(),
        before
    );
    let again = import(&[&first], &merged, &["--force"]);
    assert_eq!(again["games_imported"], 0, "{again}");
}

/// A store carried alone (a fold of a counts-only segment, a compaction, a pruning) keeps its
/// references by carrying them with the entries the rewrite reads, not by decoding the old
/// blocks a second time (`BOOKDB_TRACE` says which): the lists are what they were, and
/// `verify`, which rebuilds them from the games, agrees.
#[test]
fn a_store_carried_alone_carries_its_references_with_the_entries() {
    let dir = tempfile::tempdir().unwrap();
    let (first, second) = sample_halves(dir.path());
    let book = dir.path().join("c.book");
    import(&[&first], &book, &[]);
    // Counts without games beside the store: the fold merges their entries with the base's,
    // so the moves it writes are named by code where the base's blocks named them by index;
    // the compactions after it carry the references with the entries.
    let r = import(&[&second], &book, &["--no-games", "--delta-min", "1000000"]);
    assert_eq!(r["applied"], "delta", "{r}");
    let lists = |b: &Path| -> Vec<String> {
        ["", "e2e4", "d2d4", "e2e4 c7c5", "e2e4 e7e5 g1f3", "g1f3"]
            .iter()
            .map(|m| {
                let mut args = vec!["games", "--json", "--top", "8", "--recent", "8"];
                if !m.is_empty() {
                    args.extend(["--moves", m]);
                }
                bookdb(args).args(["--book", s(b)]).ok()
            })
            .collect()
    };
    let before = lists(&book);
    let named: usize = before.iter().map(|l| l.lines().count()).sum();
    assert!(named > 40, "only {named} games listed");
    let compact = |extra: &[&str], carried: bool| {
        let out = bookdb(["compact", "--quiet", "--book", s(&book)])
            .args(extra)
            .env("BOOKDB_TRACE", "1")
            .ok_output();
        let err = String::from_utf8_lossy(&out.stderr).into_owned();
        assert_eq!(
            err.contains("references carried with the entries"),
            carried,
            "compact {extra:?}: {err}"
        );
    };
    // The fold: the segment counts without games, so the references are derived from the
    // store again (such counts may name moves a pruned store's file dropped).
    compact(&[], false);
    assert_eq!(stats(&book)["segments"], 0);
    assert_eq!(lists(&book), before, "after the fold");
    verify(&book);
    let compact = |extra: &[&str]| compact(extra, true);
    compact(&["--retrain"]);
    assert_eq!(lists(&book), before, "after a compaction");
    verify(&book);
    // Pruned: the moves dropped lose their lists; verify rebuilds exactly that.
    let pairs = stats(&book)["pairs"].as_u64().unwrap();
    compact(&["--min-games", "3"]);
    assert!(stats(&book)["pairs"].as_u64().unwrap() < pairs);
    verify(&book);
    assert!(
        !lists(&book)[0].is_empty(),
        "the start position still names games"
    );
}

/// Two imports of overlapping files, without `--dedupe`, into a book that stores games: the
/// second skips the games the first counted as `duplicate` (also when it lands in a delta
/// segment), and the book equals one import of the union: same counts, every game stored once
/// under its id. A merge of the two files' own books cannot subtract what both counted: it
/// reports the shared games (`shared_games`, and a warning) and keeps each stored once.
#[test]
fn overlapping_imports_count_each_game_once_and_merges_report_the_overlap() {
    let dir = tempfile::tempdir().unwrap();
    let text = std::fs::read(sample_pgn()).unwrap();
    let mut starts: Vec<usize> = text
        .windows(8)
        .enumerate()
        .filter(|(_, w)| *w == b"\n[Event ")
        .map(|(i, _)| i + 1)
        .collect();
    starts.insert(0, 0);
    assert_eq!(starts.len(), 200);
    let (a, b) = (dir.path().join("a.pgn"), dir.path().join("b.pgn"));
    std::fs::write(&a, &text[..starts[120]]).unwrap();
    std::fs::write(&b, &text[starts[80]..]).unwrap();
    let whole = dir.path().join("whole.book");
    import(&[&sample_pgn()], &whole, &[]);
    for delta in [false, true] {
        let book = dir.path().join(format!("ab-{delta}.book"));
        let r = import(&[&a], &book, &[]);
        assert_eq!(r["games_imported"], 120, "{r}");
        let extra: &[&str] = if delta {
            &["--delta-min", "1000000"]
        } else {
            &[]
        };
        let r = import(&[&b], &book, extra);
        assert_eq!(
            (
                r["games_imported"].as_u64(),
                r["skipped_by_reason"]["duplicate"].as_u64()
            ),
            (Some(80), Some(40)),
            "{r}"
        );
        if delta {
            assert_eq!(r["applied"], "delta", "{r}");
        }
        assert_eq!(dump(&book), dump(&whole));
        assert_eq!(stats(&book)["games"], 200);
        assert_eq!(stored_games(&book), stored_games(&whole));
        assert_eq!(
            all_pgn(&book),
            all_pgn(&whole),
            "the same ids, the same order"
        );
        verify(&book);
    }
    let (ba, bb) = (dir.path().join("a.book"), dir.path().join("b.book"));
    import(&[&a], &ba, &[]);
    import(&[&b], &bb, &[]);
    let merged = dir.path().join("m.book");
    let m = bookdb(["merge", "--json", "--out", s(&merged), s(&ba), s(&bb)]).json();
    assert_eq!(m["shared_games"], 40, "{m}");
    // Both books stored the 40 games alike: the merge takes one copy of each out
    // (tests/merge_shared_games.rs has the cases it cannot).
    assert_eq!(m["copies_subtracted"], 40, "{m}");
    assert_eq!(stats(&merged)["games"], 200);
    assert_eq!(stats(&merged)["stored_games"], 200);
    assert_eq!(dump(&merged), dump(&whole));
    let out = bookdb([
        "merge",
        "--out",
        s(&dir.path().join("m2.book")),
        s(&ba),
        s(&bb),
    ])
    .ok_output();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(!err.contains("warning"), "{err}");
    // Books that share no game report none, and warn of nothing.
    let c = dir.path().join("c.pgn");
    std::fs::write(&c, &text[..starts[80]]).unwrap();
    let bc = dir.path().join("c.book");
    import(&[&c], &bc, &[]);
    let m3 = dir.path().join("m3.book");
    let m = bookdb(["merge", "--json", "--out", s(&m3), s(&bc), s(&bb)]).json();
    assert_eq!(m["shared_games"], 0, "{m}");
    assert_eq!(dump(&m3), dump(&whole));
}

/// python-chess replays every given-back game to the same moves and tags as the input's.
#[test]
fn python_chess_replays_the_given_back_games_as_the_input() {
    let Some(py) = common::python_chess() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let book = dir.path().join("p.book");
    import(&[&sample_pgn()], &book, &[]);
    let back = dir.path().join("back.pgn");
    std::fs::write(&back, all_pgn(&book)).unwrap();
    let script = r#"
import sys, chess.pgn
TAGS = ["Event", "Site", "Date", "Round", "White", "Black", "Result", "WhiteElo", "BlackElo", "TimeControl", "ECO"]
def games(path):
    out = []
    with open(path, encoding="utf-8", errors="replace") as f:
        while True:
            g = chess.pgn.read_game(f)
            if g is None:
                return sorted(out)
            tags = tuple(g.headers.get(t, "?") if t in ("Event","Site","Date","Round","White","Black","Result") else g.headers.get(t, "") for t in TAGS)
            out.append((tags, tuple(m.uci() for m in g.mainline_moves())))
a, b = games(sys.argv[1]), games(sys.argv[2])
assert len(a) == len(b) == 200, (len(a), len(b))
for x, y in zip(a, b):
    assert x == y, (x, y)
print("ok", len(a))
"#;
    let out = std::process::Command::new(py)
        .args(["-c", script, s(&sample_pgn()), s(&back)])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    );
}

/// An import killed after it spilled runs (and their game runs) and checkpointed, run again,
/// resumes from the checkpoint and stores every game once; killed at random moments, too.
#[cfg(feature = "failpoints")]
#[test]
fn a_killed_import_resumes_with_its_game_runs() {
    let dir = tempfile::tempdir().unwrap();
    let want = input_games(&sample_pgn());
    let five = dir.path().join("five.pgn");
    let text = std::fs::read(sample_pgn()).unwrap();
    std::fs::write(&five, [&text[..], b"\n"].concat().repeat(5)).unwrap();
    for (i, point) in [
        "import-checkpoint-saved",
        "import-runs-spilled",
        "import-applying-marked",
    ]
    .into_iter()
    .enumerate()
    {
        let book = dir.path().join(format!("k{i}.book"));
        let run =
            || Bookdb::import(&[&five], &book).args(["--quiet", "--memory", "1", "--jobs", "2"]);
        assert!(run().run_crashing(Some(point), None), "killed at {point}");
        let r: serde_json::Value = run().arg("--json").json();
        assert_eq!(r["resumed"], point != "import-runs-spilled", "{point}: {r}");
        assert_eq!(stats(&book)["games"], 200, "{point}");
        assert_eq!(stats(&book)["stored_games"], 200, "{point}");
        assert_eq!(stored_games(&book), want, "{point}");
        verify(&book);
    }
}

/// One lichess game (same `Site`, so the same id, and the same tags) whose moves two inputs
/// write two ways (`Nf3` and the over-disambiguated `Ngf3`). An import counts it once (brief
/// §9: a game whose id the book holds is not counted again; the id's records are compared by
/// result and moves, not as written), whether both records are in one import or in two.
/// `merge` knows the records of one game the same way (`store::onegame`: one date and id, one
/// result and moves), so the merge of a book of each record counts and stores it once too
/// (before, it counted both, and earlier still stored one of the two it counted: such a book
/// failed its checks and could no longer fold, compact or take an import); the merged book
/// folds new imports and compacts with every check holding.
#[test]
fn one_game_written_two_ways_is_stored_as_often_as_it_is_counted() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let game = |moves: &str| {
        format!(
            "[Event \"Rated Blitz game\"]\n[Site \"https://lichess.org/abcdEFGH\"]\n\
             [White \"w\"]\n[Black \"b\"]\n[Result \"1-0\"]\n[UTCDate \"2021.03.04\"]\n\
             [TimeControl \"180+0\"]\n[WhiteElo \"2100\"]\n[BlackElo \"2050\"]\n\n{moves} 1-0\n\n"
        )
    };
    let (a, b) = (d.join("a.pgn"), d.join("b.pgn"));
    std::fs::write(&a, game("1. e4 e5 2. Nf3 Nc6 3. Bc4 Bc5 4. O-O Nf6")).unwrap();
    std::fs::write(&b, game("1. e4 e5 2. Ngf3 Nbc6 3. Bfc4 Bfc5 4. O-O Ngf6")).unwrap();
    let both = d.join("both.pgn");
    std::fs::write(
        &both,
        [std::fs::read(&a).unwrap(), std::fs::read(&b).unwrap()].concat(),
    )
    .unwrap();
    let counted = |book: &Path| {
        let st = stats(book);
        (
            st["games"].as_u64().unwrap(),
            st["stored_games"].as_u64().unwrap(),
        )
    };
    let one = d.join("one.book");
    let r = import(&[&both], &one, &[]);
    assert_eq!(r["skipped_by_reason"]["duplicate"], 1, "{r}");
    verify(&one);
    assert_eq!(counted(&one), (1, 1));
    let two = d.join("two.book");
    import(&[&a], &two, &[]);
    let r = import(&[&b], &two, &[]);
    assert_eq!(r["skipped_by_reason"]["duplicate"], 1, "{r}");
    verify(&two);
    assert_eq!(counted(&two), (1, 1));
    assert_eq!(dump(&two), dump(&one));
    let (ba, bb, m) = (d.join("ba.book"), d.join("bb.book"), d.join("m.book"));
    import(&[&a], &ba, &[]);
    import(&[&b], &bb, &[]);
    bookdb(["merge", "--quiet", "--out", s(&m), s(&ba), s(&bb)]).ok();
    verify(&m);
    assert_eq!(counted(&m), (1, 1));
    assert_eq!(dump(&m), dump(&one));
    // More games folded into the merged book, and a compaction: every check still holds.
    import(&[&sample_pgn()], &m, &[]);
    verify(&m);
    bookdb(["compact", "--quiet", "--book", s(&m)]).ok();
    verify(&m);
    let (games, stored) = counted(&m);
    assert_eq!(games, stored);
}

/// A book pruned by `compact --min-games` keeps the games of the moves it drops in its store,
/// not their references. Counts without games that name such moves again — a `--no-games`
/// segment folded in, `import-polyglot`, a merge with a game-less book — make the new file
/// derive its references from the store again (they were copied from the pruned file's, so the
/// positions its stored games reach again had none: `games` listed nothing there and `verify`
/// failed). Each book verifies.
#[test]
fn a_pruned_book_given_counts_without_games_names_its_stored_games_again() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let (first, _) = sample_halves(d);
    // The same games under other rounds: another input, counted again without games.
    let again = d.join("again.pgn");
    let text = std::fs::read_to_string(&first).unwrap();
    std::fs::write(
        &again,
        text.replace("[Event ", "[Round \"again\"]\n[Event "),
    )
    .unwrap();
    let pruned = |name: &str| {
        let book = d.join(name);
        import(&[&first], &book, &[]);
        bookdb(["compact", "--quiet", "--min-games", "2", "--book", s(&book)]).ok();
        verify(&book);
        book
    };
    // A --no-games segment, folded.
    let a = pruned("a.book");
    import(&[&again], &a, &["--no-games", "--delta-min", "1000000"]);
    bookdb(["compact", "--quiet", "--book", s(&a)]).ok();
    verify(&a);
    // import-polyglot of the unpruned games' moves.
    let full = d.join("full.book");
    import(&[&first], &full, &[]);
    let bin = d.join("full.bin");
    bookdb([
        "export",
        "--quiet",
        "--book",
        s(&full),
        "--format",
        "polyglot",
        "--out",
        s(&bin),
    ])
    .ok();
    let b = pruned("b.book");
    bookdb(["import-polyglot", "--quiet", "--book", s(&b), s(&bin)]).ok();
    verify(&b);
    // A merge with a game-less book of the same moves.
    let c = pruned("c.book");
    let none = d.join("none.book");
    import(&[&again], &none, &["--no-games"]);
    let m = d.join("m.book");
    bookdb(["merge", "--quiet", "--out", s(&m), s(&c), s(&none)]).ok();
    verify(&m);
}

/// The sample's games as lichess games: each `Site` a lichess URL of its own id.
fn as_lichess_games(text: &str) -> String {
    let mut n = 0;
    text.lines()
        .map(|l| {
            if l.starts_with("[Site ") {
                n += 1;
                format!("[Site \"https://lichess.org/smpl{n:04}\"]")
            } else {
                l.to_string()
            }
        })
        .collect::<Vec<_>>()
        .join("\n")
        + "\n"
}

/// The same games as another tool might export them: within each game's tags `White` and
/// `Black` first, then the rest, and every check and mate sign dropped from the moves.
fn exported_again(text: &str) -> String {
    let mut out = String::new();
    let mut tags: Vec<&str> = Vec::new();
    for l in text.lines() {
        if l.starts_with('[') {
            tags.push(l);
            continue;
        }
        if !tags.is_empty() {
            tags.sort_by_key(|t| !(t.starts_with("[White ") || t.starts_with("[Black ")));
            for t in tags.drain(..) {
                out.push_str(t);
                out.push('\n');
            }
        }
        out.push_str(&l.replace(['+', '#'], ""));
        out.push('\n');
    }
    out
}

/// Writes `text` and `again` (its games spelled another way) into `d`, imports the first into
/// a new book, then the second, which must be all duplicates; the book verifies. Returns the
/// book, the first file and the games counted.
fn import_then_copies(d: &Path, text: &str, again: &str) -> (PathBuf, PathBuf, u64) {
    let (orig, re) = (d.join("orig.pgn"), d.join("again.pgn"));
    std::fs::write(&orig, text).unwrap();
    std::fs::write(&re, again).unwrap();
    let a = d.join("a.book");
    let first = import(&[&orig], &a, &[]);
    let counted = first["games_imported"].as_u64().unwrap();
    assert!(counted > 190, "{first}");
    let r = import(&[&re], &a, &[]);
    assert_eq!(r["games_imported"], 0, "{r}");
    assert_eq!(r["skipped_by_reason"]["duplicate"], counted, "{r}");
    verify(&a);
    assert_eq!(stats(&a)["games"], counted);
    (a, orig, counted)
}

/// Brief §9: a game whose id the book holds is not counted again. Lichess games exported again
/// by another tool (tags reordered, check signs dropped: other fingerprints) are duplicates of
/// the games the book stores under their ids, whether they come in a later import or in the
/// same one; a record of a known id with other moves (an id clash) is another game.
#[test]
fn lichess_games_exported_again_are_known_by_their_ids() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let text = as_lichess_games(&std::fs::read_to_string(sample_pgn()).unwrap());
    let again = exported_again(&text);
    let read = |t: &str| {
        let mut r = GameReader::new(t.as_bytes());
        let mut v = Vec::new();
        while let Some(g) = r.next_game().unwrap() {
            v.push(game_fingerprint(&g));
        }
        v
    };
    let (fa, fb) = (read(&text), read(&again));
    assert_eq!(fa.len(), 200);
    assert!(
        fa.iter().zip(&fb).all(|(a, b)| a != b),
        "every fingerprint differs"
    );
    // A later import.
    let (a, orig, counted) = import_then_copies(d, &text, &again);

    // The same import, either order; and a counts-only book, which knows only this import's.
    let both = d.join("both.pgn");
    std::fs::write(&both, format!("{again}\n{text}")).unwrap();
    for extra in [&[][..], &["--no-games", "--dedupe"][..]] {
        let b = d.join(format!("b{}.book", extra.len()));
        let r = import(&[&both], &b, extra);
        assert_eq!(r["games_imported"], counted, "{extra:?}: {r}");
        assert_eq!(r["skipped_by_reason"]["duplicate"], 200, "{extra:?}: {r}");
        assert_eq!(dump(&b), dump(&a), "{extra:?}");
        verify(&b);
    }

    // A counts-only book knows its games by fingerprint alone; in one import, copies spelled
    // another way after games the book knew are still known by their ids.
    let c = d.join("c.book");
    import(&[&orig], &c, &["--no-games", "--dedupe"]);
    let both_orders = d.join("both-orders.pgn");
    std::fs::write(&both_orders, format!("{text}\n{again}")).unwrap();
    let r = import(&[&both_orders], &c, &["--no-games", "--dedupe"]);
    assert_eq!(r["games_imported"], 0, "{r}");
    assert_eq!(r["skipped_by_reason"]["duplicate"], 400, "{r}");
    assert_eq!(dump(&c), dump(&a));

    // The first game's id with one move fewer: another game, counted.
    let first_game = &text[..text[1..].find("[Event ").unwrap() + 1];
    let clash = first_game.replace(" 27.d6 1-0", " 1-0");
    assert_ne!(clash, first_game);
    let c = d.join("clash.pgn");
    std::fs::write(&c, clash).unwrap();
    let r = import(&[&c], &a, &[]);
    assert_eq!(r["games_imported"], 1, "{r}");
    verify(&a);
    let stored = bookdb(["pgn", "--book", s(&a), "smpl0001"])
        .ok()
        .lines()
        .filter(|l| l.starts_with("[GameId "))
        .count();
    assert_eq!(stored, 2, "both records of the id are stored");
}

/// Many different games under one id (an id clash, or a tool that wrote one id for all): each
/// is counted and stored; copies spelled another way are known among them, one by one.
#[test]
fn many_games_of_one_id_are_told_apart_by_their_moves() {
    let dir = tempfile::tempdir().unwrap();
    let d = dir.path();
    let text: String = std::fs::read_to_string(sample_pgn())
        .unwrap()
        .lines()
        .map(|l| match l.starts_with("[Site ") {
            true => "[Site \"https://lichess.org/sameId00\"]".to_string(),
            false => l.to_string(),
        })
        .collect::<Vec<_>>()
        .join("\n")
        + "\n";
    let (a, _, counted) = import_then_copies(d, &text, &exported_again(&text));
    let stored = bookdb(["pgn", "--book", s(&a), "sameId00"])
        .ok()
        .matches("[GameId \"sameId00\"]")
        .count();
    assert_eq!(stored as u64, counted);
}

#[test]
fn latin1_names_come_back_as_their_letters() {
    // ISO 8859-1 (the PGN standard's character set) and a Windows-1252 dash: stored as the
    // file has them, given back as UTF-8 text by `pgn`, `games --json` and the server.
    let dir = tempfile::tempdir().unwrap();
    let pgn = dir.path().join("latin1.pgn");
    std::fs::write(
        &pgn,
        b"[Event \"Open \x96 1998\"]\n[Site \"K\xf6ln\"]\n[Date \"1998.05.01\"]\n[Round \"1\"]\n\
          [White \"M\xfcller, J\xfcrgen\"]\n[Black \"Fran\xe7ois, Ren\xe9\"]\n[Result \"1-0\"]\n\
          [WhiteElo \"2400\"]\n[BlackElo \"2300\"]\n\n1. e4 e5 2. Nf3 1-0\n\n",
    )
    .unwrap();
    let book = dir.path().join("l.book");
    import(&[&pgn], &book, &[]);
    let text = all_pgn(&book);
    for want in [
        "[White \"Müller, Jürgen\"]",
        "[Black \"François, René\"]",
        "[Site \"Köln\"]",
        "[Event \"Open – 1998\"]",
    ] {
        assert!(text.contains(want), "{want} in {text}");
    }
    assert!(!text.contains('\u{FFFD}'), "{text}");
    let games = bookdb(["games", "--book", s(&book), "--json"]).ok();
    assert!(
        games.contains("Müller, Jürgen") && games.contains("François, René"),
        "{games}"
    );
    let srv = Server::start(&book, &[]);
    let answer = srv.get("/masters").body;
    assert!(answer.contains("Müller, Jürgen"), "{answer}");
    assert_eq!(srv.stop().code(), Some(0));
}

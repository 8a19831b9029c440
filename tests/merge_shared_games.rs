//! `merge` of books that counted the same games (brief §9: a game counts once): the extra
//! copies' counts are taken out, so the merged book equals one import of the games, cells,
//! game store and references included, whatever the order of the inputs; games counted to
//! another `--max-ply` count once, as the deeper copy; what cannot be taken out (games known
//! only by fingerprint) is reported and warned about; inputs pruned since are clamped, not
//! wrapped. Retagged games (lichess-style tags) fill the facet cells.

mod common;
use common::{
    Bookdb, block_versions, bookdb, python_chess, retagged_games, s, stats, verify, write_games,
};

use std::path::Path;

const MAX_PLY: &str = "30";

fn import(games: &[Vec<u8>], dir: &Path, name: &str, extra: &[&str]) -> std::path::PathBuf {
    let pgn = dir.join(format!("{name}.pgn"));
    write_games(&pgn, games);
    let book = dir.join(format!("{name}.book"));
    let ply: &[&str] = match extra.contains(&"--max-ply") {
        true => &[],
        false => &["--max-ply", MAX_PLY],
    };
    Bookdb::import(&[&pgn], &book)
        .arg("--quiet")
        .args(ply)
        .args(extra)
        .ok();
    book
}

fn merge(
    dir: &Path,
    name: &str,
    inputs: &[&Path],
) -> (std::path::PathBuf, serde_json::Value, String) {
    let out = dir.join(format!("{name}.book"));
    let o = bookdb(["merge", "--json", "--out", s(&out)])
        .args(inputs.iter().map(|p| s(p)))
        .ok_output();
    let summary: serde_json::Value = serde_json::from_slice(&o.stdout).unwrap();
    (
        out,
        summary,
        String::from_utf8_lossy(&o.stderr).into_owned(),
    )
}

/// The named counts of a merge's summary.
fn counts(summary: &serde_json::Value, keys: &[&str]) -> Vec<u64> {
    keys.iter()
        .map(|k| {
            summary[*k]
                .as_u64()
                .unwrap_or_else(|| panic!("{k}: {summary}"))
        })
        .collect()
}

/// Every count, cell by cell.
fn dump_cells(book: &Path) -> String {
    bookdb(["dump", "--facets", "--book", s(book)]).ok()
}

fn all_pgn(book: &Path) -> String {
    bookdb(["pgn", "--book", s(book), "--all"]).ok()
}

/// What `stats` says of the content (not of the file's bytes).
fn content_stats(book: &Path) -> serde_json::Value {
    let v = stats(book);
    let keep = [
        "games",
        "positions",
        "pairs",
        "key_only",
        "collisions",
        "facets",
        "facet_games",
        "stored_games",
        "dedupe_games",
    ];
    keep.iter().map(|k| (k.to_string(), v[k].clone())).collect()
}

/// The top games the start position lists, as the server's answer would (through `games`).
fn top_games(book: &Path) -> String {
    bookdb([
        "games",
        "--book",
        s(book),
        "--moves",
        "",
        "--top",
        "15",
        "--recent",
        "8",
        "--json",
    ])
    .ok()
}

struct Games {
    _tmp: tempfile::TempDir,
    dir: std::path::PathBuf,
    games: Vec<Vec<u8>>,
}

fn games() -> Option<Games> {
    let py = python_chess()?;
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path().to_path_buf();
    let games = retagged_games(&py)[..1200].to_vec();
    Some(Games {
        _tmp: tmp,
        dir,
        games,
    })
}

/// Two and three books with overlapping games merge into what one import of the games gives:
/// the same counts in every cell, games, stored games, top games; in any order of the inputs;
/// the summary says how many were shared and taken out, and nothing is warned about.
#[test]
fn merged_books_count_each_shared_game_once() {
    let Some(g) = games() else { return };
    let d = &g.dir;
    let whole = import(&g.games, d, "whole", &[]);
    let a = import(&g.games[..700], d, "a", &[]);
    let b = import(&g.games[500..], d, "b", &[]);
    let c = import(&g.games[300..900], d, "c", &[]);
    let want = dump_cells(&whole);
    let (ab, m, err) = merge(d, "ab", &[&a, &b]);
    assert_eq!(m["shared_games"], 200, "{m}");
    assert_eq!(m["shared_games_subtracted"], 200, "{m}");
    assert_eq!(m["copies_subtracted"], 200, "{m}");
    assert_eq!(m["shared_copies"], 200, "{m}");
    assert_eq!(m["copies_still_counted"], 0, "{m}");
    assert_eq!(m["subtraction_clamped"], 0, "{m}");
    assert!(!err.contains("warning"), "{err}");
    assert_eq!(dump_cells(&ab), want);
    // Shared copies taken out: every cell in its blocks (FORMAT §12.5).
    assert!(!block_versions(&ab).contains_key(&3));
    assert_eq!(content_stats(&ab), content_stats(&whole));
    assert_eq!(all_pgn(&ab), all_pgn(&whole));
    assert_eq!(top_games(&ab), top_games(&whole));
    verify(&ab);
    let (ba, m, _) = merge(d, "ba", &[&b, &a]);
    assert_eq!(m["copies_subtracted"], 200, "{m}");
    assert_eq!(dump_cells(&ba), want);
    // Three books: games 300–499 are in a and c, 500–699 in all three, 700–899 in b and c.
    let (abc, m, _) = merge(d, "abc", &[&c, &a, &b]);
    assert_eq!(m["shared_games"], 600, "{m}");
    assert_eq!(m["shared_copies"], 800, "{m}");
    assert_eq!(m["copies_subtracted"], 800, "{m}");
    assert_eq!(m["copies_still_counted"], 0, "{m}");
    assert_eq!(dump_cells(&abc), want);
    assert_eq!(content_stats(&abc), content_stats(&whole));
    verify(&abc);
    // A merged book merged again with one of its inputs: still each game once. A scratch
    // directory that a killed merge into the same output left is removed, and this merge
    // leaves none.
    let stale = d.join(".again.book.merge-shared-killed");
    std::fs::create_dir_all(stale.join("copies-0f.book.staging")).unwrap();
    std::fs::write(stale.join("copies-0f.pgn"), "1. e4 *\n").unwrap();
    let (again, m, _) = merge(d, "again", &[&ab, &c]);
    assert_eq!(m["copies_subtracted"], 600, "{m}");
    assert_eq!(dump_cells(&again), want);
    verify(&again);
    let left: Vec<_> = std::fs::read_dir(d)
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| n.contains("merge-shared"))
        .collect();
    assert!(left.is_empty(), "{left:?}");
}

/// A book with a delta segment shares games with another: the copies are found in every file.
#[test]
fn shared_games_in_delta_segments_are_taken_out() {
    let Some(g) = games() else { return };
    let d = &g.dir;
    let whole = import(&g.games, d, "whole", &[]);
    let a = import(&g.games[..600], d, "a", &[]);
    let more = d.join("more.pgn");
    write_games(&more, &g.games[600..800]);
    let r = Bookdb::import(&[&more], &a)
        .args([
            "--quiet",
            "--json",
            "--max-ply",
            MAX_PLY,
            "--delta-min",
            "1000000",
        ])
        .json();
    assert_eq!(r["applied"], "delta", "{r}");
    let b = import(&g.games[700..], d, "b", &[]);
    let (ab, m, _) = merge(d, "ab", &[&a, &b]);
    assert_eq!(m["copies_subtracted"], 100, "{m}");
    assert_eq!(dump_cells(&ab), dump_cells(&whole));
    verify(&ab);
}

/// Inputs that keep different facets: the copy kept is the one with the most facets, so the
/// merge equals the merge of the facet-less book without the shared games, in either order.
#[test]
fn the_copy_with_the_most_facets_is_kept() {
    let Some(g) = games() else { return };
    let d = &g.dir;
    let a = import(&g.games[..700], d, "a", &["--facets", "none"]);
    let a_only = import(&g.games[..500], d, "a_only", &["--facets", "none"]);
    let b = import(&g.games[500..], d, "b", &[]);
    let (want, _, _) = merge(d, "want", &[&a_only, &b]);
    for (name, inputs) in [
        ("ab", [a.as_path(), b.as_path()]),
        ("ba", [b.as_path(), a.as_path()]),
    ] {
        let (m_book, m, _) = merge(d, name, &inputs);
        assert_eq!(m["copies_subtracted"], 200, "{m}");
        assert_eq!(m["subtraction_clamped"], 0, "{m}");
        assert_eq!(dump_cells(&m_book), dump_cells(&want), "{name}");
        assert_eq!(content_stats(&m_book), content_stats(&want), "{name}");
        assert!(
            !block_versions(&m_book).contains_key(&3),
            "{name}: facets differ"
        );
        verify(&m_book);
    }
}

/// Games counted to another `--max-ply` are one game: the merge counts and stores the deeper
/// copy (the shallower one's counts taken out), whatever the order of the inputs, so the
/// result equals the merge of the deeper book with the other book's games it lacks.
#[test]
fn games_counted_to_another_max_ply_count_once_as_the_deeper_copy() {
    let Some(g) = games() else { return };
    let d = &g.dir;
    let a = import(&g.games[..700], d, "a", &["--max-ply", "20"]);
    let b = import(&g.games[500..], d, "b", &[]);
    let a_only = import(&g.games[..500], d, "a_only", &["--max-ply", "20"]);
    let (want, _, _) = merge(d, "want", &[&a_only, &b]);
    for (name, inputs) in [("ab", [a.as_path(), &b]), ("ba", [b.as_path(), &a])] {
        let (out, m, err) = merge(d, name, &inputs);
        assert_eq!(
            counts(
                &m,
                &[
                    "shared_games",
                    "shared_games_subtracted",
                    "copies_subtracted",
                    "copies_still_counted"
                ]
            ),
            [200, 200, 200, 0],
            "{m}"
        );
        assert!(!err.contains("warning"), "{err}");
        assert_eq!(stats(&out)["games"], 1200, "{name}");
        assert_eq!(stats(&out)["stored_games"], 1200, "{name}");
        assert_eq!(dump_cells(&out), dump_cells(&want), "{name}");
        assert_eq!(content_stats(&out), content_stats(&want), "{name}");
        assert_eq!(all_pgn(&out), all_pgn(&want), "{name}");
        assert_eq!(top_games(&out), top_games(&want), "{name}");
        verify(&out);
    }
}

/// A third input that records the games only by fingerprint (`--no-games --dedupe`): its
/// copies cannot be taken out, and the summary counts them exactly, in a three-way overlap.
#[test]
fn fingerprint_only_copies_are_counted_and_reported() {
    let Some(g) = games() else { return };
    let d = &g.dir;
    let a = import(&g.games[..700], d, "a", &[]);
    let b = import(&g.games[500..], d, "b", &[]);
    let c = import(&g.games[600..800], d, "c", &["--no-games", "--dedupe"]);
    // 500–599 in a and b, 600–699 in all three, 700–799 in b and c.
    let (abc, m, _) = merge(d, "abc", &[&a, &b, &c]);
    let n = |k: &str| m[k].as_u64().unwrap();
    assert_eq!(
        (
            n("shared_games"),
            n("shared_copies"),
            n("copies_subtracted"),
            n("copies_still_counted")
        ),
        (300, 400, 200, 200),
        "{m}"
    );
    assert_eq!(stats(&abc)["games"], 1400);
    // Shared games: every cell in its blocks.
    assert!(!block_versions(&abc).contains_key(&3));
    verify(&abc);
}

/// Inputs pruned by `compact --min-games` lack some of the counts their stored games claim:
/// the merge clamps those counters at zero, says how many entries, and the book verifies.
#[test]
fn pruned_inputs_are_clamped_and_reported() {
    let Some(g) = games() else { return };
    let d = &g.dir;
    let a = import(&g.games[..700], d, "a", &[]);
    let b = import(&g.games[500..], d, "b", &[]);
    for book in [&a, &b] {
        bookdb(["compact", "--quiet", "--book", s(book), "--min-games", "3"]).ok();
    }
    let (ab, m, _) = merge(d, "ab", &[&a, &b]);
    let clamped = m["subtraction_clamped"].as_u64().unwrap();
    assert!(clamped > 0, "{m}");
    // Pruned inputs keep every cell in their blocks, and so does their merge.
    assert!(!block_versions(&ab).contains_key(&3));
    verify(&ab);
    let o = bookdb(["merge", "--out", s(&d.join("ab2.book")), s(&a), s(&b)]).ok_output();
    let err = String::from_utf8_lossy(&o.stderr);
    assert!(
        err.contains(&format!("warning: {clamped} positions held fewer games")),
        "{err}"
    );
    // Two books pruned at 2 sharing games, with a third book of other games: the clamped
    // moves' counters are still their cells' sums (they parted where a shared copy had games in
    // a cell the move lacked, and the merged book failed verify, dump and compact).
    let p0 = import(&g.games[..400], d, "p0", &[]);
    let p1 = import(&g.games[200..400], d, "p1", &[]);
    for book in [&p0, &p1] {
        bookdb(["compact", "--quiet", "--book", s(book), "--min-games", "2"]).ok();
    }
    let c = import(&g.games[1000..1200], d, "c", &[]);
    let (abc, _, _) = merge(d, "abc", &[&p0, &p1, &c]);
    verify(&abc);
    bookdb(["compact", "--quiet", "--book", s(&abc)]).ok();
    verify(&abc);
}

/// Books that share no game merge into a book whose moves of few games keep their cells as
/// their games', as one import of the games does: same cells, games and top games.
#[test]
fn disjoint_books_merge_with_cells_kept_as_the_games() {
    let Some(g) = games() else { return };
    let d = &g.dir;
    let whole = import(&g.games[..600], d, "whole", &[]);
    let a = import(&g.games[..300], d, "a", &[]);
    let b = import(&g.games[300..600], d, "b", &[]);
    let (ab, m, _) = merge(d, "ab", &[&a, &b]);
    assert_eq!(m["shared_games"], 0, "{m}");
    assert!(
        block_versions(&ab).contains_key(&3),
        "{:?}",
        block_versions(&ab)
    );
    assert_eq!(dump_cells(&ab), dump_cells(&whole));
    assert_eq!(content_stats(&ab), content_stats(&whole));
    assert_eq!(top_games(&ab), top_games(&whole));
    verify(&ab);
}

/// Game `i` of the sample as a lichess export: a `Site` URL naming id `i`, a date, ratings,
/// a clock, `UTCDate` (`rich`); or as another tool's export of the same game: the tags
/// re-ordered, only the roster and the date kept, another event, check signs dropped (so that
/// its fingerprint differs); or, with `moves_of`, another game's moves under this id (an id
/// clash: another game).
fn lichess_export(sample: &[Vec<u8>], i: usize, rich: bool, moves_of: usize) -> Vec<u8> {
    let text = String::from_utf8_lossy(&sample[moves_of]).into_owned();
    let tag = |name: &str| {
        let at = text.find(&format!("[{name} \""))? + name.len() + 3;
        Some(text[at..at + text[at..].find("\"]")?].to_string())
    };
    let movetext = &text[text.find("\n\n").unwrap() + 2..];
    let id = format!("lc{i:06}");
    let date = format!("2021.03.{:02}", 1 + i % 28);
    let (white, black, result) = (
        tag("White").unwrap(),
        tag("Black").unwrap(),
        tag("Result").unwrap(),
    );
    let out = if rich {
        format!(
            "[Event \"Rated Blitz game\"]\n[Site \"https://lichess.org/{id}\"]\n[Date \"{date}\"]\n[White \"{white}\"]\n[Black \"{black}\"]\n[Result \"{result}\"]\n[UTCDate \"{date}\"]\n[WhiteElo \"{}\"]\n[BlackElo \"2210\"]\n[TimeControl \"180+2\"]\n\n{movetext}",
            1500 + 7 * i
        )
    } else {
        format!(
            "[White \"{white}\"]\n[Black \"{black}\"]\n[Event \"Casual game\"]\n[Date \"{date}\"]\n[Round \"?\"]\n[Site \"https://lichess.org/{id}\"]\n[Result \"{result}\"]\n\n{}",
            movetext.replace(['+', '#'], "")
        )
    };
    out.into_bytes()
}

/// Games `range` of the sample as [`lichess_export`]s of one kind.
fn exports(sample: &[Vec<u8>], range: std::ops::Range<usize>, rich: bool) -> Vec<Vec<u8>> {
    range.map(|i| lichess_export(sample, i, rich, i)).collect()
}

/// One lichess game stored from two exports (other tags, SAN spelled otherwise: two
/// fingerprints, one id, result and moves) counts once in a merge, as an import of the second
/// export into the first's book counts it once: the richer record kept, its cells, whatever
/// the order of the inputs; a record of one of its ids with other moves is another game.
#[test]
fn one_lichess_game_from_two_exports_counts_once() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    let sample = common::games_of(&common::sample_pgn());
    let rich = exports(&sample, 0..60, true);
    let mut bare = exports(&sample, 30..90, false);
    // An id clash: game 120's moves under game 5's id and date (another game).
    let clash = lichess_export(&sample, 5, false, 120);
    bare.push(clash.clone());
    let a = import(&rich, d, "a", &[]);
    let b = import(&bare, d, "b", &[]);
    let mut b_only_games = bare[30..60].to_vec();
    b_only_games.push(clash);
    let b_only = import(&b_only_games, d, "b_only", &[]);
    let (want, m, _) = merge(d, "want", &[&a, &b_only]);
    assert_eq!(m["copies_subtracted"], 0, "{m}");
    assert_eq!(stats(&want)["games"], 91);
    for (name, inputs) in [("ab", [a.as_path(), &b]), ("ba", [b.as_path(), &a])] {
        let (out, m, err) = merge(d, name, &inputs);
        assert_eq!(
            counts(
                &m,
                &[
                    "shared_games",
                    "shared_games_subtracted",
                    "copies_subtracted",
                    "copies_by_id",
                    "copies_still_counted",
                    "subtraction_clamped",
                ]
            ),
            [0, 30, 30, 30, 0, 0],
            "{name}: {m}"
        );
        assert!(!err.contains("warning"), "{name}: {err}");
        assert_eq!(stats(&out)["games"], 91, "{name}");
        assert_eq!(stats(&out)["stored_games"], 91, "{name}");
        assert!(
            dump_cells(&out) == dump_cells(&want),
            "{name}: cells differ"
        );
        // Copies taken out: every cell in its blocks (FORMAT §12.5).
        assert!(!block_versions(&out).contains_key(&3), "{name}");
        // The merged book knows both exports' fingerprints (a later import of either is
        // a repeat): 60 + 31 + the 30 other spellings.
        let (mut got, mut wanted) = (content_stats(&out), content_stats(&want));
        assert_eq!(got["dedupe_games"], 121, "{name}");
        assert_eq!(wanted["dedupe_games"], 91, "{name}");
        got["dedupe_games"] = 0.into();
        wanted["dedupe_games"] = 0.into();
        assert_eq!(got, wanted, "{name}");
        assert_eq!(all_pgn(&out), all_pgn(&want), "{name}");
        assert_eq!(top_games(&out), top_games(&want), "{name}");
        verify(&out);
    }
    // The import of the second export into the first's book counts the same games.
    let pgn = d.join("b.pgn");
    let r = Bookdb::import(&[&pgn], &a)
        .args(["--json", "--max-ply", MAX_PLY])
        .json();
    assert_eq!(r["games_imported"], 31, "{r}");
    assert!(dump_cells(&a) == dump_cells(&want), "import: cells differ");
    assert_eq!(all_pgn(&a), all_pgn(&want));
    // Three inputs: the first exports twice (a2 and want: 60 copies by fingerprint), the
    // second export's games b holds alone in want too (31), and the 30 games of both exports
    // in all three (a third record each, another spelling: by id).
    let a2 = import(&rich, d, "a2", &[]);
    let (abc, m, _) = merge(d, "abc", &[&b, &a2, &want]);
    let n = |k: &str| m[k].as_u64().unwrap();
    assert_eq!(
        (
            n("shared_copies"),
            n("copies_subtracted"),
            n("copies_by_id"),
            n("copies_still_counted")
        ),
        (91, 121, 30, 0),
        "{m}"
    );
    assert!(dump_cells(&abc) == dump_cells(&want), "abc: cells differ");
    verify(&abc);
}

proptest::proptest! {
    #![proptest_config(proptest::prelude::ProptestConfig::with_cases(6))]
    /// Games dealt to random parts, each copy in a random export (a lichess one or another
    /// tool's: one id, result and moves, two fingerprints), the parts merged in a random
    /// grouping: each game counts and is stored once, as its richer record — the book of one
    /// import of each game's richest export, whatever the grouping and order.
    #[test]
    fn exports_dealt_to_parts_merge_in_any_grouping_into_the_richest_records(
        parts in 2usize..=3,
        deal in proptest::collection::vec((1usize..8, proptest::prelude::any::<u8>()), 40),
        picks in proptest::collection::vec(
            (proptest::prelude::any::<proptest::sample::Index>(), proptest::prelude::any::<proptest::sample::Index>()),
            3,
        ),
    ) {
        let tmp = tempfile::tempdir().unwrap();
        let d = tmp.path();
        let sample = common::games_of(&common::sample_pgn());
        let mut texts: Vec<Vec<Vec<u8>>> = vec![Vec::new(); parts];
        let mut richest = Vec::new();
        for (i, &(mask, rich)) in deal.iter().enumerate() {
            let mask = (mask % (1 << parts)).max(1);
            let mut any_rich = false;
            for (p, t) in texts.iter_mut().enumerate() {
                if mask & (1 << p) != 0 {
                    let r = rich & (1 << p) != 0;
                    any_rich |= r;
                    t.push(lichess_export(&sample, i, r, i));
                }
            }
            richest.push(lichess_export(&sample, i, any_rich, i));
        }
        let whole = import(&richest, d, "whole", &[]);
        let mut pool: Vec<std::path::PathBuf> = texts
            .iter()
            .enumerate()
            .map(|(p, t)| import(t, d, &format!("p{p}"), &[]))
            .collect();
        let mut step = 0;
        while pool.len() > 1 {
            let (a, b) = picks[step % picks.len()];
            let first = pool.remove(a.index(pool.len()));
            let second = pool.remove(b.index(pool.len()));
            let (out, m, _) = merge(d, &format!("m{step}"), &[&first, &second]);
            proptest::prop_assert_eq!(&m["copies_still_counted"], 0, "{}", m);
            proptest::prop_assert_eq!(&m["subtraction_clamped"], 0, "{}", m);
            pool.push(out);
            step += 1;
        }
        let got = &pool[0];
        proptest::prop_assert_eq!(stats(got)["games"].as_u64(), Some(40));
        proptest::prop_assert_eq!(stats(got)["stored_games"].as_u64(), Some(40));
        proptest::prop_assert!(dump_cells(got) == dump_cells(&whole), "cells differ");
        proptest::prop_assert_eq!(all_pgn(got), all_pgn(&whole));
        verify(got);
    }
}

/// One game's copies from two exports in books of different facets: the copy in the book of
/// more facets is kept (its counts have the cells the other's lack), even when the other
/// record has more tags, in either order: the merge equals an import of the kept exports.
#[test]
fn the_export_in_the_book_of_more_facets_is_kept() {
    let tmp = tempfile::tempdir().unwrap();
    let d = tmp.path();
    let sample = common::games_of(&common::sample_pgn());
    let rich = exports(&sample, 0..40, true);
    let bare = exports(&sample, 0..40, false);
    let a = import(&rich, d, "a", &["--facets", "none"]);
    let b = import(&bare, d, "b", &[]);
    let want = import(&bare, d, "want", &[]);
    for (name, inputs) in [("ab", [a.as_path(), &b]), ("ba", [b.as_path(), &a])] {
        let (out, m, _) = merge(d, name, &inputs);
        assert_eq!(m["copies_subtracted"], 40, "{name}: {m}");
        assert_eq!(m["copies_by_id"], 40, "{name}: {m}");
        assert_eq!(m["subtraction_clamped"], 0, "{name}: {m}");
        assert!(
            dump_cells(&out) == dump_cells(&want),
            "{name}: cells differ"
        );
        assert_eq!(all_pgn(&out), all_pgn(&want), "{name}");
        verify(&out);
    }
}

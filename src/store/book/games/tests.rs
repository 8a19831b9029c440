//! The game store's unit tests: writing, reading by id, carrying and merging into rewrites.

use super::*;
use crate::store::WriterOptions;
use proptest::prelude::*;
use std::path::Path;

fn game(id: u64, date: &str, moves: &[u8]) -> StoredGame {
    use crate::chess::gamefields::{FIELDS, MOVES_FIELD};
    let mut fields = vec![Vec::new(); FIELDS];
    fields[0] = b"Event".to_vec();
    fields[gameblock::DATE_FIELD] = date.as_bytes().to_vec();
    fields[4] = format!("White {id}").into_bytes();
    fields[MOVES_FIELD] = moves.to_vec();
    StoredGame { id, fields }
}

/// The start position's entry with the moves of ranks 0–9 (the games below play one of them):
/// a file's references are kept with the entries it holds (format 10).
fn start_entry() -> crate::store::entry::Entry {
    let start = shakmaty::Chess::default();
    let (key, packed) = crate::chess::key_and_pack(&start);
    let mut moves: Vec<crate::store::entry::MoveRec> =
        crate::chess::mainline::ranked_moves(&start, None)[..10]
            .iter()
            .map(|&mv| crate::store::entry::MoveRec {
                mv,
                white: 1,
                ..Default::default()
            })
            .collect();
    moves.sort_by_key(|m| m.mv);
    crate::store::entry::Entry {
        key,
        pos: Some(packed.as_bytes().to_vec()),
        moves,
        coded: None,
    }
}

/// A book file holding `games` and the start position's entry, optionally carrying `from`'s
/// files.
fn write(path: &Path, from: Option<&Book>, games: Vec<StoredGame>) {
    write_as(path, from, games, false)
}

/// As [`write`]; with `once`, as a merge writes (a game held alike twice is kept once).
fn write_as(path: &Path, from: Option<&Book>, games: Vec<StoredGame>, once: bool) {
    let mut w = BookWriter::create(path, crate::chess_codec(), WriterOptions::default()).unwrap();
    if let Some(b) = from {
        w.carry_over(b).unwrap();
    }
    if once {
        w.each_game_once();
    }
    w.store_games(games);
    w.push(start_entry()).unwrap();
    w.finish().unwrap();
}

fn stored(path: &Path) -> Vec<StoredGame> {
    let b = Book::open(path, crate::chess_codec()).unwrap();
    b.base().games_iter().unwrap().map(Result::unwrap).collect()
}

#[test]
fn games_are_numbered_in_date_then_id_order_and_found_by_id() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("g.book");
    let games = vec![
        game(7, "2020.05.01", &[1, 2]),
        game(3, "2021.01.01", &[0]),
        game(9, "????.??.??", &[4]),
        game(5, "2020.05.01", &[3]),
        // An id shared by two different games: both are kept.
        game(3, "2019.12.31", &[9, 9]),
    ];
    write(&p, None, games.clone());
    let got = stored(&p);
    let order: Vec<(u64, &str)> = got
        .iter()
        .map(|g| {
            (
                g.id,
                std::str::from_utf8(&g.fields[gameblock::DATE_FIELD]).unwrap(),
            )
        })
        .collect();
    assert_eq!(
        order,
        [
            (9, "????.??.??"),
            (3, "2019.12.31"),
            (5, "2020.05.01"),
            (7, "2020.05.01"),
            (3, "2021.01.01")
        ]
    );
    let b = Book::open(&p, crate::chess_codec()).unwrap();
    assert_eq!(b.games_stored(), 5);
    assert_eq!(b.base().check_game_ids().unwrap(), 5);
    let three = b.base().games_by_id(3).unwrap();
    assert_eq!(three.iter().map(|(n, _)| *n).collect::<Vec<_>>(), [1, 4]);
    assert_eq!(b.games_by_id(7).unwrap(), vec![games[0].clone()]);
    assert!(b.games_by_id(8).unwrap().is_empty());
}

#[test]
fn a_file_without_games_has_no_game_tables_and_answers_none() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("g.book");
    write(&p, None, Vec::new());
    let b = Book::open(&p, crate::chess_codec()).unwrap();
    assert_eq!(b.games_stored(), 0);
    assert!(b.base().games.is_none());
    assert!(b.games_by_id(1).unwrap().is_empty());
    assert_eq!(b.base().games_iter().unwrap().count(), 0);
}

#[test]
fn rewrites_carry_the_store_and_drop_games_empties_it() {
    let dir = tempfile::tempdir().unwrap();
    let a = dir.path().join("a.book");
    // Two legal plies each (any first move leaves Black 20), and a long name: blocks of
    // several chunks.
    let many: Vec<StoredGame> = (0..3000)
        .map(|i| {
            let mut g = game(
                i * 7919 % 5003,
                "2020.01.02",
                &[(i % 20) as u8, (i % 19) as u8],
            );
            g.fields[5] = (0..40).map(|k| b'a' + ((i + k) % 26) as u8).collect();
            g
        })
        .collect();
    write(&a, None, many.clone());
    let before = stored(&a);
    assert_eq!(before.len(), 3000);
    // Carried alone: copied as it is.
    let b = dir.path().join("b.book");
    write(
        &b,
        Some(&Book::open(&a, crate::chess_codec()).unwrap()),
        Vec::new(),
    );
    assert_eq!(stored(&b), before);
    // Carried with new games (and one already there): merged, renumbered; the record met
    // twice is kept twice by a writer that counted it twice, once by a merge.
    let extra = vec![game(1, "1999.01.01", &[5]), many[10].clone()];
    let twice = dir.path().join("twice.book");
    write(
        &twice,
        Some(&Book::open(&b, crate::chess_codec()).unwrap()),
        extra.clone(),
    );
    let kept = stored(&twice);
    assert_eq!(kept.len(), 3002);
    assert_eq!(kept.iter().filter(|g| **g == many[10]).count(), 2);
    let c = dir.path().join("c.book");
    write_as(
        &c,
        Some(&Book::open(&b, crate::chess_codec()).unwrap()),
        extra,
        true,
    );
    let after = stored(&c);
    assert_eq!(after.len(), 3001);
    assert_eq!(after[0], game(1, "1999.01.01", &[5]));
    assert_eq!(&after[1..], &before[..]);
    let book = Book::open(&c, crate::chess_codec()).unwrap();
    assert_eq!(book.base().check_game_ids().unwrap(), 3001);
    // Dropped.
    let d = dir.path().join("d.book");
    let mut w = BookWriter::create(&d, crate::chess_codec(), WriterOptions::default()).unwrap();
    w.carry_over(&book).unwrap();
    w.drop_games();
    w.finish().unwrap();
    assert_eq!(
        Book::open(&d, crate::chess_codec()).unwrap().games_stored(),
        0
    );
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(8))]
    /// A store built through rewrites that each add a part of the games equals the store of
    /// all the games written at once, in any split and order: the numbers depend only on the
    /// set of games.
    #[test]
    fn the_store_depends_only_on_the_set_of_games(
        spec in prop::collection::vec((0u64..40, 0u8..4, 0u8..3, 0usize..3), 1..60),
    ) {
        let dates = ["2020.01.01", "2019.06.??", "????.??.??", "2020.01.02"];
        let games: Vec<(StoredGame, usize)> = spec
            .iter()
            .map(|&(id, d, m, part)| (game(id, dates[d as usize], &[m]), part))
            .collect();
        let dir = tempfile::tempdir().unwrap();
        let whole = dir.path().join("whole.book");
        write(&whole, None, games.iter().map(|(g, _)| g.clone()).collect());
        let mut prev: Option<std::path::PathBuf> = None;
        for part in [2, 0, 1] {
            let p = dir.path().join(format!("p{part}.book"));
            let from = prev.as_ref().map(|q| Book::open(q, crate::chess_codec()).unwrap());
            let mine = games.iter().filter(|(_, k)| *k == part).map(|(g, _)| g.clone()).rev().collect();
            write(&p, from.as_ref(), mine);
            prev = Some(p);
        }
        let last = prev.unwrap();
        prop_assert_eq!(stored(&last), stored(&whole));
        let b = Book::open(&last, crate::chess_codec()).unwrap();
        prop_assert_eq!(b.base().check_game_ids().unwrap(), b.games_stored());
        // The references too: the same positions and lists, and what verify rebuilds (with
        // spills).
        let w = Book::open(&whole, crate::chess_codec()).unwrap();
        prop_assert_eq!(b.base().stored_refs().unwrap(), w.base().stored_refs().unwrap());
        let facts = |f: &BookFile| -> Vec<(u32, Vec<u8>)> {
            f.fact_chunk_iter().unwrap().collect::<Result<_>>().unwrap()
        };
        prop_assert_eq!(facts(b.base()), facts(w.base()));
        prop_assert!(!w.base().stored_refs().unwrap().is_empty());
        prop_assert!(b.base().check_game_refs(1).unwrap() > 0);
    }
}

/// A writer given its games only after it took entries cannot have logged their shapes: it
/// reads them back from its blocks, decoded, and writes the same references as one given its
/// games first (the shape log).
#[test]
fn games_given_after_the_entries_align_the_same_references() {
    let dir = tempfile::tempdir().unwrap();
    let games: Vec<StoredGame> = (0..40)
        .map(|i| game(i, "2020.01.02", &[(i % 10) as u8]))
        .collect();
    let first = dir.path().join("first.book");
    write(&first, None, games.clone());
    let late = dir.path().join("late.book");
    let mut w = BookWriter::create(&late, crate::chess_codec(), WriterOptions::default()).unwrap();
    w.push(start_entry()).unwrap();
    w.store_games(games);
    w.finish().unwrap();
    let (a, b) = (
        Book::open(&first, crate::chess_codec()).unwrap(),
        Book::open(&late, crate::chess_codec()).unwrap(),
    );
    let refs = a.base().stored_refs().unwrap();
    assert_eq!(refs.len(), 1, "the start position names its games");
    assert_eq!(refs[0].moves.len(), 10);
    assert_eq!(b.base().stored_refs().unwrap(), refs);
    assert_eq!(b.base().check_game_refs(1 << 20).unwrap(), 1);
}

/// A store of `n` games with long names (blocks of several stream chunks), three games per id.
fn big_store(path: &Path, n: u64) -> Vec<StoredGame> {
    let games: Vec<StoredGame> = (0..n)
        .map(|i| {
            let mut g = game(i / 3, "2020.01.02", &[(i % 20) as u8]);
            g.fields[5] = (0..60).map(|k| b'a' + ((i * 7 + k) % 26) as u8).collect();
            g
        })
        .collect();
    write(path, None, games);
    stored(path)
}

#[test]
fn every_id_finds_its_games_through_the_packed_index() {
    let dir = tempfile::tempdir().unwrap();
    let p = dir.path().join("g.book");
    let all = big_store(&p, 6000);
    let b = Book::open(&p, crate::chess_codec()).unwrap();
    assert_eq!(b.base().check_game_ids().unwrap(), 6000);
    {
        use redb::{ReadableDatabase, ReadableTableMetadata};
        let db = redb::ReadOnlyDatabase::open(&p).unwrap();
        let txn = db.begin_read().unwrap();
        // Several id chunks, several blocks, blocks across stream chunks.
        assert!(txn.open_table(GAME_ID_INDEX).unwrap().len().unwrap() >= 2);
        assert!(txn.open_table(GAME_DIR).unwrap().len().unwrap() >= 3);
        assert!(txn.open_table(GAME_CHUNKS).unwrap().len().unwrap() >= 3);
    }
    for id in 0..2000u64 {
        let found = b.base().games_by_id(id).unwrap();
        let want: Vec<&StoredGame> = all.iter().filter(|g| g.id == id).collect();
        assert_eq!(found.len(), 3, "id {id}");
        for (n, g) in &found {
            assert_eq!(&all[*n as usize], g);
        }
        assert_eq!(found.iter().map(|f| &f.1).collect::<Vec<_>>(), want);
        let one = b.base().game_by_number(found[0].0).unwrap();
        assert_eq!(&one, want[0]);
    }
    assert!(b.base().games_by_id(2000).unwrap().is_empty());
}

/// Damage to the block stream, its directory or the id index is a `GameStore` corruption
/// when the store is read whole, never a wrong game.
#[test]
fn a_damaged_stream_directory_or_id_index_is_found() {
    use redb::ReadableTable;
    let dir = tempfile::tempdir().unwrap();
    let clean = dir.path().join("clean.book");
    big_store(&clean, 6000);
    type Damage = fn(&redb::WriteTransaction);
    let damages: [(&str, Damage); 6] = [
        ("a stream chunk removed", |t| {
            t.open_table(GAME_CHUNKS).unwrap().remove(1).unwrap();
        }),
        ("a chunk past the stream's end", |t| {
            let mut c = t.open_table(GAME_CHUNKS).unwrap();
            let last = c.last().unwrap().unwrap().0.value();
            c.insert(last + 1, &b"x"[..]).unwrap();
        }),
        ("a block's offset moved", |t| {
            let mut d = t.open_table(GAME_DIR).unwrap();
            let (k, (o, l)) = {
                let row = d.iter().unwrap().nth(1).unwrap().unwrap();
                (row.0.value(), row.1.value())
            };
            d.insert(k, (o + 1, l)).unwrap();
        }),
        ("a block's length cut", |t| {
            let mut d = t.open_table(GAME_DIR).unwrap();
            let (k, (o, l)) = {
                let row = d.first().unwrap().unwrap();
                (row.0.value(), row.1.value())
            };
            d.insert(k, (o, l - 1)).unwrap();
        }),
        ("an id chunk removed", |t| {
            let mut ids = t.open_table(GAME_ID_INDEX).unwrap();
            let k = ids.first().unwrap().unwrap().0.value();
            ids.remove(k).unwrap();
        }),
        ("an id chunk under another key", |t| {
            let mut ids = t.open_table(GAME_ID_INDEX).unwrap();
            let (k, v) = {
                let row = ids.last().unwrap().unwrap();
                (row.0.value(), row.1.value().to_vec())
            };
            ids.remove(k).unwrap();
            ids.insert(k + 1, v.as_slice()).unwrap();
        }),
    ];
    for (what, damage) in damages {
        let p = dir.path().join("d.book");
        std::fs::copy(&clean, &p).unwrap();
        {
            let db = redb::Database::open(&p).unwrap();
            let t = db.begin_write().unwrap();
            damage(&t);
            t.commit().unwrap();
        }
        let b = Book::open(&p, crate::chess_codec()).unwrap();
        let whole: Result<Vec<StoredGame>> = b.base().games_iter().unwrap().collect();
        let err = whole
            .and_then(|_| b.base().check_game_ids())
            .expect_err(what);
        assert!(
            matches!(
                err,
                Error::CorruptFile {
                    corruption: Corruption::GameStore { .. },
                    ..
                }
            ),
            "{what}: {err}"
        );
    }
}

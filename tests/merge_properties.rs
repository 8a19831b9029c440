//! Merge is commutative and associative: books built from random parts of a PGN (games dealt
//! to parts at random, some parts possibly empty), merged in a random order and grouping (two
//! or three books at a time, intermediate results merged again), equal the book built from the
//! whole PGN, by `dump`. Every merge reuses its largest input's model, so coded positions pass
//! through from one input and are coded again from the others; the results must not differ.
//! Parts that share games merge into the whole as well: each game counts once.

mod common;

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use bookdb::ops::import::{ImportOptions, import};
use bookdb::ops::query::entry_json;
use bookdb::ops::rewrite::{RewriteOptions, merge};
use bookdb::store::{Book, WriterOptions};
use proptest::prelude::*;

/// The games of the repository's sample PGN, one string each.
fn games() -> &'static [String] {
    static G: OnceLock<Vec<String>> = OnceLock::new();
    G.get_or_init(|| {
        let text = std::fs::read_to_string(common::sample_pgn()).unwrap();
        let mut out: Vec<String> = Vec::new();
        for chunk in text.split("\n[Event ") {
            let chunk = chunk.trim();
            if chunk.is_empty() {
                continue;
            }
            let body = chunk.strip_prefix("[Event ").unwrap_or(chunk);
            out.push(format!("[Event {body}\n\n"));
        }
        assert!(out.len() >= 100, "sample PGN has {} games", out.len());
        out
    })
}

fn build(pgn_text: &str, dir: &Path, name: &str) -> PathBuf {
    build_with(pgn_text, dir, name, WriterOptions::default())
}

fn build_with(pgn_text: &str, dir: &Path, name: &str, writer: WriterOptions) -> PathBuf {
    let pgn = dir.join(format!("{name}.pgn"));
    std::fs::write(&pgn, pgn_text).unwrap();
    let book = dir.join(format!("{name}.book"));
    let opts = ImportOptions {
        rules: bookdb::ops::pgn::CountRules {
            max_ply: 30,
            min_rating: None,
            facets: bookdb::store::facet::FacetSet::NONE,
        },
        writer,
        ..Default::default()
    };
    import(&book, &[pgn.display().to_string()], &opts).unwrap();
    book
}

fn dump(book: &Path) -> Vec<String> {
    let b = Book::open(book, bookdb::chess_codec()).unwrap();
    b.iter()
        .unwrap()
        .map(|e| serde_json::to_string(&entry_json(&e.unwrap(), false).unwrap()).unwrap())
        .collect()
}

/// The dump of the book built from all games at once.
fn whole() -> &'static [String] {
    static W: OnceLock<Vec<String>> = OnceLock::new();
    W.get_or_init(|| {
        let dir = tempfile::tempdir().unwrap();
        dump(&build(&games().concat(), dir.path(), "whole"))
    })
}

/// A book per part's games.
fn build_parts(texts: &[String], dir: &Path) -> Vec<PathBuf> {
    texts
        .iter()
        .enumerate()
        .map(|(i, t)| build(t, dir, &format!("part{i}")))
        .collect()
}

/// What `verify` finds wrong with a book: how many problems, and those it lists.
fn problems(book: &Path) -> (u64, String) {
    let v = bookdb::ops::verify::verify(book).unwrap();
    (v.problems_total, format!("{:?}", v.problems))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(12))]
    #[test]
    fn merging_random_parts_in_any_grouping_equals_the_whole(
        parts in 2usize..=4,
        deal in proptest::collection::vec(0usize..4, 200),
        picks in proptest::collection::vec((any::<prop::sample::Index>(), any::<prop::sample::Index>(), any::<prop::sample::Index>(), any::<bool>()), 4),
    ) {
        let dir = tempfile::tempdir().unwrap();
        let games = games();
        let mut texts = vec![String::new(); parts];
        for (i, g) in games.iter().enumerate() {
            texts[deal[i % deal.len()] % parts].push_str(g);
        }
        let mut pool = build_parts(&texts, dir.path());
        // Merge random picks (two, or three when asked and available) until one book is left.
        let mut step = 0;
        while pool.len() > 1 {
            let (a, b, c, three) = picks[step % picks.len()];
            let mut inputs = vec![pool.remove(a.index(pool.len()))];
            inputs.push(pool.remove(b.index(pool.len())));
            if three && !pool.is_empty() {
                inputs.push(pool.remove(c.index(pool.len())));
            }
            let out = dir.path().join(format!("m{step}.book"));
            merge(&inputs, &out, &RewriteOptions::default()).unwrap();
            pool.push(out);
            step += 1;
        }
        prop_assert_eq!(dump(&pool[0]), whole());
        let (n, listed) = problems(&pool[0]);
        prop_assert_eq!(n, 0, "{}", listed);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(8))]
    /// Parts that share games (each game dealt to a random non-empty set of parts), merged in
    /// a random grouping: each game counts once, so the result is the whole's (brief §9; the
    /// books store their games, so the merges find the shared copies and take them out).
    #[test]
    fn merging_overlapping_parts_counts_each_game_once(
        parts in 2usize..=4,
        deal in proptest::collection::vec(1u8..16, 200),
        picks in proptest::collection::vec((any::<prop::sample::Index>(), any::<prop::sample::Index>()), 4),
    ) {
        let dir = tempfile::tempdir().unwrap();
        let games = games();
        let mut texts = vec![String::new(); parts];
        for (i, g) in games.iter().enumerate() {
            let mask = usize::from(deal[i % deal.len()]) % (1 << parts);
            let mask = if mask == 0 { 1 } else { mask };
            for (p, t) in texts.iter_mut().enumerate() {
                if mask & (1 << p) != 0 {
                    t.push_str(g);
                }
            }
        }
        let mut pool = build_parts(&texts, dir.path());
        let mut step = 0;
        while pool.len() > 1 {
            let (a, b) = picks[step % picks.len()];
            let first = pool.remove(a.index(pool.len()));
            let second = pool.remove(b.index(pool.len()));
            let inputs = vec![first, second];
            let out = dir.path().join(format!("m{step}.book"));
            let s = merge(&inputs, &out, &RewriteOptions::default()).unwrap();
            prop_assert_eq!(s.copies_still_counted, 0);
            prop_assert_eq!(s.subtraction_clamped, 0);
            pool.push(out);
            step += 1;
        }
        prop_assert_eq!(dump(&pool[0]), whole());
        let (n, listed) = problems(&pool[0]);
        prop_assert_eq!(n, 0, "{}", listed);
    }
}

/// Inputs of equal size with different models (the same games, models trained on samples of
/// different sizes): the output must not depend on their order, byte for byte.
#[test]
fn merge_output_does_not_depend_on_input_order() {
    let dir = tempfile::tempdir().unwrap();
    let text = games().concat();
    let x = build(&text, dir.path(), "x");
    let small_sample = WriterOptions {
        model_sample: 500,
        ..Default::default()
    };
    let y = build_with(&text, dir.path(), "y", small_sample);
    let (bx, by) = (
        Book::open(&x, bookdb::chess_codec()).unwrap(),
        Book::open(&y, bookdb::chess_codec()).unwrap(),
    );
    assert_eq!(bx.meta().positions, by.meta().positions);
    assert_ne!(
        bx.compression().unwrap().model,
        by.compression().unwrap().model,
        "different samples train different models"
    );
    let (xy, yx) = (dir.path().join("xy.book"), dir.path().join("yx.book"));
    merge(&[x.clone(), y.clone()], &xy, &RewriteOptions::default()).unwrap();
    merge(&[y, x], &yx, &RewriteOptions::default()).unwrap();
    assert!(
        std::fs::read(&xy).unwrap() == std::fs::read(&yx).unwrap(),
        "merge X Y and merge Y X wrote different files"
    );
}

/// A merge of a book with a trained dictionary and a delta tier and a book imported from a
/// Polyglot file (key-only entries): with the first book's coded positions passed through, the
/// output is byte for byte the file a merge that codes every position again writes with the
/// same model and dictionary, and it verifies.
#[test]
fn passing_coded_positions_through_writes_the_same_file_as_coding_them_again() {
    use bookdb::chess::attach::AttachKeyOnly;
    use bookdb::store::BookWriter;
    use bookdb::store::entry::MergeIter;
    let (Some(medium), Some(bin)) = (
        common::data_file("pgn/medium-10k.pgn"),
        common::data_file("books/github-DimTrigkakis-ChessEngine_gm2001.bin"),
    ) else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let text = std::fs::read(medium).unwrap();
    let starts = common::game_starts(&text);
    let (base, more) = (dir.path().join("base.pgn"), dir.path().join("more.pgn"));
    std::fs::write(&base, &text[..starts[3000]]).unwrap();
    std::fs::write(&more, &text[starts[3000]..starts[3020]]).unwrap();
    let p = dir.path().join("p.book");
    let opts = ImportOptions::default();
    import(&p, &[base.display().to_string()], &opts).unwrap();
    import(&p, &[more.display().to_string()], &opts).unwrap();
    let k = dir.path().join("k.book");
    bookdb::ops::polyglot::import_polyglot(&k, &[bin], &Default::default()).unwrap();
    let (bp, bk) = (
        Book::open(&p, bookdb::chess_codec()).unwrap(),
        Book::open(&k, bookdb::chess_codec()).unwrap(),
    );
    assert!(
        bp.meta().delta_entries > 0,
        "the small import went to the delta tier"
    );
    assert!(
        bk.meta().key_only > 0,
        "the Polyglot book has key-only entries"
    );
    let comp = bp.compression().unwrap();
    assert!(
        comp.dictionary.is_some(),
        "the larger book has a dictionary"
    );

    let passed = dir.path().join("passed.book");
    merge(&[p.clone(), k.clone()], &passed, &RewriteOptions::default()).unwrap();
    let recoded = dir.path().join("recoded.book");
    let mut w =
        BookWriter::create(&recoded, bookdb::chess_codec(), WriterOptions::default()).unwrap();
    w.reuse_compression(comp.clone()).unwrap();
    // Everything but the entries as a merge carries it: games count, facets, import records,
    // game fingerprints, evaluations and the stored games (docs/FORMAT.md §15).
    for b in [&bp, &bk] {
        w.carry_over(b).unwrap();
    }
    let streams: Vec<Box<dyn Iterator<Item = bookdb::store::error::Result<bookdb::store::Entry>>>> = vec![
        Box::new(bp.iter_for_rewrite().unwrap()),
        Box::new(bk.iter_for_rewrite().unwrap()),
    ];
    for e in AttachKeyOnly::new(MergeIter::new(streams)) {
        w.push(e.unwrap()).unwrap();
    }
    w.finish().unwrap();
    assert_eq!(
        Book::open(&passed, bookdb::chess_codec())
            .unwrap()
            .compression()
            .unwrap()
            .model,
        comp.model
    );
    assert!(
        std::fs::read(&passed).unwrap() == std::fs::read(&recoded).unwrap(),
        "passing coded positions through changed the file"
    );
    let v = bookdb::ops::verify::verify(&passed).unwrap();
    assert!(v.ok(), "{:?}", v.problems);
}

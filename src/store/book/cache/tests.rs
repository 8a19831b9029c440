//! The block cache's tests: kept blocks, answers and entries of every cell, counted within
//! the cache's limit.

use super::*;
use crate::store::entry::MoveRec;

fn block(bytes: usize) -> Arc<CachedBlock> {
    Arc::new(CachedBlock::new(
        1,
        0,
        vec![0; bytes],
        Vec::new(),
        Default::default(),
        u64::MAX,
    ))
}

/// An entry of one move with `n` cells.
fn cells_entry(n: u32) -> Entry {
    let mut e = entry(u64::from(n));
    e.moves[0].cells = (0..n)
        .map(|i| CellStat {
            cell: crate::store::facet::CellId(i << 8),
            white: 1,
            ..CellStat::default()
        })
        .collect();
    e
}

fn entry(games: u64) -> Entry {
    Entry {
        key: 7,
        pos: Some(vec![1, 2, 3]),
        moves: vec![MoveRec {
            mv: 1,
            white: games,
            ..Default::default()
        }],
        coded: None,
    }
}

#[test]
fn kept_answers_are_counted_in_the_cache_and_leave_with_their_block() {
    let cache = BlockCache::new(100_000);
    let (a, b) = (block(1_000), block(1_000));
    cache.put(10, a.clone());
    let before = cache.kept_answers().1;
    let e = entry(1_000);
    assert!(worth_keeping(ANSWER_MIN_CELL_BYTES) && !worth_keeping(100));
    let unfiltered = AnswerKey::of(b"xy", CellRead::Totals).unwrap();
    let blitz = CellFilter {
        speeds: Some(1 << 3),
        ..CellFilter::default()
    };
    let filtered = AnswerKey::of(b"xy", CellRead::Passing(&blitz)).unwrap();
    assert_eq!(AnswerKey::of(b"xy", CellRead::All), None);
    assert_eq!(AnswerKey::of(b"xy", CellRead::Skip), None);
    cache.keep_answer(10, &a, unfiltered.clone(), &e);
    cache.keep_answer(10, &a, unfiltered.clone(), &e);
    let (kept, used) = cache.kept_answers();
    assert_eq!(kept, 1, "kept once");
    assert_eq!(used - before, answer_bytes(&unfiltered, &e));
    assert_eq!(a.answer(b"xy", CellRead::Totals), Some(e.clone()));
    assert_eq!(
        a.answer(b"xy", CellRead::Passing(&blitz)),
        None,
        "another question"
    );
    assert_eq!(a.answer(b"xy", CellRead::All), None);
    cache.keep_answer(10, &a, filtered.clone(), &entry(5));
    assert_eq!(a.answer(b"xy", CellRead::Passing(&blitz)), Some(entry(5)));
    // A block that is not the cached one keeps nothing.
    cache.keep_answer(10, &b, unfiltered.clone(), &e);
    cache.keep_answer(20, &b, unfiltered.clone(), &e);
    assert_eq!(cache.kept_answers().0, 2);
    assert_eq!(b.answer(b"xy", CellRead::Totals), None);
    // At most a few per block, the oldest going first, the count following.
    for i in 0..10u8 {
        cache.keep_answer(10, &a, AnswerKey::of(&[i], CellRead::Totals).unwrap(), &e);
    }
    let (kept, used) = cache.kept_answers();
    assert_eq!(kept, ANSWERS_PER_BLOCK);
    assert_eq!(used, a.bytes());
    assert_eq!(a.answer(b"xy", CellRead::Totals), None, "the oldest went");
    assert!(a.answer(&[9], CellRead::Totals).is_some());
    // Replacing the block takes its kept answers' bytes out of the count.
    cache.put(10, b.clone());
    assert_eq!(cache.kept_answers(), (0, b.bytes()));
}

#[test]
fn a_first_read_of_many_cells_keeps_its_entry_of_every_cell_at_once() {
    let cache = BlockCache::new(10 << 20);
    let a = block(1_000);
    cache.put(10, a.clone());
    let keep = |coded: &[u8], (read, walked): (CellRead, CellRead), e: Entry, cell_bytes| {
        cache.keep_read(10, &a, coded, (read, walked), e, cell_bytes)
    };
    // Few cells, or unfiltered: the answer only.
    for kept in [1_000, 20_000] {
        let walked = cache.walk_for(&a, b"xy", CellRead::Totals, kept);
        assert!(matches!(walked, CellRead::Totals));
    }
    keep(b"xy", (CellRead::Totals, CellRead::Totals), entry(1), 1_000);
    keep(
        b"zz",
        (CellRead::Totals, CellRead::Totals),
        entry(1),
        20_000,
    );
    assert!(a.every_cell(b"xy").is_none() && a.every_cell(b"zz").is_none());
    assert!(a.answer(b"xy", CellRead::Totals).is_some());
    // Many, filtered or a history: every cell walked at once, kept, the answer made from it.
    let f0 = CellFilter {
        modes: Some(1),
        ..CellFilter::default()
    };
    let read = CellRead::Passing(&f0);
    let walked = cache.walk_for(&a, b"zz", read, 20_000);
    assert!(
        matches!(walked, CellRead::All),
        "many cells are walked at once"
    );
    let by_period = cache.walk_for(&a, b"zz", CellRead::ByPeriod, 20_000);
    assert!(matches!(by_period, CellRead::All));
    let answer = keep(b"zz", (read, walked), cells_entry(50), 20_000);
    assert_eq!(
        answer,
        crate::store::cells::passing_of(&cells_entry(50), &f0)
    );
    assert_eq!(a.every_cell(b"zz").as_deref(), Some(&cells_entry(50)));
    assert_eq!(
        a.answer(b"zz", read),
        Some(answer),
        "the made answer is kept"
    );
    // Below the at-once size, the first filter is walked as asked and kept alone; the second
    // is walked with every cell, which is kept, and the answer made from it.
    let f1 = CellFilter {
        speeds: Some(1 << 3),
        ..CellFilter::default()
    };
    let f2 = CellFilter {
        speeds: Some(1 << 4),
        ..CellFilter::default()
    };
    let read = CellRead::Passing(&f1);
    let walked = cache.walk_for(&a, b"xy", read, 1_000);
    assert!(matches!(walked, CellRead::Passing(_)));
    keep(b"xy", (read, walked), entry(1), 1_000);
    assert!(a.every_cell(b"xy").is_none());
    let read = CellRead::Passing(&f2);
    let walked = cache.walk_for(&a, b"xy", read, 1_000);
    assert!(
        matches!(walked, CellRead::All),
        "a second filter walks every cell"
    );
    let answer = keep(b"xy", (read, walked), cells_entry(50), 1_000);
    assert_eq!(
        answer,
        crate::store::cells::passing_of(&cells_entry(50), &f2)
    );
    assert!(a.every_cell(b"xy").is_some());
    assert_eq!(
        a.answer(b"xy", read),
        Some(answer),
        "the made answer is kept"
    );
    // Too few cells walked to keep anything: answered, nothing kept.
    let read = CellRead::Passing(&f1);
    let answer = keep(b"qq", (read, CellRead::All), cells_entry(50), 100);
    assert_eq!(
        answer,
        crate::store::cells::passing_of(&cells_entry(50), &f1)
    );
    assert!(a.every_cell(b"qq").is_none() && a.answer(b"qq", read).is_none());
    // Made from it: the answers it gives.
    let made = cache
        .kept_answer(10, &a, b"xy", CellRead::ByPeriod)
        .unwrap();
    assert_eq!(made.moves[0].cells.len(), 50);
    assert!(cache.kept_answer(10, &a, b"xy", CellRead::Skip).is_none());
}

#[test]
fn an_entry_of_every_cell_is_kept_once_a_block_counted_and_within_the_limit() {
    let cache = BlockCache::new(200_000);
    let blocks: Vec<Arc<CachedBlock>> = (0..20).map(|_| block(9_600)).collect();
    for (i, b) in blocks.iter().enumerate() {
        cache.put(i as u64 * 10, b.clone());
    }
    let a = &blocks[19];
    let used = cache.kept_answers().1;
    assert!(used <= 200_000);
    let blitz = CellFilter {
        speeds: Some(1 << 3),
        ..CellFilter::default()
    };
    assert!(a.every_cell(b"xy").is_none());
    assert!(!a.answers_a_filter(b"xy"));
    cache.keep_answer(
        190,
        a,
        AnswerKey::of(b"xy", CellRead::Totals).unwrap(),
        &entry(1),
    );
    assert!(
        !a.answers_a_filter(b"xy"),
        "an unfiltered answer is not a filter's"
    );
    let k = AnswerKey::of(b"xy", CellRead::Passing(&blitz)).unwrap();
    cache.keep_answer(190, a, k, &entry(1));
    assert!(a.answers_a_filter(b"xy") && !a.answers_a_filter(b"zz"));
    // Kept for its entry only, replaced by the next, counted in the cache's bytes.
    cache.keep_every_cell(190, a, b"xy", cells_entry(40));
    assert_eq!(a.every_cell(b"xy").as_deref(), Some(&cells_entry(40)));
    assert!(a.every_cell(b"zz").is_none());
    assert_eq!(cache.map.read().unwrap().blocks.len(), 20, "room enough");
    cache.keep_every_cell(190, a, b"zz", cells_entry(100));
    assert!(a.every_cell(b"xy").is_none());
    assert_eq!(cache.kept_every_cells(), 1);
    // Other blocks went to make room; the keeping block stayed.
    let (_, used) = cache.kept_answers();
    assert!(used <= 200_000, "{used}");
    assert!(cache.get(190).is_some());
    assert!(cache.map.read().unwrap().blocks.len() < 20);
    // More than an eighth of the cache is not kept; a block not cached keeps nothing.
    let big = cells_entry(1_000);
    assert!(entry_bytes(&big) > 200_000 / 8);
    cache.keep_every_cell(190, a, b"big", big);
    assert!(a.every_cell(b"big").is_none());
    let other = block(10);
    cache.keep_every_cell(190, &other, b"xy", entry(1));
    assert!(other.every_cell(b"xy").is_none());
}

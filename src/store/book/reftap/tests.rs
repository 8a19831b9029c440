//! The tap's unit tests: what a writer's entry takes from it, and when it is not trusted.

use super::*;
use crate::store::entry::MoveRec;
use std::sync::Arc;

fn mv(v: u16, indexed: bool) -> MoveRec {
    MoveRec {
        mv: v,
        white: 1,
        indexed,
        ..Default::default()
    }
}

fn entry(key: u64, pos: &[u8], moves: &[(u16, bool)]) -> Entry {
    Entry {
        key,
        pos: Some(pos.to_vec()),
        moves: moves.iter().map(|&(v, i)| mv(v, i)).collect(),
        coded: None,
    }
}

fn codec() -> Arc<dyn PositionCodec> {
    crate::chess_codec()
}

#[test]
fn entries_take_their_own_lists_and_dropped_ones_are_skipped() {
    let tap = RefTap::default();
    let a = entry(1, b"a", &[(0, true), (3, true)]);
    let b1 = entry(5, b"b", &[(2, true)]);
    let b2 = entry(5, b"c", &[(1, true), (4, true)]);
    let c = entry(9, b"d", &[(7, false)]);
    let block = [a.clone(), b1.clone(), b2.clone()];
    let chunk = vec![
        vec![vec![], vec![4, 8]],
        vec![vec![1]],
        vec![vec![2], vec![3, 6]],
    ];
    tap.feed_chunk(1, &block, Some(chunk), true);
    // The second block has no chunk: its entries have no references.
    tap.feed_chunk(9, std::slice::from_ref(&c), None, false);
    tap.end();
    let codec = codec();
    assert_eq!(tap.take(&a, &*codec), Some(vec![vec![], vec![4, 8]]));
    // b1 was dropped by the rewrite; b2, which shares its key, lost a pruned move.
    let b2_pruned = entry(5, b"c", &[(4, true)]);
    assert_eq!(tap.take(&b2_pruned, &*codec), Some(vec![vec![3, 6]]));
    // An entry the tapped file does not hold (another file's), and one without lists.
    let other = entry(7, b"x", &[(1, true)]);
    assert_eq!(tap.take(&other, &*codec), Some(vec![vec![]]));
    assert_eq!(tap.take(&c, &*codec), Some(vec![vec![]]));
    assert_eq!(tap.trusted(), Ok(()));
}

#[test]
fn a_writer_ahead_of_the_feed_or_a_feed_not_from_the_start_is_not_trusted() {
    let codec = codec();
    let e = entry(1, b"a", &[(0, true)]);
    let later = entry(50, b"z", &[(0, true)]);
    // Fed through key 1 only, and not at its end: the writer's entry 50 is ahead.
    let tap = RefTap::default();
    tap.feed_chunk(1, std::slice::from_ref(&e), Some(vec![vec![vec![3]]]), true);
    assert_eq!(tap.take(&e, &*codec), Some(vec![vec![3]]));
    assert_eq!(tap.take(&later, &*codec), None);
    assert!(
        tap.trusted()
            .unwrap_err()
            .contains("before the iteration fed it")
    );
    assert!(!tap.wanted(), "a spoilt tap is fed no more");
    // Never fed from the first block.
    let tap = RefTap::default();
    tap.feed_chunk(1, std::slice::from_ref(&e), None, false);
    tap.end();
    assert_eq!(tap.take(&e, &*codec), None);
    assert!(tap.trusted().is_err());
    // Fed from the start but the iteration stopped before the end.
    let tap = RefTap::default();
    tap.feed_chunk(1, std::slice::from_ref(&e), None, true);
    assert!(tap.trusted().unwrap_err().contains("end"));
    // A chunk unlike its block.
    let tap = RefTap::default();
    tap.feed_chunk(
        1,
        std::slice::from_ref(&e),
        Some(vec![vec![], vec![]]),
        true,
    );
    tap.end();
    assert!(tap.trusted().unwrap_err().contains("2 entries"));
}

#[test]
fn indices_are_decoded_when_the_writer_names_the_moves_by_code() {
    // The start position: index i is the i-th legal move in code order.
    let start = shakmaty::Chess::default();
    let (key, packed) = crate::chess::key_and_pack(&start);
    let pos = packed.as_bytes().to_vec();
    let codec = codec();
    let codes = codec.unindex_moves(&pos, &[0, 5, 19]).unwrap();
    let tapped = entry(key, &pos, &[(0, true), (5, true), (19, true)]);
    let tap = RefTap::default();
    let chunk = vec![vec![vec![1], vec![], vec![2, 3]]];
    tap.feed_chunk(key, std::slice::from_ref(&tapped), Some(chunk), true);
    tap.end();
    // Merged with another file's entry of the same position: codes, one move more.
    let extra = codec.unindex_moves(&pos, &[7]).unwrap()[0];
    let mut moves = vec![
        (codes[0], false),
        (codes[1], false),
        (codes[2], false),
        (extra, false),
    ];
    moves.sort();
    let written = entry(key, &pos, &moves);
    let lists = tap.take(&written, &*codec).unwrap();
    for (m, l) in written.moves.iter().zip(&lists) {
        let want: &[u32] = match m.mv {
            c if c == codes[0] => &[1],
            c if c == codes[2] => &[2, 3],
            _ => &[],
        };
        assert_eq!(l.as_slice(), want, "move {}", m.mv);
    }
    assert_eq!(tap.trusted(), Ok(()));
}

#[test]
fn a_tap_nobody_takes_from_gives_up_instead_of_growing() {
    let tap = RefTap::default();
    let block: Vec<Entry> = (0..1000u64).map(|k| entry(k, b"p", &[(0, true)])).collect();
    let chunk = || Some(vec![vec![vec![1]]; 1000]);
    for i in 0..=(MAX_QUEUED / 1000) {
        tap.feed_chunk(i as u64, &block, chunk(), i == 0);
    }
    assert!(tap.trusted().unwrap_err().contains("not taken"));
    assert!(tap.lock().queue.is_empty());
    assert!(!tap.wanted());
}

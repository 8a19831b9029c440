//! The writer's unit tests: block layout, ordering, reuse of compression, counters.

use super::*;
use crate::chess::{PosState, encode_move, tests_support::sample_positions};
use crate::store::MoveRec;
use shakmaty::Position;

/// Entries for the sample positions: a few legal moves each, with counts from `seed`.
fn entries(seed: u64, every: usize) -> Vec<Entry> {
    let codec = crate::chess_codec();
    let mut out: Vec<Entry> = sample_positions()
        .into_iter()
        .enumerate()
        .filter(|(i, _)| i % every == 0)
        .map(|(i, pos)| {
            let chess = PosState::unpack(&pos).unwrap().to_chess().unwrap();
            let mut moves: Vec<MoveRec> = chess
                .legal_moves()
                .iter()
                .enumerate()
                .filter(|(j, _)| (j + i + seed as usize).is_multiple_of(5))
                .map(|(j, m)| MoveRec {
                    mv: encode_move(m),
                    white: seed + j as u64,
                    draws: 1,
                    ..Default::default()
                })
                .collect();
            moves.sort_by_key(|m| m.mv);
            Entry {
                coded: None,
                key: codec.key(&pos).unwrap(),
                pos: Some(pos),
                moves,
            }
        })
        .collect();
    out.sort_by(Entry::cmp_id);
    out
}

fn write(path: &Path, entries: impl IntoIterator<Item = Result<Entry>>) -> BookMeta {
    let mut w = BookWriter::create(path, crate::chess_codec(), WriterOptions::default()).unwrap();
    for e in entries {
        w.push(e.unwrap()).unwrap();
    }
    w.finish().unwrap()
}

fn all(path: &Path) -> Vec<Entry> {
    let b = Book::open(path, crate::chess_codec()).unwrap();
    b.iter().unwrap().map(Result::unwrap).collect()
}

/// A rewrite that reads blocks with their moves still indexed, merged with code-form
/// entries of some of the same positions, writes the same book as one reading codes.
#[test]
fn rewrite_with_indices_equals_rewrite_with_codes() {
    let dir = tempfile::tempdir().unwrap();
    let a = dir.path().join("a.book");
    // Raw codes may have any bits, the top one included: a key-only entry, and a position
    // whose moves cannot be indexed (one is not legal there) so they are stored raw.
    let mut base = entries(1, 1);
    base.push(Entry {
        coded: None,
        key: 0x00ff_0000_0000_0001,
        pos: None,
        moves: vec![MoveRec {
            mv: 0x8123,
            white: 1,
            ..Default::default()
        }],
    });
    base[0].moves.push(MoveRec {
        mv: 0x9001,
        draws: 2,
        ..Default::default()
    });
    base[0].normalize();
    base.sort_by(Entry::cmp_id);
    write(&a, base.clone().into_iter().map(Ok));
    assert_eq!(all(&a), base, "round trip");
    let book = Book::open(&a, crate::chess_codec()).unwrap();
    let indexed: Vec<Entry> = book
        .iter_for_rewrite()
        .unwrap()
        .map(Result::unwrap)
        .collect();
    let raw = |e: &Entry| e.pos.is_none() || e.moves.iter().any(|m| m.mv == 0x9001);
    assert!(
        indexed
            .iter()
            .all(|e| e.moves.iter().all(|m| m.indexed != raw(e))),
        "block entries keep their indices, raw moves stay codes"
    );
    assert!(
        book.iter()
            .unwrap()
            .all(|e| e.unwrap().moves.iter().all(|m| !m.indexed)),
        "plain iteration decodes them"
    );
    let extra = entries(2, 3);
    let (via_idx, via_codes) = (dir.path().join("i.book"), dir.path().join("c.book"));
    let m1 = write(
        &via_idx,
        MergeIter::new(vec![
            Box::new(book.iter_for_rewrite().unwrap()) as Box<dyn Iterator<Item = Result<Entry>>>,
            Box::new(extra.clone().into_iter().map(Ok)),
        ]),
    );
    let m2 = write(
        &via_codes,
        MergeIter::new(vec![
            Box::new(book.iter().unwrap()) as Box<dyn Iterator<Item = Result<Entry>>>,
            Box::new(extra.into_iter().map(Ok)),
        ]),
    );
    assert_eq!(m1.pairs, m2.pairs);
    assert_eq!(m1.positions, m2.positions);
    assert_eq!(all(&via_idx), all(&via_codes));
}

/// A writer told to reuse a book's model stores that book's coded positions as they are
/// and codes the others (another book's, whose model differs) again; the result equals a
/// rewrite that trains its own model. A writer not reusing a model ignores `coded`.
#[test]
fn reused_model_takes_coded_positions_of_its_own_book_only() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("a.book"), dir.path().join("b.book"));
    write(&a, entries(1, 1).into_iter().map(Ok));
    write(&b, entries(2, 3).into_iter().map(Ok));
    let (ba, bb) = (
        Book::open(&a, crate::chess_codec()).unwrap(),
        Book::open(&b, crate::chess_codec()).unwrap(),
    );
    let comp = ba.compression().expect("a written book has one model");
    assert_ne!(
        comp.model,
        bb.compression().unwrap().model,
        "books trained on different samples have different models"
    );
    let model = crate::chess_codec().load_model(&comp.model).unwrap();
    let from_a: Vec<Entry> = ba
        .iter_for_rewrite_coded(Some(&comp))
        .unwrap()
        .map(Result::unwrap)
        .collect();
    for e in &from_a {
        let mut again = Vec::new();
        model.encode(e.pos.as_deref().unwrap(), &mut again).unwrap();
        assert_eq!(
            e.coded.as_ref(),
            Some(&again),
            "stored bytes are the model's code"
        );
    }
    assert!(
        bb.iter_for_rewrite_coded(Some(&comp))
            .unwrap()
            .all(|e| e.unwrap().coded.is_none()),
        "another model's bytes are not handed on"
    );
    let streams = || {
        MergeIter::new(vec![
            Box::new(ba.iter_for_rewrite_coded(Some(&comp)).unwrap())
                as Box<dyn Iterator<Item = Result<Entry>>>,
            Box::new(bb.iter_for_rewrite_coded(Some(&comp)).unwrap()),
        ])
    };
    let (reused, trained) = (dir.path().join("r.book"), dir.path().join("t.book"));
    let mut w =
        BookWriter::create(&reused, crate::chess_codec(), WriterOptions::default()).unwrap();
    w.reuse_compression(comp.clone()).unwrap();
    for e in streams() {
        w.push(e.unwrap()).unwrap();
    }
    w.finish().unwrap();
    // Not told to reuse: the (valid, but foreign) coded bytes must be ignored; garbage
    // shows that they are.
    write(
        &trained,
        streams().map(|e| {
            e.map(|mut e| {
                e.coded = e.coded.map(|_| vec![0xff; 3]);
                e
            })
        }),
    );
    assert_eq!(all(&reused), all(&trained));
    let out = Book::open(&reused, crate::chess_codec()).unwrap();
    assert_eq!(out.compression().unwrap().model, comp.model);
    assert_eq!(out.meta().positions, all(&trained).len() as u64);
}

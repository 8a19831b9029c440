//! The run files' tests: round trips over many blocks, indexed moves, order and damage checks,
//! and merges of runs read with their cells coded.

use super::*;
use crate::chess::{PosState, encode_move, tests_support::sample_positions};
use crate::store::MoveRec;
use crate::store::entry::MoveExtra;
use crate::store::facet::{CellId, CellStat};
use proptest::prelude::*;
use shakmaty::Position;

fn codec() -> Arc<dyn PositionCodec> {
    crate::chess_codec()
}

/// A move whose counts are those of its cells (as the import makes them).
fn mv(code: u16, seed: u64, cells: bool, extra: bool) -> MoveRec {
    let mut m = MoveRec {
        mv: code,
        extra: extra.then_some(MoveExtra {
            weight: seed as u16,
            learn: seed as u32 ^ 0xdead,
        }),
        ..Default::default()
    };
    if cells {
        for c in 0..(1 + seed % 3) {
            let s = CellStat {
                cell: CellId((c as u32 + 1) << 8 | (seed as u32 % 7)),
                white: seed % 5,
                draws: 1,
                black: c,
                unknown: 0,
                rating_sum: 2000 * (seed % 5 + 1 + c),
                rating_count: seed % 5 + 1 + c,
                opp_sum: 1900 * (seed % 5 + 1 + c),
                opp_count: seed % 5 + 1 + c,
            };
            m.white += s.white;
            m.draws += s.draws;
            m.black += s.black;
            m.rating_sum += s.rating_sum;
            m.rating_count += s.rating_count;
            m.cells.push(s);
        }
    } else {
        m.white = seed;
        m.unknown = seed % 3;
    }
    m
}

/// The sample positions with some of their legal moves, and `key_only` key-only entries.
fn entries(seed: u64, key_only: usize) -> Vec<Entry> {
    let codec = codec();
    let mut out: Vec<Entry> = sample_positions()
        .into_iter()
        .enumerate()
        .map(|(i, pos)| {
            let chess = PosState::unpack(&pos).unwrap().to_chess().unwrap();
            let mut moves: Vec<MoveRec> = chess
                .legal_moves()
                .iter()
                .enumerate()
                .filter(|(j, _)| (j + i + seed as usize).is_multiple_of(4))
                .map(|(j, m)| {
                    let s = seed + j as u64;
                    mv(encode_move(m), s, s.is_multiple_of(2), s.is_multiple_of(5))
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
    let mut x = seed | 1;
    for i in 0..key_only {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        out.push(Entry {
            coded: None,
            key: x,
            pos: None,
            moves: vec![mv(i as u16, x % 97, false, x.is_multiple_of(3))],
        });
    }
    out.sort_by(Entry::cmp_id);
    out.dedup_by(|a, b| a.same_id(b));
    out
}

fn write(path: &Path, es: &[Entry]) -> u64 {
    let mut w = RunWriter::create(path, codec()).unwrap();
    for e in es {
        w.push(e).unwrap();
    }
    w.finish().unwrap()
}

/// Reads a run back, decoded in place and decoded ahead on two threads: both give the same
/// entries, or both an error.
fn read(path: &Path) -> Result<Vec<Entry>> {
    let in_place: Result<Vec<Entry>> = RunReader::open(path, codec())?.collect();
    let pool = Some(decode::with_threads(2));
    let ahead: Result<Vec<Entry>> =
        RunReader::open(path, codec()).and_then(|r| r.decoding_on(pool).collect());
    match (&in_place, &ahead) {
        (Ok(a), Ok(b)) => assert!(a == b, "decoded ahead, the run reads otherwise"),
        (Err(_), Err(_)) => {}
        (a, b) => panic!(
            "in place: {}, ahead: {}",
            a.as_ref()
                .map_or_else(|e| e.to_string(), |v| format!("{} entries", v.len())),
            b.as_ref()
                .map_or_else(|e| e.to_string(), |v| format!("{} entries", v.len()))
        ),
    }
    in_place
}

/// More entries than the model sample and a block hold: the model is trained, many blocks
/// are written, and everything comes back as it went in.
#[test]
fn run_round_trip_over_many_blocks() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("r.zst");
    let es = entries(3, MODEL_SAMPLE + 3 * BLOCK_ENTRIES + 17);
    assert_eq!(write(&path, &es), es.len() as u64);
    assert_eq!(read(&path).unwrap(), es);
    assert!(!dir.path().join("r.tmp").exists());
    // Only positions, fewer than a block: trained on what there is.
    let few = entries(4, 0);
    write(&path, &few);
    assert_eq!(read(&path).unwrap(), few);
    // Nothing at all; and only key-only entries (no position to train on: the identity
    // model), over several blocks.
    write(&path, &[]);
    assert_eq!(read(&path).unwrap(), Vec::<Entry>::new());
    let keys: Vec<Entry> = entries(5, 3 * BLOCK_ENTRIES)
        .into_iter()
        .filter(|e| e.pos.is_none())
        .collect();
    write(&path, &keys);
    assert_eq!(read(&path).unwrap(), keys);
}

/// Legal moves are stored as indices; read with `open_indexed` they come back as indices
/// (positions with moves all indexed), and a run written from those entries (a merge
/// pass) holds the same as the first. An entry mixing indices and codes of the same
/// position is written as codes, equal moves added together.
#[test]
fn indexed_moves_pass_through_runs() {
    let dir = tempfile::tempdir().unwrap();
    let (a, b) = (dir.path().join("a.zst"), dir.path().join("b.zst"));
    let es = entries(8, 40);
    write(&a, &es);
    let indexed: Vec<Entry> = RunReader::open_indexed(&a, codec())
        .unwrap()
        .collect::<Result<_>>()
        .unwrap();
    let with_moves = indexed
        .iter()
        .filter(|e| e.pos.is_some() && !e.moves.is_empty());
    assert!(with_moves.clone().count() > 3);
    assert!(
        with_moves
            .clone()
            .all(|e| e.moves.iter().all(|m| m.indexed))
    );
    assert!(
        indexed
            .iter()
            .filter(|e| e.pos.is_none())
            .all(|e| e.moves.iter().all(|m| !m.indexed))
    );
    write(&b, &indexed);
    assert_eq!(read(&b).unwrap(), es);
    assert_eq!(
        std::fs::read(&a).unwrap(),
        std::fs::read(&b).unwrap(),
        "the same bytes"
    );
    // Mixed: the first position's moves as indices, plus its first move again as a code.
    let i = indexed
        .iter()
        .position(|e| e.pos.is_some() && !e.moves.is_empty())
        .unwrap();
    let mut mixed = indexed[i].clone();
    let mut again = es[i].moves[0].clone();
    again.white += 7;
    mixed.moves.insert(0, again.clone());
    write(&b, std::slice::from_ref(&mixed));
    let back = read(&b).unwrap();
    let mut want = es[i].clone();
    want.moves[0].add(&again);
    assert_eq!(back, vec![want]);
}

#[test]
fn run_refuses_entries_out_of_order() {
    let dir = tempfile::tempdir().unwrap();
    let es = entries(5, 10);
    let mut w = RunWriter::create(&dir.path().join("r.zst"), codec()).unwrap();
    w.push(&es[1]).unwrap();
    assert!(w.push(&es[0]).is_err());
    assert!(w.push(&es[1]).is_err(), "the same entry twice");
}

/// Every truncation point tried and every bit flip tried is an error, never a panic or a
/// short read taken as the whole run.
#[test]
fn run_damage_is_detected() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("r.zst");
    let es = entries(6, 3000);
    write(&path, &es);
    let bytes = std::fs::read(&path).unwrap();
    let damaged = |b: &[u8]| {
        std::fs::write(&path, b).unwrap();
        read(&path).is_err()
    };
    for cut in (0..bytes.len())
        .step_by(bytes.len() / 61 + 1)
        .chain([bytes.len() - 1])
    {
        assert!(damaged(&bytes[..cut]), "truncation at {cut} undetected");
    }
    let mut longer = bytes.clone();
    longer.push(0);
    assert!(damaged(&longer), "a byte after the end undetected");
    for i in (0..bytes.len()).step_by(bytes.len() / 97 + 1) {
        let mut bad = bytes.clone();
        bad[i] ^= 0x10;
        assert!(damaged(&bad), "flip at {i} of {} undetected", bytes.len());
    }
    // The end frame's count (8 bytes) and crc (4): read ahead, the count is checked only once
    // the last block is taken.
    for i in bytes.len() - 12..bytes.len() {
        let mut bad = bytes.clone();
        bad[i] ^= 0x01;
        assert!(damaged(&bad), "flip at {i}, in the end frame, undetected");
    }
}

/// A reader decoding ahead dropped in the middle of its run (a merge that stopped on an
/// error) leaves its pool to end: the pool's threads finish what was queued and join.
#[test]
fn a_reader_decoding_ahead_can_be_dropped_mid_run() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("r.zst");
    write(&path, &entries(8, 3 * BLOCK_ENTRIES));
    let pool = decode::with_threads(2);
    let mut r = RunReader::open(&path, codec())
        .unwrap()
        .decoding_on(Some(pool.clone()));
    assert!(r.next().unwrap().is_ok());
    drop(r);
    // The last holder of the pool joins its threads: this returns, it does not hang.
    assert_eq!(Arc::strong_count(&pool), 1);
    drop(pool);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]
    /// Any subset of entries, in order, round-trips; arbitrary bytes never panic the reader.
    #[test]
    fn run_round_trip_prop(seed in 0u64..1000, keep in 1usize..7, key_only in 0usize..300,
                           junk in proptest::collection::vec(any::<u8>(), 0..200)) {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("r.zst");
        let es: Vec<Entry> = entries(seed, key_only)
            .into_iter()
            .enumerate()
            .filter(|(i, _)| i % keep == 0)
            .map(|(_, e)| e)
            .collect();
        write(&path, &es);
        prop_assert_eq!(read(&path).unwrap(), es);
        let mut bytes = MAGIC.to_vec();
        bytes.extend_from_slice(&junk);
        let r = RunReader::from_reader("junk".into(), Box::new(std::io::Cursor::new(bytes)), codec());
        if let Ok(r) = r {
            let _ = r.collect::<Result<Vec<_>>>();
        }
    }
}

/// A merge of runs read with their cells coded (what the import's passes and final merge
/// read) gives what the merge of the decoded runs gives; damage to a run's cells is reported
/// with the run's name when the merge takes the entry.
#[test]
fn merging_coded_runs_equals_merging_decoded_runs() {
    use crate::store::entry::MergeIter;
    let dir = tempfile::tempdir().unwrap();
    let paths: Vec<PathBuf> = (0..4u64)
        .map(|s| {
            let p = dir.path().join(format!("r{s}.zst"));
            // Overlapping runs: the same positions (other moves and cells) and key-only keys.
            write(&p, &entries(s % 3, 200 * s as usize));
            p
        })
        .collect();
    let decoded: Vec<Entry> = MergeIter::new(
        paths
            .iter()
            .map(|p| RunReader::open_indexed(p, codec()).unwrap())
            .collect(),
    )
    .collect::<Result<_>>()
    .unwrap();
    let coded: Vec<Entry> = MergeIter::new(
        paths
            .iter()
            .map(|p| RunReader::open_indexed(p, codec()).unwrap().coded())
            .collect(),
    )
    .collect::<Result<_>>()
    .unwrap();
    assert_eq!(coded, decoded);
    // The same merge with the runs' blocks decoded ahead on a pool they share (the import's).
    let pool = Some(decode::with_threads(2));
    let ahead: Vec<Entry> = MergeIter::new(
        paths
            .iter()
            .map(|p| {
                let r = RunReader::open_indexed(p, codec()).unwrap();
                r.decoding_on(pool.clone()).coded()
            })
            .collect(),
    )
    .collect::<Result<_>>()
    .unwrap();
    assert_eq!(ahead, decoded);
    assert!(
        coded
            .iter()
            .any(|e| e.moves.iter().any(|m| !m.cells.is_empty()))
    );
    // Heads hold their cells coded: the entry a run yields has none decoded.
    let mut run = RunReader::open_indexed(&paths[0], codec()).unwrap().coded();
    let heads: Vec<RunHead> = run.by_ref().collect::<Result<_>>().unwrap();
    assert!(
        heads
            .iter()
            .all(|h| h.id().moves.iter().all(|m| m.cells.is_empty()))
    );
    assert!(heads.iter().any(|h| h.cells.coded_len() > 0));

    // A run whose stored cells disagree with its counters: the merge fails naming the run.
    let mut bad = entries(0, 0);
    let with_cells = bad
        .iter()
        .position(|e| e.moves.iter().any(|m| !m.cells.is_empty()))
        .unwrap();
    let m = bad[with_cells]
        .moves
        .iter_mut()
        .find(|m| !m.cells.is_empty())
        .unwrap();
    // Counters below their cells' sums: the cells cannot be read back as adding up to them.
    (m.white, m.draws, m.black, m.unknown) = (0, 0, 0, 0);
    let p = dir.path().join("bad.zst");
    write(&p, &bad);
    let runs = vec![
        RunReader::open_indexed(&paths[1], codec()).unwrap().coded(),
        RunReader::open_indexed(&p, codec()).unwrap().coded(),
    ];
    let err = MergeIter::new(runs)
        .try_for_each(|e| e.map(drop))
        .unwrap_err()
        .to_string();
    assert!(err.contains("bad.zst") && err.contains("cells"), "{err}");
}

/// Runs written sharing one [`RunModels`] store the model the first of them trained, read
/// back the same entries, and their readers hold one loaded model between them; a merge of
/// such runs equals a merge of runs that each trained their own.
#[test]
fn runs_sharing_a_model_store_and_load_it_once() {
    use crate::store::entry::MergeIter;
    let dir = tempfile::tempdir().unwrap();
    let models = RunModels::new();
    let mut shared = Vec::new();
    let mut own = Vec::new();
    for s in 0..3u64 {
        let mut want = entries(s, 50 * s as usize);
        if s == 0 {
            // The first run trains on other positions than the others would.
            want = want.into_iter().step_by(3).collect();
        }
        let p = dir.path().join(format!("s{s}.zst"));
        let mut w = RunWriter::create_sharing(&p, codec(), &models).unwrap();
        for e in &want {
            w.push(e).unwrap();
        }
        w.finish().unwrap();
        shared.push(p);
        let q = dir.path().join(format!("o{s}.zst"));
        write(&q, &want);
        own.push(q);
    }
    // The model frame (the first frame after the magic) is the same bytes in every shared run.
    let frame = |p: &Path| {
        let b = std::fs::read(p).unwrap();
        let n = u32::from_le_bytes(b[8..12].try_into().unwrap()) as usize;
        b[12..12 + n].to_vec()
    };
    assert_eq!(frame(&shared[0]), frame(&shared[1]));
    assert_eq!(frame(&shared[0]), frame(&shared[2]));
    assert_ne!(
        frame(&own[1]),
        frame(&shared[1]),
        "on its own the run trains another model"
    );
    let readers = RunModels::new();
    let open = |p: &PathBuf| RunReader::open_indexed_sharing(p, codec(), &readers).unwrap();
    let (a, b) = (open(&shared[0]), open(&shared[2]));
    assert!(Arc::ptr_eq(&a.model, &b.model), "one loaded model");
    let merged = |runs: Vec<RunReader>| -> Vec<Entry> {
        MergeIter::new(runs.into_iter().map(RunReader::coded).collect())
            .collect::<Result<_>>()
            .unwrap()
    };
    let via_shared = merged(shared.iter().map(open).collect());
    let via_own = merged(
        own.iter()
            .map(|p| RunReader::open_indexed(p, codec()).unwrap())
            .collect(),
    );
    assert_eq!(via_shared, via_own);
    assert!(!via_shared.is_empty());
}

//! Shared fixtures of the bookdb fuzz targets and of the seed generator
//! (`examples/gen_seeds.rs`): a fixed list of legal games, the positions they pass through,
//! chess position models trained once per process, and valid blocks built from fuzz-chosen
//! entries.

use std::panic;
use std::sync::OnceLock;

use arbitrary::{Result as ArbResult, Unstructured};
use bookdb::chess::{ChessCodec, ChessModel, PosState, encode_move, parse_move};
use bookdb::store::entry::{Entry, MoveExtra, MoveRec};
use bookdb::store::{IdentityModel, PositionCodec, PositionModel};
use shakmaty::{Chess, Position};

/// Mainlines (SAN) of a few legal games: castling both ways, en passant (with and without a
/// capturing pawn beside), promotions, under-promotion and checks.
pub const GAMES: &[&str] = &[
    "e4 c5 Nf3 d6 d4 cxd4 Nxd4 Nf6 Nc3 a6 Be3 e5 Nb3 Be6 f3 Be7 Qd2 O-O O-O-O Nbd7 g4 b5",
    "e4 d5 e5 f5 exf6 e5 a4 b5 h4 b4 c4 bxc3 bxc3",
    "d4 Nf6 c4 e6 Nc3 Bb4 e3 O-O Bd3 d5 Nf3 c5 O-O Nc6 a3 Bxc3 bxc3 dxc4 Bxc4 Qc7",
    "e4 e5 Nf3 Nc6 Bb5 a6 Ba4 Nf6 O-O Be7 Re1 b5 Bb3 d6 c3 O-O h3 Nb8 d4 Nbd7",
    "f4 e5 fxe5 d6 exd6 Bxd6 Nf3 g5 g3 g4 Nh4 Ne7 d4 Ng6 Nxg6 hxg6 Qd3 Rxh2 Rxh2 Bxg3+ Rf2 Bxf2+ Kxf2",
    "a4 b5 axb5 c6 bxc6 Nf6 c7 Na6 cxd8=N Kxd8 Rxa6 Bb7 Rxf6 exf6 e4 Bxe4",
    "h4 g5 hxg5 f6 gxf6 e5 f7+ Ke7 fxg8=R Bg7 Rxg7+ Kf6 Rh6+ Kf5 Rhxh7 Rxh7 Rxh7",
];

/// One position of a sample game with its legal moves (sorted move codes).
#[derive(Clone, Debug)]
pub struct Sample {
    pub state: PosState,
    pub packed: Vec<u8>,
    pub key: u64,
    pub legal: Vec<u16>,
}

/// Every distinct position the sample games pass through (start position included), sorted
/// by packed bytes.
pub fn samples() -> &'static [Sample] {
    static S: OnceLock<Vec<Sample>> = OnceLock::new();
    S.get_or_init(|| {
        let mut seen = std::collections::BTreeMap::new();
        for line in GAMES {
            let mut pos = Chess::default();
            add_sample(&mut seen, &pos);
            for san in line.split_whitespace() {
                let mv = parse_move(&pos, san).unwrap_or_else(|e| panic!("sample game: {e}"));
                pos.play_unchecked(mv);
                add_sample(&mut seen, &pos);
            }
        }
        seen.into_values().collect()
    })
}

fn add_sample(seen: &mut std::collections::BTreeMap<Vec<u8>, Sample>, pos: &Chess) {
    let state = PosState::from_chess(pos);
    let packed = state.pack().0;
    let mut legal: Vec<u16> = pos.legal_moves().iter().map(encode_move).collect();
    legal.sort_unstable();
    let key = state.key();
    seen.entry(packed.clone()).or_insert(Sample {
        state,
        packed,
        key,
        legal,
    });
}

/// The position states of [`samples`].
pub fn sample_states() -> Vec<PosState> {
    samples().iter().map(|s| s.state.clone()).collect()
}

/// A chess position model trained on [`samples`] (the same bytes every run, so seeds coded
/// with it stay valid).
pub fn trained_model() -> &'static ChessModel {
    static M: OnceLock<ChessModel> = OnceLock::new();
    M.get_or_init(|| ChessModel::train(&sample_states()))
}

/// A chess model trained on nothing: the uniform-ish prior tables.
pub fn untrained_model() -> &'static ChessModel {
    static M: OnceLock<ChessModel> = OnceLock::new();
    M.get_or_init(|| ChessModel::train(&[]))
}

/// The trained model after a `to_bytes`/`from_bytes` round trip through the codec, as a
/// book loads it.
pub fn loaded_model() -> &'static dyn PositionModel {
    static M: OnceLock<Box<dyn PositionModel>> = OnceLock::new();
    &**M.get_or_init(|| {
        let codec = ChessCodec;
        let refs: Vec<&[u8]> = samples().iter().map(|s| s.packed.as_slice()).collect();
        let bytes = codec.train(&refs).expect("training on legal positions");
        let m = ChessModel::from_bytes(&bytes).expect("a freshly serialized model loads");
        Box::new(m)
    })
}

/// Position model by block model id: 0 identity, anything else the trained chess model.
pub fn model_for(id: u16) -> &'static dyn PositionModel {
    if id == 0 { &IdentityModel } else { loaded_model() }
}

/// One move record with fuzz-chosen statistics. Small counts are favoured so that the
/// compact record kinds (single game, single rated game) occur as well as general ones; with
/// `extra`, it carries a fuzz-chosen `MoveExtra` (as Polyglot imports store).
fn arb_move(u: &mut Unstructured<'_>, mv: u16, extra: bool) -> ArbResult<MoveRec> {
    let mut rec = MoveRec {
        mv,
        ..Default::default()
    };
    match u.int_in_range(0u8..=3)? {
        // One game, result chosen, maybe rated.
        0 => {
            match u.int_in_range(0u8..=3)? {
                0 => rec.white = 1,
                1 => rec.draws = 1,
                2 => rec.black = 1,
                _ => rec.unknown = 1,
            }
            if u.arbitrary()? {
                rec.rating_count = 1;
                rec.rating_sum = u.int_in_range(1u64..=4000)?;
            }
        }
        // Small counts.
        1 | 2 => {
            rec.white = u.int_in_range(0u64..=3)?;
            rec.draws = u.int_in_range(0u64..=3)?;
            rec.black = u.int_in_range(0u64..=3)?;
            rec.unknown = u.int_in_range(0u64..=3)?;
            rec.rating_count = u.int_in_range(0u64..=3)?;
            rec.rating_sum = rec.rating_count * u.int_in_range(0u64..=3000)?;
        }
        // Anything, including u64::MAX.
        _ => {
            rec.white = u.arbitrary()?;
            rec.draws = u.arbitrary()?;
            rec.black = u.arbitrary()?;
            rec.unknown = u.arbitrary()?;
            rec.rating_sum = u.arbitrary()?;
            rec.rating_count = u.arbitrary()?;
        }
    }
    if extra {
        rec.extra = Some(MoveExtra {
            weight: u.arbitrary()?,
            learn: u.arbitrary()?,
        });
    }
    Ok(rec)
}

/// Fuzz-chosen book entries in the canonical form a writer produces: sorted by
/// (key, position), unique identities, moves sorted and unique, at least one move each.
/// Positions come from [`samples`]; moves are legal ones (stored as indices), arbitrary codes
/// (stored raw) or both; a few key-only entries with raw codes are mixed in.
pub fn arb_entries(u: &mut Unstructured<'_>, max_entries: usize) -> ArbResult<Vec<Entry>> {
    let samples = samples();
    let n = u.int_in_range(1..=max_entries.max(1))?;
    let mut out: Vec<Entry> = Vec::with_capacity(n);
    for _ in 0..n {
        let extra = u.ratio(1u8, 8)?;
        let key_only = u.ratio(1u8, 8)?;
        let nmoves = u.int_in_range(1usize..=6)?;
        let mut moves = Vec::with_capacity(nmoves);
        let entry = if key_only {
            let key: u64 = u.arbitrary()?;
            for _ in 0..nmoves {
                let mv: u16 = u.arbitrary()?;
                moves.push(arb_move(u, mv, extra)?);
            }
            Entry { coded: None,
                key,
                pos: None,
                moves,
            }
        } else {
            let s = u.choose(samples)?;
            let raw = u.ratio(1u8, 6)?;
            for _ in 0..nmoves {
                let mv = if raw || s.legal.is_empty() {
                    u.arbitrary()?
                } else {
                    *u.choose(&s.legal)?
                };
                moves.push(arb_move(u, mv, extra)?);
            }
            Entry { coded: None,
                key: s.key,
                pos: Some(s.packed.clone()),
                moves,
            }
        };
        out.push(entry);
    }
    for e in &mut out {
        e.normalize();
    }
    out.sort_by(|a, b| a.cmp_id(b));
    out.dedup_by(|later, first| {
        if later.same_id(first) {
            first.merge(std::mem::take(later));
            true
        } else {
            false
        }
    });
    // An entry with extras (weight, opaque value) gets one on every move, as a Polyglot import
    // writes them.
    for e in &mut out {
        if e.has_extra() {
            for m in &mut e.moves {
                m.extra.get_or_insert_default();
            }
        }
    }
    Ok(out)
}

/// Whether a panic was raised inside redb's own source.
fn in_redb(info: &panic::PanicHookInfo<'_>) -> bool {
    info.location().is_some_and(|l| {
        let f = l.file();
        f.contains("/redb-") || f.contains("\\redb-")
    })
}

/// For the targets that hand fuzzed files to redb (`book_file`, `live_book`): with
/// `BOOKDB_FUZZ_IGNORE_REDB_PANICS=1`, installs (once) a hook that lets redb-internal panics
/// unwind, for the target to catch, and hands every other panic to libFuzzer's hook, which
/// aborts. Returns whether it is active.
pub fn ignore_redb_panics() -> bool {
    static ON: OnceLock<bool> = OnceLock::new();
    *ON.get_or_init(|| {
        let on = std::env::var("BOOKDB_FUZZ_IGNORE_REDB_PANICS").is_ok_and(|v| v == "1");
        if on {
            let fuzzer_hook = panic::take_hook();
            panic::set_hook(Box::new(move |info| {
                if !in_redb(info) {
                    fuzzer_hook(info);
                }
            }));
        }
        on
    })
}

/// Othello boards played at random from the start (every depth 0..60, deterministic).
pub fn othello_boards() -> &'static [bookdb::othello::Board] {
    static B: OnceLock<Vec<bookdb::othello::Board>> = OnceLock::new();
    B.get_or_init(|| {
        (0..600u64)
            .map(|i| bookdb::othello::Board::random_playout(i, (i % 61) as usize))
            .collect()
    })
}

/// The Othello position model trained on [`othello_boards`], and the untrained one.
pub fn othello_models() -> &'static [bookdb::othello::OthelloModel; 2] {
    static M: OnceLock<[bookdb::othello::OthelloModel; 2]> = OnceLock::new();
    M.get_or_init(|| {
        [
            bookdb::othello::OthelloModel::train(othello_boards()),
            bookdb::othello::OthelloModel::train(&[]),
        ]
    })
}

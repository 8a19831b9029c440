//! The uncompressed record encoding of an entry's moves, as the delta tier stores it (and the
//! sorted runs of format 1 did; docs/FORMAT.md §7). The encoders serve the tests.
//!
//! moves := count:varint, then per move: code:u16 LE, flags:u8 (bit 0: the extra follows;
//! bit 1: the cells follow), white, draws, black, unknown, rating_sum, rating_count: varint
//! each, [weight:u16 LE, learn:u32 LE] (the [`MoveExtra`] of the move), [cells]
//! ([`super::cells::encode_cells`]).

#[cfg(test)]
use super::entry::Entry;
use super::entry::{MoveExtra, MoveRec};
use super::varint;

/// Moves as codes only: rewrites decode move indices (`MoveRec::indexed`) before anything
/// reaches a run or the delta tier.
#[cfg(test)]
pub(crate) fn encode_moves(moves: &[MoveRec], out: &mut Vec<u8>) {
    varint::put(out, moves.len() as u64);
    for m in moves {
        debug_assert!(!m.indexed, "move index written as a code");
        out.extend_from_slice(&m.mv.to_le_bytes());
        out.push(u8::from(m.extra.is_some()) | u8::from(!m.cells.is_empty()) << 1);
        for v in [
            m.white,
            m.draws,
            m.black,
            m.unknown,
            m.rating_sum,
            m.rating_count,
        ] {
            varint::put(out, v);
        }
        if let Some(p) = m.extra {
            out.extend_from_slice(&p.weight.to_le_bytes());
            out.extend_from_slice(&p.learn.to_le_bytes());
        }
        if !m.cells.is_empty() {
            super::cells::encode_cells(m, out);
        }
    }
}

fn take<'a>(data: &'a [u8], pos: &mut usize, n: usize) -> Option<&'a [u8]> {
    let s = data.get(*pos..pos.checked_add(n)?)?;
    *pos += n;
    Some(s)
}

/// Decodes moves at `*pos`; `None` on malformed input (never panics).
pub(crate) fn decode_moves(data: &[u8], pos: &mut usize) -> Option<Vec<MoveRec>> {
    let n = varint::get(data, pos)?;
    // Each move takes at least 9 bytes; reject counts the data cannot hold.
    if n > (data.len() as u64) / 9 + 1 {
        return None;
    }
    let mut moves = Vec::with_capacity(n as usize);
    for _ in 0..n {
        let mv = take(data, pos, 2)?;
        let mv = u16::from_le_bytes([mv[0], mv[1]]);
        let flags = *take(data, pos, 1)?.first()?;
        if flags > 3 {
            return None;
        }
        let mut v = [0u64; 6];
        for x in &mut v {
            *x = varint::get(data, pos)?;
        }
        let extra = if flags & 1 == 1 {
            let w = take(data, pos, 2)?;
            let l = take(data, pos, 4)?;
            Some(MoveExtra {
                weight: u16::from_le_bytes([w[0], w[1]]),
                learn: u32::from_le_bytes([l[0], l[1], l[2], l[3]]),
            })
        } else {
            None
        };
        let mut m = MoveRec {
            mv,
            white: v[0],
            draws: v[1],
            black: v[2],
            unknown: v[3],
            rating_sum: v[4],
            rating_count: v[5],
            extra,
            cells: Vec::new(),
            indexed: false,
        };
        if flags & 2 != 0 {
            super::cells::decode_cells(data, pos, &mut m)?;
            if m.cells.is_empty() {
                return None;
            }
        }
        moves.push(m);
    }
    Some(moves)
}

/// A whole entry: key:u64 LE, position length:varint (0 = key-only), position bytes, moves.
#[cfg(test)]
pub(crate) fn encode_entry(e: &Entry, out: &mut Vec<u8>) {
    out.extend_from_slice(&e.key.to_le_bytes());
    let pos = e.pos.as_deref().unwrap_or_default();
    varint::put(out, pos.len() as u64);
    out.extend_from_slice(pos);
    encode_moves(&e.moves, out);
}

#[cfg(test)]
pub(crate) fn decode_entry(data: &[u8], pos: &mut usize) -> Option<Entry> {
    let k = take(data, pos, 8)?;
    let key = u64::from_le_bytes(k.try_into().ok()?);
    let len = varint::get(data, pos)?;
    let p = take(data, pos, usize::try_from(len).ok()?)?;
    let moves = decode_moves(data, pos)?;
    Some(Entry {
        coded: None,
        key,
        pos: (!p.is_empty()).then(|| p.to_vec()),
        moves,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn arb_entry() -> impl Strategy<Value = Entry> {
        (
            any::<u64>(),
            proptest::option::of(proptest::collection::vec(any::<u8>(), 1..30)),
            proptest::collection::vec(
                (
                    any::<u16>(),
                    any::<[u64; 6]>(),
                    proptest::option::of((any::<u16>(), any::<u32>())),
                ),
                0..5,
            ),
        )
            .prop_map(|(key, pos, moves)| Entry {
                coded: None,
                key,
                pos,
                moves: moves
                    .into_iter()
                    .map(|(mv, v, x)| MoveRec {
                        mv,
                        white: v[0],
                        draws: v[1],
                        black: v[2],
                        unknown: v[3],
                        rating_sum: v[4],
                        rating_count: v[5],
                        extra: x.map(|(weight, learn)| MoveExtra { weight, learn }),
                        cells: Vec::new(),
                        indexed: false,
                    })
                    .collect(),
            })
    }

    proptest! {
        #[test]
        fn entry_round_trip(es in proptest::collection::vec(arb_entry(), 0..5)) {
            let mut buf = Vec::new();
            for e in &es { encode_entry(e, &mut buf); }
            let mut pos = 0;
            for e in &es {
                let got = decode_entry(&buf, &mut pos);
                prop_assert_eq!(got.as_ref(), Some(e));
            }
            prop_assert_eq!(pos, buf.len());
        }

        #[test]
        fn moves_with_cells_round_trip(
            moves in proptest::collection::vec((any::<u16>(), crate::store::cells::tests::arb_move(), any::<bool>()), 0..5)
        ) {
            let moves: Vec<MoveRec> = moves
                .into_iter()
                .map(|(mv, m, x)| MoveRec { mv, extra: x.then_some(MoveExtra { weight: 3, learn: 4 }), ..m })
                .collect();
            let mut buf = Vec::new();
            encode_moves(&moves, &mut buf);
            let mut pos = 0;
            prop_assert_eq!(decode_moves(&buf, &mut pos), Some(moves));
            prop_assert_eq!(pos, buf.len());
        }

        #[test]
        fn garbage_never_panics(data in proptest::collection::vec(any::<u8>(), 0..100)) {
            let mut pos = 0;
            while pos < data.len() && decode_entry(&data, &mut pos).is_some() {}
            let mut pos = 0;
            let _ = decode_moves(&data, &mut pos);
        }
    }
}

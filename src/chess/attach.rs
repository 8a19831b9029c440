//! Key-only attachment: joins the moves of key-only entries (Polyglot moves stored under a bare
//! key) to the one position that has their key, in a stream of entries in book order.

use super::polyglot::{pg_to_legal, raw_pg_from_code};
use super::{PosState, encode_move};
use crate::store::{Entry, MoveRec};

/// Attaches key-only entries (Polyglot moves whose position was unknown when imported) to the
/// position that now has their key, in a stream of entries in book order: when exactly one
/// position has the key, each key-only move that is a legal move there (Polyglot castling
/// king-takes-rook or `e1g1` style) joins that position's moves with its counts, weight and
/// learn; moves that are not legal there stay key-only. Used by every whole-book rewrite.
pub struct AttachKeyOnly<I: Iterator<Item = Result<Entry, E>>, E> {
    inner: std::iter::Peekable<I>,
    ready: std::collections::VecDeque<Entry>,
    /// Key-only moves attached so far.
    pub(crate) attached: u64,
}

impl<I: Iterator<Item = Result<Entry, E>>, E> AttachKeyOnly<I, E> {
    pub fn new(inner: I) -> Self {
        AttachKeyOnly {
            inner: inner.peekable(),
            ready: Default::default(),
            attached: 0,
        }
    }

    fn attach(&mut self, group: &mut Vec<Entry>) {
        // Key-only entries sort first within a key.
        let key_only = group.iter().take_while(|e| e.pos.is_none()).count();
        if key_only == 0 || group.len() - key_only != 1 {
            return;
        }
        let Some(chess) = group[key_only]
            .pos
            .as_deref()
            .and_then(|p| PosState::unpack(p).ok())
            .and_then(|s| s.to_chess().ok())
        else {
            return;
        };
        let mut found = Vec::new();
        for e in &mut group[..key_only] {
            e.moves.retain(|m| {
                let pg = raw_pg_from_code(m.mv);
                match pg_to_legal(&chess, pg) {
                    Some((legal, _)) => {
                        found.push(MoveRec {
                            mv: encode_move(&legal),
                            ..m.clone()
                        });
                        false
                    }
                    None => true,
                }
            });
        }
        if found.is_empty() {
            return;
        }
        self.attached += found.len() as u64;
        let target = &mut group[key_only];
        target.moves.extend(found);
        target.normalize();
        group.retain(|e| !e.moves.is_empty());
    }
}

impl<I: Iterator<Item = Result<Entry, E>>, E> Iterator for AttachKeyOnly<I, E> {
    type Item = Result<Entry, E>;

    fn next(&mut self) -> Option<Result<Entry, E>> {
        if let Some(e) = self.ready.pop_front() {
            return Some(Ok(e));
        }
        let first = match self.inner.next()? {
            Ok(e) => e,
            Err(e) => return Some(Err(e)),
        };
        if first.pos.is_some() {
            // Only a group that starts with a key-only entry can change.
            return Some(Ok(first));
        }
        let mut group = vec![first];
        while let Some(Ok(e)) = self.inner.peek() {
            if e.key != group[0].key {
                break;
            }
            match self.inner.next() {
                Some(Ok(e)) => group.push(e),
                Some(Err(e)) => return Some(Err(e)),
                None => break,
            }
        }
        self.attach(&mut group);
        self.ready.extend(group);
        self.ready.pop_front().map(Ok).or_else(|| self.next())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chess::polyglot::{pg_encode, raw_code_from_pg};
    use crate::chess::tests_support::play;
    use crate::chess::{move_uci, parse_move};
    use crate::store::MoveExtra;

    fn key_only(key: u64, moves: &[(u16, u16)]) -> Entry {
        Entry {
            coded: None,
            key,
            pos: None,
            moves: moves
                .iter()
                .map(|&(pg, weight)| MoveRec {
                    mv: raw_code_from_pg(pg),
                    extra: Some(MoveExtra { weight, learn: 1 }),
                    ..Default::default()
                })
                .collect(),
        }
    }

    fn attach_all(entries: Vec<Entry>) -> (Vec<Entry>, u64) {
        let mut it = AttachKeyOnly::new(entries.into_iter().map(Ok));
        let out = it.by_ref().collect::<Result<Vec<_>, ()>>().unwrap();
        (out, it.attached)
    }

    #[test]
    fn key_only_moves_join_the_single_position_of_their_key() {
        let pos = play(&["e4", "e5", "Nf3", "Nc6", "Bc4", "Nf6"]);
        let state = PosState::from_chess(&pos);
        let sq = |s: &str| s.parse().unwrap();
        let o_o = pg_encode(sq("e1"), sq("h1"), None);
        let bogus = pg_encode(sq("a1"), sq("a8"), None);
        let d3 = encode_move(&parse_move(&pos, "d3").unwrap());
        let placed = Entry {
            coded: None,
            key: state.key(),
            pos: Some(state.pack().0),
            moves: vec![MoveRec {
                mv: d3,
                white: 2,
                ..Default::default()
            }],
        };
        let other = Entry {
            key: state.key() + 1,
            ..key_only(state.key() + 1, &[(o_o, 5)])
        };
        let (out, attached) = attach_all(vec![
            key_only(state.key(), &[(o_o, 7), (bogus, 3)]),
            placed.clone(),
            other.clone(),
        ]);
        assert_eq!(attached, 1);
        assert_eq!(out.len(), 3);
        // The illegal move stays key-only; castling joins the position as e1g1.
        assert_eq!(out[0].pos, None);
        assert_eq!(out[0].moves.len(), 1);
        assert_eq!(out[0].moves[0].mv, raw_code_from_pg(bogus));
        assert_eq!(out[1].pos, placed.pos);
        let uci: Vec<String> = out[1].moves.iter().map(|m| move_uci(m.mv)).collect();
        assert_eq!(uci, ["e1g1", "d2d3"], "sorted by code");
        let castle = out[1].moves.iter().find(|m| m.mv != d3).unwrap();
        assert_eq!(
            castle.extra,
            Some(MoveExtra {
                weight: 7,
                learn: 1
            })
        );
        // A key no position has keeps its key-only entry.
        assert_eq!(out[2], other);

        // Two positions under one key (a collision): nothing attaches.
        let mut twin = placed.clone();
        twin.pos = Some(PosState::from_chess(&play(&["d4"])).pack().0);
        let mut group = vec![key_only(state.key(), &[(o_o, 7)]), placed, twin];
        group.sort_by(|a, b| a.cmp_id(b));
        let (out, attached) = attach_all(group.clone());
        assert_eq!(attached, 0);
        assert_eq!(out, group);
    }
}

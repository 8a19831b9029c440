//! The in-memory tier of a table: the entries stored since the last publication (dirty) and
//! those read back from the files (clean), per key, with every position under a key kept
//! apart, and an estimate of the bytes they hold.

use std::collections::HashMap;
use std::hash::BuildHasherDefault;

use crate::store::keyhash::KeyHasher;

use super::entry::{BestMove, Entry};
use super::file::Item;

/// Exact position bytes held inline up to this length (a packed chess position, an Othello
/// board), on the heap beyond.
const INLINE: usize = 30;

#[derive(Clone, Debug)]
pub(crate) enum Exact {
    Inline(u8, [u8; INLINE]),
    Heap(Box<[u8]>),
}

impl Exact {
    pub(crate) fn new(b: &[u8]) -> Exact {
        if b.len() <= INLINE {
            let mut a = [0u8; INLINE];
            a[..b.len()].copy_from_slice(b);
            Exact::Inline(b.len() as u8, a)
        } else {
            Exact::Heap(b.into())
        }
    }

    #[inline]
    pub(crate) fn bytes(&self) -> &[u8] {
        match self {
            Exact::Inline(n, a) => &a[..usize::from(*n)],
            Exact::Heap(b) => b,
        }
    }

    fn heap(&self) -> usize {
        match self {
            Exact::Inline(..) => 0,
            Exact::Heap(b) => b.len(),
        }
    }
}

/// One position in memory.
#[derive(Clone, Debug)]
pub(crate) struct Held {
    pub exact: Exact,
    pub entry: Entry,
    /// Stored since the last publication (a clean one was read from a file).
    pub dirty: bool,
}

impl Held {
    fn bytes(&self) -> usize {
        let mv = match &self.entry.best_move {
            BestMove::Bytes(b) => b.len(),
            _ => 0,
        };
        PER_ITEM + self.exact.heap() + mv
    }
}

/// The positions under one key: nearly always one.
#[derive(Clone, Debug)]
enum Slot {
    One(Held),
    Many(Vec<Held>),
}

/// Bytes one held position costs besides its heap parts: the slot, the key and the hash
/// map's control byte, at its 7/8 load.
const PER_ITEM: usize = (std::mem::size_of::<(u64, Slot)>() + 1) * 8 / 7;

/// The memory tier.
#[derive(Default)]
pub(crate) struct Memory {
    map: HashMap<u64, Slot, BuildHasherDefault<KeyHasher>>,
    bytes: usize,
    dirty: usize,
}

/// What the memory tier knows of a (key, exact position).
pub(crate) enum Lookup<'a> {
    /// The position is held (its entry, if the files had one, already folded in).
    Held(&'a mut Held),
    /// Not held; `collision` if another position under its key is.
    Absent { collision: bool },
}

impl Memory {
    pub(crate) fn bytes(&self) -> usize {
        self.bytes
    }
    pub(crate) fn dirty(&self) -> usize {
        self.dirty
    }
    pub(crate) fn len(&self) -> usize {
        self.map
            .values()
            .map(|s| match s {
                Slot::One(_) => 1,
                Slot::Many(v) => v.len(),
            })
            .sum()
    }

    #[inline]
    pub(crate) fn lookup(&mut self, key: u64, exact: &[u8]) -> Lookup<'_> {
        match self.map.get_mut(&key) {
            None => Lookup::Absent { collision: false },
            Some(Slot::One(h)) if h.exact.bytes() == exact => Lookup::Held(h),
            Some(Slot::One(_)) => Lookup::Absent { collision: true },
            Some(Slot::Many(v)) => match v.iter_mut().find(|h| h.exact.bytes() == exact) {
                Some(h) => Lookup::Held(h),
                None => Lookup::Absent { collision: true },
            },
        }
    }

    /// Marks a held position dirty (its entry was just replaced) and keeps the count.
    pub(crate) fn mark_dirty(&mut self, key: u64, exact: &[u8], entry: Entry) {
        if let Lookup::Held(h) = self.lookup(key, exact) {
            let old = h.bytes();
            let was_dirty = h.dirty;
            h.entry = entry;
            h.dirty = true;
            let new = h.bytes();
            self.bytes = self.bytes + new - old;
            if !was_dirty {
                self.dirty += 1;
            }
        }
    }

    /// Adds a position that is not held.
    pub(crate) fn insert(&mut self, key: u64, held: Held) {
        self.bytes += held.bytes();
        if held.dirty {
            self.dirty += 1;
        }
        match self.map.entry(key) {
            std::collections::hash_map::Entry::Vacant(v) => {
                v.insert(Slot::One(held));
            }
            std::collections::hash_map::Entry::Occupied(mut o) => {
                let slot = o.get_mut();
                match slot {
                    Slot::One(first) => {
                        let first = first.clone();
                        *slot = Slot::Many(vec![first, held]);
                    }
                    Slot::Many(v) => v.push(held),
                }
            }
        }
    }

    /// The dirty positions in (key, exact) order, marked clean.
    pub(crate) fn take_dirty(&mut self) -> Vec<Item> {
        let mut out = Vec::with_capacity(self.dirty);
        for (&k, slot) in self.map.iter_mut() {
            let held: &mut [Held] = match slot {
                Slot::One(h) => std::slice::from_mut(h),
                Slot::Many(v) => v,
            };
            for h in held.iter_mut().filter(|h| h.dirty) {
                h.dirty = false;
                out.push((k, h.exact.bytes().into(), h.entry.clone()));
            }
        }
        self.dirty = 0;
        out.sort_unstable_by(|a, b| (a.0, &a.1).cmp(&(b.0, &b.1)));
        out
    }

    /// Forgets every clean position (the dirty ones stay: they are not published yet).
    pub(crate) fn drop_clean(&mut self) {
        let mut bytes = 0;
        self.map.retain(|_, slot| match slot {
            Slot::One(h) => {
                bytes += h.dirty as usize * h.bytes();
                h.dirty
            }
            Slot::Many(v) => {
                v.retain(|h| h.dirty);
                bytes += v.iter().map(Held::bytes).sum::<usize>();
                !v.is_empty()
            }
        });
        self.map.shrink_to_fit();
        self.bytes = bytes;
    }
}

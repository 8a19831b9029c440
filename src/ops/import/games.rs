//! The games an import worker stores (docs/FORMAT.md §15): each counted game's record kept
//! compactly in memory (its fields in one arena) until the worker spills them, sorted in the
//! game store's order, as a game run beside its entry run, or hands them over at the end.

use shakmaty::Chess;

use crate::ops::gamerec;
use crate::ops::pgn::RawGame;
use crate::store::error::Result;
use crate::store::gameblock::{self, StoredGame, store_order};
use crate::store::gamerun::GameRunWriter;

/// One stored game in the arena: its order key and where its fields are.
#[derive(Clone, Copy)]
struct Slot {
    date: u32,
    id: u64,
    at: usize,
    len: usize,
}

/// A worker's games since its last spill.
#[derive(Default)]
pub(super) struct GameSink {
    /// Each game's fields, as `varint length, bytes` in field order.
    arena: Vec<u8>,
    slots: Vec<Slot>,
    /// The mainline of the game being counted (reused).
    pub(super) moves: Vec<shakmaty::Move>,
}

impl GameSink {
    /// Memory the sink holds.
    pub(super) fn bytes(&self) -> usize {
        self.arena.capacity() + self.slots.capacity() * std::mem::size_of::<Slot>()
    }

    pub(super) fn len(&self) -> usize {
        self.slots.len()
    }

    /// Keeps the record of a game replayed from `start` (its moves in `self.moves`), to be
    /// counted; `max_ply`: the import's, the plies of a game it counts. A game whose record
    /// cannot be made is refused (the import skips it): a book that stores games counts only
    /// games it stores, which its moves that keep their cells as their games' rely on
    /// (docs/FORMAT.md §12.5).
    pub(super) fn add(
        &mut self,
        g: &RawGame,
        start: &Chess,
        max_ply: usize,
        fingerprint: impl FnOnce() -> u128,
    ) -> Result<(), gamerec::RecordError> {
        let rec = gamerec::record_moves(g, start, &self.moves, max_ply, fingerprint)?;
        let at = self.arena.len();
        for f in &rec.fields {
            crate::store::varint::put(&mut self.arena, f.len() as u64);
            self.arena.extend_from_slice(f);
        }
        self.slots.push(Slot {
            date: gameblock::date_key(&rec),
            id: rec.id,
            at,
            len: self.arena.len() - at,
        });
        Ok(())
    }

    fn game(&self, s: &Slot) -> StoredGame {
        let bytes = &self.arena[s.at..s.at + s.len];
        let mut fields = Vec::with_capacity(gamerec::FIELDS);
        let mut at = 0;
        while at < bytes.len() {
            let n = crate::store::varint::get(bytes, &mut at).unwrap_or(0) as usize;
            fields.push(bytes[at..at + n].to_vec());
            at += n;
        }
        StoredGame { id: s.id, fields }
    }

    /// Sorts the games in the store's order (date, id, then fields).
    fn sort(&mut self) {
        let mut slots = std::mem::take(&mut self.slots);
        slots.sort_by(|a, b| {
            (a.date, a.id)
                .cmp(&(b.date, b.id))
                .then_with(|| store_order(&self.game(a), &self.game(b)))
        });
        self.slots = slots;
    }

    /// Writes the games, sorted, as a game run at `path` and empties the sink (keeping its
    /// buffers). Returns the games written.
    pub(super) fn spill(&mut self, path: &std::path::Path) -> Result<u64> {
        self.sort();
        let mut w = GameRunWriter::create(path)?;
        for s in &self.slots {
            w.push(self.game(s))?;
        }
        let n = w.finish()?;
        self.arena.clear();
        self.slots.clear();
        Ok(n)
    }

    /// The games, sorted, as a stream that owns them.
    pub(super) fn into_sorted(mut self) -> impl Iterator<Item = StoredGame> + Send {
        self.sort();
        let slots = std::mem::take(&mut self.slots);
        slots.into_iter().map(move |s| self.game(&s))
    }
}

//! Aggregation of replayed games in memory: [`Aggregator`] counts (position, move) pairs in
//! flat vectors indexed by an open-addressing [`KeyTable`], prefetching a game's lookups, and
//! drains into a [`SortedAggregate`] stream of entries in book order.

use crate::ops::pgn::{GameResult, Ply};
use crate::store::facet::CellId;
use crate::store::{Entry, MoveRec};

/// Open-addressing table from Zobrist key to the index of the first position with that key.
/// Keys are uniformly random already, so their low bits pick the home slot. Slots can be
/// prefetched, which lets the aggregator overlap the cache misses of a whole game.
struct KeyTable {
    /// (key, position index + 1); 0 marks an empty slot, so a new table is zeroed memory and
    /// its untouched pages cost no resident memory.
    slots: Vec<(u64, u32)>,
    len: usize,
}

impl KeyTable {
    fn with_capacity(n: usize) -> KeyTable {
        // Load factor at most 3/4.
        let size = (n.max(8) * 4 / 3 + 1).next_power_of_two();
        KeyTable {
            slots: crate::store::write_touched(vec![(0, 0); size]),
            len: 0,
        }
    }

    #[inline]
    fn home(&self, key: u64) -> usize {
        (key as usize) & (self.slots.len() - 1)
    }

    #[inline]
    fn prefetch(&self, key: u64) {
        prefetch(self.slots.as_ptr().wrapping_add(self.home(key)));
    }

    #[inline]
    fn get(&self, key: u64) -> Option<u32> {
        let mask = self.slots.len() - 1;
        let mut i = self.home(key);
        loop {
            let (k, v) = self.slots[i];
            if v == 0 {
                return None;
            }
            if k == key {
                return Some(v - 1);
            }
            i = (i + 1) & mask;
        }
    }

    /// Inserts a key known to be absent, with a position index below `u32::MAX`.
    fn insert(&mut self, key: u64, v: u32) {
        if (self.len + 1) * 4 > self.slots.len() * 3 {
            let old = std::mem::take(&mut self.slots);
            self.slots = crate::store::write_touched(vec![(0, 0); old.len() * 2]);
            self.len = 0;
            for (k, v) in old.into_iter().filter(|&(_, v)| v != 0) {
                self.insert(k, v - 1);
            }
        }
        let mask = self.slots.len() - 1;
        let mut i = self.home(key);
        while self.slots[i].1 != 0 {
            i = (i + 1) & mask;
        }
        self.slots[i] = (key, v + 1);
        self.len += 1;
    }

    fn clear(&mut self) {
        if self.len > 0 {
            self.slots.fill((0, 0));
            self.len = 0;
        }
    }
}

const NONE: u32 = u32::MAX;

/// (position, move, cell) → move record, for books with facets: a position's moves then have
/// a record per cell, thousands at the start position (one per month and speed), too many to
/// find by walking the position's list. Open addressing over record indices + 1 (0 = empty),
/// matched exactly against the record's fields, so a hash collision never merges two cells.
#[derive(Default)]
struct CellTable {
    slots: Vec<u32>,
    len: usize,
}

#[inline]
fn cell_hash(pos: u32, mv: u16, cell: u32) -> u64 {
    let mut h = u64::from(pos).wrapping_mul(0x9e37_79b9_7f4a_7c15)
        ^ (u64::from(mv) << 40 | u64::from(cell)).wrapping_mul(0xc2b2_ae3d_27d4_eb4f);
    h ^= h >> 31;
    h = h.wrapping_mul(0x1656_67b1_9e37_79f9);
    h ^ (h >> 29)
}

impl CellTable {
    /// The record of (pos, mv, cell) in `moves`, if any; else the slot where it goes.
    fn find(&self, moves: &[AggMove], pos: u32, mv: u16, cell: u32) -> Result<u32, usize> {
        let mask = self.slots.len() - 1;
        let mut i = (cell_hash(pos, mv, cell) as usize) & mask;
        loop {
            match self.slots[i] {
                0 => return Err(i),
                v => {
                    let m = &moves[(v - 1) as usize];
                    if m.pos == pos && m.mv == mv && m.cell == cell {
                        return Ok(v - 1);
                    }
                }
            }
            i = (i + 1) & mask;
        }
    }

    /// Makes room for one more record (load factor at most 3/4), rehashing `moves`' records.
    fn reserve_one(&mut self, moves: &[AggMove]) {
        if self.slots.is_empty() || (self.len + 1) * 4 > self.slots.len() * 3 {
            let size = (self.slots.len() * 2).max(1 << 12);
            self.slots = vec![0; size];
            let mask = size - 1;
            for (idx, m) in moves.iter().enumerate().filter(|(_, m)| m.cell != NO_CELL) {
                let mut i = (cell_hash(m.pos, m.mv, m.cell) as usize) & mask;
                while self.slots[i] != 0 {
                    i = (i + 1) & mask;
                }
                self.slots[i] = idx as u32 + 1;
            }
        }
    }

    fn clear(&mut self) {
        if self.len > 0 {
            self.slots.fill(0);
            self.len = 0;
        }
    }
}
/// The cell of a game counted without facets (no cell id is this large).
const NO_CELL: u32 = u32::MAX;

/// One aggregated position: its packed form in the arena, its moves as a linked list in
/// `moves`, and the next position with the same key (collisions).
#[derive(Clone, Copy)]
struct AggPos {
    key: u64,
    pos_at: u32,
    pos_len: u32,
    first_move: u32,
    next_same_key: u32,
}

/// Counts of one move while aggregating. Counters are 32-bit: an aggregator holds fewer than
/// 2^32 games (see [`Aggregator::full`]), and each game adds at most one to each.
#[derive(Clone, Copy)]
struct AggMove {
    rating_sum: u64,
    /// The opponent's rating sum (kept only with facets).
    opp_sum: u64,
    counts: [u32; 4],
    rating_count: u32,
    opp_count: u32,
    /// The game's cell ([`NO_CELL`]: the book keeps no facets); a move has one record per
    /// cell it was played in.
    cell: u32,
    /// The position this record belongs to (for [`CellTable`]'s exact match).
    pos: u32,
    /// The last game (aggregator-local number) that counted this move: a game counts each
    /// (position, move) pair once.
    last_game: u32,
    next: u32,
    mv: u16,
}

/// Aggregated counts of one worker, keyed by Zobrist key and exact packed position. Flat
/// vectors and an arena instead of per-position heap objects: a few allocations in all, and
/// an exact estimate of the memory in use.
pub struct Aggregator {
    map: KeyTable,
    /// Books with facets: the move records by (position, move, cell).
    cells: CellTable,
    positions: Vec<AggPos>,
    moves: Vec<AggMove>,
    arena: Vec<u8>,
    games: u32,
    /// The sort order of the previous drain, kept for the next one (see `into_sorted`).
    spare_order: Vec<(u64, u32)>,
}

impl Default for Aggregator {
    fn default() -> Self {
        Aggregator::with_capacity(0)
    }
}

/// Bytes per aggregated position besides its packed form (record, hash slots at load factor
/// 3/8 to 3/4, sort index when draining) and per move record.
const POS_OVERHEAD: usize = std::mem::size_of::<AggPos>() + 32 + 16;
const MOVE_BYTES: usize = std::mem::size_of::<AggMove>();
/// Average packed position (bytes), used to size the tables from a memory budget.
const TYPICAL_PACKED: usize = 24;
/// The most positions the hash table is first sized for, whatever the budget: the table is
/// written through when it is made (see `KeyTable::with_capacity`), so it is resident memory
/// from the start; past this it doubles as positions arrive (`--memory 100000` on 500 games
/// took 8.4 GB when the table was sized for the budget alone).
const MAX_INITIAL_POSITIONS: usize = 1 << 20;
/// Plies one batch of games typically adds at most (a 1 MiB chunk holds about 2,000 games):
/// the head room reserved past the budget so that the vectors need not grow before
/// [`Aggregator::full`] is next checked.
const BATCH_PLIES: usize = 1 << 17;

impl Aggregator {
    #[doc(hidden)]
    pub fn with_capacity(positions: usize) -> Aggregator {
        Aggregator {
            map: KeyTable::with_capacity(positions),
            cells: CellTable::default(),
            positions: Vec::with_capacity(positions),
            moves: Vec::with_capacity(positions + positions / 8),
            arena: Vec::with_capacity(positions * TYPICAL_PACKED),
            games: 0,
            spare_order: Vec::new(),
        }
    }

    /// An aggregator for a memory budget (bytes). Each vector reserves what [`Aggregator::full`]
    /// can let it reach (the budget spent on it alone, plus one batch): reserved but untouched
    /// capacity costs no resident memory, while growing a vector of millions of records copies
    /// it into fresh pages (and briefly holds both). The hash table, touched at random, is
    /// sized for the typical position mix (at most [`MAX_INITIAL_POSITIONS`]) and doubles when
    /// more positions arrive.
    pub(crate) fn for_budget(budget: usize) -> Aggregator {
        let slack = BATCH_PLIES;
        Aggregator {
            map: KeyTable::with_capacity(Self::capacity_for(budget).min(MAX_INITIAL_POSITIONS)),
            cells: CellTable::default(),
            positions: Vec::with_capacity(budget / POS_OVERHEAD + slack),
            moves: Vec::with_capacity(budget / MOVE_BYTES + slack),
            arena: Vec::with_capacity(budget + slack * TYPICAL_PACKED),
            games: 0,
            spare_order: Vec::new(),
        }
    }

    /// Positions that fit a memory budget (bytes) with a typical mix (packed size, moves per
    /// position).
    #[doc(hidden)]
    pub fn capacity_for(budget: usize) -> usize {
        budget / (POS_OVERHEAD + TYPICAL_PACKED + MOVE_BYTES + MOVE_BYTES / 8)
    }

    fn pos_bytes(&self, p: &AggPos) -> &[u8] {
        &self.arena[p.pos_at as usize..(p.pos_at + p.pos_len) as usize]
    }

    fn new_position(&mut self, ply: &Ply) -> u32 {
        let bytes = ply.pos.as_bytes();
        let i = self.positions.len() as u32;
        self.positions.push(AggPos {
            key: ply.key,
            pos_at: self.arena.len() as u32,
            pos_len: bytes.len() as u32,
            first_move: NONE,
            next_same_key: NONE,
        });
        self.arena.extend_from_slice(bytes);
        i
    }

    /// The position of a ply, added if new. `known` is the first position of the ply's key if
    /// the caller has already looked it up (`NONE`: unknown, or absent then).
    fn position(&mut self, ply: &Ply, known: u32) -> u32 {
        let found = if known != NONE {
            Some(known)
        } else {
            // Absent at the caller's lookup, but an earlier ply of the game may have added it.
            self.map.get(ply.key)
        };
        let first = match found {
            Some(i) => i,
            None => {
                let i = self.new_position(ply);
                self.map.insert(ply.key, i);
                return i;
            }
        };
        let mut i = first;
        loop {
            let p = self.positions[i as usize];
            if self.pos_bytes(&p) == ply.pos.as_bytes() {
                return i;
            }
            if p.next_same_key == NONE {
                let n = self.new_position(ply);
                self.positions[i as usize].next_same_key = n;
                return n;
            }
            i = p.next_same_key;
        }
    }

    /// Counts one replayed game. The game's hash slots, then its position records, then their
    /// bytes and first moves are prefetched in stages, so the cache misses of all its plies
    /// overlap instead of following one another.
    #[doc(hidden)]
    pub fn add_game(&mut self, result: GameResult, elos: [Option<u32>; 2], plies: &[Ply]) {
        self.add_game_in(result, elos, None, plies)
    }

    /// [`Aggregator::add_game`] for a book with facets: the game's moves are counted in its
    /// cell (`None`: no facets).
    pub(crate) fn add_game_in(
        &mut self,
        result: GameResult,
        elos: [Option<u32>; 2],
        cell: Option<CellId>,
        plies: &[Ply],
    ) {
        let cell = cell.map_or(NO_CELL, |c| c.0);
        self.games += 1;
        let game = self.games;
        let r = match result {
            GameResult::White => 0,
            GameResult::Draw => 1,
            GameResult::Black => 2,
            GameResult::Unknown => 3,
        };
        for chunk in plies.chunks(PREFETCH_PLIES) {
            for ply in chunk {
                self.map.prefetch(ply.key);
            }
            let mut found = [NONE; PREFETCH_PLIES];
            for (f, ply) in found.iter_mut().zip(chunk) {
                if let Some(i) = self.map.get(ply.key) {
                    *f = i;
                    prefetch(self.positions.as_ptr().wrapping_add(i as usize));
                }
            }
            for &i in found.iter().take(chunk.len()).filter(|&&i| i != NONE) {
                let p = &self.positions[i as usize];
                prefetch(self.arena.as_ptr().wrapping_add(p.pos_at as usize));
                prefetch(self.moves.as_ptr().wrapping_add(p.first_move as usize));
            }
            for (ply, &known) in chunk.iter().zip(&found) {
                self.count(ply, known, game, r, elos, cell);
            }
        }
    }

    fn count(
        &mut self,
        ply: &Ply,
        known: u32,
        game: u32,
        r: usize,
        elos: [Option<u32>; 2],
        cell: u32,
    ) {
        let p = self.position(ply, known) as usize;
        let mut m = NONE;
        if cell == NO_CELL {
            m = self.positions[p].first_move;
            while m != NONE && self.moves[m as usize].mv != ply.mv {
                m = self.moves[m as usize].next;
            }
        } else {
            self.cells.reserve_one(&self.moves);
            match self.cells.find(&self.moves, p as u32, ply.mv, cell) {
                Ok(found) => m = found,
                Err(slot) => {
                    self.cells.slots[slot] = self.moves.len() as u32 + 1;
                    self.cells.len += 1;
                }
            }
        }
        if m == NONE {
            m = self.moves.len() as u32;
            self.moves.push(AggMove {
                rating_sum: 0,
                opp_sum: 0,
                counts: [0; 4],
                rating_count: 0,
                opp_count: 0,
                cell,
                pos: p as u32,
                last_game: 0,
                next: self.positions[p].first_move,
                mv: ply.mv,
            });
            self.positions[p].first_move = m;
        }
        let rec = &mut self.moves[m as usize];
        if rec.last_game == game {
            return;
        }
        rec.last_game = game;
        rec.counts[r] += 1;
        if let Some(e) = elos[usize::from(!ply.white_moved)] {
            rec.rating_sum += u64::from(e);
            rec.rating_count += 1;
        }
        if cell != NO_CELL
            && let Some(e) = elos[usize::from(ply.white_moved)]
        {
            rec.opp_sum += u64::from(e);
            rec.opp_count += 1;
        }
    }

    /// Heap bytes in use (exact up to allocator rounding and unused capacity).
    pub(crate) fn bytes(&self) -> usize {
        self.positions.len() * POS_OVERHEAD
            + self.arena.len()
            + self.moves.len() * MOVE_BYTES
            + self.cells.slots.len() * std::mem::size_of::<u32>()
    }

    /// True when the memory budget is used up, or a 32-bit index or counter is past half its
    /// range (the arena offset, record indices, the game counter that bounds every move
    /// counter). Checked between batches; one batch (at most 64 MiB of PGN, fewer plies than
    /// bytes, at most 50 arena bytes a ply) cannot use the other half.
    pub(crate) fn full(&self, budget: usize) -> bool {
        let limit = (u32::MAX / 2) as usize;
        self.bytes() >= budget
            || self.arena.len() >= limit
            || self.positions.len() >= limit
            || self.moves.len() >= limit
            || self.games as usize >= limit
    }

    #[doc(hidden)]
    pub fn len(&self) -> usize {
        self.positions.len()
    }

    #[doc(hidden)]
    pub fn is_empty(&self) -> bool {
        self.positions.is_empty()
    }

    /// Drains into a stream of entries sorted by (key, position); each entry is built only
    /// when the stream reaches it.
    #[doc(hidden)]
    pub fn into_sorted(mut self) -> SortedAggregate {
        let mut order = std::mem::take(&mut self.spare_order);
        order.clear();
        order.extend(
            self.positions
                .iter()
                .enumerate()
                .map(|(i, p)| (p.key, i as u32)),
        );
        order.sort_unstable();
        // Positions sharing a key (collisions) go in packed-byte order.
        let mut i = 0;
        while i < order.len() {
            let mut j = i + 1;
            while j < order.len() && order[j].0 == order[i].0 {
                j += 1;
            }
            if j - i > 1 {
                order[i..j].sort_by(|a, b| {
                    self.pos_bytes(&self.positions[a.1 as usize])
                        .cmp(self.pos_bytes(&self.positions[b.1 as usize]))
                });
            }
            i = j;
        }
        SortedAggregate {
            agg: self,
            order,
            next: 0,
        }
    }

    /// Empties the aggregator, keeping its allocations for the next round.
    pub(crate) fn clear(&mut self) {
        self.map.clear();
        self.cells.clear();
        self.positions.clear();
        self.moves.clear();
        self.arena.clear();
        self.games = 0;
    }
}

/// Entries of a drained [`Aggregator`], in (key, position) order.
pub struct SortedAggregate {
    agg: Aggregator,
    order: Vec<(u64, u32)>,
    next: usize,
}

/// How far ahead of the cursor position records (and then their bytes and first move) are
/// prefetched: drained in key order, the records are visited in random memory order.
const PREFETCH_AHEAD: usize = 16;
/// Plies of a game whose lookups are overlapped (see [`Aggregator::add_game`]).
const PREFETCH_PLIES: usize = 32;

#[inline(always)]
fn prefetch<T>(p: *const T) {
    #[cfg(target_arch = "x86_64")]
    // SAFETY: a prefetch is only a hint; it never faults, whatever the address.
    unsafe {
        std::arch::x86_64::_mm_prefetch::<{ std::arch::x86_64::_MM_HINT_T0 }>(p.cast())
    };
    #[cfg(not(target_arch = "x86_64"))]
    let _ = p;
}

impl SortedAggregate {
    #[doc(hidden)]
    pub fn len(&self) -> usize {
        self.order.len() - self.next
    }

    #[doc(hidden)]
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The emptied aggregator, for reuse (its allocations are kept).
    pub(crate) fn into_aggregator(self) -> Aggregator {
        let mut agg = self.agg;
        agg.clear();
        agg.spare_order = self.order;
        agg
    }

    /// The next entry written into `e` (its buffers reused: spilling a run allocates nothing
    /// per entry); false at the end.
    pub(crate) fn next_into(&mut self, e: &mut Entry) -> bool {
        let Some(&(key, i)) = self.order.get(self.next) else {
            return false;
        };
        if let Some(&(_, far)) = self.order.get(self.next + PREFETCH_AHEAD) {
            prefetch(self.agg.positions.as_ptr().wrapping_add(far as usize));
        }
        if let Some(&(_, near)) = self.order.get(self.next + PREFETCH_AHEAD / 2) {
            let p = &self.agg.positions[near as usize];
            prefetch(self.agg.arena.as_ptr().wrapping_add(p.pos_at as usize));
            prefetch(self.agg.moves.as_ptr().wrapping_add(p.first_move as usize));
        }
        self.next += 1;
        let p = self.agg.positions[i as usize];
        e.coded = None;
        e.key = key;
        let pos = e.pos.get_or_insert_with(Vec::new);
        pos.clear();
        pos.extend_from_slice(self.agg.pos_bytes(&p));
        e.moves.clear();
        let mut m = p.first_move;
        let mut celled = false;
        while m != NONE {
            let a = &self.agg.moves[m as usize];
            let rec = MoveRec {
                mv: a.mv,
                white: u64::from(a.counts[0]),
                draws: u64::from(a.counts[1]),
                black: u64::from(a.counts[2]),
                unknown: u64::from(a.counts[3]),
                rating_sum: a.rating_sum,
                rating_count: u64::from(a.rating_count),
                extra: None,
                cells: Vec::new(),
                indexed: false,
            };
            if a.cell != NO_CELL {
                celled = true;
                let mut c = rec.unknown_cell();
                c.cell = CellId(a.cell);
                c.opp_sum = a.opp_sum;
                c.opp_count = u64::from(a.opp_count);
                e.moves.push(MoveRec {
                    cells: vec![c],
                    ..rec
                });
            } else {
                e.moves.push(rec);
            }
            m = a.next;
        }
        if celled {
            group_cells(&mut e.moves);
        } else {
            e.normalize();
        }
        true
    }
}

/// Sorts one-cell move records by (move, cell) and joins those of a move into one record
/// with all its cells: linear after the sort, however many cells a move has.
fn group_cells(moves: &mut Vec<MoveRec>) {
    moves.sort_unstable_by_key(|m| (m.mv, m.cells.first().map(|c| c.cell)));
    let mut out: Vec<MoveRec> = Vec::with_capacity(moves.len());
    for m in moves.drain(..) {
        match out.last_mut() {
            Some(last) if last.mv == m.mv => {
                last.white += m.white;
                last.draws += m.draws;
                last.black += m.black;
                last.unknown += m.unknown;
                last.rating_sum += m.rating_sum;
                last.rating_count += m.rating_count;
                last.cells.extend(m.cells);
            }
            _ => out.push(m),
        }
    }
    *moves = out;
}

impl Iterator for SortedAggregate {
    type Item = Entry;
    fn next(&mut self) -> Option<Entry> {
        let mut e = Entry {
            coded: None,
            key: 0,
            pos: None,
            moves: Vec::with_capacity(2),
        };
        self.next_into(&mut e).then_some(e)
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (self.len(), Some(self.len()))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chess::PosState;

    fn ply(key: u64, squares_seed: u8, mv: u16, white_moved: bool) -> Ply {
        let mut s = PosState {
            squares: [0; 64],
            black_to_move: !white_moved,
            castling: 0,
            ep_file: None,
        };
        s.squares[usize::from(squares_seed % 64)] = 1 + squares_seed % 12;
        Ply {
            key,
            pos: s.pack_fixed().0,
            mv,
            white_moved,
        }
    }

    #[test]
    fn aggregator_counts_once_per_game_and_keeps_collisions_apart() {
        let mut agg = Aggregator::with_capacity(4);
        let a = ply(7, 1, 100, true);
        let a_again = ply(7, 1, 100, true);
        let collides = ply(7, 2, 100, false);
        let b = ply(3, 5, 200, false);
        // One game that repeats a pair: counted once.
        agg.add_game(
            GameResult::White,
            [Some(2000), Some(1800)],
            &[a, b, a_again],
        );
        agg.add_game(GameResult::Draw, [None, Some(1900)], &[a, collides]);
        // Grow past the initial table to exercise rehashing.
        for k in 100..200u64 {
            agg.add_game(
                GameResult::Unknown,
                [None, None],
                &[ply(k, k as u8, 1, true)],
            );
        }
        assert_eq!(agg.len(), 3 + 100);
        let entries: Vec<Entry> = agg.into_sorted().collect();
        assert!(entries.windows(2).all(|w| w[0].cmp_id(&w[1]).is_lt()));
        let at7: Vec<&Entry> = entries.iter().filter(|e| e.key == 7).collect();
        assert_eq!(at7.len(), 2, "same key, different positions stay apart");
        let first = at7
            .iter()
            .find(|e| e.pos.as_deref() == Some(a.pos.as_bytes()))
            .unwrap();
        let m = &first.moves[0];
        assert_eq!((m.white, m.draws, m.black, m.unknown), (1, 1, 0, 0));
        assert_eq!((m.rating_sum, m.rating_count), (2000, 1));
        let second = at7
            .iter()
            .find(|e| e.pos.as_deref() == Some(collides.pos.as_bytes()))
            .unwrap();
        assert_eq!(second.moves[0].draws, 1);
        assert_eq!(
            second.moves[0].rating_sum, 1900,
            "black's rating for black's move"
        );
    }

    #[test]
    fn cleared_aggregator_is_empty_and_reusable() {
        let mut agg = Aggregator::with_capacity(2);
        agg.add_game(GameResult::White, [None, None], &[ply(1, 1, 1, true)]);
        let mut sorted = agg.into_sorted();
        assert_eq!(sorted.by_ref().count(), 1);
        let mut agg = sorted.into_aggregator();
        assert!(agg.is_empty());
        assert_eq!(agg.bytes(), 0);
        agg.add_game(GameResult::Black, [None, None], &[ply(1, 1, 1, true)]);
        let e: Vec<Entry> = agg.into_sorted().collect();
        assert_eq!((e[0].moves[0].white, e[0].moves[0].black), (0, 1));
    }
}

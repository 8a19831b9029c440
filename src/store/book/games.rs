//! The game store of a book file (format 6, docs/FORMAT.md §15): each file's games in
//! (date, id) order, numbered densely from 0, as game blocks written back to back in
//! `game_chunks` (found through `game_dir`: first number → offset, length; format 9) with an id
//! index in `game_id_index` chunks (§15.5); read by id across the book's files, and carried into
//! every rewrite ([`GameCarry`]), merged in the store's order.

use std::cmp::Ordering;
use std::sync::Arc;

use super::gamestore::{StreamWriter, bad, block_at};
use super::open::GameTables;
use super::*;
use crate::store::error::{Error, Result};
use crate::store::gameblock::{self, StoredGame, store_order};
use crate::store::onegame::{FacetRank, OneGame, facet_rank};

/// Games per block written, and the raw bytes past which a block is closed early: a game read
/// by number decodes its whole block, so blocks stay small enough for an explorer answer
/// (64 KiB: median `/masters` 320 µs with its top games against 712 µs at 256 KiB, for a store
/// 20 % larger; docs/PERFORMANCE.md, "Game references").
const BLOCK_GAMES: usize = 256;
const BLOCK_RAW: usize = 64 << 10;
/// zstd level of the blocks a writer codes: on the bench set's 135k games level 6 takes
/// 63.0 B a game against 61.8 at level 19, in a fraction of the time (docs/PERFORMANCE.md,
/// "Game store in books").
const GAME_LEVEL: i32 = 6;

/// Games in the store's order ([`store_order`]), each checked where it was read.
pub type GameStream<'a> = Box<dyn Iterator<Item = Result<StoredGame>> + Send + 'a>;

impl BookFile {
    /// The games this file's store holds (meta `games_stored`).
    pub fn games_stored(&self) -> u64 {
        self.games_stored
    }

    /// The block that holds game `number`: its first number and the block opened (for its
    /// heads only, with `heads_only`: [`gameblock::BlockView`]).
    fn game_block_of(
        &self,
        t: &GameTables,
        number: u32,
        heads_only: bool,
    ) -> Result<(u32, Arc<gameblock::BlockView>)> {
        let (first, bytes) = t.store.block_of(number)?;
        let view =
            gameblock::BlockView::open(&bytes, heads_only).map_err(|e| bad(block_at(first), e))?;
        if (number - first) as usize >= view.len() {
            return Err(bad(
                format!("game {number}"),
                format!("the block from {first} holds {} games", view.len()),
            ));
        }
        Ok((first, Arc::new(view)))
    }

    /// Game `number` of this file with all its fields (the games asked for lately, and the
    /// last blocks read, are kept: [`GameCache`]).
    pub fn game_by_number(&self, number: u32) -> Result<StoredGame> {
        self.game_read(number, false)
    }

    /// Game `number` of this file with at least its head fields
    /// ([`crate::store::PositionCodec::game_head_fields`]: what an explorer answer shows);
    /// the moves are not decompressed unless the block was read whole already.
    pub fn game_head_by_number(&self, number: u32) -> Result<StoredGame> {
        self.game_read(number, true)
    }

    fn game_read(&self, number: u32, heads_only: bool) -> Result<StoredGame> {
        let Some(t) = &self.games else {
            return Err(bad(format!("game {number}"), "the file stores no games"));
        };
        if let Some(g) = self
            .game_cache
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(number, heads_only)
        {
            return Ok(g);
        }
        let (first, view) = shield("reading the game store", || {
            self.game_block_of(t, number, heads_only)
        })
        .map_err(|e| e.in_file(&self.path))?;
        let g = view.game((number - first) as usize);
        self.game_cache
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .keep(first, view, number, &g);
        Ok(g)
    }

    /// This file's stored games with this id (more than one only if two games share it), each
    /// with its number in this file.
    pub fn games_by_id(&self, id: u64) -> Result<Vec<(u32, StoredGame)>> {
        let Some(t) = &self.games else {
            return Ok(Vec::new());
        };
        shield("reading the game store", || {
            let mut out = Vec::new();
            for number in t.store.numbers_by_id(id)? {
                let (first, view) = self.game_block_of(t, number, false)?;
                let g = view.game((number - first) as usize);
                if g.id != id {
                    return Err(bad(
                        format!("id row ({id}, {number})"),
                        format!("game {number} has id {}", g.id),
                    ));
                }
                out.push((number, g));
            }
            Ok(out)
        })
        .map_err(|e| e.in_file(&self.path))
    }

    /// Every stored game of this file in number order. The blocks must number the games
    /// densely from 0, each block's chunks numbered from 0, and hold, in all, the games meta
    /// records; anything else is an error.
    pub fn games_iter(&self) -> Result<GameStream<'static>> {
        let Some(t) = &self.games else {
            return Ok(Box::new(std::iter::empty()));
        };
        let path = self.path.clone();
        let mut rows = shield("reading the game store", || t.store.blocks())
            .map_err(|e| e.in_file(&self.path))?;
        let want = self.games_stored;
        let (mut next, mut block, mut done) = (0u64, std::vec::IntoIter::default(), false);
        Ok(Box::new(std::iter::from_fn(move || {
            if done {
                return None;
            }
            let step = shield("reading the game store", || {
                loop {
                    if let Some(g) = block.next() {
                        next += 1;
                        return Ok(Some(g));
                    }
                    let Some((first, bytes)) = rows.next_block().inspect_err(|_| done = true)?
                    else {
                        done = true;
                        if next != want {
                            return Err(bad(
                                "game store",
                                format!("{next} games, meta records {want}"),
                            ));
                        }
                        return Ok(None);
                    };
                    if u64::from(first) != next {
                        done = true;
                        return Err(bad(
                            block_at(first),
                            format!("expected a block from {next}"),
                        ));
                    }
                    let games = gameblock::decode(&bytes).map_err(|e| {
                        done = true;
                        bad(block_at(first), e)
                    })?;
                    if games.is_empty() {
                        done = true;
                        return Err(bad(block_at(first), "an empty block"));
                    }
                    block = games.into_iter();
                }
            });
            step.map_err(|e| e.in_file(&path)).transpose()
        })))
    }

    /// The ids of this file's stored games in ascending order, as its id index holds them.
    pub fn game_ids_in_order(&self) -> Result<Box<dyn Iterator<Item = Result<u64>> + '_>> {
        let Some(t) = &self.games else {
            return Ok(Box::new(std::iter::empty()));
        };
        let path = self.path.clone();
        let ids = shield("reading the game store", || t.store.ids())
            .map_err(|e| e.in_file(&self.path))?;
        Ok(Box::new(ids.map(move |r| r.map_err(|e| e.in_file(&path)))))
    }

    /// The rows of this file's id index.
    pub fn game_id_rows(&self) -> Result<u64> {
        match &self.games {
            Some(t) => shield("reading the game store", || t.store.id_row_count())
                .map_err(|e| e.in_file(&self.path)),
            None => Ok(0),
        }
    }

    /// Checks this file's id index against its blocks: one row per stored game, naming the
    /// game's own id. Reads every block once; returns the games checked.
    pub fn check_game_ids(&self) -> Result<u64> {
        let Some(t) = &self.games else {
            return Ok(0);
        };
        let mut ids = Vec::with_capacity(self.games_stored.min(1 << 24) as usize);
        for g in self.games_iter()? {
            ids.push(g?.id);
        }
        let rows = self.game_id_rows()?;
        if rows != ids.len() as u64 {
            return Err(bad(
                "id index",
                format!("{rows} rows for {} stored games", ids.len()),
            ))
            .map_err(|e| e.in_file(&self.path));
        }
        shield("reading the game store", || {
            t.store
                .for_each_id_row(|id, number| match ids.get(number as usize) {
                    Some(&have) if have == id => Ok(()),
                    Some(&have) => Err(bad(
                        format!("id row ({id}, {number})"),
                        format!("game {number} has id {have}"),
                    )),
                    None => Err(bad(format!("id row ({id}, {number})"), "no such game")),
                })
        })
        .map_err(|e| e.in_file(&self.path))?;
        Ok(ids.len() as u64)
    }
}

impl Book {
    /// The stored games with this id, over all the book's files (a game stored in two files,
    /// as a merge of books that both hold it can leave it, is given once).
    pub fn games_by_id(&self, id: u64) -> Result<Vec<StoredGame>> {
        let mut out: Vec<StoredGame> = Vec::new();
        for f in self.files() {
            for (_, g) in f.games_by_id(id)? {
                if !out.contains(&g) {
                    out.push(g);
                }
            }
        }
        Ok(out)
    }

    /// Every stored game of the book in the store's order ([`store_order`]: date, then id),
    /// the files' stores merged, every record given (a book counted each record its files
    /// hold): the same sequence whether the book is one file or a base and segments.
    pub fn games_in_order(&self) -> Result<GameStream<'static>> {
        let parts = self
            .files()
            .iter()
            .map(|f| f.games_iter())
            .collect::<Result<Vec<_>>>()?;
        Ok(Box::new(MergeGames::new(parts, None)))
    }

    /// The games stored over all the book's files.
    pub fn games_stored(&self) -> u64 {
        self.files().iter().map(|f| f.games_stored()).sum()
    }
}

/// What a new file's game store will hold: the stores of the files it carries over and new
/// games, merged in the store's order (a game held twice, as the same id and fields, is kept
/// once) when [`GameCarry::write`] writes them.
#[derive(Default)]
pub(crate) struct GameCarry {
    from: Vec<Arc<BookFile>>,
    new: Vec<StoredGame>,
    streams: Vec<GameStream<'static>>,
    /// `compact --drop-games`: the new file keeps no games.
    dropped: bool,
    /// Taps armed on the carried files whose references could be carried as they are.
    taps: Vec<(Arc<BookFile>, Arc<super::reftap::RefTap>)>,
    /// A merge's: each game once ([`MergeGames`]).
    once: bool,
    /// The new file counts entries besides the carried files' (an import's, a Polyglot
    /// import's): no store is carried alone.
    added_counts: bool,
}

impl GameCarry {
    /// Gives each game once, as a merge does whose counts take the extra copies out.
    pub(crate) fn each_game_once(&mut self) {
        self.once = true;
    }

    /// The new file counts entries besides the carried files': its references are derived
    /// from the store (the entries may name moves the store's own file dropped).
    pub(crate) fn counts_added(&mut self) {
        self.added_counts = true;
    }

    pub(crate) fn carry(&mut self, files: &[Arc<BookFile>]) {
        self.from.extend(files.iter().cloned());
        for f in files {
            if f.games_stored() > 0 && f.has_game_refs() && f.format_version() == FORMAT_VERSION {
                self.taps.push((f.clone(), f.arm_ref_tap()));
            }
        }
    }

    /// The one store carried alone (no other store, no new games, no other file or added
    /// entries that count anything), of this format and with the `facets` the new file keeps: its numbers, and so
    /// its references, stay. A file that counts without games (a `--no-games` or Polyglot
    /// segment, a merge's game-less input) may add moves its stored games played that the
    /// store's own file lacks (`compact --min-games` dropped them, and their references):
    /// then the references are derived from the store again.
    fn carried_alone(&self, facets: crate::store::facet::FacetSet) -> Option<&Arc<BookFile>> {
        let mut carried = self.from.iter().filter(|f| f.games_stored() > 0);
        let f = carried.next()?;
        let others_count_nothing = self
            .from
            .iter()
            .filter(|g| !Arc::ptr_eq(g, f))
            .all(|g| g.meta().pairs == 0);
        (carried.next().is_none()
            && others_count_nothing
            && !self.added_counts
            && !self.dropped
            && self.new.is_empty()
            && self.streams.is_empty()
            && f.format_version() == FORMAT_VERSION
            && f.has_game_refs()
            && f.facets == facets)
            .then_some(f)
    }

    /// The tap on the store carried alone, if the new file keeps `facets` and the store
    /// stays alone: the writer takes each entry's references from it. Every other tap is
    /// spoilt (no iteration feeds it any more).
    pub(crate) fn alone_tap(
        &self,
        facets: crate::store::facet::FacetSet,
    ) -> Option<Arc<super::reftap::RefTap>> {
        let alone = self.carried_alone(facets);
        let mut out = None;
        for (f, tap) in &self.taps {
            match alone {
                Some(a) if Arc::ptr_eq(a, f) && out.is_none() => out = Some(tap.clone()),
                _ => tap.spoil("not the store carried alone"),
            }
        }
        out
    }

    /// Whether `tap` is still the tap on the store carried alone under `facets`.
    pub(crate) fn is_alone_tap(
        &self,
        facets: crate::store::facet::FacetSet,
        tap: &Arc<super::reftap::RefTap>,
    ) -> bool {
        let Some(alone) = self.carried_alone(facets) else {
            return false;
        };
        self.taps
            .iter()
            .any(|(f, t)| Arc::ptr_eq(f, alone) && Arc::ptr_eq(t, tap))
    }

    /// Whether the new file may store games (it does unless every source turns out empty).
    pub(crate) fn may_store(&self) -> bool {
        !self.dropped
            && (!self.new.is_empty()
                || !self.streams.is_empty()
                || self.from.iter().any(|f| f.games_stored() > 0))
    }

    /// Adds games in any order.
    pub(crate) fn add(&mut self, games: Vec<StoredGame>) {
        self.new.extend(games);
    }

    /// Adds a stream of games already in the store's order.
    pub(crate) fn add_sorted(&mut self, games: GameStream<'static>) {
        self.streams.push(games);
    }

    /// The new file keeps no games (whatever was carried or added).
    pub(crate) fn drop_all(&mut self) {
        self.dropped = true;
    }

    /// Writes the merged store into `txn`'s game tables, and the references derived from it
    /// (`ctx`); returns the games written (the caller records them in meta `games_stored`).
    pub(crate) fn write(
        &mut self,
        txn: &redb::WriteTransaction,
        ctx: &super::refs::RefContext,
        shapes: super::refzip::BlockShapes,
    ) -> Result<u64> {
        let carried: Vec<&Arc<BookFile>> =
            self.from.iter().filter(|f| f.games_stored() > 0).collect();
        if self.dropped || (carried.is_empty() && self.new.is_empty() && self.streams.is_empty()) {
            return Ok(0);
        }
        // One store carried alone, of this format and with the same facets, keeps its numbers
        // and so its references: copied as they are.
        if let Some(f) = self.carried_alone(ctx.facets) {
            return copy_store(f, txn, shapes);
        }
        if matches!(shapes, super::refzip::BlockShapes::Carried(_)) {
            return Err(Error::Internal(
                "references carried with the entries of a store that is not carried alone".into(),
            ));
        }
        let mut parts: Vec<GameStream<'static>> = Vec::new();
        // Each part's file's facets, which copy of a game a merge keeps weighs.
        let mut ranks: Vec<FacetRank> = Vec::new();
        for f in &carried {
            ranks.push(facet_rank(f.facets));
            let games = f.games_iter()?;
            if f.format_version() == FORMAT_VERSION {
                parts.push(games);
            } else {
                // An older layout, brought to this one before it is ordered (the upgrade
                // keeps the order: format 6 games have no UTCDate, so sort by Date as before).
                let codec = ctx.codec.clone();
                parts.push(Box::new(games.map(move |g| {
                    g.map(|mut g| {
                        codec.upgrade_game(&mut g);
                        g
                    })
                })));
            }
        }
        parts.append(&mut self.streams);
        let mut fresh = std::mem::take(&mut self.new);
        fresh.sort_by(store_order);
        parts.push(Box::new(fresh.into_iter().map(Ok)));
        let mut out = StoreWriter::open(
            txn,
            super::refs::RefBuilder::new(ctx.clone()),
            ctx.codec.game_head_fields(),
        )?;
        // New games and sorted streams are in no carried file: they weigh nothing.
        ranks.resize(parts.len(), facet_rank(crate::store::facet::FacetSet::NONE));
        let rule = self.once.then(|| (OneGame::of(ctx.codec.as_ref()), ranks));
        for g in MergeGames::new(parts, rule) {
            out.push(g?)?;
        }
        out.finish(txn, shapes)
    }
}

/// Copies a file's game store as it is (the numbers do not change when one store is carried
/// alone): its blocks, the id rows and the facts; its references, read in key order, are
/// aligned with the new file's entry blocks.
fn copy_store(
    f: &BookFile,
    txn: &redb::WriteTransaction,
    shapes: super::refzip::BlockShapes,
) -> Result<u64> {
    let Some(t) = &f.games else {
        return Ok(0);
    };
    shield("copying the game store", || {
        t.store.copy_into(txn)?;
        let mut facts = txn.open_table(GAME_FACTS)?;
        for row in f.fact_chunk_iter()? {
            let (k, v) = row?;
            // Checked as a reader checks it: a damaged chunk is not carried over.
            crate::store::refblock::check_facts(&v)
                .map_err(|e| bad(format!("fact chunk {k}"), e))?;
            facts.insert(k, v.as_slice())?;
        }
        Ok(())
    })
    .map_err(|e| e.in_file(&f.path))?;
    if let super::refzip::BlockShapes::Carried(lists) = shapes {
        super::refzip::write_carried(txn, f.games_stored(), lists)?;
        return Ok(f.games_stored());
    }
    let stored = super::refzip::StoredRefs::open(f)?;
    super::refzip::write_aligned(txn, f.games_stored(), shapes, |take| {
        if let Some(mut s) = stored {
            while let Some(p) = s.next_refs()? {
                take(p)?;
            }
        }
        Ok(())
    })?;
    Ok(f.games_stored())
}

/// Writes games, in the store's order, as numbered blocks and id rows.
struct StoreWriter<'t> {
    out: StreamWriter<'t>,
    /// The id rows, inserted in key order at the end: inserted in number order (random ids)
    /// they left the table's pages half full, 70 B a game on the bench set. Sorted within
    /// half the reference builder's share, spilled past it.
    id_rows: super::idspill::IdRows,
    pending: Vec<StoredGame>,
    pending_raw: usize,
    next: u32,
    first: u32,
    refs: super::refs::RefBuilder,
    /// Fields in a block's head frame (the rest in its body frame).
    head_fields: Option<usize>,
}

impl<'t> StoreWriter<'t> {
    fn open(
        txn: &'t redb::WriteTransaction,
        refs: super::refs::RefBuilder,
        head_fields: Option<usize>,
    ) -> Result<StoreWriter<'t>> {
        let ctx = refs.context();
        let id_rows = super::idspill::IdRows::new(&ctx.prefix, ctx.budget / 2);
        Ok(StoreWriter {
            head_fields,
            out: StreamWriter::open(txn)?,
            id_rows,
            pending: Vec::new(),
            pending_raw: 0,
            next: 0,
            first: 0,
            refs,
        })
    }

    fn push(&mut self, g: StoredGame) -> Result<()> {
        let number = self.next;
        self.next = number
            .checked_add(1)
            .ok_or_else(|| Error::Internal("more than 2^32 games in one file".into()))?;
        self.id_rows.push(g.id, number)?;
        self.refs.add(&g)?;
        self.pending_raw += 6 + g.fields.iter().map(|f| f.len() + 2).sum::<usize>();
        self.pending.push(g);
        if self.pending.len() >= BLOCK_GAMES || self.pending_raw >= BLOCK_RAW {
            self.seal()?;
        }
        Ok(())
    }

    fn seal(&mut self) -> Result<()> {
        if self.pending.is_empty() {
            return Ok(());
        }
        let nfields = self.pending[0].fields.len();
        let split = self.head_fields.map_or(nfields, |h| h.min(nfields));
        let bytes = gameblock::encode_split(&self.pending, GAME_LEVEL, split)
            .map_err(|e| Error::Internal(format!("coding a game block: {e}")))?;
        self.out.block(self.first, &bytes)?;
        self.first = self.next;
        self.pending.clear();
        self.pending_raw = 0;
        Ok(())
    }

    fn finish(
        mut self,
        txn: &redb::WriteTransaction,
        shapes: super::refzip::BlockShapes,
    ) -> Result<u64> {
        self.seal()?;
        for row in self.id_rows.sorted()? {
            let (id, number) = row?;
            self.out.id_row(id, number)?;
        }
        let n = u64::from(self.next);
        let StoreWriter { out, refs, .. } = self;
        out.finish()?;
        refs.write(txn, shapes)?;
        Ok(n)
    }
}

/// Streams of games, each in the store's order ([`store_order`]), merged into one in that
/// order, every record given (an import's game runs: a record met twice was counted twice).
pub fn merge_game_streams(parts: Vec<GameStream<'static>>) -> GameStream<'static> {
    Box::new(MergeGames::new(parts, None))
}

/// Streams of games in the store's order merged into one. With `once`, the records of one
/// game ([`OneGame`]: the same date and id, equal in the codec's identity fields — equal
/// records, records counted to different depths, one lichess game stored from two exports) are
/// given once, as the record a merge keeps ([`OneGame::prefer`]), whose counts take the other
/// copies out (`ops::shared_games`). Without, every record is given: whatever else writes a
/// store counted each record it holds, so that it stores every game it counts.
struct MergeGames {
    parts: Vec<GameStream<'static>>,
    /// Each stream's next game (`None`: not read yet or ended, see `ended`).
    heads: Vec<Option<StoredGame>>,
    ended: Vec<bool>,
    /// The last game taken from the heads (the order is checked against it).
    last: Option<StoredGame>,
    /// `once`: the records of one date and id read so far (with their part), and the kept
    /// ones to give, in the store's order.
    bucket: Vec<(usize, StoredGame)>,
    ready: std::collections::VecDeque<StoredGame>,
    /// `once`: the rule, and each part's file's [`FacetRank`].
    rule: Option<(OneGame, Vec<FacetRank>)>,
}

impl MergeGames {
    fn new(parts: Vec<GameStream<'static>>, rule: Option<(OneGame, Vec<FacetRank>)>) -> Self {
        let n = parts.len();
        MergeGames {
            parts,
            heads: vec![None; n],
            ended: vec![false; n],
            last: None,
            bucket: Vec::new(),
            ready: Default::default(),
            rule,
        }
    }

    /// Reads the next game of every stream whose head is empty.
    fn fill(&mut self) -> Result<()> {
        for i in 0..self.parts.len() {
            if self.heads[i].is_none() && !self.ended[i] {
                match self.parts[i].next() {
                    Some(g) => self.heads[i] = Some(g?),
                    None => self.ended[i] = true,
                }
            }
        }
        Ok(())
    }

    /// The least head, taken, in the store's order, with its part; `None` when every stream
    /// ended.
    fn take_least(&mut self) -> Result<Option<(usize, StoredGame)>> {
        self.fill()?;
        let mut least: Option<usize> = None;
        for (i, h) in self.heads.iter().enumerate() {
            let Some(g) = h else { continue };
            let better = match least.and_then(|l| self.heads[l].as_ref()) {
                Some(best) => store_order(g, best) == Ordering::Less,
                None => true,
            };
            if better {
                least = Some(i);
            }
        }
        let Some((part, g)) = least.and_then(|l| Some((l, self.heads[l].take()?))) else {
            return Ok(None);
        };
        if let Some(l) = &self.last
            && store_order(l, &g) == Ordering::Greater
        {
            return Err(Error::Internal(format!(
                "game {:012x} out of the store's order",
                g.id
            )));
        }
        self.last = Some(g.clone());
        Ok(Some((part, g)))
    }

    /// The records of one date and id (`bucket`), each game's kept record once, in the
    /// store's order, onto `ready`.
    fn settle(&mut self) {
        let Some((rule, ranks)) = &self.rule else {
            return;
        };
        let rank = |part: usize| ranks.get(part).copied().unwrap_or_default();
        let mut kept: Vec<(usize, StoredGame)> = Vec::with_capacity(self.bucket.len());
        for (part, g) in self.bucket.drain(..) {
            match kept.iter_mut().find(|k| rule.same(&k.1, &g)) {
                Some(k) => {
                    if rule.prefer((&g, rank(part)), (&k.1, rank(k.0))) == Ordering::Greater {
                        *k = (part, g);
                    }
                }
                None => kept.push((part, g)),
            }
        }
        kept.sort_by(|a, b| store_order(&a.1, &b.1));
        self.ready.extend(kept.into_iter().map(|k| k.1));
    }

    fn next_game(&mut self) -> Result<Option<StoredGame>> {
        if self.rule.is_none() {
            return Ok(self.take_least()?.map(|(_, g)| g));
        }
        loop {
            if let Some(g) = self.ready.pop_front() {
                return Ok(Some(g));
            }
            let Some((part, g)) = self.take_least()? else {
                if self.bucket.is_empty() {
                    return Ok(None);
                }
                self.settle();
                continue;
            };
            if self
                .bucket
                .first()
                .is_some_and(|b| !OneGame::same_key(&b.1, &g))
            {
                self.settle();
            }
            self.bucket.push((part, g));
        }
    }
}

impl Iterator for MergeGames {
    type Item = Result<StoredGame>;

    fn next(&mut self) -> Option<Result<StoredGame>> {
        self.next_game().transpose()
    }
}

#[cfg(test)]
mod tests;

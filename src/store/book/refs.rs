//! The game references of a book file (format 7, docs/FORMAT.md §15.4), a pure function of the
//! file's game store: per (position, move, cell) the newest and the strongest games
//! ([`crate::store::gamerefs`]), kept per (position, move) as the union of its cells' lists in
//! `game_refs` as one chunk per entry block (format 10: aligned with the block's entries, so a
//! reference costs its game number only; `refzip`), with each game's facts (cell, Elos, result)
//! in `game_facts`. [`RefBuilder`] derives them while the store is written (its codec replays each
//! game: [`PositionCodec::index_game`]), sorting within a memory budget and spilling sorted
//! runs beside the file; reads find a position's entry and its block's chunk, and a game's
//! facts.

use std::collections::{BinaryHeap, HashMap};
use std::hash::BuildHasherDefault;
use std::io::{BufReader, BufWriter, Read, Write};
use std::path::PathBuf;
use std::sync::Arc;

use super::open::GameTables;
use super::refzip::BlockShapes;
use super::*;
use crate::store::PositionCodec;
use crate::store::error::{Corruption, Error, Result};
use crate::store::facet::FacetSet;
use crate::store::gameblock::StoredGame;
use crate::store::gamerefs::{GameFacts, NEWEST, STRONGEST};
use crate::store::keyhash::KeyHasher;
use crate::store::refblock::{self, FACTS_PER_CHUNK, PosRefs};
use crate::store::workers::{Pending, Workers};

/// The least sorting memory a builder takes, whatever it is given (bytes).
const MIN_BUDGET: usize = 4096;
/// Games indexed together (on the sealing threads).
const BATCH: usize = 2048;
/// Most runs one merge reads at once.
const FAN_IN: usize = 16;
/// zstd window of a run (2^17 = 128 KiB): what each open run costs to read, FAN_IN at a time.
const RUN_WINDOW_LOG: u32 = 17;
/// Bytes of a tuple in a spilled run.
const TUPLE_BYTES: usize = 20;

/// What a writer derives references with.
#[derive(Clone)]
pub(crate) struct RefContext {
    pub(crate) codec: Arc<dyn PositionCodec>,
    /// The facets the new file keeps (a game's cell is masked to them).
    pub(crate) facets: FacetSet,
    /// Memory for sorting (bytes); past it, sorted runs are spilled.
    pub(crate) budget: usize,
    /// Spilled runs are `<prefix>.refs-<n>`.
    pub(crate) prefix: PathBuf,
}

/// One counted (position, move) of one game.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
struct Tuple {
    key: u64,
    mv: u16,
    cell: u32,
    number: u32,
    strength: u16,
}

impl Tuple {
    fn put(&self, out: &mut Vec<u8>) {
        out.extend_from_slice(&self.key.to_le_bytes());
        out.extend_from_slice(&self.mv.to_le_bytes());
        out.extend_from_slice(&self.cell.to_le_bytes());
        out.extend_from_slice(&self.number.to_le_bytes());
        out.extend_from_slice(&self.strength.to_le_bytes());
    }

    fn get(b: &[u8; TUPLE_BYTES]) -> Tuple {
        let u = |r: std::ops::Range<usize>| -> u64 {
            b[r].iter().rev().fold(0u64, |a, &x| a << 8 | u64::from(x))
        };
        Tuple {
            key: u(0..8),
            mv: u(8..10) as u16,
            cell: u(10..14) as u32,
            number: u(14..18) as u32,
            strength: u(18..20) as u16,
        }
    }
}

/// A game indexed: its facts and its (key, move) pairs, or why it could not be replayed.
type Indexed = std::result::Result<(Option<GameFacts>, Vec<(u64, u16)>), String>;

/// Games to index on a worker thread, with the codec that replays them.
type IndexJob = (Arc<dyn PositionCodec>, Vec<StoredGame>);

/// Indexes `games` (a part of a batch) on a worker thread.
fn index_games((codec, games): IndexJob) -> Vec<Indexed> {
    codec
        .index_games(&games)
        .into_iter()
        .map(|r| r.map_err(|e| e.to_string()))
        .collect()
}

/// Derives a file's references and facts from its games, given in number order.
pub(crate) struct RefBuilder {
    ctx: RefContext,
    /// The threads that index each batch, started with the first (`store::workers`).
    indexers: Option<Workers<IndexJob, Vec<Indexed>>>,
    tuples: Vec<Tuple>,
    runs: Vec<PathBuf>,
    /// Each run's tier (0: spilled from memory; n + 1: merged from FAN_IN runs of tier n).
    levels: Vec<u32>,
    /// Runs made so far (names them), and the one being written.
    made: usize,
    partial: Option<PathBuf>,
    /// Games added, not indexed yet.
    batch: Vec<StoredGame>,
    /// The batch handed to the threads and not taken yet.
    pending: Option<Pending<Vec<Indexed>>>,
    /// The facts of the games since the last whole chunk, and the chunks done.
    facts: Vec<refblock::FactRow>,
    chunks: super::factspill::FactChunks,
    next: u32,
}

impl RefBuilder {
    pub(crate) fn new(ctx: RefContext) -> RefBuilder {
        RefBuilder {
            chunks: super::factspill::FactChunks::new(&ctx.prefix),
            ctx,
            indexers: None,
            tuples: Vec::new(),
            runs: Vec::new(),
            levels: Vec::new(),
            made: 0,
            partial: None,
            batch: Vec::new(),
            pending: None,
            facts: Vec::new(),
            next: 0,
        }
    }

    /// What the builder derives references with (its spill prefix and sorting share).
    pub(crate) fn context(&self) -> &RefContext {
        &self.ctx
    }

    /// Adds the next game (its number is the count of games added before it).
    pub(crate) fn add(&mut self, g: &StoredGame) -> Result<()> {
        self.batch.push(g.clone());
        if self.batch.len() >= BATCH {
            self.index_batch()?;
        }
        Ok(())
    }

    /// Hands the games added since the last batch to the builder's threads (each game is
    /// replayed on its own) and, while they run, takes the facts and tuples of the batch
    /// handed over before, in number order: the caller adds the next batch's games (and
    /// writes them) meanwhile. [`RefBuilder::drain`] takes the last batch.
    fn index_batch(&mut self) -> Result<()> {
        let batch = std::mem::take(&mut self.batch);
        let before = self.pending.take();
        if !batch.is_empty() {
            let threads = super::seal::seal_threads()
                .min(batch.len().div_ceil(64))
                .max(1);
            let per = batch.len().div_ceil(threads);
            let mut jobs = Vec::with_capacity(threads);
            let mut games = batch.into_iter().peekable();
            while games.peek().is_some() {
                jobs.push((self.ctx.codec.clone(), games.by_ref().take(per).collect()));
            }
            let indexers = self.indexers.get_or_insert_with(|| {
                Workers::new(super::seal::seal_threads(), "bookdb-index", index_games)
            });
            self.pending = Some(indexers.submit(jobs));
        }
        match before {
            Some(p) => self.absorb(p),
            None => Ok(()),
        }
    }

    /// Indexes every game added and takes all their facts and tuples.
    fn drain(&mut self) -> Result<()> {
        self.index_batch()?;
        match self.pending.take() {
            Some(p) => self.absorb(p),
            None => Ok(()),
        }
    }

    /// Takes the facts and tuples of an indexed batch, its games numbered in order.
    fn absorb(&mut self, pending: Pending<Vec<Indexed>>) -> Result<()> {
        let indexed: Vec<Indexed> = pending
            .wait()
            .into_iter()
            .flat_map(|r| r.unwrap_or_else(|| vec![Err("an indexing thread panicked".into())]))
            .collect();
        for r in indexed {
            let number = self.next;
            self.next += 1;
            let (facts, pairs) =
                r.map_err(|e| Error::Internal(format!("indexing stored game {number}: {e}")))?;
            let row = match facts {
                Some(f) => refblock::FactRow {
                    cell: f.cell.masked(self.ctx.facets).id().0,
                    white: f.white,
                    black: f.black,
                    result: f.result,
                },
                None => refblock::FactRow {
                    result: 3,
                    ..refblock::FactRow::default()
                },
            };
            let (cell, strength) = (row.cell, row.strength());
            self.facts.push(row);
            if self.facts.len() == FACTS_PER_CHUNK as usize {
                let first = number + 1 - FACTS_PER_CHUNK;
                self.chunks
                    .push(first, refblock::encode_facts(&self.facts))?;
                self.facts.clear();
            }
            for (key, mv) in pairs {
                self.tuples.push(Tuple {
                    key,
                    mv,
                    cell,
                    number,
                    strength,
                });
            }
            if self.tuples.len() * std::mem::size_of::<Tuple>() >= self.ctx.budget.max(MIN_BUDGET) {
                self.spill()?;
            }
        }
        Ok(())
    }

    fn spill(&mut self) -> Result<()> {
        self.tuples.sort_unstable();
        let tuples = std::mem::take(&mut self.tuples);
        let path = self.write_run(tuples.into_iter().map(Ok))?;
        self.runs.push(path);
        self.levels.push(0);
        // Tiers: FAN_IN runs of one level merge into one of the next, so a merge never opens
        // more than FAN_IN runs and each tuple is rewritten log_FAN_IN(runs) times.
        while self.levels.len() >= FAN_IN
            && self.levels[self.levels.len() - FAN_IN..]
                .iter()
                .all(|&l| l == self.levels[self.levels.len() - 1])
        {
            let level = self.levels[self.levels.len() - 1];
            let from = self.runs.split_off(self.runs.len() - FAN_IN);
            self.levels.truncate(self.levels.len() - FAN_IN);
            let merged = self.write_run(RunMerge::open(&from)?);
            for r in &from {
                let _ = std::fs::remove_file(r);
            }
            self.runs.push(merged?);
            self.levels.push(level + 1);
        }
        Ok(())
    }

    /// Writes sorted tuples as a run file; returns its path.
    fn write_run(&mut self, tuples: impl Iterator<Item = Result<Tuple>>) -> Result<PathBuf> {
        let path = PathBuf::from(format!("{}.refs-{}", self.ctx.prefix.display(), self.made));
        self.made += 1;
        let io = |e: std::io::Error| Error::io(format!("writing {}", path.display()), e);
        let file = std::fs::File::create(&path).map_err(io)?;
        // Listed at once, so that a failure below still removes it.
        self.partial = Some(path.clone());
        let mut z = zstd::Encoder::new(BufWriter::with_capacity(1 << 16, file), 1).map_err(io)?;
        z.set_parameter(zstd::stream::raw::CParameter::WindowLog(RUN_WINDOW_LOG))
            .map_err(io)?;
        let mut buf = Vec::with_capacity(1 << 16);
        for t in tuples {
            t?.put(&mut buf);
            if buf.len() >= 1 << 16 {
                z.write_all(&buf).map_err(io)?;
                buf.clear();
            }
        }
        z.write_all(&buf).map_err(io)?;
        z.finish().and_then(|mut w| w.flush()).map_err(io)?;
        self.partial = None;
        Ok(path)
    }

    /// Every fact chunk, in number order: the whole ones done and the last, partial one.
    fn all_chunks(&mut self) -> Result<impl Iterator<Item = Result<(u32, Vec<u8>)>> + '_> {
        self.drain()?;
        if !self.facts.is_empty() {
            let first = self.next - self.facts.len() as u32;
            self.chunks
                .push(first, refblock::encode_facts(&self.facts))?;
            self.facts.clear();
        }
        self.chunks.drain()
    }

    /// Writes the facts and references into `txn`, the references as chunks aligned with the
    /// file's entry blocks (their shapes from `shapes`).
    pub(crate) fn write(mut self, txn: &redb::WriteTransaction, shapes: BlockShapes) -> Result<()> {
        {
            let mut facts = txn.open_table(GAME_FACTS)?;
            for c in self.all_chunks()? {
                let (first, chunk) = c?;
                facts.insert(first, chunk.as_slice())?;
            }
        }
        let games = u64::from(self.next);
        super::refzip::write_aligned(txn, games, shapes, |take| self.positions(take))?;
        Ok(())
    }

    /// The references, position by position in key order.
    pub(crate) fn positions(&mut self, out: &mut dyn FnMut(PosRefs) -> Result<()>) -> Result<()> {
        self.drain()?;
        let mut tuples: Box<dyn Iterator<Item = Result<Tuple>>> = if self.runs.is_empty() {
            self.tuples.sort_unstable();
            Box::new(std::mem::take(&mut self.tuples).into_iter().map(Ok))
        } else {
            if !self.tuples.is_empty() {
                self.spill()?;
            }
            Box::new(RunMerge::open(&self.runs)?)
        };
        let mut group = Group::default();
        let mut pos: Option<PosRefs> = None;
        let mut numbers: Vec<u32> = Vec::new();
        let close_move =
            |pos: &mut Option<PosRefs>, current: (u64, u16), numbers: &mut Vec<u32>| {
                numbers.sort_unstable_by(|a, b| b.cmp(a));
                numbers.dedup();
                let p = pos.get_or_insert_with(|| PosRefs {
                    key: current.0,
                    moves: Vec::new(),
                });
                p.moves.push((current.1, std::mem::take(numbers)));
            };
        let mut last: Option<Tuple> = None;
        for t in tuples.by_ref() {
            let t = t?;
            if let Some(l) = last {
                if (l.key, l.mv, l.cell) != (t.key, t.mv, t.cell) {
                    group.drain_into(&mut numbers);
                }
                if (l.key, l.mv) != (t.key, t.mv) {
                    close_move(&mut pos, (l.key, l.mv), &mut numbers);
                }
                if l.key != t.key
                    && let Some(p) = pos.take()
                {
                    out(p)?;
                }
            }
            group.add(t.number, t.strength);
            last = Some(t);
        }
        if let Some(l) = last {
            group.drain_into(&mut numbers);
            close_move(&mut pos, (l.key, l.mv), &mut numbers);
            if let Some(p) = pos.take() {
                out(p)?;
            }
        }
        Ok(())
    }
}

impl Drop for RefBuilder {
    fn drop(&mut self) {
        for r in self.runs.iter().chain(&self.partial) {
            let _ = std::fs::remove_file(r);
        }
    }
}

/// One (position, move, cell)'s games, in number order: its newest and strongest so far.
#[derive(Default)]
struct Group {
    newest: std::collections::VecDeque<u32>,
    /// (strength, number), best first.
    strongest: Vec<(u16, u32)>,
}

impl Group {
    fn add(&mut self, number: u32, strength: u16) {
        if self.newest.len() == NEWEST {
            self.newest.pop_front();
        }
        self.newest.push_back(number);
        let s = (strength, number);
        if self.strongest.len() < STRONGEST || self.strongest.last().is_some_and(|&l| s > l) {
            let at = self.strongest.partition_point(|&x| x > s);
            self.strongest.insert(at, s);
            self.strongest.truncate(STRONGEST);
        }
    }

    fn drain_into(&mut self, numbers: &mut Vec<u32>) {
        numbers.extend(self.newest.drain(..));
        numbers.extend(self.strongest.drain(..).map(|(_, n)| n));
    }
}

/// Sorted runs merged into one sorted stream.
struct RunMerge {
    readers: Vec<zstd::Decoder<'static, BufReader<BufReader<std::fs::File>>>>,
    heap: BinaryHeap<std::cmp::Reverse<(Tuple, usize)>>,
    paths: Vec<PathBuf>,
}

impl RunMerge {
    fn open(paths: &[PathBuf]) -> Result<RunMerge> {
        let mut m = RunMerge {
            readers: Vec::new(),
            heap: BinaryHeap::new(),
            paths: paths.to_vec(),
        };
        for (i, p) in paths.iter().enumerate() {
            let io = |e: std::io::Error| Error::io(format!("reading {}", p.display()), e);
            let f = std::fs::File::open(p).map_err(io)?;
            let d = zstd::Decoder::new(BufReader::with_capacity(1 << 14, f)).map_err(io)?;
            m.readers.push(d);
            if let Some(t) = m.read(i)? {
                m.heap.push(std::cmp::Reverse((t, i)));
            }
        }
        Ok(m)
    }

    fn read(&mut self, i: usize) -> Result<Option<Tuple>> {
        let mut b = [0u8; TUPLE_BYTES];
        match self.readers[i].read_exact(&mut b) {
            Ok(()) => Ok(Some(Tuple::get(&b))),
            Err(e) if e.kind() == std::io::ErrorKind::UnexpectedEof => Ok(None),
            Err(e) => Err(Error::io(format!("reading {}", self.paths[i].display()), e)),
        }
    }
}

impl Iterator for RunMerge {
    type Item = Result<Tuple>;

    fn next(&mut self) -> Option<Result<Tuple>> {
        let std::cmp::Reverse((t, i)) = self.heap.pop()?;
        match self.read(i) {
            Ok(Some(n)) => self.heap.push(std::cmp::Reverse((n, i))),
            Ok(None) => {}
            Err(e) => return Some(Err(e)),
        }
        Some(Ok(t))
    }
}

fn bad(at: impl std::fmt::Display, reason: impl std::fmt::Display) -> Error {
    Error::Corrupt(Corruption::GameStore {
        at: at.to_string(),
        reason: reason.to_string(),
    })
}

/// Bytes a file's game tables take (docs/FORMAT.md §15): the blocks, the id index, the
/// references and the facts.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct GameTableBytes {
    pub store: u64,
    pub ids: u64,
    pub refs: u64,
    pub facts: u64,
}

impl std::ops::Add for GameTableBytes {
    type Output = GameTableBytes;
    fn add(self, o: GameTableBytes) -> GameTableBytes {
        GameTableBytes {
            store: self.store + o.store,
            ids: self.ids + o.ids,
            refs: self.refs + o.refs,
            facts: self.facts + o.facts,
        }
    }
}

/// A game's facts as a file keeps them: its cell id (masked to the file's facets), strength
/// (WhiteElo + BlackElo when both are known, else 0), both Elos (0: none) and result (0 white
/// won, 1 draw, 2 black won, 3 unknown).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Fact {
    pub cell: crate::store::facet::CellId,
    pub strength: u16,
    pub white: u16,
    pub black: u16,
    pub result: u8,
}

impl BookFile {
    fn ref_tables(&self) -> Option<&GameTables> {
        self.games.as_ref().filter(|t| t.refs.is_some())
    }

    /// Whether this file holds references (a file with games, written by format 7).
    pub fn has_game_refs(&self) -> bool {
        self.ref_tables().is_some()
    }

    /// The references of the position with `key` in this file: its entries found in their
    /// block (which the probe before has mostly cached), their lists read from the block's
    /// chunk.
    pub fn refs_at(&self, key: u64) -> Result<Option<PosRefs>> {
        let Some(refs) = self.ref_tables().and_then(|t| t.refs.as_ref()) else {
            return Ok(None);
        };
        let Some((block_key, found)) = self.shapes_at(key)? else {
            return Ok(None);
        };
        if found.is_empty() {
            return Ok(None);
        }
        (|| {
            let Some(chunk) = super::refchunk::read_chunk(refs, block_key)? else {
                return Ok(None);
            };
            let at = || format!("reference chunk {block_key:016x}");
            let mut moves: Vec<(u16, Vec<u32>)> = Vec::new();
            for (i, codes) in found {
                let lists = chunk
                    .get(i)
                    .filter(|l| l.len() == codes.len())
                    .ok_or_else(|| bad(at(), format!("entry {i} does not match its block")))?;
                moves.extend(
                    codes
                        .into_iter()
                        .zip(lists.iter().cloned())
                        .filter(|(_, l)| !l.is_empty()),
                );
            }
            moves.sort_by_key(|m| m.0);
            moves.dedup_by_key(|m| m.0);
            Ok((!moves.is_empty()).then_some(PosRefs { key, moves }))
        })()
        .map_err(|e: Error| e.in_file(&self.path))
    }

    /// Every position's stored references, in key order (read back through the blocks).
    #[cfg(test)]
    pub(crate) fn stored_refs(&self) -> Result<Vec<PosRefs>> {
        let mut out = Vec::new();
        if let Some(mut s) = super::refzip::StoredRefs::open(self)? {
            while let Some(p) = s.next_refs()? {
                out.push(p);
            }
        }
        Ok(out)
    }

    /// Every fact chunk of this file, in number order, one at a time.
    pub(crate) fn fact_chunk_iter(
        &self,
    ) -> Result<impl Iterator<Item = Result<(u32, Vec<u8>)>> + '_> {
        let table = self.ref_tables().and_then(|t| t.facts.as_ref());
        shielded_rows(table, "reading game facts", &self.path)
    }

    /// The bytes (redb's pages: stored, metadata and fragmented) of this file's game tables.
    pub fn game_table_bytes(&self) -> Result<GameTableBytes> {
        use redb::ReadableTableMetadata;
        let Some(t) = &self.games else {
            return Ok(GameTableBytes::default());
        };
        let size =
            |s: redb::TableStats| s.stored_bytes() + s.metadata_bytes() + s.fragmented_bytes();
        shield("reading table statistics", || {
            let (store, ids) = t.store.table_bytes()?;
            Ok(GameTableBytes {
                store,
                ids,
                refs: t
                    .refs
                    .as_ref()
                    .map(|r| r.stats())
                    .transpose()?
                    .map_or(0, size),
                facts: t
                    .facts
                    .as_ref()
                    .map(|r| r.stats())
                    .transpose()?
                    .map_or(0, size),
            })
        })
        .map_err(|e| e.in_file(&self.path))
    }

    /// A reader of this file's game facts, keeping the chunks it read.
    pub fn facts_reader(&self) -> FactReader<'_> {
        FactReader {
            file: self,
            chunks: HashMap::default(),
        }
    }
}

/// Reads games' facts by number from one file, one chunk at a time.
pub struct FactReader<'f> {
    file: &'f BookFile,
    /// The chunks read (checked), by first number, at most [`FACT_CHUNKS_KEPT`]: one lookup
    /// by a multiply's hash a fact, no count shared with other readers touched (a whole-file
    /// pass reads tens of millions of facts).
    chunks: HashMap<u32, Arc<[u8]>, BuildHasherDefault<KeyHasher>>,
}

/// Fact chunks a reader keeps (4 KiB each): a position's moves name their games in descending
/// number order, move by move, so each move reads the same chunks again.
const FACT_CHUNKS_KEPT: usize = 1024;

impl FactReader<'_> {
    /// The facts of game `number` of the file.
    pub fn get(&mut self, number: u32) -> Result<Fact> {
        let first = number - number % FACTS_PER_CHUNK;
        if let Some(bytes) = self.chunks.get(&first) {
            return fact_in(bytes, first, number);
        }
        let bytes = match self.file.fact_cache.get(first) {
            Some(bytes) => bytes,
            None => {
                let bytes = self.read_chunk(first, number)?;
                self.file.fact_cache.put(first, bytes.clone());
                bytes
            }
        };
        if self.chunks.len() >= FACT_CHUNKS_KEPT {
            self.chunks.clear();
        }
        fact_in(self.chunks.entry(first).or_insert(bytes), first, number)
    }

    /// Reads and checks the chunk from game `first` (for game `number`) from the file.
    fn read_chunk(&self, first: u32, number: u32) -> Result<Arc<[u8]>> {
        let t = self
            .file
            .ref_tables()
            .and_then(|t| t.facts.as_ref())
            .ok_or_else(|| bad(format!("game {number}"), "the file holds no facts"))?;
        let bytes = shield("reading game facts", || {
            Ok(t.get(first)?.map(|v| v.value().to_vec()))
        })
        .map_err(|e| e.in_file(&self.file.path))?
        .ok_or_else(|| bad(format!("facts of game {number}"), "no chunk holds them"))?;
        refblock::check_facts(&bytes).map_err(|e| bad(format!("fact chunk {first}"), e))?;
        Ok(bytes.into())
    }
}

/// The facts of game `number` in the chunk from `first`.
fn fact_in(bytes: &[u8], first: u32, number: u32) -> Result<Fact> {
    let row = refblock::fact_at(bytes, (number - first) as usize)
        .ok_or_else(|| bad(format!("facts of game {number}"), "past its chunk"))?;
    Ok(Fact {
        cell: crate::store::facet::CellId(row.cell),
        strength: row.strength(),
        white: row.white,
        black: row.black,
        result: row.result,
    })
}

impl BookFile {
    /// Checks this file's references and facts against the ones its game store gives
    /// ([`RefBuilder`] over its games, sorting within `budget` bytes, spilling to the system's
    /// temporary directory): every reference names a stored game whose counted moves reach the
    /// position and play the move, and every game the store holds is named where its cell
    /// ranks it. Returns the positions checked.
    pub fn check_game_refs(&self, budget: usize) -> Result<u64> {
        self.check_game_refs_with(budget, None)
    }

    /// [`BookFile::check_game_refs`], the references zipped onto the blocks' shapes as
    /// `shapes` logged them (`verify` logs them while it checks the blocks) instead of the
    /// blocks decoded again.
    pub(crate) fn check_game_refs_with(
        &self,
        budget: usize,
        shapes: Option<super::shapelog::LoggedShapes>,
    ) -> Result<u64> {
        if self.games.is_none() {
            return Ok(0);
        }
        if !self.has_game_refs() {
            return Err(bad(
                "game_refs",
                "the file stores games but holds no references (game_refs, game_facts)",
            ));
        }
        static RUN: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
        let prefix = std::env::temp_dir().join(format!(
            "bookdb-verify-{}-{}",
            std::process::id(),
            RUN.fetch_add(1, std::sync::atomic::Ordering::Relaxed)
        ));
        let mut b = RefBuilder::new(RefContext {
            codec: self.codec.clone(),
            facets: self.facets,
            budget,
            prefix,
        });
        for g in self.games_iter()? {
            b.add(&g?)?;
        }
        // The stored chunks against the derived ones, one pair at a time.
        let mut have = self.fact_chunk_iter()?;
        let mut want = b.all_chunks()?;
        let mut at = 0u64;
        loop {
            let (h, w) = (have.next().transpose()?, want.next().transpose()?);
            if h.is_none() && w.is_none() {
                break;
            }
            if h != w {
                let first = |c: &Option<(u32, Vec<u8>)>| {
                    c.as_ref()
                        .map_or("none".to_string(), |(f, _)| format!("game {f} on"))
                };
                return Err(bad(
                    "game_facts",
                    format!(
                        "the stored chunks differ from those derived from the games from chunk {at} (stored: {}, derived: {})",
                        first(&h),
                        first(&w)
                    ),
                ));
            }
            at += 1;
        }
        drop(want);
        super::refzip::check_aligned(self, shapes, |take| b.positions(take))
    }
}

/// The rows of `table` (none without one) in key order, one at a time, each read under
/// [`shield`]: a damaged page that makes redb panic while the cursor moves is an error of
/// `what` in `path`, as when the rows were read all at once.
fn shielded_rows<'t, K>(
    table: Option<&'t redb::ReadOnlyTable<K, &'static [u8]>>,
    what: &'static str,
    path: &'t std::path::Path,
) -> Result<impl Iterator<Item = Result<(K, Vec<u8>)>> + 't>
where
    K: redb::Key + for<'a> redb::Value<SelfType<'a> = K> + 'static,
{
    let mut rows = match table {
        Some(t) => Some(shield(what, || Ok(t.range::<K>(..)?)).map_err(|e| e.in_file(path))?),
        None => None,
    };
    Ok(std::iter::from_fn(move || {
        let rows = rows.as_mut()?;
        shield(what, || {
            rows.next()
                .map(|r| {
                    let (k, v) = r?;
                    Ok((k.value(), v.value().to_vec()))
                })
                .transpose()
        })
        .map_err(|e| e.in_file(path))
        .transpose()
    }))
}

#[cfg(test)]
mod tests;

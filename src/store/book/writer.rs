//! [`BookWriter`]: writes a new book file from entries in key order (temporary file, fsync,
//! rename), with its options and the compression it may reuse from another book.

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::live::{Manifest, Target, current_generation, publish, segment_path};
use super::reader::read_generation;
use super::*;
use super::{seal::*, train::*};
use crate::store::block;
use crate::store::entry::Entry;
use crate::store::error::{Error, Result};
use crate::store::files::{create_temp, temp_sibling};
use crate::store::{PositionCodec, PositionModel};

/// Entries held before the sealing threads start when the model and dictionary are reused:
/// enough sample blocks to estimate how well section A compresses.
const REUSE_SAMPLE: usize = 16 * DICT_SAMPLE_ENTRIES;
/// Entries per segment handed to a sealing thread. The last block of a segment is usually
/// part-full (about half a page per segment in the file), so segments are large.
const SEGMENT_ENTRIES: usize = 65_536;
/// Receives the trace lines of a [`BookWriter`].
type TraceFn = Box<dyn FnMut(&str) + Send>;

/// Writes a new book file from entries given in (key, position) order. The file appears at its
/// final path only when [`BookWriter::finish`] succeeds (temporary file, fsync, rename).
///
/// Once the model is trained, entries go in segments (cut between keys) to a pool of sealing
/// threads; each fills and seals its segment's blocks (position coding, move indexing, zstd)
/// on its own, and the blocks are committed in segment order. The output depends only on the
/// entries and the options, not on thread timing.
pub struct BookWriter {
    final_path: PathBuf,
    tmp_path: PathBuf,
    db: Option<redb::Database>,
    codec: Arc<dyn PositionCodec>,
    opts: WriterOptions,
    meta: BookMeta,
    /// Entries not yet handed to the sealing pool (until the model is trained: the sample).
    held_entries: Vec<Entry>,
    held_positions: usize,
    model: Option<(u16, Arc<dyn PositionModel>, Vec<u8>)>,
    dictionary: Option<Vec<u8>>,
    /// Identity of the last entry handed to the sealing pool (later ones are held).
    last: Option<(u64, Option<Vec<u8>>)>,
    /// Sealed blocks not yet committed.
    batch: Vec<(u64, Vec<u8>)>,
    batch_bytes: usize,
    /// Import records of the new book: carried over from rewritten books, then this run's.
    imports: std::collections::BTreeMap<String, Vec<u8>>,
    /// Seal attempts (a block that overflows its page is sealed again with fewer entries).
    seals: u64,
    pool: Option<SealPool>,
    /// A model and dictionary to use instead of training new ones.
    reuse: Option<BookCompression>,
    /// redb files whose `games` tables (game fingerprints) are copied, streaming, in the last
    /// transaction: this import's (a staging table) and those of rewritten or merged books.
    /// The files whose game fingerprints the new file records, with their paths (`None`: a
    /// scratch table of this import's).
    games_from: Vec<(Option<PathBuf>, Arc<redb::ReadOnlyDatabase>)>,
    /// Evaluations carried over and added, written in the last transaction (FORMAT §13).
    evals: super::evals::EvalCarry,
    /// The game store carried over and added, written in the last transaction (FORMAT §15).
    games: super::games::GameCarry,
    /// Moves of few games keep their cells as their games' (`keep_cells_as_games`).
    game_cells: bool,
    /// The shapes of the entries pushed (the references are aligned with them), logged from
    /// the first entry once the file may store games; `unlogged`: an entry came before.
    shape_log: Option<super::shapelog::ShapeLog>,
    unlogged: bool,
    /// The tap the log takes each entry's references from (a store carried alone), chosen
    /// with the first entry logged; `None` in a log of move codes.
    carry_tap: Option<Arc<super::reftap::RefTap>>,
    /// The key filter, its partitions written with the blocks (FORMAT §4.7).
    filter: super::filter::FilterBuilder,
    /// The facets the new book keeps, and its games by facet (format 4).
    facets: crate::store::facet::FacetSet,
    facet_games: crate::store::facet::FacetGames,
    /// The model is a reused one: entries' `coded` bytes (coded with it) are stored as they are.
    takes_coded: bool,
    /// Where the writer reports its internal timings ([`BookWriter::on_trace`]).
    trace: Option<TraceFn>,
    /// What the finished file becomes: the book's base or one of its delta segments.
    target: Target,
}

impl BookWriter {
    pub fn create(
        path: &Path,
        codec: Arc<dyn PositionCodec>,
        opts: WriterOptions,
    ) -> Result<BookWriter> {
        let tmp_path = temp_sibling(path)?;
        // This process's own new file (O_EXCL|O_NOFOLLOW): never a file or link planted there.
        let file = create_temp(&tmp_path)?;
        let db = redb::backends::FileBackend::new(file)
            .and_then(|backend| {
                redb::Builder::new()
                    .set_cache_size(opts.cache_bytes)
                    .create_with_backend(backend)
            })
            .map_err(|e| Error::db(format!("creating {}", tmp_path.display()), e))?;
        crate::store::files::crash_point("writer-created");
        Ok(BookWriter {
            final_path: path.to_path_buf(),
            tmp_path,
            db: Some(db),
            codec,
            opts,
            meta: BookMeta::default(),
            held_entries: Vec::new(),
            held_positions: 0,
            model: None,
            dictionary: None,
            last: None,
            batch: Vec::new(),
            batch_bytes: 0,
            imports: Default::default(),
            seals: 0,
            pool: None,
            reuse: None,
            games_from: Vec::new(),
            evals: Default::default(),
            games: Default::default(),
            game_cells: false,
            shape_log: None,
            unlogged: false,
            carry_tap: None,
            filter: Default::default(),
            facets: crate::store::facet::FacetSet::NONE,
            facet_games: Default::default(),
            takes_coded: false,
            trace: None,
            target: Target::Base,
        })
    }

    /// A writer of a delta segment of `book`, published by `manifest` (which lists it under
    /// its generation) with `view`, the whole book's counters after it. The caller holds the
    /// writer lock and built `manifest` from the book's current state.
    pub(crate) fn create_segment(
        book: &Path,
        manifest: Manifest,
        view: BookMeta,
        codec: Arc<dyn PositionCodec>,
        opts: WriterOptions,
    ) -> Result<BookWriter> {
        let mut w = BookWriter::create(&segment_path(book, manifest.generation), codec, opts)?;
        w.target = Target::Segment {
            book: book.to_path_buf(),
            manifest,
            view: Box::new(view),
        };
        Ok(w)
    }

    /// Codes positions with `c` (a model and dictionary of an input book) instead of training
    /// new ones on the first entries: the sealing threads start after a few thousand entries
    /// instead of `model_sample` positions and no training time is spent. Any model codes any
    /// position; the file is as dense as the reused model fits the new content (merge uses the
    /// largest input's; compaction retrains). Call before the first [`BookWriter::push`].
    pub fn reuse_compression(&mut self, c: BookCompression) -> Result<()> {
        if self.model.is_some() || !self.held_entries.is_empty() {
            return Err(Error::Internal(
                "reuse_compression must come before the first entry".into(),
            ));
        }
        self.codec.load_model(&c.model)?;
        self.reuse = Some(c);
        self.takes_coded = true;
        Ok(())
    }

    /// Records in the new book the game fingerprints (`--dedupe`) that `games` holds
    /// ([`crate::store::fpset::sorted_table`]), copied in the last transaction.
    pub(crate) fn add_game_fingerprints_from(&mut self, games: crate::store::fpset::SortedGames) {
        self.games_from.push((None, games.into_db()));
    }

    /// Carries over to the new book everything of `book` that is not its entries: its games
    /// count, its import records and its game fingerprints (the latter copied one by one in
    /// the last transaction, never all held in memory). Every rewrite of a book (compaction,
    /// an import or `import-polyglot` that rewrites, each input of a merge) calls this, so no
    /// table is forgotten. When several books list the same import, one record is kept: the
    /// least by bytes, so that the result does not depend on the order of the books.
    #[doc(hidden)]
    pub fn carry_over(&mut self, book: &Book) -> Result<()> {
        self.meta.games += book.meta().games;
        self.carry_records(book.files())
    }

    /// Takes games out of the counters carried over: `games` games, by facet as `by_facet`
    /// says (a merge's extra copies of games more than one input counted).
    pub fn take_out_games(&mut self, games: u64, by_facet: &crate::store::facet::FacetGames) {
        self.meta.games = self.meta.games.saturating_sub(games);
        self.facet_games.subtract(by_facet);
    }

    /// The new file counts entries besides those of the books it carries over (an import's):
    /// the references of a store carried alone are then derived from its games again, not
    /// copied (the entries may name moves its own file dropped, `compact --min-games`).
    pub fn counts_added_entries(&mut self) {
        self.games.counts_added();
    }

    /// The new file's store keeps one record of a game its sources hold alike (a merge whose
    /// counters take the extra copies out, `ops::shared_games`); without, it keeps every
    /// record, as each was counted.
    pub fn each_game_once(&mut self) {
        self.games.each_game_once();
    }

    /// Adds facets the new book keeps (it keeps the union of what its sources keep).
    pub fn add_facets(&mut self, facets: crate::store::facet::FacetSet) {
        self.facets = self.facets.union(facets);
    }

    /// Adds games counted by facet ([`crate::store::facet::FacetGames`]).
    pub fn add_facet_games(&mut self, games: &crate::store::facet::FacetGames) {
        self.facet_games.merge(games);
    }

    /// [`BookWriter::carry_over`] of some of a book's files (the delta segments a fold merges):
    /// their games counts, import records and game fingerprints.
    pub(crate) fn carry_over_files(&mut self, files: &[Arc<BookFile>]) -> Result<()> {
        self.meta.games += files.iter().map(|f| f.meta().games).sum::<u64>();
        self.carry_records(files)
    }

    fn carry_records(&mut self, files: &[Arc<BookFile>]) -> Result<()> {
        for f in files {
            self.facets = self.facets.union(f.facets);
            self.facet_games.merge(&f.facet_games);
        }
        for (k, v) in files
            .iter()
            .map(|f| f.imports())
            .collect::<Result<Vec<_>>>()?
            .into_iter()
            .flatten()
        {
            match self.imports.entry(k) {
                std::collections::btree_map::Entry::Vacant(e) => {
                    e.insert(v);
                }
                std::collections::btree_map::Entry::Occupied(mut e) => {
                    if v < *e.get() {
                        e.insert(v);
                    }
                }
            }
        }
        self.games_from
            .extend(files.iter().map(|f| (Some(f.path.clone()), f.db.clone())));
        self.evals.carry(files);
        self.games.carry(files);
        Ok(())
    }

    /// Adds games to the new file's game store (in any order; merged with those carried).
    pub fn store_games(&mut self, games: Vec<crate::store::gameblock::StoredGame>) {
        self.games.add(games);
    }

    /// Adds a stream of games already in the game store's order (docs/FORMAT.md §15).
    pub fn store_sorted_games(&mut self, games: super::games::GameStream<'static>) {
        self.games.add_sorted(games);
    }

    /// Moves of at most 8 games keep their cells as their games' (version-3 blocks,
    /// docs/FORMAT.md §12.5): for a file whose store will hold every game it counts, each
    /// counted into the cell its stored tags give under the file's facets (a new import with
    /// games, or a rewrite of such files alone with the same facets). Checked when the file is
    /// finished; call before the first entry.
    pub fn keep_cells_as_games(&mut self) -> Result<()> {
        if self.model.is_some() || !self.held_entries.is_empty() || self.facets.is_none() {
            return Err(Error::Internal(
                "cells kept as games' asked after the first entry or without facets".into(),
            ));
        }
        self.game_cells = true;
        Ok(())
    }

    /// The new file stores no games, whatever it carries (`compact --drop-games`).
    pub fn drop_games(&mut self) {
        self.games.drop_all();
    }

    /// Adds evaluations (by key and packed position) to the new file, merged by the selector
    /// with those it carries over.
    pub(crate) fn add_evals(&mut self, evals: super::evals::NewResults) {
        self.evals.add(evals);
    }

    /// Sets the whole book's counters after a delta segment (only the logical counters are
    /// kept: games, positions, key-only entries, pairs, collisions).
    pub(crate) fn set_view(&mut self, mut view: BookMeta) -> Result<()> {
        view.blocks = 0;
        view.raw_bytes = 0;
        view.stored_bytes = 0;
        view.delta_entries = 0;
        match &mut self.target {
            Target::Segment { view: v, .. } => {
                **v = view;
                Ok(())
            }
            Target::Base => Err(Error::Internal("view counters set on a base".into())),
        }
    }

    /// Import records of this run (input fingerprint → record); they replace carried-over
    /// records of the same input.
    pub fn add_imports(&mut self, records: impl IntoIterator<Item = (String, Vec<u8>)>) {
        self.imports.extend(records);
    }

    /// Adds the next entry; it must sort after the previous one (equal identities are an error).
    pub fn push(&mut self, e: Entry) -> Result<()> {
        let prev = match self.held_entries.last() {
            Some(h) => Some((h.key, h.pos.as_deref())),
            None => self.last.as_ref().map(|(k, p)| (*k, p.as_deref())),
        };
        if let Some((k, p)) = prev {
            let ord = k.cmp(&e.key).then_with(|| p.cmp(&e.pos.as_deref()));
            if ord != std::cmp::Ordering::Less {
                return Err(Error::Internal(format!(
                    "entries out of order at key {:016x}",
                    e.key
                )));
            }
        }
        if e.moves.is_empty() {
            // Entries without moves carry no information; keep the file canonical.
            return Ok(());
        }
        let mut e = self.resolve_indexed(e)?;
        if !self.takes_coded {
            e.coded = None;
        }
        let same_key = prev.is_some_and(|(k, _)| k == e.key);
        if same_key {
            self.meta.collisions += 1;
        }
        self.filter.add(e.key);
        self.log_shape(&e)?;
        if e.pos.is_some() {
            self.meta.positions += 1;
        } else {
            self.meta.key_only += 1;
        }
        self.meta.pairs += e.moves.len() as u64;
        if self.model.is_none() {
            self.held_positions += usize::from(e.pos.is_some());
            self.held_entries.push(e);
            let hold = if self.reuse.is_some() {
                REUSE_SAMPLE.min(self.opts.model_sample.max(1))
            } else {
                self.opts.model_sample.max(1)
            };
            if self.held_positions >= hold {
                self.train()?;
            }
            return Ok(());
        }
        if !same_key && self.held_entries.len() >= self.segment_entries() {
            // A fresh segment buffer at its full size: growing one copies it into new pages.
            let full = self.held_entries.len() + 64;
            let mut next = self
                .pool
                .as_ref()
                .and_then(|p| p.spare.try_recv().ok())
                .unwrap_or_default();
            next.reserve(full);
            let seg = std::mem::replace(&mut self.held_entries, next);
            self.dispatch(seg, None)?;
        }
        self.held_entries.push(e);
        Ok(())
    }

    /// Logs an entry's shape (key and move codes, in the order its block keeps them) when the
    /// file may store games: its references are aligned with its blocks.
    fn log_shape(&mut self, e: &Entry) -> Result<()> {
        if !self.games.may_store() {
            self.unlogged = true;
            return Ok(());
        }
        use super::shapelog::{LogKind, ShapeLog};
        if self.shape_log.is_none() {
            if self.unlogged {
                return Ok(());
            }
            // A store carried alone keeps its references: each entry takes its own from the
            // tap on the store's file, fed by the iteration this writer is given.
            self.carry_tap = self.games.alone_tap(self.facets);
            let kind = match self.carry_tap {
                Some(_) => LogKind::Lists,
                None => LogKind::Codes,
            };
            let path = PathBuf::from(format!("{}.shapes", self.tmp_path.display()));
            self.shape_log = Some(ShapeLog::create(path, kind)?);
        }
        if let Some(tap) = &self.carry_tap {
            // A spoilt tap leaves the references to be aligned from the blocks at the end.
            let lists = tap.take(e, &*self.codec);
            return match (lists, self.shape_log.as_mut()) {
                (Some(lists), Some(log)) => log.push_lists(e.key, &lists),
                _ => Ok(()),
            };
        }
        let codes: Vec<u16> = if e.moves.iter().any(|m| m.indexed) {
            let idx: Vec<u8> = e.moves.iter().map(|m| m.mv as u8).collect();
            let pos = e.pos.as_deref().unwrap_or_default();
            self.codec
                .unindex_moves(pos, &idx)
                .map_err(|r| Error::Internal(format!("key {:016x}: {r}", e.key)))?
        } else {
            e.moves.iter().map(|m| m.mv).collect()
        };
        match self.shape_log.as_mut() {
            Some(log) => log.push(e.key, &codes),
            None => Ok(()),
        }
    }

    /// Where the references are aligned from at the end: the shape log, if every entry was
    /// logged (with the references it carried, if the tap it took them from is trusted and
    /// its store still carried alone), else the blocks decoded back.
    fn block_shapes(&mut self) -> Result<super::refzip::BlockShapes> {
        use super::refzip::BlockShapes;
        let log = match self.shape_log.take() {
            Some(log) if !self.unlogged => log,
            _ => return Ok(BlockShapes::Decode(self.shape_codec())),
        };
        let Some(tap) = self.carry_tap.take() else {
            return Ok(BlockShapes::Logged(log.finish()?));
        };
        let why = match tap.trusted() {
            Ok(()) if self.games.is_alone_tap(self.facets, &tap) => {
                self.trace("references carried with the entries (a store carried alone)");
                return Ok(BlockShapes::Carried(log.finish()?));
            }
            Ok(()) => "the store is no longer carried alone".to_string(),
            Err(why) => why,
        };
        self.trace(&format!(
            "references not carried with the entries ({why}): aligned from the blocks"
        ));
        Ok(BlockShapes::Decode(self.shape_codec()))
    }

    /// Entries read by [`Book::iter_for_rewrite`] may hold move indices; an entry whose moves
    /// are all indices is written as it is. One that mixes indices and codes (the same
    /// position from a block and from codes) gets its indices decoded and equal moves merged.
    fn resolve_indexed(&self, e: Entry) -> Result<Entry> {
        let indexed = e.moves.iter().filter(|m| m.indexed).count();
        if indexed == 0 || (indexed == e.moves.len() && e.pos.is_some()) {
            return Ok(e);
        }
        Ok(e.with_codes(self.codec.as_ref())?)
    }

    /// Entries per segment: from the memory options only (not the number of cores), so the
    /// same entries give the same file on any machine.
    fn segment_entries(&self) -> usize {
        (self.opts.commit_bytes / 256).clamp(1024, SEGMENT_ENTRIES)
    }

    /// Segments in flight: two per sealing thread, at most what about four times
    /// `commit_bytes` holds (an entry and its prepared form take ~250 bytes).
    fn max_in_flight(&self) -> u64 {
        let by_memory = 4 * self.opts.commit_bytes / (self.segment_entries() * 250);
        (2 * seal_threads()).min(by_memory).max(2) as u64
    }

    /// Hands a segment (cut between keys) to the sealing pool; writes out finished segments.
    fn dispatch(
        &mut self,
        entries: Vec<Entry>,
        prepared: Option<Vec<block::Prepared>>,
    ) -> Result<()> {
        let Some(last) = entries.last() else {
            return Ok(());
        };
        // The order check of the next push compares with the last entry handed over.
        self.last = Some((last.key, last.pos.clone()));
        while let Some(pool) = self.pool.as_mut()
            && pool.sent - pool.written >= pool.max_in_flight
        {
            pool.receive()?;
            self.write_ready()?;
        }
        let pool = self
            .pool
            .as_mut()
            .ok_or_else(|| Error::Internal("sealing pool not started".into()))?;
        let seq = pool.sent;
        pool.sent += 1;
        pool.tx
            .as_ref()
            .ok_or_else(|| Error::Internal("sealing pool closed".into()))?
            .send((seq, entries, prepared))
            .map_err(|_| Error::Internal("block sealing threads stopped".into()))?;
        while let Ok((seq, res)) = pool.rx.try_recv() {
            pool.done.insert(seq, res?);
        }
        self.write_ready()
    }

    /// Queues the finished segments that are next in order.
    fn write_ready(&mut self) -> Result<()> {
        while let Some(seg) = self.pool.as_mut().and_then(SealPool::next_ready) {
            self.seals += seg.seals;
            self.meta.raw_bytes += seg.raw_bytes;
            for (k, sealed) in seg.blocks {
                if let Some(log) = self.shape_log.as_mut() {
                    log.block(k);
                }
                self.meta.blocks += 1;
                self.meta.stored_bytes += sealed.len() as u64;
                self.batch_bytes += sealed.len();
                self.batch.push((k, sealed));
            }
            if self.batch_bytes >= self.opts.commit_bytes {
                self.commit_batch()?;
            }
        }
        Ok(())
    }

    /// Waits for every segment and queues its blocks.
    fn drain_pool(&mut self) -> Result<()> {
        loop {
            self.write_ready()?;
            match &mut self.pool {
                Some(pool) if pool.written < pool.sent => pool.receive()?,
                _ => return Ok(()),
            }
        }
    }

    /// Trains the model and dictionary on the held sample (or takes reused ones), starts the
    /// sealing pool and hands it the sample.
    fn train(&mut self) -> Result<()> {
        let settings = TrainSettings {
            codec: self.codec.clone(),
            dictionary: self.opts.dictionary,
            dictionary_bytes: self.opts.dictionary_bytes,
            level: self.opts.level,
            reuse: self.reuse.take(),
        };
        let t = train_sample(settings, std::mem::take(&mut self.held_entries))?;
        self.trace(&t.timing);
        self.model = Some((1, t.model.clone(), t.bytes));
        self.pool = Some(SealPool::start(
            SealContext {
                codec: self.codec.clone(),
                model: t.model,
                model_id: 1,
                limit: self.limit(),
                a_per_entry: t.a_per_entry,
                game_cells: self.game_cells,
            },
            self.opts.level,
            t.dict.clone().map(|d| (d, 1)),
            self.max_in_flight(),
        )?);
        self.dictionary = t.dict;
        // The sample goes in segments cut between keys, with its prepared forms.
        let seg = self.segment_entries();
        let (mut entries, mut prepared) = (t.entries, t.prepared);
        while !entries.is_empty() {
            let cut = segment_cut(&entries, seg).unwrap_or(entries.len());
            let rest_e = entries.split_off(cut);
            let rest_p = prepared.split_off(cut);
            self.dispatch(entries, Some(prepared))?;
            entries = rest_e;
            prepared = rest_p;
        }
        Ok(())
    }

    /// Reports the writer's internal timings (training, sealing attempts) to `f`, a line each.
    /// The store never prints; callers that trace (`BOOKDB_TRACE`) pass a printer here.
    pub(crate) fn on_trace(&mut self, f: impl FnMut(&str) + Send + 'static) {
        self.trace = Some(Box::new(f));
    }

    fn trace(&mut self, line: &str) {
        if let Some(f) = self.trace.as_mut() {
            f(line);
        }
    }

    /// What decodes this writer's blocks back into their entries' shapes (the references
    /// are aligned with them: `refzip`).
    fn shape_codec(&self) -> super::refzip::ShapeCodec {
        let models = self
            .model
            .iter()
            .map(|(id, m, _)| (*id, m.clone()))
            .collect();
        let dicts = self
            .dictionary
            .iter()
            .map(|d| (1u16, Arc::new(d.clone())))
            .collect();
        super::refzip::ShapeCodec::new(self.codec.clone(), models, dicts)
    }

    pub fn add_games(&mut self, games: u64) {
        self.meta.games += games;
    }

    fn limit(&self) -> usize {
        self.opts.target_block_bytes.max(256)
    }

    fn commit_batch(&mut self) -> Result<()> {
        let db = self
            .db
            .as_ref()
            .ok_or_else(|| Error::Internal("writer closed".into()))?;
        let batch = &mut self.batch;
        let filter_rows = self.filter.take_pending();
        (|| -> Result<()> {
            let mut txn = db.begin_write()?;
            txn.set_durability(redb::Durability::None)?;
            {
                let mut t = txn.open_table(BLOCKS)?;
                for (k, v) in batch.drain(..) {
                    t.insert(k, v.as_slice())?;
                }
                let mut f = txn.open_table(KEY_FILTER)?;
                for (k, v) in &filter_rows {
                    f.insert(*k, v.as_slice())?;
                }
            }
            txn.commit()?;
            Ok(())
        })()
        .map_err(|e| e.writing(&self.tmp_path))?;
        self.batch_bytes = 0;
        Ok(())
    }

    /// Writes meta, commits durably and moves the file into place. Returns the counters.
    pub fn finish(mut self) -> Result<BookMeta> {
        if self.model.is_none() {
            self.train()?;
        }
        let rest = std::mem::take(&mut self.held_entries);
        self.dispatch(rest, None)?;
        self.drain_pool()?;
        self.pool = None;
        let line = format!(
            "{} blocks sealed in {} attempts",
            self.meta.blocks, self.seals
        );
        self.trace(&line);
        let generation = match &self.target {
            Target::Base => {
                current_generation(&self.final_path, read_generation(&self.final_path))? + 1
            }
            Target::Segment { manifest, .. } => manifest.generation,
        };
        let db = self
            .db
            .take()
            .ok_or_else(|| Error::Internal("writer closed".into()))?;
        let (filter_rows, filter_index) = self.filter.finish();
        // Every block is sealed and logged.
        let shapes = self.block_shapes();
        let mut trace = self.trace.take();
        let mut mark = |line: &str| {
            if let Some(f) = trace.as_mut() {
                f(line)
            }
        };
        let res = (|| -> Result<()> {
            let txn = db.begin_write()?;
            {
                let mut t = txn.open_table(BLOCKS)?;
                for (k, v) in self.batch.drain(..) {
                    t.insert(k, v.as_slice())?;
                }
            }
            {
                let mut m = txn.open_table(META)?;
                if let Some(index) = &filter_index {
                    let mut f = txn.open_table(KEY_FILTER)?;
                    for (k, v) in &filter_rows {
                        f.insert(*k, v.as_slice())?;
                    }
                    m.insert(META_KEY_FILTER, index.encode().as_slice())?;
                }
                m.insert(META_MAGIC, MAGIC)?;
                m.insert(META_VERSION, FORMAT_VERSION.to_le_bytes().as_slice())?;
                m.insert(META_CODEC, self.codec.name().as_bytes())?;
                m.insert(META_FACETS, self.facets.names().join(",").as_bytes())?;
                if !self.facet_games.is_empty() {
                    let g = serde_json::to_vec(&self.facet_games)
                        .map_err(|e| Error::Internal(e.to_string()))?;
                    m.insert(META_FACET_GAMES, g.as_slice())?;
                }
                let counters =
                    serde_json::to_vec(&self.meta).map_err(|e| Error::Internal(e.to_string()))?;
                m.insert(META_COUNTERS, counters.as_slice())?;
                m.insert(META_GENERATION, generation.to_le_bytes().as_slice())?;
                if let Target::Segment { view, .. } = &self.target {
                    let view =
                        serde_json::to_vec(view).map_err(|e| Error::Internal(e.to_string()))?;
                    m.insert(META_VIEW, view.as_slice())?;
                }
                if let Some(d) = &self.dictionary {
                    m.insert(format!("{META_DICT_PREFIX}1").as_str(), d.as_slice())?;
                }
                if let Some((id, _, bytes)) = &self.model {
                    m.insert(
                        format!("{META_MODEL_PREFIX}{id}").as_str(),
                        bytes.as_slice(),
                    )?;
                }
                let mut imp = txn.open_table(IMPORTS)?;
                for (k, v) in &self.imports {
                    imp.insert(k.as_str(), v.as_slice())?;
                }
                super::overlap::copy_fingerprints(&txn, &self.games_from)?;
                let evals = self.evals.write(&txn)?;
                if evals > 0 {
                    m.insert(META_EVALS, evals.to_le_bytes().as_slice())?;
                }
                let ctx = super::refs::RefContext {
                    codec: self.codec.clone(),
                    facets: self.facets,
                    budget: self.opts.commit_bytes,
                    prefix: self.tmp_path.clone(),
                };
                mark("final transaction: blocks, filter, meta, imports and evaluations written");
                let shapes = shapes?;
                let games = self.games.write(&txn, &ctx, shapes)?;
                if games > 0 {
                    m.insert(META_GAMES_STORED, games.to_le_bytes().as_slice())?;
                }
                if self.game_cells {
                    // Every move whose cells are its games' must name all its games.
                    if games != self.meta.games {
                        return Err(Error::Internal(format!(
                            "cells kept as the games' in a file that stores {games} of the {} games it counts",
                            self.meta.games
                        )));
                    }
                    m.insert(META_GAME_CELLS, &b"1"[..])?;
                }
                mark(&format!(
                    "final transaction: game store of {games} games and its references written"
                ));
            }
            txn.commit()?;
            mark("final transaction committed");
            Ok(())
        })();
        let mut db = db;
        // Return space the allocator reserved but the book does not use.
        let res = res.and_then(|()| {
            while db.compact()? {}
            mark("file compacted");
            Ok(())
        });
        drop(db);
        if let Err(e) = res {
            let _ = std::fs::remove_file(&self.tmp_path);
            return Err(e.writing(&self.tmp_path));
        }
        publish(
            &self.tmp_path,
            &self.final_path,
            self.target.publication(),
            generation,
        )?;
        Ok(self.meta.clone())
    }
}

impl Drop for BookWriter {
    fn drop(&mut self) {
        // An unfinished writer leaves no file behind.
        if self.db.take().is_some() {
            let _ = std::fs::remove_file(&self.tmp_path);
        }
    }
}

#[cfg(test)]
mod tests;

//! Persistent transposition tables (docs/FORMAT.md §14): what a game search computed per
//! position — depth, value, bound, best move, generation — kept across runs and processes.
//!
//! A table is a live book of its own kind: stores go to memory at search speed and are
//! published as immutable files (a base, then delta segments, named by a manifest: §10), on
//! [`Table::flush`], when the memory tier passes its budget, and on drop. A process killed
//! mid-search leaves the table as of its last publication; readers in other processes see
//! each publication after [`Table::refresh`]. Every position is kept by its key *and* its
//! exact bytes, so a key collision is counted ([`TableStats::collisions`]) and never answers
//! for another position. Keys come from the game ([`TtPosition`]: the Polyglot key of a chess
//! position, the Zobrist key of an Othello board) or from a [`KeyHash`] of opaque state bytes.

mod entry;
mod file;
mod hash;
mod memory;
mod publish;
mod state;

use std::path::{Path, PathBuf};

#[doc(hidden)]
pub use crate::store::filter::KeyFilter;
pub use entry::{BestMove, Bound, Entry, EntryError, MAX_MOVE_BYTES};
#[doc(hidden)]
pub use entry::{decode as decode_entry, encode as encode_entry};
pub use file::{KeyOf, MAGIC, TT_VERSION, TableKind};
pub use hash::{KeyHash, family_hash};

use file::TtFile;
use memory::{Exact, Held, Lookup, Memory};
use state::{OpenSizes, State};

use crate::store::book::{Manifest, lock_for_writing};
use crate::store::error::{Error, Result};
use crate::store::files::resolve_book;
use crate::store::lock::{LockWait, WriterLock};

/// A position a table can key: its game's name (stored in the table, checked on open), its
/// 64-bit key and its exact bytes (docs/FORMAT.md §14.1).
pub trait TtPosition {
    /// The game's name in a table's meta (`chess`, `othello`).
    const GAME: &'static str;
    fn tt_key(&self) -> u64;
    /// Writes the exact bytes into `buf` and returns their length (at most 64).
    fn tt_exact(&self, buf: &mut [u8; 64]) -> usize;
    /// The key and the exact bytes at once (a codec that computes both together overrides
    /// it).
    fn tt_key_exact(&self, buf: &mut [u8; 64]) -> (u64, usize) {
        (self.tt_key(), self.tt_exact(buf))
    }
}

/// The game name of a table of opaque states (keys from a [`KeyHash`] of their bytes).
pub const OPAQUE: &str = "opaque";

/// How a table is opened.
#[derive(Clone, Debug)]
pub struct TableOptions {
    /// The memory tier's budget in MiB (entries held, key filters, redb's caches); past it the
    /// stores are published and clean entries forgotten.
    pub memory_mib: usize,
    /// How to wait for another writer's lock.
    pub lock_wait: LockWait,
    /// For a new table: the hash of opaque states (an existing table keeps its own).
    pub hash: KeyHash,
    /// For a new table: the low bits of each key kept (64). Fewer force collisions (tests).
    #[doc(hidden)]
    pub key_bits: u8,
}

impl Default for TableOptions {
    fn default() -> Self {
        TableOptions {
            memory_mib: 64,
            lock_wait: LockWait::No,
            hash: KeyHash::Xxh3,
            key_bits: 64,
        }
    }
}

/// What a table did since it was opened, and what it holds.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct TableStats {
    /// Probes.
    pub calls: u64,
    /// Probes that found their position.
    pub hits: u64,
    /// Probes and stores that met another position under their key (kept apart: a collision
    /// never answers for the wrong position).
    pub collisions: u64,
    /// Stores.
    pub stores: u64,
    /// Stores that the replacement rule kept out (the stored result was better).
    pub kept_out: u64,
    /// Files published (bases and segments, merges included) and entries written to them.
    pub files_written: u64,
    pub entries_written: u64,
    /// Files of the table's state, and entries in them (a position in several files counts
    /// in each).
    pub files: u64,
    pub file_entries: u64,
    /// Positions in memory, of which not yet published, and the bytes they take.
    pub held: u64,
    pub unpublished: u64,
    pub memory_bytes: u64,
}

/// What [`Table::verify`] checked.
#[derive(Clone, Debug, Default, PartialEq, Eq, serde::Serialize)]
pub struct TableCheck {
    pub files: u64,
    /// Entries over the files, and distinct positions after folding them.
    pub entries: u64,
    pub positions: u64,
    pub bytes: u64,
}

enum Mode {
    Writer(#[allow(dead_code)] WriterLock),
    Reader,
}

/// A persistent transposition table (see the module documentation).
pub struct Table {
    path: PathBuf,
    kind: TableKind,
    mode: Mode,
    state: State,
    mem: Memory,
    stats: TableStats,
    budget: usize,
    sizes: OpenSizes,
    /// The largest generation stored or published.
    searches: u32,
}

fn sizes_for(budget: usize) -> OpenSizes {
    OpenSizes {
        cache: (budget / 8 / (publish::MAX_SEGMENTS + 1)).max(1 << 20),
        filter_budget: budget / 4,
    }
}

impl Table {
    /// Opens the table at `path` for reading and writing (creating it on the first
    /// publication): takes its writer lock (one writer at a time) and recovers what a killed
    /// writer left. `game` is [`TtPosition::GAME`] of the positions it keys, or [`OPAQUE`].
    pub fn open(path: &Path, game: &str, opts: &TableOptions) -> Result<Table> {
        let path = resolve_book(path)?;
        let lock = lock_for_writing(&path, opts.lock_wait)?;
        Table::open_as(path, game, opts, Mode::Writer(lock))
    }

    /// Opens the table at `path` read-only (no lock; a writer may be publishing meanwhile:
    /// [`Table::refresh`] takes up what it published). A table not yet published is empty.
    pub fn open_reader(path: &Path, game: &str, opts: &TableOptions) -> Result<Table> {
        let path = resolve_book(path)?;
        Table::open_as(path, game, opts, Mode::Reader)
    }

    /// Opens an existing table whatever its game (a tool's view: stats, verify, compact):
    /// for writing (`write`) or reading. A path without a published table is an error.
    pub fn open_existing(path: &Path, opts: &TableOptions, write: bool) -> Result<Table> {
        let path = resolve_book(path)?;
        let mut kind = None;
        let sizes = sizes_for(opts.memory_mib.max(1) << 20);
        let probe = state::open_state(&path, &mut kind, Vec::new(), sizes)?;
        let Some(kind) = kind else {
            return Err(Error::BookNotFound { path });
        };
        drop(probe);
        match write {
            true => Table::open(&path, &kind.game, opts),
            false => Table::open_reader(&path, &kind.game, opts),
        }
    }

    fn open_as(path: PathBuf, game: &str, opts: &TableOptions, mode: Mode) -> Result<Table> {
        if !(1..=64).contains(&opts.key_bits) {
            return Err(Error::Usage(format!(
                "key bits {} not in 1..=64",
                opts.key_bits
            )));
        }
        let budget = opts.memory_mib.max(1) << 20;
        let sizes = sizes_for(budget);
        let mut kind = None;
        let state = state::open_state(&path, &mut kind, Vec::new(), sizes)?;
        let kind = match kind {
            Some(k) if k.game != game => {
                return Err(Error::Usage(format!(
                    "{}: a transposition table of {} positions, not of {game}",
                    path.display(),
                    k.game
                )));
            }
            Some(k) => k,
            None => TableKind {
                game: game.to_string(),
                key_bits: opts.key_bits,
                hash: opts.hash,
            },
        };
        let searches = state.files.iter().map(|f| f.searches).max().unwrap_or(0);
        Ok(Table {
            path,
            kind,
            mode,
            state,
            mem: Memory::default(),
            stats: TableStats::default(),
            budget,
            sizes,
            searches,
        })
    }

    /// The path of the table's base file.
    pub fn path(&self) -> &Path {
        &self.path
    }

    /// Bytes of the published files.
    pub fn file_bytes(&self) -> u64 {
        self.state
            .files
            .iter()
            .map(|f| std::fs::metadata(&f.path).map_or(0, |m| m.len()))
            .sum()
    }

    /// What the table holds: its game, key bits and hash.
    pub fn kind(&self) -> &TableKind {
        &self.kind
    }

    /// A generation above every one stored: what a new search should store its entries
    /// under (so that they replace an older search's of equal depth and bound).
    pub fn new_search(&mut self) -> u32 {
        self.searches = self.searches.saturating_add(1);
        self.searches
    }

    /// The 64-bit key of opaque state bytes (this table's hash, masked to its key bits).
    pub fn key_of_state(&self, state: &[u8]) -> u64 {
        self.kind.mask(self.kind.hash.hash(state))
    }

    fn check_game(&self, game: &str) -> Result<()> {
        if game == self.kind.game {
            Ok(())
        } else {
            Err(Error::Usage(format!(
                "a table of {} positions was given a {game} position",
                self.kind.game
            )))
        }
    }

    /// The stored result for a position of the table's game.
    pub fn probe<P: TtPosition>(&mut self, pos: &P) -> Result<Option<Entry>> {
        self.check_game(P::GAME)?;
        let mut buf = [0u8; 64];
        let (key, n) = pos.tt_key_exact(&mut buf);
        self.probe_raw(key, &buf[..n])
    }

    /// Stores a result for a position of the table's game; whether it was kept (the
    /// replacement rule may keep the stored one).
    pub fn store<P: TtPosition>(&mut self, pos: &P, entry: Entry) -> Result<bool> {
        self.check_game(P::GAME)?;
        let mut buf = [0u8; 64];
        let (key, n) = pos.tt_key_exact(&mut buf);
        self.store_raw(key, &buf[..n], entry)
    }

    /// The stored result for opaque state bytes (a table of [`OPAQUE`] states).
    pub fn probe_state(&mut self, state: &[u8]) -> Result<Option<Entry>> {
        self.check_game(OPAQUE)?;
        self.probe_raw(self.kind.hash.hash(state), state)
    }

    /// Stores a result for opaque state bytes.
    pub fn store_state(&mut self, state: &[u8], entry: Entry) -> Result<bool> {
        self.check_game(OPAQUE)?;
        self.store_raw(self.kind.hash.hash(state), state, entry)
    }

    /// The stored result for (key, exact bytes): the memory tier's, else the files' folded
    /// by the replacement rule in publication order (then held in memory).
    pub fn probe_raw(&mut self, key: u64, exact: &[u8]) -> Result<Option<Entry>> {
        self.stats.calls += 1;
        let key = self.kind.mask(key);
        let mem_collision = match self.mem.lookup(key, exact) {
            Lookup::Held(h) => {
                self.stats.hits += 1;
                return Ok(Some(h.entry.clone()));
            }
            Lookup::Absent { collision } => collision,
        };
        let (found, collision) = self.find_in_files(key, exact)?;
        if mem_collision || collision {
            self.stats.collisions += 1;
        }
        if let Some(e) = &found {
            self.stats.hits += 1;
            self.hold(key, exact, e.clone(), false)?;
        }
        Ok(found)
    }

    /// Stores a result for (key, exact bytes) by the replacement rule; whether it was kept.
    /// The key must be the one the table's game gives those bytes ([`TtPosition`]'s for
    /// chess and Othello, the table's hash for opaque states): `verify` checks every key
    /// against its bytes and reports any other as damage.
    pub fn store_raw(&mut self, key: u64, exact: &[u8], entry: Entry) -> Result<bool> {
        if let Mode::Reader = self.mode {
            return Err(Error::Usage(format!(
                "{}: the table was opened for reading; open it with Table::open to store",
                self.path.display()
            )));
        }
        if let entry::BestMove::Bytes(b) = &entry.best_move
            && b.len() > MAX_MOVE_BYTES
        {
            return Err(Error::Usage(format!(
                "a best move of {} bytes (at most {MAX_MOVE_BYTES})",
                b.len()
            )));
        }
        self.stats.stores += 1;
        self.searches = self.searches.max(entry.generation);
        let key = self.kind.mask(key);
        let collision = match self.mem.lookup(key, exact) {
            Lookup::Held(h) => {
                if !entry.replaces(&h.entry) {
                    self.stats.kept_out += 1;
                    return Ok(false);
                }
                self.mem.mark_dirty(key, exact, entry);
                return self.trim().map(|()| true);
            }
            Lookup::Absent { collision } => collision,
        };
        let (found, in_files) = self.find_in_files(key, exact)?;
        if collision || in_files {
            self.stats.collisions += 1;
        }
        match found {
            Some(old) if !entry.replaces(&old) => {
                self.stats.kept_out += 1;
                self.hold(key, exact, old, false)?;
                Ok(false)
            }
            _ => self.hold(key, exact, entry, true).map(|()| true),
        }
    }

    fn find_in_files(&self, key: u64, exact: &[u8]) -> Result<(Option<Entry>, bool)> {
        let (mut acc, mut collision) = (None, false);
        for f in &self.state.files {
            if !f.may_contain(key) {
                continue;
            }
            let found = f.find(key, exact)?;
            collision |= found.collision;
            if let Some(e) = found.entry {
                acc = Some(publish::fold(acc, e));
            }
        }
        Ok((acc, collision))
    }

    fn hold(&mut self, key: u64, exact: &[u8], entry: Entry, dirty: bool) -> Result<()> {
        self.mem.insert(
            key,
            Held {
                exact: Exact::new(exact),
                entry,
                dirty,
            },
        );
        self.trim()
    }

    /// Keeps the memory tier within its budget: clean entries forgotten first, then the
    /// unpublished ones published.
    fn trim(&mut self) -> Result<()> {
        if self.mem.bytes() <= self.budget / 2 {
            return Ok(());
        }
        self.mem.drop_clean();
        if self.mem.bytes() > self.budget / 4 {
            self.flush()?;
            self.mem.drop_clean();
        }
        Ok(())
    }

    /// Publishes every unpublished store (nothing to do: nothing written). After it returns,
    /// a crash keeps them and readers can see them.
    pub fn flush(&mut self) -> Result<()> {
        if self.mem.dirty() == 0 {
            return Ok(());
        }
        if let Mode::Reader = self.mode {
            return Ok(());
        }
        let items = self.mem.take_dirty();
        let n = items.len() as u64;
        let mut it = items.into_iter().map(Ok);
        if self.state.files.is_empty() {
            publish::publish_base(&self.path, &self.kind, n, &mut it)?;
        } else {
            // A segment over the base: the manifest's segments (if it names this base) and
            // the new one.
            let g = self.state.generation() + 1;
            let mut segments = self
                .state
                .manifest
                .as_ref()
                .map_or(Vec::new(), |m| m.segments.clone());
            if self.state.manifest.as_ref().map(|m| m.base) != Some(self.state.files[0].generation)
            {
                segments.clear();
            }
            segments.push(g);
            let manifest = Manifest {
                generation: g,
                base: self.state.files[0].generation,
                segments,
            };
            publish::publish_segment(&self.path, &self.kind, &manifest, n, &mut it)?;
        }
        self.stats.files_written += 1;
        self.stats.entries_written += n;
        self.reload()?;
        self.fold_tiers()
    }

    fn reload(&mut self) -> Result<()> {
        let old = std::mem::take(&mut self.state.files);
        let mut kind = Some(self.kind.clone());
        self.state = state::open_state(&self.path, &mut kind, old, self.sizes)?;
        Ok(())
    }

    /// Merges files by the size-tier policy (docs/FORMAT.md §14.5).
    fn fold_tiers(&mut self) -> Result<()> {
        let sizes: Vec<u64> = self.state.files.iter().map(|f| f.entries).collect();
        match publish::tier_to_merge(&sizes) {
            Some(from) => self.merge_from(from),
            None => Ok(()),
        }
    }

    /// Merges the files from index `from` on into one: a new base from 0, else a segment
    /// that replaces them.
    fn merge_from(&mut self, from: usize) -> Result<()> {
        let files: Vec<&TtFile> = self.state.files[from..].iter().collect();
        let capacity: u64 = files.iter().map(|f| f.entries).sum();
        let mut items = publish::merged(&files)?;
        let written = if from == 0 {
            publish::publish_base(&self.path, &self.kind, capacity, &mut items)?
        } else {
            let g = self.state.generation() + 1;
            let mut segments: Vec<u64> = self.state.files[1..from]
                .iter()
                .map(|f| f.generation)
                .collect();
            segments.push(g);
            let manifest = Manifest {
                generation: g,
                base: self.state.files[0].generation,
                segments,
            };
            publish::publish_segment(&self.path, &self.kind, &manifest, capacity, &mut items)?
        };
        drop(items);
        self.stats.files_written += 1;
        self.stats.entries_written += written;
        self.reload()
    }

    /// Publishes what is unpublished and merges every file into a new base.
    pub fn compact(&mut self) -> Result<()> {
        if let Mode::Reader = self.mode {
            return Err(Error::Usage(format!(
                "{}: the table was opened for reading; compacting needs the writer lock",
                self.path.display()
            )));
        }
        self.flush()?;
        if self.state.files.len() > 1 {
            self.merge_from(0)?;
        }
        Ok(())
    }

    /// Takes up what a writer published since this table was opened or refreshed (a reader's
    /// call; a writer's own state is always current). Returns whether anything changed; clean
    /// entries held in memory are forgotten then.
    pub fn refresh(&mut self) -> Result<bool> {
        if !state::changed(&self.path, &self.state)? {
            return Ok(false);
        }
        self.reload()?;
        self.mem.drop_clean();
        self.searches = self
            .state
            .files
            .iter()
            .map(|f| f.searches)
            .max()
            .unwrap_or(0)
            .max(self.searches);
        Ok(true)
    }

    /// Checks every published file: each entry's checksum and coding, the order, the key
    /// filters, the counts in the meta (docs/FORMAT.md §14.6), and for a table of opaque
    /// states that each key is its state's hash. Returns the files and entries checked.
    pub fn verify(&self) -> Result<TableCheck> {
        self.verify_with(None)
    }

    /// [`Table::verify`], with `key_of` giving a position's key from its exact bytes for a
    /// table of a game's positions (the layer above the store knows the games' keys): each
    /// entry's key is checked against it. A table of opaque states uses its own hash.
    pub fn verify_with(&self, key_of: Option<&KeyOf<'_>>) -> Result<TableCheck> {
        let opaque = |state: &[u8]| Some(self.key_of_state(state));
        let key_of: Option<&KeyOf<'_>> = if self.kind.game == OPAQUE {
            Some(&opaque)
        } else {
            key_of
        };
        let mut check = TableCheck::default();
        // The files this handle has open, whatever a writer published over their names since
        // (another process may grow the table meanwhile, as it may while a book is verified).
        for f in &self.state.files {
            check.entries += f.check(key_of)?;
            check.files += 1;
            check.bytes += f.id.size();
        }
        check.positions = self.published()?.try_fold(0u64, |n, r| r.map(|_| n + 1))?;
        Ok(check)
    }

    /// What the table did and holds.
    pub fn stats(&self) -> TableStats {
        TableStats {
            files: self.state.files.len() as u64,
            file_entries: self.state.files.iter().map(|f| f.entries).sum(),
            held: self.mem.len() as u64,
            unpublished: self.mem.dirty() as u64,
            memory_bytes: self.mem.bytes() as u64,
            ..self.stats.clone()
        }
    }

    /// Publishes what is unpublished and closes the table, reporting a failure to publish
    /// (drop does the same and can only ignore it).
    pub fn close(mut self) -> Result<()> {
        self.flush()
    }

    /// Every published position in (key, exact) order with its folded entry (the table as a
    /// new reader sees it, without what is unpublished).
    pub fn published(&self) -> Result<impl Iterator<Item = Result<(u64, Vec<u8>, Entry)>> + '_> {
        let files: Vec<&TtFile> = self.state.files.iter().collect();
        Ok(publish::merged(&files)?.map(|r| r.map(|(k, x, e)| (k, x.into_vec(), e))))
    }
}

impl Drop for Table {
    fn drop(&mut self) {
        // Errors cannot be reported from drop: [`Table::close`] reports them.
        let _ = self.flush();
    }
}

//! [`Book`]: what commands answer from — a book's base file and its delta segments merged
//! (docs/FORMAT.md §10), opened without reading the book and refreshed at the cost of what
//! changed; [`LiveBook`] hands out snapshots of a book that writers keep changing.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, RwLock};

use super::identity::FileId;
use super::live::{Manifest, segment_path};
use super::*;
use crate::store::PositionCodec;
use crate::store::block::Keep;
use crate::store::cells::CellRead;
use crate::store::entry::{Entry, MergeIter};
use crate::store::error::{Corruption, Error, Result};

/// How many times opening retries when writers replace files under it.
const OPEN_ATTEMPTS: u32 = 50;

/// A book opened for reading: its base file and its delta segments at one generation, merged.
/// The files never change once published, so a `Book` is a consistent snapshot for as long as
/// it is held, whatever writers do meanwhile; [`Book::refresh`] (or a [`LiveBook`]) moves to
/// the newest state.
pub struct Book {
    /// The base's path (a symlink given resolved: the manifest and segments are beside it).
    path: PathBuf,
    /// The path as it was given: a symlink re-pointed at another book is a change
    /// ([`Book::changed`]), so a server follows `ln -sfn new.book current.book`.
    given: PathBuf,
    /// The base first, then the delta segments by ascending generation.
    files: Vec<Arc<BookFile>>,
    /// The manifest when the book was opened (`None`: no manifest). Compared whole: a backup
    /// restored in place can bring back a generation number with other files.
    manifest: Option<Manifest>,
    generation: u64,
    meta: BookMeta,
    /// The cache sizes its files were opened with (files opened by a refresh get the same).
    caches: CacheSizes,
    /// [`Book::state_tag`], made once with the book.
    state_tag: String,
}

impl std::fmt::Debug for Book {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Book")
            .field("path", &self.path)
            .field("generation", &self.generation)
            .field("segments", &(self.files.len() - 1))
            .field("meta", &self.meta)
            .finish()
    }
}

/// The files of the book at `path`: its base and the segments its manifest lists (1 if the
/// manifest cannot be read: opening the book reports that).
pub(crate) fn file_count(path: &Path) -> usize {
    crate::store::files::resolve_book(path)
        .ok()
        .and_then(|p| Manifest::read(&p).ok().flatten())
        .map_or(1, |m| m.segments.len() + 1)
}

impl Book {
    /// Opens a book read-only: its manifest, its base's meta table and its segments' meta
    /// tables; blocks are read on demand, so opening costs the same whatever the book's size.
    ///
    /// ```
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// use bookdb::chess::{PosState, encode_move, parse_move};
    /// use bookdb::store::{Book, BookWriter, Entry, MoveRec, WriterOptions};
    ///
    /// let dir = tempfile::tempdir()?;
    /// let path = dir.path().join("tiny.book");
    /// // A book of one position: the start position, where 1.e4 scored +3 =1 -2.
    /// let start = shakmaty::Chess::default();
    /// let state = PosState::from_chess(&start);
    /// let (packed, _bits) = state.pack();
    /// let e4 = encode_move(&parse_move(&start, "e4")?);
    /// let mut w = BookWriter::create(&path, bookdb::chess_codec(), WriterOptions::default())?;
    /// w.push(Entry {
    ///     key: state.key(),
    ///     pos: Some(packed.clone()),
    ///     moves: vec![MoveRec { mv: e4, white: 3, draws: 1, black: 2, ..Default::default() }],
    ///     coded: None,
    /// })?;
    /// w.finish()?;
    ///
    /// let book = Book::open(&path, bookdb::chess_codec())?;
    /// assert_eq!(book.meta().positions, 1);
    /// # Ok(()) }
    /// ```
    pub fn open(path: &Path, codec: Arc<dyn PositionCodec>) -> Result<Book> {
        Self::open_view(path, &codec, None, CacheSizes::default(), false)
    }

    /// [`Book::open`] with other cache sizes than 64 MiB each: a server gives the block cache
    /// room for the whole book; [`Book::refresh`] keeps the sizes.
    pub fn open_with_caches(
        path: &Path,
        codec: Arc<dyn PositionCodec>,
        caches: CacheSizes,
    ) -> Result<Book> {
        Self::open_view(path, &codec, None, caches, false)
    }

    /// [`Book::open`] with both caches (redb's pages, opened blocks) at `cache_bytes` each
    /// (and game facts at a quarter of it)
    /// for all the book's files together (split evenly, at least 1 MiB a file) instead of
    /// 64 MiB a file: for an import's lookups, which must stay within its memory budget
    /// however many segments the book has. The lookups go in key order, so each file needs
    /// little more than its current block, and no key-filter partition is held beyond the
    /// last few read (each is probed in one run of keys by one lookup thread).
    #[doc(hidden)]
    pub fn open_with_cache(
        path: &Path,
        codec: Arc<dyn PositionCodec>,
        cache_bytes: usize,
    ) -> Result<Book> {
        let per_file = (cache_bytes / file_count(path)).max(1 << 20);
        let caches = CacheSizes {
            redb_bytes: per_file,
            block_bytes: per_file,
            filter_bytes: 0,
            // Lookups in key order read few games' facts (those of moves that keep their cells
            // as their games'), scattered over the file's games.
            fact_bytes: per_file / 4,
        };
        Self::open_view(path, &codec, None, caches, false)
    }

    /// Opens a book of format version [`OLDEST_MIGRATABLE`] up to the current one, for `bookdb
    /// migrate` only (books before version 3 are one file: their delta tier is inside it; a
    /// version-3 book's segments are of version 3 too).
    pub(crate) fn open_for_migration(
        path: &Path,
        codec: Arc<dyn PositionCodec>,
        caches: CacheSizes,
    ) -> Result<Book> {
        Self::open_view(path, &codec, None, caches, true)
    }

    fn open_view(
        path: &Path,
        codec: &Arc<dyn PositionCodec>,
        prior: Option<&Book>,
        caches: CacheSizes,
        older: bool,
    ) -> Result<Book> {
        // Through a symlink, the manifest and segments are beside the real file.
        let given = path.to_path_buf();
        let resolved = crate::store::files::resolve_book(path)?;
        let path = resolved.as_path();
        for attempt in 0..OPEN_ATTEMPTS {
            if attempt > 0 {
                std::thread::sleep(std::time::Duration::from_millis(u64::from(attempt.min(20))));
            }
            if let Some(mut book) = Self::try_open(path, codec, prior, caches, older)? {
                book.given = given;
                return Ok(book);
            }
        }
        Err(Error::Busy {
            path: path.to_path_buf(),
            what: format!(
                "its files kept changing while it was opened ({OPEN_ATTEMPTS} attempts); try again"
            ),
        })
    }

    /// One attempt at opening the book's files as the manifest names them; `None` when a
    /// writer replaced a file meanwhile (the caller tries again).
    fn try_open(
        path: &Path,
        codec: &Arc<dyn PositionCodec>,
        prior: Option<&Book>,
        caches: CacheSizes,
        older: bool,
    ) -> Result<Option<Book>> {
        // The manifest first: a fold renames its base before its manifest, so a base newer
        // than the manifest read here is recognised below, never a manifest newer than the base.
        let manifest = Manifest::read(path)?;
        let Some(id) = FileId::at(path)? else {
            // A manifest or segments without their base: a lost base, not a missing book.
            if let Some(e) = super::live::missing_base(path) {
                return Err(e);
            }
            return Err(Error::BookNotFound {
                path: path.to_path_buf(),
            });
        };
        // A file is reused only while its name holds the very bytes it was opened on (same
        // inode, size and mtime): a backup copied over it in place is opened again.
        let base = match prior {
            Some(p) if p.files[0].id == id => p.files[0].clone(),
            _ => Arc::new(BookFile::open_file(path, codec.clone(), older, caches)?),
        };
        if base.id != id || FileId::at(path)? != Some(id) {
            return Ok(None);
        }
        if base.view_counters().is_some() {
            return Err(Error::NotABook {
                path: path.to_path_buf(),
                reason: "this is a delta segment of a live book; open the book it belongs to \
                         (the name without `.seg-…`)"
                    .into(),
            });
        }
        let bgen = base.generation();
        let (segments, manifest_generation) = match &manifest {
            None => (Vec::new(), None),
            // A fold published this base after the manifest was read, or was killed before
            // publishing its manifest: the base holds every segment the manifest lists.
            // (Only right after the manifest, or over none: a base of any other generation
            // beside a manifest listing segments is another base put in its place, unless a
            // writer published more meanwhile.)
            Some(m) if m.generation < bgen => {
                if let Err(e) = super::live::check_base_matches(path, m, bgen) {
                    if Manifest::read(path)?.as_ref() == Some(m) {
                        return Err(e);
                    }
                    return Ok(None);
                }
                (Vec::new(), Some(m.generation))
            }
            Some(m) if m.base == bgen => (m.segments.clone(), Some(m.generation)),
            Some(m) => {
                return Err(Error::Corrupt(Corruption::Manifest(format!(
                    "{} names base generation {} but {} holds generation {bgen} (a base \
                     restored without its manifest and segments?); restore them together, or \
                     remove {} to read the base alone",
                    super::live::manifest_path(path).display(),
                    m.base,
                    path.display(),
                    super::live::manifest_path(path).display()
                ))));
            }
        };
        let mut files = vec![base];
        for g in &segments {
            let sp = segment_path(path, *g);
            let now = FileId::at(&sp)?;
            let reused = prior.and_then(|p| {
                p.files[1..]
                    .iter()
                    .find(|f| f.generation() == *g && Some(f.id) == now)
                    .cloned()
            });
            let seg = match reused {
                Some(f) => f,
                None => {
                    match BookFile::open_file(&sp, codec.clone(), older, caches) {
                        Ok(f) => Arc::new(f),
                        // Folded away by a writer after the manifest was read: start again.
                        // Missing while the manifest still lists it: the book lost a file.
                        Err(_) if !sp.exists() => {
                            if Manifest::read(path)? == manifest {
                                return Err(Error::CorruptFile {
                                    path: sp.clone(),
                                    corruption: Corruption::Manifest(format!(
                                        "the manifest lists the delta segment of generation {g}, \
                                         but its file does not exist (a restore without it, or \
                                         removed by hand?). Restore it from the backup the \
                                         manifest {} came from (the base, manifest and segments \
                                         of one backup together)",
                                        super::live::manifest_path(path).display()
                                    )),
                                });
                            }
                            return Ok(None);
                        }
                        // The manifest names it as a segment: a file there that is not a book
                        // is a damaged one (another game's codec is still the codec's refusal).
                        Err(Error::NotABook { reason, .. })
                            if !reason.starts_with("position codec") =>
                        {
                            return Err(Error::CorruptFile {
                                path: sp.clone(),
                                corruption: Corruption::Storage(format!(
                                    "the manifest lists it as a delta segment, but it does not \
                                     read as a book file ({reason})"
                                )),
                            });
                        }
                        Err(e) => return Err(e),
                    }
                }
            };
            if seg.generation() != *g || seg.view_counters().is_none() {
                return Err(Error::Corrupt(Corruption::Manifest(format!(
                    "{} is not the delta segment of generation {g} (it holds generation {}{})",
                    segment_path(path, *g).display(),
                    seg.generation(),
                    if seg.view_counters().is_none() {
                        ", as a base"
                    } else {
                        ""
                    }
                ))));
            }
            files.push(seg);
        }
        check_segments_fit_base(path, &files)?;
        let meta = view_meta(&files);
        let generation = manifest_generation
            .unwrap_or(0)
            .max(bgen)
            .max(segments.last().copied().unwrap_or(0));
        Ok(Some(Book {
            path: path.to_path_buf(),
            given: path.to_path_buf(),
            state_tag: state_tag_of(generation, &files),
            files,
            manifest,
            generation,
            meta,
            caches,
        }))
    }

    /// Whether writers published something since this book was opened: one `stat` of the base,
    /// one read of the manifest and one `stat` of each segment (tens of microseconds at 8
    /// segments, docs/PERFORMANCE.md).
    ///
    /// The files' identities and the whole manifest are compared: a backup restored
    /// in place (files overwritten, a generation number brought back with other content) is
    /// a change too, and the refresh opens the restored files. A book opened through a
    /// symlink has changed when the link leads elsewhere (one `readlink` more).
    pub fn changed(&self) -> Result<bool> {
        if self.given != self.path && crate::store::files::resolve_book(&self.given)? != self.path {
            return Ok(true);
        }
        if FileId::at(&self.path)? != Some(self.files[0].id) {
            return Ok(true);
        }
        if Manifest::read(&self.path)? != self.manifest {
            return Ok(true);
        }
        for f in &self.files[1..] {
            if FileId::at(f.path())? != Some(f.id) {
                return Ok(true);
            }
        }
        Ok(false)
    }

    /// The book as writers left it now, if it [`changed`](Book::changed): files that did not
    /// change are shared with this one (caches included), so the cost is that of opening what
    /// was published since, not of the book.
    pub fn refresh(&self) -> Result<Option<Book>> {
        if !self.changed()? {
            return Ok(None);
        }
        let codec = self.files[0].codec.clone();
        Self::open_view(&self.given, &codec, Some(self), self.caches, false).map(Some)
    }

    /// The cache sizes the book was opened with.
    pub fn cache_sizes(&self) -> CacheSizes {
        self.caches
    }

    /// Each file's block cache limit, base first (for tests: a refresh must give new files
    /// the book's sizes).
    #[doc(hidden)]
    pub fn block_cache_limits(&self) -> Vec<usize> {
        self.files.iter().map(|f| f.block_cache_limit()).collect()
    }

    /// Bytes of key-filter partitions the book's files hold (for tests: an import's lookups
    /// hold none).
    #[doc(hidden)]
    pub fn filter_held_bytes(&self) -> usize {
        self.files.iter().map(|f| f.filter_held_bytes()).sum()
    }

    /// Answers the book's block caches keep (for tests: a lookup of a position with many
    /// cells keeps its answer with its block).
    #[doc(hidden)]
    pub fn kept_answers(&self) -> usize {
        self.files.iter().map(|f| f.kept_answers()).sum()
    }

    /// Entries the book's block caches keep read with every cell (for tests: a position asked
    /// a second filter keeps its cells with its block).
    #[doc(hidden)]
    pub fn kept_every_cells(&self) -> usize {
        self.files.iter().map(|f| f.kept_every_cells()).sum()
    }

    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// The book's counters (of the merged view).
    pub fn meta(&self) -> &BookMeta {
        &self.meta
    }

    /// Whether no two entries of the book share a key (no key collision, no key-only entry):
    /// then the entry of a position is all its key holds, and [`Book::lookup_read`] answers
    /// what [`Book::get_read`] would without decoding other entries' positions.
    pub fn keys_are_unique(&self) -> bool {
        self.meta.collisions == 0 && self.meta.key_only == 0
    }

    /// The facets the book keeps (any of its files' facets; docs/FORMAT.md §12).
    pub fn facets(&self) -> crate::store::facet::FacetSet {
        self.files()
            .iter()
            .fold(crate::store::facet::FacetSet::NONE, |a, f| {
                a.union(f.facets)
            })
    }

    /// Games counted by speed, rating group and year, over the book's files.
    pub fn facet_games(&self) -> crate::store::facet::FacetGames {
        let mut g = crate::store::facet::FacetGames::default();
        for f in self.files() {
            g.merge(&f.facet_games);
        }
        g
    }

    /// The generation of the state this book shows (increases with every publication).
    pub fn generation(&self) -> u64 {
        self.generation
    }

    /// An opaque name of the state this book shows: a hash (16 hex digits) of its generation
    /// and its files' identities. Generations are numbered per book: another book put in
    /// this one's place (a symlink switched, a backup restored) can show a generation seen
    /// before, and its state tag is still another.
    pub fn state_tag(&self) -> &str {
        &self.state_tag
    }

    /// The book's files: the base first, then its delta segments by generation.
    #[doc(hidden)]
    pub fn files(&self) -> &[Arc<BookFile>] {
        &self.files
    }

    /// The base file.
    pub(crate) fn base(&self) -> &BookFile {
        &self.files[0]
    }

    /// The delta segments over the base.
    pub(crate) fn segments(&self) -> &[Arc<BookFile>] {
        &self.files[1..]
    }

    /// The format version of the base ([`FORMAT_VERSION`], or an older one for a book opened
    /// by [`Book::open_for_migration`]).
    pub(crate) fn format_version(&self) -> u32 {
        self.base().format_version()
    }

    /// The position model and dictionary of the base, for a writer to reuse (see
    /// [`BookFile::compression`]).
    pub fn compression(&self) -> Option<BookCompression> {
        self.base().compression()
    }

    #[doc(hidden)]
    pub fn codec(&self) -> &dyn PositionCodec {
        self.base().codec()
    }

    pub(crate) fn codec_arc(&self) -> Arc<dyn PositionCodec> {
        self.files[0].codec.clone()
    }

    pub(crate) fn dictionaries(&self) -> &std::collections::HashMap<u16, Arc<Vec<u8>>> {
        self.base().dictionaries()
    }

    /// Bytes of all the book's files.
    #[doc(hidden)]
    pub fn file_bytes(&self) -> u64 {
        self.files.iter().map(|f| f.file_bytes()).sum()
    }

    /// All entries with this key (more than one only on a key collision), all files merged.
    #[doc(hidden)]
    pub fn get(&self, key: u64) -> Result<Vec<Entry>> {
        self.get_read(key, CellRead::All)
    }

    /// [`Book::get`] keeping of each move's cells what `read` asks for: a query that needs
    /// only some cells, or only their totals, builds no others.
    pub fn get_read(&self, key: u64, read: CellRead) -> Result<Vec<Entry>> {
        if self.files.len() == 1 {
            return self.files[0].get_read(key, read);
        }
        let parts = self
            .files
            .iter()
            .map(|f| {
                f.get_read(key, read)
                    .map(|v| v.into_iter().map(Ok::<_, Error>))
            })
            .collect::<Result<Vec<_>>>()?;
        MergeIter::new(parts).collect()
    }

    /// The entry holding exactly this encoded position, all files merged; `None` if the book
    /// does not hold it (a position that merely shares its key is never returned).
    ///
    /// ```
    /// # fn main() -> Result<(), Box<dyn std::error::Error>> {
    /// # use bookdb::chess::{PosState, encode_move, parse_fen, parse_move};
    /// # use bookdb::store::{Book, BookWriter, Entry, MoveRec, WriterOptions};
    /// # let dir = tempfile::tempdir()?;
    /// # let path = dir.path().join("tiny.book");
    /// # let start = shakmaty::Chess::default();
    /// # let state = PosState::from_chess(&start);
    /// # let e4 = encode_move(&parse_move(&start, "e4")?);
    /// # let mut w = BookWriter::create(&path, bookdb::chess_codec(), WriterOptions::default())?;
    /// # w.push(Entry { key: state.key(), pos: Some(state.pack().0), coded: None,
    /// #     moves: vec![MoveRec { mv: e4, white: 3, draws: 1, black: 2, ..Default::default() }] })?;
    /// # w.finish()?;
    /// let book = Book::open(&path, bookdb::chess_codec())?;
    /// let (packed, _bits) = PosState::from_chess(&shakmaty::Chess::default()).pack();
    /// let entry = book.lookup(&packed)?.expect("the start position is in the book");
    /// assert_eq!((entry.moves[0].white, entry.moves[0].draws, entry.moves[0].black), (3, 1, 2));
    ///
    /// let after_e4 = parse_fen("rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq -")?;
    /// assert!(book.lookup(&PosState::from_chess(&after_e4).pack().0)?.is_none());
    /// # Ok(()) }
    /// ```
    #[doc(hidden)]
    pub fn lookup(&self, pos: &[u8]) -> Result<Option<Entry>> {
        self.lookup_read(pos, CellRead::All)
    }

    /// [`Book::lookup`] keeping of each move's cells what `read` asks for.
    pub fn lookup_read(&self, pos: &[u8], read: CellRead) -> Result<Option<Entry>> {
        let mut found: Option<Entry> = None;
        // The key once for all files; each file's key filter then skips most files that lack it.
        let key = self.codec().key(pos)?;
        for f in &self.files {
            if let Some(e) = f.lookup_read_keyed(pos, key, read)? {
                match &mut found {
                    Some(acc) => acc.merge(e),
                    None => found = Some(e),
                }
            }
        }
        Ok(found)
    }

    /// The base's entry for this position read through redb without the block cache (the
    /// benchmark's cold path).
    #[doc(hidden)]
    pub fn lookup_blocks_uncached(&self, pos: &[u8]) -> Result<Option<Entry>> {
        self.base().lookup_blocks_uncached(pos)
    }

    /// Iterates all entries in (key, position) order, all files merged.
    pub fn iter(&self) -> Result<EntryIter<'_>> {
        self.iter_as(|_| Keep::default())
    }

    /// Like [`Book::iter`], but indexed moves of block entries stay indices
    /// (`MoveRec::indexed`): for rewrites into a [`BookWriter`], which takes them as they
    /// are and so skips decoding and re-indexing every move.
    pub fn iter_for_rewrite(&self) -> Result<EntryIter<'_>> {
        self.iter_for_rewrite_coded(None)
    }

    /// Like [`Book::iter_for_rewrite`], for a writer told to reuse `writer` (see
    /// [`BookWriter::reuse_compression`]): entries of files coded with that model also carry
    /// their positions as stored (`Entry::coded`), so the writer skips coding them again.
    #[doc(hidden)]
    pub fn iter_for_rewrite_coded(
        &self,
        writer: Option<&BookCompression>,
    ) -> Result<EntryIter<'_>> {
        self.iter_as(|f| Keep {
            indices: true,
            coded: match (writer, f.writer_model()) {
                (Some(w), Some(mine)) => w.model == mine,
                _ => false,
            },
        })
    }

    fn iter_as(&self, keep: impl Fn(&BookFile) -> Keep) -> Result<EntryIter<'_>> {
        if self.files.len() == 1 {
            return self.files[0].iter_as(keep(&self.files[0]));
        }
        // One decoding pool for all the files (`iter::decode_pool`).
        let pool = super::iter::decode_pool();
        let parts = self
            .files
            .iter()
            .map(|f| {
                f.iter_with(keep(f), pool.clone(), f.read_ahead_blocks())
                    .map(|i| Box::new(i) as EntryStream<'_>)
            })
            .collect::<Result<Vec<_>>>()?;
        Ok(MergeIter::new(parts))
    }

    /// Iterates the base file's raw blocks: (first key, stored bytes). [`Book::files`] gives
    /// every file.
    #[doc(hidden)]
    pub fn for_each_block(&self, f: impl FnMut(u64, &[u8]) -> Result<()>) -> Result<()> {
        self.base().for_each_block(f)
    }

    /// Blocks of the base file.
    #[doc(hidden)]
    pub fn block_count(&self) -> Result<u64> {
        self.base().block_count()
    }

    /// Decodes one stored block of the base file completely.
    #[doc(hidden)]
    pub fn decode_block(&self, block_key: u64, bytes: &[u8]) -> Result<Vec<Entry>, Corruption> {
        self.base().decode_block(block_key, bytes)
    }

    /// Opens one stored block of the base file (checksum and decompression only), for tools.
    pub fn open_block<'a>(
        &self,
        block_key: u64,
        bytes: &'a [u8],
    ) -> Result<crate::store::block::OpenBlock<'a>, Corruption> {
        self.base().open_block(block_key, bytes)
    }

    /// The import records of all files: input fingerprint → JSON, by fingerprint (a segment's
    /// record of an input replaces an older file's).
    pub fn imports(&self) -> Result<Vec<(String, Vec<u8>)>> {
        let mut all = BTreeMap::new();
        for f in &self.files {
            all.extend(f.imports()?);
        }
        Ok(all.into_iter().collect())
    }

    /// How many game fingerprints `--dedupe` imports recorded in this book.
    #[doc(hidden)]
    pub fn game_fingerprint_count(&self) -> Result<u64> {
        self.files.iter().map(|f| f.game_fingerprint_count()).sum()
    }

    /// A handle that tells whether a game fingerprint is recorded in this book.
    #[doc(hidden)]
    pub fn game_index(&self) -> Result<GameIndex> {
        let mut tables = Vec::new();
        for f in &self.files {
            if let Some(t) = f.games_table().map_err(|e| e.in_file(&f.path))? {
                tables.push((f.path.clone(), t));
            }
        }
        Ok(GameIndex { tables })
    }
}

/// The counters of the merged view: the newest segment's record of the whole book's logical
/// counters (or the base's own), with the physical ones summed over the files and
/// `delta_entries` counting the segments' entries.
/// The base and segments the manifest names must belong together, which their meta tables
/// show without reading an entry: each segment is coded with the base's model (and its
/// dictionary, if the segment has one), and the newest segment's view (the whole book's counters) counts the base's games plus each
/// segment's, and at least the base's entries and pairs and at most those plus the segments'. Another book's base restored in place of this one (same
/// generation, other content) fails this; reading on would answer from a mixture of two
/// books, and a writer would publish over it.
fn check_segments_fit_base(path: &Path, files: &[Arc<BookFile>]) -> Result<()> {
    let (base, segs) = (files[0].meta(), &files[1..]);
    let Some(view) = segs.last().and_then(|f| f.view_counters()) else {
        return Ok(());
    };
    let sum = |f: fn(&BookMeta) -> u64| -> u64 { segs.iter().map(|s| f(s.meta())).sum() };
    let games = base.games + sum(|m| m.games);
    let within = |what: u64, lo: u64, extra: u64| what >= lo && what <= lo + extra;
    // Every segment over a base that has a model is coded with the base's model, and with its
    // dictionary if the segment has one (publish_segment, fold_segments reuse them; a segment
    // too small for a dictionary has none): another base has its own.
    let b = &files[0];
    let coded_otherwise = segs.iter().find(|f| {
        b.writer_model().is_some()
            && (f.writer_model() != b.writer_model()
                || f.dictionaries()
                    .get(&1)
                    .is_some_and(|d| Some(d) != b.dictionaries().get(&1)))
    });
    let fits = coded_otherwise.is_none()
        && view.games == games
        && within(view.positions, base.positions, sum(|m| m.positions))
        && within(view.key_only, base.key_only, sum(|m| m.key_only))
        && within(view.pairs, base.pairs, sum(|m| m.pairs));
    if fits {
        return Ok(());
    }
    let manifest = super::live::manifest_path(path);
    let newest = segs.last().map_or(path, |f| f.path.as_path());
    let why = match coded_otherwise {
        Some(f) => format!(
            "the delta segment {} is coded with another position model or dictionary than the \
             base",
            f.path.display()
        ),
        None => format!(
            "the counters of the newest delta segment {} say the book has {} games and {} \
             positions over a base of {} games and {} positions (with {} games in the segments)",
            newest.display(),
            view.games,
            view.positions,
            base.games,
            base.positions,
            sum(|m| m.games),
        ),
    };
    Err(Error::CorruptFile {
        path: path.to_path_buf(),
        corruption: Corruption::Manifest(format!(
            "the base does not belong with the delta segments {} lists: {why}; a base restored \
             without its manifest and segments, another book's base, or a damaged segment? \
             Restore the base, manifest and segments of one backup together, or, to keep this \
             base alone, move {} and the segment files away",
            manifest.display(),
            manifest.display()
        )),
    })
}

fn view_meta(files: &[Arc<BookFile>]) -> BookMeta {
    let base = &files[0];
    let Some(newest) = files.last().filter(|_| files.len() > 1) else {
        return base.meta().clone();
    };
    let mut m = newest.view_counters().cloned().unwrap_or_default();
    m.blocks = files.iter().map(|f| f.meta().blocks).sum();
    m.raw_bytes = files.iter().map(|f| f.meta().raw_bytes).sum();
    m.stored_bytes = files.iter().map(|f| f.meta().stored_bytes).sum();
    m.delta_entries = files[1..]
        .iter()
        .map(|f| f.meta().positions + f.meta().key_only)
        .sum();
    m
}

/// The state tag of a book of `generation` made of `files` ([`Book::state_tag`]).
fn state_tag_of(generation: u64, files: &[Arc<BookFile>]) -> String {
    let mut bytes = Vec::with_capacity(8 + 40 * files.len());
    bytes.extend_from_slice(&generation.to_le_bytes());
    for f in files {
        bytes.extend_from_slice(&f.id.to_bytes());
    }
    format!("{:016x}", xxhash_rust::xxh3::xxh3_64(&bytes))
}

/// A book that a long-lived reader (a server) keeps open while writers publish: hands out
/// [`Book`] snapshots and moves to the newest state on [`LiveBook::refresh`].
pub struct LiveBook {
    current: RwLock<Arc<Book>>,
}

impl LiveBook {
    pub fn open(path: &Path, codec: Arc<dyn PositionCodec>) -> Result<LiveBook> {
        Ok(LiveBook {
            current: RwLock::new(Arc::new(Book::open(path, codec)?)),
        })
    }

    /// A live book starting from `book`, opened already.
    pub fn from_book(book: Book) -> LiveBook {
        LiveBook {
            current: RwLock::new(Arc::new(book)),
        }
    }

    /// The current state; it stays valid (its files stay readable) for as long as it is held.
    pub fn snapshot(&self) -> Arc<Book> {
        match self.current.read() {
            Ok(g) => g.clone(),
            Err(poisoned) => poisoned.into_inner().clone(),
        }
    }

    /// Moves to what writers published since the last refresh; returns whether anything
    /// changed. When nothing did this costs one `stat` and one small read.
    pub fn refresh(&self) -> Result<bool> {
        let now = self.snapshot();
        let Some(next) = now.refresh()? else {
            return Ok(false);
        };
        let next = Arc::new(next);
        match self.current.write() {
            Ok(mut g) => *g = next,
            Err(poisoned) => *poisoned.into_inner() = next,
        }
        Ok(true)
    }
}

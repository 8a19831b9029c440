//! References aligned with entry blocks (format 10, docs/FORMAT.md §15.4): a file's entry
//! blocks read back as shapes (each entry's key and move codes, in block order:
//! [`ShapeReader`]), a key-ordered stream of [`PosRefs`] zipped onto them as one reference
//! chunk per entry block ([`Zipper`]), and the reverse, a file's chunks read back as that
//! stream ([`StoredRefs`]). A chunk names no key and no move: the block it is keyed by does.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

use redb::ReadableTable;

use super::refchunk::{RefTable, read_chunk};
use super::shapelog::BlockShape;
use super::*;
use crate::store::block::{self, BlockView};
use crate::store::error::{Corruption, Error, Result};
use crate::store::refblock::{self, EntryRefs, PosRefs};
use crate::store::workers::Workers;
use crate::store::{PositionCodec, PositionModel};

/// What decodes a file's entry blocks into shapes: its codec, models and dictionaries.
#[derive(Clone)]
pub(crate) struct ShapeCodec {
    codec: Arc<dyn PositionCodec>,
    models: Arc<HashMap<u16, Arc<dyn PositionModel>>>,
    pool: Arc<DecompressorPool>,
}

impl ShapeCodec {
    pub(crate) fn new(
        codec: Arc<dyn PositionCodec>,
        models: HashMap<u16, Arc<dyn PositionModel>>,
        dicts: HashMap<u16, Arc<Vec<u8>>>,
    ) -> ShapeCodec {
        ShapeCodec {
            codec,
            models: Arc::new(models),
            pool: Arc::new(DecompressorPool::new(dicts)),
        }
    }

    /// The shape codec of an open file.
    pub(crate) fn of(f: &BookFile) -> ShapeCodec {
        ShapeCodec::new(f.codec.clone(), f.models.clone(), f.dicts.clone())
    }

    fn decode(&self, key: u64, bytes: &[u8]) -> std::result::Result<BlockShape, Corruption> {
        let blk = block::open_block(key, bytes, &*self.pool)?;
        let view = BlockView::parse(key, &blk)?;
        let id = blk.header.model_id;
        let model = self.models.get(&id).ok_or_else(|| Corruption::Header {
            block_key: key,
            reason: format!("position model {id} missing from the meta table"),
        })?;
        Ok(BlockShape {
            key,
            entries: view.shapes(&*self.codec, &**model)?,
        })
    }
}

/// Blocks read at once (and decoded on the worker threads together).
const SHAPE_BATCH: usize = 64;

type ShapeJob = (ShapeCodec, Vec<(u64, Vec<u8>)>);
type Shaped = std::result::Result<Vec<BlockShape>, Corruption>;

fn shape_job((codec, rows): ShapeJob) -> Shaped {
    rows.iter().map(|(k, v)| codec.decode(*k, v)).collect()
}

/// A file's entry blocks in key order, read from its `blocks` table a batch at a time and
/// decoded into shapes on worker threads.
pub(crate) struct ShapeReader {
    codec: ShapeCodec,
    workers: Option<Workers<ShapeJob, Shaped>>,
    /// The key to read from next (`None`: the table is read to its end).
    from: Option<u64>,
    buf: VecDeque<BlockShape>,
}

impl ShapeReader {
    pub(crate) fn new(codec: ShapeCodec) -> ShapeReader {
        ShapeReader {
            codec,
            workers: None,
            from: Some(0),
            buf: VecDeque::new(),
        }
    }

    /// The next block of `table` (the file's `blocks`), `None` after the last.
    pub(crate) fn next(
        &mut self,
        table: &impl ReadableTable<u64, &'static [u8]>,
    ) -> Result<Option<BlockShape>> {
        if self.buf.is_empty() {
            self.fill(table)?;
        }
        Ok(self.buf.pop_front())
    }

    fn fill(&mut self, table: &impl ReadableTable<u64, &'static [u8]>) -> Result<()> {
        let Some(from) = self.from else {
            return Ok(());
        };
        let mut rows = Vec::with_capacity(SHAPE_BATCH);
        for item in table.range(from..)?.take(SHAPE_BATCH) {
            let (k, v) = item?;
            rows.push((k.value(), v.value().to_vec()));
        }
        self.from = match rows.last() {
            Some((k, _)) if rows.len() == SHAPE_BATCH => k.checked_add(1),
            _ => None,
        };
        let threads = super::seal::seal_threads();
        let per = rows.len().div_ceil(threads).max(1);
        let mut jobs = Vec::new();
        let mut rows = rows.into_iter().peekable();
        while rows.peek().is_some() {
            jobs.push((self.codec.clone(), rows.by_ref().take(per).collect()));
        }
        let results = self
            .workers
            .get_or_insert_with(|| Workers::new(threads, "bookdb-shapes", shape_job))
            .map(jobs);
        for r in results {
            let shapes =
                r.ok_or_else(|| Error::Internal("a block shape thread panicked".into()))?;
            self.buf.extend(shapes.map_err(Error::Corrupt)?);
        }
        Ok(())
    }
}

/// Zips references given in key order onto a file's entry blocks, given in key order: per
/// block with any reference, one chunk of each entry's lists (by the entry's move codes).
/// A position or move the blocks do not hold is not stored (`orphans` counts the positions;
/// `verify`, which rebuilds the references from the games, reports them).
pub(crate) struct Zipper {
    width: u8,
    block: Option<BlockShape>,
    lists: Vec<EntryRefs>,
    any: bool,
    /// The last references taken: the entries with its key take their lists from it.
    last: Option<PosRefs>,
    pub(crate) orphans: u64,
    pub(crate) chunks: u64,
}

impl Zipper {
    /// A zipper of game numbers below `games`.
    pub(crate) fn new(games: u64) -> Zipper {
        let max = games.saturating_sub(1);
        Zipper {
            width: (64 - max.leading_zeros()) as u8,
            block: None,
            lists: Vec::new(),
            any: false,
            last: None,
            orphans: 0,
            chunks: 0,
        }
    }

    /// Takes the next position's references (keys ascending).
    pub(crate) fn take(
        &mut self,
        p: PosRefs,
        next_block: &mut impl FnMut() -> Result<Option<BlockShape>>,
        put: &mut impl FnMut(u64, Vec<u8>) -> Result<()>,
    ) -> Result<()> {
        loop {
            if self.block.is_none() {
                match next_block()? {
                    Some(b) => self.block = Some(b),
                    None => {
                        self.orphans += 1;
                        return Ok(());
                    }
                }
            }
            let next_key = self
                .block
                .as_ref()
                .and_then(|b| b.entries.get(self.lists.len()))
                .map(|e| e.0);
            match next_key {
                None => self.flush(put)?,
                Some(k) if k < p.key => self.fill_entry(),
                Some(k) if k == p.key => {
                    self.last = Some(p);
                    return Ok(());
                }
                Some(_) => {
                    self.orphans += 1;
                    return Ok(());
                }
            }
        }
    }

    /// Fills the rest of the blocks and writes their chunks.
    pub(crate) fn finish(
        mut self,
        next_block: &mut impl FnMut() -> Result<Option<BlockShape>>,
        put: &mut impl FnMut(u64, Vec<u8>) -> Result<()>,
    ) -> Result<(u64, u64)> {
        loop {
            if self.block.is_none() {
                match next_block()? {
                    Some(b) => self.block = Some(b),
                    None => return Ok((self.chunks, self.orphans)),
                }
            }
            while self
                .block
                .as_ref()
                .is_some_and(|b| self.lists.len() < b.entries.len())
            {
                self.fill_entry();
            }
            self.flush(put)?;
        }
    }

    /// The next entry of the block takes its lists.
    fn fill_entry(&mut self) {
        let Some((key, codes)) = self
            .block
            .as_ref()
            .and_then(|b| b.entries.get(self.lists.len()))
        else {
            return;
        };
        let lists: EntryRefs = match &self.last {
            Some(l) if l.key == *key => codes
                .iter()
                .map(|c| match l.moves.binary_search_by_key(c, |m| m.0) {
                    Ok(i) => l.moves[i].1.clone(),
                    Err(_) => Vec::new(),
                })
                .collect(),
            _ => vec![Vec::new(); codes.len()],
        };
        self.any |= lists.iter().any(|l| !l.is_empty());
        self.lists.push(lists);
    }

    fn flush(&mut self, put: &mut impl FnMut(u64, Vec<u8>) -> Result<()>) -> Result<()> {
        let Some(b) = self.block.take() else {
            return Ok(());
        };
        let lists = std::mem::take(&mut self.lists);
        if std::mem::take(&mut self.any) {
            let bytes = refblock::encode_chunk(&lists, self.width)
                .map_err(|e| Error::Internal(format!("coding a reference chunk: {e}")))?;
            put(b.key, bytes)?;
            self.chunks += 1;
        }
        Ok(())
    }
}

/// Where a writer reads its own entry blocks' shapes back from: its shape log, or the blocks
/// themselves, decoded (when entries were pushed before it knew it would store games); or,
/// for a store carried alone, the references its entries carried (`reftap`), logged with
/// them.
pub(crate) enum BlockShapes {
    Logged(super::shapelog::LoggedShapes),
    Decode(ShapeCodec),
    Carried(super::shapelog::LoggedShapes),
}

/// Writes the chunks of the transaction's file from the references its entries carried
/// (`lists`, a [`LogKind::Lists`](super::shapelog::LogKind) log): a chunk for each block
/// with any, as [`Zipper`] writes them. Returns the chunks written.
pub(crate) fn write_carried(
    txn: &redb::WriteTransaction,
    games: u64,
    mut lists: super::shapelog::LoggedShapes,
) -> Result<u64> {
    let mut refs = txn.open_table(GAME_REFS)?;
    let width = Zipper::new(games).width;
    let mut chunks = 0;
    while let Some((key, block)) = lists.next_lists()? {
        if block.iter().all(|e| e.iter().all(|l| l.is_empty())) {
            continue;
        }
        let bytes = refblock::encode_chunk(&block, width)
            .map_err(|e| Error::Internal(format!("coding a reference chunk: {e}")))?;
        refs.insert(key, bytes.as_slice())?;
        chunks += 1;
    }
    Ok(chunks)
}

/// Writes references, given in key order by `source`, as the chunks of the entry blocks the
/// transaction's file holds (their shapes from `shapes`); game numbers below `games`. Returns
/// the chunks written and the positions no block holds.
pub(crate) fn write_aligned(
    txn: &redb::WriteTransaction,
    games: u64,
    shapes: BlockShapes,
    source: impl FnOnce(&mut dyn FnMut(PosRefs) -> Result<()>) -> Result<()>,
) -> Result<(u64, u64)> {
    let mut refs = txn.open_table(GAME_REFS)?;
    let mut put = |k: u64, v: Vec<u8>| -> Result<()> {
        refs.insert(k, v.as_slice())?;
        Ok(())
    };
    let mut z = Zipper::new(games);
    match shapes {
        BlockShapes::Logged(mut log) => {
            let mut next_block = || log.next_block();
            source(&mut |p| z.take(p, &mut next_block, &mut put))?;
            z.finish(&mut next_block, &mut put)
        }
        BlockShapes::Decode(codec) => {
            let blocks = txn.open_table(BLOCKS)?;
            let mut reader = ShapeReader::new(codec);
            let mut next_block = || reader.next(&blocks);
            source(&mut |p| z.take(p, &mut next_block, &mut put))?;
            z.finish(&mut next_block, &mut put)
        }
        BlockShapes::Carried(_) => Err(Error::Internal(
            "references carried with the entries cannot be aligned again".into(),
        )),
    }
}

/// Checks a file's reference chunks against the references `source` derives from its games
/// (in key order): zipped onto the file's blocks as a writer zips them, every chunk must be
/// the stored one, byte for byte, and no other chunk stored. Positions or moves the file does
/// not hold (entries a `compact --min-games` dropped) get none, as when it was written.
/// Returns the positions checked (those the file holds). The blocks' shapes come from
/// `shapes` (logged from the blocks by the caller), else from the blocks decoded.
pub(crate) fn check_aligned(
    file: &BookFile,
    shapes: Option<super::shapelog::LoggedShapes>,
    source: impl FnOnce(&mut dyn FnMut(PosRefs) -> Result<()>) -> Result<()>,
) -> Result<u64> {
    use redb::ReadableTableMetadata;
    let refs = file.games.as_ref().and_then(|t| t.refs.as_ref());
    let rows = refs.map(|r| r.len()).transpose()?.unwrap_or(0);
    let Some(blocks) = file.blocks.as_ref() else {
        return match rows {
            0 => Ok(0),
            n => Err(bad(
                "game_refs",
                format!("{n} reference chunks in a file without blocks"),
            )),
        };
    };
    let mut reader = ShapeReader::new(ShapeCodec::of(file));
    let mut logged = shapes;
    let mut next_block = || match logged.as_mut() {
        Some(log) => log.next_block(),
        None => reader.next(blocks),
    };
    let mut matched = 0u64;
    let mut put = |k: u64, want: Vec<u8>| -> Result<()> {
        let at = format!("reference chunk {k:016x}");
        let have = shield("reading game references", || {
            Ok(refs
                .map(|r| r.get(k))
                .transpose()?
                .flatten()
                .map(|v| v.value().to_vec()))
        })?;
        match have {
            Some(have) if have == want => {
                matched += 1;
                Ok(())
            }
            Some(have) => {
                let (h, w) = (refblock::decode_chunk(&have), refblock::decode_chunk(&want));
                let first_diff = match (&h, &w) {
                    (Ok(h), Ok(w)) => h
                        .iter()
                        .zip(w)
                        .position(|(a, b)| a != b)
                        .map_or(String::new(), |i| format!(" from its entry {i}")),
                    (Err(e), _) => format!(" ({e})"),
                    _ => String::new(),
                };
                Err(bad(
                    at,
                    format!("differs from the one the stored games give{first_diff}"),
                ))
            }
            None => Err(bad(
                at,
                "missing: the stored games reach the block's positions but no chunk names them",
            )),
        }
    };
    let mut z = Zipper::new(file.games_stored());
    let mut taken = 0u64;
    source(&mut |p| {
        taken += 1;
        z.take(p, &mut next_block, &mut put)
    })?;
    let (_, orphans) = z.finish(&mut next_block, &mut put)?;
    if matched != rows {
        return Err(bad(
            "game_refs",
            format!(
                "{} reference chunks name games for blocks the stored games do not reach",
                rows - matched
            ),
        ));
    }
    Ok(taken - orphans)
}

/// A file's stored references read back in key order, one position at a time: its entry
/// blocks and their chunks walked together, each chunk checked against its block (as many
/// entries, as many moves per entry) and every chunk's key checked to be a block's.
pub(crate) struct StoredRefs<'f> {
    file: &'f BookFile,
    blocks: &'f redb::ReadOnlyTable<u64, &'static [u8]>,
    refs: Option<&'f RefTable>,
    shapes: ShapeReader,
    pending: VecDeque<PosRefs>,
    /// Chunks matched with a block so far, against the rows of the table.
    matched: u64,
    rows: u64,
    done: bool,
}

impl<'f> StoredRefs<'f> {
    pub(crate) fn open(file: &'f BookFile) -> Result<Option<StoredRefs<'f>>> {
        use redb::ReadableTableMetadata;
        let refs = file.games.as_ref().and_then(|t| t.refs.as_ref());
        let Some(blocks) = file.blocks.as_ref() else {
            return Ok(None);
        };
        let rows = refs.map(|r| r.len()).transpose()?.unwrap_or(0);
        Ok(Some(StoredRefs {
            file,
            blocks,
            refs,
            shapes: ShapeReader::new(ShapeCodec::of(file)),
            pending: VecDeque::new(),
            matched: 0,
            rows,
            done: false,
        }))
    }

    /// The next position with references, in key order (positions that share a key merged,
    /// also across blocks).
    pub(crate) fn next_refs(&mut self) -> Result<Option<PosRefs>> {
        self.load()?;
        let Some(mut p) = self.pending.pop_front() else {
            return Ok(None);
        };
        loop {
            self.load()?;
            match self.pending.front() {
                Some(q) if q.key == p.key => {
                    if let Some(q) = self.pending.pop_front() {
                        merge_moves(&mut p, q.moves);
                    }
                }
                _ => return Ok(Some(p)),
            }
        }
    }

    /// Reads blocks until some position is pending or the blocks end.
    fn load(&mut self) -> Result<()> {
        while self.pending.is_empty() && !self.done {
            let Some(b) = self.shapes.next(self.blocks)? else {
                self.done = true;
                if self.matched != self.rows {
                    return Err(bad(
                        "game_refs",
                        format!(
                            "{} reference chunks are keyed by no entry block",
                            self.rows - self.matched
                        ),
                    ));
                }
                break;
            };
            let Some(row) = self.chunk_of(b.key)? else {
                continue;
            };
            self.matched += 1;
            self.pending = positions_of(&b, &row).map_err(|e| e.in_file(&self.file.path))?;
        }
        Ok(())
    }

    fn chunk_of(&self, key: u64) -> Result<Option<Vec<EntryRefs>>> {
        let Some(refs) = self.refs else {
            return Ok(None);
        };
        read_chunk(refs, key).map_err(|e| e.in_file(&self.file.path))
    }
}

/// The positions of a block with references, from its chunk: per key, the moves with games
/// (entries that share a key merged).
fn positions_of(b: &BlockShape, chunk: &[EntryRefs]) -> Result<VecDeque<PosRefs>> {
    let at = format!("reference chunk {:016x}", b.key);
    if chunk.len() != b.entries.len() {
        return Err(bad(
            at,
            format!(
                "{} entries, its block holds {}",
                chunk.len(),
                b.entries.len()
            ),
        ));
    }
    let mut out: VecDeque<PosRefs> = VecDeque::new();
    for (i, ((key, codes), lists)) in b.entries.iter().zip(chunk).enumerate() {
        if codes.len() != lists.len() {
            return Err(bad(
                at,
                format!(
                    "entry {i}: {} move lists, the entry has {} moves",
                    lists.len(),
                    codes.len()
                ),
            ));
        }
        let moves: Vec<(u16, Vec<u32>)> = codes
            .iter()
            .zip(lists)
            .filter(|(_, l)| !l.is_empty())
            .map(|(c, l)| (*c, l.clone()))
            .collect();
        if moves.is_empty() {
            continue;
        }
        match out.back_mut() {
            Some(p) if p.key == *key => merge_moves(p, moves),
            _ => out.push_back(PosRefs { key: *key, moves }),
        }
    }
    Ok(out)
}

/// Adds the moves of another entry with `p`'s key (a key shared by two positions).
fn merge_moves(p: &mut PosRefs, moves: Vec<(u16, Vec<u32>)>) {
    p.moves.extend(moves);
    p.moves.sort_by_key(|m| m.0);
    p.moves.dedup_by_key(|m| m.0);
}

/// Error for damaged game-reference data at `what`.
fn bad(what: impl std::fmt::Display, reason: impl std::fmt::Display) -> Error {
    super::gamestore::bad(what, reason)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn block(key: u64, entries: &[(u64, &[u16])]) -> BlockShape {
        BlockShape {
            key,
            entries: entries.iter().map(|(k, c)| (*k, c.to_vec())).collect(),
        }
    }

    fn refs(key: u64, moves: &[(u16, &[u32])]) -> PosRefs {
        PosRefs {
            key,
            moves: moves.iter().map(|(c, n)| (*c, n.to_vec())).collect(),
        }
    }

    /// References zip onto the entries that hold their positions and moves: an entry without
    /// games gets empty lists, a block without any gets no chunk, positions and moves the
    /// blocks lack are left out (and counted), a key shared by entries across blocks reaches
    /// each; read back, the chunks give the references the blocks hold.
    #[test]
    fn references_zip_onto_the_entries_that_hold_them() {
        let blocks = [
            block(1, &[(1, &[10, 20]), (3, &[5])]),
            block(3, &[(3, &[7]), (8, &[1])]),
            block(9, &[(9, &[2])]),
        ];
        let given = vec![
            refs(1, &[(10, &[5, 2]), (30, &[1])]),
            refs(2, &[(1, &[0])]),
            refs(3, &[(5, &[4]), (7, &[3])]),
            refs(10, &[(1, &[6])]),
        ];
        let mut queue: VecDeque<BlockShape> = blocks
            .iter()
            .map(|b| BlockShape {
                key: b.key,
                entries: b.entries.clone(),
            })
            .collect();
        let mut next_block = || Ok(queue.pop_front());
        let mut chunks: Vec<(u64, Vec<u8>)> = Vec::new();
        let mut put = |k: u64, v: Vec<u8>| {
            chunks.push((k, v));
            Ok(())
        };
        let mut z = Zipper::new(7);
        for p in given {
            z.take(p, &mut next_block, &mut put).unwrap();
        }
        let (written, orphans) = z.finish(&mut next_block, &mut put).unwrap();
        assert_eq!((written, orphans), (2, 2));
        assert_eq!(chunks.iter().map(|c| c.0).collect::<Vec<_>>(), [1, 3]);
        let decoded: Vec<Vec<EntryRefs>> = chunks
            .iter()
            .map(|(_, b)| refblock::decode_chunk(b).unwrap())
            .collect();
        assert_eq!(decoded[0], vec![vec![vec![5, 2], vec![]], vec![vec![4]]]);
        assert_eq!(decoded[1], vec![vec![vec![3]], vec![vec![]]]);
        let back: Vec<PosRefs> = blocks[..2]
            .iter()
            .zip(&decoded)
            .flat_map(|(b, c)| positions_of(b, c).unwrap())
            .collect();
        assert_eq!(
            back,
            vec![
                refs(1, &[(10, &[5, 2])]),
                refs(3, &[(5, &[4])]),
                refs(3, &[(7, &[3])]),
            ]
        );
        // A chunk unlike its block is damage.
        assert!(positions_of(&blocks[2], &decoded[0]).is_err());
        assert!(positions_of(&blocks[1], &decoded[0]).is_err());
    }
}

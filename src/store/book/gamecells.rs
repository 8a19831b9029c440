//! A file's moves that keep their cells as their games' (version-3 blocks, docs/FORMAT.md
//! §12.5): the block reader's source of those cells, the games the move's references name
//! (the block's reference chunk) and their facts (`game_facts`).

use std::cell::RefCell;
use std::sync::Arc;

use super::BookFile;
use super::cache::CachedBlock;
use super::refs::FactReader;
use crate::store::block::{GameCells, GameFact, cells_of_games};
use crate::store::error::Corruption;
use crate::store::facet::CellStat;
use crate::store::refblock::EntryRefs;

/// The cells of one file's moves that keep them as their games', read for one block at a
/// time (its reference chunk decoded once, kept until another block is asked for).
pub(crate) struct FileGameCells<'f> {
    file: &'f BookFile,
    chunk: RefCell<Option<(u64, Arc<Vec<EntryRefs>>)>>,
    facts: RefCell<FactReader<'f>>,
    /// The cached block read (its first key): its decoded chunk is kept with it.
    cached: Option<(u64, Arc<CachedBlock>)>,
}

impl BookFile {
    /// The source a view of this file's blocks reads its moves' games' cells from.
    pub(crate) fn game_cells(&self) -> FileGameCells<'_> {
        FileGameCells {
            file: self,
            chunk: RefCell::new(None),
            facts: RefCell::new(self.facts_reader()),
            cached: None,
        }
    }

    /// [`BookFile::game_cells`] for a view of the cached block `blk` (first key `first`),
    /// which keeps its decoded reference chunk for the next reads.
    pub(super) fn game_cells_cached(
        &self,
        first: u64,
        blk: &Arc<CachedBlock>,
    ) -> FileGameCells<'_> {
        FileGameCells {
            cached: Some((first, blk.clone())),
            ..self.game_cells()
        }
    }
}

impl FileGameCells<'_> {
    fn damaged(&self, block_key: u64, entry: usize, reason: String) -> Corruption {
        Corruption::Entry {
            block_key,
            index: entry,
            reason: format!("{reason} ({})", self.file.path.display()),
        }
    }
}

impl GameCells for FileGameCells<'_> {
    fn cells(
        &self,
        block_key: u64,
        entry: usize,
        mv_at: usize,
        mover_white: bool,
    ) -> Result<Vec<CellStat>, Corruption> {
        let bad = |reason: String| self.damaged(block_key, entry, reason);
        let mut chunk = self.chunk.borrow_mut();
        let kept = self
            .cached
            .as_ref()
            .filter(|(first, _)| *first == block_key)
            .and_then(|(_, b)| b.refs.get().cloned());
        if let Some(refs) = kept {
            *chunk = Some((block_key, refs));
        }
        if chunk.as_ref().is_none_or(|(k, _)| *k != block_key) {
            let refs = self
                .file
                .games
                .as_ref()
                .and_then(|t| t.refs.as_ref())
                .ok_or_else(|| {
                    bad("cells kept as the games' in a file without references".into())
                })?;
            let read = super::refchunk::read_chunk(refs, block_key)
                .map_err(|e| bad(format!("its block's references: {e}")))?
                .ok_or_else(|| {
                    bad("cells kept as the games' in a block without references".into())
                })?;
            let read = Arc::new(read);
            if let Some((first, blk)) = self.cached.as_ref().filter(|(f, _)| *f == block_key) {
                self.file.cache.keep_refs(*first, blk, read.clone());
            }
            *chunk = Some((block_key, read));
        }
        let Some((_, lists)) = chunk.as_ref() else {
            return Err(bad("its block's references unread".into()));
        };
        let numbers = lists
            .get(entry)
            .and_then(|e| e.get(mv_at))
            .ok_or_else(|| bad(format!("move {mv_at}: no reference list")))?;
        let mut facts = self.facts.borrow_mut();
        let mut games = Vec::with_capacity(numbers.len());
        for &n in numbers {
            let f = facts
                .get(n)
                .map_err(|e| bad(format!("move {mv_at}: facts of game {n}: {e}")))?;
            games.push(GameFact {
                cell: f.cell,
                white: f.white,
                black: f.black,
                result: f.result,
            });
        }
        Ok(cells_of_games(&games, mover_white))
    }
}

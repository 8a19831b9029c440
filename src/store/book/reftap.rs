//! References carried through a rewrite beside their entries: a file's reference chunks read
//! by the rewrite's own iteration of its blocks ([`BookIter`](super::iter)) and handed, entry
//! by entry, to the writer that keeps the same game store under new blocks (a store carried
//! alone: compact, a fold without new games). The writer logs them with its entries and
//! writes each new block's chunk from them (docs/FORMAT.md §15.4): the old blocks are not
//! decoded a second time and no move is generated to name a move by its code.
//!
//! A tap is armed on a file by the writer that carries it (`BookFile::arm_ref_tap`); the
//! first iteration of that file from its first block, leaving moves indexed, feeds it. The
//! writer trusts it only if it was fed from the first block to the last, ahead of every entry
//! the writer took, with every chunk matching its block; otherwise it aligns the references
//! the slow way (the old blocks decoded again: `refzip`).

use std::collections::VecDeque;
use std::sync::Mutex;

use super::refchunk::RefTable;
use crate::store::PositionCodec;
use crate::store::entry::Entry;
use crate::store::refblock::EntryRefs;

/// Entries with references fed and not yet taken past which the tap gives up: an iteration
/// feeds a batch of 32 blocks (a few thousand entries) ahead of the writer that takes them.
const MAX_QUEUED: usize = 1 << 16;

/// One entry of the tapped file with references: its identity, its moves as the iteration
/// gave them (value, whether the value is an index), and each move's game numbers.
struct TapEntry {
    key: u64,
    pos: Option<Vec<u8>>,
    moves: Vec<(u16, bool)>,
    lists: EntryRefs,
}

#[derive(Default)]
struct TapState {
    /// Fed from the file's first block.
    started: bool,
    /// Every block fed (the iteration reached the file's end).
    done: bool,
    /// The last key fed: entries up to it are in the queue.
    through: Option<u64>,
    /// Why the tap cannot be trusted (or is not wanted: then nothing more is fed).
    broken: Option<String>,
    queue: VecDeque<TapEntry>,
}

/// The references of one file, fed by an iteration and taken by a writer (shared by both).
#[derive(Default)]
pub(crate) struct RefTap {
    state: Mutex<TapState>,
}

impl RefTap {
    fn lock(&self) -> std::sync::MutexGuard<'_, TapState> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Whether an iteration should feed it (it was armed and is still wanted).
    pub(crate) fn wanted(&self) -> bool {
        self.lock().broken.is_none()
    }

    /// Marks the tap as not trusted (`why`); it is fed no more.
    pub(crate) fn spoil(&self, why: impl Into<String>) {
        let mut s = self.lock();
        if s.broken.is_none() {
            s.broken = Some(why.into());
        }
        s.queue.clear();
    }

    /// Feeds the next block of the file (blocks in key order): its key and its entries as
    /// the iteration decoded them, their lists from the file's `refs` (`game_refs`, if it
    /// has one). `first`: the iteration's first block.
    pub(crate) fn feed(
        &self,
        refs: Option<&RefTable>,
        block_key: u64,
        entries: &[Entry],
        first: bool,
    ) {
        if !self.wanted() {
            return;
        }
        match read_chunk(refs, block_key) {
            Ok(chunk) => self.feed_chunk(block_key, entries, chunk, first),
            Err(why) => self.spoil(why),
        }
    }

    /// [`RefTap::feed`] with the block's chunk read (`None`: the block has none).
    fn feed_chunk(
        &self,
        block_key: u64,
        entries: &[Entry],
        chunk: Option<Vec<EntryRefs>>,
        first: bool,
    ) {
        let mut fed = Vec::new();
        if let Some(chunk) = chunk {
            if chunk.len() != entries.len() {
                return self.spoil(format!(
                    "the chunk of block {block_key:016x} has {} entries, the block {}",
                    chunk.len(),
                    entries.len()
                ));
            }
            for (e, lists) in entries.iter().zip(chunk) {
                if lists.len() != e.moves.len() {
                    return self.spoil(format!(
                        "the chunk of block {block_key:016x} does not match its entry {:016x}",
                        e.key
                    ));
                }
                if lists.iter().all(|l| l.is_empty()) {
                    continue;
                }
                fed.push(TapEntry {
                    key: e.key,
                    pos: e.pos.clone(),
                    moves: e.moves.iter().map(|m| (m.mv, m.indexed)).collect(),
                    lists,
                });
            }
        }
        let mut s = self.lock();
        if s.broken.is_some() {
            return;
        }
        s.started |= first;
        s.queue.extend(fed);
        if let Some(last) = entries.last() {
            s.through = Some(last.key);
        }
        if s.queue.len() > MAX_QUEUED {
            // A writer that takes no entries (all pruned, or not the one fed) would let the
            // whole file's references pile up: the tap gives up instead.
            s.broken = Some(format!(
                "more than {MAX_QUEUED} of the file's entries fed and not taken"
            ));
            s.queue.clear();
        }
    }

    /// The iteration read the file's last block.
    pub(crate) fn end(&self) {
        self.lock().done = true;
    }

    /// The game numbers of each move of `e` (in its move order), the writer's next entry (in
    /// key order): from the tapped entry of the same position, empty when there is none.
    /// `None` when the tap cannot answer (it is then spoilt).
    pub(crate) fn take(&self, e: &Entry, codec: &dyn PositionCodec) -> Option<EntryRefs> {
        let mut s = self.lock();
        if s.broken.is_some() {
            return None;
        }
        if !s.started || (!s.done && s.through.is_none_or(|t| t < e.key)) {
            drop(s);
            self.spoil(format!(
                "the writer took the entry {:016x} before the iteration fed it",
                e.key
            ));
            return None;
        }
        // Entries before this one were dropped by the rewrite (pruned): their lists go.
        while s
            .queue
            .front()
            .is_some_and(|t| (t.key, t.pos.as_deref()) < (e.key, e.pos.as_deref()))
        {
            s.queue.pop_front();
        }
        let found = match s.queue.front() {
            Some(t) if t.key == e.key && t.pos == e.pos => s.queue.pop_front(),
            _ => None,
        };
        drop(s);
        let Some(t) = found else {
            return Some(vec![Vec::new(); e.moves.len()]);
        };
        match lists_for(e, t, codec) {
            Ok(lists) => Some(lists),
            Err(why) => {
                self.spoil(why);
                None
            }
        }
    }

    /// Whether every entry the writer took was answered from a tap fed from the file's first
    /// block to its last; `Err` says why not.
    pub(crate) fn trusted(&self) -> Result<(), String> {
        let s = self.lock();
        match (&s.broken, s.started, s.done) {
            (Some(why), _, _) => Err(why.clone()),
            (None, false, _) => Err("no iteration fed it from the file's first block".into()),
            (None, true, false) => Err("the iteration did not reach the file's end".into()),
            (None, true, true) => Ok(()),
        }
    }
}

/// The lists of `e`'s moves from the tapped entry `t` of the same position. The moves are
/// compared as the iteration gave them; if the writer's entry names them by code and the
/// tapped one by index (the entry was merged with another file's), the indices are decoded.
fn lists_for(e: &Entry, t: TapEntry, codec: &dyn PositionCodec) -> Result<EntryRefs, String> {
    let mut moves = t.moves;
    let e_indexed = e.moves.iter().any(|m| m.indexed);
    if !e_indexed && moves.iter().any(|m| m.1) {
        let idx: Vec<u8> = moves.iter().filter(|m| m.1).map(|m| m.0 as u8).collect();
        let pos = t.pos.as_deref().unwrap_or_default();
        let codes = codec
            .unindex_moves(pos, &idx)
            .map_err(|r| format!("key {:016x}: {r}", t.key))?;
        let mut codes = codes.into_iter();
        for m in moves.iter_mut().filter(|m| m.1) {
            *m = (codes.next().unwrap_or(u16::MAX), false);
        }
    }
    let mut out = vec![Vec::new(); e.moves.len()];
    for ((v, indexed), list) in moves.into_iter().zip(t.lists) {
        if list.is_empty() {
            continue;
        }
        match e
            .moves
            .iter()
            .position(|m| m.mv == v && m.indexed == indexed)
        {
            Some(i) => out[i] = list,
            None if e.moves.iter().any(|m| m.indexed != indexed) => {
                return Err(format!(
                    "key {:016x}: its moves are named otherwise than in the tapped file",
                    e.key
                ));
            }
            // The move was pruned: its list goes with it.
            None => {}
        }
    }
    Ok(out)
}

/// The decoded chunk of a block, `None` when the block has none (or the file has no
/// `game_refs`); `Err` says why it cannot be read.
fn read_chunk(refs: Option<&RefTable>, block_key: u64) -> Result<Option<Vec<EntryRefs>>, String> {
    match refs {
        Some(r) => super::refchunk::read_chunk(r, block_key).map_err(|e| e.to_string()),
        None => Ok(None),
    }
}

#[cfg(test)]
mod tests;

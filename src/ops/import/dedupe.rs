//! `--dedupe`'s decision for each parsed game, made by the coordinator in input order: a game
//! is a repeat if the book records its fingerprint, if an earlier game of the import had it,
//! or — for a game whose tags carry its id (brief §9) — if the book's game store or an earlier
//! game of the import holds a record of that id with the same result and moves
//! (`ops::gameident`): the same lichess game exported again by another tool counts once.

use std::collections::BTreeMap;

use super::worker::{ParsedGame, ParsedGames};
use crate::error::Result;
use crate::ops::gameident::{self, TaggedIdentity};
use crate::ops::gamerec::id_string;
use crate::store::Book;
use crate::store::book;
use crate::store::error::Corruption;
use crate::store::error::Error as StoreError;
use crate::store::fpset::FingerprintSet;

/// What the coordinator of a `--dedupe` import needs to decide, in input order, which parsed
/// games are repeats.
pub(super) struct Dedupe<'a> {
    /// Fingerprints (and tagged identities) of the games read so far.
    pub seen: &'a mut FingerprintSet,
    /// The games the book already counted (recorded by earlier `--dedupe` imports).
    pub known: Option<&'a book::GameIndex>,
    /// The book, whose game store is asked for the ids games carry in their tags.
    pub book: Option<&'a Book>,
    /// Parsed chunks that arrived before an earlier one: (worker, input, games).
    pub waiting: BTreeMap<u64, (usize, usize, ParsedGames)>,
    /// Sequence number of the next chunk sent, and of the next one to decide.
    pub next_seq: u64,
    pub next_decide: u64,
    /// The identities of the store's records of ids asked before (the book does not change
    /// while the import reads): an id many games carry is decoded once, not once a game.
    pub stored: StoredIdentities,
}

/// The identities of a book's stored records, by id, as asked: at most [`Self::LIMIT`] held
/// (then forgotten all at once and asked again).
#[derive(Default)]
pub(super) struct StoredIdentities {
    by_id: std::collections::HashMap<u64, Vec<u128>>,
    held: usize,
}

impl StoredIdentities {
    const LIMIT: usize = 1 << 16;

    /// Whether `book`'s game store holds a game of `t`'s id with `t`'s identity.
    fn holds(&mut self, book: &Book, t: TaggedIdentity) -> Result<bool> {
        if let Some(ids) = self.by_id.get(&t.id) {
            return Ok(ids.binary_search(&t.identity).is_ok());
        }
        let mut ids = stored_identities(book, t.id)?;
        ids.sort_unstable();
        let found = ids.binary_search(&t.identity).is_ok();
        if self.held + ids.len() + 1 > Self::LIMIT {
            self.by_id.clear();
            self.held = 0;
        }
        self.held += ids.len() + 1;
        self.by_id.insert(t.id, ids);
        Ok(found)
    }
}

/// Why a game is a repeat.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(super) enum Repeat {
    /// The book records its fingerprint.
    FingerprintInBook,
    /// The book stores a record of the id its tags carry, with its result and moves.
    IdInBook(u64),
    /// An earlier game of this import.
    Earlier,
}

impl Repeat {
    /// The skip log's detail.
    pub(super) fn detail(&self) -> String {
        match self {
            Repeat::FingerprintInBook => {
                "already counted in the book (the same tags, result and moves)".into()
            }
            Repeat::IdInBook(id) => format!(
                "the book already stores game {} with the same result and moves",
                id_string(*id)
            ),
            Repeat::Earlier => crate::ops::pgn::SkipReason::Duplicate.to_string(),
        }
    }
}

impl Dedupe<'_> {
    /// Whether `g` repeats a game of the book or of this import. Every game is remembered,
    /// repeat or not: a copy of a game the book knows by its fingerprint may come again later
    /// in the import spelled another way, known then only by its tagged identity (the book may
    /// have no store to ask).
    pub(super) fn judge(&mut self, g: &ParsedGame) -> Result<Option<Repeat>> {
        let fingerprint_in_book = match self.known {
            Some(k) => k.contains(g.fingerprint)?,
            None => false,
        };
        let id_in_book = match (self.book, g.tagged) {
            (Some(b), Some(t)) if !fingerprint_in_book => self.stored.holds(b, t)?,
            _ => false,
        };
        let new = remember(self.seen, g.fingerprint, g.tagged)?;
        Ok(if fingerprint_in_book {
            Some(Repeat::FingerprintInBook)
        } else if id_in_book {
            g.tagged.map(|t| Repeat::IdInBook(t.id))
        } else {
            (!new).then_some(Repeat::Earlier)
        })
    }
}

/// Adds a game's fingerprint and tagged identity to `seen`; false if either was there.
pub(super) fn remember(
    seen: &mut FingerprintSet,
    fingerprint: u128,
    tagged: Option<TaggedIdentity>,
) -> Result<bool> {
    let new_fingerprint = seen.insert(fingerprint)?;
    let new_identity = match tagged {
        Some(t) => seen.insert(t.identity)?,
        None => true,
    };
    Ok(new_fingerprint && new_identity)
}

/// The identities of the records `book`'s game store holds under `id`.
fn stored_identities(book: &Book, id: u64) -> Result<Vec<u128>> {
    book.games_by_id(id)?
        .iter()
        .map(|g| {
            gameident::of_stored(g).map_err(|reason| {
                StoreError::Corrupt(Corruption::GameStore {
                    at: format!("game {}", id_string(id)),
                    reason,
                })
                .into()
            })
        })
        .collect()
}

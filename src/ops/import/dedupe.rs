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
                "already counted in the book by an earlier --dedupe import".into()
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
    /// Whether `g` repeats a game of the book or of this import; a game that does not is
    /// remembered.
    pub(super) fn judge(&mut self, g: &ParsedGame) -> Result<Option<Repeat>> {
        if let Some(k) = self.known
            && k.contains(g.fingerprint)?
        {
            return Ok(Some(Repeat::FingerprintInBook));
        }
        if let (Some(b), Some(t)) = (self.book, g.tagged)
            && stores_identity(b, t)?
        {
            return Ok(Some(Repeat::IdInBook(t.id)));
        }
        Ok((!remember(self.seen, g.fingerprint, g.tagged)?).then_some(Repeat::Earlier))
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

/// Whether `book`'s game store holds a game of `t`'s id with `t`'s identity.
fn stores_identity(book: &Book, t: TaggedIdentity) -> Result<bool> {
    for g in book.games_by_id(t.id)? {
        let identity = gameident::of_stored(&g).map_err(|reason| {
            StoreError::Corrupt(Corruption::GameStore {
                at: format!("game {}", id_string(t.id)),
                reason,
            })
        })?;
        if identity == t.identity {
            return Ok(true);
        }
    }
    Ok(false)
}

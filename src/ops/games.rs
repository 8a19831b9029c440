//! The games a book stores, given back (docs/FORMAT.md §15): a game id parsed and its games
//! found over the book's files, as PGN.

use crate::error::{Error, Result};
use crate::ops::gamerec;
use crate::store::Book;

/// A game id as given (8 characters of `0-9A-Za-z`: a lichess id, or the id bookdb derived
/// from the game's fingerprint), or a usage error saying what an id looks like.
pub fn parse_game_id(s: &str) -> Result<u64> {
    gamerec::parse_id(s.trim()).ok_or_else(|| {
        Error::Usage(format!(
            "{s:?} is not a game id: ids are 8 characters of 0-9A-Za-z (a lichess game id, or the id in the `GameId` tag `bookdb pgn` prints)"
        ))
    })
}

/// The PGN of the stored games with this id (one game, or several that share the id, one
/// after the other); `None` when the book stores no game with it.
pub fn pgn_by_id(book: &Book, id: u64) -> Result<Option<String>> {
    let games = book.games_by_id(id)?;
    if games.is_empty() {
        return Ok(None);
    }
    let mut out = String::new();
    for g in &games {
        out.push_str(&pgn_of(g)?);
    }
    Ok(Some(out))
}

/// A stored game as PGN; a game whose stored fields do not make one is damage in the store.
fn pgn_of(g: &crate::store::gameblock::StoredGame) -> Result<String> {
    gamerec::to_pgn(g).map_err(|reason| {
        Error::Store(crate::store::error::Error::Corrupt(
            crate::store::error::Corruption::GameStore {
                at: format!("game {}", gamerec::id_string(g.id)),
                reason,
            },
        ))
    })
}

/// Writes every stored game as PGN in the store's order (oldest first, then by id), over all
/// the book's files: the same output for the same games however the book was built.
pub fn write_all_pgn(book: &Book, out: &mut dyn std::io::Write) -> Result<()> {
    for g in book.games_in_order()? {
        let pgn = pgn_of(&g?)?;
        out.write_all(pgn.as_bytes())
            .map_err(|e| Error::io("writing PGN", e))?;
    }
    Ok(())
}

/// Writes as PGN every stored game whose mainline reaches the position `target` (any ply, not
/// only the counted ones), in the store's order over all files; returns how many. A scan of the whole
/// store: each game's moves are decoded and replayed.
pub fn write_pgn_reaching(
    book: &Book,
    target: &shakmaty::Chess,
    out: &mut dyn std::io::Write,
) -> Result<u64> {
    use crate::chess::gamefields::{FEN_FIELD, MOVES_FIELD};
    use shakmaty::Position;
    let (key, packed) = crate::chess::key_and_pack(target);
    let mut n = 0;
    for g in book.games_in_order()? {
        let g = g?;
        let fen = String::from_utf8_lossy(g.fields.get(FEN_FIELD).map_or(&[][..], |v| v));
        let start = if fen.trim().is_empty() {
            shakmaty::Chess::default()
        } else {
            match crate::chess::parse_fen(fen.trim()) {
                Ok(p) => p,
                Err(_) => continue,
            }
        };
        let ranks = g.fields.get(MOVES_FIELD).map_or(&[][..], |v| v);
        let Ok(moves) = crate::chess::mainline::decode_mainline(&start, ranks) else {
            continue;
        };
        let mut pos = start;
        let mut reached = false;
        for m in moves.iter().map(Some).chain([None]) {
            let (k, p) = crate::chess::key_and_pack(&pos);
            if k == key && p.as_bytes() == packed.as_bytes() {
                reached = true;
                break;
            }
            match m {
                Some(m) => pos.play_unchecked(*m),
                None => break,
            }
        }
        if reached {
            out.write_all(pgn_of(&g)?.as_bytes())
                .map_err(|e| Error::io("writing PGN", e))?;
            n += 1;
        }
    }
    Ok(n)
}

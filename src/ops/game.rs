//! Which game a book holds. A book records it as its position codec's name in the meta table
//! (`codec`: `chess-packed-v1`, `othello-packed-v1`, `othello-packed-v1-canonical`;
//! docs/FORMAT.md), and [`Book::open`] refuses a codec of another name; so a command learns the
//! game of a book by opening it, and refuses to mix books of different games.

use std::path::Path;
use std::sync::Arc;

use crate::error::{Error, Result, StoreError};
use crate::store::{Book, CacheSizes, PositionCodec};

/// A game a book can hold.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum Game {
    #[default]
    Chess,
    /// Othello; `canonical` books store each position under its least symmetric image.
    Othello { canonical: bool },
}

impl Game {
    /// Every game, in the order [`Game::open`] tries them.
    pub const ALL: [Game; 3] = [
        Game::Chess,
        Game::Othello { canonical: false },
        Game::Othello { canonical: true },
    ];

    /// The store codec of this game's books.
    pub fn codec(self) -> Arc<dyn PositionCodec> {
        match self {
            Game::Chess => crate::chess_codec(),
            Game::Othello { canonical } => crate::othello_codec(canonical),
        }
    }

    pub fn is_othello(self) -> bool {
        matches!(self, Game::Othello { .. })
    }

    /// Opens the book at `path` with `open` under each game's codec until one fits: the
    /// book's game and the open book.
    fn open_with(
        path: &Path,
        open: impl Fn(&Path, Arc<dyn PositionCodec>) -> crate::store::error::Result<Book>,
    ) -> Result<(Game, Book)> {
        let mut last = None;
        for g in Game::ALL {
            match open(path, g.codec()) {
                Ok(b) => return Ok((g, b)),
                Err(StoreError::NotABook { reason, path })
                    if reason.starts_with("position codec") =>
                {
                    last = Some(StoreError::NotABook { reason, path });
                }
                Err(e) => return Err(e.into()),
            }
        }
        Err(last
            .map(Error::from)
            .unwrap_or_else(|| Error::Internal("no game to open a book with".into())))
    }

    /// Opens a book of any game: its game and the book.
    pub fn open(path: &Path) -> Result<(Game, Book)> {
        Self::open_with(path, Book::open)
    }

    /// [`Game::open`] with other cache sizes (`bookdb serve --cache-mib`).
    pub fn open_with_caches(path: &Path, caches: CacheSizes) -> Result<(Game, Book)> {
        Self::open_with(path, |p, codec| Book::open_with_caches(p, codec, caches))
    }

    /// [`Game::open`] for `migrate` (older format versions too).
    pub(crate) fn open_for_migration(path: &Path, caches: CacheSizes) -> Result<(Game, Book)> {
        Self::open_with(path, |p, codec| Book::open_for_migration(p, codec, caches))
    }

    /// The game of the book at `path`, `None` if there is no file there.
    pub fn of_book(path: &Path) -> Result<Option<Game>> {
        if !path.exists() {
            return Ok(None);
        }
        Ok(Some(Self::open(path)?.0))
    }

    /// Fails unless the book at `path` (if it exists) holds `self`: `doing` says what the
    /// caller was about to do, for the message.
    pub fn require_book(self, path: &Path, doing: &str) -> Result<()> {
        match Self::of_book(path)? {
            Some(g) if g != self => Err(mismatch(path, g, self, doing)),
            _ => Ok(()),
        }
    }
}

impl std::fmt::Display for Game {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(match self {
            Game::Chess => "chess",
            Game::Othello { canonical: false } => "Othello",
            Game::Othello { canonical: true } => "canonical Othello",
        })
    }
}

/// The error of a command asked to mix books (or a book and games) of different games.
pub(crate) fn mismatch(path: &Path, found: Game, wanted: Game, doing: &str) -> Error {
    Error::Usage(format!(
        "{} holds {found} positions; {doing} needs a book of {wanted} positions (books of different games, or canonical (--canonical) and non-canonical Othello books, never mix)",
        path.display()
    ))
}

/// The error of a chess-only command given a book of another game.
pub(crate) fn chess_only(path: &Path, found: Game, command: &str) -> Error {
    Error::Usage(format!(
        "{} holds {found} positions; {command} works on chess books only",
        path.display()
    ))
}

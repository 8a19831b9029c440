//! `bookdb pgn`: stored games given back as PGN, by id.

use std::process::ExitCode;

use super::args::BookArg;

#[derive(clap::Args)]
pub(crate) struct Args {
    #[command(flatten)]
    book: BookArg,
    /// Game ids: 8 characters of 0-9A-Za-z (a lichess game id, or the id bookdb derived
    /// from the game, which the PGN's `GameId` tag shows).
    #[arg(required_unless_present = "all")]
    ids: Vec<String>,
    /// Every stored game, oldest first (by date, then id, over all the book's files); with --fen or
    /// --moves, every stored game whose mainline reaches that position (a scan of the store).
    #[arg(long, conflicts_with = "ids")]
    all: bool,
    /// With --all: the position as a FEN.
    #[arg(long, requires = "all")]
    fen: Option<String>,
    /// With --all: the position after these moves (from the start or --fen), SAN or UCI.
    #[arg(long, requires = "all")]
    moves: Option<String>,
}

impl Args {
    pub(crate) fn run(self) -> anyhow::Result<ExitCode> {
        let ids = self
            .ids
            .iter()
            .map(|s| bookdb::ops::games::parse_game_id(s))
            .collect::<Result<Vec<u64>, _>>()?;
        let (_, book) = bookdb::ops::game::Game::open(&self.book.book)?;
        let mut missing = Vec::new();
        super::output::with_stdout(|out| {
            if self.all && (self.fen.is_some() || self.moves.is_some()) {
                let line =
                    bookdb::ops::position::chess_line(&bookdb::ops::position::PositionQuery {
                        fen: self.fen.as_deref(),
                        board: None,
                        line: self.moves.as_deref(),
                        names: bookdb::ops::position::Names::CLI,
                    })?;
                let pos = line.last().ok_or_else(|| anyhow::anyhow!("no position"))?;
                bookdb::ops::games::write_pgn_reaching(&book, pos, out)?;
                return Ok(());
            }
            if self.all {
                return Ok(bookdb::ops::games::write_all_pgn(&book, out)?);
            }
            for (id, given) in ids.into_iter().zip(&self.ids) {
                match bookdb::ops::games::pgn_by_id(&book, id)? {
                    Some(pgn) => out.write_all(pgn.as_bytes())?,
                    None => missing.push(given.clone()),
                }
            }
            Ok(())
        })?;
        for given in &missing {
            bookdb::stderr_line!(
                "bookdb: no game {given} in {} (it stores {} games)",
                self.book.book.display(),
                book.games_stored()
            );
        }
        Ok(if missing.is_empty() {
            ExitCode::SUCCESS
        } else {
            ExitCode::from(1)
        })
    }
}

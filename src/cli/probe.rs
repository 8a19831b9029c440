//! `bookdb probe`: the moves of one position (or of every FEN of a file) with their counts.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::ValueHint;

use bookdb::ops::game::Game;
use bookdb::ops::position::{self, Names, PositionQuery};

use super::args::{BookArg, JsonArg};
use super::output::with_stdout;

/// `--fens`: each line is the FEN of a position.
const FENS_NAMES: Names = Names {
    fen: "--fens",
    ..Names::CLI
};

#[derive(clap::Args)]
pub(crate) struct Args {
    #[command(flatten)]
    book: BookArg,
    /// Chess: the position as a FEN (default: the start position).
    #[arg(long, conflicts_with = "board")]
    fen: Option<String>,
    /// Othello: a board string, 64 characters a1, b1, …, h8 of '-', 'X' (black), 'O'
    /// (white), a space, then X or O to move.
    #[arg(long, allow_hyphen_values = true)]
    board: Option<String>,
    /// Moves from the start (or from --fen/--board): chess SAN or UCI ("e4 e5 Nf3"),
    /// Othello squares ("f5 d6 c3").
    #[arg(long)]
    moves: Option<String>,
    #[command(flatten)]
    pub(crate) json: JsonArg,
    /// Probe every FEN of FILE (one per line, `-` for stdin): one JSON line each, in
    /// order; a position that cannot be answered gets `{"fen":…,"error":{…}}` and the
    /// others are still probed (exit code of the worst error). Chess books.
    #[arg(long, value_name = "FILE", value_hint = ValueHint::FilePath,
          conflicts_with_all = ["fen", "board", "moves"])]
    fens: Option<PathBuf>,
    #[command(flatten)]
    filter: super::args::FilterArgs,
    /// Add the position's games per month (per year when --since/--until are years).
    #[arg(long)]
    history: bool,
}

impl Args {
    pub(crate) fn run(self) -> anyhow::Result<ExitCode> {
        let (game, book) = Game::open(&self.book.book)?;
        if let Some(list) = &self.fens {
            return probe_fens(&book, game, list);
        }
        let query = PositionQuery {
            fen: self.fen.as_deref(),
            board: self.board.as_deref(),
            line: self.moves.as_deref(),
            names: Names::CLI,
        };
        let filter = self.filter.filter();
        let by_year = matches!(
            filter.since.or(filter.until),
            Some(bookdb::store::facet::DateBound::Year(_))
        );
        let counting = bookdb::ops::facets::Counting {
            filter,
            history: self.history.then_some(by_year),
        };
        let answer = position::probe_counting(&book, game, &query, &counting)?;
        with_stdout(|w| {
            if self.json.json {
                serde_json::to_writer(&mut *w, &answer.json()?)?;
                w.write_all(b"\n")?;
            } else {
                w.write_all(answer.table()?.as_bytes())?;
            }
            Ok(())
        })?;
        Ok(ExitCode::SUCCESS)
    }
}

/// `probe --fens`: one JSON line per FEN, an error object for a position that cannot be
/// answered; the exit code of the worst error (0 if none).
fn probe_fens(book: &bookdb::store::Book, game: Game, list: &PathBuf) -> anyhow::Result<ExitCode> {
    let text = if list.as_os_str() == "-" {
        std::io::read_to_string(std::io::stdin())?
    } else {
        std::fs::read_to_string(list)
            .map_err(|e| anyhow::anyhow!("reading {}: {e}", list.display()))?
    };
    let mut worst = 0u8;
    with_stdout(|w| {
        for (fen, answer) in position::probe_fens(book, game, &text, FENS_NAMES)? {
            match answer {
                Ok(j) => serde_json::to_writer(&mut *w, &j)?,
                Err(e) => {
                    let code = super::output::exit_code(Some(e.kind()));
                    // Corruption (3) outranks the others (1, 4, 75).
                    if worst != 3 && (worst == 0 || code == 3) {
                        worst = code;
                    }
                    serde_json::to_writer(
                        &mut *w,
                        &serde_json::json!({ "fen": fen, "error": {
                            "kind": e.kind().as_str(),
                            "message": e.to_string(),
                            "exit_code": code,
                        }}),
                    )?;
                }
            }
            w.write_all(b"\n")?;
        }
        Ok(())
    })?;
    Ok(ExitCode::from(worst))
}

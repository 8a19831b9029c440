//! `bookdb games`: the top and recent games of a position (brief §9), as a table or JSON lines.

use std::process::ExitCode;

use bookdb::ops::position::{Names, PositionQuery, chess_line};
use bookdb::ops::topgames::{
    GameObject, LICHESS_GAMES, LICHESS_TOP, MASTERS_TOP, Wanted, position_games,
};

use super::args::{BookArg, JsonArg};
use super::output::with_stdout;

#[derive(clap::Args)]
pub(crate) struct Args {
    #[command(flatten)]
    book: BookArg,
    /// The position as a FEN (default: the start position).
    #[arg(long)]
    fen: Option<String>,
    /// Moves from the start (or from --fen): SAN or UCI ("e4 e5 Nf3").
    #[arg(long)]
    moves: Option<String>,
    /// Strongest games to list: at most 4 of rating group 2000 and above (with --masters: at
    /// most 15 of any rating).
    #[arg(long, value_name = "N")]
    top: Option<usize>,
    /// Newest games to list besides the top ones (at most 8 in all); none with --masters.
    #[arg(long, value_name = "N")]
    recent: Option<usize>,
    /// Choose as `/masters` does: the strongest games whatever their rating group.
    #[arg(long)]
    masters: bool,
    #[command(flatten)]
    filter: super::args::FilterArgs,
    #[command(flatten)]
    pub(crate) json: JsonArg,
}

impl Args {
    pub(crate) fn run(self) -> anyhow::Result<ExitCode> {
        let (_, book) = bookdb::ops::game::Game::open(&self.book.book)?;
        let line = chess_line(&PositionQuery {
            fen: self.fen.as_deref(),
            board: None,
            line: self.moves.as_deref(),
            names: Names::CLI,
        })?;
        let pos = line.last().ok_or_else(|| anyhow::anyhow!("no position"))?;
        let counting = bookdb::ops::facets::Counting {
            filter: self.filter.filter(),
            history: None,
        };
        counting.check_book(book.facets())?;
        let wanted = if self.masters {
            Wanted::Masters {
                top: self.top.unwrap_or(MASTERS_TOP),
            }
        } else {
            Wanted::Lichess {
                top: self.top.unwrap_or(LICHESS_TOP),
                recent: self.recent.unwrap_or(LICHESS_GAMES),
            }
        };
        let key = bookdb::chess::key_and_pack(pos).0;
        let games = position_games(&book, key, &counting.filter, wanted, &[])?;
        let lists = [("top", &games.top), ("recent", &games.recent)];
        with_stdout(|w| {
            if self.json.json {
                for (list, gs) in lists {
                    for g in gs.iter() {
                        let mut v = serde_json::to_value(g)?;
                        v["list"] = list.into();
                        serde_json::to_writer(&mut *w, &v)?;
                        w.write_all(b"\n")?;
                    }
                }
                return Ok(());
            }
            if games.top.is_empty() && games.recent.is_empty() {
                writeln!(
                    w,
                    "no stored game reached this position under these filters (the book stores {} games)",
                    book.games_stored()
                )?;
                return Ok(());
            }
            writeln!(
                w,
                "{:<7} {:<8} {:<6} {:<8} {:>7}  {:<30} {:<30}",
                "list", "id", "move", "date", "result", "white", "black"
            )?;
            for (list, gs) in lists {
                for g in gs.iter() {
                    writeln!(w, "{}", row(list, g))?;
                }
            }
            Ok(())
        })?;
        Ok(ExitCode::SUCCESS)
    }
}

fn row(list: &str, g: &GameObject) -> String {
    let player = |p: &bookdb::ops::topgames::Player| match p.rating {
        Some(r) => format!("{} ({r})", p.name),
        None => p.name.clone(),
    };
    let date = match (&g.month, g.year) {
        (Some(m), _) => m.clone(),
        (None, Some(y)) => y.to_string(),
        (None, None) => "?".into(),
    };
    let result = match g.winner {
        Some("white") => "1-0",
        Some("black") => "0-1",
        _ => "no win",
    };
    format!(
        "{list:<7} {:<8} {:<6} {date:<8} {result:>7}  {:<30} {:<30}",
        g.id,
        g.uci,
        player(&g.white),
        player(&g.black)
    )
}

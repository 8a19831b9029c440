//! `bookdb pack`: a chess position's Polyglot key, bit count and packed bytes.

use std::process::ExitCode;

use bookdb::chess::{PosState, to_hex};

use super::args::GameArg;
use super::output::with_stdout;

#[derive(clap::Args)]
pub(crate) struct Args {
    /// The position as a FEN.
    #[arg(long)]
    fen: String,
    /// The game (chess only: the packed format of a FEN).
    #[arg(long, value_enum, default_value_t = GameArg::Chess)]
    game: GameArg,
}

impl Args {
    pub(crate) fn run(self) -> anyhow::Result<ExitCode> {
        if self.game != GameArg::Chess {
            anyhow::bail!(
                "pack works on chess positions only (the Othello packing is docs/CONTRACT.md §7; `probe --json` shows an Othello position's key)"
            );
        }
        let pos = bookdb::chess::parse_fen(&self.fen)?;
        let s = PosState::from_chess(&pos);
        let (bytes, bits) = s.pack();
        with_stdout(|w| Ok(writeln!(w, "{:016x} {} {}", s.key(), bits, to_hex(&bytes))?))?;
        Ok(ExitCode::SUCCESS)
    }
}

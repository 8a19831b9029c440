//! `bookdb export`: a book as a Polyglot `.bin` (weights by `polyglot make-book`'s rule) or as
//! JSON lines.

use std::process::ExitCode;

use clap::ValueEnum;

use bookdb::ops::polyglot::{ExportFormat, OnlySide, PolyglotExportOptions};

use super::args::{BookArg, Output};

/// The values of `--format`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum Format {
    /// A Polyglot opening book (.bin).
    #[value(alias = "bin")]
    Polyglot,
    /// One JSON line per position, as `dump` prints them.
    #[value(alias = "json")]
    Jsonl,
    /// The engine evaluations as EPD: per position its deepest result's first line (ce, acd,
    /// acn, pv; side to move's view, SAN).
    Epd,
    /// The engine evaluations as lichess's evaluation export: JSON lines
    /// {"fen","evals":[{"knodes","depth","pvs":[{"cp"|"mate","line"}]}]}.
    Evals,
}

/// The values of `--weights`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
enum Weights {
    Games,
    Eval,
}

#[derive(clap::Args)]
pub(crate) struct Args {
    #[command(flatten)]
    book: BookArg,
    /// What to write.
    #[arg(long, value_enum)]
    format: Format,
    /// Output file, or - for stdout.
    #[arg(long, value_name = "FILE", value_hint = clap::ValueHint::FilePath)]
    out: String,
    /// Leave out moves played in fewer games (polyglot -min-game; default 1).
    #[arg(long)]
    min_games: Option<u64>,
    /// Leave out moves scoring below P percent for the mover (polyglot -min-score).
    #[arg(long, value_name = "P")]
    min_score: Option<f64>,
    /// Only positions with white to move (polyglot -only-white).
    #[arg(long, conflicts_with = "only_black")]
    only_white: bool,
    /// Only positions with black to move (polyglot -only-black).
    #[arg(long)]
    only_black: bool,
    /// Weight 1 for every move (polyglot -uniform).
    #[arg(long)]
    uniform: bool,
    /// Polyglot weights from the game counts (polyglot make-book's rule) or from the engine
    /// evaluations of the moves' resulting positions (docs/CONTRACT.md §10; moves without one
    /// are left out).
    #[arg(long, value_enum, default_value = "games")]
    weights: Weights,
    #[command(flatten)]
    filter: super::args::FilterArgs,
    /// (The summary goes to stderr when --out is -.)
    #[command(flatten)]
    pub(crate) output: Output,
}

impl Args {
    fn options(&self) -> anyhow::Result<PolyglotExportOptions> {
        let filtered = self.min_games.is_some()
            || self.min_score.is_some()
            || self.only_white
            || self.only_black
            || self.uniform
            || self.weights == Weights::Eval;
        if self.format != Format::Polyglot && filtered {
            anyhow::bail!(
                "--min-games, --min-score, --only-white, --only-black, --uniform and --weights apply to --format polyglot only"
            );
        }
        Ok(PolyglotExportOptions {
            min_games: self.min_games.unwrap_or(1),
            min_score: self.min_score.unwrap_or(0.0),
            only: if self.only_white {
                Some(OnlySide::White)
            } else if self.only_black {
                Some(OnlySide::Black)
            } else {
                None
            },
            uniform: self.uniform,
            filter: self.filter.filter(),
            weights_eval: self.weights == Weights::Eval,
        })
    }

    pub(crate) fn run(self) -> anyhow::Result<ExitCode> {
        let format = match self.format {
            Format::Polyglot => ExportFormat::Polyglot,
            Format::Jsonl => ExportFormat::Jsonl,
            Format::Epd => ExportFormat::Epd,
            Format::Evals => ExportFormat::Evals,
        };
        let summary =
            bookdb::ops::polyglot::export(&self.book.book, format, &self.out, &self.options()?)?;
        if self.out == "-" {
            self.output.eprint(&summary)?;
        } else {
            self.output.print(&summary)?;
        }
        Ok(ExitCode::SUCCESS)
    }
}

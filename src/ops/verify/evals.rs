//! `verify`'s checks of a file's engine evaluations (docs/FORMAT.md §13): every row decodes
//! (checksum, coding, the selector's canonical set), its key is its position's, and for a
//! chess book the position is legal and every line's moves are legal in turn.

use crate::error::{Corruption, StoreError};
use crate::ops::game::Game;
use crate::store::book::BookFile;

/// What [`check_evals`] found: the rows checked and the problems.
#[derive(Default)]
pub(super) struct EvalCheck {
    pub(super) evaluations: u64,
    pub(super) problems: Vec<String>,
}

impl EvalCheck {
    fn problem(&mut self, p: String) {
        self.problems.push(p);
    }
}

/// Checks every evaluation row of `file`.
pub(super) fn check_evals(file: &BookFile, game: Game) -> EvalCheck {
    let mut report = EvalCheck::default();
    let rows = match file.evals_iter() {
        Ok(r) => r,
        Err(e) => {
            report.problem(format!("evaluations: {e}"));
            return report;
        }
    };
    let mut last: Option<(u64, Vec<u8>)> = None;
    for row in rows {
        let pe = match row {
            Ok(pe) => pe,
            Err(e) => {
                // A row that does not decode: the rest may still be read. Anything else
                // (redb cannot read on) ends the check.
                let row_only = matches!(
                    &e,
                    StoreError::CorruptFile {
                        corruption: Corruption::Eval { .. },
                        ..
                    }
                );
                report.problem(format!("{e}"));
                if row_only {
                    continue;
                }
                break;
            }
        };
        report.evaluations += 1;
        let key = pe.key;
        let bad = |why: String| format!("evaluations of {key:016x}: {why}");
        match file.codec().key(&pe.pos) {
            Ok(k) if k == key => {}
            Ok(k) => report.problem(bad(format!("key mismatch (position's key {k:016x})"))),
            Err(e) => report.problem(bad(format!("position does not decode: {e}"))),
        }
        if last.as_ref().is_some_and(|l| *l >= (key, pe.pos.clone())) {
            report.problem(bad("rows out of order".into()));
        }
        if game == Game::Chess {
            match crate::ops::evals::chess_of(&pe.pos) {
                Ok(pos) => {
                    for r in &pe.results {
                        if let Err(why) = crate::ops::evals::check_result(&pos, r) {
                            report.problem(bad(why));
                        }
                    }
                }
                Err(e) => report.problem(bad(format!("not a legal position: {e}"))),
            }
        }
        last = Some((key, pe.pos));
    }
    report
}

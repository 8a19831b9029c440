//! `bookdb export --format epd` (one record per position with evaluations: its deepest
//! result's first line as `ce`, `acd`, `acn`, `pv` — side to move's view, SAN) and
//! `--format evals` (lichess's evaluation export shape, every kept result and line).

use std::io::Write;

use serde::Serialize;

use super::parse::score_ce;
use super::{Castling, chess_of, line_san, line_uci, white_view};
use crate::error::{Error, Result};
use crate::store::Book;
use crate::store::eval::Score;

/// The EPD record of a result of the position `pos` (four-field FEN `fen4`).
pub fn epd_record(pos: &shakmaty::Chess, fen4: &str, r: &crate::store::eval::EvalResult) -> String {
    let line = &r.lines[0];
    let ce = score_ce(white_view(pos, line.score));
    let pv = line_san(pos, &line.moves).join(" ");
    format!(
        "{fen4} ce {ce}; acd {}; acn {}; pv {pv};",
        r.depth,
        r.knodes.saturating_mul(1000)
    )
}

#[derive(Serialize)]
struct LichessPv {
    #[serde(skip_serializing_if = "Option::is_none")]
    cp: Option<i32>,
    #[serde(skip_serializing_if = "Option::is_none")]
    mate: Option<i32>,
    line: String,
}

#[derive(Serialize)]
struct LichessEval {
    pvs: Vec<LichessPv>,
    knodes: u64,
    depth: u32,
}

#[derive(Serialize)]
struct LichessLine {
    fen: String,
    evals: Vec<LichessEval>,
}

/// Writes every position's evaluations as EPD (`lichess`: false) or as lichess's JSON lines;
/// returns how many positions were written.
pub fn export_evals(book: &Book, out: &mut dyn Write, lichess: bool) -> Result<u64> {
    let mut n = 0;
    for pe in book.evals_iter()? {
        let pe = pe?;
        let pos = chess_of(&pe.pos)?;
        let fen4 = crate::chess::PosState::unpack(&pe.pos)?.fen();
        let text = if lichess {
            let l = LichessLine {
                fen: fen4,
                evals: pe
                    .results
                    .iter()
                    .map(|r| LichessEval {
                        pvs: r
                            .lines
                            .iter()
                            .map(|l| {
                                let (cp, mate) = match l.score {
                                    Score::Cp(c) => (Some(c), None),
                                    Score::Mate(m) => (None, Some(m)),
                                };
                                LichessPv {
                                    cp,
                                    mate,
                                    line: line_uci(&pos, &l.moves, Castling::KingTakesRook)
                                        .join(" "),
                                }
                            })
                            .collect(),
                        knodes: r.knodes,
                        depth: r.depth,
                    })
                    .collect(),
            };
            serde_json::to_string(&l).map_err(|e| Error::Internal(e.to_string()))?
        } else {
            match pe.results.first() {
                Some(r) => epd_record(&pos, &fen4, r),
                None => continue,
            }
        };
        out.write_all(text.as_bytes())
            .and_then(|()| out.write_all(b"\n"))
            .map_err(|e| Error::io("writing evaluations", e))?;
        n += 1;
    }
    Ok(n)
}

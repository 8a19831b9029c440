//! Reading evaluations: one EPD record (`ce`, `acd`, `acn`, `pv`, `bm`; scores from the side
//! to move, SAN moves) or one line of lichess's evaluation export (JSON; scores from White,
//! UCI moves), each into a position and its results (docs/CONTRACT.md §10). Never panics; a
//! line that cannot be read is an error saying why.

use shakmaty::{Chess, Position};

use super::{line_codes, parse_uci, white_view};
use crate::chess::parse_fen;
use crate::store::eval::{EvalLine, EvalResult, MAX_CP, MAX_LINES, MAX_MATE, Score};

/// EPD's score of a mate for the side to move: `MATE_CE` − plies (`ce`, docs/CONTRACT.md §10).
pub const MATE_CE: i32 = 32767;

/// A position read from a line and its results.
#[derive(Debug)]
pub struct Parsed {
    pub pos: Chess,
    pub results: Vec<EvalResult>,
}

/// What a line holds: an EPD record or a lichess JSON line, by its first character.
pub fn parse_line(line: &str, engine: &str) -> Result<Parsed, String> {
    let t = line.trim();
    if t.starts_with('{') {
        parse_lichess(t)
    } else {
        parse_epd(t, engine)
    }
}

/// Splits an EPD's operations: `op arg arg; op "quoted; arg"; …`.
fn epd_ops(text: &str) -> Result<Vec<(String, Vec<String>)>, String> {
    let mut ops = Vec::new();
    let mut cur: Vec<String> = Vec::new();
    let mut word = String::new();
    let mut chars = text.chars();
    let flush_word = |word: &mut String, cur: &mut Vec<String>| {
        if !word.is_empty() {
            cur.push(std::mem::take(word));
        }
    };
    while let Some(c) = chars.next() {
        match c {
            '"' => {
                let mut q = String::new();
                loop {
                    match chars.next() {
                        Some('"') => break,
                        Some(ch) => q.push(ch),
                        None => return Err("unterminated string".into()),
                    }
                }
                cur.push(q);
            }
            ';' => {
                flush_word(&mut word, &mut cur);
                if let Some((op, args)) = cur.split_first() {
                    ops.push((op.clone(), args.to_vec()));
                }
                cur.clear();
            }
            c if c.is_whitespace() => flush_word(&mut word, &mut cur),
            c => word.push(c),
        }
    }
    flush_word(&mut word, &mut cur);
    if !cur.is_empty() {
        return Err(format!("operation {:?} without its ';'", cur[0]));
    }
    Ok(ops)
}

/// `ce` (side to move's centipawns, or `MATE_CE` − plies) as a score from the side to move.
pub fn ce_score(ce: i64) -> Result<Score, String> {
    let mate_zone = i64::from(MATE_CE) - 2 * i64::from(MAX_MATE);
    if ce.abs() > i64::from(MATE_CE) {
        return Err(format!("ce {ce} out of range"));
    }
    if ce >= mate_zone {
        let plies = i64::from(MATE_CE) - ce;
        if plies == 0 {
            return Err("ce says the side to move is mated: no line to keep".into());
        }
        return Ok(Score::Mate(((plies + 1) / 2) as i32));
    }
    if ce <= -mate_zone {
        let plies = ce + i64::from(MATE_CE);
        if plies == 0 {
            return Err("ce says the side to move is mated: no line to keep".into());
        }
        return Ok(Score::Mate(-((plies + 1) / 2) as i32));
    }
    if ce.abs() > i64::from(MAX_CP) {
        return Err(format!("ce {ce} out of range"));
    }
    Ok(Score::Cp(ce as i32))
}

/// The `ce` of a score from the side to move (inverse of [`ce_score`]: mate in n is
/// 2n − 1 plies, mated in n is 2n).
pub fn score_ce(s: Score) -> i32 {
    match s {
        Score::Cp(c) => c,
        Score::Mate(m) if m > 0 => MATE_CE - (2 * m - 1),
        Score::Mate(m) => -MATE_CE + 2 * (-m),
    }
}

fn parse_epd(t: &str, engine: &str) -> Result<Parsed, String> {
    let mut fields = t.splitn(5, char::is_whitespace);
    let fen: Vec<&str> = fields.by_ref().take(4).collect();
    if fen.len() < 4 {
        return Err("not an EPD record (fewer than four position fields)".into());
    }
    let pos = parse_fen(&fen.join(" ")).map_err(|e| e.to_string())?;
    let ops = epd_ops(fields.next().unwrap_or(""))?;
    let get = |name: &str| ops.iter().find(|(op, _)| op == name).map(|(_, a)| a);
    let int = |name: &str| -> Result<Option<i64>, String> {
        match get(name).and_then(|a| a.first()) {
            Some(v) => v
                .parse::<i64>()
                .map(Some)
                .map_err(|_| format!("{name} {v:?} is not an integer")),
            None => Ok(None),
        }
    };
    let ce = int("ce")?.ok_or("no ce (the score) in the record")?;
    let score = white_view(&pos, ce_score(ce)?);
    let depth = int("acd")?.unwrap_or(0);
    let nodes = int("acn")?.unwrap_or(0);
    let san = |p: &Chess, s: &str| crate::chess::parse_move(p, s);
    let moves: Vec<&str> = match (get("pv"), get("bm")) {
        (Some(pv), _) if !pv.is_empty() => pv.iter().map(String::as_str).collect(),
        (_, Some(bm)) if !bm.is_empty() => vec![bm[0].as_str()],
        _ => return Err("no pv or bm (the line) in the record".into()),
    };
    let codes = line_codes(&pos, &moves, san)?;
    let result = EvalResult {
        depth: u32::try_from(depth).map_err(|_| format!("acd {depth} out of range"))?,
        knodes: u64::try_from(nodes).map_err(|_| format!("acn {nodes} out of range"))? / 1000,
        engine: engine.to_string(),
        lines: vec![EvalLine {
            score,
            moves: codes,
        }],
    };
    super::check_result(&pos, &result)?;
    Ok(Parsed {
        pos,
        results: vec![result],
    })
}

#[derive(serde::Deserialize)]
struct LichessLine {
    fen: String,
    evals: Vec<LichessEval>,
}

#[derive(serde::Deserialize)]
struct LichessEval {
    #[serde(default)]
    knodes: u64,
    depth: u32,
    pvs: Vec<LichessPv>,
}

#[derive(serde::Deserialize)]
struct LichessPv {
    cp: Option<i64>,
    mate: Option<i64>,
    line: String,
}

fn parse_lichess(t: &str) -> Result<Parsed, String> {
    let l: LichessLine = serde_json::from_str(t).map_err(|e| format!("not lichess JSON: {e}"))?;
    let pos = parse_fen(&l.fen).map_err(|e| e.to_string())?;
    if l.evals.is_empty() {
        return Err("no evals".into());
    }
    let mut results = Vec::with_capacity(l.evals.len());
    for e in l.evals {
        if e.pvs.is_empty() || e.pvs.len() > MAX_LINES {
            return Err(format!("{} pvs (1 to {MAX_LINES} allowed)", e.pvs.len()));
        }
        let mut lines = Vec::with_capacity(e.pvs.len());
        for pv in e.pvs {
            let score = match (pv.cp, pv.mate) {
                (Some(c), None) if c.abs() <= i64::from(MAX_CP) => Score::Cp(c as i32),
                (None, Some(m)) if m != 0 && m.abs() <= i64::from(MAX_MATE) => {
                    Score::Mate(m as i32)
                }
                _ => return Err("a pv needs one of cp or mate, in range".into()),
            };
            let moves: Vec<&str> = pv.line.split_whitespace().collect();
            if moves.is_empty() {
                return Err("a pv without moves".into());
            }
            let moves = line_codes(&pos, &moves, parse_uci)?;
            lines.push(EvalLine { score, moves });
        }
        let r = EvalResult {
            depth: e.depth,
            knodes: e.knodes,
            engine: String::new(),
            lines,
        };
        super::check_result(&pos, &r)?;
        results.push(r);
    }
    if pos.legal_moves().is_empty() {
        return Err("the game is over in this position".into());
    }
    Ok(Parsed { pos, results })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ce_round_trips_mates_and_centipawns() {
        for s in [
            Score::Cp(0),
            Score::Cp(-250),
            Score::Mate(1),
            Score::Mate(7),
            Score::Mate(-1),
            Score::Mate(-12),
        ] {
            assert_eq!(ce_score(i64::from(score_ce(s))).unwrap(), s);
        }
        assert_eq!(score_ce(Score::Mate(1)), 32766);
        assert_eq!(score_ce(Score::Mate(-1)), -32765);
        assert!(ce_score(32767).is_err());
    }

    #[test]
    fn epd_with_black_to_move_is_turned_to_white() {
        let p = parse_line(
            "rnbqkbnr/pppppppp/8/8/4P3/8/PPPP1PPP/RNBQKBNR b KQkq - ce 35; acd 20; acn 123456; pv e5 Nf3;",
            "sf",
        )
        .unwrap();
        let r = &p.results[0];
        assert_eq!((r.depth, r.knodes), (20, 123));
        assert_eq!(r.lines[0].score, Score::Cp(-35));
        assert_eq!(r.lines[0].moves.len(), 2);
    }

    #[test]
    fn lichess_line_with_castling_as_king_takes_rook() {
        let p = parse_line(
            r#"{"fen":"r1bqkbnr/pppp1ppp/2n5/4p3/2B1P3/5N2/PPPP1PPP/RNBQK2R w KQkq -","evals":[{"knodes":100,"depth":22,"pvs":[{"cp":30,"line":"e1h1 g8f6"},{"mate":-3,"line":"d2d3"}]}]}"#,
            "",
        )
        .unwrap();
        assert_eq!(p.results[0].lines.len(), 2);
        assert_eq!(p.results[0].lines[0].moves[0], 0x0184 /* e1g1 */);
        for bad in [
            "",
            "{",
            r#"{"fen":"x","evals":[]}"#,
            "8/8/8/8/8/8/8/8 w - - ce 1;",
            "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - ce 1; pv e5;",
            "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - pv e4;",
            "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq - ce 1; pv e4",
        ] {
            assert!(parse_line(bad, "").is_err(), "{bad}");
        }
    }
}

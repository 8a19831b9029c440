//! Opening names: the CC0 lichess chess-openings table, embedded, looked up by position.
//!
//! Each line of `openings/*.tsv` (ECO, name, SAN moves from the start) names the position its
//! moves reach. The table is built once, on first use (~3,800 replays, a few milliseconds), and
//! keyed by the position's Polyglot key; a hit is confirmed on the four-field FEN, so a key
//! collision can never name the wrong position. When several lines reach the same position
//! (transpositions), the first in file order (`a.tsv` … `e.tsv`) names it.

use std::collections::HashMap;
use std::sync::OnceLock;

use serde::Serialize;
use shakmaty::san::San;
use shakmaty::{Chess, Position};

use super::packed::PosState;
use super::position::polyglot_key;

const TABLES: [&str; 5] = [
    include_str!("openings/a.tsv"),
    include_str!("openings/b.tsv"),
    include_str!("openings/c.tsv"),
    include_str!("openings/d.tsv"),
    include_str!("openings/e.tsv"),
];

/// An opening's ECO code and name, as the lichess explorer gives them.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Opening {
    pub eco: String,
    pub name: String,
}

struct Named {
    fen: String,
    opening: Opening,
}

fn table() -> &'static HashMap<u64, Vec<Named>> {
    static TABLE: OnceLock<HashMap<u64, Vec<Named>>> = OnceLock::new();
    TABLE.get_or_init(|| build(&TABLES))
}

/// Replays every line of `tables`; lines that do not replay (none in the shipped data; the
/// unit tests check) are left out.
fn build(tables: &[&str]) -> HashMap<u64, Vec<Named>> {
    let mut map: HashMap<u64, Vec<Named>> = HashMap::new();
    for text in tables {
        for line in text.lines().skip(1) {
            let Some((opening, pos)) = parse_line(line) else {
                continue;
            };
            let fen = PosState::from_chess(&pos).fen();
            let slot = map.entry(polyglot_key(&pos)).or_default();
            if !slot.iter().any(|n| n.fen == fen) {
                slot.push(Named { fen, opening });
            }
        }
    }
    map
}

/// One TSV line: the opening and the position its moves reach; `None` if it does not parse or
/// replay.
fn parse_line(line: &str) -> Option<(Opening, Chess)> {
    let mut cols = line.split('\t');
    let (eco, name, pgn) = (cols.next()?, cols.next()?, cols.next()?);
    let mut pos = Chess::default();
    for tok in pgn.split_whitespace() {
        if tok.ends_with('.') {
            continue;
        }
        let san: San = tok.parse().ok()?;
        let m = san.to_move(&pos).ok()?;
        pos.play_unchecked(m);
    }
    let opening = Opening {
        eco: eco.to_string(),
        name: name.to_string(),
    };
    Some((opening, pos))
}

/// One line of the table as shipped: ECO, name, the SAN moves (`1. e4 c5`) and the same
/// moves in UCI, in file order.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Line {
    pub eco: &'static str,
    pub name: &'static str,
    pub pgn: &'static str,
    pub uci: Vec<String>,
}

/// Every line of the table (built once, on first use; lines that do not replay are left out).
pub fn lines() -> &'static [Line] {
    static LINES: OnceLock<Vec<Line>> = OnceLock::new();
    LINES.get_or_init(|| {
        let mut out = Vec::new();
        for text in TABLES {
            for line in text.lines().skip(1) {
                let mut cols = line.split('\t');
                let (Some(eco), Some(name), Some(pgn)) = (cols.next(), cols.next(), cols.next())
                else {
                    continue;
                };
                let mut pos = Chess::default();
                let mut uci = Vec::new();
                let ok = pgn
                    .split_whitespace()
                    .filter(|t| !t.ends_with('.'))
                    .all(|tok| {
                        let Some(m) = tok.parse::<San>().ok().and_then(|s| s.to_move(&pos).ok())
                        else {
                            return false;
                        };
                        uci.push(m.to_uci(shakmaty::CastlingMode::Standard).to_string());
                        pos.play_unchecked(m);
                        true
                    });
                if ok {
                    out.push(Line {
                        eco,
                        name,
                        pgn,
                        uci,
                    });
                }
            }
        }
        out
    })
}

/// The name of `pos` itself, if the table names it.
pub fn name_of(pos: &Chess) -> Option<&'static Opening> {
    let named = table().get(&polyglot_key(pos))?;
    let fen = PosState::from_chess(pos).fen();
    named.iter().find(|n| n.fen == fen).map(|n| &n.opening)
}

/// The name of the last named position along a line: `line` holds the positions from the
/// first to the current one; the current one's own name wins.
pub fn name_along<'a>(
    line: impl DoubleEndedIterator<Item = &'a Chess>,
) -> Option<&'static Opening> {
    line.rev().find_map(name_of)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::chess::tests_support::play;

    #[test]
    fn every_shipped_line_replays() {
        let mut lines = 0;
        for text in TABLES {
            for line in text.lines().skip(1) {
                assert!(parse_line(line).is_some(), "does not replay: {line}");
                lines += 1;
            }
        }
        assert!(lines > 3_000, "{lines} lines");
    }

    #[test]
    fn names_known_positions() {
        let sicilian = name_of(&play(&["e4", "c5"])).unwrap();
        assert_eq!(
            (sicilian.eco.as_str(), sicilian.name.as_str()),
            ("B20", "Sicilian Defense")
        );
        assert!(name_of(&Chess::default()).is_none());
        // A transposition is named by the position, not the move order.
        let a = name_of(&play(&["Nf3", "d5", "d4"])).map(|o| o.name.clone());
        let b = name_of(&play(&["d4", "d5", "Nf3"])).map(|o| o.name.clone());
        assert_eq!(a, b);
    }

    #[test]
    fn name_along_falls_back_to_the_last_named_position() {
        let line = [
            Chess::default(),
            play(&["e4"]),
            play(&["e4", "c5"]),
            play(&["e4", "c5", "a3"]),
        ];
        let o = name_along(line.iter()).unwrap();
        assert_eq!(o.eco, "B20");
        assert!(name_along([Chess::default()].iter()).is_none());
    }

    #[test]
    fn lines_carry_their_moves_in_uci() {
        let all = lines();
        assert!(all.len() > 3_000);
        let najdorf = all
            .iter()
            .find(|l| l.name == "Sicilian Defense: Najdorf Variation")
            .unwrap();
        assert_eq!(najdorf.eco, "B90");
        assert_eq!(najdorf.uci.len(), 10);
        assert_eq!(najdorf.uci[..2], ["e2e4", "c7c5"]);
        let castles = all.iter().find(|l| l.pgn.contains("O-O")).unwrap();
        assert!(
            castles.uci.iter().any(|u| u == "e1g1" || u == "e8g8"),
            "{castles:?}"
        );
    }

    #[test]
    fn bad_lines_are_left_out() {
        let map = build(&["eco\tname\tpgn\nA00\tBroken\t1. e5\nA00\tFine\t1. e4\nA00\tshort"]);
        assert_eq!(map.len(), 1);
    }
}

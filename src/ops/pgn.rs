//! Reading games from PGN (tags and mainline SAN only, with the line each game starts on) and
//! replaying them into (position, move) pairs under the counting rules of docs/CONTRACT.md §2.

use std::ops::ControlFlow;

use pgn_reader::{RawTag, SanPlus, Visitor};
use shakmaty::{Chess, Position};

use crate::chess::{PackedPos, encode_move, key_and_pack, parse_fen};

/// Result of a game by its `Result` tag.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[doc(hidden)]
pub enum GameResult {
    White,
    Black,
    Draw,
    Unknown,
}

impl GameResult {
    /// The result of a `Result` tag (`store::tags::parse_result`, which the game store's facts
    /// read it with too).
    pub(crate) fn from_tag(v: &[u8]) -> GameResult {
        match crate::store::tags::parse_result(v) {
            0 => GameResult::White,
            1 => GameResult::Draw,
            2 => GameResult::Black,
            _ => GameResult::Unknown,
        }
    }
}

/// The tags the importer needs, and the raw mainline.
#[derive(Clone, Debug, Default)]
#[doc(hidden)]
pub struct RawGame {
    /// 1-based line of the game's first tag (or first move for tagless games).
    pub line: u64,
    pub variant: Option<String>,
    pub fen: Option<String>,
    pub(crate) result: Option<Vec<u8>>,
    pub white_elo: Option<u32>,
    pub black_elo: Option<u32>,
    /// The facet tags (`UTCDate`, `Date`, `TimeControl`, `Event`), parsed as met.
    pub facets: crate::ops::facets::FacetTags,
    /// White, Black, Date, Round, Event: the identity used by `--dedupe`.
    pub(crate) ident: Vec<u8>,
    /// The tags a game store keeps ([`KEPT_TAGS`]) as met: per tag its
    /// index in that list, its value's length (varint) and its value.
    pub kept: Vec<u8>,
    /// The `GameId` tag (lichess exports carry the game's id in it).
    pub game_id_tag: Option<String>,
    pub sans: Vec<SanPlus>,
    /// Set if the PGN of this game could not be parsed (the game is skipped).
    pub error: Option<String>,
}

pub use crate::chess::gamefields::KEPT_TAGS;
/// Appends a tag to a game's kept tags (`RawGame::kept`) if it is one of [`KEPT_TAGS`].
fn keep_tag(kept: &mut Vec<u8>, name: &[u8], value: &[u8]) {
    if let Some(i) = KEPT_TAGS.iter().position(|t| t.as_bytes() == name) {
        kept.push(i as u8);
        crate::store::varint::put(kept, value.len() as u64);
        kept.extend_from_slice(value);
    }
}

/// Builds [`RawGame`]s, reusing the buffers of games handed back by
/// [`GameReader::recycle`](super::gamereader::GameReader::recycle).
#[derive(Default)]
pub(crate) struct RawVisitor {
    pub(crate) spare: Option<RawGame>,
}

use crate::store::tags::parse_elo;

/// Most moves (plies) of a mainline that are read: under FIDE's automatic draws (the 75-move
/// rule, fivefold repetition) no game lasts beyond 8,849 moves (17,697 plies), so a longer
/// movetext is no game; it is skipped as unreadable (with its `file:line`) without holding its
/// moves, which keeps a worker's memory bounded on a hostile single-line input.
pub(crate) const MAX_MAINLINE_PLIES: usize = 20_000;

impl Visitor for RawVisitor {
    type Tags = RawGame;
    type Movetext = RawGame;
    type Output = RawGame;

    fn begin_tags(&mut self) -> ControlFlow<RawGame, RawGame> {
        // A fresh game that keeps only the two big buffers of the spare one.
        let g = match self.spare.take() {
            Some(mut spare) => {
                spare.ident.clear();
                spare.sans.clear();
                spare.kept.clear();
                RawGame {
                    ident: spare.ident,
                    sans: spare.sans,
                    kept: spare.kept,
                    ..RawGame::default()
                }
            }
            None => RawGame::default(),
        };
        ControlFlow::Continue(g)
    }

    fn tag(&mut self, g: &mut RawGame, name: &[u8], value: RawTag<'_>) -> ControlFlow<RawGame> {
        let v = value.decode();
        keep_tag(&mut g.kept, name, &v);
        match name {
            b"Variant" => g.variant = Some(String::from_utf8_lossy(&v).trim().to_string()),
            b"FEN" => g.fen = Some(String::from_utf8_lossy(&v).trim().to_string()),
            b"GameId" => g.game_id_tag = Some(String::from_utf8_lossy(&v).into_owned()),
            b"Result" => g.result = Some(v.to_vec()),
            b"WhiteElo" => g.white_elo = parse_elo(&v),
            b"BlackElo" => g.black_elo = parse_elo(&v),
            b"UTCDate" => g.facets.utc_date = crate::ops::facets::parse_date(&v),
            b"TimeControl" => g.facets.speed = crate::ops::facets::parse_speed(&v),
            b"White" | b"Black" | b"Date" | b"Round" | b"Event" | b"Site" => {
                match name {
                    b"Date" => g.facets.date = crate::ops::facets::parse_date(&v),
                    b"Event" => g.facets.mode = crate::ops::facets::parse_mode(&v),
                    _ => {}
                }
                g.ident.extend_from_slice(name);
                g.ident.push(0);
                g.ident.extend_from_slice(&v);
                g.ident.push(0);
            }
            _ => {}
        }
        ControlFlow::Continue(())
    }

    fn begin_movetext(&mut self, g: RawGame) -> ControlFlow<RawGame, RawGame> {
        ControlFlow::Continue(g)
    }

    fn san(&mut self, g: &mut RawGame, san: SanPlus) -> ControlFlow<RawGame> {
        if g.sans.len() >= MAX_MAINLINE_PLIES {
            // Not held: a movetext of millions of moves would cost memory in proportion.
            g.error.get_or_insert_with(|| {
                format!(
                    "the mainline has more than {MAX_MAINLINE_PLIES} moves; no legal game is that long (the 75-move rule and fivefold repetition end every game within 17,697)"
                )
            });
            return ControlFlow::Continue(());
        }
        g.sans.push(san);
        ControlFlow::Continue(())
    }

    fn end_game(&mut self, g: RawGame) -> RawGame {
        g
    }
}

/// Why a game was not counted.
#[derive(Clone, Debug, PartialEq, Eq)]
#[doc(hidden)]
pub enum SkipReason {
    Variant(String),
    BadFen(String),
    IllegalMove {
        ply: usize,
        san: String,
    },
    MinRating,
    Duplicate,
    Unreadable(String),
    /// Othello: a move that is not legal (or no square) in its position.
    IllegalSquare {
        ply: usize,
        mv: String,
    },
    /// Othello: a WTHOR record or transcript line that does not decode.
    Corrupt(String),
    /// The game has no moves (only tags, or a result): nothing to count.
    NoMoves,
}

impl SkipReason {
    /// Short stable name used in summaries.
    #[doc(hidden)]
    pub fn kind(&self) -> &'static str {
        match self {
            SkipReason::Variant(_) => "variant",
            SkipReason::BadFen(_) => "bad-fen",
            SkipReason::IllegalMove { .. } => "illegal-move",
            SkipReason::MinRating => "min-rating",
            SkipReason::Duplicate => "duplicate",
            SkipReason::Unreadable(_) => "unreadable",
            SkipReason::IllegalSquare { .. } => "illegal-move",
            SkipReason::Corrupt(_) => "corrupt-record",
            SkipReason::NoMoves => "no-moves",
        }
    }
}

impl std::fmt::Display for SkipReason {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            SkipReason::Variant(v) => write!(f, "variant {v:?} is not standard chess"),
            SkipReason::BadFen(e) => write!(f, "unusable FEN tag: {e}"),
            SkipReason::IllegalMove { ply, san } => {
                let number = ply / 2 + 1;
                let dots = if ply % 2 == 0 { "." } else { "..." };
                write!(
                    f,
                    "illegal or unreadable move {number}{dots}{san} (ply {})",
                    ply + 1
                )
            }
            SkipReason::MinRating => write!(f, "a player is rated below --min-rating or unrated"),
            SkipReason::Duplicate => write!(f, "duplicate of an earlier game (--dedupe)"),
            SkipReason::Unreadable(e) => write!(f, "unreadable PGN: {e}"),
            SkipReason::IllegalSquare { ply, mv } => {
                write!(f, "illegal move {mv} (move {})", ply + 1)
            }
            SkipReason::Corrupt(e) => write!(f, "corrupt record: {e}"),
            SkipReason::NoMoves => write!(f, "the game has no moves"),
        }
    }
}

/// One counted (position, move) occurrence.
#[derive(Clone, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
#[doc(hidden)]
pub struct Pair {
    pub key: u64,
    pub pos: Vec<u8>,
    pub mv: u16,
}

/// A replayed game ready for aggregation.
#[derive(Clone, Debug)]
#[doc(hidden)]
pub struct CountedGame {
    // The import counts from its own replay (ops::import::worker); these are checked by the
    // unit tests of this reference path.
    #[cfg_attr(not(test), allow(dead_code))]
    pub(crate) result: GameResult,
    /// Distinct pairs of the first `max_ply` plies; `white_moved` tells the mover.
    pub pairs: Vec<(Pair, bool)>,
}

#[derive(Clone, Copy, Debug)]
pub struct CountRules {
    pub max_ply: usize,
    pub min_rating: Option<u32>,
    /// The facets the book keeps: a counted game's moves go to its cell with these facets
    /// (none: no cells).
    pub facets: crate::store::facet::FacetSet,
}

/// True if a `Variant` tag's value names standard chess (brief §2: other variants are skipped).
#[doc(hidden)]
pub fn is_standard_variant(v: &str) -> bool {
    let v = v.trim().to_ascii_lowercase();
    matches!(
        v.as_str(),
        "" | "standard" | "chess" | "normal" | "from position" | "fromposition" | "standard chess"
    )
}

/// One counted ply: the position before the move (key and packed form) and the move.
#[derive(Clone, Copy, Debug)]
#[doc(hidden)]
pub struct Ply {
    pub(crate) key: u64,
    pub(crate) pos: PackedPos,
    pub(crate) mv: u16,
    pub(crate) white_moved: bool,
}

/// Checks the game-level rules (unreadable, variant, rating); the start position if counted.
fn start_position(g: &RawGame, rules: &CountRules) -> Result<Chess, SkipReason> {
    if let Some(e) = &g.error {
        return Err(SkipReason::Unreadable(e.clone()));
    }
    if let Some(v) = &g.variant
        && !is_standard_variant(v)
    {
        return Err(SkipReason::Variant(v.clone()));
    }
    if let Some(min) = rules.min_rating
        && !(g.white_elo.is_some_and(|e| e >= min) && g.black_elo.is_some_and(|e| e >= min))
    {
        return Err(SkipReason::MinRating);
    }
    match g.fen.as_deref() {
        Some(fen) if !fen.is_empty() => {
            parse_fen(fen).map_err(|e| SkipReason::BadFen(e.to_string()))
        }
        _ => Ok(Chess::default()),
    }
}

/// Replays a game's whole mainline (every move must be legal) and writes the first
/// `max_ply` plies into `plies` (cleared first). Repeated (position, move) pairs are left in;
/// the aggregator counts each at most once per game.
#[doc(hidden)]
pub fn replay_into(
    g: &RawGame,
    rules: &CountRules,
    plies: &mut Vec<Ply>,
) -> Result<(), SkipReason> {
    replay_keeping(g, rules, plies, None).map(|_| ())
}

/// [`replay_into`], also keeping the whole mainline's moves in `moves` (cleared first) when
/// given; returns the game's start position.
pub fn replay_keeping(
    g: &RawGame,
    rules: &CountRules,
    plies: &mut Vec<Ply>,
    mut moves: Option<&mut Vec<shakmaty::Move>>,
) -> Result<Chess, SkipReason> {
    plies.clear();
    if let Some(m) = moves.as_deref_mut() {
        m.clear();
    }
    let start = start_position(g, rules)?;
    if g.sans.is_empty() {
        return Err(SkipReason::NoMoves);
    }
    let mut pos = start.clone();
    for (ply, san) in g.sans.iter().enumerate() {
        let m = match crate::chess::legal::fast_san_move(&pos, &san.san) {
            Some(m) => m,
            None => san_move(&pos, san.san).ok_or_else(|| SkipReason::IllegalMove {
                ply,
                san: san.to_string(),
            })?,
        };
        if ply < rules.max_ply {
            let (key, packed) = key_and_pack(&pos);
            plies.push(Ply {
                key,
                pos: packed,
                mv: encode_move(&m),
                white_moved: pos.turn().is_white(),
            });
        }
        if let Some(v) = moves.as_deref_mut() {
            v.push(m);
        }
        pos.play_unchecked(m);
    }
    Ok(start)
}

/// The legal move a SAN names. A move naming its square of departure in full (long algebraic:
/// `Qd8-d5`, `e4d5`, `Ng1xf3`) is matched whatever its capture mark says, as python-chess
/// matches it: the mark adds nothing to a move known by both its squares.
fn san_move(pos: &Chess, san: shakmaty::san::San) -> Option<shakmaty::Move> {
    use shakmaty::san::San;
    if let Ok(m) = san.to_move(pos) {
        return Some(m);
    }
    let mut other = san;
    match &mut other {
        San::Normal {
            file: Some(_),
            rank: Some(_),
            capture,
            ..
        } => *capture = !*capture,
        _ => return None,
    }
    other.to_move(pos).ok()
}

/// The result of a game by its tag.
#[doc(hidden)]
pub fn game_result(g: &RawGame) -> GameResult {
    g.result
        .as_deref()
        .map_or(GameResult::Unknown, GameResult::from_tag)
}

/// Replays a game's mainline and collects the pairs it counts, or says why it is skipped.
#[doc(hidden)]
pub fn replay(g: &RawGame, rules: &CountRules) -> Result<CountedGame, SkipReason> {
    let mut plies = Vec::new();
    replay_into(g, rules, &mut plies)?;
    let mut pairs: Vec<(Pair, bool)> = plies
        .iter()
        .map(|p| {
            (
                Pair {
                    key: p.key,
                    pos: p.pos.as_bytes().to_vec(),
                    mv: p.mv,
                },
                p.white_moved,
            )
        })
        .collect();
    // A game counts each (position, move) pair at most once.
    pairs.sort();
    pairs.dedup_by(|a, b| a.0 == b.0);
    Ok(CountedGame {
        result: game_result(g),
        pairs,
    })
}

/// The fingerprint of a game for `--dedupe` (stored in books; docs/FORMAT.md §4.6): xxh3-128
/// of its identity tags as [`RawGame::ident`] holds them (name, 0, value, 0 per tag, in the
/// order they appear), then the result tag's value, 0, the FEN tag's value, 0, and each
/// mainline move in SAN as written by shakmaty followed by a space.
#[doc(hidden)]
pub fn game_fingerprint(g: &RawGame) -> u128 {
    let mut h = xxhash_rust::xxh3::Xxh3::new();
    h.update(&g.ident);
    h.update(g.result.as_deref().unwrap_or_default());
    h.update(&[0]);
    h.update(g.fen.as_deref().unwrap_or_default().as_bytes());
    h.update(&[0]);
    // The moves written into one buffer (one allocation per game, not one per move).
    let mut text = Vec::with_capacity(g.sans.len() * 6);
    for s in &g.sans {
        s.append_ascii_to(&mut text);
        text.push(b' ');
    }
    h.update(&text);
    h.digest128()
}

/// The first game of a PGN text (tests of the modules that read games).
#[cfg(test)]
pub(crate) fn first_game(pgn: &str) -> RawGame {
    super::gamereader::GameReader::new(pgn.as_bytes())
        .next_game()
        .expect("PGN text reads")
        .expect("a game")
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::gamereader::GameReader;
    use std::io::{self, Read};

    /// A mainline of more moves than any legal game has is unreadable and its moves are not
    /// held; one at the limit is read whole.
    #[test]
    fn mainlines_past_the_longest_legal_game_are_unreadable_and_not_held() {
        let knights = |plies: usize| {
            let cycle = ["Nf3", "Nf6", "Ng1", "Ng8"];
            let moves: Vec<&str> = (0..plies).map(|i| cycle[i % 4]).collect();
            format!("[Event \"long\"]\n\n{} *\n", moves.join(" "))
        };
        let at = &games(&knights(MAX_MAINLINE_PLIES))[0];
        assert_eq!(at.error, None);
        assert_eq!(at.sans.len(), MAX_MAINLINE_PLIES);
        let past = &games(&knights(MAX_MAINLINE_PLIES + 1))[0];
        assert!(
            past.error
                .as_deref()
                .is_some_and(|e| e.contains("more than 20000 moves")),
            "{:?}",
            past.error
        );
        assert_eq!(past.sans.len(), MAX_MAINLINE_PLIES);
    }

    /// The fingerprint is stored in books (FORMAT §4.6): it must never change.
    #[test]
    fn game_fingerprint_golden_vector() {
        let g = &games(
            "[Event \"E\"]\n[Site \"S\"]\n[White \"W\"]\n[Black \"B\"]\n[Result \"1-0\"]\n\n1. e4 e5 2. Qh5 Nc6 3. Bc4 Nf6 4. Qxf7# 1-0\n",
        )[0];
        let mut h = xxhash_rust::xxh3::Xxh3::new();
        h.update(b"Event\0E\0Site\0S\0White\0W\0Black\0B\0" as &[u8]);
        h.update(b"1-0\0\0e4 e5 Qh5 Nc6 Bc4 Nf6 Qxf7# ");
        assert_eq!(game_fingerprint(g), h.digest128());
        assert_eq!(
            format!("{:032x}", game_fingerprint(g)),
            "d4bdcd7741824bb23d7ad56a308df162"
        );
    }

    fn games(pgn: &str) -> Vec<RawGame> {
        let mut r = GameReader::new(pgn.as_bytes());
        let mut out = Vec::new();
        while let Some(g) = r.next_game().unwrap() {
            out.push(g);
        }
        out
    }

    const RULES: CountRules = CountRules {
        max_ply: 100,
        min_rating: None,
        facets: crate::store::facet::FacetSet::NONE,
    };

    #[test]
    fn lines_and_tags() {
        let pgn = "[Event \"a\"]\n[Result \"1-0\"]\n[WhiteElo \"2400\"]\n\n1. e4 e5 (1... c5 2. Nf3) 2. Nf3 {c} 1-0\n\n\n[Event \"b\"]\n[Variant \"Crazyhouse\"]\n\n1. e4 *\n\n1. d4 d5 *\n";
        let g = games(pgn);
        assert_eq!(g.len(), 3);
        assert_eq!(g[0].line, 1);
        assert_eq!(g[1].line, 8);
        assert_eq!(g[2].line, 13);
        assert_eq!(g[0].sans.len(), 3);
        assert_eq!(g[0].white_elo, Some(2400));
        let c = replay(&g[0], &RULES).unwrap();
        assert_eq!(c.result, GameResult::White);
        assert_eq!(c.pairs.len(), 3);
        assert_eq!(replay(&g[1], &RULES).unwrap_err().kind(), "variant");
    }

    /// A reader that hands out a few bytes at a time, so the PGN reader refills its buffer in
    /// the middle of games.
    struct Trickle<'a>(&'a [u8]);

    impl Read for Trickle<'_> {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            let n = buf.len().min(self.0.len()).min(977);
            buf[..n].copy_from_slice(&self.0[..n]);
            self.0 = &self.0[n..];
            Ok(n)
        }
    }

    #[test]
    fn start_lines_over_long_inputs_with_recycled_games() {
        // Games of varying length (1 to 4 movetext lines), far more than the 64 KiB after which
        // counted bytes are dropped.
        let mut pgn = String::new();
        let mut starts = Vec::new();
        let mut line = 1u64;
        for i in 0..3000u64 {
            starts.push(line);
            pgn.push_str(&format!("[Event \"g{i}\"]\n[Result \"*\"]\n\n"));
            let rows = 1 + i % 4;
            for _ in 0..rows {
                pgn.push_str("1. Nf3 Nf6 2. Ng1 Ng8\n");
            }
            pgn.push_str("*\n\n");
            line += 3 + rows + 2;
        }
        assert!(pgn.len() > 3 << 16);
        let mut r = GameReader::new(Trickle(pgn.as_bytes()));
        let mut got = Vec::new();
        while let Some(g) = r.next_game().unwrap() {
            got.push((g.line, g.sans.len()));
            r.recycle(g);
        }
        let want: Vec<(u64, usize)> = starts
            .iter()
            .enumerate()
            .map(|(i, &l)| (l, 4 * (1 + i % 4)))
            .collect();
        assert_eq!(got, want);
    }

    #[test]
    fn illegal_and_repeats() {
        let g = games("1. Nf3 Nf6 2. Ng1 Ng8 3. Nf3 Nf6 4. Ng1 Ng8 *\n\n1. e4 e4 *\n");
        let c = replay(&g[0], &RULES).unwrap();
        // Plies 5-8 repeat the (position, move) pairs of plies 1-4.
        assert_eq!(c.pairs.len(), 4);
        let err = replay(&g[1], &RULES).unwrap_err();
        assert_eq!(
            err,
            SkipReason::IllegalMove {
                ply: 1,
                san: "e4".into()
            }
        );
        assert_eq!(err.to_string(), "illegal or unreadable move 1...e4 (ply 2)");
    }

    #[test]
    fn truncated_game_is_skipped() {
        let pgn = "[Event \"a\"]\n[White \"unterminated\n[Black \"b\"]\n\n1. e4 *\n\n[Event \"c\"]\n\n1. d4 *\n\n[Event \"trunc";
        let g = games(pgn);
        assert_eq!(g.len(), 3, "{g:?}");
        // pgn-reader ends a tag value at the line end; the game itself is fine.
        assert_eq!(replay(&g[0], &RULES).unwrap().pairs.len(), 1);
        assert_eq!(g[0].line, 1);
        assert_eq!(replay(&g[1], &RULES).unwrap().pairs.len(), 1);
        assert_eq!(g[1].line, 7);
        assert_eq!(replay(&g[2], &RULES).unwrap_err().kind(), "unreadable");
    }

    #[test]
    fn fen_start_and_crlf() {
        let pgn =
            "[SetUp \"1\"]\r\n[FEN \"4k3/8/8/8/8/8/4P3/4K3 w - - 0 1\"]\r\n\r\n1. e4 Kd7 *\r\n";
        let g = games(pgn);
        let c = replay(&g[0], &RULES).unwrap();
        assert_eq!(c.pairs.len(), 2);
        let bad = games("[FEN \"garbage\"]\n\n1. e4 *\n");
        assert_eq!(replay(&bad[0], &RULES).unwrap_err().kind(), "bad-fen");
    }
}

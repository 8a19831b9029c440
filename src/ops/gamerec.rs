//! A chess game as a game store keeps it (docs/FORMAT.md §15; brief §9): its id, the
//! kept tags and its whole mainline as move ranks ([`crate::chess::mainline`]), laid out as the
//! fields of a [`StoredGame`]; and the way back to PGN.
//!
//! Ids: the lichess id when `Site` is a lichess game URL or `GameId` holds 8 characters of
//! `[0-9A-Za-z]`; otherwise the first 47 bits of the game's fingerprint
//! ([`crate::ops::pgn::game_fingerprint`]). Either way the id is a number below 62^8, written
//! as 8 base-62 characters (`0-9A-Za-z`, most significant first).

use shakmaty::san::SanPlus;
use shakmaty::{Chess, Position};

use crate::chess::mainline::{self, MainlineError};
use crate::store::gameblock::StoredGame;

use super::pgn::RawGame;

use crate::chess::gamefields::{FEN_FIELD, MOVES_FIELD, RESULT_FIELD, SITE_FIELD, plies_field};
pub use crate::chess::gamefields::{FIELDS, KEPT_TAGS};

/// The kept tags of a game as met (the last value of a repeated tag wins); `None` where absent.
fn kept_tags(kept: &[u8]) -> Vec<Option<&[u8]>> {
    let mut out = vec![None; KEPT_TAGS.len()];
    let mut at = 0;
    while at < kept.len() {
        let i = usize::from(kept[at]);
        at += 1;
        let Some(len) = crate::store::varint::get(kept, &mut at) else {
            break;
        };
        let end = (at + len as usize).min(kept.len());
        if let Some(slot) = out.get_mut(i) {
            *slot = Some(&kept[at..end]);
        }
        at = end;
    }
    out
}

const BASE62: &[u8; 62] = b"0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

/// An id as its 8 base-62 characters.
pub fn id_string(id: u64) -> String {
    let mut s = [0u8; 8];
    let mut v = id;
    for c in s.iter_mut().rev() {
        *c = BASE62[(v % 62) as usize];
        v /= 62;
    }
    String::from_utf8_lossy(&s).into_owned()
}

/// The id 8 base-62 characters name; `None` for anything else.
pub fn parse_id(s: &str) -> Option<u64> {
    if s.len() != 8 {
        return None;
    }
    s.bytes().try_fold(0u64, |v, c| {
        let d = BASE62.iter().position(|&b| b == c)? as u64;
        Some(v * 62 + d)
    })
}

/// First path segments of lichess.org that name pages, not games, though they are 8
/// characters long: lichess's router (lila's `conf/routes`) takes them before a game's id, so
/// `https://lichess.org/analysis` (the analysis board, which many exports write as `Site`) is
/// no game's URL.
const LICHESS_PAGES: [&str; 9] = [
    "analysis", "bookmark", "features", "insights", "password", "practice", "streamer", "timeline",
    "training",
];

/// The lichess id a `Site` value names (`https://lichess.org/<8 characters>`, optionally with
/// 4 more characters of a player's id or a path after it; not one of [`LICHESS_PAGES`]).
fn lichess_site_id(site: &str) -> Option<u64> {
    let rest = site
        .trim()
        .strip_prefix("https://")
        .or_else(|| site.trim().strip_prefix("http://"))?;
    let rest = rest.strip_prefix("www.").unwrap_or(rest);
    let path = rest.strip_prefix("lichess.org/")?;
    let seg = path.split(['/', '?', '#']).next()?;
    match seg.len() {
        8 if LICHESS_PAGES.contains(&seg) => None,
        8 | 12 => parse_id(&seg[..8]),
        _ => None,
    }
}

/// A game's id (brief §9) from its kept tags and fingerprint.
pub fn game_id(g: &RawGame, fingerprint: u128) -> u64 {
    let tags = kept_tags(&g.kept);
    lichess_id(g, &tags).unwrap_or((fingerprint >> (128 - 47)) as u64)
}

/// The id a game's tags give it (a lichess `Site` URL or a `GameId` tag), if any: the id such
/// a game keeps whatever its fingerprint.
pub fn tag_id(g: &RawGame) -> Option<u64> {
    lichess_id(g, &kept_tags(&g.kept))
}

/// The lichess id of a game, from its `Site` URL or its `GameId` tag.
fn lichess_id(g: &RawGame, tags: &[Option<&[u8]>]) -> Option<u64> {
    let site = tags[SITE_FIELD].map(|v| String::from_utf8_lossy(v).into_owned());
    if let Some(id) = site.as_deref().and_then(lichess_site_id) {
        return Some(id);
    }
    g.game_id_tag.as_deref().and_then(|t| parse_id(t.trim()))
}

/// A game that cannot be stored: a move of its mainline is not legal.
pub type RecordError = MainlineError;

/// A game ready for a game store: its id and fields.
/// `max_ply` is the import's: the record keeps how many plies of the game were counted.
pub fn record(
    g: &RawGame,
    start: &Chess,
    max_ply: usize,
    fingerprint: u128,
) -> Result<StoredGame, RecordError> {
    let mut pos = start.clone();
    let mut moves = Vec::with_capacity(g.sans.len());
    for (ply, san) in g.sans.iter().enumerate() {
        let m = san
            .san
            .to_move(&pos)
            .map_err(|_| MainlineError::Illegal { ply })?;
        pos = pos.play(m).map_err(|_| MainlineError::Illegal { ply })?;
        moves.push(m);
    }
    record_moves(g, start, &moves, max_ply, || fingerprint)
}

/// A game ready for a game store from its mainline, already replayed from `start` (the
/// import's replay keeps the moves: [`super::pgn::replay_keeping`]), of which the first
/// `max_ply` were counted; `fingerprint` is asked for only when the game carries no lichess id.
pub fn record_moves(
    g: &RawGame,
    start: &Chess,
    moves: &[shakmaty::Move],
    max_ply: usize,
    fingerprint: impl FnOnce() -> u128,
) -> Result<StoredGame, RecordError> {
    let tags = kept_tags(&g.kept);
    let mut fields: Vec<Vec<u8>> = tags
        .iter()
        .map(|t| t.unwrap_or_default().to_vec())
        .collect();
    fields.push(mainline::encode_mainline(start, moves)?);
    fields.push(plies_field(max_ply.min(moves.len())));
    let id = match lichess_id(g, &tags) {
        Some(id) => id,
        None => (fingerprint() >> (128 - 47)) as u64,
    };
    Ok(StoredGame { id, fields })
}

/// A stored game as PGN: the kept tags present (the seven-tag roster always) and its id as a
/// `GameId` tag, then the mainline in SAN with move numbers and the result.
pub fn to_pgn(g: &StoredGame) -> Result<String, String> {
    pgn_of(g, None)
}

/// A stored game as PGN ([`to_pgn`]) with only the plies the book counted: imported with no
/// ply limit, it counts exactly what the book counted for it (a merge takes games counted
/// twice back out this way).
pub fn to_pgn_counted(g: &StoredGame) -> Result<String, String> {
    let plies = g
        .fields
        .get(crate::chess::gamefields::PLIES_FIELD)
        .and_then(|f| crate::chess::gamefields::counted_plies(f))
        .unwrap_or(crate::chess::gameindex::UPGRADED_PLIES);
    pgn_of(g, Some(plies))
}

fn pgn_of(g: &StoredGame, plies: Option<usize>) -> Result<String, String> {
    if g.fields.len() != FIELDS {
        return Err(format!(
            "a stored game has {} fields, not {FIELDS}",
            g.fields.len()
        ));
    }
    let tag = |i: usize| crate::store::tags::tag_text(&g.fields[i]).into_owned();
    let fen = tag(FEN_FIELD);
    let start: Chess = if fen.is_empty() {
        Chess::default()
    } else {
        crate::chess::parse_fen(&fen).map_err(|e| format!("stored FEN {fen:?}: {e}"))?
    };
    let ranks = &g.fields[MOVES_FIELD];
    let ranks = &ranks[..plies.unwrap_or(usize::MAX).min(ranks.len())];
    let moves = mainline::decode_mainline(&start, ranks).map_err(|e| e.to_string())?;
    let mut out = String::new();
    for (i, name) in KEPT_TAGS.iter().enumerate() {
        let v = tag(i);
        let roster = i <= RESULT_FIELD;
        if v.is_empty() && !roster {
            continue;
        }
        // The seven-tag roster's unknowns as the PGN standard spells them (§8.1.1).
        let v = match (v.is_empty(), *name) {
            (false, _) => v,
            (true, "Date") => "????.??.??".to_string(),
            (true, "Result") => "*".to_string(),
            (true, _) => "?".to_string(),
        };
        out.push_str(&format!(
            "[{name} \"{}\"]\n",
            v.replace('\\', "\\\\").replace('"', "\\\"")
        ));
        if i == FEN_FIELD {
            out.push_str("[SetUp \"1\"]\n");
        }
    }
    // The id, so that the game read again (or imported elsewhere) keeps it.
    out.push_str(&format!("[GameId \"{}\"]\n", id_string(g.id)));
    out.push('\n');
    let mut pos = start;
    let mut text = Vec::new();
    for (ply, m) in moves.into_iter().enumerate() {
        let white = pos.turn().is_white();
        let number = pos.fullmoves().get();
        if white {
            text.push(format!("{number}."));
        } else if ply == 0 {
            text.push(format!("{number}..."));
        }
        let san = SanPlus::from_move_and_play_unchecked(&mut pos, m);
        text.push(san.to_string());
    }
    let result = tag(RESULT_FIELD);
    text.push(if result.is_empty() {
        "*".into()
    } else {
        result
    });
    // Lines of at most 80 characters, as PGN export recommends.
    let mut line = String::new();
    for t in text {
        if !line.is_empty() && line.len() + 1 + t.len() > 80 {
            out.push_str(&line);
            out.push('\n');
            line.clear();
        }
        if !line.is_empty() {
            line.push(' ');
        }
        line.push_str(&t);
    }
    out.push_str(&line);
    out.push_str("\n\n");
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::pgn::{first_game as raw, game_fingerprint};

    #[test]
    fn ids_are_base62_and_round_trip() {
        assert_eq!(id_string(0), "00000000");
        assert_eq!(parse_id("zzzzzzzz"), Some(62u64.pow(8) - 1));
        for s in ["abcdEFGH", "0000000z", "q7ZvsdUF"] {
            assert_eq!(id_string(parse_id(s).unwrap()), s);
        }
        assert_eq!(parse_id("abc"), None);
        assert_eq!(parse_id("abcdefg!"), None);
    }

    #[test]
    fn lichess_ids_come_from_site_or_game_id_else_the_fingerprint() {
        let g = raw("[Site \"https://lichess.org/q7ZvsdUF\"]\n\n1. e4 *\n");
        assert_eq!(id_string(game_id(&g, 0)), "q7ZvsdUF");
        let g = raw("[Site \"https://lichess.org/q7ZvsdUFab12/black\"]\n\n1. e4 *\n");
        assert_eq!(id_string(game_id(&g, 0)), "q7ZvsdUF");
        let g = raw("[Site \"Linares\"]\n[GameId \"AbCd1234\"]\n\n1. e4 *\n");
        assert_eq!(id_string(game_id(&g, 0)), "AbCd1234");
        let g = raw("[Site \"Linares\"]\n\n1. e4 *\n");
        let fp = game_fingerprint(&g);
        assert_eq!(game_id(&g, fp), (fp >> 81) as u64);
        // Pages of lichess.org are no game's URL.
        for page in [
            "analysis",
            "practice/checkmates/piece-checkmates-i/BJy6fEDf",
        ] {
            let g = raw(&format!(
                "[Site \"https://lichess.org/{page}\"]\n\n1. e4 *\n"
            ));
            assert_eq!(tag_id(&g), None, "{page}");
            let fp = game_fingerprint(&g);
            assert_eq!(game_id(&g, fp), (fp >> 81) as u64, "{page}");
        }
        let g = raw("[Site \"https://lichess.org/Analysis\"]\n\n1. e4 *\n");
        assert_eq!(tag_id(&g).map(id_string).as_deref(), Some("Analysis"));
        assert!(game_id(&g, u128::MAX) < 1 << 47);
    }

    #[test]
    fn a_game_comes_back_as_pgn_with_its_tags_and_moves() {
        let pgn = "[Event \"Casual \\\"blitz\\\"\"]\n[Site \"Berlin\"]\n[Date \"1852.??.??\"]\n[Round \"?\"]\n[White \"Anderssen, Adolf\"]\n[Black \"Dufresne, Jean\"]\n[Result \"1-0\"]\n[ECO \"C52\"]\n[Annotator \"x\"]\n\n1. e4 e5 2. Nf3 Nc6 3. Bc4 Bc5 4. b4 {Evans} Bxb4 (4... Bb6) 5. c3 Ba5 6. d4 1-0\n";
        let g = raw(pgn);
        let rec = record(&g, &Chess::default(), 50, game_fingerprint(&g)).unwrap();
        let back = to_pgn(&rec).unwrap();
        assert!(
            back.starts_with("[Event \"Casual \\\"blitz\\\"\"]\n[Site \"Berlin\"]\n"),
            "{back}"
        );
        assert!(back.contains("[ECO \"C52\"]\n"), "{back}");
        assert!(!back.contains("Annotator"), "{back}");
        assert!(
            back.ends_with("\n\n1. e4 e5 2. Nf3 Nc6 3. Bc4 Bc5 4. b4 Bxb4 5. c3 Ba5 6. d4 1-0\n\n"),
            "{back}"
        );
        // Read again, it is the same game: same tags, same moves, same fingerprint.
        let again = raw(&back);
        assert_eq!(again.kept, g.kept.to_vec());
        assert_eq!(game_fingerprint(&again), game_fingerprint(&g));
    }

    #[test]
    fn the_rosters_unknown_tags_are_spelled_as_the_pgn_standard_says() {
        let g = raw("[White \"W\"]\n\n1. e4 e5 *\n");
        let rec = record(&g, &Chess::default(), 50, game_fingerprint(&g)).unwrap();
        let back = to_pgn(&rec).unwrap();
        for tag in [
            "[Event \"?\"]",
            "[Site \"?\"]",
            "[Date \"????.??.??\"]",
            "[Round \"?\"]",
            "[White \"W\"]",
            "[Black \"?\"]",
            "[Result \"*\"]",
        ] {
            assert!(back.contains(tag), "{tag} in {back}");
        }
    }

    #[test]
    fn a_setup_game_keeps_its_start() {
        let pgn = "[Event \"E\"]\n[SetUp \"1\"]\n[FEN \"4k3/8/8/8/8/8/4P3/4K3 b - - 0 40\"]\n\n40... Kd7 41. e4 *\n";
        let g = raw(pgn);
        let start = crate::chess::parse_fen("4k3/8/8/8/8/8/4P3/4K3 b - - 0 40").unwrap();
        let rec = record(&g, &start, 50, 0).unwrap();
        let back = to_pgn(&rec).unwrap();
        assert!(back.contains("40... Kd7 41. e4 *"), "{back}");
        assert!(back.contains("[SetUp \"1\"]"), "{back}");
    }
}

//! Query strings of the server's routes, parsed and checked into typed requests.
//!
//! Every parameter a route knows is checked for its type even where the book cannot use it
//! (`since`, `speeds`, …), so a client sending nonsense learns it at once; parameters a route
//! does not know are ignored, as lichess does. A known parameter given twice is an error.
//! Never panics on any input (fuzz target `server_query`).

use std::collections::BTreeMap;

use super::error::ApiError;
use crate::ops::explorer::DEFAULT_MOVES;
use crate::ops::position::{Names, PositionQuery};
use crate::store::facet::{CellFilter, DateBound};

/// Longest query string accepted (bytes, before decoding); the whole URI is capped too.
pub const MAX_QUERY: usize = 8 * 1024;

/// Most moves an answer lists; larger `moves` values list them all (no position has more).
pub const MAX_LISTED_MOVES: usize = 256;

/// A request to `/masters` or `/lichess`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ExplorerParams {
    pub fen: Option<String>,
    pub play: Option<String>,
    pub moves: usize,
    /// The cells counted (`speeds`, `ratings`, `modes`, `since`, `until`).
    pub filter: CellFilter,
    /// `history=true`.
    pub history: bool,
    /// `topGames`, `recentGames` when given.
    pub top_games: Option<usize>,
    pub recent_games: Option<usize>,
}

/// A request to `/v1/position`: a chess position (`fen` and a line of moves) or an Othello
/// position (`board` and a line of moves).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct PositionParams {
    pub fen: Option<String>,
    pub board: Option<String>,
    /// The line: `moves`, or `play` as the lichess routes call it.
    pub line: Option<String>,
    /// Which of the two names the line came under (for errors).
    pub line_name: &'static str,
}

impl ExplorerParams {
    /// The position asked for, in the explorer routes' words (`fen`, `play`).
    pub fn query(&self) -> PositionQuery<'_> {
        PositionQuery {
            fen: self.fen.as_deref(),
            board: None,
            line: self.play.as_deref(),
            names: Names::HTTP.with_line("play"),
        }
    }
}

impl PositionParams {
    /// The position asked for, in the request's words.
    pub fn query(&self) -> PositionQuery<'_> {
        PositionQuery {
            fen: self.fen.as_deref(),
            board: self.board.as_deref(),
            line: self.line.as_deref(),
            names: Names::HTTP.with_line(self.line_name),
        }
    }
}

/// Options of `POST /v1/import`, as `bookdb import` has them.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct ImportParams {
    pub max_ply: Option<u32>,
    pub min_rating: Option<u32>,
    pub dedupe: bool,
    pub force: bool,
}

/// Decoded parameters; duplicates of the names in `known` are refused.
fn decode(query: &str, known: &[&str]) -> Result<BTreeMap<String, String>, ApiError> {
    if query.len() > MAX_QUERY {
        return Err(ApiError::too_long(format!(
            "the query string has {} bytes; at most {MAX_QUERY} are accepted",
            query.len()
        )));
    }
    let mut out = BTreeMap::new();
    for (k, v) in form_urlencoded::parse(query.as_bytes()) {
        if !known.contains(&k.as_ref()) {
            continue;
        }
        if out.insert(k.to_string(), v.into_owned()).is_some() {
            return Err(ApiError::bad_request(format!(
                "parameter {k} is given twice"
            )));
        }
    }
    Ok(out)
}

fn number(name: &str, value: &str, max: u64) -> Result<u64, ApiError> {
    number_in(name, value, 0, max)
}

fn number_in(name: &str, value: &str, min: u64, max: u64) -> Result<u64, ApiError> {
    match value.trim().parse::<u64>() {
        Ok(n) if (min..=max).contains(&n) => Ok(n),
        _ => Err(ApiError::bad_request(format!(
            "{name} must be a whole number from {min} to {max}, not {:?}",
            clip(value)
        ))),
    }
}

fn boolean(name: &str, value: &str) -> Result<bool, ApiError> {
    match value.trim().to_ascii_lowercase().as_str() {
        // A bare flag (`?history`, `force` of the admin import) is true.
        "" | "true" | "1" => Ok(true),
        "false" | "0" => Ok(false),
        _ => Err(ApiError::bad_request(format!(
            "{name} must be true or false, not {:?}",
            clip(value)
        ))),
    }
}

/// At most 60 characters of a value, for messages.
fn clip(v: &str) -> String {
    let mut s: String = v.chars().take(60).collect();
    if s.len() < v.len() {
        s.push('…');
    }
    s
}

/// `since`/`until`: a year (`1952`: years) or a year and month (`2024-05`: months).
fn date_bound(name: &str, v: &str) -> Result<DateBound, ApiError> {
    DateBound::parse(v.trim()).map_err(|_| {
        ApiError::bad_request(format!(
            "{name} must be a year (1952) or a month (2024-05), not {:?}",
            clip(v)
        ))
    })
}

/// `/masters` and `/lichess`.
pub fn explorer(query: &str) -> Result<ExplorerParams, ApiError> {
    let p = decode(
        query,
        &[
            "fen",
            "play",
            "moves",
            "topGames",
            "recentGames",
            "since",
            "until",
            "speeds",
            "ratings",
            "variant",
            "modes",
            "history",
        ],
    )?;
    let moves = match p.get("moves") {
        Some(v) => number("moves", v, u32::MAX as u64)?.min(MAX_LISTED_MOVES as u64) as usize,
        None => DEFAULT_MOVES,
    };
    let mut counts = [None, None];
    for (i, name) in ["topGames", "recentGames"].into_iter().enumerate() {
        if let Some(v) = p.get(name) {
            counts[i] = Some(number(name, v, 1_000)? as usize);
        }
    }
    fn bad(name: &'static str) -> impl Fn(String) -> ApiError {
        move |e| ApiError::bad_request(format!("{name}: {e}"))
    }
    let filter = CellFilter {
        since: p.get("since").map(|v| date_bound("since", v)).transpose()?,
        until: p.get("until").map(|v| date_bound("until", v)).transpose()?,
        speeds: p
            .get("speeds")
            .map(|v| CellFilter::parse_speeds(v).map_err(bad("speeds")))
            .transpose()?,
        groups: p
            .get("ratings")
            .map(|v| CellFilter::parse_ratings(v).map_err(bad("ratings")))
            .transpose()?,
        modes: p
            .get("modes")
            .map(|v| CellFilter::parse_modes(v).map_err(bad("modes")))
            .transpose()?,
    };
    let history = match p.get("history") {
        Some(v) => boolean("history", v)?,
        None => false,
    };
    if let Some(v) = p.get("variant")
        && v != "standard"
        && v != "chess"
    {
        return Err(ApiError::bad_request(format!(
            "variant {:?}: this book holds standard chess only",
            clip(v)
        )));
    }
    Ok(ExplorerParams {
        fen: p.get("fen").cloned(),
        play: p.get("play").cloned(),
        moves,
        filter,
        history,
        top_games: counts[0],
        recent_games: counts[1],
    })
}

/// `/v1/position`.
pub fn position(query: &str) -> Result<PositionParams, ApiError> {
    let p = decode(query, &["fen", "board", "moves", "play"])?;
    if p.contains_key("moves") && p.contains_key("play") {
        return Err(ApiError::bad_request(
            "give the line as moves or as play, not both".to_string(),
        ));
    }
    Ok(PositionParams {
        fen: p.get("fen").cloned(),
        board: p.get("board").cloned(),
        line: p.get("moves").or_else(|| p.get("play")).cloned(),
        line_name: if p.contains_key("play") {
            "play"
        } else {
            "moves"
        },
    })
}

/// `/api/cloud-eval`: `fen` (required) and `multiPv` (default 1; 1 to 5).
#[derive(Debug)]
pub struct CloudEvalParams {
    pub fen: String,
    pub multi_pv: usize,
}

/// `/api/cloud-eval`.
pub fn cloud_eval(query: &str) -> Result<CloudEvalParams, ApiError> {
    let p = decode(query, &["fen", "multiPv", "variant"])?;
    if let Some(v) = p.get("variant")
        && v != "standard"
    {
        return Err(ApiError::bad_request(format!(
            "variant {:?}: this book holds standard chess",
            clip(v)
        )));
    }
    // As lichess cleans it: `_` stands for a space (the answer gives the FEN back so).
    let fen = p
        .get("fen")
        .map(|f| f.replace('_', " ").trim().to_string())
        .ok_or_else(|| ApiError::bad_request("fen is required".to_string()))?;
    let multi_pv = match p.get("multiPv") {
        Some(v) => number_in(
            "multiPv",
            v,
            1,
            crate::ops::evals::cloud::MAX_MULTI_PV as u64,
        )?,
        None => 1,
    };
    Ok(CloudEvalParams {
        fen,
        multi_pv: multi_pv as usize,
    })
}

/// `POST /v1/import`.
pub fn import(query: &str) -> Result<ImportParams, ApiError> {
    let p = decode(query, &["maxPly", "minRating", "dedupe", "force"])?;
    Ok(ImportParams {
        max_ply: p
            .get("maxPly")
            .map(|v| number_in("maxPly", v, 1, 10_000).map(|n| n as u32))
            .transpose()?,
        min_rating: p
            .get("minRating")
            .map(|v| number("minRating", v, 4_000).map(|n| n as u32))
            .transpose()?,
        dedupe: p
            .get("dedupe")
            .map(|v| boolean("dedupe", v))
            .transpose()?
            .unwrap_or(false),
        force: p
            .get("force")
            .map(|v| boolean("force", v))
            .transpose()?
            .unwrap_or(false),
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn explorer_parameters() {
        let p = explorer("fen=rnbqkbnr%2Fpppppppp%2F8%2F8%2F8%2F8%2FPPPPPPPP%2FRNBQKBNR+w+KQkq+-+0+1&play=e2e4,e7e5&moves=5&topGames=0&since=1952&until=2024-05&speeds=blitz,rapid&ratings=1600,1800&variant=standard&whatever=x").unwrap();
        assert_eq!(p.moves, 5);
        assert_eq!(p.play.as_deref(), Some("e2e4,e7e5"));
        assert!(p.fen.unwrap().starts_with("rnbqkbnr/pppppppp/8/"));
        assert_eq!(explorer("").unwrap().moves, DEFAULT_MOVES);
        assert_eq!(explorer("moves=100000").unwrap().moves, MAX_LISTED_MOVES);
    }

    #[test]
    fn wrong_types_are_refused_with_the_parameter_named() {
        for (q, word) in [
            ("moves=abc", "moves"),
            ("moves=-1", "moves"),
            ("moves=99999999999999999999999", "moves"),
            ("topGames=x", "topGames"),
            ("since=yesterday", "since"),
            ("until=2024-13", "until"),
            ("speeds=hyper", "speeds"),
            ("ratings=1600,abc", "ratings"),
            ("variant=atomic", "variant"),
            ("modes=blind", "modes"),
            ("history=sometimes", "history"),
            ("history=yes", "history"),
            ("history=no", "history"),
            ("ratings=4001", "ratings"),
            ("ratings=99999", "ratings"),
            ("fen=a&fen=b", "twice"),
        ] {
            let e = explorer(q).unwrap_err();
            assert_eq!(e.status.as_u16(), 400, "{q}");
            assert!(e.message.contains(word), "{q}: {}", e.message);
        }
        let long = format!("fen={}", "a".repeat(MAX_QUERY));
        assert_eq!(explorer(&long).unwrap_err().status.as_u16(), 414);
    }

    #[test]
    fn cloud_eval_parameters_as_lichess_takes_them() {
        let p = cloud_eval("fen=rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR_w_KQkq_-").unwrap();
        assert_eq!(
            p.fen,
            "rnbqkbnr/pppppppp/8/8/8/8/PPPPPPPP/RNBQKBNR w KQkq -"
        );
        assert_eq!(p.multi_pv, 1);
        assert_eq!(
            cloud_eval("fen=8/8/8/8/8/8/8/8&multiPv=5")
                .unwrap()
                .multi_pv,
            5
        );
        for q in ["fen=x&multiPv=0", "fen=x&multiPv=6", "fen=x&multiPv=two"] {
            let e = cloud_eval(q).unwrap_err();
            assert!(e.message.contains("from 1 to 5"), "{q}: {}", e.message);
        }
    }

    #[test]
    fn booleans_are_true_false_1_0_or_a_bare_flag() {
        for (q, v) in [
            ("history=true", true),
            ("history=True", true),
            ("history=1", true),
            ("history", true),
            ("history=false", false),
            ("history=FALSE", false),
            ("history=0", false),
        ] {
            assert_eq!(explorer(q).unwrap().history, v, "{q}");
        }
    }

    #[test]
    fn position_and_import_parameters() {
        let p = position("moves=f5,d6").unwrap();
        assert_eq!(p.line.as_deref(), Some("f5,d6"));
        assert_eq!(position("play=e2e4").unwrap().line.as_deref(), Some("e2e4"));
        assert!(position("play=e2e4&moves=e2e4").is_err());
        let i = import("maxPly=40&dedupe=true&force").unwrap();
        assert_eq!(i.max_ply, Some(40));
        assert!(i.dedupe && i.force);
        assert!(import("dedupe=maybe").is_err());
        // In the route's words, not the CLI's `--max-ply`.
        let e = import("maxPly=0").unwrap_err();
        assert!(
            e.message
                .contains("maxPly must be a whole number from 1 to"),
            "{}",
            e.message
        );
        assert!(import("minRating=-3").is_err());
    }

    proptest! {
        #[test]
        fn never_panics(q in ".{0,300}") {
            let _ = explorer(&q);
            let _ = position(&q);
            let _ = import(&q);
        }

        #[test]
        fn never_panics_on_encoded_bytes(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
            let q: String = form_urlencoded::byte_serialize(&bytes).collect();
            for name in ["fen", "moves", "since", "ratings", "speeds"] {
                let _ = explorer(&format!("{name}={q}"));
            }
        }
    }
}

//! `GET /v1/openings?q=…`: the embedded opening table (the CC0 lichess chess-openings lines,
//! `src/chess/openings/`) searched by name or ECO code, for the explorer page's search box.
//!
//! Every word of `q` must match: a word that looks like an ECO code or its start (`B`, `B9`,
//! `b90`) matches lines whose code starts with it; any other word must be in the name (case and accents ignored: `grunfeld` finds "Grünfeld"). Lines come
//! shortest first (fewest moves), then by ECO code and name, so the main line of a variation
//! precedes its sub-variations; `limit` (default 20, at most 100) of them.

use axum::http::{StatusCode, Uri};
use axum::response::Response;
use serde::Serialize;

use super::error::{ApiError, json_ok};
use crate::chess::openings::{Line, lines};

/// Lines answered unless `limit` says otherwise.
const DEFAULT_LIMIT: usize = 20;
/// Most lines one answer lists.
const MAX_LIMIT: usize = 100;
/// Longest `q` accepted (characters).
const MAX_QUERY_CHARS: usize = 100;

#[derive(Serialize)]
struct Answer<'a> {
    /// How many lines match (more than listed when `limit` cut the list).
    total: usize,
    openings: Vec<&'a Line>,
}

/// `text` folded for matching: lower case, the common Latin accents taken off.
fn fold(text: &str) -> String {
    text.chars()
        .flat_map(char::to_lowercase)
        .map(|c| match c {
            'à' | 'á' | 'â' | 'ã' | 'ä' | 'å' => 'a',
            'ç' | 'č' => 'c',
            'è' | 'é' | 'ê' | 'ë' => 'e',
            'ì' | 'í' | 'î' | 'ï' => 'i',
            'ñ' | 'ń' => 'n',
            'ò' | 'ó' | 'ô' | 'õ' | 'ö' | 'ø' => 'o',
            'ù' | 'ú' | 'û' | 'ü' => 'u',
            'ý' | 'ÿ' => 'y',
            'š' | 'ś' => 's',
            'ž' | 'ź' | 'ż' => 'z',
            'ł' => 'l',
            c => c,
        })
        .collect()
}

/// Whether `word` (folded) is an ECO code or the start of one: a letter A–E, up to two digits.
fn eco_like(word: &str) -> bool {
    let b = word.as_bytes();
    !b.is_empty()
        && b.len() <= 3
        && (b'a'..=b'e').contains(&b[0])
        && b[1..].iter().all(u8::is_ascii_digit)
}

/// The lines matching `q`, in answer order.
pub fn search(q: &str) -> Vec<&'static Line> {
    let words: Vec<String> = fold(q)
        .split(|c: char| !c.is_alphanumeric() && c != '\'')
        .filter(|w| !w.is_empty())
        .map(str::to_string)
        .collect();
    if words.is_empty() {
        return Vec::new();
    }
    let mut found: Vec<&'static Line> = lines()
        .iter()
        .filter(|l| {
            let name = fold(l.name);
            let eco = l.eco.to_ascii_lowercase();
            words.iter().all(|w| {
                if eco_like(w) {
                    eco.starts_with(w.as_str())
                } else {
                    name.contains(w.as_str())
                }
            })
        })
        .collect();
    found.sort_by(|a, b| (a.uci.len(), a.eco, a.name).cmp(&(b.uci.len(), b.eco, b.name)));
    found
}

/// `GET /v1/openings`.
pub async fn openings(uri: Uri) -> Result<Response, ApiError> {
    let mut q = None;
    let mut limit = DEFAULT_LIMIT;
    for (k, v) in form_urlencoded::parse(uri.query().unwrap_or("").as_bytes()) {
        match k.as_ref() {
            "q" if q.is_some() => return Err(ApiError::bad_request("q given twice".to_string())),
            "q" => q = Some(v.into_owned()),
            "limit" => {
                limit = match v.trim().parse::<usize>() {
                    Ok(n) if (1..=MAX_LIMIT).contains(&n) => n,
                    _ => {
                        return Err(ApiError::bad_request(format!(
                            "limit must be a whole number from 1 to {MAX_LIMIT}"
                        )));
                    }
                }
            }
            _ => {}
        }
    }
    let Some(q) = q.filter(|q| !q.trim().is_empty()) else {
        return Err(ApiError::bad_request(
            "give q: words of an opening's name or an ECO code (/v1/openings?q=najdorf)"
                .to_string(),
        ));
    };
    if q.chars().count() > MAX_QUERY_CHARS {
        return Err(ApiError::bad_request(format!(
            "q has over {MAX_QUERY_CHARS} characters"
        )));
    }
    let found = search(&q);
    let answer = Answer {
        total: found.len(),
        openings: found.into_iter().take(limit).collect(),
    };
    serde_json::to_string(&answer)
        .map(|b| json_ok(b, None))
        .map_err(|e| ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, format!("encoding: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_name_finds_its_main_line_first() {
        let r = search("Najdorf");
        assert_eq!(r[0].eco, "B90");
        assert_eq!(r[0].name, "Sicilian Defense: Najdorf Variation");
        assert!(r.iter().all(|l| l.name.contains("Najdorf")));
        let r = search("sicilian najdorf english");
        assert!(r[0].name.contains("English Attack"), "{:?}", r[0]);
    }

    #[test]
    fn an_eco_code_finds_its_lines() {
        let r = search("b90");
        assert!(!r.is_empty() && r.iter().all(|l| l.eco == "B90"));
        assert!(search("C4").iter().all(|l| l.eco.starts_with("C4")));
        // A word that only looks like an ECO code still matches names.
        assert!(
            search("e4")
                .iter()
                .all(|l| l.eco.starts_with("E4") || l.name.to_lowercase().contains("e4"))
        );
    }

    #[test]
    fn accents_and_case_are_ignored() {
        let r = search("GRUNFELD");
        assert!(r.iter().any(|l| l.name.contains("Grünfeld")), "{}", r.len());
        assert!(search("").is_empty());
        assert!(search("  ,, ").is_empty());
        assert!(search("zzzzqx").is_empty());
    }
}

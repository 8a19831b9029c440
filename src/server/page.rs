//! The explorer page at `/`: a board, the opening name, the moves table and the line played, in
//! the browser. Its files live in `src/server/page/` and are compiled into the binary; nothing is
//! fetched from elsewhere. The page reads the book only through the public `/lichess` route
//! (and `/v1/book` to notice changes), so it shows exactly what any API client gets.
//!
//! `/` is revalidated on every visit (`no-cache`); it names its assets with a hash of their
//! contents (`/assets/explorer.js?v=…`), so those may be cached for a year.

use std::hash::{DefaultHasher, Hash, Hasher};
use std::sync::OnceLock;

use axum::extract::Path;
use axum::http::{HeaderValue, StatusCode, header};
use axum::response::{IntoResponse, Response};

use super::error::ApiError;

/// The page; `{{v}}` stands for the assets' version.
const INDEX: &str = include_str!("page/index.html");

/// The assets: (file name, content type, contents). The scripts, in the order the page loads
/// them: the rules of chess, the chess board, the search / paste / copy tools, the Othello page,
/// the facet filters and chart, and the explorer that ties them together.
const ASSETS: [(&str, &str, &str); 10] = [
    js("chess-rules.js", include_str!("page/chess-rules.js")),
    js("board.js", include_str!("page/board.js")),
    js("tools.js", include_str!("page/tools.js")),
    js("othello.js", include_str!("page/othello.js")),
    js("facets.js", include_str!("page/facets.js")),
    js("eval.js", include_str!("page/eval.js")),
    js("games.js", include_str!("page/games.js")),
    js("explorer.js", include_str!("page/explorer.js")),
    (
        "explorer.css",
        "text/css; charset=utf-8",
        include_str!("page/explorer.css"),
    ),
    (
        "favicon.svg",
        "image/svg+xml",
        include_str!("page/favicon.svg"),
    ),
];

const fn js(name: &'static str, body: &'static str) -> (&'static str, &'static str, &'static str) {
    (name, "text/javascript; charset=utf-8", body)
}

/// The page with its assets' version filled in (computed once).
fn page() -> &'static str {
    static PAGE: OnceLock<String> = OnceLock::new();
    PAGE.get_or_init(|| {
        let mut h = DefaultHasher::new();
        for (name, _, body) in ASSETS {
            name.hash(&mut h);
            body.hash(&mut h);
        }
        INDEX.replace("{{v}}", &format!("{:016x}", h.finish()))
    })
}

fn with_headers(body: &'static str, content_type: &'static str, cache: &'static str) -> Response {
    let mut r = body.into_response();
    let h = r.headers_mut();
    h.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static(cache));
    h.insert(
        header::X_CONTENT_TYPE_OPTIONS,
        HeaderValue::from_static("nosniff"),
    );
    r
}

/// `GET /`: the explorer page.
pub async fn index() -> Response {
    let mut r = with_headers(page(), "text/html; charset=utf-8", "no-cache");
    // The page loads only its own files and talks only to this server.
    r.headers_mut().insert(
        header::CONTENT_SECURITY_POLICY,
        HeaderValue::from_static(
            "default-src 'self'; img-src 'self' data:; style-src 'self'; script-src 'self'; object-src 'none'; base-uri 'none'; frame-ancestors 'none'",
        ),
    );
    r
}

/// `GET /assets/{file}`: one of the page's files.
pub async fn asset(Path(file): Path<String>) -> Result<Response, ApiError> {
    ASSETS
        .iter()
        .find(|(name, _, _)| *name == file)
        .map(|(_, ty, body)| with_headers(body, ty, "public, max-age=31536000, immutable"))
        .ok_or_else(|| {
            ApiError::new(
                StatusCode::NOT_FOUND,
                format!(
                    "no asset {:?}: the explorer page's files are {}",
                    file.chars().take(80).collect::<String>(),
                    ASSETS.map(|(n, _, _)| n).join(", ")
                ),
            )
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_page_names_every_asset_with_its_version() {
        let p = page();
        assert!(!p.contains("{{v}}"));
        for (name, _, _) in ASSETS {
            if name != "favicon.svg" {
                assert!(p.contains(&format!("/assets/{name}?v=")), "{name}");
            }
        }
    }
}

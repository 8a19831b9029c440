//! The HTTP routes and the layers around them: the lichess explorer routes, `/v1/position`,
//! `/v1/book`, `/health`, `/metrics`, and the admin import; CORS, limits, timeouts, panics.

use std::sync::Arc;
use std::time::{Duration, Instant};

use axum::Router;
use axum::extract::{Request, State};
use axum::http::{HeaderValue, Method, StatusCode, Uri, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use axum::routing::{get, post};
use tower_http::catch_panic::CatchPanicLayer;
use tower_http::cors::{Any, CorsLayer};
use tower_http::limit::RequestBodyLimitLayer;
use tower_http::timeout::{RequestBodyTimeoutLayer, TimeoutLayer};
use tower_http::trace::{DefaultMakeSpan, DefaultOnResponse, TraceLayer};
use tracing::Level;

use super::admin;
use super::error::{ApiError, json_error, json_ok};
use super::metrics::{BookGauges, route_index};
use super::openings;
use super::options::MAX_HEAD;
use super::page;
use super::params;
use super::state::AppState;
use crate::ops::explorer::explore_games;
use crate::ops::facets::Counting;
use crate::ops::game::Game;
use crate::ops::position;
use crate::ops::topgames::{LICHESS_GAMES, LICHESS_TOP, MASTERS_TOP, Wanted};

/// Longest URI accepted (bytes): longer ones get 414.
pub const MAX_URI: usize = 16 * 1024;

/// How long a read request may take before it is answered with 503.
const READ_TIMEOUT: Duration = Duration::from_secs(10);

/// How long an upload may pause between two pieces of its body.
const BODY_PAUSE: Duration = Duration::from_secs(30);

/// The whole application: routes, then (inside out) panic catching, counting, limits.
pub fn app(state: Arc<AppState>) -> Router {
    with_layers(routes(), state)
}

fn routes() -> Router<Arc<AppState>> {
    let read = Router::new()
        .route("/masters", get(explorer))
        .route("/lichess", get(explorer))
        .route("/masters/pgn/{id}", get(game_pgn))
        // berserk's get_otb_master_game asks lichess's older spelling.
        .route("/master/pgn/{id}", get(game_pgn))
        .route("/lichess/pgn/{id}", get(game_pgn))
        .route("/v1/position", get(position))
        .route("/v1/book", get(book))
        .route("/v1/openings", get(openings::openings))
        .route("/api/cloud-eval", get(cloud_eval))
        .route("/health", get(health))
        .route("/metrics", get(metrics))
        .route("/", get(page::index))
        .route("/assets/{file}", get(page::asset))
        .layer(TimeoutLayer::with_status_code(
            StatusCode::SERVICE_UNAVAILABLE,
            READ_TIMEOUT,
        ))
        .layer(RequestBodyLimitLayer::new(4 * 1024))
        .layer(
            CorsLayer::new()
                .allow_origin(Any)
                .allow_methods([Method::GET, Method::HEAD]),
        );
    read.merge(admin_routes())
}

fn admin_routes() -> Router<Arc<AppState>> {
    Router::new().route(
        "/v1/import",
        // The size limit is checked while the body streams to disk (admin.rs).
        post(admin::import).layer(RequestBodyTimeoutLayer::new(BODY_PAUSE)),
    )
}

/// The layers every route gets. `routes` may hold more (the tests add a panicking one).
pub(crate) fn with_layers(routes: Router<Arc<AppState>>, state: Arc<AppState>) -> Router {
    routes
        .fallback(not_found)
        .method_not_allowed_fallback(method_not_allowed)
        .layer(CatchPanicLayer::custom(|_: Box<dyn std::any::Any + Send>| {
            tracing::error!("a request handler panicked (message above); answered 500, serving on");
            json_error(
                StatusCode::INTERNAL_SERVER_ERROR,
                "internal error: this request failed (the server log says why); the server goes on",
            )
        }))
        .layer(middleware::from_fn_with_state(state.clone(), observe))
        .layer(
            TraceLayer::new_for_http()
                .make_span_with(DefaultMakeSpan::new().level(Level::DEBUG))
                .on_response(DefaultOnResponse::new().level(Level::DEBUG)),
        )
        .with_state(state)
}

/// Counts every request by route and status and refuses over-long URIs.
async fn observe(State(s): State<Arc<AppState>>, req: Request, next: Next) -> Response {
    let start = Instant::now();
    let route = route_index(req.uri().path());
    let uri_len = req.uri().path().len() + req.uri().query().map_or(0, str::len);
    let head = head_len(&req);
    let resp = if uri_len > MAX_URI {
        ApiError::too_long(format!(
            "the URI has {uri_len} bytes; at most {MAX_URI} are accepted"
        ))
        .into_response()
    } else if head > MAX_HEAD {
        ApiError::new(
            StatusCode::REQUEST_HEADER_FIELDS_TOO_LARGE,
            format!("the request head has {head} bytes; at most {MAX_HEAD} are accepted"),
        )
        .into_response()
    } else {
        next.run(req).await
    };
    let resp = if resp.status().is_client_error() || resp.status().is_server_error() {
        without_paths(resp, &s.path).await
    } else {
        resp
    };
    s.metrics
        .observe(route, resp.status().as_u16(), start.elapsed());
    resp
}

/// The size of the request's head as the client sent it (request line, header fields, the
/// empty line): hyper refuses a head over its buffer, but one that reached it in a single
/// read passes up to twice [`MAX_HEAD`].
fn head_len(req: &Request) -> usize {
    let target = req.uri().path_and_query().map_or(1, |pq| pq.as_str().len());
    let line = req.method().as_str().len() + 1 + target + " HTTP/1.1\r\n".len();
    let fields: usize = req
        .headers()
        .iter()
        .map(|(k, v)| k.as_str().len() + 2 + v.len() + 2)
        .sum();
    line + fields + 2
}

/// An error answer with the server's file system paths taken out: the book's directory
/// (the book is named by its file name alone), and an upload's private directory (it is
/// "the upload"). Clients are told what went wrong, not where the server keeps its files.
async fn without_paths(resp: Response, book: &std::path::Path) -> Response {
    let (parts, body) = resp.into_parts();
    let Ok(bytes) = axum::body::to_bytes(body, 1 << 20).await else {
        return json_error(parts.status, "internal error: the answer could not be read");
    };
    let Ok(text) = std::str::from_utf8(&bytes) else {
        return Response::from_parts(parts, axum::body::Body::from(bytes));
    };
    let cleaned = super::redact::redact_paths(text, book);
    let mut parts = parts;
    parts.headers.remove(header::CONTENT_LENGTH);
    Response::from_parts(parts, axum::body::Body::from(cleaned))
}

async fn not_found(uri: Uri) -> ApiError {
    ApiError::new(
        StatusCode::NOT_FOUND,
        format!(
            "no route {}: the routes are / (the explorer page), /masters, /lichess, /masters/pgn/ID (also /master/pgn/ID), /lichess/pgn/ID, /v1/position, /v1/book, /v1/openings, /health, /metrics and POST /v1/import",
            clip_path(uri.path())
        ),
    )
}

async fn method_not_allowed(method: Method, uri: Uri) -> ApiError {
    ApiError::new(
        StatusCode::METHOD_NOT_ALLOWED,
        format!("{method} is not allowed on {}", clip_path(uri.path())),
    )
}

fn clip_path(p: &str) -> String {
    let mut s: String = p.chars().take(80).collect();
    if s.len() < p.len() {
        s.push('…');
    }
    s
}

fn to_json<T: serde::Serialize>(v: &T, book: &crate::store::Book) -> Result<Response, ApiError> {
    serde_json::to_string(v)
        .map(|b| json_ok(b, Some(book)))
        .map_err(|e| ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, format!("encoding: {e}")))
}

/// `GET /masters`, `GET /lichess`: the lichess explorer's answer (docs/CONTRACT.md §3).
async fn explorer(State(s): State<Arc<AppState>>, uri: Uri) -> Result<Response, ApiError> {
    let p = params::explorer(uri.query().unwrap_or(""))?;
    if s.game != Game::Chess {
        return Err(ApiError::bad_request(format!(
            "this server's book holds {} positions; the lichess explorer routes answer for chess books. Ask /v1/position?moves=f5,d6 instead",
            s.game
        )));
    }
    let book = s.live.snapshot();
    let line = position::chess_line(&p.query())?;
    // `/masters` keeps its history by year, `/lichess` by month.
    let counting = Counting {
        filter: p.filter.clone(),
        history: p.history.then(|| uri.path().starts_with("/masters")),
    };
    let wanted = if uri.path().starts_with("/masters") {
        Wanted::Masters {
            top: p.top_games.unwrap_or(MASTERS_TOP),
        }
    } else {
        Wanted::Lichess {
            top: p.top_games.unwrap_or(LICHESS_TOP),
            recent: p.recent_games.unwrap_or(LICHESS_GAMES),
        }
    };
    to_json(
        &explore_games(&book, &line, p.moves, &counting, Some(wanted))?,
        &book,
    )
}

/// `GET /masters/pgn/{id}`, `GET /lichess/pgn/{id}`: a stored game as PGN
/// (`application/x-chess-pgn`), 404 for an id the book stores no game under.
async fn game_pgn(
    State(s): State<Arc<AppState>>,
    axum::extract::Path(id): axum::extract::Path<String>,
) -> Result<Response, ApiError> {
    let book = s.live.snapshot();
    let parsed = crate::ops::games::parse_game_id(&id)?;
    match crate::ops::games::pgn_by_id(&book, parsed)? {
        Some(pgn) => Ok((
            [(
                header::CONTENT_TYPE,
                "application/x-chess-pgn; charset=utf-8",
            )],
            pgn,
        )
            .into_response()),
        None => Err(ApiError::new(
            StatusCode::NOT_FOUND,
            format!("no game {} in this book", clip_path(&id)),
        )),
    }
}

/// `GET /v1/position`: `probe --json`'s shape for one position of any game's book.
async fn position(State(s): State<Arc<AppState>>, uri: Uri) -> Result<Response, ApiError> {
    let p = params::position(uri.query().unwrap_or(""))?;
    let book = s.live.snapshot();
    let answer = position::probe(&book, s.game, &p.query())?;
    to_json(&answer.json()?, &book)
}

/// `GET /api/cloud-eval`: lichess's cloud evaluation of a position (docs/CONTRACT.md §10);
/// 404 with lichess's message when the book has none.
async fn cloud_eval(State(s): State<Arc<AppState>>, uri: Uri) -> Result<Response, ApiError> {
    let p = params::cloud_eval(uri.query().unwrap_or(""))?;
    if s.game != Game::Chess {
        return Err(ApiError::bad_request(format!(
            "this server's book holds {} positions; cloud evaluations are for chess books",
            s.game
        )));
    }
    let pos = crate::chess::parse_fen(&p.fen).map_err(|e| ApiError::bad_request(e.to_string()))?;
    let book = s.live.snapshot();
    match crate::ops::evals::cloud::cloud_eval(&book, &p.fen, &pos, p.multi_pv)? {
        Some(answer) => to_json(&answer, &book),
        None => Err(ApiError::new(
            StatusCode::NOT_FOUND,
            "No cloud evaluation available for that position",
        )),
    }
}

/// `GET /v1/book`: `stats --json` of the state served, and its generation.
async fn book(State(s): State<Arc<AppState>>) -> Result<Response, ApiError> {
    let book = s.live.snapshot();
    let stats = crate::ops::stats::stats_of(&s.path, s.game, &book)?;
    let mut v = serde_json::to_value(&stats)
        .map_err(|e| ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()))?;
    if let Some(o) = v.as_object_mut() {
        o.insert("served_generation".into(), book.generation().into());
        o.insert("served_state".into(), book.state_tag().into());
        // The book's file name; where the server keeps it is not the client's business.
        let name = s.path.file_name().map_or_else(
            || s.path.display().to_string(),
            |n| n.to_string_lossy().into_owned(),
        );
        o.insert("path".into(), name.into());
    }
    Ok(json_ok(v.to_string(), Some(&book)))
}

async fn health() -> Response {
    json_ok(r#"{"status":"ok"}"#.to_string(), None)
}

async fn metrics(State(s): State<Arc<AppState>>) -> Response {
    let book = s.live.snapshot();
    let m = book.meta();
    let text = s.metrics.render(&BookGauges {
        positions: m.positions,
        pairs: m.pairs,
        games: m.games,
        generation: book.generation(),
        segments: book.segments().len() as u64,
    });
    let mut r = text.into_response();
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/plain; version=0.0.4; charset=utf-8"),
    );
    r
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ops::import::{ImportOptions, import};
    use crate::ops::progress::ProgressMode;
    use crate::server::metrics::Metrics;
    use crate::store::LiveBook;
    use axum::body::Body;
    use http_body_util::BodyExt;
    use tower::ServiceExt;

    fn sample_state(dir: &std::path::Path) -> Arc<AppState> {
        let book = dir.join("t.book");
        let sample = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/sample.pgn");
        let opts = ImportOptions {
            progress: ProgressMode::None,
            ..Default::default()
        };
        import(&book, &[sample.display().to_string()], &opts).unwrap();
        let (game, b) = Game::open(&book).unwrap();
        Arc::new(AppState {
            path: book,
            game,
            live: LiveBook::from_book(b),
            metrics: Metrics::default(),
            admin: None,
            max_upload: 1 << 20,
            import_lock: Arc::new(tokio::sync::Mutex::new(())),
            stopping: tokio::sync::watch::Sender::new(false),
            upload_idle: std::time::Duration::from_secs(10),
            refresh_warned: std::sync::Mutex::new(None),
        })
    }

    async fn call(app: &Router, uri: &str) -> (StatusCode, String) {
        let req = Request::get(uri).body(Body::empty()).unwrap();
        let r = app.clone().oneshot(req).await.unwrap();
        let status = r.status();
        let body = r.into_body().collect().await.unwrap().to_bytes();
        (status, String::from_utf8(body.to_vec()).unwrap())
    }

    #[tokio::test]
    async fn a_handler_panic_is_a_500_and_the_server_goes_on() {
        let dir = tempfile::tempdir().unwrap();
        let state = sample_state(dir.path());
        let boom = routes().route(
            "/boom",
            get(|| async {
                let fail = std::hint::black_box(true);
                if fail {
                    panic!("secret detail that must not reach the client");
                }
                "unreachable"
            }),
        );
        let app = with_layers(boom, state.clone());
        let (status, body) = call(&app, "/boom").await;
        assert_eq!(status, StatusCode::INTERNAL_SERVER_ERROR);
        let j: serde_json::Value = serde_json::from_str(&body).unwrap();
        assert!(j["error"].as_str().unwrap().contains("the server goes on"));
        assert!(!body.contains("secret"));
        // The same app answers the next requests.
        let (status, body) = call(&app, "/masters?play=e2e4").await;
        assert_eq!(status, StatusCode::OK, "{body}");
        assert_eq!(call(&app, "/health").await.0, StatusCode::OK);
        let text = state.metrics.render(&Default::default());
        assert!(text.contains("route=\"other\",status=\"500\"} 1"), "{text}");
    }
}

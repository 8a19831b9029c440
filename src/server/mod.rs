//! `bookdb serve`: a lichess-opening-explorer-compatible HTTP server on a live book.
//!
//! Every request is answered from one book snapshot ([`crate::store::LiveBook`]); a refresher
//! thread moves the server to each state another process publishes (imports, compactions,
//! migrations) within [`ServeOptions::refresh`]. Connections are accepted by [`listen`], which
//! bounds their number, times out slow request heads and shuts down gracefully.

pub mod admin;
pub mod error;
mod head_timer;
mod listen;
pub mod metrics;
mod openings;
mod options;
pub mod page;
pub mod params;
mod redact;
pub mod routes;
pub mod state;
pub mod token;
mod wire;

use std::sync::Arc;
use std::sync::atomic::Ordering::Relaxed;

use crate::error::{Error, Result};
use crate::ops::game::Game;
use crate::store::{CacheSizes, LiveBook};
use metrics::Metrics;
pub use options::{
    ADMIN_DESCRIPTOR_RESERVE, DEFAULT_BLOCK_CACHE_MIB, DESCRIPTOR_RESERVE, ServeOptions,
    connection_cap,
};
use state::{AppState, Refresher, unix_now};
use token::AdminToken;

/// Runs the server until SIGTERM or SIGINT; then finishes the requests in flight (and an
/// admin import) and returns.
pub fn serve(opts: ServeOptions) -> Result<()> {
    let caches = CacheSizes {
        block_bytes: opts.block_cache_bytes,
        ..CacheSizes::default()
    };
    let (game, book) = Game::open_with_caches(&opts.book, caches)?;
    admin::remove_stale_uploads(&opts.book);
    let admin = opts
        .admin_token_file
        .as_deref()
        .map(AdminToken::read)
        .transpose()?;
    let state = Arc::new(AppState {
        path: opts.book.clone(),
        game,
        live: LiveBook::from_book(book),
        metrics: Metrics::default(),
        admin,
        max_upload: opts.max_upload,
        import_lock: Arc::new(tokio::sync::Mutex::new(())),
        stopping: tokio::sync::watch::Sender::new(false),
        upload_idle: opts.head_timeout,
        refresh_warned: std::sync::Mutex::new(None),
    });
    state.metrics.last_change_unix.store(unix_now(), Relaxed);
    // Build the opening-name table now rather than in the first request.
    let _ = crate::chess::openings::name_of(&shakmaty::Chess::default());
    let mut rt = tokio::runtime::Builder::new_multi_thread();
    if opts.threads > 0 {
        rt.worker_threads(opts.threads);
    }
    let rt = rt
        .enable_all()
        .thread_name("bookdb-serve")
        .build()
        .map_err(|source| Error::Io {
            context: "starting the server's runtime".into(),
            source,
        })?;
    let refresher = Refresher::start(state.clone(), opts.refresh).map_err(|source| Error::Io {
        context: "starting the book refresher thread".into(),
        source,
    })?;
    let result = rt.block_on(listen::run(state, &opts));
    drop(refresher);
    result
}

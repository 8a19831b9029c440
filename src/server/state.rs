//! What every request of a server shares: the live book, its game, the counters, the admin
//! token; and the refresher that moves the book to each state writers publish.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering::Relaxed};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use super::metrics::Metrics;
use super::token::AdminToken;
use crate::ops::game::Game;
use crate::store::LiveBook;

/// The state of a running server.
pub struct AppState {
    /// The book's path, as given.
    pub path: PathBuf,
    pub game: Game,
    pub live: LiveBook,
    pub metrics: Metrics,
    /// `None`: `POST /v1/import` is off.
    pub admin: Option<AdminToken>,
    /// Largest upload `POST /v1/import` accepts, bytes.
    pub max_upload: u64,
    /// Held by the admin import running (one at a time); shutdown waits for it.
    pub import_lock: Arc<tokio::sync::Mutex<()>>,
    /// Set when the server stops (SIGTERM, SIGINT): an upload still being received is given
    /// up (it is not an import yet), one received whole is imported to its end.
    pub stopping: tokio::sync::watch::Sender<bool>,
    /// An admin upload that sends nothing for this long is refused (408) and its slot freed
    /// (`--head-timeout`, which bounds a request head the same way).
    pub upload_idle: std::time::Duration,
}

impl AppState {
    /// Moves to the newest published state; counts it. Errors leave the previous state served
    /// (a writer may be half-way; the next check sees its finished work).
    pub fn refresh(&self) {
        match self.live.refresh() {
            Ok(true) => {
                self.metrics.refreshes.fetch_add(1, Relaxed);
                self.metrics.last_change_unix.store(unix_now(), Relaxed);
                tracing::info!(
                    generation = self.live.snapshot().generation(),
                    "book changed; now serving it"
                );
            }
            Ok(false) => {}
            Err(e) => {
                self.metrics.refresh_errors.fetch_add(1, Relaxed);
                tracing::warn!(error = %e, "checking the book for changes failed; serving the previous state");
            }
        }
    }
}

pub(crate) fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// A thread that calls [`AppState::refresh`] every `every` until dropped.
pub(crate) struct Refresher {
    stop: Arc<AtomicBool>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Refresher {
    pub(crate) fn start(state: Arc<AppState>, every: Duration) -> std::io::Result<Refresher> {
        let stop = Arc::new(AtomicBool::new(false));
        let flag = stop.clone();
        let thread = std::thread::Builder::new()
            .name("bookdb-refresh".into())
            .spawn(move || {
                while !flag.load(Relaxed) {
                    std::thread::sleep(every);
                    state.refresh();
                }
            })?;
        Ok(Refresher {
            stop,
            thread: Some(thread),
        })
    }
}

impl Drop for Refresher {
    fn drop(&mut self) {
        self.stop.store(true, Relaxed);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

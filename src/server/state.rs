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
    /// The refresh error last logged and when: the same error again is logged once a
    /// [`REFRESH_WARN_EVERY`], not at every check (a book removed while served would log 10
    /// lines a second); every one is counted in the metrics.
    pub refresh_warned: std::sync::Mutex<Option<(String, std::time::Instant)>>,
}

/// The same refresh error is logged at most once in this long.
pub const REFRESH_WARN_EVERY: Duration = Duration::from_secs(60);

impl AppState {
    /// Moves to the newest published state; counts it. Errors leave the previous state served
    /// (a writer may be half-way; the next check sees its finished work).
    pub fn refresh(&self) {
        match self.live.refresh() {
            Ok(true) => {
                if let Ok(mut w) = self.refresh_warned.lock() {
                    *w = None;
                }
                self.metrics.refreshes.fetch_add(1, Relaxed);
                self.metrics.last_change_unix.store(unix_now(), Relaxed);
                tracing::info!(
                    generation = self.live.snapshot().generation(),
                    "book changed; now serving it"
                );
            }
            Ok(false) => {
                if let Ok(mut w) = self.refresh_warned.lock()
                    && w.take().is_some()
                {
                    tracing::info!("the book can be checked for changes again");
                }
            }
            Err(e) => {
                self.metrics.refresh_errors.fetch_add(1, Relaxed);
                let text = e.to_string();
                let now = std::time::Instant::now();
                let due = match self.refresh_warned.lock() {
                    Ok(mut w) => {
                        let due = !matches!(&*w, Some((last, at))
                            if *last == text && now.duration_since(*at) < REFRESH_WARN_EVERY);
                        if due {
                            *w = Some((text, now));
                        }
                        due
                    }
                    Err(_) => true,
                };
                if due {
                    tracing::warn!(error = %e, "checking the book for changes failed; serving the previous state (the same error is logged again at most once a minute; bookdb_book_refresh_errors_total counts each)");
                }
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

//! Accepting connections: at most `--max-connections` at once (more are closed at once), a
//! deadline for each request head (slow clients), and a graceful end on SIGTERM/SIGINT.

use std::io::Write;
use std::sync::Arc;
use std::sync::atomic::Ordering::Relaxed;
use std::time::Duration;

use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tokio::sync::Semaphore;

use super::options::ServeOptions;
use super::routes::app;
use super::state::AppState;
use crate::error::{Error, Result};

/// Largest request head (request line and headers), bytes; larger ones get 431.
const MAX_HEAD: usize = 64 * 1024;

pub(super) async fn run(state: Arc<AppState>, opts: &ServeOptions) -> Result<()> {
    // Signals are caught from before the listening line is printed.
    let shutdown = shutdown_signal().map_err(|source| Error::Io {
        context: "installing the SIGTERM/SIGINT handlers".into(),
        source,
    })?;
    let listener = TcpListener::bind(opts.listen)
        .await
        .map_err(|source| Error::Io {
            context: format!(
                "listening on {} (is another server there? choose another with --listen)",
                opts.listen
            ),
            source,
        })?;
    let addr = listener.local_addr().map_err(|source| Error::Io {
        context: "reading the listening address".into(),
        source,
    })?;
    announce(&state, addr, opts.json);

    let router = app(state.clone());
    let slots = Arc::new(Semaphore::new(opts.max_connections));
    let graceful = GracefulShutdown::new();
    let mut http = http1::Builder::new();
    http.timer(TokioTimer::new())
        .header_read_timeout(opts.head_timeout)
        .max_buf_size(MAX_HEAD)
        .keep_alive(true);
    tokio::pin!(shutdown);
    loop {
        let accepted = tokio::select! {
            a = listener.accept() => a,
            signal = &mut shutdown => {
                tracing::info!(signal, "shutting down: finishing the requests in flight");
                break;
            }
        };
        let (stream, _peer) = match accepted {
            Ok(x) => x,
            Err(e) => {
                // Out of file descriptors or a connection reset before accept: back off a
                // moment instead of spinning.
                tracing::warn!(error = %e, "accept failed");
                tokio::time::sleep(Duration::from_millis(20)).await;
                continue;
            }
        };
        let Ok(slot) = slots.clone().try_acquire_owned() else {
            state.metrics.connections_refused.fetch_add(1, Relaxed);
            drop(stream);
            continue;
        };
        let _ = stream.set_nodelay(true);
        state.metrics.connections_total.fetch_add(1, Relaxed);
        state.metrics.connections_open.fetch_add(1, Relaxed);
        let conn = http.serve_connection(
            TokioIo::new(stream),
            TowerToHyperService::new(router.clone()),
        );
        let conn = graceful.watch(conn);
        let st = state.clone();
        tokio::spawn(async move {
            let _ = conn.await;
            st.metrics.connections_open.fetch_sub(1, Relaxed);
            drop(slot);
        });
    }
    drop(listener);
    tokio::select! {
        _ = graceful.shutdown() => {}
        _ = tokio::time::sleep(opts.shutdown_grace) => {
            tracing::warn!(
                "requests still running after {:?}; closing their connections",
                opts.shutdown_grace
            );
        }
    }
    // An admin import runs to its end, whatever the grace period: it holds this lock.
    if state.import_lock.try_lock().is_err() {
        tracing::info!("waiting for the admin import to finish");
    }
    let _ = state.import_lock.lock().await;
    tracing::info!("stopped");
    Ok(())
}

/// The first line on stdout says where the server listens (tests and scripts read it).
fn announce(state: &AppState, addr: std::net::SocketAddr, json: bool) {
    let book = state.live.snapshot();
    let line = if json {
        serde_json::json!({
            "listening": format!("http://{addr}"),
            "book": state.path.display().to_string(),
            "game": state.game.to_string(),
            "generation": book.generation(),
            "positions": book.meta().positions,
        })
        .to_string()
    } else {
        format!(
            "listening on http://{addr} (book {}, {} positions, generation {})",
            state.path.display(),
            book.meta().positions,
            book.generation()
        )
    };
    let mut out = std::io::stdout().lock();
    let _ = writeln!(out, "{line}");
    let _ = out.flush();
}

/// A future that resolves with the signal's name on SIGTERM or SIGINT; the handlers are in
/// place when this returns.
fn shutdown_signal() -> std::io::Result<impl Future<Output = &'static str>> {
    use tokio::signal::unix::{SignalKind, signal};
    let mut term = signal(SignalKind::terminate())?;
    let mut int = signal(SignalKind::interrupt())?;
    Ok(async move {
        tokio::select! {
            _ = term.recv() => "SIGTERM",
            _ = int.recv() => "SIGINT",
        }
    })
}

//! Accepting connections: at most `--max-connections` at once (more are closed at once), a
//! deadline for each request head (slow clients: [`HeadTimer`]), and a graceful end on
//! SIGTERM/SIGINT.

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

use super::head_timer::{HeadTimer, backstop};
use super::options::{MAX_HEAD, MAX_HEADERS, ServeOptions, connection_cap, open_file_limit};
use super::routes::app;
use super::state::AppState;
use super::wire::JsonRefusals;
use crate::error::{Error, Result};

/// The connection cap: `--max-connections`, lowered to what the open-file limit leaves after
/// the book's reserve (said in the log at start).
fn connections_allowed(opts: &ServeOptions, admin: bool) -> usize {
    let Some(nofile) = open_file_limit() else {
        return opts.max_connections.max(1);
    };
    let (cap, why) = connection_cap(opts.max_connections, nofile, admin);
    if opts.max_connections != 0 && cap < opts.max_connections {
        tracing::warn!(max_connections = cap, "{why}");
    } else {
        tracing::info!(
            max_connections = cap,
            "serving at most {cap} connections at once: {why}"
        );
    }
    cap
}

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
    let max_connections = connections_allowed(opts, state.admin.is_some());
    let slots = Arc::new(Semaphore::new(max_connections));
    let graceful = GracefulShutdown::new();
    let mut http = http1::Builder::new();
    http.timer(TokioTimer::new())
        .header_read_timeout(backstop(opts.head_timeout))
        .max_buf_size(MAX_HEAD)
        .max_headers(MAX_HEADERS)
        // Flat writes: hyper's own refusals are then one write each, which JsonRefusals
        // gives a JSON body.
        .writev(false)
        // A client that sends its request and closes its side (or goes away at once) still
        // has the request run to its end, instead of hyper dropping it at the EOF: an admin
        // upload received whole is imported, and a half-closed client gets its answer.
        .half_close(true)
        .keep_alive(true);
    tokio::pin!(shutdown);
    loop {
        let accepted = tokio::select! {
            a = listener.accept() => a,
            signal = &mut shutdown => {
                tracing::info!(signal, "shutting down: finishing the requests in flight");
                state.stopping.send_replace(true);
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
            TokioIo::new(JsonRefusals::new(HeadTimer::new(stream, opts.head_timeout))),
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

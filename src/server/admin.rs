//! `POST /v1/import`: the admin route that imports a PGN body (plain or compressed) through
//! the same exactly-once pipeline as `bookdb import`, behind the bearer token of `token.rs`.

use std::os::unix::fs::{MetadataExt, OpenOptionsExt, PermissionsExt};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::Ordering::Relaxed;
use std::time::Duration;

use axum::body::Body;
use axum::extract::State;
use axum::http::{HeaderMap, StatusCode, Uri, header};
use axum::response::{IntoResponse, Response};
use http_body_util::BodyExt;
use tokio::io::AsyncWriteExt;

use super::error::ApiError;
use super::error::json_ok;
use super::params;
use super::state::AppState;
use crate::ops::import::{self as pipeline, ImportOptions};
use crate::store::LockWait;

/// How long an admin import waits for another writer (a cron import, a compaction) before
/// answering 503.
const LOCK_WAIT: Duration = Duration::from_secs(30);

/// `POST /v1/import?maxPly=&minRating=&dedupe=&force=`: the body is games (PGN, or what
/// `bookdb import --game othello` reads for an Othello book), plain or zstd/gzip/bzip2/xz.
pub async fn import(
    State(s): State<Arc<AppState>>,
    headers: HeaderMap,
    uri: Uri,
    body: Body,
) -> std::result::Result<Response, ApiError> {
    let (p, guard) = match admit(&s, &headers, &uri) {
        Ok(admitted) => admitted,
        Err(refused) => {
            // A client that asked `Expect: 100-continue` has sent no body and sends none
            // when the refusal comes first: reading the body would make hyper send the
            // 100 Continue that starts the upload.
            if !expects_continue(&headers) {
                drain(body).await;
            }
            return Err(refused);
        }
    };
    // The upload is received and imported by a task of its own: hyper drops this request's
    // future when the client closes its side (a client that sends the whole body and goes
    // away), and a body received whole must still be imported, as one cut short must not.
    tokio::spawn(receive_and_import(s, p, guard, body))
        .await
        .map_err(task_failed)?
}

/// The answer when the admin import's task failed (a panic: its message goes to the log,
/// never to the client, as for every other handler).
fn task_failed(e: tokio::task::JoinError) -> ApiError {
    tracing::error!(error = %e, "the admin import's task failed; answered 500, serving on");
    ApiError::new(
        StatusCode::INTERNAL_SERVER_ERROR,
        "internal error: this request failed (the server log says why); the server goes on",
    )
}

/// Receives an admitted upload beside the book and imports it (holding the admin import's
/// `guard` to the end); the answer.
async fn receive_and_import(
    s: Arc<AppState>,
    p: params::ImportParams,
    guard: tokio::sync::OwnedMutexGuard<()>,
    body: Body,
) -> std::result::Result<Response, ApiError> {
    let (dir, file) = receive(&s, body).await?;
    let book = s.path.clone();
    let mut opts = ImportOptions {
        game: s.game,
        dedupe: p.dedupe,
        force: p.force,
        // One worker: the server keeps a core for answering while it imports.
        jobs: 1,
        lock_wait: LockWait::For(LOCK_WAIT),
        ..Default::default()
    };
    if let Some(m) = p.max_ply {
        opts.rules.max_ply = m as usize;
    }
    opts.rules.min_rating = p.min_rating;
    tracing::info!(bytes = file_len(&file), "admin import started");
    let state = s.clone();
    // The import runs to its end even if the client goes away: the guard and the upload
    // directory live in the blocking task, and shutdown waits for the guard.
    let summary = tokio::task::spawn_blocking(move || {
        let _dir = dir;
        let r = pipeline::import(&book, &[file.display().to_string()], &opts);
        state.refresh();
        // Counted once the next admin import may begin (a client that waits for the count
        // and sends the next upload is not refused as a second import).
        drop(guard);
        state.metrics.imports.fetch_add(1, Relaxed);
        r
    })
    .await
    .map_err(task_failed)??;
    tracing::info!(
        games = summary.games_imported,
        positions_added = summary.positions_added,
        "admin import finished"
    );
    if let Some(f) = summary.failed_inputs.first() {
        return Err(ApiError::bad_request(format!(
            "the body was not imported: {}",
            f.error
        )));
    }
    // The client learns what happened to its body, not where the server stored it: every
    // name of it (already imported, empty, a warning's) is "the upload".
    let mut summary = summary;
    for input in &mut summary.already_imported {
        *input = super::redact::UPLOAD_NAME.into();
    }
    let body = serde_json::to_string(&summary)
        .map_err(|e| ApiError::new(StatusCode::INTERNAL_SERVER_ERROR, e.to_string()))?;
    let body = super::redact::redact_paths(&body, &s.path);
    Ok(json_ok(body, Some(&s.live.snapshot())).into_response())
}

/// The checks made before the body is read: the route is on, the token, the parameters, the
/// declared size, no other admin import running (its guard is returned).
fn admit(
    s: &AppState,
    headers: &HeaderMap,
    uri: &Uri,
) -> std::result::Result<(params::ImportParams, tokio::sync::OwnedMutexGuard<()>), ApiError> {
    let Some(token) = &s.admin else {
        return Err(ApiError::new(
            StatusCode::FORBIDDEN,
            "POST /v1/import is off: start bookdb serve with --admin-token-file FILE to allow it",
        ));
    };
    token.check(headers.get(header::AUTHORIZATION))?;
    let p = params::import(uri.query().unwrap_or(""))?;
    if let Some(n) = headers
        .get(header::CONTENT_LENGTH)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.parse::<u64>().ok())
        && n > s.max_upload
    {
        return Err(too_large(s.max_upload));
    }
    let Ok(guard) = s.import_lock.clone().try_lock_owned() else {
        return Err(ApiError::new(
            StatusCode::SERVICE_UNAVAILABLE,
            "another POST /v1/import is running; try again when it has finished",
        ));
    };
    Ok((p, guard))
}

fn expects_continue(headers: &HeaderMap) -> bool {
    headers
        .get(header::EXPECT)
        .is_some_and(|v| v.as_bytes().eq_ignore_ascii_case(b"100-continue"))
}

/// At most this much of a refused request's body is read and dropped…
const DRAIN_BYTES: usize = 8 << 20;
/// …for at most this long.
const DRAIN_TIME: Duration = Duration::from_secs(2);

/// Reads and drops what a client is still sending of a refused request (bounded by
/// [`DRAIN_BYTES`] and [`DRAIN_TIME`]), so that it reads the refusal rather than a connection
/// reset: closing a socket with unread data makes the kernel reset it, and the client's
/// send fails before it sees the answer (curl would report "connection reset" instead of
/// the 401).
async fn drain(mut body: Body) {
    let read = async {
        let mut left = DRAIN_BYTES;
        while let Some(Ok(frame)) = body.frame().await {
            let n = frame.data_ref().map_or(0, |d| d.len());
            if n >= left {
                break;
            }
            left -= n;
        }
    };
    let _ = tokio::time::timeout(DRAIN_TIME, read).await;
}

fn too_large(max: u64) -> ApiError {
    ApiError::new(
        StatusCode::PAYLOAD_TOO_LARGE,
        format!(
            "the body is larger than the server's --max-upload of {max} bytes; compress it, split it, or run bookdb import on the server"
        ),
    )
}

fn file_len(p: &Path) -> u64 {
    std::fs::metadata(p).map_or(0, |m| m.len())
}

/// Streams the body into a private directory beside the book (where the space for the book
/// is): the directory (removed when dropped) and the file.
async fn receive(
    s: &AppState,
    mut body: Body,
) -> std::result::Result<(tempfile::TempDir, PathBuf), ApiError> {
    let (book, max, idle) = (&s.path, s.max_upload, s.upload_idle);
    let mut stopping = s.stopping.subscribe();
    let io = |e: std::io::Error| {
        ApiError::new(
            StatusCode::INTERNAL_SERVER_ERROR,
            format!("storing the upload beside the book: {e}"),
        )
    };
    let parent = crate::store::files::dir_of(book);
    let (mode, gid) = std::fs::metadata(book).map_or((0o600, None), |m| {
        (m.permissions().mode() & 0o666, Some(m.gid()))
    });
    // The directory and the file get the book's mode (search where it is readable) and
    // group, whatever the umask: the book's other users can see and clean them as the book.
    let dir_mode = mode | 0o700 | ((mode & 0o444) >> 2);
    let dir = tempfile::Builder::new()
        .prefix(UPLOAD_PREFIX)
        .permissions(std::fs::Permissions::from_mode(dir_mode))
        .tempdir_in(parent)
        .map_err(io)?;
    std::fs::set_permissions(dir.path(), std::fs::Permissions::from_mode(dir_mode)).map_err(io)?;
    let _ = std::os::unix::fs::chown(dir.path(), None, gid);
    // The marker says bookdb made the directory and which process uses it (stale ones are
    // removed at the next start, remove_stale_uploads).
    std::fs::write(
        dir.path().join(UPLOAD_MARKER),
        format!("bookdb upload\npid {}\n", std::process::id()),
    )
    .map_err(io)?;
    let path = dir.path().join("upload");
    let std_file = std::fs::OpenOptions::new()
        .write(true)
        .create_new(true)
        .mode(mode | 0o600)
        .open(&path)
        .map_err(io)?;
    std_file
        .set_permissions(std::fs::Permissions::from_mode(mode | 0o600))
        .map_err(io)?;
    let _ = std::os::unix::fs::fchown(&std_file, None, gid);
    let mut file = tokio::fs::File::from_std(std_file);
    let mut got: u64 = 0;
    loop {
        // Each part of the body within `idle`, and none once the server stops: a client that
        // stalls or trickles holds neither the one admin slot nor the server's stop for long.
        let frame = tokio::select! {
            f = tokio::time::timeout(idle, body.frame()) => match f {
                Ok(Some(f)) => f,
                Ok(None) => break,
                Err(_) => {
                    return Err(ApiError::new(
                        StatusCode::REQUEST_TIMEOUT,
                        format!(
                            "the upload stalled: nothing came for {} s (--head-timeout) after {got} bytes; send it again",
                            idle.as_secs()
                        ),
                    ));
                }
            },
            _ = stopping.wait_for(|s| *s) => {
                return Err(ApiError::new(
                    StatusCode::SERVICE_UNAVAILABLE,
                    format!(
                        "the server is stopping: the upload was given up after {got} bytes, nothing was imported; send it again"
                    ),
                ));
            }
        };
        let frame = frame.map_err(|e| {
            ApiError::bad_request(format!("the upload broke off after {got} bytes: {e}"))
        })?;
        if let Ok(data) = frame.into_data() {
            got += data.len() as u64;
            if got > max {
                return Err(too_large(max));
            }
            file.write_all(&data).await.map_err(io)?;
        }
    }
    file.flush().await.map_err(io)?;
    if got == 0 {
        return Err(ApiError::bad_request(
            "the body is empty: send the games to import (PGN, plain or compressed)",
        ));
    }
    Ok((dir, path))
}

/// Upload directories are `.bookdb-upload-XXXXXX` beside the book…
const UPLOAD_PREFIX: &str = ".bookdb-upload-";
/// …holding this marker: `bookdb upload\npid <pid>\n`.
const UPLOAD_MARKER: &str = "bookdb-upload";

/// Removes the upload directories beside `book` that a killed server left: those holding
/// bookdb's marker whose process is gone (or is no longer a bookdb). A directory without the
/// marker is not bookdb's and is left alone, as is one a running server is receiving into.
pub(crate) fn remove_stale_uploads(book: &Path) {
    let dir = crate::store::files::dir_of(book);
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    for e in entries.flatten() {
        let name = e.file_name();
        if !name.to_string_lossy().starts_with(UPLOAD_PREFIX) {
            continue;
        }
        let path = e.path();
        // Never through a symlink: only a real directory is ours to remove.
        if !std::fs::symlink_metadata(&path).is_ok_and(|m| m.is_dir()) {
            continue;
        }
        let Some(pid) = std::fs::read_to_string(path.join(UPLOAD_MARKER))
            .ok()
            .as_deref()
            .and_then(upload_owner)
        else {
            continue;
        };
        if pid != std::process::id() && process_is_bookdb(pid) {
            continue;
        }
        match std::fs::remove_dir_all(&path) {
            Ok(()) => tracing::info!(
                dir = %name.to_string_lossy(),
                pid,
                "removed the upload directory of a server that is gone"
            ),
            Err(e) => tracing::warn!(
                dir = %name.to_string_lossy(),
                error = %e,
                "cannot remove the upload directory of a server that is gone"
            ),
        }
    }
}

/// The pid a marker names; `None` if it is not bookdb's marker.
fn upload_owner(marker: &str) -> Option<u32> {
    let mut lines = marker.lines();
    if lines.next()? != "bookdb upload" {
        return None;
    }
    lines.next()?.strip_prefix("pid ")?.parse().ok()
}

/// Whether `pid` is a running bookdb process (a pid reused by another program is not).
fn process_is_bookdb(pid: u32) -> bool {
    std::fs::read_to_string(format!("/proc/{pid}/comm"))
        .is_ok_and(|comm| comm.trim_end().starts_with("bookdb"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn upload_markers_name_their_process() {
        assert_eq!(upload_owner("bookdb upload\npid 42\n"), Some(42));
        assert_eq!(upload_owner("something else\npid 42\n"), None);
        assert_eq!(upload_owner("bookdb upload\n"), None);
        assert!(!process_is_bookdb(u32::MAX));
    }
}

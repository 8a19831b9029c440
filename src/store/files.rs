//! The file-handling rules every book writer (import, merge, compact, Polyglot import) follows:
//! the exclusive writer lock, the names of a book's sidecar files, the removal of temporary
//! books left by interrupted writers, atomic writes of small files, and the crash points of
//! the crash tests.

use std::io::Write;
use std::path::{Path, PathBuf};

use crate::store::error::{Error, Result};

/// Exclusive writer lock on a book (`<book>.lock`), held while importing, merging or compacting.
pub(crate) struct WriterLock {
    _file: std::fs::File,
}

impl WriterLock {
    pub(crate) fn acquire(book: &Path) -> Result<WriterLock> {
        let path = sidecar(book, "lock");
        let file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .map_err(|e| Error::io(format!("creating lock file {}", path.display()), e))?;
        match file.try_lock() {
            Ok(()) => Ok(WriterLock { _file: file }),
            Err(std::fs::TryLockError::WouldBlock) => Err(Error::Busy {
                path: book.to_path_buf(),
                what: format!(
                    "another bookdb process is writing this book (lock {} held); wait for it to finish",
                    path.display()
                ),
            }),
            Err(std::fs::TryLockError::Error(e)) => {
                Err(Error::io(format!("locking {}", path.display()), e))
            }
        }
    }
}

/// `<dir>/<name>.<suffix>` beside the book.
pub(crate) fn sidecar(book: &Path, suffix: &str) -> PathBuf {
    let mut name = book.file_name().unwrap_or_default().to_os_string();
    name.push(format!(".{suffix}"));
    book.with_file_name(name)
}

/// The directory holding `path` (`.` for a bare file name).
pub(crate) fn dir_of(path: &Path) -> &Path {
    path.parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."))
}

/// Syncs the directory holding `path`, so that renames and removals in it are durable (best
/// effort: some file systems refuse to sync a directory).
pub(crate) fn sync_dir(path: &Path) {
    if let Ok(d) = std::fs::File::open(dir_of(path)) {
        let _ = d.sync_all();
    }
}

/// Removes temporary files left by interrupted writers of `book` (the caller holds the lock):
/// `.<book>.tmp-<pid>` (a new base) and `.<book>.<sidecar>.tmp-<pid>` (a new segment, manifest
/// or other sidecar), all made by [`temp_sibling`].
pub(crate) fn remove_stale_temp_books(book: &Path) {
    let name = book.file_name().unwrap_or_default().to_string_lossy();
    let own = format!(".{name}.tmp-");
    let sidecars = format!(".{name}.");
    if let Ok(rd) = std::fs::read_dir(dir_of(book)) {
        for e in rd.flatten() {
            let f = e.file_name().to_string_lossy().into_owned();
            if f.starts_with(&own) || (f.starts_with(&sidecars) && f.contains(".tmp-")) {
                let _ = std::fs::remove_file(e.path());
            }
        }
    }
}

/// Writes `bytes` to `path` atomically: into a temporary sibling ([`temp_sibling`]), synced,
/// then renamed over `path`, and the directory synced.
pub(crate) fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    let tmp = temp_sibling(path)?;
    let ctx = |e| Error::io(format!("writing {}", path.display()), e);
    let mut f = std::fs::File::create(&tmp).map_err(ctx)?;
    f.write_all(bytes).map_err(ctx)?;
    f.sync_all().map_err(ctx)?;
    drop(f);
    if let Err(e) = std::fs::rename(&tmp, path) {
        let _ = std::fs::remove_file(&tmp);
        return Err(ctx(e));
    }
    sync_dir(path);
    Ok(())
}

/// Test hook for crash tests: when the environment variable `BOOKDB_CRASH_AT` names this
/// point, the process kills itself with SIGKILL here (no unwinding, no cleanup: what a power
/// cut or `kill -9` leaves). `name@N` kills at the N-th time the point is reached (from 1).
/// Costs one atomic load when the variable is unset.
pub(crate) fn crash_point(name: &str) {
    static WANTED: std::sync::OnceLock<Option<(String, u64)>> = std::sync::OnceLock::new();
    static HITS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let wanted = WANTED.get_or_init(|| {
        let v = std::env::var("BOOKDB_CRASH_AT").ok()?;
        match v.split_once('@') {
            Some((n, k)) => Some((n.to_string(), k.parse().ok()?)),
            None => Some((v, 1)),
        }
    });
    if let Some((point, nth)) = wanted
        && point == name
        && HITS.fetch_add(1, std::sync::atomic::Ordering::SeqCst) + 1 == *nth
    {
        // SAFETY: kill(2) with our own pid and a valid signal number has no memory effects.
        unsafe {
            libc::kill(libc::getpid(), libc::SIGKILL);
        }
    }
}

/// The temporary file a new version of `path` is written to before it is renamed into place:
/// `.<name>.tmp-<pid>` in the same directory (so the rename is atomic).
pub(crate) fn temp_sibling(path: &Path) -> Result<PathBuf> {
    let dir = dir_of(path);
    let name = path
        .file_name()
        .ok_or_else(|| Error::Usage(format!("{}: not a file path", path.display())))?;
    Ok(dir.join(format!(
        ".{}.tmp-{}",
        name.to_string_lossy(),
        std::process::id()
    )))
}

//! The file-handling rules every book writer (import, merge, compact, Polyglot import) follows:
//! the exclusive writer lock, the names of a book's sidecar files, the removal of temporary
//! books left by interrupted writers, and atomic writes of small files.

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

/// Removes temporary book files left by interrupted writers (the caller holds the lock).
pub(crate) fn remove_stale_temp_books(book: &Path) {
    let dir = book
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let prefix = format!(
        ".{}.tmp-",
        book.file_name().unwrap_or_default().to_string_lossy()
    );
    if let Ok(rd) = std::fs::read_dir(dir) {
        for e in rd.flatten() {
            if e.file_name().to_string_lossy().starts_with(&prefix) {
                let _ = std::fs::remove_file(e.path());
            }
        }
    }
}

/// Writes `bytes` to `path` atomically: into `path` with the extension `tmp`, synced, then
/// renamed over `path` (and the directory synced, best effort).
pub(crate) fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    let tmp = path.with_extension("tmp");
    let ctx = |e| Error::io(format!("writing {}", path.display()), e);
    let mut f = std::fs::File::create(&tmp).map_err(ctx)?;
    f.write_all(bytes).map_err(ctx)?;
    f.sync_all().map_err(ctx)?;
    std::fs::rename(&tmp, path).map_err(ctx)?;
    if let Some(d) = path.parent()
        && let Ok(d) = std::fs::File::open(d)
    {
        let _ = d.sync_all();
    }
    Ok(())
}

/// The temporary file a new version of `path` is written to before it is renamed into place:
/// `.<name>.tmp-<pid>` in the same directory (so the rename is atomic).
pub(crate) fn temp_sibling(path: &Path) -> Result<PathBuf> {
    let dir = path
        .parent()
        .filter(|p| !p.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let name = path
        .file_name()
        .ok_or_else(|| Error::Usage(format!("{}: not a file path", path.display())))?;
    Ok(dir.join(format!(
        ".{}.tmp-{}",
        name.to_string_lossy(),
        std::process::id()
    )))
}

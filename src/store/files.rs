//! The file-handling rules every book writer (import, merge, compact, Polyglot import) follows:
//! the exclusive writer lock, the names of a book's sidecar files, the removal of temporary
//! books left by interrupted writers, atomic writes of small files, and the crash points of
//! the crash tests.

use std::io::Write;
use std::path::{Path, PathBuf};

use crate::store::error::{Error, Result};

/// How long a writer waits for another writer's lock on the same book (`--wait[=SECONDS]`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum LockWait {
    /// Fail at once with [`Error::Busy`] (the default).
    #[default]
    No,
    /// Wait up to this long, then fail with [`Error::Busy`].
    For(std::time::Duration),
    /// Wait as long as it takes.
    Forever,
}

/// How often a waiting writer tries the lock again.
const LOCK_POLL: std::time::Duration = std::time::Duration::from_millis(100);

/// Exclusive writer lock on a book (`<book>.lock`), held while importing, merging or compacting.
pub(crate) struct WriterLock {
    _file: std::fs::File,
}

impl WriterLock {
    /// Takes the lock, waiting for another writer to release it as `wait` allows (polling).
    pub(crate) fn acquire(book: &Path, wait: LockWait) -> Result<WriterLock> {
        let path = sidecar(book, "lock");
        let file = std::fs::OpenOptions::new()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&path)
            .map_err(|e| Error::io(format!("creating lock file {}", path.display()), e))?;
        let start = std::time::Instant::now();
        loop {
            match file.try_lock() {
                Ok(()) => return Ok(WriterLock { _file: file }),
                Err(std::fs::TryLockError::WouldBlock) => {
                    let waited = start.elapsed();
                    let nap = match wait {
                        LockWait::No => None,
                        LockWait::For(d) if waited >= d => None,
                        LockWait::For(d) => Some(LOCK_POLL.min(d - waited)),
                        LockWait::Forever => Some(LOCK_POLL),
                    };
                    let Some(nap) = nap else {
                        let hint = match wait {
                            LockWait::No => {
                                "wait for it to finish, or pass --wait[=SECONDS] to wait for it"
                                    .to_string()
                            }
                            _ => format!(
                                "gave up after waiting {:.1}s; try again later or wait longer",
                                waited.as_secs_f64()
                            ),
                        };
                        return Err(Error::Busy {
                            path: book.to_path_buf(),
                            what: format!(
                                "another bookdb process is writing this book (lock {} held); {hint}",
                                path.display()
                            ),
                        });
                    };
                    std::thread::sleep(nap.max(std::time::Duration::from_millis(1)));
                }
                Err(std::fs::TryLockError::Error(e)) => {
                    return Err(Error::io(format!("locking {}", path.display()), e));
                }
            }
        }
    }
}

/// Gives `new_file` (a new version of the book at `existing`, before it is renamed over it)
/// the existing file's permission bits, owner and group, so that a rewrite under another
/// umask or by another user does not lock out the book's readers. Nothing is done if
/// `existing` does not exist (a new book keeps the umask's mode). The owner and group are
/// changed only where they differ; where the owner cannot be changed (not root), the group
/// alone is set, and only a group that cannot be kept is an error.
pub(crate) fn inherit_metadata(existing: &Path, new_file: &std::fs::File) -> Result<()> {
    use std::os::unix::fs::{MetadataExt, fchown};
    let old = match std::fs::metadata(existing) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => {
            return Err(Error::io(
                format!("reading the metadata of {}", existing.display()),
                e,
            ));
        }
    };
    let ctx = |what: &str, e| Error::io(format!("{what} of the new {}", existing.display()), e);
    let new = new_file
        .metadata()
        .map_err(|e| ctx("reading the metadata", e))?;
    if (new.uid(), new.gid()) != (old.uid(), old.gid())
        && let Err(e) = fchown(new_file, Some(old.uid()), Some(old.gid()))
    {
        if e.kind() != std::io::ErrorKind::PermissionDenied {
            return Err(ctx("setting the owner", e));
        }
        // Not permitted to give the file another owner (not root): the group and the mode
        // still reach the readers that the group reached.
        if new.gid() != old.gid() {
            fchown(new_file, None, Some(old.gid())).map_err(|e| {
                Error::io(
                    format!(
                        "{}: the rewritten book cannot keep its group {} (run as the book's owner's group member or root)",
                        existing.display(),
                        old.gid()
                    ),
                    e,
                )
            })?;
        }
    }
    // After chown, which clears set-id bits.
    new_file
        .set_permissions(old.permissions())
        .map_err(|e| ctx("setting the permissions", e))?;
    Ok(())
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
/// `.<book>.tmp-<pid>` (a new base), `.<book>.seg-<g>.tmp-<pid>` (a new segment) and
/// `.<book>.live.tmp-<pid>` (a new manifest), all made by [`temp_sibling`].
pub(crate) fn remove_stale_temp_books(book: &Path) {
    let name = book.file_name().unwrap_or_default().to_string_lossy();
    // Only the book's own temporary files: a base, a segment, the manifest (not, say, an
    // export being written to `<book>.bin` beside it).
    let own = [
        format!(".{name}.tmp-"),
        format!(".{name}.seg-"),
        format!(".{name}.live.tmp-"),
    ];
    if let Ok(rd) = std::fs::read_dir(dir_of(book)) {
        for e in rd.flatten() {
            let f = e.file_name().to_string_lossy().into_owned();
            if own.iter().any(|p| f.starts_with(p)) && f.contains(".tmp-") {
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
    crash_point("atomic-write-synced");
    if let Err(e) = std::fs::rename(&tmp, path) {
        let _ = std::fs::remove_file(&tmp);
        return Err(ctx(e));
    }
    sync_dir(path);
    Ok(())
}

/// Every crash point of every writer, in the order a writer reaches them (docs/RELIABILITY.md).
/// `tests/crash_points.rs` checks that this list and the `crash_point("…")` calls in the
/// source name the same points, and crashes each writer at each point in turn.
#[doc(hidden)]
pub const CRASH_POINTS: &[&str] = &[
    // Any writer, after it took the book's lock and before it tidied what killed writers left.
    "lock-taken",
    // Any writer of a book file (base, segment, fold): the temporary file exists.
    "writer-created",
    // Publishing (FORMAT §10.3): the new file synced, renamed, the manifest written.
    "file-synced",
    "base-renamed",
    "segment-renamed",
    "manifest-write",
    "manifest-published",
    // Removing segment files the manifest no longer lists (after a fold, a new base, recovery).
    "segment-removed",
    // A small file (import state, the attempt marker) synced under its temporary name.
    "atomic-write-synced",
    // `import`: runs spilled at a checkpoint, the checkpoint recorded, runs merged in passes
    // (the merged run written, recorded, its sources deleted), the attempt marked, the book
    // changed, the staging area removed.
    "import-runs-spilled",
    "import-checkpoint-saved",
    "import-runs-merged",
    "import-merge-recorded",
    "import-applying-marked",
    "import-applied",
    "import-staging-removed",
];

/// Whether this build has crash points (`--features failpoints`; never in a release build
/// made without it).
#[doc(hidden)]
pub const HAS_CRASH_POINTS: bool = cfg!(feature = "failpoints");

/// Test hook for crash tests, compiled only with the cargo feature `failpoints` (a plain
/// build has an empty function here): when the environment variable `BOOKDB_CRASH_AT` names
/// this point, the process kills itself with SIGKILL here (no unwinding, no cleanup: what a
/// power cut or `kill -9` leaves). `name@N` kills at the N-th time the point is reached (from
/// 1). Costs one atomic load when the variable is unset.
#[cfg(feature = "failpoints")]
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

/// Without the `failpoints` feature a crash point is nothing (`BOOKDB_CRASH_AT` is ignored).
#[cfg(not(feature = "failpoints"))]
#[inline(always)]
pub(crate) fn crash_point(_name: &str) {}

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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stale_temp_files_of_the_book_go_and_nothing_else() {
        let dir = tempfile::tempdir().unwrap();
        let book = dir.path().join("b");
        let gone = [".b.tmp-1", ".b.seg-000000000002.tmp-7", ".b.live.tmp-3"];
        let kept = [
            ".b.bin.tmp-4",
            "b.seg-000000000002",
            "b.live",
            "b",
            ".bb.tmp-5",
        ];
        for f in gone.iter().chain(&kept) {
            std::fs::write(dir.path().join(f), b"x").unwrap();
        }
        remove_stale_temp_books(&book);
        for f in gone {
            assert!(!dir.path().join(f).exists(), "{f} stayed");
        }
        for f in kept {
            assert!(dir.path().join(f).exists(), "{f} was removed");
        }
    }
}

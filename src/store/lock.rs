//! Who may write a book, and one at a time: the writer lock (`<book>.lock`, an advisory
//! `flock` held while a command changes the book) and the checks a writer makes before it
//! starts, so that a user who could not publish is refused before anything is written
//! (docs/OPERATIONS.md "Two users writing one book").

use std::path::Path;

use super::files::{Like, copy_access, create_new_file, dir_of, foreign, mode_like, sidecar};
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
        check_may_publish(book)?;
        let path = sidecar(book, "lock");
        let file = open_lock_file(book, &path)?;
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

/// The writer lock's file, opened without following a symlink and without blocking on a FIFO:
/// an existing one is opened read-only (`flock` needs no more, and a lock file another user
/// created is readable by the book's group); a new one is created with the book's group and
/// mode (its read and write bits), so that every user who may write the book may take it.
fn open_lock_file(book: &Path, path: &Path) -> Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    for _ in 0..8 {
        let existing = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
            .open(path);
        let file = match existing {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => match create_new_file(path) {
                Ok(f) => {
                    copy_access(book, &f, Like::File, false)?;
                    f
                }
                Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => continue,
                Err(e) => {
                    return Err(Error::io(
                        format!("creating lock file {}", path.display()),
                        e,
                    ));
                }
            },
            Err(e) if e.raw_os_error() == Some(libc::ELOOP) => {
                return Err(foreign(path, "a symbolic link", "the writer lock"));
            }
            Err(e) => {
                return Err(Error::io(
                    format!("opening lock file {}", path.display()),
                    e,
                ));
            }
        };
        let m = file
            .metadata()
            .map_err(|e| Error::io(format!("opening lock file {}", path.display()), e))?;
        if !m.is_file() {
            return Err(foreign(path, "not a regular file", "the writer lock"));
        }
        align_lock_access(book, &file, &m);
        return Ok(file);
    }
    Err(Error::Busy {
        path: path.to_path_buf(),
        what: "the lock file kept appearing and disappearing; try again".into(),
    })
}

/// Gives an existing lock file the book's group and read and write bits when this process may
/// (it owns the lock file, or is root) and they differ: a lock made before the book was opened
/// to a group (`chmod 0660 BOOK`, OPERATIONS.md) then reaches the group at the owner's next
/// write, as every other file of the book does. Best effort: the lock works as it is.
fn align_lock_access(book: &Path, lock: &std::fs::File, m: &std::fs::Metadata) {
    use std::os::unix::fs::MetadataExt;
    let Ok(b) = std::fs::metadata(book) else {
        return;
    };
    // SAFETY: geteuid(2) has no preconditions and cannot fail.
    let euid = unsafe { libc::geteuid() };
    let differs = m.mode() & 0o666 != mode_like(b.mode(), Like::File) || m.gid() != b.gid();
    if differs && (euid == 0 || euid == m.uid()) {
        let _ = copy_access(book, lock, Like::File, false);
    }
}

/// Whether this process (by its effective ids, ACLs included) may do `mode` (`libc::W_OK` …)
/// on `path`: the operating system's answer (`EACCES`, `EROFS`, `ENOENT` …) if not.
fn may(path: &Path, mode: libc::c_int) -> std::io::Result<()> {
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(path.as_os_str().as_bytes())
        .map_err(|_| std::io::Error::from_raw_os_error(libc::EINVAL))?;
    // SAFETY: faccessat(2) reads the NUL-terminated path; no memory is written.
    match unsafe { libc::faccessat(libc::AT_FDCWD, c.as_ptr(), mode, libc::AT_EACCESS) } {
        0 => Ok(()),
        _ => Err(std::io::Error::last_os_error()),
    }
}

/// Whether this process is in group `gid` (effective or supplementary).
fn in_group(gid: u32) -> bool {
    // SAFETY: getegid(2) has no preconditions; getgroups(2) with a buffer of the size it
    // reports writes at most that many ids.
    unsafe {
        if libc::getegid() == gid {
            return true;
        }
        let n = libc::getgroups(0, std::ptr::null_mut());
        if n <= 0 {
            return false;
        }
        let mut groups = vec![0 as libc::gid_t; n as usize];
        let got = libc::getgroups(n, groups.as_mut_ptr());
        got > 0 && groups[..got as usize].contains(&gid)
    }
}

/// Refuses, before anything is written, a writer that could not publish its work: every
/// command that changes a book writes new files beside it and renames them over the book's,
/// which needs write access to the directory; in a sticky directory (such as `/tmp`) only the
/// book's owner may replace it; and new files take the book's group, which needs membership
/// of it. A writer refused later would leave a staging area another user cannot remove
/// (docs/OPERATIONS.md "Two users writing one book"). Root passes; so does a new book in a
/// writable directory.
pub(crate) fn check_may_publish(book: &Path) -> Result<()> {
    use std::os::unix::fs::MetadataExt;
    // SAFETY: geteuid(2) has no preconditions and cannot fail.
    let euid = unsafe { libc::geteuid() };
    if euid == 0 {
        return Ok(());
    }
    let dir = dir_of(book);
    let refuse = |why: String| {
        Err(Error::io(
            why,
            std::io::Error::from_raw_os_error(libc::EACCES),
        ))
    };
    match may(dir, libc::W_OK | libc::X_OK) {
        Ok(()) => {}
        Err(e) if e.raw_os_error() == Some(libc::EACCES) => {
            return refuse(format!(
                "{}: this user cannot create files in the book's directory {} (writing a book \
                 needs write and search permission there); nothing was written",
                book.display(),
                dir.display()
            ));
        }
        Err(e) if e.raw_os_error() == Some(libc::EROFS) => {
            return Err(Error::io(
                format!("{}: writing the book", book.display()),
                e,
            ));
        }
        // A directory that does not exist (or cannot be asked about): the writer's own
        // attempt reports it.
        Err(_) => return Ok(()),
    }
    let (Ok(d), Ok(b)) = (std::fs::metadata(dir), std::fs::symlink_metadata(book)) else {
        return Ok(());
    };
    if d.mode() & libc::S_ISVTX != 0 && euid != b.uid() && euid != d.uid() {
        return refuse(format!(
            "{}: the directory {} is sticky (like /tmp) and the book belongs to user {}: only \
             that user (or root) may replace its files; nothing was written. Run as the book's \
             owner, or keep shared books in a directory without the sticky bit",
            book.display(),
            dir.display(),
            b.uid()
        ));
    }
    let inherits = d.mode() & libc::S_ISGID != 0 && d.gid() == b.gid();
    if !in_group(b.gid()) && !inherits {
        return refuse(format!(
            "{}: the book's group is {} and this user is not in it, so its new files could not \
             keep that group (its readers would lose them); nothing was written. Run as a \
             member of group {} (or root)",
            book.display(),
            b.gid(),
            b.gid()
        ));
    }
    Ok(())
}

//! The file-handling rules every book writer (import, merge, compact, Polyglot import) follows:
//! the names of a book's sidecar files (the exclusive writer lock is `lock.rs`), the removal of temporary
//! books left by interrupted writers, atomic writes of small files (crash points: `crash.rs`).

use std::io::Write;
use std::path::{Path, PathBuf};

pub(crate) use super::crash::crash_point;

use crate::store::error::{Error, Result};

/// Gives `new_file` (a new version of the book at `existing`, before it is renamed over it)
/// the existing file's permission bits, owner and group, so that a rewrite under another
/// umask or by another user does not lock out the book's readers. Nothing is done if
/// `existing` does not exist (a new book keeps the umask's mode). The owner and group are
/// changed only where they differ; where the owner cannot be changed (not root), the group
/// alone is set, and only a group that cannot be kept is an error.
pub(crate) fn inherit_metadata(existing: &Path, new_file: &std::fs::File) -> Result<()> {
    copy_access(existing, new_file, Like::Same, true)
}

/// How the mode of a file bookdb creates follows the file or directory it takes it from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Like {
    /// The same permission bits (a new version of the book).
    Same,
    /// A plain file beside or inside: the read and write bits (no execute, no set-id bits).
    File,
    /// A directory: the read and write bits, and search (x) wherever reading is allowed.
    Dir,
}

/// The permission bits `like` gives a new file whose model has `mode`.
pub(super) fn mode_like(mode: u32, like: Like) -> u32 {
    match like {
        Like::Same => mode & 0o7777,
        Like::File => mode & 0o666,
        // Searchable where readable, and always the owner's to write in: a directory this
        // process makes (a staging area) must take the files it is made for, whatever the
        // book's own files allow (the owner's 0444 book is still imported into).
        Like::Dir => {
            let rw = mode & 0o666;
            rw | ((rw & 0o444) >> 2) | 0o700
        }
    }
}

/// Gives `new_file` (just created by this process) the owner (where permitted), group and
/// mode of `model`, the mode as `like` says. `strict`: a group that cannot be kept is an error
/// (the book's own files); otherwise the mode alone is set.
pub(super) fn copy_access(
    model: &Path,
    new_file: &std::fs::File,
    like: Like,
    strict: bool,
) -> Result<()> {
    use std::os::unix::fs::{MetadataExt, PermissionsExt, fchown};
    let old = match std::fs::metadata(model) {
        Ok(m) => m,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(()),
        Err(e) => {
            return Err(Error::io(
                format!("reading the metadata of {}", model.display()),
                e,
            ));
        }
    };
    let ctx = |what: &str, e| Error::io(format!("{what} of the new {}", model.display()), e);
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
        if new.gid() != old.gid()
            && let Err(e) = fchown(new_file, None, Some(old.gid()))
            && strict
        {
            return Err(Error::io(
                format!(
                    "{}: the rewritten book cannot keep its group {} (run as the book's owner's group member or root)",
                    model.display(),
                    old.gid()
                ),
                e,
            ));
        }
    }
    // After chown, which clears set-id bits.
    new_file
        .set_permissions(std::fs::Permissions::from_mode(mode_like(old.mode(), like)))
        .map_err(|e| ctx("setting the permissions", e))?;
    Ok(())
}

/// Opens a new file at `path` for reading and writing, failing if anything has that name
/// already (`O_CREAT|O_EXCL|O_NOFOLLOW`): a symlink, FIFO or file planted there is never
/// followed, opened or overwritten. Every file bookdb writes is created this way.
pub(crate) fn create_new_file(path: &Path) -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(path)
}

/// Creates the temporary file `tmp` ([`temp_sibling`], named after this process): whatever a
/// killed process of the same pid (or anyone) left at that name is unlinked first (unlinking a
/// name never touches what a symlink points to), then the file is created with
/// [`create_new_file`], so it is this process's own new file or an error.
pub(crate) fn create_temp(tmp: &Path) -> Result<std::fs::File> {
    if std::fs::symlink_metadata(tmp).is_ok_and(|m| !m.is_dir()) {
        let _ = std::fs::remove_file(tmp);
    }
    create_new_file(tmp).map_err(|e| {
        let hint = if e.kind() == std::io::ErrorKind::AlreadyExists {
            " (something else holds this temporary name: remove it and try again)"
        } else {
            ""
        };
        Error::io(format!("creating {}{hint}", tmp.display()), e)
    })
}

/// Gives a file this process created inside a directory bookdb made (a staging area) that
/// directory's group and the read and write bits of its mode, so that whoever may use the
/// directory (the book's group, OPERATIONS.md "Admin imports") may use the file. Best effort
/// for the group.
pub(crate) fn adopt_dir_access(f: &std::fs::File, path: &Path) -> Result<()> {
    copy_access(dir_of(path), f, Like::File, false)
}

/// The error for a name in the book's namespace that holds something bookdb did not make.
pub(crate) fn foreign(path: &Path, found: &str, what: &str) -> Error {
    Error::Usage(format!(
        "{}: {found}, where bookdb keeps {what}; bookdb did not make it and will not write \
         through it or remove it: move it away (or remove it) and run the command again",
        path.display()
    ))
}

/// The path of the book `path` names, resolved once at a command's entry so that every
/// sidecar (manifest, segments, lock, staging, temporaries) is beside the real file: a final
/// symbolic link (or a chain of them) is followed and the directory it leads to made
/// canonical. A path that is not a symlink is returned as it is. A link whose target does not
/// exist resolves to that target (a new book is created there, not over the link).
pub(crate) fn resolve_book(path: &Path) -> Result<PathBuf> {
    let mut p = path.to_path_buf();
    let mut followed = false;
    for _ in 0..40 {
        match std::fs::symlink_metadata(&p) {
            Ok(m) if m.file_type().is_symlink() => {
                let target = std::fs::read_link(&p)
                    .map_err(|e| Error::io(format!("reading the link {}", p.display()), e))?;
                p = if target.is_absolute() {
                    target
                } else {
                    dir_of(&p).join(target)
                };
                followed = true;
            }
            Ok(_) | Err(_) if !followed => return Ok(p),
            Ok(_) => return canonical_parent(path, &p),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                return canonical_parent(path, &p);
            }
            Err(e) => return Err(Error::io(format!("resolving {}", path.display()), e)),
        }
    }
    Err(Error::Usage(format!(
        "{}: too many levels of symbolic links",
        path.display()
    )))
}

/// `p` with its directory made canonical (`given`: the path the user gave, for messages).
fn canonical_parent(given: &Path, p: &Path) -> Result<PathBuf> {
    let name = p.file_name().ok_or_else(|| {
        Error::Usage(format!(
            "{}: leads to {}, which names no file",
            given.display(),
            p.display()
        ))
    })?;
    let dir = std::fs::canonicalize(dir_of(p)).map_err(|e| {
        Error::io(
            format!(
                "{}: resolving the directory of its target {}",
                given.display(),
                p.display()
            ),
            e,
        )
    })?;
    Ok(dir.join(name))
}

/// Refuses an output path (`what`: "--report", "--out") that is one of the files of the book
/// at `book` (resolved): its base, a delta segment, its manifest, its lock, its staging area
/// or a temporary of its writers, by name (after following symlinks) or by identity (the same
/// device and inode: a hard link). Writing there would destroy the book.
pub(crate) fn refuse_book_output(book: &Path, out: &Path, what: &str) -> Result<()> {
    use std::os::unix::fs::MetadataExt;
    let refuse = |which: &str| {
        Err(Error::Usage(format!(
            "{what} {}: that is {which} of the book {}; writing there would destroy the book: \
             choose another path",
            out.display(),
            book.display()
        )))
    };
    let out_real = match std::fs::canonicalize(out) {
        Ok(p) => p,
        Err(_) => match resolve_book(out) {
            Ok(p) => canonical_parent(out, &p).unwrap_or(p),
            Err(_) => out.to_path_buf(),
        },
    };
    let book_real = std::fs::canonicalize(book)
        .unwrap_or_else(|_| canonical_parent(book, book).unwrap_or_else(|_| book.to_path_buf()));
    let name = book_real
        .file_name()
        .unwrap_or_default()
        .to_string_lossy()
        .into_owned();
    let staging = sidecar(&book_real, "staging");
    if out_real.starts_with(&staging) {
        return refuse("the staging area");
    }
    if dir_of(&out_real) == dir_of(&book_real)
        && let Some(n) = out_real
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
    {
        if n == name {
            return refuse("the base file");
        }
        for (suffix, which) in [
            (".live", "the manifest"),
            (".lock", "the writer lock"),
            (".seg-", "a delta segment"),
        ] {
            if n.starts_with(&format!("{name}{suffix}")) {
                return refuse(which);
            }
        }
        if n.starts_with(&format!(".{name}.")) && n.contains(".tmp-") {
            return refuse("a temporary file of its writers");
        }
    }
    let Ok(o) = std::fs::metadata(out) else {
        return Ok(());
    };
    let id = |m: &std::fs::Metadata| (m.dev(), m.ino());
    let mut files = vec![
        (book_real.clone(), "the base file"),
        (sidecar(&book_real, "live"), "the manifest"),
        (sidecar(&book_real, "lock"), "the writer lock"),
    ];
    let prefix = format!("{name}.seg-");
    if let Ok(rd) = std::fs::read_dir(dir_of(&book_real)) {
        for e in rd.flatten() {
            if e.file_name().to_string_lossy().starts_with(&prefix) {
                files.push((e.path(), "a delta segment"));
            }
        }
    }
    for (f, which) in files {
        if std::fs::metadata(&f).is_ok_and(|m| id(&m) == id(&o)) {
            return refuse(&format!("{which} ({}, the same file)", f.display()));
        }
    }
    Ok(())
}

/// The file, inside a directory bookdb keeps beside a book (its staging area), that says
/// bookdb made the directory; written when it is created.
pub(crate) const OWNED_DIR_MARKER: &str = ".bookdb-staging";

/// Makes sure `dir` (a directory bookdb keeps beside the book `book`: the staging area) is
/// one bookdb made, creating it if absent: a real directory (not a symlink) holding the
/// [`OWNED_DIR_MARKER`] written when it was created, with the book's group and mode (search
/// bits where it is readable). Anything else at that name is refused, never written into or
/// removed: a symlink, a file, or a directory without the marker.
pub(crate) fn claim_dir(dir: &Path, book: &Path, what: &str) -> Result<()> {
    for _ in 0..8 {
        match std::fs::symlink_metadata(dir) {
            Ok(m) if m.file_type().is_symlink() => {
                return Err(foreign(dir, "a symbolic link", what));
            }
            Ok(m) if !m.is_dir() => return Err(foreign(dir, "not a directory", what)),
            Ok(_) => {
                let marker = dir.join(OWNED_DIR_MARKER);
                return match std::fs::symlink_metadata(&marker) {
                    Ok(m) if m.is_file() => Ok(()),
                    // Left by a bookdb older than the marker (or restored without it): claimed.
                    _ if legacy_staging(dir) => {
                        let f = create_new_file(&marker)
                            .map_err(|e| Error::io(format!("creating {}", marker.display()), e))?;
                        adopt_dir_access(&f, &marker)?;
                        Ok(())
                    }
                    _ => Err(foreign(
                        dir,
                        &format!(
                            "a directory without bookdb's marker {OWNED_DIR_MARKER} and not laid \
                             out as import staging areas (made by something else; if it is an \
                             interrupted import's, removing it only means the import starts over)"
                        ),
                        what,
                    )),
                };
            }
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                match create_marked_dir(dir, book, what)? {
                    true => return Ok(()),
                    false => continue,
                }
            }
            Err(e) => return Err(Error::io(format!("reading {what} {}", dir.display()), e)),
        }
    }
    Err(Error::Busy {
        path: dir.to_path_buf(),
        what: format!("{what} kept appearing and disappearing; try again"),
    })
}

/// Creates `dir` with its [`OWNED_DIR_MARKER`] in one step, as a kill can never leave it half
/// made: the directory is made and marked under a temporary name (`.<name>.tmp-<pid>`, which
/// [`remove_stale_temp_books`] clears), then renamed to `dir` without replacing anything
/// (`renameat2` with `RENAME_NOREPLACE`). Returns `false` when something appeared at `dir`
/// meanwhile (the caller looks again).
fn create_marked_dir(dir: &Path, book: &Path, what: &str) -> Result<bool> {
    let tmp = temp_sibling(dir)?;
    let ctx = |e| Error::io(format!("creating {what} {}", dir.display()), e);
    match std::fs::symlink_metadata(&tmp) {
        Ok(m) if m.is_dir() && !m.file_type().is_symlink() => {
            let _ = std::fs::remove_dir_all(&tmp);
        }
        Ok(_) => {
            let _ = std::fs::remove_file(&tmp);
        }
        Err(_) => {}
    }
    std::fs::create_dir(&tmp).map_err(ctx)?;
    let made = (|| {
        let d = open_dir_nofollow(&tmp).map_err(ctx)?;
        copy_access(book, &d, Like::Dir, false)?;
        let marker = tmp.join(OWNED_DIR_MARKER);
        let f = create_new_file(&marker)
            .map_err(|e| Error::io(format!("creating {}", marker.display()), e))?;
        adopt_dir_access(&f, &marker)?;
        f.sync_all().map_err(ctx)?;
        d.sync_all().map_err(ctx)?;
        rename_noreplace(&tmp, dir)
    })();
    match made {
        Ok(()) => {
            sync_dir(dir);
            Ok(true)
        }
        Err(e) => {
            let _ = std::fs::remove_dir_all(&tmp);
            match e {
                Error::Io { source, .. } if source.kind() == std::io::ErrorKind::AlreadyExists => {
                    Ok(false)
                }
                e => Err(e),
            }
        }
    }
}

/// Renames `from` to `to`, failing with `AlreadyExists` if anything is at `to` (Linux
/// `renameat2(RENAME_NOREPLACE)`; where the file system refuses the flag: checked, then
/// renamed, which at worst replaces an empty directory that appeared in between).
fn rename_noreplace(from: &Path, to: &Path) -> Result<()> {
    use std::os::unix::ffi::OsStrExt;
    let ctx = |e| {
        Error::io(
            format!("renaming {} to {}", from.display(), to.display()),
            e,
        )
    };
    let c = |p: &Path| std::ffi::CString::new(p.as_os_str().as_bytes());
    let (Ok(f), Ok(t)) = (c(from), c(to)) else {
        return Err(ctx(std::io::Error::from(std::io::ErrorKind::InvalidInput)));
    };
    // SAFETY: both are valid NUL-terminated paths that outlive the call.
    let r = unsafe {
        libc::renameat2(
            libc::AT_FDCWD,
            f.as_ptr(),
            libc::AT_FDCWD,
            t.as_ptr(),
            libc::RENAME_NOREPLACE,
        )
    };
    if r == 0 {
        return Ok(());
    }
    let e = std::io::Error::last_os_error();
    if e.raw_os_error() != Some(libc::EINVAL) && e.raw_os_error() != Some(libc::ENOSYS) {
        return Err(ctx(e));
    }
    if std::fs::symlink_metadata(to).is_ok() {
        return Err(ctx(std::io::Error::from(std::io::ErrorKind::AlreadyExists)));
    }
    std::fs::rename(from, to).map_err(ctx)
}

/// Creates `sub`, a directory inside a directory bookdb made, with that directory's group and
/// mode; an entry already there that is not a real directory is unlinked first (its parent is
/// bookdb's).
pub(crate) fn create_owned_subdir(sub: &Path) -> Result<()> {
    match std::fs::symlink_metadata(sub) {
        Ok(m) if m.is_dir() => return Ok(()),
        Ok(_) => {
            let _ = std::fs::remove_file(sub);
        }
        Err(_) => {}
    }
    let ctx = |e| Error::io(format!("creating staging directory {}", sub.display()), e);
    std::fs::create_dir(sub).map_err(ctx)?;
    let d = open_dir_nofollow(sub).map_err(ctx)?;
    copy_access(dir_of(sub), &d, Like::Same, false)
}

/// Whether `dir` is a directory bookdb made ([`claim_dir`]): a real directory holding the
/// marker. Only such a directory is read from, written into or removed.
pub(crate) fn is_owned_dir(dir: &Path) -> bool {
    std::fs::symlink_metadata(dir).is_ok_and(|m| m.is_dir())
        && (std::fs::symlink_metadata(dir.join(OWNED_DIR_MARKER)).is_ok_and(|m| m.is_file())
            || legacy_staging(dir))
}

/// A staging root without the marker that has the layout bookdb gives one and nothing else
/// (what a bookdb older than the marker left): at least one entry, each a real directory
/// holding a `state.json` or `applying` regular file (an import's area).
fn legacy_staging(dir: &Path) -> bool {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return false;
    };
    let mut any = false;
    for e in rd {
        let Ok(e) = e else { return false };
        let area = e.path();
        let is_area = std::fs::symlink_metadata(&area).is_ok_and(|m| m.is_dir())
            && ["state.json", "applying"]
                .iter()
                .any(|f| std::fs::symlink_metadata(area.join(f)).is_ok_and(|m| m.is_file()));
        if !is_area {
            return false;
        }
        any = true;
    }
    any
}

/// Opens `path` (a log in a staging area) for appending without following a symlink: created
/// if absent, with the group and mode of its directory ([`adopt_dir_access`]).
pub(crate) fn open_append(path: &Path) -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    match create_new_file(path) {
        Ok(f) => {
            let _ = adopt_dir_access(&f, path);
            return Ok(f);
        }
        Err(e) if e.kind() != std::io::ErrorKind::AlreadyExists => return Err(e),
        Err(_) => {}
    }
    std::fs::OpenOptions::new()
        .append(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_NONBLOCK | libc::O_CLOEXEC)
        .open(path)
}

/// Removes `dir` (made by [`claim_dir`]) if nothing but its marker is left in it.
pub(crate) fn release_dir(dir: &Path) {
    let Ok(rd) = std::fs::read_dir(dir) else {
        return;
    };
    let others = rd
        .flatten()
        .any(|e| e.file_name().to_string_lossy() != OWNED_DIR_MARKER);
    if !others {
        let _ = std::fs::remove_file(dir.join(OWNED_DIR_MARKER));
        let _ = std::fs::remove_dir(dir);
    }
}

/// Opens a directory (never through a symlink) to change its owner and mode by descriptor.
fn open_dir_nofollow(dir: &Path) -> std::io::Result<std::fs::File> {
    use std::os::unix::fs::OpenOptionsExt;
    std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_DIRECTORY | libc::O_CLOEXEC)
        .open(dir)
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
/// `.<book>.tmp-<pid>` (a new base), `.<book>.seg-<g>.tmp-<pid>` (a new segment),
/// `.<book>.live.tmp-<pid>` (a new manifest) and `.<book>.publishing.tmp-<pid>` (a publishing
/// marker), all made by [`temp_sibling`].
pub(crate) fn remove_stale_temp_books(book: &Path) {
    let name = book.file_name().unwrap_or_default().to_string_lossy();
    // Only the book's own temporary files: a base, a segment, the manifest (not, say, an
    // export being written to `<book>.bin` beside it).
    let own = [
        format!(".{name}.tmp-"),
        format!(".{name}.seg-"),
        format!(".{name}.live.tmp-"),
        format!(".{name}.publishing.tmp-"),
    ];
    let staging_tmp = format!(".{name}.staging.tmp-");
    if let Ok(rd) = std::fs::read_dir(dir_of(book)) {
        for e in rd.flatten() {
            let f = e.file_name().to_string_lossy().into_owned();
            if own.iter().any(|p| f.starts_with(p)) && f.contains(".tmp-") {
                let _ = std::fs::remove_file(e.path());
            } else if f.starts_with(&staging_tmp) {
                // A staging root being made when its writer was killed (`create_marked_dir`):
                // marked, or still empty. A directory of that name holding anything else is
                // not bookdb's: left alone (`remove_dir` removes only an empty one).
                let _ = match is_owned_dir(&e.path()) {
                    true => std::fs::remove_dir_all(e.path()),
                    false => std::fs::remove_dir(e.path()),
                };
            }
        }
    }
}

/// Writes `bytes` to `path` atomically: into a temporary sibling ([`temp_sibling`], created
/// new, with the group and mode of the directory it is in), synced, then renamed over `path`,
/// and the directory synced.
pub(crate) fn write_atomic(path: &Path, bytes: &[u8]) -> Result<()> {
    let tmp = temp_sibling(path)?;
    let ctx = |e| Error::io(format!("writing {}", path.display()), e);
    let mut f = create_temp(&tmp)?;
    adopt_dir_access(&f, &tmp)?;
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

/// Free bytes for this process on the file system holding `dir` (`statvfs`'s `f_bavail`);
/// `None` if unknown. `BOOKDB_FREE_BYTES` overrides it (tests of the checks).
pub(crate) fn free_bytes(dir: &Path) -> Option<u64> {
    if let Some(v) = std::env::var_os("BOOKDB_FREE_BYTES") {
        return v.to_str()?.parse().ok();
    }
    use std::os::unix::ffi::OsStrExt;
    let c = std::ffi::CString::new(dir.as_os_str().as_bytes()).ok()?;
    // SAFETY: an all-zero statvfs is a valid value of this plain C struct.
    let mut st: libc::statvfs = unsafe { std::mem::zeroed() };
    // SAFETY: statvfs(3) reads the NUL-terminated path and writes into the struct we own.
    if unsafe { libc::statvfs(c.as_ptr(), &mut st) } != 0 {
        return None;
    }
    #[allow(clippy::useless_conversion)] // u32 fields on some targets
    Some(u64::from(st.f_bavail).saturating_mul(u64::from(st.f_frsize)))
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

    #[test]
    fn a_staging_root_is_never_seen_half_made() {
        let dir = tempfile::tempdir().unwrap();
        let book = dir.path().join("b");
        std::fs::write(&book, b"x").unwrap();
        let root = dir.path().join("b.staging");
        claim_dir(&root, &book, "staging").unwrap();
        assert!(is_owned_dir(&root));
        assert!(root.join(OWNED_DIR_MARKER).is_file());
        // Claimed again: already bookdb's.
        claim_dir(&root, &book, "staging").unwrap();
        // No temporary left beside it.
        let names: Vec<String> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        assert!(names.iter().all(|n| !n.contains(".tmp-")), "{names:?}");

        // What a writer killed while making it leaves: a marked temporary (cleared by the
        // next writer) — and a foreign directory of that name, which stays.
        let killed = dir.path().join(".b.staging.tmp-99999");
        std::fs::create_dir(&killed).unwrap();
        std::fs::write(killed.join(OWNED_DIR_MARKER), b"").unwrap();
        let foreign = dir.path().join(".b.staging.tmp-88888");
        std::fs::create_dir(&foreign).unwrap();
        std::fs::write(foreign.join("mine"), b"keep").unwrap();
        let empty = dir.path().join(".b.staging.tmp-77777");
        std::fs::create_dir(&empty).unwrap();
        remove_stale_temp_books(&book);
        assert!(!killed.exists());
        assert!(!empty.exists());
        assert!(foreign.join("mine").exists());

        // A name taken meanwhile is never replaced.
        let other = dir.path().join("taken");
        std::fs::create_dir(&other).unwrap();
        let from = dir.path().join("from");
        std::fs::create_dir(&from).unwrap();
        let e = rename_noreplace(&from, &other).unwrap_err();
        assert!(
            matches!(e, Error::Io { ref source, .. } if source.kind() == std::io::ErrorKind::AlreadyExists)
        );
        assert!(from.exists());
    }
}

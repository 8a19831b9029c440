//! A book file's identity: which file a name or a descriptor holds. Generations alone do not
//! say it: an operator who restores a backup in place (`cp backup/* .`) overwrites the files a
//! reader has open (same inode, other bytes) and can bring back a generation number the reader
//! has seen with other content. So a file is known by its device, inode, size and modification
//! time (ctime is left out: a hard link made by a backup changes it and nothing else).

use std::os::unix::fs::MetadataExt;
use std::path::{Path, PathBuf};

use crate::store::error::{Error, Result};

/// Device, inode, size and modification time of a file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct FileId {
    dev: u64,
    ino: u64,
    size: u64,
    mtime: (i64, i64),
}

impl FileId {
    pub(crate) fn of(m: &std::fs::Metadata) -> FileId {
        FileId {
            dev: m.dev(),
            ino: m.ino(),
            size: m.size(),
            mtime: (m.mtime(), m.mtime_nsec()),
        }
    }

    /// Its fields as bytes (device, inode, size, mtime seconds and nanoseconds, LE).
    pub(crate) fn to_bytes(self) -> [u8; 40] {
        let mut b = [0u8; 40];
        b[..8].copy_from_slice(&self.dev.to_le_bytes());
        b[8..16].copy_from_slice(&self.ino.to_le_bytes());
        b[16..24].copy_from_slice(&self.size.to_le_bytes());
        b[24..32].copy_from_slice(&self.mtime.0.to_le_bytes());
        b[32..].copy_from_slice(&self.mtime.1.to_le_bytes());
        b
    }

    /// The file's size in bytes when it was identified.
    pub(crate) fn size(&self) -> u64 {
        self.size
    }

    /// The identity of the file at `path` now; `None` if there is none.
    pub(crate) fn at(path: &Path) -> Result<Option<FileId>> {
        match std::fs::metadata(path) {
            Ok(m) => Ok(Some(FileId::of(&m))),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(Error::io(format!("reading {}", path.display()), e)),
        }
    }
}

/// A descriptor this process already has open on the file `id` names, reopened through
/// `/proc/self/fd` (which reaches a file even after it was unlinked or its name given to
/// another file): the way back to a file a writer folded away or replaced after it was opened.
/// `None` when no descriptor holds it or `/proc` is not mounted.
pub(crate) fn reopen_open_file(id: &FileId) -> Option<(std::fs::File, PathBuf)> {
    let fds = std::fs::read_dir("/proc/self/fd").ok()?;
    for fd in fds.flatten() {
        let p = fd.path();
        let Ok(m) = std::fs::metadata(&p) else {
            continue;
        };
        if m.is_file()
            && FileId::of(&m) == *id
            && let Ok(f) = std::fs::File::open(&p)
            && f.metadata().is_ok_and(|n| FileId::of(&n) == *id)
        {
            return Some((f, p));
        }
    }
    None
}

/// The file opened as `id` from `path`, opened again: by its name while the name still holds
/// it, else through a descriptor of this process ([`reopen_open_file`]: a fold removed it or a
/// compaction gave its name to a new base since).
pub(crate) fn open_again(path: &Path, id: &FileId) -> Result<std::fs::File> {
    if let Ok(f) = std::fs::File::open(path)
        && f.metadata().is_ok_and(|m| FileId::of(&m) == *id)
    {
        return Ok(f);
    }
    match reopen_open_file(id) {
        Some((f, _)) => Ok(f),
        None => Err(Error::Busy {
            path: path.to_path_buf(),
            what: "a writer replaced or removed this file after it was opened (a fold or a \
                   compaction), and it cannot be reached again; run the command again"
                .into(),
        }),
    }
}

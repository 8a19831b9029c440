//! Which files make up a table now (docs/FORMAT.md §14.2, read as a live book's state:
//! §10.4): the manifest read, the base and each listed segment opened, a file folded away
//! meanwhile retried, and a refresh that reuses the files still named.

use std::path::Path;

use super::file::{TableKind, TtFile};
use crate::store::book::{FileId, Manifest, segment_path};
use crate::store::error::{Corruption, Error, Result};

/// The files of a table's state, base first, then segments by generation; and the manifest
/// they were read under.
pub(crate) struct State {
    pub files: Vec<TtFile>,
    pub manifest: Option<Manifest>,
}

impl State {
    /// The generation of the newest publication this state holds (0: nothing published).
    pub(crate) fn generation(&self) -> u64 {
        let base = self.files.first().map_or(0, |f| f.generation);
        self.manifest
            .as_ref()
            .filter(|m| m.base == base)
            .map_or(base, |m| m.generation.max(base))
    }
}

/// How a state's files are opened: redb's read cache per file and the bytes the key filters
/// may take in all (a file past that is probed without its filter).
#[derive(Clone, Copy)]
pub(crate) struct OpenSizes {
    pub cache: usize,
    pub filter_budget: usize,
}

/// The file of `old` still named `path` (same inode, size and mtime; of `generation` when
/// one is expected).
fn reuse(old: &mut Vec<TtFile>, path: &Path, generation: Option<u64>) -> Option<TtFile> {
    let id = FileId::at(path).ok().flatten()?;
    let i = old.iter().position(|f| {
        f.path == path && f.id == id && generation.is_none_or(|g| f.generation == g)
    })?;
    Some(old.swap_remove(i))
}

/// Opens the state of the table at `path` (none published: no files). `kind` is checked
/// against every file (learned from the base when `None`); files of `old` still named are
/// reused. Retries while a writer folds files away under it.
pub(crate) fn open_state(
    path: &Path,
    kind: &mut Option<TableKind>,
    mut old: Vec<TtFile>,
    sizes: OpenSizes,
) -> Result<State> {
    let mut pause = std::time::Duration::from_millis(1);
    for _ in 0..50 {
        match try_open(path, kind, &mut old, sizes) {
            Err(Error::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => {
                std::thread::sleep(pause);
                pause = (pause * 2).min(std::time::Duration::from_millis(200));
            }
            other => return other,
        }
    }
    Err(Error::Busy {
        path: path.to_path_buf(),
        what: "the table's files kept changing while it was opened; try again".into(),
    })
}

fn try_open(
    path: &Path,
    kind: &mut Option<TableKind>,
    old: &mut Vec<TtFile>,
    sizes: OpenSizes,
) -> Result<State> {
    // The manifest first: a writer renames a new base before its manifest, so the base opened
    // below is never older than the manifest read here. Its generation is read from the file
    // opened, not before it: a base published between the two reads is another file.
    let manifest = Manifest::read(path)?;
    if std::fs::symlink_metadata(path).is_err() {
        return Ok(State {
            files: Vec::new(),
            manifest,
        });
    }
    let mut filter_bytes = 0usize;
    let mut open = |p: &Path, g: Option<u64>, kind: &mut Option<TableKind>| -> Result<TtFile> {
        if let Some(f) = reuse(old, p, g) {
            filter_bytes += f.filter_memory();
            return Ok(f);
        }
        let with_filter = filter_bytes < sizes.filter_budget;
        let (f, found) = TtFile::open(p, kind.as_ref(), g, sizes.cache, with_filter)?;
        filter_bytes += f.filter_memory();
        kind.get_or_insert(found);
        Ok(f)
    };
    let base = open(path, None, kind)?;
    let base_generation = base.generation;
    let mut files = vec![base];
    if let Some(m) = &manifest
        && m.generation >= base_generation
    {
        if m.base != base_generation {
            return Err(Error::CorruptFile {
                path: path.to_path_buf(),
                corruption: Corruption::Manifest(format!(
                    "the manifest lists segments over a base of generation {}, but the base \
                     holds generation {base_generation}: restore the table's files of one \
                     backup together",
                    m.base
                )),
            });
        }
        for &g in &m.segments {
            files.push(open(&segment_path(path, g), Some(g), kind)?);
        }
    }
    Ok(State { files, manifest })
}

/// Whether the table's published state differs from `state` (a manifest of another text, or
/// a base that is another file).
pub(crate) fn changed(path: &Path, state: &State) -> Result<bool> {
    let manifest = Manifest::read(path)?;
    if manifest != state.manifest {
        return Ok(true);
    }
    let base = FileId::at(path)?;
    Ok(base != state.files.first().map(|f| f.id))
}

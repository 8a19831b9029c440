//! The files a live book is made of and the manifest that names them: the base `<book>`, the
//! delta segments `<book>.seg-<generation>` and the manifest `<book>.live`, each published by
//! an atomic rename under an increasing generation (docs/FORMAT.md §10).
//!
//! Readers never wait and never see a half-done state: every file they may open is immutable
//! once its name exists, and the manifest is replaced, never edited. Writers (one at a time,
//! under the writer lock) publish a new state by writing new files and renaming the manifest.

use std::io::Read;
use std::path::{Path, PathBuf};

use super::BookMeta;

use crate::store::error::{Corruption, Error, Result};
use crate::store::files::{
    crash_point, create_temp, inherit_metadata, remove_stale_temp_books, sidecar, sync_dir,
    temp_sibling,
};
use crate::store::lock::{LockWait, WriterLock};

/// First line of a manifest: magic and manifest version.
const MANIFEST_HEADER: &str = "bookdb-live 1";
/// A manifest longer than this is not one (a real one is a few hundred bytes).
const MANIFEST_MAX_BYTES: u64 = 64 << 10;

/// Which files make up a book at one generation.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Manifest {
    /// The generation of the newest publication (strictly increasing).
    pub generation: u64,
    /// The generation of the base file this state is built on (the `generation` in its meta).
    pub base: u64,
    /// Generations of the delta segments over that base, ascending, each above `base`.
    pub segments: Vec<u64>,
}

impl Manifest {
    /// The manifest's bytes: lines of text (so an operator can read it), the last one a crc32
    /// of the others.
    #[doc(hidden)]
    pub fn encode(&self) -> Vec<u8> {
        let mut segs = String::new();
        for g in &self.segments {
            segs.push(' ');
            segs.push_str(&g.to_string());
        }
        let body = format!(
            "{MANIFEST_HEADER}\ngeneration {}\nbase {}\nsegments{segs}\n",
            self.generation, self.base
        );
        let crc = crc32fast::hash(body.as_bytes());
        format!("{body}crc32 {crc:08x}\n").into_bytes()
    }

    /// Parses a manifest; every malformation is a [`Corruption::Manifest`]. Strict: one
    /// spelling per manifest (no leading zeros or signs, lowercase hex, one final newline).
    #[doc(hidden)]
    pub fn decode(bytes: &[u8]) -> Result<Manifest, Corruption> {
        let bad = |why: &str| Corruption::Manifest(why.to_string());
        let text = std::str::from_utf8(bytes).map_err(|_| bad("not UTF-8 text"))?;
        let lines: Vec<&str> = text.split('\n').collect();
        let [header, generation, base, segments, crc, ""] = lines.as_slice() else {
            return Err(bad("not 5 lines ending in a newline"));
        };
        let stored = crc
            .strip_prefix("crc32 ")
            .filter(|h| h.len() == 8 && h.bytes().all(|c| matches!(c, b'0'..=b'9' | b'a'..=b'f')))
            .and_then(|h| u32::from_str_radix(h, 16).ok())
            .ok_or_else(|| bad("last line is not `crc32 <8 lowercase hex digits>`"))?;
        let body = &text[..text.len() - crc.len() - 1];
        let found = crc32fast::hash(body.as_bytes());
        if stored != found {
            return Err(Corruption::Manifest(format!(
                "checksum mismatch (stored {stored:08x}, computed {found:08x})"
            )));
        }
        if *header != MANIFEST_HEADER {
            return Err(bad(
                "unknown header (not a bookdb manifest, or a newer one)",
            ));
        }
        let number = |s: &str, what: &str| -> Result<u64, Corruption> {
            let canonical = !s.is_empty()
                && s.bytes().all(|c| c.is_ascii_digit())
                && (s == "0" || !s.starts_with('0'));
            canonical
                .then(|| s.parse::<u64>().ok())
                .flatten()
                .ok_or_else(|| Corruption::Manifest(format!("{what} {s:?} is not a number")))
        };
        let field = |line: &str, name: &str| -> Result<u64, Corruption> {
            let v = line
                .strip_prefix(name)
                .and_then(|l| l.strip_prefix(' '))
                .ok_or_else(|| Corruption::Manifest(format!("line `{name}` missing")))?;
            number(v, name)
        };
        let generation = field(generation, "generation")?;
        let base = field(base, "base")?;
        let rest = segments
            .strip_prefix("segments")
            .ok_or_else(|| bad("line `segments` missing"))?;
        let segments = if rest.is_empty() {
            Vec::new()
        } else {
            rest.strip_prefix(' ')
                .ok_or_else(|| bad("line `segments` malformed"))?
                .split(' ')
                .map(|s| number(s, "segment"))
                .collect::<Result<Vec<u64>, _>>()?
        };
        let ascending = segments.windows(2).all(|w| w[0] < w[1]);
        let in_range = segments.iter().all(|&g| g > base && g <= generation);
        if base > generation || !ascending || !in_range {
            return Err(Corruption::Manifest(format!(
                "generations inconsistent: generation {generation}, base {base}, segments {segments:?}"
            )));
        }
        Ok(Manifest {
            generation,
            base,
            segments,
        })
    }

    /// The manifest file of the book at `book` (`<book>.live`, docs/FORMAT.md §10.2).
    #[doc(hidden)]
    pub fn path_of(book: &Path) -> PathBuf {
        manifest_path(book)
    }

    /// Reads the manifest of `book`; `None` if it has none (a book without segments).
    pub(crate) fn read(book: &Path) -> Result<Option<Manifest>> {
        use std::os::unix::fs::OpenOptionsExt;
        let path = manifest_path(book);
        // Never blocks: a FIFO planted at the name is opened without waiting for a writer.
        let file = match std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK | libc::O_CLOEXEC)
            .open(&path)
        {
            Ok(f) => f,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
            Err(e) => return Err(Error::io(format!("reading {}", path.display()), e)),
        };
        if !file.metadata().is_ok_and(|m| m.is_file()) {
            return Err(Error::CorruptFile {
                path,
                corruption: Corruption::Manifest(
                    "not a regular file (bookdb writes its manifest as one); move it away".into(),
                ),
            });
        }
        let mut bytes = Vec::with_capacity(256);
        file.take(MANIFEST_MAX_BYTES)
            .read_to_end(&mut bytes)
            .map_err(|e| Error::io(format!("reading {}", path.display()), e))?;
        Manifest::decode(&bytes)
            .map(Some)
            .map_err(|corruption| Error::CorruptFile { path, corruption })
    }

    /// Publishes this manifest: written beside the book under a temporary name, synced and
    /// renamed over the old one (the commit point of every publication), directory synced.
    pub(crate) fn publish(&self, book: &Path) -> Result<()> {
        crash_point("manifest-write");
        let path = manifest_path(book);
        write_sidecar(book, &path, &self.encode())?;
        crash_point("manifest-published");
        Ok(())
    }
}

/// What a finished [`BookWriter`]'s file becomes (docs/FORMAT.md §10.3).
pub(super) enum Target {
    /// The book's base at the writer's path, published under the generation above the book's
    /// newest: a manifest (if the book has one) is replaced by one without segments, and the
    /// segments, now folded into the base, are removed.
    Base,
    /// A delta segment of the book at `book`, bearing `manifest.generation`, published by
    /// `manifest`; segment files the manifest does not list are removed after it. `view` is
    /// the whole book's counters after it.
    Segment {
        book: PathBuf,
        manifest: Manifest,
        view: Box<BookMeta>,
    },
}

impl Target {
    /// What publishing the file means for the book's manifest.
    pub(super) fn publication(&self) -> Publication<'_> {
        match self {
            Target::Base => Publication::Base,
            Target::Segment { book, manifest, .. } => Publication::Segment { book, manifest },
        }
    }
}

/// What a finished file becomes when it is published (docs/FORMAT.md §10.3): the base at its
/// own path, or a delta segment of `book` that `manifest` (the new state) lists. Book files
/// and transposition-table files (§14) are published alike.
pub(crate) enum Publication<'a> {
    Base,
    Segment {
        book: &'a Path,
        manifest: &'a Manifest,
    },
}

/// Publishes a finished, durable file written at `tmp` as `target` says (FORMAT §10.3):
/// fsync, rename onto `final_path`, directory fsync, then the manifest and the removal of what
/// the publication superseded. `generation` is the one written into the file.
pub(crate) fn publish(
    tmp: &Path,
    final_path: &Path,
    target: Publication<'_>,
    generation: u64,
) -> Result<()> {
    use std::os::unix::fs::OpenOptionsExt;
    // The writer's own new file (created with O_EXCL); never a link planted at its name since.
    let f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NOFOLLOW | libc::O_CLOEXEC)
        .open(tmp)
        .map_err(|e| Error::io(format!("reopening new book file {}", tmp.display()), e))?;
    // Every file of a book keeps the mode, owner and group of the book's base (a rewrite under
    // another umask or user must not lock out the book's readers).
    let book = match target {
        Publication::Base => final_path,
        Publication::Segment { book, .. } => book,
    };
    if let Err(e) = inherit_metadata(book, &f) {
        let _ = std::fs::remove_file(tmp);
        return Err(e);
    }
    f.sync_all()
        .map_err(|e| Error::io(format!("fsync of new book file {}", tmp.display()), e))?;
    drop(f);
    crash_point("file-synced");
    if let Publication::Segment { book, manifest } = target
        && let Err(e) = mark_publishing(book, manifest.generation)
    {
        let _ = std::fs::remove_file(tmp);
        return Err(e);
    }
    if let Err(e) = std::fs::rename(tmp, final_path) {
        let _ = std::fs::remove_file(tmp);
        return Err(Error::io(
            format!("moving new book to {}", final_path.display()),
            e,
        ));
    }
    sync_dir(final_path);
    match target {
        Publication::Base => {
            crash_point("base-renamed");
            // Readers that find the base newer than the manifest ignore the manifest's
            // segments (§10.4), so this only tidies up.
            if manifest_path(final_path).exists() || !segment_files(final_path).is_empty() {
                Manifest {
                    generation,
                    base: generation,
                    segments: Vec::new(),
                }
                .publish(final_path)?;
                remove_segments_except(final_path, &[]);
            }
        }
        Publication::Segment { book, manifest } => {
            crash_point("segment-renamed");
            manifest.publish(book)?;
            remove_segments_except(book, &manifest.segments);
            clear_publishing(book);
        }
    }
    Ok(())
}

/// First line of the publishing marker.
const PUBLISHING_HEADER: &str = "bookdb-publishing 1";

/// `<book>.publishing`: the generation of the delta segment a writer is publishing, written
/// (durably) before the segment's rename and removed after its manifest (docs/FORMAT.md §10.3).
/// It is what tells a killed writer's unpublished segment from a segment the manifest does
/// not know for another reason (a restore that lost the manifest or brought back an older one),
/// which nothing may remove.
pub(crate) fn publishing_path(book: &Path) -> PathBuf {
    sidecar(book, "publishing")
}

/// Writes the publishing marker naming `generation` (temporary sibling, synced, renamed,
/// directory synced): the segment's rename comes after it.
fn mark_publishing(book: &Path, generation: u64) -> Result<()> {
    let text = format!("{PUBLISHING_HEADER}\ngeneration {generation}\n");
    write_sidecar(book, &publishing_path(book), text.as_bytes())?;
    crash_point("publishing-marked");
    Ok(())
}

/// Writes `bytes` as the book's file `path` (the manifest, the publishing marker): under a
/// temporary name beside it, with the book's mode, owner and group, synced, renamed into
/// place, the directory synced.
fn write_sidecar(book: &Path, path: &Path, bytes: &[u8]) -> Result<()> {
    let tmp = temp_sibling(path)?;
    let ctx = |e| Error::io(format!("writing {}", path.display()), e);
    let written = (|| -> Result<()> {
        let mut f = create_temp(&tmp)?;
        std::io::Write::write_all(&mut f, bytes).map_err(ctx)?;
        inherit_metadata(book, &f)?;
        f.sync_all().map_err(ctx)?;
        drop(f);
        std::fs::rename(&tmp, path).map_err(ctx)
    })();
    if let Err(e) = written {
        let _ = std::fs::remove_file(&tmp);
        return Err(e);
    }
    sync_dir(path);
    Ok(())
}

/// The generation the publishing marker of `book` names; `None` without a marker, or with
/// one that does not read as one (then no unlisted segment is taken for a killed writer's).
pub(crate) fn read_publishing(book: &Path) -> Option<u64> {
    use std::os::unix::fs::OpenOptionsExt;
    let f = std::fs::OpenOptions::new()
        .read(true)
        .custom_flags(libc::O_NONBLOCK | libc::O_CLOEXEC | libc::O_NOFOLLOW)
        .open(publishing_path(book))
        .ok()?;
    if !f.metadata().is_ok_and(|m| m.is_file()) {
        return None;
    }
    let mut text = String::new();
    f.take(256).read_to_string(&mut text).ok()?;
    let rest = text
        .strip_prefix(PUBLISHING_HEADER)?
        .strip_prefix("\ngeneration ")?;
    let digits = rest.strip_suffix('\n')?;
    (!digits.is_empty() && digits.bytes().all(|c| c.is_ascii_digit()))
        .then(|| digits.parse().ok())
        .flatten()
}

/// Removes the publishing marker of `book`, if any.
fn clear_publishing(book: &Path) {
    if std::fs::remove_file(publishing_path(book)).is_ok() {
        sync_dir(book);
    }
}

/// The segment files beside `book` that are newer than its state (the manifest's generation,
/// or the base's when newer) and are not the one the publishing marker names: no killed
/// writer leaves those (a writer publishes one segment at a time, marked first), so they are
/// a restore's (the manifest lost, or an older one brought back beside newer segments) or
/// another book's, and hold what the book's state may not. Writers refuse to touch them;
/// `verify` reports them.
pub(crate) fn unknown_newer_segments(
    book: &Path,
    manifest: Option<&Manifest>,
    base_generation: u64,
) -> Vec<(u64, PathBuf)> {
    let top = manifest.map_or(0, |m| m.generation).max(base_generation);
    let marked = read_publishing(book);
    segment_files(book)
        .into_iter()
        .filter(|(g, _)| *g > top && Some(*g) != marked)
        .collect()
}

/// For readers that check the whole book (`verify`; no lock held): the error describing the
/// [`unknown_newer_segments`] of `book` over a base of `base_generation`, if any — unless the
/// manifest changed while they were looked for (a writer publishing meanwhile).
pub(crate) fn unknown_segments_problem(book: &Path, base_generation: u64) -> Option<Error> {
    let manifest = Manifest::read(book).ok()?;
    let unknown = unknown_newer_segments(book, manifest.as_ref(), base_generation);
    if unknown.is_empty() || Manifest::read(book).ok()? != manifest {
        return None;
    }
    Some(unknown_segments_error(
        book,
        manifest.as_ref(),
        base_generation,
        &unknown,
    ))
}

/// The refusal of a writer (or `verify`'s finding) for [`unknown_newer_segments`].
pub(crate) fn unknown_segments_error(
    book: &Path,
    manifest: Option<&Manifest>,
    base_generation: u64,
    unknown: &[(u64, PathBuf)],
) -> Error {
    let names: Vec<String> = unknown
        .iter()
        .map(|(_, p)| p.display().to_string())
        .collect();
    let state = match manifest {
        Some(m) => format!(
            "the manifest {} names generation {} and lists segments {:?}",
            manifest_path(book).display(),
            m.generation,
            m.segments
        ),
        None => format!(
            "there is no manifest {} (the base alone, generation {base_generation})",
            manifest_path(book).display()
        ),
    };
    Error::CorruptFile {
        path: book.to_path_buf(),
        corruption: Corruption::Manifest(format!(
            "{} {} newer than the book's state, and no writer was publishing {}: {state}. \
             A restore that lost the manifest or brought back an older one beside newer \
             segments? The book as read now lacks what they hold, and nothing was changed. \
             Restore the base, manifest and segments of one backup together; or, to keep the \
             book as it reads now, move these files away",
            if names.len() == 1 {
                "segment file"
            } else {
                "segment files"
            },
            names.join(", "),
            if names.len() == 1 { "it" } else { "them" },
        )),
    }
}

/// `<book>.live`: the manifest.
pub(crate) fn manifest_path(book: &Path) -> PathBuf {
    sidecar(book, "live")
}

/// `<book>.seg-<generation>`: a delta segment (generation zero-padded to 12 digits, so names
/// sort by generation).
pub(crate) fn segment_path(book: &Path, generation: u64) -> PathBuf {
    sidecar(book, &format!("seg-{generation:012}"))
}

/// The delta segment files beside `book` (published or left by an interrupted writer), by
/// generation.
pub(crate) fn segment_files(book: &Path) -> Vec<(u64, PathBuf)> {
    let dir = crate::store::files::dir_of(book);
    let prefix = format!(
        "{}.seg-",
        book.file_name().unwrap_or_default().to_string_lossy()
    );
    let mut out = Vec::new();
    if let Ok(rd) = std::fs::read_dir(dir) {
        for e in rd.flatten() {
            let name = e.file_name().to_string_lossy().into_owned();
            if let Some(g) = name
                .strip_prefix(&prefix)
                .and_then(|g| g.parse::<u64>().ok())
            {
                out.push((g, e.path()));
            }
        }
    }
    out.sort();
    out
}

/// The generation of the newest publication of `book`, for a writer (under the lock) to
/// publish above: the manifest's, or the base file's if it is newer (a writer killed between
/// renaming a new base and publishing its manifest), or 0 for a new book.
pub(crate) fn current_generation(book: &Path, base_generation: Option<u64>) -> Result<u64> {
    let m = Manifest::read(book)?.map_or(0, |m| m.generation);
    Ok(m.max(base_generation.unwrap_or(0)))
}

/// Brings the files beside `book` in line with the state readers see (the caller holds the
/// writer lock): removes segment files no reader can reach (unpublished ones left by a killed
/// writer, and those folded into the base), and rewrites a manifest a killed fold left behind
/// its base. `base_generation` is the generation of the base file now at `book`.
pub(crate) fn recover(book: &Path, base_generation: u64) -> Result<()> {
    let manifest = Manifest::read(book)?;
    if let Some(m) = &manifest {
        check_base_matches(book, m, base_generation)?;
    }
    let unknown = unknown_newer_segments(book, manifest.as_ref(), base_generation);
    if !unknown.is_empty() {
        return Err(unknown_segments_error(
            book,
            manifest.as_ref(),
            base_generation,
            &unknown,
        ));
    }
    let live: Vec<u64> = match &manifest {
        Some(m) if m.base == base_generation => m.segments.clone(),
        _ => Vec::new(),
    };
    if let Some(m) = &manifest
        && m.generation < base_generation
    {
        // A fold renamed its base into place and was killed before its manifest.
        Manifest {
            generation: base_generation,
            base: base_generation,
            segments: Vec::new(),
        }
        .publish(book)?;
    }
    remove_segments_except(book, &live);
    clear_publishing(book);
    Ok(())
}

/// Refuses (changing nothing) a manifest that lists segments of another base than the one at
/// `book` (generation `base_generation`): a base restored without its manifest and segments,
/// or another book's base put in its place. Only the state a killed writer leaves is accepted:
/// the manifest names this base, or the base was published right after the manifest (its
/// generation is the manifest's + 1, FORMAT §10.3) and holds what the segments held.
pub(crate) fn check_base_matches(book: &Path, m: &Manifest, base_generation: u64) -> Result<()> {
    let killed_fold = base_generation == m.generation + 1;
    if m.base == base_generation || killed_fold || m.segments.is_empty() {
        return Ok(());
    }
    Err(Error::CorruptFile {
        path: book.to_path_buf(),
        corruption: Corruption::Manifest(format!(
            "the manifest {} lists delta segments {:?} over a base of generation {}, but {} \
             holds generation {base_generation}: a base restored without its manifest and \
             segments, or another book's base; nothing was changed. Restore the base, manifest \
             and segments of one backup together, or, to keep this base alone, move {} and \
             the segment files away",
            manifest_path(book).display(),
            m.segments,
            m.base,
            book.display(),
            manifest_path(book).display()
        )),
    })
}

/// Takes the writer lock of `book` (one writer at a time; readers never wait for it) and
/// brings the files beside it in line with what readers see: temporary files of killed
/// writers removed, [`recover`]ed. Every command that changes a book starts here; `book` is
/// the resolved path ([`crate::store::files::resolve_book`]): a symlink is refused, since
/// every file beside it would be beside the link, not the book.
pub(crate) fn lock_for_writing(book: &Path, wait: LockWait) -> Result<WriterLock> {
    if std::fs::symlink_metadata(book).is_ok_and(|m| m.file_type().is_symlink()) {
        return Err(Error::Internal(format!(
            "{}: a writer was given the path of a symbolic link, not the book it leads to",
            book.display()
        )));
    }
    let lock = WriterLock::acquire(book, wait)?;
    crash_point("lock-taken");
    remove_stale_temp_books(book);
    match super::reader::read_generation(book) {
        Some(g) => recover(book, g)?,
        None if std::fs::symlink_metadata(book).is_err() => {
            // No base. A book that never had one has nothing beside it; a manifest or segments
            // without their base are a book whose base was lost or moved: refuse, keep them.
            if let Some(e) = missing_base(book) {
                return Err(e);
            }
        }
        None => {}
    }
    Ok(lock)
}

/// When `book` has no base file but a manifest or segment files remain beside it (its base
/// removed or moved, or a restore without it): the corruption every command reports, writers
/// and readers alike; `None` otherwise (no book there at all).
pub(crate) fn missing_base(book: &Path) -> Option<Error> {
    let manifest = manifest_path(book);
    let segments = segment_files(book);
    if !manifest.exists() && segments.is_empty() {
        return None;
    }
    let mut names: Vec<String> = Vec::new();
    if manifest.exists() {
        names.push(manifest.display().to_string());
    }
    names.extend(segments.iter().map(|(_, p)| p.display().to_string()));
    Some(Error::CorruptFile {
        path: book.to_path_buf(),
        corruption: Corruption::Manifest(format!(
            "the base file is missing but {} remain: the book's base was removed or moved; \
             nothing was changed. Restore the base (with the manifest and segments of the same \
             backup), or, to start a new book here, remove these files",
            names.join(", ")
        )),
    })
}

/// Removes the segment files of `book` whose generation is not in `keep` (readers that still
/// have one open keep reading it: an unlinked file lives until it is closed).
pub(crate) fn remove_segments_except(book: &Path, keep: &[u64]) {
    let mut removed = false;
    for (g, path) in segment_files(book) {
        if !keep.contains(&g) {
            let gone = std::fs::remove_file(path).is_ok();
            removed |= gone;
            if gone {
                crash_point("segment-removed");
            }
        }
    }
    if removed {
        sync_dir(book);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    #[test]
    fn manifest_text_is_stable() {
        let m = Manifest {
            generation: 7,
            base: 3,
            segments: vec![5, 7],
        };
        let text = String::from_utf8(m.encode()).unwrap();
        assert!(text.starts_with("bookdb-live 1\ngeneration 7\nbase 3\nsegments 5 7\ncrc32 "));
        let empty = Manifest {
            generation: 4,
            base: 4,
            segments: vec![],
        };
        assert_eq!(Manifest::decode(&empty.encode()).unwrap(), empty);
    }

    #[test]
    fn bad_manifests_are_corruption() {
        let good = Manifest {
            generation: 9,
            base: 2,
            segments: vec![3, 9],
        }
        .encode();
        for i in 0..good.len() {
            let mut b = good.clone();
            b[i] ^= 0x20;
            assert!(Manifest::decode(&b).is_err(), "flip at {i} accepted");
        }
        assert!(Manifest::decode(&good[..good.len() - 4]).is_err());
        assert!(Manifest::decode(b"").is_err());
        // Inconsistent generations are refused even with a right checksum.
        for m in [
            Manifest {
                generation: 3,
                base: 4,
                segments: vec![],
            },
            Manifest {
                generation: 9,
                base: 2,
                segments: vec![9, 3],
            },
            Manifest {
                generation: 9,
                base: 2,
                segments: vec![2],
            },
            Manifest {
                generation: 5,
                base: 2,
                segments: vec![6],
            },
        ] {
            assert!(Manifest::decode(&m.encode()).is_err(), "{m:?}");
        }
    }

    proptest! {
        #[test]
        fn manifest_round_trips(base in 0u64..1 << 40, extra in proptest::collection::btree_set(1u64..1000, 0..12)) {
            let segments: Vec<u64> = extra.iter().map(|g| base + g).collect();
            let generation = segments.last().copied().unwrap_or(base) + (base % 3);
            let m = Manifest { generation, base, segments };
            prop_assert_eq!(Manifest::decode(&m.encode()).unwrap(), m);
        }

        #[test]
        fn manifest_decoder_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
            let _ = Manifest::decode(&bytes);
        }
    }
}

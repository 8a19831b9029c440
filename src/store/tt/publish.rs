//! Publishing a table's memory as files and folding files (docs/FORMAT.md §14.5): the first
//! publication is the base, later ones delta segments under the live book's protocol
//! (§10.3); segments of similar size are merged (size tiers), and a merge that grows to half
//! the base makes a new base, so each entry is rewritten a logarithmic number of times.

use std::path::Path;

use super::entry::Entry;
use super::file::{Item, TableKind, TtFile, write_file};
use crate::store::book::{
    Manifest, Publication, current_generation, publish, read_generation, segment_path,
};
use crate::store::error::Result;
use crate::store::files::temp_sibling;

/// More segments than this are merged whatever their sizes.
pub(crate) const MAX_SEGMENTS: usize = 8;

/// Writes `items` as the new base of the table at `book` (every segment superseded) and
/// returns the entries written.
pub(crate) fn publish_base(
    book: &Path,
    kind: &TableKind,
    capacity: u64,
    items: &mut dyn Iterator<Item = Result<Item>>,
) -> Result<u64> {
    let generation = current_generation(book, read_generation(book))? + 1;
    let tmp = temp_sibling(book)?;
    let written = match write_file(&tmp, kind, generation, capacity, items) {
        Ok(w) => w,
        Err(e) => {
            let _ = std::fs::remove_file(&tmp);
            return Err(e);
        }
    };
    publish(&tmp, book, Publication::Base, generation)?;
    Ok(written.entries)
}

/// Writes `items` as a segment of generation `manifest.generation` and publishes `manifest`
/// (which lists it); returns the entries written.
pub(crate) fn publish_segment(
    book: &Path,
    kind: &TableKind,
    manifest: &Manifest,
    capacity: u64,
    items: &mut dyn Iterator<Item = Result<Item>>,
) -> Result<u64> {
    let path = segment_path(book, manifest.generation);
    let tmp = temp_sibling(&path)?;
    let written = match write_file(&tmp, kind, manifest.generation, capacity, items) {
        Ok(w) => w,
        Err(e) => {
            let _ = std::fs::remove_file(&tmp);
            return Err(e);
        }
    };
    publish(
        &tmp,
        &path,
        Publication::Segment { book, manifest },
        manifest.generation,
    )?;
    Ok(written.entries)
}

/// The items of `files` merged in (key, exact) order; the entries of one position folded in
/// the files' order by the replacement rule (a later file's entry is the later store).
pub(crate) fn merged<'a>(
    files: &[&'a TtFile],
) -> Result<impl Iterator<Item = Result<Item>> + use<'a>> {
    let mut heads = Vec::with_capacity(files.len());
    for f in files {
        let mut it: Box<dyn Iterator<Item = Result<Item>> + 'a> = Box::new(f.items()?);
        let first = it.next();
        heads.push((first, it));
    }
    Ok(std::iter::from_fn(move || {
        // The least (key, exact) among the heads; errors first.
        let mut least: Option<usize> = None;
        for (i, (head, _)) in heads.iter().enumerate() {
            match head {
                None => {}
                Some(Err(_)) => {
                    least = Some(i);
                    break;
                }
                Some(Ok((k, x, _))) => {
                    let better = least.is_none_or(|j| match &heads[j].0 {
                        Some(Ok((lk, lx, _))) => (k, x) < (lk, lx),
                        _ => false,
                    });
                    if better {
                        least = Some(i);
                    }
                }
            }
        }
        let i = least?;
        let (key, exact, mut entry) = match heads[i].0.take()? {
            Ok(item) => item,
            Err(e) => return Some(Err(e)),
        };
        heads[i].0 = heads[i].1.next();
        // The same position in later files (files are in publication order).
        for (head, rest) in heads.iter_mut().skip(i + 1) {
            if let Some(Ok((k, x, e))) = head
                && *k == key
                && *x == exact
            {
                if e.replaces(&entry) {
                    entry = e.clone();
                }
                *head = rest.next();
            }
        }
        Some(Ok((key, exact, entry)))
    }))
}

/// The fold of one position's entries in publication order.
pub(crate) fn fold(acc: Option<Entry>, next: Entry) -> Entry {
    match acc {
        Some(old) if !next.replaces(&old) => old,
        _ => next,
    }
}

/// Which files the size-tier policy merges after a publication: `sizes` are the entries of
/// the base (index 0) and of each segment; the answer is the index from which the newest
/// files are merged into one (0: a new base), if any. The newest files are taken while the
/// one before them holds at most twice their entries together; past [`MAX_SEGMENTS`]
/// segments, all the segments are merged.
pub(crate) fn tier_to_merge(sizes: &[u64]) -> Option<usize> {
    let n = sizes.len();
    let mut from = n;
    let mut tail: u64 = 0;
    while from > 0 {
        let before = sizes[from - 1];
        if from < n && before > 2 * tail {
            break;
        }
        tail += before;
        from -= 1;
    }
    if n - from >= 2 {
        Some(from)
    } else if n > MAX_SEGMENTS + 1 {
        Some(1)
    } else {
        None
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn size_tiers() {
        assert_eq!(tier_to_merge(&[]), None);
        assert_eq!(tier_to_merge(&[100]), None);
        // A segment as big as the base (within 2x) makes a new base.
        assert_eq!(tier_to_merge(&[100, 100]), Some(0));
        assert_eq!(tier_to_merge(&[150, 100]), Some(0));
        // Two segments of a size merge; a big base before them stays.
        assert_eq!(tier_to_merge(&[1000, 100, 100]), Some(1));
        assert_eq!(tier_to_merge(&[1000, 100]), None);
        // The merge runs up the tiers while each is no more than twice the tail.
        assert_eq!(tier_to_merge(&[10_000, 400, 200, 100, 100]), Some(1));
        // Too many segments: all of them merge, the base stays.
        let mut many = vec![1u64 << 40];
        many.extend((0..9).map(|i| 1u64 << (30 - 3 * i)));
        assert_eq!(tier_to_merge(&many), Some(1));
    }

    #[test]
    fn equal_flushes_keep_few_files_and_rewrite_each_entry_a_few_times() {
        let (mut files, mut written) = (Vec::<u64>::new(), 0u64);
        let flushes = 4096u64;
        for _ in 0..flushes {
            files.push(1);
            written += 1;
            if let Some(from) = tier_to_merge(&files) {
                let merged: u64 = files[from..].iter().sum();
                written += merged;
                files.truncate(from);
                files.push(merged);
            }
            assert!(files.len() <= MAX_SEGMENTS + 1, "{files:?}");
        }
        // About log_3(flushes) rewrites of each entry.
        let per_entry = written as f64 / flushes as f64;
        assert!(per_entry < 12.0, "{per_entry}");
    }
}

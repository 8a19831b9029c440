//! `verify`'s check of a book file's key filter (docs/FORMAT.md §4.7), fed the file's keys in
//! order as the blocks are folded: the n-th distinct key opens partition n / 1,536 exactly when
//! it is that partition's first, every key passes its partition, every partition decodes
//! (checksum) and the index's key count and last key are the file's. One partition is held at
//! a time.

use crate::store::book::{BookFile, FilterIndex, PARTITION_KEYS, load_partition};
use crate::store::filter::KeyFilter;

pub(super) struct FilterCheck<'a> {
    file: &'a BookFile,
    index: &'a FilterIndex,
    /// Distinct keys seen, and the last.
    seen: u64,
    last: Option<u64>,
    /// The partition held (its number and filter; `None` when it did not decode).
    held: Option<(usize, Option<KeyFilter>)>,
    pub(super) partitions: u64,
    pub(super) problems: Vec<String>,
    /// A partition could not be read at all (redb then refuses the file's later reads).
    pub(super) read_failed: bool,
    /// Keys failing their partition are reported up to this many, then counted.
    failing: u64,
}

const MAX_REPORTED: u64 = 10;

impl<'a> FilterCheck<'a> {
    /// The check of `file`'s filter, if it has one.
    pub(super) fn of(file: &'a BookFile) -> Option<FilterCheck<'a>> {
        Some(FilterCheck {
            file,
            index: file.filter_index()?,
            seen: 0,
            last: None,
            held: None,
            partitions: 0,
            problems: Vec::new(),
            read_failed: false,
            failing: 0,
        })
    }

    /// The file's next key (keys come ascending; a repeated key is one).
    pub(super) fn key(&mut self, key: u64) {
        if self.last == Some(key) {
            return;
        }
        self.last = Some(key);
        let n = self.seen;
        self.seen += 1;
        let part = (n / PARTITION_KEYS as u64) as usize;
        if n.is_multiple_of(PARTITION_KEYS as u64) {
            match self.index.firsts.get(part) {
                Some(&first) if first == key => {}
                Some(&first) => self.problems.push(format!(
                    "key filter: partition {part} starts at {first:016x}, the file's key {n} is {key:016x}"
                )),
                None => self.problems.push(format!(
                    "key filter: key {key:016x} (the file's key {n}) is beyond the index's {} partitions",
                    self.index.firsts.len()
                )),
            }
        }
        if self.held.as_ref().is_none_or(|(p, _)| *p != part) {
            if part >= self.index.firsts.len() {
                return;
            }
            let read = self.file.filter_partition(part as u32);
            self.read_failed |= read.is_err();
            let f = match read.and_then(|b| load_partition(part, b)) {
                Ok(f) => {
                    self.partitions += 1;
                    Some(f)
                }
                Err(e) => {
                    self.problems.push(e.to_string());
                    None
                }
            };
            self.held = Some((part, f));
        }
        if let Some((_, Some(f))) = &self.held
            && !f.may_contain(key)
        {
            self.failing += 1;
            if self.failing <= MAX_REPORTED {
                self.problems.push(format!(
                    "key filter partition {part}: key {key:016x} of the file fails it (a probe would miss it)"
                ));
            }
        }
    }

    /// The checks of the whole: key count, last key, partitions past the keys.
    pub(super) fn finish(mut self) -> (u64, Vec<String>) {
        if self.failing > MAX_REPORTED {
            self.problems.push(format!(
                "key filter: {} keys fail their partition in all",
                self.failing
            ));
        }
        if self.seen != self.index.keys {
            self.problems.push(format!(
                "key filter: the index counts {} keys, the file has {}",
                self.index.keys, self.seen
            ));
        }
        if let Some(last) = self.last
            && last != self.index.last
        {
            self.problems.push(format!(
                "key filter: the index's last key is {:016x}, the file's {last:016x}",
                self.index.last
            ));
        }
        (self.partitions, self.problems)
    }
}

//! The record a PGN import stores for each input in the book's `imports` table (FORMAT §4.2),
//! keyed by the input's fingerprint: [`ImportRecord`], and its exact bytes.

use serde::{Deserialize, Serialize};

use crate::error::{Error, Result};

/// One input's record in the book's `imports` table.
///
/// These bytes are persisted. The records used to be built with `serde_json::json!`, whose
/// objects (without serde_json's `preserve_order` feature) serialise their keys in
/// alphabetical order, and FORMAT §4.2 documents that order: the fields are declared in it, so
/// that the bytes stay the same (pinned by a test). Do not reorder them.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub(crate) struct ImportRecord {
    /// The import run that committed the record (16 hex digits); absent in records written
    /// before attempts were recorded.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) attempt: Option<String>,
    /// Size of the input file; `None` (`null`) for stdin.
    pub(crate) bytes: Option<u64>,
    /// `--dedupe` was given.
    pub(crate) dedupe: bool,
    /// The file's device number when it was imported (its identity, with `ino`, `mtime_ns`,
    /// `path` and `bytes`; absent for stdin and in records written before identities were
    /// recorded).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) dev: Option<u64>,
    pub(crate) games_imported: u64,
    pub(crate) games_read: u64,
    pub(crate) games_skipped: u64,
    /// Unix time, seconds.
    pub(crate) imported_at: u64,
    /// The file's inode number when it was imported.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) ino: Option<u64>,
    /// `--max-ply`.
    pub(crate) max_ply: usize,
    /// `--min-rating`.
    pub(crate) min_rating: Option<u32>,
    /// The file's modification time when it was imported, nanoseconds since the Unix epoch.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) mtime_ns: Option<i64>,
    /// The path as given, or `<stdin>`.
    pub(crate) name: String,
    /// The file's canonical path when it was imported.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub(crate) path: Option<String>,
}

/// What identifies an input file without reading it: canonical path, size, modification
/// time, inode and device. A file whose identity matches an import record's is taken to be
/// the file that record counted (`import --rehash` reads and fingerprints it instead).
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub(crate) struct FileIdentity {
    pub(crate) path: String,
    pub(crate) bytes: u64,
    pub(crate) mtime_ns: i64,
    pub(crate) ino: u64,
    pub(crate) dev: u64,
}

impl FileIdentity {
    /// The identity of the file at `path`; `None` if it is not a regular file or its path
    /// cannot be resolved or is not UTF-8.
    pub(crate) fn of(path: &str) -> Option<FileIdentity> {
        use std::os::unix::fs::MetadataExt;
        let canonical = std::fs::canonicalize(path).ok()?;
        let m = std::fs::metadata(&canonical).ok()?;
        if !m.is_file() {
            return None;
        }
        Some(FileIdentity {
            path: canonical.to_str()?.to_string(),
            bytes: m.len(),
            mtime_ns: m
                .mtime()
                .saturating_mul(1_000_000_000)
                .saturating_add(m.mtime_nsec()),
            ino: m.ino(),
            dev: m.dev(),
        })
    }
}

impl ImportRecord {
    /// The identity of the file the record counted, if it was recorded.
    pub(crate) fn identity(&self) -> Option<FileIdentity> {
        Some(FileIdentity {
            path: self.path.clone()?,
            bytes: self.bytes?,
            mtime_ns: self.mtime_ns?,
            ino: self.ino?,
            dev: self.dev?,
        })
    }

    /// The record's bytes as stored: compact JSON.
    pub(crate) fn to_bytes(&self) -> Result<Vec<u8>> {
        serde_json::to_vec(self).map_err(|e| Error::Internal(e.to_string()))
    }

    /// A stored record; `None` if the bytes are not one (records of other kinds, such as a
    /// Polyglot import's, share the table).
    pub(crate) fn parse(bytes: &[u8]) -> Option<ImportRecord> {
        serde_json::from_slice(bytes).ok()
    }
}

#[cfg(test)]
mod tests {
    use super::super::apply::records;
    use super::super::options::ImportOptions;
    use super::super::plan::{PlannedInput, Source};
    use super::super::state::InputCounts;
    use super::*;
    use crate::ops::pgn::CountRules;

    /// What the `serde_json::json!` code that built the records before [`ImportRecord`]
    /// existed wrote for these values (computed once from that code).
    const OLD_WITH_BYTES: &str = r#"{"attempt":"0123456789abcdef","bytes":1234,"dedupe":true,"games_imported":8,"games_read":10,"games_skipped":2,"imported_at":1700000000,"max_ply":50,"min_rating":1800,"name":"dir/in \"x\".pgn"}"#;
    const OLD_STDIN: &str = r#"{"attempt":"0123456789abcdef","bytes":null,"dedupe":false,"games_imported":8,"games_read":10,"games_skipped":2,"imported_at":1700000000,"max_ply":50,"min_rating":null,"name":"dir/in \"x\".pgn"}"#;

    fn counts() -> InputCounts {
        InputCounts {
            read: 10,
            imported: 8,
            skipped: 2,
        }
    }

    fn opts(dedupe: bool, min_rating: Option<u32>) -> ImportOptions {
        ImportOptions {
            rules: CountRules {
                max_ply: 50,
                min_rating,
                facets: crate::store::facet::FacetSet::NONE,
            },
            dedupe,
            ..Default::default()
        }
    }

    #[test]
    fn records_keep_the_bytes_json_macro_wrote() {
        let input = |bytes| PlannedInput {
            name: r#"dir/in "x".pgn"#.into(),
            source: Source::File,
            fingerprint: Some("f".repeat(32)),
            bytes,
            identity: None,
        };
        for (bytes, dedupe, min_rating, old) in [
            (Some(1234), true, Some(1800), OLD_WITH_BYTES),
            (None, false, None, OLD_STDIN),
        ] {
            let recs = records(
                &[input(bytes)],
                &[counts()],
                &opts(dedupe, min_rating),
                1_700_000_000,
                "0123456789abcdef",
            )
            .unwrap();
            assert_eq!(recs.len(), 1);
            assert_eq!(recs[0].0, "f".repeat(32));
            assert_eq!(String::from_utf8(recs[0].1.clone()).unwrap(), old);
            // Stored records read back, and write the same bytes again.
            let rec = ImportRecord::parse(old.as_bytes()).unwrap();
            assert_eq!(rec.to_bytes().unwrap(), old.as_bytes());
        }
    }

    #[test]
    fn inputs_without_a_fingerprint_get_no_record() {
        let stdin = PlannedInput {
            name: "<stdin>".into(),
            source: Source::Stdin,
            fingerprint: None,
            bytes: None,
            identity: None,
        };
        let recs = records(&[stdin], &[counts()], &opts(false, None), 0, "a").unwrap();
        assert!(recs.is_empty());
    }

    #[test]
    fn records_written_before_attempts_were_recorded_still_parse() {
        let old = br#"{"bytes":1234,"dedupe":false,"games_imported":8,"games_read":10,"games_skipped":2,"imported_at":1700000000,"max_ply":50,"min_rating":null,"name":"a.pgn"}"#;
        let rec = ImportRecord::parse(old).unwrap();
        assert_eq!(rec.attempt, None);
        assert_eq!((rec.games_read, rec.bytes), (10, Some(1234)));
        assert_eq!(rec.to_bytes().unwrap(), old);
        // A Polyglot import's record is not a PGN import's.
        let polyglot = br#"{"bytes":16,"entries_read":1,"format":"polyglot","imported_at":0,"key_only":0,"name":"b.bin","placed":1}"#;
        assert_eq!(ImportRecord::parse(polyglot), None);
    }

    #[test]
    fn identities_are_recorded_and_read_back() {
        let input = PlannedInput {
            name: "a.pgn".into(),
            source: Source::File,
            fingerprint: Some("f".repeat(32)),
            bytes: Some(1234),
            identity: Some(FileIdentity {
                path: "/data/a.pgn".into(),
                bytes: 1234,
                mtime_ns: 1_700_000_000_123_456_789,
                ino: 42,
                dev: 7,
            }),
        };
        let recs = records(
            &[input],
            &[counts()],
            &opts(false, None),
            1_700_000_000,
            "a",
        )
        .unwrap();
        let text = String::from_utf8(recs[0].1.clone()).unwrap();
        assert_eq!(
            text,
            r#"{"attempt":"a","bytes":1234,"dedupe":false,"dev":7,"games_imported":8,"games_read":10,"games_skipped":2,"imported_at":1700000000,"ino":42,"max_ply":50,"min_rating":null,"mtime_ns":1700000000123456789,"name":"a.pgn","path":"/data/a.pgn"}"#
        );
        let rec = ImportRecord::parse(text.as_bytes()).unwrap();
        assert_eq!(rec.identity().unwrap().ino, 42);
        // Records without identities have none.
        assert_eq!(
            ImportRecord::parse(OLD_STDIN.as_bytes())
                .unwrap()
                .identity(),
            None
        );
    }
}

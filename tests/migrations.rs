//! Every older format version migrates: the fixture books under `migrations/fixtures/` (one per
//! older version, written by that version's code, see its README) are refused by the current
//! reader with exit code 4 and a hint, and `bookdb migrate` turns each into a current book with
//! the same content, counters, import records and game fingerprints.

mod common;
use common::*;

use std::path::{Path, PathBuf};
use std::process::Command;

fn fixtures() -> Vec<(u32, PathBuf)> {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("migrations/fixtures");
    let mut out: Vec<(u32, PathBuf)> = std::fs::read_dir(&dir)
        .unwrap()
        .flatten()
        .filter_map(|e| {
            let name = e.file_name().to_string_lossy().into_owned();
            let v = name
                .strip_prefix('v')?
                .strip_suffix(".book")?
                .parse()
                .ok()?;
            Some((v, e.path()))
        })
        .collect();
    out.sort();
    out
}

/// The sample's two halves, as `make.sh` splits them (the same bytes, so the same input
/// fingerprints as the fixtures' import records).
fn halves(dir: &Path) -> (PathBuf, PathBuf) {
    let text =
        std::fs::read(Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/data/sample.pgn")).unwrap();
    let line_starts: Vec<usize> = std::iter::once(0)
        .chain(
            text.iter()
                .enumerate()
                .filter(|(_, b)| **b == b'\n')
                .map(|(i, _)| i + 1),
        )
        .collect();
    // Line 1643 starts game 101 (make.sh).
    let at = line_starts[1642];
    assert!(
        text[at..].starts_with(b"[Event "),
        "sample.pgn changed: update make.sh"
    );
    let (a, b) = (dir.join("first.pgn"), dir.join("second.pgn"));
    std::fs::write(&a, &text[..at]).unwrap();
    std::fs::write(&b, &text[at..]).unwrap();
    (a, b)
}

#[test]
fn every_older_format_version_migrates() {
    let fx = fixtures();
    let versions: Vec<u32> = fx.iter().map(|(v, _)| *v).collect();
    let stats: serde_json::Value = serde_json::from_str(&ok(&[
        "stats",
        "--json",
        "--book",
        s(&{
            let d = tempfile::tempdir().unwrap().keep();
            let b = d.join("probe.book");
            ok(&["import", "--quiet", "--book", s(&b), s(&halves(&d).0)]);
            b
        }),
    ]))
    .unwrap();
    let current = stats["format_version"].as_u64().unwrap() as u32;
    // A fixture of every version before the current one.
    assert_eq!(
        versions,
        (1..current).collect::<Vec<_>>(),
        "a fixture per older version"
    );
    let dir = tempfile::tempdir().unwrap();
    let (first, second) = halves(dir.path());
    let fresh = dir.path().join("fresh.book");
    ok(&[
        "import",
        "--quiet",
        "--book",
        s(&fresh),
        s(&first),
        s(&second),
    ]);
    let want = ok(&["dump", "--book", s(&fresh)]);
    for (version, path) in fx {
        let book = dir.path().join(format!("v{version}.book"));
        std::fs::copy(&path, &book).unwrap();
        for cmd in ["probe", "dump", "stats", "verify"] {
            let out = Command::new(bin())
                .args([cmd, "--book", s(&book)])
                .output()
                .unwrap();
            assert_eq!(out.status.code(), Some(4), "v{version} {cmd}");
            let err = String::from_utf8_lossy(&out.stderr);
            assert!(err.contains("bookdb migrate"), "v{version} {cmd}: {err}");
        }
        let msg = ok(&["migrate", "--book", s(&book)]);
        assert!(
            msg.contains(&format!(
                "migrated from format version {version} to {current}"
            )),
            "{msg}"
        );
        ok(&["verify", "--book", s(&book)]);
        assert_eq!(
            ok(&["dump", "--book", s(&book)]),
            want,
            "v{version}: content changed"
        );
        let st: serde_json::Value =
            serde_json::from_str(&ok(&["stats", "--json", "--book", s(&book)])).unwrap();
        assert_eq!(st["format_version"], current);
        assert_eq!(st["games"], 200);
        // Version 2 fixtures were imported with --dedupe: their fingerprints survive.
        assert_eq!(
            st["dedupe_games"],
            if version >= 2 { 200 } else { 0 },
            "v{version}"
        );
        // The import records survive: importing the same files again counts nothing.
        let r: serde_json::Value = serde_json::from_str(&ok(&[
            "import",
            "--json",
            "--quiet",
            "--book",
            s(&book),
            s(&first),
            s(&second),
        ]))
        .unwrap();
        assert_eq!(r["games_imported"], 0, "v{version}: {r}");
        let again = ok(&["migrate", "--book", s(&book)]);
        assert!(again.contains("nothing to do"), "{again}");
    }
}

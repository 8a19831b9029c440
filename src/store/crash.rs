//! Crash points: the named moments at which the crash tests kill a writer (`--features
//! failpoints`; nothing in a plain build), and their list (docs/RELIABILITY.md).

/// Every crash point of every writer, in the order a writer reaches them (docs/RELIABILITY.md).
/// `tests/crash_points.rs` checks that this list and the `crash_point("…")` calls in the
/// source name the same points, and crashes each writer at each point in turn.
#[doc(hidden)]
pub const CRASH_POINTS: &[&str] = &[
    // Any writer, after it took the book's lock and before it tidied what killed writers left.
    "lock-taken",
    // Any writer of a book file (base, segment, fold): the temporary file exists.
    "writer-created",
    // Publishing (FORMAT §10.3): the new file synced, a segment's marker written, the file
    // renamed, the manifest written.
    "file-synced",
    "publishing-marked",
    "base-renamed",
    "segment-renamed",
    "manifest-write",
    "manifest-published",
    // Removing segment files the manifest no longer lists (after a fold, a new base, recovery).
    "segment-removed",
    // A small file (import state, the attempt marker) synced under its temporary name.
    "atomic-write-synced",
    // `import`: runs spilled at a checkpoint, the checkpoint recorded, runs merged in passes
    // (the merged run written, recorded, its sources deleted), game runs merged likewise (the
    // merged game run written), the attempt marked, the book changed, the staging area
    // removed.
    "import-runs-spilled",
    "import-checkpoint-saved",
    "import-runs-merged",
    "import-merge-recorded",
    "import-game-runs-merged",
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

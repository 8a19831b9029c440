//! How `bookdb serve` runs: [`ServeOptions`] and their defaults.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

use crate::store::book::MAX_SEGMENTS;

/// Largest request head (request line and headers), bytes; larger ones get 431 (from hyper
/// when its buffer fills before the head ends, from `routes::observe` when a head up to twice
/// this fitted in one read).
pub const MAX_HEAD: usize = 64 * 1024;

/// Most header fields a request may have; more get 431.
pub const MAX_HEADERS: usize = 100;

/// Default `--cache-mib` of `bookdb serve`: room for the opened blocks of a book of some ten
/// million positions (the 7.3M-position book of docs/PERFORMANCE.md opens to 134 MB).
pub const DEFAULT_BLOCK_CACHE_MIB: usize = 256;

/// How `bookdb serve` runs.
#[derive(Clone, Debug)]
pub struct ServeOptions {
    pub book: PathBuf,
    pub listen: SocketAddr,
    /// Enables `POST /v1/import` with the token in this file.
    pub admin_token_file: Option<PathBuf>,
    /// Open connections beyond this are closed at once; 0: as many as the descriptor limit
    /// allows ([`connection_cap`]). Either way the cap is at most what `RLIMIT_NOFILE` leaves
    /// after the book's reserve.
    pub max_connections: usize,
    /// Largest `POST /v1/import` body, bytes.
    pub max_upload: u64,
    /// How often the book is checked for changes.
    pub refresh: Duration,
    /// How long a client may take to send a request head, and an idle connection may wait.
    pub head_timeout: Duration,
    /// How long shutdown waits for in-flight requests (an admin import is always waited for).
    pub shutdown_grace: Duration,
    /// Limit of the cache of opened (verified, decompressed) blocks of each book file, bytes:
    /// room for the whole book lets every request be answered from memory.
    pub block_cache_bytes: usize,
    /// Worker threads; 0 = one per core.
    pub threads: usize,
    /// Print the listening line as JSON.
    pub json: bool,
}

impl Default for ServeOptions {
    fn default() -> Self {
        ServeOptions {
            book: PathBuf::new(),
            listen: SocketAddr::from(([127, 0, 0, 1], 8080)),
            admin_token_file: None,
            max_connections: 1024,
            max_upload: 1 << 30,
            refresh: Duration::from_millis(100),
            head_timeout: Duration::from_secs(10),
            shutdown_grace: Duration::from_secs(30),
            block_cache_bytes: DEFAULT_BLOCK_CACHE_MIB << 20,
            threads: 0,
            json: false,
        }
    }
}

/// Descriptors one state of the book can hold open: the base, [`MAX_SEGMENTS`] segments and
/// one more (a publication leaves a 9th segment until its fold).
const FILES_PER_STATE: u64 = 1 + MAX_SEGMENTS as u64 + 1;

/// Descriptors the server keeps out of the connections' reach: two states of the book (a
/// refresh opens the new files while requests still read the old), the manifest being read,
/// the writer lock, and the process's own (standard streams, the listener, epoll and its
/// wakers, signals, the log, `/proc` reads) — so a refresh never fails with EMFILE.
pub const DESCRIPTOR_RESERVE: u64 = 2 * FILES_PER_STATE + 1 + 1 + 24;

/// More kept for an admin import (`--admin-token-file`): its upload, the import's own opening
/// of the book, its writer's new file and the runs it merges.
pub const ADMIN_DESCRIPTOR_RESERVE: u64 = 16;

/// How many connections the server serves at once: `requested` (0: no limit asked for), at
/// most the descriptor limit `nofile` less the reserve, and at least 1. The second value says
/// why, for the log line at start.
pub fn connection_cap(requested: usize, nofile: u64, admin: bool) -> (usize, String) {
    let reserve = DESCRIPTOR_RESERVE + if admin { ADMIN_DESCRIPTOR_RESERVE } else { 0 };
    let allowed = usize::try_from(nofile.saturating_sub(reserve).max(1)).unwrap_or(usize::MAX);
    let why = format!(
        "the open-file limit is {nofile}; {reserve} descriptors are kept for the book's files \
         (base, up to {MAX_SEGMENTS} segments, manifest, lock, twice over during a refresh) \
         and the process"
    );
    match requested {
        0 => (allowed, why),
        r if r > allowed => (
            allowed,
            format!("--max-connections {r} lowered to {allowed}: {why}; raise it with `ulimit -n`"),
        ),
        r => (r, why),
    }
}

/// The soft `RLIMIT_NOFILE`, raised to the hard limit first (as much as the process may have
/// without privileges). `None` if it cannot be read.
pub fn open_file_limit() -> Option<u64> {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: getrlimit/setrlimit write to / read from the struct we pass, nothing else.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) != 0 {
            return None;
        }
        if lim.rlim_cur < lim.rlim_max {
            let raised = libc::rlimit {
                rlim_cur: lim.rlim_max,
                rlim_max: lim.rlim_max,
            };
            if libc::setrlimit(libc::RLIMIT_NOFILE, &raised) == 0 {
                lim = raised;
            }
        }
    }
    Some(lim.rlim_cur)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_connection_cap_leaves_the_books_descriptors() {
        let (cap, why) = connection_cap(1024, 64, false);
        assert_eq!(cap as u64, 64 - DESCRIPTOR_RESERVE);
        assert!(why.contains("lowered") && why.contains("64"), "{why}");
        assert_eq!(
            connection_cap(0, 1 << 20, false).0 as u64,
            (1 << 20) - DESCRIPTOR_RESERVE
        );
        assert_eq!(connection_cap(100, 1 << 20, true).0, 100);
        assert_eq!(connection_cap(1024, 10, true).0, 1);
    }
}

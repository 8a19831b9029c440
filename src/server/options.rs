//! How `bookdb serve` runs: [`ServeOptions`] and their defaults.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::time::Duration;

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
    /// Open connections beyond this are closed at once.
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

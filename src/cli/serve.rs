//! `bookdb serve`: answer HTTP — the lichess explorer API, `/v1/*`, `/health`, `/metrics`, the
//! explorer page and (with a token) admin imports — following every change to the book.

use std::path::PathBuf;
use std::process::ExitCode;

use super::args::{BookArg, Output};

#[derive(clap::Args)]
pub(crate) struct Args {
    #[command(flatten)]
    book: BookArg,
    /// Address and port to listen on (port 0: any free port, printed at start).
    #[arg(long, default_value = "127.0.0.1:8080")]
    listen: std::net::SocketAddr,
    /// Enable POST /v1/import for requests carrying this file's token
    /// (Authorization: Bearer TOKEN; at least 16 bytes).
    #[arg(long, value_name = "FILE", value_hint = clap::ValueHint::FilePath)]
    admin_token_file: Option<PathBuf>,
    /// Close connections beyond this many at once (lowered, and said at start, to what the
    /// open-file limit allows after the descriptors kept for the book's files).
    #[arg(long, default_value_t = 1024, value_parser = clap::value_parser!(u32).range(1..))]
    max_connections: u32,
    /// Largest POST /v1/import body, MiB.
    #[arg(long, default_value_t = 1024, value_name = "MIB")]
    max_upload: u64,
    /// How often to check the book for changes, milliseconds.
    #[arg(long, default_value_t = 100, value_name = "MS",
          value_parser = clap::value_parser!(u64).range(10..=60_000))]
    refresh_ms: u64,
    /// Worker threads (default: one per core).
    #[arg(long)]
    threads: Option<usize>,
    /// Memory for opened blocks of each book file, MiB (a limit: it fills as positions
    /// are asked for; about 18 MiB per million positions holds the whole book).
    #[arg(long, default_value_t = bookdb::server::DEFAULT_BLOCK_CACHE_MIB as u64, value_name = "MIB",
          value_parser = clap::value_parser!(u64).range(0..=1 << 20))]
    cache_mib: u64,
    /// Seconds a client may take to send a request's head (then 408) or stay idle between requests.
    #[arg(long, default_value_t = 10, value_name = "SECONDS",
          value_parser = clap::value_parser!(u64).range(1..=3600))]
    head_timeout: u64,
    /// --json: the listening line as JSON; --quiet: log warnings and errors only.
    #[command(flatten)]
    pub(crate) output: Output,
}

impl Args {
    pub(crate) fn run(self) -> anyhow::Result<ExitCode> {
        init_logging(self.output.quiet);
        bookdb::server::serve(bookdb::server::ServeOptions {
            book: self.book.book,
            listen: self.listen,
            admin_token_file: self.admin_token_file,
            max_connections: self.max_connections as usize,
            max_upload: self.max_upload.saturating_mul(1 << 20),
            refresh: std::time::Duration::from_millis(self.refresh_ms),
            threads: self.threads.unwrap_or(0),
            block_cache_bytes: usize::try_from(self.cache_mib << 20).unwrap_or(usize::MAX),
            head_timeout: std::time::Duration::from_secs(self.head_timeout),
            json: self.output.json,
            ..Default::default()
        })?;
        Ok(ExitCode::SUCCESS)
    }
}

/// The server's log on stderr: `BOOKDB_LOG` (a tracing filter such as `debug` or
/// `bookdb=debug,tower_http=debug`) or, by default, `info` (`warn` with --quiet).
fn init_logging(quiet: bool) {
    let default = if quiet { "warn" } else { "info" };
    let filter = tracing_subscriber::EnvFilter::try_from_env("BOOKDB_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default));
    let _ = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .with_ansi(std::io::IsTerminal::is_terminal(&std::io::stderr()))
        .try_init();
}

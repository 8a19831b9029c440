//! Progress display on stderr: an indicatif bar on a terminal, or plain lines every few
//! seconds (for pipes, cron mail and journald), or nothing ([`ProgressMode`]).

use std::io::IsTerminal;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// How progress is shown (`--progress`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub enum ProgressMode {
    /// A bar if stderr is a terminal, plain lines otherwise.
    Auto,
    /// A bar (drawn only on a terminal).
    Bar,
    /// A plain line every few seconds ([`PLAIN_INTERVAL_ENV`]).
    Plain,
    /// Nothing (the library's default).
    #[default]
    None,
}

impl std::str::FromStr for ProgressMode {
    type Err = String;
    fn from_str(s: &str) -> std::result::Result<Self, String> {
        match s {
            "auto" => Ok(ProgressMode::Auto),
            "bar" => Ok(ProgressMode::Bar),
            "plain" => Ok(ProgressMode::Plain),
            "none" => Ok(ProgressMode::None),
            _ => Err(format!(
                "unknown progress mode {s:?} (auto, bar, plain, none)"
            )),
        }
    }
}

/// Seconds between plain progress lines (a decimal number; default [`PLAIN_INTERVAL`]).
pub const PLAIN_INTERVAL_ENV: &str = "BOOKDB_PROGRESS_INTERVAL";
/// Time between plain progress lines unless [`PLAIN_INTERVAL_ENV`] says otherwise.
pub const PLAIN_INTERVAL: Duration = Duration::from_secs(5);

fn plain_interval() -> Duration {
    std::env::var(PLAIN_INTERVAL_ENV)
        .ok()
        .and_then(|v| v.trim().parse::<f64>().ok())
        .filter(|s| s.is_finite() && *s > 0.0)
        .and_then(|s| Duration::try_from_secs_f64(s).ok())
        .unwrap_or(PLAIN_INTERVAL)
}

/// The thread that prints plain progress lines, and how to stop it.
struct Ticker {
    stop: Arc<(Mutex<bool>, Condvar)>,
    thread: Option<std::thread::JoinHandle<()>>,
}

impl Ticker {
    fn start(bar: ProgressBar, bytes: Arc<AtomicBool>) -> Ticker {
        let stop = Arc::new((Mutex::new(false), Condvar::new()));
        let every = plain_interval();
        let thread = {
            let stop = stop.clone();
            std::thread::Builder::new()
                .name("progress".into())
                .spawn(move || {
                    let (lock, cv) = &*stop;
                    let Ok(mut stopped) = lock.lock() else {
                        return;
                    };
                    loop {
                        match cv.wait_timeout(stopped, every) {
                            Ok((guard, _)) => stopped = guard,
                            Err(_) => return,
                        }
                        if *stopped {
                            return;
                        }
                        crate::stderr_line!("{}", plain_line(&bar, bytes.load(Ordering::Relaxed)));
                    }
                })
                .ok()
        };
        Ticker { stop, thread }
    }

    fn stop(&mut self) {
        if let Some(t) = self.thread.take() {
            let (lock, cv) = &*self.stop;
            if let Ok(mut s) = lock.lock() {
                *s = true;
            }
            cv.notify_all();
            let _ = t.join();
        }
    }
}

fn mib(b: u64) -> String {
    format!("{:.1} MiB", b as f64 / (1u64 << 20) as f64)
}

/// One plain progress line: what, how far, the message, time so far.
fn plain_line(bar: &ProgressBar, bytes: bool) -> String {
    let pos = bar.position();
    let done = match (bar.length(), bytes) {
        (Some(len), true) => format!(
            "{} of {} ({:.0}%)",
            mib(pos),
            mib(len),
            100.0 * pos as f64 / len.max(1) as f64
        ),
        (None, true) => format!("{} read", mib(pos)),
        (Some(len), false) => format!(
            "{pos} of {len} positions ({:.0}%)",
            100.0 * pos as f64 / len.max(1) as f64
        ),
        (None, false) => format!("{pos} positions"),
    };
    let msg = bar.message();
    format!(
        "bookdb: {}: {done}{}{msg}; {:.0}s elapsed",
        bar.prefix(),
        if msg.is_empty() { "" } else { ", " },
        bar.elapsed().as_secs_f64()
    )
}

pub(crate) struct Progress {
    bar: ProgressBar,
    /// Plain mode: the thread printing lines; the bar is hidden and only holds the state.
    ticker: Mutex<Option<Ticker>>,
    /// Plain lines count bytes (an import's inputs) rather than positions (a rewrite).
    bytes: Arc<AtomicBool>,
}

impl Progress {
    #[doc(hidden)]
    pub fn new(mode: ProgressMode) -> Progress {
        let tty = std::io::stderr().is_terminal();
        let bar_wanted = match mode {
            ProgressMode::Auto | ProgressMode::Bar => tty,
            _ => false,
        };
        let plain = mode == ProgressMode::Plain || (mode == ProgressMode::Auto && !tty);
        let bytes = Arc::new(AtomicBool::new(true));
        let (bar, ticker) = if bar_wanted {
            let b = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr_with_hz(4));
            b.enable_steady_tick(Duration::from_millis(250));
            (b, None)
        } else if plain {
            let b = ProgressBar::hidden();
            let t = Ticker::start(b.clone(), bytes.clone());
            (b, Some(t))
        } else {
            (ProgressBar::hidden(), None)
        };
        Progress {
            bar,
            ticker: Mutex::new(ticker),
            bytes,
        }
    }

    pub(crate) fn start_input(&self, name: &str, size: Option<u64>) {
        self.bar.set_position(0);
        match size {
            Some(len) => {
                self.bar.set_length(len);
                self.bar.set_style(
                    ProgressStyle::with_template(
                        "{prefix} [{bar:30}] {bytes}/{total_bytes} {msg} ETA {eta}",
                    )
                    .unwrap_or_else(|_| ProgressStyle::default_bar())
                    .progress_chars("=> "),
                );
            }
            None => {
                self.bar.unset_length();
                self.bar.set_style(
                    ProgressStyle::with_template("{prefix} {spinner} {bytes} read {msg}")
                        .unwrap_or_else(|_| ProgressStyle::default_spinner()),
                );
            }
        }
        self.bar.set_prefix(name.to_string());
    }

    pub(crate) fn update(&self, games: u64, raw_bytes: u64) {
        self.bar.set_position(raw_bytes);
        let secs = self.bar.elapsed().as_secs_f64().max(1e-3);
        self.bar
            .set_message(format!("{games} games, {:.0} games/s", games as f64 / secs));
    }

    pub(crate) fn finish_reading(&self, games: u64) {
        self.bar
            .set_message(format!("{games} games read; writing book"));
    }

    /// A bar over the entries of a whole-book rewrite (merge, compact); `total` is the number
    /// of input entries, an upper bound of the entries written.
    pub(crate) fn rewrite(mode: ProgressMode, label: &str, total: u64) -> Progress {
        let p = Progress::new(mode);
        p.bytes.store(false, Ordering::Relaxed);
        p.bar.set_length(total.max(1));
        p.bar.set_style(
            ProgressStyle::with_template(
                "{prefix} [{bar:30}] {human_pos}/{human_len} positions, ETA {eta} {msg}",
            )
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("=> "),
        );
        p.bar.set_prefix(label.to_string());
        p
    }

    /// A bar over the positions of an `analyse` run, with positions per second.
    pub(crate) fn analyse(mode: ProgressMode, total: u64) -> Progress {
        let p = Progress::new(mode);
        p.bytes.store(false, Ordering::Relaxed);
        p.bar.set_length(total.max(1));
        p.bar.set_style(
            ProgressStyle::with_template(
                "analyse [{bar:30}] {human_pos}/{human_len} positions, {per_sec}, ETA {eta} {msg}",
            )
            .unwrap_or_else(|_| ProgressStyle::default_bar())
            .progress_chars("=> "),
        );
        p
    }

    /// Counts `n` more entries written by a rewrite.
    pub(crate) fn add(&self, n: u64) {
        self.bar.inc(n);
    }

    pub(crate) fn phase(&self, msg: &str) {
        self.bar.set_message(msg.to_string());
    }

    pub(crate) fn clear(&self) {
        if let Ok(mut t) = self.ticker.lock()
            && let Some(t) = t.as_mut()
        {
            t.stop();
        }
        self.bar.finish_and_clear();
    }
}

impl Drop for Progress {
    /// An error that ends a job early must not leave its bar above the error message.
    fn drop(&mut self) {
        self.clear();
    }
}

/// Phase timing for development (`BOOKDB_TRACE=1`): prints wall and process CPU seconds spent
/// since the previous mark to stderr.
pub(crate) struct Trace {
    on: bool,
    wall: std::time::Instant,
    cpu: f64,
}

fn process_cpu_secs() -> f64 {
    // Fields 14 and 15 of /proc/self/stat: utime and stime in clock ticks (100 Hz on Linux).
    std::fs::read_to_string("/proc/self/stat")
        .ok()
        .and_then(|s| {
            let rest = s.rsplit_once(')')?.1;
            let f: Vec<&str> = rest.split_whitespace().collect();
            let u: f64 = f.get(11)?.parse().ok()?;
            let k: f64 = f.get(12)?.parse().ok()?;
            Some((u + k) / 100.0)
        })
        .unwrap_or(0.0)
}

/// The process's resident and peak resident memory in MiB (`VmRSS`, `VmHWM`; 0 where
/// /proc does not tell).
fn memory_mib() -> (u64, u64) {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find(|l| l.starts_with(name))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|v| v.parse::<u64>().ok())
            .unwrap_or(0)
            / 1024
    };
    (field("VmRSS:"), field("VmHWM:"))
}

impl Default for Trace {
    fn default() -> Self {
        Self::new()
    }
}

impl Trace {
    #[doc(hidden)]
    pub fn new() -> Trace {
        Trace {
            on: std::env::var_os("BOOKDB_TRACE").is_some(),
            wall: std::time::Instant::now(),
            cpu: process_cpu_secs(),
        }
    }

    /// Prints the writer's own trace lines (model training, sealing attempts, the steps of its
    /// final transaction) when tracing, each with the process's resident and peak memory.
    pub(crate) fn attach(&self, w: &mut crate::store::BookWriter) {
        if self.on {
            let mut last = std::time::Instant::now();
            w.on_trace(move |line| {
                let (rss, peak) = memory_mib();
                let wall = last.elapsed().as_secs_f64();
                last = std::time::Instant::now();
                crate::stderr_line!(
                    "trace: {line} (wall {wall:.2}s since the last, rss {rss} MiB peak {peak} MiB)"
                )
            });
        }
    }

    pub(crate) fn mark(&mut self, label: &str) {
        if !self.on {
            return;
        }
        let cpu = process_cpu_secs();
        let (rss, peak) = memory_mib();
        crate::stderr_line!(
            "trace: {label}: wall {:.2}s cpu {:.2}s rss {rss} MiB peak {peak} MiB",
            self.wall.elapsed().as_secs_f64(),
            cpu - self.cpu,
        );
        self.wall = std::time::Instant::now();
        self.cpu = cpu;
    }
}

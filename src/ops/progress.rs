//! Progress display: an indicatif bar on a TTY, nothing when piped or with `--quiet`.

use std::io::IsTerminal;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

pub(crate) struct Progress {
    bar: ProgressBar,
}

impl Progress {
    /// `wanted` is the caller's choice (not `--quiet`, not `--json`); the bar also needs a TTY.
    #[doc(hidden)]
    pub fn new(wanted: bool) -> Progress {
        let bar = if wanted && std::io::stderr().is_terminal() {
            let b = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr_with_hz(4));
            b.enable_steady_tick(Duration::from_millis(250));
            b
        } else {
            ProgressBar::hidden()
        };
        Progress { bar }
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
    pub(crate) fn rewrite(wanted: bool, label: &str, total: u64) -> Progress {
        let p = Progress::new(wanted);
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

    /// Counts `n` more entries written by a rewrite.
    pub(crate) fn add(&self, n: u64) {
        self.bar.inc(n);
    }

    pub(crate) fn phase(&self, msg: &str) {
        self.bar.set_message(msg.to_string());
    }

    pub(crate) fn clear(&self) {
        self.bar.finish_and_clear();
    }
}

impl Drop for Progress {
    /// An error that ends a job early must not leave its bar above the error message.
    fn drop(&mut self) {
        self.bar.finish_and_clear();
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

    /// Prints the writer's own trace lines (model training, sealing attempts) when tracing.
    pub(crate) fn attach(&self, w: &mut crate::store::BookWriter) {
        if self.on {
            w.on_trace(|line| eprintln!("trace: {line}"));
        }
    }

    pub(crate) fn mark(&mut self, label: &str) {
        if !self.on {
            return;
        }
        let cpu = process_cpu_secs();
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
        eprintln!(
            "trace: {label}: wall {:.2}s cpu {:.2}s rss {} MiB peak {} MiB",
            self.wall.elapsed().as_secs_f64(),
            cpu - self.cpu,
            field("VmRSS:"),
            field("VmHWM:")
        );
        self.wall = std::time::Instant::now();
        self.cpu = cpu;
    }
}

//! The server's counters and their Prometheus text exposition (`GET /metrics`).
//!
//! Lock-free: fixed tables of atomics indexed by route and status, so counting costs a few
//! relaxed atomic adds per request.

use std::fmt::Write;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::time::Duration;

/// Routes, as `route` labels; anything else is `other`.
pub const ROUTES: [&str; 14] = [
    "/masters",
    "/lichess",
    "/masters/pgn",
    "/lichess/pgn",
    "/v1/position",
    "/v1/book",
    "/v1/openings",
    "/api/cloud-eval",
    "/v1/import",
    "/health",
    "/metrics",
    "/",
    "/assets",
    "other",
];

/// Statuses counted under their own label; the rest count as `other`.
const STATUSES: [u16; 14] = [
    200, 204, 400, 401, 403, 404, 405, 408, 413, 414, 431, 500, 503, 0,
];

/// Latency histogram bucket bounds, seconds.
const BUCKETS: [f64; 14] = [
    0.000_05, 0.000_1, 0.000_25, 0.000_5, 0.001, 0.002_5, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 1.0,
    5.0,
];

#[derive(Default)]
struct RouteMetrics {
    by_status: [AtomicU64; STATUSES.len()],
    buckets: [AtomicU64; BUCKETS.len()],
    count: AtomicU64,
    sum_micros: AtomicU64,
}

/// Everything `/metrics` reports that the book itself does not.
#[derive(Default)]
pub struct Metrics {
    routes: [RouteMetrics; ROUTES.len()],
    pub refreshes: AtomicU64,
    pub refresh_errors: AtomicU64,
    /// Unix time (seconds) when the server last saw the book change, 0 for never.
    pub last_change_unix: AtomicU64,
    pub connections_open: AtomicU64,
    pub connections_total: AtomicU64,
    /// Connections closed at once because the server held `--max-connections` already.
    pub connections_refused: AtomicU64,
    pub imports: AtomicU64,
}

/// The index of a route label.
pub fn route_index(route: &str) -> usize {
    // The explorer page's files all count under one label.
    let route = if route.starts_with("/assets/") {
        "/assets"
    } else if route.starts_with("/masters/pgn/") || route.starts_with("/master/pgn/") {
        "/masters/pgn"
    } else if route.starts_with("/lichess/pgn/") {
        "/lichess/pgn"
    } else {
        route
    };
    ROUTES
        .iter()
        .position(|r| *r == route)
        .unwrap_or(ROUTES.len() - 1)
}

impl Metrics {
    /// Counts one answered request.
    pub fn observe(&self, route: usize, status: u16, elapsed: Duration) {
        let Some(r) = self.routes.get(route) else {
            return;
        };
        let s = STATUSES
            .iter()
            .position(|&x| x == status)
            .unwrap_or(STATUSES.len() - 1);
        r.by_status[s].fetch_add(1, Relaxed);
        let secs = elapsed.as_secs_f64();
        if let Some(b) = BUCKETS.iter().position(|&b| secs <= b) {
            r.buckets[b].fetch_add(1, Relaxed);
        }
        r.count.fetch_add(1, Relaxed);
        r.sum_micros
            .fetch_add(elapsed.as_micros().min(u64::MAX as u128) as u64, Relaxed);
    }

    /// The Prometheus text exposition, with the book's own gauges in `book`.
    pub fn render(&self, book: &BookGauges) -> String {
        let mut s = String::with_capacity(8 * 1024);
        let _ = writeln!(
            s,
            "# HELP bookdb_http_requests_total HTTP requests answered, by route and status.\n# TYPE bookdb_http_requests_total counter"
        );
        for (route, r) in ROUTES.iter().zip(&self.routes) {
            for (status, n) in STATUSES.iter().zip(&r.by_status) {
                let n = n.load(Relaxed);
                if n == 0 {
                    continue;
                }
                let status = if *status == 0 {
                    "other".to_string()
                } else {
                    status.to_string()
                };
                let _ = writeln!(
                    s,
                    "bookdb_http_requests_total{{route=\"{route}\",status=\"{status}\"}} {n}"
                );
            }
        }
        let _ = writeln!(
            s,
            "# HELP bookdb_http_request_duration_seconds Time from request to response head, by route.\n# TYPE bookdb_http_request_duration_seconds histogram"
        );
        for (route, r) in ROUTES.iter().zip(&self.routes) {
            let count = r.count.load(Relaxed);
            if count == 0 {
                continue;
            }
            let mut cumulative = 0;
            for (b, n) in BUCKETS.iter().zip(&r.buckets) {
                cumulative += n.load(Relaxed);
                let _ = writeln!(
                    s,
                    "bookdb_http_request_duration_seconds_bucket{{route=\"{route}\",le=\"{b}\"}} {cumulative}"
                );
            }
            let _ = writeln!(
                s,
                "bookdb_http_request_duration_seconds_bucket{{route=\"{route}\",le=\"+Inf\"}} {count}"
            );
            let _ = writeln!(
                s,
                "bookdb_http_request_duration_seconds_sum{{route=\"{route}\"}} {}",
                r.sum_micros.load(Relaxed) as f64 / 1e6
            );
            let _ = writeln!(
                s,
                "bookdb_http_request_duration_seconds_count{{route=\"{route}\"}} {count}"
            );
        }
        let gauges: [(&str, &str, &str, u64); 11] = [
            (
                "bookdb_book_positions",
                "gauge",
                "Positions in the book served.",
                book.positions,
            ),
            (
                "bookdb_book_pairs",
                "gauge",
                "(position, move) pairs in the book served.",
                book.pairs,
            ),
            (
                "bookdb_book_games",
                "gauge",
                "Games counted into the book served.",
                book.games,
            ),
            (
                "bookdb_book_generation",
                "gauge",
                "Generation of the book state served.",
                book.generation,
            ),
            (
                "bookdb_book_segments",
                "gauge",
                "Delta segments of the book served.",
                book.segments,
            ),
            (
                "bookdb_book_refreshes_total",
                "counter",
                "Book changes picked up without a restart.",
                self.refreshes.load(Relaxed),
            ),
            (
                "bookdb_book_refresh_errors_total",
                "counter",
                "Failed checks for book changes (the previous state is served meanwhile).",
                self.refresh_errors.load(Relaxed),
            ),
            (
                "bookdb_book_last_change_seen_timestamp_seconds",
                "gauge",
                "Unix time the server last picked up a book change (start counts).",
                self.last_change_unix.load(Relaxed),
            ),
            (
                "bookdb_http_connections_open",
                "gauge",
                "Open client connections.",
                self.connections_open.load(Relaxed),
            ),
            (
                "bookdb_http_connections_refused_total",
                "counter",
                "Connections closed at once: --max-connections reached.",
                self.connections_refused.load(Relaxed),
            ),
            (
                "bookdb_imports_total",
                "counter",
                "Imports run through POST /v1/import.",
                self.imports.load(Relaxed),
            ),
        ];
        for (name, kind, help, v) in gauges {
            let _ = writeln!(s, "# HELP {name} {help}\n# TYPE {name} {kind}\n{name} {v}");
        }
        s
    }
}

/// The book's side of `/metrics`, read from the snapshot being served.
#[derive(Clone, Copy, Debug, Default)]
pub struct BookGauges {
    pub positions: u64,
    pub pairs: u64,
    pub games: u64,
    pub generation: u64,
    pub segments: u64,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exposition_counts_requests_and_buckets() {
        let m = Metrics::default();
        let r = route_index("/masters");
        m.observe(r, 200, Duration::from_micros(80));
        m.observe(r, 200, Duration::from_millis(3));
        m.observe(r, 400, Duration::from_micros(10));
        m.observe(route_index("/nope"), 404, Duration::from_micros(10));
        let text = m.render(&BookGauges {
            positions: 7,
            generation: 3,
            ..Default::default()
        });
        assert!(text.contains("bookdb_http_requests_total{route=\"/masters\",status=\"200\"} 2"));
        assert!(text.contains("bookdb_http_requests_total{route=\"other\",status=\"404\"} 1"));
        assert!(text.contains(
            "bookdb_http_request_duration_seconds_bucket{route=\"/masters\",le=\"0.0001\"} 2"
        ));
        assert!(text.contains(
            "bookdb_http_request_duration_seconds_bucket{route=\"/masters\",le=\"+Inf\"} 3"
        ));
        assert!(text.contains("bookdb_book_positions 7\n"));
        assert!(text.contains("bookdb_book_generation 3\n"));
        // Every sample line is `name{labels} value` or `name value`.
        for line in text.lines().filter(|l| !l.starts_with('#')) {
            let (_, v) = line.rsplit_once(' ').unwrap();
            assert!(v.parse::<f64>().is_ok(), "{line}");
        }
    }
}

//! Counters shared by the workers, the once-a-second progress line, and error tallies.

use std::collections::BTreeMap;
use std::io::{IsTerminal, Write};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use stratus_compat::ResponseCode;
use stratus_compat::client::ClientError;

use crate::time;

/// Running totals, updated by every worker with relaxed atomics.
#[derive(Debug, Default)]
pub(crate) struct Live {
    /// Messages written to a connection.
    pub(crate) sent: AtomicU64,
    /// Messages acknowledged with SUCCESS.
    pub(crate) acked: AtomicU64,
    /// Failed requests.
    pub(crate) errors: AtomicU64,
    /// Messages received by pullers.
    pub(crate) consumed: AtomicU64,
    /// Body bytes received by pullers.
    pub(crate) consumed_bytes: AtomicU64,
    /// Sum and number of send latencies (ns), for the progress line's mean.
    lat_sum_ns: AtomicU64,
    lat_n: AtomicU64,
    stop: AtomicBool,
}

impl Live {
    /// Adds one send latency to the progress line's mean.
    pub(crate) fn send_latency(&self, d: Duration) {
        let ns = u64::try_from(d.as_nanos()).unwrap_or(u64::MAX);
        self.lat_sum_ns.fetch_add(ns, Ordering::Relaxed);
        self.lat_n.fetch_add(1, Ordering::Relaxed);
    }

    /// Adds `n` to a counter.
    pub(crate) fn add(counter: &AtomicU64, n: u64) {
        counter.fetch_add(n, Ordering::Relaxed);
    }

    /// Reads a counter.
    pub(crate) fn get(counter: &AtomicU64) -> u64 {
        counter.load(Ordering::Relaxed)
    }
}

/// Failures by cause: a response code (`SYSTEM_BUSY (2)`) or a client-side cause
/// (`timeout`, `closed`, `io`, `encode`, `bad reply`).
pub(crate) type ErrorCounts = BTreeMap<String, u64>;

/// The tally key of a non-success response code.
pub(crate) fn code_key(code: i32) -> String {
    format!("{} ({code})", ResponseCode::from_i32(code).name())
}

/// The tally key of a client error.
pub(crate) fn client_error_key(e: &ClientError) -> String {
    match e {
        ClientError::Timeout => "timeout",
        ClientError::Closed => "closed",
        ClientError::Io(_) => "io",
        ClientError::Frame(_) => "encode",
    }
    .to_owned()
}

/// Adds `other` into `into`.
pub(crate) fn merge_errors(into: &mut ErrorCounts, other: ErrorCounts) {
    for (k, v) in other {
        *into.entry(k).or_default() += v;
    }
}

/// Prints a progress line on stderr once a second until dropped.
#[derive(Debug)]
pub(crate) struct Progress {
    live: Arc<Live>,
    task: Option<tokio::task::JoinHandle<()>>,
    tty: bool,
}

impl Progress {
    /// Starts the reporter (prints nothing when `quiet`).
    pub(crate) fn start(live: Arc<Live>, label: &'static str, quiet: bool) -> Self {
        let tty = std::io::stderr().is_terminal();
        let task = (!quiet).then(|| tokio::spawn(report_loop(live.clone(), label, tty)));
        Self { live, task, tty }
    }

    /// Stops the reporter.
    pub(crate) fn finish(mut self) {
        self.stop();
    }

    fn stop(&mut self) {
        self.live.stop.store(true, Ordering::Relaxed);
        if let Some(t) = self.task.take() {
            t.abort();
            if self.tty {
                let _ = writeln!(std::io::stderr());
            }
        }
    }
}

impl Drop for Progress {
    fn drop(&mut self) {
        self.stop();
    }
}

async fn report_loop(live: Arc<Live>, label: &'static str, tty: bool) {
    let start = Instant::now();
    let mut last = [0u64; 4];
    let mut last_lat = (0u64, 0u64);
    let mut tick = 1u64;
    loop {
        time::sleep_until(start + Duration::from_secs(tick)).await;
        tick += 1;
        if live.stop.load(Ordering::Relaxed) {
            return;
        }
        let now = [
            Live::get(&live.sent),
            Live::get(&live.acked),
            Live::get(&live.consumed),
            Live::get(&live.errors),
        ];
        let lat = (Live::get(&live.lat_sum_ns), Live::get(&live.lat_n));
        let d = |i: usize| now[i].saturating_sub(last[i]);
        let mean_ms = if lat.1 > last_lat.1 {
            (lat.0 - last_lat.0) as f64 / (lat.1 - last_lat.1) as f64 / 1e6
        } else {
            0.0
        };
        let line = format!(
            "{label} {:>4}s | sent {} ({}/s) | acked {} ({}/s) | send mean {mean_ms:.2} ms | consumed {} ({}/s) | errors {}",
            start.elapsed().as_secs(),
            now[0],
            d(0),
            now[1],
            d(1),
            now[2],
            d(2),
            now[3],
        );
        let mut err = std::io::stderr().lock();
        let _ = if tty {
            write!(err, "\r\x1b[2K{line}")
        } else {
            writeln!(err, "{line}")
        };
        let _ = err.flush();
        last = now;
        last_lat = lat;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_keys_name_the_code_or_the_client_cause() {
        assert_eq!(code_key(2), "SYSTEM_BUSY (2)");
        assert_eq!(code_key(9999), "UNKNOWN (9999)");
        assert_eq!(client_error_key(&ClientError::Timeout), "timeout");
        assert_eq!(client_error_key(&ClientError::Closed), "closed");
        let io = ClientError::Io(std::io::Error::other("reset"));
        assert_eq!(client_error_key(&io), "io");
    }

    #[test]
    fn merged_tallies_add_up_per_key() {
        let mut into = ErrorCounts::from([("timeout".to_owned(), 2), ("io".to_owned(), 1)]);
        merge_errors(
            &mut into,
            ErrorCounts::from([("timeout".to_owned(), 3), ("closed".to_owned(), 4)]),
        );
        assert_eq!(
            into,
            ErrorCounts::from([
                ("closed".to_owned(), 4),
                ("io".to_owned(), 1),
                ("timeout".to_owned(), 5),
            ])
        );
    }

    #[test]
    fn live_counters_and_latency_sums() {
        let live = Live::default();
        Live::add(&live.sent, 3);
        Live::add(&live.sent, 4);
        assert_eq!(Live::get(&live.sent), 7);
        assert_eq!(Live::get(&live.acked), 0);
        live.send_latency(Duration::from_micros(5));
        live.send_latency(Duration::from_micros(7));
        assert_eq!(Live::get(&live.lat_sum_ns), 12_000);
        assert_eq!(Live::get(&live.lat_n), 2);
    }
}

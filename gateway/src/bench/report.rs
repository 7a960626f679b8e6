//! The result of a run: one JSON object (`--json`) or a few lines of text.

use std::fmt::Write as _;

use serde::Serialize;

use super::args::SendArgs;
use super::consume::PullOutcome;
use super::histogram::Percentiles;
use super::produce::ProduceOutcome;
use super::route::Route;
use super::stats::ErrorCounts;

/// Bytes in a megabyte (MB/s figures are decimal megabytes of message bodies).
const MB: f64 = 1e6;

/// Producer figures.
#[derive(Debug, Serialize)]
pub(crate) struct ProduceReport {
    mode: &'static str,
    connections: usize,
    inflight: usize,
    size: usize,
    batch: usize,
    target_rate: u64,
    /// Messages written.
    pub(crate) sent: u64,
    /// Messages acknowledged with SUCCESS.
    pub(crate) acked: u64,
    requests: u64,
    errors: ErrorCounts,
    error_total: u64,
    seconds: f64,
    msgs_per_sec: f64,
    mb_per_sec: f64,
    send_latency_ms: Option<Percentiles>,
}

impl ProduceReport {
    /// From the producers' outcome.
    pub(crate) fn new(args: &SendArgs, o: ProduceOutcome) -> Self {
        let rate = o.acked as f64 / o.seconds;
        Self {
            mode: args.mode.name(),
            connections: args.connections.max(1),
            inflight: match args.mode {
                super::args::SendMode::Async => args.inflight.max(1),
                _ => 1,
            },
            size: args.size,
            batch: args.batch.max(1),
            target_rate: args.rate,
            sent: o.sent,
            acked: o.acked,
            requests: o.requests,
            error_total: o.error_total(),
            errors: o.errors,
            seconds: o.seconds,
            msgs_per_sec: rate,
            mb_per_sec: rate * args.size as f64 / MB,
            send_latency_ms: o.latency.summary_ms(),
        }
    }

    /// Failed requests.
    pub(crate) fn error_total(&self) -> u64 {
        self.error_total
    }
}

/// Puller figures.
#[derive(Debug, Serialize)]
pub(crate) struct ConsumeReport {
    connections: usize,
    /// Messages received.
    pub(crate) consumed: u64,
    bytes: u64,
    /// Messages the queues held between start and end offsets when draining.
    expected: Option<u64>,
    pulls: u64,
    errors: ErrorCounts,
    error_total: u64,
    seconds: f64,
    msgs_per_sec: f64,
    mb_per_sec: f64,
}

impl ConsumeReport {
    /// From the pullers' outcome (its end-to-end histogram is reported separately).
    pub(crate) fn new(connections: usize, expected: Option<u64>, o: &PullOutcome) -> Self {
        Self {
            connections,
            consumed: o.consumed,
            bytes: o.bytes,
            expected,
            pulls: o.pulls,
            errors: o.errors.clone(),
            error_total: o.error_total(),
            seconds: o.seconds,
            msgs_per_sec: o.consumed as f64 / o.seconds,
            mb_per_sec: o.bytes as f64 / MB / o.seconds,
        }
    }

    /// Failed pulls.
    pub(crate) fn error_total(&self) -> u64 {
        self.error_total
    }
}

/// Everything one run reports.
#[derive(Debug, Serialize)]
pub(crate) struct Report {
    command: &'static str,
    namesrv: String,
    topic: String,
    brokers: Vec<String>,
    write_queues: i32,
    produce: Option<ProduceReport>,
    consume: Option<ConsumeReport>,
    e2e_latency_ms: Option<Percentiles>,
}

impl Report {
    /// An empty report for a route.
    pub(crate) fn new(command: &'static str, namesrv: &str, topic: &str, route: &Route) -> Self {
        Self {
            command,
            namesrv: namesrv.to_owned(),
            topic: topic.to_owned(),
            brokers: route
                .brokers
                .iter()
                .map(|b| format!("{}@{}", b.name, b.addr))
                .collect(),
            write_queues: route.write_queue_count(),
            produce: None,
            consume: None,
            e2e_latency_ms: None,
        }
    }

    /// Adds the producers' figures.
    pub(crate) fn with_produce(mut self, p: ProduceReport) -> Self {
        self.produce = Some(p);
        self
    }

    /// Adds the pullers' figures.
    pub(crate) fn with_consume(mut self, c: ConsumeReport) -> Self {
        self.consume = Some(c);
        self
    }

    /// Adds end-to-end latency.
    pub(crate) fn with_e2e(mut self, e: Option<Percentiles>) -> Self {
        self.e2e_latency_ms = e;
        self
    }

    /// Failed requests of both sides.
    pub(crate) fn error_total(&self) -> u64 {
        self.produce.as_ref().map_or(0, ProduceReport::error_total)
            + self.consume.as_ref().map_or(0, ConsumeReport::error_total)
    }

    /// As one JSON line.
    pub(crate) fn to_json(&self) -> String {
        serde_json::to_string(self).unwrap_or_else(|e| format!("{{\"error\":\"{e}\"}}"))
    }

    /// As text.
    pub(crate) fn to_text(&self) -> String {
        let mut s = String::new();
        let _ = writeln!(
            s,
            "{} on topic {} via {} (brokers {}, {} write queues)",
            self.command,
            self.topic,
            self.namesrv,
            self.brokers.join(", "),
            self.write_queues
        );
        if let Some(p) = &self.produce {
            let _ = writeln!(
                s,
                "produce: {} sent, {} acked, {} failed requests in {:.2} s: {:.0} msgs/s, {:.2} MB/s ({} x {} B, {} connections, {} in flight, {})",
                p.sent,
                p.acked,
                p.error_total,
                p.seconds,
                p.msgs_per_sec,
                p.mb_per_sec,
                p.batch,
                p.size,
                p.connections,
                p.inflight,
                p.mode
            );
            if let Some(l) = &p.send_latency_ms {
                let _ = writeln!(s, "send latency: {}", percentiles_text(l));
            }
            for (k, v) in &p.errors {
                let _ = writeln!(s, "  send error {k}: {v}");
            }
        }
        if let Some(c) = &self.consume {
            let _ = writeln!(
                s,
                "consume: {} msgs{}, {} bytes in {:.2} s: {:.0} msgs/s, {:.2} MB/s ({} pulls, {} failed)",
                c.consumed,
                c.expected.map(|e| format!(" of {e}")).unwrap_or_default(),
                c.bytes,
                c.seconds,
                c.msgs_per_sec,
                c.mb_per_sec,
                c.pulls,
                c.error_total
            );
            for (k, v) in &c.errors {
                let _ = writeln!(s, "  pull error {k}: {v}");
            }
        }
        if let Some(e) = &self.e2e_latency_ms {
            let _ = writeln!(s, "end-to-end latency: {}", percentiles_text(e));
        }
        s
    }
}

fn percentiles_text(p: &Percentiles) -> String {
    format!(
        "p50 {:.3} ms, p90 {:.3} ms, p99 {:.3} ms, p999 {:.3} ms, max {:.3} ms, mean {:.3} ms ({} samples)",
        p.p50, p.p90, p.p99, p.p999, p.max, p.mean, p.count
    )
}

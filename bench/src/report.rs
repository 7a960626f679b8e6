//! The result of a run: one JSON object (`--json`) or a few lines of text.

use std::fmt::Write as _;

use serde::Serialize;

use crate::args::SendArgs;
use crate::consume::PullOutcome;
use crate::histogram::Percentiles;
use crate::produce::ProduceOutcome;
use crate::route::Route;
use crate::stats::ErrorCounts;

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
                crate::args::SendMode::Async => args.inflight.max(1),
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

    /// One line: counts, rate and send latency.
    pub(crate) fn to_text_line(&self) -> String {
        format!(
            "{} acked, {} failed requests in {:.2} s: {:.0} msgs/s ({} x {} B, {} connections, {}){}",
            self.acked,
            self.error_total,
            self.seconds,
            self.msgs_per_sec,
            self.batch,
            self.size,
            self.connections,
            self.mode,
            self.send_latency_ms
                .as_ref()
                .map(|l| format!("; send p99 {:.2} ms", l.p99))
                .unwrap_or_default()
        )
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

#[cfg(test)]
mod tests {
    use super::*;
    use crate::args::SendMode;
    use crate::histogram::Histogram;
    use crate::route::Broker;

    fn route() -> Route {
        let broker = |name: &str, addr: &str| Broker {
            name: name.to_owned(),
            addr: addr.to_owned(),
            read_queues: 4,
            write_queues: 4,
        };
        Route {
            brokers: vec![broker("a", "h:1"), broker("b", "h:2")],
        }
    }

    fn send_args(mode: SendMode) -> SendArgs {
        SendArgs {
            connections: 2,
            size: 1000,
            batch: 1,
            mode,
            inflight: 16,
            tags: "bench".to_owned(),
            rate: 0,
            duration: None,
            count: Some(4000),
            group: "bench_producer".to_owned(),
            key_share: 0,
        }
    }

    #[test]
    fn produce_and_consume_figures_and_error_totals() {
        let mut latency = Histogram::default();
        latency.record_ns(1_000_000);
        let produced = ProduceOutcome {
            sent: 4000,
            acked: 3998,
            requests: 4000,
            errors: ErrorCounts::from([("timeout".to_owned(), 2)]),
            latency,
            seconds: 2.0,
        };
        let pulled = PullOutcome {
            consumed: 3998,
            bytes: 3_998_000,
            pulls: 130,
            errors: ErrorCounts::from([("closed".to_owned(), 1)]),
            e2e: Histogram::default(),
            seconds: 1.0,
        };
        let p = ProduceReport::new(&send_args(SendMode::Async), produced);
        assert_eq!(p.inflight, 16);
        assert_eq!(p.error_total(), 2);
        assert!((p.msgs_per_sec - 1999.0).abs() < 1e-9);
        assert!((p.mb_per_sec - 1.999).abs() < 1e-9);
        let report = Report::new("e2e", "h:9876", "T", &route())
            .with_produce(p)
            .with_consume(ConsumeReport::new(8, None, &pulled))
            .with_e2e(pulled.e2e.summary_ms());
        assert_eq!(report.error_total(), 3);

        let json: serde_json::Value = serde_json::from_str(&report.to_json()).unwrap();
        assert_eq!(json["command"], "e2e");
        assert_eq!(json["brokers"], serde_json::json!(["a@h:1", "b@h:2"]));
        assert_eq!(json["write_queues"], 8);
        assert_eq!(json["produce"]["mode"], "async");
        assert_eq!(json["produce"]["errors"]["timeout"], 2);
        assert_eq!(json["produce"]["send_latency_ms"]["max"], 1.0);
        assert_eq!(json["consume"]["consumed"], 3998);
        assert!(json["consume"]["expected"].is_null());
        assert!(json["e2e_latency_ms"].is_null());

        let text = report.to_text();
        assert!(
            text.starts_with("e2e on topic T via h:9876 (brokers a@h:1, b@h:2, 8 write queues)\n")
        );
        assert!(
            text.contains("produce: 4000 sent, 3998 acked, 2 failed requests"),
            "{text}"
        );
        assert!(text.contains("  send error timeout: 2\n"), "{text}");
        assert!(text.contains("consume: 3998 msgs, 3998000 bytes"), "{text}");
        assert!(text.contains("  pull error closed: 1\n"), "{text}");
        assert!(!text.contains("end-to-end latency"), "{text}");
    }

    #[test]
    fn only_async_mode_reports_inflight() {
        let p = ProduceReport::new(&send_args(SendMode::Sync), ProduceOutcome::default());
        assert_eq!(p.inflight, 1);
        assert_eq!(p.mode, "sync");
    }
}

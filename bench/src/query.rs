//! `query-by-key`: fill a topic with keyed messages, then look keys up with QUERY_MESSAGE
//! the way the Java admin does (the same request to every broker of the topic's route, the
//! answers merged), and report the lookup latency, what was found, and (with `--metrics`)
//! the node's object-store requests per lookup.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::{Context, bail};
use serde::Serialize;
use stratus_compat::client::RemotingClient;
use stratus_compat::command::RemotingCommand;
use stratus_compat::message::record::MessageExt;
use stratus_compat::request::query::QueryMessageRequestHeader;
use stratus_compat::{RequestCode, ResponseCode};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;
use tokio::task::JoinSet;

use crate::args::QueryArgs;
use crate::histogram::{Histogram, Percentiles};
use crate::produce::{self, shared_key, uniq_key};
use crate::report::ProduceReport;
use crate::route::{self, Route};
use crate::stats::{Live, Progress};
use crate::time::Epoch;

/// What `query-by-key` prints.
#[derive(Debug, Serialize)]
pub(crate) struct QueryReport {
    command: &'static str,
    namesrv: String,
    topic: String,
    /// Run id of the filled messages (hex), for a later `--run-id`.
    run_id: String,
    /// Messages the fill covers.
    messages: u64,
    /// Messages per key (`--key-share`).
    key_share: u64,
    /// Lookups by unique key rather than by KEYS.
    unique: bool,
    #[serde(skip_serializing_if = "Option::is_none")]
    fill: Option<ProduceReport>,
    lookups: u64,
    /// Lookups that found exactly the expected messages.
    exact: u64,
    /// Lookups that found fewer or other messages than expected, or failed.
    wrong: u64,
    /// Failed requests by cause.
    errors: BTreeMap<String, u64>,
    lookups_per_sec: f64,
    /// Latency of one lookup (all brokers answered), ms.
    latency_ms: Option<Percentiles>,
    /// Object-store requests during the lookups, by operation (with `--metrics`).
    #[serde(skip_serializing_if = "Option::is_none")]
    object_store_requests: Option<BTreeMap<String, u64>>,
    /// Object-store requests per lookup (with `--metrics`).
    #[serde(skip_serializing_if = "Option::is_none")]
    object_store_requests_per_lookup: Option<f64>,
}

impl QueryReport {
    /// Lookups that went wrong.
    pub(crate) fn error_total(&self) -> u64 {
        self.wrong + self.fill.as_ref().map_or(0, ProduceReport::error_total)
    }

    pub(crate) fn to_json(&self) -> String {
        serde_json::to_string(self).unwrap_or_else(|e| format!("{{\"error\":\"{e}\"}}"))
    }

    pub(crate) fn to_text(&self) -> String {
        use std::fmt::Write;
        let mut s = String::new();
        let _ = writeln!(
            s,
            "query-by-key {} on {}: run {}, {} messages, {} per key, by {}",
            self.topic,
            self.namesrv,
            self.run_id,
            self.messages,
            self.key_share.max(1),
            if self.unique { "unique key" } else { "key" }
        );
        if let Some(f) = &self.fill {
            let _ = writeln!(s, "fill: {}", f.to_text_line());
        }
        let _ = writeln!(
            s,
            "lookups: {} ({} exact, {} wrong), {:.0} lookups/s",
            self.lookups, self.exact, self.wrong, self.lookups_per_sec
        );
        if let Some(l) = &self.latency_ms {
            let _ = writeln!(
                s,
                "latency ms: p50 {:.2}  p90 {:.2}  p99 {:.2}  p99.9 {:.2}  max {:.2}",
                l.p50, l.p90, l.p99, l.p999, l.max
            );
        }
        if let (Some(by_op), Some(per)) = (
            &self.object_store_requests,
            self.object_store_requests_per_lookup,
        ) {
            let ops: Vec<String> = by_op.iter().map(|(k, v)| format!("{k} {v}")).collect();
            let _ = writeln!(
                s,
                "object-store requests: {per:.2} per lookup ({})",
                ops.join(", ")
            );
        }
        for (k, v) in &self.errors {
            let _ = writeln!(s, "error {k}: {v}");
        }
        s
    }
}

/// Runs the fill (unless `--run-id`) and the lookups.
pub(crate) async fn run(a: QueryArgs) -> anyhow::Result<QueryReport> {
    let c = &a.common;
    let messages = a.send.count.unwrap_or(produce::DEFAULT_COUNT);
    let share = a.send.key_share.max(1);
    let (epoch, fill) = match &a.run_id {
        Some(hex) => {
            let id = u64::from_str_radix(hex, 16).context("--run-id is not hex")?;
            (Epoch::with_run_id(id), None)
        }
        None => {
            let route =
                route::resolve(&c.namesrv, &c.topic, !a.topic.no_create, a.topic.queues).await?;
            let epoch = Epoch::new();
            let mut send = a.send.clone();
            send.count = Some(messages);
            send.duration = None;
            send.key_share = share;
            let live = Arc::new(Live::default());
            let progress = Progress::start(live.clone(), "fill", c.quiet);
            let out = produce::run(&send, &c.topic, c.timeout, &route, epoch, live).await;
            progress.finish();
            (epoch, Some(ProduceReport::new(&send, out?)))
        }
    };
    let route = route::lookup(&c.namesrv, &c.topic)
        .await?
        .with_context(|| format!("no route for {}", c.topic))?;
    let before = match &a.metrics {
        Some(addr) => Some(object_store_requests(addr).await?),
        None => None,
    };
    let plan = Arc::new(Plan {
        topic: c.topic.clone(),
        run_id: epoch.run_id,
        messages,
        share,
        unique: a.unique,
        timeout: c.timeout,
        next: AtomicU64::new(0),
        lookups: a.lookups,
    });
    let start = Instant::now();
    let mut tasks = JoinSet::new();
    for _ in 0..a.lookup_connections.max(1) {
        tasks.spawn(lookups(plan.clone(), route.clone()));
    }
    let mut out = Outcome::default();
    while let Some(r) = tasks.join_next().await {
        out.merge(r.context("lookup task")??);
    }
    let seconds = start.elapsed().as_secs_f64().max(1e-9);
    let (by_op, per_lookup) = match (&a.metrics, before) {
        (Some(addr), Some(before)) => {
            let after = object_store_requests(addr).await?;
            let delta: BTreeMap<String, u64> = after
                .into_iter()
                .map(|(k, v)| {
                    let d = v.saturating_sub(before.get(&k).copied().unwrap_or(0));
                    (k, d)
                })
                .filter(|(_, d)| *d > 0)
                .collect();
            let total: u64 = delta.values().sum();
            let per = total as f64 / out.lookups.max(1) as f64;
            (Some(delta), Some(per))
        }
        _ => (None, None),
    };
    Ok(QueryReport {
        command: "query-by-key",
        namesrv: c.namesrv.clone(),
        topic: c.topic.clone(),
        run_id: format!("{:016X}", epoch.run_id),
        messages,
        key_share: share,
        unique: a.unique,
        fill,
        lookups: out.lookups,
        exact: out.exact,
        wrong: out.wrong,
        errors: out.errors,
        lookups_per_sec: out.lookups as f64 / seconds,
        latency_ms: out.latency.summary_ms(),
        object_store_requests: by_op,
        object_store_requests_per_lookup: per_lookup,
    })
}

#[derive(Debug)]
struct Plan {
    topic: String,
    run_id: u64,
    messages: u64,
    share: u64,
    unique: bool,
    timeout: Duration,
    next: AtomicU64,
    lookups: u64,
}

impl Plan {
    /// Lookup `i`'s key and the UNIQ_KEYs it must find.
    fn target(&self, i: u64) -> (String, Vec<String>) {
        // Spread the lookups over the fill (a multiplicative hash of i, not a PRNG, so runs
        // look up the same keys).
        let seq = i.wrapping_mul(0x9E37_79B9_7F4A_7C15) % self.messages.max(1);
        if self.unique {
            return (uniq_key(self.run_id, seq), vec![uniq_key(self.run_id, seq)]);
        }
        let n = seq / self.share;
        let first = n * self.share;
        let last = (first + self.share).min(self.messages);
        let want = (first..last).map(|s| uniq_key(self.run_id, s)).collect();
        (shared_key(self.run_id, n), want)
    }

    fn request(&self, key: &str) -> RemotingCommand {
        let mut cmd = RemotingCommand::request(RequestCode::QueryMessage.to_i32(), 0);
        QueryMessageRequestHeader {
            topic: self.topic.clone(),
            key: key.to_owned(),
            max_num: 64,
            begin_timestamp: 0,
            end_timestamp: i64::MAX,
            unique_key: self.unique,
        }
        .write_to(&mut cmd);
        cmd
    }
}

#[derive(Debug, Default)]
struct Outcome {
    lookups: u64,
    exact: u64,
    wrong: u64,
    errors: BTreeMap<String, u64>,
    latency: Histogram,
}

impl Outcome {
    fn merge(&mut self, o: Self) {
        self.lookups += o.lookups;
        self.exact += o.exact;
        self.wrong += o.wrong;
        for (k, v) in o.errors {
            *self.errors.entry(k).or_default() += v;
        }
        self.latency.merge(&o.latency);
    }
}

/// One lookup task: a connection per broker, lookups one after the other.
async fn lookups(plan: Arc<Plan>, route: Route) -> anyhow::Result<Outcome> {
    let mut clients = Vec::new();
    for b in &route.brokers {
        let c = RemotingClient::connect(b.addr.as_str())
            .await
            .with_context(|| format!("connect broker {}", b.addr))?;
        clients.push(Arc::new(c));
    }
    let mut out = Outcome::default();
    loop {
        let i = plan.next.fetch_add(1, Ordering::Relaxed);
        if i >= plan.lookups {
            break;
        }
        let (key, want) = plan.target(i);
        let t = Instant::now();
        let mut asks = JoinSet::new();
        for c in &clients {
            let (c, cmd, timeout) = (c.clone(), plan.request(&key), plan.timeout);
            asks.spawn(async move { c.invoke(cmd, timeout).await });
        }
        let mut found: Vec<String> = Vec::new();
        let mut failed = false;
        while let Some(r) = asks.join_next().await {
            match r {
                Ok(Ok(resp)) if resp.code == ResponseCode::Success.to_i32() => {
                    found.extend(uniq_keys(resp));
                }
                Ok(Ok(resp)) if resp.code == ResponseCode::QueryNotFound.to_i32() => {}
                Ok(Ok(resp)) => {
                    failed = true;
                    *out.errors.entry(format!("code {}", resp.code)).or_default() += 1;
                }
                Ok(Err(e)) => {
                    failed = true;
                    *out.errors.entry(format!("client: {e}")).or_default() += 1;
                }
                Err(e) => {
                    failed = true;
                    *out.errors.entry(format!("task: {e}")).or_default() += 1;
                }
            }
        }
        out.latency.record(t.elapsed());
        out.lookups += 1;
        found.sort();
        let mut want = want;
        want.sort();
        if !failed && found == want {
            out.exact += 1;
        } else {
            out.wrong += 1;
        }
    }
    Ok(out)
}

/// The UNIQ_KEYs of the records in a QUERY_MESSAGE answer.
fn uniq_keys(resp: RemotingCommand) -> Vec<String> {
    let mut body = resp.body;
    let mut out = Vec::new();
    while !body.is_empty() {
        let Ok(m) = MessageExt::decode(&mut body) else {
            out.push("<undecodable record>".to_owned());
            break;
        };
        let p = m.parsed_properties();
        out.push(
            p.get(stratus_compat::message::properties::keys::UNIQ_KEY)
                .unwrap_or_default()
                .to_owned(),
        );
    }
    out
}

/// `stratus_segments_object_store_requests_total` by operation, from a node's `/metrics`.
async fn object_store_requests(addr: &str) -> anyhow::Result<BTreeMap<String, u64>> {
    let mut s = TcpStream::connect(addr)
        .await
        .with_context(|| format!("connect to metrics {addr}"))?;
    s.write_all(b"GET /metrics HTTP/1.1\r\nHost: stratus\r\nConnection: close\r\n\r\n")
        .await?;
    let mut text = String::new();
    s.read_to_string(&mut text).await?;
    let Some((head, body)) = text.split_once("\r\n\r\n") else {
        bail!("malformed answer from {addr}/metrics");
    };
    if !head.starts_with("HTTP/1.1 200") {
        bail!("{addr}/metrics answered {head}");
    }
    Ok(parse_requests(body))
}

/// Sums the request counter's samples per `op` label.
fn parse_requests(body: &str) -> BTreeMap<String, u64> {
    let mut out = BTreeMap::new();
    for line in body.lines() {
        let Some(rest) = line.strip_prefix("stratus_segments_object_store_requests_total{") else {
            continue;
        };
        let Some((labels, value)) = rest.split_once("} ") else {
            continue;
        };
        let op = labels
            .split(',')
            .find_map(|l| l.strip_prefix("op=\""))
            .and_then(|v| v.strip_suffix('"'))
            .unwrap_or("?");
        let v = value.trim().parse::<f64>().unwrap_or(0.0);
        *out.entry(op.to_owned()).or_default() += v as u64;
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn request_counters_are_summed_per_operation() {
        let body = "# HELP x\n\
            stratus_segments_object_store_requests_total{op=\"get_range\",result=\"ok\"} 7\n\
            stratus_segments_object_store_requests_total{op=\"get_range\",result=\"retry\"} 2\n\
            stratus_segments_object_store_requests_total{op=\"put\",result=\"ok\"} 3\n\
            stratus_segments_object_store_seconds_count{op=\"put\"} 3\n";
        let m = parse_requests(body);
        assert_eq!(m.get("get_range"), Some(&9));
        assert_eq!(m.get("put"), Some(&3));
        assert_eq!(m.len(), 2);
    }

    #[test]
    fn a_lookup_wants_every_message_of_its_key_group() {
        let plan = Plan {
            topic: "T".into(),
            run_id: 1,
            messages: 10,
            share: 4,
            unique: false,
            timeout: Duration::from_secs(1),
            next: AtomicU64::new(0),
            lookups: 1,
        };
        for i in 0..50 {
            let (key, want) = plan.target(i);
            let n: u64 = key.rsplit('-').next().unwrap().parse().unwrap();
            let expect = if n == 2 { 2 } else { 4 };
            assert_eq!(want.len(), expect, "key {key}: the last group is short");
        }
        let unique = Plan {
            unique: true,
            ..plan
        };
        let (key, want) = unique.target(3);
        assert_eq!(want, vec![key]);
    }

    #[test]
    fn unique_keys_have_the_client_id_layout_and_differ_per_message() {
        let a = uniq_key(0xABCD, 64 * 5 + 3);
        assert_eq!(a, "000000000000ABCD0000000000050143");
        let ids: std::collections::BTreeSet<String> =
            (0..200_000).map(|s| uniq_key(7, s)).collect();
        assert_eq!(ids.len(), 200_000);
    }
}

//! Producers: N connections sending sync, pipelined or one-way, single messages or
//! batches, optionally paced to a target rate, until a count or a duration is reached.

use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use anyhow::Context;
use bytes::{Bytes, BytesMut};
use stratus_compat::client::RemotingClient;
use stratus_compat::command::RemotingCommand;
use stratus_compat::message::batch::{BatchEntry, try_encode_batch};
use stratus_compat::message::properties::{Properties, keys};
use stratus_compat::request::send::SendMessageRequestHeader;
use stratus_compat::{RequestCode, ResponseCode};
use tokio::task::JoinSet;

use crate::args::{SendArgs, SendMode};
use crate::histogram::Histogram;
use crate::route::Route;
use crate::stats::{ErrorCounts, Live, client_error_key, code_key, merge_errors};
use crate::time::{self, Epoch, write_stamp};

/// Messages sent when neither a count nor a duration is given.
pub(crate) const DEFAULT_COUNT: u64 = 20_000;

/// What the producers did.
#[derive(Debug, Default)]
pub(crate) struct ProduceOutcome {
    /// Messages written to a connection.
    pub(crate) sent: u64,
    /// Messages acknowledged with SUCCESS (one-way: written without a client error).
    pub(crate) acked: u64,
    /// Requests (a batch is one request).
    pub(crate) requests: u64,
    /// Failed requests by cause.
    pub(crate) errors: ErrorCounts,
    /// Send latency per request (sync and async).
    pub(crate) latency: Histogram,
    /// From the first send to the last reply.
    pub(crate) seconds: f64,
}

impl ProduceOutcome {
    /// Failed requests.
    pub(crate) fn error_total(&self) -> u64 {
        self.errors.values().sum()
    }
}

/// Everything a connection task needs, shared.
#[derive(Debug)]
struct Plan {
    args: SendArgs,
    topic: String,
    timeout: Duration,
    epoch: Epoch,
    limit: u64,
    deadline: Option<Instant>,
    claimed: AtomicU64,
    template: Bytes,
    tags: Vec<String>,
    live: Arc<Live>,
}

impl Plan {
    /// Claims up to one request's worth of messages: (first sequence number, count).
    fn claim(&self) -> Option<(u64, u64)> {
        if self.deadline.is_some_and(|d| Instant::now() >= d) {
            return None;
        }
        let want = self.args.batch.max(1) as u64;
        let first = self.claimed.fetch_add(want, Ordering::Relaxed);
        if first >= self.limit {
            return None;
        }
        Some((first, want.min(self.limit - first)))
    }

    fn body(&self, sent_ns: u64) -> Bytes {
        let mut b = BytesMut::from(&self.template[..]);
        write_stamp(&mut b, &self.epoch, sent_ns);
        b.freeze()
    }

    fn properties(&self, seq: u64, wait_only: bool) -> String {
        let mut p = Properties::default();
        if !wait_only {
            let tag = &self.tags[(seq % self.tags.len() as u64) as usize];
            if !tag.is_empty() {
                p.insert(keys::TAGS, tag);
            }
            p.insert(keys::UNIQ_KEY, &uniq_key(self.epoch.run_id, seq));
            if let Some(n) = seq.checked_div(self.args.key_share) {
                p.insert(keys::KEYS, &shared_key(self.epoch.run_id, n));
            }
        }
        p.insert(keys::WAIT, "true");
        p.encode()
    }

    /// The request for messages `first..first + n` to `queue_id` of `broker_name`.
    fn request(&self, broker_name: &str, queue_id: i32, first: u64, n: u64) -> RemotingCommand {
        let sent_ns = self.epoch.now_ns();
        let batch = self.args.batch > 1;
        let code = if batch {
            RequestCode::SendBatchMessage
        } else {
            RequestCode::SendMessageV2
        };
        let mut cmd = RemotingCommand::request(code.to_i32(), 0);
        SendMessageRequestHeader {
            producer_group: self.args.group.clone(),
            topic: self.topic.clone(),
            default_topic: "TBW102".into(),
            default_topic_queue_nums: 4,
            queue_id,
            born_timestamp: 0,
            properties: Some(self.properties(first, batch)),
            batch,
            broker_name: Some(broker_name.to_owned()),
            ..Default::default()
        }
        .write_v2(&mut cmd);
        if batch {
            let entries: Vec<BatchEntry> = (first..first + n)
                .map(|seq| BatchEntry {
                    flag: 0,
                    body: self.body(sent_ns),
                    properties: self.properties(seq, false),
                })
                .collect();
            let mut body = BytesMut::new();
            // Properties are short and bodies far below 2 GiB: encoding cannot fail; if it
            // did, the server would refuse the empty body and the error would be counted.
            let _ = try_encode_batch(&entries, &mut body);
            cmd.body = body.freeze();
        } else {
            cmd.body = self.body(sent_ns);
        }
        cmd
    }
}

/// The UNIQ_KEY of message `seq` of run `run_id`, in the layout of the Java client's ids
/// (32 hex digits: 10 bytes of process identity, here the run id; a 4-byte time field,
/// here advancing every 64 messages, as a busy producer's milliseconds do; a 2-byte
/// counter), so the server indexes it as a client id would be.
pub(crate) fn uniq_key(run_id: u64, seq: u64) -> String {
    format!(
        "{run_id:016X}0000{:08X}{:04X}",
        (seq / 64) as u32,
        seq as u16
    )
}

/// Key number `n` of run `run_id` (`--key-share`).
pub(crate) fn shared_key(run_id: u64, n: u64) -> String {
    format!("K{run_id:016X}-{n}")
}

/// Result of one request: messages, latency, and the failure key if it failed.
type Sent = (u64, Option<Duration>, Option<String>);

async fn send_one(
    client: Arc<RemotingClient>,
    cmd: RemotingCommand,
    n: u64,
    mode: SendMode,
    timeout: Duration,
) -> Sent {
    let t = Instant::now();
    if mode == SendMode::Oneway {
        return match client.invoke_oneway(cmd).await {
            Ok(()) => (n, None, None),
            Err(e) => (n, None, Some(client_error_key(&e))),
        };
    }
    match client.invoke(cmd, timeout).await {
        Ok(resp) if resp.code == ResponseCode::Success.to_i32() => (n, Some(t.elapsed()), None),
        Ok(resp) => (n, Some(t.elapsed()), Some(code_key(resp.code))),
        Err(e) => (n, None, Some(client_error_key(&e))),
    }
}

#[derive(Debug, Default)]
struct ConnOutcome {
    sent: u64,
    acked: u64,
    requests: u64,
    errors: ErrorCounts,
    latency: Histogram,
    last_reply: Option<Instant>,
}

impl ConnOutcome {
    fn record(&mut self, live: &Live, (n, lat, err): Sent) {
        self.requests += 1;
        if let Some(d) = lat {
            self.latency.record(d);
            live.send_latency(d);
        }
        match err {
            None => {
                self.acked += n;
                Live::add(&live.acked, n);
            }
            Some(key) => {
                *self.errors.entry(key).or_default() += 1;
                Live::add(&live.errors, 1);
            }
        }
        self.last_reply = Some(Instant::now());
    }
}

async fn connection(
    plan: Arc<Plan>,
    index: usize,
    route: Arc<Route>,
    start: Instant,
) -> anyhow::Result<ConnOutcome> {
    let broker = &route.brokers[index % route.brokers.len()];
    let client = Arc::new(
        RemotingClient::connect(broker.addr.as_str())
            .await
            .with_context(|| format!("connect broker {}", broker.addr))?,
    );
    let queues = broker.write_queues.max(1) as u64;
    let mode = plan.args.mode;
    let window = match mode {
        SendMode::Async => plan.args.inflight.max(1),
        SendMode::Sync | SendMode::Oneway => 1,
    };
    let conns = plan.args.connections.max(1);
    let per_conn_rate = plan.args.rate as f64 / conns as f64;
    let mut out = ConnOutcome::default();
    let mut inflight = JoinSet::new();
    let mut next_queue = (index / route.brokers.len()) as u64;
    let mut done = false;
    loop {
        while let Some(r) = inflight.try_join_next() {
            match r {
                Ok(r) => out.record(&plan.live, r),
                Err(e) => *out.errors.entry(format!("task: {e}")).or_default() += 1,
            }
        }
        while !done && inflight.len() < window {
            if client.is_closed() {
                done = true;
                break;
            }
            let Some((first, n)) = plan.claim() else {
                done = true;
                break;
            };
            if per_conn_rate > 0.0 {
                // Connection i runs i/N of a request interval behind connection 0, so the
                // connections together send evenly spaced requests, not aligned bursts.
                let phase = index as f64 / conns as f64 * n as f64;
                let due =
                    start + Duration::from_secs_f64((out.sent as f64 + phase) / per_conn_rate);
                time::sleep_until(due).await;
            }
            let queue_id = i32::try_from(next_queue % queues).unwrap_or(0);
            next_queue += 1;
            let cmd = plan.request(&broker.name, queue_id, first, n);
            out.sent += n;
            Live::add(&plan.live.sent, n);
            if mode == SendMode::Sync {
                let r = send_one(client.clone(), cmd, n, mode, plan.timeout).await;
                out.record(&plan.live, r);
            } else {
                inflight.spawn(send_one(client.clone(), cmd, n, mode, plan.timeout));
            }
        }
        match inflight.join_next().await {
            Some(Ok(r)) => out.record(&plan.live, r),
            Some(Err(e)) => {
                *out.errors.entry(format!("task: {e}")).or_default() += 1;
            }
            None if done => break,
            None => {}
        }
    }
    Ok(out)
}

/// Runs the producers to completion.
pub(crate) async fn run(
    args: &SendArgs,
    topic: &str,
    timeout: Duration,
    route: &Route,
    epoch: Epoch,
    live: Arc<Live>,
) -> anyhow::Result<ProduceOutcome> {
    let limit = args.count.unwrap_or(if args.duration.is_some() {
        u64::MAX
    } else {
        DEFAULT_COUNT
    });
    let start = Instant::now();
    let mut tags: Vec<String> = args.tags.split(',').map(str::to_owned).collect();
    if tags.is_empty() {
        tags.push(String::new());
    }
    let plan = Arc::new(Plan {
        args: args.clone(),
        topic: topic.to_owned(),
        timeout,
        epoch,
        limit,
        deadline: args.duration.map(|d| start + d),
        claimed: AtomicU64::new(0),
        template: Bytes::from(vec![b'x'; args.size]),
        tags,
        live,
    });
    let route = Arc::new(route.clone());
    let mut conns = JoinSet::new();
    for i in 0..args.connections.max(1) {
        conns.spawn(connection(plan.clone(), i, route.clone(), start));
    }
    let mut out = ProduceOutcome::default();
    let mut last = start;
    while let Some(r) = conns.join_next().await {
        let c = r.context("producer task")??;
        out.sent += c.sent;
        out.acked += c.acked;
        out.requests += c.requests;
        out.latency.merge(&c.latency);
        merge_errors(&mut out.errors, c.errors);
        if let Some(t) = c.last_reply {
            last = last.max(t);
        }
    }
    out.seconds = last.duration_since(start).as_secs_f64().max(1e-9);
    Ok(out)
}

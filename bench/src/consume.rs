//! Pullers: one long-polling pull loop per queue of the route, sharing a few connections
//! per broker. They either drain each queue up to an end offset or follow it until told to
//! stop, and measure end-to-end latency from the send time stamped in each body.

use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;
use stratus_compat::client::RemotingClient;
use stratus_compat::command::RemotingCommand;
use stratus_compat::message::record::MessageExt;
use stratus_compat::request::pull::{
    PULL_FLAG_SUBSCRIPTION, PULL_FLAG_SUSPEND, PullMessageRequestHeader, PullMessageResponseHeader,
};
use stratus_compat::{RequestCode, ResponseCode};
use tokio::task::JoinSet;
use tokio_util::sync::CancellationToken;

use crate::args::PullArgs;
use crate::histogram::Histogram;
use crate::route::{self, Route};
use crate::stats::{ErrorCounts, Live, client_error_key, code_key, merge_errors};
use crate::time::{self, Epoch, read_stamp};

/// Where each queue's pulls start and, when draining, end.
#[derive(Debug, Clone)]
pub(crate) struct QueueSpan {
    /// Index of the broker in the route.
    pub(crate) broker: usize,
    /// Queue id.
    pub(crate) queue_id: i32,
    /// First offset to pull.
    pub(crate) start: i64,
    /// Stop once this offset is reached (`None`: follow until cancelled).
    pub(crate) end: Option<i64>,
}

/// What the pullers received.
#[derive(Debug, Default)]
pub(crate) struct PullOutcome {
    /// Messages received.
    pub(crate) consumed: u64,
    /// Body bytes received.
    pub(crate) bytes: u64,
    /// Pull requests answered.
    pub(crate) pulls: u64,
    /// Failed pulls by cause.
    pub(crate) errors: ErrorCounts,
    /// Send time to receipt, for bodies stamped by this run.
    pub(crate) e2e: Histogram,
    /// From the first pull to the last message received.
    pub(crate) seconds: f64,
}

impl PullOutcome {
    /// Failed pulls.
    pub(crate) fn error_total(&self) -> u64 {
        self.errors.values().sum()
    }
}

/// Every readable queue of the route with its current end offset (GET_MAX_OFFSET).
pub(crate) async fn end_offsets(
    route: &Route,
    topic: &str,
) -> anyhow::Result<Vec<(usize, i32, i64)>> {
    let mut out = Vec::new();
    for (b, broker) in route.brokers.iter().enumerate() {
        let client = RemotingClient::connect(broker.addr.as_str())
            .await
            .with_context(|| format!("connect broker {}", broker.addr))?;
        for q in 0..broker.read_queues {
            out.push((b, q, route::max_offset(&client, topic, q).await?));
        }
    }
    Ok(out)
}

/// Settings shared by the queue loops.
#[derive(Debug)]
struct Shared {
    pull: PullArgs,
    topic: String,
    timeout: Duration,
    epoch: Epoch,
    live: Arc<Live>,
    limit: Option<u64>,
    deadline: Option<Instant>,
    cancel: CancellationToken,
}

#[derive(Debug, Default)]
struct QueueOutcome {
    consumed: u64,
    bytes: u64,
    pulls: u64,
    errors: ErrorCounts,
    e2e: Histogram,
    last_message: Option<Instant>,
}

fn pull_request(shared: &Shared, broker_name: &str, queue_id: i32, offset: i64) -> RemotingCommand {
    let mut cmd = RemotingCommand::request(RequestCode::PullMessage.to_i32(), 0);
    PullMessageRequestHeader {
        consumer_group: shared.pull.consumer_group.clone(),
        topic: shared.topic.clone(),
        queue_id,
        queue_offset: offset,
        max_msg_nums: shared.pull.pull_batch.max(1),
        sys_flag: PULL_FLAG_SUBSCRIPTION | PULL_FLAG_SUSPEND,
        commit_offset: 0,
        suspend_timeout_millis: i64::try_from(shared.pull.poll.as_millis()).unwrap_or(i64::MAX),
        subscription: Some("*".into()),
        sub_version: 0,
        expression_type: Some("TAG".into()),
        max_msg_bytes: None,
        broker_name: Some(broker_name.to_owned()),
    }
    .write_to(&mut cmd);
    cmd
}

/// Counts a failure and backs off a little so a broken queue does not spin.
async fn failed(out: &mut QueueOutcome, live: &Live, key: String) {
    *out.errors.entry(key).or_default() += 1;
    Live::add(&live.errors, 1);
    time::sleep(Duration::from_millis(100)).await;
}

async fn queue_loop(
    shared: Arc<Shared>,
    client: Arc<RemotingClient>,
    broker_name: String,
    span: QueueSpan,
) -> QueueOutcome {
    let mut out = QueueOutcome::default();
    let mut offset = span.start;
    loop {
        if span.end.is_some_and(|end| offset >= end)
            || shared.cancel.is_cancelled()
            || shared
                .limit
                .is_some_and(|l| Live::get(&shared.live.consumed) >= l)
            || shared.deadline.is_some_and(|d| Instant::now() >= d)
            || client.is_closed()
        {
            break;
        }
        let cmd = pull_request(&shared, &broker_name, span.queue_id, offset);
        let call = client.invoke(cmd, shared.pull.poll + shared.timeout);
        let resp = tokio::select! {
            () = shared.cancel.cancelled() => break,
            r = call => r,
        };
        let resp = match resp {
            Ok(r) => r,
            Err(e) => {
                failed(&mut out, &shared.live, client_error_key(&e)).await;
                continue;
            }
        };
        let received_ns = shared.epoch.now_ns();
        out.pulls += 1;
        let code = ResponseCode::from_i32(resp.code);
        let header = PullMessageResponseHeader::from_command(&resp);
        match (code, header) {
            (ResponseCode::Success, Ok(h)) => {
                match MessageExt::decode_all(resp.body.clone()) {
                    Ok(msgs) => {
                        let n = msgs.len() as u64;
                        let bytes: u64 = msgs.iter().map(|m| m.body.len() as u64).sum();
                        for m in &msgs {
                            if let Some(sent) = read_stamp(&m.body, &shared.epoch) {
                                out.e2e.record_ns(received_ns.saturating_sub(sent));
                            }
                        }
                        out.consumed += n;
                        out.bytes += bytes;
                        Live::add(&shared.live.consumed, n);
                        Live::add(&shared.live.consumed_bytes, bytes);
                        if n > 0 {
                            out.last_message = Some(Instant::now());
                        }
                    }
                    Err(e) => failed(&mut out, &shared.live, format!("bad records: {e}")).await,
                }
                if h.next_begin_offset <= offset {
                    // A reply that does not move forward would loop forever.
                    failed(&mut out, &shared.live, "no progress".into()).await;
                }
                offset = offset.max(h.next_begin_offset);
            }
            (
                ResponseCode::PullNotFound
                | ResponseCode::PullRetryImmediately
                | ResponseCode::PullOffsetMoved,
                Ok(h),
            ) => {
                if code == ResponseCode::PullNotFound && span.end.is_some_and(|e| offset >= e) {
                    break;
                }
                offset = h.next_begin_offset.max(0);
            }
            (_, Err(e)) if code == ResponseCode::Success => {
                failed(&mut out, &shared.live, format!("bad reply: {e}")).await;
            }
            _ => failed(&mut out, &shared.live, code_key(resp.code)).await,
        }
    }
    out
}

/// Options of a pull run besides the spans.
#[derive(Debug, Clone)]
pub(crate) struct PullRun {
    /// Puller options.
    pub(crate) pull: PullArgs,
    /// Topic.
    pub(crate) topic: String,
    /// Request timeout (the long-poll time is added to it).
    pub(crate) timeout: Duration,
    /// Connections per broker.
    pub(crate) connections: usize,
    /// Stop once this many messages were received in total.
    pub(crate) limit: Option<u64>,
    /// Stop at this time.
    pub(crate) deadline: Option<Instant>,
}

/// Running pullers; [`Pullers::finish`] waits for them.
#[derive(Debug)]
pub(crate) struct Pullers {
    tasks: JoinSet<QueueOutcome>,
    cancel: CancellationToken,
    start: Instant,
}

impl Pullers {
    /// Connects and starts one loop per span.
    pub(crate) async fn start(
        run: PullRun,
        route: &Route,
        spans: Vec<QueueSpan>,
        epoch: Epoch,
        live: Arc<Live>,
    ) -> anyhow::Result<Self> {
        let cancel = CancellationToken::new();
        let shared = Arc::new(Shared {
            pull: run.pull,
            topic: run.topic,
            timeout: run.timeout,
            epoch,
            live,
            limit: run.limit,
            deadline: run.deadline,
            cancel: cancel.clone(),
        });
        let mut clients: Vec<Vec<Arc<RemotingClient>>> = Vec::new();
        for broker in &route.brokers {
            let queues = usize::try_from(broker.read_queues).unwrap_or(0);
            let n = run.connections.clamp(1, queues.max(1));
            let mut v = Vec::with_capacity(n);
            for _ in 0..n {
                v.push(Arc::new(
                    RemotingClient::connect(broker.addr.as_str())
                        .await
                        .with_context(|| format!("connect broker {}", broker.addr))?,
                ));
            }
            clients.push(v);
        }
        let start = Instant::now();
        let mut tasks = JoinSet::new();
        for (i, span) in spans.into_iter().enumerate() {
            let Some(conns) = clients.get(span.broker) else {
                continue;
            };
            let client = conns[i % conns.len()].clone();
            let name = route.brokers[span.broker].name.clone();
            tasks.spawn(queue_loop(shared.clone(), client, name, span));
        }
        Ok(Self {
            tasks,
            cancel,
            start,
        })
    }

    /// Tells every loop to stop now (a pull being held is abandoned).
    pub(crate) fn cancel(&self) {
        self.cancel.cancel();
    }

    /// Waits for every loop and adds up what they received.
    pub(crate) async fn finish(mut self) -> PullOutcome {
        let mut out = PullOutcome::default();
        let mut last = self.start;
        while let Some(r) = self.tasks.join_next().await {
            let q = match r {
                Ok(q) => q,
                Err(e) => {
                    *out.errors.entry(format!("task: {e}")).or_default() += 1;
                    continue;
                }
            };
            out.consumed += q.consumed;
            out.bytes += q.bytes;
            out.pulls += q.pulls;
            out.e2e.merge(&q.e2e);
            merge_errors(&mut out.errors, q.errors);
            if let Some(t) = q.last_message {
                last = last.max(t);
            }
        }
        out.seconds = last.duration_since(self.start).as_secs_f64().max(1e-9);
        out
    }
}

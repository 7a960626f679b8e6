//! Object-store faults seen at the gateway's edge: a node built in process over a
//! fault-injecting store (`stratus_segments::store::faults::FaultyStore`), driven over a
//! real socket with the protocol client, asserting response codes and that every
//! acknowledged message stays readable with its exact bytes.
//!
//! - a send whose segment is not durable within `storage.durable_timeout` is answered
//!   FLUSH_DISK_TIMEOUT (10), a full write buffer SYSTEM_BUSY (2): never SUCCESS;
//! - transient PUT errors are retried and the send succeeds; persistent ones fail the send
//!   and nothing of it becomes readable;
//! - an ambiguous PUT (landed, reported failed) is resolved by reading the object back: one
//!   object, one copy of each message;
//! - truncated or corrupted GETs on the read path answer an error code, never wrong bytes,
//!   and the damaged bytes are not kept in a cache;
//! - after the faults clear, every acknowledged message is readable.

#![allow(clippy::unwrap_used, clippy::disallowed_methods)] // test code: failures should panic; real timers are fine

use std::net::SocketAddr;
use std::path::Path;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use object_store::ObjectStore;
use object_store::memory::InMemory;
use stratus_compat::client::RemotingClient;
use stratus_compat::command::RemotingCommand;
use stratus_compat::message::record::MessageExt;
use stratus_compat::request::pull::{
    PULL_FLAG_SUBSCRIPTION, PullMessageRequestHeader, PullMessageResponseHeader,
};
use stratus_compat::request::send::SendMessageRequestHeader;
use stratus_compat::{RequestCode, ResponseCode};
use stratus_gateway::app::App;
use stratus_gateway::config::{ByteSize, Settings};
use stratus_segments::store::faults::FaultyStore;
use tokio::sync::oneshot;

const T: Duration = Duration::from_secs(15);
const TOPIC: &str = "FaultTopic";

/// A node running in this process.
struct Running {
    addr: SocketAddr,
    metrics: Option<SocketAddr>,
    stop: Option<oneshot::Sender<()>>,
    task: tokio::task::JoinHandle<anyhow::Result<()>>,
}

impl Running {
    async fn stop(mut self) {
        if let Some(tx) = self.stop.take() {
            let _ = tx.send(());
        }
        self.task.await.unwrap().unwrap();
    }
}

fn free_addr() -> SocketAddr {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
}

fn settings(dir: &Path) -> Settings {
    let mut s = Settings::default();
    s.node.data_dir = dir.to_path_buf();
    s.meta.url = Some(format!("embedded://{}", dir.join("meta.db").display()));
    s.listen.namesrv_addr = free_addr();
    s.listen.broker_addr = free_addr();
    s.meta.lease_ttl = Duration::from_secs(1);
    s.metrics.addr = "127.0.0.1:0".into();
    // These runs are about storage faults; the Kafka listener's fixed port is left out.
    s.kafka.enabled = false;
    s
}

async fn start(settings: Settings, store: Arc<dyn ObjectStore>) -> Running {
    let app = App::build_with_object_store(settings, store).await.unwrap();
    let addr = app.local_addrs()[0];
    let metrics = app.metrics_addr();
    let (tx, rx) = oneshot::channel::<()>();
    let task = tokio::spawn(app.run(async {
        let _ = rx.await;
    }));
    Running {
        addr,
        metrics,
        stop: Some(tx),
        task,
    }
}

async fn send(c: &RemotingClient, body: &[u8]) -> RemotingCommand {
    let mut cmd = RemotingCommand::request(RequestCode::SendMessageV2.to_i32(), 0);
    SendMessageRequestHeader {
        producer_group: "pg".into(),
        topic: TOPIC.into(),
        default_topic: "TBW102".into(),
        default_topic_queue_nums: 4,
        queue_id: 0,
        born_timestamp: 1_700_000_000_000,
        broker_name: Some("broker-0".into()),
        ..Default::default()
    }
    .write_v2(&mut cmd);
    cmd.body = Bytes::copy_from_slice(body);
    c.invoke(cmd, T).await.unwrap()
}

async fn pull(
    c: &RemotingClient,
    offset: i64,
    max: i32,
) -> (RemotingCommand, Option<PullMessageResponseHeader>) {
    let mut cmd = RemotingCommand::request(RequestCode::PullMessage.to_i32(), 0);
    PullMessageRequestHeader {
        consumer_group: "cg".into(),
        topic: TOPIC.into(),
        queue_id: 0,
        queue_offset: offset,
        max_msg_nums: max,
        sys_flag: PULL_FLAG_SUBSCRIPTION,
        subscription: Some("*".into()),
        expression_type: Some("TAG".into()),
        broker_name: Some("broker-0".into()),
        ..Default::default()
    }
    .write_to(&mut cmd);
    let resp = c.invoke(cmd, T).await.unwrap();
    // Error answers carry no pull header.
    let h = PullMessageResponseHeader::from_command(&resp).ok();
    (resp, h)
}

/// Every body in the queue, in offset order (panics on a pull error).
async fn read_all(c: &RemotingClient) -> Vec<Bytes> {
    let mut out = Vec::new();
    let mut offset = 0;
    loop {
        let (resp, h) = pull(c, offset, 32).await;
        if resp.code == ResponseCode::PullNotFound.to_i32() {
            return out;
        }
        assert_eq!(resp.code, 0, "pull at {offset}: {:?}", resp.remark);
        for m in MessageExt::decode_all(resp.body.clone()).unwrap() {
            assert_eq!(
                m.queue_offset,
                out.len() as i64,
                "offsets are contiguous from 0"
            );
            out.push(m.body);
        }
        offset = h.unwrap().next_begin_offset;
    }
}

/// Sends until one is acknowledged (a shard failed by a commit error is re-opened by the
/// lease keeper within a renew interval).
async fn send_until_ok(c: &RemotingClient, body: &[u8]) {
    let deadline = tokio::time::Instant::now() + T;
    loop {
        let r = send(c, body).await;
        if r.code == 0 {
            return;
        }
        assert!(
            tokio::time::Instant::now() < deadline,
            "no send succeeded after the faults cleared: {} {:?}",
            r.code,
            r.remark
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

fn body(tag: &str, i: usize) -> Vec<u8> {
    format!("{tag}-{i}-").repeat(40).into_bytes()
}

/// Scrapes `/metrics` with a bare HTTP/1.1 request.
async fn scrape(addr: SocketAddr) -> String {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut s = tokio::net::TcpStream::connect(addr).await.unwrap();
    s.write_all(b"GET /metrics HTTP/1.1\r\nHost: stratus\r\nConnection: close\r\n\r\n")
        .await
        .unwrap();
    let mut text = String::new();
    s.read_to_string(&mut text).await.unwrap();
    assert!(text.starts_with("HTTP/1.1 200"), "{text}");
    text
}

/// The value of one sample line of a scrape (0 when absent).
fn sample(text: &str, name_and_labels: &str) -> f64 {
    text.lines()
        .find_map(|l| l.strip_prefix(name_and_labels)?.trim().parse().ok())
        .unwrap_or(0.0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sends_not_durable_in_time_get_flush_disk_timeout_and_full_buffers_system_busy() {
    let dir = tempfile::tempdir().unwrap();
    let faulty = FaultyStore::new(Arc::new(InMemory::new()));
    let mut s = settings(dir.path());
    s.storage.durable_timeout = Duration::from_millis(300);
    s.storage.max_buffered_bytes = ByteSize::kib(8);
    let node = start(s, faulty.clone()).await;
    let c = RemotingClient::connect(node.addr).await.unwrap();

    let first = body("ok", 0);
    // The node may still be taking its shard: SERVICE_NOT_AVAILABLE until it has.
    send_until_ok(&c, &first).await;

    // Uploads slower than the durable timeout: FLUSH_DISK_TIMEOUT, never SUCCESS.
    faulty.set_put_latency(Duration::from_millis(1500));
    for i in 0..2 {
        let r = send(&c, &body("slow", i)).await;
        assert_eq!(
            r.code,
            ResponseCode::FlushDiskTimeout.to_i32(),
            "{:?}",
            r.remark
        );
        // Like the reference, the answer carries the send header (Java clients decode it
        // into a SendResult with status FLUSH_DISK_TIMEOUT).
        let h = stratus_compat::request::send::SendMessageResponseHeader::from_command(&r)
            .expect("FLUSH_DISK_TIMEOUT carries the send header");
        assert!(!h.msg_id.is_empty(), "offset message id in the header");
    }

    // Uploads held: appends pile up until the write buffer is full, then SYSTEM_BUSY at
    // once (no queueing), while the held ones time out.
    faulty.set_put_latency(Duration::ZERO);
    faulty.hold_puts();
    let big = vec![b'x'; 3000];
    let mut pending = Vec::new();
    for _ in 0..4 {
        let c = RemotingClient::connect(node.addr).await.unwrap();
        let b = big.clone();
        pending.push(tokio::spawn(async move { send(&c, &b).await.code }));
    }
    let codes: Vec<i32> = futures::future::join_all(pending)
        .await
        .into_iter()
        .map(Result::unwrap)
        .collect();
    assert!(
        codes.contains(&ResponseCode::SystemBusy.to_i32()),
        "a full buffer answers SYSTEM_BUSY: {codes:?}"
    );
    assert!(
        !codes.contains(&0),
        "nothing held is acknowledged: {codes:?}"
    );
    assert!(
        codes.iter().all(|c| *c == ResponseCode::SystemBusy.to_i32()
            || *c == ResponseCode::FlushDiskTimeout.to_i32()),
        "{codes:?}"
    );

    faulty.clear_faults();
    let last = body("ok", 1);
    send_until_ok(&c, &last).await;
    // Acknowledged messages are all readable; the timed-out ones may land later (the
    // reference's FLUSH_DISK_TIMEOUT does not undo the write either), refused ones never.
    let bodies = read_all(&c).await;
    assert!(bodies.contains(&Bytes::from(first)));
    assert!(bodies.contains(&Bytes::from(last)));
    let busy = codes
        .iter()
        .filter(|c| **c == ResponseCode::SystemBusy.to_i32())
        .count();
    let big_stored = bodies.iter().filter(|b| b[..] == big[..]).count();
    assert!(
        big_stored <= codes.len() - busy,
        "a refused send was stored"
    );
    node.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn transient_put_errors_are_retried_and_persistent_ones_fail_without_a_trace() {
    let dir = tempfile::tempdir().unwrap();
    let faulty = FaultyStore::new(Arc::new(InMemory::new()));
    let node = start(settings(dir.path()), faulty.clone()).await;
    let c = RemotingClient::connect(node.addr).await.unwrap();
    let metrics = node.metrics.unwrap();
    let retry_line = "stratus_segments_object_store_requests_total{op=\"put\",result=\"retry\"}";
    let retries_before = sample(&scrape(metrics).await, retry_line);

    let puts = faulty.puts();
    faulty.fail_puts(2);
    let a = body("retried", 0);
    let r = send(&c, &a).await;
    assert_eq!(r.code, 0, "{:?}", r.remark);
    assert_eq!(
        faulty.puts() - puts,
        3,
        "two failed attempts, then the one that landed"
    );
    assert!(sample(&scrape(metrics).await, retry_line) >= retries_before + 2.0);

    // More failures than attempts: the send fails, and nothing of it is ever readable.
    faulty.fail_puts(1000);
    let lost = body("failed", 0);
    let r = send(&c, &lost).await;
    assert_ne!(r.code, 0);
    assert_eq!(
        r.code,
        ResponseCode::ServiceNotAvailable.to_i32(),
        "{:?}",
        r.remark
    );

    faulty.clear_faults();
    let b = body("after", 0);
    send_until_ok(&c, &b).await;
    let bodies = read_all(&c).await;
    assert_eq!(bodies, vec![Bytes::from(a), Bytes::from(b)]);
    node.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_ambiguous_put_is_resolved_by_reading_back_without_duplicate_or_loss() {
    let dir = tempfile::tempdir().unwrap();
    let inner = Arc::new(InMemory::new());
    let faulty = FaultyStore::new(inner.clone());
    let node = start(settings(dir.path()), faulty.clone()).await;
    let c = RemotingClient::connect(node.addr).await.unwrap();

    let mut sent = Vec::new();
    for i in 0..3 {
        faulty.ambiguous_puts(1);
        let b = body("ambiguous", i);
        let r = send(&c, &b).await;
        assert_eq!(r.code, 0, "{:?}", r.remark);
        sent.push(Bytes::from(b));
    }
    let bodies = read_all(&c).await;
    assert_eq!(bodies, sent, "each message exactly once, in order");
    // One object per segment: the retry found its own object instead of writing another.
    let objects = futures::TryStreamExt::try_collect::<Vec<_>>(inner.list(None))
        .await
        .unwrap();
    assert_eq!(objects.len(), 3, "{objects:?}");
    node.stop().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn damaged_gets_answer_an_error_never_wrong_bytes_and_are_not_cached() {
    let dir = tempfile::tempdir().unwrap();
    let inner: Arc<InMemory> = Arc::new(InMemory::new());
    // Write with a healthy store, one segment per message (each send waits to be durable).
    let node = start(settings(dir.path()), inner.clone()).await;
    let c = RemotingClient::connect(node.addr).await.unwrap();
    let mut sent = Vec::new();
    for i in 0..6 {
        let b = body("stored", i);
        assert_eq!(send(&c, &b).await.code, 0);
        sent.push(Bytes::from(b));
    }
    drop(c);
    node.stop().await;

    // Read with empty caches, so every read goes to the store: a footer GET, then a block
    // GET per segment.
    let faulty = FaultyStore::new(inner.clone());
    let node = start(settings(dir.path()), faulty.clone()).await;
    let c = RemotingClient::connect(node.addr).await.unwrap();
    let system_error = ResponseCode::SystemError.to_i32();
    let read_one = |offset: i64| {
        let c = &c;
        let sent = &sent;
        async move {
            let (resp, h) = pull(c, offset, 1).await;
            if resp.code == 0 {
                let msgs = MessageExt::decode_all(resp.body.clone()).unwrap();
                assert_eq!(msgs.len(), 1);
                assert_eq!(
                    msgs[0].body, sent[offset as usize],
                    "wrong bytes at {offset}"
                );
                assert_eq!(h.unwrap().next_begin_offset, offset + 1);
            }
            resp.code
        }
    };

    // Transient GET errors are retried.
    faulty.fail_gets(2);
    assert_eq!(read_one(0).await, 0);

    // A truncated footer, then a truncated block, then a corrupted footer and a corrupted
    // block: each read fails with SYSTEM_ERROR, and the next one succeeds with the right
    // bytes (nothing damaged was cached).
    let cases: [(i64, u32, bool); 4] = [(1, 0, true), (2, 1, true), (3, 0, false), (4, 1, false)];
    for (offset, spared, truncate) in cases {
        faulty.spare_gets(spared);
        if truncate {
            faulty.truncate_gets(1);
        } else {
            faulty.corrupt_gets(1);
        }
        assert_eq!(
            read_one(offset).await,
            system_error,
            "damaged read at {offset} (truncate: {truncate}, spared: {spared})"
        );
        assert_eq!(read_one(offset).await, 0, "read again at {offset}");
    }

    // Every acknowledged message, exactly.
    faulty.clear_faults();
    assert_eq!(read_all(&c).await, sent);
    node.stop().await;
}

//! `/metrics` of a running `stratus` process: after a produce and a consume, the gateway's
//! request, send and connection metrics, the object store's request and byte counters, the
//! caches' lookups, capacities and sizes, and the parked-pull gauge show what happened.

#![allow(clippy::unwrap_used, clippy::disallowed_methods)] // test code: failures should panic; real timers are fine

use std::time::Duration;

use bytes::Bytes;
use stratus_compat::client::RemotingClient;
use stratus_compat::command::RemotingCommand;
use stratus_compat::message::record::MessageExt;
use stratus_compat::request::pull::{
    PULL_FLAG_SUBSCRIPTION, PULL_FLAG_SUSPEND, PullMessageRequestHeader, PullMessageResponseHeader,
};
use stratus_compat::request::send::SendMessageRequestHeader;
use stratus_compat::{RequestCode, ResponseCode};
use stratus_tests::{Node, scrape_metrics};

const T: Duration = Duration::from_secs(10);
const TOPIC: &str = "MetricsTopic";

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

fn pull_cmd(offset: i64, suspend_ms: i64) -> RemotingCommand {
    let mut cmd = RemotingCommand::request(RequestCode::PullMessage.to_i32(), 0);
    PullMessageRequestHeader {
        consumer_group: "cg".into(),
        topic: TOPIC.into(),
        queue_id: 0,
        queue_offset: offset,
        max_msg_nums: 32,
        sys_flag: PULL_FLAG_SUBSCRIPTION | if suspend_ms > 0 { PULL_FLAG_SUSPEND } else { 0 },
        suspend_timeout_millis: suspend_ms,
        subscription: Some("*".into()),
        expression_type: Some("TAG".into()),
        broker_name: Some("broker-0".into()),
        ..Default::default()
    }
    .write_to(&mut cmd);
    cmd
}

/// Pulls the queue from 0 to its end; returns the bodies.
async fn consume(c: &RemotingClient) -> Vec<Bytes> {
    let mut out = Vec::new();
    let mut offset = 0;
    loop {
        let resp = c.invoke(pull_cmd(offset, 0), T).await.unwrap();
        if resp.code != ResponseCode::Success.to_i32() {
            assert_eq!(
                resp.code,
                ResponseCode::PullNotFound.to_i32(),
                "{:?}",
                resp.remark
            );
            return out;
        }
        let h = PullMessageResponseHeader::from_command(&resp).unwrap();
        for m in MessageExt::decode_all(resp.body.clone()).unwrap() {
            out.push(m.body);
        }
        offset = h.next_begin_offset;
    }
}

/// The value of the sample `series` (metric name with its labels, as printed), 0 if absent.
fn sample(text: &str, series: &str) -> f64 {
    text.lines()
        .filter(|l| !l.starts_with('#'))
        .find_map(|l| {
            let rest = l.strip_prefix(series)?;
            rest.starts_with(' ').then(|| rest.trim().parse().ok())?
        })
        .unwrap_or(0.0)
}

async fn metrics(node: &Node) -> String {
    let addr = node.metrics;
    tokio::task::spawn_blocking(move || scrape_metrics(addr).unwrap())
        .await
        .unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn metrics_show_requests_object_store_calls_and_caches_after_produce_and_consume() {
    let dir = tempfile::tempdir().unwrap();
    let mut node = Node::start(dir.path()).unwrap();
    let c = RemotingClient::connect(node.broker).await.unwrap();

    let bodies: Vec<Vec<u8>> = (0..5)
        .map(|i| format!("metric-{i}").repeat(30).into_bytes())
        .collect();
    for b in &bodies {
        let r = send(&c, b).await;
        assert_eq!(r.code, 0, "{:?}", r.remark);
    }
    assert_eq!(consume(&c).await.len(), bodies.len());

    let text = metrics(&node).await;
    let sends = r#"stratus_gateway_requests_total{code="SEND_MESSAGE_V2",result="SUCCESS"}"#;
    assert_eq!(sample(&text, sends), 5.0, "{text}");
    assert_eq!(
        sample(
            &text,
            r#"stratus_gateway_sends_total{result="acknowledged"}"#
        ),
        5.0
    );
    assert!(
        sample(
            &text,
            r#"stratus_gateway_requests_total{code="PULL_MESSAGE",result="SUCCESS"}"#
        ) >= 1.0
    );
    assert!(
        sample(
            &text,
            r#"stratus_gateway_requests_total{code="PULL_MESSAGE",result="PULL_NOT_FOUND"}"#
        ) >= 1.0
    );
    assert!(
        sample(&text, "stratus_gateway_connections") >= 1.0,
        "{text}"
    );
    // Every send waited for its own segment: one create-only PUT each, bytes counted.
    assert!(
        sample(
            &text,
            r#"stratus_segments_object_store_requests_total{op="put",result="ok"}"#
        ) >= 5.0
    );
    assert!(
        sample(
            &text,
            r#"stratus_segments_object_store_bytes_total{op="put"}"#
        ) > 1000.0
    );
    assert!(sample(&text, "stratus_segments_committed_total") >= 5.0);
    assert_eq!(sample(&text, "stratus_segments_uploads_in_flight"), 0.0);
    assert_eq!(sample(&text, "stratus_segments_buffered_bytes"), 0.0);
    // A consumer that keeps up reads from the tail cache, no GETs.
    assert!(
        sample(
            &text,
            r#"stratus_segments_cache_requests_total{cache="tail",result="hit"}"#
        ) >= 1.0
    );
    assert_eq!(
        sample(
            &text,
            r#"stratus_segments_object_store_requests_total{op="get_range",result="ok"}"#
        ),
        0.0
    );
    assert_eq!(
        sample(
            &text,
            r#"stratus_segments_cache_capacity_bytes{cache="tail"}"#
        ),
        (256u64 << 20) as f64
    );
    assert!(
        sample(
            &text,
            r#"stratus_segments_cache_weighted_bytes{cache="tail"}"#
        ) > 1000.0
    );
    assert!(sample(&text, r#"stratus_segments_cache_entries{cache="tail"}"#) >= 5.0);

    // A long-poll pull at the queue's end is parked until a message arrives.
    let parked = {
        let c2 = RemotingClient::connect(node.broker).await.unwrap();
        tokio::spawn(async move { c2.invoke(pull_cmd(5, 5000), T).await.unwrap().code })
    };
    let mut seen = 0.0;
    for _ in 0..50 {
        seen = sample(&metrics(&node).await, "stratus_gateway_parked_pulls");
        if seen >= 1.0 {
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(seen, 1.0, "the long poll is parked");
    assert_eq!(send(&c, b"wake up").await.code, 0);
    assert_eq!(parked.await.unwrap(), 0);
    assert_eq!(
        sample(&metrics(&node).await, "stratus_gateway_parked_pulls"),
        0.0
    );
    drop(c);

    // After a restart the caches are empty: the consume goes to the object store.
    assert!(node.terminate().unwrap());
    node.restart().unwrap();
    let c = RemotingClient::connect(node.broker).await.unwrap();
    assert_eq!(consume(&c).await.len(), bodies.len() + 1);
    let text = metrics(&node).await;
    assert!(
        sample(
            &text,
            r#"stratus_segments_object_store_requests_total{op="get_range",result="ok"}"#
        ) >= 6.0,
        "{text}"
    );
    assert!(
        sample(
            &text,
            r#"stratus_segments_object_store_bytes_total{op="get_range"}"#
        ) > 1000.0
    );
    assert!(
        sample(
            &text,
            r#"stratus_segments_cache_requests_total{cache="footer",result="miss"}"#
        ) >= 6.0
    );
    assert!(
        sample(
            &text,
            r#"stratus_segments_cache_requests_total{cache="block",result="miss"}"#
        ) >= 6.0
    );
    assert!(
        sample(
            &text,
            r#"stratus_segments_cache_weighted_bytes{cache="block"}"#
        ) > 1000.0
    );
    assert_eq!(
        sample(
            &text,
            r#"stratus_gateway_sends_total{result="acknowledged"}"#
        ),
        0.0
    );
}

//! Delay levels and consumer retry over real sockets against a running `stratus` process:
//! delayed messages wait in SCHEDULE_TOPIC_XXXX and are delivered to their real queue at
//! store time + delay (never early), survive kill -9 without loss or repetition;
//! CONSUMER_SEND_MSG_BACK puts a failed message into `%RETRY%<group>` through a delay level
//! with its reconsume count raised, and into `%DLQ%<group>` past the maximum.
#![allow(clippy::unwrap_used, clippy::disallowed_methods)] // test code

use std::path::Path;
use std::time::{Duration, Instant};

use bytes::Bytes;
use stratus_compat::client::RemotingClient;
use stratus_compat::command::RemotingCommand;
use stratus_compat::message::properties::{Properties, keys};
use stratus_compat::message::record::MessageExt;
use stratus_compat::request::consumer::ConsumerSendMsgBackRequestHeader;
use stratus_compat::request::pull::{
    PULL_FLAG_SUBSCRIPTION, PullMessageRequestHeader, PullMessageResponseHeader,
};
use stratus_compat::request::send::{SendMessageRequestHeader, SendMessageResponseHeader};
use stratus_compat::{RequestCode, ResponseCode};
use stratus_tests::Node;

const T: Duration = Duration::from_secs(10);

fn start(dir: &Path) -> Node {
    let cfg = dir.join("stratus.toml");
    std::fs::write(&cfg, "[broker]\nmessage_delay_level = \"1s 2s 3s\"\n").unwrap();
    Node::start_with(&dir.join("data"), &["--config", cfg.to_str().unwrap()]).unwrap()
}

async fn send(
    c: &RemotingClient,
    topic: &str,
    key: &str,
    delay: Option<i32>,
) -> SendMessageResponseHeader {
    send_with(c, topic, key, delay, &[]).await
}

async fn send_with(
    c: &RemotingClient,
    topic: &str,
    key: &str,
    delay: Option<i32>,
    extra: &[(&str, String)],
) -> SendMessageResponseHeader {
    let mut p = Properties::default();
    for (k, v) in extra {
        p.insert(k, v);
    }
    p.insert(keys::TAGS, "TagD");
    p.insert(keys::KEYS, key);
    p.insert(keys::UNIQ_KEY, &format!("UNIQ-{key}"));
    if let Some(d) = delay {
        p.insert(keys::DELAY, &d.to_string());
    }
    let mut cmd = RemotingCommand::request(RequestCode::SendMessageV2.to_i32(), 0);
    SendMessageRequestHeader {
        producer_group: "pg".into(),
        topic: topic.into(),
        default_topic: "TBW102".into(),
        default_topic_queue_nums: 4,
        queue_id: 2,
        born_timestamp: 1,
        properties: Some(p.encode()),
        ..Default::default()
    }
    .write_v2(&mut cmd);
    cmd.body = Bytes::from(format!("body-{key}"));
    let r = c.invoke(cmd, T).await.unwrap();
    assert_eq!(r.code, 0, "{:?}", r.remark);
    SendMessageResponseHeader::from_command(&r).unwrap()
}

async fn all(c: &RemotingClient, topic: &str, queue_id: i32) -> Vec<MessageExt> {
    let mut out = Vec::new();
    let mut offset = 0;
    loop {
        let mut cmd = RemotingCommand::request(RequestCode::PullMessage.to_i32(), 0);
        PullMessageRequestHeader {
            consumer_group: "reader".into(),
            topic: topic.into(),
            queue_id,
            queue_offset: offset,
            max_msg_nums: 32,
            sys_flag: PULL_FLAG_SUBSCRIPTION,
            subscription: Some("*".into()),
            ..Default::default()
        }
        .write_to(&mut cmd);
        let r = c.invoke(cmd, T).await.unwrap();
        if r.code != 0 {
            return out;
        }
        out.extend(MessageExt::decode_all(r.body.clone()).unwrap());
        offset = PullMessageResponseHeader::from_command(&r)
            .unwrap()
            .next_begin_offset;
    }
}

/// Polls until `n` messages are in the queue; returns them and when they were seen.
async fn wait_for(
    c: &RemotingClient,
    topic: &str,
    queue_id: i32,
    n: usize,
    within: Duration,
) -> Vec<MessageExt> {
    let deadline = Instant::now() + within;
    loop {
        let got = all(c, topic, queue_id).await;
        if got.len() >= n {
            return got;
        }
        assert!(
            Instant::now() < deadline,
            "{topic}/{queue_id}: {} of {n} messages after {within:?}",
            got.len()
        );
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn delayed_messages_arrive_after_their_level_and_never_early() {
    let dir = tempfile::tempdir().unwrap();
    let node = start(dir.path());
    let c = RemotingClient::connect(node.broker).await.unwrap();
    assert_eq!(all(&c, "Delayed", 2).await.len(), 0);
    let sent_at = Instant::now();
    let r = send(&c, "Delayed", "d1", Some(1)).await;
    assert_eq!(r.queue_id, 2, "the answer names the requested queue");
    // Level 9 clamps to the highest configured level (3 = 3 s).
    send(&c, "Delayed", "d3", Some(9)).await;
    send(&c, "Delayed", "now", None).await;
    let first = wait_for(&c, "Delayed", 2, 2, Duration::from_secs(10)).await;
    let waited = sent_at.elapsed();
    assert_eq!(first[0].body.as_ref(), b"body-now");
    assert_eq!(first[1].body.as_ref(), b"body-d1");
    assert!(
        waited >= Duration::from_millis(950),
        "level 1 delivered early: {waited:?}"
    );
    let m = &first[1];
    let p = Properties::parse(&m.properties);
    assert_eq!(p.get(keys::DELAY), None, "DELAY cleared on delivery");
    assert_eq!(p.get(keys::REAL_TOPIC), Some("Delayed"));
    assert_eq!(p.get(keys::REAL_QID), Some("2"));
    let both = wait_for(&c, "Delayed", 2, 3, Duration::from_secs(10)).await;
    assert!(
        sent_at.elapsed() >= Duration::from_millis(2950),
        "level 3 delivered early"
    );
    assert_eq!(both[2].body.as_ref(), b"body-d3");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pending_delays_survive_kill_9_without_loss_or_repetition() {
    let dir = tempfile::tempdir().unwrap();
    let mut node = start(dir.path());
    let c = RemotingClient::connect(node.broker).await.unwrap();
    for i in 0..5 {
        send(&c, "DelayRestart", &format!("k{i}"), Some(2)).await;
    }
    drop(c);
    node.kill9().unwrap();
    node.restart().unwrap();
    let c = RemotingClient::connect(node.broker).await.unwrap();
    let got = wait_for(&c, "DelayRestart", 2, 5, Duration::from_secs(15)).await;
    // A further restart after delivery repeats nothing.
    drop(c);
    node.kill9().unwrap();
    node.restart().unwrap();
    let c = RemotingClient::connect(node.broker).await.unwrap();
    tokio::time::sleep(Duration::from_millis(800)).await;
    let again = all(&c, "DelayRestart", 2).await;
    let bodies: Vec<&[u8]> = again.iter().map(|m| m.body.as_ref()).collect();
    assert_eq!(
        bodies,
        vec![
            &b"body-k0"[..],
            b"body-k1",
            b"body-k2",
            b"body-k3",
            b"body-k4"
        ]
    );
    assert_eq!(got.len(), 5);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn send_back_retries_with_a_raised_count_then_dead_letters() {
    let dir = tempfile::tempdir().unwrap();
    let node = start(dir.path());
    let c = RemotingClient::connect(node.broker).await.unwrap();
    send(&c, "Work", "job", None).await;
    let original = all(&c, "Work", 2).await.remove(0);
    let back = |m: &MessageExt, level: i32, max: i32| {
        let mut cmd = RemotingCommand::request(RequestCode::ConsumerSendMsgBack.to_i32(), 0);
        ConsumerSendMsgBackRequestHeader {
            offset: m.commit_log_offset,
            group: "workers".into(),
            delay_level: level,
            origin_msg_id: Some("UNIQ-job".into()),
            origin_topic: Some(m.topic.clone()),
            unit_mode: false,
            max_reconsume_times: Some(max),
        }
        .write_to(&mut cmd);
        cmd.version = 479;
        cmd
    };
    assert_eq!(c.invoke(back(&original, 1, 2), T).await.unwrap().code, 0);
    let retry = wait_for(&c, "%RETRY%workers", 0, 1, Duration::from_secs(10)).await;
    let r1 = &retry[0];
    assert_eq!(r1.reconsume_times, 1);
    assert_eq!(r1.body, original.body);
    let p = Properties::parse(&r1.properties);
    assert_eq!(p.get(keys::RETRY_TOPIC), Some("Work"));
    assert_eq!(p.get(keys::ORIGIN_MESSAGE_ID), Some("UNIQ-job"));
    assert_eq!(p.get(keys::UNIQ_KEY), Some("UNIQ-job"));
    // Fails again: second retry (reconsume 2).
    assert_eq!(c.invoke(back(r1, 1, 2), T).await.unwrap().code, 0);
    let retry = wait_for(&c, "%RETRY%workers", 0, 2, Duration::from_secs(10)).await;
    assert_eq!(retry[1].reconsume_times, 2);
    // Past the client's maximum (2): the dead-letter queue, at once, readable.
    assert_eq!(c.invoke(back(&retry[1], 0, 2), T).await.unwrap().code, 0);
    let dlq = wait_for(&c, "%DLQ%workers", 0, 1, Duration::from_secs(5)).await;
    assert_eq!(dlq[0].reconsume_times, 3);
    assert_eq!(
        Properties::parse(&dlq[0].properties).get(keys::RETRY_TOPIC),
        Some("Work")
    );
    // A negative level goes straight to the DLQ; an unknown offset is an error.
    assert_eq!(c.invoke(back(&original, -1, 16), T).await.unwrap().code, 0);
    wait_for(&c, "%DLQ%workers", 0, 2, Duration::from_secs(5)).await;
    let mut bogus = original.clone();
    bogus.commit_log_offset = 987_654_321;
    assert_eq!(
        c.invoke(back(&bogus, 1, 16), T).await.unwrap().code,
        ResponseCode::SystemError.to_i32()
    );
    // Retry and DLQ topics are routable.
    for t in ["%RETRY%workers", "%DLQ%workers"] {
        let mut cmd = RemotingCommand::request(RequestCode::GetRouteinfoByTopic.to_i32(), 0);
        cmd.put_ext("topic", t);
        assert_eq!(c.invoke(cmd, T).await.unwrap().code, 0);
    }
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn timer_messages_arrive_at_their_time_with_sub_second_precision() {
    let dir = tempfile::tempdir().unwrap();
    let mut node = start(dir.path());
    let c = RemotingClient::connect(node.broker).await.unwrap();
    let t0 = now_ms();
    send_with(
        &c,
        "Timers",
        "abs",
        None,
        &[("TIMER_DELIVER_MS", (t0 + 1_500).to_string())],
    )
    .await;
    send_with(
        &c,
        "Timers",
        "rel",
        None,
        &[("TIMER_DELAY_MS", "700".to_string())],
    )
    .await;
    // Four days ahead: accepted (no three-day cap), and not delivered now.
    send_with(
        &c,
        "Timers",
        "far",
        None,
        &[("TIMER_DELAY_SEC", (4 * 86_400).to_string())],
    )
    .await;
    // A time in the past means now.
    send_with(
        &c,
        "Timers",
        "past",
        None,
        &[("TIMER_DELIVER_MS", (t0 - 10_000).to_string())],
    )
    .await;
    let got = wait_for(&c, "Timers", 2, 3, Duration::from_secs(10)).await;
    let arrived = now_ms() - t0;
    let keys: Vec<String> = got
        .iter()
        .map(|m| {
            Properties::parse(&m.properties)
                .get(keys::KEYS)
                .unwrap()
                .to_owned()
        })
        .collect();
    assert_eq!(keys, vec!["past", "rel", "abs"]);
    assert!(
        got[2].store_timestamp >= t0 + 1_500,
        "never early: stored {} < due {}",
        got[2].store_timestamp,
        t0 + 1_500
    );
    assert!(
        got[2].store_timestamp < t0 + 2_500,
        "within a second of due: {}",
        got[2].store_timestamp - t0
    );
    assert!(got[1].store_timestamp >= t0 + 700);
    assert!(arrived >= 1_500);
    let p = Properties::parse(&got[2].properties);
    assert_eq!(p.get("TIMER_DELIVER_MS"), None);
    assert_eq!(p.get(keys::REAL_TOPIC), Some("Timers"));
    // A bad timer value is refused.
    let mut p = Properties::default();
    p.insert("TIMER_DELAY_SEC", "soon");
    let mut cmd = RemotingCommand::request(RequestCode::SendMessageV2.to_i32(), 0);
    SendMessageRequestHeader {
        producer_group: "pg".into(),
        topic: "Timers".into(),
        default_topic: "TBW102".into(),
        default_topic_queue_nums: 4,
        queue_id: 2,
        properties: Some(p.encode()),
        ..Default::default()
    }
    .write_v2(&mut cmd);
    cmd.body = Bytes::from_static(b"x");
    assert_eq!(
        c.invoke(cmd, T).await.unwrap().code,
        ResponseCode::MessageIllegal.to_i32()
    );
    // Pending timers survive kill -9 and are delivered once.
    send_with(
        &c,
        "TimersRestart",
        "t",
        None,
        &[("TIMER_DELAY_MS", "1500".to_string())],
    )
    .await;
    drop(c);
    node.kill9().unwrap();
    node.restart().unwrap();
    let c = RemotingClient::connect(node.broker).await.unwrap();
    wait_for(&c, "TimersRestart", 2, 1, Duration::from_secs(10)).await;
    tokio::time::sleep(Duration::from_millis(500)).await;
    assert_eq!(all(&c, "TimersRestart", 2).await.len(), 1);
    assert_eq!(
        all(&c, "Timers", 2).await.len(),
        3,
        "the far timer is still pending"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_re_send_past_the_maximum_goes_to_the_dead_letter_queue() {
    let dir = tempfile::tempdir().unwrap();
    let node = start(dir.path());
    let c = RemotingClient::connect(node.broker).await.unwrap();
    let resend = |reconsume: i32| {
        let mut cmd = RemotingCommand::request(RequestCode::SendMessageV2.to_i32(), 0);
        SendMessageRequestHeader {
            producer_group: "CLIENT_INNER_PRODUCER".into(),
            topic: "%RETRY%fallback".into(),
            default_topic: "TBW102".into(),
            default_topic_queue_nums: 4,
            queue_id: 0,
            reconsume_times: Some(reconsume),
            max_reconsume_times: Some(16),
            properties: Some(format!("KEYS\u{1}r{reconsume}\u{2}")),
            ..Default::default()
        }
        .write_v2(&mut cmd);
        cmd.body = Bytes::from(format!("re-send {reconsume}"));
        cmd
    };
    // At the maximum it is still a retry; past it, a dead letter.
    assert_eq!(c.invoke(resend(16), T).await.unwrap().code, 0);
    assert_eq!(c.invoke(resend(17), T).await.unwrap().code, 0);
    let retry = all(&c, "%RETRY%fallback", 0).await;
    assert_eq!(retry.len(), 1);
    assert_eq!(retry[0].reconsume_times, 16);
    let dlq = all(&c, "%DLQ%fallback", 0).await;
    assert_eq!(dlq.len(), 1);
    assert_eq!(dlq[0].body.as_ref(), b"re-send 17");
}

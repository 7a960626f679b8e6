//! Transactional messages over real sockets against a running `stratus` process: half
//! messages are invisible, END_TRANSACTION commits exactly once or rolls back, unknown
//! transactions are checked back with a live producer of their group only, and pending
//! state survives kill -9. The node runs with short check timings (see `start`).
#![allow(clippy::unwrap_used, clippy::disallowed_methods)] // test code

use std::path::Path;
use std::time::{Duration, Instant};

use bytes::Bytes;
use stratus_compat::client::RemotingClient;
use stratus_compat::command::RemotingCommand;
use stratus_compat::message::id::decode_offset_msg_id;
use stratus_compat::message::properties::{Properties, keys};
use stratus_compat::message::record::MessageExt;
use stratus_compat::request::pull::{
    PULL_FLAG_SUBSCRIPTION, PullMessageRequestHeader, PullMessageResponseHeader,
};
use stratus_compat::request::send::{SendMessageRequestHeader, SendMessageResponseHeader};
use stratus_compat::request::transaction::{
    CheckTransactionStateRequestHeader, EndTransactionRequestHeader,
};
use stratus_compat::{RequestCode, ResponseCode};
use stratus_tests::Node;

const T: Duration = Duration::from_secs(10);

fn start(dir: &Path, max_checks: u32) -> Node {
    let cfg = dir.join("stratus.toml");
    std::fs::write(
        &cfg,
        format!("[transaction]\ntimeout = \"300ms\"\ncheck_interval = \"200ms\"\nmax_checks = {max_checks}\n"),
    )
    .unwrap();
    Node::start_with(&dir.join("data"), &["--config", cfg.to_str().unwrap()]).unwrap()
}

fn req(code: RequestCode) -> RemotingCommand {
    RemotingCommand::request(code.to_i32(), 0)
}

/// A half message: TRAN_MSG + PGROUP properties and the prepared sysflag, as clients send.
async fn send_half(
    c: &RemotingClient,
    topic: &str,
    group: &str,
    key: &str,
) -> SendMessageResponseHeader {
    let mut p = Properties::default();
    p.insert(keys::TAGS, "TagT");
    p.insert(keys::KEYS, key);
    p.insert(keys::UNIQ_KEY, &format!("UNIQ-{key}"));
    p.insert(keys::TRAN_MSG, "true");
    p.insert(keys::PGROUP, group);
    let mut cmd = req(RequestCode::SendMessageV2);
    SendMessageRequestHeader {
        producer_group: group.into(),
        topic: topic.into(),
        default_topic: "TBW102".into(),
        default_topic_queue_nums: 4,
        queue_id: 1,
        sys_flag: 4,
        born_timestamp: 1_700_000_000_000,
        flag: 0,
        properties: Some(p.encode()),
        ..Default::default()
    }
    .write_v2(&mut cmd);
    cmd.body = Bytes::from(format!("body of {key}"));
    let resp = c.invoke(cmd, T).await.unwrap();
    assert_eq!(resp.code, 0, "{:?}", resp.remark);
    SendMessageResponseHeader::from_command(&resp).unwrap()
}

fn end_cmd(
    group: &str,
    sent: &SendMessageResponseHeader,
    key: &str,
    state: i32,
    from_check: bool,
) -> RemotingCommand {
    let (_, handle) = decode_offset_msg_id(&sent.msg_id).unwrap();
    let mut cmd = req(RequestCode::EndTransaction);
    EndTransactionRequestHeader {
        producer_group: group.into(),
        tran_state_table_offset: sent.queue_offset,
        commit_log_offset: handle,
        commit_or_rollback: state,
        from_transaction_check: from_check,
        msg_id: format!("UNIQ-{key}"),
        transaction_id: Some(format!("UNIQ-{key}")),
        broker_name: None,
    }
    .write_to(&mut cmd);
    cmd
}

async fn visible(c: &RemotingClient, topic: &str) -> Vec<MessageExt> {
    let mut out = Vec::new();
    let mut offset = 0;
    loop {
        let mut cmd = req(RequestCode::PullMessage);
        PullMessageRequestHeader {
            consumer_group: "txn-reader".into(),
            topic: topic.into(),
            queue_id: 1,
            queue_offset: offset,
            max_msg_nums: 32,
            sys_flag: PULL_FLAG_SUBSCRIPTION,
            subscription: Some("*".into()),
            expression_type: Some("TAG".into()),
            ..Default::default()
        }
        .write_to(&mut cmd);
        let resp = c.invoke(cmd, T).await.unwrap();
        if resp.code != 0 {
            return out;
        }
        out.extend(MessageExt::decode_all(resp.body.clone()).unwrap());
        offset = PullMessageResponseHeader::from_command(&resp)
            .unwrap()
            .next_begin_offset;
    }
}

async fn heartbeat_producer(c: &RemotingClient, client_id: &str, group: &str) {
    let mut cmd = req(RequestCode::HeartBeat);
    cmd.body = Bytes::from(format!(
        r#"{{"clientID":"{client_id}","producerDataSet":[{{"groupName":"{group}"}}],"consumerDataSet":[]}}"#
    ));
    assert_eq!(c.invoke(cmd, T).await.unwrap().code, 0);
}

/// Waits for the next CHECK_TRANSACTION_STATE on a connection.
async fn next_check(
    rx: &mut tokio::sync::mpsc::Receiver<RemotingCommand>,
    within: Duration,
) -> Option<RemotingCommand> {
    let deadline = Instant::now() + within;
    loop {
        let left = deadline.checked_duration_since(Instant::now())?;
        match tokio::time::timeout(left, rx.recv()).await {
            Ok(Some(cmd)) if cmd.code == RequestCode::CheckTransactionState.to_i32() => {
                return Some(cmd);
            }
            Ok(Some(_)) => continue,
            _ => return None,
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn commit_rollback_and_repeated_ends_act_exactly_once() {
    let dir = tempfile::tempdir().unwrap();
    let node = start(dir.path(), 15);
    let c = RemotingClient::connect(node.broker).await.unwrap();

    let a = send_half(&c, "TxTopic", "PG1", "a").await;
    assert_eq!(a.queue_id, 1, "the answer names the requested queue");
    let b = send_half(&c, "TxTopic", "PG1", "b").await;
    assert_eq!(
        b.queue_offset,
        a.queue_offset + 1,
        "offsets in the half queue"
    );
    // Half messages are invisible to consumers, and the half topic is not routable.
    assert!(visible(&c, "TxTopic").await.is_empty());
    let mut pull = req(RequestCode::PullMessage);
    pull.put_ext("consumerGroup", "g");
    for (k, v) in [
        ("topic", "RMQ_SYS_TRANS_HALF_TOPIC"),
        ("queueId", "0"),
        ("queueOffset", "0"),
        ("maxMsgNums", "32"),
        ("sysFlag", "4"),
        ("commitOffset", "0"),
        ("suspendTimeoutMillis", "0"),
        ("subscription", "*"),
        ("subVersion", "0"),
    ] {
        pull.put_ext(k, v);
    }
    assert_eq!(
        c.invoke(pull, T).await.unwrap().code,
        ResponseCode::TopicNotExist.to_i32()
    );

    // Commit a: it appears once, as a committed transactional message.
    assert_eq!(
        c.invoke(end_cmd("PG1", &a, "a", 8, false), T)
            .await
            .unwrap()
            .code,
        0
    );
    let v = visible(&c, "TxTopic").await;
    assert_eq!(v.len(), 1);
    assert_eq!(v[0].body.as_ref(), b"body of a");
    assert_eq!(v[0].sys_flag & 0xC, 8);
    let (_, a_handle) = decode_offset_msg_id(&a.msg_id).unwrap();
    assert_eq!(v[0].prepared_transaction_offset, a_handle);
    let p = Properties::parse(&v[0].properties);
    assert_eq!(p.get(keys::UNIQ_KEY), Some("UNIQ-a"));
    assert!(p.get(keys::TRAN_MSG).is_none() && p.get(keys::REAL_TOPIC).is_none());
    // A second commit and a rollback after commit do nothing.
    assert_eq!(
        c.invoke(end_cmd("PG1", &a, "a", 8, false), T)
            .await
            .unwrap()
            .code,
        ResponseCode::SystemError.to_i32()
    );
    assert_eq!(
        c.invoke(end_cmd("PG1", &a, "a", 12, false), T)
            .await
            .unwrap()
            .code,
        ResponseCode::SystemError.to_i32()
    );
    // Wrong producer group or half offset is refused.
    assert_eq!(
        c.invoke(end_cmd("OTHER", &b, "b", 8, false), T)
            .await
            .unwrap()
            .code,
        ResponseCode::SystemError.to_i32()
    );
    let mut wrong = b.clone();
    wrong.queue_offset += 5;
    assert_eq!(
        c.invoke(end_cmd("PG1", &wrong, "b", 8, false), T)
            .await
            .unwrap()
            .code,
        ResponseCode::SystemError.to_i32()
    );
    // Roll b back: it never appears; a commit after the rollback does nothing.
    assert_eq!(
        c.invoke(end_cmd("PG1", &b, "b", 12, false), T)
            .await
            .unwrap()
            .code,
        0
    );
    assert_eq!(
        c.invoke(end_cmd("PG1", &b, "b", 8, false), T)
            .await
            .unwrap()
            .code,
        ResponseCode::SystemError.to_i32()
    );
    // Many concurrent commits of one half message: exactly one message results.
    let d = send_half(&c, "TxTopic", "PG1", "d").await;
    let mut tasks = Vec::new();
    for _ in 0..8 {
        let cmd = end_cmd("PG1", &d, "d", 8, false);
        let conn = RemotingClient::connect(node.broker).await.unwrap();
        tasks.push(tokio::spawn(async move {
            conn.invoke(cmd, T).await.unwrap().code
        }));
    }
    let mut ok = 0;
    for t in tasks {
        if t.await.unwrap() == 0 {
            ok += 1;
        }
    }
    assert_eq!(ok, 1, "exactly one concurrent commit wins");
    let bodies: Vec<Bytes> = visible(&c, "TxTopic")
        .await
        .into_iter()
        .map(|m| m.body)
        .collect();
    assert_eq!(
        bodies,
        vec![Bytes::from("body of a"), Bytes::from("body of d")]
    );

    // An end for something that was never a half message does nothing harmful.
    let mut bogus = a.clone();
    bogus.msg_id = stratus_compat::message::id::create_offset_msg_id(node.broker, 123_456);
    assert_eq!(
        c.invoke(end_cmd("PG1", &bogus, "x", 8, false), T)
            .await
            .unwrap()
            .code,
        ResponseCode::SystemError.to_i32()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unknown_transactions_are_checked_with_a_live_producer_of_their_group_only() {
    let dir = tempfile::tempdir().unwrap();
    let node = start(dir.path(), 15);
    let c = RemotingClient::connect(node.broker).await.unwrap();
    let other = RemotingClient::connect(node.broker).await.unwrap();
    let mut other_rx = other.server_requests().unwrap();
    heartbeat_producer(&other, "other-client", "PG_OTHER").await;

    let u = send_half(&c, "TxCheck", "PG2", "u").await;
    // "Unknown" gets no answer at all.
    let r = c
        .invoke(
            end_cmd("PG2", &u, "u", 0, false),
            Duration::from_millis(700),
        )
        .await;
    assert!(r.is_err(), "no response to an unknown end: {r:?}");
    // No producer of PG2 is live yet: no check anywhere. Then one joins and is asked.
    let checker = RemotingClient::connect(node.broker).await.unwrap();
    let mut rx = checker.server_requests().unwrap();
    heartbeat_producer(&checker, "checker-client", "PG2").await;
    let check = next_check(&mut rx, Duration::from_secs(10))
        .await
        .expect("a check-back");
    let h = CheckTransactionStateRequestHeader::from_command(&check).unwrap();
    let (_, handle) = decode_offset_msg_id(&u.msg_id).unwrap();
    assert_eq!(
        (h.commit_log_offset, h.tran_state_table_offset),
        (handle, u.queue_offset)
    );
    assert_eq!(h.msg_id, "UNIQ-u");
    let m = MessageExt::decode_all(check.body.clone()).unwrap();
    assert_eq!(
        m[0].topic, "TxCheck",
        "the check body carries the real topic"
    );
    assert_eq!(m[0].queue_id, 1);
    assert_eq!(
        Properties::parse(&m[0].properties).get("TRANSACTION_CHECK_TIMES"),
        Some("1")
    );
    assert!(
        other_rx.try_recv().is_err(),
        "producers of other groups are never asked"
    );
    // The producer answers from the check: commit.
    assert_eq!(
        checker
            .invoke(end_cmd("PG2", &u, "u", 8, true), T)
            .await
            .unwrap()
            .code,
        0
    );
    let v = visible(&c, "TxCheck").await;
    assert_eq!(v.len(), 1);
    assert_eq!(v[0].body.as_ref(), b"body of u");
    // Nothing more is checked once it is committed.
    assert!(
        next_check(&mut rx, Duration::from_millis(800))
            .await
            .is_none()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn pending_transactions_survive_kill_9_and_are_checked_after_restart() {
    let dir = tempfile::tempdir().unwrap();
    let mut node = start(dir.path(), 15);
    let c = RemotingClient::connect(node.broker).await.unwrap();
    let keep = send_half(&c, "TxRestart", "PG3", "keep").await;
    let drop_ = send_half(&c, "TxRestart", "PG3", "drop").await;
    drop(c);
    node.kill9().unwrap();
    node.restart().unwrap();
    let c = RemotingClient::connect(node.broker).await.unwrap();
    let mut rx = c.server_requests().unwrap();
    heartbeat_producer(&c, "restarted-producer", "PG3").await;
    let mut answered = 0;
    let deadline = Instant::now() + Duration::from_secs(20);
    while answered < 2 && Instant::now() < deadline {
        let check = next_check(&mut rx, Duration::from_secs(10))
            .await
            .expect("check-back after restart");
        let h = CheckTransactionStateRequestHeader::from_command(&check).unwrap();
        let (sent, key, state) = if h.msg_id == "UNIQ-keep" {
            (&keep, "keep", 8)
        } else {
            (&drop_, "drop", 12)
        };
        let r = c
            .invoke(end_cmd("PG3", sent, key, state, true), T)
            .await
            .unwrap();
        if r.code == 0 {
            answered += 1;
        }
    }
    assert_eq!(answered, 2);
    let v = visible(&c, "TxRestart").await;
    assert_eq!(v.len(), 1);
    assert_eq!(v[0].body.as_ref(), b"body of keep");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn half_messages_are_discarded_after_the_last_check() {
    let dir = tempfile::tempdir().unwrap();
    let node = start(dir.path(), 2);
    let c = RemotingClient::connect(node.broker).await.unwrap();
    let mut rx = c.server_requests().unwrap();
    heartbeat_producer(&c, "silent-producer", "PG4").await;
    let s = send_half(&c, "TxMax", "PG4", "s").await;
    assert!(next_check(&mut rx, Duration::from_secs(10)).await.is_some());
    assert!(next_check(&mut rx, Duration::from_secs(10)).await.is_some());
    // No third check; the half message is gone, so a late commit does nothing.
    assert!(
        next_check(&mut rx, Duration::from_millis(1500))
            .await
            .is_none()
    );
    assert_eq!(
        c.invoke(end_cmd("PG4", &s, "s", 8, true), T)
            .await
            .unwrap()
            .code,
        ResponseCode::SystemError.to_i32()
    );
    assert!(visible(&c, "TxMax").await.is_empty());
}

//! The protocol over real sockets against a running `stratus` process: routes, sends of
//! every kind, pulls with long polling, offsets, client registry, restarts (SIGTERM and
//! kill -9) and bad input. Driven by the crate's own protocol client, so every byte and
//! code is checked exactly.

#![allow(clippy::unwrap_used, clippy::disallowed_methods)] // test code: failures should panic; real timers are fine

use std::net::SocketAddr;
use std::time::{Duration, Instant};

use bytes::{BufMut, Bytes, BytesMut};
use stratus_compat::client::RemotingClient;
use stratus_compat::command::RemotingCommand;
use stratus_compat::message::batch::{BatchEntry, encode_batch};
use stratus_compat::message::id::decode_offset_msg_id;
use stratus_compat::message::properties::{Properties, keys};
use stratus_compat::message::record::MessageExt;
use stratus_compat::request::heartbeat::ConsumerIdList;
use stratus_compat::request::offset::{
    QueryConsumerOffsetRequestHeader, QueueRequestHeader, UpdateConsumerOffsetRequestHeader,
    read_offset_response,
};
use stratus_compat::request::pull::{
    PULL_FLAG_SUBSCRIPTION, PULL_FLAG_SUSPEND, PullMessageRequestHeader, PullMessageResponseHeader,
};
use stratus_compat::request::route::{GetRouteInfoRequestHeader, TopicRouteData};
use stratus_compat::request::send::{SendMessageRequestHeader, SendMessageResponseHeader};
use stratus_compat::{RequestCode, ResponseCode};
use stratus_tests::Node;

const T: Duration = Duration::from_secs(10);

async fn connect(addr: SocketAddr) -> RemotingClient {
    RemotingClient::connect(addr).await.expect("connect")
}

fn req(code: RequestCode) -> RemotingCommand {
    RemotingCommand::request(code.to_i32(), 0)
}

async fn route(c: &RemotingClient, topic: &str) -> RemotingCommand {
    let mut cmd = req(RequestCode::GetRouteinfoByTopic);
    GetRouteInfoRequestHeader {
        topic: topic.into(),
        accept_standard_json_only: None,
    }
    .write_to(&mut cmd);
    c.invoke(cmd, T).await.expect("route")
}

fn props(tag: &str, key: &str) -> String {
    let mut p = Properties::default();
    p.insert(keys::TAGS, tag);
    p.insert(keys::KEYS, key);
    p.insert(keys::UNIQ_KEY, &format!("UNIQ{key}"));
    p.encode()
}

fn send_header(topic: &str, queue_id: i32, tag: &str, key: &str) -> SendMessageRequestHeader {
    SendMessageRequestHeader {
        producer_group: "pg".into(),
        topic: topic.into(),
        default_topic: "TBW102".into(),
        default_topic_queue_nums: 4,
        queue_id,
        sys_flag: 0,
        born_timestamp: 1_700_000_000_000,
        flag: 7,
        properties: Some(props(tag, key)),
        broker_name: Some("broker-0".into()),
        ..Default::default()
    }
}

async fn send(
    c: &RemotingClient,
    topic: &str,
    queue_id: i32,
    tag: &str,
    key: &str,
    body: &[u8],
) -> RemotingCommand {
    let mut cmd = req(RequestCode::SendMessageV2);
    send_header(topic, queue_id, tag, key).write_v2(&mut cmd);
    cmd.body = Bytes::copy_from_slice(body);
    c.invoke(cmd, T).await.expect("send")
}

fn pull_header(
    topic: &str,
    queue_id: i32,
    offset: i64,
    expr: &str,
    suspend_ms: i64,
) -> PullMessageRequestHeader {
    PullMessageRequestHeader {
        consumer_group: "cg".into(),
        topic: topic.into(),
        queue_id,
        queue_offset: offset,
        max_msg_nums: 32,
        sys_flag: PULL_FLAG_SUBSCRIPTION | if suspend_ms > 0 { PULL_FLAG_SUSPEND } else { 0 },
        commit_offset: 0,
        suspend_timeout_millis: suspend_ms,
        subscription: Some(expr.into()),
        sub_version: 0,
        expression_type: Some("TAG".into()),
        max_msg_bytes: None,
        broker_name: Some("broker-0".into()),
    }
}

async fn pull(
    c: &RemotingClient,
    topic: &str,
    queue_id: i32,
    offset: i64,
    expr: &str,
) -> (RemotingCommand, PullMessageResponseHeader) {
    let mut cmd = req(RequestCode::PullMessage);
    pull_header(topic, queue_id, offset, expr, 0).write_to(&mut cmd);
    let resp = c.invoke(cmd, T).await.expect("pull");
    let h = PullMessageResponseHeader::from_command(&resp).expect("pull header");
    (resp, h)
}

/// Pulls a queue from 0 to its end.
async fn pull_all(c: &RemotingClient, topic: &str, queue_id: i32) -> Vec<MessageExt> {
    let mut out = Vec::new();
    let mut offset = 0;
    loop {
        let (resp, h) = pull(c, topic, queue_id, offset, "*").await;
        if resp.code != ResponseCode::Success.to_i32() {
            return out;
        }
        out.extend(MessageExt::decode_all(resp.body.clone()).expect("records"));
        offset = h.next_begin_offset;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn routes_sends_and_pulls_round_trip_every_byte() {
    let dir = tempfile::tempdir().unwrap();
    let node = Node::start(dir.path()).unwrap();
    let c = connect(node.namesrv).await;

    // As the reference's name server: an unknown topic has no route even with auto-create
    // on, and the lookup creates nothing; the default topic's route is what a producer
    // falls back to (perm 7: inheritable).
    let r = route(&c, "RoundTrip").await;
    assert_eq!(
        r.code,
        ResponseCode::TopicNotExist.to_i32(),
        "{:?}",
        r.remark
    );
    let r = route(&c, "TBW102").await;
    assert_eq!(r.code, 0, "{:?}", r.remark);
    let data: TopicRouteData = serde_json::from_slice(&r.body).unwrap();
    assert_eq!(data.queue_datas.len(), 1);
    assert_eq!(data.queue_datas[0].broker_name, "broker-0");
    assert_eq!(data.queue_datas[0].write_queue_nums, 8);
    assert_eq!(data.queue_datas[0].perm, 7);
    assert_eq!(
        data.broker_datas[0].broker_addrs["0"],
        node.broker.to_string()
    );
    // Route JSON uses quoted broker-id keys.
    assert!(std::str::from_utf8(&r.body).unwrap().contains("\"0\":"));

    // Invalid names get TOPIC_NOT_EXIST from the name-server role.
    let r = route(&c, "bad topic!").await;
    assert_eq!(r.code, ResponseCode::TopicNotExist.to_i32());

    let b = connect(node.broker).await;
    let mut sent = Vec::new();
    for i in 0..5 {
        let body = format!("body-{i}-").repeat(i + 1);
        let resp = send(
            &b,
            "RoundTrip",
            2,
            if i % 2 == 0 { "TagA" } else { "TagB" },
            &format!("k{i}"),
            body.as_bytes(),
        )
        .await;
        assert_eq!(resp.code, 0, "{:?}", resp.remark);
        let h = SendMessageResponseHeader::from_command(&resp).unwrap();
        assert_eq!(h.queue_id, 2);
        assert_eq!(h.queue_offset, i as i64);
        assert_eq!(
            h.transaction_id.as_deref(),
            Some(format!("UNIQk{i}").as_str())
        );
        assert_eq!(
            resp.ext_fields.get("MSG_REGION").map(String::as_str),
            Some("DefaultRegion")
        );
        let (host, handle) = decode_offset_msg_id(&h.msg_id).unwrap();
        assert_eq!(host, node.broker);
        sent.push((body, handle));
    }

    // The first send created the topic from TBW102 with min(4 asked, 8) queues.
    let r = route(&c, "RoundTrip").await;
    assert_eq!(r.code, 0, "{:?}", r.remark);
    let data: TopicRouteData = serde_json::from_slice(&r.body).unwrap();
    assert_eq!(data.queue_datas[0].write_queue_nums, 4);
    assert_eq!(data.queue_datas[0].perm, 6);

    let msgs = pull_all(&b, "RoundTrip", 2).await;
    assert_eq!(msgs.len(), 5);
    for (i, m) in msgs.iter().enumerate() {
        assert_eq!(m.queue_offset, i as i64);
        assert_eq!(m.body, Bytes::from(sent[i].0.clone()));
        assert_eq!(m.commit_log_offset, sent[i].1);
        assert_eq!(m.topic, "RoundTrip");
        assert_eq!(m.flag, 7);
        assert_eq!(m.born_timestamp, 1_700_000_000_000);
        assert_eq!(m.store_host, node.broker);
        let p = Properties::parse(&m.properties);
        assert_eq!(p.get(keys::KEYS), Some(format!("k{i}").as_str()));
        assert_eq!(p.get(keys::CLUSTER), Some("DefaultCluster"));
    }

    // VIEW_MESSAGE_BY_ID returns the same record.
    let mut view = req(RequestCode::ViewMessageById);
    view.put_ext("offset", sent[3].1);
    let v = b.invoke(view, T).await.unwrap();
    assert_eq!(v.code, 0);
    let viewed = MessageExt::decode_all(v.body.clone()).unwrap();
    assert_eq!(viewed, vec![msgs[3].clone()]);
    let mut view = req(RequestCode::ViewMessageById);
    view.put_ext("offset", 999_999_999);
    assert_eq!(
        b.invoke(view, T).await.unwrap().code,
        ResponseCode::SystemError.to_i32()
    );

    // Tag filter by hash code: TagA only → offsets 0, 2, 4; nextBeginOffset past all examined.
    let (resp, h) = pull(&b, "RoundTrip", 2, 0, "TagA").await;
    assert_eq!(resp.code, 0);
    let got: Vec<i64> = MessageExt::decode_all(resp.body.clone())
        .unwrap()
        .iter()
        .map(|m| m.queue_offset)
        .collect();
    assert_eq!(got, vec![0, 2, 4]);
    assert_eq!(h.next_begin_offset, 5);
    assert_eq!((h.min_offset, h.max_offset), (0, 5));
    // Filtered-out only → PULL_RETRY_IMMEDIATELY with the offset moved on.
    let (resp, h) = pull(&b, "RoundTrip", 2, 1, "TagC").await;
    assert_eq!(resp.code, ResponseCode::PullRetryImmediately.to_i32());
    assert_eq!(h.next_begin_offset, 5);
    // Status table: at max → NOT_FOUND; beyond → OFFSET_MOVED to max; empty queue at 0 → NOT_FOUND.
    let (resp, h) = pull(&b, "RoundTrip", 2, 5, "*").await;
    assert_eq!(
        (resp.code, h.next_begin_offset),
        (ResponseCode::PullNotFound.to_i32(), 5)
    );
    let (resp, h) = pull(&b, "RoundTrip", 2, 9, "*").await;
    assert_eq!(
        (resp.code, h.next_begin_offset),
        (ResponseCode::PullOffsetMoved.to_i32(), 5)
    );
    let (resp, _) = pull(&b, "RoundTrip", 1, 0, "*").await;
    assert_eq!(resp.code, ResponseCode::PullNotFound.to_i32());
    let (resp, h) = pull(&b, "RoundTrip", 1, 3, "*").await;
    assert_eq!(
        (resp.code, h.next_begin_offset),
        (ResponseCode::PullOffsetMoved.to_i32(), 0)
    );

    // GET_MAX_OFFSET / GET_MIN_OFFSET.
    let mut q = req(RequestCode::GetMaxOffset);
    QueueRequestHeader {
        topic: "RoundTrip".into(),
        queue_id: 2,
    }
    .write_to(&mut q);
    assert_eq!(
        read_offset_response(&b.invoke(q, T).await.unwrap()).unwrap(),
        5
    );
    let mut q = req(RequestCode::GetMinOffset);
    QueueRequestHeader {
        topic: "RoundTrip".into(),
        queue_id: 2,
    }
    .write_to(&mut q);
    assert_eq!(
        read_offset_response(&b.invoke(q, T).await.unwrap()).unwrap(),
        0
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn batch_and_v1_sends_store_each_message() {
    let dir = tempfile::tempdir().unwrap();
    let node = Node::start(dir.path()).unwrap();
    let b = connect(node.broker).await;

    // SEND_BATCH_MESSAGE (320) with three entries.
    let entries: Vec<BatchEntry> = (0..3)
        .map(|i| BatchEntry {
            flag: i,
            body: Bytes::from(format!("batch-{i}")),
            properties: props("TagA", &format!("b{i}")),
        })
        .collect();
    let mut body = BytesMut::new();
    encode_batch(&entries, &mut body);
    let mut cmd = req(RequestCode::SendBatchMessage);
    let mut h = send_header("Batches", 0, "", "");
    h.properties = None;
    h.batch = true;
    h.write_v2(&mut cmd);
    cmd.body = body.freeze();
    let resp = b.invoke(cmd, T).await.unwrap();
    assert_eq!(resp.code, 0, "{:?}", resp.remark);
    let rh = SendMessageResponseHeader::from_command(&resp).unwrap();
    assert_eq!(rh.msg_id.split(',').count(), 3);
    assert_eq!(rh.queue_offset, 0);

    // The C++ 1.x form: code 10, V1 keys, batch:"1" (JSON number values too).
    let mut body = BytesMut::new();
    encode_batch(&entries[..2], &mut body);
    let mut cmd = req(RequestCode::SendMessage);
    let mut h = send_header("Batches", 0, "", "");
    h.properties = None;
    h.write_v1(&mut cmd);
    cmd.put_ext("batch", "1");
    cmd.body = body.freeze();
    let resp = b.invoke(cmd, T).await.unwrap();
    assert_eq!(resp.code, 0, "{:?}", resp.remark);
    assert_eq!(
        SendMessageResponseHeader::from_command(&resp)
            .unwrap()
            .queue_offset,
        3
    );

    let msgs = pull_all(&b, "Batches", 0).await;
    let bodies: Vec<&[u8]> = msgs.iter().map(|m| m.body.as_ref()).collect();
    assert_eq!(
        bodies,
        vec![
            &b"batch-0"[..],
            b"batch-1",
            b"batch-2",
            b"batch-0",
            b"batch-1"
        ]
    );
    assert_eq!(
        msgs.iter().map(|m| m.flag).collect::<Vec<_>>(),
        vec![0, 1, 2, 0, 1]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn long_poll_is_answered_when_a_message_arrives() {
    let dir = tempfile::tempdir().unwrap();
    let node = Node::start(dir.path()).unwrap();
    let b = connect(node.broker).await;
    assert_eq!(
        send(&b, "Polling", 0, "TagA", "first", b"one").await.code,
        0
    );

    let puller = connect(node.broker).await;
    let mut cmd = req(RequestCode::PullMessage);
    pull_header("Polling", 0, 1, "*", 15_000).write_to(&mut cmd);
    let started = Instant::now();
    let parked = tokio::spawn(async move { puller.invoke(cmd, Duration::from_secs(30)).await });
    // The parked pull must not have been answered yet.
    tokio::task::yield_now().await;
    assert!(!parked.is_finished());
    assert_eq!(
        send(&b, "Polling", 0, "TagA", "second", b"two").await.code,
        0
    );
    let resp = parked.await.unwrap().unwrap();
    assert_eq!(resp.code, 0, "{:?}", resp.remark);
    let msgs = MessageExt::decode_all(resp.body.clone()).unwrap();
    assert_eq!(msgs.len(), 1);
    assert_eq!(msgs[0].body.as_ref(), b"two");
    assert_eq!(msgs[0].queue_offset, 1);
    // Answered by the arrival, not by the 15 s suspend timeout.
    assert!(started.elapsed() < Duration::from_secs(14));

    // A parked pull with nothing arriving is answered PULL_NOT_FOUND at its deadline.
    let mut cmd = req(RequestCode::PullMessage);
    pull_header("Polling", 0, 2, "*", 300).write_to(&mut cmd);
    let resp = b.invoke(cmd, T).await.unwrap();
    assert_eq!(resp.code, ResponseCode::PullNotFound.to_i32());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn consumer_offsets_and_registry_follow_the_reference() {
    let dir = tempfile::tempdir().unwrap();
    let node = Node::start(dir.path()).unwrap();
    let b = connect(node.broker).await;

    // No offset yet on an empty queue → QUERY_NOT_FOUND.
    let query = |topic: &str| {
        let mut q = req(RequestCode::QueryConsumerOffset);
        QueryConsumerOffsetRequestHeader {
            consumer_group: "cg1".into(),
            topic: topic.into(),
            queue_id: 0,
            set_zero_if_not_found: None,
        }
        .write_to(&mut q);
        q
    };
    stratus_tests::create_topic(node.broker, "Offsets", 8)
        .await
        .unwrap();
    assert_eq!(route(&b, "Offsets").await.code, 0);
    assert_eq!(
        b.invoke(query("Offsets"), T).await.unwrap().code,
        ResponseCode::QueryNotFound.to_i32()
    );
    // A young queue answers 0.
    assert_eq!(send(&b, "Offsets", 0, "", "k", b"x").await.code, 0);
    let r = b.invoke(query("Offsets"), T).await.unwrap();
    assert_eq!((r.code, read_offset_response(&r).unwrap()), (0, 0));
    // UPDATE then QUERY.
    let mut u = req(RequestCode::UpdateConsumerOffset);
    UpdateConsumerOffsetRequestHeader {
        consumer_group: "cg1".into(),
        topic: "Offsets".into(),
        queue_id: 0,
        commit_offset: 1,
    }
    .write_to(&mut u);
    assert_eq!(b.invoke(u, T).await.unwrap().code, 0);
    let r = b.invoke(query("Offsets"), T).await.unwrap();
    assert_eq!(read_offset_response(&r).unwrap(), 1);

    // Heartbeats register consumers; a second member triggers NOTIFY_CONSUMER_IDS_CHANGED
    // to the first.
    let c1 = connect(node.broker).await;
    let mut notifications = c1.server_requests().expect("server request queue");
    let hb = |client: &str| {
        let mut cmd = req(RequestCode::HeartBeat);
        cmd.body = Bytes::from(format!(
            r#"{{"clientID":"{client}","producerDataSet":[],"consumerDataSet":[{{"groupName":"cg2","consumeType":"CONSUME_PASSIVELY","messageModel":"CLUSTERING","consumeFromWhere":"CONSUME_FROM_FIRST_OFFSET","unitMode":false,"subscriptionDataSet":[{{"topic":"Offsets","subString":"*","tagsSet":[],"codeSet":[],"subVersion":1,"expressionType":"TAG","classFilterMode":false}}]}}]}}"#
        ));
        cmd
    };
    assert_eq!(c1.invoke(hb("client-1"), T).await.unwrap().code, 0);
    // The reference notifies every member, the new one included, when a channel joins.
    let n = tokio::time::timeout(T, notifications.recv())
        .await
        .expect("notify on own join")
        .expect("notify");
    assert_eq!(n.code, RequestCode::NotifyConsumerIdsChanged.to_i32());
    // A repeated heartbeat with the same subscriptions changes nothing and notifies nobody.
    assert_eq!(c1.invoke(hb("client-1"), T).await.unwrap().code, 0);
    let c2 = connect(node.broker).await;
    assert_eq!(c2.invoke(hb("client-2"), T).await.unwrap().code, 0);
    let n = tokio::time::timeout(T, notifications.recv())
        .await
        .expect("notify in time")
        .expect("notify");
    assert_eq!(n.code, RequestCode::NotifyConsumerIdsChanged.to_i32());
    assert_eq!(
        n.ext_fields.get("consumerGroup").map(String::as_str),
        Some("cg2")
    );
    assert!(
        notifications.try_recv().is_err(),
        "exactly one notification per change"
    );

    let mut l = req(RequestCode::GetConsumerListByGroup);
    l.put_ext("consumerGroup", "cg2");
    let r = b.invoke(l, T).await.unwrap();
    let ids: ConsumerIdList = serde_json::from_slice(&r.body).unwrap();
    assert_eq!(
        ids.consumer_id_list,
        vec!["client-1".to_owned(), "client-2".to_owned()]
    );
    // The retry topic of the group was created and is routable.
    assert_eq!(route(&b, "%RETRY%cg2").await.code, 0);

    // Closing a member's connection removes it and notifies the rest.
    drop(c2);
    let n = tokio::time::timeout(T, notifications.recv())
        .await
        .expect("notify on leave")
        .expect("notify");
    assert_eq!(n.code, RequestCode::NotifyConsumerIdsChanged.to_i32());
    let mut l = req(RequestCode::GetConsumerListByGroup);
    l.put_ext("consumerGroup", "cg2");
    let ids: ConsumerIdList = serde_json::from_slice(&b.invoke(l, T).await.unwrap().body).unwrap();
    assert_eq!(ids.consumer_id_list, vec!["client-1".to_owned()]);
    let mut l = req(RequestCode::GetConsumerListByGroup);
    l.put_ext("consumerGroup", "nobody");
    assert_eq!(
        b.invoke(l, T).await.unwrap().code,
        ResponseCode::SystemError.to_i32()
    );
}

async fn restart_keeps_everything(kill9: bool) {
    let dir = tempfile::tempdir().unwrap();
    let mut node = Node::start(dir.path()).unwrap();
    let b = connect(node.broker).await;
    let mut acked = Vec::new();
    for i in 0..40 {
        let body = format!("durable-{i}-").repeat(10 + i);
        let resp = send(
            &b,
            "Restart",
            i as i32 % 3,
            "TagA",
            &format!("r{i}"),
            body.as_bytes(),
        )
        .await;
        assert_eq!(resp.code, 0);
        acked.push(SendMessageResponseHeader::from_command(&resp).unwrap());
    }
    let mut u = req(RequestCode::UpdateConsumerOffset);
    UpdateConsumerOffsetRequestHeader {
        consumer_group: "cgr".into(),
        topic: "Restart".into(),
        queue_id: 1,
        commit_offset: 7,
    }
    .write_to(&mut u);
    assert_eq!(b.invoke(u, T).await.unwrap().code, 0);
    let before: Vec<Vec<MessageExt>> = futures_all(&b, "Restart", 3).await;
    drop(b);
    if kill9 {
        node.kill9().unwrap();
    } else {
        assert!(
            node.terminate().unwrap(),
            "graceful exit; log:\n{}",
            node.log_text()
        );
    }
    node.restart().unwrap();
    let b = connect(node.broker).await;
    let after = futures_all(&b, "Restart", 3).await;
    assert_eq!(
        before, after,
        "every acknowledged message is back byte for byte"
    );
    assert_eq!(after.iter().map(Vec::len).sum::<usize>(), 40);
    for a in &acked {
        let m = &after[a.queue_id as usize][a.queue_offset as usize];
        let (_, handle) = decode_offset_msg_id(&a.msg_id).unwrap();
        assert_eq!(m.commit_log_offset, handle, "same id after restart");
    }
    let mut q = req(RequestCode::QueryConsumerOffset);
    QueryConsumerOffsetRequestHeader {
        consumer_group: "cgr".into(),
        topic: "Restart".into(),
        queue_id: 1,
        set_zero_if_not_found: None,
    }
    .write_to(&mut q);
    assert_eq!(
        read_offset_response(&b.invoke(q, T).await.unwrap()).unwrap(),
        7
    );
    // New sends continue the offsets.
    let resp = send(&b, "Restart", 0, "TagA", "after", b"after").await;
    assert_eq!(
        SendMessageResponseHeader::from_command(&resp)
            .unwrap()
            .queue_offset,
        14
    );
}

async fn futures_all(b: &RemotingClient, topic: &str, queues: i32) -> Vec<Vec<MessageExt>> {
    let mut out = Vec::new();
    for q in 0..queues {
        out.push(pull_all(b, topic, q).await);
    }
    out
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn restart_after_sigterm_keeps_every_acknowledged_message() {
    restart_keeps_everything(false).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn restart_after_kill_9_keeps_every_acknowledged_message() {
    restart_keeps_everything(true).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn bad_input_gets_rocketmq_codes_and_never_takes_the_node_down() {
    let dir = tempfile::tempdir().unwrap();
    let node = Node::start(dir.path()).unwrap();
    let b = connect(node.broker).await;

    // Unknown request code.
    let r = b
        .invoke(RemotingCommand::request(9999, 0), T)
        .await
        .unwrap();
    assert_eq!(r.code, ResponseCode::RequestCodeNotSupported.to_i32());
    assert!(r.remark.unwrap_or_default().contains("9999"));
    // Missing mandatory header field.
    let mut cmd = req(RequestCode::SendMessageV2);
    cmd.put_ext("b", "T");
    let r = b.invoke(cmd, T).await.unwrap();
    assert_eq!(r.code, ResponseCode::SystemError.to_i32());
    assert!(r.remark.unwrap_or_default().contains("<a>"));
    // Non-numeric header value.
    let mut cmd = req(RequestCode::SendMessageV2);
    send_header("Bad", 0, "", "").write_v2(&mut cmd);
    cmd.put_ext("e", "zero");
    assert_eq!(
        b.invoke(cmd, T).await.unwrap().code,
        ResponseCode::SystemError.to_i32()
    );
    // Bad topic name → INVALID_PARAMETER; reserved topic → NO_PERMISSION.
    assert_eq!(
        send(&b, "bad/topic", 0, "", "", b"x").await.code,
        ResponseCode::InvalidParameter.to_i32()
    );
    assert_eq!(
        send(&b, "SCHEDULE_TOPIC_XXXX", 0, "", "", b"x").await.code,
        ResponseCode::NoPermission.to_i32()
    );
    // Queue id out of range.
    assert_eq!(
        send(&b, "Bad", 99, "", "", b"x").await.code,
        ResponseCode::InvalidParameter.to_i32()
    );
    // Body above 4 MiB → MESSAGE_ILLEGAL.
    let big = vec![b'z'; 4 * 1024 * 1024 + 1];
    assert_eq!(
        send(&b, "Bad", 0, "", "", &big).await.code,
        ResponseCode::MessageIllegal.to_i32()
    );
    // A malformed batch body → MESSAGE_ILLEGAL.
    let mut cmd = req(RequestCode::SendBatchMessage);
    let mut h = send_header("Bad", 0, "", "");
    h.batch = true;
    h.write_v2(&mut cmd);
    cmd.body = Bytes::from_static(&[0, 0, 0, 99, 1, 2, 3]);
    assert_eq!(
        b.invoke(cmd, T).await.unwrap().code,
        ResponseCode::MessageIllegal.to_i32()
    );
    // Malformed heartbeat JSON body → SYSTEM_ERROR.
    let mut cmd = req(RequestCode::HeartBeat);
    cmd.body = Bytes::from_static(b"{not json");
    assert_eq!(
        b.invoke(cmd, T).await.unwrap().code,
        ResponseCode::SystemError.to_i32()
    );
    // One-way requests are not answered, but are applied.
    let mut u = req(RequestCode::UpdateConsumerOffset);
    UpdateConsumerOffsetRequestHeader {
        consumer_group: "ow".into(),
        topic: "Bad".into(),
        queue_id: 0,
        commit_offset: 3,
    }
    .write_to(&mut u);
    b.invoke_oneway(u).await.unwrap();

    // Oversized frame: that connection is closed, others keep working.
    let raw = connect(node.broker).await;
    let mut frame = BytesMut::new();
    frame.put_i32(64 * 1024 * 1024);
    frame.put_i32(10);
    raw.send_raw(frame.freeze()).await.unwrap();
    assert!(
        raw.invoke(
            req(RequestCode::GetBrokerClusterInfo),
            Duration::from_secs(3)
        )
        .await
        .is_err()
    );
    // Negative length and a garbage header likewise.
    for junk in [
        &[0xFFu8, 0xFF, 0xFF, 0xF0, 0, 0, 0, 0][..],
        b"\x00\x00\x00\x0c\x00\x00\x00\x04{{{{bodyx",
    ] {
        let raw = connect(node.broker).await;
        raw.send_raw(Bytes::copy_from_slice(junk)).await.unwrap();
        assert!(
            raw.invoke(
                req(RequestCode::GetBrokerClusterInfo),
                Duration::from_secs(3)
            )
            .await
            .is_err()
        );
    }
    // A truncated frame followed by a close does not disturb anything.
    let raw = connect(node.broker).await;
    raw.send_raw(Bytes::from_static(&[0, 0, 1, 0, 0, 0, 0, 20, b'{']))
        .await
        .unwrap();
    drop(raw);

    // The node still serves: cluster info, and the one-way offset was stored.
    let r = b
        .invoke(req(RequestCode::GetBrokerClusterInfo), T)
        .await
        .unwrap();
    assert_eq!(r.code, 0);
    // The one-way request is processed concurrently with later ones: poll, bounded.
    let deadline = Instant::now() + T;
    loop {
        let mut q = req(RequestCode::QueryConsumerOffset);
        QueryConsumerOffsetRequestHeader {
            consumer_group: "ow".into(),
            topic: "Bad".into(),
            queue_id: 0,
            set_zero_if_not_found: Some(false),
        }
        .write_to(&mut q);
        let r = b.invoke(q, T).await.unwrap();
        if r.code == 0 {
            assert_eq!(read_offset_response(&r).unwrap(), 3);
            break;
        }
        assert!(
            Instant::now() < deadline,
            "one-way offset update never applied"
        );
        tokio::time::sleep(Duration::from_millis(20)).await;
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn store_time_queries_find_offsets() {
    let dir = tempfile::tempdir().unwrap();
    let node = Node::start(dir.path()).unwrap();
    let b = connect(node.broker).await;
    let mut times = Vec::new();
    for i in 0..3 {
        assert_eq!(
            send(&b, "Times", 0, "", &format!("t{i}"), b"x").await.code,
            0
        );
        let msgs = pull_all(&b, "Times", 0).await;
        times.push(msgs[i].store_timestamp);
        // Distinct store times (ms) between the sends.
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
    let mut e = req(RequestCode::GetEarliestMsgStoretime);
    QueueRequestHeader {
        topic: "Times".into(),
        queue_id: 0,
    }
    .write_to(&mut e);
    let r = b.invoke(e, T).await.unwrap();
    assert_eq!(r.code, 0);
    assert_eq!(r.ext_fields["timestamp"].parse::<i64>().unwrap(), times[0]);
    let search = |ts: i64| {
        let mut q = req(RequestCode::SearchOffsetByTimestamp);
        q.put_ext("topic", "Times");
        q.put_ext("queueId", 0);
        q.put_ext("timestamp", ts);
        q
    };
    // LOWER bound: first offset whose store time ≥ ts; past the end → max offset.
    assert_eq!(
        read_offset_response(&b.invoke(search(times[1]), T).await.unwrap()).unwrap(),
        1
    );
    assert_eq!(
        read_offset_response(&b.invoke(search(times[0] - 1000), T).await.unwrap()).unwrap(),
        0
    );
    assert_eq!(
        read_offset_response(&b.invoke(search(times[2] + 1000), T).await.unwrap()).unwrap(),
        3
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_auto_create_unknown_topics_do_not_exist_until_created() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("stratus.toml");
    std::fs::write(&cfg, "[broker]\nauto_create_topic = false\n").unwrap();
    let node = Node::start_with(
        &dir.path().join("data"),
        &["--config", cfg.to_str().unwrap()],
    )
    .unwrap();
    let c = connect(node.namesrv).await;
    assert_eq!(
        route(&c, "Manual").await.code,
        ResponseCode::TopicNotExist.to_i32()
    );
    assert_eq!(
        route(&c, "TBW102").await.code,
        ResponseCode::TopicNotExist.to_i32()
    );
    let b = connect(node.broker).await;
    assert_eq!(
        send(&b, "Manual", 0, "", "k", b"x").await.code,
        ResponseCode::TopicNotExist.to_i32()
    );
    // UPDATE_AND_CREATE_TOPIC makes it, with the asked queue counts.
    let mut cmd = req(RequestCode::UpdateAndCreateTopic);
    for (k, v) in [
        ("topic", "Manual"),
        ("defaultTopic", "TBW102"),
        ("readQueueNums", "2"),
        ("writeQueueNums", "2"),
        ("perm", "6"),
        ("topicFilterType", "SINGLE_TAG"),
        ("order", "false"),
    ] {
        cmd.put_ext(k, v);
    }
    assert_eq!(b.invoke(cmd, T).await.unwrap().code, 0);
    let r = route(&c, "Manual").await;
    assert_eq!(r.code, 0);
    let data: TopicRouteData = serde_json::from_slice(&r.body).unwrap();
    assert_eq!(
        (
            data.queue_datas[0].read_queue_nums,
            data.queue_datas[0].perm
        ),
        (2, 6)
    );
    assert_eq!(send(&b, "Manual", 1, "", "k", b"x").await.code, 0);
    assert_eq!(
        send(&b, "Manual", 2, "", "k", b"x").await.code,
        ResponseCode::InvalidParameter.to_i32()
    );
    // The topic list names it; a system-topic name cannot be created.
    let list = c
        .invoke(req(RequestCode::GetAllTopicListFromNameserver), T)
        .await
        .unwrap();
    assert!(
        std::str::from_utf8(&list.body)
            .unwrap()
            .contains("\"Manual\"")
    );
    let mut cmd = req(RequestCode::UpdateAndCreateTopic);
    for (k, v) in [
        ("topic", "SCHEDULE_TOPIC_XXXX"),
        ("defaultTopic", "TBW102"),
        ("readQueueNums", "2"),
        ("writeQueueNums", "2"),
        ("perm", "6"),
        ("topicFilterType", "SINGLE_TAG"),
        ("order", "false"),
    ] {
        cmd.put_ext(k, v);
    }
    assert_eq!(
        b.invoke(cmd, T).await.unwrap().code,
        ResponseCode::InvalidParameter.to_i32()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sql92_subscriptions_are_checked_and_filter_by_properties() {
    let dir = tempfile::tempdir().unwrap();
    let node = Node::start(dir.path()).unwrap();
    let b = connect(node.broker).await;
    let check = |kind: &str, expr: &str| {
        let mut cmd = req(RequestCode::CheckClientConfig);
        cmd.body = Bytes::from(format!(
            r#"{{"clientId":"c1","group":"g","subscriptionData":{{"topic":"T","subString":"{expr}","expressionType":"{kind}","subVersion":1}}}}"#
        ));
        cmd
    };
    assert_eq!(
        b.invoke(check("TAG", "TagA || TagB"), T)
            .await
            .unwrap()
            .code,
        0
    );
    assert_eq!(
        b.invoke(check("SQL92", "a > 1 AND b IS NOT NULL"), T)
            .await
            .unwrap()
            .code,
        0
    );
    let r = b.invoke(check("SQL92", "a >"), T).await.unwrap();
    assert_eq!(r.code, ResponseCode::SubscriptionParseFailed.to_i32());

    // A mixed stream: a = 0..10, b set on even ones.
    for i in 0..10 {
        let mut p = Properties::default();
        p.insert(keys::TAGS, if i % 3 == 0 { "TagA" } else { "TagB" });
        p.insert("a", &i.to_string());
        if i % 2 == 0 {
            p.insert("b", "x");
        }
        let mut cmd = req(RequestCode::SendMessageV2);
        let mut h = send_header("SqlTopic", 0, "", &format!("k{i}"));
        h.properties = Some(p.encode());
        h.write_v2(&mut cmd);
        cmd.body = Bytes::from(format!("m{i}"));
        assert_eq!(b.invoke(cmd, T).await.unwrap().code, 0);
    }
    let sql_pull = |expr: &str, offset: i64| {
        let mut cmd = req(RequestCode::PullMessage);
        let mut h = pull_header("SqlTopic", 0, offset, expr, 0);
        h.expression_type = Some("SQL92".into());
        h.write_to(&mut cmd);
        cmd
    };
    let mut got = Vec::new();
    let mut offset = 0;
    loop {
        let r = b
            .invoke(sql_pull("a BETWEEN 3 AND 8 AND b IS NOT NULL", offset), T)
            .await
            .unwrap();
        let h = PullMessageResponseHeader::from_command(&r).unwrap();
        if r.code == 0 {
            got.extend(
                MessageExt::decode_all(r.body.clone())
                    .unwrap()
                    .into_iter()
                    .map(|m| m.body),
            );
        } else if r.code != ResponseCode::PullRetryImmediately.to_i32() {
            break;
        }
        offset = h.next_begin_offset;
    }
    assert_eq!(
        got,
        vec![Bytes::from("m4"), Bytes::from("m6"), Bytes::from("m8")]
    );
    // Nothing matches → PULL_RETRY_IMMEDIATELY past every examined entry.
    let r = b.invoke(sql_pull("a > 100", 0), T).await.unwrap();
    assert_eq!(r.code, ResponseCode::PullRetryImmediately.to_i32());
    assert_eq!(
        PullMessageResponseHeader::from_command(&r)
            .unwrap()
            .next_begin_offset,
        10
    );
    // A broken expression in a pull → SUBSCRIPTION_PARSE_FAILED.
    assert_eq!(
        b.invoke(sql_pull("a >", 0), T).await.unwrap().code,
        ResponseCode::SubscriptionParseFailed.to_i32()
    );
    // A pull for a group that never sent a heartbeat and carries no subscription.
    let mut cmd = req(RequestCode::PullMessage);
    let mut h = pull_header("SqlTopic", 0, 0, "*", 0);
    h.sys_flag = 0;
    h.write_to(&mut cmd);
    assert_eq!(
        b.invoke(cmd, T).await.unwrap().code,
        ResponseCode::SubscriptionNotExist.to_i32()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn orderly_queue_locks_are_exclusive_and_expire() {
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("stratus.toml");
    std::fs::write(&cfg, "[broker]\nqueue_lock_expiry = \"1s\"\n").unwrap();
    let node = Node::start_with(
        &dir.path().join("data"),
        &["--config", cfg.to_str().unwrap()],
    )
    .unwrap();
    let b = connect(node.broker).await;
    let lock = |client: &str, queues: &[i32], code: RequestCode| {
        let mqs: Vec<String> = queues
            .iter()
            .map(|q| format!(r#"{{"brokerName":"broker-0","queueId":{q},"topic":"Ordered"}}"#))
            .collect();
        let mut cmd = req(code);
        // C++ form: no onlyThisBroker, trailing newline.
        cmd.body = Bytes::from(format!(
            "{{\"clientId\":\"{client}\",\"consumerGroup\":\"og\",\"mqSet\":[{}]}}\n",
            mqs.join(",")
        ));
        cmd
    };
    let granted = |r: RemotingCommand| -> Vec<i64> {
        let v: serde_json::Value = serde_json::from_slice(&r.body).unwrap();
        let mut q: Vec<i64> = v["lockOKMQSet"]
            .as_array()
            .unwrap()
            .iter()
            .map(|m| m["queueId"].as_i64().unwrap())
            .collect();
        q.sort_unstable();
        q
    };
    let r = b
        .invoke(lock("a", &[0, 1], RequestCode::LockBatchMq), T)
        .await
        .unwrap();
    assert_eq!(granted(r), vec![0, 1]);
    let r = b
        .invoke(lock("b", &[1, 2], RequestCode::LockBatchMq), T)
        .await
        .unwrap();
    assert_eq!(granted(r), vec![2], "a holds queue 1");
    // Queues of a broker this node does not own are never granted.
    let mut cmd = req(RequestCode::LockBatchMq);
    cmd.body = Bytes::from_static(br#"{"clientId":"a","consumerGroup":"og","onlyThisBroker":false,"mqSet":[{"brokerName":"broker-9","queueId":0,"topic":"Ordered"}]}"#);
    assert!(granted(b.invoke(cmd, T).await.unwrap()).is_empty());
    // a unlocks queue 1; b takes it.
    assert_eq!(
        b.invoke(lock("a", &[1], RequestCode::UnlockBatchMq), T)
            .await
            .unwrap()
            .code,
        0
    );
    assert_eq!(
        granted(
            b.invoke(lock("b", &[1], RequestCode::LockBatchMq), T)
                .await
                .unwrap()
        ),
        vec![1]
    );
    // a's lock on queue 0 expires when not renewed.
    tokio::time::sleep(Duration::from_millis(1300)).await;
    assert_eq!(
        granted(
            b.invoke(lock("b", &[0], RequestCode::LockBatchMq), T)
                .await
                .unwrap()
        ),
        vec![0]
    );
}

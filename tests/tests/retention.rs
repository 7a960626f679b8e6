//! Retention and cleanup against a running `stratus` process with short settings: sections
//! older than `retention.time` leave meta and the object store directory and the queue's min
//! offset moves (a topic's `retention_hours` keeps its own); `retention.shard_bytes` drops
//! the oldest sections; a pull below the new min gets PULL_OFFSET_MOVED (OFFSET_TOO_SMALL)
//! with the new min, from where a consumer continues; an object no section references and
//! older than `orphan_grace` is deleted, a committed or younger one never; nothing newer
//! than the retention time is touched.

#![allow(clippy::unwrap_used, clippy::disallowed_methods)] // test code: failures should panic; real timers are fine

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant, SystemTime};

use bytes::Bytes;
use stratus_compat::client::RemotingClient;
use stratus_compat::command::RemotingCommand;
use stratus_compat::message::record::MessageExt;
use stratus_compat::request::offset::{
    QueryConsumerOffsetRequestHeader, QueueRequestHeader, UpdateConsumerOffsetRequestHeader,
    read_offset_response,
};
use stratus_compat::request::pull::{
    PULL_FLAG_SUBSCRIPTION, PullMessageRequestHeader, PullMessageResponseHeader,
};
use stratus_compat::request::send::SendMessageRequestHeader;
use stratus_compat::types::{QueueId, QueueOffset, Topic};
use stratus_compat::{RequestCode, ResponseCode};
use stratus_meta::{QueueKey, ShardId, TopicConfig};
use stratus_tests::{Node, scrape_metrics};

const T: Duration = Duration::from_secs(10);

fn start(dir: &Path, retention: &str) -> Node {
    let cfg = dir.join("stratus.toml");
    std::fs::write(&cfg, format!("[retention]\n{retention}\n")).unwrap();
    Node::start_with(&dir.join("data"), &["--config", cfg.to_str().unwrap()]).unwrap()
}

fn meta_url(dir: &Path) -> String {
    format!("embedded://{}", dir.join("data").join("meta.db").display())
}

async fn send(c: &RemotingClient, topic: &str, body: &[u8]) {
    let mut cmd = RemotingCommand::request(RequestCode::SendMessageV2.to_i32(), 0);
    SendMessageRequestHeader {
        producer_group: "pg".into(),
        topic: topic.into(),
        default_topic: "TBW102".into(),
        default_topic_queue_nums: 1,
        queue_id: 0,
        born_timestamp: 1_700_000_000_000,
        broker_name: Some("broker-0".into()),
        ..Default::default()
    }
    .write_v2(&mut cmd);
    cmd.body = Bytes::copy_from_slice(body);
    let r = c.invoke(cmd, T).await.unwrap();
    assert_eq!(r.code, 0, "send to {topic}: {:?}", r.remark);
}

async fn pull(
    c: &RemotingClient,
    topic: &str,
    offset: i64,
) -> (RemotingCommand, PullMessageResponseHeader) {
    let mut cmd = RemotingCommand::request(RequestCode::PullMessage.to_i32(), 0);
    PullMessageRequestHeader {
        consumer_group: "cg".into(),
        topic: topic.into(),
        queue_id: 0,
        queue_offset: offset,
        max_msg_nums: 32,
        sys_flag: PULL_FLAG_SUBSCRIPTION,
        subscription: Some("*".into()),
        expression_type: Some("TAG".into()),
        broker_name: Some("broker-0".into()),
        ..Default::default()
    }
    .write_to(&mut cmd);
    let resp = c.invoke(cmd, T).await.unwrap();
    let h = PullMessageResponseHeader::from_command(&resp).unwrap();
    (resp, h)
}

/// Bodies from `offset` to the queue's end.
async fn read_from(c: &RemotingClient, topic: &str, mut offset: i64) -> Vec<Bytes> {
    let mut out = Vec::new();
    loop {
        let (resp, h) = pull(c, topic, offset).await;
        if resp.code == ResponseCode::PullNotFound.to_i32() {
            return out;
        }
        assert_eq!(resp.code, 0, "pull {topic} at {offset}: {:?}", resp.remark);
        out.extend(
            MessageExt::decode_all(resp.body.clone())
                .unwrap()
                .into_iter()
                .map(|m| m.body),
        );
        offset = h.next_begin_offset;
    }
}

async fn offset_of(c: &RemotingClient, code: RequestCode, topic: &str) -> i64 {
    let mut cmd = RemotingCommand::request(code.to_i32(), 0);
    QueueRequestHeader {
        topic: topic.into(),
        queue_id: 0,
    }
    .write_to(&mut cmd);
    let r = c.invoke(cmd, T).await.unwrap();
    assert_eq!(r.code, 0, "{:?}", r.remark);
    read_offset_response(&r).unwrap()
}

/// Waits until the queue's min offset reaches `want`.
async fn wait_min(c: &RemotingClient, topic: &str, want: i64) {
    let deadline = Instant::now() + Duration::from_secs(15);
    loop {
        let min = offset_of(c, RequestCode::GetMinOffset, topic).await;
        if min >= want {
            assert_eq!(min, want, "min offset of {topic} went past {want}");
            return;
        }
        assert!(
            Instant::now() < deadline,
            "min offset of {topic} stuck at {min}"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// Segment object files under the node's object store directory, as keys.
fn objects(dir: &Path) -> BTreeSet<String> {
    fn walk(root: &Path, d: &Path, out: &mut BTreeSet<String>) {
        for e in std::fs::read_dir(d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                walk(root, &p, out);
            } else if p.extension().is_some_and(|x| x == "seg") {
                out.insert(p.strip_prefix(root).unwrap().display().to_string());
            }
        }
    }
    let root = dir.join("data").join("objects");
    let mut out = BTreeSet::new();
    if root.join("segments").exists() {
        walk(&root, &root.join("segments"), &mut out);
    }
    out
}

fn object_path(dir: &Path, key: &str) -> PathBuf {
    dir.join("data").join("objects").join(key)
}

/// Sets a file's modification time `age` in the past.
fn age_file(path: &Path, age: Duration) {
    let f = std::fs::File::options().write(true).open(path).unwrap();
    f.set_modified(SystemTime::now() - age).unwrap();
}

fn queue(topic: &str) -> QueueKey {
    QueueKey {
        shard: ShardId(0),
        topic: Topic::new(topic),
        queue_id: QueueId(0),
    }
}

fn body(tag: &str, i: usize, size: usize) -> Vec<u8> {
    let mut b = format!("{tag}-{i}-").into_bytes();
    b.resize(size, b'.');
    b
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn old_sections_leave_meta_and_the_store_and_pulls_below_the_min_are_moved() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    // A topic that keeps its messages for 1000 h, whatever the node's default.
    std::fs::create_dir_all(dir.join("data")).unwrap();
    let meta = stratus_meta::open(&meta_url(dir)).await.unwrap();
    meta.put_topic(&TopicConfig {
        topic: Topic::new("KeepTopic"),
        read_queue_nums: 1,
        write_queue_nums: 1,
        perm: 6,
        topic_filter_type: "SINGLE_TAG".into(),
        topic_sys_flag: 0,
        order: false,
        retention_hours: Some(1000),
    })
    .await
    .unwrap();
    meta.close().await;

    let mut node = start(
        dir,
        "time = \"6s\"\ninterval = \"200ms\"\norphan_scan_interval = \"1h\"",
    );
    let c = RemotingClient::connect(node.broker).await.unwrap();
    let kept: Vec<Bytes> = (0..2).map(|i| Bytes::from(body("keep", i, 300))).collect();
    for b in &kept {
        send(&c, "KeepTopic", b).await;
    }
    let keep_objects = objects(dir);
    let old: Vec<Bytes> = (0..3).map(|i| Bytes::from(body("old", i, 300))).collect();
    for b in &old {
        send(&c, "AgeTopic", b).await;
    }
    let old_objects: BTreeSet<String> = objects(dir).difference(&keep_objects).cloned().collect();
    assert_eq!(old_objects.len(), 3, "one segment per acknowledged send");
    assert_eq!(
        offset_of(&c, RequestCode::GetMinOffset, "AgeTopic").await,
        0
    );
    // A consumer that read one message and committed offset 1.
    let mut cmd = RemotingCommand::request(RequestCode::UpdateConsumerOffset.to_i32(), 0);
    UpdateConsumerOffsetRequestHeader {
        consumer_group: "cg".into(),
        topic: "AgeTopic".into(),
        queue_id: 0,
        commit_offset: 1,
    }
    .write_to(&mut cmd);
    assert_eq!(c.invoke(cmd, T).await.unwrap().code, 0);

    // Past the retention time the old sections go; fresh ones sent now stay (for the next
    // 6 s, ample for the checks below).
    tokio::time::sleep(Duration::from_millis(6200)).await;
    let fresh: Vec<Bytes> = (0..2).map(|i| Bytes::from(body("fresh", i, 300))).collect();
    for b in &fresh {
        send(&c, "AgeTopic", b).await;
    }
    wait_min(&c, "AgeTopic", 3).await;
    assert_eq!(
        offset_of(&c, RequestCode::GetMaxOffset, "AgeTopic").await,
        5
    );
    let deadline = Instant::now() + T;
    while !objects(dir).is_disjoint(&old_objects) {
        assert!(Instant::now() < deadline, "old objects still in the store");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    assert_eq!(
        read_from(&c, "AgeTopic", 3).await,
        fresh,
        "newer than retention: kept"
    );
    assert_eq!(
        read_from(&c, "KeepTopic", 0).await,
        kept,
        "topic retention_hours wins"
    );
    assert!(keep_objects.is_subset(&objects(dir)));

    // Below the new min: PULL_OFFSET_MOVED, OFFSET_TOO_SMALL, next = min (the reference's
    // status table), so the consumer moves its offset there and continues.
    let (resp, h) = pull(&c, "AgeTopic", 1).await;
    assert_eq!(
        resp.code,
        ResponseCode::PullOffsetMoved.to_i32(),
        "{:?}",
        resp.remark
    );
    assert_eq!(resp.remark.as_deref(), Some("OFFSET_TOO_SMALL"));
    assert_eq!((h.next_begin_offset, h.min_offset, h.max_offset), (3, 3, 5));
    assert!(resp.body.is_empty());
    let mut cmd = RemotingCommand::request(RequestCode::UpdateConsumerOffset.to_i32(), 0);
    UpdateConsumerOffsetRequestHeader {
        consumer_group: "cg".into(),
        topic: "AgeTopic".into(),
        queue_id: 0,
        commit_offset: h.next_begin_offset,
    }
    .write_to(&mut cmd);
    assert_eq!(c.invoke(cmd, T).await.unwrap().code, 0);
    let mut cmd = RemotingCommand::request(RequestCode::QueryConsumerOffset.to_i32(), 0);
    QueryConsumerOffsetRequestHeader {
        consumer_group: "cg".into(),
        topic: "AgeTopic".into(),
        queue_id: 0,
        set_zero_if_not_found: None,
    }
    .write_to(&mut cmd);
    let resumed = read_offset_response(&c.invoke(cmd, T).await.unwrap()).unwrap();
    assert_eq!(resumed, 3);
    assert_eq!(read_from(&c, "AgeTopic", resumed).await, fresh);

    let text = scrape_metrics(node.metrics).unwrap();
    assert!(
        text.contains("stratus_gateway_objects_deleted_total{reason=\"retention\"} 3"),
        "{text}"
    );
    drop(c);

    // Meta agrees: the queue starts at 3 and nothing references the old objects.
    assert!(node.terminate().unwrap());
    let meta = stratus_meta::open(&meta_url(dir)).await.unwrap();
    let range = meta.queue_range(&queue("AgeTopic")).await.unwrap();
    assert_eq!(
        (range.min_offset, range.max_offset),
        (QueueOffset(3), QueueOffset(5))
    );
    let sections = meta
        .queue_segments(&queue("AgeTopic"), QueueOffset(0), 100)
        .await
        .unwrap();
    assert_eq!(sections.len(), 2);
    assert_eq!(sections[0].first_offset, QueueOffset(3));
    let old_keys: Vec<String> = old_objects.iter().cloned().collect();
    assert_eq!(
        meta.unreferenced_objects(&old_keys).await.unwrap(),
        old_keys
    );
    meta.close().await;

    // A restarted node loads the moved min from meta (with a long retention now, so the
    // fresh messages cannot age out meanwhile).
    std::fs::write(dir.join("stratus.toml"), "[retention]\ntime = \"1h\"\n").unwrap();
    node.restart().unwrap();
    let c = RemotingClient::connect(node.broker).await.unwrap();
    assert_eq!(
        offset_of(&c, RequestCode::GetMinOffset, "AgeTopic").await,
        3
    );
    let (resp, h) = pull(&c, "AgeTopic", 0).await;
    assert_eq!(resp.code, ResponseCode::PullOffsetMoved.to_i32());
    assert_eq!(h.next_begin_offset, 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_shard_over_its_byte_limit_drops_its_oldest_sections() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    // Each message is one section of a little over 1 KiB: 3 KiB keeps the newest two.
    let node = start(dir, "shard_bytes = \"3KiB\"\ninterval = \"200ms\"");
    let c = RemotingClient::connect(node.broker).await.unwrap();
    let mut sent = Vec::new();
    let mut keys = Vec::new();
    for i in 0..6 {
        let before = objects(dir);
        let b = Bytes::from(body("sized", i, 1024));
        send(&c, "SizeTopic", &b).await;
        let new: Vec<String> = objects(dir).difference(&before).cloned().collect();
        keys.push(new);
        sent.push(b);
    }
    wait_min(&c, "SizeTopic", 4).await;
    assert_eq!(read_from(&c, "SizeTopic", 4).await, sent[4..].to_vec());
    let deadline = Instant::now() + T;
    loop {
        let now = objects(dir);
        // A key may have been deleted before it was seen: only compare those seen.
        let old_left = keys[..4].iter().flatten().any(|k| now.contains(k));
        if !old_left {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "oldest objects still in the store"
        );
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    for k in keys[4..].iter().flatten() {
        assert!(objects(dir).contains(k), "newest section {k} kept");
    }
    let (resp, h) = pull(&c, "SizeTopic", 0).await;
    assert_eq!(resp.code, ResponseCode::PullOffsetMoved.to_i32());
    assert_eq!(h.next_begin_offset, 4);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unreferenced_objects_older_than_the_grace_are_deleted_committed_ones_never() {
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let node = start(
        dir,
        "orphan_grace = \"10m\"\norphan_scan_interval = \"200ms\"",
    );
    let c = RemotingClient::connect(node.broker).await.unwrap();
    let sent: Vec<Bytes> = (0..2)
        .map(|i| Bytes::from(body("committed", i, 200)))
        .collect();
    for b in &sent {
        send(&c, "OrphanTopic", b).await;
    }
    let committed = objects(dir);
    assert_eq!(committed.len(), 2);
    // Committed objects, however old, stay.
    for k in &committed {
        age_file(&object_path(dir, k), Duration::from_secs(7200));
    }
    // An upload whose commit never happened (a crash between PUT and meta commit): a copy
    // of a real segment under another incarnation's key, two hours old; and a young one.
    let src = object_path(dir, committed.iter().next().unwrap());
    let old_orphan = "segments/node-1/0000000000001-00000000deadbeef/00000000000000000001.seg";
    let young_orphan = "segments/node-1/0000000000002-00000000feedface/00000000000000000001.seg";
    for k in [old_orphan, young_orphan] {
        let p = object_path(dir, k);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::copy(&src, &p).unwrap();
    }
    age_file(&object_path(dir, old_orphan), Duration::from_secs(7200));

    let deadline = Instant::now() + T;
    while objects(dir).contains(old_orphan) {
        assert!(Instant::now() < deadline, "old orphan not deleted");
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    // A few more scans: the young orphan and the committed objects are still there.
    tokio::time::sleep(Duration::from_millis(800)).await;
    let now = objects(dir);
    assert!(
        now.contains(young_orphan),
        "an orphan within the grace is kept"
    );
    assert!(
        committed.is_subset(&now),
        "committed objects are never deleted"
    );
    assert_eq!(read_from(&c, "OrphanTopic", 0).await, sent);
    let text = scrape_metrics(node.metrics).unwrap();
    assert!(
        text.contains("stratus_gateway_objects_deleted_total{reason=\"orphan\"} 1"),
        "{text}"
    );
}

/// A real Java push consumer whose committed offset fell below the min continues from the
/// new min: it gets PULL_OFFSET_MOVED, stores the suggested offset and pulls from there,
/// receiving exactly the retained messages. Skipped when the Java 4.9 client is not
/// installed (`tests/clients/install.sh`), unless `STRATUS_REQUIRE_CLIENTS=1`.
#[test]
fn a_java_push_consumer_behind_the_min_continues_from_it() {
    if !stratus_tests::client_installed("java49") {
        assert!(
            !stratus_tests::clients_required(),
            "client java49 is not installed"
        );
        eprintln!("skipping: client java49 is not installed");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let dir = dir.path();
    let mut node = start(dir, "time = \"4s\"\ninterval = \"200ms\"");
    let rt = tokio::runtime::Runtime::new().unwrap();
    let fresh: Vec<Bytes> = rt.block_on(async {
        let c = RemotingClient::connect(node.broker).await.unwrap();
        for i in 0..3 {
            send(&c, "PushBehind", &body("old", i, 100)).await;
        }
        // The group had consumed one message.
        let mut cmd = RemotingCommand::request(RequestCode::UpdateConsumerOffset.to_i32(), 0);
        UpdateConsumerOffsetRequestHeader {
            consumer_group: "GBehind".into(),
            topic: "PushBehind".into(),
            queue_id: 0,
            commit_offset: 1,
        }
        .write_to(&mut cmd);
        assert_eq!(c.invoke(cmd, T).await.unwrap().code, 0);
        tokio::time::sleep(Duration::from_millis(4200)).await;
        let fresh: Vec<Bytes> = (0..2).map(|i| Bytes::from(body("fresh", i, 100))).collect();
        for b in &fresh {
            send(&c, "PushBehind", b).await;
        }
        wait_min(&c, "PushBehind", 3).await;
        fresh
    });
    // Keep the fresh messages for the consumer's run.
    assert!(node.terminate().unwrap());
    std::fs::write(dir.join("stratus.toml"), "[retention]\ntime = \"1h\"\n").unwrap();
    node.restart().unwrap();

    let a = stratus_tests::args(&[
        "consume",
        "--namesrv",
        &node.namesrv_arg(),
        "--topic",
        "PushBehind",
        "--group",
        "GBehind",
        "--expect",
        "2",
        "--timeout-secs",
        "120",
    ]);
    let (code, ev) =
        stratus_tests::run_client("java49", &a, &dir.join("clients"), Duration::from_secs(180))
            .unwrap();
    assert_eq!(code, 0, "java49 consume: {ev:?}\n{}", node.log_text());
    let offsets: BTreeSet<i64> = ev
        .iter()
        .filter(|e| e["event"] == "recv")
        .map(|e| e["queueOffset"].as_i64().unwrap())
        .collect();
    assert_eq!(offsets, BTreeSet::from([3, 4]), "{ev:?}");
    let lens: Vec<u64> = ev
        .iter()
        .filter(|e| e["event"] == "recv")
        .map(|e| e["bodyLen"].as_u64().unwrap())
        .collect();
    assert!(lens.iter().all(|l| *l == fresh[0].len() as u64), "{lens:?}");
}

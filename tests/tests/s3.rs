//! Stratus on a real S3-compatible server (`STRATUS_TEST_S3=endpoint,bucket,key,secret`;
//! `test.sh` starts MinIO and sets it): start-up fails naming the wrong setting (endpoint,
//! bucket, credentials); a node produces and consumes with its segments in the bucket,
//! large segments going up as multipart uploads; a node started on an empty data directory
//! with the old metadata serves every committed message after a kill -9; a segment
//! corrupted in the bucket is detected by checksum and never served.
//!
//! Without `STRATUS_TEST_S3` every test prints a notice and passes, unless
//! `STRATUS_REQUIRE_S3=1` (set by `test.sh`), which makes a missing server a failure.

#![allow(clippy::unwrap_used, clippy::disallowed_methods)] // test code: failures should panic; real timers are fine

use std::net::SocketAddr;
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use bytes::Bytes;
use stratus_compat::client::RemotingClient;
use stratus_compat::command::RemotingCommand;
use stratus_compat::message::properties::{Properties, keys};
use stratus_compat::message::record::MessageExt;
use stratus_compat::request::pull::{
    PULL_FLAG_SUBSCRIPTION, PullMessageRequestHeader, PullMessageResponseHeader,
};
use stratus_compat::request::send::{SendMessageRequestHeader, SendMessageResponseHeader};
use stratus_compat::{RequestCode, ResponseCode};
use stratus_tests::{Node, S3Env, free_port, s3_env, s3_required, stratus_bin};

const T: Duration = Duration::from_secs(20);

/// The S3 server, or `None` after printing why the test is skipped.
fn s3_or_skip(test: &str) -> Option<S3Env> {
    let env = s3_env().expect("STRATUS_TEST_S3 parses");
    if env.is_none() {
        assert!(
            !s3_required(),
            "STRATUS_REQUIRE_S3=1 but STRATUS_TEST_S3 is not set"
        );
        eprintln!(
            "skipped {test}: no S3 server (set STRATUS_TEST_S3=endpoint,bucket,key,secret; \
             test.sh starts MinIO with tests/servers/minio.sh)"
        );
    }
    env
}

async fn connect(addr: SocketAddr) -> RemotingClient {
    RemotingClient::connect(addr).await.expect("connect")
}

async fn send(c: &RemotingClient, topic: &str, queue_id: i32, key: &str, body: Bytes) -> i64 {
    let mut p = Properties::default();
    p.insert(keys::TAGS, "TagA");
    p.insert(keys::KEYS, key);
    p.insert(keys::UNIQ_KEY, &format!("UNIQ{key}"));
    let mut cmd = RemotingCommand::request(RequestCode::SendMessageV2.to_i32(), 0);
    SendMessageRequestHeader {
        producer_group: "pg".into(),
        topic: topic.into(),
        default_topic: "TBW102".into(),
        default_topic_queue_nums: 4,
        queue_id,
        sys_flag: 0,
        born_timestamp: 1_700_000_000_000,
        flag: 0,
        properties: Some(p.encode()),
        broker_name: Some("broker-0".into()),
        ..Default::default()
    }
    .write_v2(&mut cmd);
    cmd.body = body;
    let resp = c.invoke(cmd, T).await.expect("send");
    assert_eq!(resp.code, 0, "send {key}: {:?}", resp.remark);
    SendMessageResponseHeader::from_command(&resp)
        .unwrap()
        .queue_offset
}

async fn pull(
    c: &RemotingClient,
    topic: &str,
    queue_id: i32,
    offset: i64,
) -> (RemotingCommand, Option<PullMessageResponseHeader>) {
    let mut cmd = RemotingCommand::request(RequestCode::PullMessage.to_i32(), 0);
    PullMessageRequestHeader {
        consumer_group: "cg".into(),
        topic: topic.into(),
        queue_id,
        queue_offset: offset,
        max_msg_nums: 32,
        sys_flag: PULL_FLAG_SUBSCRIPTION,
        commit_offset: 0,
        suspend_timeout_millis: 0,
        subscription: Some("*".into()),
        sub_version: 0,
        expression_type: Some("TAG".into()),
        max_msg_bytes: None,
        broker_name: Some("broker-0".into()),
    }
    .write_to(&mut cmd);
    let resp = c.invoke(cmd, T).await.expect("pull");
    let h = PullMessageResponseHeader::from_command(&resp).ok();
    (resp, h)
}

/// Every message of a queue from offset 0; panics on any answer but FOUND / NOT_FOUND.
async fn pull_all(c: &RemotingClient, topic: &str, queue_id: i32) -> Vec<MessageExt> {
    let mut out = Vec::new();
    let mut offset = 0;
    loop {
        let (resp, h) = pull(c, topic, queue_id, offset).await;
        if resp.code != ResponseCode::Success.to_i32() {
            return out;
        }
        out.extend(MessageExt::decode_all(resp.body.clone()).expect("records"));
        offset = h.expect("pull header").next_begin_offset;
    }
}

fn body_of(i: usize) -> Bytes {
    Bytes::from(format!("s3-message-{i}-").repeat(1 + i % 40))
}

/// Runs `stratus serve` with exactly `env` for its storage settings and expects it to exit
/// non-zero within 30 s; returns its output.
fn start_fails(dir: &Path, env: &[(String, String)]) -> (String, Duration) {
    std::fs::create_dir_all(dir).unwrap();
    let log = dir.join("out.log");
    let started = Instant::now();
    let mut child = Command::new(stratus_bin())
        .arg("serve")
        .arg("--data-dir")
        .arg(dir)
        .arg("--namesrv-addr")
        .arg(format!("127.0.0.1:{}", free_port()))
        .arg("--broker-addr")
        .arg(format!("127.0.0.1:{}", free_port()))
        .envs(env.iter().map(|(k, v)| (k, v)))
        .env("RUST_LOG", "warn")
        .env("RUST_BACKTRACE", "0")
        .stdin(Stdio::null())
        .stdout(std::fs::File::create(&log).unwrap())
        .stderr(std::fs::File::create(dir.join("err.log")).unwrap())
        .spawn()
        .unwrap();
    let status = loop {
        if let Some(s) = child.try_wait().unwrap() {
            break s;
        }
        if started.elapsed() > Duration::from_secs(30) {
            let _ = child.kill();
            let _ = child.wait();
            panic!("stratus did not fail within 30 s");
        }
        std::thread::sleep(Duration::from_millis(50));
    };
    let text = std::fs::read_to_string(&log).unwrap_or_default()
        + &std::fs::read_to_string(dir.join("err.log")).unwrap_or_default();
    assert!(!status.success(), "stratus started anyway:\n{text}");
    (text, started.elapsed())
}

fn with(env: &[(String, String)], key: &str, value: &str) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = env.iter().filter(|(k, _)| k != key).cloned().collect();
    out.push((key.to_owned(), value.to_owned()));
    out
}

#[test]
fn wrong_endpoint_bucket_or_credentials_fail_start_up_naming_the_setting() {
    let Some(s3) =
        s3_or_skip("wrong_endpoint_bucket_or_credentials_fail_start_up_naming_the_setting")
    else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let good = s3.node_env(dir.path());

    // Nothing listens there: connection refused.
    let env = with(
        &good,
        "STRATUS_STORAGE__S3_ENDPOINT",
        &format!("http://127.0.0.1:{}", free_port()),
    );
    let (out, took) = start_fails(&dir.path().join("endpoint"), &env);
    assert!(out.contains("storage.s3_endpoint"), "{out}");
    assert!(took < Duration::from_secs(20), "took {took:?}");

    let env = with(
        &good,
        "STRATUS_STORAGE__OBJECT_STORE_URL",
        "s3://stratus-no-such-bucket/x",
    );
    let (out, _) = start_fails(&dir.path().join("bucket"), &env);
    assert!(out.contains("storage.object_store_url"), "{out}");
    assert!(out.contains("does not exist"), "{out}");
    assert!(out.contains("stratus-no-such-bucket"), "{out}");

    let env = with(&good, "STRATUS_STORAGE__S3_ACCESS_KEY_ID", "no-such-key");
    let (out, _) = start_fails(&dir.path().join("key"), &env);
    assert!(out.contains("storage.s3_access_key_id"), "{out}");

    let env = with(
        &good,
        "STRATUS_STORAGE__S3_SECRET_ACCESS_KEY",
        "not-the-secret",
    );
    let (out, _) = start_fails(&dir.path().join("secret"), &env);
    assert!(out.contains("storage.s3_secret_access_key"), "{out}");
    assert!(
        !out.contains("not-the-secret"),
        "the secret is never printed:\n{out}"
    );

    // The same settings with the right values start (the probe leaves nothing behind).
    let node = Node::start(&dir.path().join("good")).unwrap();
    drop(node);
    let probes = s3
        .list(&format!(
            "{}/_stratus/",
            s3.node_prefix(&dir.path().join("good"))
        ))
        .unwrap();
    assert!(probes.is_empty(), "probe objects left: {probes:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_on_s3_produces_and_consumes_with_segments_in_the_bucket() {
    let Some(s3) = s3_or_skip("a_node_on_s3_produces_and_consumes_with_segments_in_the_bucket")
    else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let node = Node::start(dir.path()).unwrap();
    let b = connect(node.broker).await;
    let mut sent: Vec<Vec<Bytes>> = vec![Vec::new(); 2];
    for i in 0..60 {
        let q = (i % 2) as i32;
        let body = if i == 30 {
            Bytes::from(vec![b'x'; 1 << 20])
        } else {
            body_of(i)
        };
        let off = send(&b, "OnS3", q, &format!("k{i}"), body.clone()).await;
        assert_eq!(off, sent[q as usize].len() as i64);
        sent[q as usize].push(body);
    }
    for q in 0..2 {
        let got: Vec<Bytes> = pull_all(&b, "OnS3", q)
            .await
            .into_iter()
            .map(|m| m.body)
            .collect();
        assert_eq!(got, sent[q as usize], "queue {q}");
    }
    let segs = s3
        .list(&format!("{}/segments/", s3.node_prefix(dir.path())))
        .unwrap();
    assert!(
        segs.iter().any(|o| o.key.ends_with(".seg") && o.size > 0),
        "segments are in the bucket: {segs:?}"
    );
    let total: u64 = segs.iter().map(|o| o.size).sum();
    assert!(total > 1 << 20, "every byte went to the bucket: {total}");
    assert!(
        !dir.path().join("objects").exists(),
        "nothing in the local object directory"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn large_segments_go_up_as_multipart_uploads_and_read_back() {
    let Some(s3) = s3_or_skip("large_segments_go_up_as_multipart_uploads_and_read_back") else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let config = dir.path().join("stratus.toml");
    // One 12 MiB message makes one segment over the 5 MiB threshold: two 8 MiB-or-less parts.
    std::fs::write(
        &config,
        "[broker]\nmax_message_size = \"15MiB\"\n[storage]\nmultipart_threshold = \"5MiB\"\n",
    )
    .unwrap();
    let mut node = Node::start_with(
        &dir.path().join("node"),
        &["--config", config.to_str().unwrap()],
    )
    .unwrap();
    let b = connect(node.broker).await;
    let body: Bytes = (0..12u32 << 20)
        .map(|i| (i % 251) as u8)
        .collect::<Vec<u8>>()
        .into();
    assert_eq!(send(&b, "Big", 0, "big", body.clone()).await, 0);
    let segs = s3
        .list(&format!(
            "{}/segments/",
            s3.node_prefix(&dir.path().join("node"))
        ))
        .unwrap();
    let big: Vec<_> = segs.iter().filter(|o| o.size > 12 << 20).collect();
    assert_eq!(big.len(), 1, "one segment holds the message: {segs:?}");
    assert!(
        big[0].etag.trim_matches('"').ends_with("-2"),
        "a two-part multipart upload (S3 multipart ETags end in -<parts>): {:?}",
        big[0]
    );
    // Read back through a restarted node: no cache, ranged GETs from the bucket.
    drop(b);
    assert!(node.terminate().unwrap(), "{}", node.log_text());
    node.restart().unwrap();
    let b = connect(node.broker).await;
    let got = pull_all(&b, "Big", 0).await;
    assert_eq!(got.len(), 1);
    assert!(
        got[0].body == body,
        "every byte back from the multipart object"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_node_on_an_empty_data_dir_with_the_old_meta_serves_everything_after_kill_9() {
    let Some(s3) =
        s3_or_skip("a_node_on_an_empty_data_dir_with_the_old_meta_serves_everything_after_kill_9")
    else {
        return;
    };
    let old = tempfile::tempdir().unwrap();
    let mut a = Node::start(old.path()).unwrap();
    let b = connect(a.broker).await;
    let mut sent: Vec<Vec<Bytes>> = vec![Vec::new(); 4];
    for i in 0..80 {
        let q = (i % 4) as i32;
        let body = body_of(i);
        send(&b, "Recover", q, &format!("r{i}"), body.clone()).await;
        sent[q as usize].push(body);
    }
    drop(b);
    a.kill9().unwrap();
    assert!(
        !s3.list(&format!("{}/segments/", s3.node_prefix(old.path())))
            .unwrap()
            .is_empty()
    );

    let fresh = tempfile::tempdir().unwrap();
    let meta = format!("embedded://{}", old.path().join("meta.db").display());
    let node = Node::start_with(fresh.path(), &["--meta-url", &meta]).unwrap();
    let b = connect(node.broker).await;
    for q in 0..4 {
        let got: Vec<Bytes> = pull_all(&b, "Recover", q)
            .await
            .into_iter()
            .map(|m| m.body)
            .collect();
        assert_eq!(got, sent[q as usize], "queue {q}: {}", node.log_text());
    }
    // It also writes: offsets continue where the killed node stopped.
    let off = send(&b, "Recover", 0, "after", Bytes::from_static(b"after")).await;
    assert_eq!(off, 20);
    assert!(
        !fresh.path().join("objects").exists(),
        "the new node read from the bucket, not a local copy"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_segment_corrupted_in_the_bucket_is_detected_and_never_served() {
    let Some(s3) = s3_or_skip("a_segment_corrupted_in_the_bucket_is_detected_and_never_served")
    else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let mut node = Node::start(dir.path()).unwrap();
    let b = connect(node.broker).await;
    for i in 0..10 {
        send(&b, "Corrupt", 0, &format!("c{i}"), body_of(i)).await;
    }
    assert_eq!(pull_all(&b, "Corrupt", 0).await.len(), 10);
    drop(b);
    // Stop the node: its caches go, so the next reads come from the bucket.
    assert!(node.terminate().unwrap(), "{}", node.log_text());

    let segs = s3
        .list(&format!("{}/segments/", s3.node_prefix(dir.path())))
        .unwrap();
    assert!(!segs.is_empty());
    for o in &segs {
        let mut bytes = s3.get(&o.key).unwrap();
        // The first record starts right after the 8-byte header: flip bytes inside it
        // (the record's length field, at 8..12, is left alone).
        for b in bytes.iter_mut().skip(8 + 40).take(8) {
            *b ^= 0xff;
        }
        s3.put(&o.key, &bytes).unwrap();
    }

    node.restart().unwrap();
    let b = connect(node.broker).await;
    let (resp, _) = pull(&b, "Corrupt", 0, 0).await;
    assert_ne!(
        resp.code,
        ResponseCode::Success.to_i32(),
        "a corrupted record is never served"
    );
    assert_eq!(resp.code, ResponseCode::SystemError.to_i32(), "{resp:?}");
    assert!(
        resp.body.is_empty(),
        "no message bytes in the answer: {} bytes",
        resp.body.len()
    );
    let log = node.log_text();
    assert!(
        log.contains("fails its checksum"),
        "the log reports the record's checksum failure:\n{log}"
    );
}

//! The Kafka scenarios of `stratus_tests::kafka` — the ones `kafka_reference.rs` checks
//! against Apache Kafka 4.4.0 — against a Stratus node on its embedded default (local
//! directory, embedded metadata), with the real Java (4.4.0 and 3.9.1), librdkafka and
//! franz-go clients; and the two protocols on one topic.
//!
//! Skipped with a notice when the Kafka clients are not installed, unless
//! `STRATUS_REQUIRE_CLIENTS=1`.

#![allow(clippy::unwrap_used, clippy::disallowed_methods)] // test code: failures should panic

use std::time::Instant;

use stratus_tests::Node;
use stratus_tests::kafka;

/// The settings the reference broker runs with that differ from a default node's.
const KAFKA_LIKE: [(&str, &str); 1] = [("STRATUS_KAFKA__GROUP_INITIAL_REBALANCE_DELAY", "0s")];

#[test]
fn every_kafka_scenario_passes_against_stratus() {
    if !kafka::kafka_ready(false).expect("Kafka clients") {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let node = Node::start_with_env(dir.path(), &[], &KAFKA_LIKE).unwrap();
    let t0 = Instant::now();
    let failed = kafka::run_scenarios(&node.kafka.to_string());
    eprintln!(
        "kafka on stratus: {:.1} s in all",
        t0.elapsed().as_secs_f64()
    );
    assert!(
        failed.is_empty(),
        "failed against Stratus: {failed:?}; node log:\n{}",
        tail(&node.log_text())
    );
}

fn tail(log: &str) -> String {
    let lines: Vec<&str> = log.lines().collect();
    lines[lines.len().saturating_sub(60)..].join("\n")
}

/// One topic, both protocols: a RocketMQ producer's messages (tag, keys, a user property,
/// bodies over the Java client's 4 KiB compression threshold) read by a Kafka consumer, and
/// a Kafka producer's records (key, headers, a `TAGS` header) read by a RocketMQ push
/// consumer filtering on that tag; the Kafka group's offsets are RocketMQ's.
#[test]
fn rocketmq_and_kafka_clients_read_each_others_messages() {
    if !kafka::kafka_ready(false).expect("Kafka clients")
        || !stratus_tests::client_installed("java5")
    {
        assert!(!stratus_tests::clients_required(), "java5 is required");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let node = Node::start_with_env(dir.path(), &[], &KAFKA_LIKE).unwrap();
    let bootstrap = node.kafka.to_string();
    let scratch = dir.path().join("clients");
    let wait = std::time::Duration::from_secs(120);

    // RocketMQ → Kafka.
    let topic = kafka::unique("r2k");
    let (code, events) = stratus_tests::run_client(
        "java5",
        &stratus_tests::args(&[
            "produce",
            "--namesrv",
            &node.namesrv_arg(),
            "--topic",
            &topic,
            "--group",
            "pg",
            "--count",
            "20",
            "--mode",
            "sync",
            "--tag",
            "TagR",
            "--keys-prefix",
            "order",
            "--body-size",
            "5000",
        ]),
        &scratch,
        wait,
    )
    .unwrap();
    assert_eq!(code, 0, "java5 produce: {events:?}");
    let (code, events) = stratus_tests::run_client(
        "kafka-java",
        &stratus_tests::args(&[
            "consume",
            "--bootstrap",
            &bootstrap,
            "--topic",
            &topic,
            "--group",
            "kg",
            "--count",
            "20",
            "--from",
            "earliest",
            "--timeout-ms",
            "60000",
        ]),
        &scratch,
        wait,
    )
    .unwrap();
    assert_eq!(
        code,
        0,
        "kafka consume: {events:?}\n{}",
        tail(&node.log_text())
    );
    let got = kafka::recvs(&events).unwrap();
    assert_eq!(got.len(), 20);
    let mut seqs: Vec<i64> = Vec::new();
    for r in &got {
        let seq: i64 = r.headers["seq"].parse().unwrap();
        seqs.push(seq);
        assert_eq!(r.key, format!("order-{seq}"), "KEYS is the Kafka key");
        assert_eq!(r.headers.get("TAGS").map(String::as_str), Some("TagR"));
        assert_eq!(r.headers.get("KEYS"), Some(&r.key));
        assert!(r.headers.contains_key("UNIQ_KEY"));
        assert!(
            !r.headers.contains_key("CLUSTER"),
            "broker-internal properties stay inside"
        );
        assert_eq!(
            r.value.len(),
            5000,
            "a compressed body is inflated for Kafka"
        );
        assert!(
            r.value.starts_with(&format!("m{seq}:")),
            "{}",
            &r.value[..20]
        );
    }
    seqs.sort_unstable();
    assert_eq!(seqs, (0..20).collect::<Vec<_>>());

    // Kafka → RocketMQ: only the records with the tag reach the filtering consumer.
    let topic = kafka::unique("k2r");
    kafka::create_topic("kafka-java", &bootstrap, &scratch, &topic, 4).unwrap();
    for (headers, prefix) in [("TAGS=TagK,color=red", "k"), ("color=blue", "u")] {
        let (code, events) = stratus_tests::run_client(
            "kafka-java",
            &stratus_tests::args(&[
                "produce",
                "--bootstrap",
                &bootstrap,
                "--topic",
                &topic,
                "--count",
                "10",
                "--headers",
                headers,
                "--key-prefix",
                prefix,
                "--compression",
                "zstd",
            ]),
            &scratch,
            wait,
        )
        .unwrap();
        assert_eq!(code, 0, "kafka produce: {events:?}");
    }
    let (code, events) = stratus_tests::run_client(
        "java5",
        &stratus_tests::args(&[
            "consume",
            "--namesrv",
            &node.namesrv_arg(),
            "--topic",
            &topic,
            "--group",
            "rg",
            "--expr",
            "TagK",
            "--expect",
            "10",
            "--timeout-secs",
            "60",
            "--idle-exit-secs",
            "5",
        ]),
        &scratch,
        wait,
    )
    .unwrap();
    assert_eq!(code, 0, "java5 consume: {events:?}");
    let recv: Vec<&serde_json::Value> = events.iter().filter(|e| e["event"] == "recv").collect();
    let mut seqs: Vec<String> = recv
        .iter()
        .map(|e| e["seq"].as_str().unwrap().to_owned())
        .collect();
    seqs.sort();
    seqs.dedup();
    assert_eq!(
        seqs.len(),
        10,
        "each tagged record once, the untagged ones filtered: {recv:?}"
    );
    for e in &recv {
        let seq = e["seq"].as_str().unwrap();
        assert_eq!(e["tags"], "TagK");
        assert_eq!(e["keys"], format!("k-{seq}"), "the Kafka key is KEYS");
        assert_eq!(e["bodyLen"], format!("v-{seq}").len());
    }
}

mod raw {
    //! A Kafka connection spoken by hand, for requests no client would send.

    use std::io::{Read, Write};
    use std::net::{SocketAddr, TcpStream};
    use std::time::Duration;

    pub(super) fn connect(addr: SocketAddr) -> TcpStream {
        let s = TcpStream::connect(addr).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        s
    }

    /// `length | api key | version | correlation | client id (i16 string) | [tags] | body`.
    pub(super) fn frame(
        key: i16,
        version: i16,
        correlation: i32,
        flexible: bool,
        body: &[u8],
    ) -> Vec<u8> {
        let mut r = Vec::new();
        r.extend(key.to_be_bytes());
        r.extend(version.to_be_bytes());
        r.extend(correlation.to_be_bytes());
        r.extend(4i16.to_be_bytes());
        r.extend(b"test");
        if flexible {
            r.push(0);
        }
        r.extend(body);
        let mut f = (r.len() as i32).to_be_bytes().to_vec();
        f.extend(r);
        f
    }

    /// The next answer: (correlation id, the rest), or `None` when the node closed.
    pub(super) fn answer(s: &mut TcpStream) -> Option<(i32, Vec<u8>)> {
        let mut len = [0u8; 4];
        s.read_exact(&mut len).ok()?;
        let mut body = vec![0u8; i32::from_be_bytes(len) as usize];
        s.read_exact(&mut body).ok()?;
        let c = i32::from_be_bytes(body[..4].try_into().unwrap());
        Some((c, body[4..].to_vec()))
    }

    pub(super) fn send(s: &mut TcpStream, bytes: &[u8]) {
        s.write_all(bytes).unwrap();
    }

    /// ApiVersions v3's body: client software name and version (compact strings), tags.
    pub(super) fn api_versions_v3() -> Vec<u8> {
        let mut b = vec![5];
        b.extend(b"test");
        b.push(2);
        b.push(b'1');
        b.push(0);
        b
    }
}

/// Requests no client sends get the reference's treatment: ApiVersions in a version the
/// node does not serve is answered in v0 with UNSUPPORTED_VERSION and the served ranges;
/// an unknown API key, a malformed body or an oversized request closes that connection;
/// answers come in request order; the node keeps serving everyone else.
#[test]
fn bad_kafka_requests_are_refused_as_the_reference_refuses_them() {
    let dir = tempfile::tempdir().unwrap();
    let node = Node::start(dir.path()).unwrap();
    let addr = node.kafka;

    // Pipelined: ApiVersions v3 twice and one v9; the answers in order.
    let mut s = raw::connect(addr);
    let v3 = raw::api_versions_v3();
    let mut pipelined = raw::frame(18, 3, 1, true, &v3);
    pipelined.extend(raw::frame(18, 9, 2, true, &v3));
    pipelined.extend(raw::frame(18, 3, 3, true, &v3));
    raw::send(&mut s, &pipelined);
    let (c1, b1) = raw::answer(&mut s).unwrap();
    let (c2, b2) = raw::answer(&mut s).unwrap();
    let (c3, _) = raw::answer(&mut s).unwrap();
    assert_eq!((c1, c2, c3), (1, 2, 3), "answers in request order");
    assert_eq!(i16::from_be_bytes([b1[0], b1[1]]), 0);
    assert_eq!(
        i16::from_be_bytes([b2[0], b2[1]]),
        35,
        "UNSUPPORTED_VERSION"
    );
    let served = i32::from_be_bytes(b2[2..6].try_into().unwrap());
    assert!(
        served >= 20,
        "the v0 answer lists the served APIs: {served}"
    );

    // Each of these closes its connection, and only its own.
    let garbage_produce = raw::frame(0, 9, 4, true, &[0xff; 7]);
    let unknown_key = raw::frame(999, 0, 5, false, &[]);
    let produce_v1 = raw::frame(0, 1, 6, false, &[0; 16]);
    let huge = (i32::MAX).to_be_bytes().to_vec();
    let negative = (-5i32).to_be_bytes().to_vec();
    // 14 bytes claiming 2^31 topics (v0) or 2^32 (v12, compact): the decoder would size
    // its vector from the count and the allocation would abort the process.
    let billions_of_topics = raw::frame(3, 0, 8, false, &0x7fff_fff0i32.to_be_bytes());
    let billions_compact = raw::frame(3, 12, 9, true, &[0xfe, 0xff, 0xff, 0xff, 0x0f]);
    for bad in [
        garbage_produce,
        unknown_key,
        produce_v1,
        huge,
        negative,
        billions_of_topics,
        billions_compact,
    ] {
        let mut s = raw::connect(addr);
        raw::send(&mut s, &bad);
        assert!(raw::answer(&mut s).is_none(), "closed without an answer");
    }
    let mut s = raw::connect(addr);
    raw::send(&mut s, &raw::frame(18, 3, 7, true, &v3));
    assert_eq!(raw::answer(&mut s).unwrap().0, 7, "still serving");
    assert!(!node.log_text().contains("panicked"), "no panic");
}

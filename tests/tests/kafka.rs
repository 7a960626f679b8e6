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

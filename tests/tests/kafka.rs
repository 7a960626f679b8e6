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

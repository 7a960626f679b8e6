//! The Kafka scenarios of `stratus_tests::kafka` against the real Apache Kafka 4.4.0
//! (`tests/servers/kafka.sh`, one KRaft node started once for the whole file): a scenario
//! that fails here is wrong, not the broker. `tests/tests/kafka.rs` runs the same
//! functions against Stratus.
//!
//! Skipped with a notice when the broker jars or the Kafka clients are not installed
//! (`tests/clients/install.sh kafka-server kafka-java kafka-java3 kafka-python kafka-go`),
//! unless `STRATUS_REQUIRE_CLIENTS=1`.

#![allow(clippy::unwrap_used, clippy::disallowed_methods)] // test code: failures should panic

use std::path::Path;
use std::time::Instant;

use stratus_tests::kafka::{self, KafkaBroker};

type Scenario = fn(&str, &Path) -> anyhow::Result<()>;

/// Every scenario in sequence on one broker (a JVM start is the main cost), each reported
/// with its time; the test fails at the end if any failed.
#[test]
fn every_kafka_scenario_passes_against_apache_kafka() {
    if !kafka::kafka_ready(true).expect("Kafka clients and broker") {
        return;
    }
    let t0 = Instant::now();
    let broker = KafkaBroker::start().expect("start Apache Kafka");
    eprintln!(
        "Apache Kafka on {} ready in {:.1} s",
        broker.bootstrap(),
        broker.start_time.as_secs_f64()
    );
    let scenarios: [(&str, Scenario); 9] = [
        (
            "admin_create_delete_add_partitions",
            kafka::admin_create_delete_add_partitions,
        ),
        (
            "produce_consume_every_acks_and_compression (kafka-clients 4.4.0)",
            |b, s| kafka::produce_consume_every_acks_and_compression("kafka-java", b, s),
        ),
        (
            "produce_consume_every_acks_and_compression (kafka-clients 3.9.1)",
            |b, s| kafka::produce_consume_every_acks_and_compression("kafka-java3", b, s),
        ),
        (
            "idempotent_producer_no_duplicates",
            kafka::idempotent_producer_no_duplicates,
        ),
        (
            "seek_beginning_end_timestamp",
            kafka::seek_beginning_end_timestamp,
        ),
        ("commit_and_resume", kafka::commit_and_resume),
        ("group_of_three_with_leave_and_join", |b, s| {
            let dups = kafka::group_of_three_with_leave_and_join(b, s)?;
            eprintln!("  group_of_three_with_leave_and_join: {dups} records consumed twice");
            Ok(())
        }),
        (
            "librdkafka_produce_consume",
            kafka::librdkafka_produce_consume,
        ),
        ("franz_go_produce_consume", kafka::franz_go_produce_consume),
    ];
    let mut failed = Vec::new();
    for (name, scenario) in scenarios {
        let scratch = tempfile::tempdir().unwrap();
        let t = Instant::now();
        let result = scenario(broker.bootstrap(), scratch.path());
        let secs = t.elapsed().as_secs_f64();
        match result {
            Ok(()) => eprintln!("ok   {name} ({secs:.1} s)"),
            Err(e) => {
                eprintln!("FAIL {name} ({secs:.1} s): {e:#}");
                failed.push(name);
                // Keep the clients' transcripts of a failure.
                eprintln!("     client output kept in {}", scratch.keep().display());
            }
        }
    }
    eprintln!(
        "kafka_reference: {:.1} s in all",
        t0.elapsed().as_secs_f64()
    );
    assert!(failed.is_empty(), "failed against Apache Kafka: {failed:?}");
}

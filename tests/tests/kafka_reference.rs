//! The Kafka scenarios of `stratus_tests::kafka` against the real Apache Kafka 4.4.0
//! (`tests/servers/kafka.sh`, one KRaft node started once for the whole file): a scenario
//! that fails here is wrong, not the broker. `tests/tests/kafka.rs` runs the same
//! functions against Stratus.
//!
//! Skipped with a notice when the broker jars or the Kafka clients are not installed
//! (`tests/clients/install.sh kafka-server kafka-java kafka-java3 kafka-python kafka-go`),
//! unless `STRATUS_REQUIRE_CLIENTS=1`.

#![allow(clippy::unwrap_used, clippy::disallowed_methods)] // test code: failures should panic

use std::time::Instant;

use stratus_tests::kafka::{self, KafkaBroker};

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
    let failed = kafka::run_scenarios(broker.bootstrap());
    eprintln!(
        "kafka_reference: {:.1} s in all",
        t0.elapsed().as_secs_f64()
    );
    assert!(failed.is_empty(), "failed against Apache Kafka: {failed:?}");
}

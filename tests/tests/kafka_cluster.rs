//! Kafka clients against three Stratus nodes on one metadata database and one object
//! store (PostgreSQL and MinIO in the S3 stage), one shard each: an idempotent Java
//! producer and a consumer group keep going while one node is killed with SIGKILL. Every
//! acknowledged record is there exactly once, each partition's offsets are dense and in
//! order, and a second consumer of the group resumes from the committed offsets.
//!
//! Skipped with a notice when the Kafka clients are not installed, unless
//! `STRATUS_REQUIRE_CLIENTS=1`.

#![allow(clippy::unwrap_used, clippy::disallowed_methods)] // test code: failures should panic

use std::collections::{BTreeMap, BTreeSet};
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use stratus_tests::kafka::{self, Produce};
use stratus_tests::{Node, free_port, free_shard_base};

const SHARDS: u16 = 3;
const RECORDS: usize = 1500;

#[test]
fn kafka_clients_survive_a_kill_of_one_of_three_nodes() {
    if !kafka::kafka_ready(false).expect("Kafka clients") {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let meta = stratus_tests::cluster_meta_url(dir);
    let objects = stratus_tests::cluster_object_store_url(dir);
    let shards = SHARDS.to_string();
    let start = |n: &str| {
        let ns: SocketAddr = format!("127.0.0.1:{}", free_port()).parse().unwrap();
        let base = free_shard_base(SHARDS);
        let id = format!("node-{n}");
        Node::start_member(
            &dir.join(n),
            ns,
            format!("127.0.0.1:{base}").parse().unwrap(),
            &[
                ("STRATUS_NODE__ID", id.as_str()),
                ("STRATUS_NODE__SHARDS", shards.as_str()),
                ("STRATUS_META__URL", meta.as_str()),
                ("STRATUS_META__LEASE_TTL", "3s"),
                ("STRATUS_STORAGE__OBJECT_STORE_URL", objects.as_str()),
                ("STRATUS_KAFKA__GROUP_INITIAL_REBALANCE_DELAY", "0s"),
            ],
        )
        .unwrap()
    };
    let mut nodes = [start("a"), start("b"), start("c")];
    // One shard each.
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let routes = stratus_tests::cluster_routes(nodes[0].namesrv);
        let owners: BTreeSet<&String> = routes.values().collect();
        if routes.len() == usize::from(SHARDS) && owners.len() == 3 {
            break;
        }
        assert!(Instant::now() < deadline, "shards not spread: {routes:?}");
        std::thread::sleep(Duration::from_millis(200));
    }
    let bootstrap = format!("{},{},{}", nodes[0].kafka, nodes[1].kafka, nodes[2].kafka);
    let scratch = dir.join("clients");
    let topic = kafka::unique("kc");
    let group = kafka::unique("kcg");
    kafka::create_topic("kafka-java", &bootstrap, &scratch, &topic, 6).unwrap();

    let extra = ["--interval-ms", "4"];
    let producer = Produce {
        extra: &extra,
        ..Produce::new("kafka-java", &topic, RECORDS, "p")
    };
    let running = producer.spawn(&bootstrap, &scratch).unwrap();
    let first = stratus_tests::ClientRun::spawn(
        "kafka-java",
        &stratus_tests::args(&[
            "consume",
            "--bootstrap",
            &bootstrap,
            "--topic",
            &topic,
            "--group",
            &group,
            "--count",
            "500",
            "--from",
            "earliest",
            "--timeout-ms",
            "90000",
        ]),
        &scratch,
    )
    .unwrap();
    // Kill the node coordinating the group (Kafka's rule: abs(hash(group)) % shards), so
    // the group moves with its shard while its member consumes and commits.
    let shard = coordinator_shard(&group);
    let routes = stratus_tests::cluster_routes(nodes[0].namesrv);
    let owner_addr = routes[&format!("broker-{shard}")].clone();
    let victim = nodes
        .iter()
        .position(|n| {
            format!(
                "127.0.0.1:{}",
                stratus_tests::shard_port(n.broker.port(), shard)
            ) == owner_addr
        })
        .expect("the coordinator's node");
    std::thread::sleep(Duration::from_secs(3));
    nodes[victim].kill9().unwrap();
    let killed = Instant::now();
    eprintln!("node {victim} (coordinator of the group, shard {shard}) killed");
    let live = (victim + 1) % 3;

    let (code, events) = running.wait(Duration::from_secs(180)).unwrap();
    let sent = producer.check(code, &events).unwrap_or_else(|e| {
        panic!("{e:#}\nnode log:\n{}", tail(&nodes[live].log_text()));
    });
    eprintln!(
        "producer: {RECORDS} acknowledged, done {:?} after the kill",
        killed.elapsed()
    );
    let (code, events) = first.wait(Duration::from_secs(120)).unwrap();
    assert_eq!(code, 0, "first consumer: {events:?}");
    let got_first = kafka::recvs(&events).unwrap();
    assert_eq!(got_first.len(), 500);

    // The group resumes where its commits left it: the rest, from another consumer.
    let rest = kafka::consume(
        "kafka-java",
        &bootstrap,
        &scratch,
        &topic,
        &group,
        RECORDS - 500,
        &["--from", "earliest"],
    )
    .unwrap();
    let mut all = got_first;
    all.extend(rest);
    kafka::check_exactly_once(&sent, &all).unwrap();

    // Per partition: acknowledged offsets dense from 0, no offset given twice.
    let mut by_partition: BTreeMap<i64, Vec<i64>> = BTreeMap::new();
    for s in &sent {
        by_partition.entry(s.partition).or_default().push(s.offset);
    }
    for (p, mut offsets) in by_partition {
        offsets.sort_unstable();
        let expected: Vec<i64> = (0..i64::try_from(offsets.len()).unwrap()).collect();
        assert_eq!(
            offsets, expected,
            "partition {p}: acknowledged offsets dense and unique"
        );
    }
}

/// The shard coordinating `group`: `abs(hashCode(group)) % shards`, with Java's hash.
fn coordinator_shard(group: &str) -> u16 {
    let h = stratus_compat::types::java_string_hash(group);
    u16::try_from(h.unsigned_abs() % u64::from(SHARDS)).unwrap()
}

fn tail(log: &str) -> String {
    let lines: Vec<&str> = log.lines().collect();
    lines[lines.len().saturating_sub(80)..].join("\n")
}

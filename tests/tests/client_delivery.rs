//! Delivery semantics with real clients against a running `stratus` process: consumer retry
//! (RECONSUME_LATER → `%RETRY%<group>` with the reconsume count rising, then the DLQ past the
//! maximum, readable), delay levels 1–3 never early and on time, and orderly consumption of
//! sharding keys by two orderly consumers with a third joining midway.
//! The node runs with short delay levels so retries come back within seconds.
#![allow(clippy::unwrap_used)] // test code: failures should panic

use std::collections::{BTreeMap, BTreeSet};
use std::time::Duration;

use serde_json::Value;
use stratus_tests::{
    ClientRun, Node, args, client_installed, clients_required, now_ms, run_client,
};

const LONG: Duration = Duration::from_secs(180);

fn require(client: &str) -> bool {
    if client_installed(client) {
        return true;
    }
    assert!(!clients_required(), "client {client} is not installed");
    eprintln!("skipping: client {client} is not installed");
    false
}

fn start(dir: &std::path::Path) -> Node {
    let cfg = dir.join("stratus.toml");
    // Levels 1–3 as the test measures them, then 1 s for every retry level.
    std::fs::write(
        &cfg,
        "[broker]\nmessage_delay_level = \"1s 2s 3s 1s 1s 1s 1s 1s 1s 1s 1s 1s 1s 1s 1s 1s 1s 1s\"\n",
    )
    .unwrap();
    Node::start_with(&dir.join("data"), &["--config", cfg.to_str().unwrap()]).unwrap()
}

fn produce(
    client: &str,
    node: &Node,
    scratch: &std::path::Path,
    topic: &str,
    prefix: &str,
    count: u32,
    extra: &[&str],
) -> Vec<Value> {
    let count_s = count.to_string();
    let mut a = vec![
        "produce",
        "--namesrv",
        &node.namesrv.to_string(),
        "--topic",
        topic,
        "--group",
        "PGD",
        "--count",
        &count_s,
        "--mode",
        "sync",
        "--tag",
        "TagD",
        "--keys-prefix",
        prefix,
        "--body-size",
        "64",
        "--id-prefix",
        prefix,
    ]
    .into_iter()
    .map(str::to_owned)
    .collect::<Vec<_>>();
    a.extend(extra.iter().map(|s| (*s).to_owned()));
    let (code, ev) = run_client(client, &a, scratch, LONG).unwrap();
    assert_eq!(code, 0, "{client} produce: {ev:?}");
    ev
}

fn retry_and_dlq(client: &str) {
    if !require(client) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let scratch = dir.path().join("clients");
    let node = start(dir.path());
    let topic = format!("RETRY_{client}");
    produce(client, &node, &scratch, &topic, "retry", 1, &[]);

    // Fails twice, then succeeds: the reconsume count rises 0, 1 and the third delivery is
    // accepted with reconsumeTimes 2.
    let group = format!("RG_{client}");
    let a = args(&[
        "consume",
        "--namesrv",
        &node.namesrv_arg(),
        "--topic",
        &topic,
        "--group",
        &group,
        "--expr",
        "*",
        "--expect",
        "1",
        "--timeout-secs",
        "120",
        "--from",
        "first",
        "--fail-times",
        "2",
    ]);
    let (code, ev) = run_client(client, &a, &scratch, LONG).unwrap();
    assert_eq!(
        code,
        0,
        "{client} retry consumer: {ev:?}\n{}",
        node.log_text()
    );
    let retries: Vec<i64> = ev
        .iter()
        .filter(|e| e["event"] == "retry")
        .map(|e| e["reconsumeTimes"].as_i64().unwrap())
        .collect();
    assert_eq!(
        retries,
        vec![0, 1],
        "{client}: failed deliveries with a rising count: {ev:?}"
    );
    let recv: Vec<&Value> = ev.iter().filter(|e| e["event"] == "recv").collect();
    assert_eq!(recv.len(), 1);
    assert_eq!(recv[0]["reconsumeTimes"].as_i64(), Some(2));
    assert_eq!(recv[0]["keys"].as_str(), Some("retry-0"));

    // Never succeeds: past the client's maximum (2) it lands in the DLQ, readable.
    let dtopic = format!("DEAD_{client}");
    produce(client, &node, &scratch, &dtopic, "dead", 1, &[]);
    let dgroup = format!("DG_{client}");
    let a = args(&[
        "consume",
        "--namesrv",
        &node.namesrv_arg(),
        "--topic",
        &dtopic,
        "--group",
        &dgroup,
        "--expr",
        "*",
        "--expect",
        "1",
        "--timeout-secs",
        "40",
        "--from",
        "first",
        "--fail-times",
        "100",
        "--max-reconsume",
        "2",
    ]);
    let (_, ev) = run_client(client, &a, &scratch, LONG).unwrap();
    assert!(
        ev.iter().filter(|e| e["event"] == "retry").count() >= 3,
        "{client}: three failed deliveries: {ev:?}"
    );
    let a = args(&[
        "consume",
        "--namesrv",
        &node.namesrv_arg(),
        "--topic",
        &format!("%DLQ%{dgroup}"),
        "--group",
        &format!("DLQR_{client}"),
        "--expr",
        "*",
        "--expect",
        "1",
        "--timeout-secs",
        "60",
        "--from",
        "first",
    ]);
    let (code, ev) = run_client(client, &a, &scratch, LONG).unwrap();
    assert_eq!(
        code,
        0,
        "{client}: the dead letter is consumable: {ev:?}\n{}",
        node.log_text()
    );
    let recv: Vec<&Value> = ev.iter().filter(|e| e["event"] == "recv").collect();
    assert_eq!(recv[0]["keys"].as_str(), Some("dead-0"));
}

fn delay_levels(client: &str) {
    if !require(client) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let scratch = dir.path().join("clients");
    let node = start(dir.path());
    let topic = format!("DELAY_{client}");
    produce(client, &node, &scratch, &topic, "seed", 1, &[]);
    let a = args(&[
        "consume",
        "--namesrv",
        &node.namesrv_arg(),
        "--topic",
        &topic,
        "--group",
        &format!("DLG_{client}"),
        "--expr",
        "*",
        "--expect",
        "4",
        "--timeout-secs",
        "90",
        "--from",
        "first",
    ]);
    let consumer = ClientRun::spawn(client, &a, &scratch).unwrap();
    consumer.wait_for("ready", Duration::from_secs(60)).unwrap();
    let mut sent_at = BTreeMap::new();
    for level in 1..=3 {
        let ev = produce(
            client,
            &node,
            &scratch,
            &topic,
            &format!("l{level}"),
            1,
            &["--delay-level", &level.to_string()],
        );
        let sent = ev.iter().find(|e| e["event"] == "sent").unwrap();
        sent_at.insert(
            format!("l{level}-0"),
            (level, sent["_rx_ms"].as_i64().unwrap()),
        );
    }
    let (_, ev) = consumer.wait(LONG).unwrap();
    for e in ev.iter().filter(|e| e["event"] == "recv") {
        let key = e["keys"].as_str().unwrap();
        let Some((level, at)) = sent_at.get(key) else {
            continue;
        };
        // From the message's birth (the producer's clock, this machine's): a delivery is
        // due `level` after its store, which is after its birth, so this lower bound holds
        // however late the harness saw the producer's `sent` line.
        let at = e["bornTs"].as_i64().unwrap_or(*at);
        let waited = e["_rx_ms"].as_i64().unwrap() - at;
        let want = i64::from(*level) * 1000;
        assert!(
            waited >= want - 50,
            "{client}: level {level} delivered early after {waited} ms"
        );
        assert!(
            waited < want + 2500,
            "{client}: level {level} took {waited} ms"
        );
        sent_at.remove(key);
    }
    assert!(
        sent_at.is_empty(),
        "{client}: delayed messages not received: {sent_at:?}\n{}",
        node.log_text()
    );
}

fn orderly(client: &str) {
    if !require(client) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let scratch = dir.path().join("clients");
    let node = start(dir.path());
    let topic = format!("ORDER_{client}");
    produce(
        client,
        &node,
        &scratch,
        &topic,
        "o",
        1,
        &["--sharding-key-count", "10"],
    );
    let group = format!("OG_{client}");
    let spawn = || {
        let a = args(&[
            "consume",
            "--namesrv",
            &node.namesrv_arg(),
            "--topic",
            &topic,
            "--group",
            &group,
            "--expr",
            "*",
            "--expect",
            "100000",
            "--timeout-secs",
            "150",
            "--from",
            "first",
            "--idle-exit-secs",
            "15",
            "--orderly",
        ]);
        ClientRun::spawn(client, &a, &scratch).unwrap()
    };
    let c1 = spawn();
    let c2 = spawn();
    c1.wait_for("ready", Duration::from_secs(60)).unwrap();
    c2.wait_for("ready", Duration::from_secs(60)).unwrap();
    // 10 keys × 100 steps; a third consumer joins midway.
    produce(
        client,
        &node,
        &scratch,
        &topic,
        "s",
        500,
        &["--sharding-key-count", "10"],
    );
    let c3 = spawn();
    produce(
        client,
        &node,
        &scratch,
        &topic,
        "t",
        500,
        &["--sharding-key-count", "10"],
    );
    let mut all_keys = BTreeSet::new();
    for (i, c) in [c1, c2, c3].into_iter().enumerate() {
        let (_, ev) = c.wait(LONG).unwrap();
        // Within one consumer, each key's messages arrive in send order.
        let mut last: BTreeMap<u64, (u8, u64)> = BTreeMap::new();
        for e in ev.iter().filter(|e| e["event"] == "recv") {
            let key = e["keys"].as_str().unwrap();
            let (prefix, seq) = key.rsplit_once('-').unwrap();
            let seq: u64 = seq.parse().unwrap();
            let phase = match prefix {
                "o" => 0u8,
                "s" => 1,
                _ => 2,
            };
            let skey = seq % 10;
            if let Some(prev) = last.get(&skey) {
                assert!(
                    (phase, seq) >= *prev,
                    "{client} consumer {i}: key {skey} out of order: {key} after {prev:?}"
                );
            }
            last.insert(skey, (phase, seq));
            all_keys.insert(key.to_owned());
        }
    }
    assert_eq!(
        all_keys.len(),
        1001,
        "{client}: every message consumed\n{}",
        node.log_text()
    );
}

fn timers_and_restart(client: &str, timers: bool) {
    if !require(client) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let scratch = dir.path().join("clients");
    let mut node = start(dir.path());
    let topic = format!("TIMER_{client}");
    produce(client, &node, &scratch, &topic, "seed", 1, &[]);
    if timers {
        // A timer message for t + 7 s arrives between 7 and 8 s.
        let a = args(&[
            "consume",
            "--namesrv",
            &node.namesrv_arg(),
            "--topic",
            &topic,
            "--group",
            &format!("TG_{client}"),
            "--expr",
            "*",
            "--expect",
            "2",
            "--timeout-secs",
            "60",
            "--from",
            "first",
        ]);
        let consumer = ClientRun::spawn(client, &a, &scratch).unwrap();
        consumer.wait_for("ready", Duration::from_secs(60)).unwrap();
        // The producer computes the due time after it starts and before its send returns:
        // "never early" is measured from the spawn, "on time" from the acknowledgement.
        let spawned = now_ms();
        let ev = produce(
            client,
            &node,
            &scratch,
            &topic,
            "timer",
            1,
            &["--deliver-after-ms", "7000"],
        );
        let acked = ev.iter().find(|e| e["event"] == "sent").unwrap()["_rx_ms"]
            .as_i64()
            .unwrap();
        let (_, ev) = consumer.wait(LONG).unwrap();
        let got = ev
            .iter()
            .find(|e| e["event"] == "recv" && e["keys"] == "timer-0")
            .expect("timer message received");
        let at = got["_rx_ms"].as_i64().unwrap();
        assert!(
            at - spawned >= 7_000,
            "{client}: timer for +7 s arrived early, {} ms after the producer started",
            at - spawned
        );
        assert!(
            at - acked < 8_000,
            "{client}: timer for +7 s arrived {} ms after its send",
            at - acked
        );
    }
    // Pending delays (and timers) survive a kill -9 of the node: none lost.
    produce(
        client,
        &node,
        &scratch,
        &topic,
        "pend",
        3,
        &["--delay-level", "2"],
    );
    if timers {
        produce(
            client,
            &node,
            &scratch,
            &topic,
            "ptimer",
            2,
            &["--deliver-after-ms", "2500"],
        );
    }
    node.kill9().unwrap();
    node.restart().unwrap();
    let a = args(&[
        "consume",
        "--namesrv",
        &node.namesrv_arg(),
        "--topic",
        &topic,
        "--group",
        &format!("TR_{client}"),
        "--expr",
        "*",
        "--expect",
        "100000",
        "--timeout-secs",
        "90",
        "--from",
        "first",
        "--idle-exit-secs",
        "8",
    ]);
    let (_, ev) = run_client(client, &a, &scratch, LONG).unwrap();
    let keys: BTreeSet<String> = ev
        .iter()
        .filter(|e| e["event"] == "recv")
        .map(|e| e["keys"].as_str().unwrap().to_owned())
        .collect();
    let mut want: BTreeSet<String> = ["pend-0", "pend-1", "pend-2"]
        .into_iter()
        .map(str::to_owned)
        .collect();
    if timers {
        want.extend(["ptimer-0".to_owned(), "ptimer-1".to_owned()]);
    }
    assert!(
        want.is_subset(&keys),
        "{client}: pending delayed/timer messages lost across kill -9: got {keys:?}\n{}",
        node.log_text()
    );
}

#[test]
fn java_5_timer_messages_and_restart_with_pending_delays() {
    timers_and_restart("java5", true);
}

#[test]
fn go_restart_with_pending_delays() {
    timers_and_restart("go", false);
}

#[test]
fn go_retry_and_dead_letters() {
    retry_and_dlq("go");
}

#[test]
fn rust_retry_and_dead_letters() {
    retry_and_dlq("rust");
}

#[test]
fn java_5_retry_and_dead_letters() {
    retry_and_dlq("java5");
}

#[test]
fn go_delay_levels() {
    delay_levels("go");
}

#[test]
fn java_5_delay_levels() {
    delay_levels("java5");
}

#[test]
fn java_5_orderly_consumers_keep_per_key_order() {
    orderly("java5");
}

//! Transactional producers of real clients (Java 4.9 and 5.x `TransactionMQProducer`, the
//! Go transaction producer) against a running `stratus` process: commit, rollback, unknown
//! then check then commit, unknown then check then rollback, a producer that dies before
//! ending (the check goes to another producer of its group), and a node kill -9 with
//! transactions pending. A consumer then sees exactly the committed messages.
//!
//! A client that is not installed is skipped with a message, unless
//! `STRATUS_REQUIRE_CLIENTS=1` (set by `./test.sh`).
#![allow(clippy::unwrap_used)] // test code: failures should panic

use std::collections::BTreeMap;
use std::time::Duration;

use serde_json::Value;
use stratus_tests::{ClientRun, Node, args, client_installed, clients_required, run_client};

const LONG: Duration = Duration::from_secs(180);

fn require(client: &str) -> bool {
    if client_installed(client) {
        return true;
    }
    assert!(
        !clients_required(),
        "client {client} is not installed (tests/clients/install.sh {client})"
    );
    eprintln!("skipping: client {client} is not installed");
    false
}

struct Flow<'a> {
    client: &'a str,
    node: Node,
    scratch: std::path::PathBuf,
    topic: String,
}

impl Flow<'_> {
    /// Runs `txn` and returns its events.
    fn txn(&self, step: &str, count: u32, local: &str, check: &str, stay: u32) -> Vec<Value> {
        self.txn_run(step, count, local, check, stay)
            .wait(LONG)
            .unwrap()
            .1
    }

    fn txn_run(&self, step: &str, count: u32, local: &str, check: &str, stay: u32) -> ClientRun {
        let a = args(&[
            "txn",
            "--namesrv",
            &self.node.namesrv_arg(),
            "--topic",
            &self.topic,
            "--group",
            &format!("TPG_{}_{step}", self.client),
            "--count",
            &count.to_string(),
            "--tag",
            "TagT",
            "--keys-prefix",
            step,
            "--body-size",
            "80",
            "--id-prefix",
            step,
            "--local",
            local,
            "--check",
            check,
            "--stay-secs",
            &stay.to_string(),
        ]);
        ClientRun::spawn(self.client, &a, &self.scratch).unwrap()
    }
}

fn count(events: &[Value], kind: &str) -> usize {
    events.iter().filter(|e| e["event"] == kind).count()
}

fn transactions(client: &str) {
    if !require(client) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let cfg = dir.path().join("stratus.toml");
    std::fs::write(
        &cfg,
        "[transaction]\ntimeout = \"1s\"\ncheck_interval = \"1s\"\n",
    )
    .unwrap();
    let node = Node::start_with(
        &dir.path().join("data"),
        &["--config", cfg.to_str().unwrap()],
    )
    .unwrap();
    let mut flow = Flow {
        client,
        node,
        scratch: dir.path().join("clients"),
        topic: format!("TX_{client}"),
    };

    let ev = flow.txn("commit", 4, "commit", "commit", 0);
    assert_eq!(count(&ev, "sent"), 4, "{client} commit: {ev:?}");
    let ev = flow.txn("rollback", 3, "rollback", "commit", 0);
    assert_eq!(count(&ev, "sent"), 3, "{client} rollback: {ev:?}");
    let ev = flow.txn("unknowncommit", 3, "unknown", "commit", 8);
    assert_eq!(count(&ev, "sent"), 3);
    assert!(
        count(&ev, "check") >= 3,
        "{client}: unknown transactions are checked back: {ev:?}\n{}",
        flow.node.log_text()
    );
    let ev = flow.txn("unknownrollback", 2, "unknown", "rollback", 8);
    assert!(count(&ev, "check") >= 2, "{client}: checked back: {ev:?}");

    // A producer dies before ending; another live producer of its group gets the checks.
    let a = args(&[
        "txn",
        "--namesrv",
        &flow.node.namesrv_arg(),
        "--topic",
        &flow.topic,
        "--group",
        &format!("TPG_{client}_die"),
        "--count",
        "2",
        "--tag",
        "TagT",
        "--keys-prefix",
        "die",
        "--body-size",
        "80",
        "--id-prefix",
        "die",
        "--local",
        "die",
        "--check",
        "commit",
        "--stay-secs",
        "0",
    ]);
    let (_, ev) = run_client(client, &a, &flow.scratch, LONG).unwrap();
    assert!(
        count(&ev, "half") >= 1,
        "{client}: the dying producer stored a half message: {ev:?}"
    );
    let died = count(&ev, "half");
    let ev = flow.txn("die", 0, "commit", "commit", 8);
    assert!(
        count(&ev, "check") >= died,
        "{client}: the other producer of the group was asked: {ev:?}"
    );

    // Transactions pending across kill -9: after the restart a producer commits them.
    let ev = flow.txn("restart", 2, "unknown", "unknown", 0);
    assert_eq!(count(&ev, "sent"), 2);
    flow.node.kill9().unwrap();
    flow.node.restart().unwrap();
    let ev = flow.txn("restart", 0, "commit", "commit", 10);
    assert!(
        count(&ev, "check") >= 2,
        "{client}: checks after the restart: {ev:?}\n{}",
        flow.node.log_text()
    );

    // A consumer sees exactly the committed messages.
    let a = args(&[
        "consume",
        "--namesrv",
        &flow.node.namesrv_arg(),
        "--topic",
        &flow.topic,
        "--group",
        &format!("TCG_{client}"),
        "--model",
        "clustering",
        "--expr",
        "*",
        "--expect",
        "100000",
        "--timeout-secs",
        "120",
        "--from",
        "first",
        "--idle-exit-secs",
        "10",
    ]);
    let (_, ev) = run_client(client, &a, &flow.scratch, LONG).unwrap();
    let mut by_step: BTreeMap<String, usize> = BTreeMap::new();
    for e in ev.iter().filter(|e| e["event"] == "recv") {
        let key = e["keys"].as_str().unwrap();
        let step = key.rsplit_once('-').map_or(key, |(s, _)| s).to_owned();
        *by_step.entry(step).or_default() += 1;
    }
    let want: BTreeMap<String, usize> = [
        ("commit", 4),
        ("unknowncommit", 3),
        ("die", died),
        ("restart", 2),
    ]
    .into_iter()
    .map(|(k, v)| (k.to_owned(), v))
    .collect();
    assert_eq!(
        by_step,
        want,
        "{client}: exactly the committed messages\n{}",
        flow.node.log_text()
    );
}

#[test]
fn java_5_transactions() {
    transactions("java5");
}

#[test]
fn java_4_9_transactions() {
    transactions("java49");
}

#[test]
fn go_transactions() {
    transactions("go");
}

#[test]
fn rust_transactions() {
    transactions("rust");
}

//! Real RocketMQ clients against a running `stratus` process: the Java 4.9 and 5.x
//! clients, the Go client, the C++ client (through its Python wrapper) and the Rust client,
//! each running the same flows through `tests/clients/run.sh` (see `tests/clients/README.md`).
//!
//! Each flow: sync, async, one-way and batch sends with tags and keys and a 1 MiB body; a
//! pull (or lite-pull) consumer reading from offset 0; two clustering push consumers sharing
//! the queues of a `TagA || TagB` subscription; two broadcasting consumers each receiving
//! everything; and a node restart in the middle of a producer run with every acknowledged
//! message consumed afterwards. Bodies are checked by CRC against what the producer sent.
//!
//! A client that is not installed is skipped with a message, unless
//! `STRATUS_REQUIRE_CLIENTS=1` (set by `./test.sh`), where it fails the test.
#![allow(clippy::unwrap_used, clippy::disallowed_methods)] // test code: failures should panic; real timers

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::time::Duration;

use serde_json::Value;
use stratus_compat::RequestCode;
use stratus_compat::client::RemotingClient;
use stratus_compat::command::RemotingCommand;
use stratus_compat::request::heartbeat::ConsumerIdList;
use stratus_tests::{ClientRun, Node, args, client_installed, clients_required, run_client};

const LONG: Duration = Duration::from_secs(180);

/// The body every client program sends for (prefix, seq, size).
fn body(prefix: &str, seq: u64, size: usize) -> Vec<u8> {
    let unit = format!("{prefix}{seq}:").into_bytes();
    (0..size).map(|i| unit[i % unit.len()]).collect()
}

struct Sent {
    /// message key (`<prefix>-<seq>`, unique per message) → (tag, key prefix, seq, body size)
    by_id: BTreeMap<String, (String, String, u64, usize)>,
}

fn require(client: &str) -> bool {
    if client_installed(client) {
        return true;
    }
    assert!(
        !clients_required(),
        "client {client} is not installed (tests/clients/install.sh {client})"
    );
    eprintln!("skipping: client {client} is not installed (tests/clients/install.sh {client})");
    false
}

#[allow(clippy::too_many_arguments)] // one flat call per send kind reads best in the flow
fn produce(
    client: &str,
    node: &Node,
    scratch: &Path,
    topic: &str,
    mode: &str,
    tag: &str,
    count: u64,
    size: usize,
    prefix: &str,
    sent: &mut Sent,
) {
    let a = args(&[
        "produce",
        "--namesrv",
        &node.namesrv_arg(),
        "--topic",
        topic,
        "--group",
        &format!("PG_{client}"),
        "--count",
        &count.to_string(),
        "--mode",
        mode,
        "--tag",
        tag,
        "--keys-prefix",
        prefix,
        "--body-size",
        &size.to_string(),
        "--batch-size",
        "4",
        "--id-prefix",
        prefix,
    ]);
    let (code, events) = run_client(client, &a, scratch, LONG).unwrap();
    let acked: Vec<&Value> = events.iter().filter(|e| e["event"] == "sent").collect();
    assert_eq!(
        code,
        0,
        "{client} produce {mode}: exit {code}, events {events:?}\nnode log:\n{}",
        node.log_text()
    );
    assert_eq!(
        acked.len() as u64,
        count,
        "{client} produce {mode}: every send acknowledged"
    );
    for e in acked {
        let seq = e["seq"].as_u64().unwrap();
        let id = format!("{prefix}-{seq}");
        if mode != "oneway" {
            // The C++ client reports no id for a batch (its batch has no UNIQ_KEY of its own).
            if mode != "batch" {
                assert!(
                    !e["msgId"].as_str().unwrap_or("").is_empty(),
                    "{client} {mode}: msgId in result: {e}"
                );
            }
            assert!(
                e["queueOffset"].as_i64().unwrap() >= 0,
                "{client} {mode}: offset in result: {e}"
            );
        }
        sent.by_id.insert(
            id,
            (
                tag.to_owned(),
                prefix.to_owned(),
                e["seq"].as_u64().unwrap(),
                size,
            ),
        );
    }
}

/// Checks received messages against what was sent; returns the keys received.
fn check_received(client: &str, what: &str, recv: &[Value], sent: &Sent) -> BTreeSet<String> {
    let mut ids = BTreeSet::new();
    for r in recv {
        let id = r["keys"].as_str().unwrap().to_owned();
        let Some((tag, prefix, seq, size)) = sent.by_id.get(&id) else {
            panic!("{client} {what}: received a message that was never sent: {r}");
        };
        assert!(
            !r["msgId"].as_str().unwrap_or("").is_empty(),
            "{client} {what}: msgId of {id}"
        );
        assert_eq!(
            r["tags"].as_str(),
            Some(tag.as_str()),
            "{client} {what}: tag of {id}"
        );
        assert_eq!(
            r["bodyLen"].as_u64(),
            Some(*size as u64),
            "{client} {what}: body length of {id}"
        );
        let want = crc32fast::hash(&body(prefix, *seq, *size));
        assert_eq!(
            r["bodyCrc32"].as_u64(),
            Some(u64::from(want)),
            "{client} {what}: body bytes of {id}"
        );
        ids.insert(id);
    }
    ids
}

fn ids_with_tags(sent: &Sent, tags: &[&str]) -> BTreeSet<String> {
    sent.by_id
        .iter()
        .filter(|(_, v)| tags.contains(&v.0.as_str()))
        .map(|(k, _)| k.clone())
        .collect()
}

/// Waits until the server lists `n` consumers in `group` (both joined and were notified).
fn wait_for_members(node: &Node, group: &str, n: usize) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let c = RemotingClient::connect(node.broker).await.unwrap();
        let deadline = std::time::Instant::now() + Duration::from_secs(60);
        loop {
            let mut cmd = RemotingCommand::request(RequestCode::GetConsumerListByGroup.to_i32(), 0);
            cmd.put_ext("consumerGroup", group);
            let r = c.invoke(cmd, Duration::from_secs(5)).await.unwrap();
            let ids: Option<ConsumerIdList> = serde_json::from_slice(&r.body).ok();
            if ids.is_some_and(|l| l.consumer_id_list.len() >= n) {
                return;
            }
            assert!(
                std::time::Instant::now() < deadline,
                "{group}: {n} consumers never joined"
            );
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
    });
}

#[allow(clippy::too_many_arguments)] // mirrors the client CLI flags one to one
fn consumer(
    client: &str,
    node: &Node,
    scratch: &Path,
    topic: &str,
    group: &str,
    model: &str,
    expr: &str,
    expect: usize,
) -> ClientRun {
    let a = args(&[
        "consume",
        "--namesrv",
        &node.namesrv_arg(),
        "--topic",
        topic,
        "--group",
        group,
        "--model",
        model,
        "--expr",
        expr,
        "--expect",
        &expect.to_string(),
        "--timeout-secs",
        "150",
        "--from",
        "first",
        "--idle-exit-secs",
        "12",
    ]);
    ClientRun::spawn(client, &a, scratch).unwrap()
}

fn flow(client: &str, restart_with_kill9: bool) {
    if !require(client) {
        return;
    }
    // STRATUS_KEEP_TEST_DIRS=1 keeps node data, client state and logs for a look afterwards.
    let keep = std::env::var_os("STRATUS_KEEP_TEST_DIRS").is_some();
    let dir = tempfile::Builder::new()
        .prefix("stratus-e2e-")
        .disable_cleanup(keep)
        .tempdir()
        .unwrap();
    if keep {
        eprintln!("{client}: test files kept in {}", dir.path().display());
    }
    let scratch = dir.path().join("clients");
    let mut node = Node::start(&dir.path().join("data")).unwrap();
    let topic = format!("E2E_{client}");
    let mut sent = Sent {
        by_id: BTreeMap::new(),
    };

    // Sends of every kind, with tags and keys, and a 1 MiB body.
    produce(
        client, &node, &scratch, &topic, "sync", "TagA", 12, 300, "s", &mut sent,
    );
    produce(
        client, &node, &scratch, &topic, "async", "TagB", 12, 200, "a", &mut sent,
    );
    produce(
        client, &node, &scratch, &topic, "oneway", "TagC", 6, 100, "o", &mut sent,
    );
    produce(
        client, &node, &scratch, &topic, "batch", "TagA", 8, 150, "b", &mut sent,
    );
    produce(
        client,
        &node,
        &scratch,
        &topic,
        "sync",
        "TagB",
        1,
        1024 * 1024,
        "big",
        &mut sent,
    );
    let total = sent.by_id.len();
    assert_eq!(total, 39);

    // A pull / lite-pull consumer reads everything from offset 0.
    let a = args(&[
        "pull",
        "--namesrv",
        &node.namesrv_arg(),
        "--topic",
        &topic,
        "--group",
        &format!("PULL_{client}"),
        "--expr",
        "*",
        "--expect",
        &total.to_string(),
        "--timeout-secs",
        "120",
    ]);
    let (code, events) = run_client(client, &a, &scratch, LONG).unwrap();
    if code == 3 {
        eprintln!("{client}: pull consumer unsupported by this client: {events:?}");
    } else {
        assert_eq!(
            code,
            0,
            "{client} pull: {events:?}\nnode log:\n{}",
            node.log_text()
        );
        let recv: Vec<Value> = events
            .into_iter()
            .filter(|e| e["event"] == "recv")
            .collect();
        let got = check_received(client, "pull", &recv, &sent);
        assert_eq!(
            got.len(),
            total,
            "{client} pull: every message from offset 0"
        );
    }

    // Java consumers: an SQL92 subscription over properties receives exactly the matches.
    if client.starts_with("java") {
        let a = args(&[
            "consume",
            "--namesrv",
            &node.namesrv_arg(),
            "--topic",
            &topic,
            "--group",
            &format!("SQL_{client}"),
            "--sql",
            "TAGS = 'TagA' AND seq BETWEEN 2 AND 5",
            "--expect",
            "8",
            "--timeout-secs",
            "90",
            "--from",
            "first",
            "--idle-exit-secs",
            "10",
        ]);
        let (code, events) = run_client(client, &a, &scratch, LONG).unwrap();
        let recv: Vec<Value> = events
            .into_iter()
            .filter(|e| e["event"] == "recv")
            .collect();
        let got = check_received(client, "sql92", &recv, &sent);
        let want: BTreeSet<String> = ["s-2", "s-3", "s-4", "s-5", "b-2", "b-3", "b-4", "b-5"]
            .into_iter()
            .map(str::to_owned)
            .collect();
        assert_eq!(
            got,
            want,
            "{client} sql92 (exit {code}): exactly the matching messages\nnode log:\n{}",
            node.log_text()
        );
    }

    // Clustering: two push consumers of one group share the queues of `TagA || TagB`. Both
    // join first (the group has two members on the server), then a mixed stream arrives.
    let ctopic = format!("CL_{client}");
    let mut csent = Sent {
        by_id: BTreeMap::new(),
    };
    produce(
        client, &node, &scratch, &ctopic, "sync", "TagA", 1, 64, "seed", &mut csent,
    );
    let group = format!("CG_{client}");
    let cexpect = 1 + 16 + 16;
    let c1 = consumer(
        client,
        &node,
        &scratch,
        &ctopic,
        &group,
        "clustering",
        "TagA || TagB",
        cexpect,
    );
    let c2 = consumer(
        client,
        &node,
        &scratch,
        &ctopic,
        &group,
        "clustering",
        "TagA || TagB",
        cexpect,
    );
    wait_for_members(&node, &group, 2);
    produce(
        client, &node, &scratch, &ctopic, "sync", "TagA", 16, 300, "ca", &mut csent,
    );
    produce(
        client, &node, &scratch, &ctopic, "sync", "TagC", 8, 100, "cc", &mut csent,
    );
    produce(
        client, &node, &scratch, &ctopic, "async", "TagB", 16, 200, "cb", &mut csent,
    );
    let wanted = ids_with_tags(&csent, &["TagA", "TagB"]);
    let (_, e1) = c1.wait(LONG).unwrap();
    let (_, e2) = c2.wait(LONG).unwrap();
    let r1: Vec<Value> = e1.into_iter().filter(|e| e["event"] == "recv").collect();
    let r2: Vec<Value> = e2.into_iter().filter(|e| e["event"] == "recv").collect();
    let g1 = check_received(client, "clustering-1", &r1, &csent);
    let g2 = check_received(client, "clustering-2", &r2, &csent);
    let union: BTreeSet<String> = g1.union(&g2).cloned().collect();
    assert_eq!(
        union,
        wanted,
        "{client} clustering: exactly the TagA/TagB messages, all of them\nnode log:\n{}",
        node.log_text()
    );
    assert!(
        !g1.is_empty() && !g2.is_empty(),
        "{client} clustering: both consumers got queues ({} / {})",
        g1.len(),
        g2.len()
    );

    // Broadcasting: two consumers of one group each receive everything: what was stored
    // before they started (consume from first) and what arrives while they run.
    let btopic = format!("BC_{client}");
    let mut bsent = Sent {
        by_id: BTreeMap::new(),
    };
    produce(
        client, &node, &scratch, &btopic, "sync", "TagA", 4, 120, "p", &mut bsent,
    );
    let bgroup = format!("BG_{client}");
    let bexpect = 4 + 10;
    let b1 = consumer(
        client,
        &node,
        &scratch,
        &btopic,
        &bgroup,
        "broadcasting",
        "*",
        bexpect,
    );
    let b2 = consumer(
        client,
        &node,
        &scratch,
        &btopic,
        &bgroup,
        "broadcasting",
        "*",
        bexpect,
    );
    b1.wait_for("ready", Duration::from_secs(60)).unwrap();
    b2.wait_for("ready", Duration::from_secs(60)).unwrap();
    produce(
        client, &node, &scratch, &btopic, "sync", "TagB", 10, 90, "q", &mut bsent,
    );
    for (i, b) in [b1, b2].into_iter().enumerate() {
        let (_, ev) = b.wait(LONG).unwrap();
        let recv: Vec<Value> = ev.into_iter().filter(|e| e["event"] == "recv").collect();
        let got = check_received(client, "broadcasting", &recv, &bsent);
        let missing: Vec<&String> = bsent.by_id.keys().filter(|k| !got.contains(*k)).collect();
        assert!(
            missing.is_empty(),
            "{client} broadcasting consumer {i} got everything; missing {missing:?}"
        );
    }

    // A node restart in the middle of a producer run: nothing acknowledged is lost.
    let rtopic = format!("RESTART_{client}");
    let a = args(&[
        "produce",
        "--namesrv",
        &node.namesrv_arg(),
        "--topic",
        &rtopic,
        "--group",
        &format!("PGR_{client}"),
        "--count",
        "120",
        "--mode",
        "sync",
        "--tag",
        "TagR",
        "--keys-prefix",
        "r",
        "--body-size",
        "64",
        "--id-prefix",
        "r",
    ]);
    let producer = ClientRun::spawn(client, &a, &scratch).unwrap();
    let deadline = std::time::Instant::now() + Duration::from_secs(60);
    while producer.events_of("sent").len() < 30 {
        assert!(
            std::time::Instant::now() < deadline,
            "{client}: producer made no progress: {}",
            producer.stderr()
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    if restart_with_kill9 {
        node.kill9().unwrap();
    } else {
        assert!(
            node.terminate().unwrap(),
            "graceful stop; log:\n{}",
            node.log_text()
        );
    }
    std::thread::sleep(Duration::from_millis(500));
    node.restart().unwrap();
    let (_, events) = producer.wait(LONG).unwrap();
    let mut rsent = Sent {
        by_id: BTreeMap::new(),
    };
    for e in events.iter().filter(|e| e["event"] == "sent") {
        rsent.by_id.insert(
            format!("r-{}", e["seq"].as_u64().unwrap()),
            ("TagR".into(), "r".into(), e["seq"].as_u64().unwrap(), 64),
        );
    }
    assert!(
        rsent.by_id.len() >= 30,
        "{client}: acknowledged before the restart are counted"
    );
    let a = args(&[
        "consume",
        "--namesrv",
        &node.namesrv_arg(),
        "--topic",
        &rtopic,
        "--group",
        &format!("CGR_{client}"),
        "--model",
        "clustering",
        "--expr",
        "*",
        // Sends that failed on the client may still have been stored (the node died after
        // committing, before answering), so the consumer cannot stop at the acknowledged
        // count: it reads until the topic goes quiet.
        "--expect",
        "100000",
        "--timeout-secs",
        "150",
        "--from",
        "first",
        "--idle-exit-secs",
        "15",
    ]);
    let (_, events) = run_client(client, &a, &scratch, LONG).unwrap();
    let recv: Vec<Value> = events
        .into_iter()
        .filter(|e| e["event"] == "recv")
        .collect();
    let got: BTreeSet<String> = recv
        .iter()
        .filter_map(|r| r["keys"].as_str().map(str::to_owned))
        .collect();
    let lost: Vec<&String> = rsent.by_id.keys().filter(|id| !got.contains(*id)).collect();
    assert!(
        lost.is_empty(),
        "{client}: acknowledged messages lost across the restart: {lost:?}\nnode log:\n{}",
        node.log_text()
    );
    for r in recv
        .iter()
        .filter(|r| rsent.by_id.contains_key(r["keys"].as_str().unwrap_or("")))
    {
        check_received(client, "after restart", std::slice::from_ref(r), &rsent);
    }
}

#[test]
fn java_4_9_client_produces_and_consumes() {
    flow("java49", false);
}

#[test]
fn java_5_client_produces_and_consumes() {
    flow("java5", true);
}

#[test]
fn go_client_produces_and_consumes() {
    flow("go", true);
}

#[test]
fn cpp_client_produces_and_consumes() {
    flow("cpp", false);
}

#[test]
fn rust_client_produces_and_consumes() {
    flow("rust", true);
}

//! The operator commands of the real `mqadmin` 5.3.3 against three nodes on one metadata
//! database (PostgreSQL when `STRATUS_TEST_POSTGRES_URL` is set) and one object store, a
//! shard each, each command sent through a different node than the traffic it reads: the
//! cluster lists every shard at its owner, a topic made through one node is seen through
//! the others, consumer progress, message queries, subscription groups, broker config and
//! an offset reset hold whichever node is asked.

#![allow(clippy::unwrap_used, clippy::disallowed_methods)] // test code: failures should panic

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use stratus_tests::{
    Node, args, client_installed, clients_required, cluster_routes, free_port, free_shard_base,
    mqadmin, mqadmin_installed, run_client,
};

const NODES: [&str; 3] = ["a", "b", "c"];
const SENT: usize = 30;

/// mqadmin 5.3.3 through `node`; panics on a Java exception in the output.
fn admin(node: &Node, command: &[&str]) -> String {
    let out = mqadmin("5.3.3", &node.namesrv_arg(), command)
        .unwrap()
        .unwrap();
    assert!(
        !out.contains("Exception") && !out.contains("\tat org."),
        "mqadmin {command:?} failed:\n{out}"
    );
    out
}

/// consumerProgress rows of `topic`: (broker, queue) → (broker offset, consumer offset).
fn progress(out: &str, topic: &str) -> BTreeMap<(String, i64), (i64, i64)> {
    out.lines()
        .filter(|l| l.starts_with(topic) && !l.starts_with('#'))
        .map(|l| {
            let c: Vec<&str> = l.split_whitespace().collect();
            (
                (c[1].to_owned(), c[2].parse().unwrap()),
                (c[3].parse().unwrap(), c[4].parse().unwrap()),
            )
        })
        .collect()
}

fn diff_total(out: &str) -> i64 {
    out.lines()
        .find_map(|l| l.strip_prefix("Consume Diff Total: "))
        .unwrap_or_else(|| panic!("no diff total:\n{out}"))
        .trim()
        .parse()
        .unwrap()
}

#[test]
fn mqadmin_operates_three_nodes_through_any_of_them() {
    if !mqadmin_installed("5.3.3") || !client_installed("java5") {
        assert!(!clients_required(), "mqadmin 5.3.3 and java5 required");
        eprintln!("skipping: mqadmin 5.3.3 or the java5 client not installed");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let meta = stratus_tests::cluster_meta_url(dir);
    let objects = stratus_tests::cluster_object_store_url(dir);
    let shards = NODES.len().to_string();
    let mut nodes = Vec::new();
    for n in NODES {
        let ns: SocketAddr = format!("127.0.0.1:{}", free_port()).parse().unwrap();
        let base = free_shard_base(3);
        let id = format!("ops-{n}");
        nodes.push(
            Node::start_member(
                &dir.join(n),
                ns,
                format!("127.0.0.1:{base}").parse().unwrap(),
                &[
                    ("STRATUS_NODE__ID", id.as_str()),
                    ("STRATUS_NODE__SHARDS", shards.as_str()),
                    ("STRATUS_META__URL", meta.as_str()),
                    ("STRATUS_STORAGE__OBJECT_STORE_URL", objects.as_str()),
                ],
            )
            .unwrap(),
        );
    }
    // One shard per node.
    let deadline = Instant::now() + Duration::from_secs(90);
    let routes = loop {
        let r = cluster_routes(nodes[0].namesrv);
        let owners: std::collections::BTreeSet<&str> =
            r.values().map(|a| a.rsplit_once(':').unwrap().0).collect();
        let ports: std::collections::BTreeSet<u16> = r
            .values()
            .map(|a| a.rsplit_once(':').unwrap().1.parse().unwrap())
            .collect();
        let by_node = nodes
            .iter()
            .filter(|n| {
                (0..3).any(|s| ports.contains(&stratus_tests::shard_port(n.broker.port(), s)))
            })
            .count();
        if r.len() == 3 && by_node == 3 && !owners.is_empty() {
            break r;
        }
        assert!(Instant::now() < deadline, "not one shard per node: {r:?}");
        std::thread::sleep(Duration::from_millis(300));
    };
    let (a, b, c) = (&nodes[0], &nodes[1], &nodes[2]);

    // clusterList through c: the three shards at their owners.
    let out = admin(c, &["clusterList"]);
    let rows: BTreeMap<String, String> = out
        .lines()
        .filter(|l| l.starts_with("DefaultCluster"))
        .map(|l| {
            let col: Vec<&str> = l.split_whitespace().collect();
            (col[1].to_owned(), col[3].to_owned())
        })
        .collect();
    assert_eq!(
        rows,
        routes.clone().into_iter().collect::<BTreeMap<_, _>>(),
        "{out}"
    );

    // A topic made through a is listed through b and c.
    let out = admin(
        a,
        &[
            "updateTopic",
            "-t",
            "OpsT",
            "-c",
            "DefaultCluster",
            "-r",
            "2",
            "-w",
            "2",
        ],
    );
    assert_eq!(out.matches("create topic to").count(), 3, "{out}");
    for n in [b, c] {
        let out = admin(n, &["topicList"]);
        assert!(out.lines().any(|l| l.trim() == "OpsT"), "{out}");
    }

    // Traffic: a Java producer through b, a consumer group through c reading it all.
    let scratch = dir.join("clients");
    let (code, events) = run_client(
        "java5",
        &args(&[
            "produce",
            "--namesrv",
            &b.namesrv_arg(),
            "--topic",
            "OpsT",
            "--group",
            "OpsPG",
            "--count",
            &SENT.to_string(),
            "--mode",
            "sync",
            "--tag",
            "T",
            "--keys-prefix",
            "ok",
            "--body-size",
            "64",
        ]),
        &scratch,
        Duration::from_secs(120),
    )
    .unwrap();
    assert_eq!(code, 0, "{events:?}");
    let sent: Vec<_> = events.iter().filter(|e| e["event"] == "sent").collect();
    assert_eq!(sent.len(), SENT);
    let (code, events) = run_client(
        "java5",
        &args(&[
            "consume",
            "--namesrv",
            &c.namesrv_arg(),
            "--topic",
            "OpsT",
            "--group",
            "OpsG",
            "--expect",
            &SENT.to_string(),
            "--timeout-secs",
            "120",
            "--from",
            "first",
            "--idle-exit-secs",
            "8",
        ]),
        &scratch,
        Duration::from_secs(180),
    )
    .unwrap();
    let received = events.iter().filter(|e| e["event"] == "recv").count();
    assert_eq!(received, SENT, "exit {code}: {events:?}");

    // consumerProgress through a: every queue of the three shards consumed to its end. The
    // consumer's last commits are one-way requests sent as it shuts down: give them a
    // moment to land.
    let deadline = Instant::now() + Duration::from_secs(30);
    let out = loop {
        let out = admin(a, &["consumerProgress", "-g", "OpsG"]);
        if diff_total(&out) == 0 || Instant::now() > deadline {
            break out;
        }
        std::thread::sleep(Duration::from_secs(1));
    };
    let rows = progress(&out, "OpsT");
    assert_eq!(rows.len(), 6, "2 queues × 3 brokers:\n{out}");
    let broker_sum: i64 = rows.values().map(|(b, _)| b).sum();
    assert_eq!(broker_sum, SENT as i64, "{out}");
    assert!(rows.values().all(|(b, c)| b == c), "{out}");
    assert_eq!(diff_total(&out), 0, "{out}");

    // queryMsgByKey through c finds the one message with key ok-7, sent through b.
    let out = admin(c, &["queryMsgByKey", "-t", "OpsT", "-k", "ok-7"]);
    let want = sent.iter().find(|e| e["seq"] == 7).unwrap()["msgId"]
        .as_str()
        .unwrap()
        .to_owned();
    let ids: Vec<&str> = out
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .filter_map(|l| l.split_whitespace().next())
        // Client ids: 32 hex digits, or 56 when the client's address is IPv6.
        .filter(|id| id.len() >= 32 && id.chars().all(|c| c.is_ascii_hexdigit()))
        .collect();
    assert_eq!(ids, vec![want.as_str()], "{out}");

    // A subscription group made through a is seen on every broker through c, deleted
    // through b.
    admin(
        a,
        &[
            "updateSubGroup",
            "-g",
            "OpsG2",
            "-c",
            "DefaultCluster",
            "-r",
            "5",
        ],
    );
    let out = admin(c, &["getConsumerConfig", "-g", "OpsG2"]);
    assert_eq!(
        out.matches("=============================DefaultCluster:broker-")
            .count(),
        3,
        "{out}"
    );
    assert!(
        out.contains("retryMaxTimes") && out.contains("=  5"),
        "{out}"
    );
    admin(
        b,
        &["deleteSubGroup", "-g", "OpsG2", "-c", "DefaultCluster"],
    );
    let out = mqadmin(
        "5.3.3",
        &c.namesrv_arg(),
        &["getConsumerConfig", "-g", "OpsG2"],
    )
    .unwrap()
    .unwrap();
    assert!(!out.contains("DefaultCluster:broker-"), "{out}");

    // A broker config key set through a for the cluster is read back through c.
    admin(
        a,
        &[
            "updateBrokerConfig",
            "-c",
            "DefaultCluster",
            "-k",
            "opsNote",
            "-v",
            "cluster-wide",
        ],
    );
    let out = admin(c, &["getBrokerConfig", "-c", "DefaultCluster"]);
    assert_eq!(
        out.lines()
            .filter(|l| l.starts_with("opsNote") && l.trim_end().ends_with("=  cluster-wide"))
            .count(),
        3,
        "{out}"
    );

    // The group, now offline, reset to the start through b: its offsets go back on every
    // shard, whichever node owns it.
    admin(
        b,
        &["resetOffsetByTime", "-g", "OpsG", "-t", "OpsT", "-s", "0"],
    );
    let out = admin(c, &["consumerProgress", "-g", "OpsG"]);
    let rows = progress(&out, "OpsT");
    assert!(rows.values().all(|(_, c)| *c == 0), "{out}");
    assert_eq!(diff_total(&out), SENT as i64, "{out}");
}

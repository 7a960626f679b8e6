//! The real `mqadmin` (rocketmq-tools 5.3.3 and 4.9.8) run as a process against a running
//! node: the commands operators use first, their output parsed and checked against what the
//! test did.

#![allow(clippy::unwrap_used, clippy::disallowed_methods)] // test code: failures should panic

use std::time::Duration;

use stratus_tests::{Node, args, client_installed, clients_required, mqadmin, run_client};

/// `clusterList` names the node's broker at its address, in both tool versions.
#[test]
fn cluster_list_names_the_broker() {
    let dir = tempfile::tempdir().unwrap();
    let node = Node::start(dir.path()).unwrap();
    let ns = node.namesrv_arg();
    for version in ["5.3.3", "4.9.8"] {
        let Some(out) = mqadmin(version, &ns, &["clusterList"]).unwrap() else {
            return;
        };
        let row = out
            .lines()
            .find(|l| l.starts_with("DefaultCluster"))
            .unwrap_or_else(|| {
                panic!("mqadmin {version} clusterList printed no broker row:\n{out}")
            });
        let cols: Vec<&str> = row.split_whitespace().collect();
        assert_eq!(cols[1], "broker-0", "{row}");
        assert_eq!(cols[2], "0", "{row}");
        assert_eq!(cols[3], node.broker.to_string(), "{row}");
    }
}

fn topics(version: &str, ns: &str) -> Option<Vec<String>> {
    let out = mqadmin(version, ns, &["topicList"]).unwrap()?;
    Some(out.lines().map(|l| l.trim().to_owned()).collect())
}

/// As the reference: a route lookup creates no topic, so a consumer subscribed to a
/// misspelled topic creates nothing (its group's retry topic aside), and a deleted topic
/// stays deleted while consumers keep looking it up, until a producer sends to it.
#[test]
fn lookups_create_no_topic_and_a_deleted_topic_stays_deleted_until_a_send() {
    if !client_installed("java5") {
        assert!(
            !clients_required(),
            "java5 client required but not installed"
        );
        eprintln!("skipping: java5 client not installed");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let node = Node::start(&dir.path().join("data")).unwrap();
    let ns = node.namesrv_arg();
    let scratch = dir.path().join("clients");
    let Some(before) = topics("5.3.3", &ns) else {
        return;
    };
    assert!(!before.iter().any(|t| t == "Misspelt"), "{before:?}");

    // updateTopic then deleteTopic through mqadmin.
    let out = mqadmin(
        "5.3.3",
        &ns,
        &[
            "updateTopic",
            "-t",
            "Doomed",
            "-c",
            "DefaultCluster",
            "-r",
            "2",
            "-w",
            "2",
        ],
    )
    .unwrap()
    .unwrap();
    assert!(out.contains("create topic to"), "{out}");
    assert!(topics("5.3.3", &ns).unwrap().iter().any(|t| t == "Doomed"));
    let out = mqadmin(
        "5.3.3",
        &ns,
        &["deleteTopic", "-t", "Doomed", "-c", "DefaultCluster"],
    )
    .unwrap()
    .unwrap();
    assert!(
        out.contains("delete topic [Doomed] from cluster [DefaultCluster] success"),
        "{out}"
    );

    // Consumers of a misspelled topic and of the deleted one look them up for a while.
    for (topic, group) in [("Misspelt", "CG_misspelt"), ("Doomed", "CG_doomed")] {
        let a = args(&[
            "consume",
            "--namesrv",
            &ns,
            "--topic",
            topic,
            "--group",
            group,
            "--expect",
            "1",
            "--timeout-secs",
            "5",
        ]);
        let (_, events) = run_client("java5", &a, &scratch, Duration::from_secs(60)).unwrap();
        assert!(
            !events.iter().any(|e| e["event"] == "recv"),
            "{topic}: nothing to receive: {events:?}"
        );
    }
    let after = topics("5.3.3", &ns).unwrap();
    assert!(!after.iter().any(|t| t == "Misspelt"), "{after:?}");
    assert!(!after.iter().any(|t| t == "Doomed"), "{after:?}");
    assert!(after.iter().any(|t| t == "%RETRY%CG_misspelt"), "{after:?}");

    // A producer's first send creates the topic again (from TBW102's route).
    let a = args(&[
        "produce",
        "--namesrv",
        &ns,
        "--topic",
        "Doomed",
        "--group",
        "PG_doomed",
        "--count",
        "3",
        "--mode",
        "sync",
        "--tag",
        "T",
        "--keys-prefix",
        "d",
        "--body-size",
        "16",
    ]);
    let (code, events) = run_client("java5", &a, &scratch, Duration::from_secs(60)).unwrap();
    assert_eq!(code, 0, "{events:?}");
    assert_eq!(events.iter().filter(|e| e["event"] == "sent").count(), 3);
    assert!(topics("5.3.3", &ns).unwrap().iter().any(|t| t == "Doomed"));
}

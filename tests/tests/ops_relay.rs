//! Requests the broker relays to clients, against a real `stratus` process with the real
//! clients: GET_CONSUMER_RUNNING_INFO (307) and CONSUME_MESSAGE_DIRECTLY (309) reaching a
//! live Java push consumer, the offset reset (222 → 220) moving a live consumer back and a
//! group's offsets to the max (`mqadmin resetOffsetByTime`, `skipAccumulatedMessage`), and
//! request-reply (324/325 → 326) between Java and Go requesters and a Java replier.

#![allow(clippy::unwrap_used, clippy::disallowed_methods)] // test code: failures should panic

use std::collections::HashMap;
use std::net::SocketAddr;
use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::Value;
use stratus_compat::client::RemotingClient;
use stratus_compat::command::RemotingCommand;
use stratus_compat::request::offset::{
    QueryConsumerOffsetRequestHeader, QueueRequestHeader, UpdateConsumerOffsetRequestHeader,
    read_offset_response,
};
use stratus_compat::request::relay::ResetOffsetRequestHeader;
use stratus_compat::{RequestCode, ResponseCode};
use stratus_tests::{
    ClientRun, Node, args, client_installed, clients_required, free_port, mqadmin, run_client,
};

/// Whether the Java clients (and, for `go`, the Go client) are built; skips otherwise.
fn have(clients: &[&str]) -> bool {
    for c in clients {
        if !client_installed(c) {
            assert!(!clients_required(), "{c} is required but not built");
            eprintln!("skipping: {c} not built (tests/clients/install.sh {c})");
            return false;
        }
    }
    true
}

/// One request to `addr`, answered within 10 s.
fn rpc(addr: SocketAddr, cmd: RemotingCommand) -> RemotingCommand {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let client = RemotingClient::connect(addr).await.unwrap();
        client.invoke(cmd, Duration::from_secs(10)).await.unwrap()
    })
}

/// The committed offset of `group` on `topic` queue `queue_id` (shard 0), `None` if none.
fn committed(node: &Node, group: &str, topic: &str, queue_id: i32) -> Option<i64> {
    let mut cmd = RemotingCommand::request(RequestCode::QueryConsumerOffset.to_i32(), 0);
    QueryConsumerOffsetRequestHeader {
        consumer_group: group.into(),
        topic: topic.into(),
        queue_id,
        set_zero_if_not_found: Some(false),
    }
    .write_to(&mut cmd);
    let resp = rpc(node.broker, cmd);
    (resp.response_code() == ResponseCode::Success).then(|| read_offset_response(&resp).unwrap())
}

/// Commits the max offset of every queue (0..8) of `topic` for `group` (shard 0).
fn commit_max(node: &Node, group: &str, topic: &str) {
    for q in 0..8 {
        let mut cmd = RemotingCommand::request(RequestCode::UpdateConsumerOffset.to_i32(), 0);
        UpdateConsumerOffsetRequestHeader {
            consumer_group: group.into(),
            topic: topic.into(),
            queue_id: q,
            commit_offset: max_offset(node, topic, q),
        }
        .write_to(&mut cmd);
        assert_eq!(rpc(node.broker, cmd).response_code(), ResponseCode::Success);
    }
}

/// The max offset of `topic` queue `queue_id` (shard 0).
fn max_offset(node: &Node, topic: &str, queue_id: i32) -> i64 {
    let mut cmd = RemotingCommand::request(RequestCode::GetMaxOffset.to_i32(), 0);
    QueueRequestHeader {
        topic: topic.into(),
        queue_id,
    }
    .write_to(&mut cmd);
    read_offset_response(&rpc(node.broker, cmd)).unwrap()
}

/// Sends `count` messages to `topic` with the Java 5 producer; their `sent` events.
fn produce(ns: &str, topic: &str, count: usize, scratch: &Path) -> Vec<Value> {
    let (rc, events) = run_client(
        "java5",
        &args(&[
            "produce",
            "--namesrv",
            ns,
            "--topic",
            topic,
            "--group",
            "relay-producer",
            "--count",
            &count.to_string(),
            "--mode",
            "sync",
            "--tag",
            "t",
            "--keys-prefix",
            "k",
            "--body-size",
            "32",
        ]),
        scratch,
        Duration::from_secs(90),
    )
    .unwrap();
    assert_eq!(rc, 0, "produce failed: {events:?}");
    let sent: Vec<Value> = events
        .into_iter()
        .filter(|e| e["event"] == "sent")
        .collect();
    assert_eq!(sent.len(), count);
    sent
}

/// A live Java push consumer of `topic` in `group` that never exits on its own.
fn live_consumer(
    client: &str,
    ns: &str,
    topic: &str,
    group: &str,
    scratch: &Path,
) -> (ClientRun, String) {
    let run = ClientRun::spawn(
        client,
        &args(&[
            "consume",
            "--namesrv",
            ns,
            "--topic",
            topic,
            "--group",
            group,
            "--expect",
            "1000000",
            "--timeout-secs",
            "300",
        ]),
        scratch,
    )
    .unwrap();
    run.wait_for("ready", Duration::from_secs(60)).unwrap();
    let client_id = run.events_of("ready")[0]["clientId"]
        .as_str()
        .unwrap()
        .to_owned();
    assert!(!client_id.is_empty());
    (run, client_id)
}

/// The `broker-0  <queueId>  <offset>` rows mqadmin prints for a reset.
fn table_rows(out: &str) -> Vec<(i32, i64)> {
    out.lines()
        .filter_map(|l| {
            let cols: Vec<&str> = l.split_whitespace().collect();
            match cols.as_slice() {
                ["broker-0", q, off] => Some((q.parse().ok()?, off.parse().ok()?)),
                _ => None,
            }
        })
        .collect()
}

/// Every `broker-<n>  <queueId>  <offset>` row mqadmin prints for a reset, by broker.
fn all_table_rows(out: &str) -> Vec<(String, i32, i64)> {
    out.lines()
        .filter_map(|l| {
            let cols: Vec<&str> = l.split_whitespace().collect();
            match cols.as_slice() {
                [b, q, off] if b.starts_with("broker-") => {
                    Some(((*b).to_owned(), q.parse().ok()?, off.parse().ok()?))
                }
                _ => None,
            }
        })
        .collect()
}

/// How many times each message id was received.
fn receipts(run: &ClientRun) -> HashMap<String, usize> {
    let mut n = HashMap::new();
    for e in run.events_of("recv") {
        *n.entry(e["msgId"].as_str().unwrap().to_owned())
            .or_default() += 1;
    }
    n
}

/// Waits until `cond` holds on `run`'s receipts.
fn wait_receipts(
    run: &ClientRun,
    what: &str,
    timeout: Duration,
    cond: impl Fn(&HashMap<String, usize>) -> bool,
) {
    let deadline = Instant::now() + timeout;
    while Instant::now() < deadline {
        if cond(&receipts(run)) {
            return;
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    panic!(
        "{what}: not within {timeout:?}; receipts {:?}; stderr:\n{}",
        receipts(run),
        run.stderr()
    );
}

#[test]
fn running_info_and_consume_directly_reach_a_live_consumer() {
    if !have(&["java5"]) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let node = Node::start(dir.path()).unwrap();
    let ns = node.namesrv_arg();
    let scratch = dir.path().join("clients");
    let sent = produce(&ns, "RelayT", 3, &scratch);
    let (consumer, client_id) = live_consumer("java5", &ns, "RelayT", "relay-g", &scratch);
    wait_receipts(&consumer, "first delivery", Duration::from_secs(60), |r| {
        r.len() == 3
    });

    // 307 as DefaultMQAdminExt#getConsumerRunningInfo sends it (mqadmin consumerStatus
    // asks GET_CONSUMER_CONNECTION_LIST first).
    let broker = node.broker.to_string();
    let (rc, events) = run_client(
        "java5",
        &args(&[
            "running-info",
            "--namesrv",
            &ns,
            "--broker",
            &broker,
            "--group",
            "relay-g",
            "--client-id",
            &client_id,
        ]),
        &scratch,
        Duration::from_secs(60),
    )
    .unwrap();
    assert_eq!(rc, 0, "{events:?}");
    let info = events.iter().find(|e| e["event"] == "runningInfo").unwrap();
    // fastjson text (its queue table has object keys, not JSON): look for the fields.
    let json = info["json"].as_str().unwrap();
    assert!(
        json.contains("\"PROP_CONSUME_TYPE\":\"CONSUME_PASSIVELY\""),
        "{json}"
    );
    assert!(json.contains("\"topic\":\"RelayT\""), "{json}");
    let (rc, events) = run_client(
        "java5",
        &args(&[
            "running-info",
            "--namesrv",
            &ns,
            "--broker",
            &broker,
            "--group",
            "relay-g",
            "--client-id",
            "nobody@1",
        ]),
        &scratch,
        Duration::from_secs(60),
    )
    .unwrap();
    assert_eq!(rc, 1);
    let err = events.iter().find(|e| e["event"] == "error").unwrap();
    assert!(
        err["error"]
            .as_str()
            .unwrap()
            .contains("The Consumer <relay-g> <nobody@1> not online"),
        "{err}"
    );

    // 223 → 221: the consumer's own offsets, by client id (it consumed all three).
    let (rc, events) = run_client(
        "java5",
        &args(&[
            "consumer-status",
            "--namesrv",
            &ns,
            "--broker",
            &broker,
            "--group",
            "relay-g",
            "--topic",
            "RelayT",
        ]),
        &scratch,
        Duration::from_secs(60),
    )
    .unwrap();
    assert_eq!(rc, 0, "{events:?}");
    let status = events
        .iter()
        .find(|e| e["event"] == "consumerStatus")
        .unwrap();
    assert_eq!(
        status["clients"][client_id.as_str()]["offsetSum"],
        3,
        "{status}"
    );

    // mqadmin's own 307 paths ask GET_CONSUMER_CONNECTION_LIST (203) first, and
    // consumerProgress GET_CONSUME_STATS (208) too: checked where the node answers those.
    let ip = client_id.split('@').next().unwrap().to_owned();
    for (cmd, expect) in [
        (
            vec!["consumerStatus", "-g", "relay-g", "-i", client_id.as_str()],
            "RelayT",
        ),
        (
            vec!["consumerProgress", "-g", "relay-g", "-s", "true"],
            ip.as_str(),
        ),
    ] {
        let Some(out) = mqadmin("5.3.3", &ns, &cmd).unwrap() else {
            break;
        };
        if out.contains("request type 203 not supported")
            || out.contains("request type 208 not supported")
        {
            eprintln!("{}: needs 203/208, not served by this build", cmd[0]);
            continue;
        }
        assert!(out.contains(expect), "{}:\n{out}", cmd[0]);
    }

    // 309: mqadmin reads the message by its offset id, the broker sends it to the consumer,
    // whose listener consumes it once more.
    let offset_id = sent[0]["offsetMsgId"].as_str().unwrap();
    let msg_id = sent[0]["msgId"].as_str().unwrap().to_owned();
    // 5.3.3 asks 307 first (is it a push consumer?), 4.9.8 sends 309 at once.
    // (4.9.8 has no -t.)
    for (n, version) in ["5.3.3", "4.9.8"].into_iter().enumerate() {
        let mut cmd = vec![
            "queryMsgById",
            "-i",
            offset_id,
            "-g",
            "relay-g",
            "-d",
            &client_id,
        ];
        if version == "5.3.3" {
            cmd.extend(["-t", "RelayT"]);
        }
        let Some(out) = mqadmin(version, &ns, &cmd).unwrap() else {
            continue;
        };
        assert!(
            out.contains("consumeResult=CR_SUCCESS"),
            "{version}:\n{out}"
        );
        wait_receipts(
            &consumer,
            "direct consumption",
            Duration::from_secs(10),
            |r| r.get(&msg_id) == Some(&(n + 2)),
        );
    }
}

#[test]
fn reset_by_time_rereads_and_skip_moves_the_group_to_the_max() {
    if !have(&["java5"]) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let node = Node::start(dir.path()).unwrap();
    let ns = node.namesrv_arg();
    let scratch = dir.path().join("clients");
    produce(&ns, "ResetT", 8, &scratch);
    let (consumer, _) = live_consumer("java5", &ns, "ResetT", "reset-g", &scratch);
    wait_receipts(&consumer, "first delivery", Duration::from_secs(60), |r| {
        r.len() == 8
    });

    // Back to the start: the live consumer reads all eight again (it pauses ~10 s first).
    let Some(out) = mqadmin(
        "5.3.3",
        &ns,
        &[
            "resetOffsetByTime",
            "-g",
            "reset-g",
            "-t",
            "ResetT",
            "-s",
            "0",
        ],
    )
    .unwrap() else {
        return;
    };
    let rows = table_rows(&out);
    assert!(!rows.is_empty(), "{out}");
    assert!(rows.iter().all(|(_, off)| *off == 0), "{out}");
    wait_receipts(
        &consumer,
        "re-delivery after the reset",
        Duration::from_secs(60),
        |r| r.len() == 8 && r.values().all(|n| *n >= 2),
    );

    // 4.9.8's mqadmin sends the same request (no queue fields) and reads the same table.
    if let Some(out) = mqadmin(
        "4.9.8",
        &ns,
        &[
            "resetOffsetByTime",
            "-g",
            "reset-g",
            "-t",
            "ResetT",
            "-s",
            "now",
        ],
    )
    .unwrap()
    {
        // "now" with force: every queue to its max offset.
        let rows = table_rows(&out);
        assert!(!rows.is_empty(), "{out}");
        for (q, off) in rows {
            assert_eq!(off, max_offset(&node, "ResetT", q), "queue {q}:\n{out}");
        }
    }

    // skipAccumulatedMessage of another topic the group does not consume: offsets go to the
    // max offsets and are kept in meta (the live consumer has no queue of it to reset).
    produce(&ns, "SkipT", 6, &scratch);
    let Some(out) = mqadmin(
        "5.3.3",
        &ns,
        &["skipAccumulatedMessage", "-g", "reset-g", "-t", "SkipT"],
    )
    .unwrap() else {
        return;
    };
    let rows = table_rows(&out);
    assert!(!rows.is_empty(), "{out}");
    let mut total = 0;
    for (q, off) in rows {
        let max = max_offset(&node, "SkipT", q);
        total += max;
        assert_eq!(off, max, "queue {q}:\n{out}");
        assert_eq!(
            committed(&node, "reset-g", "SkipT", q),
            Some(max),
            "queue {q}:\n{out}"
        );
    }
    assert_eq!(total, 6);

    // A group with no consumer online that consumed before (its offsets are committed, as a
    // consumer that read everything leaves them): reset in meta and answered, through either
    // tool version.
    for (version, group) in [("5.3.3", "gone-g5"), ("4.9.8", "gone-g4")] {
        commit_max(&node, group, "SkipT");
        let Some(out) = mqadmin(
            version,
            &ns,
            &["resetOffsetByTime", "-g", group, "-t", "SkipT", "-s", "0"],
        )
        .unwrap() else {
            continue;
        };
        let rows = table_rows(&out);
        assert!(
            !rows.is_empty() && rows.iter().all(|(_, off)| *off == 0),
            "{version}:\n{out}"
        );
        for (q, _) in rows {
            assert_eq!(
                committed(&node, group, "SkipT", q),
                Some(0),
                "{version} queue {q}"
            );
        }
    }

    // A group unknown here: CONSUMER_NOT_ONLINE, nothing reset (mqadmin then falls back to
    // reading consume stats and committing offsets itself).
    let mut cmd = RemotingCommand::request(RequestCode::InvokeBrokerToResetOffset.to_i32(), 0);
    ResetOffsetRequestHeader {
        group: "offline-g".into(),
        topic: "SkipT".into(),
        queue_id: -1,
        offset: None,
        timestamp: -1,
        is_force: true,
    }
    .write_to(&mut cmd);
    let resp = rpc(node.broker, cmd);
    assert_eq!(
        resp.response_code(),
        ResponseCode::ConsumerNotOnline,
        "{:?}",
        resp.remark
    );
    assert_eq!(committed(&node, "offline-g", "SkipT", 0), None);
}

#[test]
fn requests_get_their_replies_from_a_java_replier() {
    if !have(&["java5", "java49"]) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let node = Node::start(dir.path()).unwrap();
    let ns = node.namesrv_arg();
    let scratch = dir.path().join("clients");
    let replier = ClientRun::spawn(
        "java5",
        &args(&[
            "reply",
            "--namesrv",
            &ns,
            "--topic",
            "AskT",
            "--group",
            "reply-g",
            "--expect",
            "1000",
            "--timeout-secs",
            "300",
        ]),
        &scratch,
    )
    .unwrap();
    replier.wait_for("ready", Duration::from_secs(60)).unwrap();
    // A plain message first: once the replier has seen it (and refused to answer it: no
    // REPLY_TO_CLIENT), its queues are assigned and requests reach it at once.
    produce(&ns, "AskT", 1, &scratch);
    replier.wait_for("error", Duration::from_secs(60)).unwrap();

    // Not the 5.3.3 client's sync form: it returns at the send's acknowledgement and throws
    // RequestTimeoutException before any reply can arrive, whatever the broker (fixed after
    // 5.3.3, apache/rocketmq#9608); its callback form works.
    let mut runs = vec![
        ("java5", "callback"),
        ("java49", "sync"),
        ("java49", "callback"),
    ];
    if have(&["go"]) {
        runs.push(("go", "sync"));
    }
    for (client, mode) in runs {
        let mut a = vec![
            "request",
            "--namesrv",
            &ns,
            "--topic",
            "AskT",
            "--group",
            "ask-g",
            "--count",
            "3",
            "--timeout-ms",
            "15000",
        ];
        if client != "go" {
            a.extend(["--mode", mode]);
        }
        let (rc, events) =
            run_client(client, &args(&a), &scratch, Duration::from_secs(120)).unwrap();
        let replies: Vec<&Value> = events.iter().filter(|e| e["event"] == "reply").collect();
        assert_eq!(
            rc,
            0,
            "{client} {mode}: {events:?}\nreplier: {:?}",
            replier.events()
        );
        assert_eq!(replies.len(), 3, "{client} {mode}: {events:?}");
        for r in replies {
            let seq = r["seq"].as_i64().unwrap();
            assert_eq!(r["body"], format!("re:q{seq}"), "{client} {mode}: {r}");
            assert_eq!(
                r["topic"], "DefaultCluster_REPLY_TOPIC",
                "{client} {mode}: {r}"
            );
        }
    }
    // Replies are stored too (storeReplyMessageEnable): 3 per run in the reply topic.
    assert!(max_offset(&node, "DefaultCluster_REPLY_TOPIC", 0) >= 9);
}

/// Two nodes on one meta and one object store, a shard each: a reset asked through either
/// name server reaches both (mqadmin sends 222 to every broker of the topic's route), and
/// each node tells the consumer connected to it, so the live consumer (the 4.9.8 client
/// here, 5.3.3 above) re-reads the queues of both shards.
#[test]
fn a_reset_reaches_the_consumer_through_every_node() {
    if !have(&["java5", "java49"]) {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let meta = stratus_tests::cluster_meta_url(dir.path());
    let objects = stratus_tests::cluster_object_store_url(dir.path());
    let mut nodes = Vec::new();
    let mut bases = Vec::new();
    for n in ["a", "b"] {
        let ns: SocketAddr = format!("127.0.0.1:{}", free_port()).parse().unwrap();
        let base = stratus_tests::free_shard_base(2);
        bases.push(base);
        let id = format!("relay-{n}");
        nodes.push(
            Node::start_member(
                &dir.path().join(n),
                ns,
                format!("127.0.0.1:{base}").parse().unwrap(),
                &[
                    ("STRATUS_NODE__ID", id.as_str()),
                    ("STRATUS_NODE__SHARDS", "2"),
                    ("STRATUS_META__URL", meta.as_str()),
                    ("STRATUS_STORAGE__OBJECT_STORE_URL", objects.as_str()),
                ],
            )
            .unwrap(),
        );
    }
    let ns = nodes[0].namesrv_arg();
    // Each node serves one shard (on its own base port, or the next shard's port).
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        let r = stratus_tests::cluster_routes(nodes[0].namesrv);
        let on = |base: u16| {
            r.values()
                .filter(|a| {
                    a.rsplit_once(':')
                        .and_then(|(_, p)| p.parse::<u16>().ok())
                        .is_some_and(|p| p == base || p == stratus_tests::shard_port(base, 1))
                })
                .count()
        };
        if r.len() == 2 && on(bases[0]) == 1 && on(bases[1]) == 1 {
            break;
        }
        assert!(Instant::now() < deadline, "shards not one per node: {r:?}");
        std::thread::sleep(Duration::from_millis(300));
    }
    let scratch = dir.path().join("clients");
    let sent = produce(&ns, "MultiT", 16, &scratch);
    let brokers: std::collections::BTreeSet<&str> = sent
        .iter()
        .filter_map(|e| e["brokerName"].as_str())
        .collect();
    assert_eq!(brokers.len(), 2, "sent to both shards: {sent:?}");
    let (consumer, _) = live_consumer("java49", &ns, "MultiT", "multi-g", &scratch);
    wait_receipts(&consumer, "first delivery", Duration::from_secs(60), |r| {
        r.len() == 16
    });
    let Some(out) = mqadmin(
        "5.3.3",
        &ns,
        &[
            "resetOffsetByTime",
            "-g",
            "multi-g",
            "-t",
            "MultiT",
            "-s",
            "0",
        ],
    )
    .unwrap() else {
        return;
    };
    let rows = all_table_rows(&out);
    let names: std::collections::BTreeSet<&str> = rows.iter().map(|(b, _, _)| b.as_str()).collect();
    assert_eq!(names.len(), 2, "both shards reset:\n{out}");
    assert!(rows.iter().all(|(_, _, off)| *off == 0), "{out}");
    // The client handles one reset at a time (~10 s each).
    wait_receipts(
        &consumer,
        "re-delivery from both shards",
        Duration::from_secs(90),
        |r| r.len() == 16 && r.values().all(|n| *n >= 2),
    );
}

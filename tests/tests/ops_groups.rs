//! Operators' group and consumer views against a running node, driven by the real `mqadmin`
//! (rocketmq-tools 5.3.3 and 4.9.8) and checked against what the test did: subscription
//! groups (updateSubGroup, getConsumerConfig, deleteSubGroup), topicStatus, topicList -c,
//! cloneGroupOffset, the connection lists of live Java clients (consumerConnection,
//! producerConnection), and a three-node cluster on one metadata database where a group made
//! through one node is seen through every node.
//!
//! Metadata of the cluster: PostgreSQL when `STRATUS_TEST_POSTGRES_URL` is set (a fresh
//! database per run), else the embedded SQLite file shared by the processes.

#![allow(clippy::unwrap_used, clippy::disallowed_methods)] // test code: failures should panic

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use stratus_compat::client::RemotingClient;
use stratus_compat::command::RemotingCommand;
use stratus_compat::request::group::{
    CloneGroupOffsetRequestHeader, ProducerConnection, SubscriptionGroupConfigBody,
    SubscriptionGroupWrapper,
};
use stratus_compat::request::heartbeat::decode_json_body;
use stratus_compat::request::offset::{
    QueryConsumerOffsetRequestHeader, UpdateConsumerOffsetRequestHeader, read_offset_response,
};
use stratus_compat::request::send::SendMessageRequestHeader;
use stratus_compat::{RequestCode, ResponseCode};
use stratus_tests::{
    ClientRun, Node, args, client_installed, clients_required, cluster_meta_url, cluster_routes,
    free_port, free_shard_base, mqadmin, mqadmin_installed, now_ms, shard_port,
};

const VERSIONS: [&str; 2] = ["5.3.3", "4.9.8"];

/// Whether mqadmin of every version is installed (else the test is skipped, or fails when
/// clients are required).
fn have_mqadmin() -> bool {
    if VERSIONS.iter().all(|v| mqadmin_installed(v)) {
        return true;
    }
    assert!(!clients_required(), "mqadmin is not installed");
    eprintln!("skipping: mqadmin is not installed (tests/clients/mqadmin.sh install)");
    false
}

fn admin(version: &str, ns: &str, command: &[&str]) -> String {
    mqadmin(version, ns, command)
        .unwrap()
        .expect("mqadmin installed")
}

/// One request answered by `addr`.
fn invoke(addr: SocketAddr, cmd: RemotingCommand) -> RemotingCommand {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let client = RemotingClient::connect(addr).await.unwrap();
        client.invoke(cmd, Duration::from_secs(5)).await.unwrap()
    })
}

fn ok(resp: &RemotingCommand, what: &str) {
    assert_eq!(
        resp.code,
        ResponseCode::Success.to_i32(),
        "{what}: {:?}",
        resp.remark
    );
}

/// SEND_MESSAGE_V2 of one message to `topic` queue `queue_id` of `broker`.
fn send(addr: SocketAddr, topic: &str, broker: &str, queue_id: i32) {
    let mut cmd = RemotingCommand::request(RequestCode::SendMessageV2.to_i32(), 0);
    SendMessageRequestHeader {
        producer_group: "OpsPG".into(),
        topic: topic.into(),
        default_topic: "TBW102".into(),
        default_topic_queue_nums: 4,
        queue_id,
        born_timestamp: now_ms(),
        broker_name: Some(broker.into()),
        ..Default::default()
    }
    .write_v2(&mut cmd);
    cmd.body = bytes::Bytes::from_static(b"ops");
    ok(&invoke(addr, cmd), "send");
}

fn commit_offset(addr: SocketAddr, group: &str, topic: &str, queue_id: i32, offset: i64) {
    let mut cmd = RemotingCommand::request(RequestCode::UpdateConsumerOffset.to_i32(), 0);
    UpdateConsumerOffsetRequestHeader {
        consumer_group: group.into(),
        topic: topic.into(),
        queue_id,
        commit_offset: offset,
    }
    .write_to(&mut cmd);
    ok(&invoke(addr, cmd), "commit offset");
}

fn query_offset(addr: SocketAddr, group: &str, topic: &str, queue_id: i32) -> Option<i64> {
    let mut cmd = RemotingCommand::request(RequestCode::QueryConsumerOffset.to_i32(), 0);
    QueryConsumerOffsetRequestHeader {
        consumer_group: group.into(),
        topic: topic.into(),
        queue_id,
        set_zero_if_not_found: Some(false),
    }
    .write_to(&mut cmd);
    let resp = invoke(addr, cmd);
    (resp.code == ResponseCode::Success.to_i32()).then(|| read_offset_response(&resp).unwrap())
}

/// The groups a broker lists (GET_ALL_SUBSCRIPTIONGROUP_CONFIG).
fn listed_groups(addr: SocketAddr) -> BTreeMap<String, SubscriptionGroupConfigBody> {
    let cmd = RemotingCommand::request(RequestCode::GetAllSubscriptionGroupConfig.to_i32(), 0);
    let resp = invoke(addr, cmd);
    ok(&resp, "all groups");
    decode_json_body::<SubscriptionGroupWrapper>(&resp.body)
        .unwrap()
        .subscription_group_table
}

/// getConsumerConfig's blocks: broker name → field → value.
fn consumer_config(out: &str) -> BTreeMap<String, BTreeMap<String, String>> {
    let mut blocks = BTreeMap::new();
    let mut current: Option<String> = None;
    for line in out.lines() {
        if let Some(rest) = line.rsplit_once("=============================DefaultCluster:") {
            let broker = rest.1.trim_end_matches('=').to_owned();
            blocks.insert(broker.clone(), BTreeMap::new());
            current = Some(broker);
        } else if let (Some(b), Some((k, v))) = (&current, line.split_once("=  ")) {
            blocks
                .get_mut(b)
                .unwrap()
                .insert(k.trim().to_owned(), v.trim().to_owned());
        }
    }
    blocks
}

#[test]
fn subscription_groups_are_made_read_and_deleted_with_mqadmin() {
    if !have_mqadmin() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let node = Node::start(dir.path()).unwrap();
    let ns = node.namesrv_arg();
    for version in VERSIONS {
        let group = format!("OpsGroup_{}", version.replace('.', "_"));
        // 5.x sets orderly consumption (-o), 4.9 has no such option: it turns off the
        // notification of consumer id changes (-a) instead.
        let (flag, field, value) = if version == "5.3.3" {
            ("-o", "consumeMessageOrderly", "true")
        } else {
            ("-a", "notifyConsumerIdsChangedEnable", "false")
        };
        let out = admin(
            version,
            &ns,
            &[
                "updateSubGroup",
                "-c",
                "DefaultCluster",
                "-g",
                &group,
                "-r",
                "3",
                "-q",
                "2",
                "-d",
                "false",
                flag,
                value,
            ],
        );
        assert!(
            out.contains(&format!(
                "create subscription group to {} success",
                node.broker
            )),
            "mqadmin {version} updateSubGroup:\n{out}"
        );
        let stored = listed_groups(node.broker)
            .remove(&group)
            .expect("the group is listed");
        assert_eq!(
            (
                stored.retry_max_times,
                stored.retry_queue_nums,
                stored.consume_broadcast_enable,
                if version == "5.3.3" {
                    stored.consume_message_orderly
                } else {
                    !stored.notify_consumer_ids_changed_enable
                }
            ),
            (3, 2, false, true),
            "what mqadmin {version} sent"
        );

        let out = admin(version, &ns, &["getConsumerConfig", "-g", &group]);
        let blocks = consumer_config(&out);
        let fields = blocks
            .get("broker-0")
            .unwrap_or_else(|| panic!("mqadmin {version} getConsumerConfig:\n{out}"));
        assert_eq!(fields["groupName"], group, "{out}");
        assert_eq!(fields["retryMaxTimes"], "3", "{out}");
        assert_eq!(fields["retryQueueNums"], "2", "{out}");
        assert_eq!(fields["consumeBroadcastEnable"], "false", "{out}");
        assert_eq!(fields[field], value, "{out}");
        assert_eq!(fields["consumeEnable"], "true", "{out}");

        let out = admin(
            version,
            &ns,
            &["deleteSubGroup", "-c", "DefaultCluster", "-g", &group],
        );
        assert!(
            out.contains(&format!(
                "delete subscription group [{group}] from broker [{}] in cluster [DefaultCluster] success",
                node.broker
            )),
            "mqadmin {version} deleteSubGroup:\n{out}"
        );
        assert!(!listed_groups(node.broker).contains_key(&group));
        let out = admin(version, &ns, &["getConsumerConfig", "-g", &group]);
        assert!(
            consumer_config(&out).is_empty(),
            "mqadmin {version} getConsumerConfig after the delete:\n{out}"
        );
    }
    // The reference's predefined groups are always listed.
    let groups = listed_groups(node.broker);
    for g in ["TOOLS_CONSUMER", "CID_RMQ_SYS_TRANS"] {
        assert!(groups.contains_key(g), "{g} in {:?}", groups.keys());
    }
}

/// topicStatus rows: (broker, queue id) → (min, max, has a last-update time).
fn topic_status(out: &str) -> BTreeMap<(String, i32), (i64, i64, bool)> {
    out.lines()
        .filter(|l| l.starts_with("broker-"))
        .map(|l| {
            let cols: Vec<&str> = l.split_whitespace().collect();
            (
                (cols[0].to_owned(), cols[1].parse().unwrap()),
                (
                    cols[2].parse().unwrap(),
                    cols[3].parse().unwrap(),
                    cols.len() > 4,
                ),
            )
        })
        .collect()
}

#[test]
fn topic_status_topic_list_and_clone_group_offset_show_what_the_test_did() {
    if !have_mqadmin() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let node = Node::start(dir.path()).unwrap();
    let ns = node.namesrv_arg();
    let out = admin(
        "5.3.3",
        &ns,
        &[
            "updateTopic",
            "-c",
            "DefaultCluster",
            "-t",
            "OpsT",
            "-r",
            "4",
            "-w",
            "4",
        ],
    );
    assert!(out.contains("success"), "updateTopic:\n{out}");
    let sent = [2, 5, 0, 1];
    for (q, n) in sent.iter().enumerate() {
        for _ in 0..*n {
            send(node.broker, "OpsT", "broker-0", i32::try_from(q).unwrap());
        }
    }
    for version in VERSIONS {
        let out = admin(version, &ns, &["topicStatus", "-t", "OpsT"]);
        let rows = topic_status(&out);
        let expected: BTreeMap<(String, i32), (i64, i64, bool)> = sent
            .iter()
            .enumerate()
            .map(|(q, n)| {
                (
                    ("broker-0".to_owned(), i32::try_from(q).unwrap()),
                    (0, *n, *n > 0),
                )
            })
            .collect();
        assert_eq!(rows, expected, "mqadmin {version} topicStatus:\n{out}");
    }

    // A group with offsets on the topic is listed as consuming it.
    commit_offset(node.broker, "OpsReader", "OpsT", 1, 3);
    commit_offset(node.broker, "OpsReader", "OpsT", 0, 2);
    for version in VERSIONS {
        let out = admin(version, &ns, &["topicList", "-c"]);
        let row = out
            .lines()
            .map(|l| l.split_whitespace().collect::<Vec<_>>())
            .find(|c| c.get(1) == Some(&"OpsT"))
            .unwrap_or_else(|| panic!("mqadmin {version} topicList -c:\n{out}"));
        assert_eq!(row, ["DefaultCluster", "OpsT", "OpsReader"], "{out}");
    }

    // CLONE_GROUP_OFFSET itself (what DefaultMQAdminExt#cloneGroupOffset sends).
    let mut cmd = RemotingCommand::request(RequestCode::CloneGroupOffset.to_i32(), 0);
    CloneGroupOffsetRequestHeader {
        src_group: "OpsReader".into(),
        dest_group: "OpsCopy".into(),
        topic: Some("OpsT".into()),
        offline: true,
    }
    .write_to(&mut cmd);
    ok(&invoke(node.broker, cmd), "clone group offset");
    assert_eq!(query_offset(node.broker, "OpsCopy", "OpsT", 0), Some(2));
    assert_eq!(query_offset(node.broker, "OpsCopy", "OpsT", 1), Some(3));
    assert_eq!(query_offset(node.broker, "OpsCopy", "OpsT", 2), None);

    // mqadmin cloneGroupOffset reads the source's offsets with GET_CONSUME_STATS (208) and
    // writes them with UPDATE_CONSUMER_OFFSET; until this node answers 208 it reports that.
    for version in VERSIONS {
        let dest = format!("OpsClone_{}", version.replace('.', "_"));
        let out = admin(
            version,
            &ns,
            &[
                "cloneGroupOffset",
                "-s",
                "OpsReader",
                "-d",
                &dest,
                "-t",
                "OpsT",
            ],
        );
        if out.contains("request type 208 not supported") {
            eprintln!("mqadmin {version} cloneGroupOffset needs GET_CONSUME_STATS (208)");
            assert_eq!(query_offset(node.broker, &dest, "OpsT", 1), None);
            continue;
        }
        assert!(
            out.contains("clone group offset success"),
            "mqadmin {version} cloneGroupOffset:\n{out}"
        );
        assert_eq!(
            query_offset(node.broker, &dest, "OpsT", 0),
            Some(2),
            "{out}"
        );
        assert_eq!(
            query_offset(node.broker, &dest, "OpsT", 1),
            Some(3),
            "{out}"
        );
    }
}

fn producer_connection(addr: SocketAddr, group: &str) -> Option<ProducerConnection> {
    let mut cmd = RemotingCommand::request(RequestCode::GetProducerConnectionList.to_i32(), 0);
    cmd.ext_fields
        .insert("producerGroup".to_owned(), group.to_owned());
    let resp = invoke(addr, cmd);
    (resp.code == ResponseCode::Success.to_i32()).then(|| decode_json_body(&resp.body).unwrap())
}

#[test]
fn connection_lists_show_live_java_clients() {
    if !have_mqadmin() {
        return;
    }
    if !client_installed("java49") {
        assert!(!clients_required(), "client java49 is not installed");
        eprintln!("skipping: client java49 is not installed");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let node = Node::start(dir.path()).unwrap();
    let ns = node.namesrv_arg();
    let scratch = dir.path().join("clients");
    let out = admin("5.3.3", &ns, &["consumerConnection", "-g", "OpsCG"]);
    assert!(
        out.contains("CODE: 206") && out.contains("the consumer group[OpsCG] not online"),
        "consumerConnection before any consumer:\n{out}"
    );
    admin(
        "5.3.3",
        &ns,
        &[
            "updateTopic",
            "-c",
            "DefaultCluster",
            "-t",
            "OpsLive",
            "-r",
            "4",
            "-w",
            "4",
        ],
    );
    let consumer = ClientRun::spawn(
        "java49",
        &args(&[
            "consume",
            "--namesrv",
            &ns,
            "--topic",
            "OpsLive",
            "--group",
            "OpsCG",
            "--expr",
            "TagA || TagB",
            "--expect",
            "1000",
            "--timeout-secs",
            "150",
            "--idle-exit-secs",
            "150",
        ]),
        &scratch,
    )
    .unwrap();
    consumer.wait_for("ready", Duration::from_secs(60)).unwrap();
    // A Java 5 consumer in the same group when that client is installed.
    let consumer5 = client_installed("java5").then(|| {
        let c = ClientRun::spawn(
            "java5",
            &args(&[
                "consume",
                "--namesrv",
                &ns,
                "--topic",
                "OpsLive",
                "--group",
                "OpsCG",
                "--expr",
                "TagA || TagB",
                "--expect",
                "1000",
                "--timeout-secs",
                "150",
                "--idle-exit-secs",
                "150",
            ]),
            &scratch,
        )
        .unwrap();
        c.wait_for("ready", Duration::from_secs(60)).unwrap();
        c
    });
    let producer = ClientRun::spawn(
        "java49",
        &args(&[
            "txn",
            "--namesrv",
            &ns,
            "--topic",
            "OpsLive",
            "--group",
            "OpsPG",
            "--count",
            "0",
            "--tag",
            "TagA",
            "--keys-prefix",
            "k",
            "--body-size",
            "10",
            "--local",
            "commit",
            "--check",
            "commit",
            "--stay-secs",
            "120",
        ]),
        &scratch,
    )
    .unwrap();

    for version in VERSIONS {
        let out = admin(version, &ns, &["consumerConnection", "-g", "OpsCG"]);
        let rows: Vec<Vec<&str>> = out
            .lines()
            .map(|l| l.split_whitespace().collect::<Vec<_>>())
            .filter(|c| c.len() == 4 && c[2] == "JAVA")
            .collect();
        assert_eq!(
            rows.len(),
            1 + usize::from(consumer5.is_some()),
            "mqadmin {version} consumerConnection:\n{out}"
        );
        assert!(rows.iter().all(|r| r[1].starts_with("127.0.0.1:")), "{out}");
        assert_eq!(
            rows.iter().filter(|r| r[3].starts_with("V4_9_")).count(),
            1,
            "the 4.9 client's version: {out}"
        );
        if consumer5.is_some() && version == "5.3.3" {
            assert!(
                rows.iter().any(|r| r[3].starts_with("V5_3_")),
                "the 5.3 client's version: {out}"
            );
        }
        assert!(
            out.lines()
                .any(|l| l.split_whitespace().collect::<Vec<_>>()
                    == ["OpsLive", "TagA", "||", "TagB"]),
            "the subscription:\n{out}"
        );
        assert!(out.contains("ConsumeType: CONSUME_PASSIVELY"), "{out}");
        assert!(out.contains("MessageModel: CLUSTERING"), "{out}");
        assert!(
            out.contains("ConsumeFromWhere: CONSUME_FROM_FIRST_OFFSET"),
            "{out}"
        );
    }

    // The live consumer is listed as consuming its topic.
    let out = admin("5.3.3", &ns, &["topicList", "-c"]);
    assert!(
        out.lines()
            .any(|l| l.split_whitespace().collect::<Vec<_>>()
                == ["DefaultCluster", "OpsLive", "OpsCG"]),
        "topicList -c with a live consumer:\n{out}"
    );

    // The transactional producer heartbeats once it knows the topic's route.
    let deadline = Instant::now() + Duration::from_secs(60);
    while producer_connection(node.broker, "OpsPG").is_none() {
        assert!(
            Instant::now() < deadline,
            "the producer never registered; stderr:\n{}",
            producer.stderr()
        );
        std::thread::sleep(Duration::from_millis(500));
    }
    for version in VERSIONS {
        let out = admin(
            version,
            &ns,
            &["producerConnection", "-g", "OpsPG", "-t", "OpsLive"],
        );
        let rows: Vec<Vec<&str>> = out
            .lines()
            .map(|l| l.split_whitespace().collect::<Vec<_>>())
            .filter(|c| c.len() == 5 && c[0] == "0001")
            .collect();
        assert_eq!(
            rows.len(),
            1,
            "mqadmin {version} producerConnection:\n{out}"
        );
        assert!(rows[0][2].starts_with("127.0.0.1:"), "{out}");
        assert_eq!(rows[0][3], "JAVA", "{out}");
        assert!(rows[0][4].starts_with("V4_9_"), "{out}");
    }
    drop(producer);
    drop(consumer);
    drop(consumer5);
}

#[test]
fn the_go_admin_api_creates_lists_and_deletes_topics_and_lists_groups() {
    if !client_installed("go") {
        assert!(!clients_required(), "client go is not installed");
        eprintln!("skipping: client go is not installed");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let node = Node::start(dir.path()).unwrap();
    let mut g = SubscriptionGroupConfigBody::new("GoAdminG");
    g.retry_max_times = 4;
    g.retry_queue_nums = 2;
    g.consume_broadcast_enable = false;
    let cmd = RemotingCommand::request(RequestCode::UpdateAndCreateSubscriptionGroup.to_i32(), 0)
        .with_body(serde_json::to_vec(&g).unwrap());
    ok(&invoke(node.broker, cmd), "create group");
    let (code, events) = stratus_tests::run_client(
        "go",
        &args(&[
            "admin",
            "--namesrv",
            &node.namesrv_arg(),
            "--broker",
            &node.broker.to_string(),
            "--topic",
            "GoAdminT",
            "--group",
            "GoAdminG",
        ]),
        &dir.path().join("clients"),
        Duration::from_secs(60),
    )
    .unwrap();
    assert_eq!(code, 0, "go admin: {events:?}");
    let event = |kind: &str| {
        events
            .iter()
            .find(|e| e["event"] == kind)
            .unwrap_or_else(|| panic!("no {kind} in {events:?}"))
            .clone()
    };
    let names = |e: &serde_json::Value, key: &str| -> Vec<String> {
        e[key]
            .as_array()
            .unwrap()
            .iter()
            .map(|v| v.as_str().unwrap().to_owned())
            .collect()
    };
    assert!(names(&event("topics"), "topics").contains(&"GoAdminT".to_owned()));
    let groups = event("groups");
    let listed = names(&groups, "groups");
    for name in ["GoAdminG", "TOOLS_CONSUMER", "CID_RMQ_SYS_TRANS"] {
        assert!(listed.contains(&name.to_owned()), "{name} in {listed:?}");
    }
    assert_eq!(groups["retryMaxTimes"], 4, "{groups}");
    assert_eq!(groups["retryQueueNums"], 2, "{groups}");
    assert_eq!(groups["consumeBroadcastEnable"], false, "{groups}");
    event("topic-deleted");
    assert!(!names(&event("topics-after"), "topics").contains(&"GoAdminT".to_owned()));
}

#[test]
fn bad_group_requests_get_the_reference_codes_and_the_node_keeps_serving() {
    let dir = tempfile::tempdir().unwrap();
    let node = Node::start(dir.path()).unwrap();
    let system = ResponseCode::SystemError.to_i32();
    for (code, fields, body) in [
        (
            RequestCode::UpdateAndCreateSubscriptionGroup,
            &[][..],
            &b"{\"groupName\":"[..],
        ),
        (
            RequestCode::UpdateAndCreateSubscriptionGroup,
            &[][..],
            &b""[..],
        ),
        (
            RequestCode::DeleteSubscriptionGroup,
            &[("cleanOffset", "true")][..],
            &b""[..],
        ),
        (RequestCode::GetSubscriptionGroupConfig, &[][..], &b""[..]),
        (RequestCode::GetConsumerConnectionList, &[][..], &b""[..]),
        (RequestCode::GetProducerConnectionList, &[][..], &b""[..]),
        (RequestCode::GetTopicStatsInfo, &[][..], &b""[..]),
        (RequestCode::GetTopicConfig, &[][..], &b""[..]),
        (RequestCode::QueryTopicConsumeByWho, &[][..], &b""[..]),
    ] {
        let mut cmd = RemotingCommand::request(code.to_i32(), 0);
        for (k, v) in fields {
            cmd.ext_fields.insert((*k).to_owned(), (*v).to_owned());
        }
        cmd.body = bytes::Bytes::copy_from_slice(body);
        let resp = invoke(node.broker, cmd);
        assert_eq!(resp.code, system, "{code}: {:?}", resp.remark);
    }
    let mut cmd =
        RemotingCommand::request(RequestCode::UpdateAndCreateSubscriptionGroup.to_i32(), 0);
    cmd.body = bytes::Bytes::from_static(br#"{"groupName":"bad group"}"#);
    let resp = invoke(node.broker, cmd);
    assert_eq!(
        resp.code,
        ResponseCode::InvalidParameter.to_i32(),
        "{:?}",
        resp.remark
    );
    // Still serving, on the same port.
    assert!(listed_groups(node.broker).contains_key("TOOLS_CONSUMER"));
}

/// The node (index into `bases`) whose broker ports include `addr`'s port.
fn owner(addr: &str, bases: &[u16], shards: u16) -> Option<usize> {
    let port: u16 = addr.rsplit_once(':')?.1.parse().ok()?;
    bases
        .iter()
        .position(|b| (0..shards).any(|s| shard_port(*b, s) == port))
}

#[test]
fn a_group_made_through_one_node_is_seen_through_every_node() {
    if !have_mqadmin() {
        return;
    }
    const SHARDS: u16 = 3;
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let meta = cluster_meta_url(dir);
    let objects = stratus_tests::cluster_object_store_url(dir);
    let shards = SHARDS.to_string();
    let mut nodes = Vec::new();
    let mut bases = Vec::new();
    for n in ["a", "b", "c"] {
        let ns: SocketAddr = format!("127.0.0.1:{}", free_port()).parse().unwrap();
        let base = free_shard_base(SHARDS);
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
        bases.push(base);
    }
    // Wait for one shard per node.
    let deadline = Instant::now() + Duration::from_secs(60);
    let routes = loop {
        let r = cluster_routes(nodes[0].namesrv);
        let mut owners: Vec<usize> = r
            .values()
            .filter_map(|addr| owner(addr, &bases, SHARDS))
            .collect();
        owners.sort_unstable();
        if r.len() == usize::from(SHARDS) && owners == [0, 1, 2] {
            break r;
        }
        assert!(Instant::now() < deadline, "not balanced: {r:?}");
        std::thread::sleep(Duration::from_millis(300));
    };
    // The broker node a owns.
    let (a_broker, a_addr) = routes
        .iter()
        .find(|(_, addr)| owner(addr, &bases, SHARDS) == Some(0))
        .unwrap();
    let ns_a = nodes[0].namesrv_arg();
    let out = admin(
        "5.3.3",
        &ns_a,
        &[
            "updateSubGroup",
            "-b",
            a_addr,
            "-g",
            "ClusterOpsG",
            "-r",
            "5",
        ],
    );
    assert!(
        out.contains(&format!("create subscription group to {a_addr} success")),
        "updateSubGroup through {a_broker}:\n{out}"
    );
    // Every broker (on every node) answers with the group, whichever name server is asked.
    for (i, node) in nodes.iter().enumerate() {
        let version = VERSIONS[i % 2];
        let out = admin(
            version,
            &node.namesrv_arg(),
            &["getConsumerConfig", "-g", "ClusterOpsG"],
        );
        let blocks = consumer_config(&out);
        assert_eq!(
            blocks.keys().cloned().collect::<Vec<_>>(),
            routes.keys().cloned().collect::<Vec<_>>(),
            "mqadmin {version} getConsumerConfig through node {i}:\n{out}"
        );
        for fields in blocks.values() {
            assert_eq!(fields["retryMaxTimes"], "5", "{out}");
        }
    }
    // Deleted through another node: gone on every node.
    let (_, c_addr) = routes
        .iter()
        .find(|(_, addr)| owner(addr, &bases, SHARDS) == Some(2))
        .unwrap();
    let out = admin(
        "4.9.8",
        &nodes[2].namesrv_arg(),
        &["deleteSubGroup", "-b", c_addr, "-g", "ClusterOpsG"],
    );
    assert!(out.contains("success"), "deleteSubGroup:\n{out}");
    for addr in routes.values() {
        let addr: SocketAddr = addr.parse().unwrap();
        assert!(
            !listed_groups(addr).contains_key("ClusterOpsG"),
            "{addr} still lists the group"
        );
    }
}

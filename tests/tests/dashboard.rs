//! The RocketMQ Dashboard's admin calls, replayed through the real `DefaultMQAdminExt`
//! (Java client 5.3.3, VIP channel on as the Dashboard has it) against a running node with
//! three shards: the cluster, topic, consumer, producer and message pages and the stats
//! collector each answer with data that matches what the test produced.

#![allow(clippy::unwrap_used, clippy::disallowed_methods)] // test code: failures should panic

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::time::{Duration, Instant};

use serde_json::Value;
use stratus_compat::RequestCode;
use stratus_compat::client::RemotingClient;
use stratus_compat::command::RemotingCommand;
use stratus_compat::request::stats::ConsumeStats;
use stratus_tests::{
    ClientRun, Node, args, client_installed, clients_required, free_port, free_shard_base,
    run_client, shard_port,
};

const SHARDS: u16 = 3;
const QUEUES: i32 = 4;
const SENT: usize = 20;

fn strings(v: &Value) -> Vec<String> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|s| s.as_str().unwrap().to_owned())
        .collect()
}

/// The consumer offsets of DashCG on DashT summed over every shard (GET_CONSUME_STATS asked
/// at each shard's port).
fn committed(rt: &tokio::runtime::Runtime, base: u16) -> i64 {
    rt.block_on(async {
        let mut sum = 0;
        for s in 0..SHARDS {
            let addr: SocketAddr = format!("127.0.0.1:{}", shard_port(base, s))
                .parse()
                .unwrap();
            let c = RemotingClient::connect(addr).await.unwrap();
            let mut cmd = RemotingCommand::request(RequestCode::GetConsumeStats.to_i32(), 0);
            cmd.put_ext("consumerGroup", "DashCG");
            cmd.put_ext("topic", "DashT");
            let resp = c.invoke(cmd, Duration::from_secs(10)).await.unwrap();
            if resp.code != 0 {
                return 0;
            }
            let stats = ConsumeStats::decode(std::str::from_utf8(&resp.body).unwrap()).unwrap();
            sum += stats
                .offset_table
                .iter()
                .map(|(_, w)| w.consumer_offset)
                .sum::<i64>();
        }
        sum
    })
}

#[test]
fn dashboard_pages_answer_with_the_data_the_test_produced() {
    if !client_installed("java5") {
        assert!(
            !clients_required(),
            "java5 client required but not installed"
        );
        eprintln!("skipping: java5 client not installed");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let scratch = dir.path().join("clients");
    let ns: SocketAddr = format!("127.0.0.1:{}", free_port()).parse().unwrap();
    let base = free_shard_base(SHARDS);
    let shards = SHARDS.to_string();
    let node = Node::start_member(
        &dir.path().join("n"),
        ns,
        format!("127.0.0.1:{base}").parse().unwrap(),
        &[("STRATUS_NODE__SHARDS", shards.as_str())],
    )
    .unwrap();
    let nsarg = node.namesrv_arg();
    let rt = tokio::runtime::Runtime::new().unwrap();
    let deadline = Instant::now() + Duration::from_secs(30);
    while stratus_tests::cluster_routes(node.namesrv).len() < usize::from(SHARDS) {
        assert!(Instant::now() < deadline, "three shards routed");
        std::thread::sleep(Duration::from_millis(100));
    }
    rt.block_on(stratus_tests::create_topic(node.namesrv, "DashT", QUEUES))
        .unwrap();

    // Messages with keys dk-0 … dk-19, then a consumer that reads them all and stays.
    let a = args(&[
        "produce",
        "--namesrv",
        &nsarg,
        "--topic",
        "DashT",
        "--group",
        "DashPG",
        "--count",
        &SENT.to_string(),
        "--mode",
        "sync",
        "--tag",
        "T",
        "--keys-prefix",
        "dk",
        "--body-size",
        "100",
    ]);
    let (code, events) = run_client("java5", &a, &scratch, Duration::from_secs(120)).unwrap();
    assert_eq!(code, 0, "{events:?}");
    let consumer = ClientRun::spawn(
        "java5",
        &args(&[
            "consume",
            "--namesrv",
            &nsarg,
            "--topic",
            "DashT",
            "--group",
            "DashCG",
            "--expect",
            "1000000",
            "--timeout-secs",
            "240",
            "--from",
            "first",
        ]),
        &scratch,
    )
    .unwrap();
    let deadline = Instant::now() + Duration::from_secs(90);
    while consumer.events_of("recv").len() < SENT {
        assert!(
            Instant::now() < deadline,
            "consumer got {} of {SENT}: {}",
            consumer.events_of("recv").len(),
            consumer.stderr()
        );
        std::thread::sleep(Duration::from_millis(200));
    }
    // A producer that stays connected for the producer page (another topic).
    let live = ClientRun::spawn(
        "java5",
        &args(&[
            "produce",
            "--namesrv",
            &nsarg,
            "--topic",
            "DashLive",
            "--group",
            "DashPG_live",
            "--count",
            "400",
            "--mode",
            "sync",
            "--tag",
            "T",
            "--keys-prefix",
            "l",
            "--body-size",
            "10",
            "--interval-ms",
            "500",
        ]),
        &scratch,
    )
    .unwrap();
    live.wait_for("sent", Duration::from_secs(60)).unwrap();
    // Consumer offsets reach the brokers every 5 s (the client's persist interval): wait
    // until every shard has the group's offsets at the end of its queues.
    let deadline = Instant::now() + Duration::from_secs(60);
    while committed(&rt, base) < SENT as i64 {
        assert!(
            Instant::now() < deadline,
            "the consumer's offsets were not committed"
        );
        std::thread::sleep(Duration::from_millis(500));
    }

    let (code, events) = run_client(
        "java5",
        &args(&[
            "dashboard",
            "--namesrv",
            &nsarg,
            "--topic",
            "DashT",
            "--group",
            "DashCG",
            "--producer-group",
            "DashPG_live",
            "--key",
            "dk-7",
        ]),
        &scratch,
        Duration::from_secs(180),
    )
    .unwrap();
    drop(live);
    drop(consumer);
    assert_eq!(code, 0, "{events:?}");
    let pages: BTreeMap<String, &Value> = events
        .iter()
        .filter(|e| e["event"] == "page")
        .map(|e| (e["page"].as_str().unwrap().to_owned(), e))
        .collect();
    let failed: Vec<&&Value> = pages.values().filter(|p| p["ok"] != true).collect();
    assert!(failed.is_empty(), "pages failed: {failed:#?}");
    let p = |name: &str| *pages.get(name).unwrap_or_else(|| panic!("no page {name}"));

    let cluster = p("cluster");
    assert_eq!(cluster["brokers"], 3, "{cluster}");
    assert_eq!(cluster["missing"].as_array().unwrap().len(), 0, "{cluster}");
    assert!(
        cluster["putToday"].as_i64().unwrap() >= SENT as i64,
        "{cluster}"
    );
    assert_eq!(p("brokerConfig")["brokerClusterName"], "DefaultCluster");
    let topics = p("topicList");
    assert!(
        strings(&topics["topics"]).contains(&"DashT".to_owned()),
        "{topics}"
    );
    assert!(
        strings(&topics["system"]).contains(&"TBW102".to_owned()),
        "{topics}"
    );
    let status = p("topicStatus");
    assert_eq!(status["queues"], i64::from(QUEUES) * 3, "{status}");
    assert_eq!(status["maxOffsetSum"], SENT, "{status}");
    assert_eq!(p("topicRoute")["brokers"], 3);
    assert_eq!(p("topicConfig")["brokers"], 3);
    let by_topic = p("topicConsumers");
    assert!(
        strings(&by_topic["groups"]).contains(&"DashCG".to_owned()),
        "{by_topic}"
    );
    assert_eq!(by_topic["diff"], 0, "{by_topic}");
    let consumers = p("consumerList");
    assert!(
        strings(&consumers["groups"]).contains(&"DashCG".to_owned()),
        "{consumers}"
    );
    assert_eq!(consumers["consumerOffsetSum"], SENT, "{consumers}");
    assert_eq!(consumers["brokerOffsetSum"], SENT, "{consumers}");
    assert_eq!(consumers["connections"], 1, "{consumers}");
    assert_eq!(consumers["consumeType"], "CONSUME_PASSIVELY", "{consumers}");
    assert!(p("consumerRunningInfo")["subscriptions"].as_i64().unwrap() >= 1);
    let made = p("consumerCreateUpdateDelete");
    assert_eq!(
        (made["seen"].as_i64(), made["left"].as_i64()),
        (Some(3), Some(0)),
        "{made}"
    );
    assert!(p("producer")["connections"].as_i64().unwrap() >= 1);
    let by_key = p("messageByKey");
    assert_eq!(by_key["found"], 1, "{by_key}");
    assert_eq!(p("messageById")["keys"], "dk-7");
    assert_eq!(p("messageById")["bodyBytes"], 100);
    assert_eq!(p("consumeDirectly")["result"], "CR_SUCCESS");
    let stats = p("statsCollector");
    assert_eq!(stats["put24h"], SENT, "{stats}");
    let reset = p("resetOffset");
    assert_eq!(reset["queues"], i64::from(QUEUES) * 3, "{reset}");
    assert_eq!(reset["offsetSum"], 0, "{reset}");
}

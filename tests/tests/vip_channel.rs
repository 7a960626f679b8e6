//! The VIP channel: RocketMQ clients with `vipChannelEnabled` on (the Dashboard by default,
//! Java clients up to 4.4) dial each broker address's port − 2. Shards are served 3 ports
//! apart and each also on its port − 2, so that address reaches the same shard.

#![allow(clippy::unwrap_used, clippy::disallowed_methods)] // test code: failures should panic

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::time::Duration;

use serde_json::Value;
use stratus_compat::RequestCode;
use stratus_compat::client::RemotingClient;
use stratus_compat::command::RemotingCommand;
use stratus_compat::request::offset::{QueueRequestHeader, read_offset_response};
use stratus_tests::{
    Node, args, client_installed, clients_required, free_port, free_shard_base, run_client,
    shard_port,
};

const SHARDS: u16 = 3;
const T: Duration = Duration::from_secs(10);

/// GET_MAX_OFFSET of queue `q` of `topic` asked at `addr` without a broker name: the shard
/// is the one the port serves.
async fn max_offset(addr: SocketAddr, topic: &str, q: i32) -> i64 {
    let c = RemotingClient::connect(addr).await.unwrap();
    let mut cmd = RemotingCommand::request(RequestCode::GetMaxOffset.to_i32(), 0);
    QueueRequestHeader {
        topic: topic.into(),
        queue_id: q,
    }
    .write_to(&mut cmd);
    read_offset_response(&c.invoke(cmd, T).await.unwrap()).unwrap()
}

#[test]
fn a_java_producer_with_the_vip_channel_on_reaches_every_shard() {
    if !client_installed("java5") {
        assert!(
            !clients_required(),
            "java5 client required but not installed"
        );
        eprintln!("skipping: java5 client not installed");
        return;
    }
    let dir = tempfile::tempdir().unwrap();
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
    let rt = tokio::runtime::Runtime::new().unwrap();
    // Every shard's port is up (the node takes them all).
    for s in 0..SHARDS {
        let addr: SocketAddr = format!("127.0.0.1:{}", shard_port(base, s))
            .parse()
            .unwrap();
        let deadline = std::time::Instant::now() + Duration::from_secs(30);
        while std::net::TcpStream::connect(addr).is_err() {
            assert!(std::time::Instant::now() < deadline, "shard {s} not served");
            std::thread::sleep(Duration::from_millis(100));
        }
    }
    let topic = "VipTopic";
    rt.block_on(stratus_tests::create_topic(node.namesrv, topic, 2))
        .unwrap();

    let count = 30;
    let a = args(&[
        "produce",
        "--namesrv",
        &node.namesrv_arg(),
        "--topic",
        topic,
        "--group",
        "PG_vip",
        "--count",
        &count.to_string(),
        "--mode",
        "sync",
        "--tag",
        "T",
        "--keys-prefix",
        "v",
        "--body-size",
        "64",
        "--vip",
        "true",
    ]);
    let (code, events) = run_client(
        "java5",
        &a,
        &dir.path().join("clients"),
        Duration::from_secs(120),
    )
    .unwrap();
    assert_eq!(code, 0, "producer exit {code}: {events:?}");
    let sent: Vec<&Value> = events.iter().filter(|e| e["event"] == "sent").collect();
    assert_eq!(sent.len(), count, "every send acknowledged: {events:?}");
    // Sends per (shard, queue) as the producer saw them.
    let mut per: BTreeMap<(u16, i32), i64> = BTreeMap::new();
    for e in &sent {
        let broker = e["brokerName"].as_str().unwrap();
        let shard: u16 = broker.strip_prefix("broker-").unwrap().parse().unwrap();
        let q = i32::try_from(e["queueId"].as_i64().unwrap()).unwrap();
        *per.entry((shard, q)).or_default() += 1;
    }
    assert!(
        per.keys()
            .map(|(s, _)| s)
            .collect::<std::collections::BTreeSet<_>>()
            .len()
            == 3,
        "the producer used every shard: {per:?}"
    );
    // Each shard's port and its VIP port (port − 2) answer for that shard alone.
    for s in 0..SHARDS {
        let port = shard_port(base, s);
        for q in 0..2 {
            let want = per.get(&(s, q)).copied().unwrap_or(0);
            for p in [port, port - 2] {
                let addr: SocketAddr = format!("127.0.0.1:{p}").parse().unwrap();
                let got = rt.block_on(max_offset(addr, topic, q));
                assert_eq!(got, want, "shard {s} queue {q} asked at port {p}");
            }
        }
    }
}

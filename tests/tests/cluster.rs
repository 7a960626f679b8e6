//! Several stateless nodes on one metadata database and one object store, with real Java
//! clients running through a kill -9 and a scale-out.
//!
//! Three nodes share six shards (two each). A Java 4.9 producer sends continuously (sync
//! sends, a new message every few milliseconds) while a Java push consumer consumes. One node
//! is killed with kill -9: its leases expire and the two survivors take its shards over
//! (epoch + 1). Later a fourth node joins and takes a fair share by hand-over. At the end,
//! every acknowledged message was consumed at least once, with the body it was sent with, and
//! each queue holds the producer's messages in send order.
//!
//! Metadata: PostgreSQL when `STRATUS_TEST_POSTGRES_URL` is set (a fresh database per run),
//! else the embedded SQLite file shared by the processes. Object store: the S3 server when
//! the S3 test environment is set (see the harness), else a shared local directory.
#![allow(clippy::unwrap_used)] // test code: failures should panic

use std::collections::{BTreeMap, BTreeSet, HashMap};
use std::net::SocketAddr;
use std::path::Path;
use std::time::{Duration, Instant};

use serde_json::Value;
use stratus_compat::client::RemotingClient;
use stratus_compat::command::RemotingCommand;
use stratus_compat::{RequestCode, ResponseCode};
use stratus_tests::{
    ClientRun, Node, args, client_installed, clients_required, cluster_routes as routes, free_port,
    free_shard_base, shard_port,
};

const SHARDS: u16 = 6;
const COUNT: u32 = 2000;
const BODY: usize = 200;

/// Answer code of GET_MAX_OFFSET for queue 0 of `topic` on shard `bname`, asked at `addr`.
fn max_offset_code(addr: SocketAddr, topic: &str, bname: &str) -> i32 {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let client = RemotingClient::connect(addr).await.unwrap();
        let mut req = RemotingCommand::request(RequestCode::GetMaxOffset.to_i32(), 0);
        for (k, v) in [("topic", topic), ("queueId", "0"), ("bname", bname)] {
            req.ext_fields.insert(k.to_owned(), v.to_owned());
        }
        client
            .invoke(req, Duration::from_secs(3))
            .await
            .unwrap()
            .code
    })
}

/// Which node serves each shard, by first broker port (shard s at base + 3s).
fn owners(namesrv: SocketAddr, bases: &BTreeMap<&str, u16>) -> BTreeMap<String, &'static str> {
    let mut out = BTreeMap::new();
    for (name, addr) in routes(namesrv) {
        let port: u16 = addr.rsplit_once(':').unwrap().1.parse().unwrap();
        let shard: u16 = name.strip_prefix("broker-").unwrap().parse().unwrap();
        for (node, base) in bases {
            if port == shard_port(*base, shard) {
                let node: &'static str = Box::leak((*node).to_owned().into_boxed_str());
                out.insert(name.clone(), node);
            }
        }
    }
    out
}

fn count_by_node(o: &BTreeMap<String, &str>) -> BTreeMap<String, usize> {
    let mut c = BTreeMap::new();
    for n in o.values() {
        *c.entry((*n).to_owned()).or_insert(0) += 1;
    }
    c
}

/// Polls until `ok(owners)` holds; returns how long it took.
fn wait_routes(
    namesrv: SocketAddr,
    bases: &BTreeMap<&str, u16>,
    timeout: Duration,
    what: &str,
    ok: impl Fn(&BTreeMap<String, &str>) -> bool,
) -> Duration {
    let start = Instant::now();
    loop {
        let o = owners(namesrv, bases);
        if ok(&o) {
            return start.elapsed();
        }
        assert!(
            start.elapsed() < timeout,
            "{what}: not reached within {timeout:?}; routes now {o:?}"
        );
        std::thread::sleep(Duration::from_millis(200));
    }
}

/// The body the test producer sends for message `seq` (see tests/clients/README.md).
fn expected_crc(seq: u64) -> u32 {
    let unit = format!("c{seq}:");
    let body: Vec<u8> = unit.bytes().cycle().take(BODY).collect();
    crc32fast::hash(&body)
}

fn str_of<'a>(e: &'a Value, k: &str) -> &'a str {
    e.get(k).and_then(Value::as_str).unwrap_or_default()
}

fn num_of(e: &Value, k: &str) -> i64 {
    e.get(k)
        .and_then(|v| v.as_i64().or_else(|| v.as_str()?.parse().ok()))
        .unwrap_or(-1)
}

#[test]
fn three_nodes_survive_a_kill_and_take_in_a_fourth_with_java_clients() {
    if !client_installed("java49") {
        assert!(!clients_required(), "client java49 is not installed");
        eprintln!("skipping: client java49 is not installed");
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let meta = stratus_tests::cluster_meta_url(dir);
    let objects = stratus_tests::cluster_object_store_url(dir);
    let shards = SHARDS.to_string();
    let names = ["a", "b", "c", "d"];
    let ports: BTreeMap<&str, (SocketAddr, u16)> = names
        .iter()
        .map(|n| {
            let ns: SocketAddr = format!("127.0.0.1:{}", free_port()).parse().unwrap();
            (*n, (ns, free_shard_base(SHARDS)))
        })
        .collect();
    let bases: BTreeMap<&str, u16> = ports.iter().map(|(n, (_, b))| (*n, *b)).collect();
    let start = |n: &str| {
        let (ns, base) = ports[n];
        let id = format!("node-{n}");
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
        .unwrap()
    };
    let mut a = start("a");
    let mut b = start("b");
    let mut c = start("c");
    let ns_a = ports["a"].0;
    let first = wait_routes(
        ns_a,
        &bases,
        Duration::from_secs(60),
        "three nodes, two shards each",
        |o| {
            o.len() == usize::from(SHARDS)
                && count_by_node(o).values().all(|&n| n == 2)
                && count_by_node(o).len() == 3
        },
    );
    eprintln!("three nodes balanced in {first:?}");

    // A broker request for a shard another node owns is refused so the client re-routes.
    let now = owners(ns_a, &bases);
    let (foreign, _) = now.iter().find(|(_, n)| **n != "a").unwrap();
    let (own, _) = now.iter().find(|(_, n)| **n == "a").unwrap();
    assert_eq!(
        max_offset_code(ns_a, "ClusterT", foreign),
        ResponseCode::ServiceNotAvailable.to_i32(),
        "a request for {foreign} at node a"
    );
    assert_eq!(
        max_offset_code(ns_a, "ClusterT", own),
        ResponseCode::Success.to_i32(),
        "a request for {own} at node a"
    );

    let namesrvs = ["a", "b", "c"]
        .iter()
        .map(|n| ports[n].0.to_string())
        .collect::<Vec<_>>()
        .join(";");
    let scratch = dir.join("clients");
    let consumer = ClientRun::spawn(
        "java49",
        &args(&[
            "consume",
            "--namesrv",
            &namesrvs,
            "--topic",
            "ClusterT",
            "--group",
            "ClusterCG",
            "--expect",
            &COUNT.to_string(),
            "--timeout-secs",
            "400",
            "--idle-exit-secs",
            "40",
            "--poll-namesrv-ms",
            "2000",
        ]),
        &scratch,
    )
    .unwrap();
    consumer.wait_for("ready", Duration::from_secs(60)).unwrap();
    let producer = ClientRun::spawn(
        "java49",
        &args(&[
            "produce",
            "--namesrv",
            &namesrvs,
            "--topic",
            "ClusterT",
            "--group",
            "ClusterPG",
            "--count",
            &COUNT.to_string(),
            "--mode",
            "sync",
            "--tag",
            "t",
            "--keys-prefix",
            "k",
            "--body-size",
            &BODY.to_string(),
            "--id-prefix",
            "c",
            "--interval-ms",
            "15",
            "--poll-namesrv-ms",
            "2000",
        ]),
        &scratch,
    )
    .unwrap();
    let wait_sent = |n: usize| {
        let deadline = Instant::now() + Duration::from_secs(180);
        while producer.events_of("sent").len() < n {
            assert!(
                Instant::now() < deadline,
                "producer stalled at {} sends; stderr:\n{}",
                producer.events_of("sent").len(),
                producer.stderr()
            );
            std::thread::sleep(Duration::from_millis(100));
        }
    };

    // kill -9 one node while both clients run.
    wait_sent(300);
    b.kill9().unwrap();
    let takeover = wait_routes(
        ns_a,
        &bases,
        Duration::from_secs(60),
        "survivors own every shard",
        |o| {
            o.len() == usize::from(SHARDS)
                && !o.values().any(|n| *n == "b")
                && count_by_node(o).values().all(|&n| n == 3)
        },
    );
    eprintln!("takeover after kill -9: every shard served again {takeover:?} after the kill");

    // A fourth node joins and takes a fair share by hand-over.
    wait_sent(800);
    let mut d = start("d");
    let join = wait_routes(
        ns_a,
        &bases,
        Duration::from_secs(60),
        "fourth node holds a fair share",
        |o| {
            o.len() == usize::from(SHARDS)
                && count_by_node(o).get("d") == Some(&2)
                && count_by_node(o).values().all(|&n| n == 2)
        },
    );
    eprintln!("scale-out: the new node serves its share {join:?} after it started");

    // SIGTERM hands shards over before exit: the others serve them without waiting for the
    // lease to expire.
    wait_sent(1500);
    let stopping = Instant::now();
    assert!(c.terminate().unwrap(), "node c exits cleanly on SIGTERM");
    wait_routes(
        ns_a,
        &bases,
        Duration::from_secs(60),
        "a and d own every shard after c stopped",
        |o| {
            o.len() == usize::from(SHARDS)
                && count_by_node(o).get("a") == Some(&3)
                && count_by_node(o).get("d") == Some(&3)
        },
    );
    eprintln!(
        "hand-over on SIGTERM: every shard served again {:?} after the signal",
        stopping.elapsed()
    );

    let (code, sent_events) = producer.wait(Duration::from_secs(300)).unwrap();
    let (_, recv_events) = consumer.wait(Duration::from_secs(420)).unwrap();

    let acked: Vec<&Value> = sent_events
        .iter()
        .filter(|e| str_of(e, "event") == "sent")
        .collect();
    let failed = sent_events
        .iter()
        .filter(|e| str_of(e, "event") == "error")
        .count();
    let recv: Vec<&Value> = recv_events
        .iter()
        .filter(|e| str_of(e, "event") == "recv")
        .collect();
    // The producer exits 1 when any send failed (sends to the killed node can).
    assert!(
        code == 0 || (code == 1 && failed > 0),
        "producer exit code {code} with {failed} failed sends"
    );
    assert_eq!(
        acked.len() + failed,
        COUNT as usize,
        "every send accounted for"
    );
    assert!(
        acked.len() > (COUNT as usize) * 9 / 10,
        "most sends acknowledged: {} of {COUNT} ({failed} failed)",
        acked.len()
    );

    // Every acknowledged message consumed, uncorrupted.
    let mut received: HashMap<&str, usize> = HashMap::new();
    for r in &recv {
        let seq: u64 = str_of(r, "seq").parse().unwrap();
        assert_eq!(
            num_of(r, "bodyLen"),
            BODY as i64,
            "body length of seq {seq}"
        );
        assert_eq!(
            num_of(r, "bodyCrc32"),
            i64::from(expected_crc(seq)),
            "body of seq {seq} corrupted"
        );
        *received.entry(str_of(r, "msgId")).or_insert(0) += 1;
    }
    let missing: Vec<i64> = acked
        .iter()
        .filter(|s| !received.contains_key(str_of(s, "msgId")))
        .map(|s| num_of(s, "seq"))
        .collect();
    assert!(
        missing.is_empty(),
        "acknowledged but never consumed: {} messages, seqs {:?}",
        missing.len(),
        &missing[..missing.len().min(20)]
    );

    // Per queue, messages are stored in send order (one producer, sync sends).
    let mut queues: BTreeMap<(String, i64), Vec<(i64, i64)>> = BTreeMap::new();
    let mut seen: BTreeSet<(String, i64, i64)> = BTreeSet::new();
    for r in &recv {
        let key = (str_of(r, "brokerName").to_owned(), num_of(r, "queueId"));
        let off = num_of(r, "queueOffset");
        if seen.insert((key.0.clone(), key.1, off)) {
            let seq: i64 = str_of(r, "seq").parse().unwrap();
            queues.entry(key).or_default().push((off, seq));
        }
    }
    for (q, entries) in &mut queues {
        entries.sort_unstable();
        for w in entries.windows(2) {
            assert!(
                w[0].1 <= w[1].1,
                "queue {q:?}: seq {} at offset {} before seq {} at offset {}",
                w[0].1,
                w[0].0,
                w[1].1,
                w[1].0
            );
        }
    }
    let deliveries = recv.len();
    let unique = received.len();
    eprintln!(
        "cluster run: {} acknowledged, {failed} failed sends, {deliveries} deliveries of {unique} \
         messages ({} duplicate deliveries), {} queues used",
        acked.len(),
        deliveries - unique,
        queues.len()
    );

    for n in [&mut a, &mut d] {
        assert!(n.terminate().unwrap(), "node exits cleanly on SIGTERM");
    }
}

/// One SEND_MESSAGE_V2 to `addr` for queue 0 of `topic` on shard `broker-0`.
async fn send_one(addr: SocketAddr, topic: &str, key: &str) -> RemotingCommand {
    let client = RemotingClient::connect(addr).await.unwrap();
    let cmd = stratus_tests::send_to_queue0(topic, "broker-0", key, &b"fenced?"[..]);
    client.invoke(cmd, Duration::from_secs(30)).await.unwrap()
}

/// A node frozen past its lease (a long GC-like pause or a network cut) must not
/// acknowledge the sends it was holding: when it wakes up, another node owns the shard under
/// a higher epoch, its commit is fenced, and the waiting send fails with
/// SERVICE_NOT_AVAILABLE. The message is not stored; the new owner serves the queue.
#[test]
fn a_node_that_lost_its_lease_fails_its_waiting_sends_instead_of_acknowledging() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let meta = stratus_tests::cluster_meta_url(dir);
    let objects = stratus_tests::cluster_object_store_url(dir);
    let ns_a: SocketAddr = format!("127.0.0.1:{}", free_port()).parse().unwrap();
    let ns_b: SocketAddr = format!("127.0.0.1:{}", free_port()).parse().unwrap();
    let base_a = free_shard_base(1);
    let base_b = free_shard_base(1);
    let envs = |id: &'static str, linger: &'static str| {
        vec![
            ("STRATUS_NODE__ID", id.to_owned()),
            ("STRATUS_NODE__SHARDS", "1".to_owned()),
            ("STRATUS_META__URL", meta.clone()),
            ("STRATUS_META__LEASE_TTL", "3s".to_owned()),
            ("STRATUS_STORAGE__OBJECT_STORE_URL", objects.clone()),
            ("STRATUS_STORAGE__LINGER", linger.to_owned()),
        ]
    };
    let start = |dir: &Path, ns, base: u16, env: Vec<(&str, String)>| {
        let env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
        Node::start_member(dir, ns, format!("127.0.0.1:{base}").parse().unwrap(), &env).unwrap()
    };
    // Node a holds the only shard and seals at most one segment every 3 s.
    let a = start(&dir.join("a"), ns_a, base_a, envs("node-a", "3s"));
    let bases = BTreeMap::from([("a", base_a), ("b", base_b)]);
    wait_routes(
        ns_a,
        &bases,
        Duration::from_secs(30),
        "a owns the shard",
        |o| o.get("broker-0") == Some(&"a"),
    );
    let b = start(&dir.join("b"), ns_b, base_b, envs("node-b", "5ms"));

    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let shard_a: SocketAddr = format!("127.0.0.1:{base_a}").parse().unwrap();
    // The first send after a quiet period is sealed at once; the next one waits for the
    // 3 s pace, and that is the one held across the pause.
    let first = rt.block_on(send_one(shard_a, "FenceT", "first"));
    assert_eq!(
        first.code,
        ResponseCode::Success.to_i32(),
        "{:?}",
        first.remark
    );
    let pending = rt.spawn(send_one(shard_a, "FenceT", "held"));
    std::thread::sleep(Duration::from_millis(300));
    a.pause().unwrap();
    // a's lease expires; b takes the shard with a higher epoch.
    wait_routes(
        ns_b,
        &bases,
        Duration::from_secs(30),
        "b took the shard",
        |o| o.get("broker-0") == Some(&"b"),
    );
    a.resume().unwrap();
    let answer = rt.block_on(pending).unwrap();
    assert_eq!(
        answer.code,
        ResponseCode::ServiceNotAvailable.to_i32(),
        "the held send fails instead of being acknowledged: {:?}",
        answer.remark
    );

    // The new owner serves the queue; the refused message was never stored.
    let shard_b: SocketAddr = format!("127.0.0.1:{base_b}").parse().unwrap();
    let ok = rt.block_on(send_one(shard_b, "FenceT", "after"));
    assert_eq!(ok.code, ResponseCode::Success.to_i32(), "{:?}", ok.remark);
    let h = stratus_compat::request::send::SendMessageResponseHeader::from_command(&ok).unwrap();
    assert_eq!(h.queue_offset, 1, "the fenced message took no offset");
    let max = rt.block_on(async {
        let client = RemotingClient::connect(shard_b).await.unwrap();
        let mut req = RemotingCommand::request(RequestCode::GetMaxOffset.to_i32(), 0);
        for (k, v) in [("topic", "FenceT"), ("queueId", "0"), ("bname", "broker-0")] {
            req.ext_fields.insert(k.to_owned(), v.to_owned());
        }
        let resp = client.invoke(req, Duration::from_secs(3)).await.unwrap();
        resp.ext_fields.get("offset").cloned().unwrap_or_default()
    });
    assert_eq!(max, "2", "exactly the two acknowledged messages are stored");
    drop(a);
    drop(b);
}

/// Shards can be added later, as brokers are added to a RocketMQ cluster: a node started
/// with a higher `node.shards` creates the new shards, takes them, and routes publish every
/// topic's queues on them too; what the old shards hold is still served.
#[test]
fn raising_the_shard_count_adds_brokers_to_every_route() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let meta = stratus_tests::cluster_meta_url(dir);
    let objects = stratus_tests::cluster_object_store_url(dir);
    let ns: SocketAddr = format!("127.0.0.1:{}", free_port()).parse().unwrap();
    let base = free_shard_base(3);
    let start = |shards: &str| {
        Node::start_member(
            &dir.join("n"),
            ns,
            format!("127.0.0.1:{base}").parse().unwrap(),
            &[
                ("STRATUS_NODE__ID", "node-n"),
                ("STRATUS_NODE__SHARDS", shards),
                ("STRATUS_META__URL", meta.as_str()),
                ("STRATUS_STORAGE__OBJECT_STORE_URL", objects.as_str()),
            ],
        )
        .unwrap()
    };
    let bases = BTreeMap::from([("n", base)]);
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();

    let mut node = start("2");
    wait_routes(ns, &bases, Duration::from_secs(30), "two shards", |o| {
        o.len() == 2
    });
    let shard0: SocketAddr = format!("127.0.0.1:{base}").parse().unwrap();
    let sent = rt.block_on(send_one(shard0, "GrowT", "before"));
    assert_eq!(
        sent.code,
        ResponseCode::Success.to_i32(),
        "{:?}",
        sent.remark
    );
    assert!(node.terminate().unwrap());

    let _node = start("3");
    wait_routes(ns, &bases, Duration::from_secs(30), "three shards", |o| {
        o.len() == 3 && o.contains_key("broker-2")
    });
    let route = rt.block_on(async {
        let client = RemotingClient::connect(ns).await.unwrap();
        let mut req = RemotingCommand::request(RequestCode::GetRouteinfoByTopic.to_i32(), 0);
        req.ext_fields.insert("topic".into(), "GrowT".into());
        let resp = client.invoke(req, Duration::from_secs(3)).await.unwrap();
        serde_json::from_slice::<stratus_compat::request::route::TopicRouteData>(&resp.body)
            .unwrap()
    });
    let brokers: BTreeSet<&str> = route
        .queue_datas
        .iter()
        .map(|q| q.broker_name.as_str())
        .collect();
    assert_eq!(
        brokers,
        BTreeSet::from(["broker-0", "broker-1", "broker-2"]),
        "the existing topic has queues on the new shard"
    );
    let shard2: SocketAddr = format!("127.0.0.1:{}", shard_port(base, 2))
        .parse()
        .unwrap();
    let mut req = RemotingCommand::request(RequestCode::GetMaxOffset.to_i32(), 0);
    for (k, v) in [("topic", "GrowT"), ("queueId", "0"), ("bname", "broker-0")] {
        req.ext_fields.insert(k.to_owned(), v.to_owned());
    }
    let max_old = rt.block_on(async {
        let client = RemotingClient::connect(shard0).await.unwrap();
        client.invoke(req, Duration::from_secs(3)).await.unwrap()
    });
    assert_eq!(
        max_old.ext_fields.get("offset").map(String::as_str),
        Some("1"),
        "the old shard still serves what it held"
    );
    let mut on_new = rt.block_on(async {
        let client = RemotingClient::connect(shard2).await.unwrap();
        let mut req = RemotingCommand::request(RequestCode::GetMaxOffset.to_i32(), 0);
        for (k, v) in [("topic", "GrowT"), ("queueId", "0"), ("bname", "broker-2")] {
            req.ext_fields.insert(k.to_owned(), v.to_owned());
        }
        client.invoke(req, Duration::from_secs(3)).await.unwrap()
    });
    assert_eq!(on_new.code, ResponseCode::Success.to_i32());
    assert_eq!(
        on_new.ext_fields.remove("offset").as_deref(),
        Some("0"),
        "the new shard starts empty"
    );
}

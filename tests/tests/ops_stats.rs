//! Broker statistics for operators, end to end: a real `stratus` process, traffic sent and
//! consumed through the protocol, and the real `mqadmin` (5.3.3 and 4.9.8) reading the
//! figures back — clusterList, brokerStatus, statsAll, consumerProgress,
//! brokerConsumeStats, producer, getBrokerConfig / updateBrokerConfig (through one node,
//! read through another on one PostgreSQL) — and a real Prometheus scraping a node,
//! every query of `deploy/grafana/stratus.json` answered with series.

#![allow(clippy::unwrap_used, clippy::disallowed_methods)] // test code: failures should panic

use std::io::{Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use serde_json::Value;
use stratus_compat::client::RemotingClient;
use stratus_compat::command::RemotingCommand;
use stratus_compat::message::id::decode_offset_msg_id;
use stratus_compat::request::consumer::ConsumerSendMsgBackRequestHeader;
use stratus_compat::request::offset::UpdateConsumerOffsetRequestHeader;
use stratus_compat::request::send::SendMessageResponseHeader;
use stratus_compat::request::stats::{BrokerStatsData, ViewBrokerStatsDataRequestHeader};
use stratus_compat::{RequestCode, ResponseCode};
use stratus_tests::{
    Node, clients_required, free_port, mqadmin, pull_queue0, send_to_queue0, workspace_root,
};

const TOPIC: &str = "OpsStats";
const GROUP: &str = "OpsGroup";
const PRODUCER_GROUP: &str = "OpsProducer";
const SENT: i64 = 20;
const COMMITTED: i64 = 12;

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

fn invoke(
    rt: &tokio::runtime::Runtime,
    client: &RemotingClient,
    cmd: RemotingCommand,
) -> RemotingCommand {
    rt.block_on(client.invoke(cmd, Duration::from_secs(10)))
        .unwrap()
}

/// A heartbeat registering producer group PRODUCER_GROUP and consumer group GROUP (push,
/// clustering) subscribed to TOPIC.
fn heartbeat() -> RemotingCommand {
    let body = format!(
        r#"{{"clientID":"127.0.0.1@ops-stats","producerDataSet":[{{"groupName":"{PRODUCER_GROUP}"}}],"consumerDataSet":[{{"groupName":"{GROUP}","consumeType":"CONSUME_PASSIVELY","messageModel":"CLUSTERING","consumeFromWhere":"CONSUME_FROM_FIRST_OFFSET","subscriptionDataSet":[{{"topic":"{TOPIC}","subString":"*","subVersion":1,"expressionType":"TAG"}}],"unitMode":false}}]}}"#
    );
    RemotingCommand::request(RequestCode::HeartBeat.to_i32(), 0).with_body(body.into_bytes())
}

/// Traffic on a node: SENT messages to queue 0 of TOPIC, GROUP pulls them all and commits
/// COMMITTED, one message goes to GROUP's dead-letter topic. Returns the client, which
/// keeps the heartbeating channel (producer and consumer registered) open.
fn traffic(rt: &tokio::runtime::Runtime, node: &Node) -> RemotingClient {
    let client = rt.block_on(RemotingClient::connect(node.broker)).unwrap();
    let resp = invoke(rt, &client, heartbeat());
    assert_eq!(
        resp.response_code(),
        ResponseCode::Success,
        "{:?}",
        resp.remark
    );
    let mut first_id = String::new();
    for i in 0..SENT {
        let resp = invoke(
            rt,
            &client,
            send_to_queue0(TOPIC, "broker-0", &format!("k{i}"), format!("body-{i:04}")),
        );
        assert_eq!(
            resp.response_code(),
            ResponseCode::Success,
            "{:?}",
            resp.remark
        );
        if i == 0 {
            first_id = SendMessageResponseHeader::from_command(&resp)
                .unwrap()
                .msg_id;
        }
    }
    let resp = invoke(rt, &client, pull_queue0(GROUP, TOPIC, "broker-0", 0, 0));
    assert_eq!(
        resp.response_code(),
        ResponseCode::Success,
        "{:?}",
        resp.remark
    );
    let mut commit = RemotingCommand::request(RequestCode::UpdateConsumerOffset.to_i32(), 0);
    UpdateConsumerOffsetRequestHeader {
        consumer_group: GROUP.into(),
        topic: TOPIC.into(),
        queue_id: 0,
        commit_offset: COMMITTED,
    }
    .write_to(&mut commit);
    commit.ext_fields.insert("bname".into(), "broker-0".into());
    assert_eq!(
        invoke(rt, &client, commit).response_code(),
        ResponseCode::Success
    );
    let mut back = RemotingCommand::request(RequestCode::ConsumerSendMsgBack.to_i32(), 0);
    ConsumerSendMsgBackRequestHeader {
        offset: decode_offset_msg_id(&first_id).unwrap().1,
        group: GROUP.into(),
        delay_level: -1,
        origin_msg_id: Some(first_id.clone()),
        origin_topic: Some(TOPIC.into()),
        unit_mode: false,
        max_reconsume_times: None,
    }
    .write_to(&mut back);
    let resp = invoke(rt, &client, back);
    assert_eq!(
        resp.response_code(),
        ResponseCode::Success,
        "{:?}",
        resp.remark
    );
    client
}

fn stats_data(
    rt: &tokio::runtime::Runtime,
    client: &RemotingClient,
    name: &str,
    key: &str,
) -> Option<BrokerStatsData> {
    let mut cmd = RemotingCommand::request(RequestCode::ViewBrokerStatsData.to_i32(), 0);
    ViewBrokerStatsDataRequestHeader {
        stats_name: name.into(),
        stats_key: key.into(),
    }
    .write_to(&mut cmd);
    let resp = invoke(rt, client, cmd);
    (resp.response_code() == ResponseCode::Success)
        .then(|| serde_json::from_slice(&resp.body).unwrap())
}

/// No Java stack trace in a tool's output.
fn assert_clean(what: &str, out: &str) {
    assert!(
        !out.contains("Exception") && !out.contains("\tat org."),
        "{what} printed an error:\n{out}"
    );
}

/// The numbers in a row of `(…)`-decorated TPS columns: "0.20(0,0ms)" → 0.20.
fn tps(col: &str) -> f64 {
    col.split('(').next().unwrap().parse().unwrap()
}

/// The `key : value` lines of brokerStatus.
fn kv_lines(out: &str) -> std::collections::BTreeMap<String, String> {
    out.lines()
        .filter_map(|l| l.split_once(':'))
        .map(|(k, v)| (k.trim().to_owned(), v.trim().to_owned()))
        .collect()
}

#[test]
fn mqadmin_reads_true_broker_statistics() {
    let dir = tempfile::tempdir().unwrap();
    let node = Node::start(dir.path()).unwrap();
    let ns = node.namesrv_arg();
    let broker = node.broker.to_string();
    let rt = runtime();
    let client = traffic(&rt, &node);

    // clusterList right after the traffic (its TPS is over the last 10 s).
    for version in ["5.3.3", "4.9.8"] {
        let Some(out) = mqadmin(version, &ns, &["clusterList"]).unwrap() else {
            return;
        };
        assert_clean(&format!("mqadmin {version} clusterList"), &out);
        let row = out
            .lines()
            .find(|l| l.starts_with("DefaultCluster"))
            .unwrap_or_else(|| panic!("{version}: no broker row:\n{out}"));
        let cols: Vec<&str> = row.split_whitespace().collect();
        assert_eq!(cols[1], "broker-0", "{row}");
        // InTPS and OutTPS are rates over the last 10 s: on a loaded machine the JVM may
        // start after that window has passed, so they are checked against the 60 s rates
        // of brokerStatus below; here they must parse.
        assert!(
            tps(cols[5]) >= 0.0 && tps(cols[6]) >= 0.0,
            "{version}: {row}"
        );
    }

    // brokerStatus: the reference's keys, totals equal to the traffic.
    let out = mqadmin("5.3.3", &ns, &["brokerStatus", "-b", &broker])
        .unwrap()
        .unwrap();
    assert_clean("brokerStatus", &out);
    let kv = kv_lines(&out);
    for key in [
        "bootTimestamp",
        "runtime",
        "putTps",
        "getFoundTps",
        "getMissTps",
        "getTotalTps",
        "getTransferredTps",
        "msgPutTotalTodayNow",
        "msgGetTotalTodayNow",
        "msgPutTotalTodayMorning",
        "msgPutTotalYesterdayMorning",
        "earliestMessageTimeStamp",
        "commitLogDiskRatio",
        "commitLogDirCapacity",
        "sendThreadPoolQueueSize",
        "pullThreadPoolQueueHeadWaitTimeMills",
        "putMessageDistributeTime",
        "putLatency99",
        "brokerVersionDesc",
        "timerReadBehind",
        "remainHowManyDataToFlush",
        "commitLogMaxOffset",
        "EndTransactionQueueSize",
    ] {
        assert!(kv.contains_key(key), "brokerStatus lacks {key}:\n{out}");
    }
    // putTps / getTransferredTps are "10 s, 60 s, 600 s" rates: the 60 s one covers the
    // traffic of a moment ago.
    let rate = |key: &str| -> f64 {
        let fields: Vec<f64> = kv[key]
            .split_whitespace()
            .map(|f| f.parse().unwrap())
            .collect();
        assert_eq!(fields.len(), 3, "{key}: {}", kv[key]);
        fields[1]
    };
    assert!(
        rate("putTps") > 0.0,
        "no put rate after {SENT} sends:\n{out}"
    );
    assert!(
        rate("getTransferredTps") > 0.0,
        "no get rate after a pull:\n{out}"
    );
    // Sends only: the dead-letter re-store is not a client's put.
    assert_eq!(kv["msgPutTotalTodayNow"], SENT.to_string(), "{out}");
    assert_eq!(kv["msgGetTotalTodayNow"], SENT.to_string(), "{out}");
    assert_eq!(
        kv["putMessageTimesTotal"],
        SENT.to_string(),
        "user sends only: {out}"
    );
    let ratio: f64 = kv["commitLogDiskRatio"].parse().unwrap();
    assert!(
        ratio > 0.0 && ratio < 1.0,
        "a real disk's used ratio: {out}"
    );
    assert!(kv["commitLogDirCapacity"].starts_with("Total : "), "{out}");
    let boot: i64 = kv["bootTimestamp"].parse().unwrap();
    assert!((stratus_tests::now_ms() - boot).abs() < 120_000, "{out}");
    assert!(
        kv["earliestMessageTimeStamp"].parse::<i64>().unwrap() >= boot,
        "{out}"
    );

    // The stats items take a sample every 10 s.
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let put = stats_data(&rt, &client, "TOPIC_PUT_NUMS", TOPIC);
        if put.as_ref().is_some_and(|p| p.stats_minute.sum == SENT) {
            break;
        }
        assert!(
            Instant::now() < deadline,
            "TOPIC_PUT_NUMS never showed {SENT}: {put:?}"
        );
        std::thread::sleep(Duration::from_millis(500));
    }
    let got = stats_data(&rt, &client, "GROUP_GET_NUMS", &format!("{TOPIC}@{GROUP}")).unwrap();
    assert_eq!(got.stats_minute.sum, SENT);
    assert!(stats_data(&rt, &client, "GROUP_GET_NUMS", "nobody@nowhere").is_none());

    // statsAll: the topic's row needs QUERY_TOPIC_CONSUME_BY_WHO (which groups consume it);
    // when the node answers it, the row's figures are the traffic's.
    let out = mqadmin("5.3.3", &ns, &["statsAll", "-t", TOPIC])
        .unwrap()
        .unwrap();
    assert!(out.contains("#InMsg24Hour"), "{out}");
    if let Some(row) = out.lines().find(|l| l.starts_with(TOPIC)) {
        let cols: Vec<&str> = row.split_whitespace().collect();
        assert_eq!(cols[cols.len() - 2], SENT.to_string(), "{row}");
        assert_eq!(cols[cols.len() - 1], SENT.to_string(), "{row}");
    } else {
        eprintln!("statsAll printed no row for {TOPIC} (QUERY_TOPIC_CONSUME_BY_WHO not answered)");
    }

    // consumerProgress: offsets and diff after a partial consume, in both tool versions.
    // 5.3.3 first reads each topic's config with GET_TOPIC_CONFIG (351); where the node
    // does not answer that code, only 4.9.8's figures are checked.
    for (version, total) in [("4.9.8", "Diff Total"), ("5.3.3", "Consume Diff Total")] {
        let out = mqadmin(version, &ns, &["consumerProgress", "-g", GROUP])
            .unwrap()
            .unwrap();
        if version == "5.3.3" && out.contains("request type 351 not supported") {
            eprintln!("mqadmin 5.3.3 consumerProgress needs GET_TOPIC_CONFIG (351): not checked");
            continue;
        }
        assert_clean(&format!("mqadmin {version} consumerProgress"), &out);
        let row = out
            .lines()
            .find(|l| l.starts_with(TOPIC) && l.split_whitespace().nth(2) == Some("0"))
            .unwrap_or_else(|| panic!("{version}: no row for queue 0:\n{out}"));
        let cols: Vec<&str> = row.split_whitespace().collect();
        assert_eq!(cols[1], "broker-0", "{row}");
        assert_eq!(cols[3], SENT.to_string(), "broker offset: {row}");
        assert_eq!(cols[4], COMMITTED.to_string(), "consumer offset: {row}");
        assert_eq!(cols[5], (SENT - COMMITTED).to_string(), "diff: {row}");
        assert!(
            !row.contains("N/A"),
            "last time of the consumed message: {row}"
        );
        assert!(
            out.contains(&format!("{total}: {}", SENT - COMMITTED)),
            "{out}"
        );
    }

    // brokerConsumeStats: the group's row on this broker.
    let out = mqadmin("5.3.3", &ns, &["brokerConsumeStats", "-b", &broker])
        .unwrap()
        .unwrap();
    assert_clean("brokerConsumeStats", &out);
    let row = out
        .lines()
        .find(|l| l.starts_with(TOPIC) && l.split_whitespace().nth(3) == Some("0"))
        .unwrap_or_else(|| panic!("no row for {TOPIC} queue 0:\n{out}"));
    let cols: Vec<&str> = row.split_whitespace().collect();
    assert_eq!((cols[1], cols[2]), (GROUP, "broker-0"), "{row}");
    assert_eq!(cols[4], SENT.to_string(), "{row}");
    assert_eq!(cols[5], COMMITTED.to_string(), "{row}");
    assert_eq!(cols[6], (SENT - COMMITTED).to_string(), "{row}");
    assert!(
        out.contains(&format!("Diff Total: {}", SENT - COMMITTED)),
        "{out}"
    );

    // producer: the registered producer.
    let out = mqadmin("5.3.3", &ns, &["producer", "-b", &broker])
        .unwrap()
        .unwrap();
    assert_clean("producer", &out);
    assert!(
        out.contains(&format!("producer group ({PRODUCER_GROUP}) instance"))
            && out.contains("127.0.0.1@ops-stats"),
        "{out}"
    );

    // getBrokerConfig, and a key fixed at start refused.
    let out = mqadmin("5.3.3", &ns, &["getBrokerConfig", "-b", &broker])
        .unwrap()
        .unwrap();
    assert_clean("getBrokerConfig", &out);
    let cfg = config_lines(&out);
    assert_eq!(
        cfg.get("brokerClusterName").map(String::as_str),
        Some("DefaultCluster"),
        "{out}"
    );
    assert_eq!(
        cfg.get("maxMessageSize").map(String::as_str),
        Some("4194304"),
        "{out}"
    );
    let out = mqadmin(
        "5.3.3",
        &ns,
        &[
            "updateBrokerConfig",
            "-b",
            &broker,
            "-k",
            "maxMessageSize",
            "-v",
            "1",
        ],
    )
    .unwrap()
    .unwrap();
    assert!(
        out.contains("CODE: 16") && out.contains("black list"),
        "{out}"
    );
    drop(client);
}

/// `key = value` lines of getBrokerConfig.
fn config_lines(out: &str) -> std::collections::BTreeMap<String, String> {
    out.lines()
        .filter(|l| !l.starts_with("====="))
        .filter_map(|l| l.split_once('='))
        .map(|(k, v)| (k.trim().to_owned(), v.trim().to_owned()))
        .collect()
}

/// A PostgreSQL URL: `STRATUS_TEST_POSTGRES_URL` (a fresh database in it), else a server
/// started with tests/servers/postgres.sh in `dir` when PostgreSQL is installed. `None`
/// (skip) when neither and PostgreSQL is not required.
fn postgres(dir: &Path) -> Option<(String, Option<PathBuf>)> {
    let (url, started) = match std::env::var("STRATUS_TEST_POSTGRES_URL") {
        Ok(url) => (url, None),
        Err(_) => {
            let installed = Path::new("/usr/lib/postgresql").exists()
                || Command::new("initdb").arg("--version").output().is_ok();
            let required = std::env::var("STRATUS_REQUIRE_POSTGRES").is_ok_and(|v| v == "1");
            if !installed {
                assert!(!required, "PostgreSQL is required but not installed");
                eprintln!("skipping: PostgreSQL not installed and STRATUS_TEST_POSTGRES_URL unset");
                return None;
            }
            let pg = dir.join("pg");
            let port = free_port().to_string();
            let out = Command::new("bash")
                .arg(workspace_root().join("tests/servers/postgres.sh"))
                .args(["start", pg.to_str().unwrap(), &port])
                .output()
                .unwrap();
            assert!(
                out.status.success(),
                "postgres.sh: {}",
                String::from_utf8_lossy(&out.stderr)
            );
            (
                String::from_utf8(out.stdout).unwrap().trim().to_owned(),
                Some(pg),
            )
        }
    };
    Some((stratus_tests::postgres_database(&url), started))
}

#[test]
fn broker_config_changed_through_one_node_is_read_through_another() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    // postgres.sh runs the server as the postgres user: its directory must be reachable.
    let mut perms = std::fs::metadata(dir).unwrap().permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut perms, 0o755);
    std::fs::set_permissions(dir, perms).unwrap();
    let Some((meta, pg)) = postgres(dir) else {
        return;
    };
    let objects = stratus_tests::cluster_object_store_url(dir);
    let start = |name: &str| {
        let ns: SocketAddr = format!("127.0.0.1:{}", free_port()).parse().unwrap();
        let base = stratus_tests::free_shard_base(2);
        let id = format!("node-{name}");
        Node::start_member(
            &dir.join(name),
            ns,
            format!("127.0.0.1:{base}").parse().unwrap(),
            &[
                ("STRATUS_NODE__ID", id.as_str()),
                ("STRATUS_NODE__SHARDS", "2"),
                ("STRATUS_META__URL", meta.as_str()),
                ("STRATUS_META__LEASE_TTL", "3s"),
                ("STRATUS_STORAGE__OBJECT_STORE_URL", objects.as_str()),
            ],
        )
        .unwrap()
    };
    let a = start("a");
    let b = start("b");
    let update = mqadmin(
        "5.3.3",
        &a.namesrv_arg(),
        &[
            "updateBrokerConfig",
            "-b",
            &a.namesrv.to_string(),
            "-k",
            "opsNote",
            "-v",
            "set-through-a",
        ],
    )
    .unwrap();
    let Some(update) = update else {
        return;
    };
    assert!(!update.contains("Exception"), "{update}");
    let out = mqadmin(
        "5.3.3",
        &b.namesrv_arg(),
        &["getBrokerConfig", "-b", &b.namesrv.to_string()],
    )
    .unwrap()
    .unwrap();
    assert_eq!(
        config_lines(&out).get("opsNote").map(String::as_str),
        Some("set-through-a"),
        "{out}"
    );
    assert_eq!(
        config_lines(&out)
            .get("stratus.node.id")
            .map(String::as_str),
        Some("node-b"),
        "{out}"
    );
    drop((a, b));
    if let Some(pg) = pg {
        let _ = Command::new("bash")
            .arg(workspace_root().join("tests/servers/postgres.sh"))
            .args(["stop", pg.to_str().unwrap()])
            .status();
    }
}

/// The Prometheus binary (tests/servers/prometheus.sh path). `None` (skip) when none is
/// installed and clients are not required.
fn prometheus_bin() -> Option<PathBuf> {
    let out = Command::new("bash")
        .arg(workspace_root().join("tests/servers/prometheus.sh"))
        .arg("path")
        .output()
        .unwrap();
    if out.status.success() {
        return Some(PathBuf::from(String::from_utf8(out.stdout).unwrap().trim()));
    }
    assert!(
        !clients_required(),
        "Prometheus is required but not installed (tests/servers/prometheus.sh install)"
    );
    eprintln!("skipping: Prometheus not installed (tests/servers/prometheus.sh install)");
    None
}

struct Prometheus(Child);

impl Drop for Prometheus {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

/// GET `path` on `addr`: the body of a 200 answer.
fn http_get(addr: SocketAddr, path: &str) -> Option<String> {
    let mut s = TcpStream::connect(addr).ok()?;
    s.set_read_timeout(Some(Duration::from_secs(10))).ok()?;
    write!(
        s,
        "GET {path} HTTP/1.1\r\nHost: prometheus\r\nConnection: close\r\n\r\n"
    )
    .ok()?;
    let mut text = String::new();
    s.read_to_string(&mut text).ok()?;
    let (head, body) = text.split_once("\r\n\r\n")?;
    if !head.starts_with("HTTP/1.1 200") {
        return None;
    }
    if head
        .to_ascii_lowercase()
        .contains("transfer-encoding: chunked")
    {
        return Some(dechunk(body));
    }
    Some(body.to_owned())
}

fn dechunk(mut body: &str) -> String {
    let mut out = String::new();
    while let Some((size, rest)) = body.split_once("\r\n") {
        let n = usize::from_str_radix(size.trim(), 16).unwrap_or(0);
        if n == 0 || rest.len() < n {
            break;
        }
        out.push_str(&rest[..n]);
        body = rest[n..].trim_start_matches("\r\n");
    }
    out
}

fn url_encode(s: &str) -> String {
    s.bytes()
        .map(|b| match b {
            b'A'..=b'Z' | b'a'..=b'z' | b'0'..=b'9' | b'-' | b'_' | b'.' | b'~' => {
                (b as char).to_string()
            }
            _ => format!("%{b:02X}"),
        })
        .collect()
}

/// The series a PromQL query returns now.
fn query(prom: SocketAddr, expr: &str) -> Vec<Value> {
    let Some(body) = http_get(prom, &format!("/api/v1/query?query={}", url_encode(expr))) else {
        return Vec::new();
    };
    let v: Value = serde_json::from_str(&body).unwrap_or(Value::Null);
    v["data"]["result"].as_array().cloned().unwrap_or_default()
}

#[test]
fn prometheus_scrapes_a_node_and_every_dashboard_query_has_series() {
    let Some(bin) = prometheus_bin() else {
        return;
    };
    let dir = tempfile::tempdir().unwrap();
    let node = Node::start(&dir.path().join("node")).unwrap();
    let rt = runtime();
    let _client = traffic(&rt, &node);
    // A pull that finds nothing and a read of older data, for the get and cache figures.
    let c2 = rt.block_on(RemotingClient::connect(node.broker)).unwrap();
    invoke(&rt, &c2, pull_queue0(GROUP, TOPIC, "broker-0", SENT, 0));

    let metrics = stratus_tests::scrape_metrics(node.metrics).unwrap();
    for family in [
        "rocketmq_messages_in_total{",
        "rocketmq_messages_out_total{",
        "rocketmq_throughput_in_total{",
        "rocketmq_consumer_lag_messages{",
        "rocketmq_send_to_dlq_messages_total{",
        "stratus_gateway_send_latency_seconds_bucket{",
    ] {
        assert!(
            metrics.contains(family),
            "/metrics lacks {family}:\n{metrics}"
        );
    }
    let lag_line = metrics
        .lines()
        .find(|l| {
            l.starts_with("rocketmq_consumer_lag_messages{")
                && l.contains(&format!("topic=\"{TOPIC}\""))
        })
        .unwrap_or_else(|| panic!("no lag series for {TOPIC}:\n{metrics}"));
    assert!(
        lag_line.ends_with(&format!(" {}", SENT - COMMITTED)),
        "{lag_line}"
    );
    assert!(
        lag_line.contains(&format!("consumer_group=\"{GROUP}\""))
            && lag_line.contains("node_id=\"node-1\""),
        "{lag_line}"
    );

    let port = free_port();
    let prom: SocketAddr = format!("127.0.0.1:{port}").parse().unwrap();
    let config = dir.path().join("prometheus.yml");
    std::fs::write(
        &config,
        format!(
            "global:\n  scrape_interval: 1s\n  evaluation_interval: 1s\nscrape_configs:\n  - job_name: stratus\n    static_configs:\n      - targets: ['{}']\n",
            node.metrics
        ),
    )
    .unwrap();
    let log = std::fs::File::create(dir.path().join("prometheus.log")).unwrap();
    let _server = Prometheus(
        Command::new(&bin)
            .arg(format!("--config.file={}", config.display()))
            .arg(format!(
                "--storage.tsdb.path={}",
                dir.path().join("tsdb").display()
            ))
            .arg(format!("--web.listen-address={prom}"))
            .stdin(Stdio::null())
            .stdout(log.try_clone().unwrap())
            .stderr(log)
            .spawn()
            .unwrap(),
    );

    let dashboard: Value = serde_json::from_str(
        &std::fs::read_to_string(workspace_root().join("deploy/grafana/stratus.json")).unwrap(),
    )
    .unwrap();
    let exprs: Vec<String> = dashboard["panels"]
        .as_array()
        .unwrap()
        .iter()
        .flat_map(|p| p["targets"].as_array().cloned().unwrap_or_default())
        .map(|t| t["expr"].as_str().unwrap().to_owned())
        .collect();
    assert!(exprs.len() >= 10, "{exprs:?}");

    // Keep some traffic flowing while Prometheus gathers samples for rate() windows.
    let deadline = Instant::now() + Duration::from_secs(60);
    let mut missing = exprs.clone();
    let mut i = 0;
    while !missing.is_empty() && Instant::now() < deadline {
        let resp = invoke(
            &rt,
            &c2,
            send_to_queue0(TOPIC, "broker-0", &format!("more{i}"), format!("more-{i}")),
        );
        assert_eq!(resp.response_code(), ResponseCode::Success);
        invoke(&rt, &c2, pull_queue0(GROUP, TOPIC, "broker-0", SENT + i, 0));
        i += 1;
        missing.retain(|e| query(prom, e).is_empty());
        std::thread::sleep(Duration::from_millis(500));
    }
    let plog = std::fs::read_to_string(dir.path().join("prometheus.log")).unwrap_or_default();
    assert!(
        missing.is_empty(),
        "dashboard queries without series after 60 s: {missing:#?}\nprometheus log tail:\n{}",
        plog.lines().rev().take(20).collect::<Vec<_>>().join("\n")
    );
    // A figure checked through Prometheus: the stored messages of the topic.
    let r = query(
        prom,
        &format!("sum(rocketmq_messages_in_total{{topic=\"{TOPIC}\"}})"),
    );
    let v: f64 = r[0]["value"][1].as_str().unwrap().parse().unwrap();
    #[allow(clippy::cast_precision_loss)]
    let least = SENT as f64;
    assert!(v >= least, "{r:?}");
}

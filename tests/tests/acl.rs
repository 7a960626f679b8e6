//! ACL 2.0 against real `stratus` processes: authentication with the real Java client's
//! signing hook, a normal user bound by its ACL, users and ACLs managed with the real
//! `mqadmin` 5.3.3 against a node of several shards (so each write arrives once per
//! shard), and two nodes on one meta: a change through one is enforced by the other within
//! the refresh interval (measured and printed), and the rules in force stay in force while
//! meta is down.
#![allow(clippy::unwrap_used, clippy::disallowed_methods)] // test code: failures should panic; real timers

use std::net::SocketAddr;
use std::path::Path;
use std::time::{Duration, Instant};

use base64::Engine as _;
use hmac::{Hmac, KeyInit, Mac};
use sha1::Sha1;
use stratus_compat::client::RemotingClient;
use stratus_compat::command::RemotingCommand;
use stratus_compat::request::auth::{UserInfo, UserRequestHeader};
use stratus_compat::{RequestCode, ResponseCode};
use stratus_tests::{
    Node, Postgres, args, client_installed, clients_required, cluster_routes, free_port,
    free_shard_base, mqadmin_as, run_client,
};

const ROOT: (&str, &str) = ("root", "root-secret-key");
const KEY: &str = "an-acl-test-encryption-key";
const LONG: Duration = Duration::from_secs(120);

fn auth_env() -> Vec<(&'static str, &'static str)> {
    vec![
        ("STRATUS_AUTH__AUTHENTICATION_ENABLED", "true"),
        ("STRATUS_AUTH__AUTHORIZATION_ENABLED", "true"),
        ("STRATUS_AUTH__INIT_USER", ROOT.0),
        ("STRATUS_AUTH__INIT_PASSWORD", ROOT.1),
        ("STRATUS_AUTH__ENCRYPTION_KEY", KEY),
        ("STRATUS_AUTH__REFRESH_INTERVAL", "1s"),
    ]
}

/// Signs `cmd` as `AclClientRPCHook` does.
fn sign(mut cmd: RemotingCommand, (ak, sk): (&str, &str)) -> RemotingCommand {
    cmd.put_ext("AccessKey", ak);
    let mut mac = <Hmac<Sha1> as KeyInit>::new_from_slice(sk.as_bytes()).unwrap();
    mac.update(&stratus_compat::acl::signing_content(&cmd, &[]));
    let sig = base64::engine::general_purpose::STANDARD.encode(mac.finalize().into_bytes());
    cmd.put_ext("Signature", sig);
    cmd
}

fn call(addr: SocketAddr, cmd: RemotingCommand) -> RemotingCommand {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let client = RemotingClient::connect(addr).await.unwrap();
        client.invoke(cmd, Duration::from_secs(10)).await.unwrap()
    })
}

fn create_topic(addr: SocketAddr, topic: &str) {
    let mut cmd = RemotingCommand::request(RequestCode::UpdateAndCreateTopic.to_i32(), 0);
    for (k, v) in [
        ("topic", topic),
        ("defaultTopic", "TBW102"),
        ("readQueueNums", "2"),
        ("writeQueueNums", "2"),
        ("perm", "6"),
        ("topicFilterType", "SINGLE_TAG"),
        ("order", "false"),
    ] {
        cmd.put_ext(k, v);
    }
    let unsigned = call(addr, cmd.clone());
    assert_eq!(unsigned.response_code(), ResponseCode::NoPermission);
    assert_eq!(unsigned.remark.as_deref(), Some("username cannot be null."));
    let r = call(addr, sign(cmd, ROOT));
    assert_eq!(r.response_code(), ResponseCode::Success, "{:?}", r.remark);
}

fn user_request(code: RequestCode, name: &str, info: &UserInfo) -> RemotingCommand {
    let mut cmd =
        RemotingCommand::request(code.to_i32(), 0).with_body(serde_json::to_vec(info).unwrap());
    UserRequestHeader {
        username: Some(name.into()),
    }
    .write_to(&mut cmd);
    cmd
}

fn normal(password: &str) -> UserInfo {
    UserInfo {
        username: None,
        password: Some(password.into()),
        user_type: Some("Normal".into()),
        user_status: None,
    }
}

/// An authenticated-only request (GET_BROKER_RUNTIME_INFO) signed as `who`: its answer.
fn probe(addr: SocketAddr, who: (&str, &str)) -> (ResponseCode, String) {
    let r = call(
        addr,
        sign(
            // Authenticated only (no resource to authorize) and answered from memory, so
            // it answers while meta is away.
            RemotingCommand::request(RequestCode::GetAllTopicConfig.to_i32(), 0),
            who,
        ),
    );
    (r.response_code(), r.remark.unwrap_or_default())
}

fn require(what: &str, installed: bool) -> bool {
    if !installed {
        assert!(!clients_required(), "{what} is required but not installed");
        eprintln!("skipping: {what} not installed");
    }
    installed
}

fn wait_until(what: &str, timeout: Duration, mut ok: impl FnMut() -> bool) -> Duration {
    let start = Instant::now();
    while !ok() {
        assert!(start.elapsed() < timeout, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
    start.elapsed()
}

/// A Java 5.3.3 producer run: (acknowledged, error texts).
fn produce(
    ns: &str,
    scratch: &Path,
    topic: &str,
    who: (&str, &str),
    count: u32,
    prefix: &str,
) -> (usize, Vec<String>) {
    produce_with("java5", ns, scratch, topic, who, count, prefix)
}

/// A producer run of `client` (java5, java49 or go): (acknowledged, error texts).
fn produce_with(
    client: &str,
    ns: &str,
    scratch: &Path,
    topic: &str,
    who: (&str, &str),
    count: u32,
    prefix: &str,
) -> (usize, Vec<String>) {
    let a = args(&[
        "produce",
        "--namesrv",
        ns,
        "--topic",
        topic,
        "--group",
        "PG_acl",
        "--count",
        &count.to_string(),
        "--mode",
        "sync",
        "--tag",
        "t",
        "--keys-prefix",
        prefix,
        "--body-size",
        "64",
        "--id-prefix",
        prefix,
        "--access-key",
        who.0,
        "--secret-key",
        who.1,
    ]);
    let (_, events) = run_client(client, &a, scratch, LONG).unwrap();
    let sent = events.iter().filter(|e| e["event"] == "sent").count();
    let errors = events
        .iter()
        .filter(|e| e["event"] == "error")
        .map(|e| e["error"].as_str().unwrap_or_default().to_owned())
        .collect();
    (sent, errors)
}

/// A Java 5.3.3 push consumer run: the keys it received.
fn consume(
    ns: &str,
    scratch: &Path,
    topic: &str,
    group: &str,
    who: (&str, &str),
    expect: usize,
    secs: u64,
) -> Vec<String> {
    let a = args(&[
        "consume",
        "--namesrv",
        ns,
        "--topic",
        topic,
        "--group",
        group,
        "--expect",
        &expect.to_string(),
        "--timeout-secs",
        &secs.to_string(),
        "--from",
        "first",
        "--access-key",
        who.0,
        "--secret-key",
        who.1,
    ]);
    let (_, events) = run_client("java5", &a, scratch, LONG).unwrap();
    events
        .iter()
        .filter(|e| e["event"] == "recv")
        .map(|e| e["keys"].as_str().unwrap_or_default().to_owned())
        .collect()
}

fn start_node(dir: &Path, shards: u16, meta_url: Option<&str>, id: &str) -> Node {
    let ns: SocketAddr = format!("127.0.0.1:{}", free_port()).parse().unwrap();
    let base = free_shard_base(shards);
    let shards = shards.to_string();
    let mut env = auth_env();
    env.push(("STRATUS_NODE__SHARDS", shards.as_str()));
    env.push(("STRATUS_NODE__ID", id));
    let objects = stratus_tests::cluster_object_store_url(dir.parent().unwrap());
    env.push(("STRATUS_STORAGE__OBJECT_STORE_URL", objects.as_str()));
    if let Some(url) = meta_url {
        env.push(("STRATUS_META__URL", url));
    }
    Node::start_member(dir, ns, format!("127.0.0.1:{base}").parse().unwrap(), &env).unwrap()
}

#[test]
fn java_clients_sign_users_are_bound_by_acls_and_mqadmin_manages_them() {
    if !require("java5 client", client_installed("java5"))
        || !require("mqadmin 5.3.3", stratus_tests::mqadmin_installed("5.3.3"))
    {
        return;
    }
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    let node = start_node(&dir.join("node"), 3, None, "node-a");
    let ns = node.namesrv_arg();
    let scratch = dir.join("clients");
    wait_until("three brokers in routes", Duration::from_secs(30), || {
        cluster_routes(node.namesrv).len() == 3
    });
    create_topic(node.namesrv, "AclT");
    create_topic(node.namesrv, "AclU");
    // No way around the rules: the Kafka listener (no SASL yet) is not opened.
    assert!(
        std::net::TcpStream::connect(node.kafka).is_err(),
        "the Kafka port is closed while access control is on"
    );
    assert!(node.log_text().contains("the Kafka listener is off"));

    // The super user's producer and the failures of wrong credentials.
    let (sent, errors) = produce(&ns, &scratch, "AclT", ROOT, 10, "root");
    assert_eq!(sent, 10, "{errors:?}\n{}", node.log_text());
    if require("java49 client", client_installed("java49")) {
        // 4.9 signs with rocketmq-acl's AclClientRPCHook.
        let (sent, errors) = produce_with("java49", &ns, &scratch, "AclT", ROOT, 3, "root49");
        assert_eq!(sent, 3, "{errors:?}");
        let (sent, errors) =
            produce_with("java49", &ns, &scratch, "AclT", (ROOT.0, "bad"), 1, "bad49");
        assert_eq!(sent, 0);
        assert!(
            errors.iter().all(|e| e.contains("check signature failed.")),
            "{errors:?}"
        );
    }
    let mut root_sent = if client_installed("java49") { 13 } else { 10 };
    if require("go client", client_installed("go")) {
        // Go signs with producer.WithCredentials (its SecurityToken, when set, unsigned).
        let (sent, errors) = produce_with("go", &ns, &scratch, "AclT", ROOT, 3, "rootgo");
        assert_eq!(sent, 3, "{errors:?}");
        let (sent, errors) = produce_with("go", &ns, &scratch, "AclT", (ROOT.0, "bad"), 1, "badgo");
        assert_eq!(sent, 0, "{errors:?}");
        eprintln!("a wrong secret surfaces in the Go client as: {errors:?}");
        root_sent += 3;
    }
    let (sent, errors) = produce(&ns, &scratch, "AclT", (ROOT.0, "wrong"), 2, "wrong");
    assert_eq!(sent, 0);
    eprintln!(
        "a wrong secret surfaces in the Java client as: {}",
        errors[0]
    );
    assert!(
        errors
            .iter()
            .all(|e| e.contains("CODE: 16") && e.contains("check signature failed.")),
        "{errors:?}"
    );
    let (sent, errors) = produce(&ns, &scratch, "AclT", ("ghost", "x"), 2, "ghost");
    assert_eq!(sent, 0);
    assert!(
        errors
            .iter()
            .all(|e| e.contains("User:ghost is not found.")),
        "{errors:?}"
    );

    // mqadmin as the super user, against every shard.
    let admin = |cmd: &[&str]| mqadmin_as("5.3.3", &ns, cmd, Some(ROOT)).unwrap().unwrap();
    for _ in 0..2 {
        // The second time changes nothing and still succeeds (one write per shard either way).
        let out = admin(&[
            "createUser",
            "-c",
            "DefaultCluster",
            "-u",
            "alice",
            "-p",
            "alice-sk",
            "-t",
            "Normal",
        ]);
        assert_eq!(out.matches("create user to").count(), 3, "{out}");
        assert!(!out.contains("Exception"), "{out}");
    }
    let out = admin(&[
        "createUser",
        "-c",
        "DefaultCluster",
        "-u",
        "dave",
        "-p",
        "dave-sk",
    ]);
    assert!(!out.contains("Exception"), "{out}");
    let out = admin(&["listUser", "-c", "DefaultCluster"]);
    assert!(
        out.contains("alice") && out.contains("dave") && out.contains("root"),
        "{out}"
    );
    let out = admin(&[
        "createAcl",
        "-c",
        "DefaultCluster",
        "-s",
        "User:alice",
        "-r",
        "Topic:AclT",
        "-a",
        "Pub",
        "-d",
        "Allow",
    ]);
    assert_eq!(out.matches("success").count(), 3, "{out}");
    let out = admin(&["listAcl", "-c", "DefaultCluster", "-s", "alice"]);
    assert!(
        out.contains("User:alice") && out.contains("Topic:AclT") && out.contains("Pub"),
        "{out}"
    );

    // alice may send to AclT only, and may not consume it.
    let (sent, errors) = produce(&ns, &scratch, "AclT", ("alice", "alice-sk"), 5, "alice");
    assert_eq!(sent, 5, "{errors:?}");
    let (sent, errors) = produce(&ns, &scratch, "AclU", ("alice", "alice-sk"), 2, "aliceU");
    assert_eq!(sent, 0);
    assert!(
        errors
            .iter()
            .all(|e| e.contains("User:alice has no permission to access Topic:AclU")),
        "{errors:?}"
    );
    let got = consume(&ns, &scratch, "AclT", "GA", ("alice", "alice-sk"), 1, 8);
    assert!(got.is_empty(), "alice has no Group SUB: {got:?}");

    // A disabled user.
    let disable = UserInfo {
        user_status: Some("disable".into()),
        ..UserInfo::default()
    };
    let r = call(
        node.namesrv,
        sign(
            user_request(RequestCode::AuthUpdateUser, "dave", &disable),
            ROOT,
        ),
    );
    assert_eq!(r.response_code(), ResponseCode::Success, "{:?}", r.remark);
    let (sent, errors) = produce(&ns, &scratch, "AclT", ("dave", "dave-sk"), 1, "dave");
    assert_eq!(sent, 0);
    assert!(
        errors.iter().all(|e| e.contains("User:dave is disabled.")),
        "{errors:?}"
    );

    // What was acknowledged is all there, and nothing refused got in.
    let expected = root_sent + 5;
    let check = |got: Vec<String>| {
        let mut keys = got;
        keys.sort();
        keys.dedup();
        assert_eq!(keys.len(), expected, "{keys:?}");
        assert!(
            keys.iter()
                .all(|k| k.starts_with("root") || k.starts_with("alice-")),
            "{keys:?}"
        );
    };
    check(consume(&ns, &scratch, "AclT", "GR", ROOT, expected, 60));
    // With Group:GA and Topic:AclT Sub (merged into her ACL), alice consumes too.
    let out = admin(&[
        "createAcl",
        "-c",
        "DefaultCluster",
        "-s",
        "User:alice",
        "-r",
        "Topic:AclT,Group:GA",
        "-a",
        "Pub,Sub",
        "-d",
        "Allow",
    ]);
    assert_eq!(out.matches("success").count(), 3, "{out}");
    check(consume(
        &ns,
        &scratch,
        "AclT",
        "GA",
        ("alice", "alice-sk"),
        expected,
        60,
    ));

    // Deleting the entry, then the user (twice: already gone is fine).
    let out = admin(&[
        "deleteAcl",
        "-c",
        "DefaultCluster",
        "-s",
        "User:alice",
        "-r",
        "Topic:AclT",
    ]);
    assert_eq!(out.matches("success").count(), 3, "{out}");
    let (sent, _) = produce(&ns, &scratch, "AclT", ("alice", "alice-sk"), 1, "alice2");
    assert_eq!(sent, 0, "the entry is gone");
    for _ in 0..2 {
        let out = admin(&["deleteUser", "-c", "DefaultCluster", "-u", "alice"]);
        assert!(!out.contains("Exception"), "{out}");
    }
    let out = admin(&["listUser", "-c", "DefaultCluster"]);
    assert!(!out.contains("alice") && out.contains("dave"), "{out}");
    assert_eq!(
        probe(node.namesrv, ("alice", "alice-sk")).1,
        "User:alice is not found."
    );
}

#[test]
fn a_change_through_one_node_is_enforced_by_the_other_and_survives_meta_going_away() {
    let tmp = tempfile::tempdir().unwrap();
    let dir = tmp.path();
    // Its own PostgreSQL when installed (it is stopped below), else the harness's cluster meta.
    let pg = Postgres::installed().then(|| {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o755)).unwrap();
        Postgres::new(dir.join("pg"), free_port())
    });
    let url = match &pg {
        Some(pg) => pg.start(),
        None => stratus_tests::cluster_meta_url(dir),
    };
    let a = start_node(&dir.join("a"), 2, Some(&url), "node-a");
    let b = start_node(&dir.join("b"), 2, Some(&url), "node-b");
    wait_until(
        "both nodes up with the bootstrap user",
        Duration::from_secs(30),
        || {
            probe(a.namesrv, ROOT).0 == ResponseCode::Success
                && probe(b.namesrv, ROOT).0 == ResponseCode::Success
        },
    );

    let mut figures = Vec::new();
    for round in 0..3 {
        let name = format!("carol{round}");
        let who = (name.as_str(), "carol-sk");
        assert_eq!(
            probe(b.namesrv, who).1,
            format!("User:{name} is not found.")
        );
        let r = call(
            a.namesrv,
            sign(
                user_request(RequestCode::AuthCreateUser, &name, &normal("carol-sk")),
                ROOT,
            ),
        );
        assert_eq!(r.response_code(), ResponseCode::Success, "{:?}", r.remark);
        assert_eq!(
            probe(a.namesrv, who).0,
            ResponseCode::Success,
            "at once where written"
        );
        let took = wait_until("the user at node B", Duration::from_secs(10), || {
            probe(b.namesrv, who).0 == ResponseCode::Success
        });
        // And back: disabled through B, refused by A.
        let disable = UserInfo {
            user_status: Some("disable".into()),
            ..UserInfo::default()
        };
        let r = call(
            b.namesrv,
            sign(
                user_request(RequestCode::AuthUpdateUser, &name, &disable),
                ROOT,
            ),
        );
        assert_eq!(r.response_code(), ResponseCode::Success, "{:?}", r.remark);
        let back = wait_until("the disable at node A", Duration::from_secs(10), || {
            probe(a.namesrv, who).1 == format!("User:{name} is disabled.")
        });
        figures.push((took, back));
    }
    eprintln!(
        "propagation between nodes (refresh interval 1 s), create A→B / disable B→A: {figures:?}"
    );
    for (took, back) in &figures {
        assert!(
            *took < Duration::from_millis(2500) && *back < Duration::from_millis(2500),
            "{figures:?}"
        );
    }

    let Some(pg) = pg else {
        eprintln!("skipping the meta outage part: PostgreSQL is not installed");
        return;
    };
    let r = call(
        a.namesrv,
        sign(
            user_request(RequestCode::AuthCreateUser, "erin", &normal("erin-sk")),
            ROOT,
        ),
    );
    assert_eq!(r.response_code(), ResponseCode::Success, "{:?}", r.remark);
    wait_until("erin at node B", Duration::from_secs(10), || {
        probe(b.namesrv, ("erin", "erin-sk")).0 == ResponseCode::Success
    });
    pg.stop();
    let down = Instant::now();
    while down.elapsed() < Duration::from_secs(4) {
        for n in [&a, &b] {
            assert_eq!(
                probe(n.namesrv, ("erin", "erin-sk")).0,
                ResponseCode::Success,
                "the rules in force stay"
            );
            assert_eq!(
                probe(n.namesrv, ("erin", "wrong")).1,
                "check signature failed."
            );
            assert_eq!(
                probe(n.namesrv, ("carol0", "carol-sk")).1,
                "User:carol0 is disabled."
            );
            assert_eq!(
                probe(n.namesrv, ("mallory", "x")).1,
                "User:mallory is not found."
            );
        }
        std::thread::sleep(Duration::from_millis(200));
    }
    pg.start();
    wait_until(
        "a write through B after meta is back",
        Duration::from_secs(30),
        || {
            let r = call(
                b.namesrv,
                sign(
                    user_request(RequestCode::AuthDeleteUser, "erin", &UserInfo::default()),
                    ROOT,
                ),
            );
            r.response_code() == ResponseCode::Success
        },
    );
    wait_until("the delete at node A", Duration::from_secs(10), || {
        probe(a.namesrv, ("erin", "erin-sk")).1 == "User:erin is not found."
    });
}

//! Finding messages by key with the real `mqadmin` (rocketmq-tools 5.3.3 and 4.9.8) against a
//! running two-shard node: `queryMsgByKey`, `queryMsgByUniqueKey` and `queryMsgById` (client
//! id form) over messages sent by the real Java producer, answered from the key index of
//! QUERY_MESSAGE; an absent key finds nothing; and the index is still there after a restart
//! (the caches are empty then: footers and records come from the object store).

#![allow(clippy::unwrap_used, clippy::disallowed_methods)] // test code: failures should panic

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::time::Duration;

use serde_json::Value;
use stratus_tests::{Node, args, client_installed, clients_required, mqadmin, run_client};

const TOPIC: &str = "QueryTopic";
const COUNT: u64 = 6;

/// What the producers acknowledged: key → the msgIds (UNIQ_KEY) sent with it, and msgId →
/// (offsetMsgId, body prefix).
#[derive(Default)]
struct Sent {
    by_key: BTreeMap<String, BTreeSet<String>>,
    by_id: BTreeMap<String, (String, String)>,
}

fn require_java() -> bool {
    if client_installed("java5") {
        return true;
    }
    assert!(
        !clients_required(),
        "client java5 is not installed (tests/clients/install.sh java5)"
    );
    eprintln!("skipping: client java5 is not installed (tests/clients/install.sh java5)");
    false
}

/// `COUNT` sync sends of keys `K-0..K-5` with bodies `<prefix><i>:…`.
fn produce(node: &Node, scratch: &Path, prefix: &str, sent: &mut Sent) {
    let a = args(&[
        "produce",
        "--namesrv",
        &node.namesrv_arg(),
        "--topic",
        TOPIC,
        "--group",
        "PG_query",
        "--count",
        &COUNT.to_string(),
        "--mode",
        "sync",
        "--tag",
        "TagQ",
        "--keys-prefix",
        "K",
        "--body-size",
        "24",
        "--id-prefix",
        prefix,
    ]);
    let (code, events) = run_client("java5", &a, scratch, Duration::from_secs(120)).unwrap();
    assert_eq!(
        code,
        0,
        "produce: {events:?}\nnode log:\n{}",
        node.log_text()
    );
    let acked: Vec<&Value> = events.iter().filter(|e| e["event"] == "sent").collect();
    assert_eq!(acked.len() as u64, COUNT, "{events:?}");
    for e in acked {
        let id = e["msgId"].as_str().unwrap().to_owned();
        let seq = e["seq"].as_u64().unwrap();
        let offset_id = e["offsetMsgId"].as_str().unwrap_or_default().to_owned();
        sent.by_key
            .entry(format!("K-{seq}"))
            .or_default()
            .insert(id.clone());
        sent.by_id
            .insert(id, (offset_id, format!("{prefix}{seq}:")));
    }
}

/// The message ids `queryMsgByKey` printed (rows under `#Message ID`).
fn listed_ids(out: &str) -> BTreeSet<String> {
    out.lines()
        .filter_map(|l| l.split_whitespace().next())
        // Client ids are 32 hex digits (IPv4) or 56 (IPv6).
        .filter(|t| t.len() >= 32 && t.bytes().all(|b| b.is_ascii_hexdigit()))
        .map(str::to_owned)
        .collect()
}

/// The value printed after `label` (`Topic:`, `Keys:`, `Message Body Path:`…).
fn field<'a>(out: &'a str, label: &str) -> Option<&'a str> {
    out.lines()
        .find_map(|l| l.strip_prefix(label))
        .map(str::trim)
}

fn query_by_key(version: &str, node: &Node, key: &str) -> Option<String> {
    mqadmin(
        version,
        &node.namesrv_arg(),
        &["queryMsgByKey", "-t", TOPIC, "-k", key],
    )
    .unwrap()
}

/// Every key finds exactly its messages in both tool versions; an absent key finds none.
fn check_keys(node: &Node, sent: &Sent) {
    for version in ["5.3.3", "4.9.8"] {
        for (key, want) in &sent.by_key {
            let Some(out) = query_by_key(version, node, key) else {
                return;
            };
            assert_eq!(
                &listed_ids(&out),
                want,
                "mqadmin {version} queryMsgByKey {key}:\n{out}\nnode log:\n{}",
                node.log_text()
            );
        }
        let Some(out) = query_by_key(version, node, "K-absent") else {
            return;
        };
        assert!(listed_ids(&out).is_empty(), "{out}");
        assert!(
            out.contains("no message"),
            "mqadmin {version}: an absent key says it found no message:\n{out}"
        );
    }
}

/// `queryMsgByUniqueKey` and `queryMsgById` (the client id, and the offset id) print the
/// message: topic, keys, tags, and its body in the file they name.
fn check_ids(node: &Node, sent: &Sent) {
    let (id, (offset_id, body_prefix)) = sent.by_id.iter().next().unwrap();
    let key = sent
        .by_key
        .iter()
        .find(|(_, ids)| ids.contains(id))
        .map(|(k, _)| k.clone())
        .unwrap();
    for (version, command, id) in [
        ("5.3.3", "queryMsgByUniqueKey", id),
        ("5.3.3", "queryMsgById", id),
        ("5.3.3", "queryMsgById", offset_id),
        ("4.9.8", "queryMsgByUniqueKey", id),
    ] {
        let Some(out) = mqadmin(
            version,
            &node.namesrv_arg(),
            &[command, "-t", TOPIC, "-i", id],
        )
        .unwrap() else {
            return;
        };
        let what = format!("mqadmin {version} {command} {id}:\n{out}");
        assert_eq!(field(&out, "Topic:"), Some(TOPIC), "{what}");
        assert_eq!(
            field(&out, "Keys:"),
            Some(format!("[{key}]").as_str()),
            "{what}"
        );
        assert_eq!(field(&out, "Tags:"), Some("[TagQ]"), "{what}");
        let path = field(&out, "Message Body Path:").unwrap_or_else(|| panic!("{what}"));
        let body = std::fs::read(path).unwrap_or_else(|e| panic!("{path}: {e}\n{what}"));
        assert!(
            body.starts_with(body_prefix.as_bytes()),
            "{what}\nbody {:?}",
            String::from_utf8_lossy(&body)
        );
        assert_eq!(body.len(), 24, "{what}");
    }
    // An id nothing was stored under prints no message.
    if let Some(out) = mqadmin(
        "5.3.3",
        &node.namesrv_arg(),
        &[
            "queryMsgByUniqueKey",
            "-t",
            TOPIC,
            "-i",
            "7F000001000000000000000000000000",
        ],
    )
    .unwrap()
    {
        assert_eq!(field(&out, "Topic:"), None, "{out}");
    }
}

#[test]
fn mqadmin_finds_messages_by_key_and_id_before_and_after_a_restart() {
    if !require_java() {
        return;
    }
    let dir = tempfile::tempdir().unwrap();
    let scratch = dir.path().join("clients");
    let mut node = Node::start_with_env(
        &dir.path().join("node"),
        &[],
        &[("STRATUS_NODE__SHARDS", "2")],
    )
    .unwrap();
    let mut sent = Sent::default();
    // Two runs with the same keys: each key has two messages (on either shard).
    produce(&node, &scratch, "a", &mut sent);
    produce(&node, &scratch, "b", &mut sent);
    assert_eq!(sent.by_key.len() as u64, COUNT);
    assert!(sent.by_key.values().all(|ids| ids.len() == 2));
    check_keys(&node, &sent);
    check_ids(&node, &sent);

    // The index is in meta and the records in the object store: both survive a restart.
    assert!(node.terminate().unwrap(), "graceful stop");
    node.restart().unwrap();
    check_keys(&node, &sent);
    check_ids(&node, &sent);
}

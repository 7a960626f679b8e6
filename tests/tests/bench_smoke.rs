//! `stratus bench` against a started node: `produce` (sync for a count, async pipelined for
//! a duration, batches) then `consume` of the same topic, and a short `e2e`. Every message
//! sent is acknowledged and consumed; no timing is asserted.
#![allow(clippy::unwrap_used)] // test code

use std::process::Command;

use serde_json::Value;
use stratus_tests::{Node, stratus_bin};

fn bench(node: &Node, args: &[&str]) -> Value {
    let out = Command::new(stratus_bin())
        .arg("bench")
        .args(args)
        .args(["--namesrv", &node.namesrv_arg(), "--json", "--quiet"])
        .output()
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert!(
        out.status.success(),
        "bench {args:?} failed ({}):\n{stdout}\n{stderr}\nnode log:\n{}",
        out.status,
        node.log_text()
    );
    serde_json::from_str(stdout.trim()).unwrap_or_else(|e| panic!("{e}: {stdout}"))
}

fn u(v: &Value, path: &[&str]) -> u64 {
    let mut cur = v;
    for p in path {
        cur = &cur[*p];
    }
    cur.as_u64()
        .unwrap_or_else(|| panic!("{path:?} not a count in {v}"))
}

/// Produces with `args` into `topic`, consumes the topic, and checks that the counts agree.
fn produce_then_consume(node: &Node, topic: &str, args: &[&str]) -> u64 {
    let mut all = vec!["produce", "--topic", topic];
    all.extend_from_slice(args);
    let p = bench(node, &all);
    let sent = u(&p, &["produce", "sent"]);
    let acked = u(&p, &["produce", "acked"]);
    assert!(sent > 0, "{p}");
    assert_eq!(sent, acked, "{p}");
    assert_eq!(u(&p, &["produce", "error_total"]), 0, "{p}");
    assert!(p["produce"]["send_latency_ms"]["p99"].is_number(), "{p}");

    let c = bench(node, &["consume", "--topic", topic]);
    assert_eq!(u(&c, &["consume", "expected"]), acked, "{c}");
    assert_eq!(u(&c, &["consume", "consumed"]), acked, "{c}");
    assert_eq!(u(&c, &["consume", "error_total"]), 0, "{c}");
    acked
}

#[test]
fn bench_produce_consume_and_e2e_count_every_message() {
    let dir = tempfile::tempdir().unwrap();
    let node = Node::start(&dir.path().join("data")).unwrap();

    let n = produce_then_consume(
        &node,
        "BenchSmokeSync",
        &["--count", "3000", "--connections", "4", "--size", "512"],
    );
    assert_eq!(n, 3000);

    produce_then_consume(
        &node,
        "BenchSmokeAsync",
        &[
            "--duration",
            "2s",
            "--mode",
            "async",
            "--inflight",
            "8",
            "--connections",
            "2",
            "--tags",
            "a,b",
        ],
    );

    let n = produce_then_consume(
        &node,
        "BenchSmokeBatch",
        &[
            "--count", "1000", "--batch", "10", "--size", "256", "--queues", "4",
        ],
    );
    assert_eq!(n, 1000);

    let e = bench(
        &node,
        &[
            "e2e",
            "--topic",
            "BenchSmokeE2e",
            "--count",
            "600",
            "--rate",
            "400",
        ],
    );
    assert_eq!(u(&e, &["produce", "acked"]), 600, "{e}");
    assert_eq!(u(&e, &["consume", "consumed"]), 600, "{e}");
    assert_eq!(u(&e, &["e2e_latency_ms", "count"]), 600, "{e}");
}

//! The real `mqadmin` (rocketmq-tools 5.3.3 and 4.9.8) run as a process against a running
//! node: the commands operators use first, their output parsed and checked against what the
//! test did.

#![allow(clippy::unwrap_used, clippy::disallowed_methods)] // test code: failures should panic

use stratus_tests::{Node, mqadmin};

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

//! Checks for node membership: heartbeat upserts, listing order, removal.

use super::node;
use crate::MetaStore;
use crate::model::NodeInfo;

fn info(name: &str, addr: &str, heartbeat_ms: i64) -> NodeInfo {
    NodeInfo {
        node: node(name),
        addr: addr.to_owned(),
        heartbeat_ms,
    }
}

async fn nodes(store: &dyn MetaStore) -> Vec<NodeInfo> {
    store.list_nodes().await.expect("list nodes")
}

pub(super) async fn node_heartbeat_list_remove(store: &dyn MetaStore) {
    assert_eq!(nodes(store).await, vec![], "no node registered yet");

    let b = info("node-b", "10.0.0.2:10911", 100);
    let a = info("node-a", "10.0.0.1:10911", 200);
    let c = info("node-c", "10.0.0.3:20911", 300);
    for n in [&b, &a, &c] {
        store.heartbeat_node(n).await.expect("heartbeat");
    }
    assert_eq!(
        nodes(store).await,
        vec![a.clone(), b.clone(), c.clone()],
        "ordered by node id"
    );

    let a2 = info("node-a", "10.0.0.9:30911", 1_700_000_000_123);
    store.heartbeat_node(&a2).await.expect("refresh");
    assert_eq!(
        nodes(store).await,
        vec![a2.clone(), b.clone(), c.clone()],
        "a heartbeat replaces addr and time, adds no row"
    );

    store.remove_node(&b.node).await.expect("remove");
    assert_eq!(nodes(store).await, vec![a2.clone(), c.clone()], "b removed");
    store
        .remove_node(&b.node)
        .await
        .expect("removing a missing node is Ok");
    store
        .remove_node(&node("node-never"))
        .await
        .expect("removing an unknown node is Ok");
    assert_eq!(nodes(store).await, vec![a2, c.clone()]);

    store.heartbeat_node(&b).await.expect("re-register");
    store.remove_node(&node("node-a")).await.expect("remove a");
    assert_eq!(nodes(store).await, vec![b.clone(), c.clone()]);
    for n in [&b, &c] {
        store.remove_node(&n.node).await.expect("remove");
    }
    assert_eq!(nodes(store).await, vec![], "all removed");
}

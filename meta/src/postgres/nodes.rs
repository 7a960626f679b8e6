//! Node membership: one row per gateway node, upserted by its heartbeat.

use sqlx::postgres::PgPool;

use super::convert::db_err;
use crate::error::Result;
use crate::model::{NodeId, NodeInfo};

pub(super) async fn heartbeat_node(pool: &PgPool, node: &NodeInfo) -> Result<()> {
    sqlx::query(
        "INSERT INTO nodes (node_id, addr, heartbeat_ms) VALUES ($1, $2, $3) \
         ON CONFLICT (node_id) DO UPDATE SET addr = excluded.addr, \
                                             heartbeat_ms = excluded.heartbeat_ms",
    )
    .bind(node.node.0.as_str())
    .bind(node.addr.as_str())
    .bind(node.heartbeat_ms)
    .execute(pool)
    .await
    .map_err(db_err("heartbeat node"))?;
    Ok(())
}

pub(super) async fn list_nodes(pool: &PgPool) -> Result<Vec<NodeInfo>> {
    let rows: Vec<(String, String, i64)> =
        sqlx::query_as("SELECT node_id, addr, heartbeat_ms FROM nodes ORDER BY node_id")
            .fetch_all(pool)
            .await
            .map_err(db_err("list nodes"))?;
    Ok(rows
        .into_iter()
        .map(|(node, addr, heartbeat_ms)| NodeInfo {
            node: NodeId(node),
            addr,
            heartbeat_ms,
        })
        .collect())
}

pub(super) async fn remove_node(pool: &PgPool, node: &NodeId) -> Result<()> {
    sqlx::query("DELETE FROM nodes WHERE node_id = $1")
        .bind(node.0.as_str())
        .execute(pool)
        .await
        .map_err(db_err("remove node"))?;
    Ok(())
}

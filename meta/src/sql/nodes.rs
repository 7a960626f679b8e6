//! Node membership: one row per gateway node, upserted by its heartbeat.

use sqlx::Pool;

use super::dialect::Dialect;
use super::driver::Bind;
use super::rows;
use crate::error::Result;
use crate::model::{NodeId, NodeInfo};

pub(crate) async fn heartbeat_node<D: Dialect>(pool: &Pool<D>, node: &NodeInfo) -> Result<()> {
    sqlx::query(
        "INSERT INTO nodes (node_id, addr, heartbeat_ms) VALUES ($1, $2, $3) \
         ON CONFLICT (node_id) DO UPDATE SET addr = excluded.addr, \
                                             heartbeat_ms = excluded.heartbeat_ms",
    )
    .arg(node.node.0.as_str())
    .arg(node.addr.as_str())
    .arg(node.heartbeat_ms)
    .execute(D::on_pool(pool))
    .await
    .map_err(D::db_err("heartbeat node"))?;
    Ok(())
}

pub(crate) async fn list_nodes<D: Dialect>(pool: &Pool<D>) -> Result<Vec<NodeInfo>> {
    sqlx::query("SELECT node_id, addr, heartbeat_ms FROM nodes ORDER BY node_id")
        .try_map(rows::node)
        .fetch_all(D::on_pool(pool))
        .await
        .map_err(D::db_err("list nodes"))
}

pub(crate) async fn remove_node<D: Dialect>(pool: &Pool<D>, node: &NodeId) -> Result<()> {
    sqlx::query("DELETE FROM nodes WHERE node_id = $1")
        .arg(node.0.as_str())
        .execute(D::on_pool(pool))
        .await
        .map_err(D::db_err("remove node"))?;
    Ok(())
}

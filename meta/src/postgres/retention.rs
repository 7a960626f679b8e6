//! Retention passes and orphan-object lookups: the embedded backend's statements
//! (`crate::embedded::retention`, written in the SQL both databases share) inside one
//! transaction that first locks the shard row (`SELECT … FOR UPDATE`), so a pass never
//! interleaves with a commit or a takeover of the shard.

use std::collections::{BTreeSet, HashSet};

use sqlx::postgres::{PgConnection, PgPool};

use super::convert::db_err;
use crate::embedded::convert::shard_to_db;
use crate::embedded::retention::{
    ADVANCE_MIN_OFFSETS, DELETE_EMPTY_SECTIONS, DELETE_EXPIRED_ROWS, DELETE_OVERSIZE_ROWS,
    check_fence, default_cutoff, moved_queues, size_limit,
};
use crate::error::Result;
use crate::model::{Epoch, NodeId, RetentionOutcome, RetentionPolicy, ShardId};

pub(super) async fn apply_retention(
    pool: &PgPool,
    shard: ShardId,
    node: &NodeId,
    epoch: Epoch,
    now_ms: i64,
    policy: &RetentionPolicy,
) -> Result<RetentionOutcome> {
    let id = shard_to_db(shard);
    let mut tx = pool.begin().await.map_err(db_err("begin retention"))?;
    let row: Option<(i64, Option<String>)> =
        sqlx::query_as("SELECT epoch, owner FROM shards WHERE shard_id = $1 FOR UPDATE")
            .bind(id)
            .fetch_optional(&mut *tx)
            .await
            .map_err(db_err("lock shard"))?;
    check_fence(shard, node, epoch, row)?;

    sqlx::query(DELETE_EXPIRED_ROWS)
        .bind(id)
        .bind(default_cutoff(now_ms, policy))
        .bind(now_ms)
        .execute(&mut *tx)
        .await
        .map_err(db_err("delete expired queue ranges"))?;
    if let Some(limit) = size_limit(policy) {
        sqlx::query(DELETE_OVERSIZE_ROWS)
            .bind(id)
            .bind(limit)
            .execute(&mut *tx)
            .await
            .map_err(db_err("delete queue ranges over the size limit"))?;
    }
    let deleted: Vec<(String,)> = sqlx::query_as(DELETE_EMPTY_SECTIONS)
        .bind(id)
        .fetch_all(&mut *tx)
        .await
        .map_err(db_err("delete emptied sections"))?;
    let moved: Vec<(String, i32, i64)> = sqlx::query_as(ADVANCE_MIN_OFFSETS)
        .bind(id)
        .fetch_all(&mut *tx)
        .await
        .map_err(db_err("advance min offsets"))?;

    let sections_deleted = deleted.len() as u64;
    let keys: Vec<String> = deleted
        .into_iter()
        .map(|(k,)| k)
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    let referenced = if keys.is_empty() {
        HashSet::new()
    } else {
        referenced_keys(&mut tx, &keys).await?
    };
    tx.commit().await.map_err(db_err("commit retention"))?;
    Ok(RetentionOutcome {
        sections_deleted,
        queues: moved_queues(shard, moved),
        released_objects: keys
            .into_iter()
            .filter(|k| !referenced.contains(k))
            .collect(),
    })
}

/// Which of `keys` some segments row still references: one statement, keys as an array.
async fn referenced_keys(conn: &mut PgConnection, keys: &[String]) -> Result<HashSet<String>> {
    let rows: Vec<(String,)> =
        sqlx::query_as("SELECT DISTINCT object_key FROM segments WHERE object_key = ANY($1)")
            .bind(keys)
            .fetch_all(conn)
            .await
            .map_err(db_err("find referenced objects"))?;
    Ok(rows.into_iter().map(|(k,)| k).collect())
}

pub(super) async fn unreferenced_objects(pool: &PgPool, keys: &[String]) -> Result<Vec<String>> {
    if keys.is_empty() {
        return Ok(Vec::new());
    }
    let mut conn = pool
        .acquire()
        .await
        .map_err(db_err("find referenced objects"))?;
    let referenced = referenced_keys(&mut conn, keys).await?;
    Ok(keys
        .iter()
        .filter(|k| !referenced.contains(*k))
        .cloned()
        .collect())
}

//! Shards and their leases. Every lease change is one conditional `UPDATE … RETURNING`:
//! PostgreSQL locks the row and re-checks the condition on the newest row version after
//! waiting for a concurrent writer, so two nodes racing for a shard cannot both win. A
//! failed condition is then explained by reading the row (error path only).

use sqlx::postgres::PgPool;
use stratus_compat::types::{CommitLogOffset, QueueId, QueueOffset, Topic};

use super::convert::db_err;
use crate::embedded::convert::shard_to_db;
use crate::embedded::leases::{LeaseRow, lease_from_row, shard_not_found};
use crate::error::{MetaError, Result};
use crate::model::{Epoch, NodeId, QueueKey, QueueRange, ShardId, ShardLease, ShardState};

/// The stored epoch of `shard`, or `None` if the shard does not exist.
async fn stored_epoch(pool: &PgPool, shard: ShardId) -> Result<Option<Epoch>> {
    let row: Option<(i64,)> = sqlx::query_as("SELECT epoch FROM shards WHERE shard_id = $1")
        .bind(shard_to_db(shard))
        .fetch_optional(pool)
        .await
        .map_err(db_err("read shard epoch"))?;
    Ok(row.map(|(e,)| Epoch(e)))
}

/// Inserts the missing shards `0..count` (free, epoch 0) with one statement, then lists all.
pub(super) async fn ensure_shards(pool: &PgPool, count: u32) -> Result<Vec<ShardLease>> {
    sqlx::query(
        "INSERT INTO shards (shard_id, epoch, owner, expires_at_ms, commit_log_end) \
         SELECT n, 0, NULL, 0, 0 FROM generate_series(0::int8, $1::int8 - 1) AS g (n) \
         ON CONFLICT (shard_id) DO NOTHING",
    )
    .bind(i64::from(count))
    .execute(pool)
    .await
    .map_err(db_err("ensure shards"))?;
    list_shards(pool).await
}

pub(super) async fn list_shards(pool: &PgPool) -> Result<Vec<ShardLease>> {
    let rows: Vec<LeaseRow> = sqlx::query_as(
        "SELECT shard_id, epoch, owner, expires_at_ms FROM shards ORDER BY shard_id",
    )
    .fetch_all(pool)
    .await
    .map_err(db_err("list shards"))?;
    rows.into_iter().map(lease_from_row).collect()
}

/// One statement: takes the shard if it is free, expired at `now_ms`, or already ours; the
/// epoch always goes up by one.
pub(super) async fn acquire_shard(
    pool: &PgPool,
    shard: ShardId,
    node: &NodeId,
    now_ms: i64,
    ttl_ms: i64,
) -> Result<Option<ShardLease>> {
    let row: Option<LeaseRow> = sqlx::query_as(
        "UPDATE shards SET \
             epoch = epoch + 1, \
             owner = $2, \
             expires_at_ms = $3 \
         WHERE shard_id = $1 AND (owner IS NULL OR owner = $2 OR expires_at_ms <= $4) \
         RETURNING shard_id, epoch, owner, expires_at_ms",
    )
    .bind(shard_to_db(shard))
    .bind(node.0.as_str())
    .bind(now_ms.saturating_add(ttl_ms))
    .bind(now_ms)
    .fetch_optional(pool)
    .await
    .map_err(db_err("acquire shard"))?;
    match row {
        Some(row) => lease_from_row(row).map(Some),
        None if stored_epoch(pool, shard).await?.is_none() => Err(shard_not_found(shard)),
        None => Ok(None),
    }
}

pub(super) async fn renew_shard(
    pool: &PgPool,
    shard: ShardId,
    node: &NodeId,
    epoch: Epoch,
    now_ms: i64,
    ttl_ms: i64,
) -> Result<ShardLease> {
    let row: Option<LeaseRow> = sqlx::query_as(
        "UPDATE shards SET expires_at_ms = $4 \
         WHERE shard_id = $1 AND epoch = $2 AND owner = $3 \
         RETURNING shard_id, epoch, owner, expires_at_ms",
    )
    .bind(shard_to_db(shard))
    .bind(epoch.0)
    .bind(node.0.as_str())
    .bind(now_ms.saturating_add(ttl_ms))
    .fetch_optional(pool)
    .await
    .map_err(db_err("renew shard"))?;
    match row {
        Some(row) => lease_from_row(row),
        None => match stored_epoch(pool, shard).await? {
            None => Err(shard_not_found(shard)),
            Some(stored) => Err(MetaError::Fenced {
                shard,
                ours: epoch,
                stored,
            }),
        },
    }
}

/// Clears the owner if we hold `epoch`. Releasing a shard already released under the same
/// epoch is a no-op; a newer epoch means someone else took it: [`MetaError::Fenced`].
pub(super) async fn release_shard(
    pool: &PgPool,
    shard: ShardId,
    node: &NodeId,
    epoch: Epoch,
) -> Result<()> {
    let done = sqlx::query(
        "UPDATE shards SET owner = NULL, expires_at_ms = 0 \
         WHERE shard_id = $1 AND epoch = $2 AND owner = $3",
    )
    .bind(shard_to_db(shard))
    .bind(epoch.0)
    .bind(node.0.as_str())
    .execute(pool)
    .await
    .map_err(db_err("release shard"))?;
    if done.rows_affected() == 1 {
        return Ok(());
    }
    match stored_epoch(pool, shard).await? {
        None => Err(shard_not_found(shard)),
        Some(stored) if stored == epoch => Ok(()),
        Some(stored) => Err(MetaError::Fenced {
            shard,
            ours: epoch,
            stored,
        }),
    }
}

/// A shard's commit-log end with one of its queues (NULLs when it has none).
type StateRow = (i64, Option<String>, Option<i32>, Option<i64>, Option<i64>);

/// The commit-log end and the queues in one statement (one snapshot): the shard row
/// left-joined with its queues.
pub(super) async fn shard_state(pool: &PgPool, shard: ShardId) -> Result<ShardState> {
    let rows: Vec<StateRow> = sqlx::query_as(
        "SELECT s.commit_log_end, q.topic, q.queue_id, q.min_offset, q.max_offset \
         FROM shards s LEFT JOIN queues q ON q.shard_id = s.shard_id \
         WHERE s.shard_id = $1 ORDER BY q.topic, q.queue_id",
    )
    .bind(shard_to_db(shard))
    .fetch_all(pool)
    .await
    .map_err(db_err("load shard state"))?;
    let Some(&(end, ..)) = rows.first() else {
        return Err(shard_not_found(shard));
    };
    let mut queues = Vec::with_capacity(rows.len());
    for row in rows {
        match row {
            (_, Some(topic), Some(queue_id), Some(min), Some(max)) => queues.push(QueueRange {
                queue: QueueKey {
                    shard,
                    topic: Topic::new(topic),
                    queue_id: QueueId(queue_id),
                },
                min_offset: QueueOffset(min),
                max_offset: QueueOffset(max),
            }),
            // The shard without queues: one row of NULLs.
            (_, None, None, None, None) => {}
            other => {
                return Err(MetaError::Corrupt(format!(
                    "shard {shard}: queue row with NULL columns: {other:?}"
                )));
            }
        }
    }
    Ok(ShardState {
        shard,
        commit_log_end: CommitLogOffset(end),
        queues,
    })
}

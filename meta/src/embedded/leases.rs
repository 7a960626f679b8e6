//! Shards and their leases. Every lease change is one conditional `UPDATE … RETURNING`, so
//! two nodes racing for a shard cannot both win; a failed condition is then explained by
//! reading the row (error path only).

use sqlx::sqlite::SqlitePool;
use stratus_compat::types::{CommitLogOffset, QueueId, QueueOffset, Topic};

use super::convert::{db_err, shard_from_db, shard_to_db};
use crate::error::{MetaError, Result};
use crate::model::{Epoch, NodeId, QueueKey, QueueRange, ShardId, ShardLease, ShardState};

pub(crate) type LeaseRow = (i64, i64, Option<String>, i64);

pub(crate) fn lease_from_row((shard, epoch, owner, expires_at_ms): LeaseRow) -> Result<ShardLease> {
    Ok(ShardLease {
        shard: shard_from_db(shard)?,
        epoch: Epoch(epoch),
        owner: owner.map(NodeId),
        expires_at_ms,
    })
}

pub(crate) fn shard_not_found(shard: ShardId) -> MetaError {
    MetaError::NotFound {
        what: format!("shard {shard}"),
    }
}

/// The stored epoch of `shard`, or `None` if the shard does not exist.
async fn stored_epoch(pool: &SqlitePool, shard: ShardId) -> Result<Option<Epoch>> {
    let row: Option<(i64,)> = sqlx::query_as("SELECT epoch FROM shards WHERE shard_id = $1")
        .bind(shard_to_db(shard))
        .fetch_optional(pool)
        .await
        .map_err(db_err("read shard epoch"))?;
    Ok(row.map(|(e,)| Epoch(e)))
}

/// Inserts the missing shards `0..count` (free, epoch 0) with one statement, then lists all.
pub(super) async fn ensure_shards(pool: &SqlitePool, count: u32) -> Result<Vec<ShardLease>> {
    sqlx::query(
        "WITH RECURSIVE ids (n) AS ( \
             SELECT 0 WHERE 0 < $1 \
             UNION ALL SELECT n + 1 FROM ids WHERE n + 1 < $1) \
         INSERT INTO shards (shard_id, epoch, owner, expires_at_ms, commit_log_end) \
         SELECT n, 0, NULL, 0, 0 FROM ids WHERE true \
         ON CONFLICT (shard_id) DO NOTHING",
    )
    .bind(i64::from(count))
    .execute(pool)
    .await
    .map_err(db_err("ensure shards"))?;
    list_shards(pool).await
}

pub(super) async fn list_shards(pool: &SqlitePool) -> Result<Vec<ShardLease>> {
    let rows: Vec<LeaseRow> = sqlx::query_as(
        "SELECT shard_id, epoch, owner, expires_at_ms FROM shards ORDER BY shard_id",
    )
    .fetch_all(pool)
    .await
    .map_err(db_err("list shards"))?;
    rows.into_iter().map(lease_from_row).collect()
}

/// One statement: takes the shard if it is free, expired at `now_ms`, or already ours; the
/// epoch goes up by one unless it was ours.
pub(super) async fn acquire_shard(
    pool: &SqlitePool,
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
    pool: &SqlitePool,
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
            // Same epoch but another owner (or none) means we released it: fenced too.
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
    pool: &SqlitePool,
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

/// Reads the commit-log end and the queues in one read transaction (one snapshot).
pub(super) async fn shard_state(pool: &SqlitePool, shard: ShardId) -> Result<ShardState> {
    let mut tx = pool.begin().await.map_err(db_err("load shard state"))?;
    let end: Option<(i64,)> =
        sqlx::query_as("SELECT commit_log_end FROM shards WHERE shard_id = $1")
            .bind(shard_to_db(shard))
            .fetch_optional(&mut *tx)
            .await
            .map_err(db_err("load shard state"))?;
    let Some((end,)) = end else {
        return Err(shard_not_found(shard));
    };
    let rows: Vec<(String, i32, i64, i64)> = sqlx::query_as(
        "SELECT topic, queue_id, min_offset, max_offset FROM queues \
         WHERE shard_id = $1 ORDER BY topic, queue_id",
    )
    .bind(shard_to_db(shard))
    .fetch_all(&mut *tx)
    .await
    .map_err(db_err("load shard queues"))?;
    tx.commit().await.map_err(db_err("load shard state"))?;
    Ok(ShardState {
        shard,
        commit_log_end: CommitLogOffset(end),
        queues: rows
            .into_iter()
            .map(|(topic, queue_id, min, max)| QueueRange {
                queue: QueueKey {
                    shard,
                    topic: Topic::new(topic),
                    queue_id: QueueId(queue_id),
                },
                min_offset: QueueOffset(min),
                max_offset: QueueOffset(max),
            })
            .collect(),
    })
}

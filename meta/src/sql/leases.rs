//! Shards and their leases. Every lease change is one conditional `UPDATE … RETURNING`, so
//! two nodes racing for a shard cannot both win (SQLite has one writer at a time; PostgreSQL
//! locks the row and re-checks the condition on its newest version after waiting for a
//! concurrent writer). A failed condition is then explained by reading the row (error path
//! only).

use sqlx::Pool;
use stratus_compat::types::{CommitLogOffset, QueueId, QueueOffset, Topic};

use super::convert::shard_to_db;
use super::dialect::Dialect;
use super::driver::{Bind, Columns, RowsAffected};
use super::rows::LeaseRow;
use crate::error::{MetaError, Result};
use crate::model::{Epoch, NodeId, QueueKey, QueueRange, ShardId, ShardLease, ShardState};

/// [`MetaError::NotFound`] for a shard that was never created.
pub(crate) fn shard_not_found(shard: ShardId) -> MetaError {
    MetaError::NotFound { shard }
}

/// The stored epoch of `shard`, or `None` if the shard does not exist.
async fn stored_epoch<D: Dialect>(pool: &Pool<D>, shard: ShardId) -> Result<Option<Epoch>> {
    sqlx::query("SELECT epoch FROM shards WHERE shard_id = $1")
        .arg(shard_to_db(shard))
        .try_map(|r: D::Row| r.int(0).map(Epoch))
        .fetch_optional(D::on_pool(pool))
        .await
        .map_err(D::db_err("read shard epoch"))
}

/// Inserts the missing shards `0..count` (free, epoch 0) with one statement, then lists all.
pub(crate) async fn ensure_shards<D: Dialect>(
    pool: &Pool<D>,
    count: u32,
) -> Result<Vec<ShardLease>> {
    sqlx::query(D::ENSURE_SHARDS)
        .arg(i64::from(count))
        .execute(D::on_pool(pool))
        .await
        .map_err(D::db_err("ensure shards"))?;
    list_shards(pool).await
}

pub(crate) async fn list_shards<D: Dialect>(pool: &Pool<D>) -> Result<Vec<ShardLease>> {
    let rows =
        sqlx::query("SELECT shard_id, epoch, owner, expires_at_ms FROM shards ORDER BY shard_id")
            .try_map(LeaseRow::read)
            .fetch_all(D::on_pool(pool))
            .await
            .map_err(D::db_err("list shards"))?;
    rows.into_iter().map(LeaseRow::into_lease).collect()
}

/// One statement: takes the shard if it is free, expired at `now_ms`, or already ours; the
/// epoch always goes up by one.
pub(crate) async fn acquire_shard<D: Dialect>(
    pool: &Pool<D>,
    shard: ShardId,
    node: &NodeId,
    now_ms: i64,
    ttl_ms: i64,
) -> Result<Option<ShardLease>> {
    let row = sqlx::query(
        "UPDATE shards SET \
             epoch = epoch + 1, \
             owner = $2, \
             expires_at_ms = $3 \
         WHERE shard_id = $1 AND (owner IS NULL OR owner = $2 OR expires_at_ms <= $4) \
         RETURNING shard_id, epoch, owner, expires_at_ms",
    )
    .arg(shard_to_db(shard))
    .arg(node.0.as_str())
    .arg(now_ms.saturating_add(ttl_ms))
    .arg(now_ms)
    .try_map(LeaseRow::read)
    .fetch_optional(D::on_pool(pool))
    .await
    .map_err(D::db_err("acquire shard"))?;
    match row {
        Some(row) => row.into_lease().map(Some),
        None if stored_epoch(pool, shard).await?.is_none() => Err(shard_not_found(shard)),
        None => Ok(None),
    }
}

pub(crate) async fn renew_shard<D: Dialect>(
    pool: &Pool<D>,
    shard: ShardId,
    node: &NodeId,
    epoch: Epoch,
    now_ms: i64,
    ttl_ms: i64,
) -> Result<ShardLease> {
    let row = sqlx::query(
        "UPDATE shards SET expires_at_ms = $4 \
         WHERE shard_id = $1 AND epoch = $2 AND owner = $3 \
         RETURNING shard_id, epoch, owner, expires_at_ms",
    )
    .arg(shard_to_db(shard))
    .arg(epoch.0)
    .arg(node.0.as_str())
    .arg(now_ms.saturating_add(ttl_ms))
    .try_map(LeaseRow::read)
    .fetch_optional(D::on_pool(pool))
    .await
    .map_err(D::db_err("renew shard"))?;
    match row {
        Some(row) => row.into_lease(),
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
pub(crate) async fn release_shard<D: Dialect>(
    pool: &Pool<D>,
    shard: ShardId,
    node: &NodeId,
    epoch: Epoch,
) -> Result<()> {
    let done = sqlx::query(
        "UPDATE shards SET owner = NULL, expires_at_ms = 0 \
         WHERE shard_id = $1 AND epoch = $2 AND owner = $3",
    )
    .arg(shard_to_db(shard))
    .arg(epoch.0)
    .arg(node.0.as_str())
    .execute(D::on_pool(pool))
    .await
    .map_err(D::db_err("release shard"))?;
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
pub(crate) async fn shard_state<D: Dialect>(pool: &Pool<D>, shard: ShardId) -> Result<ShardState> {
    let rows: Vec<StateRow> = sqlx::query(
        "SELECT s.commit_log_end, q.topic, q.queue_id, q.min_offset, q.max_offset \
         FROM shards s LEFT JOIN queues q ON q.shard_id = s.shard_id \
         WHERE s.shard_id = $1 ORDER BY q.topic, q.queue_id",
    )
    .arg(shard_to_db(shard))
    .try_map(|r: D::Row| {
        Ok((
            r.int(0)?,
            r.opt_text(1)?,
            r.opt_int4(2)?,
            r.opt_int(3)?,
            r.opt_int(4)?,
        ))
    })
    .fetch_all(D::on_pool(pool))
    .await
    .map_err(D::db_err("load shard state"))?;
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

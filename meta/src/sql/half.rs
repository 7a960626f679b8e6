//! Pending transactional half messages, timers and delay-level progress: the effects a
//! segment commit applies (inside the commit's transaction, one statement per effect) and
//! the reads and writes of the checker and schedulers.
//!
//! Half messages are keyed by (shard, handle); the due scan walks the (shard,
//! next_check_ms) index.

use sqlx::{Executor, Pool};
use stratus_compat::types::{CommitLogOffset, QueueOffset};

use super::convert::{limit_to_db, shard_to_db};
use super::dialect::Dialect;
use super::driver::{Bind, Columns, RowsAffected};
use super::rows::{HalfRow, half_columns};
use crate::error::Result;
use crate::model::{HalfMessage, SegmentEffect, ShardId};

/// Applies one section's effects, in order, inside the segment commit's transaction. The
/// section was checked to name only its own shard. An error aborts the whole commit (the
/// caller drops the transaction).
pub(crate) async fn apply_effects<D: Dialect>(
    tx: &mut D::Connection,
    effects: &[SegmentEffect],
) -> Result<()> {
    for effect in effects {
        match effect {
            SegmentEffect::HalfPrepared(h) => insert(D::on_conn(tx), h).await?,
            SegmentEffect::HalfResolved { shard, handle } => {
                delete(D::on_conn(tx), *shard, *handle).await?;
            }
            SegmentEffect::TimerScheduled {
                shard,
                handle,
                due_ms,
            } => {
                sqlx::query("INSERT INTO timers (shard_id, handle, due_ms) VALUES ($1, $2, $3)")
                    .arg(shard_to_db(*shard))
                    .arg(handle.0)
                    .arg(*due_ms)
                    .execute(D::on_conn(tx))
                    .await
                    .map_err(D::db_err("schedule timer"))?;
            }
            SegmentEffect::TimerDelivered { shard, handle } => {
                sqlx::query("DELETE FROM timers WHERE shard_id = $1 AND handle = $2")
                    .arg(shard_to_db(*shard))
                    .arg(handle.0)
                    .execute(D::on_conn(tx))
                    .await
                    .map_err(D::db_err("deliver timer"))?;
            }
            SegmentEffect::ProducerBatch(b) => super::producers::insert::<D>(tx, b).await?,
            SegmentEffect::KeysIndexed { shard, keys } => {
                if !keys.is_empty() {
                    D::insert_keys(tx, *shard, keys).await?;
                }
            }
            SegmentEffect::ScheduleProgress {
                shard,
                level,
                next_offset,
            } => {
                sqlx::query(
                    "INSERT INTO schedule_progress (shard_id, level, next_offset) \
                     VALUES ($1, $2, $3) \
                     ON CONFLICT (shard_id, level) DO UPDATE SET next_offset = excluded.next_offset",
                )
                .arg(shard_to_db(*shard))
                .arg(*level)
                .arg(next_offset.0)
                .execute(D::on_conn(tx))
                .await
                .map_err(D::db_err("advance schedule progress"))?;
            }
        }
    }
    Ok(())
}

/// Inserts a pending row; an existing row under the same key is a unique violation, which
/// surfaces as [`crate::MetaError::Conflict`].
async fn insert<D: Dialect>(exec: impl Executor<'_, Database = D>, h: &HalfMessage) -> Result<()> {
    sqlx::query(concat!(
        "INSERT INTO half_messages (",
        half_columns!(),
        ") VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)"
    ))
    .arg(shard_to_db(h.shard))
    .arg(h.handle.0)
    .arg(h.queue_offset.0)
    .arg(h.producer_group.as_str())
    .arg(h.transaction_id.as_str())
    .arg(h.real_topic.as_str())
    .arg(h.real_queue_id.0)
    .arg(h.stored_at_ms)
    .arg(h.check_times)
    .arg(h.next_check_ms)
    .execute(exec)
    .await
    .map_err(D::db_err("insert half message"))?;
    Ok(())
}

/// Deletes a pending row; true if it existed.
async fn delete<D: Dialect>(
    exec: impl Executor<'_, Database = D>,
    shard: ShardId,
    handle: CommitLogOffset,
) -> Result<bool> {
    let done = sqlx::query("DELETE FROM half_messages WHERE shard_id = $1 AND handle = $2")
        .arg(shard_to_db(shard))
        .arg(handle.0)
        .execute(exec)
        .await
        .map_err(D::db_err("delete half message"))?;
    Ok(done.rows_affected() > 0)
}

pub(crate) async fn half_message<D: Dialect>(
    pool: &Pool<D>,
    shard: ShardId,
    handle: CommitLogOffset,
) -> Result<Option<HalfMessage>> {
    let row = sqlx::query(concat!(
        "SELECT ",
        half_columns!(),
        " FROM half_messages WHERE shard_id = $1 AND handle = $2"
    ))
    .arg(shard_to_db(shard))
    .arg(handle.0)
    .try_map(HalfRow::read)
    .fetch_optional(D::on_pool(pool))
    .await
    .map_err(D::db_err("get half message"))?;
    row.map(HalfRow::into_half).transpose()
}

/// One range scan of the (shard, next_check_ms) index, which also orders ties by handle (the
/// primary key every index entry carries).
pub(crate) async fn due_half_messages<D: Dialect>(
    pool: &Pool<D>,
    shard: ShardId,
    now_ms: i64,
    limit: u32,
) -> Result<Vec<HalfMessage>> {
    let rows = sqlx::query(concat!(
        "SELECT ",
        half_columns!(),
        " FROM half_messages WHERE shard_id = $1 AND next_check_ms <= $2 \
          ORDER BY next_check_ms, handle LIMIT $3"
    ))
    .arg(shard_to_db(shard))
    .arg(now_ms)
    .arg(limit_to_db(limit))
    .try_map(HalfRow::read)
    .fetch_all(D::on_pool(pool))
    .await
    .map_err(D::db_err("list due half messages"))?;
    rows.into_iter().map(HalfRow::into_half).collect()
}

pub(crate) async fn record_half_check<D: Dialect>(
    pool: &Pool<D>,
    shard: ShardId,
    handle: CommitLogOffset,
    check_times: i32,
    next_check_ms: i64,
) -> Result<bool> {
    let done = sqlx::query(
        "UPDATE half_messages SET check_times = $1, next_check_ms = $2 \
         WHERE shard_id = $3 AND handle = $4",
    )
    .arg(check_times)
    .arg(next_check_ms)
    .arg(shard_to_db(shard))
    .arg(handle.0)
    .execute(D::on_pool(pool))
    .await
    .map_err(D::db_err("record half message check"))?;
    Ok(done.rows_affected() > 0)
}

pub(crate) async fn resolve_half_message<D: Dialect>(
    pool: &Pool<D>,
    shard: ShardId,
    handle: CommitLogOffset,
) -> Result<bool> {
    delete(D::on_pool(pool), shard, handle).await
}

/// Every pending half message of a shard, by handle.
pub(crate) async fn half_messages<D: Dialect>(
    pool: &Pool<D>,
    shard: ShardId,
) -> Result<Vec<HalfMessage>> {
    let rows = sqlx::query(concat!(
        "SELECT ",
        half_columns!(),
        " FROM half_messages WHERE shard_id = $1 ORDER BY handle"
    ))
    .arg(shard_to_db(shard))
    .try_map(HalfRow::read)
    .fetch_all(D::on_pool(pool))
    .await
    .map_err(D::db_err("list half messages"))?;
    rows.into_iter().map(HalfRow::into_half).collect()
}

/// Every delay level's delivery progress of a shard, by level.
pub(crate) async fn schedule_progress<D: Dialect>(
    pool: &Pool<D>,
    shard: ShardId,
) -> Result<Vec<(i32, QueueOffset)>> {
    sqlx::query(
        "SELECT level, next_offset FROM schedule_progress WHERE shard_id = $1 ORDER BY level",
    )
    .arg(shard_to_db(shard))
    .try_map(|r: D::Row| Ok((r.int4(0)?, QueueOffset(r.int(1)?))))
    .fetch_all(D::on_pool(pool))
    .await
    .map_err(D::db_err("read schedule progress"))
}

/// Timers of a shard due at `now_ms`, earliest first: (handle, due time).
pub(crate) async fn due_timers<D: Dialect>(
    pool: &Pool<D>,
    shard: ShardId,
    now_ms: i64,
    limit: u32,
) -> Result<Vec<(CommitLogOffset, i64)>> {
    sqlx::query(
        "SELECT handle, due_ms FROM timers WHERE shard_id = $1 AND due_ms <= $2 \
         ORDER BY due_ms, handle LIMIT $3",
    )
    .arg(shard_to_db(shard))
    .arg(now_ms)
    .arg(limit_to_db(limit))
    .try_map(|r: D::Row| Ok((CommitLogOffset(r.int(0)?), r.int(1)?)))
    .fetch_all(D::on_pool(pool))
    .await
    .map_err(D::db_err("read due timers"))
}

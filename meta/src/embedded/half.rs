//! Pending transactional half messages: the effects a segment commit applies to them (inside
//! the commit's transaction) and the reads and writes the transaction checker makes.
//!
//! Rows are keyed by (shard, handle); the due scan walks the (shard, next_check_ms) index.

use sqlx::sqlite::{Sqlite, SqlitePool};
use sqlx::{Executor, Transaction};
use stratus_compat::types::{CommitLogOffset, ProducerGroup, QueueId, QueueOffset, Topic};

use super::convert::{db_err, limit_to_db, shard_from_db, shard_to_db};
use crate::error::Result;
use crate::model::{HalfMessage, SegmentEffect, ShardId};

pub(crate) type HalfRow = (i64, i64, i64, String, String, String, i32, i64, i32, i64);

/// The columns of [`HalfRow`], in order.
macro_rules! half_columns {
    () => {
        "shard_id, handle, queue_offset, producer_group, transaction_id, real_topic, \
         real_queue_id, stored_at_ms, check_times, next_check_ms"
    };
}

pub(crate) use half_columns;

pub(crate) fn half_from_row(row: HalfRow) -> Result<HalfMessage> {
    let (
        shard,
        handle,
        queue_offset,
        producer_group,
        transaction_id,
        real_topic,
        real_queue_id,
        stored_at_ms,
        check_times,
        next_check_ms,
    ) = row;
    Ok(HalfMessage {
        shard: shard_from_db(shard)?,
        handle: CommitLogOffset(handle),
        queue_offset: QueueOffset(queue_offset),
        producer_group: ProducerGroup::new(producer_group),
        transaction_id,
        real_topic: Topic::new(real_topic),
        real_queue_id: QueueId(real_queue_id),
        stored_at_ms,
        check_times,
        next_check_ms,
    })
}

/// Applies one section's effects, in order, inside the segment commit's transaction. The
/// caller has checked that every effect names the section's shard. An error aborts the
/// whole commit (the caller drops the transaction).
pub(super) async fn apply_effects(
    tx: &mut Transaction<'static, Sqlite>,
    effects: &[SegmentEffect],
) -> Result<()> {
    for effect in effects {
        match effect {
            SegmentEffect::HalfPrepared(h) => insert(&mut **tx, h).await?,
            SegmentEffect::HalfResolved { shard, handle } => {
                delete(&mut **tx, *shard, *handle).await?;
            }
            SegmentEffect::TimerScheduled {
                shard,
                handle,
                due_ms,
            } => {
                sqlx::query("INSERT INTO timers (shard_id, handle, due_ms) VALUES ($1, $2, $3)")
                    .bind(shard_to_db(*shard))
                    .bind(handle.0)
                    .bind(*due_ms)
                    .execute(&mut **tx)
                    .await
                    .map_err(db_err("schedule timer"))?;
            }
            SegmentEffect::TimerDelivered { shard, handle } => {
                sqlx::query("DELETE FROM timers WHERE shard_id = $1 AND handle = $2")
                    .bind(shard_to_db(*shard))
                    .bind(handle.0)
                    .execute(&mut **tx)
                    .await
                    .map_err(db_err("deliver timer"))?;
            }
            SegmentEffect::ScheduleProgress {
                shard,
                level,
                next_offset,
            } => {
                sqlx::query(
                    "INSERT INTO schedule_progress (shard_id, level, next_offset) VALUES ($1, $2, $3) \
                     ON CONFLICT (shard_id, level) DO UPDATE SET next_offset = excluded.next_offset",
                )
                .bind(shard_to_db(*shard))
                .bind(*level)
                .bind(next_offset.0)
                .execute(&mut **tx)
                .await
                .map_err(db_err("advance schedule progress"))?;
            }
        }
    }
    Ok(())
}

/// Inserts a pending row; an existing row under the same key is a unique violation, which
/// surfaces as [`crate::MetaError::Conflict`].
async fn insert<'c, E: Executor<'c, Database = Sqlite>>(exec: E, h: &HalfMessage) -> Result<()> {
    sqlx::query(concat!(
        "INSERT INTO half_messages (",
        half_columns!(),
        ") VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)"
    ))
    .bind(shard_to_db(h.shard))
    .bind(h.handle.0)
    .bind(h.queue_offset.0)
    .bind(h.producer_group.as_str())
    .bind(h.transaction_id.as_str())
    .bind(h.real_topic.as_str())
    .bind(h.real_queue_id.0)
    .bind(h.stored_at_ms)
    .bind(h.check_times)
    .bind(h.next_check_ms)
    .execute(exec)
    .await
    .map_err(db_err("insert half message"))?;
    Ok(())
}

/// Deletes a pending row; true if it existed.
async fn delete<'c, E: Executor<'c, Database = Sqlite>>(
    exec: E,
    shard: ShardId,
    handle: CommitLogOffset,
) -> Result<bool> {
    let done = sqlx::query("DELETE FROM half_messages WHERE shard_id = $1 AND handle = $2")
        .bind(shard_to_db(shard))
        .bind(handle.0)
        .execute(exec)
        .await
        .map_err(db_err("delete half message"))?;
    Ok(done.rows_affected() > 0)
}

pub(super) async fn half_message(
    pool: &SqlitePool,
    shard: ShardId,
    handle: CommitLogOffset,
) -> Result<Option<HalfMessage>> {
    let row: Option<HalfRow> = sqlx::query_as(concat!(
        "SELECT ",
        half_columns!(),
        " FROM half_messages WHERE shard_id = $1 AND handle = $2"
    ))
    .bind(shard_to_db(shard))
    .bind(handle.0)
    .fetch_optional(pool)
    .await
    .map_err(db_err("get half message"))?;
    row.map(half_from_row).transpose()
}

/// One range scan of the (shard, next_check_ms) index, which also orders ties by handle (the
/// primary key every index entry carries).
pub(super) async fn due_half_messages(
    pool: &SqlitePool,
    shard: ShardId,
    now_ms: i64,
    limit: u32,
) -> Result<Vec<HalfMessage>> {
    let rows: Vec<HalfRow> = sqlx::query_as(concat!(
        "SELECT ",
        half_columns!(),
        " FROM half_messages WHERE shard_id = $1 AND next_check_ms <= $2 \
          ORDER BY next_check_ms, handle LIMIT $3"
    ))
    .bind(shard_to_db(shard))
    .bind(now_ms)
    .bind(limit_to_db(limit))
    .fetch_all(pool)
    .await
    .map_err(db_err("list due half messages"))?;
    rows.into_iter().map(half_from_row).collect()
}

pub(super) async fn record_half_check(
    pool: &SqlitePool,
    shard: ShardId,
    handle: CommitLogOffset,
    check_times: i32,
    next_check_ms: i64,
) -> Result<bool> {
    let done = sqlx::query(
        "UPDATE half_messages SET check_times = $1, next_check_ms = $2 \
         WHERE shard_id = $3 AND handle = $4",
    )
    .bind(check_times)
    .bind(next_check_ms)
    .bind(shard_to_db(shard))
    .bind(handle.0)
    .execute(pool)
    .await
    .map_err(db_err("record half message check"))?;
    Ok(done.rows_affected() > 0)
}

pub(super) async fn resolve_half_message(
    pool: &SqlitePool,
    shard: ShardId,
    handle: CommitLogOffset,
) -> Result<bool> {
    delete(pool, shard, handle).await
}

pub(super) async fn half_messages(pool: &SqlitePool, shard: ShardId) -> Result<Vec<HalfMessage>> {
    let rows: Vec<HalfRow> = sqlx::query_as(concat!(
        "SELECT ",
        half_columns!(),
        " FROM half_messages WHERE shard_id = $1 ORDER BY handle"
    ))
    .bind(shard_to_db(shard))
    .fetch_all(pool)
    .await
    .map_err(db_err("list half messages"))?;
    rows.into_iter().map(half_from_row).collect()
}

/// Every delay level's delivery progress of a shard, by level.
pub(super) async fn schedule_progress(
    pool: &SqlitePool,
    shard: ShardId,
) -> Result<Vec<(i32, QueueOffset)>> {
    let rows: Vec<(i32, i64)> = sqlx::query_as(
        "SELECT level, next_offset FROM schedule_progress WHERE shard_id = $1 ORDER BY level",
    )
    .bind(shard_to_db(shard))
    .fetch_all(pool)
    .await
    .map_err(db_err("read schedule progress"))?;
    Ok(rows.into_iter().map(|(l, o)| (l, QueueOffset(o))).collect())
}

/// Timers of a shard due at `now_ms`, earliest first: (handle, due time).
pub(super) async fn due_timers(
    pool: &SqlitePool,
    shard: ShardId,
    now_ms: i64,
    limit: u32,
) -> Result<Vec<(CommitLogOffset, i64)>> {
    let rows: Vec<(i64, i64)> = sqlx::query_as(
        "SELECT handle, due_ms FROM timers WHERE shard_id = $1 AND due_ms <= $2 \
         ORDER BY due_ms, handle LIMIT $3",
    )
    .bind(shard_to_db(shard))
    .bind(now_ms)
    .bind(limit_to_db(limit))
    .fetch_all(pool)
    .await
    .map_err(db_err("read due timers"))?;
    Ok(rows
        .into_iter()
        .map(|(h, d)| (CommitLogOffset(h), d))
        .collect())
}

//! The lookups the read path makes over committed sections: a queue's ranges by offset or
//! store time, a shard's section by commit-log offset, a queue's bounds.

use sqlx::Pool;
use stratus_compat::types::{CommitLogOffset, QueueOffset};

use super::convert::{limit_to_db, shard_to_db};
use super::dialect::Dialect;
use super::driver::{Bind, Columns};
use super::rows::{QueueSegmentRow, SegmentRow};
use crate::error::Result;
use crate::model::{QueueKey, QueueRange, QueueSegment, SegmentRef, ShardId};

/// The `SELECT` over one queue's ranges joined with their sections ([`QueueSegmentRow`]'s
/// columns); `$1..$3` name the queue, `$tail` adds the rest of the `WHERE` clause and the
/// ordering.
macro_rules! queue_segment_query {
    ($tail:literal) => {
        concat!(
            "SELECT s.object_key, s.shard_id, s.section_pos, s.section_len, s.footer_pos, \
                    s.footer_len, s.commit_log_start, s.commit_log_end, qs.first_offset, \
                    qs.entry_count, qs.min_store_ts, qs.max_store_ts \
             FROM queues q \
             JOIN queue_segments qs ON qs.queue_ref = q.queue_ref \
             JOIN segments s ON s.segment_id = qs.segment_id \
             WHERE q.shard_id = $1 AND q.topic = $2 AND q.queue_id = $3 AND ",
            $tail
        )
    };
}

/// Ranges are contiguous, so "ends after `from`" in `end_offset` order starts with the range
/// holding `from` (when retained) and walks the primary key.
pub(crate) async fn queue_segments<D: Dialect>(
    pool: &Pool<D>,
    queue: &QueueKey,
    from: QueueOffset,
    limit: u32,
) -> Result<Vec<QueueSegment>> {
    let rows = sqlx::query(queue_segment_query!(
        "qs.end_offset > $4 ORDER BY qs.end_offset LIMIT $5"
    ))
    .arg(shard_to_db(queue.shard))
    .arg(queue.topic.as_str())
    .arg(queue.queue_id.0)
    .arg(from.0)
    .arg(limit_to_db(limit))
    .try_map(QueueSegmentRow::read)
    .fetch_all(D::on_pool(pool))
    .await
    .map_err(D::db_err("list queue segments"))?;
    rows.into_iter()
        .map(QueueSegmentRow::into_queue_segment)
        .collect()
}

/// Walks the queue's ranges in offset order to the first whose max store time reaches
/// `ts_ms` (store times need not be monotonic across owners, so no index on them).
pub(crate) async fn queue_segment_by_time<D: Dialect>(
    pool: &Pool<D>,
    queue: &QueueKey,
    ts_ms: i64,
) -> Result<Option<QueueSegment>> {
    let row = sqlx::query(queue_segment_query!(
        "qs.max_store_ts >= $4 ORDER BY qs.end_offset LIMIT 1"
    ))
    .arg(shard_to_db(queue.shard))
    .arg(queue.topic.as_str())
    .arg(queue.queue_id.0)
    .arg(ts_ms)
    .try_map(QueueSegmentRow::read)
    .fetch_optional(D::on_pool(pool))
    .await
    .map_err(D::db_err("find queue segment by time"))?;
    row.map(QueueSegmentRow::into_queue_segment).transpose()
}

/// The first section ending after `offset` (one index probe); it holds `offset` unless
/// `offset` is before the shard's first retained section.
pub(crate) async fn segment_by_commit_log_offset<D: Dialect>(
    pool: &Pool<D>,
    shard: ShardId,
    offset: CommitLogOffset,
) -> Result<Option<SegmentRef>> {
    let row = sqlx::query(
        "SELECT object_key, shard_id, section_pos, section_len, footer_pos, footer_len, \
                commit_log_start, commit_log_end \
         FROM segments WHERE shard_id = $1 AND commit_log_end > $2 \
         ORDER BY commit_log_end LIMIT 1",
    )
    .arg(shard_to_db(shard))
    .arg(offset.0)
    .try_map(SegmentRow::read)
    .fetch_optional(D::on_pool(pool))
    .await
    .map_err(D::db_err("find segment by commit-log offset"))?;
    match row {
        Some(row) if row.commit_log_start <= offset.0 => row.into_ref().map(Some),
        _ => Ok(None),
    }
}

/// Bounds of one queue (min 0 / max 0 when unknown).
pub(crate) async fn queue_range<D: Dialect>(
    pool: &Pool<D>,
    queue: &QueueKey,
) -> Result<QueueRange> {
    let row = sqlx::query(
        "SELECT min_offset, max_offset FROM queues \
         WHERE shard_id = $1 AND topic = $2 AND queue_id = $3",
    )
    .arg(shard_to_db(queue.shard))
    .arg(queue.topic.as_str())
    .arg(queue.queue_id.0)
    .try_map(|r: D::Row| Ok((r.int(0)?, r.int(1)?)))
    .fetch_optional(D::on_pool(pool))
    .await
    .map_err(D::db_err("read queue range"))?;
    let (min, max) = row.unwrap_or((0, 0));
    Ok(QueueRange {
        queue: queue.clone(),
        min_offset: QueueOffset(min),
        max_offset: QueueOffset(max),
    })
}

//! Segment commits and the lookups the read path makes over them.
//!
//! A commit is one transaction. Each section is **one statement** whatever its number of
//! queues: data-modifying CTEs fence and advance the shard (a conditional `UPDATE shards`,
//! which also row-locks the shard until the transaction ends, so no other commit, retention
//! pass or takeover of the shard interleaves), insert the section row, create new queues and
//! advance every max offset from `UNNEST`ed arrays, and insert the queue ranges. The
//! statement returns how many section and range rows it wrote; when a condition did not
//! hold, the transaction reads what is stored to name the failure, then rolls back. A
//! section's effects (`half.rs`) follow in the same transaction.

use sqlx::Postgres;
use sqlx::Transaction;
use sqlx::postgres::{PgConnection, PgPool};
use stratus_compat::types::{CommitLogOffset, QueueOffset};

use super::convert::{db_err, map_sqlx};
use crate::embedded::convert::{limit_to_db, shard_to_db};
use crate::embedded::segments::{
    Append, QueueSegmentRow, Section, SegmentRow, invalid, queue_segment_from_row,
    queue_segment_query, segment_containing,
};
use crate::error::{MetaError, Result};
use crate::model::{QueueKey, QueueRange, QueueSegment, SegmentCommit, SegmentRef, ShardId};

/// One section: `$1` new commit-log end, `$2` shard, `$3` epoch, `$4` node, `$5` commit-log
/// start, `$6`–`$11` the section row, `$12`–`$18` the queue appends as arrays.
///
/// `created` and `advanced` see the same snapshot, so a queue is either created (first
/// offset 0, not present) or advanced (present, max offset = first offset), never both;
/// nothing runs unless the shard row was fenced and advanced (`sh`).
const APPLY_SECTION: &str = "\
    WITH sh AS ( \
        UPDATE shards SET commit_log_end = $1 \
        WHERE shard_id = $2 AND epoch = $3 AND owner = $4 AND commit_log_end = $5 \
        RETURNING shard_id), \
    seg AS ( \
        INSERT INTO segments (shard_id, epoch, node, object_key, section_pos, section_len, \
                              footer_pos, footer_len, commit_log_start, commit_log_end, \
                              committed_at_ms) \
        SELECT shard_id, $3, $4, $6, $7, $8, $9, $10, $5, $1, $11 FROM sh \
        RETURNING segment_id), \
    v AS ( \
        SELECT * FROM UNNEST($12::text[], $13::int4[], $14::int8[], $15::int8[], \
                             $16::int8[], $17::int8[], $18::int8[]) \
            AS u (topic, queue_id, first_offset, end_offset, entry_count, min_store_ts, \
                  max_store_ts) \
        WHERE EXISTS (SELECT 1 FROM sh)), \
    created AS ( \
        INSERT INTO queues (shard_id, topic, queue_id, min_offset, max_offset) \
        SELECT $2, v.topic, v.queue_id, 0, v.end_offset FROM v WHERE v.first_offset = 0 \
        ON CONFLICT (shard_id, topic, queue_id) DO NOTHING \
        RETURNING queue_ref, topic, queue_id), \
    advanced AS ( \
        UPDATE queues SET max_offset = v.end_offset FROM v \
        WHERE queues.shard_id = $2 AND queues.topic = v.topic \
          AND queues.queue_id = v.queue_id AND queues.max_offset = v.first_offset \
        RETURNING queues.queue_ref, queues.topic, queues.queue_id), \
    ranges AS ( \
        INSERT INTO queue_segments (queue_ref, end_offset, first_offset, entry_count, \
                                    segment_id, min_store_ts, max_store_ts) \
        SELECT m.queue_ref, v.end_offset, v.first_offset, v.entry_count, seg.segment_id, \
               v.min_store_ts, v.max_store_ts \
        FROM (SELECT * FROM created UNION ALL SELECT * FROM advanced) AS m \
        JOIN v ON v.topic = m.topic AND v.queue_id = m.queue_id \
        CROSS JOIN seg \
        RETURNING 1) \
    SELECT (SELECT COUNT(*) FROM seg), (SELECT COUNT(*) FROM ranges)";

pub(super) async fn commit_segment(pool: &PgPool, sections: &[SegmentCommit]) -> Result<()> {
    if sections.is_empty() {
        return Ok(());
    }
    let prepared = sections
        .iter()
        .map(Section::prepare)
        .collect::<Result<Vec<_>>>()?;
    let mut tx = pool.begin().await.map_err(db_err("begin segment commit"))?;
    for section in &prepared {
        apply_section(&mut tx, section).await?;
    }
    tx.commit().await.map_err(db_err("commit segment"))?;
    Ok(())
}

/// Applies one section inside the commit transaction. On error the caller drops the
/// transaction, which rolls every section back, effects included. A retry of a committed
/// section applies nothing, its effects included.
async fn apply_section(tx: &mut Transaction<'static, Postgres>, s: &Section<'_>) -> Result<()> {
    let c = s.commit;
    let n = s.queues.len();
    let (mut topics, mut queue_ids, mut firsts, mut ends, mut counts, mut min_ts, mut max_ts) = (
        Vec::with_capacity(n),
        Vec::with_capacity(n),
        Vec::with_capacity(n),
        Vec::with_capacity(n),
        Vec::with_capacity(n),
        Vec::with_capacity(n),
        Vec::with_capacity(n),
    );
    for a in &s.queues {
        topics.push(a.topic);
        queue_ids.push(a.queue_id);
        firsts.push(a.first);
        ends.push(a.end);
        counts.push(a.count);
        min_ts.push(a.append.min_store_ts);
        max_ts.push(a.append.max_store_ts);
    }
    let (sections, ranges): (i64, i64) = sqlx::query_as(APPLY_SECTION)
        .bind(c.commit_log_end.0)
        .bind(s.shard)
        .bind(c.epoch.0)
        .bind(c.node.0.as_str())
        .bind(c.commit_log_start.0)
        .bind(c.object_key.as_str())
        .bind(s.section_pos)
        .bind(s.section_len)
        .bind(s.footer_pos)
        .bind(s.footer_len)
        .bind(c.committed_at_ms)
        .bind(topics)
        .bind(queue_ids)
        .bind(firsts)
        .bind(ends)
        .bind(counts)
        .bind(min_ts)
        .bind(max_ts)
        .fetch_one(&mut **tx)
        .await
        .map_err(db_err("apply segment section"))?;
    if sections != 1 {
        return explain_shard_refusal(tx, s).await;
    }
    if usize::try_from(ranges).ok() != Some(n) {
        return Err(explain_queue_refusal(tx, s, &s.queues).await);
    }
    super::half::apply_effects(tx, &c.effects).await
}

/// The shard refused the commit-log advance: say why. A section identical to one already
/// committed (a retry after an ambiguous failure) is accepted and applies nothing.
async fn explain_shard_refusal(tx: &mut PgConnection, s: &Section<'_>) -> Result<()> {
    let c = s.commit;
    let row: Option<(i64, Option<String>, i64)> =
        sqlx::query_as("SELECT epoch, owner, commit_log_end FROM shards WHERE shard_id = $1")
            .bind(s.shard)
            .fetch_optional(&mut *tx)
            .await
            .map_err(db_err("read shard"))?;
    let Some((epoch, owner, end)) = row else {
        return Err(MetaError::NotFound {
            what: format!("shard {}", c.shard),
        });
    };
    if epoch != c.epoch.0 || owner.as_deref() != Some(c.node.0.as_str()) {
        return Err(MetaError::Fenced {
            shard: c.shard,
            ours: c.epoch,
            stored: crate::model::Epoch(epoch),
        });
    }
    let already: Option<(i64,)> = sqlx::query_as(
        "SELECT segment_id FROM segments \
         WHERE shard_id = $1 AND commit_log_end = $2 AND commit_log_start = $3 \
           AND object_key = $4 AND epoch = $5",
    )
    .bind(s.shard)
    .bind(c.commit_log_end.0)
    .bind(c.commit_log_start.0)
    .bind(c.object_key.as_str())
    .bind(c.epoch.0)
    .fetch_optional(&mut *tx)
    .await
    .map_err(db_err("look up committed section"))?;
    if already.is_some() {
        return Ok(());
    }
    Err(invalid(
        c,
        format!(
            "commit-log start {} is not the stored end {end}",
            c.commit_log_start
        ),
    ))
}

/// Some queue's max offset was not the append's first offset: find the first one (the
/// transaction is rolled back afterwards).
async fn explain_queue_refusal(
    tx: &mut PgConnection,
    s: &Section<'_>,
    appends: &[Append<'_>],
) -> MetaError {
    for a in appends {
        let stored: std::result::Result<Option<(i64,)>, _> = sqlx::query_as(
            "SELECT max_offset FROM queues WHERE shard_id = $1 AND topic = $2 AND queue_id = $3",
        )
        .bind(s.shard)
        .bind(a.topic)
        .bind(a.queue_id)
        .fetch_optional(&mut *tx)
        .await;
        match stored {
            Err(e) => return map_sqlx("read queue max offset", e),
            Ok(row) => {
                // Read after the refused statement: queues it advanced (or created) now
                // end at the append's end, so only a queue at neither bound is the culprit.
                let max = row.map_or(0, |(m,)| m);
                if max != a.first && max != a.end {
                    return invalid(
                        s.commit,
                        format!(
                            "queue {}/{}: first offset {} is not the stored max offset {max}",
                            a.topic, a.queue_id, a.first
                        ),
                    );
                }
            }
        }
    }
    MetaError::Conflict(format!(
        "segment {}: queue offsets changed during the commit",
        s.commit.object_key
    ))
}

// ----- lookups -----

pub(super) async fn queue_segments(
    pool: &PgPool,
    queue: &QueueKey,
    from: QueueOffset,
    limit: u32,
) -> Result<Vec<QueueSegment>> {
    let rows: Vec<QueueSegmentRow> = sqlx::query_as(queue_segment_query!(
        "qs.end_offset > $4 ORDER BY qs.end_offset LIMIT $5"
    ))
    .bind(shard_to_db(queue.shard))
    .bind(queue.topic.as_str())
    .bind(queue.queue_id.0)
    .bind(from.0)
    .bind(limit_to_db(limit))
    .fetch_all(pool)
    .await
    .map_err(db_err("list queue segments"))?;
    rows.into_iter().map(queue_segment_from_row).collect()
}

pub(super) async fn queue_segment_by_time(
    pool: &PgPool,
    queue: &QueueKey,
    ts_ms: i64,
) -> Result<Option<QueueSegment>> {
    let row: Option<QueueSegmentRow> = sqlx::query_as(queue_segment_query!(
        "qs.max_store_ts >= $4 ORDER BY qs.end_offset LIMIT 1"
    ))
    .bind(shard_to_db(queue.shard))
    .bind(queue.topic.as_str())
    .bind(queue.queue_id.0)
    .bind(ts_ms)
    .fetch_optional(pool)
    .await
    .map_err(db_err("find queue segment by time"))?;
    row.map(queue_segment_from_row).transpose()
}

pub(super) async fn segment_by_commit_log_offset(
    pool: &PgPool,
    shard: ShardId,
    offset: CommitLogOffset,
) -> Result<Option<SegmentRef>> {
    let row: Option<SegmentRow> = sqlx::query_as(
        "SELECT object_key, shard_id, section_pos, section_len, footer_pos, footer_len, \
                commit_log_start, commit_log_end \
         FROM segments WHERE shard_id = $1 AND commit_log_end > $2 \
         ORDER BY commit_log_end LIMIT 1",
    )
    .bind(shard_to_db(shard))
    .bind(offset.0)
    .fetch_optional(pool)
    .await
    .map_err(db_err("find segment by commit-log offset"))?;
    segment_containing(row, offset)
}

pub(super) async fn queue_range(pool: &PgPool, queue: &QueueKey) -> Result<QueueRange> {
    let row: Option<(i64, i64)> = sqlx::query_as(
        "SELECT min_offset, max_offset FROM queues \
         WHERE shard_id = $1 AND topic = $2 AND queue_id = $3",
    )
    .bind(shard_to_db(queue.shard))
    .bind(queue.topic.as_str())
    .bind(queue.queue_id.0)
    .fetch_optional(pool)
    .await
    .map_err(db_err("read queue range"))?;
    let (min, max) = row.unwrap_or((0, 0));
    Ok(QueueRange {
        queue: queue.clone(),
        min_offset: QueueOffset(min),
        max_offset: QueueOffset(max),
    })
}

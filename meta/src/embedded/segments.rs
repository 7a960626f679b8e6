//! Segment commits and the lookups the read path makes over them.
//!
//! A commit is one `BEGIN IMMEDIATE` transaction. Each section is applied with conditional
//! statements whose `WHERE` clauses carry the invariants (epoch, owner, commit-log end,
//! queue max offsets), so the happy path never reads before writing; when a condition does
//! not hold, the transaction reads what is stored to name the failure, then rolls back.
//! A section's effects (`half.rs`) run last in the same transaction, so they commit exactly
//! when the section does.

use std::collections::{HashMap, HashSet};

use sqlx::sqlite::{Sqlite, SqliteConnection, SqlitePool};
use sqlx::{QueryBuilder, Transaction};
use stratus_compat::types::{CommitLogOffset, QueueOffset};

use super::convert::{
    db_err, limit_to_db, shard_from_db, shard_to_db, u32_from_db, u64_from_db, u64_to_db,
};
use crate::error::{MetaError, Result};
use crate::model::{
    QueueAppend, QueueKey, QueueRange, QueueSegment, SegmentCommit, SegmentRef, ShardId,
};

/// Queues per multi-row statement (7 binds each for `queue_segments`), far below SQLite's
/// and PostgreSQL's bind-parameter limits.
const QUEUE_CHUNK: usize = 500;

/// A section checked and converted to column values before the transaction starts (shared
/// with the PostgreSQL backend).
pub(crate) struct Section<'a> {
    pub(crate) commit: &'a SegmentCommit,
    pub(crate) shard: i64,
    pub(crate) section_pos: i64,
    pub(crate) section_len: i64,
    pub(crate) footer_pos: i64,
    pub(crate) footer_len: i64,
    pub(crate) queues: Vec<Append<'a>>,
}

/// One queue append with its new max offset.
pub(crate) struct Append<'a> {
    pub(crate) topic: &'a str,
    pub(crate) queue_id: i32,
    pub(crate) first: i64,
    pub(crate) count: i64,
    pub(crate) end: i64,
    pub(crate) append: &'a QueueAppend,
}

pub(crate) fn invalid(commit: &SegmentCommit, why: String) -> MetaError {
    MetaError::Conflict(format!(
        "segment {} shard {}: {why}",
        commit.object_key, commit.shard
    ))
}

impl<'a> Section<'a> {
    /// Checks what can be checked without the database: positions fit in BIGINT, the
    /// commit-log range is not reversed, each queue appears once with at least one entry.
    pub(crate) fn prepare(commit: &'a SegmentCommit) -> Result<Self> {
        if commit.commit_log_end < commit.commit_log_start {
            return Err(invalid(
                commit,
                format!(
                    "commit-log end {} before start {}",
                    commit.commit_log_end, commit.commit_log_start
                ),
            ));
        }
        if let Some(e) = commit.effects.iter().find(|e| e.shard() != commit.shard) {
            return Err(invalid(
                commit,
                format!("effect on shard {} in this section: {e:?}", e.shard()),
            ));
        }
        let mut seen = HashSet::with_capacity(commit.queues.len());
        let mut queues = Vec::with_capacity(commit.queues.len());
        for q in &commit.queues {
            if !seen.insert((q.topic.as_str(), q.queue_id)) {
                return Err(invalid(
                    commit,
                    format!("queue {}/{} twice", q.topic, q.queue_id),
                ));
            }
            let end = q
                .first_offset
                .0
                .checked_add(i64::from(q.count))
                .filter(|_| q.count > 0 && q.first_offset.0 >= 0)
                .ok_or_else(|| {
                    invalid(
                        commit,
                        format!(
                            "queue {}/{}: bad range {} + {}",
                            q.topic, q.queue_id, q.first_offset, q.count
                        ),
                    )
                })?;
            queues.push(Append {
                topic: q.topic.as_str(),
                queue_id: q.queue_id.0,
                first: q.first_offset.0,
                count: i64::from(q.count),
                end,
                append: q,
            });
        }
        Ok(Self {
            commit,
            shard: shard_to_db(commit.shard),
            section_pos: u64_to_db("section position", commit.section_pos)?,
            section_len: u64_to_db("section length", commit.section_len)?,
            footer_pos: u64_to_db("footer position", commit.footer_pos)?,
            footer_len: u64_to_db("footer length", commit.footer_len)?,
            queues,
        })
    }
}

pub(super) async fn commit_segment(pool: &SqlitePool, sections: &[SegmentCommit]) -> Result<()> {
    if sections.is_empty() {
        return Ok(());
    }
    let prepared = sections
        .iter()
        .map(Section::prepare)
        .collect::<Result<Vec<_>>>()?;
    let mut tx = pool
        .begin_with("BEGIN IMMEDIATE")
        .await
        .map_err(db_err("begin segment commit"))?;
    for section in &prepared {
        apply_section(&mut tx, section).await?;
    }
    tx.commit().await.map_err(db_err("commit segment"))?;
    Ok(())
}

/// Applies one section inside the commit transaction. On error the caller drops the
/// transaction, which rolls every section back, effects included. A retry of a committed
/// section returns before step 2, so its effects are not applied twice.
async fn apply_section(tx: &mut Transaction<'static, Sqlite>, s: &Section<'_>) -> Result<()> {
    let c = s.commit;
    // 1. Fence and advance the commit log in one conditional write.
    let advanced = sqlx::query(
        "UPDATE shards SET commit_log_end = $1 \
         WHERE shard_id = $2 AND epoch = $3 AND owner = $4 AND commit_log_end = $5",
    )
    .bind(c.commit_log_end.0)
    .bind(s.shard)
    .bind(c.epoch.0)
    .bind(c.node.0.as_str())
    .bind(c.commit_log_start.0)
    .execute(&mut **tx)
    .await
    .map_err(db_err("advance commit log"))?;
    if advanced.rows_affected() != 1 {
        return explain_shard_refusal(tx, s).await;
    }
    // 2. The section row.
    let (segment_id,): (i64,) = sqlx::query_as(
        "INSERT INTO segments (shard_id, epoch, node, object_key, section_pos, section_len, \
                               footer_pos, footer_len, commit_log_start, commit_log_end, \
                               committed_at_ms) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11) \
         RETURNING segment_id",
    )
    .bind(s.shard)
    .bind(c.epoch.0)
    .bind(c.node.0.as_str())
    .bind(c.object_key.as_str())
    .bind(s.section_pos)
    .bind(s.section_len)
    .bind(s.footer_pos)
    .bind(s.footer_len)
    .bind(c.commit_log_start.0)
    .bind(c.commit_log_end.0)
    .bind(c.committed_at_ms)
    .fetch_one(&mut **tx)
    .await
    .map_err(db_err("insert segment"))?;
    for chunk in s.queues.chunks(QUEUE_CHUNK) {
        apply_queue_chunk(tx, s, chunk, segment_id).await?;
    }
    // 6. The section's metadata effects (half messages), in order.
    super::half::apply_effects(tx, &c.effects).await
}

/// Steps 3–5 for up to [`QUEUE_CHUNK`] queues: create queues starting at 0, move every max
/// offset forward if it still equals the append's first offset, and record the ranges.
async fn apply_queue_chunk(
    tx: &mut Transaction<'static, Sqlite>,
    s: &Section<'_>,
    chunk: &[Append<'_>],
    segment_id: i64,
) -> Result<()> {
    // 3. A queue is created (bounds 0/0) by its first append, which must start at 0; an
    //    append at a later offset to an unknown queue then fails step 4's condition.
    let new: Vec<&Append<'_>> = chunk.iter().filter(|a| a.first == 0).collect();
    if !new.is_empty() {
        let mut q = QueryBuilder::<Sqlite>::new(
            "INSERT INTO queues (shard_id, topic, queue_id, min_offset, max_offset) ",
        );
        q.push_values(&new, |mut b, a| {
            b.push_bind(s.shard)
                .push_bind(a.topic)
                .push_bind(a.queue_id)
                .push_bind(0_i64)
                .push_bind(0_i64);
        });
        q.push(" ON CONFLICT (shard_id, topic, queue_id) DO NOTHING");
        q.build()
            .persistent(false)
            .execute(&mut **tx)
            .await
            .map_err(db_err("create queues"))?;
    }
    // 4. Advance max offsets where they equal the appends' first offsets.
    let mut q = QueryBuilder::<Sqlite>::new("UPDATE queues SET max_offset = v.column4 FROM (");
    q.push_values(chunk, |mut b, a| {
        b.push_bind(a.topic)
            .push_bind(a.queue_id)
            .push_bind(a.first)
            .push_bind(a.end);
    });
    q.push(
        ") AS v WHERE queues.topic = v.column1 AND queues.queue_id = v.column2 \
           AND queues.max_offset = v.column3 AND queues.shard_id = ",
    );
    q.push_bind(s.shard);
    q.push(" RETURNING queue_ref, topic, queue_id");
    let moved: Vec<(i64, String, i32)> = q
        .build_query_as()
        .persistent(false)
        .fetch_all(&mut **tx)
        .await
        .map_err(db_err("advance queue max offsets"))?;
    if moved.len() != chunk.len() {
        return Err(explain_queue_refusal(tx, s, chunk).await);
    }
    let refs: HashMap<(String, i32), i64> = moved
        .into_iter()
        .map(|(queue_ref, topic, queue_id)| ((topic, queue_id), queue_ref))
        .collect();
    let mut rows = Vec::with_capacity(chunk.len());
    for a in chunk {
        let Some(&queue_ref) = refs.get(&(a.topic.to_owned(), a.queue_id)) else {
            // As many rows moved as appends, yet not this one: the unique key is broken.
            return Err(MetaError::Corrupt(format!(
                "queue {}/{}/{} missing after its update",
                s.commit.shard, a.topic, a.queue_id
            )));
        };
        rows.push((queue_ref, a));
    }
    // 5. One range row per queue.
    let mut q = QueryBuilder::<Sqlite>::new(
        "INSERT INTO queue_segments (queue_ref, end_offset, first_offset, entry_count, \
                                     segment_id, min_store_ts, max_store_ts) ",
    );
    q.push_values(rows, |mut b, (queue_ref, a)| {
        b.push_bind(queue_ref)
            .push_bind(a.end)
            .push_bind(a.first)
            .push_bind(a.count)
            .push_bind(segment_id)
            .push_bind(a.append.min_store_ts)
            .push_bind(a.append.max_store_ts);
    });
    q.build()
        .persistent(false)
        .execute(&mut **tx)
        .await
        .map_err(db_err("insert queue ranges"))?;
    Ok(())
}

/// The shard refused the commit-log advance: say why. A section identical to one already
/// committed (a retry after an ambiguous failure) is accepted and applies nothing.
async fn explain_shard_refusal(tx: &mut SqliteConnection, s: &Section<'_>) -> Result<()> {
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

/// Some queue's max offset was not the append's first offset: find the first one.
async fn explain_queue_refusal(
    tx: &mut SqliteConnection,
    s: &Section<'_>,
    chunk: &[Append<'_>],
) -> MetaError {
    for a in chunk {
        let stored: std::result::Result<Option<(i64,)>, _> = sqlx::query_as(
            "SELECT max_offset FROM queues WHERE shard_id = $1 AND topic = $2 AND queue_id = $3",
        )
        .bind(s.shard)
        .bind(a.topic)
        .bind(a.queue_id)
        .fetch_optional(&mut *tx)
        .await;
        match stored {
            Err(e) => return super::convert::map_sqlx("read queue max offset", e),
            Ok(row) => {
                let max = row.map_or(0, |(m,)| m);
                if max != a.first {
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

pub(crate) type QueueSegmentRow = (
    String,
    i64,
    i64,
    i64,
    i64,
    i64,
    i64,
    i64,
    i64,
    i64,
    i64,
    i64,
);

/// The `SELECT` over one queue's ranges joined with their sections; `$1..$3` name the
/// queue, `$tail` adds the rest of the `WHERE` clause and the ordering.
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

pub(crate) use queue_segment_query;

pub(crate) fn queue_segment_from_row(row: QueueSegmentRow) -> Result<QueueSegment> {
    let (key, shard, spos, slen, fpos, flen, cl_start, cl_end, first, count, min_ts, max_ts) = row;
    Ok(QueueSegment {
        segment: SegmentRef {
            object_key: key,
            shard: shard_from_db(shard)?,
            section_pos: u64_from_db("section position", spos)?,
            section_len: u64_from_db("section length", slen)?,
            footer_pos: u64_from_db("footer position", fpos)?,
            footer_len: u64_from_db("footer length", flen)?,
            commit_log_start: CommitLogOffset(cl_start),
            commit_log_end: CommitLogOffset(cl_end),
        },
        first_offset: QueueOffset(first),
        count: u32_from_db("entry count", count)?,
        min_store_ts: min_ts,
        max_store_ts: max_ts,
    })
}

/// Ranges are contiguous, so "ends after `from`" in `end_offset` order starts with the range
/// holding `from` (when retained) and walks the primary key.
pub(super) async fn queue_segments(
    pool: &SqlitePool,
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

/// Walks the queue's ranges in offset order to the first whose max store time reaches
/// `ts_ms` (store times need not be monotonic across owners, so no index on them).
pub(super) async fn queue_segment_by_time(
    pool: &SqlitePool,
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

pub(crate) type SegmentRow = (String, i64, i64, i64, i64, i64, i64, i64);

/// The first section ending after `offset` (one index probe); it holds `offset` unless
/// `offset` is before the shard's first retained section.
pub(super) async fn segment_by_commit_log_offset(
    pool: &SqlitePool,
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

/// The section of `row` if it holds `offset` (shared with the PostgreSQL backend).
pub(crate) fn segment_containing(
    row: Option<SegmentRow>,
    offset: CommitLogOffset,
) -> Result<Option<SegmentRef>> {
    let Some((key, shard, spos, slen, fpos, flen, start, end)) = row else {
        return Ok(None);
    };
    if start > offset.0 {
        return Ok(None);
    }
    Ok(Some(SegmentRef {
        object_key: key,
        shard: shard_from_db(shard)?,
        section_pos: u64_from_db("section position", spos)?,
        section_len: u64_from_db("section length", slen)?,
        footer_pos: u64_from_db("footer position", fpos)?,
        footer_len: u64_from_db("footer length", flen)?,
        commit_log_start: CommitLogOffset(start),
        commit_log_end: CommitLogOffset(end),
    }))
}

pub(super) async fn queue_range(pool: &SqlitePool, queue: &QueueKey) -> Result<QueueRange> {
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

//! Retention passes and orphan-object lookups.
//!
//! A pass is one write transaction of set-based statements, written in the SQL both
//! databases share: the shard read that fences the pass (and, where the database locks rows,
//! keeps commits and takeovers of the shard out until it ends), the age `DELETE` over the
//! shard's queue rows, the size `DELETE` (a running sum over the shard's sections, newest
//! first), the `DELETE` of sections left without queue rows (which also removes the sections
//! the size step emptied), one `UPDATE` moving min offsets, and a read of which deleted
//! sections' object keys are still referenced.

use std::collections::{BTreeSet, HashSet};

use sqlx::Pool;
use stratus_compat::types::{QueueId, QueueOffset, Topic};

use super::convert::shard_to_db;
use super::dialect::Dialect;
use super::driver::{Bind, Columns};
use super::leases::shard_not_found;
use crate::error::{MetaError, Result};
use crate::model::{Epoch, NodeId, QueueKey, RetentionOutcome, RetentionPolicy, ShardId};

/// Sections of shard `$1` that hold a pending timer or half message: retention keeps them
/// whatever their age or the size limit, because that record is still to be delivered or
/// resolved (handles are `shard << 48 | local`; sections store local offsets).
macro_rules! pinned_sections {
    () => {
        "SELECT s.segment_id FROM segments s WHERE s.shard_id = $1 AND ( \
             EXISTS (SELECT 1 FROM timers t WHERE t.shard_id = s.shard_id \
                 AND t.handle - s.shard_id * 281474976710656 >= s.commit_log_start \
                 AND t.handle - s.shard_id * 281474976710656 < s.commit_log_end) \
          OR EXISTS (SELECT 1 FROM half_messages h WHERE h.shard_id = s.shard_id \
                 AND h.handle - s.shard_id * 281474976710656 >= s.commit_log_start \
                 AND h.handle - s.shard_id * 281474976710656 < s.commit_log_end))"
    };
}

/// Step 1: a queue row is expired when its max store time is before its topic's cutoff.
/// `$1` shard, `$2` the default cutoff, `$3` now. `retention_hours` is clamped to
/// [0, 10⁹] hours so the arithmetic cannot overflow.
const DELETE_EXPIRED_ROWS: &str = concat!(
    "DELETE FROM queue_segments \
    WHERE queue_ref IN (SELECT queue_ref FROM queues WHERE shard_id = $1) \
      AND segment_id NOT IN (",
    pinned_sections!(),
    ") \
      AND max_store_ts < ( \
          SELECT CASE WHEN t.retention_hours IS NULL THEN $2 \
                      WHEN t.retention_hours < 0 THEN $3 \
                      WHEN t.retention_hours > 1000000000 THEN $3 - 3600000000000000 \
                      ELSE $3 - t.retention_hours * 3600000 END \
          FROM queues q LEFT JOIN topics t ON t.topic = q.topic \
          WHERE q.queue_ref = queue_segments.queue_ref)"
);

/// Step 2: the queue rows of the shard's oldest sections beyond the size limit: a section
/// goes when the bytes of it and every newer section exceed `$2`. Step 3 then deletes the
/// emptied sections.
const DELETE_OVERSIZE_ROWS: &str = concat!(
    "DELETE FROM queue_segments WHERE segment_id IN ( \
        SELECT segment_id FROM ( \
            SELECT segment_id, SUM(section_len) OVER ( \
                       ORDER BY commit_log_start DESC, segment_id DESC \
                       ROWS BETWEEN UNBOUNDED PRECEDING AND CURRENT ROW) AS kept \
            FROM segments WHERE shard_id = $1) AS w \
        WHERE w.kept > $2) \
      AND segment_id NOT IN (",
    pinned_sections!(),
    ")"
);

/// Step 3: sections of the shard without queue rows.
const DELETE_EMPTY_SECTIONS: &str = "\
    DELETE FROM segments WHERE shard_id = $1 AND NOT EXISTS ( \
        SELECT 1 FROM queue_segments qs WHERE qs.segment_id = segments.segment_id) \
    RETURNING object_key";

/// Step 4: min offset to the first remaining row (or the max offset), forward only. Only
/// queues retention touched can move: elsewhere the first row already starts at the min.
const ADVANCE_MIN_OFFSETS: &str = "\
    UPDATE queues SET min_offset = COALESCE(( \
        SELECT qs.first_offset FROM queue_segments qs \
        WHERE qs.queue_ref = queues.queue_ref ORDER BY qs.end_offset LIMIT 1), max_offset) \
    WHERE shard_id = $1 AND COALESCE(( \
        SELECT qs.first_offset FROM queue_segments qs \
        WHERE qs.queue_ref = queues.queue_ref ORDER BY qs.end_offset LIMIT 1), max_offset) \
        > min_offset \
    RETURNING topic, queue_id, min_offset";

/// The default cutoff: entries whose max store time is before it are expired.
fn default_cutoff(now_ms: i64, policy: &RetentionPolicy) -> i64 {
    now_ms.saturating_sub(policy.default_retention_ms.max(0))
}

/// The size limit as a BIGINT (a limit beyond i64 is no limit in practice).
fn size_limit(policy: &RetentionPolicy) -> Option<i64> {
    policy
        .max_shard_bytes
        .map(|b| i64::try_from(b).unwrap_or(i64::MAX))
}

/// Builds the outcome's queue list (ordered by queue) from `UPDATE … RETURNING` rows.
fn moved_queues(shard: ShardId, rows: Vec<(String, i32, i64)>) -> Vec<(QueueKey, QueueOffset)> {
    let mut queues: Vec<(QueueKey, QueueOffset)> = rows
        .into_iter()
        .map(|(topic, queue_id, min)| {
            (
                QueueKey {
                    shard,
                    topic: Topic::new(topic),
                    queue_id: QueueId(queue_id),
                },
                QueueOffset(min),
            )
        })
        .collect();
    queues.sort();
    queues
}

pub(crate) async fn apply_retention<D: Dialect>(
    pool: &Pool<D>,
    shard: ShardId,
    node: &NodeId,
    epoch: Epoch,
    now_ms: i64,
    policy: &RetentionPolicy,
) -> Result<RetentionOutcome> {
    let id = shard_to_db(shard);
    let mut tx = pool
        .begin_with(D::BEGIN_WRITE)
        .await
        .map_err(D::db_err("begin retention"))?;
    let row = sqlx::query(D::LOCK_SHARD)
        .arg(id)
        .try_map(|r: D::Row| Ok((r.int(0)?, r.opt_text(1)?)))
        .fetch_optional(D::on_conn(&mut tx))
        .await
        .map_err(D::db_err("lock shard"))?;
    check_fence(shard, node, epoch, row)?;

    sqlx::query(DELETE_EXPIRED_ROWS)
        .arg(id)
        .arg(default_cutoff(now_ms, policy))
        .arg(now_ms)
        .execute(D::on_conn(&mut tx))
        .await
        .map_err(D::db_err("delete expired queue ranges"))?;
    if let Some(limit) = size_limit(policy) {
        sqlx::query(DELETE_OVERSIZE_ROWS)
            .arg(id)
            .arg(limit)
            .execute(D::on_conn(&mut tx))
            .await
            .map_err(D::db_err("delete queue ranges over the size limit"))?;
    }
    let deleted = sqlx::query(DELETE_EMPTY_SECTIONS)
        .arg(id)
        .try_map(|r: D::Row| r.text(0))
        .fetch_all(D::on_conn(&mut tx))
        .await
        .map_err(D::db_err("delete emptied sections"))?;
    for statement in super::keys::DELETE_RETIRED_KEYS {
        sqlx::query(statement)
            .arg(id)
            .execute(D::on_conn(&mut tx))
            .await
            .map_err(D::db_err("delete retired message keys"))?;
    }
    let moved = sqlx::query(ADVANCE_MIN_OFFSETS)
        .arg(id)
        .try_map(|r: D::Row| Ok((r.text(0)?, r.int4(1)?, r.int(2)?)))
        .fetch_all(D::on_conn(&mut tx))
        .await
        .map_err(D::db_err("advance min offsets"))?;

    let sections_deleted = deleted.len() as u64;
    let keys: Vec<String> = deleted
        .into_iter()
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    let referenced = if keys.is_empty() {
        HashSet::new()
    } else {
        D::referenced_keys(&mut tx, &keys).await?
    };
    tx.commit().await.map_err(D::db_err("commit retention"))?;
    Ok(RetentionOutcome {
        sections_deleted,
        queues: moved_queues(shard, moved),
        released_objects: keys
            .into_iter()
            .filter(|k| !referenced.contains(k))
            .collect(),
    })
}

/// [`MetaError::NotFound`] for a missing shard row, [`MetaError::Fenced`] unless `node`
/// holds `epoch`.
fn check_fence(
    shard: ShardId,
    node: &NodeId,
    epoch: Epoch,
    row: Option<(i64, Option<String>)>,
) -> Result<()> {
    let Some((stored, owner)) = row else {
        return Err(shard_not_found(shard));
    };
    if stored != epoch.0 || owner.as_deref() != Some(node.0.as_str()) {
        return Err(MetaError::Fenced {
            shard,
            ours: epoch,
            stored: Epoch(stored),
        });
    }
    Ok(())
}

/// The subset of `keys` that no segments row references, in input order.
pub(crate) async fn unreferenced_objects<D: Dialect>(
    pool: &Pool<D>,
    keys: &[String],
) -> Result<Vec<String>> {
    if keys.is_empty() {
        return Ok(Vec::new());
    }
    let unique: Vec<String> = keys
        .iter()
        .cloned()
        .collect::<BTreeSet<_>>()
        .into_iter()
        .collect();
    let mut conn = pool
        .acquire()
        .await
        .map_err(D::db_err("find referenced objects"))?;
    let referenced = D::referenced_keys(&mut conn, &unique).await?;
    Ok(keys
        .iter()
        .filter(|k| !referenced.contains(*k))
        .cloned()
        .collect())
}

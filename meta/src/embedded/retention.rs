//! Retention passes and orphan-object lookups.
//!
//! A pass is one `BEGIN IMMEDIATE` transaction of set-based statements: the fence read, the
//! age `DELETE` over the shard's queue rows, the size `DELETE` (a running sum over the
//! shard's sections, newest first), the `DELETE` of sections left without queue rows (which
//! also removes the sections the size step emptied), one `UPDATE` moving min offsets, and a
//! read of which deleted sections' object keys are still referenced.

use std::collections::{BTreeSet, HashSet};

use sqlx::sqlite::{Sqlite, SqlitePool};
use sqlx::{QueryBuilder, Transaction};
use stratus_compat::types::{QueueId, QueueOffset, Topic};

use super::convert::{db_err, shard_to_db};
use crate::error::{MetaError, Result};
use crate::model::{Epoch, NodeId, QueueKey, RetentionOutcome, RetentionPolicy, ShardId};

/// Keys per `IN (…)` list.
const KEY_CHUNK: usize = 500;

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
pub(crate) const DELETE_EXPIRED_ROWS: &str = concat!(
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
pub(crate) const DELETE_OVERSIZE_ROWS: &str = concat!(
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
pub(crate) const DELETE_EMPTY_SECTIONS: &str = "\
    DELETE FROM segments WHERE shard_id = $1 AND NOT EXISTS ( \
        SELECT 1 FROM queue_segments qs WHERE qs.segment_id = segments.segment_id) \
    RETURNING object_key";

/// Step 4: min offset to the first remaining row (or the max offset), forward only. Only
/// queues retention touched can move: elsewhere the first row already starts at the min.
pub(crate) const ADVANCE_MIN_OFFSETS: &str = "\
    UPDATE queues SET min_offset = COALESCE(( \
        SELECT qs.first_offset FROM queue_segments qs \
        WHERE qs.queue_ref = queues.queue_ref ORDER BY qs.end_offset LIMIT 1), max_offset) \
    WHERE shard_id = $1 AND COALESCE(( \
        SELECT qs.first_offset FROM queue_segments qs \
        WHERE qs.queue_ref = queues.queue_ref ORDER BY qs.end_offset LIMIT 1), max_offset) \
        > min_offset \
    RETURNING topic, queue_id, min_offset";

/// The default cutoff: entries whose max store time is before it are expired.
pub(crate) fn default_cutoff(now_ms: i64, policy: &RetentionPolicy) -> i64 {
    now_ms.saturating_sub(policy.default_retention_ms.max(0))
}

/// The size limit as a BIGINT (a limit beyond i64 is no limit in practice).
pub(crate) fn size_limit(policy: &RetentionPolicy) -> Option<i64> {
    policy
        .max_shard_bytes
        .map(|b| i64::try_from(b).unwrap_or(i64::MAX))
}

/// Builds the outcome's queue list (ordered by queue) from `UPDATE … RETURNING` rows.
pub(crate) fn moved_queues(
    shard: ShardId,
    rows: Vec<(String, i32, i64)>,
) -> Vec<(QueueKey, QueueOffset)> {
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

pub(super) async fn apply_retention(
    pool: &SqlitePool,
    shard: ShardId,
    node: &NodeId,
    epoch: Epoch,
    now_ms: i64,
    policy: &RetentionPolicy,
) -> Result<RetentionOutcome> {
    let id = shard_to_db(shard);
    let mut tx = pool
        .begin_with("BEGIN IMMEDIATE")
        .await
        .map_err(db_err("begin retention"))?;
    let row: Option<(i64, Option<String>)> =
        sqlx::query_as("SELECT epoch, owner FROM shards WHERE shard_id = $1")
            .bind(id)
            .fetch_optional(&mut *tx)
            .await
            .map_err(db_err("read shard"))?;
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
    let referenced = referenced_keys(&mut tx, &keys).await?;
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

/// [`MetaError::NotFound`] for a missing shard row, [`MetaError::Fenced`] unless `node`
/// holds `epoch`.
pub(crate) fn check_fence(
    shard: ShardId,
    node: &NodeId,
    epoch: Epoch,
    row: Option<(i64, Option<String>)>,
) -> Result<()> {
    let Some((stored, owner)) = row else {
        return Err(MetaError::NotFound {
            what: format!("shard {shard}"),
        });
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

/// Which of `keys` some segments row still references.
async fn referenced_keys(
    tx: &mut Transaction<'static, Sqlite>,
    keys: &[String],
) -> Result<HashSet<String>> {
    let mut found = HashSet::new();
    for chunk in keys.chunks(KEY_CHUNK) {
        let mut q = QueryBuilder::<Sqlite>::new(
            "SELECT DISTINCT object_key FROM segments WHERE object_key IN (",
        );
        let mut list = q.separated(", ");
        for k in chunk {
            list.push_bind(k.as_str());
        }
        q.push(")");
        let rows: Vec<(String,)> = q
            .build_query_as()
            .persistent(false)
            .fetch_all(&mut **tx)
            .await
            .map_err(db_err("find referenced objects"))?;
        found.extend(rows.into_iter().map(|(k,)| k));
    }
    Ok(found)
}

pub(super) async fn unreferenced_objects(
    pool: &SqlitePool,
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
    let mut tx = pool
        .begin()
        .await
        .map_err(db_err("find referenced objects"))?;
    let referenced = referenced_keys(&mut tx, &unique).await?;
    tx.commit()
        .await
        .map_err(db_err("find referenced objects"))?;
    Ok(keys
        .iter()
        .filter(|k| !referenced.contains(*k))
        .cloned()
        .collect())
}

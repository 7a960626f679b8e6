//! The key index of QUERY_MESSAGE: rows inserted by segment commits
//! ([`SegmentEffect::KeysIndexed`](crate::model::SegmentEffect::KeysIndexed), through the
//! dialect's bulk insert), looked up by hash, and cut below a shard's first retained section
//! by retention.

use sqlx::Pool;
use stratus_compat::types::CommitLogOffset;

use super::convert::{limit_to_db, shard_to_db};
use super::dialect::Dialect;
use super::driver::{Bind, Columns};
use crate::error::Result;
use crate::model::{KeyHit, ShardId};

/// Hits of one hash in a store-time window, newest first (one probe of
/// `message_keys_by_hash`).
pub(crate) async fn find_keys<D: Dialect>(
    pool: &Pool<D>,
    shard: ShardId,
    key_hash: i64,
    begin_ms: i64,
    end_ms: i64,
    limit: u32,
) -> Result<Vec<KeyHit>> {
    if limit == 0 || begin_ms > end_ms {
        return Ok(Vec::new());
    }
    sqlx::query(
        "SELECT log_offset, store_ts FROM message_keys \
         WHERE shard_id = $1 AND key_hash = $2 AND store_ts >= $3 AND store_ts <= $4 \
         ORDER BY store_ts DESC, log_offset DESC LIMIT $5",
    )
    .arg(shard_to_db(shard))
    .arg(key_hash)
    .arg(begin_ms)
    .arg(end_ms)
    .arg(limit_to_db(limit))
    .try_map(|r: D::Row| {
        Ok(KeyHit {
            log_offset: CommitLogOffset(r.int(0)?),
            store_ts: r.int(1)?,
        })
    })
    .fetch_all(D::on_pool(pool))
    .await
    .map_err(D::db_err("find message keys"))
}

/// Hits of one unique key (its id's time field and hash) in a store-time window, newest
/// first (one probe of `unique_keys`' primary key).
pub(crate) async fn find_unique_keys<D: Dialect>(
    pool: &Pool<D>,
    shard: ShardId,
    id_time: i64,
    key_hash: i64,
    begin_ms: i64,
    end_ms: i64,
    limit: u32,
) -> Result<Vec<KeyHit>> {
    if limit == 0 || begin_ms > end_ms {
        return Ok(Vec::new());
    }
    sqlx::query(
        "SELECT log_offset, store_ts FROM unique_keys \
         WHERE shard_id = $1 AND id_time = $2 AND key_hash = $3 \
           AND store_ts >= $4 AND store_ts <= $5 \
         ORDER BY store_ts DESC, log_offset DESC LIMIT $6",
    )
    .arg(shard_to_db(shard))
    .arg(id_time)
    .arg(key_hash)
    .arg(begin_ms)
    .arg(end_ms)
    .arg(limit_to_db(limit))
    .try_map(|r: D::Row| {
        Ok(KeyHit {
            log_offset: CommitLogOffset(r.int(0)?),
            store_ts: r.int(1)?,
        })
    })
    .fetch_all(D::on_pool(pool))
    .await
    .map_err(D::db_err("find unique keys"))
}

/// Below a shard's first remaining section, or everything when none remains (`$1` shard).
macro_rules! retired_below {
    () => {
        "shard_id = $1 AND log_offset < COALESCE( \
            (SELECT MIN(commit_log_start) FROM segments WHERE shard_id = $1), \
            (SELECT commit_log_end FROM shards WHERE shard_id = $1))"
    };
}

/// Inside a retention pass (after its section deletes): the shard's key rows below its first
/// remaining section, in both tables. `$1` shard.
pub(crate) const DELETE_RETIRED_KEYS: [&str; 2] = [
    concat!("DELETE FROM message_keys WHERE ", retired_below!()),
    concat!("DELETE FROM unique_keys WHERE ", retired_below!()),
];

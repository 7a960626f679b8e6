//! SQLite's side of the shared statements: its result codes, `BEGIN IMMEDIATE`, a recursive
//! CTE to create shards, and bulk writes as multi-row statements of at most [`CHUNK`] rows.

use std::collections::{HashMap, HashSet};

use sqlx::error::DatabaseError;
use sqlx::sqlite::{SqliteConnection, SqlitePool, SqliteQueryResult};
use sqlx::{QueryBuilder, Sqlite};

use crate::error::{MetaError, Result};
use crate::model::{ConsumerOffset, KeyIndexEntry, ShardId};
use crate::sql::convert::shard_to_db;
use crate::sql::section::{Append, Section};
use crate::sql::{Applied, Dialect, ErrorClass, RowsAffected};

/// Rows per multi-row statement (at most 7 binds each), far below SQLite's bind-parameter
/// limit.
const CHUNK: usize = 500;

/// SQLite primary result codes (the low byte of an extended code) that mean "the database
/// cannot serve this right now": BUSY, LOCKED, NOMEM, READONLY, INTERRUPT, IOERR, FULL,
/// CANTOPEN, PROTOCOL.
const TRANSIENT_CODES: [i64; 9] = [5, 6, 7, 8, 9, 10, 13, 14, 15];

impl RowsAffected for SqliteQueryResult {
    fn rows_affected(&self) -> u64 {
        SqliteQueryResult::rows_affected(self)
    }
}

impl Dialect for Sqlite {
    const BEGIN_WRITE: &'static str = "BEGIN IMMEDIATE";

    const ENSURE_SHARDS: &'static str = "\
        WITH RECURSIVE ids (n) AS ( \
            SELECT 0 WHERE 0 < $1 \
            UNION ALL SELECT n + 1 FROM ids WHERE n + 1 < $1) \
        INSERT INTO shards (shard_id, epoch, owner, expires_at_ms, commit_log_end) \
        SELECT n, 0, NULL, 0, 0 FROM ids WHERE true \
        ON CONFLICT (shard_id) DO NOTHING";

    /// SQLite has no row locks: `BEGIN IMMEDIATE` already holds the database's write lock.
    const LOCK_SHARD: &'static str = "SELECT epoch, owner FROM shards WHERE shard_id = $1";

    fn classify(db: &dyn DatabaseError) -> ErrorClass {
        let primary = db
            .code()
            .and_then(|c| c.parse::<i64>().ok())
            .map(|c| c & 0xff);
        match primary {
            Some(c) if TRANSIENT_CODES.contains(&c) => ErrorClass::Unavailable,
            // CORRUPT, NOTADB, and SQL errors (no such table, other constraint failures): the
            // database is damaged or not in the shape this binary expects.
            _ => ErrorClass::Corrupt,
        }
    }

    /// Per section: the fence-and-advance `UPDATE shards`, the `INSERT segments`, then per
    /// [`CHUNK`] queues one `INSERT queues` (only for appends at offset 0), one `UPDATE queues
    /// … FROM (VALUES …)` and one `INSERT queue_segments`.
    async fn apply_section(conn: &mut SqliteConnection, s: &Section<'_>) -> Result<Applied> {
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
        .execute(&mut *conn)
        .await
        .map_err(Self::db_err("advance commit log"))?;
        if advanced.rows_affected() != 1 {
            return Ok(Applied::ShardRefused);
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
        .fetch_one(&mut *conn)
        .await
        .map_err(Self::db_err("insert segment"))?;
        for (i, chunk) in s.queues.chunks(CHUNK).enumerate() {
            if !apply_queue_chunk(conn, s, chunk, segment_id).await? {
                let start = i * CHUNK;
                return Ok(Applied::QueuesRefused(start..start + chunk.len()));
            }
        }
        Ok(Applied::Done)
    }

    /// One multi-row upsert per [`CHUNK`] offsets; several chunks share one transaction.
    async fn upsert_offsets(pool: &SqlitePool, offsets: &[&ConsumerOffset]) -> Result<()> {
        if offsets.len() <= CHUNK {
            upsert_offsets(offsets)
                .build()
                .persistent(false)
                .execute(pool)
                .await
                .map_err(Self::db_err("commit consumer offsets"))?;
            return Ok(());
        }
        let mut tx = pool
            .begin_with(Self::BEGIN_WRITE)
            .await
            .map_err(Self::db_err("begin consumer offset commit"))?;
        for chunk in offsets.chunks(CHUNK) {
            upsert_offsets(chunk)
                .build()
                .persistent(false)
                .execute(&mut *tx)
                .await
                .map_err(Self::db_err("commit consumer offsets"))?;
        }
        tx.commit()
            .await
            .map_err(Self::db_err("commit consumer offsets"))?;
        Ok(())
    }

    /// One multi-row insert per [`CHUNK`] keys of each table.
    async fn insert_keys(
        conn: &mut SqliteConnection,
        shard: ShardId,
        keys: &[KeyIndexEntry],
    ) -> Result<()> {
        let id = shard_to_db(shard);
        let (unique, other): (Vec<&KeyIndexEntry>, Vec<&KeyIndexEntry>) =
            keys.iter().partition(|k| k.id_time.is_some());
        for chunk in other.chunks(CHUNK) {
            let mut q = QueryBuilder::<Sqlite>::new(
                "INSERT INTO message_keys (shard_id, log_offset, key_hash, store_ts) ",
            );
            q.push_values(chunk, |mut b, k| {
                b.push_bind(id)
                    .push_bind(k.log_offset.0)
                    .push_bind(k.key_hash)
                    .push_bind(k.store_ts);
            });
            q.push(" ON CONFLICT (shard_id, log_offset, key_hash) DO NOTHING");
            q.build()
                .persistent(false)
                .execute(&mut *conn)
                .await
                .map_err(Self::db_err("index message keys"))?;
        }
        for chunk in unique.chunks(CHUNK) {
            let mut q = QueryBuilder::<Sqlite>::new(
                "INSERT INTO unique_keys (shard_id, id_time, key_hash, log_offset, store_ts) ",
            );
            q.push_values(chunk, |mut b, k| {
                b.push_bind(id)
                    .push_bind(k.id_time.unwrap_or_default())
                    .push_bind(k.key_hash)
                    .push_bind(k.log_offset.0)
                    .push_bind(k.store_ts);
            });
            q.push(" ON CONFLICT (shard_id, id_time, key_hash, log_offset) DO NOTHING");
            q.build()
                .persistent(false)
                .execute(&mut *conn)
                .await
                .map_err(Self::db_err("index unique keys"))?;
        }
        Ok(())
    }

    /// One `IN (…)` list per [`CHUNK`] keys.
    async fn referenced_keys(
        conn: &mut SqliteConnection,
        keys: &[String],
    ) -> Result<HashSet<String>> {
        let mut found = HashSet::new();
        for chunk in keys.chunks(CHUNK) {
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
                .fetch_all(&mut *conn)
                .await
                .map_err(Self::db_err("find referenced objects"))?;
            found.extend(rows.into_iter().map(|(k,)| k));
        }
        Ok(found)
    }
}

/// Steps 3–5 for up to [`CHUNK`] queues: create queues starting at 0, move every max offset
/// forward if it still equals the append's first offset, and record the ranges. False when
/// some queue's max offset was not its append's first offset.
async fn apply_queue_chunk(
    conn: &mut SqliteConnection,
    s: &Section<'_>,
    chunk: &[Append<'_>],
    segment_id: i64,
) -> Result<bool> {
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
            .execute(&mut *conn)
            .await
            .map_err(Sqlite::db_err("create queues"))?;
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
        .fetch_all(&mut *conn)
        .await
        .map_err(Sqlite::db_err("advance queue max offsets"))?;
    if moved.len() != chunk.len() {
        return Ok(false);
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
        .execute(&mut *conn)
        .await
        .map_err(Sqlite::db_err("insert queue ranges"))?;
    Ok(true)
}

/// The multi-row upsert of `offsets`.
fn upsert_offsets(offsets: &[&ConsumerOffset]) -> QueryBuilder<Sqlite> {
    let mut q = QueryBuilder::new(
        "INSERT INTO consumer_offsets (group_name, shard_id, topic, queue_id, queue_offset) ",
    );
    q.push_values(offsets, |mut b, o| {
        b.push_bind(o.group.as_str())
            .push_bind(shard_to_db(o.queue.shard))
            .push_bind(o.queue.topic.as_str())
            .push_bind(o.queue.queue_id.0)
            .push_bind(o.offset.0);
    });
    q.push(
        " ON CONFLICT (group_name, shard_id, topic, queue_id) \
          DO UPDATE SET queue_offset = excluded.queue_offset",
    );
    q
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pool_timeouts_are_retryable_and_decode_errors_are_corrupt() {
        assert!(Sqlite::map_sqlx("op", sqlx::Error::PoolTimedOut).is_retryable());
        assert!(matches!(
            Sqlite::map_sqlx("op", sqlx::Error::ColumnNotFound("x".into())),
            MetaError::Corrupt(_)
        ));
    }
}

//! PostgreSQL's side of the shared statements: SQLSTATE classes, `generate_series` to create
//! shards, a row lock on the shard for retention, and bulk writes as arrays bound to a single
//! statement.
//!
//! A section is **one statement** whatever its number of queues: data-modifying CTEs fence
//! and advance the shard (a conditional `UPDATE shards`, which also row-locks the shard until
//! the transaction ends, so no other commit, retention pass or takeover of the shard
//! interleaves), insert the section row, create new queues and advance every max offset from
//! `UNNEST`ed arrays, and insert the queue ranges. The statement returns how many section and
//! range rows it wrote.

use std::collections::HashSet;

use sqlx::Postgres;
use sqlx::error::DatabaseError;
use sqlx::postgres::{PgConnection, PgPool, PgQueryResult};

use crate::error::Result;
use crate::model::{ConsumerOffset, KeyIndexEntry, ShardId};
use crate::sql::convert::shard_to_db;
use crate::sql::section::Section;
use crate::sql::{Applied, Dialect, ErrorClass, RowsAffected};

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

/// SQLSTATEs (or their two-character classes) that mean "retry later": connection
/// exceptions (08), serialization failure and deadlock (40), insufficient resources (53),
/// operator intervention such as shutdown or cancel (57), lock not available (55P03).
fn transient(code: &str) -> bool {
    matches!(code.get(..2), Some("08" | "40" | "53" | "57")) || code == "55P03"
}

/// SQLSTATEs that mean the URL or credentials are wrong: invalid authorization (28) and an
/// unknown database (3D000).
fn configuration(code: &str) -> bool {
    code.starts_with("28") || code == "3D000"
}

impl RowsAffected for PgQueryResult {
    fn rows_affected(&self) -> u64 {
        PgQueryResult::rows_affected(self)
    }
}

impl Dialect for Postgres {
    const BEGIN_WRITE: &'static str = "BEGIN";

    const ENSURE_SHARDS: &'static str = "\
        INSERT INTO shards (shard_id, epoch, owner, expires_at_ms, commit_log_end) \
        SELECT n, 0, NULL, 0, 0 FROM generate_series(0::int8, $1::int8 - 1) AS g (n) \
        ON CONFLICT (shard_id) DO NOTHING";

    const LOCK_SHARD: &'static str =
        "SELECT epoch, owner FROM shards WHERE shard_id = $1 FOR UPDATE";

    fn classify(db: &dyn DatabaseError) -> ErrorClass {
        match db.code() {
            Some(c) if transient(&c) => ErrorClass::Unavailable,
            Some(c) if configuration(&c) => ErrorClass::Config,
            // Undefined tables or columns, data exceptions, other constraint failures: the
            // database is not in the shape this binary expects.
            _ => ErrorClass::Corrupt,
        }
    }

    async fn apply_section(conn: &mut PgConnection, s: &Section<'_>) -> Result<Applied> {
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
            .fetch_one(&mut *conn)
            .await
            .map_err(Self::db_err("apply segment section"))?;
        Ok(if sections != 1 {
            Applied::ShardRefused
        } else if usize::try_from(ranges).ok() != Some(n) {
            Applied::QueuesRefused(0..n)
        } else {
            Applied::Done
        })
    }

    /// One statement per table for any number of keys: the rows travel as arrays.
    async fn insert_keys(
        conn: &mut PgConnection,
        shard: ShardId,
        keys: &[KeyIndexEntry],
    ) -> Result<()> {
        let (unique, other): (Vec<&KeyIndexEntry>, Vec<&KeyIndexEntry>) =
            keys.iter().partition(|k| k.id_time.is_some());
        if !other.is_empty() {
            sqlx::query(
                "INSERT INTO message_keys (shard_id, log_offset, key_hash, store_ts) \
                 SELECT $1, * FROM UNNEST($2::int8[], $3::int8[], $4::int8[]) \
                 ON CONFLICT (shard_id, log_offset, key_hash) DO NOTHING",
            )
            .bind(shard_to_db(shard))
            .bind(other.iter().map(|k| k.log_offset.0).collect::<Vec<_>>())
            .bind(other.iter().map(|k| k.key_hash).collect::<Vec<_>>())
            .bind(other.iter().map(|k| k.store_ts).collect::<Vec<_>>())
            .execute(&mut *conn)
            .await
            .map_err(Self::db_err("index message keys"))?;
        }
        if !unique.is_empty() {
            sqlx::query(
                "INSERT INTO unique_keys (shard_id, id_time, key_hash, log_offset, store_ts) \
                 SELECT $1, * FROM UNNEST($2::int8[], $3::int8[], $4::int8[], $5::int8[]) \
                 ON CONFLICT (shard_id, id_time, key_hash, log_offset) DO NOTHING",
            )
            .bind(shard_to_db(shard))
            .bind(
                unique
                    .iter()
                    .map(|k| k.id_time.unwrap_or_default())
                    .collect::<Vec<_>>(),
            )
            .bind(unique.iter().map(|k| k.key_hash).collect::<Vec<_>>())
            .bind(unique.iter().map(|k| k.log_offset.0).collect::<Vec<_>>())
            .bind(unique.iter().map(|k| k.store_ts).collect::<Vec<_>>())
            .execute(&mut *conn)
            .await
            .map_err(Self::db_err("index unique keys"))?;
        }
        Ok(())
    }

    /// One statement for any number of offsets: the rows travel as five arrays.
    async fn upsert_offsets(pool: &PgPool, offsets: &[&ConsumerOffset]) -> Result<()> {
        let n = offsets.len();
        let (mut groups, mut shards, mut topics, mut queue_ids, mut values) = (
            Vec::with_capacity(n),
            Vec::with_capacity(n),
            Vec::with_capacity(n),
            Vec::with_capacity(n),
            Vec::with_capacity(n),
        );
        for o in offsets {
            groups.push(o.group.as_str());
            shards.push(shard_to_db(o.queue.shard));
            topics.push(o.queue.topic.as_str());
            queue_ids.push(o.queue.queue_id.0);
            values.push(o.offset.0);
        }
        sqlx::query(
            "INSERT INTO consumer_offsets (group_name, shard_id, topic, queue_id, queue_offset) \
             SELECT * FROM UNNEST($1::text[], $2::int8[], $3::text[], $4::int4[], $5::int8[]) \
             ON CONFLICT (group_name, shard_id, topic, queue_id) \
             DO UPDATE SET queue_offset = excluded.queue_offset",
        )
        .bind(groups)
        .bind(shards)
        .bind(topics)
        .bind(queue_ids)
        .bind(values)
        .execute(pool)
        .await
        .map_err(Self::db_err("commit consumer offsets"))?;
        Ok(())
    }

    /// One statement, the keys as an array.
    async fn referenced_keys(conn: &mut PgConnection, keys: &[String]) -> Result<HashSet<String>> {
        let rows: Vec<(String,)> =
            sqlx::query_as("SELECT DISTINCT object_key FROM segments WHERE object_key = ANY($1)")
                .bind(keys)
                .fetch_all(&mut *conn)
                .await
                .map_err(Self::db_err("find referenced objects"))?;
        Ok(rows.into_iter().map(|(k,)| k).collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sqlstates_are_classified() {
        assert!(transient("40001"));
        assert!(transient("40P01"));
        assert!(transient("08006"));
        assert!(transient("57P01"));
        assert!(transient("55P03"));
        assert!(!transient("42P01"));
        assert!(!transient("2"));
        assert!(configuration("28P01"));
        assert!(configuration("3D000"));
        assert!(!configuration("23505"));
        assert!(Postgres::map_sqlx("op", sqlx::Error::PoolTimedOut).is_retryable());
    }
}

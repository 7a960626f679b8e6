//! Topics, subscription groups, consumer offsets and the name-server KV config: plain keyed
//! records, each write a single upsert.

use std::collections::HashMap;

use sqlx::QueryBuilder;
use sqlx::sqlite::{Sqlite, SqlitePool};
use stratus_compat::types::{ConsumerGroup, QueueId, QueueOffset, Topic};

use super::convert::{db_err, shard_from_db, shard_to_db};
use crate::error::Result;
use crate::model::{ConsumerOffset, QueueKey, SubscriptionGroupConfig, TopicConfig};

/// Rows per multi-row statement: 5 binds each stays far below SQLite's and PostgreSQL's
/// bind-parameter limits.
const OFFSET_CHUNK: usize = 500;

// ----- topics -----

pub(crate) type TopicRow = (String, i32, i32, i32, String, i32, bool, Option<i64>);

pub(crate) fn topic_from_row(row: TopicRow) -> TopicConfig {
    let (
        topic,
        read_queue_nums,
        write_queue_nums,
        perm,
        topic_filter_type,
        topic_sys_flag,
        order,
        retention_hours,
    ) = row;
    TopicConfig {
        topic: Topic::new(topic),
        read_queue_nums,
        write_queue_nums,
        perm,
        topic_filter_type,
        topic_sys_flag,
        order,
        retention_hours,
    }
}

pub(super) async fn get_topic(pool: &SqlitePool, topic: &Topic) -> Result<Option<TopicConfig>> {
    let row: Option<TopicRow> = sqlx::query_as(
        "SELECT topic, read_queue_nums, write_queue_nums, perm, topic_filter_type, \
                topic_sys_flag, order_flag, retention_hours \
         FROM topics WHERE topic = $1",
    )
    .bind(topic.as_str())
    .fetch_optional(pool)
    .await
    .map_err(db_err("get topic"))?;
    Ok(row.map(topic_from_row))
}

pub(super) async fn list_topics(pool: &SqlitePool) -> Result<Vec<TopicConfig>> {
    let rows: Vec<TopicRow> = sqlx::query_as(
        "SELECT topic, read_queue_nums, write_queue_nums, perm, topic_filter_type, \
                topic_sys_flag, order_flag, retention_hours \
         FROM topics ORDER BY topic",
    )
    .fetch_all(pool)
    .await
    .map_err(db_err("list topics"))?;
    Ok(rows.into_iter().map(topic_from_row).collect())
}

pub(super) async fn put_topic(pool: &SqlitePool, c: &TopicConfig) -> Result<()> {
    sqlx::query(
        "INSERT INTO topics (topic, read_queue_nums, write_queue_nums, perm, topic_filter_type, \
                             topic_sys_flag, order_flag, retention_hours) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8) \
         ON CONFLICT (topic) DO UPDATE SET \
             read_queue_nums = excluded.read_queue_nums, \
             write_queue_nums = excluded.write_queue_nums, \
             perm = excluded.perm, \
             topic_filter_type = excluded.topic_filter_type, \
             topic_sys_flag = excluded.topic_sys_flag, \
             order_flag = excluded.order_flag, \
             retention_hours = excluded.retention_hours",
    )
    .bind(c.topic.as_str())
    .bind(c.read_queue_nums)
    .bind(c.write_queue_nums)
    .bind(c.perm)
    .bind(c.topic_filter_type.as_str())
    .bind(c.topic_sys_flag)
    .bind(c.order)
    .bind(c.retention_hours)
    .execute(pool)
    .await
    .map_err(db_err("put topic"))?;
    Ok(())
}

/// One statement: the no-op `DO UPDATE` makes `RETURNING` yield the stored row whether it
/// was inserted now or existed before.
pub(super) async fn create_topic_if_absent(
    pool: &SqlitePool,
    c: &TopicConfig,
) -> Result<TopicConfig> {
    let row: TopicRow = sqlx::query_as(
        "INSERT INTO topics (topic, read_queue_nums, write_queue_nums, perm, topic_filter_type, \
                             topic_sys_flag, order_flag, retention_hours) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8) \
         ON CONFLICT (topic) DO UPDATE SET topic = excluded.topic \
         RETURNING topic, read_queue_nums, write_queue_nums, perm, topic_filter_type, \
                   topic_sys_flag, order_flag, retention_hours",
    )
    .bind(c.topic.as_str())
    .bind(c.read_queue_nums)
    .bind(c.write_queue_nums)
    .bind(c.perm)
    .bind(c.topic_filter_type.as_str())
    .bind(c.topic_sys_flag)
    .bind(c.order)
    .bind(c.retention_hours)
    .fetch_one(pool)
    .await
    .map_err(db_err("create topic"))?;
    Ok(topic_from_row(row))
}

pub(super) async fn delete_topic(pool: &SqlitePool, topic: &Topic) -> Result<()> {
    sqlx::query("DELETE FROM topics WHERE topic = $1")
        .bind(topic.as_str())
        .execute(pool)
        .await
        .map_err(db_err("delete topic"))?;
    Ok(())
}

// ----- subscription groups -----

pub(crate) type GroupRow = (String, bool, bool, i32, i32);

pub(crate) fn group_from_row(row: GroupRow) -> SubscriptionGroupConfig {
    let (group, consume_enable, consume_broadcast_enable, retry_queue_nums, retry_max_times) = row;
    SubscriptionGroupConfig {
        group: ConsumerGroup::new(group),
        consume_enable,
        consume_broadcast_enable,
        retry_queue_nums,
        retry_max_times,
    }
}

pub(super) async fn get_group(
    pool: &SqlitePool,
    group: &ConsumerGroup,
) -> Result<Option<SubscriptionGroupConfig>> {
    let row: Option<GroupRow> = sqlx::query_as(
        "SELECT group_name, consume_enable, consume_broadcast_enable, retry_queue_nums, \
                retry_max_times \
         FROM subscription_groups WHERE group_name = $1",
    )
    .bind(group.as_str())
    .fetch_optional(pool)
    .await
    .map_err(db_err("get subscription group"))?;
    Ok(row.map(group_from_row))
}

pub(super) async fn list_groups(pool: &SqlitePool) -> Result<Vec<SubscriptionGroupConfig>> {
    let rows: Vec<GroupRow> = sqlx::query_as(
        "SELECT group_name, consume_enable, consume_broadcast_enable, retry_queue_nums, \
                retry_max_times \
         FROM subscription_groups ORDER BY group_name",
    )
    .fetch_all(pool)
    .await
    .map_err(db_err("list subscription groups"))?;
    Ok(rows.into_iter().map(group_from_row).collect())
}

pub(super) async fn put_group(pool: &SqlitePool, c: &SubscriptionGroupConfig) -> Result<()> {
    sqlx::query(
        "INSERT INTO subscription_groups (group_name, consume_enable, consume_broadcast_enable, \
                                          retry_queue_nums, retry_max_times) \
         VALUES ($1, $2, $3, $4, $5) \
         ON CONFLICT (group_name) DO UPDATE SET \
             consume_enable = excluded.consume_enable, \
             consume_broadcast_enable = excluded.consume_broadcast_enable, \
             retry_queue_nums = excluded.retry_queue_nums, \
             retry_max_times = excluded.retry_max_times",
    )
    .bind(c.group.as_str())
    .bind(c.consume_enable)
    .bind(c.consume_broadcast_enable)
    .bind(c.retry_queue_nums)
    .bind(c.retry_max_times)
    .execute(pool)
    .await
    .map_err(db_err("put subscription group"))?;
    Ok(())
}

// ----- consumer offsets -----

/// Upserts `offsets` in one statement per [`OFFSET_CHUNK`] rows; several chunks share one
/// transaction. Keys repeated in one call keep the last value (PostgreSQL rejects an upsert
/// touching a row twice, so they are collapsed here rather than left to the database).
pub(super) async fn commit_consumer_offsets(
    pool: &SqlitePool,
    offsets: &[ConsumerOffset],
) -> Result<()> {
    let mut last: HashMap<(&str, &QueueKey), usize> = HashMap::with_capacity(offsets.len());
    for (i, o) in offsets.iter().enumerate() {
        last.insert((o.group.as_str(), &o.queue), i);
    }
    let mut keep: Vec<usize> = last.into_values().collect();
    keep.sort_unstable();
    let rows: Vec<&ConsumerOffset> = keep.into_iter().map(|i| &offsets[i]).collect();
    match rows.len() {
        0 => Ok(()),
        n if n <= OFFSET_CHUNK => {
            upsert_offsets(&rows)
                .build()
                .persistent(false)
                .execute(pool)
                .await
                .map_err(db_err("commit consumer offsets"))?;
            Ok(())
        }
        _ => {
            let mut tx = pool
                .begin_with("BEGIN IMMEDIATE")
                .await
                .map_err(db_err("begin consumer offset commit"))?;
            for chunk in rows.chunks(OFFSET_CHUNK) {
                upsert_offsets(chunk)
                    .build()
                    .persistent(false)
                    .execute(&mut *tx)
                    .await
                    .map_err(db_err("commit consumer offsets"))?;
            }
            tx.commit()
                .await
                .map_err(db_err("commit consumer offsets"))?;
            Ok(())
        }
    }
}

fn upsert_offsets(rows: &[&ConsumerOffset]) -> QueryBuilder<Sqlite> {
    let mut q = QueryBuilder::new(
        "INSERT INTO consumer_offsets (group_name, shard_id, topic, queue_id, queue_offset) ",
    );
    q.push_values(rows, |mut b, o| {
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

pub(super) async fn consumer_offset(
    pool: &SqlitePool,
    group: &ConsumerGroup,
    queue: &QueueKey,
) -> Result<Option<QueueOffset>> {
    let row: Option<(i64,)> = sqlx::query_as(
        "SELECT queue_offset FROM consumer_offsets \
         WHERE group_name = $1 AND shard_id = $2 AND topic = $3 AND queue_id = $4",
    )
    .bind(group.as_str())
    .bind(shard_to_db(queue.shard))
    .bind(queue.topic.as_str())
    .bind(queue.queue_id.0)
    .fetch_optional(pool)
    .await
    .map_err(db_err("get consumer offset"))?;
    Ok(row.map(|(o,)| QueueOffset(o)))
}

pub(super) async fn group_offsets(
    pool: &SqlitePool,
    group: &ConsumerGroup,
) -> Result<Vec<ConsumerOffset>> {
    let rows: Vec<(i64, String, i32, i64)> = sqlx::query_as(
        "SELECT shard_id, topic, queue_id, queue_offset FROM consumer_offsets \
         WHERE group_name = $1 ORDER BY shard_id, topic, queue_id",
    )
    .bind(group.as_str())
    .fetch_all(pool)
    .await
    .map_err(db_err("list group offsets"))?;
    rows.into_iter()
        .map(|(shard, topic, queue_id, offset)| {
            Ok(ConsumerOffset {
                group: group.clone(),
                queue: QueueKey {
                    shard: shard_from_db(shard)?,
                    topic: Topic::new(topic),
                    queue_id: QueueId(queue_id),
                },
                offset: QueueOffset(offset),
            })
        })
        .collect()
}

// ----- name-server KV config -----

pub(super) async fn put_kv(
    pool: &SqlitePool,
    namespace: &str,
    key: &str,
    value: &str,
) -> Result<()> {
    sqlx::query(
        "INSERT INTO kv_config (namespace, kv_key, kv_value) VALUES ($1, $2, $3) \
         ON CONFLICT (namespace, kv_key) DO UPDATE SET kv_value = excluded.kv_value",
    )
    .bind(namespace)
    .bind(key)
    .bind(value)
    .execute(pool)
    .await
    .map_err(db_err("put kv config"))?;
    Ok(())
}

pub(super) async fn get_kv(
    pool: &SqlitePool,
    namespace: &str,
    key: &str,
) -> Result<Option<String>> {
    let row: Option<(String,)> =
        sqlx::query_as("SELECT kv_value FROM kv_config WHERE namespace = $1 AND kv_key = $2")
            .bind(namespace)
            .bind(key)
            .fetch_optional(pool)
            .await
            .map_err(db_err("get kv config"))?;
    Ok(row.map(|(v,)| v))
}

pub(super) async fn delete_kv(pool: &SqlitePool, namespace: &str, key: &str) -> Result<()> {
    sqlx::query("DELETE FROM kv_config WHERE namespace = $1 AND kv_key = $2")
        .bind(namespace)
        .bind(key)
        .execute(pool)
        .await
        .map_err(db_err("delete kv config"))?;
    Ok(())
}

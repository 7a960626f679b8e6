//! Topics, subscription groups, consumer offsets and the name-server KV config: plain keyed
//! records, each write one statement. A batch of consumer offsets is one
//! `INSERT … SELECT FROM UNNEST(…) ON CONFLICT DO UPDATE`, whatever its size.

use std::collections::HashMap;

use sqlx::postgres::PgPool;
use stratus_compat::types::{ConsumerGroup, QueueId, QueueOffset, Topic};

use super::convert::db_err;
use crate::embedded::catalog::{GroupRow, TopicRow, group_from_row, topic_from_row};
use crate::embedded::convert::{shard_from_db, shard_to_db};
use crate::error::Result;
use crate::model::{ConsumerOffset, QueueKey, SubscriptionGroupConfig, TopicConfig};

// ----- topics -----

pub(super) async fn get_topic(pool: &PgPool, topic: &Topic) -> Result<Option<TopicConfig>> {
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

pub(super) async fn list_topics(pool: &PgPool) -> Result<Vec<TopicConfig>> {
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

pub(super) async fn put_topic(pool: &PgPool, c: &TopicConfig) -> Result<()> {
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
/// was inserted now or existed before (and locks it, so concurrent creators agree).
pub(super) async fn create_topic_if_absent(pool: &PgPool, c: &TopicConfig) -> Result<TopicConfig> {
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

pub(super) async fn delete_topic(pool: &PgPool, topic: &Topic) -> Result<()> {
    sqlx::query("DELETE FROM topics WHERE topic = $1")
        .bind(topic.as_str())
        .execute(pool)
        .await
        .map_err(db_err("delete topic"))?;
    Ok(())
}

// ----- subscription groups -----

pub(super) async fn get_group(
    pool: &PgPool,
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

pub(super) async fn list_groups(pool: &PgPool) -> Result<Vec<SubscriptionGroupConfig>> {
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

pub(super) async fn put_group(pool: &PgPool, c: &SubscriptionGroupConfig) -> Result<()> {
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

/// One statement for any number of offsets: the rows travel as five arrays. Keys repeated
/// in one call are collapsed first, keeping the last value (PostgreSQL refuses an upsert
/// that touches one row twice).
pub(super) async fn commit_consumer_offsets(
    pool: &PgPool,
    offsets: &[ConsumerOffset],
) -> Result<()> {
    let mut last: HashMap<(&str, &QueueKey), usize> = HashMap::with_capacity(offsets.len());
    for (i, o) in offsets.iter().enumerate() {
        last.insert((o.group.as_str(), &o.queue), i);
    }
    if last.is_empty() {
        return Ok(());
    }
    let mut keep: Vec<usize> = last.into_values().collect();
    keep.sort_unstable();
    let n = keep.len();
    let (mut groups, mut shards, mut topics, mut queue_ids, mut values) = (
        Vec::with_capacity(n),
        Vec::with_capacity(n),
        Vec::with_capacity(n),
        Vec::with_capacity(n),
        Vec::with_capacity(n),
    );
    for o in keep.into_iter().filter_map(|i| offsets.get(i)) {
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
    .map_err(db_err("commit consumer offsets"))?;
    Ok(())
}

pub(super) async fn consumer_offset(
    pool: &PgPool,
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
    pool: &PgPool,
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

pub(super) async fn put_kv(pool: &PgPool, namespace: &str, key: &str, value: &str) -> Result<()> {
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

pub(super) async fn get_kv(pool: &PgPool, namespace: &str, key: &str) -> Result<Option<String>> {
    let row: Option<(String,)> =
        sqlx::query_as("SELECT kv_value FROM kv_config WHERE namespace = $1 AND kv_key = $2")
            .bind(namespace)
            .bind(key)
            .fetch_optional(pool)
            .await
            .map_err(db_err("get kv config"))?;
    Ok(row.map(|(v,)| v))
}

pub(super) async fn delete_kv(pool: &PgPool, namespace: &str, key: &str) -> Result<()> {
    sqlx::query("DELETE FROM kv_config WHERE namespace = $1 AND kv_key = $2")
        .bind(namespace)
        .bind(key)
        .execute(pool)
        .await
        .map_err(db_err("delete kv config"))?;
    Ok(())
}

//! Topics, subscription groups, consumer offsets and the name-server KV config: plain keyed
//! records, each write one upsert (a batch of consumer offsets is the dialect's bulk upsert).

use std::collections::HashMap;

use sqlx::Pool;
use sqlx::query::Query;
use stratus_compat::types::{ConsumerGroup, QueueOffset, Topic};

use super::convert::shard_to_db;
use super::dialect::Dialect;
use super::driver::{Bind, Columns, RowsAffected};
use super::rows::{self, OffsetRow};
use crate::error::Result;
use crate::model::{ConsumerOffset, QueueKey, ShardId, SubscriptionGroupConfig, TopicConfig};

// ----- topics -----

/// `query` with `c`'s columns bound to `$1..$8`, in the order the topic statements name them.
fn bind_topic<'q, D: Dialect>(
    query: Query<'q, D, D::Arguments>,
    c: &TopicConfig,
) -> Query<'q, D, D::Arguments> {
    query
        .arg(c.topic.as_str())
        .arg(c.read_queue_nums)
        .arg(c.write_queue_nums)
        .arg(c.perm)
        .arg(c.topic_filter_type.as_str())
        .arg(c.topic_sys_flag)
        .arg(c.order)
        .arg(c.retention_hours)
}

pub(crate) async fn get_topic<D: Dialect>(
    pool: &Pool<D>,
    topic: &Topic,
) -> Result<Option<TopicConfig>> {
    sqlx::query(
        "SELECT topic, read_queue_nums, write_queue_nums, perm, topic_filter_type, \
                topic_sys_flag, order_flag, retention_hours \
         FROM topics WHERE topic = $1",
    )
    .arg(topic.as_str())
    .try_map(rows::topic)
    .fetch_optional(D::on_pool(pool))
    .await
    .map_err(D::db_err("get topic"))
}

pub(crate) async fn list_topics<D: Dialect>(pool: &Pool<D>) -> Result<Vec<TopicConfig>> {
    sqlx::query(
        "SELECT topic, read_queue_nums, write_queue_nums, perm, topic_filter_type, \
                topic_sys_flag, order_flag, retention_hours \
         FROM topics ORDER BY topic",
    )
    .try_map(rows::topic)
    .fetch_all(D::on_pool(pool))
    .await
    .map_err(D::db_err("list topics"))
}

pub(crate) async fn put_topic<D: Dialect>(pool: &Pool<D>, c: &TopicConfig) -> Result<()> {
    let insert = sqlx::query(
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
    );
    bind_topic(insert, c)
        .execute(D::on_pool(pool))
        .await
        .map_err(D::db_err("put topic"))?;
    Ok(())
}

/// One statement: the no-op `DO UPDATE` makes `RETURNING` yield the stored row whether it
/// was inserted now or existed before (and, in PostgreSQL, locks it, so concurrent creators
/// agree).
pub(crate) async fn create_topic_if_absent<D: Dialect>(
    pool: &Pool<D>,
    c: &TopicConfig,
) -> Result<TopicConfig> {
    let insert = sqlx::query(
        "INSERT INTO topics (topic, read_queue_nums, write_queue_nums, perm, topic_filter_type, \
                             topic_sys_flag, order_flag, retention_hours) \
         VALUES ($1, $2, $3, $4, $5, $6, $7, $8) \
         ON CONFLICT (topic) DO UPDATE SET topic = excluded.topic \
         RETURNING topic, read_queue_nums, write_queue_nums, perm, topic_filter_type, \
                   topic_sys_flag, order_flag, retention_hours",
    );
    bind_topic(insert, c)
        .try_map(rows::topic)
        .fetch_one(D::on_pool(pool))
        .await
        .map_err(D::db_err("create topic"))
}

pub(crate) async fn delete_topic<D: Dialect>(pool: &Pool<D>, topic: &Topic) -> Result<()> {
    sqlx::query("DELETE FROM topics WHERE topic = $1")
        .arg(topic.as_str())
        .execute(D::on_pool(pool))
        .await
        .map_err(D::db_err("delete topic"))?;
    Ok(())
}

// ----- subscription groups -----

pub(crate) async fn get_group<D: Dialect>(
    pool: &Pool<D>,
    group: &ConsumerGroup,
) -> Result<Option<SubscriptionGroupConfig>> {
    sqlx::query(
        "SELECT group_name, consume_enable, consume_broadcast_enable, retry_queue_nums, \
                retry_max_times, details \
         FROM subscription_groups WHERE group_name = $1",
    )
    .arg(group.as_str())
    .try_map(rows::group)
    .fetch_optional(D::on_pool(pool))
    .await
    .map_err(D::db_err("get subscription group"))
}

pub(crate) async fn list_groups<D: Dialect>(
    pool: &Pool<D>,
) -> Result<Vec<SubscriptionGroupConfig>> {
    sqlx::query(
        "SELECT group_name, consume_enable, consume_broadcast_enable, retry_queue_nums, \
                retry_max_times, details \
         FROM subscription_groups ORDER BY group_name",
    )
    .try_map(rows::group)
    .fetch_all(D::on_pool(pool))
    .await
    .map_err(D::db_err("list subscription groups"))
}

pub(crate) async fn put_group<D: Dialect>(
    pool: &Pool<D>,
    c: &SubscriptionGroupConfig,
) -> Result<()> {
    sqlx::query(
        "INSERT INTO subscription_groups (group_name, consume_enable, consume_broadcast_enable, \
                                          retry_queue_nums, retry_max_times, details) \
         VALUES ($1, $2, $3, $4, $5, $6) \
         ON CONFLICT (group_name) DO UPDATE SET \
             consume_enable = excluded.consume_enable, \
             consume_broadcast_enable = excluded.consume_broadcast_enable, \
             retry_queue_nums = excluded.retry_queue_nums, \
             retry_max_times = excluded.retry_max_times, \
             details = excluded.details",
    )
    .arg(c.group.as_str())
    .arg(c.consume_enable)
    .arg(c.consume_broadcast_enable)
    .arg(c.retry_queue_nums)
    .arg(c.retry_max_times)
    .arg(c.details.as_deref())
    .execute(D::on_pool(pool))
    .await
    .map_err(D::db_err("put subscription group"))?;
    Ok(())
}

pub(crate) async fn delete_group<D: Dialect>(
    pool: &Pool<D>,
    group: &ConsumerGroup,
) -> Result<bool> {
    let done = sqlx::query("DELETE FROM subscription_groups WHERE group_name = $1")
        .arg(group.as_str())
        .execute(D::on_pool(pool))
        .await
        .map_err(D::db_err("delete subscription group"))?;
    Ok(done.rows_affected() > 0)
}

// ----- consumer offsets -----

/// Keys repeated in one call keep the last value: they are collapsed here (PostgreSQL
/// refuses an upsert touching one row twice), then the rest is the dialect's bulk upsert.
pub(crate) async fn commit_consumer_offsets<D: Dialect>(
    pool: &Pool<D>,
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
    let rows: Vec<&ConsumerOffset> = keep.into_iter().filter_map(|i| offsets.get(i)).collect();
    D::upsert_offsets(pool, &rows).await
}

pub(crate) async fn consumer_offset<D: Dialect>(
    pool: &Pool<D>,
    group: &ConsumerGroup,
    queue: &QueueKey,
) -> Result<Option<QueueOffset>> {
    sqlx::query(
        "SELECT queue_offset FROM consumer_offsets \
         WHERE group_name = $1 AND shard_id = $2 AND topic = $3 AND queue_id = $4",
    )
    .arg(group.as_str())
    .arg(shard_to_db(queue.shard))
    .arg(queue.topic.as_str())
    .arg(queue.queue_id.0)
    .try_map(|r: D::Row| r.int(0).map(QueueOffset))
    .fetch_optional(D::on_pool(pool))
    .await
    .map_err(D::db_err("get consumer offset"))
}

pub(crate) async fn group_offsets<D: Dialect>(
    pool: &Pool<D>,
    group: &ConsumerGroup,
) -> Result<Vec<ConsumerOffset>> {
    let rows = sqlx::query(
        "SELECT shard_id, topic, queue_id, queue_offset FROM consumer_offsets \
         WHERE group_name = $1 ORDER BY shard_id, topic, queue_id",
    )
    .arg(group.as_str())
    .try_map(OffsetRow::read)
    .fetch_all(D::on_pool(pool))
    .await
    .map_err(D::db_err("list group offsets"))?;
    rows.into_iter().map(|r| r.into_offset(group)).collect()
}

pub(crate) async fn delete_group_offsets<D: Dialect>(
    pool: &Pool<D>,
    group: &ConsumerGroup,
    shard: ShardId,
) -> Result<u64> {
    let done = sqlx::query("DELETE FROM consumer_offsets WHERE group_name = $1 AND shard_id = $2")
        .arg(group.as_str())
        .arg(shard_to_db(shard))
        .execute(D::on_pool(pool))
        .await
        .map_err(D::db_err("delete group offsets"))?;
    Ok(done.rows_affected())
}

pub(crate) async fn offset_groups<D: Dialect>(
    pool: &Pool<D>,
    shard: ShardId,
    topic: &Topic,
) -> Result<Vec<ConsumerGroup>> {
    sqlx::query(
        "SELECT DISTINCT group_name FROM consumer_offsets \
         WHERE topic = $1 AND shard_id = $2 ORDER BY group_name",
    )
    .arg(topic.as_str())
    .arg(shard_to_db(shard))
    .try_map(|r: D::Row| r.text(0).map(ConsumerGroup::new))
    .fetch_all(D::on_pool(pool))
    .await
    .map_err(D::db_err("list groups of a topic"))
}

// ----- name-server KV config -----

pub(crate) async fn put_kv<D: Dialect>(
    pool: &Pool<D>,
    namespace: &str,
    key: &str,
    value: &str,
) -> Result<()> {
    sqlx::query(
        "INSERT INTO kv_config (namespace, kv_key, kv_value) VALUES ($1, $2, $3) \
         ON CONFLICT (namespace, kv_key) DO UPDATE SET kv_value = excluded.kv_value",
    )
    .arg(namespace)
    .arg(key)
    .arg(value)
    .execute(D::on_pool(pool))
    .await
    .map_err(D::db_err("put kv config"))?;
    Ok(())
}

pub(crate) async fn get_kv<D: Dialect>(
    pool: &Pool<D>,
    namespace: &str,
    key: &str,
) -> Result<Option<String>> {
    sqlx::query("SELECT kv_value FROM kv_config WHERE namespace = $1 AND kv_key = $2")
        .arg(namespace)
        .arg(key)
        .try_map(|r: D::Row| r.text(0))
        .fetch_optional(D::on_pool(pool))
        .await
        .map_err(D::db_err("get kv config"))
}

pub(crate) async fn list_kv<D: Dialect>(
    pool: &Pool<D>,
    namespace: &str,
) -> Result<Vec<(String, String)>> {
    let mut rows = sqlx::query("SELECT kv_key, kv_value FROM kv_config WHERE namespace = $1")
        .arg(namespace)
        .try_map(|r: D::Row| Ok((r.text(0)?, r.text(1)?)))
        .fetch_all(D::on_pool(pool))
        .await
        .map_err(D::db_err("list kv config"))?;
    // Byte order whatever the database's collation.
    rows.sort_unstable();
    Ok(rows)
}

pub(crate) async fn delete_kv<D: Dialect>(
    pool: &Pool<D>,
    namespace: &str,
    key: &str,
) -> Result<()> {
    sqlx::query("DELETE FROM kv_config WHERE namespace = $1 AND kv_key = $2")
        .arg(namespace)
        .arg(key)
        .execute(D::on_pool(pool))
        .await
        .map_err(D::db_err("delete kv config"))?;
    Ok(())
}

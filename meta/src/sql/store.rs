//! [`SqlMeta`]: the [`MetaStore`] (and so the [`SegmentCatalog`]) of a SQL database, each call
//! one of the shared statement functions on the reader or the writer pool.

use async_trait::async_trait;
use sqlx::{Database, Pool};
use stratus_compat::types::{CommitLogOffset, ConsumerGroup, QueueOffset, Topic};

use super::dialect::Dialect;
use super::{catalog, half, keys, leases, lookups, nodes, producers, retention, segments};
use crate::error::Result;
use crate::model::*;
use crate::{MetaStore, SegmentCatalog};

/// The metadata store on a SQL database `D` (SQLite or PostgreSQL).
#[derive(Debug)]
pub struct SqlMeta<D: Database> {
    /// Where writes go (for SQLite, its single writer connection).
    pub(crate) writer: Pool<D>,
    /// Where reads go (for SQLite, read-only connections beside the writer; for PostgreSQL,
    /// the writer's pool).
    pub(crate) reader: Pool<D>,
}

impl<D: Database> SqlMeta<D> {
    /// A store whose reads and writes share `pool`.
    pub(crate) fn one_pool(pool: Pool<D>) -> Self {
        Self {
            writer: pool.clone(),
            reader: pool,
        }
    }
}

#[async_trait]
impl<D: Dialect> SegmentCatalog for SqlMeta<D> {
    async fn shard_state(&self, shard: ShardId) -> Result<ShardState> {
        leases::shard_state(&self.reader, shard).await
    }

    async fn commit_segment(&self, sections: &[SegmentCommit]) -> Result<()> {
        segments::commit_segment(&self.writer, sections).await
    }

    async fn queue_segments(
        &self,
        queue: &QueueKey,
        from: QueueOffset,
        limit: u32,
    ) -> Result<Vec<QueueSegment>> {
        lookups::queue_segments(&self.reader, queue, from, limit).await
    }

    async fn queue_segment_by_time(
        &self,
        queue: &QueueKey,
        ts_ms: i64,
    ) -> Result<Option<QueueSegment>> {
        lookups::queue_segment_by_time(&self.reader, queue, ts_ms).await
    }

    async fn segment_by_commit_log_offset(
        &self,
        shard: ShardId,
        offset: CommitLogOffset,
    ) -> Result<Option<SegmentRef>> {
        lookups::segment_by_commit_log_offset(&self.reader, shard, offset).await
    }

    async fn find_keys(
        &self,
        shard: ShardId,
        key_hash: i64,
        begin_ms: i64,
        end_ms: i64,
        limit: u32,
    ) -> Result<Vec<KeyHit>> {
        keys::find_keys(&self.reader, shard, key_hash, begin_ms, end_ms, limit).await
    }

    async fn find_unique_keys(
        &self,
        shard: ShardId,
        id_time: i64,
        key_hash: i64,
        begin_ms: i64,
        end_ms: i64,
        limit: u32,
    ) -> Result<Vec<KeyHit>> {
        keys::find_unique_keys(
            &self.reader,
            shard,
            id_time,
            key_hash,
            begin_ms,
            end_ms,
            limit,
        )
        .await
    }
}

#[async_trait]
impl<D: Dialect> MetaStore for SqlMeta<D> {
    async fn get_topic(&self, topic: &Topic) -> Result<Option<TopicConfig>> {
        catalog::get_topic(&self.reader, topic).await
    }

    async fn list_topics(&self) -> Result<Vec<TopicConfig>> {
        catalog::list_topics(&self.reader).await
    }

    async fn put_topic(&self, config: &TopicConfig) -> Result<()> {
        catalog::put_topic(&self.writer, config).await
    }

    async fn create_topic_if_absent(&self, config: &TopicConfig) -> Result<TopicConfig> {
        catalog::create_topic_if_absent(&self.writer, config).await
    }

    async fn delete_topic(&self, topic: &Topic) -> Result<()> {
        catalog::delete_topic(&self.writer, topic).await
    }

    async fn ensure_shards(&self, count: u32) -> Result<Vec<ShardLease>> {
        leases::ensure_shards(&self.writer, count).await
    }

    async fn list_shards(&self) -> Result<Vec<ShardLease>> {
        leases::list_shards(&self.reader).await
    }

    async fn acquire_shard(
        &self,
        shard: ShardId,
        node: &NodeId,
        now_ms: i64,
        ttl_ms: i64,
    ) -> Result<Option<ShardLease>> {
        leases::acquire_shard(&self.writer, shard, node, now_ms, ttl_ms).await
    }

    async fn renew_shard(
        &self,
        shard: ShardId,
        node: &NodeId,
        epoch: Epoch,
        now_ms: i64,
        ttl_ms: i64,
    ) -> Result<ShardLease> {
        leases::renew_shard(&self.writer, shard, node, epoch, now_ms, ttl_ms).await
    }

    async fn release_shard(&self, shard: ShardId, node: &NodeId, epoch: Epoch) -> Result<()> {
        leases::release_shard(&self.writer, shard, node, epoch).await
    }

    async fn queue_range(&self, queue: &QueueKey) -> Result<QueueRange> {
        lookups::queue_range(&self.reader, queue).await
    }

    async fn half_message(
        &self,
        shard: ShardId,
        handle: CommitLogOffset,
    ) -> Result<Option<HalfMessage>> {
        half::half_message(&self.reader, shard, handle).await
    }

    async fn due_half_messages(
        &self,
        shard: ShardId,
        now_ms: i64,
        limit: u32,
    ) -> Result<Vec<HalfMessage>> {
        half::due_half_messages(&self.reader, shard, now_ms, limit).await
    }

    async fn record_half_check(
        &self,
        shard: ShardId,
        handle: CommitLogOffset,
        check_times: i32,
        next_check_ms: i64,
    ) -> Result<bool> {
        half::record_half_check(&self.writer, shard, handle, check_times, next_check_ms).await
    }

    async fn resolve_half_message(&self, shard: ShardId, handle: CommitLogOffset) -> Result<bool> {
        half::resolve_half_message(&self.writer, shard, handle).await
    }

    async fn schedule_progress(&self, shard: ShardId) -> Result<Vec<(i32, QueueOffset)>> {
        half::schedule_progress(&self.reader, shard).await
    }

    async fn due_timers(
        &self,
        shard: ShardId,
        now_ms: i64,
        limit: u32,
    ) -> Result<Vec<(CommitLogOffset, i64)>> {
        half::due_timers(&self.reader, shard, now_ms, limit).await
    }

    async fn half_messages(&self, shard: ShardId) -> Result<Vec<HalfMessage>> {
        half::half_messages(&self.reader, shard).await
    }

    async fn commit_consumer_offsets(&self, offsets: &[ConsumerOffset]) -> Result<()> {
        catalog::commit_consumer_offsets(&self.writer, offsets).await
    }

    async fn consumer_offset(
        &self,
        group: &ConsumerGroup,
        queue: &QueueKey,
    ) -> Result<Option<QueueOffset>> {
        catalog::consumer_offset(&self.reader, group, queue).await
    }

    async fn group_offsets(&self, group: &ConsumerGroup) -> Result<Vec<ConsumerOffset>> {
        catalog::group_offsets(&self.reader, group).await
    }

    async fn get_group(&self, group: &ConsumerGroup) -> Result<Option<SubscriptionGroupConfig>> {
        catalog::get_group(&self.reader, group).await
    }

    async fn put_group(&self, config: &SubscriptionGroupConfig) -> Result<()> {
        catalog::put_group(&self.writer, config).await
    }

    async fn list_groups(&self) -> Result<Vec<SubscriptionGroupConfig>> {
        catalog::list_groups(&self.reader).await
    }

    async fn delete_group(&self, group: &ConsumerGroup) -> Result<bool> {
        catalog::delete_group(&self.writer, group).await
    }

    async fn producer_batches(&self, shard: ShardId) -> Result<Vec<ProducerBatch>> {
        producers::producer_batches(&self.reader, shard).await
    }

    async fn expire_producer_batches(&self, before_ms: i64) -> Result<u64> {
        producers::expire(&self.writer, before_ms).await
    }

    async fn delete_group_offsets(&self, group: &ConsumerGroup, shard: ShardId) -> Result<u64> {
        catalog::delete_group_offsets(&self.writer, group, shard).await
    }

    async fn offset_groups(&self, shard: ShardId, topic: &Topic) -> Result<Vec<ConsumerGroup>> {
        catalog::offset_groups(&self.reader, shard, topic).await
    }

    async fn heartbeat_node(&self, node: &NodeInfo) -> Result<()> {
        nodes::heartbeat_node(&self.writer, node).await
    }

    async fn list_nodes(&self) -> Result<Vec<NodeInfo>> {
        nodes::list_nodes(&self.reader).await
    }

    async fn remove_node(&self, node: &NodeId) -> Result<()> {
        nodes::remove_node(&self.writer, node).await
    }

    async fn apply_retention(
        &self,
        shard: ShardId,
        node: &NodeId,
        epoch: Epoch,
        now_ms: i64,
        policy: &RetentionPolicy,
    ) -> Result<RetentionOutcome> {
        retention::apply_retention(&self.writer, shard, node, epoch, now_ms, policy).await
    }

    async fn unreferenced_objects(&self, keys: &[String]) -> Result<Vec<String>> {
        retention::unreferenced_objects(&self.reader, keys).await
    }

    async fn put_kv(&self, namespace: &str, key: &str, value: &str) -> Result<()> {
        catalog::put_kv(&self.writer, namespace, key, value).await
    }

    async fn get_kv(&self, namespace: &str, key: &str) -> Result<Option<String>> {
        catalog::get_kv(&self.reader, namespace, key).await
    }

    async fn list_kv(&self, namespace: &str) -> Result<Vec<(String, String)>> {
        catalog::list_kv(&self.reader, namespace).await
    }

    async fn delete_kv(&self, namespace: &str, key: &str) -> Result<()> {
        catalog::delete_kv(&self.writer, namespace, key).await
    }

    async fn close(&self) {
        self.reader.close().await;
        self.writer.close().await;
    }
}

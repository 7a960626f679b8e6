//! A meta wrapper that makes segment commits fail (tests only): before applying, or after
//! applying (an ambiguous commit whose caller sees an error). It also records the calls that
//! reached the inner store and succeeded there.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use async_trait::async_trait;
use parking_lot::Mutex;
use stratus_compat::types::{CommitLogOffset, ConsumerGroup, QueueOffset, Topic};
use stratus_meta::*;

#[derive(Debug)]
pub(super) struct FlakyMeta {
    pub(super) inner: Arc<dyn MetaStore>,
    pub(super) fail_commits: AtomicU32,
    pub(super) ambiguous_commits: AtomicU32,
    pub(super) conflict_commits: AtomicU32,
    /// Every `commit_segment` call the inner store applied, in order.
    pub(super) committed: Mutex<Vec<Vec<SegmentCommit>>>,
}

fn take(c: &AtomicU32) -> bool {
    c.fetch_update(Ordering::SeqCst, Ordering::SeqCst, |n| n.checked_sub(1))
        .is_ok()
}

#[async_trait]
impl MetaStore for FlakyMeta {
    async fn commit_segment(&self, sections: &[SegmentCommit]) -> Result<()> {
        if take(&self.fail_commits) {
            return Err(MetaError::Unavailable("injected".into()));
        }
        if take(&self.conflict_commits) {
            return Err(MetaError::Conflict("injected".into()));
        }
        self.inner.commit_segment(sections).await?;
        self.committed.lock().push(sections.to_vec());
        if take(&self.ambiguous_commits) {
            return Err(MetaError::Unavailable("injected after commit".into()));
        }
        Ok(())
    }
    async fn get_topic(&self, topic: &Topic) -> Result<Option<TopicConfig>> {
        self.inner.get_topic(topic).await
    }
    async fn list_topics(&self) -> Result<Vec<TopicConfig>> {
        self.inner.list_topics().await
    }
    async fn put_topic(&self, config: &TopicConfig) -> Result<()> {
        self.inner.put_topic(config).await
    }
    async fn create_topic_if_absent(&self, config: &TopicConfig) -> Result<TopicConfig> {
        self.inner.create_topic_if_absent(config).await
    }
    async fn delete_topic(&self, topic: &Topic) -> Result<()> {
        self.inner.delete_topic(topic).await
    }
    async fn ensure_shards(&self, count: u32) -> Result<Vec<ShardLease>> {
        self.inner.ensure_shards(count).await
    }
    async fn list_shards(&self) -> Result<Vec<ShardLease>> {
        self.inner.list_shards().await
    }
    async fn acquire_shard(
        &self,
        shard: ShardId,
        node: &NodeId,
        now_ms: i64,
        ttl_ms: i64,
    ) -> Result<Option<ShardLease>> {
        self.inner.acquire_shard(shard, node, now_ms, ttl_ms).await
    }
    async fn renew_shard(
        &self,
        shard: ShardId,
        node: &NodeId,
        epoch: Epoch,
        now_ms: i64,
        ttl_ms: i64,
    ) -> Result<ShardLease> {
        self.inner
            .renew_shard(shard, node, epoch, now_ms, ttl_ms)
            .await
    }
    async fn release_shard(&self, shard: ShardId, node: &NodeId, epoch: Epoch) -> Result<()> {
        self.inner.release_shard(shard, node, epoch).await
    }
    async fn shard_state(&self, shard: ShardId) -> Result<ShardState> {
        self.inner.shard_state(shard).await
    }
    async fn queue_segments(
        &self,
        queue: &QueueKey,
        from: QueueOffset,
        limit: u32,
    ) -> Result<Vec<QueueSegment>> {
        self.inner.queue_segments(queue, from, limit).await
    }
    async fn queue_segment_by_time(
        &self,
        queue: &QueueKey,
        ts_ms: i64,
    ) -> Result<Option<QueueSegment>> {
        self.inner.queue_segment_by_time(queue, ts_ms).await
    }
    async fn segment_by_commit_log_offset(
        &self,
        shard: ShardId,
        offset: CommitLogOffset,
    ) -> Result<Option<SegmentRef>> {
        self.inner.segment_by_commit_log_offset(shard, offset).await
    }
    async fn queue_range(&self, queue: &QueueKey) -> Result<QueueRange> {
        self.inner.queue_range(queue).await
    }
    async fn half_message(
        &self,
        shard: ShardId,
        handle: CommitLogOffset,
    ) -> Result<Option<HalfMessage>> {
        self.inner.half_message(shard, handle).await
    }
    async fn due_half_messages(
        &self,
        shard: ShardId,
        now_ms: i64,
        limit: u32,
    ) -> Result<Vec<HalfMessage>> {
        self.inner.due_half_messages(shard, now_ms, limit).await
    }
    async fn record_half_check(
        &self,
        shard: ShardId,
        handle: CommitLogOffset,
        check_times: i32,
        next_check_ms: i64,
    ) -> Result<bool> {
        self.inner
            .record_half_check(shard, handle, check_times, next_check_ms)
            .await
    }
    async fn resolve_half_message(&self, shard: ShardId, handle: CommitLogOffset) -> Result<bool> {
        self.inner.resolve_half_message(shard, handle).await
    }
    async fn half_messages(&self, shard: ShardId) -> Result<Vec<HalfMessage>> {
        self.inner.half_messages(shard).await
    }

    async fn schedule_progress(&self, shard: ShardId) -> Result<Vec<(i32, QueueOffset)>> {
        self.inner.schedule_progress(shard).await
    }

    async fn due_timers(
        &self,
        shard: ShardId,
        now_ms: i64,
        limit: u32,
    ) -> Result<Vec<(CommitLogOffset, i64)>> {
        self.inner.due_timers(shard, now_ms, limit).await
    }
    async fn commit_consumer_offsets(&self, offsets: &[ConsumerOffset]) -> Result<()> {
        self.inner.commit_consumer_offsets(offsets).await
    }
    async fn consumer_offset(
        &self,
        group: &ConsumerGroup,
        queue: &QueueKey,
    ) -> Result<Option<QueueOffset>> {
        self.inner.consumer_offset(group, queue).await
    }
    async fn group_offsets(&self, group: &ConsumerGroup) -> Result<Vec<ConsumerOffset>> {
        self.inner.group_offsets(group).await
    }
    async fn get_group(&self, group: &ConsumerGroup) -> Result<Option<SubscriptionGroupConfig>> {
        self.inner.get_group(group).await
    }
    async fn put_group(&self, config: &SubscriptionGroupConfig) -> Result<()> {
        self.inner.put_group(config).await
    }
    async fn list_groups(&self) -> Result<Vec<SubscriptionGroupConfig>> {
        self.inner.list_groups().await
    }
    async fn put_kv(&self, namespace: &str, key: &str, value: &str) -> Result<()> {
        self.inner.put_kv(namespace, key, value).await
    }
    async fn get_kv(&self, namespace: &str, key: &str) -> Result<Option<String>> {
        self.inner.get_kv(namespace, key).await
    }
    async fn delete_kv(&self, namespace: &str, key: &str) -> Result<()> {
        self.inner.delete_kv(namespace, key).await
    }
    async fn heartbeat_node(&self, node: &NodeInfo) -> Result<()> {
        self.inner.heartbeat_node(node).await
    }
    async fn list_nodes(&self) -> Result<Vec<NodeInfo>> {
        self.inner.list_nodes().await
    }
    async fn remove_node(&self, node: &NodeId) -> Result<()> {
        self.inner.remove_node(node).await
    }
    async fn apply_retention(
        &self,
        shard: ShardId,
        node: &NodeId,
        epoch: Epoch,
        now_ms: i64,
        policy: &RetentionPolicy,
    ) -> Result<RetentionOutcome> {
        self.inner
            .apply_retention(shard, node, epoch, now_ms, policy)
            .await
    }
    async fn unreferenced_objects(&self, keys: &[String]) -> Result<Vec<String>> {
        self.inner.unreferenced_objects(keys).await
    }
    async fn close(&self) {
        self.inner.close().await;
    }
}

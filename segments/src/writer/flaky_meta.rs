//! A segment catalog that makes segment commits fail (tests only): before applying, or after
//! applying (an ambiguous commit whose caller sees an error). It also records the calls that
//! reached the inner store and succeeded there.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use async_trait::async_trait;
use parking_lot::Mutex;
use stratus_compat::types::{CommitLogOffset, QueueOffset};
use stratus_meta::*;

use crate::testkit::HarnessMeta;

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

/// The harness administers the inner store; its writer and reader go through the faults.
impl HarnessMeta for Arc<FlakyMeta> {
    fn split(self) -> (Arc<dyn MetaStore>, Arc<dyn SegmentCatalog>) {
        (self.inner.clone(), self)
    }
}

#[async_trait]
impl SegmentCatalog for FlakyMeta {
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
    async fn find_keys(
        &self,
        shard: ShardId,
        key_hash: i64,
        begin_ms: i64,
        end_ms: i64,
        limit: u32,
    ) -> Result<Vec<KeyHit>> {
        self.inner
            .find_keys(shard, key_hash, begin_ms, end_ms, limit)
            .await
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
        self.inner
            .find_unique_keys(shard, id_time, key_hash, begin_ms, end_ms, limit)
            .await
    }
}

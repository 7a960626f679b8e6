//! Queue heads: the committed (visible) min/max offsets of every queue of the shards this
//! node owns, with a watch per queue that long-polling pulls await.

use stratus_compat::types::QueueOffset;
use stratus_meta::QueueKey;
use tokio::sync::watch;

/// Committed bounds and change notification per queue.
#[derive(Debug, Default)]
pub struct QueueHeads {}

impl QueueHeads {
    /// Committed max offset (next to be written), 0 for an unknown queue.
    pub fn max_offset(&self, queue: &QueueKey) -> QueueOffset {
        let _ = queue;
        todo!()
    }

    /// Smallest retained offset, 0 for an unknown queue.
    pub fn min_offset(&self, queue: &QueueKey) -> QueueOffset {
        let _ = queue;
        todo!()
    }

    /// A receiver that changes whenever the queue's committed max offset grows.
    pub fn watch(&self, queue: &QueueKey) -> watch::Receiver<QueueOffset> {
        let _ = queue;
        todo!()
    }
}

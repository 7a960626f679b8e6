//! Reading queues: committed bounds, reads from an offset, and waiting (long polling) for a
//! queue's committed end to pass an offset, within the node's budget of parked waits.

use std::future::Future;
use std::time::Duration;

use bytes::Bytes;
use stratus_compat::types::{CommitLogOffset, QueueOffset};
use stratus_meta::QueueKey;
use stratus_segments::SegmentError;
use stratus_segments::format::EntryMeta;
use stratus_segments::reader::ReadBatch;
use tokio::sync::OwnedSemaphorePermit;

use super::Node;

/// How a wait for new messages ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Waited {
    /// The queue's end passed the offset, the hold time ended, or the node is stopping:
    /// read again.
    Retry,
    /// The waiter went away (its connection closed): answer nothing.
    Abandoned,
}

impl Node {
    /// The queue's committed bounds: (min offset, max offset); max is one past the last.
    pub(crate) fn bounds(&self, queue: &QueueKey) -> (QueueOffset, QueueOffset) {
        (self.heads.min_offset(queue), self.heads.max_offset(queue))
    }

    /// Up to `max_count` committed messages (at most `max_bytes`, the first always) from
    /// `from`, skipping entries `filter` rejects by their index entry.
    ///
    /// # Errors
    /// Object store or checksum failures.
    pub(crate) async fn read(
        &self,
        queue: &QueueKey,
        from: QueueOffset,
        max_count: usize,
        max_bytes: usize,
        filter: &(dyn Fn(&EntryMeta) -> bool + Send + Sync),
    ) -> Result<ReadBatch, SegmentError> {
        self.reader
            .read(queue, from, max_count, max_bytes, filter)
            .await
    }

    /// One committed record by its commit-log handle.
    ///
    /// # Errors
    /// Object store or checksum failures.
    pub(crate) async fn read_by_handle(
        &self,
        handle: CommitLogOffset,
    ) -> Result<Option<Bytes>, SegmentError> {
        self.reader.read_by_handle(handle).await
    }

    /// A slot of the parked-wait budget, or `None` when it is used up (answer at once).
    pub(crate) fn try_park(&self) -> Option<OwnedSemaphorePermit> {
        self.parked.clone().try_acquire_owned().ok()
    }

    /// Waits until `queue`'s committed max offset passes `offset`, `hold` ends, the node
    /// stops, or `gone` completes (then [`Waited::Abandoned`]).
    pub(crate) async fn wait_past(
        &self,
        queue: &QueueKey,
        offset: QueueOffset,
        hold: Duration,
        gone: impl Future<Output = ()>,
    ) -> Waited {
        let mut rx = self.heads.watch(queue);
        let arrived = async {
            loop {
                if *rx.borrow_and_update() > offset {
                    return;
                }
                if rx.changed().await.is_err() {
                    return;
                }
            }
        };
        tokio::select! {
            () = arrived => Waited::Retry,
            () = self.clock.sleep(hold) => Waited::Retry,
            () = self.cancel.cancelled() => Waited::Retry,
            () = gone => Waited::Abandoned,
        }
    }
}

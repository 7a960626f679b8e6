//! Consumer offsets: what a group has committed for a queue.

use stratus_compat::types::{ConsumerGroup, QueueOffset};
use stratus_meta::{ConsumerOffset, MetaError, QueueKey};

use super::Node;

impl Node {
    /// The offset `group` committed for `queue`, if any.
    ///
    /// # Errors
    /// Meta failures.
    pub(crate) async fn committed_offset(
        &self,
        group: &ConsumerGroup,
        queue: &QueueKey,
    ) -> Result<Option<QueueOffset>, MetaError> {
        self.meta.consumer_offset(group, queue).await
    }

    /// Commits offsets (one meta write for all).
    ///
    /// # Errors
    /// Meta failures.
    pub(crate) async fn commit_offsets(&self, offsets: &[ConsumerOffset]) -> Result<(), MetaError> {
        self.meta.commit_consumer_offsets(offsets).await
    }
}

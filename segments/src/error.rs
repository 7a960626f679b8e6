//! Storage errors.

use std::sync::Arc;

use thiserror::Error;

/// A storage operation failed. Clone, so one failure can be fanned out to every waiter of a
/// segment.
#[derive(Debug, Error, Clone)]
pub enum SegmentError {
    /// Object store error after retries.
    #[error("object store {op} {key}: {source}")]
    ObjectStore {
        /// Operation (`put`, `get`, …).
        op: &'static str,
        /// Object key.
        key: String,
        /// Cause.
        #[source]
        source: Arc<object_store::Error>,
    },
    /// Meta commit or lookup failed.
    #[error("meta: {0}")]
    Meta(Arc<stratus_meta::MetaError>),
    /// The shard's lease was lost; its pending appends fail.
    #[error("shard {0} fenced")]
    Fenced(stratus_meta::ShardId),
    /// The shard is not open on this node.
    #[error("shard {0} not owned here")]
    NotOwned(stratus_meta::ShardId),
    /// The write buffer is full; try again later (SYSTEM_BUSY).
    #[error("write buffer full")]
    Busy,
    /// The segment could not be made durable in time (FLUSH_DISK_TIMEOUT).
    #[error("segment not durable within {0:?}")]
    Timeout(std::time::Duration),
    /// Stored bytes failed their checksum or are truncated.
    #[error("corrupt segment {key}: {what}")]
    Corrupt {
        /// Object key.
        key: String,
        /// What is wrong.
        what: String,
    },
    /// The writer is shutting down.
    #[error("storage shutting down")]
    ShuttingDown,
}

impl SegmentError {
    /// True when a retry may succeed.
    pub fn is_retryable(&self) -> bool {
        matches!(
            self,
            Self::ObjectStore { .. } | Self::Busy | Self::Timeout(_)
        )
    }
}

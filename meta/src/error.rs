//! Errors of the metadata service.

use thiserror::Error;

use crate::model::{Epoch, ShardId};

/// Result alias.
pub type Result<T, E = MetaError> = std::result::Result<T, E>;

/// A metadata operation failed.
#[derive(Debug, Error)]
pub enum MetaError {
    /// The shard does not exist (it was never created, see
    /// [`crate::MetaStore::ensure_shards`]).
    #[error("shard {shard} not found")]
    NotFound {
        /// The shard looked up.
        shard: ShardId,
    },
    /// A conditional write lost (offsets not contiguous, record changed concurrently).
    #[error("conflict: {0}")]
    Conflict(String),
    /// The writer's epoch is no longer the shard's epoch.
    #[error("shard {shard} fenced: ours {ours:?}, stored {stored:?}")]
    Fenced {
        /// Shard.
        shard: ShardId,
        /// Epoch the writer held.
        ours: Epoch,
        /// Epoch in meta.
        stored: Epoch,
    },
    /// The database cannot be reached or timed out; the operation may be retried.
    #[error("metadata store unavailable: {0}")]
    Unavailable(String),
    /// Stored data is not what the schema says.
    #[error("corrupt metadata: {0}")]
    Corrupt(String),
    /// An invalid URL or option.
    #[error("invalid metadata configuration: {0}")]
    Config(String),
}

impl MetaError {
    /// True when retrying the same call may succeed.
    pub fn is_retryable(&self) -> bool {
        matches!(self, Self::Unavailable(_))
    }
}

//! Appending messages: the in-order, non-blocking half of a send and the wait for
//! durability (segment uploaded and committed in meta) that makes it acknowledged.

use stratus_compat::types::{CommitLogOffset, QueueOffset};
use stratus_meta::{SegmentEffect, ShardId};
use stratus_segments::SegmentError;
use stratus_segments::writer::{AppendTicket, MessageToStore};

use super::Node;
use crate::error::Result;

impl Node {
    /// Appends `messages` (one queue) to `shard`'s open segment, in call order, without
    /// waiting; await [`AppendTicket::durable`] before acknowledging.
    ///
    /// # Errors
    /// The shard is not open here, has failed, the write buffer is full, or the node stops.
    pub(crate) fn append(
        &self,
        shard: ShardId,
        messages: Vec<MessageToStore>,
    ) -> Result<AppendTicket, SegmentError> {
        self.writer.append(shard, messages)
    }

    /// Like [`Node::append`], with meta effects committed atomically with the messages
    /// (see `Writer::append_with`): `effects` gets the first queue offset, the handles and
    /// the store time assigned.
    ///
    /// # Errors
    /// As [`Node::append`].
    pub(crate) fn append_with(
        &self,
        shard: ShardId,
        messages: Vec<MessageToStore>,
        effects: impl FnOnce(QueueOffset, &[CommitLogOffset], i64) -> Vec<SegmentEffect>,
    ) -> Result<AppendTicket, SegmentError> {
        self.writer.append_with(shard, messages, effects)
    }

    /// Appends with effects and waits until durable: for the node's own re-stores
    /// (delayed and timer delivery, retries, transaction commits).
    ///
    /// # Errors
    /// As [`Node::append`], or the commit failing or timing out.
    pub(crate) async fn append_durable(
        &self,
        shard: ShardId,
        messages: Vec<MessageToStore>,
        effects: impl FnOnce(QueueOffset, &[CommitLogOffset], i64) -> Vec<SegmentEffect>,
    ) -> Result<()> {
        self.append_with(shard, messages, effects)?
            .durable()
            .await?;
        Ok(())
    }
}

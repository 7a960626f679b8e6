//! Transactional messages (`docs/remoting-protocol.md#transactions`): half messages are
//! stored in `RMQ_SYS_TRANS_HALF_TOPIC` queue 0 of their shard, with their pending state in
//! meta (inserted by the same meta transaction that commits their segment). END_TRANSACTION
//! commits (appends the real message and deletes the pending row in one segment commit) or
//! rolls back (deletes the row); the check service (`services/transaction_check.rs`) asks a
//! live producer of the group about half messages left pending past the transaction timeout.
//!
//! Mirrors `EndTransactionProcessor` and `TransactionalMessageServiceImpl#check`, without
//! the reference's op-queue: a commit and the removal of its pending row are one atomic
//! meta write, so a second commit, a commit after rollback, or a crash in between can
//! neither duplicate nor lose the message.

use std::collections::HashSet;
use std::net::SocketAddr;
use std::sync::Arc;

use bytes::{Bytes, BytesMut};
use parking_lot::Mutex;
use stratus_compat::command::RemotingCommand;
use stratus_compat::message::properties::{Properties, keys};
use stratus_compat::message::record::MessageExt;
use stratus_compat::message::sysflag;
use stratus_compat::request::transaction::{
    EndTransactionRequestHeader, TRANSACTION_COMMIT_TYPE, TRANSACTION_NOT_TYPE,
    TRANSACTION_ROLLBACK_TYPE,
};
use stratus_compat::topic::HALF_TOPIC;
use stratus_compat::types::{CommitLogOffset, ProducerGroup, QueueId, QueueOffset, Topic};
use stratus_meta::{HalfMessage, SegmentEffect, ShardId};
use stratus_segments::handle;
use stratus_segments::writer::MessageToStore;
use tracing::{debug, info};

use crate::error::{GatewayError, Result};
use crate::remoting::Remoting;
use crate::remoting::dispatch::success;
use crate::remoting::rewrite::restore;

/// True when a send is a half message (property `TRAN_MSG=true` or the prepared sysflag).
pub(crate) fn is_half(props: &Properties, sys_flag: i32) -> bool {
    props
        .get(keys::TRAN_MSG)
        .is_some_and(|v| v.eq_ignore_ascii_case("true"))
        || sysflag::transaction_type(sys_flag) == sysflag::TRANSACTION_PREPARED_TYPE
}

/// Turns a send into its half form: stored in the half topic, queue 0, with the real topic
/// and queue kept in properties and the transaction bits cleared. Returns the pending row
/// template (handle, offset and times are filled in when appended).
pub(crate) fn to_half(
    msg: &mut MessageToStore,
    producer_group: &str,
    timeout_ms: i64,
) -> HalfTemplate {
    let mut props = Properties::parse(&msg.properties);
    let uniq = props.get(keys::UNIQ_KEY).unwrap_or_default().to_owned();
    props.insert(keys::REAL_TOPIC, msg.topic.as_str());
    props.insert(keys::REAL_QID, &msg.queue_id.0.to_string());
    props.insert(keys::TRANSACTION_ID, &uniq);
    let group = props.get(keys::PGROUP).unwrap_or(producer_group).to_owned();
    let immunity_ms = props
        .get(keys::CHECK_IMMUNITY_TIME_IN_SECONDS)
        .and_then(|v| v.trim().parse::<i64>().ok())
        .map_or(0, |s| s.saturating_mul(1000));
    let template = HalfTemplate {
        producer_group: ProducerGroup::new(group),
        transaction_id: uniq,
        real_topic: msg.topic.clone(),
        real_queue_id: msg.queue_id,
        first_check_after_ms: timeout_ms.max(immunity_ms),
    };
    msg.properties = props.encode();
    msg.topic = Topic::new(HALF_TOPIC);
    msg.queue_id = QueueId(0);
    msg.sys_flag &= !sysflag::TRANSACTION_ROLLBACK_TYPE;
    template
}

/// What a half message's pending row needs besides what the append assigns.
#[derive(Debug, Clone)]
pub(crate) struct HalfTemplate {
    producer_group: ProducerGroup,
    transaction_id: String,
    real_topic: Topic,
    real_queue_id: QueueId,
    first_check_after_ms: i64,
}

impl HalfTemplate {
    /// The pending row of the half message appended at (`offset`, `handle`, `stored_at_ms`).
    pub(crate) fn effect(
        self,
        shard: ShardId,
        offset: QueueOffset,
        handle: CommitLogOffset,
        stored_at_ms: i64,
    ) -> SegmentEffect {
        SegmentEffect::HalfPrepared(HalfMessage {
            shard,
            handle,
            queue_offset: offset,
            producer_group: self.producer_group,
            transaction_id: self.transaction_id,
            real_topic: self.real_topic,
            real_queue_id: self.real_queue_id,
            stored_at_ms,
            check_times: 0,
            next_check_ms: stored_at_ms.saturating_add(self.first_check_after_ms),
        })
    }
}

/// Half messages being ended right now, so two END_TRANSACTIONs for one never both act.
#[derive(Debug, Default)]
pub(crate) struct Transactions {
    ending: Mutex<HashSet<(ShardId, i64)>>,
}

/// Releases a claim when dropped.
struct Claim<'a> {
    owner: &'a Transactions,
    key: (ShardId, i64),
}

impl Drop for Claim<'_> {
    fn drop(&mut self) {
        self.owner.ending.lock().remove(&self.key);
    }
}

impl Transactions {
    fn claim(&self, shard: ShardId, handle: CommitLogOffset) -> Option<Claim<'_>> {
        let key = (shard, handle.0);
        // The guard must be gone before a Claim can exist: dropping one locks `ending`.
        let inserted = self.ending.lock().insert(key);
        inserted.then(|| Claim { owner: self, key })
    }

    pub(crate) fn is_ending(&self, shard: ShardId, handle: CommitLogOffset) -> bool {
        self.ending.lock().contains(&(shard, handle.0))
    }
}

/// END_TRANSACTION (37). `Ok(None)`: no answer (state "unknown", as the reference).
pub(crate) async fn end(
    rmq: &Arc<Remoting>,
    cmd: &RemotingCommand,
) -> Result<Option<RemotingCommand>> {
    let h = EndTransactionRequestHeader::from_command(cmd)?;
    let commit = match h.commit_or_rollback {
        TRANSACTION_NOT_TYPE => {
            debug!(msg_id = %h.msg_id, from_check = h.from_transaction_check, "transaction still unknown");
            return Ok(None);
        }
        TRANSACTION_COMMIT_TYPE => true,
        TRANSACTION_ROLLBACK_TYPE => false,
        other => {
            return Err(GatewayError::InvalidParameter(format!(
                "invalid commitOrRollback {other}"
            )));
        }
    };
    let handle = CommitLogOffset(h.commit_log_offset);
    let (shard, _) = handle::decode(handle).ok_or_else(|| GatewayError::CommitLogOffsetWrong {
        offset: h.commit_log_offset,
    })?;
    rmq.node.shards.require_owned(shard)?;
    let Some(_claim) = rmq.transactions.claim(shard, handle) else {
        info!(%shard, handle = handle.0, "half message is already being ended; ignoring a second end");
        return Err(GatewayError::TransactionBeingEnded);
    };
    let Some(half) = rmq.node.meta.half_message(shard, handle).await? else {
        // Already committed or rolled back (or never stored): nothing to do, and nothing
        // harmful is done.
        info!(%shard, handle = handle.0, msg_id = %h.msg_id, commit, "end of a transaction that is not pending");
        return Err(GatewayError::LookMessageFailed {
            offset: h.commit_log_offset,
        });
    };
    if half.producer_group.as_str() != h.producer_group {
        return Err(GatewayError::ProducerGroupWrong);
    }
    if half.queue_offset.0 != h.tran_state_table_offset {
        return Err(GatewayError::TranStateTableOffsetWrong);
    }
    if commit {
        let record = rmq.node.read_by_handle(handle).await?.ok_or_else(|| {
            GatewayError::LookMessageFailed {
                offset: h.commit_log_offset,
            }
        })?;
        let msg = committed_message(
            &half,
            record,
            rmq.node.store_host,
            rmq.node.config.delay_levels.len(),
        )?;
        rmq.node
            .append_durable(shard, vec![msg], |_, _, _| {
                vec![SegmentEffect::HalfResolved { shard, handle }]
            })
            .await?;
        info!(%shard, handle = handle.0, topic = %half.real_topic, "transaction committed");
    } else {
        rmq.node.meta.resolve_half_message(shard, handle).await?;
        info!(%shard, handle = handle.0, "transaction rolled back");
    }
    Ok(Some(success()))
}

/// The real message of a committed half message: real topic and queue back, REAL_TOPIC,
/// REAL_QID and TRAN_MSG removed, sysflag COMMIT, PREPAREDTRANSACTIONOFFSET = the half
/// message's handle; body, flag, born info and UNIQ_KEY unchanged.
fn committed_message(
    half: &HalfMessage,
    record: Bytes,
    store_host: SocketAddr,
    levels: usize,
) -> Result<MessageToStore> {
    let mut src = record;
    let m = MessageExt::decode(&mut src).map_err(|e| GatewayError::CorruptRecord {
        what: "half message",
        detail: e.to_string(),
    })?;
    let mut props = Properties::parse(&m.properties);
    props.remove(keys::REAL_TOPIC);
    props.remove(keys::REAL_QID);
    props.remove(keys::TRAN_MSG);
    let delay = crate::remoting::rewrite::delay::requested_level(&props);
    let mut msg = restore(
        &m,
        half.real_topic.clone(),
        half.real_queue_id,
        &props,
        store_host,
    );
    msg.sys_flag =
        (msg.sys_flag & !sysflag::TRANSACTION_ROLLBACK_TYPE) | sysflag::TRANSACTION_COMMIT_TYPE;
    msg.prepared_transaction_offset = half.handle.0;
    // A committed message with a delay level waits in the schedule topic (the reference
    // applies the delay at commit time).
    if let Some(level) = delay {
        crate::remoting::rewrite::delay::to_scheduled(&mut msg, level, levels);
    }
    Ok(msg)
}

/// The record sent with CHECK_TRANSACTION_STATE: the half message with TOPIC and QUEUEID set
/// to the real ones and its check count in `TRANSACTION_CHECK_TIMES`.
pub(crate) fn check_body(half: &HalfMessage, record: Bytes, checks: i32) -> Result<Bytes> {
    let mut src = record;
    let mut m = MessageExt::decode(&mut src).map_err(|e| GatewayError::CorruptRecord {
        what: "half message",
        detail: e.to_string(),
    })?;
    m.topic = half.real_topic.to_string();
    m.queue_id = half.real_queue_id.0;
    let mut props = Properties::parse(&m.properties);
    props.insert(keys::TRANSACTION_CHECK_TIMES, &checks.to_string());
    m.properties = props.encode();
    let mut out = BytesMut::with_capacity(m.encoded_len());
    m.encode(&mut out);
    Ok(out.freeze())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_second_claim_fails_without_releasing_the_first() {
        let t = Transactions::default();
        let first = t
            .claim(ShardId(0), CommitLogOffset(7))
            .expect("first claim");
        assert!(t.claim(ShardId(0), CommitLogOffset(7)).is_none());
        assert!(
            t.is_ending(ShardId(0), CommitLogOffset(7)),
            "the loser did not release it"
        );
        assert!(t.claim(ShardId(0), CommitLogOffset(8)).is_some());
        drop(first);
        assert!(!t.is_ending(ShardId(0), CommitLogOffset(7)));
        assert!(t.claim(ShardId(0), CommitLogOffset(7)).is_some());
    }
}

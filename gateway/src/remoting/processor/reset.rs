//! Offset reset and consumer status asked of the broker by an admin:
//! INVOKE_BROKER_TO_RESET_OFFSET (222) and INVOKE_BROKER_TO_GET_CONSUMER_STATUS (223).
//!
//! The reference has two resets. `Broker2Client#resetOffset` (4.x, and 5.x with
//! `useServerSideResetOffset=false`) computes the table, pushes it to the group's consumers
//! (RESET_CONSUMER_CLIENT_OFFSET, 220), persists nothing itself (each client commits what
//! it was sent) and answers CONSUMER_NOT_ONLINE when no consumer is connected, on which
//! mqadmin resets through GET_CONSUME_STATS and UPDATE_CONSUMER_OFFSET itself.
//! `resetOffsetInner` (5.3.3's default) commits the table at once, pushes nothing, answers
//! it even with no consumer online (SUBSCRIPTION_GROUP_NOT_EXIST for an unknown group), and
//! moves live consumers by answering their next pull of each queue OFFSET_RESET.
//!
//! Stratus does both halves that matter: for each queue of the topic on the asked shard the
//! new offset is found by store time (`timestamp` -1: the max offset, as
//! `skipAccumulatedMessage` asks) and kept at the group's offset when that is already lower
//! and `isForce` is false (only back without force, as `Broker2Client`; the inner reset
//! ignores `isForce`); the table is committed in meta; 220 goes to every consumer of the
//! group connected to this node, once per client id (every client version handles it); the
//! table is the answer. With no consumer here the reset still applies when the group is
//! known — it has a committed offset on one of the queues — as 5.3.3 does; a group unknown
//! here gets CONSUMER_NOT_ONLINE, so mqadmin takes its own path. A 5.x request for one queue
//! (`queueId` ≥ 0, optionally `offset`) resets only that queue, checked against its range as
//! `resetOffsetInner` does. A queue without a committed offset is reset like the others
//! (`Broker2Client` refuses the whole reset, SYSTEM_ERROR "THe consumer group <g> not
//! exist", when one queue has none).
//!
//! Each reset queue is then *fenced* ([`ResetFences`], as the inner reset guards its
//! `resetOffsetTable`): until the group pulls the queue from the reset offset (or
//! [`FENCE_TTL_MS`] passes), commits of any other offset (UPDATE_CONSUMER_OFFSET, a pull's
//! commit flag) are answered but not applied. A Java consumer keeps committing its old
//! offsets for the ~10 s it is suspended by the reset, and commits are applied
//! concurrently, so without the fence a stale commit could land after the reset and the
//! consumer would resume from it.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use parking_lot::Mutex;

use stratus_compat::RequestCode;
use stratus_compat::code::LanguageCode;
use stratus_compat::command::RemotingCommand;
use stratus_compat::request::broker_name;
use stratus_compat::request::lock::MessageQueue;
use stratus_compat::request::relay::{
    GetConsumerStatusRequestHeader, ResetOffsetRequestHeader, encode_consumer_status_body,
    encode_reset_offset_body, encode_reset_offset_body_for_c, raw_field,
};
use stratus_compat::types::{ConsumerGroup, QueueId, QueueOffset, Topic};
use stratus_meta::{ConsumerOffset, QueueKey};
use tracing::{debug, info};

use crate::error::{GatewayError, Result};
use crate::node::shards::shard_name;
use crate::remoting::Remoting;
use crate::remoting::dispatch::{InFlight, success};
use crate::remoting::net::Channel;

/// How long 223 waits for each consumer's status (`Broker2Client#getConsumeStatus`: 5 s).
const STATUS_TIMEOUT: Duration = Duration::from_secs(5);

/// How long a reset queue stays fenced at most (ms) when the group does not pull it.
pub(crate) const FENCE_TTL_MS: i64 = 60_000;

/// Queues of groups whose offsets were just reset: (group, queue) → (offset, fenced until).
#[derive(Debug, Default)]
pub(crate) struct ResetFences {
    fences: Mutex<HashMap<(String, QueueKey), (i64, i64)>>,
}

impl ResetFences {
    /// Fences `queue` of `group` at `offset` until `until_ms` (expired fences are dropped).
    pub(crate) fn set(&self, group: &str, queue: QueueKey, offset: i64, now_ms: i64) {
        let mut f = self.fences.lock();
        f.retain(|_, (_, until)| *until > now_ms);
        f.insert(
            (group.to_owned(), queue),
            (offset, now_ms.saturating_add(FENCE_TTL_MS)),
        );
    }

    /// Whether a commit of `offset` for `queue` of `group` must not be applied: a reset of
    /// it is pending and `offset` is not the reset offset.
    pub(crate) fn blocks_commit(
        &self,
        group: &str,
        queue: &QueueKey,
        offset: i64,
        now_ms: i64,
    ) -> bool {
        let f = self.fences.lock();
        f.get(&(group.to_owned(), queue.clone()))
            .is_some_and(|(reset, until)| *until > now_ms && *reset != offset)
    }

    /// A pull of `queue` by `group` from `offset`: from the reset offset, the consumer has
    /// taken the reset and the fence goes.
    pub(crate) fn pulled(&self, group: &str, queue: &QueueKey, offset: i64) {
        let mut f = self.fences.lock();
        let key = (group.to_owned(), queue.clone());
        if f.get(&key).is_some_and(|(reset, _)| *reset == offset) {
            f.remove(&key);
        }
    }
}

/// INVOKE_BROKER_TO_RESET_OFFSET (222).
pub(crate) async fn reset_offset(
    rmq: &Arc<Remoting>,
    ch: &Channel,
    cmd: &RemotingCommand,
) -> Result<RemotingCommand> {
    let h = ResetOffsetRequestHeader::from_command(cmd)?;
    let shard = rmq
        .node
        .shards
        .require(broker_name(cmd).as_deref(), ch.shard)?;
    let cfg = rmq
        .node
        .topics
        .get(&h.topic)
        .ok_or_else(|| GatewayError::ResetTopicNotExist {
            topic: h.topic.clone(),
        })?;
    let consumers = rmq.registry.consumer_channels_by_client(&h.group);
    let group = ConsumerGroup::new(h.group.clone());
    let queue_ids: Vec<i32> = if h.queue_id >= 0 {
        vec![h.queue_id]
    } else {
        (0..cfg.write_queue_nums.max(0)).collect()
    };
    let mut table = Vec::with_capacity(queue_ids.len());
    let mut commits = Vec::with_capacity(queue_ids.len());
    let mut known = false;
    for queue_id in queue_ids {
        let queue = QueueKey {
            shard,
            topic: Topic::new(h.topic.clone()),
            queue_id: QueueId(queue_id),
        };
        let target = match h.offset.filter(|o| *o != -1 && h.queue_id >= 0) {
            Some(offset) => {
                let (min, max) = rmq.node.bounds(&queue);
                if offset < min.0 || offset > max.0 + 1 {
                    return Err(GatewayError::ResetOffsetOutOfRange {
                        offset,
                        min: min.0,
                        max: max.0,
                    });
                }
                offset
            }
            None => {
                let found = if h.timestamp < 0 {
                    rmq.node.bounds(&queue).1.0
                } else {
                    rmq.node
                        .reader
                        .search_offset_by_time(&queue, h.timestamp, false)
                        .await?
                        .0
                };
                let found = found.max(0);
                let current = rmq.node.committed_offset(&group, &queue).await?;
                known |= current.is_some();
                match current {
                    Some(c) if !h.is_force && found >= c.0 => c.0,
                    _ => found,
                }
            }
        };
        table.push((
            MessageQueue {
                broker_name: shard_name(shard),
                queue_id,
                topic: h.topic.clone(),
            },
            target,
        ));
        commits.push(ConsumerOffset {
            group: group.clone(),
            queue,
            offset: QueueOffset(target),
        });
    }
    if consumers.is_empty() && !known && h.offset.is_none_or(|o| o == -1) {
        return Err(GatewayError::ConsumerNotOnline {
            group: h.group,
            topic: h.topic,
            timestamp: h.timestamp,
        });
    }
    let now = rmq.node.clock.now_ms();
    for c in &commits {
        rmq.resets.set(&h.group, c.queue.clone(), c.offset.0, now);
    }
    if let Err(e) = rmq.node.commit_offsets(&commits).await {
        // Nothing was reset: the fences go again.
        for c in &commits {
            rmq.resets.pulled(&h.group, &c.queue, c.offset.0);
        }
        return Err(e.into());
    }
    let body = encode_reset_offset_body(&table);
    // The reference pushes the C form to every consumer when a C++ admin asked.
    let push_body = if cmd.language == LanguageCode::Cpp {
        encode_reset_offset_body_for_c(&table)
    } else {
        body.clone()
    };
    for (client_id, channel) in &consumers {
        let mut push = RemotingCommand::request(RequestCode::ResetConsumerClientOffset.to_i32(), 0);
        ResetOffsetRequestHeader {
            group: h.group.clone(),
            topic: h.topic.clone(),
            queue_id: -1,
            offset: None,
            timestamp: h.timestamp,
            is_force: false,
        }
        .write_to(&mut push);
        push.body = push_body.clone().into();
        channel.oneway(push);
        info!(topic = %h.topic, group = %h.group, %client_id, "offset reset pushed to the consumer");
    }
    let mut resp = success();
    resp.body = body.into();
    Ok(resp)
}

/// INVOKE_BROKER_TO_GET_CONSUMER_STATUS (223): each consumer of the group (or only
/// `clientAddr`) is asked GET_CONSUMER_STATUS_FROM_CLIENT (221) and its queue table is
/// answered by client id; consumers that fail to answer are left out.
pub(crate) async fn consumer_status(
    rmq: &Arc<Remoting>,
    cmd: &RemotingCommand,
    permit: &mut InFlight,
) -> Result<RemotingCommand> {
    let h = GetConsumerStatusRequestHeader::from_command(cmd)?;
    let consumers = rmq.registry.consumer_channels_by_client(&h.group);
    if consumers.is_empty() {
        return Err(GatewayError::NoConsumerOnline { group: h.group });
    }
    permit.release();
    let mut tables = Vec::new();
    for (client_id, channel) in consumers {
        if h.client_addr.as_ref().is_some_and(|c| *c != client_id) {
            continue;
        }
        let mut ask =
            RemotingCommand::request(RequestCode::GetConsumerStatusFromClient.to_i32(), 0);
        GetConsumerStatusRequestHeader {
            topic: h.topic.clone(),
            group: h.group.clone(),
            client_addr: None,
        }
        .write_to(&mut ask);
        match channel.invoke(ask, STATUS_TIMEOUT).await {
            Ok(answer) if answer.code == 0 => {
                let raw = std::str::from_utf8(&answer.body)
                    .ok()
                    .and_then(|b| raw_field(b, "messageQueueTable"));
                if let Some(raw) = raw {
                    tables.push((client_id.clone(), raw.to_owned()));
                }
            }
            Ok(answer) => {
                debug!(%client_id, code = answer.code, "consumer status refused by the client");
            }
            Err(e) => debug!(%client_id, error = %e, "consumer status not answered"),
        }
        if h.client_addr.is_some() {
            break;
        }
    }
    permit.reacquire().await;
    let mut resp = success();
    resp.body = encode_consumer_status_body(&tables).into();
    Ok(resp)
}

#[cfg(test)]
mod tests {
    use stratus_meta::ShardId;

    use super::*;

    fn q(id: i32) -> QueueKey {
        QueueKey {
            shard: ShardId(0),
            topic: Topic::new("T"),
            queue_id: QueueId(id),
        }
    }

    #[test]
    fn a_fence_blocks_other_offsets_until_the_reset_offset_is_pulled_or_it_expires() {
        let f = ResetFences::default();
        f.set("g", q(0), 3, 1_000);
        assert!(f.blocks_commit("g", &q(0), 7, 1_001), "a stale commit");
        assert!(
            !f.blocks_commit("g", &q(0), 3, 1_001),
            "the reset offset itself"
        );
        assert!(!f.blocks_commit("g", &q(1), 7, 1_001), "another queue");
        assert!(!f.blocks_commit("other", &q(0), 7, 1_001), "another group");
        assert!(
            !f.blocks_commit("g", &q(0), 7, 1_000 + FENCE_TTL_MS),
            "expired"
        );
        f.pulled("g", &q(0), 5);
        assert!(
            f.blocks_commit("g", &q(0), 7, 1_001),
            "a pull elsewhere keeps it"
        );
        f.pulled("g", &q(0), 3);
        assert!(
            !f.blocks_commit("g", &q(0), 7, 1_001),
            "pulled from the reset offset"
        );
        f.set("g", q(2), 0, 0);
        f.set("g", q(3), 0, FENCE_TTL_MS + 1);
        assert_eq!(f.fences.lock().len(), 1, "expired fences are dropped");
    }
}

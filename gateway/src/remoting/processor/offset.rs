//! Consumer offsets and queue offset queries (`docs/remoting-protocol.md#offsets`).
//! Mirrors `ConsumerManageProcessor` and the offset codes of `AdminBrokerProcessor`.

use std::sync::Arc;

use stratus_compat::ResponseCode;
use stratus_compat::command::RemotingCommand;
use stratus_compat::request::offset::{
    BoundaryType, QueryConsumerOffsetRequestHeader, QueueRequestHeader, SearchOffsetRequestHeader,
    UpdateConsumerOffsetRequestHeader, write_offset_response,
};
use stratus_compat::types::{ConsumerGroup, QueueId, QueueOffset, Topic};
use stratus_meta::{ConsumerOffset, QueueKey};

use stratus_compat::request::broker_name;

use crate::error::{GatewayError, Result};
use crate::remoting::Remoting;
use crate::remoting::dispatch::{respond, success};
use crate::remoting::net::Channel;

fn queue_key(
    rmq: &Remoting,
    ch: &Channel,
    cmd: &RemotingCommand,
    topic: &str,
    queue_id: i32,
) -> Result<QueueKey> {
    let shard = rmq
        .node
        .shards
        .require(broker_name(cmd).as_deref(), ch.shard)?;
    Ok(QueueKey {
        shard,
        topic: Topic::new(topic),
        queue_id: QueueId(queue_id),
    })
}

/// QUERY_CONSUMER_OFFSET (14).
pub(crate) async fn query_consumer_offset(
    rmq: &Arc<Remoting>,
    ch: &Channel,
    cmd: &RemotingCommand,
) -> Result<RemotingCommand> {
    let h = QueryConsumerOffsetRequestHeader::from_command(cmd)?;
    let queue = queue_key(rmq, ch, cmd, &h.topic, h.queue_id)?;
    let group = ConsumerGroup::new(h.consumer_group.clone());
    if let Some(off) = rmq.node.committed_offset(&group, &queue).await? {
        let mut resp = success();
        write_offset_response(&mut resp, off.0);
        return Ok(resp);
    }
    // Young-queue rule of the reference: a queue whose first message is still retained
    // (min offset 0) answers 0, so a new group sees what was produced before it started.
    // The reference's "still in page cache" test is simplified to "min offset is 0".
    let (min, max) = rmq.node.bounds(&queue);
    let (min, max) = (min.0, max.0);
    if h.set_zero_if_not_found != Some(false) && min <= 0 && max > 0 {
        let mut resp = success();
        write_offset_response(&mut resp, 0);
        return Ok(resp);
    }
    Ok(respond(
        ResponseCode::QueryNotFound,
        "Not found, V3_0_6_SNAPSHOT maybe this group consumer boot first",
    ))
}

/// UPDATE_CONSUMER_OFFSET (15).
pub(crate) async fn update_consumer_offset(
    rmq: &Arc<Remoting>,
    ch: &Channel,
    cmd: &RemotingCommand,
) -> Result<RemotingCommand> {
    let h = UpdateConsumerOffsetRequestHeader::from_command(cmd)?;
    if rmq.node.topics.get(&h.topic).is_none() {
        return Err(GatewayError::UnknownTopic { topic: h.topic });
    }
    let queue = queue_key(rmq, ch, cmd, &h.topic, h.queue_id)?;
    let now = rmq.node.clock.now_ms();
    if rmq
        .resets
        .blocks_commit(&h.consumer_group, &queue, h.commit_offset, now)
    {
        // A commit made before the consumer took a reset of this queue (processor/reset.rs).
        return Ok(respond(
            ResponseCode::Success,
            "Offset has been previously reset",
        ));
    }
    // One commit of a queue at a time; a client's commit that arrives after a later one of
    // its own (one-way commits are handled concurrently) is not applied over it.
    let slot = rmq.commit_order.slot(&h.consumer_group, &queue);
    let mut last = slot.lock().await;
    if last.is_some_and(|(channel, opaque)| channel == ch.id && opaque.wrapping_sub(cmd.opaque) > 0)
    {
        return Ok(success());
    }
    rmq.node
        .commit_offsets(&[ConsumerOffset {
            group: ConsumerGroup::new(h.consumer_group),
            queue,
            offset: QueueOffset(h.commit_offset),
        }])
        .await?;
    *last = Some((ch.id, cmd.opaque));
    Ok(success())
}

/// One (group, queue)'s last applied commit: the channel and request id it came with;
/// held while a commit of it is written.
type CommitSlot = Arc<tokio::sync::Mutex<Option<(u64, i32)>>>;

/// The last commit applied per (group, queue).
#[derive(Debug, Default)]
pub(crate) struct CommitOrder {
    slots: parking_lot::Mutex<std::collections::HashMap<(String, QueueKey), CommitSlot>>,
}

impl CommitOrder {
    fn slot(&self, group: &str, queue: &QueueKey) -> CommitSlot {
        self.slots
            .lock()
            .entry((group.to_owned(), queue.clone()))
            .or_default()
            .clone()
    }
}

/// GET_MAX_OFFSET (30).
pub(crate) fn max_offset(
    rmq: &Arc<Remoting>,
    ch: &Channel,
    cmd: &RemotingCommand,
) -> Result<RemotingCommand> {
    let h = QueueRequestHeader::from_command(cmd)?;
    let queue = queue_key(rmq, ch, cmd, &h.topic, h.queue_id)?;
    let mut resp = success();
    write_offset_response(&mut resp, rmq.node.bounds(&queue).1.0);
    Ok(resp)
}

/// GET_MIN_OFFSET (31).
pub(crate) fn min_offset(
    rmq: &Arc<Remoting>,
    ch: &Channel,
    cmd: &RemotingCommand,
) -> Result<RemotingCommand> {
    let h = QueueRequestHeader::from_command(cmd)?;
    let queue = queue_key(rmq, ch, cmd, &h.topic, h.queue_id)?;
    let mut resp = success();
    write_offset_response(&mut resp, rmq.node.bounds(&queue).0.0);
    Ok(resp)
}

/// GET_EARLIEST_MSG_STORETIME (32).
pub(crate) async fn earliest_store_time(
    rmq: &Arc<Remoting>,
    ch: &Channel,
    cmd: &RemotingCommand,
) -> Result<RemotingCommand> {
    let h = QueueRequestHeader::from_command(cmd)?;
    let queue = queue_key(rmq, ch, cmd, &h.topic, h.queue_id)?;
    let (min, max) = rmq.node.bounds(&queue);
    let ts = if max > min {
        rmq.node
            .reader
            .store_time_at(&queue, min)
            .await?
            .unwrap_or(0)
    } else {
        0
    };
    let mut resp = success();
    resp.put_ext("timestamp", ts);
    Ok(resp)
}

/// SEARCH_OFFSET_BY_TIMESTAMP (29).
pub(crate) async fn search_by_time(
    rmq: &Arc<Remoting>,
    ch: &Channel,
    cmd: &RemotingCommand,
) -> Result<RemotingCommand> {
    let h = SearchOffsetRequestHeader::from_command(cmd)?;
    let queue = queue_key(rmq, ch, cmd, &h.topic, h.queue_id)?;
    let off = rmq
        .node
        .reader
        .search_offset_by_time(&queue, h.timestamp, h.boundary_type == BoundaryType::Upper)
        .await?;
    let mut resp = success();
    write_offset_response(&mut resp, off.0);
    Ok(resp)
}

//! CONSUMER_SEND_MSG_BACK (36; `docs/remoting-protocol.md#send-back`): a consumer's failed
//! message is re-stored for redelivery in `%RETRY%<group>` (through a delay level) or, past
//! its maximum reconsume times, in `%DLQ%<group>`. Mirrors
//! `AbstractSendMessageProcessor#consumerSendMsgBack`.

use std::sync::Arc;

use bytes::Bytes;
use stratus_compat::command::RemotingCommand;
use stratus_compat::message::properties::{Properties, keys};
use stratus_compat::message::record::MessageExt;
use stratus_compat::request::consumer::ConsumerSendMsgBackRequestHeader;
use stratus_compat::topic::{DLQ_PREFIX, MAX_TOPIC_LEN, PERM_READ, PERM_WRITE, RETRY_PREFIX};
use stratus_compat::types::{CommitLogOffset, QueueId, Topic};
use stratus_segments::handle;
use tracing::info;

use super::delay::to_scheduled;
use super::restore;
use crate::error::{GatewayError, Result};
use crate::node::topics::topic_config;
use crate::remoting::Remoting;
use crate::remoting::dispatch::success;

/// Version from which a client's `maxReconsumeTimes` is honoured (V3_4_9).
pub(crate) const VERSION_WITH_MAX_RECONSUME: i32 = 121;
/// A group's default `retryMaxTimes`.
pub(crate) const DEFAULT_MAX_RECONSUME: i32 = 16;

/// CONSUMER_SEND_MSG_BACK (36): the failed message goes to `%RETRY%<group>` through the
/// delay level `delayLevel` (or 3 + its reconsume times), or to `%DLQ%<group>` once it has
/// been reconsumed the maximum number of times (or `delayLevel` < 0).
/// Mirrors `AbstractSendMessageProcessor#consumerSendMsgBack`.
pub(crate) async fn send_back(
    rmq: &Arc<Remoting>,
    cmd: &RemotingCommand,
) -> Result<RemotingCommand> {
    let h = ConsumerSendMsgBackRequestHeader::from_command(cmd)?;
    let handle = CommitLogOffset(h.offset);
    let (shard, _) = handle::decode(handle)
        .ok_or_else(|| GatewayError::LookMessageFailed { offset: h.offset })?;
    rmq.node.shards.require_owned(shard)?;
    let record: Bytes = rmq
        .node
        .read_by_handle(handle)
        .await?
        .ok_or_else(|| GatewayError::LookMessageFailed { offset: h.offset })?;
    let m = MessageExt::decode(&mut record.clone()).map_err(|e| GatewayError::CorruptRecord {
        what: "message",
        detail: format!("at {}: {e}", h.offset),
    })?;
    let max = match h.max_reconsume_times {
        Some(n) if cmd.version >= VERSION_WITH_MAX_RECONSUME => n,
        _ => DEFAULT_MAX_RECONSUME,
    };
    let mut props = Properties::parse(&m.properties);
    if props.get(keys::RETRY_TOPIC).is_none() {
        props.insert(keys::RETRY_TOPIC, &m.topic);
    }
    if props.get(keys::ORIGIN_MESSAGE_ID).is_none() {
        let origin = h
            .origin_msg_id
            .clone()
            .or_else(|| props.get(keys::UNIQ_KEY).map(str::to_owned))
            .unwrap_or_default();
        props.insert(keys::ORIGIN_MESSAGE_ID, &origin);
    }
    props.remove(keys::DELAY);
    let dead = m.reconsume_times >= max || h.delay_level < 0;
    let topic = if dead {
        format!("{DLQ_PREFIX}{}", h.group)
    } else {
        format!("{RETRY_PREFIX}{}", h.group)
    };
    if topic.len() > MAX_TOPIC_LEN {
        return Err(GatewayError::GroupNameTooLong { topic });
    }
    rmq.node
        .topics
        .create_if_absent(topic_config(&topic, 1, PERM_READ | PERM_WRITE))
        .await?;
    let mut msg = restore(
        &m,
        Topic::new(topic.clone()),
        QueueId(0),
        &props,
        rmq.node.store_host,
    );
    msg.reconsume_times = m.reconsume_times + 1;
    msg.prepared_transaction_offset = 0;
    if !dead {
        let level = if h.delay_level > 0 {
            h.delay_level
        } else {
            3 + m.reconsume_times
        };
        to_scheduled(&mut msg, level, rmq.node.config.delay_levels.len());
    }
    rmq.node
        .append_durable(shard, vec![msg], |_, _, _| Vec::new())
        .await?;
    let origin = props.get(keys::RETRY_TOPIC).unwrap_or(&m.topic);
    rmq.node.stats.on_send_back(shard, origin, &h.group, dead);
    if dead {
        info!(group = %h.group, reconsume = m.reconsume_times, "message moved to the dead-letter queue");
    }
    Ok(success())
}

//! PULL_MESSAGE (11) and LITE_PULL_MESSAGE (361), with long polling.
//!
//! Mirrors `PullMessageProcessor#processRequest` (checks, in order), the status table of
//! `DefaultMessageStore#getMessage` (`docs/remoting-protocol.md#pull-status`) and
//! `PullRequestHoldService` (a parked pull is re-run once when its queue's committed max
//! offset moves, or at its deadline).

use std::sync::Arc;
use std::time::Duration;

use bytes::BytesMut;
use stratus_compat::ResponseCode;
use stratus_compat::command::RemotingCommand;
use stratus_compat::message::record::MessageExt;
use stratus_compat::request::pull::{
    PULL_FLAG_CLASS_FILTER, PULL_FLAG_COMMIT_OFFSET, PULL_FLAG_SUBSCRIPTION, PULL_FLAG_SUSPEND,
    PullMessageRequestHeader, PullMessageResponseHeader,
};
use stratus_compat::types::{ConsumerGroup, QueueId, QueueOffset, Topic};
use stratus_meta::{ConsumerOffset, QueueKey};
use stratus_segments::format::EntryMeta;

use crate::node::queues::Waited;

use crate::error::{GatewayError, Result};
use crate::remoting::Remoting;
use crate::remoting::dispatch::{InFlight, respond};
use crate::remoting::filter::MessageFilter;
use crate::remoting::net::Channel;
use stratus_compat::topic::PERM_READ;

/// The status of one pull attempt.
struct Attempt {
    code: ResponseCode,
    status: &'static str,
    next: i64,
    min: i64,
    max: i64,
    body: Option<BytesMut>,
    /// Messages in `body`.
    messages: usize,
}

/// Handles a pull holding no in-flight permits (processor unit tests).
#[cfg(test)]
pub(crate) async fn handle(
    rmq: &Arc<Remoting>,
    ch: &Arc<Channel>,
    cmd: RemotingCommand,
) -> Result<RemotingCommand> {
    handle_holding(rmq, ch, cmd, &mut InFlight::default()).await
}

/// The pull, holding `in_flight`: given back while the pull is parked.
pub(crate) async fn handle_holding(
    rmq: &Arc<Remoting>,
    ch: &Arc<Channel>,
    cmd: RemotingCommand,
    in_flight: &mut InFlight,
) -> Result<RemotingCommand> {
    let h = PullMessageRequestHeader::from_command(&cmd)?;
    // The group first, as the reference (`findSubscriptionGroupConfig`, cached).
    match rmq.groups.find_cached(&rmq.node, &h.consumer_group).await {
        None => {
            return Err(GatewayError::PullGroupNotExist {
                group: h.consumer_group,
            });
        }
        Some(g) if !g.consume_enable => {
            return Err(GatewayError::GroupConsumeDisabled {
                group: h.consumer_group,
            });
        }
        Some(_) => {}
    }
    let cfg = rmq
        .node
        .topics
        .get(&h.topic)
        .ok_or_else(|| GatewayError::TopicNotExist {
            topic: h.topic.clone(),
        })?;
    if cfg.perm & PERM_READ == 0 {
        return Err(GatewayError::NotReadable {
            topic: h.topic.clone(),
        });
    }
    if h.queue_id < 0 || h.queue_id >= cfg.read_queue_nums {
        return Err(GatewayError::PullQueueIllegal {
            queue_id: h.queue_id,
            topic: h.topic.clone(),
            read_queues: cfg.read_queue_nums,
            consumer: ch.peer,
        });
    }
    let shard = rmq
        .node
        .shards
        .require(h.broker_name.as_deref(), ch.shard)?;
    let filter = subscription_filter(rmq, &h)?;
    let queue = QueueKey {
        shard,
        topic: Topic::new(h.topic.clone()),
        queue_id: QueueId(h.queue_id),
    };

    let now = rmq.node.clock.now_ms();
    if h.has_flag(PULL_FLAG_COMMIT_OFFSET)
        && h.commit_offset >= 0
        && !rmq
            .resets
            .blocks_commit(&h.consumer_group, &queue, h.commit_offset, now)
    {
        rmq.node
            .commit_offsets(&[ConsumerOffset {
                group: ConsumerGroup::new(h.consumer_group.clone()),
                queue: queue.clone(),
                offset: QueueOffset(h.commit_offset),
            }])
            .await?;
    }
    rmq.resets.pulled(&h.consumer_group, &queue, h.queue_offset);

    let max_count = usize::try_from(h.max_msg_nums.max(1))
        .unwrap_or(32)
        .min(rmq.node.config.broker.max_pull_messages.max(1));
    let mut max_bytes = rmq.node.config.broker.max_pull_bytes.as_usize();
    if let Some(m) = h
        .max_msg_bytes
        .and_then(|m| usize::try_from(m).ok())
        .filter(|m| *m > 0)
    {
        max_bytes = max_bytes.min(m);
    }
    let mut read_at = std::time::Instant::now();
    let mut attempt = pull_once(rmq, &queue, h.queue_offset, max_count, max_bytes, &filter).await?;
    if attempt.code == ResponseCode::PullNotFound && h.has_flag(PULL_FLAG_SUSPEND) {
        let hold = if rmq.node.config.broker.long_polling {
            Duration::from_millis(u64::try_from(h.suspend_timeout_millis).unwrap_or(0))
                .min(rmq.node.config.broker.max_suspend)
        } else {
            rmq.node.config.broker.short_polling
        };
        if let Some(_permit) = rmq.node.try_park() {
            let offset = QueueOffset(h.queue_offset);
            let gone = ch.closed.cancelled();
            // Parked, the pull holds a slot of the parked budget, not of the in-flight ones.
            in_flight.release();
            if rmq.node.wait_past(&queue, offset, hold, gone).await == Waited::Abandoned {
                return Err(GatewayError::ConnectionClosed);
            }
            in_flight.reacquire().await;
            read_at = std::time::Instant::now();
            attempt = pull_once(rmq, &queue, h.queue_offset, max_count, max_bytes, &filter).await?;
        }
    }
    rmq.node.stats.on_get(
        shard,
        &h.topic,
        &h.consumer_group,
        u64::try_from(attempt.messages).unwrap_or(u64::MAX),
        attempt.body.as_ref().map_or(0, |b| b.len() as u64),
        u64::try_from(read_at.elapsed().as_millis()).unwrap_or(u64::MAX),
    );
    tracing::debug!(
        group = %h.consumer_group,
        topic = %h.topic,
        queue = h.queue_id,
        offset = h.queue_offset,
        status = attempt.status,
        next = attempt.next,
        bytes = attempt.body.as_ref().map_or(0, BytesMut::len),
        "pull answered"
    );
    let mut resp = respond(attempt.code, attempt.status);
    PullMessageResponseHeader {
        suggest_which_broker_id: 0,
        next_begin_offset: attempt.next,
        min_offset: attempt.min,
        max_offset: attempt.max,
    }
    .write_to(&mut resp);
    if let Some(body) = attempt.body {
        resp.body = body.freeze();
    }
    Ok(resp)
}

/// The filter of this pull: from the header with the SUBSCRIPTION bit, else from the
/// group's heartbeat. An SQL92 expression that does not compile → SUBSCRIPTION_PARSE_FAILED.
fn subscription_filter(rmq: &Remoting, h: &PullMessageRequestHeader) -> Result<MessageFilter> {
    if h.has_flag(PULL_FLAG_CLASS_FILTER) {
        return Ok(MessageFilter::compile("*", None));
    }
    let filter = if h.has_flag(PULL_FLAG_SUBSCRIPTION) {
        MessageFilter::compile(
            h.subscription.as_deref().unwrap_or("*"),
            h.expression_type.as_deref(),
        )
    } else {
        let sub = rmq
            .registry
            .subscription(&h.consumer_group, &h.topic)
            .map_err(|()| GatewayError::GroupNotExist {
                group: h.consumer_group.clone(),
            })?
            .ok_or_else(|| GatewayError::SubscriptionNotExist {
                group: h.consumer_group.clone(),
                topic: h.topic.clone(),
            })?;
        if sub.data.sub_version < h.sub_version {
            return Err(GatewayError::SubscriptionNotLatest {
                group: h.consumer_group.clone(),
                version: sub.data.sub_version,
            });
        }
        sub.filter
    };
    if let MessageFilter::Invalid(e) = &filter {
        return Err(GatewayError::SubscriptionParseFailed(format!(
            "parse the consumer's subscription failed: {e}"
        )));
    }
    Ok(filter)
}

async fn pull_once(
    rmq: &Remoting,
    queue: &QueueKey,
    offset: i64,
    max_count: usize,
    max_bytes: usize,
    filter: &MessageFilter,
) -> Result<Attempt> {
    let (min, max) = rmq.node.bounds(queue);
    let (min, max) = (min.0, max.0);
    let status = |code, status, next| Attempt {
        code,
        status,
        next,
        min,
        max,
        body: None,
        messages: 0,
    };
    if max == 0 {
        let code = if offset == 0 {
            ResponseCode::PullNotFound
        } else {
            ResponseCode::PullOffsetMoved
        };
        return Ok(status(code, "NO_MESSAGE_IN_QUEUE", 0));
    }
    if offset < min {
        return Ok(status(
            ResponseCode::PullOffsetMoved,
            "OFFSET_TOO_SMALL",
            min,
        ));
    }
    if offset == max {
        return Ok(status(
            ResponseCode::PullNotFound,
            "OFFSET_OVERFLOW_ONE",
            offset,
        ));
    }
    if offset > max {
        return Ok(status(
            ResponseCode::PullOffsetMoved,
            "OFFSET_OVERFLOW_BADLY",
            max,
        ));
    }
    let matches = |e: &EntryMeta| filter.matches_code(e.tags_code);
    let batch = rmq
        .node
        .reader
        .read(queue, QueueOffset(offset), max_count, max_bytes, &matches)
        .await?;
    // SQL92 filters need the properties: evaluate them on the records read. Entries they
    // reject still count as examined, so `next` moves past them for good.
    let messages: Vec<&bytes::Bytes> = if filter.needs_properties() {
        batch
            .messages
            .iter()
            .filter(|m| {
                MessageExt::decode(&mut (*m).clone())
                    .is_ok_and(|r| filter.matches_properties(&r.properties))
            })
            .collect()
    } else {
        batch.messages.iter().collect()
    };
    if messages.is_empty() {
        return Ok(status(
            ResponseCode::PullRetryImmediately,
            "NO_MATCHED_MESSAGE",
            batch.next_offset.0,
        ));
    }
    let count = messages.len();
    let mut body = BytesMut::with_capacity(messages.iter().map(|m| m.len()).sum());
    for m in messages {
        body.extend_from_slice(m);
    }
    Ok(Attempt {
        code: ResponseCode::Success,
        status: "FOUND",
        next: batch.next_offset.0,
        min,
        max,
        body: Some(body),
        messages: count,
    })
}

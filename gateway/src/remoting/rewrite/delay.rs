//! Delay levels (§19.8) and consumer retry (§19.7, CONSUMER_SEND_MSG_BACK).
//!
//! A message with `DELAY = n` is stored in `SCHEDULE_TOPIC_XXXX` queue `n - 1` of its shard
//! (levels above the maximum clamp to it) with REAL_TOPIC / REAL_QID kept in properties. The
//! scheduler of each owned shard delivers each level's queue in order once a message's store
//! time plus the level's delay has passed: it appends the message to its real topic and
//! queue (DELAY removed) together with a `ScheduleProgress` effect, so the delivery and the
//! level's progress commit in one meta transaction and a restart neither repeats nor loses
//! a delivery. Mirrors `ScheduleMessageService` and `HookUtils#handleScheduleMessage`.
//!
//! Timer messages (5.x `TIMER_*` properties) wait in `rmq_sys_wheel_timer` queue 0; their
//! due time is indexed in meta (`SegmentEffect::TimerScheduled`) and delivery removes the
//! index row in the same commit (`TimerDelivered`). See `docs/timers.md`.

use std::collections::HashMap;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use stratus_compat::command::RemotingCommand;
use stratus_compat::message::properties::{Properties, keys};
use stratus_compat::message::record::MessageExt;
use stratus_compat::request::consumer::ConsumerSendMsgBackRequestHeader;
use stratus_compat::types::{CommitLogOffset, QueueId, QueueOffset, Topic};
use stratus_meta::{QueueKey, SegmentEffect, ShardId};
use stratus_segments::handle;
use stratus_segments::writer::MessageToStore;
use tracing::{info, warn};

use crate::app::Broker;
use crate::dispatch::success;
use crate::error::{GatewayError, Result};
use crate::restore::restore;
use crate::topics::{DLQ_PREFIX, PERM_READ, PERM_WRITE, RETRY_PREFIX, topic_config};

/// Topic of delayed messages.
pub(crate) const SCHEDULE_TOPIC: &str = "SCHEDULE_TOPIC_XXXX";
/// Version from which a client's `maxReconsumeTimes` is honoured (V3_4_9).
const VERSION_WITH_MAX_RECONSUME: i32 = 121;
/// A group's default `retryMaxTimes`.
const DEFAULT_MAX_RECONSUME: i32 = 16;

/// Parses `messageDelayLevel` ("1s 5s 10s 30s 1m …", units s m h d).
///
/// # Errors
/// A message naming the bad element.
pub(crate) fn parse_levels(text: &str) -> std::result::Result<Vec<Duration>, String> {
    let mut out = Vec::new();
    for part in text.split_whitespace() {
        let (num, unit) = part.split_at(part.len().saturating_sub(1));
        let n: u64 = num
            .parse()
            .map_err(|_| format!("bad delay level {part:?}"))?;
        let secs = match unit {
            "s" => n,
            "m" => n * 60,
            "h" => n * 3600,
            "d" => n * 86_400,
            _ => {
                return Err(format!(
                    "bad unit in delay level {part:?} (use s, m, h or d)"
                ));
            }
        };
        out.push(Duration::from_secs(secs));
    }
    if out.is_empty() {
        return Err("no delay levels".into());
    }
    Ok(out)
}

/// The configured levels (validated at start-up, so parsing cannot fail here).
pub(crate) fn levels(broker: &Broker) -> Vec<Duration> {
    parse_levels(&broker.settings.broker.message_delay_level)
        .unwrap_or_else(|_| vec![Duration::from_secs(1)])
}

/// Moves a message into the schedule topic for `level` (clamped to 1..=max).
pub(crate) fn to_scheduled(msg: &mut MessageToStore, level: i32, max_level: usize) {
    let level = level.clamp(1, i32::try_from(max_level).unwrap_or(i32::MAX));
    let mut props = Properties::parse(&msg.properties);
    props.insert(keys::REAL_TOPIC, msg.topic.as_str());
    props.insert(keys::REAL_QID, &msg.queue_id.0.to_string());
    props.insert(keys::DELAY, &level.to_string());
    msg.properties = props.encode();
    msg.topic = Topic::new(SCHEDULE_TOPIC);
    msg.queue_id = QueueId(level - 1);
}

/// Topic of pending timer messages.
pub(crate) const TIMER_TOPIC: &str = "rmq_sys_wheel_timer";
const TIMER_DELIVER_MS: &str = "TIMER_DELIVER_MS";
const TIMER_DELAY_SEC: &str = "TIMER_DELAY_SEC";
const TIMER_DELAY_MS: &str = "TIMER_DELAY_MS";
const TIMER_OUT_MS: &str = "TIMER_OUT_MS";

/// The delivery time a send asks for with the 5.x timer properties (`TIMER_DELIVER_MS`
/// absolute, else `TIMER_DELAY_SEC` / `TIMER_DELAY_MS` from `now_ms`). No three-day cap.
///
/// # Errors
/// MESSAGE_ILLEGAL for a value that is not a number.
pub(crate) fn requested_timer(props: &Properties, now_ms: i64) -> Result<Option<i64>> {
    let num = |k: &str| -> Result<Option<i64>> {
        props
            .get(k)
            .map(|v| {
                v.trim().parse::<i64>().map_err(|_| {
                    GatewayError::MessageIllegal(format!(
                        "timer property {k} is not a number: {v:?}"
                    ))
                })
            })
            .transpose()
    };
    if let Some(at) = num(TIMER_DELIVER_MS)? {
        return Ok(Some(at));
    }
    if let Some(s) = num(TIMER_DELAY_SEC)? {
        return Ok(Some(now_ms.saturating_add(s.saturating_mul(1000))));
    }
    Ok(num(TIMER_DELAY_MS)?.map(|ms| now_ms.saturating_add(ms)))
}

/// Moves a message into the timer topic until `due_ms`.
pub(crate) fn to_timer(msg: &mut MessageToStore, due_ms: i64) {
    let mut props = Properties::parse(&msg.properties);
    props.insert(keys::REAL_TOPIC, msg.topic.as_str());
    props.insert(keys::REAL_QID, &msg.queue_id.0.to_string());
    props.insert(TIMER_OUT_MS, &due_ms.to_string());
    msg.properties = props.encode();
    msg.topic = Topic::new(TIMER_TOPIC);
    msg.queue_id = QueueId(0);
}

/// The timer loop: every 50 ms, each owned shard delivers its due timer messages (found
/// through meta's due-time index, never by scanning).
pub(crate) async fn run_timers(broker: Arc<Broker>) {
    loop {
        tokio::select! {
            () = broker.cancel.cancelled() => return,
            () = broker.clock.sleep(Duration::from_millis(50)) => {}
        }
        for (shard, _) in broker.shards.all() {
            if let Err(e) = deliver_timers(&broker, shard).await {
                warn!(%shard, error = %e, "timer delivery failed; will retry");
            }
        }
    }
}

async fn deliver_timers(broker: &Broker, shard: ShardId) -> Result<()> {
    for (handle, _due) in broker
        .meta
        .due_timers(shard, broker.clock.now_ms(), 256)
        .await?
    {
        let Some(record) = broker.reader.read_by_handle(handle).await? else {
            warn!(%shard, handle = handle.0, "timer record missing");
            continue;
        };
        let m = MessageExt::decode(&mut record.clone())
            .map_err(|e| GatewayError::System(format!("corrupt timer message: {e}")))?;
        let Some(msg) = delivered(&m, broker) else {
            warn!(%shard, handle = handle.0, "timer message without a valid real topic");
            continue;
        };
        let ticket = broker.writer.append_with(shard, vec![msg], |_, _, _| {
            vec![SegmentEffect::TimerDelivered { shard, handle }]
        })?;
        ticket.durable().await?;
    }
    Ok(())
}

/// The delay level a send asks for (`DELAY` > 0), if any.
pub(crate) fn requested_level(props: &Properties) -> Option<i32> {
    props
        .get(keys::DELAY)
        .and_then(|d| d.trim().parse::<i32>().ok())
        .filter(|d| *d > 0)
}

/// The scheduler loop: every 100 ms, each owned shard's levels deliver what is due.
pub(crate) async fn run(broker: Arc<Broker>) {
    let levels = levels(&broker);
    let mut progress: HashMap<(ShardId, i32), QueueOffset> = HashMap::new();
    let mut loaded: Vec<ShardId> = Vec::new();
    loop {
        tokio::select! {
            () = broker.cancel.cancelled() => return,
            () = broker.clock.sleep(Duration::from_millis(100)) => {}
        }
        let owned: Vec<ShardId> = broker.shards.all().into_iter().map(|(s, _)| s).collect();
        loaded.retain(|s| owned.contains(s));
        progress.retain(|(s, _), _| owned.contains(s));
        for shard in owned {
            if !loaded.contains(&shard) {
                match broker.meta.schedule_progress(shard).await {
                    Ok(p) => {
                        for (level, next) in p {
                            progress.insert((shard, level), next);
                        }
                        loaded.push(shard);
                    }
                    Err(e) => {
                        warn!(%shard, error = %e, "cannot load delay progress; will retry");
                        continue;
                    }
                }
            }
            for (i, delay) in levels.iter().enumerate() {
                let level = i32::try_from(i + 1).unwrap_or(i32::MAX);
                let next = progress.entry((shard, level)).or_insert(QueueOffset(0));
                if let Err(e) = deliver_due(&broker, shard, level, *delay, next).await {
                    warn!(%shard, level, error = %e, "delayed delivery failed; will retry");
                }
            }
        }
    }
}

async fn deliver_due(
    broker: &Broker,
    shard: ShardId,
    level: i32,
    delay: Duration,
    next: &mut QueueOffset,
) -> Result<()> {
    let queue = QueueKey {
        shard,
        topic: Topic::new(SCHEDULE_TOPIC),
        queue_id: QueueId(level - 1),
    };
    let delay_ms = crate::config::millis(delay);
    let min = broker.heads.min_offset(&queue);
    if *next < min {
        *next = min;
    }
    while *next < broker.heads.max_offset(&queue) {
        let batch = broker
            .reader
            .read(&queue, *next, 32, 4 << 20, &|_| true)
            .await?;
        if batch.messages.is_empty() {
            *next = batch.next_offset;
            continue;
        }
        for record in batch.messages {
            let m = MessageExt::decode(&mut record.clone())
                .map_err(|e| GatewayError::System(format!("corrupt scheduled message: {e}")))?;
            if m.store_timestamp.saturating_add(delay_ms) > broker.clock.now_ms() {
                return Ok(());
            }
            let after = QueueOffset(m.queue_offset + 1);
            match delivered(&m, broker) {
                Some(msg) => {
                    let ticket = broker.writer.append_with(shard, vec![msg], |_, _, _| {
                        vec![SegmentEffect::ScheduleProgress {
                            shard,
                            level,
                            next_offset: after,
                        }]
                    })?;
                    ticket.durable().await?;
                }
                None => {
                    warn!(%shard, level, offset = m.queue_offset, "scheduled message without a valid real topic; skipped")
                }
            }
            *next = after;
        }
    }
    Ok(())
}

/// The message a scheduled one becomes at its due time: real topic and queue back, DELAY
/// and timer properties removed, REAL_TOPIC / REAL_QID kept, new store time and offsets.
fn delivered(m: &MessageExt, broker: &Broker) -> Option<MessageToStore> {
    let mut props = Properties::parse(&m.properties);
    let topic = props.get(keys::REAL_TOPIC)?.to_owned();
    let queue_id: i32 = props.get(keys::REAL_QID)?.parse().ok()?;
    props.remove(keys::DELAY);
    for k in [
        TIMER_DELIVER_MS,
        TIMER_DELAY_SEC,
        TIMER_DELAY_MS,
        TIMER_OUT_MS,
    ] {
        props.remove(k);
    }
    Some(restore(
        m,
        Topic::new(topic),
        QueueId(queue_id),
        &props,
        broker.store_host,
    ))
}

/// CONSUMER_SEND_MSG_BACK (36): the failed message goes to `%RETRY%<group>` through the
/// delay level `delayLevel` (or 3 + its reconsume times), or to `%DLQ%<group>` once it has
/// been reconsumed the maximum number of times (or `delayLevel` < 0).
/// Mirrors `AbstractSendMessageProcessor#consumerSendMsgBack`.
pub(crate) async fn send_back(
    broker: &Arc<Broker>,
    cmd: &RemotingCommand,
) -> Result<RemotingCommand> {
    let h = ConsumerSendMsgBackRequestHeader::from_command(cmd)?;
    let handle = CommitLogOffset(h.offset);
    let (shard, _) = handle::decode(handle).ok_or_else(|| {
        GatewayError::System(format!("look message by offset failed, {}", h.offset))
    })?;
    broker.shards.require_owned(shard)?;
    let record: Bytes = broker.reader.read_by_handle(handle).await?.ok_or_else(|| {
        GatewayError::System(format!("look message by offset failed, {}", h.offset))
    })?;
    let m = MessageExt::decode(&mut record.clone())
        .map_err(|e| GatewayError::System(format!("corrupt message at {}: {e}", h.offset)))?;
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
    if topic.len() > crate::topics::MAX_TOPIC_LEN {
        return Err(GatewayError::InvalidParameter(format!(
            "group name too long for {topic}"
        )));
    }
    broker
        .topics
        .create_if_absent(topic_config(&topic, 1, PERM_READ | PERM_WRITE))
        .await?;
    let mut msg = restore(
        &m,
        Topic::new(topic.clone()),
        QueueId(0),
        &props,
        broker.store_host,
    );
    msg.reconsume_times = m.reconsume_times + 1;
    msg.prepared_transaction_offset = 0;
    if !dead {
        let level = if h.delay_level > 0 {
            h.delay_level
        } else {
            3 + m.reconsume_times
        };
        to_scheduled(&mut msg, level, levels(broker).len());
    }
    let ticket = broker.writer.append(shard, vec![msg])?;
    ticket.durable().await?;
    if dead {
        info!(group = %h.group, reconsume = m.reconsume_times, "message moved to the dead-letter queue");
    }
    Ok(success())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn delay_levels_parse_like_the_reference() {
        let l = parse_levels("1s 5s 10s 30s 1m 2m 3m 4m 5m 6m 7m 8m 9m 10m 20m 30m 1h 2h").unwrap();
        assert_eq!(l.len(), 18);
        assert_eq!(l[2], Duration::from_secs(10));
        assert_eq!(l[17], Duration::from_secs(7200));
        assert_eq!(
            parse_levels("1d").unwrap(),
            vec![Duration::from_secs(86_400)]
        );
        assert!(parse_levels("5x").is_err());
        assert!(parse_levels("").is_err());
    }
}

//! Delay levels (`docs/remoting-protocol.md#delay-levels`): a message with `DELAY = n` waits
//! in `SCHEDULE_TOPIC_XXXX` queue `n - 1` of its shard (levels above the maximum clamp to
//! it) with REAL_TOPIC / REAL_QID kept in properties, until the delay service
//! (`services/delay.rs`) re-stores it in its real topic and queue. Mirrors
//! `ScheduleMessageService` and `HookUtils#handleScheduleMessage`.

use stratus_compat::message::properties::{Properties, keys};
use stratus_compat::topic::SCHEDULE_TOPIC;
use stratus_compat::types::{QueueId, Topic};
use stratus_segments::writer::MessageToStore;

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

/// The delay level a send asks for (`DELAY` > 0), if any.
pub(crate) fn requested_level(props: &Properties) -> Option<i32> {
    props
        .get(keys::DELAY)
        .and_then(|d| d.trim().parse::<i32>().ok())
        .filter(|d| *d > 0)
}

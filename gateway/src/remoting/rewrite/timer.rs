//! Timer messages (5.x `TIMER_*` properties): they wait in `rmq_sys_wheel_timer` queue 0;
//! their due time is indexed in meta with the commit (`SegmentEffect::TimerScheduled`) and
//! the timer service (`services/timers.rs`) delivers them, removing the index row in the
//! same commit (`TimerDelivered`). No three-day cap. See `docs/timers.md`.

use stratus_compat::message::properties::{Properties, keys};
use stratus_compat::topic::TIMER_TOPIC;
use stratus_compat::types::{QueueId, Topic};
use stratus_segments::writer::MessageToStore;

use crate::error::{GatewayError, Result};

/// The delivery time a send asks for with the 5.x timer properties (`TIMER_DELIVER_MS`
/// absolute, else `TIMER_DELAY_SEC` / `TIMER_DELAY_MS` from `now_ms`). No three-day cap.
///
/// # Errors
/// MESSAGE_ILLEGAL for a value that is not a number.
pub(crate) fn requested_timer(props: &Properties, now_ms: i64) -> Result<Option<i64>> {
    let num = |k: &'static str| -> Result<Option<i64>> {
        props
            .get(k)
            .map(|v| {
                v.trim()
                    .parse::<i64>()
                    .map_err(|_| GatewayError::BadTimerProperty {
                        key: k,
                        value: v.to_owned(),
                    })
            })
            .transpose()
    };
    if let Some(at) = num(keys::TIMER_DELIVER_MS)? {
        return Ok(Some(at));
    }
    if let Some(s) = num(keys::TIMER_DELAY_SEC)? {
        return Ok(Some(now_ms.saturating_add(s.saturating_mul(1000))));
    }
    Ok(num(keys::TIMER_DELAY_MS)?.map(|ms| now_ms.saturating_add(ms)))
}

/// Moves a message into the timer topic until `due_ms`.
pub(crate) fn to_timer(msg: &mut MessageToStore, due_ms: i64) {
    let mut props = Properties::parse(&msg.properties);
    props.insert(keys::REAL_TOPIC, msg.topic.as_str());
    props.insert(keys::REAL_QID, &msg.queue_id.0.to_string());
    props.insert(keys::TIMER_OUT_MS, &due_ms.to_string());
    msg.properties = props.encode();
    msg.topic = Topic::new(TIMER_TOPIC);
    msg.queue_id = QueueId(0);
}

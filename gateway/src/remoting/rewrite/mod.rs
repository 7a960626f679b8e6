//! RocketMQ's re-stores: a stored message moved under another topic and queue. Half
//! messages ([`transaction`]), delay levels ([`delay`]), timers ([`timer`]) and consumer
//! retry and dead letters ([`retry`]) are written here; the services that deliver delayed
//! and timer messages and check transactions are in `services/`.
//!
//! [`restore`] is what they share: body, flag, born time and host, the reconsume count, the
//! prepared-transaction offset and the sysflag (without the host address bits, which
//! encoding derives again) are kept; the store host is this node's; the tags code follows
//! the given properties. Callers adjust what their case changes. [`delivered`] is the
//! message a delayed or timer message becomes when due.

pub(crate) mod delay;
pub(crate) mod retry;
pub(crate) mod timer;
pub(crate) mod transaction;

use std::net::SocketAddr;

use stratus_compat::message::properties::{Properties, keys};
use stratus_compat::message::record::MessageExt;
use stratus_compat::message::sysflag;
use stratus_compat::types::{QueueId, Topic, java_string_hash};
use stratus_segments::writer::MessageToStore;

/// `m` as a new message for `topic`/`queue_id` with `props`.
pub(crate) fn restore(
    m: &MessageExt,
    topic: Topic,
    queue_id: QueueId,
    props: &Properties,
    store_host: SocketAddr,
) -> MessageToStore {
    MessageToStore {
        topic,
        queue_id,
        flag: m.flag,
        sys_flag: m.sys_flag & !(sysflag::BORNHOST_V6 | sysflag::STOREHOST_V6),
        born_timestamp: m.born_timestamp,
        born_host: m.born_host,
        store_host,
        reconsume_times: m.reconsume_times,
        prepared_transaction_offset: m.prepared_transaction_offset,
        body: m.body.clone(),
        properties: props.encode(),
        tags_code: props.get(keys::TAGS).map_or(0, java_string_hash),
    }
}

/// The message a scheduled one becomes at its due time: real topic and queue back, DELAY
/// and timer properties removed, REAL_TOPIC / REAL_QID kept, new store time and offsets.
pub(crate) fn delivered(m: &MessageExt, store_host: SocketAddr) -> Option<MessageToStore> {
    let mut props = Properties::parse(&m.properties);
    let topic = props.get(keys::REAL_TOPIC)?.to_owned();
    let queue_id: i32 = props.get(keys::REAL_QID)?.parse().ok()?;
    props.remove(keys::DELAY);
    for k in [
        keys::TIMER_DELIVER_MS,
        keys::TIMER_DELAY_SEC,
        keys::TIMER_DELAY_MS,
        keys::TIMER_OUT_MS,
    ] {
        props.remove(k);
    }
    Some(restore(
        m,
        Topic::new(topic),
        QueueId(queue_id),
        &props,
        store_host,
    ))
}

//! Re-storing a stored message under another topic and queue: delayed and timer delivery,
//! consumer retry and dead letters, transaction commit. Body, flag, born time and host, the
//! reconsume count, the prepared-transaction offset and the sysflag (without the host
//! address bits, which encoding derives again) are kept; the store host is this node's; the
//! tags code follows the given properties. Callers adjust what their case changes.

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

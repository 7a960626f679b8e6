//! Kafka records ↔ stored messages: one stored message per Kafka record, so a Kafka offset
//! is the queue offset and either protocol reads what the other wrote (`docs/kafka.md`).
//!
//! Kafka → stored. The value is the body (a null value is an empty body and
//! `KAFKA_NULL_VALUE`). A key that is non-empty UTF-8 without the property separators is
//! `KEYS` (so RocketMQ's query by key finds it); any other non-null key is
//! `KAFKA_KEY` in base64. The record timestamp is the born timestamp. The headers, exactly
//! as sent (order, duplicates, null values, non-UTF-8 names), are `KAFKA_HEADERS`; those a
//! RocketMQ consumer can read as properties (unique UTF-8 names that are not RocketMQ
//! system properties and do not start with `KAFKA_`, non-empty UTF-8 values without
//! separators) are copied as properties too, and a `TAGS` header becomes the message's
//! tag. `CLUSTER` is added as for every send and `KAFKA_RECORD` marks the message as
//! produced over Kafka. No `UNIQ_KEY` is added: a Kafka record is identified by its
//! partition and offset, and RocketMQ clients then use the offset message id as its id
//! (an id per record would cost a row of the unique-key index per record, a quarter of
//! the produce throughput).
//!
//! Stored → Kafka. A message produced over Kafka gets its key, value and headers back
//! exactly. Any other message: the value is the body (inflated when the producer
//! compressed it), the key is `KEYS` (null without), and the properties — tags, keys,
//! unique key and user properties — are headers, without the broker's internal ones.

use std::net::SocketAddr;

use base64::Engine;
use bytes::{Buf, BufMut, Bytes, BytesMut};
use stratus_compat::kafka::records::{Header, Record};
use stratus_compat::message::properties::keys;
use stratus_compat::message::{Properties, RecordView, sysflag};
use stratus_compat::types::{QueueId, Topic, java_string_hash};
use stratus_segments::writer::MessageToStore;

/// Marks a message produced over Kafka.
pub(crate) const KAFKA_RECORD: &str = "KAFKA_RECORD";
/// The record's headers, exactly, base64 of `(u32 name length, name, i32 value length or
/// -1, value)*`.
pub(crate) const KAFKA_HEADERS: &str = "KAFKA_HEADERS";
/// A key that is not a clean string, base64.
pub(crate) const KAFKA_KEY: &str = "KAFKA_KEY";
/// The record's value was null.
pub(crate) const KAFKA_NULL_VALUE: &str = "KAFKA_NULL_VALUE";

/// Largest properties string a stored message carries (an i16 length).
const MAX_PROPERTIES_LEN: usize = 32_767;

/// RocketMQ's system property names (`MessageConst`): never copied from a Kafka header.
const SYSTEM_PROPERTIES: &[&str] = &[
    "KEYS",
    "TAGS",
    "WAIT",
    "DELAY",
    "RETRY_TOPIC",
    "REAL_TOPIC",
    "REAL_QID",
    "TRAN_MSG",
    "PGROUP",
    "MIN_OFFSET",
    "MAX_OFFSET",
    "BUYER_ID",
    "ORIGIN_MESSAGE_ID",
    "TRANSFER_FLAG",
    "CORRECTION_FLAG",
    "MQ2_FLAG",
    "RECONSUME_TIME",
    "MSG_REGION",
    "TRACE_ON",
    "UNIQ_KEY",
    "EXTEND_UNIQ_INFO",
    "MAX_RECONSUME_TIMES",
    "CONSUME_START_TIME",
    "INNER_NUM",
    "INNER_BASE",
    "CHECK_IMMUNITY_TIME_IN_SECONDS",
    "TRAN_PREPARED_QUEUE_OFFSET",
    "__transactionId__",
    "TRANSACTION_CHECK_TIMES",
    "INSTANCE_ID",
    "CORRELATION_ID",
    "REPLY_TO_CLIENT",
    "TTL",
    "ARRIVE_TIME",
    "PUSH_REPLY_TIME",
    "CLUSTER",
    "MSG_TYPE",
    "POP_CK",
    "POP_CK_OFFSET",
    "1ST_POP_TIME",
    "__SHARDINGKEY",
    "PROPERTY_FORWARD_QUEUE_ID",
    "REDIRECT",
    "INNER_MULTI_DISPATCH",
    "INNER_MULTI_QUEUE_OFFSET",
    "TRACE_CONTEXT",
    "TIMER_DELAY_SEC",
    "TIMER_DELIVER_MS",
    "__BORNHOST",
    "BORN_TIMESTAMP",
    "TIMER_ENQUEUE_MS",
    "TIMER_DEQUEUE_MS",
    "TIMER_ROLL_TIMES",
    "TIMER_OUT_MS",
    "TIMER_DEL_UNIQKEY",
    "TIMER_DELAY_LEVEL",
    "TIMER_DELAY_MS",
    "__CRC32#",
    "DLQ_ORIGIN_TOPIC",
    "DLQ_ORIGIN_MESSAGE_ID",
];

/// Broker-internal properties not shown to Kafka consumers.
const INTERNAL_PROPERTIES: &[&str] = &[
    "CLUSTER",
    "WAIT",
    "MIN_OFFSET",
    "MAX_OFFSET",
    "CONSUME_START_TIME",
    "TRAN_PREPARED_QUEUE_OFFSET",
    "__CRC32#",
];

/// Why a record cannot be stored.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub(crate) enum ConvertError {
    /// The properties would exceed the stored format's limit.
    #[error("headers and key take {0} bytes of properties, more than 32767")]
    TooLarge(usize),
}

fn clean(s: &str) -> bool {
    !s.is_empty() && !s.contains(['\u{1}', '\u{2}'])
}

fn encode_headers(headers: &[Header]) -> String {
    let mut b = BytesMut::new();
    for h in headers {
        b.put_u32(u32::try_from(h.key.len()).unwrap_or(u32::MAX));
        b.put_slice(&h.key);
        match &h.value {
            None => b.put_i32(-1),
            Some(v) => {
                b.put_i32(i32::try_from(v.len()).unwrap_or(i32::MAX));
                b.put_slice(v);
            }
        }
    }
    base64::engine::general_purpose::STANDARD.encode(&b)
}

fn decode_headers(text: &str) -> Vec<Header> {
    let Ok(raw) = base64::engine::general_purpose::STANDARD.decode(text) else {
        return Vec::new();
    };
    let mut b = Bytes::from(raw);
    let mut out = Vec::new();
    while b.remaining() >= 4 {
        let n = b.get_u32() as usize;
        if b.remaining() < n + 4 {
            break;
        }
        let key = b.split_to(n);
        let vlen = b.get_i32();
        let value = if vlen < 0 {
            None
        } else {
            let vlen = vlen as usize;
            if b.remaining() < vlen {
                break;
            }
            Some(b.split_to(vlen))
        };
        out.push(Header { key, value });
    }
    out
}

/// Where a produced record goes and who sent it.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Origin<'a> {
    pub(crate) topic: &'a str,
    pub(crate) queue: QueueId,
    pub(crate) born_host: SocketAddr,
    pub(crate) store_host: SocketAddr,
    pub(crate) cluster: &'a str,
}

/// One Kafka record (its absolute timestamp given) as a stored message.
pub(crate) fn to_stored(
    origin: &Origin<'_>,
    record: &Record,
    timestamp: i64,
) -> Result<MessageToStore, ConvertError> {
    let mut props = Properties::default();
    if let Some(key) = &record.key {
        match std::str::from_utf8(key) {
            Ok(s) if clean(s) => props.insert(keys::KEYS, s),
            _ => props.insert(
                KAFKA_KEY,
                &base64::engine::general_purpose::STANDARD.encode(key),
            ),
        }
        if key.is_empty() {
            // base64 of nothing is empty, which properties cannot hold.
            props.insert(KAFKA_KEY, "=");
        }
    }
    if record.value.is_none() {
        props.insert(KAFKA_NULL_VALUE, "1");
    }
    if !record.headers.is_empty() {
        let names: Vec<Option<&str>> = record
            .headers
            .iter()
            .map(|h| std::str::from_utf8(&h.key).ok())
            .collect();
        for (h, name) in record.headers.iter().zip(&names) {
            let Some(name) = name else { continue };
            let unique = names.iter().filter(|n| **n == Some(*name)).count() == 1;
            let reserved = (SYSTEM_PROPERTIES.contains(name) && *name != keys::TAGS)
                || name.starts_with("KAFKA_");
            let value = h.value.as_ref().and_then(|v| std::str::from_utf8(v).ok());
            if let Some(value) = value
                && unique
                && !reserved
                && clean(name)
                && clean(value)
            {
                props.insert(name, value);
            }
        }
        props.insert(KAFKA_HEADERS, &encode_headers(&record.headers));
    }
    props.insert(KAFKA_RECORD, "1");
    props.insert(keys::CLUSTER, origin.cluster);
    let tags_code = props.get(keys::TAGS).map_or(0, java_string_hash);
    let properties = props.encode();
    if properties.len() > MAX_PROPERTIES_LEN {
        return Err(ConvertError::TooLarge(properties.len()));
    }
    Ok(MessageToStore {
        topic: Topic::new(origin.topic),
        queue_id: origin.queue,
        flag: 0,
        sys_flag: 0,
        born_timestamp: timestamp,
        born_host: origin.born_host,
        store_host: origin.store_host,
        reconsume_times: 0,
        prepared_transaction_offset: 0,
        body: record.value.clone().unwrap_or_default(),
        properties,
        tags_code,
    })
}

/// A stored message as a Kafka consumer sees it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) struct KafkaView {
    pub(crate) offset: i64,
    pub(crate) timestamp: i64,
    pub(crate) key: Option<Bytes>,
    pub(crate) value: Option<Bytes>,
    pub(crate) headers: Vec<Header>,
}

fn inflate(body: &[u8]) -> Option<Vec<u8>> {
    use std::io::Read;
    let mut out = Vec::new();
    flate2::read::ZlibDecoder::new(body)
        .take(64 << 20)
        .read_to_end(&mut out)
        .ok()?;
    Some(out)
}

/// The properties of a stored record, `(name, value)` in order, without copying.
fn pairs(props: &str) -> impl Iterator<Item = (&str, &str)> {
    props
        .split('\u{2}')
        .filter_map(|seg| seg.split_once('\u{1}'))
        .filter(|(k, v)| !k.is_empty() && !v.is_empty())
}

/// One stored record (its bytes as read) as a Kafka record.
pub(crate) fn from_stored(m: &RecordView) -> KafkaView {
    let text = m.properties_str();
    // A later duplicate wins, as the properties parser has it.
    let (mut kafka, mut kafka_key, mut keys, mut null_value, mut headers) =
        (false, None, None, false, None);
    for (k, v) in pairs(text) {
        match k {
            KAFKA_RECORD => kafka = true,
            KAFKA_KEY => kafka_key = Some(v),
            "KEYS" => keys = Some(v),
            KAFKA_NULL_VALUE => null_value = true,
            KAFKA_HEADERS => headers = Some(v),
            _ => {}
        }
    }
    let slice = |s: &str| m.properties.slice_ref(s.as_bytes());
    if kafka {
        let key = match (kafka_key, keys) {
            (Some("="), _) => Some(Bytes::new()),
            (Some(b64), _) => base64::engine::general_purpose::STANDARD
                .decode(b64)
                .ok()
                .map(Bytes::from),
            (None, Some(k)) => Some(slice(k)),
            (None, None) => None,
        };
        return KafkaView {
            offset: m.queue_offset,
            timestamp: m.born_timestamp,
            key,
            value: (!null_value).then(|| m.body.clone()),
            headers: headers.map(decode_headers).unwrap_or_default(),
        };
    }
    let value = if m.sys_flag & sysflag::COMPRESSED != 0 {
        inflate(&m.body).map_or_else(|| m.body.clone(), Bytes::from)
    } else {
        m.body.clone()
    };
    let headers = pairs(text)
        .filter(|(k, _)| !INTERNAL_PROPERTIES.contains(k) && !k.starts_with("__RMQ.TRANSIENT."))
        .map(|(k, v)| Header {
            key: slice(k),
            value: Some(slice(v)),
        })
        .collect();
    KafkaView {
        offset: m.queue_offset,
        timestamp: m.born_timestamp,
        key: keys.map(slice),
        value: Some(value),
        headers,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn origin() -> Origin<'static> {
        Origin {
            topic: "t",
            queue: QueueId(0),
            born_host: "127.0.0.1:5000".parse().unwrap(),
            store_host: "127.0.0.1:10911".parse().unwrap(),
            cluster: "DefaultCluster",
        }
    }

    fn stored(m: &MessageToStore, offset: i64) -> RecordView {
        let ext = stratus_compat::message::MessageExt {
            queue_id: m.queue_id.0,
            flag: m.flag,
            queue_offset: offset,
            commit_log_offset: 0,
            sys_flag: m.sys_flag,
            born_timestamp: m.born_timestamp,
            born_host: m.born_host,
            store_timestamp: 0,
            store_host: m.store_host,
            reconsume_times: 0,
            prepared_transaction_offset: 0,
            body: m.body.clone(),
            topic: m.topic.to_string(),
            properties: m.properties.clone(),
        };
        let mut b = BytesMut::new();
        ext.encode(&mut b);
        stratus_compat::message::MessageExt::view(&b.freeze()).unwrap()
    }

    fn h(k: &[u8], v: Option<&[u8]>) -> Header {
        Header {
            key: Bytes::copy_from_slice(k),
            value: v.map(Bytes::copy_from_slice),
        }
    }

    fn record(key: Option<&[u8]>, value: Option<&[u8]>, headers: Vec<Header>) -> Record {
        Record {
            attributes: 0,
            timestamp_delta: 0,
            offset_delta: 0,
            key: key.map(Bytes::copy_from_slice),
            value: value.map(Bytes::copy_from_slice),
            headers,
        }
    }

    #[test]
    fn kafka_records_come_back_exactly() {
        let cases = vec![
            record(Some(b"k1"), Some(b"v"), vec![]),
            record(None, None, vec![]),
            record(Some(b""), Some(b""), vec![]),
            record(Some(&[0xff, 0x00, 1]), Some(b"x"), vec![]),
            record(
                Some(b"a\x01b"),
                Some(b"v"),
                vec![
                    h(b"dup", Some(b"1")),
                    h(b"dup", Some(b"2")),
                    h(b"null", None),
                    h(&[0xc3, 0x28], Some(b"bad name")),
                    h(b"DELAY", Some(b"3")),
                    h(b"TAGS", Some(b"TagA")),
                    h(b"color", Some(b"red")),
                ],
            ),
        ];
        for r in cases {
            let m = to_stored(&origin(), &r, 42).unwrap();
            let back = from_stored(&stored(&m, 7));
            assert_eq!(back.key, r.key, "{r:?}");
            assert_eq!(back.value, r.value, "{r:?}");
            assert_eq!(back.headers, r.headers, "{r:?}");
            assert_eq!((back.offset, back.timestamp), (7, 42));
        }
    }

    #[test]
    fn rocketmq_consumers_see_the_key_tag_and_clean_headers_but_no_system_ones() {
        let r = record(
            Some(b"order-1"),
            Some(b"body"),
            vec![
                h(b"TAGS", Some(b"TagA")),
                h(b"DELAY", Some(b"3")),
                h(b"color", Some(b"red")),
            ],
        );
        let m = to_stored(&origin(), &r, 1).unwrap();
        let p = Properties::parse(&m.properties);
        assert_eq!(p.get("KEYS"), Some("order-1"));
        assert_eq!(p.get("TAGS"), Some("TagA"));
        assert_eq!(m.tags_code, java_string_hash("TagA"));
        assert_eq!(p.get("color"), Some("red"));
        assert_eq!(p.get("DELAY"), None, "a header never schedules the message");
        assert_eq!(p.get("UNIQ_KEY"), None, "identified by its offset");
    }

    #[test]
    fn rocketmq_messages_carry_tags_keys_and_properties_as_headers() {
        let mut props = Properties::default();
        props.insert("TAGS", "TagB");
        props.insert("KEYS", "k9");
        props.insert("CLUSTER", "DefaultCluster");
        props.insert("shop", "7");
        let m = MessageToStore {
            topic: Topic::new("t"),
            queue_id: QueueId(0),
            flag: 0,
            sys_flag: 0,
            born_timestamp: 5,
            born_host: origin().born_host,
            store_host: origin().store_host,
            reconsume_times: 0,
            prepared_transaction_offset: 0,
            body: Bytes::from_static(b"hello"),
            properties: props.encode(),
            tags_code: 0,
        };
        let v = from_stored(&stored(&m, 3));
        assert_eq!(v.key.as_deref(), Some(&b"k9"[..]));
        assert_eq!(v.value.as_deref(), Some(&b"hello"[..]));
        let names: Vec<_> = v.headers.iter().map(|h| h.key.clone()).collect();
        assert_eq!(names, vec!["TAGS", "KEYS", "shop"]);
    }

    #[test]
    fn huge_headers_are_refused() {
        let r = record(None, Some(b"v"), vec![h(b"big", Some(&[b'a'; 40_000]))]);
        assert!(matches!(
            to_stored(&origin(), &r, 1),
            Err(ConvertError::TooLarge(_))
        ));
    }
}

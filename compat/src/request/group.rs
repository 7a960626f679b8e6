//! Operators' group and consumer views: subscription groups (200, 201, 207, 352), consumer
//! and producer connections (203, 204), topic stats and config (202, 351), who consumes
//! what (300, 343), system topic lists (304, 305) and CLONE_GROUP_OFFSET (314).
//!
//! Layouts follow `SubscriptionGroupConfig`, `SubscriptionGroupWrapper`, `ConsumerConnection`,
//! `ProducerConnection`, `Connection`, `TopicStatsTable`, `TopicOffset`, `GroupList` and
//! `TopicConfigAndQueueMapping` of Apache RocketMQ 5.3.3. Topic-only requests (202, 300,
//! 351) use [`TopicHeader`](super::admin::TopicHeader), 203 uses
//! [`ConsumerGroupHeader`](super::heartbeat::ConsumerGroupHeader).

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::admin::TopicConfigBody;
use super::heartbeat::{ConsumeFromWhere, ConsumeType, MessageModel, SubscriptionData};
use super::lock::MessageQueue;
use super::{opt_bool, opt_str, req_str};
use crate::command::RemotingCommand;
use crate::error::HeaderError;

/// The reference's predefined subscription groups (`SubscriptionGroupManager#init`), present
/// on every broker with the default config.
pub const SYSTEM_GROUPS: [&str; 8] = [
    "TOOLS_CONSUMER",
    "FILTERSRV_CONSUMER",
    "SELF_TEST_C_GROUP",
    "CID_ONS-HTTP-PROXY",
    "CID_ONSAPI_PULL",
    "CID_ONSAPI_PERMISSION",
    "CID_ONSAPI_OWNER",
    "CID_RMQ_SYS_TRANS",
];

/// Prefix of system consumer groups, created on demand even when auto-creation of groups is
/// off (`MixAll.CID_RMQ_SYS_PREFIX`, `enableCreateSysGroup`).
pub const SYSTEM_GROUP_PREFIX: &str = "CID_RMQ_SYS_";

/// Longest group name (`Validators.CHARACTER_MAX_LENGTH`).
pub const MAX_GROUP_LEN: usize = 255;

/// True when `name` may be a group: non-blank, at most [`MAX_GROUP_LEN`] bytes, only
/// `[%|a-zA-Z0-9_-]` (`TopicValidator.isTopicOrGroupIllegal`).
pub fn is_valid_group_name(name: &str) -> bool {
    !name.trim().is_empty()
        && name.len() <= MAX_GROUP_LEN
        && name
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'%' | b'|' | b'_' | b'-'))
}

fn yes() -> bool {
    true
}
fn one_i32() -> i32 {
    1
}
fn one_i64() -> i64 {
    1
}
fn sixteen() -> i32 {
    16
}
fn fifteen() -> i32 {
    15
}
fn default_retry_policy() -> serde_json::Value {
    serde_json::json!({ "type": "CUSTOMIZED" })
}

/// `SubscriptionGroupConfig` JSON (UPDATE_AND_CREATE_SUBSCRIPTIONGROUP body,
/// GET_SUBSCRIPTIONGROUP_CONFIG answer, values of the wrapper's table). Missing fields take
/// the reference's defaults.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SubscriptionGroupConfigBody {
    /// Group.
    #[serde(default)]
    pub group_name: String,
    /// Consumption allowed (default true).
    #[serde(default = "yes")]
    pub consume_enable: bool,
    /// May start from the min offset (default true).
    #[serde(default = "yes")]
    pub consume_from_min_enable: bool,
    /// Broadcasting allowed (default true).
    #[serde(default = "yes")]
    pub consume_broadcast_enable: bool,
    /// Orderly (default false).
    #[serde(default)]
    pub consume_message_orderly: bool,
    /// Queues of the retry topic (default 1).
    #[serde(default = "one_i32")]
    pub retry_queue_nums: i32,
    /// Max reconsume times (default 16).
    #[serde(default = "sixteen")]
    pub retry_max_times: i32,
    /// `GroupRetryPolicy` as sent (default `{"type":"CUSTOMIZED"}`).
    #[serde(default = "default_retry_policy")]
    pub group_retry_policy: serde_json::Value,
    /// Broker id to consume from (default 0, the master).
    #[serde(default)]
    pub broker_id: i64,
    /// Broker id when consumption is slow (default 1).
    #[serde(default = "one_i64")]
    pub which_broker_when_consume_slowly: i64,
    /// NOTIFY_CONSUMER_IDS_CHANGED sent to members (default true).
    #[serde(default = "yes")]
    pub notify_consumer_ids_changed_enable: bool,
    /// Group system flag (default 0).
    #[serde(default)]
    pub group_sys_flag: i32,
    /// Push consumers' consume timeout, minutes (default 15).
    #[serde(default = "fifteen")]
    pub consume_timeout_minute: i32,
    /// `SimpleSubscriptionData` set as sent (absent by default).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub subscription_data_set: Option<serde_json::Value>,
    /// Attributes.
    #[serde(default)]
    pub attributes: BTreeMap<String, String>,
}

impl SubscriptionGroupConfigBody {
    /// The reference's default config of `group`.
    pub fn new(group: impl Into<String>) -> Self {
        Self {
            group_name: group.into(),
            consume_enable: true,
            consume_from_min_enable: true,
            consume_broadcast_enable: true,
            consume_message_orderly: false,
            retry_queue_nums: 1,
            retry_max_times: 16,
            group_retry_policy: default_retry_policy(),
            broker_id: 0,
            which_broker_when_consume_slowly: 1,
            notify_consumer_ids_changed_enable: true,
            group_sys_flag: 0,
            consume_timeout_minute: 15,
            subscription_data_set: None,
            attributes: BTreeMap::new(),
        }
    }
}

/// `DataVersion` JSON.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct DataVersion {
    /// Changes counted.
    #[serde(default)]
    pub counter: i64,
    /// State version.
    #[serde(default)]
    pub state_version: i64,
    /// Last change, ms.
    #[serde(default)]
    pub timestamp: i64,
}

/// GET_ALL_SUBSCRIPTIONGROUP_CONFIG (201) body: the broker's `SubscriptionGroupManager` JSON.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct SubscriptionGroupWrapper {
    /// Every group by name.
    #[serde(default)]
    pub subscription_group_table: BTreeMap<String, SubscriptionGroupConfigBody>,
    /// Forbidden bits by group and topic (always empty in Stratus).
    #[serde(default)]
    pub forbidden_table: BTreeMap<String, BTreeMap<String, i32>>,
    /// Version of the table.
    #[serde(default)]
    pub data_version: DataVersion,
}

/// DELETE_SUBSCRIPTIONGROUP (207) request header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct DeleteSubscriptionGroupRequestHeader {
    /// Group.
    pub group_name: String,
    /// Also remove the group's consumer offsets.
    pub clean_offset: bool,
}

impl DeleteSubscriptionGroupRequestHeader {
    /// Decodes from ext fields.
    ///
    /// # Errors
    /// [`HeaderError`] when `groupName` is missing.
    pub fn from_command(cmd: &RemotingCommand) -> Result<Self, HeaderError> {
        Ok(Self {
            group_name: req_str(cmd, "groupName")?,
            clean_offset: opt_bool(cmd, "cleanOffset").unwrap_or(false),
        })
    }

    /// Writes into ext fields.
    pub fn write_to(&self, cmd: &mut RemotingCommand) {
        cmd.put_ext("groupName", &self.group_name);
        cmd.put_ext("cleanOffset", self.clean_offset);
    }
}

/// Header with just `group`: GET_SUBSCRIPTIONGROUP_CONFIG (352), QUERY_TOPICS_BY_CONSUMER
/// (343).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GroupHeader {
    /// Group.
    pub group: String,
}

impl GroupHeader {
    /// Decodes from ext fields.
    ///
    /// # Errors
    /// [`HeaderError`] when `group` is missing.
    pub fn from_command(cmd: &RemotingCommand) -> Result<Self, HeaderError> {
        Ok(Self {
            group: req_str(cmd, "group")?,
        })
    }

    /// Writes into ext fields.
    pub fn write_to(&self, cmd: &mut RemotingCommand) {
        cmd.put_ext("group", &self.group);
    }
}

/// GET_PRODUCER_CONNECTION_LIST (204) request header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ProducerGroupHeader {
    /// Producer group.
    pub producer_group: String,
}

impl ProducerGroupHeader {
    /// Decodes from ext fields.
    ///
    /// # Errors
    /// [`HeaderError`] when `producerGroup` is missing.
    pub fn from_command(cmd: &RemotingCommand) -> Result<Self, HeaderError> {
        Ok(Self {
            producer_group: req_str(cmd, "producerGroup")?,
        })
    }

    /// Writes into ext fields.
    pub fn write_to(&self, cmd: &mut RemotingCommand) {
        cmd.put_ext("producerGroup", &self.producer_group);
    }
}

/// CLONE_GROUP_OFFSET (314) request header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CloneGroupOffsetRequestHeader {
    /// Group copied from.
    pub src_group: String,
    /// Group copied to.
    pub dest_group: String,
    /// Topic (blank or absent: every topic of the source group).
    pub topic: Option<String>,
    /// The source group is offline: copy even topics its live members do not subscribe.
    pub offline: bool,
}

impl CloneGroupOffsetRequestHeader {
    /// Decodes from ext fields; a blank topic is `None`.
    ///
    /// # Errors
    /// [`HeaderError`] when `srcGroup` or `destGroup` is missing.
    pub fn from_command(cmd: &RemotingCommand) -> Result<Self, HeaderError> {
        Ok(Self {
            src_group: req_str(cmd, "srcGroup")?,
            dest_group: req_str(cmd, "destGroup")?,
            topic: opt_str(cmd, "topic").filter(|t| !t.trim().is_empty()),
            offline: opt_bool(cmd, "offline").unwrap_or(false),
        })
    }

    /// Writes into ext fields.
    pub fn write_to(&self, cmd: &mut RemotingCommand) {
        cmd.put_ext("srcGroup", &self.src_group);
        cmd.put_ext("destGroup", &self.dest_group);
        if let Some(t) = &self.topic {
            cmd.put_ext("topic", t);
        }
        cmd.put_ext("offline", self.offline);
    }
}

/// `Connection` JSON: one client channel.
#[derive(Debug, Clone, PartialEq, Eq, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Connection {
    /// Client id.
    pub client_id: String,
    /// `ip:port` of the client's connection.
    pub client_addr: String,
    /// `LanguageCode` name (`JAVA`, `GO`, …).
    pub language: String,
    /// The client's version ordinal (`MQVersion.Version`).
    pub version: i32,
}

/// GET_CONSUMER_CONNECTION_LIST (203) body.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ConsumerConnection {
    /// The group's live channels.
    pub connection_set: Vec<Connection>,
    /// The group's subscriptions by topic.
    pub subscription_table: BTreeMap<String, SubscriptionData>,
    /// Pull or push.
    pub consume_type: ConsumeType,
    /// Clustering or broadcasting.
    pub message_model: MessageModel,
    /// First-start policy.
    pub consume_from_where: ConsumeFromWhere,
}

/// GET_PRODUCER_CONNECTION_LIST (204) body.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct ProducerConnection {
    /// The group's live channels.
    pub connection_set: Vec<Connection>,
}

/// QUERY_TOPIC_CONSUME_BY_WHO (300) body.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct GroupList {
    /// Group names.
    pub group_list: Vec<String>,
}

/// `TopicOffset` JSON: one queue's bounds.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct TopicOffset {
    /// Smallest retained offset.
    pub min_offset: i64,
    /// Next offset to be written.
    pub max_offset: i64,
    /// Store time of the last message (0 when the queue is empty).
    pub last_update_timestamp: i64,
}

/// GET_TOPIC_STATS_INFO (202) body. Its `offsetTable` is a map keyed by `MessageQueue`
/// objects, which fastjson writes as JSON objects in key position (not valid JSON, but what
/// every Java client parses), so it has its own [`encode`](Self::encode) and
/// [`decode`](Self::decode).
#[derive(Debug, Clone, PartialEq, Default)]
pub struct TopicStatsTable {
    /// Bounds per queue.
    pub offset_table: Vec<(MessageQueue, TopicOffset)>,
    /// Put TPS of the topic.
    pub topic_put_tps: f64,
}

impl TopicStatsTable {
    /// The fastjson text.
    ///
    /// # Errors
    /// Only if serde_json cannot write a value (never for these types).
    pub fn encode(&self) -> Result<String, serde_json::Error> {
        Ok(format!(
            "{{\"offsetTable\":{},\"topicPutTps\":{}}}",
            encode_queue_map(&self.offset_table)?,
            serde_json::to_string(&self.topic_put_tps)?
        ))
    }

    /// Decodes the fastjson text (object keys in the offset table), also plain JSON with
    /// an empty table.
    ///
    /// # Errors
    /// [`HeaderError::BadBody`] when it is not such a body.
    pub fn decode(body: &[u8]) -> Result<Self, HeaderError> {
        let text = std::str::from_utf8(body).map_err(|e| HeaderError::BadBody(e.to_string()))?;
        let mut p = Parser { s: text, at: 0 };
        let mut out = Self::default();
        p.expect(b'{')?;
        if p.peek() == Some(b'}') {
            return Ok(out);
        }
        loop {
            let key: String = p.value()?;
            p.expect(b':')?;
            match key.as_str() {
                "offsetTable" => out.offset_table = p.queue_map()?,
                "topicPutTps" => out.topic_put_tps = p.value()?,
                _ => {
                    let _: serde_json::Value = p.value()?;
                }
            }
            if !p.next_or_end(b'}')? {
                return Ok(out);
            }
        }
    }
}

/// A map keyed by `MessageQueue` written the fastjson way: `{{"brokerName":…}:value,…}`.
///
/// # Errors
/// Only if serde_json cannot write a value.
pub fn encode_queue_map<V: Serialize>(
    entries: &[(MessageQueue, V)],
) -> Result<String, serde_json::Error> {
    let mut s = String::from("{");
    for (i, (mq, v)) in entries.iter().enumerate() {
        if i > 0 {
            s.push(',');
        }
        s.push_str(&serde_json::to_string(mq)?);
        s.push(':');
        s.push_str(&serde_json::to_string(v)?);
    }
    s.push('}');
    Ok(s)
}

/// A reader of fastjson text: JSON values, with JSON objects allowed as map keys.
struct Parser<'a> {
    s: &'a str,
    at: usize,
}

impl Parser<'_> {
    fn skip_ws(&mut self) {
        while self
            .s
            .as_bytes()
            .get(self.at)
            .is_some_and(u8::is_ascii_whitespace)
        {
            self.at += 1;
        }
    }

    fn peek(&mut self) -> Option<u8> {
        self.skip_ws();
        self.s.as_bytes().get(self.at).copied()
    }

    fn expect(&mut self, c: u8) -> Result<(), HeaderError> {
        if self.peek() == Some(c) {
            self.at += 1;
            Ok(())
        } else {
            Err(HeaderError::BadBody(format!(
                "expected {:?} at {}",
                c as char, self.at
            )))
        }
    }

    /// After an entry: true at `,` (another follows), false at `end`.
    fn next_or_end(&mut self, end: u8) -> Result<bool, HeaderError> {
        match self.peek() {
            Some(b',') => {
                self.at += 1;
                Ok(true)
            }
            Some(c) if c == end => {
                self.at += 1;
                Ok(false)
            }
            _ => Err(HeaderError::BadBody(format!(
                "expected ',' or {:?} at {}",
                end as char, self.at
            ))),
        }
    }

    fn value<T: for<'de> Deserialize<'de>>(&mut self) -> Result<T, HeaderError> {
        self.skip_ws();
        let rest = self.s.get(self.at..).unwrap_or_default();
        let mut stream = serde_json::Deserializer::from_str(rest).into_iter::<T>();
        let v = stream
            .next()
            .ok_or_else(|| HeaderError::BadBody(format!("expected a value at {}", self.at)))?
            .map_err(|e| HeaderError::BadBody(e.to_string()))?;
        self.at += stream.byte_offset();
        Ok(v)
    }

    fn queue_map<V: for<'de> Deserialize<'de>>(
        &mut self,
    ) -> Result<Vec<(MessageQueue, V)>, HeaderError> {
        let mut out = Vec::new();
        self.expect(b'{')?;
        if self.peek() == Some(b'}') {
            self.at += 1;
            return Ok(out);
        }
        loop {
            let mq: MessageQueue = self.value()?;
            self.expect(b':')?;
            let v: V = self.value()?;
            out.push((mq, v));
            if !self.next_or_end(b'}')? {
                return Ok(out);
            }
        }
    }
}

/// GET_TOPIC_CONFIG (351) body: `TopicConfigAndQueueMapping` without a mapping detail.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TopicConfigAndQueueMapping {
    /// The topic config.
    #[serde(flatten)]
    pub config: TopicConfigBody,
    /// Attributes.
    #[serde(default)]
    pub attributes: BTreeMap<String, String>,
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;
    use crate::RequestCode;

    fn cmd() -> RemotingCommand {
        RemotingCommand::request(RequestCode::DeleteSubscriptionGroup.to_i32(), 1)
    }

    #[test]
    fn a_reference_group_config_decodes_and_keeps_its_fields() {
        // As mqadmin updateSubGroup sends it (fastjson, fields sorted).
        let body = br#"{"attributes":{},"brokerId":0,"consumeBroadcastEnable":false,"consumeEnable":true,"consumeFromMinEnable":false,"consumeMessageOrderly":true,"consumeTimeoutMinute":15,"groupName":"G1","groupRetryPolicy":{"type":"CUSTOMIZED"},"groupSysFlag":0,"notifyConsumerIdsChangedEnable":true,"retryMaxTimes":3,"retryQueueNums":2,"whichBrokerWhenConsumeSlowly":1}"#;
        let c: SubscriptionGroupConfigBody = serde_json::from_slice(body).unwrap();
        assert_eq!(c.group_name, "G1");
        assert!(!c.consume_broadcast_enable && c.consume_message_orderly);
        assert_eq!((c.retry_queue_nums, c.retry_max_times), (2, 3));
        let back: SubscriptionGroupConfigBody =
            serde_json::from_str(&serde_json::to_string(&c).unwrap()).unwrap();
        assert_eq!(back, c);
        // Missing fields take the reference's defaults.
        let d: SubscriptionGroupConfigBody = serde_json::from_str(r#"{"groupName":"G2"}"#).unwrap();
        assert_eq!(d, SubscriptionGroupConfigBody::new("G2"));
    }

    #[test]
    fn headers_round_trip_and_report_missing_fields() {
        let d = DeleteSubscriptionGroupRequestHeader {
            group_name: "g".into(),
            clean_offset: true,
        };
        let mut c = cmd();
        d.write_to(&mut c);
        assert_eq!(
            DeleteSubscriptionGroupRequestHeader::from_command(&c),
            Ok(d)
        );
        assert_eq!(
            DeleteSubscriptionGroupRequestHeader::from_command(&cmd()),
            Err(HeaderError::Missing("groupName"))
        );
        assert_eq!(
            GroupHeader::from_command(&cmd()),
            Err(HeaderError::Missing("group"))
        );
        assert_eq!(
            ProducerGroupHeader::from_command(&cmd()),
            Err(HeaderError::Missing("producerGroup"))
        );
        let mut c = cmd();
        c.put_ext("srcGroup", "a");
        assert_eq!(
            CloneGroupOffsetRequestHeader::from_command(&c),
            Err(HeaderError::Missing("destGroup"))
        );
        c.put_ext("destGroup", "b");
        c.put_ext("topic", " ");
        let h = CloneGroupOffsetRequestHeader::from_command(&c).unwrap();
        assert_eq!(h.topic, None, "a blank topic is no topic");
        assert!(!h.offline);
    }

    #[test]
    fn topic_stats_use_object_keys_as_fastjson_does() {
        let t = TopicStatsTable {
            offset_table: vec![(
                MessageQueue {
                    broker_name: "broker-0".into(),
                    queue_id: 1,
                    topic: "T".into(),
                },
                TopicOffset {
                    min_offset: 2,
                    max_offset: 5,
                    last_update_timestamp: 1_700_000_000_000,
                },
            )],
            topic_put_tps: 0.0,
        };
        let text = t.encode().unwrap();
        assert_eq!(
            text,
            r#"{"offsetTable":{{"brokerName":"broker-0","queueId":1,"topic":"T"}:{"minOffset":2,"maxOffset":5,"lastUpdateTimestamp":1700000000000}},"topicPutTps":0.0}"#
        );
        assert_eq!(TopicStatsTable::decode(text.as_bytes()).unwrap(), t);
        assert!(TopicStatsTable::decode(b"{\"offsetTable\":{").is_err());
        assert!(TopicStatsTable::decode(b"").is_err());
    }

    #[test]
    fn group_names_follow_the_reference_rules() {
        assert!(is_valid_group_name("CID_a-b|%1"));
        assert!(!is_valid_group_name(" "));
        assert!(!is_valid_group_name("a b"));
        assert!(!is_valid_group_name(&"g".repeat(MAX_GROUP_LEN + 1)));
        assert!(is_valid_group_name(&"g".repeat(MAX_GROUP_LEN)));
    }

    fn name() -> impl Strategy<Value = String> {
        "[A-Za-z0-9_%|-]{1,40}"
    }

    proptest! {
        #[test]
        fn clone_header_round_trips(
            src in name(), dest in name(), topic in proptest::option::of(name()), offline: bool,
        ) {
            let h = CloneGroupOffsetRequestHeader { src_group: src, dest_group: dest, topic, offline };
            let mut c = cmd();
            h.write_to(&mut c);
            prop_assert_eq!(CloneGroupOffsetRequestHeader::from_command(&c), Ok(h));
        }

        #[test]
        fn topic_stats_round_trip(
            queues in proptest::collection::vec((name(), name(), 0i32..64, 0i64..1 << 40, 0i64..1 << 40, 0i64..1 << 42), 0..8),
        ) {
            let t = TopicStatsTable {
                offset_table: queues
                    .into_iter()
                    .map(|(b, topic, q, min, max, ts)| {
                        (
                            MessageQueue { broker_name: b, queue_id: q, topic },
                            TopicOffset { min_offset: min, max_offset: max, last_update_timestamp: ts },
                        )
                    })
                    .collect(),
                topic_put_tps: 1.5,
            };
            let text = t.encode().unwrap();
            prop_assert_eq!(TopicStatsTable::decode(text.as_bytes()).unwrap(), t);
        }

        #[test]
        fn topic_stats_decode_never_panics(bytes in proptest::collection::vec(any::<u8>(), 0..96)) {
            let _ = TopicStatsTable::decode(&bytes);
        }
    }
}

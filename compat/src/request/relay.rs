//! Requests a broker relays to a client, and what comes back: GET_CONSUMER_RUNNING_INFO
//! (307), CONSUME_MESSAGE_DIRECTLY (309), the offset reset (222 from an admin, 220 to each
//! consumer), consumer status (223 from an admin, 221 to each consumer), and request-reply
//! (SEND_REPLY_MESSAGE 324/325 in, PUSH_REPLY_MESSAGE_TO_CLIENT 326 out).
//!
//! The offset tables are fastjson's encoding of `Map<MessageQueue, Long>`: a JSON-like
//! object whose *keys are objects* (`{{"brokerName":"b","queueId":0,"topic":"T"}:5}`), which
//! plain JSON parsers refuse; [`encode_offset_table`] writes it and [`decode_offset_table`]
//! reads it (and the standard form with string keys is not used by any client).

use crate::command::RemotingCommand;
use crate::error::HeaderError;
use crate::request::lock::MessageQueue;

use super::{opt_bool, opt_num, opt_str, req_num, req_str};

/// Property naming the client id a reply goes to (`MessageConst.PROPERTY_MESSAGE_REPLY_TO_CLIENT`).
pub const PROPERTY_REPLY_TO_CLIENT: &str = "REPLY_TO_CLIENT";
/// Property the broker adds when it pushes a reply (`MessageConst.PROPERTY_PUSH_REPLY_TIME`).
pub const PROPERTY_PUSH_REPLY_TIME: &str = "PUSH_REPLY_TIME";
/// Property of a request's correlation id (`MessageConst.PROPERTY_CORRELATION_ID`).
pub const PROPERTY_CORRELATION_ID: &str = "CORRELATION_ID";

/// Suffix of the cluster's reply topic (`MixAll.REPLY_TOPIC_POSTFIX`).
pub const REPLY_TOPIC_POSTFIX: &str = "REPLY_TOPIC";

/// The topic replies of `cluster` are sent to (`<cluster>_REPLY_TOPIC`, one queue, made by
/// the broker at start): the replier's client builds it from the request's `CLUSTER`.
pub fn reply_topic(cluster: &str) -> String {
    format!("{cluster}_{REPLY_TOPIC_POSTFIX}")
}

/// GET_CONSUMER_RUNNING_INFO (307) request header.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct GetConsumerRunningInfoRequestHeader {
    /// Group.
    pub consumer_group: String,
    /// The consumer's client id.
    pub client_id: String,
    /// Ask for the client's thread dump too.
    pub jstack_enable: bool,
}

impl GetConsumerRunningInfoRequestHeader {
    /// Decodes from ext fields.
    ///
    /// # Errors
    /// [`HeaderError`] for a missing or invalid field.
    pub fn from_command(cmd: &RemotingCommand) -> Result<Self, HeaderError> {
        Ok(Self {
            consumer_group: req_str(cmd, "consumerGroup")?,
            client_id: req_str(cmd, "clientId")?,
            jstack_enable: opt_bool(cmd, "jstackEnable").unwrap_or(false),
        })
    }

    /// Writes into ext fields.
    pub fn write_to(&self, cmd: &mut RemotingCommand) {
        cmd.put_ext("consumerGroup", &self.consumer_group);
        cmd.put_ext("clientId", &self.client_id);
        cmd.put_ext("jstackEnable", self.jstack_enable);
    }
}

/// CONSUME_MESSAGE_DIRECTLY (309) request header (`ConsumeMessageDirectlyResultRequestHeader`).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ConsumeMessageDirectlyRequestHeader {
    /// Group.
    pub consumer_group: String,
    /// The consumer's client id.
    pub client_id: Option<String>,
    /// Offset message id of the message to consume.
    pub msg_id: Option<String>,
    /// Added by the broker: its name.
    pub broker_name: Option<String>,
    /// Topic.
    pub topic: Option<String>,
    /// Added by the broker: the topic's sys flag.
    pub topic_sys_flag: Option<i32>,
    /// Added by the broker: the group's sys flag.
    pub group_sys_flag: Option<i32>,
}

impl ConsumeMessageDirectlyRequestHeader {
    /// Decodes from ext fields.
    ///
    /// # Errors
    /// [`HeaderError`] for a missing or invalid field.
    pub fn from_command(cmd: &RemotingCommand) -> Result<Self, HeaderError> {
        let nonempty = |f: &str| opt_str(cmd, f).filter(|s| !s.is_empty());
        Ok(Self {
            consumer_group: req_str(cmd, "consumerGroup")?,
            client_id: nonempty("clientId"),
            msg_id: nonempty("msgId"),
            broker_name: nonempty("brokerName"),
            topic: nonempty("topic"),
            topic_sys_flag: opt_num(cmd, "topicSysFlag")?,
            group_sys_flag: opt_num(cmd, "groupSysFlag")?,
        })
    }

    /// Writes into ext fields.
    pub fn write_to(&self, cmd: &mut RemotingCommand) {
        cmd.put_ext("consumerGroup", &self.consumer_group);
        let fields = [
            ("clientId", &self.client_id),
            ("msgId", &self.msg_id),
            ("brokerName", &self.broker_name),
            ("topic", &self.topic),
        ];
        for (k, v) in fields {
            if let Some(v) = v {
                cmd.put_ext(k, v);
            }
        }
        if let Some(f) = self.topic_sys_flag {
            cmd.put_ext("topicSysFlag", f);
        }
        if let Some(f) = self.group_sys_flag {
            cmd.put_ext("groupSysFlag", f);
        }
    }
}

/// INVOKE_BROKER_TO_RESET_OFFSET (222) and RESET_CONSUMER_CLIENT_OFFSET (220) header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ResetOffsetRequestHeader {
    /// Consumer group.
    pub group: String,
    /// Topic.
    pub topic: String,
    /// 5.x: one queue (negative: every queue).
    pub queue_id: i32,
    /// 5.x: the offset to reset that queue to (absent or -1: search by `timestamp`).
    pub offset: Option<i64>,
    /// Store time to search (ms); -1: the max offsets (skip everything).
    pub timestamp: i64,
    /// Move forward too (else only back).
    pub is_force: bool,
}

impl ResetOffsetRequestHeader {
    /// Decodes from ext fields.
    ///
    /// # Errors
    /// [`HeaderError`] for a missing or invalid field.
    pub fn from_command(cmd: &RemotingCommand) -> Result<Self, HeaderError> {
        Ok(Self {
            group: req_str(cmd, "group")?,
            topic: req_str(cmd, "topic")?,
            queue_id: opt_num(cmd, "queueId")?.unwrap_or(-1),
            offset: opt_num(cmd, "offset")?,
            timestamp: req_num(cmd, "timestamp")?,
            is_force: opt_bool(cmd, "isForce").unwrap_or(false),
        })
    }

    /// Writes into ext fields.
    pub fn write_to(&self, cmd: &mut RemotingCommand) {
        cmd.put_ext("group", &self.group);
        cmd.put_ext("topic", &self.topic);
        cmd.put_ext("queueId", self.queue_id);
        if let Some(o) = self.offset {
            cmd.put_ext("offset", o);
        }
        cmd.put_ext("timestamp", self.timestamp);
        cmd.put_ext("isForce", self.is_force);
    }
}

/// INVOKE_BROKER_TO_GET_CONSUMER_STATUS (223) and GET_CONSUMER_STATUS_FROM_CLIENT (221)
/// header.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct GetConsumerStatusRequestHeader {
    /// Topic.
    pub topic: String,
    /// Consumer group.
    pub group: String,
    /// Only this client id (223; absent or empty: every consumer).
    pub client_addr: Option<String>,
}

impl GetConsumerStatusRequestHeader {
    /// Decodes from ext fields.
    ///
    /// # Errors
    /// [`HeaderError`] for a missing or invalid field.
    pub fn from_command(cmd: &RemotingCommand) -> Result<Self, HeaderError> {
        Ok(Self {
            topic: req_str(cmd, "topic")?,
            group: req_str(cmd, "group")?,
            client_addr: opt_str(cmd, "clientAddr").filter(|s| !s.trim().is_empty()),
        })
    }

    /// Writes into ext fields.
    pub fn write_to(&self, cmd: &mut RemotingCommand) {
        cmd.put_ext("topic", &self.topic);
        cmd.put_ext("group", &self.group);
        if let Some(c) = &self.client_addr {
            cmd.put_ext("clientAddr", c);
        }
    }
}

/// PUSH_REPLY_MESSAGE_TO_CLIENT (326) header: the reply as the requester's client reads it.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ReplyMessageRequestHeader {
    /// The replier's producer group.
    pub producer_group: String,
    /// The reply's topic.
    pub topic: String,
    /// Auto-create template topic.
    pub default_topic: String,
    /// Its queue count.
    pub default_topic_queue_nums: i32,
    /// Queue the replier asked for.
    pub queue_id: i32,
    /// Sys flag (compression).
    pub sys_flag: i32,
    /// Born time.
    pub born_timestamp: i64,
    /// Message flag.
    pub flag: i32,
    /// Properties in the wire form.
    pub properties: Option<String>,
    /// Reconsume times.
    pub reconsume_times: Option<i32>,
    /// Unit mode.
    pub unit_mode: bool,
    /// The replier's address, `ip:port`.
    pub born_host: String,
    /// The broker's address, `ip:port`.
    pub store_host: String,
    /// When the broker pushed it (ms).
    pub store_timestamp: i64,
}

impl ReplyMessageRequestHeader {
    /// Decodes from ext fields.
    ///
    /// # Errors
    /// [`HeaderError`] for a missing or invalid field.
    pub fn from_command(cmd: &RemotingCommand) -> Result<Self, HeaderError> {
        Ok(Self {
            producer_group: req_str(cmd, "producerGroup")?,
            topic: req_str(cmd, "topic")?,
            default_topic: req_str(cmd, "defaultTopic")?,
            default_topic_queue_nums: req_num(cmd, "defaultTopicQueueNums")?,
            queue_id: req_num(cmd, "queueId")?,
            sys_flag: req_num(cmd, "sysFlag")?,
            born_timestamp: req_num(cmd, "bornTimestamp")?,
            flag: req_num(cmd, "flag")?,
            properties: opt_str(cmd, "properties"),
            reconsume_times: opt_num(cmd, "reconsumeTimes")?,
            unit_mode: opt_bool(cmd, "unitMode").unwrap_or(false),
            born_host: req_str(cmd, "bornHost")?,
            store_host: req_str(cmd, "storeHost")?,
            store_timestamp: req_num(cmd, "storeTimestamp")?,
        })
    }

    /// Writes into ext fields.
    pub fn write_to(&self, cmd: &mut RemotingCommand) {
        cmd.put_ext("producerGroup", &self.producer_group);
        cmd.put_ext("topic", &self.topic);
        cmd.put_ext("defaultTopic", &self.default_topic);
        cmd.put_ext("defaultTopicQueueNums", self.default_topic_queue_nums);
        cmd.put_ext("queueId", self.queue_id);
        cmd.put_ext("sysFlag", self.sys_flag);
        cmd.put_ext("bornTimestamp", self.born_timestamp);
        cmd.put_ext("flag", self.flag);
        if let Some(p) = &self.properties {
            cmd.put_ext("properties", p);
        }
        if let Some(r) = self.reconsume_times {
            cmd.put_ext("reconsumeTimes", r);
        }
        cmd.put_ext("unitMode", self.unit_mode);
        cmd.put_ext("bornHost", &self.born_host);
        cmd.put_ext("storeHost", &self.store_host);
        cmd.put_ext("storeTimestamp", self.store_timestamp);
    }
}

/// Writes a `Map<MessageQueue, Long>` the way fastjson does (object keys).
pub fn encode_offset_table(table: &[(MessageQueue, i64)]) -> String {
    let mut out = String::from("{");
    for (i, (mq, off)) in table.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        // A MessageQueue always serialises.
        out.push_str(&serde_json::to_string(mq).unwrap_or_default());
        out.push(':');
        out.push_str(&off.to_string());
    }
    out.push('}');
    out
}

/// ResetOffsetBody: `{"offsetTable":{<MessageQueue>:<offset>,…}}`.
pub fn encode_reset_offset_body(table: &[(MessageQueue, i64)]) -> Vec<u8> {
    format!("{{\"offsetTable\":{}}}", encode_offset_table(table)).into_bytes()
}

/// ResetOffsetBodyForC, what the reference pushes (220) when the reset was asked by a C++
/// admin: `{"offsetTable":[{"brokerName","offset","queueId","topic"},…]}`.
pub fn encode_reset_offset_body_for_c(table: &[(MessageQueue, i64)]) -> Vec<u8> {
    #[derive(serde::Serialize)]
    #[serde(rename_all = "camelCase")]
    struct MessageQueueForC<'a> {
        broker_name: &'a str,
        offset: i64,
        queue_id: i32,
        topic: &'a str,
    }
    #[derive(serde::Serialize)]
    #[serde(rename_all = "camelCase")]
    struct Body<'a> {
        offset_table: Vec<MessageQueueForC<'a>>,
    }
    let body = Body {
        offset_table: table
            .iter()
            .map(|(mq, offset)| MessageQueueForC {
                broker_name: &mq.broker_name,
                offset: *offset,
                queue_id: mq.queue_id,
                topic: &mq.topic,
            })
            .collect(),
    };
    serde_json::to_vec(&body).unwrap_or_default()
}

/// GetConsumerStatusBody of 223's answer: `consumerTable` of each client id's raw
/// `Map<MessageQueue, Long>` text (as [`raw_field`] took it from the client's answer).
pub fn encode_consumer_status_body(tables: &[(String, String)]) -> Vec<u8> {
    let mut out = String::from("{\"consumerTable\":{");
    for (i, (client, raw)) in tables.iter().enumerate() {
        if i > 0 {
            out.push(',');
        }
        out.push_str(&serde_json::to_string(client).unwrap_or_default());
        out.push(':');
        out.push_str(raw);
    }
    out.push_str("},\"messageQueueTable\":{}}");
    out.into_bytes()
}

/// Why an offset table did not decode.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("malformed offset table at byte {at}")]
pub struct OffsetTableError {
    /// Where.
    pub at: usize,
}

/// The raw text of the object value of top-level `field` in a fastjson body (object keys
/// allowed inside it), or `None` when the field is absent or not an object.
pub fn raw_field<'a>(body: &'a str, field: &str) -> Option<&'a str> {
    let key = format!("\"{field}\"");
    let bytes = body.as_bytes();
    let mut depth = 0usize;
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'"' => {
                let end = string_end(bytes, i)?;
                if depth == 1 && body[i..end] == key {
                    let mut j = skip_ws(bytes, end);
                    if bytes.get(j) != Some(&b':') {
                        return None;
                    }
                    j = skip_ws(bytes, j + 1);
                    if bytes.get(j) != Some(&b'{') {
                        return None;
                    }
                    let close = object_end(bytes, j)?;
                    return Some(&body[j..close]);
                }
                i = end;
                continue;
            }
            b'{' | b'[' => depth += 1,
            b'}' | b']' => depth = depth.saturating_sub(1),
            _ => {}
        }
        i += 1;
    }
    None
}

/// Reads a `Map<MessageQueue, Long>` in fastjson's form (`{}` for an empty map).
///
/// # Errors
/// [`OffsetTableError`] for anything else.
pub fn decode_offset_table(text: &str) -> Result<Vec<(MessageQueue, i64)>, OffsetTableError> {
    let b = text.as_bytes();
    let err = |at| OffsetTableError { at };
    let mut i = skip_ws(b, 0);
    if b.get(i) != Some(&b'{') {
        return Err(err(i));
    }
    i = skip_ws(b, i + 1);
    let mut out = Vec::new();
    if b.get(i) == Some(&b'}') {
        return Ok(out);
    }
    loop {
        if b.get(i) != Some(&b'{') {
            return Err(err(i));
        }
        let end = object_end(b, i).ok_or(err(i))?;
        let mq: MessageQueue = serde_json::from_str(&text[i..end]).map_err(|_| err(i))?;
        i = skip_ws(b, end);
        if b.get(i) != Some(&b':') {
            return Err(err(i));
        }
        i = skip_ws(b, i + 1);
        let start = i;
        while i < b.len() && (b[i] == b'-' || b[i].is_ascii_digit()) {
            i += 1;
        }
        let off: i64 = text[start..i].parse().map_err(|_| err(start))?;
        out.push((mq, off));
        i = skip_ws(b, i);
        match b.get(i) {
            Some(b',') => i = skip_ws(b, i + 1),
            Some(b'}') => return Ok(out),
            _ => return Err(err(i)),
        }
    }
}

/// Reads a ResetOffsetBody.
///
/// # Errors
/// [`OffsetTableError`] when the body has no readable `offsetTable`.
pub fn decode_reset_offset_body(body: &[u8]) -> Result<Vec<(MessageQueue, i64)>, OffsetTableError> {
    let text = std::str::from_utf8(body).map_err(|e| OffsetTableError {
        at: e.valid_up_to(),
    })?;
    let raw = raw_field(text, "offsetTable").ok_or(OffsetTableError { at: 0 })?;
    decode_offset_table(raw)
}

fn skip_ws(b: &[u8], mut i: usize) -> usize {
    while i < b.len() && b[i].is_ascii_whitespace() {
        i += 1;
    }
    i
}

/// The index just past the string starting at `i` (a `"`).
fn string_end(b: &[u8], i: usize) -> Option<usize> {
    let mut j = i + 1;
    while j < b.len() {
        match b[j] {
            b'\\' => j += 2,
            b'"' => return Some(j + 1),
            _ => j += 1,
        }
    }
    None
}

/// The index just past the object (or array) starting at `i`.
fn object_end(b: &[u8], i: usize) -> Option<usize> {
    let mut depth = 0usize;
    let mut j = i;
    while j < b.len() {
        match b[j] {
            b'"' => {
                j = string_end(b, j)?;
                continue;
            }
            b'{' | b'[' => depth += 1,
            b'}' | b']' => {
                depth = depth.checked_sub(1)?;
                if depth == 0 {
                    return Some(j + 1);
                }
            }
            _ => {}
        }
        j += 1;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn mq(b: &str, q: i32, t: &str) -> MessageQueue {
        MessageQueue {
            broker_name: b.into(),
            queue_id: q,
            topic: t.into(),
        }
    }

    #[test]
    fn headers_round_trip() {
        let h = GetConsumerRunningInfoRequestHeader {
            consumer_group: "g".into(),
            client_id: "10.0.0.1@1".into(),
            jstack_enable: true,
        };
        let mut cmd = RemotingCommand::request(307, 1);
        h.write_to(&mut cmd);
        assert_eq!(
            GetConsumerRunningInfoRequestHeader::from_command(&cmd).unwrap(),
            h
        );

        let h = ConsumeMessageDirectlyRequestHeader {
            consumer_group: "g".into(),
            client_id: Some("c".into()),
            msg_id: Some("0A00000100002A9F0000000000000000".into()),
            broker_name: Some("broker-0".into()),
            topic: Some("T".into()),
            topic_sys_flag: Some(0),
            group_sys_flag: None,
        };
        let mut cmd = RemotingCommand::request(309, 1);
        h.write_to(&mut cmd);
        assert_eq!(
            ConsumeMessageDirectlyRequestHeader::from_command(&cmd).unwrap(),
            h
        );

        let h = ResetOffsetRequestHeader {
            group: "g".into(),
            topic: "T".into(),
            queue_id: 2,
            offset: Some(7),
            timestamp: -1,
            is_force: true,
        };
        let mut cmd = RemotingCommand::request(222, 1);
        h.write_to(&mut cmd);
        assert_eq!(
            cmd.ext_fields.get("isForce").map(String::as_str),
            Some("true")
        );
        assert_eq!(ResetOffsetRequestHeader::from_command(&cmd).unwrap(), h);

        let h = GetConsumerStatusRequestHeader {
            topic: "T".into(),
            group: "g".into(),
            client_addr: Some("c".into()),
        };
        let mut cmd = RemotingCommand::request(223, 1);
        h.write_to(&mut cmd);
        assert_eq!(
            GetConsumerStatusRequestHeader::from_command(&cmd).unwrap(),
            h
        );

        let h = ReplyMessageRequestHeader {
            producer_group: "p".into(),
            topic: "DefaultCluster_REPLY_TOPIC".into(),
            default_topic: "TBW102".into(),
            default_topic_queue_nums: 4,
            queue_id: 0,
            sys_flag: 0,
            born_timestamp: 1,
            flag: 0,
            properties: Some("a\u{1}b\u{2}".into()),
            reconsume_times: Some(0),
            unit_mode: false,
            born_host: "127.0.0.1:1".into(),
            store_host: "127.0.0.1:2".into(),
            store_timestamp: 3,
        };
        let mut cmd = RemotingCommand::request(326, 1);
        h.write_to(&mut cmd);
        assert_eq!(ReplyMessageRequestHeader::from_command(&cmd).unwrap(), h);
    }

    #[test]
    fn a_4x_reset_header_without_queue_fields_reads_every_queue() {
        let mut cmd = RemotingCommand::request(222, 1);
        cmd.put_ext("group", "g");
        cmd.put_ext("topic", "T");
        cmd.put_ext("timestamp", 5);
        cmd.put_ext("isForce", "false");
        let h = ResetOffsetRequestHeader::from_command(&cmd).unwrap();
        assert_eq!((h.queue_id, h.offset, h.is_force), (-1, None, false));
        cmd.ext_fields.remove("timestamp");
        assert!(ResetOffsetRequestHeader::from_command(&cmd).is_err());
    }

    #[test]
    fn offset_tables_use_object_keys_and_round_trip() {
        let table = vec![(mq("broker-0", 0, "T"), 5), (mq("broker-0", 1, "T"), -1)];
        let body = encode_reset_offset_body(&table);
        assert_eq!(
            String::from_utf8(body.clone()).unwrap(),
            "{\"offsetTable\":{{\"brokerName\":\"broker-0\",\"queueId\":0,\"topic\":\"T\"}:5,\
             {\"brokerName\":\"broker-0\",\"queueId\":1,\"topic\":\"T\"}:-1}}"
        );
        assert_eq!(decode_reset_offset_body(&body).unwrap(), table);
        assert_eq!(
            decode_reset_offset_body(b"{\"offsetTable\":{}}").unwrap(),
            vec![]
        );
        // fastjson's own spacing and field order.
        let spaced =
            "{ \"offsetTable\" : { {\"topic\":\"T\",\"queueId\":3,\"brokerName\":\"b\"} : 9 } }";
        assert_eq!(
            decode_reset_offset_body(spaced.as_bytes()).unwrap(),
            vec![(mq("b", 3, "T"), 9)]
        );
        for bad in [
            &b""[..],
            b"{}",
            b"{\"offsetTable\":{{\"brokerName\":\"b\"}:1}}",
            b"{\"offsetTable\":{{\"brokerName\":\"b\",\"queueId\":0,\"topic\":\"T\"}:x}}",
            b"{\"offsetTable\":{{\"brokerName\":\"b\",\"queueId\":0,\"topic\":\"T\"}:1",
            b"\xff",
        ] {
            assert!(decode_reset_offset_body(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn the_c_form_of_the_reset_body_is_a_list() {
        let body = encode_reset_offset_body_for_c(&[(mq("broker-1", 2, "T"), 7)]);
        assert_eq!(
            String::from_utf8(body).unwrap(),
            "{\"offsetTable\":[{\"brokerName\":\"broker-1\",\"offset\":7,\"queueId\":2,\"topic\":\"T\"}]}"
        );
    }

    #[test]
    fn a_clients_status_table_is_taken_raw_and_wrapped_per_client() {
        let client = "{\"consumerTable\":{},\"messageQueueTable\":{{\"brokerName\":\"b\",\"queueId\":0,\"topic\":\"T\"}:4}}";
        let raw = raw_field(client, "messageQueueTable").unwrap();
        assert_eq!(
            decode_offset_table(raw).unwrap(),
            vec![(mq("b", 0, "T"), 4)]
        );
        assert_eq!(raw_field(client, "consumerTable"), Some("{}"));
        assert_eq!(raw_field(client, "absent"), None);
        // A nested field of the same name does not count.
        assert_eq!(
            raw_field("{\"x\":{\"messageQueueTable\":{}}}", "messageQueueTable"),
            None
        );
        let body = encode_consumer_status_body(&[("c1".into(), raw.into())]);
        let text = String::from_utf8(body).unwrap();
        let table = raw_field(&text, "consumerTable").unwrap();
        assert_eq!(raw_field(&format!("{{\"w\":{table}}}"), "w"), Some(table));
        assert!(text.contains("\"c1\":{{\"brokerName\""));
    }
}

//! Broker statistics and configuration: VIEW_BROKER_STATS_DATA (315), GET_CONSUME_STATS
//! (208), GET_BROKER_CONSUME_STATS (317), GET_ALL_PRODUCER_INFO (328), GET_BROKER_CONFIG (26).
//!
//! `ConsumeStats` keys its offset table by `MessageQueue` objects, which fastjson writes as
//! JSON objects in key position (`{{"brokerName":…}:{…}}`); the Java clients read that back,
//! so it is written (and read) here by hand.

use std::collections::BTreeMap;

use serde::{Deserialize, Serialize};

use super::lock::MessageQueue;
use super::{opt_bool, opt_str, req_str};
use crate::command::RemotingCommand;
use crate::error::HeaderError;

/// VIEW_BROKER_STATS_DATA request header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ViewBrokerStatsDataRequestHeader {
    /// Stats name (`TOPIC_PUT_NUMS`, `GROUP_GET_NUMS`, …).
    pub stats_name: String,
    /// Key (a topic, or `topic@group`).
    pub stats_key: String,
}

impl ViewBrokerStatsDataRequestHeader {
    /// Decodes from ext fields.
    ///
    /// # Errors
    /// [`HeaderError::Missing`] for either field.
    pub fn from_command(cmd: &RemotingCommand) -> Result<Self, HeaderError> {
        Ok(Self {
            stats_name: req_str(cmd, "statsName")?,
            stats_key: req_str(cmd, "statsKey")?,
        })
    }

    /// Writes into ext fields.
    pub fn write_to(&self, cmd: &mut RemotingCommand) {
        cmd.put_ext("statsName", &self.stats_name);
        cmd.put_ext("statsKey", &self.stats_key);
    }
}

/// One window of `BrokerStatsData`.
#[derive(Debug, Clone, Copy, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BrokerStatsItem {
    /// Growth over the window.
    pub sum: i64,
    /// Per second.
    pub tps: f64,
    /// Per addition.
    pub avgpt: f64,
}

/// VIEW_BROKER_STATS_DATA body.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BrokerStatsData {
    /// Last minute.
    pub stats_minute: BrokerStatsItem,
    /// Last hour.
    pub stats_hour: BrokerStatsItem,
    /// Last day.
    pub stats_day: BrokerStatsItem,
}

/// GET_CONSUME_STATS request header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GetConsumeStatsRequestHeader {
    /// Group.
    pub consumer_group: String,
    /// One topic; absent or blank: every topic the group has offsets for.
    pub topic: Option<String>,
    /// Topics separated by `;` (5.x); when present, `topic` is ignored.
    pub topic_list: Option<String>,
}

impl GetConsumeStatsRequestHeader {
    /// Decodes from ext fields.
    ///
    /// # Errors
    /// [`HeaderError::Missing`] without `consumerGroup`.
    pub fn from_command(cmd: &RemotingCommand) -> Result<Self, HeaderError> {
        Ok(Self {
            consumer_group: req_str(cmd, "consumerGroup")?,
            topic: opt_str(cmd, "topic").filter(|t| !t.trim().is_empty()),
            topic_list: opt_str(cmd, "topicList").filter(|t| !t.trim().is_empty()),
        })
    }

    /// The topics of `topicList` (`fetchTopicList`), empty when absent.
    pub fn topics(&self) -> Vec<String> {
        self.topic_list
            .as_deref()
            .unwrap_or_default()
            .split(';')
            .map(str::trim)
            .filter(|t| !t.is_empty())
            .map(str::to_owned)
            .collect()
    }

    /// Writes into ext fields.
    pub fn write_to(&self, cmd: &mut RemotingCommand) {
        cmd.put_ext("consumerGroup", &self.consumer_group);
        if let Some(t) = &self.topic {
            cmd.put_ext("topic", t);
        }
        if let Some(t) = &self.topic_list {
            cmd.put_ext("topicList", t);
        }
    }
}

/// GET_BROKER_CONSUME_STATS request header (`GetConsumeStatsInBrokerHeader`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct GetConsumeStatsInBrokerHeader {
    /// Only orderly topics.
    pub is_order: bool,
}

impl GetConsumeStatsInBrokerHeader {
    /// Decodes from ext fields (absent: false).
    pub fn from_command(cmd: &RemotingCommand) -> Self {
        Self {
            is_order: opt_bool(cmd, "isOrder").unwrap_or(false),
        }
    }

    /// Writes into ext fields.
    pub fn write_to(&self, cmd: &mut RemotingCommand) {
        cmd.put_ext("isOrder", self.is_order);
    }
}

/// A queue's figures in `ConsumeStats`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct OffsetWrapper {
    /// The queue's max offset.
    pub broker_offset: i64,
    /// The group's committed offset (0 when none).
    pub consumer_offset: i64,
    /// The furthest offset pulled (5.x; at least the consumer offset).
    #[serde(default)]
    pub pull_offset: i64,
    /// Store time of the last consumed message (at consumer offset − 1), 0 when none.
    #[serde(default)]
    pub last_timestamp: i64,
}

/// GET_CONSUME_STATS body.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ConsumeStats {
    /// Per queue.
    pub offset_table: Vec<(MessageQueue, OffsetWrapper)>,
    /// The group's get rate over the last minute.
    pub consume_tps: f64,
}

fn json<T: Serialize>(v: &T, out: &mut String) {
    // Plain data of strings and numbers: serialising cannot fail.
    out.push_str(&serde_json::to_string(v).unwrap_or_default());
}

/// An f64 as fastjson writes a double (always with a fraction or exponent).
fn double(v: f64) -> String {
    let v = if v.is_finite() { v } else { 0.0 };
    serde_json::to_string(&v).unwrap_or_else(|_| "0.0".into())
}

impl ConsumeStats {
    /// The JSON body.
    pub fn encode(&self) -> String {
        let mut out = String::new();
        self.write(&mut out);
        out
    }

    fn write(&self, out: &mut String) {
        out.push_str("{\"consumeTps\":");
        out.push_str(&double(self.consume_tps));
        out.push_str(",\"offsetTable\":{");
        for (i, (mq, w)) in self.offset_table.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            json(mq, out);
            out.push(':');
            json(w, out);
        }
        out.push_str("}}");
    }

    /// Sum over the queues of broker offset − consumer offset (`computeTotalDiff`).
    pub fn total_diff(&self) -> i64 {
        self.offset_table
            .iter()
            .map(|(_, w)| w.broker_offset - w.consumer_offset)
            .sum()
    }

    /// Sum over the queues of broker offset − pull offset (`computeInflightTotalDiff`).
    pub fn inflight_diff(&self) -> i64 {
        self.offset_table
            .iter()
            .map(|(_, w)| w.broker_offset - w.pull_offset)
            .sum()
    }

    /// Reads a body written by [`encode`](Self::encode) or by a Java broker.
    ///
    /// # Errors
    /// Text that is not such a body.
    pub fn decode(text: &str) -> Result<Self, String> {
        let mut p = Parser { s: text, at: 0 };
        let v = p.consume_stats()?;
        p.ws();
        if p.at != text.len() {
            return Err(format!("trailing text at {}", p.at));
        }
        Ok(v)
    }
}

/// A small reader for fastjson's object-keyed maps: JSON values are read with serde_json
/// one at a time, the structure around them here.
struct Parser<'a> {
    s: &'a str,
    at: usize,
}

impl Parser<'_> {
    fn ws(&mut self) {
        while self.s[self.at..].starts_with(|c: char| c.is_ascii_whitespace()) {
            self.at += 1;
        }
    }

    fn eat(&mut self, c: char) -> Result<(), String> {
        self.ws();
        if self.s[self.at..].starts_with(c) {
            self.at += c.len_utf8();
            Ok(())
        } else {
            Err(format!("expected {c:?} at {}", self.at))
        }
    }

    fn peek(&mut self, c: char) -> bool {
        self.ws();
        self.s[self.at..].starts_with(c)
    }

    fn value<T: serde::de::DeserializeOwned>(&mut self) -> Result<T, String> {
        self.ws();
        let mut it = serde_json::Deserializer::from_str(&self.s[self.at..]).into_iter::<T>();
        let v = it
            .next()
            .ok_or_else(|| format!("expected a value at {}", self.at))?
            .map_err(|e| e.to_string())?;
        self.at += it.byte_offset();
        Ok(v)
    }

    fn key(&mut self) -> Result<String, String> {
        self.value::<String>()
    }

    fn consume_stats(&mut self) -> Result<ConsumeStats, String> {
        let mut out = ConsumeStats::default();
        self.eat('{')?;
        while !self.peek('}') {
            let k = self.key()?;
            self.eat(':')?;
            match k.as_str() {
                "consumeTps" => out.consume_tps = self.value()?,
                "offsetTable" => {
                    self.eat('{')?;
                    while !self.peek('}') {
                        let mq: MessageQueue = self.value()?;
                        self.eat(':')?;
                        let w: OffsetWrapper = self.value()?;
                        out.offset_table.push((mq, w));
                        if !self.peek('}') {
                            self.eat(',')?;
                        }
                    }
                    self.eat('}')?;
                }
                _ => {
                    self.value::<serde_json::Value>()?;
                }
            }
            if !self.peek('}') {
                self.eat(',')?;
            }
        }
        self.eat('}')?;
        Ok(out)
    }
}

/// GET_BROKER_CONSUME_STATS body.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct ConsumeStatsList {
    /// Per group (one map of one group each, as the reference builds it).
    pub consume_stats_list: Vec<BTreeMap<String, Vec<ConsumeStats>>>,
    /// The broker's address.
    pub broker_addr: String,
    /// Sum of every group's total diff.
    pub total_diff: i64,
    /// Sum of every group's in-flight diff.
    pub total_inflight_diff: i64,
}

impl ConsumeStatsList {
    /// The JSON body.
    pub fn encode(&self) -> String {
        let mut out = String::from("{\"brokerAddr\":");
        json(&self.broker_addr, &mut out);
        out.push_str(",\"consumeStatsList\":[");
        for (i, m) in self.consume_stats_list.iter().enumerate() {
            if i > 0 {
                out.push(',');
            }
            out.push('{');
            for (j, (group, list)) in m.iter().enumerate() {
                if j > 0 {
                    out.push(',');
                }
                json(group, &mut out);
                out.push_str(":[");
                for (k, cs) in list.iter().enumerate() {
                    if k > 0 {
                        out.push(',');
                    }
                    cs.write(&mut out);
                }
                out.push(']');
            }
            out.push('}');
        }
        out.push_str(&format!(
            "],\"totalDiff\":{},\"totalInflightDiff\":{}}}",
            self.total_diff, self.total_inflight_diff
        ));
        out
    }

    /// Reads a body written by [`encode`](Self::encode).
    ///
    /// # Errors
    /// Text that is not such a body.
    pub fn decode(text: &str) -> Result<Self, String> {
        let mut p = Parser { s: text, at: 0 };
        let mut out = Self::default();
        p.eat('{')?;
        while !p.peek('}') {
            let k = p.key()?;
            p.eat(':')?;
            match k.as_str() {
                "brokerAddr" => out.broker_addr = p.value()?,
                "totalDiff" => out.total_diff = p.value()?,
                "totalInflightDiff" => out.total_inflight_diff = p.value()?,
                "consumeStatsList" => {
                    p.eat('[')?;
                    while !p.peek(']') {
                        let mut m = BTreeMap::new();
                        p.eat('{')?;
                        while !p.peek('}') {
                            let group = p.key()?;
                            p.eat(':')?;
                            p.eat('[')?;
                            let mut list = Vec::new();
                            while !p.peek(']') {
                                list.push(p.consume_stats()?);
                                if !p.peek(']') {
                                    p.eat(',')?;
                                }
                            }
                            p.eat(']')?;
                            m.insert(group, list);
                            if !p.peek('}') {
                                p.eat(',')?;
                            }
                        }
                        p.eat('}')?;
                        out.consume_stats_list.push(m);
                        if !p.peek(']') {
                            p.eat(',')?;
                        }
                    }
                    p.eat(']')?;
                }
                _ => {
                    p.value::<serde_json::Value>()?;
                }
            }
            if !p.peek('}') {
                p.eat(',')?;
            }
        }
        p.eat('}')?;
        Ok(out)
    }
}

/// One producer in `ProducerTableInfo`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ProducerInfo {
    /// Client id.
    pub client_id: String,
    /// `ip:port` of its connection.
    #[serde(rename = "remoteIP")]
    pub remote_ip: String,
    /// Language name (`JAVA`, `CPP`, …).
    pub language: String,
    /// Client version.
    pub version: i32,
    /// Last heartbeat, ms.
    pub last_update_timestamp: i64,
}

/// GET_ALL_PRODUCER_INFO body: producers by group.
#[derive(Debug, Clone, PartialEq, Eq, Default, Serialize, Deserialize)]
pub struct ProducerTableInfo {
    /// Group → producers.
    pub data: BTreeMap<String, Vec<ProducerInfo>>,
}

/// GET_BROKER_CONFIG response header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GetBrokerConfigResponseHeader {
    /// The configuration's data version as JSON.
    pub version: String,
}

impl GetBrokerConfigResponseHeader {
    /// Decodes from ext fields.
    ///
    /// # Errors
    /// [`HeaderError::Missing`] without `version`.
    pub fn from_command(cmd: &RemotingCommand) -> Result<Self, HeaderError> {
        Ok(Self {
            version: req_str(cmd, "version")?,
        })
    }

    /// Writes into ext fields.
    pub fn write_to(&self, cmd: &mut RemotingCommand) {
        cmd.put_ext("version", &self.version);
    }
}

/// Java properties text (`MixAll.string2Properties`): `key=value` lines; `#`/`!` comments
/// and blank lines are skipped, `:` also separates, surrounding blanks are trimmed.
pub fn parse_properties(text: &str) -> Vec<(String, String)> {
    text.lines()
        .map(str::trim)
        .filter(|l| !l.is_empty() && !l.starts_with('#') && !l.starts_with('!'))
        .map(|l| {
            let cut = l.find(['=', ':']).unwrap_or(l.len());
            let (k, v) = l.split_at(cut);
            let v = v.get(1..).unwrap_or_default();
            (k.trim().to_owned(), v.trim().to_owned())
        })
        .filter(|(k, _)| !k.is_empty())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stats_headers_round_trip() {
        let h = ViewBrokerStatsDataRequestHeader {
            stats_name: "TOPIC_PUT_NUMS".into(),
            stats_key: "T".into(),
        };
        let mut cmd = RemotingCommand::request(315, 1);
        h.write_to(&mut cmd);
        assert_eq!(
            ViewBrokerStatsDataRequestHeader::from_command(&cmd).unwrap(),
            h
        );
        assert!(
            ViewBrokerStatsDataRequestHeader::from_command(&RemotingCommand::request(315, 1))
                .is_err()
        );

        let h = GetConsumeStatsRequestHeader {
            consumer_group: "g".into(),
            topic: Some("T".into()),
            topic_list: Some("A; B;;".into()),
        };
        let mut cmd = RemotingCommand::request(208, 1);
        h.write_to(&mut cmd);
        let back = GetConsumeStatsRequestHeader::from_command(&cmd).unwrap();
        assert_eq!(back, h);
        assert_eq!(back.topics(), vec!["A".to_owned(), "B".to_owned()]);
        let mut cmd = RemotingCommand::request(208, 1);
        cmd.put_ext("consumerGroup", "g");
        cmd.put_ext("topic", " ");
        let back = GetConsumeStatsRequestHeader::from_command(&cmd).unwrap();
        assert_eq!((back.topic.clone(), back.topics().len()), (None, 0));

        let h = GetConsumeStatsInBrokerHeader { is_order: true };
        let mut cmd = RemotingCommand::request(317, 1);
        h.write_to(&mut cmd);
        assert_eq!(GetConsumeStatsInBrokerHeader::from_command(&cmd), h);

        let h = GetBrokerConfigResponseHeader {
            version: "{\"counter\":1}".into(),
        };
        let mut cmd = RemotingCommand::request(26, 1);
        h.write_to(&mut cmd);
        assert_eq!(
            GetBrokerConfigResponseHeader::from_command(&cmd).unwrap(),
            h
        );
    }

    #[test]
    fn broker_stats_data_has_the_reference_field_names() {
        let d = BrokerStatsData {
            stats_minute: BrokerStatsItem {
                sum: 3,
                tps: 0.05,
                avgpt: 1.5,
            },
            ..BrokerStatsData::default()
        };
        let text = serde_json::to_string(&d).unwrap();
        assert!(
            text.starts_with("{\"statsMinute\":{\"sum\":3,\"tps\":0.05,\"avgpt\":1.5}"),
            "{text}"
        );
        assert!(text.contains("\"statsDay\":{\"sum\":0,\"tps\":0.0,\"avgpt\":0.0}"));
        assert_eq!(serde_json::from_str::<BrokerStatsData>(&text).unwrap(), d);
    }

    fn sample() -> ConsumeStats {
        ConsumeStats {
            offset_table: vec![
                (
                    MessageQueue {
                        broker_name: "broker-0".into(),
                        queue_id: 0,
                        topic: "T".into(),
                    },
                    OffsetWrapper {
                        broker_offset: 10,
                        consumer_offset: 4,
                        pull_offset: 6,
                        last_timestamp: 1_700_000_000_000,
                    },
                ),
                (
                    MessageQueue {
                        broker_name: "broker-0".into(),
                        queue_id: 1,
                        topic: "T".into(),
                    },
                    OffsetWrapper::default(),
                ),
            ],
            consume_tps: 2.5,
        }
    }

    #[test]
    fn consume_stats_keys_its_table_by_queue_objects_and_round_trips() {
        let cs = sample();
        let text = cs.encode();
        assert!(
            text.starts_with(
                "{\"consumeTps\":2.5,\"offsetTable\":{{\"brokerName\":\"broker-0\",\"queueId\":0,\"topic\":\"T\"}:{\"brokerOffset\":10,"
            ),
            "{text}"
        );
        assert_eq!(ConsumeStats::decode(&text).unwrap(), cs);
        assert_eq!(cs.total_diff(), 6);
        assert_eq!(cs.inflight_diff(), 4);
        // As a Java broker writes it: other field order, spaces, fields we do not know.
        let java = "{ \"offsetTable\" : { {\"topic\":\"T\",\"brokerName\":\"b\",\"queueId\":3} : {\"brokerOffset\":5,\"consumerOffset\":5,\"lastTimestamp\":9} }, \"consumeTps\" : 0.0, \"x\": [1] }";
        let back = ConsumeStats::decode(java).unwrap();
        assert_eq!(back.offset_table.len(), 1);
        assert_eq!(back.offset_table[0].0.queue_id, 3);
        assert_eq!(back.offset_table[0].1.last_timestamp, 9);
        assert!(ConsumeStats::decode("{\"offsetTable\":{{}").is_err());
        assert!(ConsumeStats::decode("").is_err());
    }

    #[test]
    fn consume_stats_list_round_trips() {
        let mut m = BTreeMap::new();
        m.insert("g".to_owned(), vec![sample(), ConsumeStats::default()]);
        let l = ConsumeStatsList {
            consume_stats_list: vec![m, BTreeMap::new()],
            broker_addr: "127.0.0.1:10911".into(),
            total_diff: 6,
            total_inflight_diff: 4,
        };
        let text = l.encode();
        assert!(
            text.contains("\"consumeStatsList\":[{\"g\":[{\"consumeTps\""),
            "{text}"
        );
        assert_eq!(ConsumeStatsList::decode(&text).unwrap(), l);
    }

    #[test]
    fn producer_table_and_properties() {
        let mut t = ProducerTableInfo::default();
        t.data.insert(
            "pg".into(),
            vec![ProducerInfo {
                client_id: "c@1".into(),
                remote_ip: "127.0.0.1:5000".into(),
                language: "JAVA".into(),
                version: 475,
                last_update_timestamp: 7,
            }],
        );
        let text = serde_json::to_string(&t).unwrap();
        assert!(text.contains("\"remoteIP\":\"127.0.0.1:5000\""), "{text}");
        assert!(text.contains("\"lastUpdateTimestamp\":7"), "{text}");
        assert_eq!(serde_json::from_str::<ProducerTableInfo>(&text).unwrap(), t);

        let p = parse_properties("# c\n a = 1\nb:2\n\n!x\nc=\nd=e=f\n");
        assert_eq!(
            p,
            vec![
                ("a".into(), "1".into()),
                ("b".into(), "2".into()),
                ("c".into(), String::new()),
                ("d".into(), "e=f".into())
            ]
        );
    }
}

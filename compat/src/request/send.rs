//! SEND_MESSAGE (10), SEND_MESSAGE_V2 (310), SEND_BATCH_MESSAGE (320) headers
//! (`docs/remoting-protocol.md#send`).

use crate::code::RequestCode;
use crate::command::RemotingCommand;
use crate::error::HeaderError;

use super::{opt_bool, opt_num, opt_str, req_num, req_str};

/// A send request header, decoded from either the V1 long names or the V2 one-letter names.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SendMessageRequestHeader {
    /// `producerGroup` / `a`.
    pub producer_group: String,
    /// `topic` / `b`.
    pub topic: String,
    /// `defaultTopic` / `c`.
    pub default_topic: String,
    /// `defaultTopicQueueNums` / `d`.
    pub default_topic_queue_nums: i32,
    /// `queueId` / `e`; negative means "server picks".
    pub queue_id: i32,
    /// `sysFlag` / `f`.
    pub sys_flag: i32,
    /// `bornTimestamp` / `g`.
    pub born_timestamp: i64,
    /// `flag` / `h`.
    pub flag: i32,
    /// `properties` / `i`.
    pub properties: Option<String>,
    /// `reconsumeTimes` / `j`.
    pub reconsume_times: Option<i32>,
    /// `unitMode` / `k`.
    pub unit_mode: Option<bool>,
    /// `maxReconsumeTimes` / `l`.
    pub max_reconsume_times: Option<i32>,
    /// `batch` / `m` (C++ sends `"1"`).
    pub batch: bool,
    /// `bname` / `n`.
    pub broker_name: Option<String>,
}

impl SendMessageRequestHeader {
    /// Decodes a send header. Code 310 and 320 use V2 names; code 10 uses V1 names. A frame
    /// carrying the V2 key `b` under code 10 is also read as V2 (lenient).
    ///
    /// # Errors
    /// [`HeaderError`] for a missing mandatory field or a non-numeric number.
    pub fn from_command(cmd: &RemotingCommand) -> Result<Self, HeaderError> {
        let code = RequestCode::from_i32(cmd.code);
        let v2 = matches!(
            code,
            RequestCode::SendMessageV2 | RequestCode::SendBatchMessage
        ) || (!cmd.ext_fields.contains_key("topic") && cmd.ext_fields.contains_key("b"));
        if v2 {
            Ok(Self {
                producer_group: req_str(cmd, "a")?,
                topic: req_str(cmd, "b")?,
                default_topic: req_str(cmd, "c")?,
                default_topic_queue_nums: req_num(cmd, "d")?,
                queue_id: req_num(cmd, "e")?,
                sys_flag: req_num(cmd, "f")?,
                born_timestamp: req_num(cmd, "g")?,
                flag: req_num(cmd, "h")?,
                properties: opt_str(cmd, "i"),
                reconsume_times: opt_num(cmd, "j")?,
                unit_mode: opt_bool(cmd, "k"),
                max_reconsume_times: opt_num(cmd, "l")?,
                batch: opt_bool(cmd, "m").unwrap_or(false) || code == RequestCode::SendBatchMessage,
                broker_name: opt_str(cmd, "n").or_else(|| opt_str(cmd, "bname")),
            })
        } else {
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
                unit_mode: opt_bool(cmd, "unitMode"),
                max_reconsume_times: opt_num(cmd, "maxReconsumeTimes")?,
                batch: opt_bool(cmd, "batch").unwrap_or(false),
                broker_name: opt_str(cmd, "bname"),
            })
        }
    }

    /// Writes the V2 (one-letter) form, as Java clients send SEND_MESSAGE_V2.
    pub fn write_v2(&self, cmd: &mut RemotingCommand) {
        cmd.put_ext("a", &self.producer_group);
        cmd.put_ext("b", &self.topic);
        cmd.put_ext("c", &self.default_topic);
        cmd.put_ext("d", self.default_topic_queue_nums);
        cmd.put_ext("e", self.queue_id);
        cmd.put_ext("f", self.sys_flag);
        cmd.put_ext("g", self.born_timestamp);
        cmd.put_ext("h", self.flag);
        if let Some(p) = &self.properties {
            cmd.put_ext("i", p);
        }
        if let Some(r) = self.reconsume_times {
            cmd.put_ext("j", r);
        }
        cmd.put_ext("k", self.unit_mode.unwrap_or(false));
        if let Some(m) = self.max_reconsume_times {
            cmd.put_ext("l", m);
        }
        cmd.put_ext("m", self.batch);
        if let Some(n) = &self.broker_name {
            cmd.put_ext("n", n);
        }
    }

    /// Writes the V1 (long name) form, as SEND_MESSAGE (10).
    pub fn write_v1(&self, cmd: &mut RemotingCommand) {
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
        if let Some(u) = self.unit_mode {
            cmd.put_ext("unitMode", u);
        }
        if let Some(m) = self.max_reconsume_times {
            cmd.put_ext("maxReconsumeTimes", m);
        }
        if self.batch {
            cmd.put_ext("batch", true);
        }
    }
}

/// SendMessageResponseHeader.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct SendMessageResponseHeader {
    /// Offset message id(s), comma-joined for a batch.
    pub msg_id: String,
    /// Queue used.
    pub queue_id: i32,
    /// Offset of the (first) message.
    pub queue_offset: i64,
    /// 5.x: the UNIQ_KEY of a single message.
    pub transaction_id: Option<String>,
}

impl SendMessageResponseHeader {
    /// Writes the header plus the `MSG_REGION` and `TRACE_ON` fields the broker always adds.
    pub fn write_to(&self, cmd: &mut RemotingCommand) {
        cmd.put_ext("msgId", &self.msg_id);
        cmd.put_ext("queueId", self.queue_id);
        cmd.put_ext("queueOffset", self.queue_offset);
        if let Some(t) = &self.transaction_id {
            cmd.put_ext("transactionId", t);
        }
        cmd.put_ext("MSG_REGION", "DefaultRegion");
        cmd.put_ext("TRACE_ON", "true");
    }

    /// Decodes (client side).
    ///
    /// # Errors
    /// [`HeaderError`] for a missing or invalid field.
    pub fn from_command(cmd: &RemotingCommand) -> Result<Self, HeaderError> {
        Ok(Self {
            msg_id: req_str(cmd, "msgId")?,
            queue_id: req_num(cmd, "queueId")?,
            queue_offset: req_num(cmd, "queueOffset")?,
            transaction_id: opt_str(cmd, "transactionId"),
        })
    }
}

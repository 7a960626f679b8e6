//! PULL_MESSAGE (11) and LITE_PULL_MESSAGE (361) headers (`docs/remoting-protocol.md#pull`).

use crate::command::RemotingCommand;
use crate::error::HeaderError;

use super::{opt_num, opt_str, req_num, req_str};

/// PullSysFlag: store `commitOffset`.
pub const PULL_FLAG_COMMIT_OFFSET: i32 = 0x1;
/// PullSysFlag: long polling allowed.
pub const PULL_FLAG_SUSPEND: i32 = 0x2;
/// PullSysFlag: use the header subscription.
pub const PULL_FLAG_SUBSCRIPTION: i32 = 0x4;
/// PullSysFlag: legacy class filter.
pub const PULL_FLAG_CLASS_FILTER: i32 = 0x8;
/// PullSysFlag: lite pull consumer.
pub const PULL_FLAG_LITE_PULL: i32 = 0x10;

/// PullMessageRequestHeader.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PullMessageRequestHeader {
    /// Consumer group.
    pub consumer_group: String,
    /// Topic.
    pub topic: String,
    /// Queue id.
    pub queue_id: i32,
    /// First offset wanted.
    pub queue_offset: i64,
    /// Max messages.
    pub max_msg_nums: i32,
    /// PullSysFlag bits.
    pub sys_flag: i32,
    /// Consumer's offset to store with COMMIT_OFFSET.
    pub commit_offset: i64,
    /// Long-poll hold time in ms.
    pub suspend_timeout_millis: i64,
    /// Subscription expression (with the SUBSCRIPTION bit).
    pub subscription: Option<String>,
    /// Subscription version.
    pub sub_version: i64,
    /// `TAG` or `SQL92`.
    pub expression_type: Option<String>,
    /// 5.x byte budget.
    pub max_msg_bytes: Option<i32>,
    /// Broker name the client targets.
    pub broker_name: Option<String>,
}

impl PullMessageRequestHeader {
    /// Decodes from ext fields.
    ///
    /// # Errors
    /// [`HeaderError`] for a missing or invalid field.
    pub fn from_command(cmd: &RemotingCommand) -> Result<Self, HeaderError> {
        Ok(Self {
            consumer_group: req_str(cmd, "consumerGroup")?,
            topic: req_str(cmd, "topic")?,
            queue_id: req_num(cmd, "queueId")?,
            queue_offset: req_num(cmd, "queueOffset")?,
            max_msg_nums: req_num(cmd, "maxMsgNums")?,
            sys_flag: req_num(cmd, "sysFlag")?,
            commit_offset: req_num(cmd, "commitOffset")?,
            suspend_timeout_millis: req_num(cmd, "suspendTimeoutMillis")?,
            subscription: opt_str(cmd, "subscription"),
            sub_version: opt_num(cmd, "subVersion")?.unwrap_or(0),
            expression_type: opt_str(cmd, "expressionType"),
            max_msg_bytes: opt_num(cmd, "maxMsgBytes")?,
            broker_name: opt_str(cmd, "bname"),
        })
    }

    /// Writes into ext fields.
    pub fn write_to(&self, cmd: &mut RemotingCommand) {
        cmd.put_ext("consumerGroup", &self.consumer_group);
        cmd.put_ext("topic", &self.topic);
        cmd.put_ext("queueId", self.queue_id);
        cmd.put_ext("queueOffset", self.queue_offset);
        cmd.put_ext("maxMsgNums", self.max_msg_nums);
        cmd.put_ext("sysFlag", self.sys_flag);
        cmd.put_ext("commitOffset", self.commit_offset);
        cmd.put_ext("suspendTimeoutMillis", self.suspend_timeout_millis);
        if let Some(s) = &self.subscription {
            cmd.put_ext("subscription", s);
        }
        cmd.put_ext("subVersion", self.sub_version);
        if let Some(e) = &self.expression_type {
            cmd.put_ext("expressionType", e);
        }
        if let Some(m) = self.max_msg_bytes {
            cmd.put_ext("maxMsgBytes", m);
        }
    }

    /// True when the given PullSysFlag bit is set.
    pub fn has_flag(&self, bit: i32) -> bool {
        self.sys_flag & bit != 0
    }
}

/// PullMessageResponseHeader (present on every pull answer).
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct PullMessageResponseHeader {
    /// Broker id for the next pull (always 0).
    pub suggest_which_broker_id: i64,
    /// Offset to ask next.
    pub next_begin_offset: i64,
    /// Smallest retained offset.
    pub min_offset: i64,
    /// Next offset to be written.
    pub max_offset: i64,
}

impl PullMessageResponseHeader {
    /// Writes into ext fields.
    pub fn write_to(&self, cmd: &mut RemotingCommand) {
        cmd.put_ext("suggestWhichBrokerId", self.suggest_which_broker_id);
        cmd.put_ext("nextBeginOffset", self.next_begin_offset);
        cmd.put_ext("minOffset", self.min_offset);
        cmd.put_ext("maxOffset", self.max_offset);
    }

    /// Decodes (client side).
    ///
    /// # Errors
    /// [`HeaderError`] for a missing or invalid field.
    pub fn from_command(cmd: &RemotingCommand) -> Result<Self, HeaderError> {
        Ok(Self {
            suggest_which_broker_id: req_num(cmd, "suggestWhichBrokerId")?,
            next_begin_offset: req_num(cmd, "nextBeginOffset")?,
            min_offset: req_num(cmd, "minOffset")?,
            max_offset: req_num(cmd, "maxOffset")?,
        })
    }
}

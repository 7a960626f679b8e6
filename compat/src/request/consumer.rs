//! CONSUMER_SEND_MSG_BACK (36) header (`docs/remoting-protocol.md#send-back`).

use crate::command::RemotingCommand;
use crate::error::HeaderError;

use super::{opt_bool, opt_num, opt_str, req_num, req_str};

/// ConsumerSendMsgBackRequestHeader.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct ConsumerSendMsgBackRequestHeader {
    /// Commit-log handle (PHYSICALOFFSET) of the message that failed.
    pub offset: i64,
    /// Consumer group.
    pub group: String,
    /// 0: server chooses (3 + reconsume times); > 0: that level; < 0: straight to the DLQ.
    pub delay_level: i32,
    /// Message id as the client sees it.
    pub origin_msg_id: Option<String>,
    /// Topic it was consumed from.
    pub origin_topic: Option<String>,
    /// Unit mode.
    pub unit_mode: bool,
    /// The client's max reconsume times.
    pub max_reconsume_times: Option<i32>,
}

impl ConsumerSendMsgBackRequestHeader {
    /// Decodes from ext fields.
    ///
    /// # Errors
    /// [`HeaderError`] for a missing or invalid field.
    pub fn from_command(cmd: &RemotingCommand) -> Result<Self, HeaderError> {
        Ok(Self {
            offset: req_num(cmd, "offset")?,
            group: req_str(cmd, "group")?,
            delay_level: req_num(cmd, "delayLevel")?,
            origin_msg_id: opt_str(cmd, "originMsgId").filter(|s| !s.is_empty()),
            origin_topic: opt_str(cmd, "originTopic").filter(|s| !s.is_empty()),
            unit_mode: opt_bool(cmd, "unitMode").unwrap_or(false),
            max_reconsume_times: opt_num(cmd, "maxReconsumeTimes")?,
        })
    }

    /// Writes into ext fields.
    pub fn write_to(&self, cmd: &mut RemotingCommand) {
        cmd.put_ext("offset", self.offset);
        cmd.put_ext("group", &self.group);
        cmd.put_ext("delayLevel", self.delay_level);
        if let Some(m) = &self.origin_msg_id {
            cmd.put_ext("originMsgId", m);
        }
        if let Some(t) = &self.origin_topic {
            cmd.put_ext("originTopic", t);
        }
        cmd.put_ext("unitMode", self.unit_mode);
        if let Some(m) = self.max_reconsume_times {
            cmd.put_ext("maxReconsumeTimes", m);
        }
    }
}

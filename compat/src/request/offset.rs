//! Consumer offset and queue offset requests (`docs/remoting-protocol.md#offsets`).

use crate::command::RemotingCommand;
use crate::error::HeaderError;

use super::{opt_bool, opt_str, req_num, req_str};

/// QUERY_CONSUMER_OFFSET (14) request header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueryConsumerOffsetRequestHeader {
    /// Group.
    pub consumer_group: String,
    /// Topic.
    pub topic: String,
    /// Queue.
    pub queue_id: i32,
    /// 5.x: answer 0 for young queues.
    pub set_zero_if_not_found: Option<bool>,
}

impl QueryConsumerOffsetRequestHeader {
    /// Decodes from ext fields.
    ///
    /// # Errors
    /// [`HeaderError`] for a missing or invalid field.
    pub fn from_command(cmd: &RemotingCommand) -> Result<Self, HeaderError> {
        Ok(Self {
            consumer_group: req_str(cmd, "consumerGroup")?,
            topic: req_str(cmd, "topic")?,
            queue_id: req_num(cmd, "queueId")?,
            set_zero_if_not_found: opt_bool(cmd, "setZeroIfNotFound"),
        })
    }

    /// Writes into ext fields.
    pub fn write_to(&self, cmd: &mut RemotingCommand) {
        cmd.put_ext("consumerGroup", &self.consumer_group);
        cmd.put_ext("topic", &self.topic);
        cmd.put_ext("queueId", self.queue_id);
        if let Some(b) = self.set_zero_if_not_found {
            cmd.put_ext("setZeroIfNotFound", b);
        }
    }
}

/// UPDATE_CONSUMER_OFFSET (15) request header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UpdateConsumerOffsetRequestHeader {
    /// Group.
    pub consumer_group: String,
    /// Topic.
    pub topic: String,
    /// Queue.
    pub queue_id: i32,
    /// Next offset to consume.
    pub commit_offset: i64,
}

impl UpdateConsumerOffsetRequestHeader {
    /// Decodes from ext fields.
    ///
    /// # Errors
    /// [`HeaderError`] for a missing or invalid field.
    pub fn from_command(cmd: &RemotingCommand) -> Result<Self, HeaderError> {
        Ok(Self {
            consumer_group: req_str(cmd, "consumerGroup")?,
            topic: req_str(cmd, "topic")?,
            queue_id: req_num(cmd, "queueId")?,
            commit_offset: req_num(cmd, "commitOffset")?,
        })
    }

    /// Writes into ext fields.
    pub fn write_to(&self, cmd: &mut RemotingCommand) {
        cmd.put_ext("consumerGroup", &self.consumer_group);
        cmd.put_ext("topic", &self.topic);
        cmd.put_ext("queueId", self.queue_id);
        cmd.put_ext("commitOffset", self.commit_offset);
    }
}

/// Header of GET_MAX_OFFSET (30), GET_MIN_OFFSET (31), GET_EARLIEST_MSG_STORETIME (32).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct QueueRequestHeader {
    /// Topic.
    pub topic: String,
    /// Queue.
    pub queue_id: i32,
}

impl QueueRequestHeader {
    /// Decodes from ext fields.
    ///
    /// # Errors
    /// [`HeaderError`] for a missing or invalid field.
    pub fn from_command(cmd: &RemotingCommand) -> Result<Self, HeaderError> {
        Ok(Self {
            topic: req_str(cmd, "topic")?,
            queue_id: req_num(cmd, "queueId")?,
        })
    }

    /// Writes into ext fields.
    pub fn write_to(&self, cmd: &mut RemotingCommand) {
        cmd.put_ext("topic", &self.topic);
        cmd.put_ext("queueId", self.queue_id);
    }
}

/// Lower or upper bound for SEARCH_OFFSET_BY_TIMESTAMP.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub enum BoundaryType {
    /// First offset whose store time ≥ timestamp.
    #[default]
    Lower,
    /// Last offset whose store time ≤ timestamp.
    Upper,
}

/// SEARCH_OFFSET_BY_TIMESTAMP (29) request header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SearchOffsetRequestHeader {
    /// Topic.
    pub topic: String,
    /// Queue.
    pub queue_id: i32,
    /// Store time in ms.
    pub timestamp: i64,
    /// Bound (5.x; default lower).
    pub boundary_type: BoundaryType,
}

impl SearchOffsetRequestHeader {
    /// Decodes from ext fields.
    ///
    /// # Errors
    /// [`HeaderError`] for a missing or invalid field.
    pub fn from_command(cmd: &RemotingCommand) -> Result<Self, HeaderError> {
        let boundary_type = match opt_str(cmd, "boundaryType") {
            Some(b) if b.eq_ignore_ascii_case("upper") => BoundaryType::Upper,
            _ => BoundaryType::Lower,
        };
        Ok(Self {
            topic: req_str(cmd, "topic")?,
            queue_id: req_num(cmd, "queueId")?,
            timestamp: req_num(cmd, "timestamp")?,
            boundary_type,
        })
    }

    /// Writes into ext fields.
    pub fn write_to(&self, cmd: &mut RemotingCommand) {
        cmd.put_ext("topic", &self.topic);
        cmd.put_ext("queueId", self.queue_id);
        cmd.put_ext("timestamp", self.timestamp);
        if self.boundary_type == BoundaryType::Upper {
            cmd.put_ext("boundaryType", "UPPER");
        }
    }
}

/// Writes the `offset` response field shared by 14, 29, 30, 31.
pub fn write_offset_response(cmd: &mut RemotingCommand, offset: i64) {
    cmd.put_ext("offset", offset);
}

/// Reads the `offset` response field (client side).
///
/// # Errors
/// [`HeaderError`] for a missing or invalid field.
pub fn read_offset_response(cmd: &RemotingCommand) -> Result<i64, HeaderError> {
    req_num(cmd, "offset")
}

//! Admin requests used by clients and mqadmin (`docs/remoting-protocol.md#admin`), and the name
//! server's KV-config and cluster headers (`docs/remoting-protocol.md#routes`).

use serde::{Deserialize, Serialize};

use crate::command::RemotingCommand;
use crate::error::HeaderError;

use super::{opt_bool, opt_num, opt_str, req_num, req_str};

/// UPDATE_AND_CREATE_TOPIC (17) request header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CreateTopicRequestHeader {
    /// Topic.
    pub topic: String,
    /// Ignored template.
    pub default_topic: String,
    /// Readable queues.
    pub read_queue_nums: i32,
    /// Writable queues.
    pub write_queue_nums: i32,
    /// PermName bits.
    pub perm: i32,
    /// `SINGLE_TAG` or `MULTI_TAG`.
    pub topic_filter_type: String,
    /// TopicSysFlag.
    pub topic_sys_flag: Option<i32>,
    /// Ordered-topic marker.
    pub order: bool,
    /// 5.x attributes `+k=v,…`.
    pub attributes: Option<String>,
}

impl CreateTopicRequestHeader {
    /// Decodes from ext fields.
    ///
    /// # Errors
    /// [`HeaderError`] for a missing or invalid field.
    pub fn from_command(cmd: &RemotingCommand) -> Result<Self, HeaderError> {
        Ok(Self {
            topic: req_str(cmd, "topic")?,
            default_topic: opt_str(cmd, "defaultTopic").unwrap_or_else(|| "TBW102".into()),
            read_queue_nums: req_num(cmd, "readQueueNums")?,
            write_queue_nums: req_num(cmd, "writeQueueNums")?,
            perm: req_num(cmd, "perm")?,
            topic_filter_type: opt_str(cmd, "topicFilterType")
                .unwrap_or_else(|| "SINGLE_TAG".into()),
            topic_sys_flag: opt_num(cmd, "topicSysFlag")?,
            order: opt_bool(cmd, "order").unwrap_or(false),
            attributes: opt_str(cmd, "attributes"),
        })
    }

    /// Writes into ext fields.
    pub fn write_to(&self, cmd: &mut RemotingCommand) {
        cmd.put_ext("topic", &self.topic);
        cmd.put_ext("defaultTopic", &self.default_topic);
        cmd.put_ext("readQueueNums", self.read_queue_nums);
        cmd.put_ext("writeQueueNums", self.write_queue_nums);
        cmd.put_ext("perm", self.perm);
        cmd.put_ext("topicFilterType", &self.topic_filter_type);
        if let Some(f) = self.topic_sys_flag {
            cmd.put_ext("topicSysFlag", f);
        }
        cmd.put_ext("order", self.order);
        if let Some(a) = &self.attributes {
            cmd.put_ext("attributes", a);
        }
    }
}

/// Header with just `topic` (DELETE_TOPIC_IN_BROKER, GET_TOPIC_STATS_INFO, …).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TopicHeader {
    /// Topic.
    pub topic: String,
}

impl TopicHeader {
    /// Decodes from ext fields.
    ///
    /// # Errors
    /// [`HeaderError`] when `topic` is missing.
    pub fn from_command(cmd: &RemotingCommand) -> Result<Self, HeaderError> {
        Ok(Self {
            topic: req_str(cmd, "topic")?,
        })
    }

    /// Writes into ext fields.
    pub fn write_to(&self, cmd: &mut RemotingCommand) {
        cmd.put_ext("topic", &self.topic);
    }
}

/// GET_TOPICS_BY_CLUSTER (224) request header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClusterHeader {
    /// Cluster name.
    pub cluster: String,
}

impl ClusterHeader {
    /// Decodes from ext fields.
    ///
    /// # Errors
    /// [`HeaderError`] when `cluster` is missing.
    pub fn from_command(cmd: &RemotingCommand) -> Result<Self, HeaderError> {
        Ok(Self {
            cluster: req_str(cmd, "cluster")?,
        })
    }

    /// Writes into ext fields.
    pub fn write_to(&self, cmd: &mut RemotingCommand) {
        cmd.put_ext("cluster", &self.cluster);
    }
}

/// PUT_KV_CONFIG (100), GET_KV_CONFIG (101), DELETE_KV_CONFIG (102) request header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KvConfigHeader {
    /// Namespace.
    pub namespace: String,
    /// Key.
    pub key: String,
    /// Value (PUT only).
    pub value: Option<String>,
}

impl KvConfigHeader {
    /// Decodes from ext fields.
    ///
    /// # Errors
    /// [`HeaderError`] when `namespace` or `key` is missing.
    pub fn from_command(cmd: &RemotingCommand) -> Result<Self, HeaderError> {
        Ok(Self {
            namespace: req_str(cmd, "namespace")?,
            key: req_str(cmd, "key")?,
            value: opt_str(cmd, "value"),
        })
    }

    /// Writes into ext fields.
    pub fn write_to(&self, cmd: &mut RemotingCommand) {
        cmd.put_ext("namespace", &self.namespace);
        cmd.put_ext("key", &self.key);
        if let Some(v) = &self.value {
            cmd.put_ext("value", v);
        }
    }
}

/// VIEW_MESSAGE_BY_ID (33) request header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ViewMessageRequestHeader {
    /// Commit-log offset decoded from an offset message id.
    pub offset: i64,
}

impl ViewMessageRequestHeader {
    /// Decodes from ext fields.
    ///
    /// # Errors
    /// [`HeaderError`] when `offset` is missing or not a number.
    pub fn from_command(cmd: &RemotingCommand) -> Result<Self, HeaderError> {
        Ok(Self {
            offset: req_num(cmd, "offset")?,
        })
    }

    /// Writes into ext fields.
    pub fn write_to(&self, cmd: &mut RemotingCommand) {
        cmd.put_ext("offset", self.offset);
    }
}

/// TopicConfig JSON (GET_ALL_TOPIC_CONFIG, GET_TOPIC_CONFIG).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct TopicConfigBody {
    /// Topic.
    pub topic_name: String,
    /// Readable queues.
    pub read_queue_nums: i32,
    /// Writable queues.
    pub write_queue_nums: i32,
    /// PermName bits.
    pub perm: i32,
    /// Filter type.
    pub topic_filter_type: String,
    /// TopicSysFlag.
    pub topic_sys_flag: i32,
    /// Ordered.
    pub order: bool,
}

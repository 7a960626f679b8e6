//! Name-server requests: routes, cluster info, topic lists (`docs/remoting-protocol.md#routes`).

use serde::{Deserialize, Serialize};
use std::collections::BTreeMap;

use crate::command::RemotingCommand;
use crate::error::HeaderError;

/// GET_ROUTEINFO_BY_TOPIC (105) request header.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct GetRouteInfoRequestHeader {
    /// Topic whose route is wanted.
    pub topic: String,
    /// 5.x: ask for quoted map keys (Stratus always quotes them).
    pub accept_standard_json_only: Option<bool>,
}

impl GetRouteInfoRequestHeader {
    /// Decodes from ext fields.
    pub fn from_command(cmd: &RemotingCommand) -> Result<Self, HeaderError> {
        Ok(Self {
            topic: super::req_str(cmd, "topic")?,
            accept_standard_json_only: super::opt_bool(cmd, "acceptStandardJsonOnly"),
        })
    }

    /// Writes into ext fields.
    pub fn write_to(&self, cmd: &mut RemotingCommand) {
        cmd.put_ext("topic", &self.topic);
        if let Some(b) = self.accept_standard_json_only {
            cmd.put_ext("acceptStandardJsonOnly", b);
        }
    }
}

/// TopicRouteData body.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct TopicRouteData {
    /// One per broker name serving the topic.
    pub queue_datas: Vec<QueueData>,
    /// One per broker name in `queue_datas`.
    pub broker_datas: Vec<BrokerData>,
    /// Always empty.
    #[serde(default)]
    pub filter_server_table: BTreeMap<String, Vec<String>>,
    /// `brokerName:queueCount;…` for ordered topics.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub order_topic_conf: Option<String>,
}

/// QueueData of a route.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct QueueData {
    /// Broker (shard) name.
    pub broker_name: String,
    /// Readable queues.
    pub read_queue_nums: i32,
    /// Writable queues.
    pub write_queue_nums: i32,
    /// PermName bits.
    pub perm: i32,
    /// TopicSysFlag.
    pub topic_sys_flag: i32,
}

/// BrokerData of a route or cluster info. `broker_addrs` keys are broker ids as text
/// (`"0"` = master), emitted as quoted JSON keys.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BrokerData {
    /// Cluster name.
    pub cluster: String,
    /// Broker name.
    pub broker_name: String,
    /// Broker id → `ip:port`.
    pub broker_addrs: BTreeMap<String, String>,
    /// 5.x acting master flag, always false.
    #[serde(default)]
    pub enable_acting_master: bool,
}

/// GET_BROKER_CLUSTER_INFO (106) body.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct ClusterInfo {
    /// Broker name → BrokerData.
    pub broker_addr_table: BTreeMap<String, BrokerData>,
    /// Cluster name → broker names.
    pub cluster_addr_table: BTreeMap<String, Vec<String>>,
}

/// TopicList body (206, 224, 304).
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize, Default)]
#[serde(rename_all = "camelCase")]
pub struct TopicList {
    /// Topic names.
    pub topic_list: Vec<String>,
    /// Optional broker address.
    #[serde(skip_serializing_if = "Option::is_none", default)]
    pub broker_addr: Option<String>,
}

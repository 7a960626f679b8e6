//! Name-server role: routes, cluster info, topic lists (`docs/remoting-protocol.md#routes`).
//! Routes come from meta: every topic has its queues on every shard, each shard published as
//! a broker named `broker-<n>` at its owner's advertised address (first broker port + n).
//! Any node answers with every shard that has a live owner, from the route table the
//! membership loop keeps.
//!
//! A route lookup of a known topic needs nothing from meta but the topic's order config
//! (`ORDER_TOPIC_CONFIG`), read through with a short wait; while meta is slow or away the
//! last value seen is answered ([`OrderConfs`]), so routes keep being served from memory
//! during a meta outage (a pool waiting for its server would otherwise hold each lookup past
//! the clients' 3 s timeout).

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::time::Duration;

use parking_lot::RwLock;

use stratus_compat::ResponseCode;
use stratus_compat::command::RemotingCommand;
use stratus_compat::request::admin::{ClusterHeader, TopicHeader};
use stratus_compat::request::route::{
    BrokerData, ClusterInfo, GetRouteInfoRequestHeader, QueueData, TopicList, TopicRouteData,
};
use stratus_meta::TopicConfig;

use super::json_body;
use tracing::warn;

use crate::error::GatewayError;
use crate::node::Node;
use crate::node::shards::shard_name;
use crate::remoting::Remoting;
use crate::remoting::dispatch::{respond, success};

/// The KV namespace of ordered topics' queue layouts (`brokerName:queueCount;…`).
const ORDER_TOPIC_CONFIG: &str = "ORDER_TOPIC_CONFIG";

/// How long a route lookup waits for meta's order config before answering the last one seen.
pub(crate) const ORDER_CONF_WAIT: Duration = Duration::from_millis(500);

/// The last order config meta gave for each topic looked up (`None`: the topic has none).
#[derive(Debug, Default)]
pub(crate) struct OrderConfs {
    last: RwLock<HashMap<String, Option<String>>>,
}

impl OrderConfs {
    /// The order config of `topic`: meta's when it answers within [`ORDER_CONF_WAIT`], else
    /// the last one seen (none for a topic never looked up while meta answered).
    pub(crate) async fn get(&self, node: &Node, topic: &str) -> Option<String> {
        let answer = tokio::select! {
            r = node.meta.get_kv(ORDER_TOPIC_CONFIG, topic) => Some(r),
            () = node.clock.sleep(ORDER_CONF_WAIT) => None,
        };
        match answer {
            Some(Ok(conf)) => {
                self.last.write().insert(topic.to_owned(), conf.clone());
                conf
            }
            Some(Err(e)) => {
                warn!(topic, error = %e, "order config lookup failed; answering the last one seen");
                self.last.read().get(topic).cloned().flatten()
            }
            None => {
                warn!(topic, "meta is slow; answering the last order config seen");
                self.last.read().get(topic).cloned().flatten()
            }
        }
    }
}

fn broker_datas(rmq: &Remoting) -> Vec<BrokerData> {
    rmq.node
        .routes
        .all()
        .into_iter()
        .map(|(shard, addr)| BrokerData {
            cluster: rmq.node.config.node.cluster_name.clone(),
            broker_name: shard_name(shard),
            broker_addrs: BTreeMap::from([("0".to_owned(), addr)]),
            enable_acting_master: false,
        })
        .collect()
}

/// The route of one topic.
pub(crate) fn route_data(
    rmq: &Remoting,
    topic: &TopicConfig,
    order_conf: Option<String>,
) -> TopicRouteData {
    let brokers = broker_datas(rmq);
    let queue_datas = brokers
        .iter()
        .map(|b| QueueData {
            broker_name: b.broker_name.clone(),
            read_queue_nums: topic.read_queue_nums,
            write_queue_nums: topic.write_queue_nums,
            perm: topic.perm,
            topic_sys_flag: topic.topic_sys_flag,
        })
        .collect();
    TopicRouteData {
        queue_datas,
        broker_datas: brokers,
        filter_server_table: BTreeMap::new(),
        order_topic_conf: order_conf,
    }
}

/// GET_ROUTEINFO_BY_TOPIC (105).
pub(crate) async fn get_route(
    rmq: &Arc<Remoting>,
    cmd: &RemotingCommand,
) -> Result<RemotingCommand, GatewayError> {
    let header = GetRouteInfoRequestHeader::from_command(cmd)?;
    let Some(topic) = rmq.node.topics.lookup(&header.topic).await? else {
        return Ok(respond(
            ResponseCode::TopicNotExist,
            format!(
                "No topic route info in name server for the topic: {}",
                header.topic
            ),
        ));
    };
    if rmq.node.routes.all().is_empty() {
        return Ok(respond(
            ResponseCode::TopicNotExist,
            "no shard is owned by a live node",
        ));
    }
    let order = rmq.order_confs.get(&rmq.node, &header.topic).await;
    let mut resp = success();
    resp.body = json_body(&route_data(rmq, &topic, order))?;
    Ok(resp)
}

/// GET_BROKER_CLUSTER_INFO (106).
pub(crate) fn cluster_info(rmq: &Arc<Remoting>) -> Result<RemotingCommand, GatewayError> {
    let brokers = broker_datas(rmq);
    let info = ClusterInfo {
        cluster_addr_table: BTreeMap::from([(
            rmq.node.config.node.cluster_name.clone(),
            brokers.iter().map(|b| b.broker_name.clone()).collect(),
        )]),
        broker_addr_table: brokers
            .into_iter()
            .map(|b| (b.broker_name.clone(), b))
            .collect(),
    };
    let mut resp = success();
    resp.body = json_body(&info)?;
    Ok(resp)
}

/// GET_ALL_TOPIC_LIST_FROM_NAMESERVER (206) and GET_TOPICS_BY_CLUSTER (224).
pub(crate) fn topic_list(
    rmq: &Arc<Remoting>,
    by_cluster: Option<&RemotingCommand>,
) -> Result<RemotingCommand, GatewayError> {
    if let Some(cmd) = by_cluster {
        let cluster = ClusterHeader::from_command(cmd)?.cluster;
        if cluster != rmq.node.config.node.cluster_name {
            let mut resp = success();
            resp.body = json_body(&TopicList::default())?;
            return Ok(resp);
        }
    }
    let list = TopicList {
        topic_list: rmq
            .node
            .topics
            .all()
            .into_iter()
            .map(|t| t.topic.into_string())
            .collect(),
        broker_addr: None,
    };
    let mut resp = success();
    resp.body = json_body(&list)?;
    Ok(resp)
}

/// Header of a topic-only request, for admin processors.
pub(crate) fn topic_header(cmd: &RemotingCommand) -> Result<String, GatewayError> {
    Ok(TopicHeader::from_command(cmd)?.topic)
}

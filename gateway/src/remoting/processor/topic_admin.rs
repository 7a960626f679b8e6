//! Operators' topic views: GET_TOPIC_STATS_INFO (202), GET_TOPIC_CONFIG (351),
//! GET_SYSTEM_TOPIC_LIST_FROM_NS (304) and GET_SYSTEM_TOPIC_LIST_FROM_BROKER (305). Mirrors
//! `AdminBrokerProcessor` and the name server's `DefaultRequestProcessor` of 5.3.3, for the
//! asked shard (its `bname`, else the port the request came in on, else this node's first
//! shard).

use std::collections::BTreeSet;
use std::sync::Arc;

use stratus_compat::command::RemotingCommand;
use stratus_compat::request::admin::{TopicConfigBody, TopicHeader};
use stratus_compat::request::broker_name;
use stratus_compat::request::group::{TopicConfigAndQueueMapping, TopicOffset, TopicStatsTable};
use stratus_compat::request::lock::MessageQueue;
use stratus_compat::request::route::TopicList;
use stratus_compat::topic::{
    REPLY_TOPIC_POSTFIX, REVIVE_TOPIC_PREFIX, SYNC_BROKER_MEMBER_PREFIX, TIMER_TOPIC,
    system_topic_set,
};
use stratus_compat::types::{QueueId, QueueOffset, Topic};
use stratus_meta::QueueKey;

use super::json_body;
use crate::error::{GatewayError, Result};
use crate::node::shards::shard_name;
use crate::remoting::Remoting;
use crate::remoting::dispatch::success;
use crate::remoting::net::Channel;

/// GET_TOPIC_STATS_INFO (202): every queue of the topic on the asked shard with its bounds
/// and the store time of its last message.
pub(crate) async fn stats(
    rmq: &Arc<Remoting>,
    ch: &Channel,
    cmd: &RemotingCommand,
) -> Result<RemotingCommand> {
    let topic = TopicHeader::from_command(cmd)?.topic;
    let shard = rmq
        .node
        .shards
        .require(broker_name(cmd).as_deref(), ch.shard)?;
    let Some(config) = rmq.node.topics.get(&topic) else {
        return Err(GatewayError::UnknownTopic { topic });
    };
    let queues = config.write_queue_nums.max(config.read_queue_nums).max(0);
    let mut table = TopicStatsTable::default();
    for q in 0..queues {
        let key = QueueKey {
            shard,
            topic: Topic::new(topic.clone()),
            queue_id: QueueId(q),
        };
        let (min, max) = rmq.node.bounds(&key);
        let last_update_timestamp = if max.0 > 0 {
            rmq.node
                .reader
                .store_time_at(&key, QueueOffset(max.0 - 1))
                .await?
                .unwrap_or(0)
        } else {
            0
        };
        table.offset_table.push((
            MessageQueue {
                broker_name: shard_name(shard),
                queue_id: q,
                topic: topic.clone(),
            },
            TopicOffset {
                min_offset: min.0.max(0),
                max_offset: max.0.max(0),
                last_update_timestamp,
            },
        ));
    }
    let mut resp = success();
    resp.body = table
        .encode()
        .map_err(|e| GatewayError::EncodeBody(e.to_string()))?
        .into_bytes()
        .into();
    Ok(resp)
}

/// GET_TOPIC_CONFIG (351): `TopicConfigAndQueueMapping` (Stratus has no static-topic
/// mapping, so never a `mappingDetail`).
pub(crate) fn config(rmq: &Arc<Remoting>, cmd: &RemotingCommand) -> Result<RemotingCommand> {
    let topic = TopicHeader::from_command(cmd)?.topic;
    let Some(t) = rmq.node.topics.get(&topic) else {
        return Err(GatewayError::NoTopicInBroker { topic });
    };
    let mut resp = success();
    resp.body = json_body(&TopicConfigAndQueueMapping {
        config: TopicConfigBody {
            topic_name: t.topic.to_string(),
            read_queue_nums: t.read_queue_nums,
            write_queue_nums: t.write_queue_nums,
            perm: t.perm,
            topic_filter_type: t.topic_filter_type,
            topic_sys_flag: t.topic_sys_flag,
            order: t.order,
        },
        attributes: Default::default(),
    })?;
    Ok(resp)
}

/// GET_SYSTEM_TOPIC_LIST_FROM_NS (304): as the reference's `RouteInfoManager`, the cluster
/// name and every broker name, with the address of one broker (which the client then asks
/// for its own list, 305).
pub(crate) fn from_namesrv(rmq: &Arc<Remoting>) -> Result<RemotingCommand> {
    let routes = rmq.node.routes.all();
    let mut topics = vec![rmq.node.config.node.cluster_name.clone()];
    topics.extend(routes.iter().map(|(s, _)| shard_name(*s)));
    let mut resp = success();
    resp.body = json_body(&TopicList {
        topic_list: topics,
        broker_addr: routes.first().map(|(_, addr)| addr.clone()),
    })?;
    Ok(resp)
}

/// GET_SYSTEM_TOPIC_LIST_FROM_BROKER (305): the reference's system topic set as a default
/// 5.3.3 broker fills it (`TopicConfigManager`): the static set, the cluster and broker
/// names, the cluster's reply and revive topics, the broker's member-sync topic and the
/// timer topic.
pub(crate) fn from_broker(
    rmq: &Arc<Remoting>,
    ch: &Channel,
    cmd: &RemotingCommand,
) -> Result<RemotingCommand> {
    let shard = rmq
        .node
        .shards
        .require(broker_name(cmd).as_deref(), ch.shard)?;
    let cluster = &rmq.node.config.node.cluster_name;
    let broker = shard_name(shard);
    let mut topics: BTreeSet<String> = system_topic_set().iter().map(|t| (*t).to_owned()).collect();
    topics.insert(cluster.clone());
    topics.insert(broker.clone());
    topics.insert(format!("{cluster}_{REPLY_TOPIC_POSTFIX}"));
    topics.insert(format!("{REVIVE_TOPIC_PREFIX}{cluster}"));
    topics.insert(format!("{SYNC_BROKER_MEMBER_PREFIX}{broker}"));
    topics.insert(TIMER_TOPIC.to_owned());
    let mut resp = success();
    resp.body = json_body(&TopicList {
        topic_list: topics.into_iter().collect(),
        broker_addr: None,
    })?;
    Ok(resp)
}

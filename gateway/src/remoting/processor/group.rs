//! Operators' group and consumer views: UPDATE_AND_CREATE_SUBSCRIPTIONGROUP (200),
//! GET_ALL_SUBSCRIPTIONGROUP_CONFIG (201), GET_CONSUMER_CONNECTION_LIST (203),
//! GET_PRODUCER_CONNECTION_LIST (204), DELETE_SUBSCRIPTIONGROUP (207),
//! QUERY_TOPIC_CONSUME_BY_WHO (300), CLONE_GROUP_OFFSET (314), QUERY_TOPICS_BY_CONSUMER
//! (343), GET_SUBSCRIPTIONGROUP_CONFIG (352). Mirrors `AdminBrokerProcessor` of 5.3.3.
//!
//! Groups are the cluster's (meta); connections are the asked shard's (the channels of this
//! node's registry that came in on that shard's ports: a client heartbeats each broker over
//! its own connection); offsets are the asked shard's too (the shard: the request's `bname`,
//! else the port it came in on, else this node's first shard).

use std::collections::BTreeSet;
use std::sync::Arc;

use stratus_compat::HeaderError;
use stratus_compat::command::RemotingCommand;
use stratus_compat::request::admin::TopicHeader;
use stratus_compat::request::broker_name;
use stratus_compat::request::group::{
    CloneGroupOffsetRequestHeader, DataVersion, DeleteSubscriptionGroupRequestHeader, GroupHeader,
    GroupList, MAX_GROUP_LEN, ProducerGroupHeader, SubscriptionGroupConfigBody,
    SubscriptionGroupWrapper, is_valid_group_name,
};
use stratus_compat::request::heartbeat::{ConsumerGroupHeader, decode_json_body};
use stratus_compat::request::route::TopicList;
use stratus_compat::types::{ConsumerGroup, Topic};
use stratus_meta::{ConsumerOffset, ShardId};
use tracing::info;

use super::json_body;
use crate::error::{GatewayError, Result};
use crate::node::shards::shard_addr;
use crate::remoting::Remoting;
use crate::remoting::dispatch::success;
use crate::remoting::net::Channel;

/// The shard a broker request is for.
fn shard_of(rmq: &Remoting, ch: &Channel, cmd: &RemotingCommand) -> Result<ShardId> {
    rmq.node
        .shards
        .require(broker_name(cmd).as_deref(), ch.shard)
}

/// Whether a client channel is one to `shard` (a name-server port connection counts as one
/// to the node's first shard, which answers broker requests there).
fn channel_on(rmq: &Remoting, shard: ShardId) -> impl Fn(&Channel) -> bool {
    let first = rmq.node.shards.resolve(None, None);
    move |c: &Channel| c.shard.or(first) == Some(shard)
}

/// `TopicValidator.validateGroup`'s rules and wording.
fn validate_group(name: &str) -> Result<()> {
    if is_valid_group_name(name) {
        return Ok(());
    }
    Err(GatewayError::InvalidParameter(if name.trim().is_empty() {
        "The specified group is blank.".to_owned()
    } else if name.len() > MAX_GROUP_LEN {
        format!("The specified group: {name}, is longer than group max length: {MAX_GROUP_LEN}")
    } else {
        format!(
            "The specified group: {name}, contains illegal characters, allowing only ^[%|a-zA-Z0-9_-]+$"
        )
    }))
}

/// UPDATE_AND_CREATE_SUBSCRIPTIONGROUP (200): the body is a `SubscriptionGroupConfig`.
pub(crate) async fn update_and_create(
    rmq: &Arc<Remoting>,
    cmd: &RemotingCommand,
) -> Result<RemotingCommand> {
    let body: SubscriptionGroupConfigBody = decode_json_body(&cmd.body)?;
    validate_group(&body.group_name)?;
    info!(group = %body.group_name, "subscription group created or updated");
    rmq.groups.put(&rmq.node, body).await?;
    Ok(success())
}

/// GET_ALL_SUBSCRIPTIONGROUP_CONFIG (201): the `SubscriptionGroupWrapper` of every group.
pub(crate) async fn all(rmq: &Arc<Remoting>) -> Result<RemotingCommand> {
    let table = rmq.groups.all(&rmq.node).await?;
    let mut resp = success();
    resp.body = json_body(&SubscriptionGroupWrapper {
        data_version: DataVersion {
            counter: 0,
            state_version: 0,
            timestamp: rmq.node.clock.now_ms(),
        },
        subscription_group_table: table,
        forbidden_table: Default::default(),
    })?;
    Ok(resp)
}

/// GET_SUBSCRIPTIONGROUP_CONFIG (352): one group, auto-created as the reference's
/// `findSubscriptionGroupConfig` does.
pub(crate) async fn get(rmq: &Arc<Remoting>, cmd: &RemotingCommand) -> Result<RemotingCommand> {
    let h = GroupHeader::from_command(cmd)?;
    match rmq.groups.find_or_create(&rmq.node, &h.group).await? {
        Some(config) => {
            let mut resp = success();
            resp.body = json_body(&config)?;
            Ok(resp)
        }
        None => Err(GatewayError::SubscriptionGroupNotExist { group: h.group }),
    }
}

/// DELETE_SUBSCRIPTIONGROUP (207): the group goes from meta (the cluster's); with
/// `cleanOffset`, its offsets on the asked shard too.
pub(crate) async fn delete(
    rmq: &Arc<Remoting>,
    ch: &Channel,
    cmd: &RemotingCommand,
) -> Result<RemotingCommand> {
    let h = DeleteSubscriptionGroupRequestHeader::from_command(cmd)?;
    let shard = shard_of(rmq, ch, cmd)?;
    let existed = rmq.groups.delete(&rmq.node, &h.group_name).await?;
    if h.clean_offset {
        rmq.node
            .meta
            .delete_group_offsets(&ConsumerGroup::new(h.group_name.clone()), shard)
            .await?;
    }
    info!(group = %h.group_name, existed, clean_offset = h.clean_offset, "subscription group deleted");
    Ok(success())
}

/// GET_CONSUMER_CONNECTION_LIST (203): the group's channels to the asked shard.
pub(crate) fn consumer_connections(
    rmq: &Arc<Remoting>,
    ch: &Channel,
    cmd: &RemotingCommand,
) -> Result<RemotingCommand> {
    let h = ConsumerGroupHeader::from_command(cmd)?;
    let shard = shard_of(rmq, ch, cmd)?;
    let on = channel_on(rmq, shard);
    let Some(conn) = rmq.registry.consumer_connection(&h.consumer_group, on) else {
        return Err(GatewayError::GroupNotOnline {
            group: h.consumer_group,
        });
    };
    let mut resp = success();
    resp.body = json_body(&conn)?;
    Ok(resp)
}

/// GET_PRODUCER_CONNECTION_LIST (204): the group's channels to the asked shard.
pub(crate) fn producer_connections(
    rmq: &Arc<Remoting>,
    ch: &Channel,
    cmd: &RemotingCommand,
) -> Result<RemotingCommand> {
    let h = ProducerGroupHeader::from_command(cmd)?;
    let shard = shard_of(rmq, ch, cmd)?;
    let on = channel_on(rmq, shard);
    let Some(conn) = rmq.registry.producer_connection(&h.producer_group, on) else {
        return Err(GatewayError::ProducerGroupNotExist {
            group: h.producer_group,
        });
    };
    let mut resp = success();
    resp.body = json_body(&conn)?;
    Ok(resp)
}

/// QUERY_TOPIC_CONSUME_BY_WHO (300): groups whose live members subscribe the topic, and
/// groups with offsets on it on the asked shard.
pub(crate) async fn consumed_by(
    rmq: &Arc<Remoting>,
    ch: &Channel,
    cmd: &RemotingCommand,
) -> Result<RemotingCommand> {
    let topic = TopicHeader::from_command(cmd)?.topic;
    let shard = shard_of(rmq, ch, cmd)?;
    let mut groups: BTreeSet<String> = rmq
        .registry
        .groups_subscribing(&topic)
        .into_iter()
        .collect();
    for g in rmq
        .node
        .meta
        .offset_groups(shard, &Topic::new(topic))
        .await?
    {
        groups.insert(g.into_string());
    }
    let mut resp = success();
    resp.body = json_body(&GroupList {
        group_list: groups.into_iter().collect(),
    })?;
    Ok(resp)
}

/// The topics `group` has offsets on, on `shard`, sorted.
async fn offset_topics(
    rmq: &Remoting,
    group: &ConsumerGroup,
    shard: ShardId,
) -> Result<Vec<String>> {
    let topics: BTreeSet<String> = rmq
        .node
        .meta
        .group_offsets(group)
        .await?
        .into_iter()
        .filter(|o| o.queue.shard == shard)
        .map(|o| o.queue.topic.as_str().to_owned())
        .collect();
    Ok(topics.into_iter().collect())
}

/// QUERY_TOPICS_BY_CONSUMER (343): the topics the group has offsets on, on the asked shard,
/// with the shard's broker address.
pub(crate) async fn topics_of(
    rmq: &Arc<Remoting>,
    ch: &Channel,
    cmd: &RemotingCommand,
) -> Result<RemotingCommand> {
    let shard = shard_of(rmq, ch, cmd)?;
    // The reference answers a request without a group with an empty list.
    let topics = match GroupHeader::from_command(cmd) {
        Ok(h) => offset_topics(rmq, &ConsumerGroup::new(h.group), shard).await?,
        Err(HeaderError::Missing(_)) => Vec::new(),
        Err(e) => return Err(e.into()),
    };
    let mut resp = success();
    resp.body = json_body(&TopicList {
        topic_list: topics,
        broker_addr: shard_addr(&rmq.node.advertised, shard),
    })?;
    Ok(resp)
}

/// CLONE_GROUP_OFFSET (314): copies the source group's offsets of a topic (blank: of every
/// topic it has offsets on) on the asked shard to the destination group. Topics that do not
/// exist are skipped; unless `offline`, so are topics the source group's live members do not
/// subscribe. (The reference's blank-topic case clones nothing — it passes the blank topic
/// on for each topic; Stratus clones each topic, which is what the request asks.)
pub(crate) async fn clone_offsets(
    rmq: &Arc<Remoting>,
    ch: &Channel,
    cmd: &RemotingCommand,
) -> Result<RemotingCommand> {
    let shard = shard_of(rmq, ch, cmd)?;
    let h = match CloneGroupOffsetRequestHeader::from_command(cmd) {
        Ok(h) => h,
        // The reference clones nothing and answers SUCCESS without a source or destination.
        Err(HeaderError::Missing(_)) => return Ok(success()),
        Err(e) => return Err(e.into()),
    };
    let src = ConsumerGroup::new(h.src_group.clone());
    let dest = ConsumerGroup::new(h.dest_group.clone());
    let topics = match &h.topic {
        Some(t) => vec![t.clone()],
        None => offset_topics(rmq, &src, shard).await?,
    };
    let live = rmq
        .registry
        .subscribed_topics(&h.src_group)
        .filter(|t| !t.is_empty());
    let topics: Vec<String> = topics
        .into_iter()
        .filter(|t| rmq.node.topics.get(t).is_some())
        .filter(|t| h.offline || live.as_ref().is_none_or(|l| l.contains(t)))
        .collect();
    if topics.is_empty() {
        return Ok(success());
    }
    let copies: Vec<ConsumerOffset> = rmq
        .node
        .meta
        .group_offsets(&src)
        .await?
        .into_iter()
        .filter(|o| o.queue.shard == shard && topics.iter().any(|t| t == o.queue.topic.as_str()))
        .map(|o| ConsumerOffset {
            group: dest.clone(),
            queue: o.queue,
            offset: o.offset,
        })
        .collect();
    rmq.node.commit_offsets(&copies).await?;
    info!(src = %h.src_group, dest = %h.dest_group, offsets = copies.len(), "group offsets cloned");
    Ok(success())
}

//! HEART_BEAT (34), UNREGISTER_CLIENT (35), GET_CONSUMER_LIST_BY_GROUP (38),
//! CHECK_CLIENT_CONFIG (46). Mirrors `ClientManageProcessor`.

use std::sync::Arc;

use stratus_compat::command::RemotingCommand;
use stratus_compat::request::heartbeat::{
    CheckClientConfigBody, ConsumerGroupHeader, ConsumerIdList, HeartbeatData, MessageModel,
    UnregisterClientRequestHeader, decode_json_body,
};
use stratus_compat::request::lock::{LockBatchRequestBody, LockBatchResponseBody, MessageQueue};

use super::json_body;
use crate::error::{GatewayError, Result};
use crate::remoting::Remoting;
use crate::remoting::dispatch::success;
use crate::remoting::filter::MessageFilter;
use crate::remoting::net::Channel;
use stratus_compat::topic::{MAX_TOPIC_LEN, PERM_READ, PERM_WRITE, RETRY_PREFIX};

use crate::node::topics::topic_config;

/// HEART_BEAT: registers the channel under each producer and consumer group and creates the
/// retry topic of each clustering consumer group.
pub(crate) async fn heartbeat(
    rmq: &Arc<Remoting>,
    ch: &Arc<Channel>,
    cmd: &RemotingCommand,
) -> Result<RemotingCommand> {
    let data: HeartbeatData = decode_json_body(&cmd.body)?;
    let now = rmq.node.clock.now_ms();
    rmq.registry
        .set_client_version(ch.id, cmd.language, cmd.version);
    for p in &data.producer_data_set {
        rmq.registry
            .register_producer(ch, &data.client_id, &p.group_name, now);
    }
    for c in &data.consumer_data_set {
        // As the reference: a group that does not exist and may not be created is not
        // registered.
        let Some(group) = rmq.groups.find_cached(&rmq.node, &c.group_name).await else {
            continue;
        };
        rmq.registry
            .set_notify_enabled(&c.group_name, group.notify_consumer_ids_changed_enable);
        if c.message_model == MessageModel::Clustering {
            let retry = format!("{RETRY_PREFIX}{}", c.group_name);
            if rmq.node.topics.get(&retry).is_none() && retry.len() <= MAX_TOPIC_LEN {
                let queues = group.retry_queue_nums.clamp(1, 1024);
                rmq.node
                    .topics
                    .create_if_absent(topic_config(&retry, queues, PERM_READ | PERM_WRITE))
                    .await?;
            }
        }
        rmq.registry.register_consumer(ch, &data.client_id, c, now);
    }
    Ok(success())
}

/// UNREGISTER_CLIENT.
pub(crate) fn unregister(
    rmq: &Arc<Remoting>,
    ch: &Arc<Channel>,
    cmd: &RemotingCommand,
) -> Result<RemotingCommand> {
    let h = UnregisterClientRequestHeader::from_command(cmd)?;
    rmq.registry.unregister(
        ch.id,
        h.producer_group.as_deref(),
        h.consumer_group.as_deref(),
    );
    Ok(success())
}

/// GET_CONSUMER_LIST_BY_GROUP.
pub(crate) fn consumer_list(rmq: &Arc<Remoting>, cmd: &RemotingCommand) -> Result<RemotingCommand> {
    let h = ConsumerGroupHeader::from_command(cmd)?;
    let ids = rmq.registry.consumer_ids(&h.consumer_group);
    if ids.is_empty() {
        return Err(GatewayError::NoConsumer {
            group: h.consumer_group,
        });
    }
    let mut resp = success();
    resp.body = json_body(&ConsumerIdList {
        consumer_id_list: ids,
    })?;
    Ok(resp)
}

/// CHECK_CLIENT_CONFIG: tag subscriptions are accepted; SQL92 ones must compile
/// (SUBSCRIPTION_PARSE_FAILED otherwise).
pub(crate) fn check_client_config(cmd: &RemotingCommand) -> Result<RemotingCommand> {
    let body: CheckClientConfigBody = decode_json_body(&cmd.body)?;
    if let Some(sub) = &body.subscription_data
        && let MessageFilter::Invalid(e) =
            MessageFilter::compile(&sub.sub_string, sub.expression_type.as_deref())
    {
        return Err(GatewayError::SubscriptionParseFailed(format!(
            "Parse the consumer's subscription[{}] error: {e}",
            sub.sub_string
        )));
    }
    Ok(success())
}

/// LOCK_BATCH_MQ: locks the requested queues of shards owned here for the client.
pub(crate) fn lock_batch(rmq: &Arc<Remoting>, cmd: &RemotingCommand) -> Result<RemotingCommand> {
    let body: LockBatchRequestBody = decode_json_body(&cmd.body)?;
    let owned: Vec<MessageQueue> = body
        .mq_set
        .into_iter()
        .filter(|mq| {
            crate::node::shards::parse_shard_name(&mq.broker_name)
                .is_some_and(|s| rmq.node.shards.epoch(s).is_some())
        })
        .collect();
    let expiry = crate::config::millis(rmq.node.config.broker.queue_lock_expiry);
    let granted = rmq.locks.lock(
        &body.consumer_group,
        &body.client_id,
        owned,
        rmq.node.clock.now_ms(),
        expiry,
    );
    let mut resp = success();
    resp.body = json_body(&LockBatchResponseBody {
        lock_ok_mq_set: granted,
    })?;
    Ok(resp)
}

/// UNLOCK_BATCH_MQ: releases the client's locks on the given queues.
pub(crate) fn unlock_batch(rmq: &Arc<Remoting>, cmd: &RemotingCommand) -> Result<RemotingCommand> {
    let body: LockBatchRequestBody = decode_json_body(&cmd.body)?;
    rmq.locks
        .unlock(&body.consumer_group, &body.client_id, body.mq_set);
    Ok(success())
}

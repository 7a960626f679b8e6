//! Requests an admin asks the broker to relay to one consumer and whose answer is the
//! consumer's: GET_CONSUMER_RUNNING_INFO (307) and CONSUME_MESSAGE_DIRECTLY (309). Mirrors
//! `AdminBrokerProcessor#callConsumer` and `Broker2Client#callClient`: the consumer is found
//! by group and client id among this node's channels, the request goes to it with the
//! admin's fields (309: with the message read by its offset id as the body), and the
//! client's answer is the answer.

use std::sync::Arc;
use std::time::Duration;

use stratus_compat::RequestCode;
use stratus_compat::command::RemotingCommand;
use stratus_compat::message::id::decode_offset_msg_id;
use stratus_compat::request::relay::{
    ConsumeMessageDirectlyRequestHeader, GetConsumerRunningInfoRequestHeader,
};
use stratus_compat::types::CommitLogOffset;

use crate::error::{GatewayError, Result};
use crate::node::shards::shard_name;
use crate::remoting::Remoting;
use crate::remoting::dispatch::InFlight;
use crate::remoting::net::Channel;
use crate::remoting::net::channel::InvokeError;

/// How long a relayed request waits for the client (`Broker2Client#callClient`: 10 s).
pub(crate) const CALL_CLIENT_TIMEOUT: Duration = Duration::from_secs(10);

/// GET_CONSUMER_RUNNING_INFO (307).
pub(crate) async fn consumer_running_info(
    rmq: &Arc<Remoting>,
    cmd: &RemotingCommand,
    permit: &mut InFlight,
) -> Result<RemotingCommand> {
    let h = GetConsumerRunningInfoRequestHeader::from_command(cmd)?;
    let fwd = forward(RequestCode::GetConsumerRunningInfo, cmd);
    call_consumer(rmq, fwd, &h.consumer_group, &h.client_id, permit).await
}

/// CONSUME_MESSAGE_DIRECTLY (309): the message named by `msgId` (an offset message id) is
/// read here and sent in the body, with this broker's name (the message's shard).
pub(crate) async fn consume_message_directly(
    rmq: &Arc<Remoting>,
    cmd: &RemotingCommand,
    permit: &mut InFlight,
) -> Result<RemotingCommand> {
    let h = ConsumeMessageDirectlyRequestHeader::from_command(cmd)?;
    let client_id = h.client_id.clone().unwrap_or_default();
    let msg_id = h
        .msg_id
        .as_deref()
        .ok_or_else(|| GatewayError::InvalidParameter("msgId is empty".into()))?;
    let (_, handle) = decode_offset_msg_id(msg_id)
        .map_err(|e| GatewayError::InvalidParameter(format!("msgId {msg_id}: {e}")))?;
    let mut fwd = forward(RequestCode::ConsumeMessageDirectly, cmd);
    if let Some((shard, _)) = stratus_segments::handle::decode(CommitLogOffset(handle)) {
        fwd.put_ext("brokerName", shard_name(shard));
    }
    if let Some(topic) = &h.topic
        && let Some(cfg) = rmq.node.topics.get(topic)
    {
        fwd.put_ext("topicSysFlag", cfg.topic_sys_flag);
    }
    let Some(record) = rmq.node.read_by_handle(CommitLogOffset(handle)).await? else {
        return Err(GatewayError::NoMessageAtOffset { offset: handle });
    };
    fwd.body = record;
    call_consumer(rmq, fwd, &h.consumer_group, &client_id, permit).await
}

/// A new request of `code` with `cmd`'s fields and body.
fn forward(code: RequestCode, cmd: &RemotingCommand) -> RemotingCommand {
    let mut fwd = RemotingCommand::request(code.to_i32(), 0);
    fwd.ext_fields = cmd.ext_fields.clone();
    fwd.body = cmd.body.clone();
    fwd
}

/// Sends `request` to consumer `client_id` of `group` and returns its answer. The
/// request's in-flight permits are given back while the client is awaited.
async fn call_consumer(
    rmq: &Arc<Remoting>,
    request: RemotingCommand,
    group: &str,
    client_id: &str,
    permit: &mut InFlight,
) -> Result<RemotingCommand> {
    let channel = rmq
        .registry
        .consumer_channel(group, client_id)
        .ok_or_else(|| GatewayError::ConsumerNotConnected {
            group: group.to_owned(),
            client_id: client_id.to_owned(),
        })?;
    permit.release();
    let answer = call_client(&channel, request, CALL_CLIENT_TIMEOUT).await;
    permit.reacquire().await;
    answer.map_err(|e| match e {
        InvokeError::Timeout(_) => GatewayError::ConsumerTimeout {
            group: group.to_owned(),
            client_id: client_id.to_owned(),
            detail: e.to_string(),
        },
        InvokeError::Closed | InvokeError::Busy => GatewayError::ConsumerInvokeFailed {
            group: group.to_owned(),
            client_id: client_id.to_owned(),
            detail: e.to_string(),
        },
    })
}

/// Sends `request` to `channel` and waits for the client's answer.
pub(crate) async fn call_client(
    channel: &Channel,
    request: RemotingCommand,
    timeout: Duration,
) -> std::result::Result<RemotingCommand, InvokeError> {
    channel.invoke(request, timeout).await
}

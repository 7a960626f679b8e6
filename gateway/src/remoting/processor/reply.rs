//! Request-reply: SEND_REPLY_MESSAGE (324) and SEND_REPLY_MESSAGE_V2 (325), as
//! `ReplyMessageProcessor`. A replier sends the reply like a message (a send header); the
//! broker pushes it to the requester named by the reply's `REPLY_TO_CLIENT` property
//! (PUSH_REPLY_MESSAGE_TO_CLIENT, 326, awaiting the client's answer) over that client's own
//! connection to this node — requesters heartbeat every shard as producers, so any node a
//! reply reaches holds one — and then stores the reply in its topic, as the reference does
//! with its default `storeReplyMessageEnable = true`.
//!
//! The answer: SUCCESS when the push succeeded (msgId "0", offset 0, or the stored
//! message's when it was stored), else SYSTEM_ERROR with the reference's remark (and the
//! stored message's header when it was stored). The reply topic is the cluster's
//! `<cluster>_REPLY_TOPIC` (one queue), made at start ([`create_reply_topic`]) as the
//! reference's broker makes it, so repliers find a route to it whatever the auto-create
//! setting.

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use stratus_compat::command::RemotingCommand;
use stratus_compat::message::properties::Properties;
use stratus_compat::request::relay::{
    PROPERTY_PUSH_REPLY_TIME, PROPERTY_REPLY_TO_CLIENT, ReplyMessageRequestHeader, reply_topic,
};
use stratus_compat::request::send::{SendMessageRequestHeader, SendMessageResponseHeader};
use stratus_compat::topic::{PERM_READ, PERM_WRITE};
use stratus_compat::{RequestCode, ResponseCode};
use tracing::{debug, warn};

use super::relay::{CALL_CLIENT_TIMEOUT, call_client};
use crate::error::{GatewayError, Result};
use crate::node::topics::{topic_config, validate_name};
use crate::remoting::Remoting;
use crate::remoting::dispatch::{InFlight, respond, success};
use crate::remoting::net::Channel;
use crate::remoting::processor::send;

/// Creates the cluster's reply topic (`<cluster>_REPLY_TOPIC`, one queue, read and write)
/// unless it exists.
///
/// # Errors
/// Meta failures.
pub(crate) async fn create_reply_topic(rmq: &Remoting) -> Result<()> {
    let name = reply_topic(&rmq.node.config.node.cluster_name);
    rmq.node
        .topics
        .create_if_absent(topic_config(&name, 1, PERM_READ | PERM_WRITE))
        .await?;
    Ok(())
}

static QUEUE_PICK: AtomicU32 = AtomicU32::new(0);

/// A send of a request (one that carries `REPLY_TO_CLIENT`): its connection is noted as
/// one the replies may go to, for requesters whose first producer heartbeat has not
/// arrived yet (the Go client's first request and its reply race its heartbeat; the
/// reference finds requesters by heartbeat only and fails such a reply).
pub(crate) fn note_request(rmq: &Remoting, ch: &Arc<Channel>, cmd: &RemotingCommand) {
    let Some(props) = cmd
        .ext_fields
        .get("i")
        .or_else(|| cmd.ext_fields.get("properties"))
    else {
        return;
    };
    if !props.contains(PROPERTY_REPLY_TO_CLIENT) {
        return;
    }
    if let Some(client) = Properties::parse(props).get(PROPERTY_REPLY_TO_CLIENT) {
        rmq.registry.note_requester(ch, client);
    }
}

/// SEND_REPLY_MESSAGE (324) / SEND_REPLY_MESSAGE_V2 (325).
pub(crate) async fn send_reply(
    rmq: &Arc<Remoting>,
    ch: &Channel,
    cmd: RemotingCommand,
    permit: &mut InFlight,
) -> Result<RemotingCommand> {
    let mut header = SendMessageRequestHeader::from_command(&cmd)?;
    // The checks of a send (`msgCheck`): a valid, existing (or auto-created) topic and a
    // queue it has.
    validate_name(&header.topic)?;
    let cfg = match rmq.node.topics.get(&header.topic) {
        Some(c) => c,
        None => rmq
            .node
            .topics
            .auto_create_on_send(
                &header.topic,
                &header.default_topic,
                header.default_topic_queue_nums,
            )
            .await?
            .ok_or_else(|| GatewayError::TopicNotExist {
                topic: header.topic.clone(),
            })?,
    };
    let queue_id = if header.queue_id < 0 {
        let n = u32::try_from(cfg.write_queue_nums.max(1)).unwrap_or(1);
        i32::try_from(QUEUE_PICK.fetch_add(1, Ordering::Relaxed) % n).unwrap_or(0)
    } else if header.queue_id >= cfg.write_queue_nums.max(cfg.read_queue_nums) {
        return Err(GatewayError::SendQueueIllegal {
            queue_id: header.queue_id,
            topic: header.topic.clone(),
            write_queues: cfg.write_queue_nums,
            read_queues: cfg.read_queue_nums,
        });
    } else {
        header.queue_id
    };

    permit.release();
    let pushed = push(rmq, ch, &header, &cmd).await;
    permit.reacquire().await;

    // Stored after the push, as the reference does; its failure does not change the answer.
    header.queue_id = queue_id;
    let mut store = RemotingCommand::request(RequestCode::SendMessageV2.to_i32(), cmd.opaque);
    header.write_v2(&mut store);
    store.body = cmd.body.clone();
    let prepared = send::prepare(rmq, ch, &store);
    let stored = match send::complete(rmq, prepared, store).await {
        Ok(r) if r.response_code() == ResponseCode::Success => {
            SendMessageResponseHeader::from_command(&r).ok()
        }
        Ok(r) => {
            warn!(topic = %header.topic, code = r.code, remark = ?r.remark, "reply message not stored");
            None
        }
        Err(e) => {
            warn!(topic = %header.topic, error = %e, "reply message not stored");
            None
        }
    };

    let mut resp = match pushed {
        Ok(()) => success(),
        Err(e) => respond(e.response_code(), e.remark()),
    };
    let answer = stored.unwrap_or(SendMessageResponseHeader {
        msg_id: "0".into(),
        queue_id,
        queue_offset: 0,
        transaction_id: None,
    });
    if resp.response_code() == ResponseCode::Success || answer.msg_id != "0" {
        answer.write_to(&mut resp);
    }
    Ok(resp)
}

/// Pushes the reply to the client its `REPLY_TO_CLIENT` names.
async fn push(
    rmq: &Remoting,
    ch: &Channel,
    header: &SendMessageRequestHeader,
    cmd: &RemotingCommand,
) -> Result<()> {
    let mut props = Properties::parse(header.properties.as_deref().unwrap_or_default());
    let Some(sender) = props.get(PROPERTY_REPLY_TO_CLIENT).map(str::to_owned) else {
        return Err(GatewayError::ReplyNotPushed(format!(
            "reply message properties[{PROPERTY_REPLY_TO_CLIENT}] is null"
        )));
    };
    let Some(target) = rmq.registry.requester_channel(&sender) else {
        return Err(GatewayError::ReplyNotPushed(format!(
            "push reply message fail, channel of <{sender}> not found."
        )));
    };
    let now = rmq.node.clock.now_ms();
    props.insert(PROPERTY_PUSH_REPLY_TIME, &now.to_string());
    let mut request = RemotingCommand::request(RequestCode::PushReplyMessageToClient.to_i32(), 0);
    ReplyMessageRequestHeader {
        producer_group: header.producer_group.clone(),
        topic: header.topic.clone(),
        default_topic: header.default_topic.clone(),
        default_topic_queue_nums: header.default_topic_queue_nums,
        queue_id: header.queue_id,
        sys_flag: header.sys_flag,
        born_timestamp: header.born_timestamp,
        flag: header.flag,
        properties: Some(props.encode()),
        reconsume_times: header.reconsume_times,
        unit_mode: header.unit_mode.unwrap_or(false),
        born_host: ch.peer.to_string(),
        store_host: rmq.node.store_host.to_string(),
        store_timestamp: now,
    }
    .write_to(&mut request);
    request.body = cmd.body.clone();
    let failed = || GatewayError::ReplyNotPushed(format!("push reply message to {sender}fail."));
    match call_client(&target, request, CALL_CLIENT_TIMEOUT).await {
        Ok(answer) if answer.code == 0 => Ok(()),
        Ok(answer) => {
            warn!(%sender, remark = ?answer.remark, "push reply message refused by the client");
            Err(failed())
        }
        Err(e) => {
            debug!(%sender, error = %e, "push reply message failed");
            Err(failed())
        }
    }
}

//! Test harness of the front end: a [`Remoting`] over a test node (in-memory stores, manual
//! clock, every shard owned and published in routes), client channels without sockets, and
//! request builders.

use std::sync::Arc;

use bytes::BytesMut;
use stratus_compat::command::RemotingCommand;
use stratus_compat::message::batch::{BatchEntry, encode_batch};
use stratus_compat::message::id::decode_offset_msg_id;
use stratus_compat::message::properties::Properties;
use stratus_compat::message::record::MessageExt;
use stratus_compat::request::pull::{
    PULL_FLAG_SUBSCRIPTION, PULL_FLAG_SUSPEND, PullMessageRequestHeader,
};
use stratus_compat::request::send::{SendMessageRequestHeader, SendMessageResponseHeader};
use stratus_compat::topic::{PERM_READ, PERM_WRITE};
use stratus_compat::types::{QueueId, QueueOffset, Topic};
use stratus_compat::{RequestCode, ResponseCode};
use stratus_meta::{QueueKey, ShardId};
use tokio::sync::{Semaphore, mpsc};
use tokio_util::task::TaskTracker;

use super::Remoting;
use super::net::Channel;
use crate::config::Settings;
use crate::error::Result;
use crate::node::shards::shard_addr;
use crate::node::testing::{TestNode, node_with};
use crate::node::topics::topic_config;
use crate::remoting::{dispatch, processor};

/// A front end on a test node, and the node's handle.
pub(crate) struct TestFront {
    pub(crate) rmq: Arc<Remoting>,
    pub(crate) test: TestNode,
}

/// A front end over a test node built with `adjust` applied to the default settings. Every
/// owned shard is published in the route table at this node's address (as the membership
/// loop would).
pub(crate) async fn front_with(adjust: impl FnOnce(&mut Settings)) -> TestFront {
    let test = node_with(adjust).await;
    let node = &test.node;
    for (shard, epoch) in node.shards.all() {
        let addr = shard_addr(&node.advertised, shard).expect("shard address");
        let owner = crate::node::shards::Owner {
            node: node.id(),
            epoch,
        };
        node.routes.set(shard, addr, owner);
    }
    TestFront {
        rmq: Remoting::new(test.node.clone()),
        test,
    }
}

/// A front end over a test node on the default settings.
pub(crate) async fn front() -> TestFront {
    front_with(|_| {}).await
}

/// Creates `topic` with `queues` read and write queues, perm read+write.
pub(crate) async fn create_topic(rmq: &Remoting, topic: &str, queues: i32) {
    rmq.node
        .topics
        .create_if_absent(topic_config(topic, queues, PERM_READ | PERM_WRITE))
        .await
        .expect("create topic");
}

/// A client channel (as if connected on the name-server port) and what it is sent.
pub(crate) fn channel(id: u64) -> (Arc<Channel>, mpsc::Receiver<RemotingCommand>) {
    let (tx, rx) = mpsc::channel(64);
    let peer = "127.0.0.1:40000".parse().expect("address");
    (Arc::new(Channel::new(id, peer, None, tx)), rx)
}

/// The response code of a processor's result (an error mapped as dispatch maps it).
pub(crate) fn code_of(res: &Result<RemotingCommand>) -> ResponseCode {
    match res {
        Ok(r) => r.response_code(),
        Err(e) => e.response_code(),
    }
}

/// The remark a processor's result is answered with (an error's as dispatch words it).
pub(crate) fn remark_of(res: &Result<RemotingCommand>) -> String {
    match res {
        Ok(r) => r.remark.clone().unwrap_or_default(),
        Err(e) => e.remark(),
    }
}

/// Properties in the wire form.
pub(crate) fn props(pairs: &[(&str, &str)]) -> String {
    let mut p = Properties::default();
    for (k, v) in pairs {
        p.insert(k, v);
    }
    p.encode()
}

/// The header of a single send of `topic`, queue `queue_id` (negative: any).
pub(crate) fn send_header(
    topic: &str,
    queue_id: i32,
    properties: &str,
) -> SendMessageRequestHeader {
    SendMessageRequestHeader {
        producer_group: "test_producer".into(),
        topic: topic.into(),
        default_topic: "TBW102".into(),
        default_topic_queue_nums: 4,
        queue_id,
        sys_flag: 0,
        born_timestamp: 1_700_000_000_000,
        flag: 0,
        properties: Some(properties.into()),
        reconsume_times: Some(0),
        unit_mode: Some(false),
        max_reconsume_times: None,
        batch: false,
        broker_name: None,
    }
}

/// SEND_MESSAGE_V2 (SEND_BATCH_MESSAGE when `header.batch`) of `header` with `body`.
pub(crate) fn send_command(header: &SendMessageRequestHeader, body: &[u8]) -> RemotingCommand {
    let code = if header.batch {
        RequestCode::SendBatchMessage
    } else {
        RequestCode::SendMessageV2
    };
    let mut cmd = RemotingCommand::request(code.to_i32(), 1);
    header.write_v2(&mut cmd);
    cmd.with_body(body.to_vec())
}

/// SEND_MESSAGE_V2 of `body` to `topic`, queue `queue_id` (negative: any), `properties`
/// in the wire form (`Properties::encode`).
pub(crate) fn send_request(
    topic: &str,
    queue_id: i32,
    properties: &str,
    body: &[u8],
) -> RemotingCommand {
    send_command(&send_header(topic, queue_id, properties), body)
}

/// SEND_BATCH_MESSAGE of `bodies` (no properties) to `topic`, queue `queue_id`.
pub(crate) fn batch_request(topic: &str, queue_id: i32, bodies: &[&[u8]]) -> RemotingCommand {
    let entries: Vec<BatchEntry> = bodies
        .iter()
        .map(|b| BatchEntry {
            flag: 0,
            body: bytes::Bytes::copy_from_slice(b),
            properties: String::new(),
        })
        .collect();
    let mut body = BytesMut::new();
    encode_batch(&entries, &mut body);
    let mut header = send_header(topic, queue_id, "");
    header.batch = true;
    send_command(&header, &body)
}

/// A send as dispatch runs it: `prepare`, then `complete`.
pub(crate) async fn send(
    rmq: &Arc<Remoting>,
    ch: &Channel,
    cmd: RemotingCommand,
) -> Result<RemotingCommand> {
    let prepared = processor::send::prepare(rmq, ch, &cmd);
    processor::send::complete(rmq, prepared, cmd).await
}

/// A send that must succeed; its response header.
pub(crate) async fn send_ok(
    rmq: &Arc<Remoting>,
    ch: &Channel,
    cmd: RemotingCommand,
) -> SendMessageResponseHeader {
    let resp = send(rmq, ch, cmd).await.expect("send answered");
    assert_eq!(
        resp.response_code(),
        ResponseCode::Success,
        "send refused: {:?}",
        resp.remark
    );
    SendMessageResponseHeader::from_command(&resp).expect("send response header")
}

/// The commit-log handle in a send response's (single) offset message id.
pub(crate) fn handle_of(h: &SendMessageResponseHeader) -> i64 {
    decode_offset_msg_id(&h.msg_id)
        .expect("offset message id")
        .1
}

/// Every committed message of `topic`/`queue_id` on shard 0, read from the store directly
/// (no topic config needed: system topics too).
pub(crate) async fn stored(rmq: &Remoting, topic: &str, queue_id: i32) -> Vec<MessageExt> {
    let queue = QueueKey {
        shard: ShardId(0),
        topic: Topic::new(topic),
        queue_id: QueueId(queue_id),
    };
    let batch = rmq
        .node
        .read(&queue, QueueOffset(0), 10_000, usize::MAX, &|_| true)
        .await
        .expect("read");
    batch
        .messages
        .into_iter()
        .map(|mut m| MessageExt::decode(&mut m).expect("record"))
        .collect()
}

/// The header of a pull of up to 32 messages from `offset`, subscribing `*` in the header,
/// without suspend.
pub(crate) fn pull_header(
    group: &str,
    topic: &str,
    queue_id: i32,
    offset: i64,
) -> PullMessageRequestHeader {
    PullMessageRequestHeader {
        consumer_group: group.into(),
        topic: topic.into(),
        queue_id,
        queue_offset: offset,
        max_msg_nums: 32,
        sys_flag: PULL_FLAG_SUBSCRIPTION,
        commit_offset: 0,
        suspend_timeout_millis: 0,
        subscription: Some("*".into()),
        sub_version: 0,
        expression_type: Some("TAG".into()),
        max_msg_bytes: None,
        broker_name: None,
    }
}

/// PULL_MESSAGE of `header`.
pub(crate) fn pull_command(header: &PullMessageRequestHeader) -> RemotingCommand {
    let mut cmd = RemotingCommand::request(RequestCode::PullMessage.to_i32(), 2);
    header.write_to(&mut cmd);
    cmd
}

/// PULL_MESSAGE of up to 32 messages from `offset`, subscribing `*`, without suspend
/// unless `suspend_ms` > 0.
pub(crate) fn pull_request(
    group: &str,
    topic: &str,
    queue_id: i32,
    offset: i64,
    suspend_ms: i64,
) -> RemotingCommand {
    let mut h = pull_header(group, topic, queue_id, offset);
    if suspend_ms > 0 {
        h.sys_flag |= PULL_FLAG_SUSPEND;
        h.suspend_timeout_millis = suspend_ms;
    }
    pull_command(&h)
}

/// A request of `code` whose ext fields `write` fills.
pub(crate) fn request(
    code: RequestCode,
    write: impl FnOnce(&mut RemotingCommand),
) -> RemotingCommand {
    let mut cmd = RemotingCommand::request(code.to_i32(), 3);
    write(&mut cmd);
    cmd
}

/// Runs `cmd` through dispatch, as a connection would, and returns what `ch` was answered
/// (`None`: no answer).
pub(crate) async fn dispatch(
    rmq: &Arc<Remoting>,
    ch: &Arc<Channel>,
    rx: &mut mpsc::Receiver<RemotingCommand>,
    cmd: RemotingCommand,
) -> Option<RemotingCommand> {
    let budgets = dispatch::Budgets {
        connection: Arc::new(Semaphore::new(16)),
        node: rmq.node.in_flight.clone(),
    };
    let permit = budgets.acquire().await.expect("budgets open");
    let tasks = TaskTracker::new();
    dispatch::handle(rmq, ch, cmd, permit, &tasks);
    tasks.close();
    tasks.wait().await;
    rx.try_recv().ok()
}

//! HEART_BEAT, GET_CONSUMER_LIST_BY_GROUP and LOCK/UNLOCK_BATCH_MQ (`processor/client.rs`)
//! against the test core.

use std::sync::Arc;
use std::time::Duration;

use stratus_compat::command::RemotingCommand;
use stratus_compat::message::properties::keys;
use stratus_compat::request::heartbeat::{
    ConsumeFromWhere, ConsumeType, ConsumerData, ConsumerGroupHeader, ConsumerIdList,
    HeartbeatData, MessageModel, SubscriptionData, decode_json_body,
};
use stratus_compat::request::lock::{LockBatchRequestBody, LockBatchResponseBody, MessageQueue};
use stratus_compat::{RequestCode, ResponseCode};

use crate::remoting::net::Channel;
use crate::remoting::processor::{client, pull};
use crate::remoting::testing::{
    TestFront, channel, code_of, create_topic, front, props, pull_command, pull_header, remark_of,
    request, send_ok, send_request,
};

/// A HEART_BEAT of consumer `client_id` in group `g` (clustering) subscribing Orders `sub`.
fn heartbeat(client_id: &str, sub: &str) -> RemotingCommand {
    let data = HeartbeatData {
        client_id: client_id.into(),
        producer_data_set: Vec::new(),
        consumer_data_set: vec![ConsumerData {
            group_name: "g".into(),
            consume_type: ConsumeType::ConsumePassively,
            message_model: MessageModel::Clustering,
            consume_from_where: ConsumeFromWhere::ConsumeFromLastOffset,
            subscription_data_set: vec![SubscriptionData {
                topic: "Orders".into(),
                sub_string: sub.into(),
                sub_version: 1,
                ..SubscriptionData::default()
            }],
            unit_mode: false,
        }],
        heartbeat_fingerprint: 0,
        without_sub: false,
    };
    request(RequestCode::HeartBeat, |_| {}).with_body(serde_json::to_vec(&data).unwrap())
}

fn consumer_list_request() -> RemotingCommand {
    request(RequestCode::GetConsumerListByGroup, |cmd| {
        ConsumerGroupHeader {
            consumer_group: "g".into(),
        }
        .write_to(cmd);
    })
}

async fn beat(t: &TestFront, ch: &Arc<Channel>, client_id: &str, sub: &str) {
    let resp = client::heartbeat(&t.rmq, ch, &heartbeat(client_id, sub))
        .await
        .unwrap();
    assert_eq!(resp.response_code(), ResponseCode::Success);
}

#[tokio::test]
async fn a_heartbeat_registers_the_consumer_group() {
    let t = front().await;
    let res = client::consumer_list(&t.rmq, &consumer_list_request());
    assert_eq!(code_of(&res), ResponseCode::SystemError, "no consumer yet");
    assert_eq!(remark_of(&res), "no consumer for this group, g");
    let (a, _ra) = channel(1);
    let (b, _rb) = channel(2);
    beat(&t, &a, "client-a", "*").await;
    beat(&t, &b, "client-b", "*").await;
    let resp = client::consumer_list(&t.rmq, &consumer_list_request()).unwrap();
    let ids: ConsumerIdList = decode_json_body(&resp.body).unwrap();
    assert_eq!(ids.consumer_id_list, ["client-a", "client-b"]);
    let retry = t
        .rmq
        .node
        .topics
        .get("%RETRY%g")
        .expect("retry topic created");
    assert_eq!(retry.read_queue_nums, 1);
}

#[tokio::test]
async fn a_pull_without_its_own_subscription_uses_the_heartbeats() {
    let t = front().await;
    let (ch, _rx) = channel(1);
    create_topic(&t.rmq, "Orders", 4).await;
    for tag in ["TagB", "TagA"] {
        let p = props(&[(keys::TAGS, tag)]);
        send_ok(&t.rmq, &ch, send_request("Orders", 0, &p, tag.as_bytes())).await;
    }
    let mut h = pull_header("g", "Orders", 0, 0);
    h.sys_flag = 0;
    h.subscription = None;
    let res = pull::handle(&t.rmq, &ch, pull_command(&h)).await;
    assert_eq!(code_of(&res), ResponseCode::SubscriptionNotExist);
    beat(&t, &ch, "client-a", "TagA").await;
    let resp = pull::handle(&t.rmq, &ch, pull_command(&h)).await.unwrap();
    assert_eq!(resp.response_code(), ResponseCode::Success);
    let msgs = stratus_compat::message::record::MessageExt::decode_all(resp.body).unwrap();
    let bodies: Vec<&[u8]> = msgs.iter().map(|m| &m.body[..]).collect();
    assert_eq!(bodies, [b"TagA".as_slice()]);
}

fn mq(broker: &str, queue_id: i32) -> MessageQueue {
    MessageQueue {
        broker_name: broker.into(),
        queue_id,
        topic: "Orders".into(),
    }
}

fn lock_body(client_id: &str, queues: &[MessageQueue]) -> Vec<u8> {
    serde_json::to_vec(&LockBatchRequestBody {
        consumer_group: "g".into(),
        client_id: client_id.into(),
        only_this_broker: true,
        mq_set: queues.to_vec(),
    })
    .unwrap()
}

/// LOCK_BATCH_MQ of `queues` for `client_id`; the queues granted, sorted.
fn lock_queues(t: &TestFront, client_id: &str, queues: &[MessageQueue]) -> Vec<MessageQueue> {
    let cmd = request(RequestCode::LockBatchMq, |_| {}).with_body(lock_body(client_id, queues));
    let resp = client::lock_batch(&t.rmq, &cmd).unwrap();
    assert_eq!(resp.response_code(), ResponseCode::Success);
    let mut granted = decode_json_body::<LockBatchResponseBody>(&resp.body)
        .unwrap()
        .lock_ok_mq_set;
    granted.sort();
    granted
}

/// LOCK_BATCH_MQ of Orders queues `ids` of broker-0; the ids granted, sorted.
fn lock(t: &TestFront, client_id: &str, ids: &[i32]) -> Vec<i32> {
    let queues: Vec<MessageQueue> = ids.iter().map(|i| mq("broker-0", *i)).collect();
    let granted = lock_queues(t, client_id, &queues);
    assert!(
        granted
            .iter()
            .all(|q| q.broker_name == "broker-0" && q.topic == "Orders")
    );
    granted.iter().map(|q| q.queue_id).collect()
}

/// UNLOCK_BATCH_MQ of Orders queues `ids` of broker-0.
fn unlock(t: &TestFront, client_id: &str, ids: &[i32]) {
    let queues: Vec<MessageQueue> = ids.iter().map(|i| mq("broker-0", *i)).collect();
    let cmd = request(RequestCode::UnlockBatchMq, |_| {}).with_body(lock_body(client_id, &queues));
    let resp = client::unlock_batch(&t.rmq, &cmd).unwrap();
    assert_eq!(resp.response_code(), ResponseCode::Success);
}

#[tokio::test]
async fn a_locked_queue_is_exclusive_until_unlocked_or_expired() {
    let t = front().await;
    assert_eq!(lock(&t, "a", &[0, 1]), [0, 1]);
    assert_eq!(lock(&t, "b", &[1, 2]), [2]);
    // Re-locking your own queue renews it.
    assert_eq!(lock(&t, "a", &[1]), [1]);
    // Unlocking someone else's queue does nothing.
    unlock(&t, "b", &[0]);
    assert!(lock(&t, "b", &[0]).is_empty());
    unlock(&t, "a", &[1]);
    assert_eq!(lock(&t, "b", &[1]), [1]);
    // A lock not renewed for longer than broker.queue_lock_expiry (60 s) is free again.
    t.test.clock.advance(Duration::from_secs(61));
    assert_eq!(lock(&t, "b", &[0]), [0]);
}

#[tokio::test]
async fn queues_of_shards_not_owned_here_are_not_locked() {
    let t = front().await;
    let queues = [mq("broker-7", 0), mq("nonsense", 0)];
    assert!(lock_queues(&t, "a", &queues).is_empty());
}

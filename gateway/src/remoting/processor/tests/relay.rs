//! Requests relayed to clients (`processor/relay.rs`: 307, 309), the offset reset and
//! consumer status (`processor/reset.rs`: 222, 223) and request-reply
//! (`processor/reply.rs`: 324/325) against the test core, with clients played by tasks
//! that answer on their channels.

use std::sync::Arc;
use std::time::Duration;

use stratus_compat::command::{FLAG_RESPONSE, RemotingCommand};
use stratus_compat::message::record::MessageExt;
use stratus_compat::request::heartbeat::{
    ConsumeFromWhere, ConsumeType, ConsumerData, MessageModel, SubscriptionData,
};
use stratus_compat::request::lock::MessageQueue;
use stratus_compat::request::relay::{
    ConsumeMessageDirectlyRequestHeader, GetConsumerRunningInfoRequestHeader,
    GetConsumerStatusRequestHeader, ReplyMessageRequestHeader, ResetOffsetRequestHeader,
    decode_reset_offset_body, raw_field, reply_topic,
};
use stratus_compat::request::send::SendMessageRequestHeader;
use stratus_compat::types::{ConsumerGroup, QueueId, QueueOffset, Topic};
use stratus_compat::{RequestCode, ResponseCode};
use stratus_meta::{ConsumerOffset, QueueKey, ShardId};
use tokio::sync::mpsc;

use stratus_compat::request::offset::UpdateConsumerOffsetRequestHeader;

use crate::remoting::dispatch::InFlight;
use crate::remoting::net::Channel;
use crate::remoting::processor::reply::create_reply_topic;
use crate::remoting::processor::{offset, pull};
use crate::remoting::testing::{
    TestFront, channel, create_topic, dispatch, front, props, pull_request, request, send_ok,
    send_request, stored,
};

fn consumer_data(group: &str, topic: &str) -> ConsumerData {
    ConsumerData {
        group_name: group.into(),
        consume_type: ConsumeType::ConsumePassively,
        message_model: MessageModel::Clustering,
        consume_from_where: ConsumeFromWhere::ConsumeFromFirstOffset,
        subscription_data_set: vec![SubscriptionData {
            topic: topic.into(),
            sub_string: "*".into(),
            sub_version: 1,
            ..SubscriptionData::default()
        }],
        unit_mode: false,
    }
}

/// A consumer channel of `client_id` in group `g` subscribing `Orders`.
fn consumer(
    t: &TestFront,
    id: u64,
    client_id: &str,
) -> (Arc<Channel>, mpsc::Receiver<RemotingCommand>) {
    let (ch, mut rx) = channel(id);
    t.rmq
        .registry
        .register_consumer(&ch, client_id, &consumer_data("g", "Orders"), 0);
    // The membership notification.
    while rx.try_recv().is_ok() {}
    (ch, rx)
}

/// A client that answers the next request (other than a membership notification) on `rx` with `answer(request)`, through the
/// channel as the connection loop would; returns the request it saw.
fn answering(
    ch: Arc<Channel>,
    mut rx: mpsc::Receiver<RemotingCommand>,
    answer: impl FnOnce(&RemotingCommand) -> RemotingCommand + Send + 'static,
) -> tokio::task::JoinHandle<(RemotingCommand, mpsc::Receiver<RemotingCommand>)> {
    tokio::spawn(async move {
        let req = loop {
            let req = rx.recv().await.expect("a request for the client");
            // Membership notifications of consumers registered later are not the request.
            if req.code != RequestCode::NotifyConsumerIdsChanged.to_i32() {
                break req;
            }
        };
        let mut resp = answer(&req);
        resp.opaque = req.opaque;
        resp.flag = FLAG_RESPONSE;
        assert!(ch.complete(resp), "the request was pending");
        (req, rx)
    })
}

fn client_answer(code: ResponseCode, body: &[u8]) -> RemotingCommand {
    RemotingCommand::response(0, code, None).with_body(body.to_vec())
}

fn running_info(client_id: &str) -> RemotingCommand {
    request(RequestCode::GetConsumerRunningInfo, |cmd| {
        GetConsumerRunningInfoRequestHeader {
            consumer_group: "g".into(),
            client_id: client_id.into(),
            jstack_enable: false,
        }
        .write_to(cmd);
    })
}

#[tokio::test]
async fn running_info_is_relayed_to_the_named_consumer_and_its_answer_returned() {
    let t = front().await;
    let (c1, rx1) = consumer(&t, 1, "10.0.0.1@a");
    let (_c2, mut rx2) = consumer(&t, 2, "10.0.0.2@b");
    let client = answering(c1, rx1, |_| {
        client_answer(ResponseCode::Success, b"{\"properties\":{}}")
    });
    let (admin, mut arx) = channel(9);
    let resp = dispatch(&t.rmq, &admin, &mut arx, running_info("10.0.0.1@a"))
        .await
        .expect("answered");
    assert_eq!(resp.response_code(), ResponseCode::Success);
    assert_eq!(&resp.body[..], b"{\"properties\":{}}");
    let (seen, _) = client.await.unwrap();
    assert_eq!(seen.code, RequestCode::GetConsumerRunningInfo.to_i32());
    assert!(!seen.is_oneway() && !seen.is_response());
    assert_eq!(
        seen.ext_fields.get("clientId").map(String::as_str),
        Some("10.0.0.1@a")
    );
    assert!(rx2.try_recv().is_err(), "the other consumer is not asked");
}

#[tokio::test]
async fn running_info_of_a_consumer_not_connected_is_the_references_system_error() {
    let t = front().await;
    let _c = consumer(&t, 1, "a");
    let (admin, mut arx) = channel(9);
    let resp = dispatch(&t.rmq, &admin, &mut arx, running_info("nobody"))
        .await
        .unwrap();
    assert_eq!(resp.response_code(), ResponseCode::SystemError);
    assert_eq!(
        resp.remark.as_deref(),
        Some("The Consumer <g> <nobody> not online")
    );
}

#[tokio::test]
async fn a_consumer_whose_connection_closes_while_asked_is_an_invoke_failure() {
    let t = front().await;
    let (c, mut rx) = consumer(&t, 1, "a");
    let closer = {
        let c = c.clone();
        tokio::spawn(async move {
            let _ = rx.recv().await;
            c.closed.cancel();
        })
    };
    let (admin, mut arx) = channel(9);
    let resp = dispatch(&t.rmq, &admin, &mut arx, running_info("a"))
        .await
        .unwrap();
    assert_eq!(resp.response_code(), ResponseCode::SystemError);
    assert_eq!(
        resp.remark.as_deref(),
        Some("invoke consumer <g> <a> Exception: connection closed")
    );
    assert_eq!(c.pending_len(), 0);
    closer.await.unwrap();
}

#[tokio::test]
async fn consume_directly_sends_the_stored_message_with_the_broker_name() {
    let t = front().await;
    create_topic(&t.rmq, "Orders", 2).await;
    let (producer, _prx) = channel(5);
    let sent = send_ok(
        &t.rmq,
        &producer,
        send_request("Orders", 1, &props(&[("KEYS", "k1")]), b"hello"),
    )
    .await;
    let (c, rx) = consumer(&t, 1, "a");
    let client = answering(c, rx, |_| {
        client_answer(ResponseCode::Success, b"{\"consumeResult\":\"CR_SUCCESS\"}")
    });
    let cmd = request(RequestCode::ConsumeMessageDirectly, |cmd| {
        ConsumeMessageDirectlyRequestHeader {
            consumer_group: "g".into(),
            client_id: Some("a".into()),
            msg_id: Some(sent.msg_id.clone()),
            topic: Some("Orders".into()),
            ..Default::default()
        }
        .write_to(cmd);
    });
    let (admin, mut arx) = channel(9);
    let resp = dispatch(&t.rmq, &admin, &mut arx, cmd).await.unwrap();
    assert_eq!(resp.response_code(), ResponseCode::Success);
    assert_eq!(&resp.body[..], b"{\"consumeResult\":\"CR_SUCCESS\"}");
    let (seen, _) = client.await.unwrap();
    assert_eq!(
        seen.ext_fields.get("brokerName").map(String::as_str),
        Some("broker-0")
    );
    assert_eq!(
        seen.ext_fields.get("topicSysFlag").map(String::as_str),
        Some("0")
    );
    let mut body = seen.body.clone();
    let msg = MessageExt::decode(&mut body).expect("the stored record");
    assert_eq!(&msg.body[..], b"hello");
    assert_eq!(msg.queue_id, 1);

    // A message id that names nothing stored, and none at all.
    let bad = request(RequestCode::ConsumeMessageDirectly, |cmd| {
        ConsumeMessageDirectlyRequestHeader {
            consumer_group: "g".into(),
            client_id: Some("a".into()),
            msg_id: Some("nonsense".into()),
            ..Default::default()
        }
        .write_to(cmd);
    });
    let resp = dispatch(&t.rmq, &admin, &mut arx, bad).await.unwrap();
    assert_eq!(resp.response_code(), ResponseCode::InvalidParameter);
}

/// Orders (2 queues): 3 messages in queue 0, 1 s apart, and then 2 more; returns the store
/// time of the fourth.
async fn orders(t: &TestFront) -> i64 {
    create_topic(&t.rmq, "Orders", 2).await;
    let (p, _rx) = channel(5);
    for _ in 0..5 {
        send_ok(&t.rmq, &p, send_request("Orders", 0, "", b"x")).await;
        t.test.clock.advance(Duration::from_secs(1));
    }
    stored(&t.rmq, "Orders", 0).await[3].store_timestamp
}

fn queue(q: i32) -> QueueKey {
    QueueKey {
        shard: ShardId(0),
        topic: Topic::new("Orders"),
        queue_id: QueueId(q),
    }
}

async fn commit(t: &TestFront, q: i32, offset: i64) {
    t.rmq
        .node
        .commit_offsets(&[ConsumerOffset {
            group: ConsumerGroup::new("g"),
            queue: queue(q),
            offset: QueueOffset(offset),
        }])
        .await
        .unwrap();
}

async fn committed(t: &TestFront, q: i32) -> Option<i64> {
    t.rmq
        .node
        .committed_offset(&ConsumerGroup::new("g"), &queue(q))
        .await
        .unwrap()
        .map(|o| o.0)
}

fn reset(timestamp: i64, is_force: bool, queue_id: i32, offset: Option<i64>) -> RemotingCommand {
    request(RequestCode::InvokeBrokerToResetOffset, |cmd| {
        ResetOffsetRequestHeader {
            group: "g".into(),
            topic: "Orders".into(),
            queue_id,
            offset,
            timestamp,
            is_force,
        }
        .write_to(cmd);
    })
}

fn mq(q: i32) -> MessageQueue {
    MessageQueue {
        broker_name: "broker-0".into(),
        queue_id: q,
        topic: "Orders".into(),
    }
}

#[tokio::test]
async fn a_reset_by_time_commits_the_offsets_and_tells_each_client_once() {
    let t = front().await;
    let fourth = orders(&t).await;
    commit(&t, 0, 5).await;
    // Client a has two connections (two shard ports), b one.
    let (_a1, mut rx_a1) = consumer(&t, 1, "a");
    let (_a2, mut rx_a2) = consumer(&t, 2, "a");
    let (_b, mut rx_b) = consumer(&t, 3, "b");
    let (admin, mut arx) = channel(9);
    let resp = dispatch(&t.rmq, &admin, &mut arx, reset(fourth, false, -1, None))
        .await
        .unwrap();
    assert_eq!(resp.response_code(), ResponseCode::Success);
    let table = decode_reset_offset_body(&resp.body).unwrap();
    let mut table = table.clone();
    table.sort();
    assert_eq!(table, vec![(mq(0), 3), (mq(1), 0)]);
    assert_eq!(committed(&t, 0).await, Some(3));
    assert_eq!(committed(&t, 1).await, Some(0));
    let mut pushed = 0;
    for rx in [&mut rx_a1, &mut rx_a2, &mut rx_b] {
        while let Ok(push) = rx.try_recv() {
            if push.code == RequestCode::NotifyConsumerIdsChanged.to_i32() {
                continue;
            }
            assert_eq!(push.code, RequestCode::ResetConsumerClientOffset.to_i32());
            assert!(push.is_oneway());
            let h = ResetOffsetRequestHeader::from_command(&push).unwrap();
            assert_eq!(
                (h.group.as_str(), h.topic.as_str(), h.timestamp),
                ("g", "Orders", fourth)
            );
            let mut got = decode_reset_offset_body(&push.body).unwrap();
            got.sort();
            assert_eq!(got, table);
            pushed += 1;
        }
    }
    assert_eq!(pushed, 2, "one push per client id");

    // Without force a later time does not move the group forward; with force it does, and
    // -1 skips to the max offsets.
    let resp = dispatch(
        &t.rmq,
        &admin,
        &mut arx,
        reset(fourth + 60_000, false, -1, None),
    )
    .await
    .unwrap();
    assert!(
        decode_reset_offset_body(&resp.body)
            .unwrap()
            .contains(&(mq(0), 3))
    );
    assert_eq!(committed(&t, 0).await, Some(3));
    let resp = dispatch(&t.rmq, &admin, &mut arx, reset(-1, true, -1, None))
        .await
        .unwrap();
    assert!(
        decode_reset_offset_body(&resp.body)
            .unwrap()
            .contains(&(mq(0), 5))
    );
    assert_eq!(committed(&t, 0).await, Some(5));
}

#[tokio::test]
async fn a_reset_of_one_queue_to_an_offset_is_checked_against_the_queue() {
    let t = front().await;
    orders(&t).await;
    let _c = consumer(&t, 1, "a");
    let (admin, mut arx) = channel(9);
    let resp = dispatch(&t.rmq, &admin, &mut arx, reset(0, false, 0, Some(2)))
        .await
        .unwrap();
    assert_eq!(
        decode_reset_offset_body(&resp.body).unwrap(),
        vec![(mq(0), 2)]
    );
    assert_eq!(committed(&t, 0).await, Some(2));
    assert_eq!(committed(&t, 1).await, None, "other queues untouched");
    let resp = dispatch(&t.rmq, &admin, &mut arx, reset(0, false, 0, Some(9)))
        .await
        .unwrap();
    assert_eq!(resp.response_code(), ResponseCode::SystemError);
    assert_eq!(
        resp.remark.as_deref(),
        Some("Target offset 9 not in consume queue range [0-5]")
    );
}

#[tokio::test]
async fn a_reset_without_consumers_applies_to_a_known_group_only() {
    let t = front().await;
    orders(&t).await;
    let (admin, mut arx) = channel(9);
    // Unknown here (no committed offset): CONSUMER_NOT_ONLINE, nothing committed.
    let resp = dispatch(&t.rmq, &admin, &mut arx, reset(0, true, -1, None))
        .await
        .unwrap();
    assert_eq!(resp.response_code(), ResponseCode::ConsumerNotOnline);
    assert_eq!(
        resp.remark.as_deref(),
        Some("Consumer not online, so can not reset offset, Group: g Topic: Orders Timestamp: 0")
    );
    assert_eq!(committed(&t, 0).await, None);
    // Known (it committed before): reset in meta and answered, as 5.3.3's server-side reset.
    commit(&t, 0, 5).await;
    let resp = dispatch(&t.rmq, &admin, &mut arx, reset(0, true, -1, None))
        .await
        .unwrap();
    assert_eq!(resp.response_code(), ResponseCode::Success);
    assert!(
        decode_reset_offset_body(&resp.body)
            .unwrap()
            .contains(&(mq(0), 0))
    );
    assert_eq!(committed(&t, 0).await, Some(0));
    assert_eq!(committed(&t, 1).await, Some(0));
    let _c = consumer(&t, 1, "a");
    let cmd = request(RequestCode::InvokeBrokerToResetOffset, |cmd| {
        ResetOffsetRequestHeader {
            group: "g".into(),
            topic: "Nope".into(),
            queue_id: -1,
            offset: None,
            timestamp: 0,
            is_force: true,
        }
        .write_to(cmd);
    });
    let resp = dispatch(&t.rmq, &admin, &mut arx, cmd).await.unwrap();
    assert_eq!(resp.response_code(), ResponseCode::TopicNotExist);
}

#[tokio::test]
async fn consumer_status_collects_each_clients_table() {
    let t = front().await;
    let (c, rx) = consumer(&t, 1, "a");
    let client = answering(c, rx, |req| {
        assert_eq!(req.code, RequestCode::GetConsumerStatusFromClient.to_i32());
        client_answer(
            ResponseCode::Success,
            b"{\"consumerTable\":{},\"messageQueueTable\":{{\"brokerName\":\"broker-0\",\"queueId\":0,\"topic\":\"Orders\"}:4}}",
        )
    });
    let status = |client: Option<&str>| {
        request(RequestCode::InvokeBrokerToGetConsumerStatus, |cmd| {
            GetConsumerStatusRequestHeader {
                topic: "Orders".into(),
                group: "g".into(),
                client_addr: client.map(str::to_owned),
            }
            .write_to(cmd);
        })
    };
    let (admin, mut arx) = channel(9);
    let resp = dispatch(&t.rmq, &admin, &mut arx, status(None))
        .await
        .unwrap();
    assert_eq!(resp.response_code(), ResponseCode::Success);
    let text = String::from_utf8(resp.body.to_vec()).unwrap();
    let table = raw_field(&text, "consumerTable").unwrap();
    let per_client = raw_field(table, "a").expect("client a's table");
    assert!(
        per_client.contains("\"queueId\":0") && per_client.ends_with(":4}"),
        "{text}"
    );
    client.await.unwrap();

    t.rmq.registry.channel_closed(1);
    let resp = dispatch(&t.rmq, &admin, &mut arx, status(None))
        .await
        .unwrap();
    assert_eq!(resp.response_code(), ResponseCode::SystemError);
    assert_eq!(
        resp.remark.as_deref(),
        Some("No Any Consumer online in the consumer group: [g]")
    );
}

fn reply(reply_to: Option<&str>) -> RemotingCommand {
    let mut p = vec![("CORRELATION_ID", "corr-1"), ("MSG_TYPE", "reply")];
    if let Some(r) = reply_to {
        p.push(("REPLY_TO_CLIENT", r));
    }
    let header = SendMessageRequestHeader {
        producer_group: "replier".into(),
        topic: reply_topic("DefaultCluster"),
        default_topic: "TBW102".into(),
        default_topic_queue_nums: 4,
        queue_id: 0,
        born_timestamp: 1,
        properties: Some(props(&p)),
        reconsume_times: Some(0),
        unit_mode: Some(false),
        ..Default::default()
    };
    let mut cmd = RemotingCommand::request(RequestCode::SendReplyMessageV2.to_i32(), 4);
    header.write_v2(&mut cmd);
    cmd.with_body(b"the answer".to_vec())
}

#[tokio::test]
async fn a_reply_is_pushed_to_the_requesters_connection_and_stored() {
    let t = front().await;
    create_reply_topic(&t.rmq).await.unwrap();
    let (requester, rx) = channel(1);
    t.rmq
        .registry
        .register_producer(&requester, "req@1", "rg", 0);
    let client = answering(requester, rx, |_| client_answer(ResponseCode::Success, b""));
    let (replier, mut rrx) = channel(2);
    let resp = dispatch(&t.rmq, &replier, &mut rrx, reply(Some("req@1")))
        .await
        .unwrap();
    assert_eq!(
        resp.response_code(),
        ResponseCode::Success,
        "{:?}",
        resp.remark
    );
    assert_ne!(
        resp.ext_fields.get("msgId").map(String::as_str),
        Some("0"),
        "stored: its id"
    );
    let (push, _) = client.await.unwrap();
    assert_eq!(push.code, RequestCode::PushReplyMessageToClient.to_i32());
    let h = ReplyMessageRequestHeader::from_command(&push).unwrap();
    assert_eq!(h.topic, "DefaultCluster_REPLY_TOPIC");
    assert_eq!(h.producer_group, "replier");
    assert_eq!(h.born_host, "127.0.0.1:40000");
    let p =
        stratus_compat::message::properties::Properties::parse(h.properties.as_deref().unwrap());
    assert_eq!(p.get("CORRELATION_ID"), Some("corr-1"));
    assert!(p.get("PUSH_REPLY_TIME").is_some());
    assert_eq!(&push.body[..], b"the answer");
    let kept = stored(&t.rmq, "DefaultCluster_REPLY_TOPIC", 0).await;
    assert_eq!(kept.len(), 1);
    assert_eq!(&kept[0].body[..], b"the answer");
}

#[tokio::test]
async fn a_reply_nobody_waits_for_is_a_system_error_with_the_references_remark() {
    let t = front().await;
    create_reply_topic(&t.rmq).await.unwrap();
    let (replier, mut rrx) = channel(2);
    let resp = dispatch(&t.rmq, &replier, &mut rrx, reply(Some("gone@1")))
        .await
        .unwrap();
    assert_eq!(resp.response_code(), ResponseCode::SystemError);
    assert_eq!(
        resp.remark.as_deref(),
        Some("push reply message fail, channel of <gone@1> not found.")
    );
    let resp = dispatch(&t.rmq, &replier, &mut rrx, reply(None))
        .await
        .unwrap();
    assert_eq!(resp.response_code(), ResponseCode::SystemError);
    assert_eq!(
        resp.remark.as_deref(),
        Some("reply message properties[REPLY_TO_CLIENT] is null")
    );
    // Stored all the same, as the reference stores after a failed push.
    assert_eq!(
        stored(&t.rmq, "DefaultCluster_REPLY_TOPIC", 0).await.len(),
        2
    );
}

#[tokio::test]
async fn stale_commits_after_a_reset_are_not_applied_until_the_reset_offset_is_pulled() {
    let t = front().await;
    let fourth = orders(&t).await;
    commit(&t, 0, 5).await;
    let (c, _rx) = consumer(&t, 1, "a");
    let (admin, mut arx) = channel(9);
    let resp = dispatch(&t.rmq, &admin, &mut arx, reset(fourth, true, -1, None))
        .await
        .unwrap();
    assert_eq!(resp.response_code(), ResponseCode::Success);
    assert_eq!(committed(&t, 0).await, Some(3));
    let update = |offset: i64| {
        request(RequestCode::UpdateConsumerOffset, move |cmd| {
            UpdateConsumerOffsetRequestHeader {
                consumer_group: "g".into(),
                topic: "Orders".into(),
                queue_id: 0,
                commit_offset: offset,
            }
            .write_to(cmd);
        })
    };
    // The consumer's periodic commit of its old offset, sent before it took the reset.
    let resp = offset::update_consumer_offset(&t.rmq, &c, &update(5))
        .await
        .unwrap();
    assert_eq!(resp.response_code(), ResponseCode::Success);
    assert_eq!(
        resp.remark.as_deref(),
        Some("Offset has been previously reset")
    );
    assert_eq!(committed(&t, 0).await, Some(3), "not applied");
    // It pulls from the reset offset: commits count again.
    let mut permit = InFlight::default();
    let resp = pull::handle_holding(
        &t.rmq,
        &c,
        pull_request("g", "Orders", 0, 3, 0),
        &mut permit,
    )
    .await
    .unwrap();
    assert_eq!(resp.response_code(), ResponseCode::Success);
    offset::update_consumer_offset(&t.rmq, &c, &update(5))
        .await
        .unwrap();
    assert_eq!(committed(&t, 0).await, Some(5));
}

#[tokio::test]
async fn a_requester_known_only_from_its_request_gets_the_reply() {
    let t = front().await;
    create_reply_topic(&t.rmq).await.unwrap();
    create_topic(&t.rmq, "Orders", 1).await;
    let (requester, mut rx) = channel(1);
    let ask = send_request(
        "Orders",
        0,
        &props(&[("REPLY_TO_CLIENT", "go@1"), ("CORRELATION_ID", "c")]),
        b"q",
    );
    let sent = dispatch(&t.rmq, &requester, &mut rx, ask).await.unwrap();
    assert_eq!(sent.response_code(), ResponseCode::Success);
    let client = answering(requester, rx, |_| client_answer(ResponseCode::Success, b""));
    let (replier, mut rrx) = channel(2);
    let resp = dispatch(&t.rmq, &replier, &mut rrx, reply(Some("go@1")))
        .await
        .unwrap();
    assert_eq!(
        resp.response_code(),
        ResponseCode::Success,
        "{:?}",
        resp.remark
    );
    let (push, _) = client.await.unwrap();
    assert_eq!(push.code, RequestCode::PushReplyMessageToClient.to_i32());
}

#[tokio::test]
async fn a_reset_asked_by_a_cpp_admin_pushes_the_c_form() {
    let t = front().await;
    orders(&t).await;
    let (_c, mut rx) = consumer(&t, 1, "a");
    let (admin, mut arx) = channel(9);
    let mut cmd = reset(0, true, 0, None);
    cmd.language = stratus_compat::code::LanguageCode::Cpp;
    let resp = dispatch(&t.rmq, &admin, &mut arx, cmd).await.unwrap();
    assert_eq!(resp.response_code(), ResponseCode::Success);
    // The answer keeps the map form; the push is a list.
    assert_eq!(
        decode_reset_offset_body(&resp.body).unwrap(),
        vec![(mq(0), 0)]
    );
    let push = rx.try_recv().expect("pushed");
    let body: serde_json::Value = serde_json::from_slice(&push.body).unwrap();
    assert_eq!(body["offsetTable"][0]["queueId"], 0);
    assert_eq!(body["offsetTable"][0]["brokerName"], "broker-0");
    assert_eq!(body["offsetTable"][0]["offset"], 0);
}

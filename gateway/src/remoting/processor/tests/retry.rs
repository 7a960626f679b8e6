//! CONSUMER_SEND_MSG_BACK (36, `rewrite/retry.rs` `send_back`): retry through a delay
//! level, dead letters, and unknown offsets, against the test core.

use stratus_compat::command::RemotingCommand;
use stratus_compat::message::properties::keys;
use stratus_compat::message::record::MessageExt;
use stratus_compat::request::consumer::ConsumerSendMsgBackRequestHeader;
use stratus_compat::topic::SCHEDULE_TOPIC;
use stratus_compat::{RequestCode, ResponseCode};

use crate::remoting::rewrite::retry::send_back;
use crate::remoting::testing::{
    TestFront, channel, code_of, front, remark_of, request, send_command, send_header, send_ok,
    stored,
};

/// Orders (queue 0) holding one message `failed` consumed `reconsumed` times; its handle.
async fn consumed(reconsumed: i32) -> (TestFront, i64) {
    let t = front().await;
    let (ch, _rx) = channel(1);
    let mut header = send_header("Orders", 0, "");
    header.reconsume_times = Some(reconsumed);
    send_ok(&t.rmq, &ch, send_command(&header, b"failed")).await;
    let m = stored(&t.rmq, "Orders", 0).await.remove(0);
    assert_eq!(m.reconsume_times, reconsumed);
    (t, m.commit_log_offset)
}

/// CONSUMER_SEND_MSG_BACK of `offset` for group `g`, request version `version`.
fn back(offset: i64, delay_level: i32, max: Option<i32>, version: i32) -> RemotingCommand {
    let mut cmd = request(RequestCode::ConsumerSendMsgBack, |cmd| {
        ConsumerSendMsgBackRequestHeader {
            offset,
            group: "g".into(),
            delay_level,
            origin_msg_id: None,
            origin_topic: Some("Orders".into()),
            unit_mode: false,
            max_reconsume_times: max,
        }
        .write_to(cmd);
    });
    cmd.version = version;
    cmd
}

/// The one message of `topic`/`queue`.
async fn only(t: &TestFront, topic: &str, queue: i32) -> MessageExt {
    let mut msgs = stored(&t.rmq, topic, queue).await;
    assert_eq!(msgs.len(), 1, "{topic}/{queue}: {msgs:?}");
    msgs.remove(0)
}

#[tokio::test]
async fn delay_level_zero_retries_through_level_three_plus_reconsume_times() {
    let (t, handle) = consumed(1).await;
    let resp = send_back(&t.rmq, &back(handle, 0, None, 400))
        .await
        .unwrap();
    assert_eq!(resp.response_code(), ResponseCode::Success);
    // Level 3 + 1 = 4: schedule queue 3.
    let m = only(&t, SCHEDULE_TOPIC, 3).await;
    assert_eq!((&m.body[..], m.reconsume_times), (&b"failed"[..], 2));
    let p = m.parsed_properties();
    assert_eq!(p.get(keys::REAL_TOPIC), Some("%RETRY%g"));
    assert_eq!(p.get(keys::REAL_QID), Some("0"));
    assert_eq!(p.get(keys::DELAY), Some("4"));
    assert_eq!(p.get(keys::RETRY_TOPIC), Some("Orders"));
    let retry = t
        .rmq
        .node
        .topics
        .get("%RETRY%g")
        .expect("retry topic created");
    assert_eq!(retry.write_queue_nums, 1);
}

#[tokio::test]
async fn a_given_delay_level_is_used() {
    let (t, handle) = consumed(0).await;
    send_back(&t.rmq, &back(handle, 5, None, 400))
        .await
        .unwrap();
    let m = only(&t, SCHEDULE_TOPIC, 4).await;
    assert_eq!(m.parsed_properties().get(keys::DELAY), Some("5"));
}

#[tokio::test]
async fn max_reconsume_times_reached_sends_it_to_the_dead_letter_queue() {
    let (t, handle) = consumed(3).await;
    let resp = send_back(&t.rmq, &back(handle, 0, Some(3), 121))
        .await
        .unwrap();
    assert_eq!(resp.response_code(), ResponseCode::Success);
    let m = only(&t, "%DLQ%g", 0).await;
    assert_eq!((&m.body[..], m.reconsume_times), (&b"failed"[..], 4));
    let p = m.parsed_properties();
    assert_eq!(p.get(keys::RETRY_TOPIC), Some("Orders"));
    let uniq = p.get(keys::UNIQ_KEY).expect("uniq key");
    assert_eq!(p.get(keys::ORIGIN_MESSAGE_ID), Some(uniq));
    assert_eq!(p.get(keys::DELAY), None);
    assert!(stored(&t.rmq, SCHEDULE_TOPIC, 5).await.is_empty());
}

#[tokio::test]
async fn an_old_clients_max_reconsume_times_is_ignored() {
    let (t, handle) = consumed(3).await;
    // Version 120 < V3_4_9: the default maximum (16) applies; 3 + 3 = level 6.
    send_back(&t.rmq, &back(handle, 0, Some(3), 120))
        .await
        .unwrap();
    assert!(stored(&t.rmq, "%DLQ%g", 0).await.is_empty());
    only(&t, SCHEDULE_TOPIC, 5).await;
}

#[tokio::test]
async fn a_negative_delay_level_goes_straight_to_the_dead_letter_queue() {
    let (t, handle) = consumed(0).await;
    let mut cmd = back(handle, -1, None, 400);
    cmd.put_ext("originMsgId", "ORIGIN-1");
    send_back(&t.rmq, &cmd).await.unwrap();
    let m = only(&t, "%DLQ%g", 0).await;
    assert_eq!(m.reconsume_times, 1);
    let p = m.parsed_properties();
    assert_eq!(p.get(keys::ORIGIN_MESSAGE_ID), Some("ORIGIN-1"));
    assert_eq!(p.get(keys::RETRY_TOPIC), Some("Orders"));
}

#[tokio::test]
async fn an_unknown_offset_is_a_system_error() {
    let (t, handle) = consumed(0).await;
    for offset in [handle + 1_000_000, -5] {
        let res = send_back(&t.rmq, &back(offset, 0, None, 400)).await;
        assert_eq!(code_of(&res), ResponseCode::SystemError, "offset {offset}");
        assert_eq!(
            remark_of(&res),
            format!("look message by offset failed, {offset}")
        );
    }
    assert!(t.rmq.node.topics.get("%RETRY%g").is_none());
}

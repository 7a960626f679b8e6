//! SEND_MESSAGE family (`processor/send.rs`: `prepare` then `complete`) against the test core.

use stratus_compat::ResponseCode;
use stratus_compat::message::properties::{Properties, keys};
use stratus_compat::message::record::MessageExt;
use stratus_compat::request::pull::PullMessageResponseHeader;
use stratus_compat::topic::{DLQ_PREFIX, PERM_READ, PERM_WRITE, SCHEDULE_TOPIC};
use stratus_compat::types::Topic;

use crate::config::ByteSize;
use crate::remoting::processor::pull;
use crate::remoting::testing::{
    batch_request, channel, code_of, front, front_with, props, pull_request, remark_of, send,
    send_command, send_header, send_ok, send_request, stored,
};

#[tokio::test]
async fn a_durable_send_is_answered_with_its_offset_and_pulled_back() {
    let t = front().await;
    let (ch, _rx) = channel(1);
    let mut offsets = Vec::new();
    for body in [b"one".as_slice(), b"two"] {
        let h = send_ok(&t.rmq, &ch, send_request("Orders", 0, "", body)).await;
        assert_eq!(h.queue_id, 0);
        offsets.push(h.queue_offset);
    }
    assert_eq!(offsets, vec![0, 1]);
    let resp = pull::handle(&t.rmq, &ch, pull_request("g", "Orders", 0, 0, 0))
        .await
        .unwrap();
    assert_eq!(resp.code, ResponseCode::Success.to_i32());
    let h = PullMessageResponseHeader::from_command(&resp).unwrap();
    assert_eq!((h.next_begin_offset, h.max_offset), (2, 2));
    let mut body = resp.body.clone();
    let first = MessageExt::decode(&mut body).unwrap();
    assert_eq!(&first.body[..], b"one");
}

#[tokio::test]
async fn offsets_are_counted_per_queue() {
    let t = front().await;
    let (ch, _rx) = channel(1);
    let mut answers = Vec::new();
    for q in [0, 1, 0, 2, 1, 0] {
        let h = send_ok(&t.rmq, &ch, send_request("Orders", q, "", b"x")).await;
        answers.push((h.queue_id, h.queue_offset));
    }
    assert_eq!(answers, [(0, 0), (1, 0), (0, 1), (2, 0), (1, 1), (0, 2)]);
    assert_eq!(stored(&t.rmq, "Orders", 0).await.len(), 3);
    assert_eq!(stored(&t.rmq, "Orders", 2).await.len(), 1);
}

#[tokio::test]
async fn a_queue_id_past_the_topics_queues_is_an_invalid_parameter() {
    let t = front().await;
    let (ch, _rx) = channel(1);
    // The first send auto-creates Orders with min(4 requested, 8 of TBW102) queues.
    send_ok(&t.rmq, &ch, send_request("Orders", 3, "", b"x")).await;
    let res = send(&t.rmq, &ch, send_request("Orders", 4, "", b"x")).await;
    assert_eq!(code_of(&res), ResponseCode::InvalidParameter);
    assert!(
        remark_of(&res).starts_with("request queueId[4] is illegal"),
        "{}",
        remark_of(&res)
    );
    assert!(stored(&t.rmq, "Orders", 4).await.is_empty());
}

#[tokio::test]
async fn topic_names_are_refused_with_the_reference_wording() {
    let t = front().await;
    let (ch, _rx) = channel(1);
    let res = send(&t.rmq, &ch, send_request("bad/topic", 0, "", b"x")).await;
    assert_eq!(code_of(&res), ResponseCode::InvalidParameter);
    assert_eq!(
        remark_of(&res),
        "The specified topic[bad/topic] contains illegal characters, allowing only ^[%|a-zA-Z0-9_-]+$"
    );
    let res = send(&t.rmq, &ch, send_request("  ", 0, "", b"x")).await;
    assert_eq!(code_of(&res), ResponseCode::InvalidParameter);
    assert_eq!(remark_of(&res), "The specified topic is blank.");
    assert!(t.rmq.node.topics.get("bad/topic").is_none());
}

#[tokio::test]
async fn sending_to_the_schedule_topic_is_forbidden() {
    let t = front().await;
    let (ch, _rx) = channel(1);
    let res = send(&t.rmq, &ch, send_request(SCHEDULE_TOPIC, 0, "", b"x")).await;
    assert_eq!(code_of(&res), ResponseCode::NoPermission);
    assert_eq!(
        remark_of(&res),
        "Sending message to topic[SCHEDULE_TOPIC_XXXX] is forbidden."
    );
    assert!(stored(&t.rmq, SCHEDULE_TOPIC, 0).await.is_empty());
}

#[tokio::test]
async fn a_body_over_the_max_message_size_is_illegal() {
    let t = front_with(|s| s.broker.max_message_size = ByteSize::kib(1)).await;
    let (ch, _rx) = channel(1);
    send_ok(&t.rmq, &ch, send_request("Orders", 0, "", &[7; 1024])).await;
    let res = send(&t.rmq, &ch, send_request("Orders", 0, "", &[7; 1025])).await;
    assert_eq!(code_of(&res), ResponseCode::MessageIllegal);
    assert!(remark_of(&res).contains("1025"), "{}", remark_of(&res));
    assert_eq!(stored(&t.rmq, "Orders", 0).await.len(), 1);
}

#[tokio::test]
async fn the_first_send_auto_creates_the_topic_from_tbw102() {
    let t = front().await;
    let (ch, _rx) = channel(1);
    assert!(t.rmq.node.topics.get("Fresh").is_none());
    let h = send_ok(&t.rmq, &ch, send_request("Fresh", 1, "", b"x")).await;
    assert_eq!((h.queue_id, h.queue_offset), (1, 0));
    let cfg = t
        .rmq
        .node
        .meta
        .get_topic(&Topic::new("Fresh"))
        .await
        .unwrap();
    let cfg = cfg.expect("topic stored in meta");
    assert_eq!((cfg.read_queue_nums, cfg.write_queue_nums), (4, 4));
    assert_eq!(cfg.perm, PERM_READ | PERM_WRITE);
    assert!(t.rmq.node.topics.get("Fresh").is_some());
}

#[tokio::test]
async fn without_auto_create_an_unknown_topic_does_not_exist() {
    let t = front_with(|s| s.broker.auto_create_topic = false).await;
    let (ch, _rx) = channel(1);
    let res = send(&t.rmq, &ch, send_request("Fresh", 0, "", b"x")).await;
    assert_eq!(code_of(&res), ResponseCode::TopicNotExist);
    assert_eq!(
        remark_of(&res),
        "topic[Fresh] not exist, apply first please!"
    );
    let cfg = t
        .rmq
        .node
        .meta
        .get_topic(&Topic::new("Fresh"))
        .await
        .unwrap();
    assert!(cfg.is_none());
}

#[tokio::test]
async fn a_batch_stores_each_message_at_consecutive_offsets() {
    let t = front().await;
    let (ch, _rx) = channel(1);
    let h = send_ok(&t.rmq, &ch, batch_request("Orders", 2, &[b"a", b"b", b"c"])).await;
    assert_eq!((h.queue_id, h.queue_offset), (2, 0));
    assert_eq!(h.msg_id.split(',').count(), 3, "{}", h.msg_id);
    let h = send_ok(&t.rmq, &ch, batch_request("Orders", 2, &[b"d", b"e"])).await;
    assert_eq!(h.queue_offset, 3);
    let msgs = stored(&t.rmq, "Orders", 2).await;
    let got: Vec<(i64, &[u8])> = msgs.iter().map(|m| (m.queue_offset, &m.body[..])).collect();
    let want: Vec<(i64, &[u8])> = vec![(0, b"a"), (1, b"b"), (2, b"c"), (3, b"d"), (4, b"e")];
    assert_eq!(got, want);
    assert!(
        msgs.iter()
            .all(|m| m.parsed_properties().get(keys::UNIQ_KEY).is_some())
    );
}

#[tokio::test]
async fn an_exhausted_retry_send_is_diverted_to_the_dead_letter_topic() {
    let t = front().await;
    let (ch, _rx) = channel(1);
    let mut header = send_header("%RETRY%g", 0, "");
    header.reconsume_times = Some(3);
    header.max_reconsume_times = Some(2);
    let h = send_ok(&t.rmq, &ch, send_command(&header, b"late")).await;
    assert_eq!((h.queue_id, h.queue_offset), (0, 0));
    let dlq = stored(&t.rmq, &format!("{DLQ_PREFIX}g"), 0).await;
    assert_eq!(dlq.len(), 1);
    assert_eq!(
        (&dlq[0].body[..], dlq[0].reconsume_times),
        (&b"late"[..], 3)
    );
    assert!(stored(&t.rmq, "%RETRY%g", 0).await.is_empty());
}

#[tokio::test]
async fn a_retry_send_at_its_maximum_stays_in_the_retry_topic() {
    let t = front().await;
    let (ch, _rx) = channel(1);
    let mut header = send_header("%RETRY%g", 0, "");
    header.reconsume_times = Some(16); // default maximum 16: strictly greater diverts
    send_ok(&t.rmq, &ch, send_command(&header, b"again")).await;
    assert_eq!(stored(&t.rmq, "%RETRY%g", 0).await.len(), 1);
    assert!(stored(&t.rmq, "%DLQ%g", 0).await.is_empty());
}

#[tokio::test]
async fn uniq_key_is_added_when_missing_and_kept_when_present() {
    let t = front().await;
    let (ch, _rx) = channel(1);
    let added = send_ok(&t.rmq, &ch, send_request("Orders", 0, "", b"a")).await;
    let given = props(&[(keys::UNIQ_KEY, "C0A8000100002A9F0000000000000001")]);
    let kept = send_ok(&t.rmq, &ch, send_request("Orders", 0, &given, b"b")).await;
    let msgs = stored(&t.rmq, "Orders", 0).await;
    let uniq = |m: &MessageExt| m.parsed_properties().get(keys::UNIQ_KEY).map(str::to_owned);
    let first = uniq(&msgs[0]).expect("UNIQ_KEY added");
    assert!(!first.is_empty());
    assert_eq!(added.transaction_id.as_deref(), Some(first.as_str()));
    assert_eq!(
        uniq(&msgs[1]).as_deref(),
        Some("C0A8000100002A9F0000000000000001")
    );
    assert_eq!(
        kept.transaction_id.as_deref(),
        Some("C0A8000100002A9F0000000000000001")
    );
    assert_eq!(
        Properties::parse(&msgs[1].properties).get(keys::CLUSTER),
        Some(t.rmq.node.config.node.cluster_name.as_str())
    );
}

#[tokio::test]
async fn a_delay_level_send_waits_in_the_schedule_topic() {
    let t = front().await;
    let (ch, _rx) = channel(1);
    let delayed = props(&[(keys::DELAY, "2")]);
    let h = send_ok(&t.rmq, &ch, send_request("Orders", 3, &delayed, b"later")).await;
    assert_eq!((h.queue_id, h.queue_offset), (3, 0));
    let waiting = stored(&t.rmq, SCHEDULE_TOPIC, 1).await;
    assert_eq!(waiting.len(), 1);
    let p = waiting[0].parsed_properties();
    assert_eq!(p.get(keys::REAL_TOPIC), Some("Orders"));
    assert_eq!(p.get(keys::REAL_QID), Some("3"));
    assert_eq!(p.get(keys::DELAY), Some("2"));
    assert!(stored(&t.rmq, "Orders", 3).await.is_empty());
}

/// The Java consumer's fallback when CONSUMER_SEND_MSG_BACK fails re-sends the message to
/// `%RETRY%<group>` with `DELAY = 3 + reconsumeTimes`. Once that is past the maximum, the
/// reference diverts it to `%DLQ%<group>` with its delay level set to -1
/// (`handleRetryAndDLQ`): it is a dead letter at once, never scheduled.
#[tokio::test]
async fn an_exhausted_retry_send_with_a_delay_level_is_a_dead_letter_at_once() {
    let t = front().await;
    let (ch, _rx) = channel(1);
    let mut header = send_header("%RETRY%g", 0, &props(&[(keys::DELAY, "19")]));
    header.reconsume_times = Some(17);
    send_ok(&t.rmq, &ch, send_command(&header, b"late")).await;
    let dlq = stored(&t.rmq, "%DLQ%g", 0).await;
    assert_eq!(dlq.len(), 1);
    assert_eq!(dlq[0].parsed_properties().get(keys::DELAY), Some("-1"));
    assert!(stored(&t.rmq, SCHEDULE_TOPIC, 17).await.is_empty());
}

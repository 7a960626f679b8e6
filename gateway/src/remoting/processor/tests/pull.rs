//! PULL_MESSAGE (`processor/pull.rs`): the status table, filters, checks, long polling and
//! the commit-offset flag, against the test core.

use std::sync::Arc;
use std::time::{Duration, Instant};

use stratus_compat::ResponseCode;
use stratus_compat::command::RemotingCommand;
use stratus_compat::message::properties::keys;
use stratus_compat::message::record::MessageExt;
use stratus_compat::request::pull::{PULL_FLAG_COMMIT_OFFSET, PullMessageResponseHeader};
use stratus_compat::types::{ConsumerGroup, QueueId, QueueOffset, Topic};
use stratus_meta::{QueueKey, ShardId};

use crate::error::Result;
use crate::remoting::Remoting;
use crate::remoting::net::Channel;
use crate::remoting::processor::pull;
use crate::remoting::testing::{
    TestFront, channel, code_of, create_topic, front, props, pull_command, pull_header,
    pull_request, remark_of, send_ok, send_request,
};

/// Code, (next, min, max) and bodies of a pull answer.
fn answer(resp: &RemotingCommand) -> (ResponseCode, (i64, i64, i64), Vec<Vec<u8>>) {
    let h = PullMessageResponseHeader::from_command(resp).unwrap();
    let bodies = MessageExt::decode_all(resp.body.clone())
        .unwrap()
        .into_iter()
        .map(|m| m.body.to_vec())
        .collect();
    (
        resp.response_code(),
        (h.next_begin_offset, h.min_offset, h.max_offset),
        bodies,
    )
}

async fn pull_at(t: &TestFront, ch: &Arc<Channel>, queue: i32, offset: i64) -> RemotingCommand {
    pull::handle(&t.rmq, ch, pull_request("g", "Orders", queue, offset, 0))
        .await
        .unwrap()
}

/// Orders (4 queues) with `n` messages `m0`, `m1`, … in queue 0.
async fn orders_with(n: usize) -> (TestFront, Arc<Channel>) {
    let t = front().await;
    let (ch, _rx) = channel(1);
    create_topic(&t.rmq, "Orders", 4).await;
    for i in 0..n {
        let body = format!("m{i}");
        send_ok(&t.rmq, &ch, send_request("Orders", 0, "", body.as_bytes())).await;
    }
    (t, ch)
}

#[tokio::test]
async fn an_empty_queue_at_offset_zero_is_not_found() {
    let (t, ch) = orders_with(0).await;
    let resp = pull_at(&t, &ch, 0, 0).await;
    assert_eq!(
        answer(&resp),
        (ResponseCode::PullNotFound, (0, 0, 0), vec![])
    );
    assert_eq!(resp.remark.as_deref(), Some("NO_MESSAGE_IN_QUEUE"));
}

#[tokio::test]
async fn an_empty_queue_past_offset_zero_moves_the_offset_to_zero() {
    let (t, ch) = orders_with(0).await;
    let resp = pull_at(&t, &ch, 0, 5).await;
    assert_eq!(
        answer(&resp),
        (ResponseCode::PullOffsetMoved, (0, 0, 0), vec![])
    );
}

#[tokio::test]
async fn the_offset_at_max_is_not_found_overflow_one() {
    let (t, ch) = orders_with(2).await;
    let resp = pull_at(&t, &ch, 0, 2).await;
    assert_eq!(
        answer(&resp),
        (ResponseCode::PullNotFound, (2, 0, 2), vec![])
    );
    assert_eq!(resp.remark.as_deref(), Some("OFFSET_OVERFLOW_ONE"));
}

#[tokio::test]
async fn an_offset_past_max_moves_to_max() {
    let (t, ch) = orders_with(2).await;
    let resp = pull_at(&t, &ch, 0, 9).await;
    assert_eq!(
        answer(&resp),
        (ResponseCode::PullOffsetMoved, (2, 0, 2), vec![])
    );
    assert_eq!(resp.remark.as_deref(), Some("OFFSET_OVERFLOW_BADLY"));
}

#[tokio::test]
async fn found_messages_come_with_the_next_offset() {
    let (t, ch) = orders_with(3).await;
    let resp = pull_at(&t, &ch, 0, 1).await;
    let want = vec![b"m1".to_vec(), b"m2".to_vec()];
    assert_eq!(answer(&resp), (ResponseCode::Success, (3, 0, 3), want));
}

#[tokio::test]
async fn max_msg_nums_bounds_a_pull() {
    let (t, ch) = orders_with(5).await;
    let mut h = pull_header("g", "Orders", 0, 0);
    h.max_msg_nums = 2;
    let resp = pull::handle(&t.rmq, &ch, pull_command(&h)).await.unwrap();
    let want = vec![b"m0".to_vec(), b"m1".to_vec()];
    assert_eq!(answer(&resp), (ResponseCode::Success, (2, 0, 5), want));
}

#[tokio::test]
async fn a_tag_filter_skips_non_matching_messages() {
    let (t, ch) = orders_with(0).await;
    let tag_b = props(&[(keys::TAGS, "TagB")]);
    for _ in 0..2 {
        send_ok(&t.rmq, &ch, send_request("Orders", 0, &tag_b, b"b")).await;
    }
    let mut h = pull_header("g", "Orders", 0, 0);
    h.subscription = Some("TagA".into());
    let resp = pull::handle(&t.rmq, &ch, pull_command(&h)).await.unwrap();
    assert_eq!(
        answer(&resp),
        (ResponseCode::PullRetryImmediately, (2, 0, 2), vec![])
    );
    let tag_a = props(&[(keys::TAGS, "TagA")]);
    send_ok(&t.rmq, &ch, send_request("Orders", 0, &tag_a, b"a")).await;
    let resp = pull::handle(&t.rmq, &ch, pull_command(&h)).await.unwrap();
    let want = vec![b"a".to_vec()];
    assert_eq!(answer(&resp), (ResponseCode::Success, (3, 0, 3), want));
}

#[tokio::test]
async fn an_unknown_topic_does_not_exist() {
    let t = front().await;
    let (ch, _rx) = channel(1);
    let res = pull::handle(&t.rmq, &ch, pull_request("g", "Nowhere", 0, 0, 0)).await;
    assert_eq!(code_of(&res), ResponseCode::TopicNotExist);
    assert_eq!(
        remark_of(&res),
        "topic[Nowhere] not exist, apply first please!"
    );
}

#[tokio::test]
async fn a_queue_id_out_of_range_is_an_invalid_parameter() {
    let (t, ch) = orders_with(0).await;
    for queue in [4, -1] {
        let res = pull::handle(&t.rmq, &ch, pull_request("g", "Orders", queue, 0, 0)).await;
        assert_eq!(
            code_of(&res),
            ResponseCode::InvalidParameter,
            "queue {queue}"
        );
        assert!(
            remark_of(&res).starts_with(&format!("queueId[{queue}] is illegal")),
            "{}",
            remark_of(&res)
        );
    }
}

/// Spawns a pull of queue 0 from `offset` held up to `hold_ms`, and waits until it is parked.
async fn parked_pull(
    t: &TestFront,
    ch: &Arc<Channel>,
    offset: i64,
    hold_ms: i64,
) -> tokio::task::JoinHandle<Result<RemotingCommand>> {
    // The group is known (a pull of a new group first looks it up in meta).
    t.rmq.groups.find_cached(&t.rmq.node, "g").await;
    let free = t.rmq.node.parked.available_permits();
    let (rmq, ch2): (Arc<Remoting>, Arc<Channel>) = (t.rmq.clone(), ch.clone());
    let task = tokio::spawn(async move {
        pull::handle(&rmq, &ch2, pull_request("g", "Orders", 0, offset, hold_ms)).await
    });
    for _ in 0..1000 {
        if t.rmq.node.parked.available_permits() < free {
            return task;
        }
        tokio::task::yield_now().await;
    }
    panic!("the pull was never parked");
}

#[tokio::test]
async fn a_suspended_pull_is_answered_when_a_message_arrives() {
    let (t, ch) = orders_with(1).await;
    let started = Instant::now();
    let task = parked_pull(&t, &ch, 1, 10_000).await;
    send_ok(&t.rmq, &ch, send_request("Orders", 0, "", b"new")).await;
    let resp = tokio::time::timeout(Duration::from_secs(5), task)
        .await
        .expect("answered before the hold ends")
        .unwrap()
        .unwrap();
    assert!(started.elapsed() < Duration::from_secs(5));
    let want = vec![b"new".to_vec()];
    assert_eq!(answer(&resp), (ResponseCode::Success, (2, 0, 2), want));
}

#[tokio::test]
async fn a_suspended_pull_without_messages_is_not_found_after_its_hold() {
    let (t, ch) = orders_with(0).await;
    let started = Instant::now();
    let task = parked_pull(&t, &ch, 0, 50).await;
    let resp = tokio::time::timeout(Duration::from_secs(5), task)
        .await
        .expect("answered at the end of the hold")
        .unwrap()
        .unwrap();
    assert!(started.elapsed() >= Duration::from_millis(50));
    assert_eq!(
        answer(&resp),
        (ResponseCode::PullNotFound, (0, 0, 0), vec![])
    );
}

#[tokio::test]
async fn a_suspended_pull_of_a_closed_connection_is_dropped() {
    let (t, ch) = orders_with(0).await;
    let task = parked_pull(&t, &ch, 0, 10_000).await;
    ch.closed.cancel();
    let res = tokio::time::timeout(Duration::from_secs(5), task)
        .await
        .expect("given up when the connection closed")
        .unwrap();
    assert!(res.is_err(), "answered a closed connection: {:?}", res.ok());
}

#[tokio::test]
async fn the_commit_offset_flag_commits_the_groups_offset() {
    let (t, ch) = orders_with(3).await;
    let mut h = pull_header("g", "Orders", 0, 2);
    h.sys_flag |= PULL_FLAG_COMMIT_OFFSET;
    h.commit_offset = 2;
    let resp = pull::handle(&t.rmq, &ch, pull_command(&h)).await.unwrap();
    assert_eq!(resp.response_code(), ResponseCode::Success);
    let queue = QueueKey {
        shard: ShardId(0),
        topic: Topic::new("Orders"),
        queue_id: QueueId(0),
    };
    let committed = t
        .rmq
        .node
        .meta
        .consumer_offset(&ConsumerGroup::new("g"), &queue)
        .await
        .unwrap();
    assert_eq!(committed, Some(QueueOffset(2)));
    let other = t
        .rmq
        .node
        .meta
        .consumer_offset(&ConsumerGroup::new("other"), &queue)
        .await
        .unwrap();
    assert_eq!(other, None);
}

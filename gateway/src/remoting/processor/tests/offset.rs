//! Consumer offsets and queue offset queries (`processor/offset.rs`) against the test core.

use std::sync::Arc;
use std::time::Duration;

use stratus_compat::command::RemotingCommand;
use stratus_compat::request::offset::{
    BoundaryType, QueryConsumerOffsetRequestHeader, QueueRequestHeader, SearchOffsetRequestHeader,
    UpdateConsumerOffsetRequestHeader, read_offset_response,
};
use stratus_compat::{RequestCode, ResponseCode};

use crate::remoting::net::Channel;
use crate::remoting::processor::offset;
use crate::remoting::testing::{
    TestFront, channel, code_of, create_topic, front, request, send_ok, send_request, stored,
};

/// Orders (4 queues) with `n` messages in queue 0, the clock moving 1 s between sends.
async fn orders_with(n: usize) -> (TestFront, Arc<Channel>) {
    let t = front().await;
    let (ch, _rx) = channel(1);
    create_topic(&t.rmq, "Orders", 4).await;
    for _ in 0..n {
        send_ok(&t.rmq, &ch, send_request("Orders", 0, "", b"x")).await;
        t.test.clock.advance(Duration::from_secs(1));
    }
    (t, ch)
}

fn query(queue_id: i32, set_zero_if_not_found: Option<bool>) -> RemotingCommand {
    request(RequestCode::QueryConsumerOffset, |cmd| {
        QueryConsumerOffsetRequestHeader {
            consumer_group: "g".into(),
            topic: "Orders".into(),
            queue_id,
            set_zero_if_not_found,
        }
        .write_to(cmd);
    })
}

fn update(topic: &str, queue_id: i32, commit_offset: i64) -> RemotingCommand {
    request(RequestCode::UpdateConsumerOffset, |cmd| {
        UpdateConsumerOffsetRequestHeader {
            consumer_group: "g".into(),
            topic: topic.into(),
            queue_id,
            commit_offset,
        }
        .write_to(cmd);
    })
}

fn queue_request(code: RequestCode, queue_id: i32) -> RemotingCommand {
    request(code, |cmd| {
        QueueRequestHeader {
            topic: "Orders".into(),
            queue_id,
        }
        .write_to(cmd);
    })
}

fn search(timestamp: i64, boundary_type: BoundaryType) -> RemotingCommand {
    request(RequestCode::SearchOffsetByTimestamp, |cmd| {
        SearchOffsetRequestHeader {
            topic: "Orders".into(),
            queue_id: 0,
            timestamp,
            boundary_type,
        }
        .write_to(cmd);
    })
}

/// The `offset` of a successful answer.
fn offset_of(resp: &RemotingCommand) -> i64 {
    assert_eq!(
        resp.response_code(),
        ResponseCode::Success,
        "{:?}",
        resp.remark
    );
    read_offset_response(resp).unwrap()
}

#[tokio::test]
async fn an_updated_offset_is_queried_back() {
    let (t, ch) = orders_with(3).await;
    let resp = offset::update_consumer_offset(&t.rmq, &ch, &update("Orders", 0, 2))
        .await
        .unwrap();
    assert_eq!(resp.response_code(), ResponseCode::Success);
    let resp = offset::query_consumer_offset(&t.rmq, &ch, &query(0, None))
        .await
        .unwrap();
    assert_eq!(offset_of(&resp), 2);
    // Another queue of the same group has its own (none).
    let resp = offset::query_consumer_offset(&t.rmq, &ch, &query(1, None))
        .await
        .unwrap();
    assert_eq!(resp.response_code(), ResponseCode::QueryNotFound);
}

#[tokio::test]
async fn updating_an_unknown_topic_does_not_exist() {
    let (t, ch) = orders_with(0).await;
    let res = offset::update_consumer_offset(&t.rmq, &ch, &update("Nowhere", 0, 1)).await;
    assert_eq!(code_of(&res), ResponseCode::TopicNotExist);
}

#[tokio::test]
async fn a_young_queue_without_a_committed_offset_answers_zero() {
    let (t, ch) = orders_with(2).await;
    let resp = offset::query_consumer_offset(&t.rmq, &ch, &query(0, None))
        .await
        .unwrap();
    assert_eq!(offset_of(&resp), 0);
    // Unless the 5.x client asks not to.
    let resp = offset::query_consumer_offset(&t.rmq, &ch, &query(0, Some(false)))
        .await
        .unwrap();
    assert_eq!(resp.response_code(), ResponseCode::QueryNotFound);
}

#[tokio::test]
async fn an_empty_queue_without_a_committed_offset_is_not_found() {
    let (t, ch) = orders_with(0).await;
    let resp = offset::query_consumer_offset(&t.rmq, &ch, &query(0, None))
        .await
        .unwrap();
    assert_eq!(resp.response_code(), ResponseCode::QueryNotFound);
    assert_eq!(
        resp.remark.as_deref(),
        Some("Not found, V3_0_6_SNAPSHOT maybe this group consumer boot first")
    );
}

#[tokio::test]
async fn max_and_min_offsets_are_the_queues_bounds() {
    let (t, ch) = orders_with(3).await;
    let max = offset::max_offset(&t.rmq, &ch, &queue_request(RequestCode::GetMaxOffset, 0));
    assert_eq!(offset_of(&max.unwrap()), 3);
    let min = offset::min_offset(&t.rmq, &ch, &queue_request(RequestCode::GetMinOffset, 0));
    assert_eq!(offset_of(&min.unwrap()), 0);
    let empty = offset::max_offset(&t.rmq, &ch, &queue_request(RequestCode::GetMaxOffset, 1));
    assert_eq!(offset_of(&empty.unwrap()), 0);
}

#[tokio::test]
async fn search_by_timestamp_finds_the_lower_and_upper_bounds() {
    let (t, ch) = orders_with(3).await;
    let times: Vec<i64> = stored(&t.rmq, "Orders", 0)
        .await
        .iter()
        .map(|m| m.store_timestamp)
        .collect();
    assert!(times[0] < times[1] && times[1] < times[2], "{times:?}");
    let at = |ts, b| {
        let (rmq, ch) = (t.rmq.clone(), ch.clone());
        async move {
            let resp = offset::search_by_time(&rmq, &ch, &search(ts, b)).await;
            offset_of(&resp.unwrap())
        }
    };
    assert_eq!(at(times[0] - 1, BoundaryType::Lower).await, 0);
    assert_eq!(at(times[1], BoundaryType::Lower).await, 1);
    assert_eq!(at(times[1] + 1, BoundaryType::Lower).await, 2);
    assert_eq!(at(times[2] + 10_000, BoundaryType::Lower).await, 3);
    assert_eq!(at(times[1], BoundaryType::Upper).await, 1);
    assert_eq!(at(times[1] + 1, BoundaryType::Upper).await, 1);
}

#[tokio::test]
async fn the_earliest_store_time_is_the_first_messages() {
    let (t, ch) = orders_with(2).await;
    let first = stored(&t.rmq, "Orders", 0).await[0].store_timestamp;
    let cmd = queue_request(RequestCode::GetEarliestMsgStoretime, 0);
    let resp = offset::earliest_store_time(&t.rmq, &ch, &cmd)
        .await
        .unwrap();
    assert_eq!(resp.ext_fields.get("timestamp"), Some(&first.to_string()));
}

#[tokio::test]
async fn a_clients_older_commit_arriving_late_does_not_undo_its_newer_one() {
    let (t, ch) = orders_with(6).await;
    let mut newer = update("Orders", 0, 5);
    newer.opaque = 11;
    let mut older = update("Orders", 0, 4);
    older.opaque = 10;
    for cmd in [&newer, &older] {
        let resp = offset::update_consumer_offset(&t.rmq, &ch, cmd)
            .await
            .unwrap();
        assert_eq!(resp.response_code(), ResponseCode::Success);
    }
    let resp = offset::query_consumer_offset(&t.rmq, &ch, &query(0, None))
        .await
        .unwrap();
    assert_eq!(offset_of(&resp), 5, "the later request's offset stands");
    // A later request may still move it back (a reset through the client).
    let mut back = update("Orders", 0, 1);
    back.opaque = 12;
    offset::update_consumer_offset(&t.rmq, &ch, &back)
        .await
        .unwrap();
    let resp = offset::query_consumer_offset(&t.rmq, &ch, &query(0, None))
        .await
        .unwrap();
    assert_eq!(offset_of(&resp), 1);
}

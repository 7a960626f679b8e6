//! QUERY_MESSAGE (`processor/query.rs`) against the test core.

use std::sync::Arc;
use std::time::Duration;

use stratus_compat::command::RemotingCommand;
use stratus_compat::message::id::decode_offset_msg_id;
use stratus_compat::message::properties::keys;
use stratus_compat::message::record::MessageExt;
use stratus_compat::request::query::{QueryMessageRequestHeader, QueryMessageResponseHeader};
use stratus_compat::{RequestCode, ResponseCode};
use stratus_meta::ShardId;
use tokio::sync::mpsc;

use crate::remoting::net::Channel;
use crate::remoting::processor::query::{self, NOT_FOUND_REMARK};
use crate::remoting::testing::{
    TestFront, channel, code_of, dispatch, front, front_with, handle_of, props, remark_of, request,
    send_ok, send_request, stored,
};

fn query_request(topic: &str, key: &str, max_num: i32, unique: bool) -> RemotingCommand {
    query_window(topic, key, max_num, 0, i64::MAX, unique)
}

fn query_window(
    topic: &str,
    key: &str,
    max_num: i32,
    begin: i64,
    end: i64,
    unique: bool,
) -> RemotingCommand {
    request(RequestCode::QueryMessage, |cmd| {
        QueryMessageRequestHeader {
            topic: topic.into(),
            key: key.into(),
            max_num,
            begin_timestamp: begin,
            end_timestamp: end,
            unique_key: unique,
        }
        .write_to(cmd);
    })
}

/// The records of a successful answer.
fn records(resp: &RemotingCommand) -> Vec<MessageExt> {
    assert_eq!(
        resp.response_code(),
        ResponseCode::Success,
        "{:?}",
        resp.remark
    );
    let mut body = resp.body.clone();
    let mut out = Vec::new();
    while !body.is_empty() {
        out.push(MessageExt::decode(&mut body).expect("record"));
    }
    out
}

/// Sends `bodies` to Orders (queues 0 and 1 alternately) with these KEYS; returns the
/// handles answered.
async fn send_keyed(t: &TestFront, ch: &Channel, keys_of: &[(&str, &str)]) -> Vec<i64> {
    let mut handles = Vec::new();
    for (i, (body, k)) in keys_of.iter().enumerate() {
        let p = props(&[(keys::KEYS, k)]);
        let queue = i32::try_from(i % 2).expect("small");
        let h = send_ok(
            &t.rmq,
            ch,
            send_request("Orders", queue, &p, body.as_bytes()),
        )
        .await;
        handles.push(handle_of(&h));
    }
    handles
}

#[tokio::test]
async fn a_key_query_answers_exactly_the_messages_with_that_key_as_stored() {
    let t = front().await;
    let (ch, _rx) = channel(1);
    let handles = send_keyed(
        &t,
        &ch,
        &[
            ("a", "order-1 user-7"),
            ("b", "order-2"),
            ("c", "user-7  order-1"),
            ("d", "order-10"),
        ],
    )
    .await;
    let resp = query::query_message(&t.rmq, &ch, &query_request("Orders", "order-1", 64, false))
        .await
        .unwrap();
    let found = records(&resp);
    let bodies: Vec<&[u8]> = found.iter().map(|m| &m.body[..]).collect();
    assert_eq!(bodies, vec![b"a".as_slice(), b"c"], "in commit-log order");
    let ids: Vec<i64> = found.iter().map(|m| m.commit_log_offset).collect();
    assert_eq!(ids, vec![handles[0], handles[2]]);
    // Offset ids decode to the same handles, and UNIQ_KEY is there for the client id.
    for m in &found {
        assert_eq!(
            decode_offset_msg_id(&m.offset_msg_id()).unwrap().1,
            m.commit_log_offset
        );
        assert!(m.parsed_properties().get(keys::UNIQ_KEY).is_some());
    }
    // The same bytes a pull returns.
    let pulled = stored(&t.rmq, "Orders", 0).await;
    assert_eq!(found[0], pulled[0]);
    let h = QueryMessageResponseHeader::from_command(&resp).unwrap();
    assert_eq!(h.index_last_update_phyoffset, handles[2]);
    assert!(h.index_last_update_timestamp > 0);

    let user = query::query_message(&t.rmq, &ch, &query_request("Orders", "user-7", 64, false))
        .await
        .unwrap();
    assert_eq!(records(&user).len(), 2);
    let one = query::query_message(&t.rmq, &ch, &query_request("Orders", "user-7", 1, false))
        .await
        .unwrap();
    let one = records(&one);
    assert_eq!(one.len(), 1, "maxNum");
    assert_eq!(&one[0].body[..], b"c", "the newest");
}

#[tokio::test]
async fn a_unique_key_query_finds_the_message_whatever_max_num_says() {
    let t = front().await;
    let (ch, _rx) = channel(1);
    send_keyed(&t, &ch, &[("a", "k"), ("b", "k")]).await;
    let uniq = stored(&t.rmq, "Orders", 1).await[0]
        .parsed_properties()
        .get(keys::UNIQ_KEY)
        .expect("uniq key")
        .to_owned();
    // maxNum 0 finds nothing as a key query; as a unique-key query the broker's own 32
    // apply.
    let res = query::query_message(&t.rmq, &ch, &query_request("Orders", &uniq, 0, false)).await;
    assert_eq!(code_of(&res), ResponseCode::QueryNotFound);
    let resp = query::query_message(&t.rmq, &ch, &query_request("Orders", &uniq, 0, true))
        .await
        .unwrap();
    let found = records(&resp);
    assert_eq!(found.len(), 1);
    assert_eq!(&found[0].body[..], b"b");
}

#[tokio::test]
async fn nothing_found_is_query_not_found_with_the_reference_remark_and_the_header() {
    let t = front().await;
    let (ch, _rx) = channel(1);
    send_keyed(&t, &ch, &[("a", "k")]).await;
    for cmd in [
        query_request("Orders", "absent", 64, false),
        query_request("Other", "k", 64, false),
        query_window("Orders", "k", 64, 0, 1_000, false),
        query_window("Orders", "k", 64, i64::MAX, 0, false),
    ] {
        let res = query::query_message(&t.rmq, &ch, &cmd).await;
        assert_eq!(code_of(&res), ResponseCode::QueryNotFound);
        assert_eq!(remark_of(&res), NOT_FOUND_REMARK);
        let resp = res.unwrap();
        assert!(resp.body.is_empty());
        assert!(
            QueryMessageResponseHeader::from_command(&resp).is_ok(),
            "header set"
        );
    }
}

#[tokio::test]
async fn the_store_time_window_selects_messages() {
    let t = front().await;
    let (ch, _rx) = channel(1);
    send_keyed(&t, &ch, &[("early", "k")]).await;
    t.test.clock.advance(Duration::from_secs(60));
    send_keyed(&t, &ch, &[("late", "k")]).await;
    let late_ts = stored(&t.rmq, "Orders", 0).await[1].store_timestamp;
    let resp = query::query_message(
        &t.rmq,
        &ch,
        &query_window("Orders", "k", 64, late_ts - 30_000, late_ts + 30_000, false),
    )
    .await
    .unwrap();
    let found = records(&resp);
    assert_eq!(found.len(), 1);
    assert_eq!(&found[0].body[..], b"late");
}

#[tokio::test]
async fn missing_or_malformed_fields_are_a_system_error_like_the_reference() {
    let t = front().await;
    let (ch, _rx) = channel(1);
    for field in ["topic", "key", "maxNum", "beginTimestamp", "endTimestamp"] {
        let mut cmd = query_request("Orders", "k", 64, false);
        cmd.ext_fields.remove(field);
        let res = query::query_message(&t.rmq, &ch, &cmd).await;
        assert_eq!(code_of(&res), ResponseCode::SystemError, "{field}");
    }
    let mut cmd = query_request("Orders", "k", 64, false);
    cmd.put_ext("maxNum", "many");
    let res = query::query_message(&t.rmq, &ch, &cmd).await;
    assert_eq!(code_of(&res), ResponseCode::SystemError);
}

fn shard_channel(id: u64, shard: u32) -> (Arc<Channel>, mpsc::Receiver<RemotingCommand>) {
    let (tx, rx) = mpsc::channel(64);
    let peer = "127.0.0.1:40000".parse().expect("address");
    (
        Arc::new(Channel::new(id, peer, Some(ShardId(shard)), tx)),
        rx,
    )
}

#[tokio::test]
async fn each_shard_answers_for_its_own_messages_by_port_or_broker_name() {
    let t = front_with(|s| s.node.shards = 2).await;
    let (ch0, _rx0) = shard_channel(1, 0);
    let (ch1, _rx1) = shard_channel(2, 1);
    send_keyed(&t, &ch0, &[("on-0", "k")]).await;
    send_keyed(&t, &ch1, &[("on-1", "k")]).await;
    let body_of = |resp: RemotingCommand| {
        records(&resp)
            .into_iter()
            .map(|m| String::from_utf8(m.body.to_vec()).unwrap())
            .collect::<Vec<_>>()
    };
    let q = query_request("Orders", "k", 64, false);
    let r0 = query::query_message(&t.rmq, &ch0, &q).await.unwrap();
    assert_eq!(body_of(r0), vec!["on-0"]);
    let r1 = query::query_message(&t.rmq, &ch1, &q).await.unwrap();
    assert_eq!(body_of(r1), vec!["on-1"]);
    let mut named = q.clone();
    named.put_ext("bname", "broker-1");
    let r = query::query_message(&t.rmq, &ch0, &named).await.unwrap();
    assert_eq!(body_of(r), vec!["on-1"], "bname wins over the port");
    let mut unknown = q;
    unknown.put_ext("bname", "broker-9");
    let res = query::query_message(&t.rmq, &ch0, &unknown).await;
    assert_eq!(code_of(&res), ResponseCode::ServiceNotAvailable);
}

#[tokio::test]
async fn trace_messages_are_found_by_message_id_through_dispatch() {
    let t = front().await;
    let (ch, mut rx) = channel(1);
    // What a client's trace dispatcher stores: KEYS = the traced message id (and its keys).
    let traced = "7F0000010A2B18B4AAC2596D5B1B0000";
    let p = props(&[(keys::KEYS, &format!("{traced} order-1"))]);
    send_ok(
        &t.rmq,
        &ch,
        send_request("RMQ_SYS_TRACE_TOPIC", 0, &p, b"Pub\x01trace-data"),
    )
    .await;
    let resp = dispatch(
        &t.rmq,
        &ch,
        &mut rx,
        query_request("RMQ_SYS_TRACE_TOPIC", traced, 64, false),
    )
    .await
    .expect("answered");
    let found = records(&resp);
    assert_eq!(found.len(), 1);
    assert_eq!(&found[0].body[..], b"Pub\x01trace-data");
}

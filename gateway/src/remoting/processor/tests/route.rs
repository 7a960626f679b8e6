//! GET_ROUTEINFO_BY_TOPIC (`processor/route.rs`) against the test core.

use std::collections::BTreeMap;

use stratus_compat::command::RemotingCommand;
use stratus_compat::request::heartbeat::decode_json_body;
use stratus_compat::request::route::{GetRouteInfoRequestHeader, TopicRouteData};
use stratus_compat::topic::{PERM_INHERIT, PERM_READ, PERM_WRITE};
use stratus_compat::types::Topic;
use stratus_compat::{RequestCode, ResponseCode};
use stratus_meta::ShardId;

use crate::node::shards::shard_addr;
use crate::node::topics::topic_config;
use crate::remoting::processor::route;
use crate::remoting::testing::{front, front_with, request};

fn route_request(topic: &str) -> RemotingCommand {
    request(RequestCode::GetRouteinfoByTopic, |cmd| {
        GetRouteInfoRequestHeader {
            topic: topic.into(),
            accept_standard_json_only: None,
        }
        .write_to(cmd);
    })
}

#[tokio::test]
async fn the_route_of_a_created_topic_lists_broker_0_with_its_queues() {
    let t = front().await;
    t.rmq
        .node
        .topics
        .put(topic_config("Fresh", 8, PERM_READ | PERM_WRITE))
        .await
        .unwrap();
    let resp = route::get_route(&t.rmq, &route_request("Fresh"))
        .await
        .unwrap();
    assert_eq!(
        resp.response_code(),
        ResponseCode::Success,
        "{:?}",
        resp.remark
    );
    let data: TopicRouteData = decode_json_body(&resp.body).unwrap();
    assert_eq!(data.queue_datas.len(), 1);
    let q = &data.queue_datas[0];
    assert_eq!(q.broker_name, "broker-0");
    assert_eq!((q.read_queue_nums, q.write_queue_nums), (8, 8));
    assert_eq!(q.perm, PERM_READ | PERM_WRITE);
    assert_eq!(data.broker_datas.len(), 1);
    let b = &data.broker_datas[0];
    assert_eq!(b.broker_name, "broker-0");
    assert_eq!(b.cluster, t.rmq.node.config.node.cluster_name);
    let addr = shard_addr(&t.rmq.node.advertised, ShardId(0)).unwrap();
    assert_eq!(b.broker_addrs, BTreeMap::from([("0".to_owned(), addr)]));
}

/// As the reference's name server, even with auto-create on: the lookup creates nothing
/// (the producer falls back to TBW102's route and its first send creates the topic).
#[tokio::test]
async fn an_unknown_topic_has_no_route_and_the_lookup_creates_nothing() {
    for auto_create in [true, false] {
        let t = front_with(|s| s.broker.auto_create_topic = auto_create).await;
        let resp = route::get_route(&t.rmq, &route_request("Fresh"))
            .await
            .unwrap();
        assert_eq!(resp.response_code(), ResponseCode::TopicNotExist);
        assert_eq!(
            resp.remark.as_deref(),
            Some("No topic route info in name server for the topic: Fresh")
        );
        assert!(t.rmq.node.topics.get("Fresh").is_none());
        let stored = t.rmq.node.meta.get_topic(&Topic::new("Fresh")).await;
        assert!(stored.unwrap().is_none(), "nothing created in meta");
    }
}

#[tokio::test]
async fn the_default_topic_is_routed_when_auto_create_is_on() {
    let t = front().await;
    let resp = route::get_route(&t.rmq, &route_request("TBW102"))
        .await
        .unwrap();
    assert_eq!(resp.response_code(), ResponseCode::Success);
    let data: TopicRouteData = decode_json_body(&resp.body).unwrap();
    assert_eq!(
        data.queue_datas[0].perm,
        PERM_READ | PERM_WRITE | PERM_INHERIT
    );
}

/// A topic created through another node (in meta, not yet in this node's table) is found.
#[tokio::test]
async fn a_topic_created_elsewhere_is_read_through_from_meta() {
    let t = front().await;
    t.rmq
        .node
        .meta
        .put_topic(&topic_config("Elsewhere", 2, PERM_READ | PERM_WRITE))
        .await
        .unwrap();
    let resp = route::get_route(&t.rmq, &route_request("Elsewhere"))
        .await
        .unwrap();
    assert_eq!(resp.response_code(), ResponseCode::Success);
    let data: TopicRouteData = decode_json_body(&resp.body).unwrap();
    assert_eq!(data.queue_datas[0].write_queue_nums, 2);
}

#[tokio::test]
async fn a_retry_topic_is_routed_with_one_queue_even_without_auto_create() {
    let t = front_with(|s| s.broker.auto_create_topic = false).await;
    let resp = route::get_route(&t.rmq, &route_request("%RETRY%g"))
        .await
        .unwrap();
    assert_eq!(resp.response_code(), ResponseCode::Success);
    let data: TopicRouteData = decode_json_body(&resp.body).unwrap();
    let q = &data.queue_datas[0];
    assert_eq!((q.read_queue_nums, q.write_queue_nums), (1, 1));
}

#[tokio::test]
async fn a_dead_letter_topic_has_no_route_until_a_message_goes_there() {
    let t = front().await;
    let resp = route::get_route(&t.rmq, &route_request("%DLQ%g"))
        .await
        .unwrap();
    assert_eq!(resp.response_code(), ResponseCode::TopicNotExist);
}

#[tokio::test]
async fn a_known_topic_is_routed_from_memory_while_meta_is_away() {
    let t = front().await;
    let meta = &t.rmq.node.meta;
    for topic in ["Ordered", "Plain"] {
        let cfg = topic_config(topic, 4, PERM_READ | PERM_WRITE);
        t.rmq.node.topics.put(cfg).await.unwrap();
    }
    meta.put_kv("ORDER_TOPIC_CONFIG", "Ordered", "broker-0:4")
        .await
        .unwrap();
    for topic in ["Ordered", "Plain"] {
        let resp = route::get_route(&t.rmq, &route_request(topic))
            .await
            .unwrap();
        assert_eq!(resp.response_code(), ResponseCode::Success, "{topic}");
    }
    // Meta goes away: every call fails from now on.
    meta.close().await;
    assert!(meta.get_kv("ORDER_TOPIC_CONFIG", "Ordered").await.is_err());
    for (topic, order) in [("Ordered", Some("broker-0:4")), ("Plain", None)] {
        let resp = route::get_route(&t.rmq, &route_request(topic))
            .await
            .unwrap();
        assert_eq!(
            resp.response_code(),
            ResponseCode::Success,
            "{topic}: {:?}",
            resp.remark
        );
        let data: TopicRouteData = decode_json_body(&resp.body).unwrap();
        assert_eq!(data.queue_datas.len(), 1, "{topic}");
        assert_eq!(
            data.order_topic_conf.as_deref(),
            order,
            "{topic}: the last order config seen"
        );
    }
    // A topic never seen needs meta: that is an error, not a made-up route.
    assert!(
        route::get_route(&t.rmq, &route_request("Unknown"))
            .await
            .is_err()
    );
}

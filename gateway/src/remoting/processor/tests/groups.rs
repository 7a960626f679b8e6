//! Operators' group and consumer views (`processor/group.rs`, `processor/topic_admin.rs`)
//! and group auto-creation at heartbeats, through dispatch against the test core.

use std::sync::Arc;
use std::time::Duration;

use stratus_compat::code::LanguageCode;
use stratus_compat::command::{FLAG_RESPONSE, RemotingCommand};
use stratus_compat::request::admin::TopicHeader;
use stratus_compat::request::group::{
    CloneGroupOffsetRequestHeader, ConsumerConnection, DeleteSubscriptionGroupRequestHeader,
    GroupHeader, GroupList, ProducerConnection, ProducerGroupHeader, SubscriptionGroupConfigBody,
    SubscriptionGroupWrapper, TopicConfigAndQueueMapping, TopicStatsTable,
};
use stratus_compat::request::heartbeat::{
    ConsumeFromWhere, ConsumeType, ConsumerData, ConsumerGroupHeader, HeartbeatData, MessageModel,
    ProducerData, SubscriptionData, decode_json_body,
};
use stratus_compat::request::offset::UpdateConsumerOffsetRequestHeader;
use stratus_compat::request::route::TopicList;
use stratus_compat::types::{ConsumerGroup, QueueId, QueueOffset, Topic};
use stratus_compat::{RequestCode, ResponseCode};
use stratus_meta::{QueueKey, ShardId};

use crate::remoting::net::Channel;
use crate::remoting::testing::{
    TestFront, channel, create_topic, dispatch, front, front_with, pull_request, request, send_ok,
    send_request, stored,
};

/// Runs `cmd` through dispatch on client connection `id` and returns the answer.
async fn ask_on(t: &TestFront, id: u64, cmd: RemotingCommand) -> RemotingCommand {
    let (ch, mut rx) = channel(id);
    let mut got = dispatch(&t.rmq, &ch, &mut rx, cmd).await;
    // Skip what the node sent the client meanwhile (NOTIFY_CONSUMER_IDS_CHANGED).
    while let Some(c) = got {
        if c.flag & FLAG_RESPONSE != 0 {
            return c;
        }
        got = rx.try_recv().ok();
    }
    panic!("no answer")
}

/// Runs an admin request through dispatch on a connection of its own.
async fn ask(t: &TestFront, cmd: RemotingCommand) -> RemotingCommand {
    ask_on(t, 99, cmd).await
}

fn code(r: &RemotingCommand) -> ResponseCode {
    r.response_code()
}

fn remark(r: &RemotingCommand) -> &str {
    r.remark.as_deref().unwrap_or_default()
}

fn consumer_data(group: &str, topic: &str) -> ConsumerData {
    ConsumerData {
        group_name: group.into(),
        consume_type: ConsumeType::ConsumePassively,
        message_model: MessageModel::Clustering,
        consume_from_where: ConsumeFromWhere::ConsumeFromFirstOffset,
        subscription_data_set: vec![SubscriptionData {
            topic: topic.into(),
            sub_string: "TagA || TagB".into(),
            sub_version: 7,
            ..SubscriptionData::default()
        }],
        unit_mode: false,
    }
}

/// A HEART_BEAT of `client_id` (a Go client, version 401) with the given consumer and
/// producer groups.
fn heartbeat(client_id: &str, consumers: Vec<ConsumerData>, producers: &[&str]) -> RemotingCommand {
    let data = HeartbeatData {
        client_id: client_id.into(),
        producer_data_set: producers
            .iter()
            .map(|g| ProducerData {
                group_name: (*g).into(),
            })
            .collect(),
        consumer_data_set: consumers,
        heartbeat_fingerprint: 0,
        without_sub: false,
    };
    let mut cmd =
        request(RequestCode::HeartBeat, |_| {}).with_body(serde_json::to_vec(&data).unwrap());
    cmd.language = LanguageCode::Go;
    cmd.version = 401;
    cmd
}

fn create_group(body: &SubscriptionGroupConfigBody) -> RemotingCommand {
    request(RequestCode::UpdateAndCreateSubscriptionGroup, |_| {})
        .with_body(serde_json::to_vec(body).unwrap())
}

fn get_group(group: &str) -> RemotingCommand {
    request(RequestCode::GetSubscriptionGroupConfig, |cmd| {
        GroupHeader {
            group: group.into(),
        }
        .write_to(cmd)
    })
}

fn delete_group(group: &str, clean_offset: bool) -> RemotingCommand {
    request(RequestCode::DeleteSubscriptionGroup, |cmd| {
        DeleteSubscriptionGroupRequestHeader {
            group_name: group.into(),
            clean_offset,
        }
        .write_to(cmd)
    })
}

fn all_groups() -> RemotingCommand {
    request(RequestCode::GetAllSubscriptionGroupConfig, |_| {})
}

fn topic_request(code: RequestCode, topic: &str) -> RemotingCommand {
    request(code, |cmd| {
        TopicHeader {
            topic: topic.into(),
        }
        .write_to(cmd)
    })
}

fn commit(group: &str, topic: &str, queue_id: i32, offset: i64) -> RemotingCommand {
    request(RequestCode::UpdateConsumerOffset, |cmd| {
        UpdateConsumerOffsetRequestHeader {
            consumer_group: group.into(),
            topic: topic.into(),
            queue_id,
            commit_offset: offset,
        }
        .write_to(cmd)
    })
}

fn queue(topic: &str, queue_id: i32) -> QueueKey {
    QueueKey {
        shard: ShardId(0),
        topic: Topic::new(topic),
        queue_id: QueueId(queue_id),
    }
}

async fn offset_of(t: &TestFront, group: &str, topic: &str, queue_id: i32) -> Option<i64> {
    t.rmq
        .node
        .meta
        .consumer_offset(&ConsumerGroup::new(group), &queue(topic, queue_id))
        .await
        .unwrap()
        .map(|o: QueueOffset| o.0)
}

#[tokio::test]
async fn a_group_is_created_read_listed_and_deleted() {
    let t = front_with(|s| s.broker.auto_create_subscription_group = false).await;
    let mut g = SubscriptionGroupConfigBody::new("OpsGroup");
    g.consume_broadcast_enable = false;
    g.consume_message_orderly = true;
    g.retry_queue_nums = 2;
    g.retry_max_times = 3;
    g.broker_id = 1;
    g.attributes.insert("k".into(), "v".into());
    let r = ask(&t, create_group(&g)).await;
    assert_eq!(code(&r), ResponseCode::Success, "{}", remark(&r));

    let r = ask(&t, get_group("OpsGroup")).await;
    assert_eq!(code(&r), ResponseCode::Success);
    let got: SubscriptionGroupConfigBody = decode_json_body(&r.body).unwrap();
    assert_eq!(got, g, "every field as sent");

    let r = ask(&t, all_groups()).await;
    let wrapper: SubscriptionGroupWrapper = decode_json_body(&r.body).unwrap();
    assert_eq!(wrapper.subscription_group_table.get("OpsGroup"), Some(&g));
    for system in ["TOOLS_CONSUMER", "CID_RMQ_SYS_TRANS", "SELF_TEST_C_GROUP"] {
        assert_eq!(
            wrapper.subscription_group_table.get(system),
            Some(&SubscriptionGroupConfigBody::new(system)),
            "the reference's predefined {system}"
        );
    }
    assert_eq!(wrapper.subscription_group_table.len(), 9);

    let r = ask(&t, delete_group("OpsGroup", false)).await;
    assert_eq!(code(&r), ResponseCode::Success);
    let r = ask(&t, get_group("OpsGroup")).await;
    assert_eq!(code(&r), ResponseCode::SubscriptionGroupNotExist);
    assert_eq!(remark(&r), "No group in this broker");
    let r = ask(&t, all_groups()).await;
    let wrapper: SubscriptionGroupWrapper = decode_json_body(&r.body).unwrap();
    assert!(!wrapper.subscription_group_table.contains_key("OpsGroup"));
    // A system group is created on demand even with auto-creation off.
    let r = ask(&t, get_group("CID_RMQ_SYS_X")).await;
    assert_eq!(code(&r), ResponseCode::Success);
}

#[tokio::test]
async fn get_subscription_group_config_auto_creates_as_the_reference() {
    let t = front().await;
    let r = ask(&t, get_group("Fresh")).await;
    assert_eq!(code(&r), ResponseCode::Success);
    let got: SubscriptionGroupConfigBody = decode_json_body(&r.body).unwrap();
    assert_eq!(got, SubscriptionGroupConfigBody::new("Fresh"));
    assert!(
        t.rmq
            .node
            .meta
            .get_group(&ConsumerGroup::new("Fresh"))
            .await
            .unwrap()
            .is_some(),
        "stored in meta"
    );
    // An illegal name is never created.
    let r = ask(&t, get_group("bad name")).await;
    assert_eq!(code(&r), ResponseCode::SubscriptionGroupNotExist);
}

#[tokio::test]
async fn bad_requests_get_the_reference_codes_and_the_node_keeps_serving() {
    let t = front().await;
    let empty = request(RequestCode::UpdateAndCreateSubscriptionGroup, |_| {});
    assert_eq!(code(&ask(&t, empty).await), ResponseCode::SystemError);
    let r = ask(&t, create_group(&SubscriptionGroupConfigBody::new("a b"))).await;
    assert_eq!(code(&r), ResponseCode::InvalidParameter);
    assert_eq!(
        remark(&r),
        "The specified group: a b, contains illegal characters, allowing only ^[%|a-zA-Z0-9_-]+$"
    );
    let r = ask(&t, create_group(&SubscriptionGroupConfigBody::new(" "))).await;
    assert_eq!(remark(&r), "The specified group is blank.");
    let garbage = request(RequestCode::UpdateAndCreateSubscriptionGroup, |_| {})
        .with_body(b"{\"groupName\":".to_vec());
    assert_eq!(code(&ask(&t, garbage).await), ResponseCode::SystemError);
    for (code_, field) in [
        (RequestCode::DeleteSubscriptionGroup, "groupName"),
        (RequestCode::GetSubscriptionGroupConfig, "group"),
        (RequestCode::GetConsumerConnectionList, "consumerGroup"),
        (RequestCode::GetProducerConnectionList, "producerGroup"),
        (RequestCode::GetTopicStatsInfo, "topic"),
        (RequestCode::GetTopicConfig, "topic"),
        (RequestCode::QueryTopicConsumeByWho, "topic"),
    ] {
        let r = ask(&t, request(code_, |_| {})).await;
        assert_eq!(code(&r), ResponseCode::SystemError, "{code_}");
        assert_eq!(
            remark(&r),
            format!("the custom field <{field}> is null"),
            "{code_}"
        );
    }
    // As the reference: without a group, QUERY_TOPICS_BY_CONSUMER lists nothing and
    // CLONE_GROUP_OFFSET clones nothing, both SUCCESS.
    let r = ask(&t, request(RequestCode::QueryTopicsByConsumer, |_| {})).await;
    assert_eq!(code(&r), ResponseCode::Success);
    let topics: TopicList = decode_json_body(&r.body).unwrap();
    assert!(topics.topic_list.is_empty());
    let r = ask(&t, request(RequestCode::CloneGroupOffset, |_| {})).await;
    assert_eq!(code(&r), ResponseCode::Success);
    let r = ask(
        &t,
        request(RequestCode::CloneGroupOffset, |c| {
            c.put_ext("srcGroup", "a")
        }),
    )
    .await;
    assert_eq!(code(&r), ResponseCode::Success);
    // Still serving.
    let r = ask(&t, all_groups()).await;
    assert_eq!(code(&r), ResponseCode::Success);
}

#[tokio::test]
async fn a_heartbeat_creates_its_group_once_and_then_uses_the_cache() {
    let t = front().await;
    let hb = || heartbeat("c1", vec![consumer_data("HbGroup", "Orders")], &[]);
    assert_eq!(code(&ask_on(&t, 1, hb()).await), ResponseCode::Success);
    let meta = &t.rmq.node.meta;
    let g = ConsumerGroup::new("HbGroup");
    assert!(meta.get_group(&g).await.unwrap().is_some(), "auto-created");
    // Removed behind the node's back: heartbeats within the cache's life do not look.
    assert!(meta.delete_group(&g).await.unwrap());
    ask_on(&t, 1, hb()).await;
    assert!(meta.get_group(&g).await.unwrap().is_none(), "cached");
    t.test.clock.advance(Duration::from_secs(31));
    ask_on(&t, 1, hb()).await;
    assert!(
        meta.get_group(&g).await.unwrap().is_some(),
        "looked up again after the cache's life, and re-created"
    );
}

#[tokio::test]
async fn without_auto_creation_only_existing_groups_register() {
    let t = front_with(|s| s.broker.auto_create_subscription_group = false).await;
    ask_on(
        &t,
        1,
        heartbeat("c1", vec![consumer_data("Unknown", "Orders")], &[]),
    )
    .await;
    assert!(
        t.rmq.registry.consumer_ids("Unknown").is_empty(),
        "not registered"
    );
    assert!(t.rmq.node.topics.get("%RETRY%Unknown").is_none());
    assert!(
        t.rmq
            .node
            .meta
            .get_group(&ConsumerGroup::new("Unknown"))
            .await
            .unwrap()
            .is_none()
    );
    let mut g = SubscriptionGroupConfigBody::new("Known");
    g.retry_queue_nums = 3;
    ask(&t, create_group(&g)).await;
    ask_on(
        &t,
        1,
        heartbeat("c1", vec![consumer_data("Known", "Orders")], &[]),
    )
    .await;
    assert_eq!(t.rmq.registry.consumer_ids("Known"), ["c1"]);
    let retry = t.rmq.node.topics.get("%RETRY%Known").expect("retry topic");
    assert_eq!(retry.read_queue_nums, 3, "the group's retryQueueNums");
}

#[tokio::test]
async fn connection_lists_show_the_live_clients() {
    let t = front().await;
    ask_on(
        &t,
        1,
        heartbeat("client-a", vec![consumer_data("CG", "Orders")], &["PG"]),
    )
    .await;
    ask_on(
        &t,
        2,
        heartbeat("client-b", vec![consumer_data("CG", "Orders")], &[]),
    )
    .await;

    let r = ask(
        &t,
        request(RequestCode::GetConsumerConnectionList, |cmd| {
            ConsumerGroupHeader {
                consumer_group: "CG".into(),
            }
            .write_to(cmd)
        }),
    )
    .await;
    assert_eq!(code(&r), ResponseCode::Success);
    let cc: ConsumerConnection = decode_json_body(&r.body).unwrap();
    let ids: Vec<&str> = cc
        .connection_set
        .iter()
        .map(|c| c.client_id.as_str())
        .collect();
    assert_eq!(ids, ["client-a", "client-b"]);
    for c in &cc.connection_set {
        assert_eq!(c.client_addr, "127.0.0.1:40000");
        assert_eq!(c.language, "GO");
        assert_eq!(c.version, 401);
    }
    assert_eq!(cc.consume_type, ConsumeType::ConsumePassively);
    assert_eq!(cc.message_model, MessageModel::Clustering);
    assert_eq!(
        cc.consume_from_where,
        ConsumeFromWhere::ConsumeFromFirstOffset
    );
    let sub = cc.subscription_table.get("Orders").expect("subscription");
    assert_eq!(
        (sub.sub_string.as_str(), sub.sub_version),
        ("TagA || TagB", 7)
    );
    // The JSON names the reference's fields.
    let v: serde_json::Value = serde_json::from_slice(&r.body).unwrap();
    assert_eq!(v["consumeType"], "CONSUME_PASSIVELY");
    assert_eq!(v["messageModel"], "CLUSTERING");
    assert_eq!(v["connectionSet"][0]["clientId"], "client-a");

    let r = ask(
        &t,
        request(RequestCode::GetProducerConnectionList, |cmd| {
            ProducerGroupHeader {
                producer_group: "PG".into(),
            }
            .write_to(cmd)
        }),
    )
    .await;
    let pc: ProducerConnection = decode_json_body(&r.body).unwrap();
    assert_eq!(pc.connection_set.len(), 1);
    assert_eq!(pc.connection_set[0].client_id, "client-a");

    // Nobody online.
    let r = ask(
        &t,
        request(RequestCode::GetConsumerConnectionList, |cmd| {
            ConsumerGroupHeader {
                consumer_group: "Nobody".into(),
            }
            .write_to(cmd)
        }),
    )
    .await;
    assert_eq!(code(&r), ResponseCode::ConsumerNotOnline);
    assert_eq!(remark(&r), "the consumer group[Nobody] not online");
    let r = ask(
        &t,
        request(RequestCode::GetProducerConnectionList, |cmd| {
            ProducerGroupHeader {
                producer_group: "NoPG".into(),
            }
            .write_to(cmd)
        }),
    )
    .await;
    assert_eq!(code(&r), ResponseCode::SystemError);
    assert_eq!(remark(&r), "the producer group[NoPG] not exist");
    // A closed connection leaves the lists.
    t.rmq.registry.channel_closed(1);
    t.rmq.registry.channel_closed(2);
    let r = ask(
        &t,
        request(RequestCode::GetConsumerConnectionList, |cmd| {
            ConsumerGroupHeader {
                consumer_group: "CG".into(),
            }
            .write_to(cmd)
        }),
    )
    .await;
    assert_eq!(code(&r), ResponseCode::ConsumerNotOnline);
}

#[tokio::test]
async fn topic_stats_give_each_queues_bounds_and_last_store_time() {
    let t = front().await;
    let (ch, _rx) = channel(1);
    create_topic(&t.rmq, "Stats", 4).await;
    for _ in 0..3 {
        send_ok(&t.rmq, &ch, send_request("Stats", 1, "", b"x")).await;
        t.test.clock.advance(Duration::from_secs(2));
    }
    send_ok(&t.rmq, &ch, send_request("Stats", 3, "", b"y")).await;
    let last_q1 = stored(&t.rmq, "Stats", 1)
        .await
        .last()
        .unwrap()
        .store_timestamp;
    let r = ask(&t, topic_request(RequestCode::GetTopicStatsInfo, "Stats")).await;
    assert_eq!(code(&r), ResponseCode::Success);
    let stats = TopicStatsTable::decode(&r.body).unwrap();
    let rows: Vec<(String, i32, i64, i64, i64)> = stats
        .offset_table
        .iter()
        .map(|(mq, o)| {
            (
                mq.broker_name.clone(),
                mq.queue_id,
                o.min_offset,
                o.max_offset,
                o.last_update_timestamp,
            )
        })
        .collect();
    let last_q3 = stored(&t.rmq, "Stats", 3).await[0].store_timestamp;
    assert_eq!(
        rows,
        [
            ("broker-0".to_owned(), 0, 0, 0, 0),
            ("broker-0".to_owned(), 1, 0, 3, last_q1),
            ("broker-0".to_owned(), 2, 0, 0, 0),
            ("broker-0".to_owned(), 3, 0, 1, last_q3),
        ]
    );
    assert!(
        last_q1 > last_q3 - 10_000 && last_q1 < last_q3,
        "the last message's time"
    );

    let r = ask(&t, topic_request(RequestCode::GetTopicStatsInfo, "Nope")).await;
    assert_eq!(code(&r), ResponseCode::TopicNotExist);
    assert_eq!(remark(&r), "topic[Nope] not exist");
}

#[tokio::test]
async fn topic_config_is_the_reference_json() {
    let t = front().await;
    create_topic(&t.rmq, "Cfg", 6).await;
    let r = ask(&t, topic_request(RequestCode::GetTopicConfig, "Cfg")).await;
    assert_eq!(code(&r), ResponseCode::Success);
    let c: TopicConfigAndQueueMapping = decode_json_body(&r.body).unwrap();
    assert_eq!(c.config.topic_name, "Cfg");
    assert_eq!(
        (
            c.config.read_queue_nums,
            c.config.write_queue_nums,
            c.config.perm
        ),
        (6, 6, 6)
    );
    let v: serde_json::Value = serde_json::from_slice(&r.body).unwrap();
    assert!(v.get("mappingDetail").is_none());
    assert_eq!(v["topicFilterType"], "SINGLE_TAG");
    let r = ask(&t, topic_request(RequestCode::GetTopicConfig, "Nope")).await;
    assert_eq!(code(&r), ResponseCode::TopicNotExist);
    assert_eq!(remark(&r), "No topic in this broker. topic: Nope");
}

#[tokio::test]
async fn who_consumes_a_topic_and_what_a_group_consumes() {
    let t = front().await;
    create_topic(&t.rmq, "Orders", 4).await;
    create_topic(&t.rmq, "Bills", 4).await;
    assert_eq!(
        code(&ask(&t, commit("Offsets", "Orders", 2, 5)).await),
        ResponseCode::Success
    );
    ask(&t, commit("Offsets", "Bills", 0, 1)).await;
    ask_on(
        &t,
        1,
        heartbeat("c1", vec![consumer_data("Live", "Orders")], &[]),
    )
    .await;

    let r = ask(
        &t,
        topic_request(RequestCode::QueryTopicConsumeByWho, "Orders"),
    )
    .await;
    let groups: GroupList = decode_json_body(&r.body).unwrap();
    assert_eq!(groups.group_list, ["Live", "Offsets"]);
    let r = ask(
        &t,
        topic_request(RequestCode::QueryTopicConsumeByWho, "Nobody"),
    )
    .await;
    let groups: GroupList = decode_json_body(&r.body).unwrap();
    assert!(groups.group_list.is_empty());

    let r = ask(
        &t,
        request(RequestCode::QueryTopicsByConsumer, |cmd| {
            GroupHeader {
                group: "Offsets".into(),
            }
            .write_to(cmd)
        }),
    )
    .await;
    let topics: TopicList = decode_json_body(&r.body).unwrap();
    assert_eq!(topics.topic_list, ["Bills", "Orders"]);
    assert_eq!(
        topics.broker_addr.as_deref(),
        Some(t.rmq.node.advertised.as_str()),
        "shard 0's address"
    );
}

fn clone_request(src: &str, dest: &str, topic: Option<&str>, offline: bool) -> RemotingCommand {
    request(RequestCode::CloneGroupOffset, |cmd| {
        CloneGroupOffsetRequestHeader {
            src_group: src.into(),
            dest_group: dest.into(),
            topic: topic.map(str::to_owned),
            offline,
        }
        .write_to(cmd)
    })
}

#[tokio::test]
async fn clone_group_offset_copies_the_shards_offsets() {
    let t = front().await;
    create_topic(&t.rmq, "Orders", 4).await;
    create_topic(&t.rmq, "Bills", 4).await;
    for (q, o) in [(0, 5), (1, 7)] {
        ask(&t, commit("Src", "Orders", q, o)).await;
    }
    ask(&t, commit("Src", "Bills", 3, 9)).await;
    let r = ask(&t, clone_request("Src", "Dest", Some("Orders"), false)).await;
    assert_eq!(code(&r), ResponseCode::Success);
    assert_eq!(offset_of(&t, "Dest", "Orders", 0).await, Some(5));
    assert_eq!(offset_of(&t, "Dest", "Orders", 1).await, Some(7));
    assert_eq!(
        offset_of(&t, "Dest", "Bills", 3).await,
        None,
        "only the topic asked"
    );
    // A blank topic: every topic of the source.
    ask(&t, clone_request("Src", "All", None, false)).await;
    assert_eq!(offset_of(&t, "All", "Bills", 3).await, Some(9));
    assert_eq!(offset_of(&t, "All", "Orders", 1).await, Some(7));
    // A topic the source's live members do not subscribe is skipped unless offline.
    ask_on(
        &t,
        1,
        heartbeat("c1", vec![consumer_data("Src", "Orders")], &[]),
    )
    .await;
    ask(&t, clone_request("Src", "Online", Some("Bills"), false)).await;
    assert_eq!(offset_of(&t, "Online", "Bills", 3).await, None);
    ask(&t, clone_request("Src", "Online", Some("Bills"), true)).await;
    assert_eq!(offset_of(&t, "Online", "Bills", 3).await, Some(9));
    // A topic that does not exist is skipped.
    let r = ask(&t, clone_request("Src", "Ghost", Some("Ghost"), true)).await;
    assert_eq!(code(&r), ResponseCode::Success);
}

#[tokio::test]
async fn delete_with_clean_offset_drops_the_shards_offsets() {
    let t = front().await;
    create_topic(&t.rmq, "Orders", 4).await;
    ask(&t, get_group("Gone")).await;
    ask(&t, commit("Gone", "Orders", 0, 4)).await;
    ask(&t, delete_group("Gone", false)).await;
    assert_eq!(offset_of(&t, "Gone", "Orders", 0).await, Some(4), "kept");
    ask(&t, delete_group("Gone", true)).await;
    assert_eq!(offset_of(&t, "Gone", "Orders", 0).await, None, "cleaned");
}

#[tokio::test]
async fn system_topic_lists_match_the_reference() {
    let t = front().await;
    let r = ask(&t, request(RequestCode::GetSystemTopicListFromNs, |_| {})).await;
    let ns: TopicList = decode_json_body(&r.body).unwrap();
    let shards = t.rmq.node.config.node.shards;
    let mut expected = vec!["DefaultCluster".to_owned()];
    expected.extend((0..shards).map(|s| format!("broker-{s}")));
    assert_eq!(ns.topic_list, expected, "cluster and broker names");
    assert_eq!(
        ns.broker_addr.as_deref(),
        Some(t.rmq.node.advertised.as_str())
    );

    let r = ask(
        &t,
        request(RequestCode::GetSystemTopicListFromBroker, |_| {}),
    )
    .await;
    let b: TopicList = decode_json_body(&r.body).unwrap();
    assert_eq!(b.broker_addr, None);
    for topic in [
        "TBW102",
        "SCHEDULE_TOPIC_XXXX",
        "RMQ_SYS_TRANS_HALF_TOPIC",
        "CHECKPOINT_TOPIC",
        "DefaultCluster",
        "broker-0",
        "DefaultCluster_REPLY_TOPIC",
        "rmq_sys_REVIVE_LOG_DefaultCluster",
        "rmq_sys_SYNC_BROKER_MEMBER_broker-0",
        "rmq_sys_wheel_timer",
    ] {
        assert!(
            b.topic_list.iter().any(|t| t == topic),
            "{topic} in {:?}",
            b.topic_list
        );
    }
    assert_eq!(b.topic_list.len(), 16);
}

#[tokio::test]
async fn a_heartbeat_is_served_while_meta_is_away() {
    let t = front().await;
    let hb = || heartbeat("c1", vec![consumer_data("AwayGroup", "Orders")], &[]);
    assert_eq!(code(&ask_on(&t, 1, hb()).await), ResponseCode::Success);
    t.rmq.node.meta.close().await;
    assert!(
        t.rmq
            .node
            .meta
            .get_group(&ConsumerGroup::new("AwayGroup"))
            .await
            .is_err(),
        "meta is away"
    );
    t.test.clock.advance(Duration::from_secs(31));
    t.rmq.registry.channel_closed(1);
    // The cached entry is stale and meta cannot be asked: the stale entry serves.
    assert_eq!(code(&ask_on(&t, 1, hb()).await), ResponseCode::Success);
    assert_eq!(t.rmq.registry.consumer_ids("AwayGroup"), ["c1"]);
}

/// Two consumers of `group` join; whether the first was sent NOTIFY_CONSUMER_IDS_CHANGED.
async fn first_member_notified(t: &TestFront, group: &str) -> bool {
    let (a, mut rx_a) = channel(1);
    let (b, _rx_b) = channel(2);
    for (ch, id) in [(&a, "client-a"), (&b, "client-b")] {
        let cmd = heartbeat(id, vec![consumer_data(group, "Orders")], &[]);
        let r = crate::remoting::processor::client::heartbeat(&t.rmq, ch, &cmd)
            .await
            .unwrap();
        assert_eq!(code(&r), ResponseCode::Success);
    }
    let mut notified = false;
    while let Ok(c) = rx_a.try_recv() {
        notified |= c.code == RequestCode::NotifyConsumerIdsChanged.to_i32();
    }
    notified
}

#[tokio::test]
async fn a_group_may_turn_consumer_id_notifications_off() {
    let t = front().await;
    assert!(
        first_member_notified(&t, "Loud").await,
        "notified by default"
    );
    let t = front().await;
    let mut g = SubscriptionGroupConfigBody::new("Quiet");
    g.notify_consumer_ids_changed_enable = false;
    ask(&t, create_group(&g)).await;
    assert!(!first_member_notified(&t, "Quiet").await);
}

#[tokio::test]
async fn pulls_check_the_group_first() {
    let t = front_with(|s| s.broker.auto_create_subscription_group = false).await;
    create_topic(&t.rmq, "Orders", 4).await;
    let r = ask(&t, pull_request("NoSuchGroup", "Orders", 0, 0, 0)).await;
    assert_eq!(code(&r), ResponseCode::SubscriptionGroupNotExist);
    assert_eq!(
        remark(&r),
        "subscription group [NoSuchGroup] does not exist, \nSee https://rocketmq.apache.org/docs/bestPractice/06FAQ for further details."
    );
    let mut g = SubscriptionGroupConfigBody::new("Stopped");
    g.consume_enable = false;
    ask(&t, create_group(&g)).await;
    let r = ask(&t, pull_request("Stopped", "Orders", 0, 0, 0)).await;
    assert_eq!(code(&r), ResponseCode::NoPermission);
    assert_eq!(remark(&r), "subscription group no permission, Stopped");
    g.consume_enable = true;
    ask(&t, create_group(&g)).await;
    let r = ask(&t, pull_request("Stopped", "Orders", 0, 0, 0)).await;
    assert_eq!(code(&r), ResponseCode::PullNotFound, "{}", remark(&r));
}

#[tokio::test]
async fn a_shard_lists_only_the_connections_made_to_it() {
    let t = front_with(|s| s.node.shards = 2).await;
    // One client, one connection to each broker (shard), as clients connect.
    let mut rxs = Vec::new();
    for (id, shard) in [(1, 0), (2, 1)] {
        let (tx, rx) = tokio::sync::mpsc::channel(16);
        rxs.push(rx);
        let peer = format!("127.0.0.1:{}", 40_000 + id).parse().unwrap();
        let ch = Arc::new(Channel::new(id, peer, Some(ShardId(shard)), tx));
        let cmd = heartbeat(
            "client-a",
            vec![consumer_data("Both", "Orders")],
            &["PBoth"],
        );
        crate::remoting::processor::client::heartbeat(&t.rmq, &ch, &cmd)
            .await
            .unwrap();
    }
    for (broker, addr) in [
        ("broker-0", "127.0.0.1:40001"),
        ("broker-1", "127.0.0.1:40002"),
    ] {
        let r = ask(
            &t,
            request(RequestCode::GetConsumerConnectionList, |cmd| {
                cmd.put_ext("consumerGroup", "Both");
                cmd.put_ext("bname", broker);
            }),
        )
        .await;
        let cc: ConsumerConnection = decode_json_body(&r.body).unwrap();
        let addrs: Vec<&str> = cc
            .connection_set
            .iter()
            .map(|c| c.client_addr.as_str())
            .collect();
        assert_eq!(addrs, [addr], "{broker}");
        let r = ask(
            &t,
            request(RequestCode::GetProducerConnectionList, |cmd| {
                cmd.put_ext("producerGroup", "PBoth");
                cmd.put_ext("bname", broker);
            }),
        )
        .await;
        let pc: ProducerConnection = decode_json_body(&r.body).unwrap();
        assert_eq!(pc.connection_set.len(), 1, "{broker}");
    }
    // The name-server port answers for the first shard.
    let r = ask(
        &t,
        request(RequestCode::GetConsumerConnectionList, |cmd| {
            cmd.put_ext("consumerGroup", "Both")
        }),
    )
    .await;
    let cc: ConsumerConnection = decode_json_body(&r.body).unwrap();
    assert_eq!(cc.connection_set[0].client_addr, "127.0.0.1:40001");
    // A shard the group has no connection to: not online there.
    t.rmq.registry.channel_closed(2);
    let r = ask(
        &t,
        request(RequestCode::GetConsumerConnectionList, |cmd| {
            cmd.put_ext("consumerGroup", "Both");
            cmd.put_ext("bname", "broker-1");
        }),
    )
    .await;
    assert_eq!(code(&r), ResponseCode::ConsumerNotOnline);
    drop(rxs);
}

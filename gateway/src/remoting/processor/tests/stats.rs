//! Statistics and broker config (`processor/stats.rs`, `processor/broker_config.rs`)
//! against the test core: counts from real sends and pulls, windows moved by the manual
//! clock.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::time::Duration;

use serde::Deserialize;
use stratus_compat::command::RemotingCommand;
use stratus_compat::request::stats::{
    BrokerStatsData, ConsumeStats, ConsumeStatsList, GetConsumeStatsRequestHeader,
    ViewBrokerStatsDataRequestHeader,
};
use stratus_compat::types::{ConsumerGroup, QueueId, QueueOffset, Topic};
use stratus_compat::{RequestCode, ResponseCode};
use stratus_meta::{ConsumerOffset, QueueKey, ShardId};
use stratus_segments::clock::Clock;

use crate::remoting::net::Channel;
use crate::remoting::processor::{broker_config, pull, stats};
use crate::remoting::testing::{
    TestFront, channel, code_of, create_topic, front, remark_of, request, send_ok, send_request,
    stored,
};

/// Orders (2 queues): 3 messages to queue 0 and 1 to queue 1, one second apart; group g
/// pulls queue 0 once and commits offset 2 of it.
async fn traffic() -> (TestFront, Arc<Channel>) {
    let t = front().await;
    let (ch, _rx) = channel(1);
    create_topic(&t.rmq, "Orders", 2).await;
    t.rmq.node.stats.tick(t.test.clock.now_ms());
    for q in [0, 0, 0, 1] {
        send_ok(&t.rmq, &ch, send_request("Orders", q, "", b"hello")).await;
        t.test.clock.advance(Duration::from_secs(1));
    }
    let resp = pull::handle(
        &t.rmq,
        &ch,
        crate::remoting::testing::pull_request("g", "Orders", 0, 0, 0),
    )
    .await
    .unwrap();
    assert_eq!(resp.response_code(), ResponseCode::Success);
    t.rmq
        .node
        .commit_offsets(&[ConsumerOffset {
            group: ConsumerGroup::new("g"),
            queue: QueueKey {
                shard: ShardId(0),
                topic: Topic::new("Orders"),
                queue_id: QueueId(0),
            },
            offset: QueueOffset(2),
        }])
        .await
        .unwrap();
    // Ten seconds on: the minute windows and the store rates take a sample.
    t.test.clock.advance(Duration::from_secs(6));
    t.rmq.node.stats.tick(t.test.clock.now_ms());
    (t, ch)
}

fn view(name: &str, key: &str) -> RemotingCommand {
    request(RequestCode::ViewBrokerStatsData, |cmd| {
        ViewBrokerStatsDataRequestHeader {
            stats_name: name.into(),
            stats_key: key.into(),
        }
        .write_to(cmd);
    })
}

fn stats_data(t: &TestFront, name: &str, key: &str) -> BrokerStatsData {
    let resp = stats::view_broker_stats_data(&t.rmq, &channel(1).0, &view(name, key)).unwrap();
    serde_json::from_slice(&resp.body).unwrap()
}

#[tokio::test]
async fn view_broker_stats_data_counts_what_was_sent_and_pulled() {
    let (t, _ch) = traffic().await;
    let put = stats_data(&t, "TOPIC_PUT_NUMS", "Orders");
    assert_eq!(put.stats_minute.sum, 4);
    assert!((put.stats_minute.tps - 0.4).abs() < 1e-9, "{put:?}");
    assert!((put.stats_minute.avgpt - 1.0).abs() < 1e-9, "{put:?}");
    let size = stats_data(&t, "TOPIC_PUT_SIZE", "Orders");
    assert_eq!(size.stats_minute.sum, 20);
    let got = stats_data(&t, "GROUP_GET_NUMS", "Orders@g");
    assert_eq!(got.stats_minute.sum, 3);
    let broker = stats_data(&t, "BROKER_PUT_NUMS", "DefaultCluster");
    assert_eq!(broker.stats_minute.sum, 4);

    let res = stats::view_broker_stats_data(
        &t.rmq,
        &channel(1).0,
        &view("GROUP_GET_NUMS", "Orders@nobody"),
    );
    assert_eq!(code_of(&res), ResponseCode::SystemError);
    assert_eq!(
        remark_of(&res),
        "The stats <GROUP_GET_NUMS> <Orders@nobody> not exist"
    );
    let res = stats::view_broker_stats_data(
        &t.rmq,
        &channel(1).0,
        &request(RequestCode::ViewBrokerStatsData, |_| {}),
    );
    assert_ne!(code_of(&res), ResponseCode::Success);
}

fn consume_stats_request(group: &str, topic: Option<&str>) -> RemotingCommand {
    request(RequestCode::GetConsumeStats, |cmd| {
        GetConsumeStatsRequestHeader {
            consumer_group: group.into(),
            topic: topic.map(str::to_owned),
            topic_list: None,
        }
        .write_to(cmd);
    })
}

#[tokio::test]
async fn consume_stats_shows_offsets_lag_and_the_last_consumed_store_time() {
    let (t, ch) = traffic().await;
    for topic in [Some("Orders"), None] {
        let resp = stats::consume_stats(&t.rmq, &ch, &consume_stats_request("g", topic))
            .await
            .unwrap();
        let cs = ConsumeStats::decode(std::str::from_utf8(&resp.body).unwrap()).unwrap();
        assert_eq!(cs.offset_table.len(), 2, "{topic:?}: every read queue");
        let (mq, w) = &cs.offset_table[0];
        assert_eq!(
            (mq.topic.as_str(), mq.queue_id, mq.broker_name.as_str()),
            ("Orders", 0, "broker-0")
        );
        assert_eq!((w.broker_offset, w.consumer_offset), (3, 2));
        let second = &stored(&t.rmq, "Orders", 0).await[1];
        assert_eq!(w.last_timestamp, second.store_timestamp);
        let (_, w1) = &cs.offset_table[1];
        assert_eq!(
            (w1.broker_offset, w1.consumer_offset, w1.last_timestamp),
            (1, 0, 0)
        );
        assert_eq!(cs.total_diff(), 2);
        assert!((cs.consume_tps - 0.3).abs() < 1e-9, "{cs:?}");
    }
    // A group without offsets: an empty table, as the reference answers.
    let resp = stats::consume_stats(&t.rmq, &ch, &consume_stats_request("fresh", None))
        .await
        .unwrap();
    assert_eq!(resp.response_code(), ResponseCode::Success);
    let cs = ConsumeStats::decode(std::str::from_utf8(&resp.body).unwrap()).unwrap();
    assert!(cs.offset_table.is_empty());
}

#[tokio::test]
async fn broker_consume_stats_lists_the_groups_with_offsets() {
    let (t, ch) = traffic().await;
    // The pull made g a subscription group (auto-created, as the reference); without it
    // and without a consumer channel, g is not listed.
    let g = ConsumerGroup::new("g");
    assert!(t.rmq.node.meta.get_group(&g).await.unwrap().is_some());
    t.rmq.node.meta.delete_group(&g).await.unwrap();
    let cmd = request(RequestCode::GetBrokerConsumeStats, |c| {
        c.put_ext("isOrder", false)
    });
    let resp = stats::broker_consume_stats(&t.rmq, &ch, &cmd)
        .await
        .unwrap();
    let list = ConsumeStatsList::decode(std::str::from_utf8(&resp.body).unwrap()).unwrap();
    assert!(list.consume_stats_list.is_empty(), "{list:?}");
    assert_eq!(list.broker_addr, "127.0.0.1:10911");
    // Once g is a subscription group it is.
    t.rmq
        .node
        .meta
        .put_group(&stratus_meta::SubscriptionGroupConfig {
            group: ConsumerGroup::new("g"),
            consume_enable: true,
            consume_broadcast_enable: true,
            retry_queue_nums: 1,
            retry_max_times: 16,
            details: None,
        })
        .await
        .unwrap();
    let resp = stats::broker_consume_stats(&t.rmq, &ch, &cmd)
        .await
        .unwrap();
    let list = ConsumeStatsList::decode(std::str::from_utf8(&resp.body).unwrap()).unwrap();
    assert_eq!(list.consume_stats_list.len(), 1);
    assert_eq!(list.consume_stats_list[0]["g"][0].offset_table.len(), 2);
    assert_eq!(list.total_diff, 2);
}

#[derive(Deserialize)]
struct KvTable {
    table: BTreeMap<String, String>,
}

#[tokio::test]
async fn runtime_info_has_the_reference_keys_with_real_figures() {
    let (t, ch) = traffic().await;
    let cmd = request(RequestCode::GetBrokerRuntimeInfo, |_| {});
    let resp = stats::runtime_info(&t.rmq, &ch, &cmd).await.unwrap();
    let kv: KvTable = serde_json::from_slice(&resp.body).unwrap();
    let k = |key: &str| {
        kv.table
            .get(key)
            .cloned()
            .unwrap_or_else(|| panic!("no {key}"))
    };
    for key in [
        "putTps",
        "getTransferredTps",
        "getTransferedTps",
        "getFoundTps",
        "getMissTps",
        "getTotalTps",
    ] {
        let parts: Vec<f64> = k(key).split(' ').map(|p| p.parse().unwrap()).collect();
        assert_eq!(parts.len(), 3, "{key}");
    }
    let put: Vec<f64> = k("putTps").split(' ').map(|p| p.parse().unwrap()).collect();
    assert!((put[0] - 0.4).abs() < 1e-9, "{put:?}");
    assert_eq!(k("msgPutTotalTodayNow"), "4");
    assert_eq!(k("msgGetTotalTodayNow"), "3");
    assert_eq!(k("putMessageTimesTotal"), "4");
    assert_eq!(k("putMessageSizeTotal"), "20");
    assert_eq!(k("bootTimestamp"), "1700000000000");
    let first = &stored(&t.rmq, "Orders", 0).await[0];
    assert_eq!(
        k("earliestMessageTimeStamp"),
        first.store_timestamp.to_string()
    );
    // A memory:// store: the data directory's disk, which may not exist in a test (-1.0,
    // as the reference answers for a missing path).
    let ratio: f64 = k("commitLogDiskRatio").parse().unwrap();
    assert!(ratio == -1.0 || (0.0..=1.0).contains(&ratio), "{ratio}");
    assert!(
        k("runtime").starts_with("[ 0 days, 0 hours, 0 minutes, 10 seconds ]"),
        "{}",
        k("runtime")
    );
    for key in [
        "brokerVersionDesc",
        "sendThreadPoolQueueHeadWaitTimeMills",
        "pullThreadPoolQueueSize",
        "pageCacheLockTimeMills",
        "timerReadBehind",
        "timerEnqueueTps",
        "msgPutTotalYesterdayMorning",
        "putLatency99",
        "EndTransactionQueueSize",
        "remainHowManyDataToFlush",
        "commitLogMaxOffset",
    ] {
        k(key);
    }
    assert!(k("commitLogMaxOffset").parse::<i64>().unwrap() > 0);
}

#[tokio::test]
async fn broker_config_is_properties_and_updates_go_to_meta() {
    let t = front().await;
    let resp = broker_config::get(&t.rmq).await.unwrap();
    let text = String::from_utf8(resp.body.to_vec()).unwrap();
    assert!(
        text.contains("brokerClusterName=DefaultCluster\n"),
        "{text}"
    );
    assert!(text.contains("maxMessageSize=4194304\n"), "{text}");
    assert!(text.contains("stratus.node.shards=1\n"), "{text}");
    assert!(resp.ext_fields["version"].contains("\"counter\":0"));

    let update = |body: &str| {
        let mut cmd = request(RequestCode::UpdateBrokerConfig, |_| {});
        cmd.body = body.as_bytes().to_vec().into();
        cmd
    };
    for fixed in [
        "maxMessageSize=1",
        "configBlackList=x",
        "stratus.node.id=other",
    ] {
        let res = broker_config::update(&t.rmq, &update(fixed)).await;
        assert_eq!(code_of(&res), ResponseCode::NoPermission, "{fixed}");
        assert_eq!(remark_of(&res), "Can not update config in black list.");
    }
    let res = broker_config::update(&t.rmq, &update("slaveReadEnable=true\nnote = a b\n")).await;
    assert_eq!(code_of(&res), ResponseCode::Success);
    let resp = broker_config::get(&t.rmq).await.unwrap();
    let text = String::from_utf8(resp.body.to_vec()).unwrap();
    assert!(text.contains("slaveReadEnable=true\n"), "{text}");
    assert!(text.contains("note=a b\n"), "{text}");
    assert!(resp.ext_fields["version"].contains("\"counter\":1"));
    // Kept in meta: what another node would read.
    let kept = t
        .rmq
        .node
        .meta
        .get_kv(broker_config::NAMESPACE, "overrides")
        .await
        .unwrap()
        .unwrap();
    assert!(kept.contains("slaveReadEnable=true"), "{kept}");
}

#[tokio::test]
async fn stats_keys_are_capped() {
    let t = crate::remoting::testing::front_with(|s| s.stats.max_keys = 2).await;
    let (ch, _rx) = channel(1);
    for topic in ["A", "B", "C", "D"] {
        create_topic(&t.rmq, topic, 1).await;
        send_ok(&t.rmq, &ch, send_request(topic, 0, "", b"x")).await;
    }
    t.test.clock.advance(Duration::from_secs(10));
    t.rmq.node.stats.tick(t.test.clock.now_ms());
    assert_eq!(
        stats_data(&t, "TOPIC_PUT_NUMS", "__OVERFLOW__")
            .stats_minute
            .sum,
        2
    );
    let res = stats::view_broker_stats_data(&t.rmq, &channel(1).0, &view("TOPIC_PUT_NUMS", "D"));
    assert_eq!(code_of(&res), ResponseCode::SystemError);
}

//! Checks for topics, KV config, subscription groups and consumer offsets.

use stratus_compat::types::{ConsumerGroup, QueueOffset, Topic};

use super::queue;
use crate::MetaStore;
use crate::model::{ConsumerOffset, ShardId, SubscriptionGroupConfig, TopicConfig};

fn topic(name: &str, queues: i32, order: bool, retention_hours: Option<i64>) -> TopicConfig {
    TopicConfig {
        topic: Topic::new(name),
        read_queue_nums: queues,
        write_queue_nums: queues + 1,
        perm: 6,
        topic_filter_type: "SINGLE_TAG".into(),
        topic_sys_flag: 3,
        order,
        retention_hours,
    }
}

fn ours(list: Vec<TopicConfig>, prefix: &str) -> Vec<TopicConfig> {
    list.into_iter()
        .filter(|t| t.topic.as_str().starts_with(prefix))
        .collect()
}

pub(super) async fn topic_put_get_list_delete(store: &dyn MetaStore) {
    let a = topic("crud-a", 4, false, None);
    let b = topic("crud-b", 8, true, Some(48));
    assert_eq!(
        store.get_topic(&a.topic).await.expect("get"),
        None,
        "unknown topic"
    );

    store.put_topic(&a).await.expect("put a");
    store.put_topic(&b).await.expect("put b");
    assert_eq!(
        store.get_topic(&a.topic).await.expect("get a"),
        Some(a.clone())
    );
    assert_eq!(
        store.get_topic(&b.topic).await.expect("get b"),
        Some(b.clone())
    );
    let listed = ours(store.list_topics().await.expect("list"), "crud-");
    assert_eq!(listed, vec![a.clone(), b.clone()], "list_topics");

    // put replaces every field.
    let a2 = TopicConfig {
        read_queue_nums: 16,
        write_queue_nums: 12,
        perm: 2,
        topic_filter_type: "MULTI_TAG".into(),
        topic_sys_flag: 0,
        order: true,
        retention_hours: Some(1),
        ..a.clone()
    };
    store.put_topic(&a2).await.expect("replace a");
    assert_eq!(store.get_topic(&a.topic).await.expect("get a2"), Some(a2));

    store.delete_topic(&a.topic).await.expect("delete a");
    assert_eq!(store.get_topic(&a.topic).await.expect("get deleted"), None);
    let listed = ours(store.list_topics().await.expect("list"), "crud-");
    assert_eq!(listed, vec![b.clone()], "list after delete");
    store
        .delete_topic(&a.topic)
        .await
        .expect("deleting a missing topic is a no-op");
    assert_eq!(store.get_topic(&b.topic).await.expect("get b"), Some(b));
}

pub(super) async fn create_topic_if_absent_returns_the_stored_config(store: &dyn MetaStore) {
    let first = topic("cia-topic", 4, false, Some(72));
    let created = store.create_topic_if_absent(&first).await.expect("create");
    assert_eq!(created, first, "created config is returned");

    let second = topic("cia-topic", 16, true, None);
    let existing = store
        .create_topic_if_absent(&second)
        .await
        .expect("create again");
    assert_eq!(existing, first, "an existing topic is returned unchanged");
    assert_eq!(
        store.get_topic(&first.topic).await.expect("get"),
        Some(first)
    );
}

pub(super) async fn kv_list_by_namespace(store: &dyn MetaStore) {
    let (ns, other) = ("list-ns", "list-ns-other");
    assert!(store.list_kv(ns).await.expect("list").is_empty(), "unknown");
    store.put_kv(ns, "b", "2").await.expect("put");
    store.put_kv(ns, "a", "1").await.expect("put");
    store.put_kv(ns, "c", "3").await.expect("put");
    store.put_kv(other, "a", "x").await.expect("put other");
    store.put_kv(ns, "b", "22").await.expect("overwrite");
    store.delete_kv(ns, "c").await.expect("delete");
    let kv = |k: &str, v: &str| (k.to_owned(), v.to_owned());
    assert_eq!(
        store.list_kv(ns).await.expect("list"),
        vec![kv("a", "1"), kv("b", "22")],
        "ordered by key, this namespace only, overwrites and deletes applied"
    );
    assert_eq!(
        store.list_kv(other).await.expect("list"),
        vec![kv("a", "x")]
    );
}

pub(super) async fn kv_put_get_delete(store: &dyn MetaStore) {
    let (ns, other) = ("conf-ns", "conf-ns-other");
    assert_eq!(
        store.get_kv(ns, "k").await.expect("get"),
        None,
        "unknown key"
    );
    store.put_kv(ns, "k", "v1").await.expect("put");
    store
        .put_kv(other, "k", "elsewhere")
        .await
        .expect("put other");
    assert_eq!(
        store.get_kv(ns, "k").await.expect("get").as_deref(),
        Some("v1")
    );
    store.put_kv(ns, "k", "v2").await.expect("overwrite");
    assert_eq!(
        store.get_kv(ns, "k").await.expect("get").as_deref(),
        Some("v2")
    );
    assert_eq!(
        store
            .get_kv(other, "k")
            .await
            .expect("get other")
            .as_deref(),
        Some("elsewhere"),
        "namespaces are separate"
    );
    store.delete_kv(ns, "k").await.expect("delete");
    assert_eq!(store.get_kv(ns, "k").await.expect("get deleted"), None);
    store
        .delete_kv(ns, "k")
        .await
        .expect("deleting a missing key is a no-op");
    assert_eq!(
        store
            .get_kv(other, "k")
            .await
            .expect("get other")
            .as_deref(),
        Some("elsewhere"),
        "delete touches one namespace"
    );
}

pub(super) async fn subscription_groups_put_get_list(store: &dyn MetaStore) {
    let g1 = SubscriptionGroupConfig {
        group: ConsumerGroup::new("conf-group-1"),
        consume_enable: true,
        consume_broadcast_enable: false,
        retry_queue_nums: 1,
        retry_max_times: 16,
        details: None,
    };
    let g2 = SubscriptionGroupConfig {
        group: ConsumerGroup::new("conf-group-2"),
        consume_enable: false,
        consume_broadcast_enable: true,
        retry_queue_nums: 3,
        retry_max_times: 5,
        details: Some(r#"{"brokerId":0,"consumeMessageOrderly":true}"#.into()),
    };
    assert_eq!(
        store.get_group(&g1.group).await.expect("get"),
        None,
        "unknown group"
    );
    store.put_group(&g2).await.expect("put g2");
    store.put_group(&g1).await.expect("put g1");
    assert_eq!(
        store.get_group(&g1.group).await.expect("get g1"),
        Some(g1.clone())
    );
    let g1b = SubscriptionGroupConfig {
        consume_enable: false,
        consume_broadcast_enable: true,
        retry_queue_nums: 2,
        retry_max_times: 7,
        details: Some("{}".into()),
        ..g1.clone()
    };
    store.put_group(&g1b).await.expect("replace g1");
    let listed: Vec<_> = store
        .list_groups()
        .await
        .expect("list")
        .into_iter()
        .filter(|g| g.group.as_str().starts_with("conf-group-"))
        .collect();
    assert_eq!(listed, vec![g1b, g2], "list_groups, ordered by name");
}

pub(super) async fn subscription_groups_delete_keeps_offsets_until_asked(store: &dyn MetaStore) {
    let g = SubscriptionGroupConfig {
        group: ConsumerGroup::new("del-group"),
        consume_enable: true,
        consume_broadcast_enable: true,
        retry_queue_nums: 1,
        retry_max_times: 16,
        details: None,
    };
    let other = ConsumerGroup::new("del-other");
    store.put_group(&g).await.expect("put");
    store
        .commit_consumer_offsets(&[
            offset(&g.group, 1, "del-t", 0, 7),
            offset(&g.group, 1, "del-t", 1, 8),
            offset(&g.group, 2, "del-t", 0, 9),
            offset(&g.group, 1, "del-u", 0, 1),
            offset(&other, 1, "del-t", 3, 4),
        ])
        .await
        .expect("commit");
    assert_eq!(
        store
            .offset_groups(ShardId(1), &Topic::new("del-t"))
            .await
            .expect("groups of del-t"),
        vec![g.group.clone(), other.clone()],
        "offset_groups: distinct, ordered by name"
    );
    assert_eq!(
        store
            .offset_groups(ShardId(3), &Topic::new("del-t"))
            .await
            .expect("groups on another shard"),
        vec![],
        "offset_groups is per shard"
    );
    assert!(store.delete_group(&g.group).await.expect("delete"));
    assert_eq!(store.get_group(&g.group).await.expect("get"), None);
    assert!(
        !store.delete_group(&g.group).await.expect("delete again"),
        "a missing group is not an error"
    );
    assert_eq!(
        store.group_offsets(&g.group).await.expect("offsets").len(),
        4,
        "deleting the group keeps its offsets"
    );
    assert_eq!(
        store
            .delete_group_offsets(&g.group, ShardId(1))
            .await
            .expect("delete offsets"),
        3
    );
    assert_eq!(
        store.group_offsets(&g.group).await.expect("offsets"),
        vec![offset(&g.group, 2, "del-t", 0, 9)],
        "only the shard's offsets go"
    );
    assert_eq!(
        store.group_offsets(&other).await.expect("other").len(),
        1,
        "other groups keep theirs"
    );
}

fn offset(
    group: &ConsumerGroup,
    shard: u32,
    topic: &str,
    queue_id: i32,
    at: i64,
) -> ConsumerOffset {
    ConsumerOffset {
        group: group.clone(),
        queue: queue(shard, topic, queue_id),
        offset: QueueOffset(at),
    }
}

pub(super) async fn consumer_offsets_upsert_and_read(store: &dyn MetaStore) {
    let g1 = ConsumerGroup::new("off-g1");
    let g2 = ConsumerGroup::new("off-g2");
    let q = queue(1, "off-t", 0);
    assert_eq!(
        store.consumer_offset(&g1, &q).await.expect("get"),
        None,
        "nothing committed"
    );
    store
        .commit_consumer_offsets(&[])
        .await
        .expect("empty commit is a no-op");

    store
        .commit_consumer_offsets(&[
            offset(&g1, 1, "off-t", 0, 10),
            offset(&g1, 0, "off-t", 1, 20),
            offset(&g2, 1, "off-t", 0, 30),
        ])
        .await
        .expect("commit");
    assert_eq!(
        store.consumer_offset(&g1, &q).await.expect("get"),
        Some(QueueOffset(10))
    );
    assert_eq!(
        store.consumer_offset(&g2, &q).await.expect("get"),
        Some(QueueOffset(30))
    );

    // Upsert: one existing row moves (also backwards, as RocketMQ allows), one row is new.
    store
        .commit_consumer_offsets(&[offset(&g1, 1, "off-t", 0, 4), offset(&g1, 1, "off-u", 2, 5)])
        .await
        .expect("commit again");
    assert_eq!(
        store.consumer_offset(&g1, &q).await.expect("get"),
        Some(QueueOffset(4))
    );
    assert_eq!(
        store.group_offsets(&g1).await.expect("group offsets"),
        vec![
            offset(&g1, 0, "off-t", 1, 20),
            offset(&g1, 1, "off-t", 0, 4),
            offset(&g1, 1, "off-u", 2, 5),
        ],
        "group_offsets ordered by shard, topic, queue"
    );
    assert_eq!(
        store.group_offsets(&g2).await.expect("group offsets"),
        vec![offset(&g2, 1, "off-t", 0, 30)],
        "groups are separate"
    );
    assert_eq!(
        store
            .group_offsets(&ConsumerGroup::new("off-none"))
            .await
            .expect("none"),
        vec![]
    );
}

pub(super) async fn consumer_offsets_last_duplicate_wins(store: &dyn MetaStore) {
    let g = ConsumerGroup::new("dup-g");
    store
        .commit_consumer_offsets(&[
            offset(&g, 0, "dup-t", 0, 1),
            offset(&g, 0, "dup-t", 0, 9),
            offset(&g, 0, "dup-t", 0, 5),
        ])
        .await
        .expect("commit duplicates");
    assert_eq!(
        store.group_offsets(&g).await.expect("read"),
        vec![offset(&g, 0, "dup-t", 0, 5)]
    );
}

pub(super) async fn consumer_offsets_large_batch(store: &dyn MetaStore) {
    let g = ConsumerGroup::new("big-g");
    let batch: Vec<_> = (0..1_200)
        .map(|i| offset(&g, 2, "big-t", i, i64::from(i) * 3))
        .collect();
    store
        .commit_consumer_offsets(&batch)
        .await
        .expect("commit 1200 offsets");
    let stored = store.group_offsets(&g).await.expect("read");
    assert_eq!(stored.len(), 1_200, "every offset stored");
    assert_eq!(
        store
            .consumer_offset(&g, &queue(2, "big-t", 1_199))
            .await
            .expect("last"),
        Some(QueueOffset(3_597))
    );
}

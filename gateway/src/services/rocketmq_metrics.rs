//! Per-topic and per-group metrics under the names and labels of RocketMQ 5's own
//! OpenTelemetry metrics (`BrokerMetricsConstant`), built on each scrape from the node's
//! statistics (`node/stats.rs`), so counting costs the send and pull paths nothing more:
//!
//! | family | labels | from |
//! | --- | --- | --- |
//! | `rocketmq_messages_in_total` | topic, is_system | TOPIC_PUT_NUMS |
//! | `rocketmq_throughput_in_total` | topic, is_system | TOPIC_PUT_SIZE (bytes) |
//! | `rocketmq_messages_out_total` | topic, consumer_group, is_retry, is_system | GROUP_GET_NUMS |
//! | `rocketmq_throughput_out_total` | topic, consumer_group, is_retry, is_system | GROUP_GET_SIZE |
//! | `rocketmq_send_to_dlq_messages_total` | topic, consumer_group, is_system | DLQ_PUT_NUMS |
//! | `rocketmq_consumer_lag_messages` | topic, consumer_group, is_retry, is_system | offsets in meta |
//! | `rocketmq_consumer_lag_latency` (ms) | topic, consumer_group, is_retry, is_system | store times |
//!
//!
//! Also `stratus_gateway_send_latency_seconds`, a histogram of the time from a send's
//! arrival to its acknowledgement (durable), in the reference's put-time buckets.
//!
//! Every series of the `rocketmq_*` families also has `cluster`, `node_type="broker"` and `node_id`. Each family exports
//! at most `stats.metrics_label_cap` label sets: the keys first counted keep their own
//! series, later ones are summed into one whose topic (and group) is `__overflow__`, so a
//! series never moves from one label set to another. Lag is computed for the groups that
//! pulled through this node, over the shards it owns.

use std::collections::{BTreeMap, HashMap};
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};

use prometheus::proto::{
    Bucket, Counter, Gauge, Histogram, LabelPair, Metric, MetricFamily, MetricType,
};
use stratus_compat::topic::{RETRY_PREFIX, is_system_topic};
use stratus_compat::types::{ConsumerGroup, QueueId, QueueOffset};
use stratus_meta::QueueKey;

use crate::node::Node;
use crate::node::stats::{
    DLQ_PUT_NUMS, GROUP_GET_NUMS, GROUP_GET_SIZE, TOPIC_PUT_NUMS, TOPIC_PUT_SIZE,
};

/// The label value series past the cap are summed under.
pub(crate) const OVERFLOW: &str = "__overflow__";

fn label(name: &str, value: &str) -> LabelPair {
    let mut l = LabelPair::default();
    l.set_name(name.to_owned());
    l.set_value(value.to_owned());
    l
}

/// The labels of one series: the node's, then `topic` and, when given, `consumer_group`.
fn labels(node: &Node, topic: &str, group: Option<&str>, retry: bool) -> Vec<LabelPair> {
    let mut v = vec![
        label("cluster", &node.config.node.cluster_name),
        label("node_type", "broker"),
        label("node_id", &node.config.node.id),
        label("topic", topic),
    ];
    if let Some(g) = group {
        v.push(label("consumer_group", g));
        if retry {
            v.push(label(
                "is_retry",
                &topic.starts_with(RETRY_PREFIX).to_string(),
            ));
        }
    }
    let system = topic != OVERFLOW && is_system_topic(topic);
    v.push(label("is_system", &system.to_string()));
    v
}

fn family(name: &str, help: &str, kind: MetricType, metrics: Vec<Metric>) -> MetricFamily {
    let mut f = MetricFamily::default();
    f.set_name(name.to_owned());
    f.set_help(help.to_owned());
    f.set_field_type(kind);
    f.set_metric(metrics);
    f
}

/// Splits a `topic@group` key (names cannot hold `@`).
/// (topic, group) of a `topic@group` item key, without its shard (metrics are the node's:
/// a series sums the node's shards).
fn split_key(key: &str) -> (&str, &str) {
    let key = crate::node::stats::unshard_key(key);
    key.split_once('@').unwrap_or((key, ""))
}

/// The values of `name`'s items by series key (topic, group), folded past `cap`.
fn folded(node: &Node, name: &str, grouped: bool, cap: usize) -> BTreeMap<(String, String), u64> {
    let mut out = BTreeMap::new();
    let Some(set) = node.stats.set(name) else {
        return out;
    };
    for (key, item) in set.items() {
        let over = item.ordinal >= cap || key == crate::node::stats::OVERFLOW_KEY;
        let (topic, group) = if grouped {
            split_key(&key)
        } else {
            (crate::node::stats::unshard_key(&key), "")
        };
        let k = if over {
            (
                OVERFLOW.to_owned(),
                if grouped { OVERFLOW } else { "" }.to_owned(),
            )
        } else {
            (topic.to_owned(), group.to_owned())
        };
        *out.entry(k).or_insert(0) += item.value();
    }
    out
}

fn counters(node: &Node, name: &str, grouped: bool, retry: bool, cap: usize) -> Vec<Metric> {
    folded(node, name, grouped, cap)
        .into_iter()
        .map(|((topic, group), v)| {
            let mut m = Metric::from_label(labels(
                node,
                &topic,
                grouped.then_some(group.as_str()),
                retry,
            ));
            let mut c = Counter::default();
            #[allow(clippy::cast_precision_loss)]
            c.set_value(v as f64);
            m.set_counter(c);
            m
        })
        .collect()
}

/// Lag of each (topic, group) that pulled through this node: messages behind and the age
/// of the oldest unconsumed message (ms), over the owned shards' queues with an offset.
async fn lags(node: &Node, cap: usize) -> BTreeMap<(String, String), (i64, i64)> {
    let mut out: BTreeMap<(String, String), (i64, i64)> = BTreeMap::new();
    let Some(set) = node.stats.set(GROUP_GET_NUMS) else {
        return out;
    };
    let mut by_group: HashMap<String, Vec<(String, bool)>> = HashMap::new();
    for (key, item) in set.items() {
        if key == crate::node::stats::OVERFLOW_KEY {
            continue;
        }
        let (topic, group) = split_key(&key);
        by_group
            .entry(group.to_owned())
            .or_default()
            .push((topic.to_owned(), item.ordinal >= cap));
    }
    let owned: Vec<_> = node.shards.all().into_iter().map(|(s, _)| s).collect();
    let now = node.clock.now_ms();
    for (group, topics) in by_group {
        let Ok(offsets) = node
            .meta
            .group_offsets(&ConsumerGroup::new(group.clone()))
            .await
        else {
            continue;
        };
        for o in offsets {
            if !owned.contains(&o.queue.shard) {
                continue;
            }
            let topic = o.queue.topic.to_string();
            let Some((_, over)) = topics.iter().find(|(t, _)| *t == topic) else {
                continue;
            };
            let max = node.bounds(&o.queue).1.0;
            let behind = (max - o.offset.0).max(0);
            let mut age = 0;
            if behind > 0 {
                let at = AtomicI64::new(0);
                let seen = |e: &stratus_segments::format::EntryMeta| {
                    at.store(e.store_ts, Ordering::Relaxed);
                    true
                };
                let queue = QueueKey {
                    shard: o.queue.shard,
                    topic: o.queue.topic.clone(),
                    queue_id: QueueId(o.queue.queue_id.0),
                };
                if node
                    .read(&queue, QueueOffset(o.offset.0), 1, 1, &seen)
                    .await
                    .is_ok()
                {
                    let t = at.load(Ordering::Relaxed);
                    if t > 0 {
                        age = (now - t).max(0);
                    }
                }
            }
            let k = if *over {
                (OVERFLOW.to_owned(), OVERFLOW.to_owned())
            } else {
                (topic, group.clone())
            };
            let e = out.entry(k).or_insert((0, 0));
            e.0 += behind;
            e.1 = e.1.max(age);
        }
    }
    out
}

fn send_latency(node: &Node) -> MetricFamily {
    let (buckets, sum_ms) = node.stats.put_histogram();
    let mut h = Histogram::default();
    let count = buckets.last().map_or(0, |b| b.1);
    h.set_sample_count(count);
    #[allow(clippy::cast_precision_loss)]
    h.set_sample_sum(sum_ms as f64 / 1000.0);
    h.set_bucket(
        buckets
            .iter()
            .filter_map(|(max, n)| {
                let mut b = Bucket::default();
                #[allow(clippy::cast_precision_loss)]
                b.set_upper_bound((*max)? as f64 / 1000.0);
                b.set_cumulative_count(*n);
                Some(b)
            })
            .collect(),
    );
    let mut m = Metric::default();
    m.set_histogram(h);
    family(
        "stratus_gateway_send_latency_seconds",
        "Time from a send's arrival to its durable acknowledgement",
        MetricType::HISTOGRAM,
        vec![m],
    )
}

/// The families, for one scrape.
pub(crate) async fn families(node: &Arc<Node>) -> Vec<MetricFamily> {
    let cap = node.config.stats.metrics_label_cap;
    let n = node.as_ref();
    let mut out = vec![
        family(
            "rocketmq_messages_in_total",
            "Messages stored, by topic",
            MetricType::COUNTER,
            counters(n, TOPIC_PUT_NUMS, false, false, cap),
        ),
        family(
            "rocketmq_throughput_in_total",
            "Message body bytes stored, by topic",
            MetricType::COUNTER,
            counters(n, TOPIC_PUT_SIZE, false, false, cap),
        ),
        family(
            "rocketmq_messages_out_total",
            "Messages delivered to consumers, by topic and group",
            MetricType::COUNTER,
            counters(n, GROUP_GET_NUMS, true, true, cap),
        ),
        family(
            "rocketmq_throughput_out_total",
            "Message bytes delivered to consumers, by topic and group",
            MetricType::COUNTER,
            counters(n, GROUP_GET_SIZE, true, true, cap),
        ),
        family(
            "rocketmq_send_to_dlq_messages_total",
            "Messages moved to a dead-letter topic, by original topic and group",
            MetricType::COUNTER,
            counters(n, DLQ_PUT_NUMS, true, false, cap),
        ),
    ];
    let lag = lags(n, cap).await;
    let gauges = |pick: fn(&(i64, i64)) -> i64| -> Vec<Metric> {
        lag.iter()
            .map(|((topic, group), v)| {
                let mut m = Metric::from_label(labels(n, topic, Some(group), true));
                let mut g = Gauge::default();
                #[allow(clippy::cast_precision_loss)]
                g.set_value(pick(v) as f64);
                m.set_gauge(g);
                m
            })
            .collect()
    };
    out.push(family(
        "rocketmq_consumer_lag_messages",
        "Messages not yet consumed, by topic and group",
        MetricType::GAUGE,
        gauges(|v| v.0),
    ));
    out.push(family(
        "rocketmq_consumer_lag_latency",
        "Age of the oldest unconsumed message in ms, by topic and group",
        MetricType::GAUGE,
        gauges(|v| v.1),
    ));
    out.push(send_latency(n));
    // The text encoder refuses a family without series.
    out.retain(|f| !f.get_metric().is_empty());
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn families_carry_the_reference_names_and_fold_past_the_cap() {
        let t = crate::node::testing::node_with(|s| s.stats.metrics_label_cap = 2).await;
        let s = &t.node.stats;
        s.on_put(stratus_meta::ShardId(0), "A", 3, 30, 0);
        s.on_put(stratus_meta::ShardId(0), "B", 1, 10, 0);
        s.on_put(stratus_meta::ShardId(0), "C", 2, 20, 0);
        s.on_put(stratus_meta::ShardId(0), "D", 5, 50, 0);
        s.on_get(stratus_meta::ShardId(0), "A", "g", 2, 20, 0);
        let f = families(&t.node).await;
        let by_name: HashMap<&str, &MetricFamily> = f.iter().map(|f| (f.name(), f)).collect();
        let inn = by_name["rocketmq_messages_in_total"];
        let series: BTreeMap<String, f64> = inn
            .get_metric()
            .iter()
            .map(|m| {
                let topic = m
                    .get_label()
                    .iter()
                    .find(|l| l.name() == "topic")
                    .unwrap()
                    .value()
                    .to_owned();
                (topic, m.get_counter().get_value())
            })
            .collect();
        assert_eq!(series.len(), 3, "{series:?}");
        assert_eq!(series["A"], 3.0);
        assert_eq!(series[OVERFLOW], 7.0);
        let out = by_name["rocketmq_messages_out_total"].get_metric();
        let names: Vec<&str> = out[0].get_label().iter().map(LabelPair::name).collect();
        assert_eq!(
            names,
            [
                "cluster",
                "node_type",
                "node_id",
                "topic",
                "consumer_group",
                "is_retry",
                "is_system"
            ]
        );
        // No lag (no offsets) and nothing sent to a DLQ: those families are left out,
        // which the text encoder requires.
        assert!(!by_name.contains_key("rocketmq_consumer_lag_messages"));
        assert!(!by_name.contains_key("rocketmq_send_to_dlq_messages_total"));
        let mut text = Vec::new();
        prometheus::Encoder::encode(&prometheus::TextEncoder::new(), &f, &mut text).unwrap();
        let text = String::from_utf8(text).unwrap();
        assert!(
            text.contains("stratus_gateway_send_latency_seconds_bucket{le=\"0.01\"} 4"),
            "{text}"
        );
        assert!(
            text.contains("stratus_gateway_send_latency_seconds_count 4"),
            "{text}"
        );
    }
}

//! Statistics for operators: VIEW_BROKER_STATS_DATA (315), GET_CONSUME_STATS (208),
//! GET_BROKER_CONSUME_STATS (317), GET_ALL_PRODUCER_INFO (328) and GET_BROKER_RUNTIME_INFO
//! (28), from the node's counters (`node/stats.rs`). Mirrors the same codes of
//! `AdminBrokerProcessor`.
//!
//! Per-topic and per-group figures (315, consume rates) are the asked shard's own, as each
//! shard is a broker; the runtime figures of 28 (store rates, day totals) are the node's,
//! so with several shards on one node each shard's row shows its node's.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;
use std::sync::atomic::{AtomicI64, Ordering};

use serde::Serialize;
use stratus_compat::command::RemotingCommand;
use stratus_compat::request::broker_name;
use stratus_compat::request::lock::MessageQueue;
use stratus_compat::request::stats::{
    BrokerStatsData, BrokerStatsItem, ConsumeStats, ConsumeStatsList,
    GetConsumeStatsInBrokerHeader, GetConsumeStatsRequestHeader, OffsetWrapper, ProducerInfo,
    ProducerTableInfo, ViewBrokerStatsDataRequestHeader,
};
use stratus_compat::topic::SCHEDULE_TOPIC;
use stratus_compat::types::{ConsumerGroup, QueueId, QueueOffset, Topic};
use stratus_meta::{QueueKey, ShardId};

use super::json_body;
use crate::error::{GatewayError, Result};
use crate::node::shards::{shard_addr, shard_name};
use crate::node::stats::{GROUP_GET_NUMS, Snapshot, group_key};
use crate::remoting::Remoting;
use crate::remoting::dispatch::success;
use crate::remoting::net::Channel;

fn item(s: Snapshot) -> BrokerStatsItem {
    BrokerStatsItem {
        sum: s.sum,
        tps: s.tps,
        avgpt: s.avgpt,
    }
}

/// VIEW_BROKER_STATS_DATA (315): one counter's minute, hour and day windows.
pub(crate) fn view_broker_stats_data(
    rmq: &Arc<Remoting>,
    ch: &Channel,
    cmd: &RemotingCommand,
) -> Result<RemotingCommand> {
    let h = ViewBrokerStatsDataRequestHeader::from_command(cmd)?;
    // The asked broker's own figures: the shard of the port it came in on.
    let shard = rmq.node.shards.require(None, ch.shard)?;
    let it = rmq
        .node
        .stats
        .item(&h.stats_name, shard, &h.stats_key)
        .ok_or_else(|| GatewayError::StatsNotExist {
            name: h.stats_name.clone(),
            key: h.stats_key.clone(),
        })?;
    let mut resp = success();
    resp.body = json_body(&BrokerStatsData {
        stats_minute: item(it.minute()),
        stats_hour: item(it.hour()),
        stats_day: item(it.day()),
    })?;
    Ok(resp)
}

/// The group's get rate on `topic` over the last minute (`tpsGroupGetNums`).
fn consume_tps(rmq: &Remoting, shard: ShardId, group: &str, topic: &str) -> f64 {
    rmq.node
        .stats
        .item(GROUP_GET_NUMS, shard, &group_key(topic, group))
        .map_or(0.0, |i| i.minute().tps)
}

/// Topics `group` has committed offsets for on `shard` (`whichTopicByConsumer`).
async fn topics_with_offsets(rmq: &Remoting, group: &str, shard: ShardId) -> Result<Vec<String>> {
    let offsets = rmq
        .node
        .meta
        .group_offsets(&ConsumerGroup::new(group.to_owned()))
        .await?;
    let topics: BTreeSet<String> = offsets
        .into_iter()
        .filter(|o| o.queue.shard == shard)
        .map(|o| o.queue.topic.to_string())
        .collect();
    Ok(topics.into_iter().collect())
}

/// The store time of the message at `offset` of `queue` (0 when none is there).
async fn store_time_at(rmq: &Remoting, queue: &QueueKey, offset: i64) -> Result<i64> {
    let (min, max) = rmq.node.bounds(queue);
    if offset < min.0 || offset >= max.0 {
        return Ok(0);
    }
    let at = AtomicI64::new(0);
    let seen = |e: &stratus_segments::format::EntryMeta| {
        at.store(e.store_ts, Ordering::Relaxed);
        true
    };
    rmq.node
        .read(queue, QueueOffset(offset), 1, 1, &seen)
        .await?;
    Ok(at.load(Ordering::Relaxed))
}

/// One topic's `ConsumeStats` entries for `group` on `shard`, over `queues` queues.
async fn topic_stats(
    rmq: &Remoting,
    group: &str,
    topic: &str,
    shard: ShardId,
    queues: i32,
    out: &mut ConsumeStats,
) -> Result<()> {
    let g = ConsumerGroup::new(group.to_owned());
    for i in 0..queues {
        let queue = QueueKey {
            shard,
            topic: Topic::new(topic.to_owned()),
            queue_id: QueueId(i),
        };
        let broker_offset = rmq.node.bounds(&queue).1.0.max(0);
        let consumer_offset = rmq
            .node
            .committed_offset(&g, &queue)
            .await?
            .map_or(0, |o| o.0)
            .max(0);
        // The reference's store time of the last consumed message (consumer offset − 1).
        let last_timestamp = if consumer_offset > 0 {
            store_time_at(rmq, &queue, consumer_offset - 1).await?
        } else {
            0
        };
        out.offset_table.push((
            MessageQueue {
                broker_name: shard_name(shard),
                queue_id: i,
                topic: topic.to_owned(),
            },
            OffsetWrapper {
                broker_offset,
                consumer_offset,
                // Pull offsets are not tracked apart: the committed offset stands for it.
                pull_offset: consumer_offset,
                last_timestamp,
            },
        ));
    }
    out.consume_tps += consume_tps(rmq, shard, group, topic);
    Ok(())
}

/// Drops the topics a registered group does not subscribe (when it subscribes any).
fn subscribed(rmq: &Remoting, group: &str, topics: Vec<String>) -> Vec<String> {
    if rmq.registry.subscription_count(group) == 0 {
        return topics;
    }
    topics
        .into_iter()
        .filter(|t| matches!(rmq.registry.subscription(group, t), Ok(Some(_))))
        .collect()
}

/// GET_CONSUME_STATS (208): per queue of the asked shard, the queue's max offset, the
/// group's offset and the store time of the last consumed message; the group's get rate.
/// A group without offsets gets an empty table (mqadmin then says it consumed nothing).
pub(crate) async fn consume_stats(
    rmq: &Arc<Remoting>,
    ch: &Channel,
    cmd: &RemotingCommand,
) -> Result<RemotingCommand> {
    let h = GetConsumeStatsRequestHeader::from_command(cmd)?;
    let shard = rmq
        .node
        .shards
        .require(broker_name(cmd).as_deref(), ch.shard)?;
    let listed = h.topics();
    let topics = if !listed.is_empty() {
        listed
    } else {
        let t = match &h.topic {
            Some(t) => vec![t.clone()],
            None => topics_with_offsets(rmq, &h.consumer_group, shard).await?,
        };
        subscribed(rmq, &h.consumer_group, t)
    };
    let mut stats = ConsumeStats::default();
    for topic in topics {
        let Some(cfg) = rmq.node.topics.get(&topic) else {
            continue;
        };
        topic_stats(
            rmq,
            &h.consumer_group,
            &topic,
            shard,
            cfg.read_queue_nums,
            &mut stats,
        )
        .await?;
    }
    let mut resp = success();
    resp.body = stats.encode().into_bytes().into();
    Ok(resp)
}

/// GET_BROKER_CONSUME_STATS (317): `ConsumeStats` of every group on the asked shard, by
/// group (subscription groups in meta and groups with live consumers).
pub(crate) async fn broker_consume_stats(
    rmq: &Arc<Remoting>,
    ch: &Channel,
    cmd: &RemotingCommand,
) -> Result<RemotingCommand> {
    let h = GetConsumeStatsInBrokerHeader::from_command(cmd);
    let shard = rmq
        .node
        .shards
        .require(broker_name(cmd).as_deref(), ch.shard)?;
    let mut groups: BTreeSet<String> = rmq
        .node
        .meta
        .list_groups()
        .await?
        .into_iter()
        .map(|g| g.group.to_string())
        .collect();
    groups.extend(rmq.registry.consumer_groups());
    let mut list = ConsumeStatsList {
        broker_addr: shard_addr(&rmq.node.advertised, shard).unwrap_or_default(),
        ..ConsumeStatsList::default()
    };
    for group in groups {
        let topics = subscribed(rmq, &group, topics_with_offsets(rmq, &group, shard).await?);
        let mut per_topic = Vec::new();
        for topic in topics {
            let Some(cfg) = rmq.node.topics.get(&topic) else {
                continue;
            };
            if h.is_order && !cfg.order {
                continue;
            }
            let mut cs = ConsumeStats::default();
            topic_stats(rmq, &group, &topic, shard, cfg.write_queue_nums, &mut cs).await?;
            list.total_diff += cs.total_diff();
            list.total_inflight_diff += cs.inflight_diff();
            per_topic.push(cs);
        }
        list.consume_stats_list
            .push(BTreeMap::from([(group, per_topic)]));
    }
    let mut resp = success();
    resp.body = list.encode().into_bytes().into();
    Ok(resp)
}

/// GET_ALL_PRODUCER_INFO (328): the producers registered on this node, by group.
pub(crate) fn all_producer_info(rmq: &Arc<Remoting>) -> Result<RemotingCommand> {
    let mut table = ProducerTableInfo::default();
    for p in rmq.registry.producers() {
        table.data.entry(p.group).or_default().push(ProducerInfo {
            client_id: p.client_id,
            remote_ip: p.peer.to_string(),
            language: p.language.name().to_owned(),
            version: p.version,
            last_update_timestamp: p.last_heartbeat_ms,
        });
    }
    for v in table.data.values_mut() {
        v.sort_by(|a, b| a.client_id.cmp(&b.client_id));
    }
    let mut resp = success();
    resp.body = json_body(&table)?;
    Ok(resp)
}

/// A double as Java's `Double.toString` writes it (`0.0`, `12.5`, `1.0E7`).
pub(crate) fn java_double(v: f64) -> String {
    if !v.is_finite() {
        return if v.is_nan() {
            "NaN".into()
        } else if v > 0.0 {
            "Infinity".into()
        } else {
            "-Infinity".into()
        };
    }
    let a = v.abs();
    if a != 0.0 && !(1e-3..1e7).contains(&a) {
        let t = format!("{v:e}");
        let (m, e) = t.split_once('e').unwrap_or((&t, "0"));
        let m = if m.contains('.') {
            m.to_owned()
        } else {
            format!("{m}.0")
        };
        return format!("{m}E{e}");
    }
    let t = format!("{v}");
    if t.contains('.') { t } else { format!("{t}.0") }
}

/// `MixAll.humanReadableByteCount(bytes, false)`.
fn human_bytes(bytes: u64) -> String {
    if bytes < 1024 {
        return format!("{bytes} B");
    }
    let mut exp = 0;
    #[allow(clippy::cast_precision_loss)]
    let mut v = bytes as f64;
    while v >= 1024.0 && exp < 6 {
        v /= 1024.0;
        exp += 1;
    }
    let pre = ["K", "M", "G", "T", "P", "E"][exp - 1];
    format!("{v:.1} {pre}iB")
}

/// Total and free bytes of the filesystem holding `dir`.
fn disk(dir: &std::path::Path) -> Option<(u64, u64)> {
    let s = rustix::fs::statvfs(dir).ok()?;
    Some((
        s.f_blocks.saturating_mul(s.f_frsize),
        s.f_bfree.saturating_mul(s.f_frsize),
    ))
}

fn three(t: [f64; 3]) -> String {
    t.map(java_double).join(" ")
}

#[derive(Serialize)]
struct KvTable {
    table: BTreeMap<String, String>,
}

/// Bounds the queues looked at for `earliestMessageTimeStamp`.
const EARLIEST_SCAN_QUEUES: usize = 1024;

/// The oldest store time of a message still kept on the owned shards (user topics and
/// retry topics, up to [`EARLIEST_SCAN_QUEUES`] queues); 0 with none.
async fn earliest_message_time(rmq: &Remoting) -> Result<i64> {
    let mut earliest = 0;
    let mut scanned = 0;
    for (shard, _) in rmq.node.shards.all() {
        for cfg in rmq.node.topics.all() {
            for q in 0..cfg.read_queue_nums.max(cfg.write_queue_nums) {
                if scanned >= EARLIEST_SCAN_QUEUES {
                    return Ok(earliest);
                }
                scanned += 1;
                let queue = QueueKey {
                    shard,
                    topic: cfg.topic.clone(),
                    queue_id: QueueId(q),
                };
                let min = rmq.node.bounds(&queue).0.0;
                let t = store_time_at(rmq, &queue, min).await?;
                if t > 0 && (earliest == 0 || t < earliest) {
                    earliest = t;
                }
            }
        }
    }
    Ok(earliest)
}

/// GET_BROKER_RUNTIME_INFO (28): the reference's key set (`prepareRuntimeInfo`,
/// `StoreStatsService#getRuntimeInfo`, `DefaultMessageStore#getRuntimeInfo`) with the
/// node's figures. Also
/// `getTransferedTps`, the key 4.x tools read.
pub(crate) async fn runtime_info(
    rmq: &Arc<Remoting>,
    ch: &Channel,
    cmd: &RemotingCommand,
) -> Result<RemotingCommand> {
    let node = &rmq.node;
    let shard = node.shards.resolve(broker_name(cmd).as_deref(), ch.shard);
    let v = node.stats.store_view();
    let now = node.clock.now_ms();
    let mut t = BTreeMap::new();
    let mut put = |k: &str, val: String| {
        t.insert(k.to_owned(), val);
    };
    // StoreStatsService
    put("bootTimestamp", node.stats.boot_ms.to_string());
    let up = (now - node.stats.boot_ms).max(0) / 1000;
    put(
        "runtime",
        format!(
            "[ {} days, {} hours, {} minutes, {} seconds ]",
            up / 86_400,
            up % 86_400 / 3600,
            up % 3600 / 60,
            up % 60
        ),
    );
    put("putMessageEntireTimeMax", v.put_max_ms.to_string());
    put("putMessageTimesTotal", v.put_times.max(1).to_string());
    put("putMessageFailedTimes", v.put_failed.to_string());
    put("putMessageSizeTotal", v.put_bytes.to_string());
    put("putMessageDistributeTime", node.stats.put_distribution());
    #[allow(clippy::cast_precision_loss)]
    let avg = v.put_bytes as f64 / v.put_times.max(1) as f64;
    put("putMessageAverageSize", java_double(avg));
    put("dispatchMaxBuffer", "0".into());
    put("getMessageEntireTimeMax", v.get_max_ms.to_string());
    put("putTps", three(v.put_tps));
    put("getFoundTps", three(v.get_found_tps));
    put("getMissTps", three(v.get_miss_tps));
    let total = [0, 1, 2].map(|i| v.get_found_tps[i] + v.get_miss_tps[i]);
    put("getTotalTps", three(total));
    put("getTransferredTps", three(v.get_transferred_tps));
    put("getTransferedTps", three(v.get_transferred_tps));
    put(
        "putLatency99",
        format!("{:.2}", node.stats.put_latency(0.99)),
    );
    put(
        "putLatency999",
        format!("{:.2}", node.stats.put_latency(0.999)),
    );
    // DefaultMessageStore: the disk of the object store directory (file://) or of the
    // data directory (the object store itself, s3://, has no capacity to run out of).
    let dir = match &node.config.object_store {
        crate::config::ObjectStoreUrl::File(d) => std::path::PathBuf::from(d),
        _ => node.config.node.data_dir.clone(),
    };
    match disk(&dir) {
        Some((total, free)) => {
            #[allow(clippy::cast_precision_loss)]
            let ratio = if total > 0 {
                total.saturating_sub(free) as f64 / total as f64
            } else {
                0.0
            };
            put("commitLogDiskRatio", java_double(ratio));
            put(
                &format!("commitLogDiskRatio_{}", dir.display()),
                java_double(ratio),
            );
            put("consumeQueueDiskRatio", java_double(ratio));
            put(
                "commitLogDirCapacity",
                format!(
                    "Total : {}, Free : {}.",
                    human_bytes(total),
                    human_bytes(free)
                ),
            );
        }
        None => {
            put("commitLogDiskRatio", "-1.0".into());
            put("consumeQueueDiskRatio", "-1.0".into());
        }
    }
    let end = match shard {
        Some(s) => node.meta.shard_state(s).await?.commit_log_end.0,
        None => 0,
    };
    put("commitLogMinOffset", "0".into());
    put("commitLogMaxOffset", end.to_string());
    // ScheduleMessageService: each level's delivered offset and its queue's max.
    if let Some(shard) = shard {
        for (level, delivered) in node.meta.schedule_progress(shard).await? {
            let queue = QueueKey {
                shard,
                topic: Topic::new(SCHEDULE_TOPIC),
                queue_id: QueueId(level - 1),
            };
            put(
                &format!("scheduleMessageOffset_{level}"),
                format!("{},{}", delivered.0, node.bounds(&queue).1.0),
            );
        }
    }
    // AdminBrokerProcessor
    put("brokerActive", "true".into());
    put("brokerVersionDesc", "V5_3_3".into());
    put(
        "brokerVersion",
        stratus_compat::command::SERVER_VERSION.to_string(),
    );
    put(
        "msgPutTotalYesterdayMorning",
        v.put_yesterday_morning.to_string(),
    );
    put("msgPutTotalTodayMorning", v.put_today_morning.to_string());
    put("msgPutTotalTodayNow", v.put_today_now.to_string());
    put(
        "msgGetTotalYesterdayMorning",
        v.get_yesterday_morning.to_string(),
    );
    put("msgGetTotalTodayMorning", v.get_today_morning.to_string());
    put("msgGetTotalTodayNow", v.get_today_now.to_string());
    put("dispatchBehindBytes", "0".into());
    put("pageCacheLockTimeMills", "0".into());
    put(
        "earliestMessageTimeStamp",
        earliest_message_time(rmq).await?.to_string(),
    );
    put("startAcceptSendRequestTimeStamp", "0".into());
    for k in ["timerReadBehind", "timerOffsetBehind", "timerCongestNum"] {
        put(k, "0".into());
    }
    put("timerEnqueueTps", "0.0".into());
    put("timerDequeueTps", "0.0".into());
    put("remainTransientStoreBufferNumbs", "0".into());
    let buffered = u64::try_from(stratus_segments::metrics::BUFFERED_BYTES.get()).unwrap_or(0);
    put("remainHowManyDataToFlush", human_bytes(buffered));
    // Stratus has no queue in front of its processors (a connection at its in-flight
    // limit is simply not read): the queues are empty, their capacity the node's limit.
    let capacity = node.config.limits.max_in_flight.to_string();
    for pool in ["send", "pull", "litePull", "query", "ack"] {
        put(&format!("{pool}ThreadPoolQueueSize"), "0".into());
        put(&format!("{pool}ThreadPoolQueueCapacity"), capacity.clone());
        put(
            &format!("{pool}ThreadPoolQueueHeadWaitTimeMills"),
            "0".into(),
        );
    }
    put("EndTransactionQueueSize", "0".into());
    put("EndTransactionThreadPoolQueueCapacity", capacity);
    let mut resp = success();
    resp.body = json_body(&KvTable { table: t })?;
    Ok(resp)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn doubles_print_as_java_prints_them() {
        assert_eq!(java_double(0.0), "0.0");
        assert_eq!(java_double(12.5), "12.5");
        assert_eq!(java_double(3.0), "3.0");
        assert_eq!(java_double(1.0 / 3.0), "0.3333333333333333");
        assert_eq!(java_double(1e7), "1.0E7");
        assert_eq!(java_double(0.0001), "1.0E-4");
        assert_eq!(human_bytes(10), "10 B");
        assert_eq!(human_bytes(1536), "1.5 KiB");
        assert_eq!(human_bytes(3 * 1024 * 1024), "3.0 MiB");
    }
}

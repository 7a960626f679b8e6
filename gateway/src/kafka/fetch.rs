//! Fetch and ListOffsets.
//!
//! A fetch reads each partition's queue from the offset asked (a Kafka offset is the queue
//! offset) and answers one uncompressed record batch per partition, built from the stored
//! messages. With less than `min_bytes` found it waits, up to `max_wait_ms`, for any of the
//! partitions' committed end to move (the queue watches RocketMQ's long polls use, within
//! the node's parked-wait budget) and reads once more. No transaction is ever open inside
//! a queue, so the last stable offset is the high watermark under both isolation levels.
//! Fetch sessions (KIP-227) are declined: every answer has session id 0 and the client
//! sends full requests.

use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::fetch_response::{FetchableTopicResponse, PartitionData};
use kafka_protocol::messages::list_offsets_response::{
    ListOffsetsPartitionResponse, ListOffsetsTopicResponse,
};
use kafka_protocol::messages::*;
use stratus_compat::kafka::compression::Compression;
use stratus_compat::kafka::records::BatchBuilder;
use stratus_compat::message::MessageExt;
use stratus_compat::topic::PERM_READ;
use stratus_compat::types::QueueOffset;
use stratus_meta::QueueKey;

use super::convert::from_stored;
use super::dispatch::Ctx;
use super::{Kafka, Partition, partition_place};

/// Most messages one partition's answer holds.
const MAX_MESSAGES: usize = 10_000;

/// A partition a fetch or list may read: its queue, or the Kafka error.
fn resolve(
    kafka: &Kafka,
    topic: &str,
    partition: i32,
    leader_epoch: i32,
) -> Result<(QueueKey, Partition), i16> {
    let Some(cfg) = kafka
        .node
        .topics
        .get(topic)
        .filter(|_| super::metadata::visible(topic))
    else {
        return Err(ResponseError::UnknownTopicOrPartition.code());
    };
    if cfg.perm & PERM_READ == 0 {
        return Err(ResponseError::TopicAuthorizationFailed.code());
    }
    let Some(place) =
        partition_place(partition, kafka.shards()).filter(|p| p.queue.0 < cfg.read_queue_nums)
    else {
        return Err(ResponseError::UnknownTopicOrPartition.code());
    };
    let Some(epoch) = kafka.node.shards.epoch(place.shard) else {
        return Err(ResponseError::NotLeaderOrFollower.code());
    };
    let epoch = i32::try_from(epoch.0).unwrap_or(i32::MAX);
    if leader_epoch >= 0 && leader_epoch < epoch {
        return Err(ResponseError::FencedLeaderEpoch.code());
    }
    if leader_epoch > epoch {
        return Err(ResponseError::UnknownLeaderEpoch.code());
    }
    Ok((kafka.queue_key(topic, place), place))
}

/// One partition's records from `offset`, as a batch; `Err` is a Kafka code.
async fn read_partition(
    kafka: &Kafka,
    queue: &QueueKey,
    offset: i64,
    max_bytes: usize,
) -> Result<(Option<Bytes>, usize), i16> {
    let (min, max) = kafka.node.bounds(queue);
    if offset < min.0 || offset > max.0 {
        return Err(ResponseError::OffsetOutOfRange.code());
    }
    if offset == max.0 {
        return Ok((None, 0));
    }
    let batch = kafka
        .node
        .read(
            queue,
            QueueOffset(offset),
            MAX_MESSAGES,
            max_bytes.max(1),
            &|_| true,
        )
        .await
        .map_err(|e| super::codes::segment(&e))?;
    if batch.messages.is_empty() {
        return Ok((None, 0));
    }
    let mut builder: Option<BatchBuilder> = None;
    for raw in batch.messages {
        let m = MessageExt::view(&raw).map_err(|_| ResponseError::CorruptMessage.code())?;
        let v = from_stored(&m);
        let bb = builder
            .get_or_insert_with(|| BatchBuilder::new(v.offset, v.timestamp, Compression::None));
        if bb
            .push(
                v.offset,
                v.timestamp,
                v.key.as_deref(),
                v.value.as_deref(),
                &v.headers,
            )
            .is_err()
        {
            break;
        }
    }
    let Some(builder) = builder else {
        return Ok((None, 0));
    };
    let bytes = builder
        .finish()
        .map_err(|_| ResponseError::UnknownServerError.code())?;
    let n = bytes.len();
    Ok((Some(bytes), n))
}

fn bounds_of(kafka: &Kafka, queue: &QueueKey) -> (i64, i64) {
    let (min, max) = kafka.node.bounds(queue);
    (min.0, max.0)
}

/// Fetch.
pub(crate) async fn fetch(kafka: &Arc<Kafka>, ctx: &Ctx, req: FetchRequest) -> FetchResponse {
    let max_total = usize::try_from(req.max_bytes.max(1))
        .unwrap_or(usize::MAX)
        .min(kafka.node.config.kafka.max_fetch_bytes.as_usize());
    let min_bytes = usize::try_from(req.min_bytes.max(0)).unwrap_or(0);
    let mut waited = false;
    loop {
        let mut resp = FetchResponse::default();
        let mut total = 0usize;
        let mut watch: Vec<(QueueKey, i64)> = Vec::new();
        for t in &req.topics {
            let name = t.topic.as_str().to_owned();
            let mut tr = FetchableTopicResponse::default();
            tr.topic = t.topic.clone();
            tr.topic_id = t.topic_id;
            for p in &t.partitions {
                let mut pd = PartitionData::default();
                pd.partition_index = p.partition;
                pd.high_watermark = -1;
                pd.last_stable_offset = -1;
                pd.log_start_offset = -1;
                pd.preferred_read_replica = BrokerId(-1);
                match resolve(kafka, &name, p.partition, p.current_leader_epoch) {
                    Err(code) => pd.error_code = code,
                    Ok((queue, _)) => {
                        let budget = usize::try_from(p.partition_max_bytes.max(1))
                            .unwrap_or(usize::MAX)
                            .min(max_total.saturating_sub(total).max(1));
                        let read = if total > 0 && total >= max_total {
                            Ok((None, 0))
                        } else {
                            read_partition(kafka, &queue, p.fetch_offset, budget).await
                        };
                        let (lo, hi) = bounds_of(kafka, &queue);
                        pd.high_watermark = hi;
                        pd.last_stable_offset = hi;
                        pd.log_start_offset = lo;
                        match read {
                            Ok((records, n)) => {
                                if records.is_none() {
                                    watch.push((queue, p.fetch_offset));
                                }
                                pd.records = records;
                                total += n;
                            }
                            Err(code) => pd.error_code = code,
                        }
                    }
                }
                tr.partitions.push(pd);
            }
            resp.responses.push(tr);
        }
        if waited || total >= min_bytes || req.max_wait_ms <= 0 || watch.is_empty() {
            if ctx.version >= 7 {
                resp.session_id = 0;
            }
            return resp;
        }
        // Nothing (or too little) yet: wait for any watched queue to grow, then read once more.
        let Some(_slot) = kafka.node.try_park() else {
            return resp;
        };
        let hold = Duration::from_millis(u64::try_from(req.max_wait_ms).unwrap_or(0))
            .min(kafka.node.config.broker.max_suspend);
        let waits = watch.iter().map(|(q, off)| {
            let closed = ctx.conn.closed.clone();
            Box::pin(async move {
                kafka
                    .node
                    .wait_past(q, QueueOffset(*off), hold, async move {
                        closed.cancelled().await;
                    })
                    .await
            })
        });
        let (outcome, _, _) = futures::future::select_all(waits).await;
        if outcome == crate::node::queues::Waited::Abandoned {
            return resp;
        }
        waited = true;
    }
}

/// ListOffsets: latest (-1), earliest (-2 and -4), max timestamp (-3) or the first offset
/// stored at or after a time (by store time, so "approximately" the record time).
pub(crate) async fn list_offsets(
    kafka: &Arc<Kafka>,
    _ctx: &Ctx,
    req: ListOffsetsRequest,
) -> ListOffsetsResponse {
    let mut resp = ListOffsetsResponse::default();
    for t in req.topics {
        let name = t.name.as_str().to_owned();
        let mut tr = ListOffsetsTopicResponse::default();
        tr.name = t.name.clone();
        for p in t.partitions {
            let mut pr = ListOffsetsPartitionResponse::default();
            pr.partition_index = p.partition_index;
            pr.timestamp = -1;
            pr.offset = -1;
            pr.leader_epoch = -1;
            match resolve(kafka, &name, p.partition_index, p.current_leader_epoch) {
                Err(code) => pr.error_code = code,
                Ok((queue, place)) => {
                    pr.leader_epoch = kafka.shard_epoch(place.shard);
                    let (lo, hi) = bounds_of(kafka, &queue);
                    match p.timestamp {
                        -1 => pr.offset = hi,
                        -2 | -4 => pr.offset = lo,
                        -3 => {
                            if hi > lo {
                                pr.offset = hi - 1;
                                pr.timestamp =
                                    timestamp_at(kafka, &queue, hi - 1).await.unwrap_or(-1);
                            }
                        }
                        ts if ts >= 0 => match kafka
                            .node
                            .reader
                            .search_offset_by_time(&queue, ts, false)
                            .await
                        {
                            Ok(off) if off.0 < hi => {
                                pr.offset = off.0;
                                pr.timestamp =
                                    timestamp_at(kafka, &queue, off.0).await.unwrap_or(ts);
                            }
                            Ok(_) => {}
                            Err(e) => pr.error_code = super::codes::segment(&e),
                        },
                        _ => pr.error_code = ResponseError::InvalidRequest.code(),
                    }
                }
            }
            tr.partitions.push(pr);
        }
        resp.topics.push(tr);
    }
    resp
}

async fn timestamp_at(kafka: &Kafka, queue: &QueueKey, offset: i64) -> Option<i64> {
    let batch = kafka
        .node
        .read(queue, QueueOffset(offset), 1, 1, &|_| true)
        .await
        .ok()?;
    let raw = batch.messages.into_iter().next()?;
    MessageExt::view(&raw).ok().map(|m| m.born_timestamp)
}

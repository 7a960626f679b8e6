//! OffsetCommit and OffsetFetch on the core's consumer offsets: a Kafka group and a
//! RocketMQ consumer group of the same name share one record per queue, with the same
//! meaning (the next offset to consume), so either protocol resumes where the other
//! stopped and both admin views show the same lag.
//!
//! Not kept: the commit's metadata string (answered empty) and leader epoch (answered -1).

use std::sync::Arc;

use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::offset_commit_response::{
    OffsetCommitResponsePartition, OffsetCommitResponseTopic,
};
use kafka_protocol::messages::offset_fetch_response::{
    OffsetFetchResponseGroup, OffsetFetchResponsePartition, OffsetFetchResponsePartitions,
    OffsetFetchResponseTopic, OffsetFetchResponseTopics,
};
use kafka_protocol::messages::*;
use stratus_compat::types::{ConsumerGroup, QueueOffset};
use stratus_meta::ConsumerOffset;

use super::dispatch::{Ctx, sb};
use super::metadata::find_topic;
use super::{Kafka, partition_index, partition_place};

/// OffsetCommit.
pub(crate) async fn commit(
    kafka: &Arc<Kafka>,
    _ctx: &Ctx,
    req: OffsetCommitRequest,
) -> OffsetCommitResponse {
    let group = req.group_id.as_str().to_owned();
    let allowed = super::groups::check_commit(
        kafka,
        &group,
        req.member_id.as_str(),
        req.generation_id_or_member_epoch,
    )
    .await;
    let mut resp = OffsetCommitResponse::default();
    let mut rows = Vec::new();
    let mut slots = Vec::new();
    for t in &req.topics {
        let name = t.name.as_str().to_owned();
        let mut tr = OffsetCommitResponseTopic::default();
        tr.name = t.name.clone();
        let cfg = find_topic(kafka, &name).await.ok().flatten();
        for p in &t.partitions {
            let mut pr = OffsetCommitResponsePartition::default();
            pr.partition_index = p.partition_index;
            let place = partition_place(p.partition_index, kafka.shards());
            pr.error_code = match (&cfg, place) {
                _ if allowed != 0 => allowed,
                (Some(cfg), Some(place)) if place.queue.0 < cfg.read_queue_nums => {
                    rows.push(ConsumerOffset {
                        group: ConsumerGroup::new(group.clone()),
                        queue: kafka.queue_key(&name, place),
                        offset: QueueOffset(p.committed_offset.max(0)),
                    });
                    slots.push((resp.topics.len(), tr.partitions.len()));
                    0
                }
                _ => ResponseError::UnknownTopicOrPartition.code(),
            };
            tr.partitions.push(pr);
        }
        resp.topics.push(tr);
    }
    if !rows.is_empty()
        && let Err(e) = kafka.node.commit_offsets(&rows).await
    {
        let code = super::codes::meta(&e);
        for (t, p) in slots {
            resp.topics[t].partitions[p].error_code = code;
        }
    }
    resp
}

/// One partition's committed offset (-1 without one); the error is a Kafka code.
async fn committed(kafka: &Kafka, group: &str, topic: &str, partition: i32) -> Result<i64, i16> {
    let Some(place) = partition_place(partition, kafka.shards()) else {
        return Err(ResponseError::UnknownTopicOrPartition.code());
    };
    let q = kafka.queue_key(topic, place);
    match kafka
        .node
        .committed_offset(&ConsumerGroup::new(group.to_owned()), &q)
        .await
    {
        Ok(o) => Ok(o.map_or(-1, |o| o.0)),
        Err(e) => Err(super::codes::meta(&e)),
    }
}

/// Every committed offset of `group`: `(topic, partition, offset)`.
async fn all_committed(kafka: &Kafka, group: &str) -> Result<Vec<(String, i32, i64)>, i16> {
    let rows = kafka
        .node
        .meta
        .group_offsets(&ConsumerGroup::new(group.to_owned()))
        .await
        .map_err(|e| super::codes::meta(&e))?;
    Ok(rows
        .into_iter()
        .filter(|r| super::metadata::visible(r.queue.topic.as_ref()))
        .map(|r| {
            (
                r.queue.topic.to_string(),
                partition_index(r.queue.shard, r.queue.queue_id, kafka.shards()),
                r.offset.0,
            )
        })
        .collect())
}

/// One topic's committed offsets: `(topic, [(partition, offset, error)])`.
type TopicOffsets = (String, Vec<(i32, i64, i16)>);

/// The answer for one group, or a group error.
async fn group_offsets(
    kafka: &Kafka,
    group: &str,
    topics: Option<Vec<(String, Vec<i32>)>>,
) -> Result<Vec<TopicOffsets>, i16> {
    if !super::groups::coordinates(kafka, group) {
        return Err(ResponseError::NotCoordinator.code());
    }
    match topics {
        None => {
            let mut out: Vec<TopicOffsets> = Vec::new();
            for (t, p, o) in all_committed(kafka, group).await? {
                match out.iter_mut().find(|(n, _)| *n == t) {
                    Some((_, ps)) => ps.push((p, o, 0)),
                    None => out.push((t, vec![(p, o, 0)])),
                }
            }
            Ok(out)
        }
        Some(list) => {
            let mut out = Vec::new();
            for (t, parts) in list {
                let mut ps = Vec::new();
                for p in parts {
                    match committed(kafka, group, &t, p).await {
                        Ok(o) => ps.push((p, o, 0)),
                        Err(code) if code == ResponseError::UnknownTopicOrPartition.code() => {
                            ps.push((p, -1, 0));
                        }
                        Err(code) => return Err(code),
                    }
                }
                out.push((t, ps));
            }
            Ok(out)
        }
    }
}

/// OffsetFetch (one group before v8, several from v8).
pub(crate) async fn fetch(
    kafka: &Arc<Kafka>,
    ctx: &Ctx,
    req: OffsetFetchRequest,
) -> OffsetFetchResponse {
    let mut resp = OffsetFetchResponse::default();
    if ctx.version < 8 {
        let topics = req.topics.as_ref().map(|ts| {
            ts.iter()
                .map(|t| (t.name.as_str().to_owned(), t.partition_indexes.clone()))
                .collect()
        });
        match group_offsets(kafka, req.group_id.as_str(), topics).await {
            Ok(list) => {
                for (t, ps) in list {
                    let mut tr = OffsetFetchResponseTopic::default();
                    tr.name = TopicName(sb(t));
                    for (p, o, e) in ps {
                        let mut pr = OffsetFetchResponsePartition::default();
                        pr.partition_index = p;
                        pr.committed_offset = o;
                        pr.committed_leader_epoch = -1;
                        pr.metadata = Some(sb(""));
                        pr.error_code = e;
                        tr.partitions.push(pr);
                    }
                    resp.topics.push(tr);
                }
            }
            Err(code) => resp.error_code = code,
        }
        return resp;
    }
    for g in req.groups {
        let mut gr = OffsetFetchResponseGroup::default();
        gr.group_id = g.group_id.clone();
        let topics = g.topics.as_ref().map(|ts| {
            ts.iter()
                .map(|t| (t.name.as_str().to_owned(), t.partition_indexes.clone()))
                .collect()
        });
        match group_offsets(kafka, g.group_id.as_str(), topics).await {
            Ok(list) => {
                for (t, ps) in list {
                    let mut tr = OffsetFetchResponseTopics::default();
                    tr.name = TopicName(sb(t));
                    for (p, o, e) in ps {
                        let mut pr = OffsetFetchResponsePartitions::default();
                        pr.partition_index = p;
                        pr.committed_offset = o;
                        pr.committed_leader_epoch = -1;
                        pr.metadata = Some(sb(""));
                        pr.error_code = e;
                        tr.partitions.push(pr);
                    }
                    gr.topics.push(tr);
                }
            }
            Err(code) => gr.error_code = code,
        }
        resp.groups.push(gr);
    }
    resp
}

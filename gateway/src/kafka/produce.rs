//! Produce and InitProducerId.
//!
//! A Produce request is decoded and appended on the connection's reader, in order: each
//! partition's record batches are checked (CRC-32C, decompressed under a cap), turned into
//! stored messages and appended to the node's open segment — the same group commit as
//! RocketMQ sends, so still one object per flush per node. Then a task awaits durability
//! (uploaded and committed in meta) and answers; `acks = 0` is not answered, and
//! `acks = 1` and `acks = -1` both mean durable (there are no followers to wait for).
//!
//! Idempotent producers. InitProducerId hands out a random 63-bit id (epoch 0); batches
//! carrying an id are checked against the last five batches of that producer on that
//! partition, under one lock with the append: a retried batch already appended is
//! answered with its first offset and not stored again, a gap is OUT_OF_ORDER_SEQUENCE_NUMBER,
//! an older epoch INVALID_PRODUCER_EPOCH. Each batch is remembered in meta by the commit
//! of the section that holds it (a segment effect, the newest five per producer and queue),
//! so a shard's next owner loads exactly the batches that are durable when it takes the
//! shard, and a retry sent to it after a failover is still answered from the window. A
//! producer not known on a queue (new, or expired after `kafka.producer_id_expiration`) is
//! taken at the sequence it sends.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

use futures::FutureExt;
use futures::future::BoxFuture;
use kafka_protocol::error::ResponseError;
use kafka_protocol::messages::produce_response::{PartitionProduceResponse, TopicProduceResponse};
use kafka_protocol::messages::*;
use parking_lot::Mutex;
use stratus_compat::kafka::records::decode_batches;
use stratus_compat::topic::PERM_WRITE;
use stratus_compat::types::{QueueId, QueueOffset, Topic};
use stratus_meta::{ProducerBatch, SegmentEffect, ShardId};
use stratus_segments::writer::{AppendTicket, MessageToStore};

use super::convert::{Origin, to_stored};
use super::dispatch::{Ctx, sb};
use super::{Kafka, partition_place};

/// How many batches per producer and partition are remembered for duplicate detection
/// (`max.in.flight.requests.per.connection` may be at most 5 with idempotence).
const WINDOW: usize = 5;

#[derive(Debug, Clone, Copy)]
struct Seen {
    first_seq: i32,
    last_seq: i32,
    first_offset: i64,
}

#[derive(Debug, Default)]
struct ProducerState {
    epoch: i16,
    batches: VecDeque<Seen>,
    /// When its last batch was appended here, ms.
    last_ms: i64,
}

type PartitionKey = (i64, ShardId, String, i32);

/// Idempotent producers' recent batches, per producer and partition.
#[derive(Debug, Default)]
pub(crate) struct Producers {
    state: Mutex<HashMap<PartitionKey, ProducerState>>,
}

impl Producers {
    /// Replaces what is known of `shard`'s producers with meta's (when the shard is taken).
    pub(crate) fn load(&self, shard: ShardId, batches: Vec<ProducerBatch>) {
        let mut state = self.state.lock();
        state.retain(|k, _| k.1 != shard);
        for b in batches {
            let key = (b.producer_id, shard, b.topic.to_string(), b.queue_id.0);
            let st = state.entry(key).or_default();
            if b.epoch != st.epoch {
                st.epoch = b.epoch;
                st.batches.clear();
            }
            st.batches.push_back(Seen {
                first_seq: b.first_seq,
                last_seq: b.last_seq,
                first_offset: b.first_offset.0,
            });
            while st.batches.len() > WINDOW {
                st.batches.pop_front();
            }
        }
    }

    /// Forgets producers whose last batch here is older than `before_ms`.
    pub(crate) fn expire(&self, before_ms: i64) {
        self.state.lock().retain(|_, st| st.last_ms >= before_ms);
    }
}

/// What the sequence check decided for one batch.
#[derive(Debug, PartialEq, Eq)]
enum Check {
    Append,
    Duplicate(i64),
    Refuse(i16),
}

fn next_seq(s: i32) -> i32 {
    if s == i32::MAX { 0 } else { s + 1 }
}

fn check(state: Option<&ProducerState>, epoch: i16, first: i32, last: i32) -> Check {
    let Some(st) = state else {
        return Check::Append;
    };
    if epoch < st.epoch {
        return Check::Refuse(ResponseError::InvalidProducerEpoch.code());
    }
    if epoch > st.epoch {
        return if first == 0 {
            Check::Append
        } else {
            Check::Refuse(ResponseError::OutOfOrderSequenceNumber.code())
        };
    }
    if let Some(seen) = st
        .batches
        .iter()
        .find(|b| b.first_seq == first && b.last_seq == last)
    {
        return Check::Duplicate(seen.first_offset);
    }
    match st.batches.back() {
        Some(b) if first == next_seq(b.last_seq) => Check::Append,
        None => Check::Append,
        Some(_) => Check::Refuse(ResponseError::OutOfOrderSequenceNumber.code()),
    }
}

/// One partition's outcome before durability.
enum Pending {
    Done(i16, i64),
    Appended(Vec<AppendTicket>, Option<PartitionKey>),
}

/// A Produce request decoded and turned into stored messages, not yet appended: built
/// off the connection's reader (decompression, CRC checks and conversion run in parallel
/// for pipelined requests), appended in arrival order by [`append`].
#[derive(Debug)]
pub(crate) struct PreparedProduce {
    acks: i16,
    topics: Vec<(TopicName, Vec<PreparedSlot>)>,
}

/// A partition's index and its messages, or the Kafka error refusing them.
type PreparedSlot = (i32, Result<PreparedPartition, i16>);

/// One partition's batches as stored messages.
#[derive(Debug)]
struct PreparedPartition {
    topic: String,
    place: super::Partition,
    batches: Vec<PreparedBatch>,
    bytes: usize,
}

/// One record batch's messages and its idempotence fields.
#[derive(Debug)]
struct PreparedBatch {
    producer_id: i64,
    producer_epoch: i16,
    first_seq: i32,
    last_seq: i32,
    messages: Vec<MessageToStore>,
}

/// Decodes and converts every partition's batches (no append).
pub(crate) fn prepare(kafka: &Kafka, ctx: &Ctx, req: ProduceRequest) -> PreparedProduce {
    let mut topics = Vec::new();
    for t in req.topic_data {
        let name = t.name.as_str().to_owned();
        let mut parts = Vec::new();
        for p in t.partition_data {
            let prepared = if req.transactional_id.is_some() {
                Err(ResponseError::TransactionalIdAuthorizationFailed.code())
            } else {
                prepare_partition(kafka, ctx, &name, p.index, p.records.as_deref())
            };
            parts.push((p.index, prepared));
        }
        topics.push((t.name, parts));
    }
    PreparedProduce {
        acks: req.acks,
        topics,
    }
}

/// Prepares and appends at once (tests).
#[cfg(test)]
pub(crate) fn start(
    kafka: &Arc<Kafka>,
    ctx: &Ctx,
    req: ProduceRequest,
) -> BoxFuture<'static, Option<ProduceResponse>> {
    append(kafka, prepare(kafka, ctx, req))
}

/// Appends a prepared request (in the connection's order, without awaiting) and returns
/// the wait for durability and the answer (`None` for `acks = 0`).
pub(crate) fn append(
    kafka: &Arc<Kafka>,
    prepared: PreparedProduce,
) -> BoxFuture<'static, Option<ProduceResponse>> {
    let acks = prepared.acks;
    // Per topic: each partition's index, outcome so far and body bytes.
    type Plan = Vec<(TopicName, Vec<(i32, Pending, usize)>)>;
    let mut plan: Plan = Vec::new();
    for (name, parts) in prepared.topics {
        let mut out = Vec::new();
        for (index, p) in parts {
            let (pending, bytes) = match p {
                Err(code) => (Pending::Done(code, -1), 0),
                Ok(p) => append_partition(kafka, p),
            };
            out.push((index, pending, bytes));
        }
        plan.push((name, out));
    }
    let kafka = kafka.clone();
    async move {
        let mut resp = ProduceResponse::default();
        for (name, parts) in plan {
            let mut tr = TopicProduceResponse::default();
            tr.name = name.clone();
            for (index, pending, bytes) in parts {
                let mut pr = PartitionProduceResponse::default();
                pr.index = index;
                pr.log_append_time_ms = -1;
                pr.log_start_offset = -1;
                let (code, base) = match pending {
                    Pending::Done(code, base) => (code, base),
                    Pending::Appended(tickets, key) => {
                        let started = std::time::Instant::now();
                        let first = tickets.first().map_or(-1, |t| t.first_offset.0);
                        let shard = tickets.first().map(|t| t.shard);
                        let count: usize = tickets.iter().map(|t| t.handles.len()).sum();
                        let mut code = 0;
                        for t in tickets {
                            if let Err(e) = t.durable().await {
                                code = super::codes::segment(&e);
                            }
                        }
                        let outcome = if code == 0 { "acknowledged" } else { "failed" };
                        crate::metrics::KAFKA_RECORDS
                            .with_label_values(&[outcome])
                            .inc_by(u64::try_from(count).unwrap_or(0));
                        if code != 0 {
                            kafka.node.stats.on_put_failed();
                            if let Some(k) = key {
                                kafka.producers.state.lock().remove(&k);
                            }
                        } else if let Some(shard) = shard {
                            let took =
                                u64::try_from(started.elapsed().as_millis()).unwrap_or(u64::MAX);
                            kafka.node.stats.on_put(
                                shard,
                                name.as_str(),
                                u64::try_from(count).unwrap_or(0),
                                u64::try_from(bytes).unwrap_or(0),
                                took,
                            );
                        }
                        (code, if code == 0 { first } else { -1 })
                    }
                };
                pr.error_code = code;
                pr.base_offset = base;
                if code == ResponseError::NotLeaderOrFollower.code() {
                    pr.error_message = Some(sb("this broker does not lead the partition now"));
                }
                tr.partition_responses.push(pr);
            }
            resp.responses.push(tr);
        }
        (acks != 0).then_some(resp)
    }
    .boxed()
}

fn prepare_partition(
    kafka: &Kafka,
    ctx: &Ctx,
    topic: &str,
    index: i32,
    records: Option<&[u8]>,
) -> Result<PreparedPartition, i16> {
    let fail = |e: ResponseError| Err(e.code());
    let Some(cfg) = kafka.node.topics.get(topic) else {
        return fail(ResponseError::UnknownTopicOrPartition);
    };
    if !super::metadata::visible(topic) {
        return fail(ResponseError::UnknownTopicOrPartition);
    }
    if cfg.perm & PERM_WRITE == 0 {
        return fail(ResponseError::TopicAuthorizationFailed);
    }
    let Some(place) =
        partition_place(index, kafka.shards()).filter(|p| p.queue.0 < cfg.write_queue_nums)
    else {
        return fail(ResponseError::UnknownTopicOrPartition);
    };
    if kafka.node.shards.epoch(place.shard).is_none() {
        return fail(ResponseError::NotLeaderOrFollower);
    }
    let Some(records) = records else {
        return fail(ResponseError::InvalidRecord);
    };
    let max = kafka.node.config.kafka.max_request_bytes.as_usize();
    let batches = match decode_batches(records, max) {
        Ok(b) if !b.is_empty() => b,
        Ok(_) => return fail(ResponseError::InvalidRecord),
        Err(e) => {
            tracing::debug!(topic, partition = index, error = %e, "refused a record batch");
            return fail(ResponseError::CorruptMessage);
        }
    };
    let max_message = kafka.node.config.broker.max_message_size.as_usize();
    let origin = Origin {
        topic,
        queue: place.queue,
        born_host: ctx.conn.peer,
        store_host: kafka.node.store_host,
        cluster: &kafka.node.config.node.cluster_name,
    };
    let mut out = Vec::with_capacity(batches.len());
    let mut bytes = 0;
    for batch in &batches {
        if batch.is_control() || batch.is_transactional() {
            return fail(ResponseError::InvalidRecord);
        }
        let mut messages = Vec::with_capacity(batch.records.len());
        for r in &batch.records {
            let len = r.value.as_ref().map_or(0, |v| v.len());
            if len > max_message {
                return fail(ResponseError::MessageTooLarge);
            }
            bytes += len;
            match to_stored(&origin, r, batch.record_timestamp(r)) {
                Ok(m) => messages.push(m),
                Err(_) => return fail(ResponseError::MessageTooLarge),
            }
        }
        out.push(PreparedBatch {
            producer_id: batch.producer_id,
            producer_epoch: batch.producer_epoch,
            first_seq: batch.base_sequence,
            last_seq: batch.base_sequence.wrapping_add(batch.last_offset_delta),
            messages,
        });
    }
    Ok(PreparedPartition {
        topic: topic.to_owned(),
        place,
        batches: out,
        bytes,
    })
}

fn append_partition(kafka: &Kafka, p: PreparedPartition) -> (Pending, usize) {
    let PreparedPartition {
        topic,
        place,
        batches,
        bytes,
    } = p;
    let mut tickets = Vec::new();
    let mut first_offset = None;
    let mut key = None;
    for batch in batches {
        let outcome = if batch.producer_id >= 0 {
            let k: PartitionKey = (batch.producer_id, place.shard, topic.clone(), place.queue.0);
            let r = append_idempotent(kafka, &k, batch, place.shard);
            key = Some(k);
            r
        } else {
            kafka
                .node
                .append(place.shard, batch.messages)
                .map(Appended::Ticket)
                .map_err(|e| super::codes::segment(&e))
        };
        match outcome {
            Ok(Appended::Ticket(t)) => {
                first_offset.get_or_insert(t.first_offset.0);
                tickets.push(t);
            }
            Ok(Appended::Duplicate(off)) => {
                first_offset.get_or_insert(off);
            }
            Err(code) => return (Pending::Done(code, -1), 0),
        }
    }
    if tickets.is_empty() {
        return (Pending::Done(0, first_offset.unwrap_or(-1)), 0);
    }
    (Pending::Appended(tickets, key), bytes)
}

/// A batch appended, or answered from the producer's window.
enum Appended {
    Ticket(AppendTicket),
    Duplicate(i64),
}

fn append_idempotent(
    kafka: &Kafka,
    k: &PartitionKey,
    batch: PreparedBatch,
    shard: ShardId,
) -> Result<Appended, i16> {
    let first = batch.first_seq;
    let last = batch.last_seq;
    let messages = batch.messages;
    let mut state = kafka.producers.state.lock();
    match check(state.get(k), batch.producer_epoch, first, last) {
        Check::Refuse(code) => Err(code),
        Check::Duplicate(offset) => Ok(Appended::Duplicate(offset)),
        Check::Append => {
            let remembered = |first_offset: QueueOffset, _: &[_], committed_ms: i64| {
                vec![SegmentEffect::ProducerBatch(ProducerBatch {
                    shard,
                    producer_id: k.0,
                    topic: Topic::new(k.2.clone()),
                    queue_id: QueueId(k.3),
                    epoch: batch.producer_epoch,
                    first_seq: first,
                    last_seq: last,
                    first_offset,
                    committed_ms,
                })]
            };
            let ticket = kafka
                .node
                .append_with(shard, messages, remembered)
                .map_err(|e| super::codes::segment(&e))?;
            let st = state.entry(k.clone()).or_default();
            st.last_ms = kafka.node.clock.now_ms();
            if batch.producer_epoch != st.epoch {
                st.epoch = batch.producer_epoch;
                st.batches.clear();
            }
            st.batches.push_back(Seen {
                first_seq: first,
                last_seq: last,
                first_offset: ticket.first_offset.0,
            });
            while st.batches.len() > WINDOW {
                st.batches.pop_front();
            }
            Ok(Appended::Ticket(ticket))
        }
    }
}

/// InitProducerId: a fresh id for an idempotent producer; transactional ids are refused
/// until transactions are served.
pub(crate) async fn init_producer_id(
    _kafka: &Arc<Kafka>,
    _ctx: &Ctx,
    req: InitProducerIdRequest,
) -> InitProducerIdResponse {
    let mut r = InitProducerIdResponse::default();
    if req.transactional_id.is_some() {
        r.error_code = ResponseError::TransactionalIdAuthorizationFailed.code();
        r.producer_id = ProducerId(-1);
        r.producer_epoch = -1;
        return r;
    }
    if req.producer_id.0 >= 0 {
        // A producer bumping its epoch after an error keeps its id (KIP-360).
        r.producer_id = req.producer_id;
        r.producer_epoch = req.producer_epoch.saturating_add(1).max(0);
        return r;
    }
    let id = rand::random::<u64>() >> 1;
    r.producer_id = ProducerId(i64::try_from(id).unwrap_or(i64::MAX));
    r.producer_epoch = 0;
    r
}

#[cfg(test)]
mod tests {
    use super::*;

    fn state(epoch: i16, batches: &[(i32, i32, i64)]) -> ProducerState {
        ProducerState {
            last_ms: 0,
            epoch,
            batches: batches
                .iter()
                .map(|&(first_seq, last_seq, first_offset)| Seen {
                    first_seq,
                    last_seq,
                    first_offset,
                })
                .collect(),
        }
    }

    #[test]
    fn sequences_are_checked_against_the_window() {
        let st = state(0, &[(0, 4, 100), (5, 9, 105)]);
        assert_eq!(
            check(None, 0, 17, 20),
            Check::Append,
            "unknown producers are taken as they come"
        );
        assert_eq!(check(Some(&st), 0, 10, 12), Check::Append);
        assert_eq!(check(Some(&st), 0, 5, 9), Check::Duplicate(105));
        assert_eq!(check(Some(&st), 0, 0, 4), Check::Duplicate(100));
        assert_eq!(check(Some(&st), 0, 11, 12), Check::Refuse(45));
        assert_eq!(
            check(Some(&state(3, &[(0, 0, 1)])), 2, 1, 1),
            Check::Refuse(47)
        );
        assert_eq!(
            check(Some(&st), 1, 0, 3),
            Check::Append,
            "a new epoch starts at 0"
        );
        assert_eq!(check(Some(&st), 1, 4, 5), Check::Refuse(45));
        assert_eq!(next_seq(i32::MAX), 0);
    }
}

//! SEND_MESSAGE (10), SEND_MESSAGE_V2 (310), SEND_BATCH_MESSAGE (320) and the batch flag
//! (C++: code 10/310 with `batch`/`m` = "1").
//!
//! `prepare` runs on the connection's reader task in arrival order and must not await: it
//! validates against the in-memory topic table and appends to the shard's open segment.
//! `complete` awaits durability (upload + meta commit) and builds the answer. A topic that
//! must first be auto-created (a meta write) is handled entirely in `complete`.
//! Mirrors `SendMessageProcessor` / `AbstractSendMessageProcessor` checks and codes.

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};

use bytes::Bytes;
use stratus_compat::command::RemotingCommand;
use stratus_compat::message::batch::decode_batch;
use stratus_compat::message::id::create_offset_msg_id;
use stratus_compat::message::properties::{Properties, keys};
use stratus_compat::request::send::{SendMessageRequestHeader, SendMessageResponseHeader};
use stratus_compat::types::{QueueId, Topic, java_string_hash};
use stratus_meta::{SegmentEffect, ShardId, TopicConfig};
use stratus_segments::SegmentError;
use stratus_segments::writer::{AppendTicket, MessageToStore};

use crate::error::{GatewayError, Result};
use crate::remoting::Remoting;
use crate::remoting::dispatch::{respond, success};
use crate::remoting::net::Channel;
use stratus_compat::topic::{DLQ_PREFIX, PERM_WRITE, RETRY_PREFIX};

use crate::node::topics;
use crate::remoting::rewrite::retry::{DEFAULT_MAX_RECONSUME, VERSION_WITH_MAX_RECONSUME};
use crate::remoting::rewrite::{delay, timer, transaction};

/// Longest properties string (stored with an i16 length).
const MAX_PROPERTIES_LEN: usize = 32_767;

/// The outcome of the in-order phase.
#[derive(Debug)]
pub(crate) enum Prepared {
    /// Appended; wait for durability.
    Appended(Appended),
    /// Refused.
    Failed(GatewayError),
    /// The topic needs auto-creation first; everything happens in `complete`.
    Deferred {
        peer: SocketAddr,
        conn_shard: Option<ShardId>,
    },
}

/// A send appended to its shard's open segment.
#[derive(Debug)]
pub(crate) struct Appended {
    ticket: AppendTicket,
    uniq_key: Option<String>,
    /// Queue id to answer with when it differs from where the message was stored (half
    /// messages are stored in the half topic's queue 0).
    reply_queue_id: Option<i32>,
    /// What the statistics count once the send is durable.
    put: Option<PutStat>,
}

/// A send as the statistics count it: the topic the client named, its body bytes, and
/// when it arrived.
#[derive(Debug)]
struct PutStat {
    topic: String,
    bytes: u64,
    started: std::time::Instant,
}

impl Appended {
    fn counted(mut self, topic: &str, bytes: usize) -> Self {
        self.put = Some(PutStat {
            topic: topic.to_owned(),
            bytes: u64::try_from(bytes).unwrap_or(u64::MAX),
            started: std::time::Instant::now(),
        });
        self
    }
}

/// Phase one (reader task, in order, no await).
pub(crate) fn prepare(rmq: &Arc<Remoting>, ch: &Channel, cmd: &RemotingCommand) -> Prepared {
    let mut header = match SendMessageRequestHeader::from_command(cmd) {
        Ok(h) => h,
        Err(e) => return Prepared::Failed(e.into()),
    };
    divert_exhausted_retry(&mut header, cmd.version);
    if let Err(e) = check_topic(&header.topic) {
        return Prepared::Failed(e);
    }
    match rmq.node.topics.get(&header.topic) {
        Some(cfg) => match append(rmq, ch.peer, ch.shard, &header, cmd.body.clone(), &cfg) {
            Ok(a) => Prepared::Appended(a.counted(&header.topic, cmd.body.len())),
            Err(e) => Prepared::Failed(e),
        },
        None => Prepared::Deferred {
            peer: ch.peer,
            conn_shard: ch.shard,
        },
    }
}

/// Phase two (spawned): auto-create if needed, await durability, answer.
pub(crate) async fn complete(
    rmq: &Arc<Remoting>,
    prepared: Prepared,
    cmd: RemotingCommand,
) -> Result<RemotingCommand> {
    let appended = match prepared {
        Prepared::Appended(a) => a,
        Prepared::Failed(e) => return Err(e),
        Prepared::Deferred { peer, conn_shard } => {
            let mut header = SendMessageRequestHeader::from_command(&cmd)?;
            divert_exhausted_retry(&mut header, cmd.version);
            let cfg = rmq
                .node
                .topics
                .auto_create_on_send(
                    &header.topic,
                    &header.default_topic,
                    header.default_topic_queue_nums,
                )
                .await?
                .ok_or_else(|| GatewayError::TopicNotExist {
                    topic: header.topic.clone(),
                })?;
            append(rmq, peer, conn_shard, &header, cmd.body.clone(), &cfg)?
                .counted(&header.topic, cmd.body.len())
        }
    };
    let Appended {
        ticket,
        uniq_key,
        reply_queue_id,
        put,
    } = appended;
    let messages = u64::try_from(ticket.handles.len()).unwrap_or(u64::MAX);
    let queue_id = reply_queue_id.map_or(ticket.queue_id, QueueId);
    let first_offset = ticket.first_offset;
    let msg_id = ticket
        .handles
        .iter()
        .map(|h| create_offset_msg_id(rmq.node.store_host, h.0))
        .collect::<Vec<_>>()
        .join(",");
    // Not durable in time: FLUSH_DISK_TIMEOUT carries the send header, as the reference's
    // does (clients decode it and report SendStatus.FLUSH_DISK_TIMEOUT); the message may
    // still become durable. Every other failure is an error answer.
    let shard = ticket.shard;
    let durable = ticket.durable().await;
    let stats = &rmq.node.stats;
    match (&durable, put) {
        (Ok(()), Some(p)) => {
            let took = u64::try_from(p.started.elapsed().as_millis()).unwrap_or(u64::MAX);
            stats.on_put(shard, &p.topic, messages, p.bytes, took);
        }
        (Ok(()), None) => {}
        (Err(_), _) => stats.on_put_failed(),
    }
    let mut resp = match durable {
        Ok(()) => success(),
        Err(e @ SegmentError::Timeout(_)) => {
            let err = GatewayError::from(e);
            respond(err.response_code(), err.remark())
        }
        Err(e) => return Err(e.into()),
    };
    SendMessageResponseHeader {
        msg_id,
        queue_id: queue_id.0,
        queue_offset: first_offset.0,
        transaction_id: uniq_key,
    }
    .write_to(&mut resp);
    Ok(resp)
}

/// A client's own re-send to `%RETRY%<group>` whose reconsume count is past its maximum
/// goes to `%DLQ%<group>` instead, at once: its delay level becomes -1, so it is not
/// scheduled (`SendMessageProcessor#handleRetryAndDLQ`: strictly greater; the header's
/// `maxReconsumeTimes` counts from V3_4_9 on, else the group's default of 16).
fn divert_exhausted_retry(header: &mut SendMessageRequestHeader, version: i32) {
    let Some(group) = header.topic.strip_prefix(RETRY_PREFIX) else {
        return;
    };
    let max = match header.max_reconsume_times {
        Some(n) if version >= VERSION_WITH_MAX_RECONSUME => n,
        _ => DEFAULT_MAX_RECONSUME,
    };
    if header.reconsume_times.unwrap_or(0) > max {
        header.topic = format!("{DLQ_PREFIX}{group}");
        header.queue_id = 0;
        let mut props = Properties::parse(header.properties.as_deref().unwrap_or_default());
        props.insert(keys::DELAY, "-1");
        header.properties = Some(props.encode());
    }
}

fn check_topic(topic: &str) -> Result<()> {
    topics::validate_name(topic)?;
    if topics::is_not_sendable(topic) {
        return Err(GatewayError::NotSendable {
            topic: topic.to_owned(),
        });
    }
    Ok(())
}

static QUEUE_PICK: AtomicU32 = AtomicU32::new(0);

/// Validates against `cfg`, builds the stored messages and appends them.
fn append(
    rmq: &Remoting,
    peer: SocketAddr,
    conn_shard: Option<ShardId>,
    header: &SendMessageRequestHeader,
    body: Bytes,
    cfg: &TopicConfig,
) -> Result<Appended> {
    if cfg.perm & PERM_WRITE == 0 {
        return Err(GatewayError::NotWritable {
            topic: header.topic.clone(),
        });
    }
    let queue_count = cfg.read_queue_nums.max(cfg.write_queue_nums);
    let queue_id = if header.queue_id < 0 {
        let n = u32::try_from(cfg.write_queue_nums.max(1)).unwrap_or(1);
        i32::try_from(QUEUE_PICK.fetch_add(1, Ordering::Relaxed) % n).unwrap_or(0)
    } else if header.queue_id >= queue_count {
        return Err(GatewayError::SendQueueIllegal {
            queue_id: header.queue_id,
            topic: header.topic.clone(),
            write_queues: cfg.write_queue_nums,
            read_queues: cfg.read_queue_nums,
        });
    } else {
        header.queue_id
    };
    let shard = rmq
        .node
        .shards
        .require(header.broker_name.as_deref(), conn_shard)?;
    let max_size = rmq.node.config.broker.max_message_size.as_usize();
    if body.len() > max_size {
        return Err(GatewayError::BodyTooLarge {
            size: body.len(),
            max: max_size,
        });
    }
    let base = MessageBase {
        topic: Topic::new(header.topic.clone()),
        queue_id: QueueId(queue_id),
        sys_flag: header.sys_flag,
        born_timestamp: header.born_timestamp,
        born_host: peer,
        store_host: rmq.node.store_host,
        reconsume_times: header.reconsume_times.unwrap_or(0),
        cluster: &rmq.node.config.node.cluster_name,
    };
    let props_text = header.properties.clone().unwrap_or_default();
    let (messages, uniq_key) = if header.batch {
        if header.topic.starts_with(RETRY_PREFIX) {
            return Err(GatewayError::BatchToRetryTopic);
        }
        let entries =
            decode_batch(&body).map_err(|e| GatewayError::MalformedBatch(e.to_string()))?;
        if entries.is_empty() {
            return Err(GatewayError::EmptyBatch);
        }
        let mut out = Vec::with_capacity(entries.len());
        for (i, e) in entries.into_iter().enumerate() {
            let props = Properties::parse(&e.properties);
            out.push(base.message(rmq, shard, e.flag, e.body, props, i)?);
        }
        (out, None)
    } else {
        let props = Properties::parse(&props_text);
        let half = transaction::is_half(&props, header.sys_flag);
        let delay = delay::requested_level(&props);
        let mut msg = base.message(rmq, shard, header.flag, body, props, 0)?;
        let uniq = Properties::parse(&msg.properties)
            .get(keys::UNIQ_KEY)
            .map(str::to_owned);
        if half {
            // Stored in the half topic; the answer still names the requested queue, with
            // the half-queue offset END_TRANSACTION will quote back.
            let timeout_ms = crate::config::millis(rmq.node.config.transaction.timeout);
            let template = transaction::to_half(&mut msg, &header.producer_group, timeout_ms);
            let ticket = rmq
                .node
                .append_with(shard, vec![msg], |offset, handles, stored_at| {
                    handles
                        .first()
                        .map(|h| template.effect(shard, offset, *h, stored_at))
                        .into_iter()
                        .collect()
                })?;
            return Ok(Appended {
                ticket,
                uniq_key: uniq,
                reply_queue_id: Some(queue_id),
                put: None,
            });
        }
        if delay.is_none()
            && let Some(due) = timer::requested_timer(
                &Properties::parse(&msg.properties),
                rmq.node.clock.now_ms(),
            )?
            && due > rmq.node.clock.now_ms()
            && !half
        {
            // Stored in the timer topic; due time indexed in meta with the commit.
            timer::to_timer(&mut msg, due);
            let ticket = rmq
                .node
                .writer
                .append_with(shard, vec![msg], |_, handles, _| {
                    handles
                        .iter()
                        .map(|h| SegmentEffect::TimerScheduled {
                            shard,
                            handle: *h,
                            due_ms: due,
                        })
                        .collect()
                })?;
            return Ok(Appended {
                ticket,
                uniq_key: uniq,
                reply_queue_id: Some(queue_id),
                put: None,
            });
        }
        if let Some(level) = delay {
            // Stored in the schedule topic until due; the answer names the requested queue
            // and the schedule-queue offset, as the reference's.
            delay::to_scheduled(&mut msg, level, rmq.node.config.delay_levels.len());
            let ticket = rmq.node.append(shard, vec![msg])?;
            return Ok(Appended {
                ticket,
                uniq_key: uniq,
                reply_queue_id: Some(queue_id),
                put: None,
            });
        }
        (vec![msg], uniq)
    };
    let ticket = rmq.node.append(shard, messages)?;
    Ok(Appended {
        ticket,
        uniq_key,
        reply_queue_id: None,
        put: None,
    })
}

/// Fields shared by every message of one send request.
struct MessageBase<'a> {
    topic: Topic,
    queue_id: QueueId,
    sys_flag: i32,
    born_timestamp: i64,
    born_host: SocketAddr,
    store_host: SocketAddr,
    reconsume_times: i32,
    cluster: &'a str,
}

static UNIQ_COUNTER: AtomicU32 = AtomicU32::new(0);

impl MessageBase<'_> {
    /// One stored message: broker-side property changes (`CLUSTER` added, `POP_CK` removed,
    /// `UNIQ_KEY` added when missing) and the tags code.
    fn message(
        &self,
        rmq: &Remoting,
        _shard: ShardId,
        flag: i32,
        body: Bytes,
        mut props: Properties,
        _index: usize,
    ) -> Result<MessageToStore> {
        props.remove(keys::POP_CK);
        props.insert(keys::CLUSTER, self.cluster);
        if props.get(keys::UNIQ_KEY).is_none() {
            let n = UNIQ_COUNTER.fetch_add(1, Ordering::Relaxed);
            let id = stratus_compat::message::uniq::new_uniq_id(
                self.store_host.ip(),
                n,
                rmq.node.clock.now_ms(),
            );
            props.insert(keys::UNIQ_KEY, &id);
        }
        let tags_code = props.get(keys::TAGS).map_or(0, java_string_hash);
        let properties = props.encode();
        if properties.len() > MAX_PROPERTIES_LEN {
            return Err(GatewayError::PropertiesTooLong {
                len: properties.len(),
                max: MAX_PROPERTIES_LEN,
            });
        }
        Ok(MessageToStore {
            topic: self.topic.clone(),
            queue_id: self.queue_id,
            flag,
            sys_flag: self.sys_flag,
            born_timestamp: self.born_timestamp,
            born_host: self.born_host,
            store_host: self.store_host,
            reconsume_times: self.reconsume_times,
            prepared_transaction_offset: 0,
            body,
            properties,
            tags_code,
        })
    }
}

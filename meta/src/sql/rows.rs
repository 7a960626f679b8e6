//! Result rows and their conversion to model records. Each reader takes the columns in the
//! order its statements select them (named in its doc); readers fail with sqlx's decode
//! errors, conversions of stored values that do not fit with [`crate::MetaError::Corrupt`].

use stratus_compat::types::{
    CommitLogOffset, ConsumerGroup, ProducerGroup, QueueId, QueueOffset, Topic,
};

use super::convert::{shard_from_db, u32_from_db, u64_from_db};
use super::driver::Columns;
use crate::error::Result;
use crate::model::{
    ConsumerOffset, Epoch, HalfMessage, NodeId, NodeInfo, QueueKey, QueueSegment, SegmentRef,
    ShardLease, SubscriptionGroupConfig, TopicConfig,
};

/// `topic, read_queue_nums, write_queue_nums, perm, topic_filter_type, topic_sys_flag,
/// order_flag, retention_hours`.
pub(crate) fn topic(r: impl Columns) -> Result<TopicConfig, sqlx::Error> {
    Ok(TopicConfig {
        topic: Topic::new(r.text(0)?),
        read_queue_nums: r.int4(1)?,
        write_queue_nums: r.int4(2)?,
        perm: r.int4(3)?,
        topic_filter_type: r.text(4)?,
        topic_sys_flag: r.int4(5)?,
        order: r.flag(6)?,
        retention_hours: r.opt_int(7)?,
    })
}

/// `group_name, consume_enable, consume_broadcast_enable, retry_queue_nums, retry_max_times,
/// details`.
pub(crate) fn group(r: impl Columns) -> Result<SubscriptionGroupConfig, sqlx::Error> {
    Ok(SubscriptionGroupConfig {
        group: ConsumerGroup::new(r.text(0)?),
        consume_enable: r.flag(1)?,
        consume_broadcast_enable: r.flag(2)?,
        retry_queue_nums: r.int4(3)?,
        retry_max_times: r.int4(4)?,
        details: r.opt_text(5)?,
    })
}

/// `node_id, addr, heartbeat_ms`.
pub(crate) fn node(r: impl Columns) -> Result<NodeInfo, sqlx::Error> {
    Ok(NodeInfo {
        node: NodeId(r.text(0)?),
        addr: r.text(1)?,
        heartbeat_ms: r.int(2)?,
    })
}

/// A `shards` row as lease calls return it: `shard_id, epoch, owner, expires_at_ms`.
#[derive(Debug)]
pub(crate) struct LeaseRow {
    shard: i64,
    epoch: i64,
    owner: Option<String>,
    expires_at_ms: i64,
}

impl LeaseRow {
    pub(crate) fn read(r: impl Columns) -> Result<Self, sqlx::Error> {
        Ok(Self {
            shard: r.int(0)?,
            epoch: r.int(1)?,
            owner: r.opt_text(2)?,
            expires_at_ms: r.int(3)?,
        })
    }

    pub(crate) fn into_lease(self) -> Result<ShardLease> {
        Ok(ShardLease {
            shard: shard_from_db(self.shard)?,
            epoch: Epoch(self.epoch),
            owner: self.owner.map(NodeId),
            expires_at_ms: self.expires_at_ms,
        })
    }
}

/// A committed offset of a known group: `shard_id, topic, queue_id, queue_offset`.
#[derive(Debug)]
pub(crate) struct OffsetRow {
    shard: i64,
    topic: String,
    queue_id: i32,
    offset: i64,
}

impl OffsetRow {
    pub(crate) fn read(r: impl Columns) -> Result<Self, sqlx::Error> {
        Ok(Self {
            shard: r.int(0)?,
            topic: r.text(1)?,
            queue_id: r.int4(2)?,
            offset: r.int(3)?,
        })
    }

    pub(crate) fn into_offset(self, group: &ConsumerGroup) -> Result<ConsumerOffset> {
        Ok(ConsumerOffset {
            group: group.clone(),
            queue: QueueKey {
                shard: shard_from_db(self.shard)?,
                topic: Topic::new(self.topic),
                queue_id: QueueId(self.queue_id),
            },
            offset: QueueOffset(self.offset),
        })
    }
}

/// The columns of a pending half message, in [`HalfRow::read`]'s order.
macro_rules! half_columns {
    () => {
        "shard_id, handle, queue_offset, producer_group, transaction_id, real_topic, \
         real_queue_id, stored_at_ms, check_times, next_check_ms"
    };
}

pub(crate) use half_columns;

/// A `half_messages` row: [`half_columns!`].
#[derive(Debug)]
pub(crate) struct HalfRow {
    shard: i64,
    handle: i64,
    queue_offset: i64,
    producer_group: String,
    transaction_id: String,
    real_topic: String,
    real_queue_id: i32,
    stored_at_ms: i64,
    check_times: i32,
    next_check_ms: i64,
}

impl HalfRow {
    pub(crate) fn read(r: impl Columns) -> Result<Self, sqlx::Error> {
        Ok(Self {
            shard: r.int(0)?,
            handle: r.int(1)?,
            queue_offset: r.int(2)?,
            producer_group: r.text(3)?,
            transaction_id: r.text(4)?,
            real_topic: r.text(5)?,
            real_queue_id: r.int4(6)?,
            stored_at_ms: r.int(7)?,
            check_times: r.int4(8)?,
            next_check_ms: r.int(9)?,
        })
    }

    pub(crate) fn into_half(self) -> Result<HalfMessage> {
        Ok(HalfMessage {
            shard: shard_from_db(self.shard)?,
            handle: CommitLogOffset(self.handle),
            queue_offset: QueueOffset(self.queue_offset),
            producer_group: ProducerGroup::new(self.producer_group),
            transaction_id: self.transaction_id,
            real_topic: Topic::new(self.real_topic),
            real_queue_id: QueueId(self.real_queue_id),
            stored_at_ms: self.stored_at_ms,
            check_times: self.check_times,
            next_check_ms: self.next_check_ms,
        })
    }
}

/// A section's location: `object_key, shard_id, section_pos, section_len, footer_pos,
/// footer_len, commit_log_start, commit_log_end` (of `segments`).
#[derive(Debug)]
pub(crate) struct SegmentRow {
    object_key: String,
    shard: i64,
    section_pos: i64,
    section_len: i64,
    footer_pos: i64,
    footer_len: i64,
    pub(crate) commit_log_start: i64,
    commit_log_end: i64,
}

impl SegmentRow {
    pub(crate) fn read(r: impl Columns) -> Result<Self, sqlx::Error> {
        Self::read_ref(&r)
    }

    fn read_ref(r: &impl Columns) -> Result<Self, sqlx::Error> {
        Ok(Self {
            object_key: r.text(0)?,
            shard: r.int(1)?,
            section_pos: r.int(2)?,
            section_len: r.int(3)?,
            footer_pos: r.int(4)?,
            footer_len: r.int(5)?,
            commit_log_start: r.int(6)?,
            commit_log_end: r.int(7)?,
        })
    }

    pub(crate) fn into_ref(self) -> Result<SegmentRef> {
        Ok(SegmentRef {
            object_key: self.object_key,
            shard: shard_from_db(self.shard)?,
            section_pos: u64_from_db("section position", self.section_pos)?,
            section_len: u64_from_db("section length", self.section_len)?,
            footer_pos: u64_from_db("footer position", self.footer_pos)?,
            footer_len: u64_from_db("footer length", self.footer_len)?,
            commit_log_start: CommitLogOffset(self.commit_log_start),
            commit_log_end: CommitLogOffset(self.commit_log_end),
        })
    }
}

/// A queue's range in a section: [`SegmentRow`]'s columns, then `first_offset, entry_count,
/// min_store_ts, max_store_ts` (of `queue_segments`).
#[derive(Debug)]
pub(crate) struct QueueSegmentRow {
    segment: SegmentRow,
    first_offset: i64,
    count: i64,
    min_store_ts: i64,
    max_store_ts: i64,
}

impl QueueSegmentRow {
    pub(crate) fn read(r: impl Columns) -> Result<Self, sqlx::Error> {
        Ok(Self {
            segment: SegmentRow::read_ref(&r)?,
            first_offset: r.int(8)?,
            count: r.int(9)?,
            min_store_ts: r.int(10)?,
            max_store_ts: r.int(11)?,
        })
    }

    pub(crate) fn into_queue_segment(self) -> Result<QueueSegment> {
        Ok(QueueSegment {
            segment: self.segment.into_ref()?,
            first_offset: QueueOffset(self.first_offset),
            count: u32_from_db("entry count", self.count)?,
            min_store_ts: self.min_store_ts,
            max_store_ts: self.max_store_ts,
        })
    }
}

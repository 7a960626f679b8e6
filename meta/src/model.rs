//! Records kept in meta. Vocabulary types (topics, offsets) come from `stratus_compat::types`;
//! records that are Stratus's own (shards, leases, segment commits) are defined here.

use std::fmt;

use serde::{Deserialize, Serialize};
use stratus_compat::types::{
    CommitLogOffset, ConsumerGroup, ProducerGroup, QueueId, QueueOffset, Topic,
};

/// A shard (logical broker) id, 0-based; published as broker name `<cluster>-shard-<id>`… by
/// the gateway.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
pub struct ShardId(pub u32);

impl fmt::Display for ShardId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}", self.0)
    }
}

impl fmt::Debug for ShardId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "ShardId({})", self.0)
    }
}

/// A lease epoch: increases by one each time a shard changes owner.
#[derive(Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize, Debug)]
pub struct Epoch(pub i64);

/// A node id (one gateway process identity, stable across its restarts).
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, Debug)]
pub struct NodeId(pub String);

/// Topic configuration (`TopicConfig.java`).
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize, Debug)]
pub struct TopicConfig {
    /// Topic.
    pub topic: Topic,
    /// Readable queues per shard.
    pub read_queue_nums: i32,
    /// Writable queues per shard.
    pub write_queue_nums: i32,
    /// PermName bits.
    pub perm: i32,
    /// `SINGLE_TAG` / `MULTI_TAG`.
    pub topic_filter_type: String,
    /// TopicSysFlag.
    pub topic_sys_flag: i32,
    /// Ordered topic.
    pub order: bool,
    /// Retention override in hours (None = node default).
    pub retention_hours: Option<i64>,
}

/// Ownership of one shard.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize, Debug)]
pub struct ShardLease {
    /// Shard.
    pub shard: ShardId,
    /// Current epoch.
    pub epoch: Epoch,
    /// Owner, None when free.
    pub owner: Option<NodeId>,
    /// Lease expiry, ms since epoch.
    pub expires_at_ms: i64,
}

/// A queue inside a shard: (shard, topic, queue id).
#[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, Debug)]
pub struct QueueKey {
    /// Shard.
    pub shard: ShardId,
    /// Topic.
    pub topic: Topic,
    /// Queue id.
    pub queue_id: QueueId,
}

/// The entries one segment adds to one queue.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize, Debug)]
pub struct QueueAppend {
    /// Topic.
    pub topic: Topic,
    /// Queue id.
    pub queue_id: QueueId,
    /// Offset of the first entry; must equal the queue's current max offset.
    pub first_offset: QueueOffset,
    /// Entries added (≥ 1).
    pub count: u32,
    /// Smallest store time among them, ms.
    pub min_store_ts: i64,
    /// Largest store time among them, ms.
    pub max_store_ts: i64,
}

/// One shard's section of one uploaded segment object, committed atomically under the
/// shard's epoch.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize, Debug)]
pub struct SegmentCommit {
    /// Shard.
    pub shard: ShardId,
    /// Epoch the writer holds; the commit is refused if the stored epoch differs.
    pub epoch: Epoch,
    /// Writing node.
    pub node: NodeId,
    /// Object key of the segment.
    pub object_key: String,
    /// Byte position of this shard's section inside the object.
    pub section_pos: u64,
    /// Length of the section.
    pub section_len: u64,
    /// Byte position of this section's footer (queue index) inside the object.
    pub footer_pos: u64,
    /// Length of that footer.
    pub footer_len: u64,
    /// First commit-log offset of the section; must equal the shard's stored commit-log end.
    pub commit_log_start: CommitLogOffset,
    /// One past the last commit-log offset of the section.
    pub commit_log_end: CommitLogOffset,
    /// Per queue entries added.
    pub queues: Vec<QueueAppend>,
    /// Commit time, ms.
    pub committed_at_ms: i64,
    /// Metadata changes applied in the same transaction as this section, in order: all of
    /// them when the section commits, none when it is refused (fenced, conflicting). Each
    /// effect must name this section's shard. A retry of an already committed section
    /// applies them again no more than the rest of the section.
    #[serde(default)]
    pub effects: Vec<SegmentEffect>,
}

/// A pending transactional half message.
///
/// Its row exists in meta exactly while the half record's section is committed and the
/// transaction is neither committed, rolled back nor discarded.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize, Debug)]
pub struct HalfMessage {
    /// Shard holding the half record.
    pub shard: ShardId,
    /// Full commit-log handle of the half record (as stored in PHYSICALOFFSET).
    pub handle: CommitLogOffset,
    /// Offset of the half record in the shard's RMQ_SYS_TRANS_HALF_TOPIC queue 0.
    pub queue_offset: QueueOffset,
    /// The producer group (`PGROUP`) to check back with.
    pub producer_group: ProducerGroup,
    /// The message's UNIQ_KEY.
    pub transaction_id: String,
    /// Topic the message goes to when committed (`REAL_TOPIC`).
    pub real_topic: Topic,
    /// Queue the message goes to when committed (`REAL_QID`).
    pub real_queue_id: QueueId,
    /// Store time of the half record, ms.
    pub stored_at_ms: i64,
    /// Check-backs already sent.
    pub check_times: i32,
    /// Earliest time of the next check-back, ms.
    pub next_check_ms: i64,
}

/// A metadata change committed in the same transaction as a segment section.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize, Debug)]
pub enum SegmentEffect {
    /// Insert the pending row of a half message stored in this section. A row already
    /// present under the same (shard, handle) makes the commit a [`MetaError::Conflict`].
    ///
    /// [`MetaError::Conflict`]: crate::MetaError::Conflict
    HalfPrepared(HalfMessage),
    /// Delete the pending row of a half message (its transaction was committed by a record
    /// in this section). A missing row is not an error (idempotent).
    HalfResolved {
        /// Shard holding the half record.
        shard: ShardId,
        /// Full commit-log handle of the half record.
        handle: CommitLogOffset,
    },
    /// Register a timer message stored in this section, due at `due_ms`.
    TimerScheduled {
        /// Shard.
        shard: ShardId,
        /// Handle of the stored timer record.
        handle: CommitLogOffset,
        /// Delivery time, ms since the epoch.
        due_ms: i64,
    },
    /// Remove a timer: its message was delivered by a record in this section (idempotent).
    TimerDelivered {
        /// Shard.
        shard: ShardId,
        /// Handle of the timer record.
        handle: CommitLogOffset,
    },
    /// Advance the delay-level scheduler: a message of `SCHEDULE_TOPIC_XXXX` queue
    /// `level - 1` up to `next_offset` (exclusive) was delivered by a record in this section.
    ScheduleProgress {
        /// Shard.
        shard: ShardId,
        /// Delay level (1-based).
        level: i32,
        /// Next schedule-queue offset to deliver.
        next_offset: QueueOffset,
    },
    /// Add the keys of records stored in this section to the key index (QUERY_MESSAGE).
    /// A (log offset, hash) pair already indexed is left as it is.
    KeysIndexed {
        /// Shard.
        shard: ShardId,
        /// One entry per distinct key of each record.
        keys: Vec<KeyIndexEntry>,
    },
    /// Remember a batch of an idempotent producer stored in this section; the producer's
    /// older batches on that queue beyond the newest five are forgotten.
    ProducerBatch(ProducerBatch),
}

/// A batch of an idempotent (Kafka) producer, as stored on one queue.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize, Debug)]
pub struct ProducerBatch {
    /// Shard of the queue.
    pub shard: ShardId,
    /// Producer id.
    pub producer_id: i64,
    /// Topic.
    pub topic: Topic,
    /// Queue id.
    pub queue_id: QueueId,
    /// Producer epoch.
    pub epoch: i16,
    /// Sequence number of the batch's first record.
    pub first_seq: i32,
    /// Sequence number of its last record.
    pub last_seq: i32,
    /// Queue offset of its first record.
    pub first_offset: QueueOffset,
    /// When its section was committed, ms.
    pub committed_ms: i64,
}

/// One key of one stored record, as the key index holds it.
#[derive(Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Debug)]
pub struct KeyIndexEntry {
    /// 64-bit hash of `topic#key` (the hash is the writer's; meta only compares it).
    pub key_hash: i64,
    /// **Local** commit-log offset of the record in its shard (without the shard bits).
    pub log_offset: CommitLogOffset,
    /// Store time of the record, ms.
    pub store_ts: i64,
    /// For a unique key in the client id layout: its time field (ms since the start of the
    /// producer's month). Such entries are kept in creation-time order, so a commit's
    /// entries land side by side; they are found with [`SegmentCatalog::find_unique_keys`].
    /// `None`: any other key, found with [`SegmentCatalog::find_keys`].
    ///
    /// [`SegmentCatalog::find_unique_keys`]: crate::SegmentCatalog::find_unique_keys
    /// [`SegmentCatalog::find_keys`]: crate::SegmentCatalog::find_keys
    #[serde(default)]
    pub id_time: Option<i64>,
}

/// A record found in the key index: where it is and when it was stored.
#[derive(Clone, Copy, PartialEq, Eq, Serialize, Deserialize, Debug)]
pub struct KeyHit {
    /// **Local** commit-log offset of the record.
    pub log_offset: CommitLogOffset,
    /// Store time, ms.
    pub store_ts: i64,
}

impl SegmentEffect {
    /// The shard whose metadata the effect changes.
    pub fn shard(&self) -> ShardId {
        match self {
            Self::HalfPrepared(h) => h.shard,
            Self::ProducerBatch(b) => b.shard,
            Self::HalfResolved { shard, .. }
            | Self::ScheduleProgress { shard, .. }
            | Self::TimerScheduled { shard, .. }
            | Self::TimerDelivered { shard, .. }
            | Self::KeysIndexed { shard, .. } => *shard,
        }
    }
}

/// A committed segment section as looked up for reads.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize, Debug)]
pub struct SegmentRef {
    /// Object key.
    pub object_key: String,
    /// Shard.
    pub shard: ShardId,
    /// Section position.
    pub section_pos: u64,
    /// Section length.
    pub section_len: u64,
    /// Footer position.
    pub footer_pos: u64,
    /// Footer length.
    pub footer_len: u64,
    /// First commit-log offset of the section.
    pub commit_log_start: CommitLogOffset,
    /// One past its last.
    pub commit_log_end: CommitLogOffset,
}

/// A segment section's entries for one queue.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize, Debug)]
pub struct QueueSegment {
    /// The section.
    pub segment: SegmentRef,
    /// First queue offset in it.
    pub first_offset: QueueOffset,
    /// Entries in it.
    pub count: u32,
    /// Smallest store time, ms.
    pub min_store_ts: i64,
    /// Largest store time, ms.
    pub max_store_ts: i64,
}

/// Bounds of one queue.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize, Debug)]
pub struct QueueRange {
    /// Queue.
    pub queue: QueueKey,
    /// Smallest retained offset.
    pub min_offset: QueueOffset,
    /// Next offset to be written.
    pub max_offset: QueueOffset,
}

/// State a node needs to take over a shard.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize, Debug)]
pub struct ShardState {
    /// Shard.
    pub shard: ShardId,
    /// Next commit-log offset to assign.
    pub commit_log_end: CommitLogOffset,
    /// Every queue of the shard with its bounds.
    pub queues: Vec<QueueRange>,
}

/// A committed consumer offset.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize, Debug)]
pub struct ConsumerOffset {
    /// Group.
    pub group: ConsumerGroup,
    /// Queue.
    pub queue: QueueKey,
    /// Next offset to consume.
    pub offset: QueueOffset,
}

/// Subscription group configuration (`SubscriptionGroupConfig.java`), the fields Stratus uses.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize, Debug)]
pub struct SubscriptionGroupConfig {
    /// Group.
    pub group: ConsumerGroup,
    /// Consumption allowed.
    pub consume_enable: bool,
    /// Broadcasting allowed.
    pub consume_broadcast_enable: bool,
    /// Retry queues (default 1).
    pub retry_queue_nums: i32,
    /// Max reconsume times (default 16).
    pub retry_max_times: i32,
    /// The protocol's other fields of the group, which Stratus keeps without interpreting
    /// (RocketMQ: the `SubscriptionGroupConfig` JSON as sent); `None`: the defaults.
    pub details: Option<String>,
}

/// A gateway node as registered in meta.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize, Debug)]
pub struct NodeInfo {
    /// Node id.
    pub node: NodeId,
    /// Advertised "host:port" of the node's first broker port (shard s is served at port + s).
    pub addr: String,
    /// Last heartbeat, ms since epoch.
    pub heartbeat_ms: i64,
}

/// Retention rules of one pass.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize, Debug)]
pub struct RetentionPolicy {
    /// Default age limit of a queue entry's segment (topics.retention_hours overrides per
    /// topic).
    pub default_retention_ms: i64,
    /// Most bytes of sections one shard keeps (None = no size limit).
    pub max_shard_bytes: Option<u64>,
}

/// What a retention pass removed.
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize, Debug, Default)]
pub struct RetentionOutcome {
    /// Sections (segments rows) deleted.
    pub sections_deleted: u64,
    /// Queues whose min offset moved, with the new min offset (ordered by queue).
    pub queues: Vec<(QueueKey, QueueOffset)>,
    /// Object keys no section of any shard references any more (safe to delete from the
    /// object store), sorted.
    pub released_objects: Vec<String>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_segment_commit_without_effects_deserializes_with_none() {
        let commit = SegmentCommit {
            shard: ShardId(1),
            epoch: Epoch(2),
            node: NodeId("n".into()),
            object_key: "k".into(),
            section_pos: 0,
            section_len: 1,
            footer_pos: 1,
            footer_len: 1,
            commit_log_start: CommitLogOffset(0),
            commit_log_end: CommitLogOffset(1),
            queues: Vec::new(),
            committed_at_ms: 3,
            effects: vec![SegmentEffect::HalfResolved {
                shard: ShardId(1),
                handle: CommitLogOffset(7),
            }],
        };
        let mut json = serde_json::to_value(&commit).expect("serialize");
        let back: SegmentCommit = serde_json::from_value(json.clone()).expect("deserialize");
        assert_eq!(back, commit);
        json.as_object_mut().expect("object").remove("effects");
        let old: SegmentCommit = serde_json::from_value(json).expect("deserialize");
        assert_eq!(old.effects, vec![]);
    }
}

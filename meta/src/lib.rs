//! The metadata service: one async trait ([`MetaStore`]) and its backends.
//!
//! The embedded backend (SQLite in the data dir) is the default and the test backend;
//! PostgreSQL serves many nodes. Every backend passes [`testing::run_all`]. The storage layer
//! (`stratus-segments`) sees only [`SegmentCatalog`], the few calls it makes, which every
//! [`MetaStore`] also is.
//!
//! Layout:
//! - `lib.rs`: the traits and [`open`]; [`model`]: the records; [`error`]: [`MetaError`];
//! - `sql/`: the one SQL layer both backends run on: a store generic over the database
//!   (`sql/store.rs`), the statements by record (`catalog`, `nodes`, `leases`, `segments`,
//!   `lookups`, `half`, `retention`), result rows (`rows`), section checks (`section`),
//!   conversions (`convert`), migrations (`migrations`), the sqlx plumbing stated once
//!   (`driver`), and the `Dialect` seam each backend implements (`dialect`);
//! - [`embedded`] and [`postgres`]: opening each database (files, pools, URL options, its
//!   migrations under `meta/migrations/<backend>/`) and its dialect (`dialect.rs`): error
//!   codes, write transactions, the few statements that differ, and bulk writes (SQLite:
//!   multi-row chunks; PostgreSQL: arrays in one statement). Neither backend uses the other;
//! - [`testing`] (feature `testing`): the conformance suite.
//!
//! Invariants every backend keeps:
//! - a segment commit is accepted only under the shard's current epoch and owner, only if its
//!   commit-log start equals the shard's commit-log end and each queue's first offset equals
//!   the queue's max offset; it is applied atomically (segment rows, queue ranges, max offsets,
//!   commit-log end, and the section's [`SegmentEffect`]s) or not at all;
//! - a pending [`HalfMessage`] row is created only by the commit of the section holding its
//!   half record (a [`SegmentEffect::HalfPrepared`]), so it exists only if that record is
//!   committed; a committed transaction removes it in the same commit as the real message's
//!   section ([`SegmentEffect::HalfResolved`]);
//! - lease epochs only increase;
//! - a shard that was never created (see [`MetaStore::ensure_shards`]) is
//!   [`MetaError::NotFound`] for every lease call, [`SegmentCatalog::shard_state`] and a
//!   commit.
#![warn(missing_docs)]

pub mod embedded;
pub mod error;
pub mod model;
pub mod postgres;
mod sql;
#[cfg(any(test, feature = "testing"))]
pub mod testing;

use std::fmt::Debug;
use std::sync::Arc;

use async_trait::async_trait;
use stratus_compat::types::{CommitLogOffset, ConsumerGroup, QueueOffset, Topic};

pub use error::{MetaError, Result};
pub use model::*;

/// What the storage layer (`stratus-segments`) needs from meta: committing the sections of
/// uploaded segment objects and finding committed sections again. Every [`MetaStore`] is
/// one, so an `Arc<dyn MetaStore>` coerces to an `Arc<dyn SegmentCatalog>`.
#[async_trait]
pub trait SegmentCatalog: Send + Sync + Debug {
    /// Commit-log end and every queue's bounds of a shard: what a new owner loads.
    async fn shard_state(&self, shard: ShardId) -> Result<ShardState>;

    /// Commits the sections of one segment object (one per shard), in one transaction.
    /// Fails with [`MetaError::Fenced`] if any section's epoch/owner is stale and with
    /// [`MetaError::Conflict`] if offsets are not contiguous; nothing is applied then.
    /// Sections are applied in slice order, so two sections of one shard must follow each
    /// other. A malformed section (an append of zero entries, a queue twice, a reversed
    /// commit-log range, an effect naming another shard) is a [`MetaError::Conflict`] too.
    ///
    /// Each section's [`SegmentCommit::effects`] are applied in order in the same
    /// transaction, after its queues: a [`SegmentEffect::HalfPrepared`] whose row already
    /// exists is a [`MetaError::Conflict`]; a [`SegmentEffect::HalfResolved`] of a missing row
    /// does nothing.
    ///
    /// Retries are safe: a section identical to one already committed (same shard, epoch,
    /// object key and commit-log range) is accepted and applies nothing again, its effects
    /// included, so retrying a commit whose outcome was unknown (a lost reply) succeeds
    /// instead of conflicting.
    async fn commit_segment(&self, sections: &[SegmentCommit]) -> Result<()>;
    /// Sections holding entries of `queue` at or after `from`, in offset order, at most
    /// `limit`; the first one contains `from` when `from` is retained.
    async fn queue_segments(
        &self,
        queue: &QueueKey,
        from: QueueOffset,
        limit: u32,
    ) -> Result<Vec<QueueSegment>>;
    /// The first section of `queue` whose max store time ≥ `ts_ms`.
    async fn queue_segment_by_time(
        &self,
        queue: &QueueKey,
        ts_ms: i64,
    ) -> Result<Option<QueueSegment>>;
    /// The section of `shard` containing commit-log offset `offset`.
    async fn segment_by_commit_log_offset(
        &self,
        shard: ShardId,
        offset: CommitLogOffset,
    ) -> Result<Option<SegmentRef>>;
    /// Records of `shard` indexed under `key_hash` ([`SegmentEffect::KeysIndexed`]) whose
    /// store time is in `[begin_ms, end_ms]`, newest first (store time, then log offset,
    /// descending), at most `limit`. Entries below the shard's first retained section are
    /// gone after a retention pass; a hit may still name a record retention removed
    /// meanwhile (readers find no section for it).
    async fn find_keys(
        &self,
        shard: ShardId,
        key_hash: i64,
        begin_ms: i64,
        end_ms: i64,
        limit: u32,
    ) -> Result<Vec<KeyHit>>;
    /// Like [`SegmentCatalog::find_keys`], for entries indexed with
    /// [`KeyIndexEntry::id_time`] = `Some(id_time)`.
    async fn find_unique_keys(
        &self,
        shard: ShardId,
        id_time: i64,
        key_hash: i64,
        begin_ms: i64,
        end_ms: i64,
        limit: u32,
    ) -> Result<Vec<KeyHit>>;
}

/// The metadata store.
#[async_trait]
pub trait MetaStore: SegmentCatalog {
    // ----- topics -----

    /// One topic's config.
    async fn get_topic(&self, topic: &Topic) -> Result<Option<TopicConfig>>;
    /// Every topic, ordered by name.
    async fn list_topics(&self) -> Result<Vec<TopicConfig>>;
    /// Creates or replaces a topic config.
    async fn put_topic(&self, config: &TopicConfig) -> Result<()>;
    /// Creates the topic unless it exists; returns the stored config either way.
    async fn create_topic_if_absent(&self, config: &TopicConfig) -> Result<TopicConfig>;
    /// Deletes a topic config (data is left to retention).
    async fn delete_topic(&self, topic: &Topic) -> Result<()>;

    // ----- shards and leases -----

    /// Makes sure shards `0..count` exist (free, epoch 0); returns every shard's lease.
    async fn ensure_shards(&self, count: u32) -> Result<Vec<ShardLease>>;
    /// Every shard's lease, ordered by shard id.
    async fn list_shards(&self) -> Result<Vec<ShardLease>>;
    /// Takes `shard` for `node` if it is free, expired at `now_ms`, or already held by `node`
    /// (a restarted process of the same node): always bumps the epoch, so commits of a
    /// previous incarnation are fenced (extending a held lease is `renew_shard`'s job); sets expiry `now_ms + ttl_ms`. `None` if another
    /// live node holds it.
    async fn acquire_shard(
        &self,
        shard: ShardId,
        node: &NodeId,
        now_ms: i64,
        ttl_ms: i64,
    ) -> Result<Option<ShardLease>>;
    /// Extends our lease to `now_ms + ttl_ms`; [`MetaError::Fenced`] if the epoch or owner
    /// changed. A lease that expired but that nobody took is renewed all the same (same
    /// epoch): an owner cut off from meta for a while keeps its shards when it gets through.
    async fn renew_shard(
        &self,
        shard: ShardId,
        node: &NodeId,
        epoch: Epoch,
        now_ms: i64,
        ttl_ms: i64,
    ) -> Result<ShardLease>;
    /// Gives the shard up (owner cleared, epoch kept) if we still hold `epoch`. Releasing
    /// again under the same epoch is a no-op; [`MetaError::Fenced`] if the epoch moved on.
    async fn release_shard(&self, shard: ShardId, node: &NodeId, epoch: Epoch) -> Result<()>;

    // ----- segments (commits, lookups and shard states are [`SegmentCatalog`]) -----

    /// Bounds of one queue (min 0 / max 0 when unknown).
    async fn queue_range(&self, queue: &QueueKey) -> Result<QueueRange>;

    // ----- transactional half messages -----
    //
    // Rows are created and (on commit of the transaction) removed only by segment commits,
    // through [`SegmentCommit::effects`]; the calls below read them, record check-backs, and
    // remove rows of rolled-back or discarded transactions. None of them is fenced by the
    // shard's epoch: the caller acts as the shard's owner.

    /// One pending half message.
    async fn half_message(
        &self,
        shard: ShardId,
        handle: CommitLogOffset,
    ) -> Result<Option<HalfMessage>>;
    /// Pending half messages of `shard` whose `next_check_ms` ≤ `now_ms`, oldest first (by
    /// `next_check_ms`, then handle), at most `limit`.
    async fn due_half_messages(
        &self,
        shard: ShardId,
        now_ms: i64,
        limit: u32,
    ) -> Result<Vec<HalfMessage>>;
    /// Records a check-back: sets `check_times` and `next_check_ms`. Missing row → `Ok(false)`.
    async fn record_half_check(
        &self,
        shard: ShardId,
        handle: CommitLogOffset,
        check_times: i32,
        next_check_ms: i64,
    ) -> Result<bool>;
    /// Deletes a pending row (rollback, or discard after max checks); true if it existed.
    async fn resolve_half_message(&self, shard: ShardId, handle: CommitLogOffset) -> Result<bool>;
    /// Delivery progress of the delay-level scheduler of a shard: (level, next offset) for
    /// every level that has delivered something (advanced by
    /// [`SegmentEffect::ScheduleProgress`]).
    async fn schedule_progress(&self, shard: ShardId) -> Result<Vec<(i32, QueueOffset)>>;

    /// Timer messages of a shard due at `now_ms` ([`SegmentEffect::TimerScheduled`] and not
    /// yet [`SegmentEffect::TimerDelivered`]), earliest first: (handle, due time).
    async fn due_timers(
        &self,
        shard: ShardId,
        now_ms: i64,
        limit: u32,
    ) -> Result<Vec<(CommitLogOffset, i64)>>;

    /// Every pending half message of a shard (admin/tests), ordered by handle.
    async fn half_messages(&self, shard: ShardId) -> Result<Vec<HalfMessage>>;

    // ----- consumer offsets and groups -----

    /// Stores offsets (upsert), in one round trip. A key given twice keeps its last value.
    async fn commit_consumer_offsets(&self, offsets: &[ConsumerOffset]) -> Result<()>;
    /// One committed offset.
    async fn consumer_offset(
        &self,
        group: &ConsumerGroup,
        queue: &QueueKey,
    ) -> Result<Option<QueueOffset>>;
    /// The batches of idempotent producers remembered on `shard`
    /// ([`SegmentEffect::ProducerBatch`]), by producer, topic, queue and offset.
    async fn producer_batches(&self, shard: ShardId) -> Result<Vec<ProducerBatch>>;
    /// Forgets the batches committed before `before_ms`; how many.
    async fn expire_producer_batches(&self, before_ms: i64) -> Result<u64>;
    /// Every committed offset of a group, ordered by queue (shard, topic, queue id).
    async fn group_offsets(&self, group: &ConsumerGroup) -> Result<Vec<ConsumerOffset>>;
    /// One subscription group.
    async fn get_group(&self, group: &ConsumerGroup) -> Result<Option<SubscriptionGroupConfig>>;
    /// Creates or replaces a subscription group.
    async fn put_group(&self, config: &SubscriptionGroupConfig) -> Result<()>;
    /// Every subscription group, ordered by name.
    async fn list_groups(&self) -> Result<Vec<SubscriptionGroupConfig>>;
    /// Deletes a subscription group; true if it existed. Its offsets stay (see
    /// [`delete_group_offsets`](Self::delete_group_offsets)).
    async fn delete_group(&self, group: &ConsumerGroup) -> Result<bool>;
    /// Deletes a group's committed offsets on one shard; how many there were.
    async fn delete_group_offsets(&self, group: &ConsumerGroup, shard: ShardId) -> Result<u64>;
    /// The groups with a committed offset on some queue of `topic` on `shard`, ordered by
    /// name.
    async fn offset_groups(&self, shard: ShardId, topic: &Topic) -> Result<Vec<ConsumerGroup>>;

    // ----- node membership -----

    /// Registers or refreshes a node (upsert of addr and heartbeat_ms).
    async fn heartbeat_node(&self, node: &NodeInfo) -> Result<()>;
    /// Every registered node, ordered by node id.
    async fn list_nodes(&self) -> Result<Vec<NodeInfo>>;
    /// Removes a node's row (graceful shutdown). Missing row is Ok.
    async fn remove_node(&self, node: &NodeId) -> Result<()>;

    // ----- retention -----

    /// One retention pass over `shard`, fenced like a commit ([`MetaError::Fenced`] unless
    /// `node` holds `epoch`; [`MetaError::NotFound`] for an unknown shard), in one
    /// transaction:
    /// 1. `queue_segments` rows of the shard whose `max_store_ts < now_ms - retention(topic)`
    ///    are deleted, where `retention(topic) = topics.retention_hours * 3_600_000` if set,
    ///    else `policy.default_retention_ms`;
    /// 2. if `policy.max_shard_bytes` is set and the sum of `section_len` of the shard's
    ///    sections exceeds it, whole sections are deleted oldest first (by
    ///    `commit_log_start`), with all their `queue_segments` rows, until within the limit;
    /// 3. sections of the shard left without any `queue_segments` row are deleted;
    /// 4. every touched queue's min offset becomes the first offset of its earliest
    ///    remaining `queue_segments` row, or its max offset when none remains (min offsets
    ///    never go backwards; max offsets never change).
    ///
    /// Returns what moved ([`RetentionOutcome::queues`] ordered by queue) and the object
    /// keys of deleted sections that no segments row (any shard) references any more
    /// (sorted).
    async fn apply_retention(
        &self,
        shard: ShardId,
        node: &NodeId,
        epoch: Epoch,
        now_ms: i64,
        policy: &RetentionPolicy,
    ) -> Result<RetentionOutcome>;
    /// The subset of `keys` that no segments row references (orphan candidates: uploaded,
    /// never committed, or released), in input order.
    async fn unreferenced_objects(&self, keys: &[String]) -> Result<Vec<String>>;

    // ----- name-server KV config -----

    /// PUT_KV_CONFIG.
    async fn put_kv(&self, namespace: &str, key: &str, value: &str) -> Result<()>;
    /// GET_KV_CONFIG.
    async fn get_kv(&self, namespace: &str, key: &str) -> Result<Option<String>>;
    /// Every (key, value) of `namespace`, ordered by key (byte order); empty for an
    /// unknown namespace.
    async fn list_kv(&self, namespace: &str) -> Result<Vec<(String, String)>>;
    /// DELETE_KV_CONFIG.
    async fn delete_kv(&self, namespace: &str, key: &str) -> Result<()>;

    /// Closes connections.
    async fn close(&self);
}

/// Opens the backend named by `url`: `embedded://<path>` (SQLite file; a relative path is
/// relative to the working dir; an existing directory gets `stratus-meta.sqlite` inside it),
/// `memory://` (embedded, in memory, for tests), or `postgres://…` / `postgresql://…`
/// (PostgreSQL; see [`postgres`] for the URL's options).
///
/// # Errors
/// [`MetaError::Config`] for an unknown scheme, [`MetaError::Unavailable`] if the database
/// cannot be opened, [`MetaError::Corrupt`] if it is not a Stratus meta database.
pub async fn open(url: &str) -> Result<Arc<dyn MetaStore>> {
    if let Some(path) = url.strip_prefix("embedded://") {
        return Ok(Arc::new(embedded::EmbeddedMeta::open(path).await?));
    }
    if url == "memory://" {
        return Ok(Arc::new(embedded::EmbeddedMeta::in_memory().await?));
    }
    if url.starts_with("postgres://") || url.starts_with("postgresql://") {
        return Ok(Arc::new(postgres::PostgresMeta::open(url).await?));
    }
    Err(MetaError::Config(format!("unknown metadata url {url:?}")))
}

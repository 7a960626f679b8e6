//! The conformance suite every backend must pass: `run_all(&store)` on an empty store.
//!
//! Each check is a small async function named for the behaviour it pins down; it asserts
//! exact stored values, so a backend that skips an invariant fails here. Checks share one
//! store, so each works on its own shards, topics, groups and KV namespace; [`run_all`]
//! creates the shards once after the shard-creation check.
//!
//! A failed check panics (with the check's message): this is test code compiled into the
//! library behind feature `testing` so other crates' tests can run it too.

mod batches;
mod catalog;
mod half;
mod keys;
mod leases;
mod lookups;
mod nodes;
mod producers;
mod retention;
mod segments;

use stratus_compat::types::{CommitLogOffset, QueueId, QueueOffset, Topic};

use crate::MetaStore;
use crate::error::MetaError;
use crate::model::{
    Epoch, NodeId, QueueAppend, QueueKey, QueueRange, QueueSegment, SegmentCommit, SegmentRef,
    ShardId, ShardState,
};

/// Shards [`run_all`] creates after the shard-creation check. Checks use distinct ids:
/// 0–3 shard creation, 4–10 leases, 11–20 commits, 21–23 lookups, 24–25 batches, 26–33 half
/// messages, schedule progress and timers; 34–39 retention; 40–42 the key index; 43 producer batches; 9999 is a shard that never exists.
const SHARDS: u32 = 44;

/// Runs every conformance check against `store` (which must be empty). Panics on failure.
pub async fn run_all(store: &dyn MetaStore) {
    // Shards first: this check needs an empty shard table.
    leases::ensure_shards_creates_missing_free_shards(store).await;
    let all = store.ensure_shards(SHARDS).await.expect("ensure shards");
    assert_eq!(
        all.len(),
        SHARDS as usize,
        "shards after ensure_shards({SHARDS})"
    );

    catalog::topic_put_get_list_delete(store).await;
    catalog::create_topic_if_absent_returns_the_stored_config(store).await;
    catalog::kv_put_get_delete(store).await;
    catalog::kv_list_by_namespace(store).await;
    catalog::subscription_groups_put_get_list(store).await;
    catalog::subscription_groups_delete_keeps_offsets_until_asked(store).await;
    catalog::consumer_offsets_upsert_and_read(store).await;
    catalog::consumer_offsets_last_duplicate_wins(store).await;
    catalog::consumer_offsets_large_batch(store).await;

    leases::acquire_free_shard_bumps_epoch(store).await;
    leases::acquire_held_shard_is_refused_until_expiry(store).await;
    leases::reacquiring_own_shard_bumps_epoch_and_fences_the_old_incarnation(store).await;
    leases::renew_extends_and_fences_stale_holders(store).await;
    leases::renew_after_expiry_keeps_an_untaken_lease(store).await;
    leases::release_clears_owner_and_keeps_epoch(store).await;
    leases::lease_calls_on_unknown_shard_are_not_found(store).await;
    leases::concurrent_acquires_have_one_winner(store).await;
    leases::epochs_only_increase_across_takeovers(store).await;

    segments::commit_segment_applies_queues_and_commit_log(store).await;
    segments::commit_segment_refuses_stale_epoch(store).await;
    segments::commit_segment_refuses_other_owner(store).await;
    segments::commit_segment_refuses_commit_log_gap(store).await;
    segments::commit_segment_refuses_queue_gap_and_rolls_back_all_sections(store).await;
    segments::commit_segment_fenced_section_rolls_back_earlier_sections(store).await;
    segments::commit_segment_retry_of_committed_section_is_accepted_once(store).await;
    batches::commit_segment_rejects_malformed_sections(store).await;
    lookups::queue_segments_lookups(store).await;
    lookups::lookups_by_time_and_commit_log_offset(store).await;
    lookups::queue_range_of_unknown_queue_is_zero(store).await;
    batches::sections_of_one_shard_in_one_call_apply_in_order(store).await;
    batches::commit_segment_touching_many_queues(store).await;

    half::half_prepared_is_visible_only_once_its_section_commits(store).await;
    half::refused_commits_apply_no_effects(store).await;
    half::half_resolved_deletes_and_is_idempotent(store).await;
    half::due_half_messages_are_ordered_and_limited(store).await;
    half::record_half_check_and_resolve(store).await;
    half::schedule_progress_advances_with_its_section(store).await;
    half::timers_follow_their_sections(store).await;

    keys::keys_are_indexed_with_their_sections(store).await;
    keys::retention_removes_keys_of_deleted_sections(store).await;
    producers::producer_batches_keep_the_newest_five_and_expire(store).await;

    nodes::node_heartbeat_list_remove(store).await;
    retention::retention_by_age_with_topic_override(store).await;
    retention::retention_by_size_deletes_oldest_sections_first(store).await;
    retention::retention_is_fenced_like_a_commit(store).await;
    retention::shared_object_is_released_with_its_last_section(store).await;
    retention::unreferenced_objects_keeps_input_order(store).await;
    retention::sections_with_pending_timers_or_halves_are_kept(store).await;
}

// ----- helpers shared by the checks -----

fn node(name: &str) -> NodeId {
    NodeId(name.to_owned())
}

fn queue(shard: u32, topic: &str, queue_id: i32) -> QueueKey {
    QueueKey {
        shard: ShardId(shard),
        topic: Topic::new(topic),
        queue_id: QueueId(queue_id),
    }
}

fn append(
    topic: &str,
    queue_id: i32,
    first: i64,
    count: u32,
    min_ts: i64,
    max_ts: i64,
) -> QueueAppend {
    QueueAppend {
        topic: Topic::new(topic),
        queue_id: QueueId(queue_id),
        first_offset: QueueOffset(first),
        count,
        min_store_ts: min_ts,
        max_store_ts: max_ts,
    }
}

/// A section of object `key` for `shard` covering commit-log `[start, end)`; positions are
/// derived from `start` so each section's values are distinct.
fn section(
    shard: u32,
    epoch: Epoch,
    writer: &NodeId,
    key: &str,
    start: i64,
    end: i64,
    queues: Vec<QueueAppend>,
) -> SegmentCommit {
    let pos = u64::try_from(start).expect("test offsets are positive");
    SegmentCommit {
        shard: ShardId(shard),
        epoch,
        node: writer.clone(),
        object_key: key.to_owned(),
        section_pos: pos + 7,
        section_len: 1000 + pos,
        footer_pos: pos + 2000,
        footer_len: 64 + pos,
        commit_log_start: CommitLogOffset(start),
        commit_log_end: CommitLogOffset(end),
        queues,
        committed_at_ms: 1_700_000_000_000 + start,
        effects: Vec::new(),
    }
}

/// Takes `shard` for `who` at time 0 with a long lease; returns the epoch.
async fn take(store: &dyn MetaStore, shard: u32, who: &NodeId) -> Epoch {
    store
        .acquire_shard(ShardId(shard), who, 0, 1_000_000)
        .await
        .expect("acquire shard")
        .expect("shard is free")
        .epoch
}

fn range(q: &QueueKey, min: i64, max: i64) -> QueueRange {
    QueueRange {
        queue: q.clone(),
        min_offset: QueueOffset(min),
        max_offset: QueueOffset(max),
    }
}

fn seg_ref(s: &SegmentCommit) -> SegmentRef {
    SegmentRef {
        object_key: s.object_key.clone(),
        shard: s.shard,
        section_pos: s.section_pos,
        section_len: s.section_len,
        footer_pos: s.footer_pos,
        footer_len: s.footer_len,
        commit_log_start: s.commit_log_start,
        commit_log_end: s.commit_log_end,
    }
}

/// What `queue_segments` must return for append `i` of section `s`.
fn queue_seg(s: &SegmentCommit, i: usize) -> QueueSegment {
    let a = &s.queues[i];
    QueueSegment {
        segment: seg_ref(s),
        first_offset: a.first_offset,
        count: a.count,
        min_store_ts: a.min_store_ts,
        max_store_ts: a.max_store_ts,
    }
}

async fn state(store: &dyn MetaStore, shard: u32) -> ShardState {
    store
        .shard_state(ShardId(shard))
        .await
        .expect("shard state")
}

fn empty_state(shard: u32, end: i64, queues: Vec<QueueRange>) -> ShardState {
    ShardState {
        shard: ShardId(shard),
        commit_log_end: CommitLogOffset(end),
        queues,
    }
}

fn expect_conflict(r: Result<(), MetaError>, what: &str) {
    assert!(
        matches!(r, Err(MetaError::Conflict(_))),
        "{what}: want Conflict, got {r:?}"
    );
}

//! Checks for pending transactional half messages: rows appear and disappear only with the
//! segment sections carrying their effects, and the checker's reads and writes.

use stratus_compat::types::{CommitLogOffset, ProducerGroup, QueueId, QueueOffset, Topic};

use super::{append, expect_conflict, node, queue, range, section, state, take};
use crate::MetaStore;
use crate::error::MetaError;
use crate::model::{Epoch, HalfMessage, NodeId, SegmentCommit, SegmentEffect, ShardId};

const HALF_TOPIC: &str = "RMQ_SYS_TRANS_HALF_TOPIC";

/// A pending half message of `shard` at `handle`; the other fields derive from the handle so
/// that each row is distinct.
fn half(shard: u32, handle: i64, queue_offset: i64, next_check_ms: i64) -> HalfMessage {
    HalfMessage {
        shard: ShardId(shard),
        handle: CommitLogOffset(handle),
        queue_offset: QueueOffset(queue_offset),
        producer_group: ProducerGroup::new(format!("pg-{shard}")),
        transaction_id: format!("7F000001{handle:020X}"),
        real_topic: Topic::new(format!("real-{shard}")),
        real_queue_id: QueueId(i32::try_from(handle % 4).expect("small")),
        stored_at_ms: 1_700_000_000_000 + handle,
        check_times: 0,
        next_check_ms,
    }
}

fn prepared(h: &HalfMessage) -> SegmentEffect {
    SegmentEffect::HalfPrepared(h.clone())
}

fn resolved(h: &HalfMessage) -> SegmentEffect {
    SegmentEffect::HalfResolved {
        shard: h.shard,
        handle: h.handle,
    }
}

/// A section appending `count` records to the shard's half queue from `first`, carrying
/// `effects`.
#[allow(clippy::too_many_arguments)]
fn half_section(
    shard: u32,
    epoch: Epoch,
    writer: &NodeId,
    key: &str,
    start: i64,
    end: i64,
    first: i64,
    count: u32,
    effects: Vec<SegmentEffect>,
) -> SegmentCommit {
    SegmentCommit {
        effects,
        ..section(
            shard,
            epoch,
            writer,
            key,
            start,
            end,
            vec![append(HALF_TOPIC, 0, first, count, 1, 2)],
        )
    }
}

async fn get(store: &dyn MetaStore, h: &HalfMessage) -> Option<HalfMessage> {
    store
        .half_message(h.shard, h.handle)
        .await
        .expect("half message")
}

async fn all(store: &dyn MetaStore, shard: u32) -> Vec<HalfMessage> {
    store
        .half_messages(ShardId(shard))
        .await
        .expect("half messages")
}

fn expect_fenced(r: Result<(), MetaError>, what: &str) {
    assert!(
        matches!(r, Err(MetaError::Fenced { .. })),
        "{what}: want Fenced, got {r:?}"
    );
}

pub(super) async fn half_prepared_is_visible_only_once_its_section_commits(store: &dyn MetaStore) {
    let a = node("node-a");
    let e = take(store, 26, &a).await;
    let (h1, h2) = (half(26, 40, 1, 5), half(26, 10, 0, 5));
    assert_eq!(get(store, &h1).await, None, "nothing before the commit");

    // Refused sections carrying the effect: queue gap, commit-log gap.
    let queue_gap = half_section(26, e, &a, "seg-26-0", 0, 100, 3, 2, vec![prepared(&h1)]);
    expect_conflict(store.commit_segment(&[queue_gap]).await, "queue gap");
    let log_gap = half_section(26, e, &a, "seg-26-0", 5, 100, 0, 2, vec![prepared(&h1)]);
    expect_conflict(store.commit_segment(&[log_gap]).await, "commit-log gap");
    assert_eq!(
        all(store, 26).await,
        vec![],
        "refused commits prepared nothing"
    );

    // Effects out of handle order: the listing is ordered by handle.
    let s1 = half_section(
        26,
        e,
        &a,
        "seg-26-1",
        0,
        100,
        0,
        2,
        vec![prepared(&h1), prepared(&h2)],
    );
    store
        .commit_segment(std::slice::from_ref(&s1))
        .await
        .expect("commit with prepared effects");
    assert_eq!(get(store, &h1).await, Some(h1.clone()), "every field kept");
    assert_eq!(get(store, &h2).await, Some(h2.clone()));
    assert_eq!(all(store, 26).await, vec![h2.clone(), h1.clone()]);

    // A retry of the committed section applies its effects no more than the rest of it: a
    // row removed since does not come back.
    assert!(
        store
            .resolve_half_message(h1.shard, h1.handle)
            .await
            .expect("resolve")
    );
    store
        .commit_segment(std::slice::from_ref(&s1))
        .await
        .expect("retry of an applied commit");
    assert_eq!(
        all(store, 26).await,
        vec![h2.clone()],
        "retry re-applied nothing"
    );

    // Preparing a row that exists is a conflict, and the section is not applied.
    let dup = half_section(26, e, &a, "seg-26-2", 100, 150, 2, 1, vec![prepared(&h2)]);
    expect_conflict(store.commit_segment(&[dup]).await, "prepared twice");
    let q = queue(26, HALF_TOPIC, 0);
    assert_eq!(state(store, 26).await.commit_log_end, CommitLogOffset(100));
    assert_eq!(store.queue_range(&q).await.expect("range"), range(&q, 0, 2));
    assert_eq!(all(store, 26).await, vec![h2]);
}

pub(super) async fn refused_commits_apply_no_effects(store: &dyn MetaStore) {
    let (a, b) = (node("node-a"), node("node-b"));
    let (e27, e28) = (take(store, 27, &a).await, take(store, 28, &a).await);
    let h = half(27, 7, 0, 100);
    store
        .commit_segment(&[half_section(
            27,
            e27,
            &a,
            "seg-27-1",
            0,
            10,
            0,
            1,
            vec![prepared(&h)],
        )])
        .await
        .expect("prepare");
    let (before27, before28) = (state(store, 27).await, state(store, 28).await);
    let (new27, new28) = (half(27, 10, 1, 100), half(28, 0, 0, 100));
    let effects = || vec![resolved(&h), prepared(&new27)];

    let stale = Epoch(e27.0 - 1);
    expect_fenced(
        store
            .commit_segment(&[half_section(
                27,
                stale,
                &a,
                "seg-27-2",
                10,
                20,
                1,
                1,
                effects(),
            )])
            .await,
        "stale epoch",
    );
    expect_fenced(
        store
            .commit_segment(&[half_section(
                27,
                e27,
                &b,
                "seg-27-2",
                10,
                20,
                1,
                1,
                effects(),
            )])
            .await,
        "other owner",
    );
    // A valid section of shard 28 first, then a fenced one of shard 27: neither applies.
    let ok28 = half_section(28, e28, &a, "seg-27-2", 0, 10, 0, 1, vec![prepared(&new28)]);
    expect_fenced(
        store
            .commit_segment(&[
                ok28.clone(),
                half_section(27, stale, &a, "seg-27-2", 10, 20, 1, 1, effects()),
            ])
            .await,
        "second section fenced",
    );
    expect_conflict(
        store
            .commit_segment(&[half_section(
                27,
                e27,
                &a,
                "seg-27-3",
                10,
                20,
                4,
                1,
                effects(),
            )])
            .await,
        "queue gap",
    );
    // Conflict in the second section of a call, after the first section's effects.
    expect_conflict(
        store
            .commit_segment(&[
                ok28.clone(),
                half_section(27, e27, &a, "seg-27-3", 11, 20, 1, 1, effects()),
            ])
            .await,
        "second section conflicting",
    );
    // An effect naming another shard than its section's is malformed.
    expect_conflict(
        store
            .commit_segment(&[half_section(
                27,
                e27,
                &a,
                "seg-27-4",
                10,
                20,
                1,
                1,
                vec![prepared(&new28)],
            )])
            .await,
        "effect on another shard",
    );

    assert_eq!(all(store, 27).await, vec![h.clone()], "no effect applied");
    assert_eq!(all(store, 28).await, vec![], "no effect applied");
    assert_eq!(
        (state(store, 27).await, state(store, 28).await),
        (before27, before28),
        "nothing applied"
    );

    store
        .commit_segment(&[
            ok28,
            half_section(27, e27, &a, "seg-27-5", 10, 20, 1, 1, effects()),
        ])
        .await
        .expect("both sections valid");
    assert_eq!(all(store, 27).await, vec![new27]);
    assert_eq!(all(store, 28).await, vec![new28]);
}

pub(super) async fn half_resolved_deletes_and_is_idempotent(store: &dyn MetaStore) {
    let a = node("node-a");
    let e = take(store, 29, &a).await;
    let q = queue(29, HALF_TOPIC, 0);
    let (h1, h2, h3) = (half(29, 0, 0, 9), half(29, 10, 1, 9), half(29, 20, 2, 9));
    store
        .commit_segment(&[half_section(
            29,
            e,
            &a,
            "seg-29-1",
            0,
            20,
            0,
            2,
            vec![prepared(&h1), prepared(&h2)],
        )])
        .await
        .expect("prepare two");

    // The commit of h1's transaction: a record in another queue and the resolution.
    let commit_h1 = SegmentCommit {
        effects: vec![resolved(&h1)],
        ..section(
            29,
            e,
            &a,
            "seg-29-2",
            20,
            30,
            vec![append("real-29", 0, 0, 1, 3, 3)],
        )
    };
    store.commit_segment(&[commit_h1]).await.expect("resolve");
    assert_eq!(get(store, &h1).await, None, "resolved row deleted");
    assert_eq!(all(store, 29).await, vec![h2.clone()], "others untouched");

    // Resolving again (a missing row) is not an error, and the section still commits.
    let again = SegmentCommit {
        effects: vec![resolved(&h1)],
        ..section(
            29,
            e,
            &a,
            "seg-29-3",
            30,
            40,
            vec![append("real-29", 0, 1, 1, 4, 4)],
        )
    };
    store
        .commit_segment(&[again])
        .await
        .expect("resolving a missing row");
    assert_eq!(state(store, 29).await.commit_log_end, CommitLogOffset(40));
    let real = queue(29, "real-29", 0);
    assert_eq!(
        store.queue_range(&real).await.expect("range"),
        range(&real, 0, 2)
    );

    // Effects apply in order: resolve-then-prepare keeps the row, prepare-then-resolve not.
    store
        .commit_segment(&[half_section(
            29,
            e,
            &a,
            "seg-29-4",
            40,
            50,
            2,
            1,
            vec![resolved(&h3), prepared(&h3), prepared(&h1), resolved(&h1)],
        )])
        .await
        .expect("ordered effects");
    assert_eq!(all(store, 29).await, vec![h2, h3]);
    assert_eq!(store.queue_range(&q).await.expect("range"), range(&q, 0, 3));
}

pub(super) async fn due_half_messages_are_ordered_and_limited(store: &dyn MetaStore) {
    let a = node("node-a");
    let e = take(store, 30, &a).await;
    let ha = half(30, 100, 0, 50);
    let hb = half(30, 200, 1, 10);
    let hc = half(30, 300, 2, 50);
    let hd = half(30, 400, 3, 1_000);
    store
        .commit_segment(&[half_section(
            30,
            e,
            &a,
            "seg-30-1",
            0,
            500,
            0,
            4,
            vec![prepared(&hd), prepared(&hc), prepared(&hb), prepared(&ha)],
        )])
        .await
        .expect("prepare four");
    let due = |now: i64, limit: u32| async move {
        store
            .due_half_messages(ShardId(30), now, limit)
            .await
            .expect("due")
    };
    assert_eq!(due(9, 10).await, vec![], "nothing due yet");
    assert_eq!(due(10, 10).await, vec![hb.clone()], "due at next_check_ms");
    assert_eq!(
        due(50, 10).await,
        vec![hb.clone(), ha.clone(), hc.clone()],
        "by next check, then handle"
    );
    assert_eq!(due(50, 2).await, vec![hb.clone(), ha.clone()], "limit");
    assert_eq!(due(i64::MAX, 0).await, vec![], "limit 0");
    assert_eq!(due(i64::MAX, 10).await, vec![hb, ha, hc, hd]);
    assert_eq!(
        store
            .due_half_messages(ShardId(9_999), i64::MAX, 10)
            .await
            .expect("due"),
        vec![],
        "other shards' rows are not listed"
    );
}

pub(super) async fn record_half_check_and_resolve(store: &dyn MetaStore) {
    let a = node("node-a");
    let e = take(store, 31, &a).await;
    let (h, other) = (half(31, 0, 0, 6_000), half(31, 10, 1, 6_000));
    store
        .commit_segment(&[half_section(
            31,
            e,
            &a,
            "seg-31-1",
            0,
            20,
            0,
            2,
            vec![prepared(&h), prepared(&other)],
        )])
        .await
        .expect("prepare");

    assert!(
        store
            .record_half_check(h.shard, h.handle, 1, 66_000)
            .await
            .expect("record check"),
        "existing row"
    );
    let checked = HalfMessage {
        check_times: 1,
        next_check_ms: 66_000,
        ..h.clone()
    };
    assert_eq!(
        get(store, &h).await,
        Some(checked.clone()),
        "only the two fields"
    );
    assert_eq!(
        get(store, &other).await,
        Some(other.clone()),
        "others untouched"
    );
    assert_eq!(
        store
            .due_half_messages(ShardId(31), 65_999, 10)
            .await
            .expect("due"),
        vec![other.clone()],
        "the next check moved"
    );
    assert!(
        !store
            .record_half_check(ShardId(31), CommitLogOffset(5), 1, 1)
            .await
            .expect("record check"),
        "missing row"
    );
    assert!(
        !store
            .record_half_check(ShardId(9_999), h.handle, 1, 1)
            .await
            .expect("record check"),
        "unknown shard"
    );

    assert!(
        store
            .resolve_half_message(h.shard, h.handle)
            .await
            .expect("resolve"),
        "existed"
    );
    assert!(
        !store
            .resolve_half_message(h.shard, h.handle)
            .await
            .expect("resolve"),
        "already gone"
    );
    assert!(
        !store
            .resolve_half_message(ShardId(9_999), h.handle)
            .await
            .expect("resolve"),
        "unknown shard"
    );
    assert_eq!(get(store, &h).await, None);
    assert!(
        !store
            .record_half_check(h.shard, h.handle, 2, 1)
            .await
            .expect("record check"),
        "resolved row"
    );
    assert_eq!(all(store, 31).await, vec![other]);
    assert_eq!(
        store
            .half_message(ShardId(9_999), h.handle)
            .await
            .expect("get"),
        None
    );
    assert_eq!(all(store, 9_999).await, vec![]);
}

/// Schedule progress advances only with its section's commit and is read back per shard.
pub(super) async fn schedule_progress_advances_with_its_section(store: &dyn MetaStore) {
    let a = node("node-a");
    let e = take(store, 32, &a).await;
    assert!(
        store
            .schedule_progress(ShardId(32))
            .await
            .expect("read")
            .is_empty()
    );
    let progress = |level, next| SegmentEffect::ScheduleProgress {
        shard: ShardId(32),
        level,
        next_offset: QueueOffset(next),
    };
    let first = SegmentCommit {
        effects: vec![progress(3, 1), progress(1, 4)],
        ..section(
            32,
            e,
            &a,
            "seg-32-1",
            0,
            10,
            vec![append("real-32", 0, 0, 1, 1, 1)],
        )
    };
    store.commit_segment(&[first]).await.expect("commit");
    assert_eq!(
        store.schedule_progress(ShardId(32)).await.expect("read"),
        vec![(1, QueueOffset(4)), (3, QueueOffset(1))]
    );
    // A refused (non-contiguous) commit does not move it.
    let refused = SegmentCommit {
        effects: vec![progress(3, 9)],
        ..section(
            32,
            e,
            &a,
            "seg-32-bad",
            99,
            109,
            vec![append("real-32", 0, 1, 1, 2, 2)],
        )
    };
    assert!(store.commit_segment(&[refused]).await.is_err());
    let next = SegmentCommit {
        effects: vec![progress(3, 2)],
        ..section(
            32,
            e,
            &a,
            "seg-32-2",
            10,
            20,
            vec![append("real-32", 0, 1, 1, 2, 2)],
        )
    };
    store.commit_segment(&[next]).await.expect("commit");
    assert_eq!(
        store.schedule_progress(ShardId(32)).await.expect("read"),
        vec![(1, QueueOffset(4)), (3, QueueOffset(2))]
    );
}

/// Timers appear with their section, come out due-ordered, and go with their delivery.
pub(super) async fn timers_follow_their_sections(store: &dyn MetaStore) {
    let a = node("node-a");
    let e = take(store, 33, &a).await;
    let sched = |h: i64, due: i64| SegmentEffect::TimerScheduled {
        shard: ShardId(33),
        handle: CommitLogOffset(h),
        due_ms: due,
    };
    let first = SegmentCommit {
        effects: vec![sched(0, 5_000), sched(10, 3_000), sched(20, 9_000)],
        ..section(
            33,
            e,
            &a,
            "seg-33-1",
            0,
            30,
            vec![append("timer-33", 0, 0, 3, 1, 1)],
        )
    };
    store.commit_segment(&[first]).await.expect("commit");
    assert!(
        store
            .due_timers(ShardId(33), 2_999, 10)
            .await
            .expect("due")
            .is_empty()
    );
    assert_eq!(
        store.due_timers(ShardId(33), 5_000, 10).await.expect("due"),
        vec![(CommitLogOffset(10), 3_000), (CommitLogOffset(0), 5_000)]
    );
    assert_eq!(
        store
            .due_timers(ShardId(33), 10_000, 1)
            .await
            .expect("due")
            .len(),
        1
    );
    let deliver = SegmentCommit {
        effects: vec![SegmentEffect::TimerDelivered {
            shard: ShardId(33),
            handle: CommitLogOffset(10),
        }],
        ..section(
            33,
            e,
            &a,
            "seg-33-2",
            30,
            40,
            vec![append("real-33", 0, 0, 1, 6, 6)],
        )
    };
    store.commit_segment(&[deliver]).await.expect("deliver");
    assert_eq!(
        store
            .due_timers(ShardId(33), 10_000, 10)
            .await
            .expect("due"),
        vec![(CommitLogOffset(0), 5_000), (CommitLogOffset(20), 9_000)]
    );
}

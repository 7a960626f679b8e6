//! Checks for segment commits: fencing, contiguity, atomicity, idempotent retries.

use stratus_compat::types::{CommitLogOffset, QueueOffset};

use super::{
    append, empty_state, expect_conflict, node, queue, queue_seg, range, section, state, take,
};
use crate::MetaStore;
use crate::error::MetaError;
use crate::model::{Epoch, SegmentCommit, ShardId};

fn expect_fenced(r: Result<(), MetaError>, shard: u32, ours: Epoch, stored: Epoch, what: &str) {
    match r {
        Err(MetaError::Fenced {
            shard: s,
            ours: o,
            stored: st,
        }) => {
            assert_eq!((s, o, st), (ShardId(shard), ours, stored), "{what}");
        }
        other => panic!("{what}: want Fenced, got {other:?}"),
    }
}

pub(super) async fn commit_segment_applies_queues_and_commit_log(store: &dyn MetaStore) {
    let a = node("node-a");
    let e = take(store, 11, &a).await;
    assert_eq!(
        state(store, 11).await,
        empty_state(11, 0, vec![]),
        "fresh shard"
    );

    let s1 = section(
        11,
        e,
        &a,
        "seg-11-1",
        0,
        100,
        vec![
            append("happy", 0, 0, 3, 10, 12),
            append("happy", 1, 0, 2, 11, 11),
        ],
    );
    store
        .commit_segment(std::slice::from_ref(&s1))
        .await
        .expect("first commit");
    let (q0, q1) = (queue(11, "happy", 0), queue(11, "happy", 1));
    assert_eq!(
        state(store, 11).await,
        empty_state(11, 100, vec![range(&q0, 0, 3), range(&q1, 0, 2)]),
        "commit-log end and queue max offsets advanced"
    );

    let s2 = section(
        11,
        e,
        &a,
        "seg-11-2",
        100,
        150,
        vec![append("happy", 0, 3, 4, 20, 25)],
    );
    store
        .commit_segment(std::slice::from_ref(&s2))
        .await
        .expect("second commit");
    assert_eq!(
        store.queue_range(&q0).await.expect("range"),
        range(&q0, 0, 7)
    );
    assert_eq!(
        store.queue_range(&q1).await.expect("range"),
        range(&q1, 0, 2),
        "untouched"
    );
    assert_eq!(state(store, 11).await.commit_log_end, CommitLogOffset(150));
    assert_eq!(
        store
            .queue_segments(&q0, QueueOffset(0), 10)
            .await
            .expect("segments"),
        vec![queue_seg(&s1, 0), queue_seg(&s2, 0)],
        "one range per commit, every field kept"
    );
    assert_eq!(
        store
            .queue_segments(&q1, QueueOffset(0), 10)
            .await
            .expect("segments"),
        vec![queue_seg(&s1, 1)]
    );
    store
        .commit_segment(&[])
        .await
        .expect("an empty commit is a no-op");
}

pub(super) async fn commit_segment_refuses_stale_epoch(store: &dyn MetaStore) {
    let (a, b) = (node("node-a"), node("node-b"));
    let e1 = store
        .acquire_shard(ShardId(12), &a, 0, 100)
        .await
        .expect("acquire")
        .expect("free")
        .epoch;
    let first = section(
        12,
        e1,
        &a,
        "seg-12-1",
        0,
        10,
        vec![append("stale", 0, 0, 1, 1, 1)],
    );
    store
        .commit_segment(&[first])
        .await
        .expect("commit under e1");
    let e2 = store
        .acquire_shard(ShardId(12), &b, 100, 100)
        .await
        .expect("acquire")
        .expect("expired")
        .epoch;
    let before = state(store, 12).await;

    let late = section(
        12,
        e1,
        &a,
        "seg-12-2",
        10,
        20,
        vec![append("stale", 0, 1, 1, 2, 2)],
    );
    expect_fenced(
        store.commit_segment(&[late]).await,
        12,
        e1,
        e2,
        "commit under old epoch",
    );
    assert_eq!(
        state(store, 12).await,
        before,
        "fenced commit applied nothing"
    );
    let q = queue(12, "stale", 0);
    assert_eq!(
        store
            .queue_segments(&q, QueueOffset(0), 10)
            .await
            .expect("segs")
            .len(),
        1
    );
    assert_eq!(
        store
            .segment_by_commit_log_offset(ShardId(12), CommitLogOffset(15))
            .await
            .expect("by cl"),
        None,
        "no section recorded"
    );

    let next = section(
        12,
        e2,
        &b,
        "seg-12-3",
        10,
        20,
        vec![append("stale", 0, 1, 1, 2, 2)],
    );
    store
        .commit_segment(&[next])
        .await
        .expect("new owner continues at the stored ends");
    assert_eq!(store.queue_range(&q).await.expect("range"), range(&q, 0, 2));
}

pub(super) async fn commit_segment_refuses_other_owner(store: &dyn MetaStore) {
    let (a, b) = (node("node-a"), node("node-b"));
    let e = take(store, 13, &a).await;
    let by_b = section(
        13,
        e,
        &b,
        "seg-13-b",
        0,
        10,
        vec![append("owner", 0, 0, 1, 1, 1)],
    );
    expect_fenced(
        store.commit_segment(&[by_b]).await,
        13,
        e,
        e,
        "same epoch, other node",
    );

    store
        .release_shard(ShardId(13), &a, e)
        .await
        .expect("release");
    let after = section(
        13,
        e,
        &a,
        "seg-13-a",
        0,
        10,
        vec![append("owner", 0, 0, 1, 1, 1)],
    );
    expect_fenced(
        store.commit_segment(&[after]).await,
        13,
        e,
        e,
        "commit after release",
    );
    assert_eq!(
        state(store, 13).await,
        empty_state(13, 0, vec![]),
        "nothing applied"
    );
}

pub(super) async fn commit_segment_refuses_commit_log_gap(store: &dyn MetaStore) {
    let a = node("node-a");
    let e = take(store, 14, &a).await;
    let q = queue(14, "gap", 0);
    let first = section(
        14,
        e,
        &a,
        "seg-14-1",
        0,
        10,
        vec![append("gap", 0, 0, 2, 1, 1)],
    );
    store.commit_segment(&[first]).await.expect("first");

    let ahead = section(
        14,
        e,
        &a,
        "seg-14-2",
        11,
        20,
        vec![append("gap", 0, 2, 1, 2, 2)],
    );
    expect_conflict(
        store.commit_segment(&[ahead]).await,
        "commit-log start past the end",
    );
    let behind = section(
        14,
        e,
        &a,
        "seg-14-3",
        5,
        20,
        vec![append("gap", 0, 2, 1, 2, 2)],
    );
    expect_conflict(
        store.commit_segment(&[behind]).await,
        "commit-log start before the end",
    );
    let with_new_queue = section(
        14,
        e,
        &a,
        "seg-14-4",
        12,
        20,
        vec![append("gap-new", 3, 0, 1, 2, 2)],
    );
    expect_conflict(
        store.commit_segment(&[with_new_queue]).await,
        "gap with a new queue",
    );

    assert_eq!(
        state(store, 14).await,
        empty_state(14, 10, vec![range(&q, 0, 2)]),
        "refused commits applied nothing, not even the new queue"
    );
}

pub(super) async fn commit_segment_refuses_queue_gap_and_rolls_back_all_sections(
    store: &dyn MetaStore,
) {
    let a = node("node-a");
    let (e15, e16) = (take(store, 15, &a).await, take(store, 16, &a).await);
    let (t0, t1, u0) = (
        queue(15, "qg-t", 0),
        queue(15, "qg-t", 1),
        queue(16, "qg-u", 0),
    );
    let base = section(
        15,
        e15,
        &a,
        "seg-qg-1",
        0,
        10,
        vec![append("qg-t", 0, 0, 2, 1, 1), append("qg-t", 1, 0, 4, 1, 1)],
    );
    store.commit_segment(&[base]).await.expect("base");
    let before = (state(store, 15).await, state(store, 16).await);

    // First section fine, second starts a new queue at 5 instead of 0.
    let ok15 = section(
        15,
        e15,
        &a,
        "seg-qg-2",
        10,
        20,
        vec![append("qg-t", 0, 2, 1, 2, 2)],
    );
    let bad16 = section(
        16,
        e16,
        &a,
        "seg-qg-2",
        0,
        10,
        vec![append("qg-u", 0, 5, 1, 2, 2)],
    );
    expect_conflict(
        store.commit_segment(&[ok15.clone(), bad16]).await,
        "new queue not starting at 0",
    );
    // One queue fine, the other behind its stored max.
    let mixed = section(
        15,
        e15,
        &a,
        "seg-qg-3",
        10,
        20,
        vec![append("qg-t", 0, 2, 1, 2, 2), append("qg-t", 1, 3, 1, 2, 2)],
    );
    expect_conflict(
        store.commit_segment(&[mixed]).await,
        "queue first offset behind max",
    );
    let ahead = section(
        15,
        e15,
        &a,
        "seg-qg-4",
        10,
        20,
        vec![append("qg-t", 0, 3, 1, 2, 2)],
    );
    expect_conflict(
        store.commit_segment(&[ahead]).await,
        "queue first offset past max",
    );

    assert_eq!(
        (state(store, 15).await, state(store, 16).await),
        before,
        "nothing applied"
    );
    assert_eq!(
        store.queue_range(&u0).await.expect("range"),
        range(&u0, 0, 0)
    );
    assert_eq!(
        store
            .queue_segments(&t0, QueueOffset(0), 10)
            .await
            .expect("segs")
            .len(),
        1
    );

    let ok16 = section(
        16,
        e16,
        &a,
        "seg-qg-2",
        0,
        10,
        vec![append("qg-u", 0, 0, 1, 2, 2)],
    );
    store
        .commit_segment(&[ok15, ok16])
        .await
        .expect("both sections valid");
    assert_eq!(
        store.queue_range(&t0).await.expect("range"),
        range(&t0, 0, 3)
    );
    assert_eq!(
        store.queue_range(&t1).await.expect("range"),
        range(&t1, 0, 4)
    );
    assert_eq!(
        store.queue_range(&u0).await.expect("range"),
        range(&u0, 0, 1)
    );
    assert_eq!(state(store, 15).await.commit_log_end, CommitLogOffset(20));
    assert_eq!(state(store, 16).await.commit_log_end, CommitLogOffset(10));
}

pub(super) async fn commit_segment_fenced_section_rolls_back_earlier_sections(
    store: &dyn MetaStore,
) {
    let a = node("node-a");
    let (e17, e18) = (take(store, 17, &a).await, take(store, 18, &a).await);
    let ok17 = section(
        17,
        e17,
        &a,
        "seg-fr-1",
        0,
        10,
        vec![append("fr", 0, 0, 1, 1, 1)],
    );
    let stale18 = Epoch(e18.0 - 1);
    let bad18 = section(
        18,
        stale18,
        &a,
        "seg-fr-1",
        0,
        10,
        vec![append("fr", 0, 0, 1, 1, 1)],
    );
    expect_fenced(
        store.commit_segment(&[ok17, bad18]).await,
        18,
        stale18,
        e18,
        "second section stale",
    );
    assert_eq!(
        state(store, 17).await,
        empty_state(17, 0, vec![]),
        "first section rolled back"
    );
    assert_eq!(
        store
            .segment_by_commit_log_offset(ShardId(17), CommitLogOffset(0))
            .await
            .expect("by cl"),
        None
    );
}

pub(super) async fn commit_segment_retry_of_committed_section_is_accepted_once(
    store: &dyn MetaStore,
) {
    let a = node("node-a");
    let e = take(store, 19, &a).await;
    let q = queue(19, "retry", 0);
    let s = section(
        19,
        e,
        &a,
        "seg-19-1",
        0,
        10,
        vec![append("retry", 0, 0, 2, 1, 1)],
    );
    store
        .commit_segment(std::slice::from_ref(&s))
        .await
        .expect("commit");
    let after = state(store, 19).await;
    store
        .commit_segment(std::slice::from_ref(&s))
        .await
        .expect("retrying an applied commit (ambiguous failure) succeeds");
    assert_eq!(
        state(store, 19).await,
        after,
        "the retry applied nothing again"
    );
    assert_eq!(
        store
            .queue_segments(&q, QueueOffset(0), 10)
            .await
            .expect("segs")
            .len(),
        1
    );

    let other = SegmentCommit {
        object_key: "seg-19-other".into(),
        ..s
    };
    expect_conflict(
        store.commit_segment(&[other]).await,
        "same range from another object",
    );
}

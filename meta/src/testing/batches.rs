//! Checks for the shape of a commit call: several sections of one shard, sections touching
//! many queues, and malformed sections refused before anything is written.

use stratus_compat::types::QueueOffset;

use super::{
    append, empty_state, expect_conflict, node, queue, queue_seg, range, section, state, take,
};
use crate::MetaStore;
use crate::error::MetaError;
use crate::model::SegmentCommit;

pub(super) async fn commit_segment_rejects_malformed_sections(store: &dyn MetaStore) {
    let a = node("node-a");
    let e = take(store, 20, &a).await;
    let zero = section(
        20,
        e,
        &a,
        "seg-20",
        0,
        10,
        vec![append("bad", 0, 0, 0, 1, 1)],
    );
    expect_conflict(
        store.commit_segment(&[zero]).await,
        "append of zero entries",
    );
    let twice = section(
        20,
        e,
        &a,
        "seg-20",
        0,
        10,
        vec![append("bad", 0, 0, 1, 1, 1), append("bad", 0, 1, 1, 1, 1)],
    );
    expect_conflict(
        store.commit_segment(&[twice]).await,
        "queue twice in one section",
    );
    let reversed = section(
        20,
        e,
        &a,
        "seg-20",
        10,
        5,
        vec![append("bad", 0, 0, 1, 1, 1)],
    );
    expect_conflict(
        store.commit_segment(&[reversed]).await,
        "commit-log end before start",
    );
    let huge = SegmentCommit {
        section_pos: u64::MAX,
        ..section(
            20,
            e,
            &a,
            "seg-20",
            0,
            10,
            vec![append("bad", 0, 0, 1, 1, 1)],
        )
    };
    let r = store.commit_segment(&[huge]).await;
    assert!(
        matches!(r, Err(MetaError::Corrupt(_))),
        "u64 beyond i64: {r:?}"
    );
    let unknown = section(
        9_999,
        e,
        &a,
        "seg-x",
        0,
        10,
        vec![append("bad", 0, 0, 1, 1, 1)],
    );
    let r = store.commit_segment(&[unknown]).await;
    assert!(
        matches!(r, Err(MetaError::NotFound { .. })),
        "unknown shard: {r:?}"
    );
    assert_eq!(
        state(store, 20).await,
        empty_state(20, 0, vec![]),
        "nothing applied"
    );
}

pub(super) async fn sections_of_one_shard_in_one_call_apply_in_order(store: &dyn MetaStore) {
    let a = node("node-a");
    let e = take(store, 24, &a).await;
    let q = queue(24, "order", 0);
    let s1 = section(
        24,
        e,
        &a,
        "seg-24-1",
        0,
        10,
        vec![append("order", 0, 0, 2, 1, 1)],
    );
    let s2 = section(
        24,
        e,
        &a,
        "seg-24-2",
        10,
        25,
        vec![append("order", 0, 2, 3, 2, 2)],
    );
    store
        .commit_segment(&[s1.clone(), s2.clone()])
        .await
        .expect("two sections, in order");
    assert_eq!(
        state(store, 24).await,
        empty_state(24, 25, vec![range(&q, 0, 5)])
    );
    assert_eq!(
        store
            .queue_segments(&q, QueueOffset(0), 10)
            .await
            .expect("segs"),
        vec![queue_seg(&s1, 0), queue_seg(&s2, 0)]
    );
}

pub(super) async fn commit_segment_touching_many_queues(store: &dyn MetaStore) {
    let a = node("node-a");
    let e = take(store, 25, &a).await;
    let first: Vec<_> = (0..1_100).map(|i| append("many", i, 0, 2, 1, 1)).collect();
    store
        .commit_segment(&[section(25, e, &a, "seg-25-1", 0, 10, first)])
        .await
        .expect("1100 queues");
    let mut second: Vec<_> = (0..1_100).map(|i| append("many", i, 2, 1, 2, 2)).collect();
    second[1_050].first_offset = QueueOffset(1);
    expect_conflict(
        store
            .commit_segment(&[section(25, e, &a, "seg-25-2", 10, 20, second.clone())])
            .await,
        "one stale queue among 1100",
    );
    second[1_050].first_offset = QueueOffset(2);
    store
        .commit_segment(&[section(25, e, &a, "seg-25-2", 10, 20, second)])
        .await
        .expect("1100 queues again");
    let st = state(store, 25).await;
    assert_eq!(st.queues.len(), 1_100);
    assert!(
        st.queues.iter().all(|r| r.max_offset == QueueOffset(3)),
        "every queue advanced"
    );
    let last = queue(25, "many", 1_099);
    assert_eq!(
        store
            .queue_segments(&last, QueueOffset(0), 10)
            .await
            .expect("segs")
            .len(),
        2
    );
}

//! Checks for the read-path lookups over committed sections: by queue offset, by store
//! time, by commit-log offset, and queue bounds.

use stratus_compat::types::{CommitLogOffset, QueueOffset};

use super::{append, empty_state, node, queue, queue_seg, range, section, seg_ref, state, take};
use crate::MetaStore;
use crate::model::{SegmentCommit, ShardId};

/// Queue `q` in three sections: offsets [0,3) [3,5) [5,9), store times 100–110, 120–130,
/// 140–150, commit log [0,30) [30,50) [50,90); queue `r` only in the second.
async fn three_sections(store: &dyn MetaStore, shard: u32) -> [SegmentCommit; 3] {
    let a = node("node-a");
    let e = take(store, shard, &a).await;
    let key = |i: u32| format!("seg-{shard}-{i}");
    let sections = [
        section(
            shard,
            e,
            &a,
            &key(1),
            0,
            30,
            vec![append("look", 0, 0, 3, 100, 110)],
        ),
        section(
            shard,
            e,
            &a,
            &key(2),
            30,
            50,
            vec![
                append("look", 0, 3, 2, 120, 130),
                append("look-r", 0, 0, 6, 121, 122),
            ],
        ),
        section(
            shard,
            e,
            &a,
            &key(3),
            50,
            90,
            vec![append("look", 0, 5, 4, 140, 150)],
        ),
    ];
    for s in &sections {
        store
            .commit_segment(std::slice::from_ref(s))
            .await
            .expect("commit");
    }
    sections
}

pub(super) async fn queue_segments_lookups(store: &dyn MetaStore) {
    let [s1, s2, s3] = three_sections(store, 21).await;
    let (q, r) = (queue(21, "look", 0), queue(21, "look-r", 0));
    let segs = |from: i64, limit: u32| {
        let q = q.clone();
        async move {
            store
                .queue_segments(&q, QueueOffset(from), limit)
                .await
                .expect("segs")
        }
    };
    let (g1, g2, g3) = (queue_seg(&s1, 0), queue_seg(&s2, 0), queue_seg(&s3, 0));
    assert_eq!(
        segs(0, 10).await,
        vec![g1.clone(), g2.clone(), g3.clone()],
        "from 0"
    );
    assert_eq!(
        segs(2, 10).await,
        vec![g1.clone(), g2.clone(), g3.clone()],
        "from 2"
    );
    assert_eq!(
        segs(3, 10).await,
        vec![g2.clone(), g3.clone()],
        "from a range start"
    );
    assert_eq!(
        segs(4, 10).await,
        vec![g2.clone(), g3.clone()],
        "from inside a range"
    );
    assert_eq!(segs(8, 10).await, vec![g3.clone()], "from the last entry");
    assert_eq!(segs(9, 10).await, vec![], "from the max offset");
    assert_eq!(segs(0, 1).await, vec![g1.clone()], "limit 1");
    assert_eq!(segs(2, 2).await, vec![g1, g2], "limit 2");
    assert_eq!(segs(0, 0).await, vec![], "limit 0");
    assert_eq!(
        store
            .queue_segments(&r, QueueOffset(0), 10)
            .await
            .expect("segs"),
        vec![queue_seg(&s2, 1)],
        "another queue of the same sections"
    );
    let unknown = queue(21, "look-none", 0);
    assert_eq!(
        store
            .queue_segments(&unknown, QueueOffset(0), 10)
            .await
            .expect("segs"),
        vec![]
    );
    let other_shard = queue(22, "look", 0);
    assert_eq!(
        store
            .queue_segments(&other_shard, QueueOffset(0), 10)
            .await
            .expect("segs"),
        vec![],
        "queues are per shard"
    );
}

pub(super) async fn lookups_by_time_and_commit_log_offset(store: &dyn MetaStore) {
    let [s1, s2, s3] = three_sections(store, 22).await;
    let q = queue(22, "look", 0);
    let by_time = |ts: i64| {
        let q = q.clone();
        async move { store.queue_segment_by_time(&q, ts).await.expect("by time") }
    };
    assert_eq!(
        by_time(0).await,
        Some(queue_seg(&s1, 0)),
        "before everything"
    );
    assert_eq!(
        by_time(110).await,
        Some(queue_seg(&s1, 0)),
        "at a max store time"
    );
    assert_eq!(by_time(111).await, Some(queue_seg(&s2, 0)), "just after");
    assert_eq!(by_time(150).await, Some(queue_seg(&s3, 0)), "last");
    assert_eq!(by_time(151).await, None, "after everything");
    assert_eq!(
        store
            .queue_segment_by_time(&queue(22, "look-none", 0), 0)
            .await
            .expect("by time"),
        None
    );

    let by_cl = |offset: i64| async move {
        store
            .segment_by_commit_log_offset(ShardId(22), CommitLogOffset(offset))
            .await
            .expect("by commit log")
    };
    assert_eq!(by_cl(0).await, Some(seg_ref(&s1)), "first byte");
    assert_eq!(
        by_cl(29).await,
        Some(seg_ref(&s1)),
        "last byte of the first section"
    );
    assert_eq!(by_cl(30).await, Some(seg_ref(&s2)), "section boundary");
    assert_eq!(by_cl(89).await, Some(seg_ref(&s3)), "last byte");
    assert_eq!(by_cl(90).await, None, "the commit-log end");
    assert_eq!(by_cl(-1).await, None, "negative");
    assert_eq!(
        store
            .segment_by_commit_log_offset(ShardId(23), CommitLogOffset(0))
            .await
            .expect("by commit log"),
        None,
        "shard without sections"
    );
}

pub(super) async fn queue_range_of_unknown_queue_is_zero(store: &dyn MetaStore) {
    let q = queue(23, "never", 3);
    assert_eq!(store.queue_range(&q).await.expect("range"), range(&q, 0, 0));
    assert_eq!(state(store, 23).await, empty_state(23, 0, vec![]));
}

//! Checks for retention passes (age with per-topic overrides, size, fencing, shared objects)
//! and for orphan-object lookups. Shards 34–39.

use stratus_compat::types::{CommitLogOffset, QueueOffset, Topic};

use super::{append, node, queue, queue_seg, range, section, seg_ref, state, take};
use crate::MetaStore;
use crate::error::MetaError;
use crate::model::{
    Epoch, QueueKey, QueueSegment, RetentionOutcome, RetentionPolicy, SegmentCommit, ShardId,
    TopicConfig,
};

fn topic(name: &str, retention_hours: Option<i64>) -> TopicConfig {
    TopicConfig {
        topic: Topic::new(name),
        read_queue_nums: 4,
        write_queue_nums: 4,
        perm: 6,
        topic_filter_type: "SINGLE_TAG".into(),
        topic_sys_flag: 0,
        order: false,
        retention_hours,
    }
}

fn by_age(default_retention_ms: i64) -> RetentionPolicy {
    RetentionPolicy {
        default_retention_ms,
        max_shard_bytes: None,
    }
}

fn outcome(
    sections_deleted: u64,
    queues: Vec<(QueueKey, i64)>,
    released: &[&str],
) -> RetentionOutcome {
    RetentionOutcome {
        sections_deleted,
        queues: queues
            .into_iter()
            .map(|(q, min)| (q, QueueOffset(min)))
            .collect(),
        released_objects: released.iter().map(|&k| k.to_owned()).collect(),
    }
}

async fn commit(store: &dyn MetaStore, s: &SegmentCommit) {
    store
        .commit_segment(std::slice::from_ref(s))
        .await
        .expect("commit");
}

async fn segs(store: &dyn MetaStore, q: &QueueKey, from: i64) -> Vec<QueueSegment> {
    store
        .queue_segments(q, QueueOffset(from), 100)
        .await
        .expect("queue segments")
}

async fn qrange(store: &dyn MetaStore, q: &QueueKey) -> crate::model::QueueRange {
    store.queue_range(q).await.expect("queue range")
}

fn expect_fenced(
    r: Result<RetentionOutcome, MetaError>,
    shard: u32,
    ours: Epoch,
    stored: Epoch,
    what: &str,
) {
    match r {
        Err(MetaError::Fenced {
            shard: s,
            ours: o,
            stored: st,
        }) => assert_eq!((s, o, st), (ShardId(shard), ours, stored), "{what}"),
        other => panic!("{what}: want Fenced, got {other:?}"),
    }
}

/// Shard 34, now = 10 000 000: default retention 1 000 000 ms (cutoff 9 000 000); topic
/// `ret-long` keeps 2 h (cutoff 2 800 000); `ret-default` has no override.
pub(super) async fn retention_by_age_with_topic_override(store: &dyn MetaStore) {
    let a = node("node-a");
    store
        .put_topic(&topic("ret-default", None))
        .await
        .expect("topic");
    store
        .put_topic(&topic("ret-long", Some(2)))
        .await
        .expect("topic");
    let e = take(store, 34, &a).await;
    let s1 = section(
        34,
        e,
        &a,
        "ret-34-1",
        0,
        100,
        vec![
            append("ret-default", 0, 0, 3, 1_000_000, 2_000_000),
            append("ret-default", 1, 0, 5, 1_000_000, 1_000_000),
            append("ret-long", 0, 0, 2, 1_000_000, 2_000_000),
        ],
    );
    let s2 = section(
        34,
        e,
        &a,
        "ret-34-2",
        100,
        200,
        vec![
            append("ret-default", 0, 3, 4, 5_000_000, 8_999_999),
            append("ret-default", 2, 0, 2, 9_100_000, 9_200_000),
            append("ret-long", 0, 2, 1, 3_000_000, 3_000_000),
        ],
    );
    let s3 = section(
        34,
        e,
        &a,
        "ret-34-3",
        200,
        300,
        vec![
            append("ret-default", 0, 7, 2, 9_000_000, 9_500_000),
            // Store times need not grow with offsets: this later range is expired while the
            // earlier one of the same queue is not.
            append("ret-default", 2, 2, 3, 100, 200),
        ],
    );
    for s in [&s1, &s2, &s3] {
        commit(store, s).await;
    }
    let (d0, d1, d2, long) = (
        queue(34, "ret-default", 0),
        queue(34, "ret-default", 1),
        queue(34, "ret-default", 2),
        queue(34, "ret-long", 0),
    );

    let got = store
        .apply_retention(ShardId(34), &a, e, 10_000_000, &by_age(1_000_000))
        .await
        .expect("retention pass");
    assert_eq!(
        got,
        outcome(
            1,
            vec![(d0.clone(), 7), (d1.clone(), 5), (long.clone(), 2)],
            &["ret-34-1"]
        ),
        "s1 emptied (default rows before 9 000 000, ret-long row before 2 800 000)"
    );
    assert_eq!(qrange(store, &d0).await, range(&d0, 7, 9), "max unchanged");
    assert_eq!(
        qrange(store, &d1).await,
        range(&d1, 5, 5),
        "no row left: min = max"
    );
    assert_eq!(
        qrange(store, &d2).await,
        range(&d2, 0, 5),
        "a hole does not move min"
    );
    assert_eq!(
        qrange(store, &long).await,
        range(&long, 2, 3),
        "2 h override"
    );
    assert_eq!(
        segs(store, &d0, 0).await,
        vec![queue_seg(&s3, 0)],
        "from an old offset"
    );
    assert_eq!(segs(store, &d0, 3).await, vec![queue_seg(&s3, 0)]);
    assert_eq!(segs(store, &d1, 0).await, vec![]);
    assert_eq!(segs(store, &d2, 0).await, vec![queue_seg(&s2, 1)]);
    assert_eq!(segs(store, &long, 0).await, vec![queue_seg(&s2, 2)]);
    assert_eq!(
        store
            .segment_by_commit_log_offset(ShardId(34), CommitLogOffset(50))
            .await
            .expect("by offset"),
        None,
        "deleted section"
    );
    assert_eq!(
        store
            .segment_by_commit_log_offset(ShardId(34), CommitLogOffset(250))
            .await
            .expect("by offset"),
        Some(seg_ref(&s3)),
        "s3 kept (its default row is not expired)"
    );
    assert_eq!(state(store, 34).await.commit_log_end, CommitLogOffset(300));

    let again = store
        .apply_retention(ShardId(34), &a, e, 10_000_000, &by_age(1_000_000))
        .await
        .expect("second pass");
    assert_eq!(again, RetentionOutcome::default(), "nothing left to remove");

    // Later: the ret-long row (max 3 000 000) expires at 10 200 001 under 2 h; s2 keeps its
    // ret-default/2 row, which expires under the default at 10 200 001 too.
    let got = store
        .apply_retention(ShardId(34), &a, e, 10_200_001, &by_age(1_000_000))
        .await
        .expect("third pass");
    assert_eq!(
        got,
        outcome(1, vec![(d2.clone(), 5), (long.clone(), 3)], &["ret-34-2"]),
        "s2 emptied; ret-default/2 loses its last row"
    );
    assert_eq!(qrange(store, &long).await, range(&long, 3, 3));
    assert_eq!(qrange(store, &d2).await, range(&d2, 5, 5));
    assert_eq!(
        qrange(store, &d0).await,
        range(&d0, 7, 9),
        "s3's row is younger"
    );

    // A new append after everything expired starts at the max; min stays put.
    let s4 = section(
        34,
        e,
        &a,
        "ret-34-4",
        300,
        400,
        vec![append("ret-default", 1, 5, 2, 20_000_000, 20_000_000)],
    );
    commit(store, &s4).await;
    let got = store
        .apply_retention(ShardId(34), &a, e, 10_200_002, &by_age(1_000_000))
        .await
        .expect("fourth pass");
    assert_eq!(got, RetentionOutcome::default());
    assert_eq!(
        qrange(store, &d1).await,
        range(&d1, 5, 7),
        "min never goes back"
    );
    assert_eq!(segs(store, &d1, 0).await, vec![queue_seg(&s4, 0)]);
}

/// Shard 35: sections of 100, 200, 300 and 400 bytes, nothing expired by age.
pub(super) async fn retention_by_size_deletes_oldest_sections_first(store: &dyn MetaStore) {
    let a = node("node-a");
    let e = take(store, 35, &a).await;
    let sized = |i: u32, start: i64, len: u64, queues| {
        let mut s = section(35, e, &a, &format!("ret-35-{i}"), start, start + 10, queues);
        s.section_len = len;
        s
    };
    let s1 = sized(1, 0, 100, vec![append("ret-size", 0, 0, 3, 10, 11)]);
    let s2 = sized(
        2,
        10,
        200,
        vec![
            append("ret-size", 0, 3, 2, 12, 13),
            append("ret-size", 1, 0, 4, 12, 13),
        ],
    );
    let s3 = sized(3, 20, 300, vec![append("ret-size", 0, 5, 4, 14, 15)]);
    let s4 = sized(
        4,
        30,
        400,
        vec![
            append("ret-size", 0, 9, 1, 16, 17),
            append("ret-size", 1, 4, 2, 16, 17),
        ],
    );
    for s in [&s1, &s2, &s3, &s4] {
        commit(store, s).await;
    }
    let (q0, q1) = (queue(35, "ret-size", 0), queue(35, "ret-size", 1));
    let policy = |max: u64| RetentionPolicy {
        default_retention_ms: 1_000_000_000,
        max_shard_bytes: Some(max),
    };

    let got = store
        .apply_retention(ShardId(35), &a, e, 1_000, &policy(1_000))
        .await
        .expect("at the limit");
    assert_eq!(
        got,
        RetentionOutcome::default(),
        "1000 bytes do not exceed 1000"
    );

    let got = store
        .apply_retention(ShardId(35), &a, e, 1_000, &policy(750))
        .await
        .expect("over the limit");
    assert_eq!(
        got,
        outcome(
            2,
            vec![(q0.clone(), 5), (q1.clone(), 4)],
            &["ret-35-1", "ret-35-2"]
        ),
        "s1 and s2 go (700 bytes left)"
    );
    assert_eq!(qrange(store, &q0).await, range(&q0, 5, 10), "max unchanged");
    assert_eq!(qrange(store, &q1).await, range(&q1, 4, 6));
    assert_eq!(
        segs(store, &q0, 0).await,
        vec![queue_seg(&s3, 0), queue_seg(&s4, 0)],
        "from an old offset: starts at the new min"
    );
    assert_eq!(segs(store, &q1, 2).await, vec![queue_seg(&s4, 1)]);
    assert_eq!(
        store
            .segment_by_commit_log_offset(ShardId(35), CommitLogOffset(15))
            .await
            .expect("by offset"),
        None
    );

    let got = store
        .apply_retention(ShardId(35), &a, e, 1_000, &policy(700))
        .await
        .expect("exactly at the limit");
    assert_eq!(got, RetentionOutcome::default());

    let got = store
        .apply_retention(ShardId(35), &a, e, 1_000, &policy(699))
        .await
        .expect("one byte over");
    assert_eq!(
        got,
        outcome(1, vec![(q0.clone(), 9)], &["ret-35-3"]),
        "s3 goes; q1 has no row in s3 and does not move"
    );
    assert_eq!(qrange(store, &q0).await, range(&q0, 9, 10));
    assert_eq!(qrange(store, &q1).await, range(&q1, 4, 6));
    assert_eq!(
        segs(store, &q0, 0).await,
        vec![queue_seg(&s4, 0)],
        "only s4 left"
    );
    assert_eq!(state(store, 35).await.commit_log_end, CommitLogOffset(40));
}

/// Shard 38: a pass needs the current epoch and owner; a refused pass removes nothing.
pub(super) async fn retention_is_fenced_like_a_commit(store: &dyn MetaStore) {
    let (a, b) = (node("node-a"), node("node-b"));
    let e1 = take(store, 38, &a).await;
    let s1 = section(
        38,
        e1,
        &a,
        "ret-38-1",
        0,
        10,
        vec![append("ret-fence", 0, 0, 2, 1, 2)],
    );
    commit(store, &s1).await;
    let e2 = store
        .acquire_shard(ShardId(38), &a, 0, 1_000_000)
        .await
        .expect("re-acquire")
        .expect("ours")
        .epoch;
    let q = queue(38, "ret-fence", 0);
    let before = state(store, 38).await;

    expect_fenced(
        store
            .apply_retention(ShardId(38), &a, e1, 1_000_000, &by_age(0))
            .await,
        38,
        e1,
        e2,
        "stale epoch",
    );
    expect_fenced(
        store
            .apply_retention(ShardId(38), &b, e2, 1_000_000, &by_age(0))
            .await,
        38,
        e2,
        e2,
        "current epoch, other node",
    );
    assert_eq!(
        state(store, 38).await,
        before,
        "refused passes change nothing"
    );
    assert_eq!(segs(store, &q, 0).await, vec![queue_seg(&s1, 0)]);
    assert!(
        matches!(
            store
                .apply_retention(ShardId(9999), &a, e2, 1_000_000, &by_age(0))
                .await,
            Err(MetaError::NotFound { .. })
        ),
        "unknown shard"
    );

    let got = store
        .apply_retention(ShardId(38), &a, e2, 1_000_000, &by_age(0))
        .await
        .expect("current holder");
    assert_eq!(got, outcome(1, vec![(q.clone(), 2)], &["ret-38-1"]));

    store
        .release_shard(ShardId(38), &a, e2)
        .await
        .expect("release");
    expect_fenced(
        store
            .apply_retention(ShardId(38), &a, e2, 1_000_000, &by_age(0))
            .await,
        38,
        e2,
        e2,
        "released shard",
    );
}

/// Shards 36 and 37 share object `ret-shared`; it is released only by the pass that removes
/// its last section.
pub(super) async fn shared_object_is_released_with_its_last_section(store: &dyn MetaStore) {
    let a = node("node-a");
    let (e36, e37) = (take(store, 36, &a).await, take(store, 37, &a).await);
    let old36 = section(
        36,
        e36,
        &a,
        "ret-shared",
        0,
        10,
        vec![append("ret-share", 0, 0, 1, 5, 5)],
    );
    let mut old37 = section(
        37,
        e37,
        &a,
        "ret-shared",
        0,
        20,
        vec![append("ret-share", 0, 0, 2, 6, 6)],
    );
    old37.section_pos = 5_000;
    store
        .commit_segment(&[old36.clone(), old37.clone()])
        .await
        .expect("one object, two shards");
    let new36 = section(
        36,
        e36,
        &a,
        "ret-36-2",
        10,
        20,
        vec![append("ret-share", 0, 1, 1, 500, 500)],
    );
    commit(store, &new36).await;
    let (q36, q37) = (queue(36, "ret-share", 0), queue(37, "ret-share", 0));

    let got = store
        .apply_retention(ShardId(36), &a, e36, 1_000, &by_age(900))
        .await
        .expect("pass on 36");
    assert_eq!(
        got,
        outcome(1, vec![(q36.clone(), 1)], &[]),
        "shard 37 still references the object"
    );
    let probe = |keys: &[&str]| keys.iter().map(|&k| k.to_owned()).collect::<Vec<_>>();
    assert_eq!(
        store
            .unreferenced_objects(&probe(&["ret-shared", "ret-36-2"]))
            .await
            .expect("unreferenced"),
        Vec::<String>::new()
    );
    assert_eq!(segs(store, &q37, 0).await, vec![queue_seg(&old37, 0)]);

    let got = store
        .apply_retention(ShardId(37), &a, e37, 1_000, &by_age(900))
        .await
        .expect("pass on 37");
    assert_eq!(
        got,
        outcome(1, vec![(q37.clone(), 2)], &["ret-shared"]),
        "last section of the object gone"
    );
    assert_eq!(qrange(store, &q37).await, range(&q37, 2, 2));
    assert_eq!(qrange(store, &q36).await, range(&q36, 1, 2));
}

pub(super) async fn unreferenced_objects_keeps_input_order(store: &dyn MetaStore) {
    let keys: Vec<String> = [
        "ret-never-committed-b",
        "ret-36-2",
        "ret-shared",
        "ret-never-committed-a",
        "ret-34-3",
    ]
    .iter()
    .map(|&k| k.to_owned())
    .collect();
    assert_eq!(
        store
            .unreferenced_objects(&keys)
            .await
            .expect("unreferenced"),
        vec![
            "ret-never-committed-b".to_owned(),
            "ret-shared".to_owned(),
            "ret-never-committed-a".to_owned(),
        ],
        "committed keys dropped, input order kept"
    );
    assert_eq!(
        store.unreferenced_objects(&[]).await.expect("empty"),
        Vec::<String>::new()
    );
    let many: Vec<String> = (0..1_200).map(|i| format!("ret-orphan-{i:04}")).collect();
    assert_eq!(
        store.unreferenced_objects(&many).await.expect("many"),
        many,
        "more keys than one statement's list"
    );
}

/// Shard 39: a section holding a pending timer (or half message) outlives its age and the
/// size limit until the record is delivered; then it goes like any other.
pub(super) async fn sections_with_pending_timers_or_halves_are_kept(store: &dyn MetaStore) {
    let a = node("node-a");
    let e = take(store, 39, &a).await;
    let base = 39_i64 << 48;
    let mut s1 = section(
        39,
        e,
        &a,
        "ret-39-1",
        0,
        100,
        vec![append("rmq_sys_wheel_timer", 0, 0, 1, 1, 1)],
    );
    s1.effects = vec![crate::model::SegmentEffect::TimerScheduled {
        shard: ShardId(39),
        handle: CommitLogOffset(base + 40),
        due_ms: 9_000_000_000_000,
    }];
    commit(store, &s1).await;
    let s2 = section(
        39,
        e,
        &a,
        "ret-39-2",
        100,
        200,
        vec![append("ret-pin", 0, 0, 1, 2, 2)],
    );
    commit(store, &s2).await;
    let timer_q = queue(39, "rmq_sys_wheel_timer", 0);
    let q = queue(39, "ret-pin", 0);
    let policy = RetentionPolicy {
        default_retention_ms: 0,
        max_shard_bytes: Some(1),
    };
    let got = store
        .apply_retention(ShardId(39), &a, e, 1_000_000, &policy)
        .await
        .expect("retention");
    assert_eq!(
        got,
        outcome(1, vec![(q.clone(), 1)], &["ret-39-2"]),
        "only the section without a pending timer goes"
    );
    assert_eq!(segs(store, &timer_q, 0).await, vec![queue_seg(&s1, 0)]);
    assert_eq!(qrange(store, &timer_q).await, range(&timer_q, 0, 1));

    // Delivered: the timer row goes with the delivering section's commit; now s1 can go.
    let mut s3 = section(
        39,
        e,
        &a,
        "ret-39-3",
        200,
        300,
        vec![append("ret-pin", 0, 1, 1, 3, 3)],
    );
    s3.effects = vec![crate::model::SegmentEffect::TimerDelivered {
        shard: ShardId(39),
        handle: CommitLogOffset(base + 40),
    }];
    commit(store, &s3).await;
    let got = store
        .apply_retention(ShardId(39), &a, e, 1_000_000, &by_age(0))
        .await
        .expect("retention");
    assert_eq!(
        got,
        outcome(
            2,
            vec![(q.clone(), 2), (timer_q.clone(), 1)],
            &["ret-39-1", "ret-39-3"]
        ),
        "a delivered timer no longer pins its section"
    );
}

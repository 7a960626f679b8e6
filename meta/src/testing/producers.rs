//! Checks for idempotent producers' batches: remembered only with the section carrying
//! them, the newest five per producer and queue kept, other producers and queues untouched,
//! expired by commit time. Shard 43.

use stratus_compat::types::{QueueId, QueueOffset, Topic};

use super::{append, node, section, take};
use crate::MetaStore;
use crate::model::{ProducerBatch, SegmentEffect, ShardId};

fn batch(
    producer_id: i64,
    queue: i32,
    first_seq: i32,
    first_offset: i64,
    at: i64,
) -> ProducerBatch {
    ProducerBatch {
        shard: ShardId(43),
        producer_id,
        topic: Topic::new("pt"),
        queue_id: QueueId(queue),
        epoch: 0,
        first_seq,
        last_seq: first_seq + 1,
        first_offset: QueueOffset(first_offset),
        committed_ms: at,
    }
}

/// Seven batches of one producer on queue 0 (one section each), one of another producer
/// and one of the first on queue 1: the first producer keeps its newest five on queue 0.
pub(crate) async fn producer_batches_keep_the_newest_five_and_expire(store: &dyn MetaStore) {
    let n = node("producers-a");
    let epoch = take(store, 43, &n).await;
    for i in 0..7i64 {
        let mut s = section(
            43,
            epoch,
            &n,
            "producers/1",
            i * 100,
            i * 100 + 100,
            vec![append("pt", 0, i * 2, 2, 10, 10)],
        );
        s.effects.push(SegmentEffect::ProducerBatch(batch(
            1,
            0,
            i32::try_from(i * 2).expect("small"),
            i * 2,
            1_000 + i,
        )));
        if i == 6 {
            s.queues.push(append("pt", 1, 0, 2, 10, 10));
            s.effects
                .push(SegmentEffect::ProducerBatch(batch(2, 0, 0, 12, 2_000)));
            s.effects
                .push(SegmentEffect::ProducerBatch(batch(1, 1, 14, 0, 2_000)));
        }
        store
            .commit_segment(&[s])
            .await
            .expect("commit a producer's section");
    }
    let all = store.producer_batches(ShardId(43)).await.expect("load");
    let firsts = |pid: i64, q: i32| -> Vec<i64> {
        all.iter()
            .filter(|b| b.producer_id == pid && b.queue_id == QueueId(q))
            .map(|b| b.first_offset.0)
            .collect()
    };
    assert_eq!(
        firsts(1, 0),
        vec![4, 6, 8, 10, 12],
        "the newest five of producer 1 on queue 0"
    );
    assert_eq!(firsts(1, 1), vec![0]);
    assert_eq!(firsts(2, 0), vec![12]);
    let b = all
        .iter()
        .find(|b| b.producer_id == 1 && b.first_offset.0 == 12)
        .expect("row");
    assert_eq!(b, &batch(1, 0, 12, 12, 1_006), "every field kept");
    assert!(
        store
            .producer_batches(ShardId(42))
            .await
            .expect("other shard")
            .is_empty()
    );
    assert_eq!(
        store.expire_producer_batches(1_005).await.expect("expire"),
        3
    );
    let left = store.producer_batches(ShardId(43)).await.expect("load");
    assert_eq!(
        left.len(),
        4,
        "rows committed at or after the cutoff stay: {left:?}"
    );
}

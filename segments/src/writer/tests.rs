use std::sync::Arc;
use std::time::Duration;

use futures::FutureExt;
use stratus_compat::message::record::MessageExt;
use stratus_compat::types::{CommitLogOffset, ProducerGroup, QueueId, QueueOffset, Topic};
use stratus_meta::{HalfMessage, NodeId, SegmentEffect, ShardId};

use super::*;
use crate::clock::SystemClock;
use crate::testkit::{Harness, key, manual_config, msg};

#[tokio::test]
async fn offsets_are_consecutive_per_queue_and_commit_log_is_contiguous_across_segments() {
    let h = Harness::new(manual_config()).await;
    h.open(0).await;
    let mut tickets = Vec::new();
    for round in 0..3 {
        for q in 0..2 {
            let batch = (0..3)
                .map(|i| msg("T", q, &format!("r{round}q{q}m{i}")))
                .collect();
            tickets.push(h.writer.append(ShardId(0), batch).unwrap());
        }
        h.writer.flush().await.unwrap();
    }
    // Per queue: 0, 3, 6.
    for q in 0..2 {
        let firsts: Vec<i64> = tickets
            .iter()
            .filter(|t| t.queue_id.0 == q)
            .map(|t| t.first_offset.0)
            .collect();
        assert_eq!(firsts, vec![0, 3, 6]);
    }
    // Handles: every record starts where the previous one ended, across all segments.
    let mut next_local = 0u64;
    let mut all = Vec::new();
    for t in &tickets {
        for (i, h_) in t.handles.iter().enumerate() {
            let (shard, local) = handle::decode(*h_).unwrap();
            assert_eq!(shard, ShardId(0));
            assert_eq!(local, next_local);
            let rec = h.reader.read_by_handle(*h_).await.unwrap().unwrap();
            let m = MessageExt::decode(&mut rec.clone()).unwrap();
            assert_eq!(m.queue_offset, t.first_offset.0 + i as i64);
            assert_eq!(m.commit_log_offset, h_.0);
            assert_eq!(m.store_timestamp, t.store_timestamp);
            next_local += rec.len() as u64;
            all.push(rec);
        }
    }
    let state = h.meta.shard_state(ShardId(0)).await.unwrap();
    assert_eq!(state.commit_log_end, CommitLogOffset(next_local as i64));
    assert_eq!(h.faults.puts(), 3);
    for t in tickets {
        t.durable().await.unwrap();
    }
}

#[tokio::test]
async fn one_flush_puts_one_object_for_many_queues_and_two_shards() {
    let h = Harness::new(manual_config()).await;
    h.open(0).await;
    h.open(1).await;
    let mut tickets = Vec::new();
    for i in 0..40 {
        let shard = ShardId(i % 2);
        let topic = if i % 3 == 0 { "A" } else { "B" };
        tickets.push(
            h.writer
                .append(shard, vec![msg(topic, (i % 4) as i32, "x")])
                .unwrap(),
        );
    }
    h.writer.flush().await.unwrap();
    assert_eq!(h.faults.puts(), 1);
    for t in tickets {
        t.durable().await.unwrap();
    }
    let keys = h.store.list("segments").await.unwrap();
    assert_eq!(keys.len(), 1);
    assert!(keys[0].key.contains(h.writer.incarnation()));
    let total: usize = (0..2u32)
        .flat_map(|s| {
            ["A", "B"]
                .into_iter()
                .flat_map(move |t| (0..4).map(move |q| key(s, t, q)))
        })
        .map(|k| h.heads.max_offset(&k).0 as usize)
        .sum();
    assert_eq!(total, 40);
}

#[tokio::test]
async fn nothing_is_acknowledged_or_visible_before_the_commit() {
    let h = Harness::new(manual_config()).await;
    h.open(0).await;
    h.faults.hold_puts();
    let t = h.writer.append(ShardId(0), vec![msg("T", 0, "a")]).unwrap();
    let w = h.writer.clone();
    let flush = tokio::spawn(async move { w.flush().await });
    // Wait until the upload is parked at the gate.
    while h.faults.puts() == 0 {
        tokio::task::yield_now().await;
    }
    let mut durable = Box::pin(t.durable());
    assert!((&mut durable).now_or_never().is_none());
    assert_eq!(h.heads.max_offset(&key(0, "T", 0)), QueueOffset(0));
    let b = h
        .reader
        .read(&key(0, "T", 0), QueueOffset(0), 10, usize::MAX, &|_| true)
        .await
        .unwrap();
    assert!(b.messages.is_empty());
    h.faults.release_puts();
    durable.await.unwrap();
    flush.await.unwrap().unwrap();
    assert_eq!(h.heads.max_offset(&key(0, "T", 0)), QueueOffset(1));
}

#[tokio::test]
async fn a_failed_upload_fails_its_tickets_and_stops_the_shard_until_reopened() {
    let h = Harness::new(manual_config()).await;
    h.open(0).await;
    h.open(1).await;
    h.faults.fail_puts(100);
    let t0 = h.writer.append(ShardId(0), vec![msg("T", 0, "a")]).unwrap();
    let t1 = h.writer.append(ShardId(1), vec![msg("T", 0, "b")]).unwrap();
    assert!(h.writer.flush().await.is_err());
    assert!(matches!(
        t0.durable().await,
        Err(SegmentError::ObjectStore { .. })
    ));
    assert!(matches!(
        t1.durable().await,
        Err(SegmentError::ObjectStore { .. })
    ));
    assert_eq!(h.heads.max_offset(&key(0, "T", 0)), QueueOffset(0));
    assert!(matches!(
        h.writer.append(ShardId(0), vec![msg("T", 0, "c")]),
        Err(SegmentError::NotOwned(_))
    ));
    assert!(matches!(
        h.writer.shard_status(ShardId(0)),
        Some(ShardStatus::Failed(_))
    ));

    h.faults.fail_puts(0);
    h.open(0).await;
    let t = h.writer.append(ShardId(0), vec![msg("T", 0, "d")]).unwrap();
    assert_eq!(t.first_offset, QueueOffset(0), "offsets restart from meta");
    h.writer.flush().await.unwrap();
    t.durable().await.unwrap();
    assert_eq!(h.read_all(&key(0, "T", 0)).await.len(), 1);
}

#[tokio::test]
async fn a_fenced_shard_fails_its_pending_appends_and_others_still_commit() {
    let h = Harness::new(manual_config()).await;
    let epoch = h.open(0).await;
    h.open(1).await;
    // Another node takes shard 0 over.
    h.meta
        .release_shard(ShardId(0), &h.node, epoch)
        .await
        .unwrap();
    let other = NodeId("node-b".into());
    h.meta
        .acquire_shard(ShardId(0), &other, h.clock.now(), 60_000)
        .await
        .unwrap()
        .unwrap();

    h.faults.hold_puts();
    let t0 = h.writer.append(ShardId(0), vec![msg("T", 0, "a")]).unwrap();
    let t1 = h.writer.append(ShardId(1), vec![msg("T", 0, "b")]).unwrap();
    let w = h.writer.clone();
    let flush = tokio::spawn(async move { w.flush().await });
    while h.faults.puts() == 0 {
        tokio::task::yield_now().await;
    }
    // Appended while the first segment is uploading: fails once the shard is fenced.
    let pending = h.writer.append(ShardId(0), vec![msg("T", 0, "c")]).unwrap();
    h.faults.release_puts();
    assert!(matches!(
        t0.durable().await,
        Err(SegmentError::Fenced(ShardId(0)))
    ));
    assert!(matches!(
        pending.durable().await,
        Err(SegmentError::Fenced(ShardId(0)))
    ));
    t1.durable().await.unwrap();
    assert!(flush.await.unwrap().is_err());
    assert!(matches!(
        h.writer.append(ShardId(0), vec![msg("T", 0, "d")]),
        Err(SegmentError::Fenced(_))
    ));
    assert_eq!(h.read_all(&key(1, "T", 0)).await.len(), 1);
    assert_eq!(h.heads.max_offset(&key(0, "T", 0)), QueueOffset(0));
}

#[tokio::test]
async fn an_ambiguous_put_is_resolved_and_acknowledged() {
    let h = Harness::new(manual_config()).await;
    h.open(0).await;
    h.faults.ambiguous_puts(1);
    let t = h.writer.append(ShardId(0), vec![msg("T", 0, "a")]).unwrap();
    h.writer.flush().await.unwrap();
    t.durable().await.unwrap();
    assert_eq!(h.faults.puts(), 2);
    assert_eq!(h.read_all(&key(0, "T", 0)).await.len(), 1);
}

#[tokio::test]
async fn linger_seals_without_a_flush_and_groups_appends() {
    let h = Harness::new(WriterConfig {
        linger: Duration::from_millis(50),
        ..manual_config()
    })
    .await;
    h.open(0).await;
    let a = h.writer.append(ShardId(0), vec![msg("T", 0, "a")]).unwrap();
    let b = h.writer.append(ShardId(0), vec![msg("T", 1, "b")]).unwrap();
    a.durable().await.unwrap();
    b.durable().await.unwrap();
    assert_eq!(h.faults.puts(), 1);
}

#[tokio::test]
async fn sealing_is_paced_immediate_after_quiet_then_once_per_linger() {
    // linger = 1 h (manual_config): only pacing can seal before the explicit flush.
    let h = Harness::new(manual_config()).await;
    h.open(0).await;
    // After a quiet period the first append is sealed at once, without a flush.
    let a = h.writer.append(ShardId(0), vec![msg("T", 0, "a")]).unwrap();
    a.durable().await.unwrap();
    assert_eq!(h.faults.puts(), 1);
    // Within the linger that seal started, appends wait and share one object.
    let b = h.writer.append(ShardId(0), vec![msg("T", 0, "b")]).unwrap();
    let c = h.writer.append(ShardId(0), vec![msg("T", 1, "c")]).unwrap();
    SystemClock.sleep(Duration::from_millis(300)).await;
    assert!(
        b.outcome.borrow().is_none(),
        "b must wait for the linger (or a flush)"
    );
    assert_eq!(h.faults.puts(), 1);
    h.writer.flush().await.unwrap();
    b.durable().await.unwrap();
    c.durable().await.unwrap();
    assert_eq!(h.faults.puts(), 2);
}

#[tokio::test]
async fn a_full_buffer_seals_at_once() {
    let h = Harness::new(WriterConfig {
        max_segment_bytes: 1000,
        ..manual_config()
    })
    .await;
    h.open(0).await;
    let mut tickets = Vec::new();
    for i in 0..30 {
        tickets.push(
            h.writer
                .append(ShardId(0), vec![msg("T", 0, &format!("{i:0>100}"))])
                .unwrap(),
        );
    }
    // No flush, no linger: the size trigger alone commits the full segments.
    for t in tickets.drain(..25) {
        t.durable().await.unwrap();
    }
    h.writer.flush().await.unwrap();
    assert!(h.faults.puts() >= 5);
    assert_eq!(h.read_all(&key(0, "T", 0)).await.len(), 30);
}

#[tokio::test]
async fn appends_beyond_the_buffer_bound_are_busy() {
    let h = Harness::new(WriterConfig {
        max_buffered_bytes: 500,
        ..manual_config()
    })
    .await;
    h.open(0).await;
    let mut n = 0;
    let err = loop {
        match h.writer.append(ShardId(0), vec![msg("T", 0, "0123456789")]) {
            Ok(_) => n += 1,
            Err(e) => break e,
        }
    };
    assert!(matches!(err, SegmentError::Busy));
    assert!(n > 0);
    h.writer.flush().await.unwrap();
    h.writer
        .append(ShardId(0), vec![msg("T", 0, "again")])
        .unwrap();
}

#[tokio::test]
async fn unknown_and_closed_shards_refuse_appends_and_pending_ones_fail() {
    let h = Harness::new(manual_config()).await;
    assert!(matches!(
        h.writer.append(ShardId(3), vec![msg("T", 0, "a")]),
        Err(SegmentError::NotOwned(_))
    ));
    h.open(0).await;
    let t = h.writer.append(ShardId(0), vec![msg("T", 0, "a")]).unwrap();
    h.writer.close_shard(ShardId(0));
    assert!(matches!(t.durable().await, Err(SegmentError::NotOwned(_))));
    assert!(matches!(
        h.writer.append(ShardId(0), vec![msg("T", 0, "b")]),
        Err(SegmentError::NotOwned(_))
    ));
    h.writer.flush().await.unwrap();
    assert_eq!(h.faults.puts(), 0);
}

#[tokio::test]
async fn a_ticket_times_out_when_not_durable_in_time() {
    let h = Harness::new(WriterConfig {
        durable_timeout: Duration::from_millis(200),
        ..manual_config()
    })
    .await;
    h.open(0).await;
    // Meta is done with: Tokio's clock can be paused now (its auto-advance would break sqlx).
    tokio::time::pause();
    let t = h.writer.append(ShardId(0), vec![msg("T", 0, "a")]).unwrap();
    assert!(matches!(t.durable().await, Err(SegmentError::Timeout(_))));
}

#[tokio::test]
async fn cancellation_drains_what_was_appended_then_refuses_appends() {
    let h = Harness::new(manual_config()).await;
    h.open(0).await;
    let t = h.writer.append(ShardId(0), vec![msg("T", 0, "a")]).unwrap();
    h.cancel.cancel();
    t.durable().await.unwrap();
    h.writer.shutdown().await.unwrap();
    assert!(matches!(
        h.writer.append(ShardId(0), vec![msg("T", 0, "b")]),
        Err(SegmentError::ShuttingDown)
    ));
    assert_eq!(h.read_all(&key(0, "T", 0)).await.len(), 1);
}

#[tokio::test]
async fn an_empty_append_is_durable_at_once() {
    let h = Harness::new(manual_config()).await;
    h.open(0).await;
    let t = h.writer.append(ShardId(0), Vec::new()).unwrap();
    assert!(t.handles.is_empty());
    t.durable().await.unwrap();
    assert_eq!(h.faults.puts(), 0);
}

async fn flaky() -> (Harness, Arc<flaky_meta::FlakyMeta>) {
    let flaky = Arc::new(flaky_meta::FlakyMeta {
        inner: stratus_meta::open("memory://").await.unwrap(),
        fail_commits: 0.into(),
        ambiguous_commits: 0.into(),
        conflict_commits: 0.into(),
        committed: Mutex::default(),
    });
    let h = Harness::with(
        manual_config(),
        Arc::new(object_store::memory::InMemory::new()),
        flaky.clone(),
    )
    .await;
    (h, flaky)
}

#[tokio::test]
async fn a_commit_that_landed_before_its_error_is_recognised_on_retry() {
    let (h, flaky) = flaky().await;
    h.open(0).await;
    flaky
        .ambiguous_commits
        .store(1, std::sync::atomic::Ordering::SeqCst);
    let t = h.writer.append(ShardId(0), vec![msg("T", 0, "a")]).unwrap();
    h.writer.flush().await.unwrap();
    t.durable().await.unwrap();
    assert_eq!(h.read_all(&key(0, "T", 0)).await.len(), 1);
    // The shard keeps going.
    let t = h.writer.append(ShardId(0), vec![msg("T", 0, "b")]).unwrap();
    h.writer.flush().await.unwrap();
    t.durable().await.unwrap();
}

#[tokio::test]
async fn a_transient_meta_failure_is_retried() {
    let (h, flaky) = flaky().await;
    h.open(0).await;
    flaky
        .fail_commits
        .store(2, std::sync::atomic::Ordering::SeqCst);
    let t = h.writer.append(ShardId(0), vec![msg("T", 0, "a")]).unwrap();
    h.writer.flush().await.unwrap();
    t.durable().await.unwrap();
}

#[tokio::test]
async fn a_refused_commit_fails_the_shard_and_later_segments_of_it() {
    let (h, flaky) = flaky().await;
    h.open(0).await;
    h.open(1).await;
    flaky
        .conflict_commits
        .store(1, std::sync::atomic::Ordering::SeqCst);
    h.faults.hold_puts();
    let first = h.writer.append(ShardId(0), vec![msg("T", 0, "a")]).unwrap();
    let w = h.writer.clone();
    let f1 = tokio::spawn(async move { w.flush().await });
    while h.faults.puts() == 0 {
        tokio::task::yield_now().await;
    }
    // A second segment sealed while the first is uploading.
    let second = h.writer.append(ShardId(0), vec![msg("T", 0, "b")]).unwrap();
    let other = h.writer.append(ShardId(1), vec![msg("T", 0, "c")]).unwrap();
    let w = h.writer.clone();
    let f2 = tokio::spawn(async move { w.flush().await });
    while h.faults.puts() < 2 {
        tokio::task::yield_now().await;
    }
    h.faults.release_puts();
    assert!(matches!(first.durable().await, Err(SegmentError::Meta(_))));
    assert!(matches!(
        second.durable().await,
        Err(SegmentError::NotOwned(_))
    ));
    other.durable().await.unwrap();
    assert!(f1.await.unwrap().is_err());
    assert!(f2.await.unwrap().is_err());
    assert_eq!(h.heads.max_offset(&key(0, "T", 0)), QueueOffset(0));
    // Re-opened from meta, the shard starts again at what meta holds.
    h.writer.open_shard(
        ShardId(0),
        h.meta.list_shards().await.unwrap()[0].epoch,
        h.meta.shard_state(ShardId(0)).await.unwrap(),
    );
    let t = h.writer.append(ShardId(0), vec![msg("T", 0, "d")]).unwrap();
    assert_eq!(t.first_offset, QueueOffset(0));
    h.writer.flush().await.unwrap();
    t.durable().await.unwrap();
}

#[tokio::test]
async fn concurrent_appenders_get_unique_dense_offsets() {
    let h = Arc::new(
        Harness::new(WriterConfig {
            linger: Duration::from_millis(2),
            max_segment_bytes: 4096,
            ..manual_config()
        })
        .await,
    );
    h.open(0).await;
    let mut tasks = Vec::new();
    for task in 0..4 {
        let h = h.clone();
        tasks.push(tokio::spawn(async move {
            let mut offsets = Vec::new();
            for i in 0..50 {
                let t = h
                    .writer
                    .append(ShardId(0), vec![msg("T", 0, &format!("{task}-{i}"))])
                    .unwrap();
                offsets.push(t.first_offset.0);
                if i % 10 == 0 {
                    tokio::task::yield_now().await;
                }
                t.durable().await.unwrap();
            }
            offsets
        }));
    }
    let mut all = Vec::new();
    for t in tasks {
        let offs = t.await.unwrap();
        assert!(
            offs.windows(2).all(|w| w[0] < w[1]),
            "each appender sees its order"
        );
        all.extend(offs);
    }
    all.sort_unstable();
    assert_eq!(all, (0..200).collect::<Vec<i64>>());
    assert_eq!(h.read_all(&key(0, "T", 0)).await.len(), 200);
}

// ----- metadata effects committed with a section -----

const HALF: &str = "RMQ_SYS_TRANS_HALF_TOPIC";

fn half(shard: ShardId, handle: CommitLogOffset, offset: QueueOffset, ts: i64) -> HalfMessage {
    HalfMessage {
        shard,
        handle,
        queue_offset: offset,
        producer_group: ProducerGroup::new("pg"),
        transaction_id: format!("tx-{}", handle.0),
        real_topic: Topic::new("T"),
        real_queue_id: QueueId(0),
        stored_at_ms: ts,
        check_times: 0,
        next_check_ms: ts + 6_000,
    }
}

/// Appends one half message to `shard` with its `HalfPrepared` effect; returns the ticket
/// and the row it prepares.
fn prepare(h: &Harness, shard: u32, body: &str) -> (AppendTicket, HalfMessage) {
    let mut row = None;
    let t = h
        .writer
        .append_with(
            ShardId(shard),
            vec![msg(HALF, 0, body)],
            |first, handles, ts| {
                let m = half(ShardId(shard), handles[0], first, ts);
                row = Some(m.clone());
                vec![SegmentEffect::HalfPrepared(m)]
            },
        )
        .unwrap();
    let row = row.expect("effects called once");
    assert_eq!(
        (row.handle, row.queue_offset, row.stored_at_ms),
        (t.handles[0], t.first_offset, t.store_timestamp),
        "effects see what the ticket reports"
    );
    (t, row)
}

fn resolved(m: &HalfMessage) -> SegmentEffect {
    SegmentEffect::HalfResolved {
        shard: m.shard,
        handle: m.handle,
    }
}

async fn pending(h: &Harness, shard: u32) -> Vec<HalfMessage> {
    h.meta.half_messages(ShardId(shard)).await.unwrap()
}

#[tokio::test]
async fn effects_of_appends_to_two_shards_land_in_their_own_sections() {
    let (h, flaky) = flaky().await;
    h.open(0).await;
    h.open(1).await;
    let (t0, h0) = prepare(&h, 0, "a");
    let plain = h.writer.append(ShardId(1), vec![msg("T", 0, "b")]).unwrap();
    let (t1, h1) = prepare(&h, 1, "c");
    // A second effect of shard 0, after the first in its section; its row does not exist,
    // which is not an error.
    let ghost = half(ShardId(0), CommitLogOffset(1 << 40), QueueOffset(9), 0);
    let t2 = h
        .writer
        .append_with(ShardId(0), vec![msg("T", 0, "d")], |_, _, _| {
            vec![resolved(&ghost)]
        })
        .unwrap();
    let mut called = false;
    let empty = h
        .writer
        .append_with(ShardId(0), Vec::new(), |_, _, _| {
            called = true;
            vec![resolved(&ghost)]
        })
        .unwrap();
    assert!(!called, "an empty append commits nothing, so no effects");
    h.writer.flush().await.unwrap();
    for t in [t0, plain, t1, t2, empty] {
        t.durable().await.unwrap();
    }

    let calls = flaky.committed.lock().clone();
    assert_eq!(calls.len(), 1, "one segment, one commit");
    let effects: Vec<(ShardId, Vec<SegmentEffect>)> = calls[0]
        .iter()
        .map(|s| (s.shard, s.effects.clone()))
        .collect();
    assert_eq!(
        effects,
        vec![
            (
                ShardId(0),
                vec![SegmentEffect::HalfPrepared(h0.clone()), resolved(&ghost)]
            ),
            (ShardId(1), vec![SegmentEffect::HalfPrepared(h1.clone())]),
        ]
    );
    assert_eq!(pending(&h, 0).await, vec![h0]);
    assert_eq!(pending(&h, 1).await, vec![h1]);

    // The next segment carries only its own appends' effects.
    let t = h.writer.append(ShardId(0), vec![msg("T", 0, "e")]).unwrap();
    h.writer.flush().await.unwrap();
    t.durable().await.unwrap();
    let calls = flaky.committed.lock().clone();
    assert_eq!(calls.len(), 2);
    assert!(calls[1].iter().all(|s| s.effects.is_empty()));
}

#[tokio::test]
async fn a_half_prepared_effect_is_visible_once_durable_and_resolved_with_the_real_message() {
    let h = Harness::new(WriterConfig {
        linger: Duration::from_millis(20),
        ..manual_config()
    })
    .await;
    h.open(0).await;
    h.faults.hold_puts();
    let (t, row) = prepare(&h, 0, "half");
    while h.faults.puts() == 0 {
        tokio::task::yield_now().await;
    }
    assert_eq!(
        h.meta.half_message(ShardId(0), row.handle).await.unwrap(),
        None,
        "not before the commit"
    );
    h.faults.release_puts();
    t.durable().await.unwrap();
    assert_eq!(
        h.meta.half_message(ShardId(0), row.handle).await.unwrap(),
        Some(row.clone()),
        "visible as soon as the ticket is durable"
    );

    // Committing the transaction: the real message and the resolution land together.
    let real = h
        .writer
        .append_with(ShardId(0), vec![msg("T", 0, "real")], |_, _, _| {
            vec![resolved(&row)]
        })
        .unwrap();
    real.durable().await.unwrap();
    assert_eq!(pending(&h, 0).await, vec![]);
    assert_eq!(h.read_all(&key(0, "T", 0)).await.len(), 1);
}

#[tokio::test]
async fn an_append_whose_segment_fails_to_commit_applies_no_effect() {
    let h = Harness::new(manual_config()).await;
    let epoch = h.open(0).await;
    h.open(1).await;

    // Upload failure.
    h.faults.fail_puts(100);
    let (t, _) = prepare(&h, 1, "lost");
    assert!(h.writer.flush().await.is_err());
    assert!(t.durable().await.is_err());
    h.faults.fail_puts(0);
    assert_eq!(pending(&h, 1).await, vec![]);
    h.open(1).await;

    // A closed shard's pending appends are dropped with their effects.
    let (t, _) = prepare(&h, 1, "closed");
    h.writer.close_shard(ShardId(1));
    assert!(t.durable().await.is_err());
    h.writer.flush().await.unwrap();
    assert_eq!(pending(&h, 1).await, vec![]);
    h.open(1).await;

    // Fenced shard 0, healthy shard 1 in the same segment.
    h.meta
        .release_shard(ShardId(0), &h.node, epoch)
        .await
        .unwrap();
    h.meta
        .acquire_shard(ShardId(0), &NodeId("node-b".into()), h.clock.now(), 60_000)
        .await
        .unwrap()
        .unwrap();
    let (t0, _) = prepare(&h, 0, "fenced");
    let (t1, h1) = prepare(&h, 1, "ok");
    assert!(h.writer.flush().await.is_err());
    assert!(matches!(t0.durable().await, Err(SegmentError::Fenced(_))));
    t1.durable().await.unwrap();
    assert_eq!(pending(&h, 0).await, vec![]);
    assert_eq!(pending(&h, 1).await, vec![h1.clone()]);

    // Meta refuses an effect (this row exists): the section is not committed at all.
    let t = h
        .writer
        .append_with(ShardId(1), vec![msg(HALF, 0, "dup")], |_, _, _| {
            vec![SegmentEffect::HalfPrepared(h1.clone())]
        })
        .unwrap();
    assert!(h.writer.flush().await.is_err());
    assert!(matches!(t.durable().await, Err(SegmentError::Meta(_))));
    assert_eq!(pending(&h, 1).await, vec![h1]);
    assert_eq!(h.heads.max_offset(&key(1, HALF, 0)), QueueOffset(1));
    let state = h.meta.shard_state(ShardId(1)).await.unwrap();
    assert_eq!(
        state
            .queues
            .iter()
            .map(|q| q.max_offset)
            .collect::<Vec<_>>(),
        vec![QueueOffset(1)],
        "the refused section's record was not committed"
    );
}

#[tokio::test]
async fn a_panicking_effects_callback_appends_nothing() {
    let h = Harness::new(manual_config()).await;
    h.open(0).await;
    let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        h.writer
            .append_with(ShardId(0), vec![msg("T", 0, "a")], |_, _, _| {
                panic!("callback bug")
            })
    }));
    assert!(r.is_err());
    let t = h.writer.append(ShardId(0), vec![msg("T", 0, "b")]).unwrap();
    assert_eq!(t.first_offset, QueueOffset(0), "no offset was taken");
    assert_eq!(t.handles[0], handle::encode(ShardId(0), 0), "nor a handle");
    h.writer.flush().await.unwrap();
    t.durable().await.unwrap();
    assert_eq!(h.read_all(&key(0, "T", 0)).await.len(), 1);
}

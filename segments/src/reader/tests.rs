use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use object_store::local::LocalFileSystem;
use object_store::memory::InMemory;
use object_store::path::Path;
use object_store::{ObjectStore, ObjectStoreExt, PutPayload};
use stratus_compat::message::record::MessageExt;
use stratus_compat::types::{CommitLogOffset, QueueOffset, java_string_hash};
use stratus_meta::ShardId;

use super::*;
use crate::testkit::{Harness, key, manual_config, msg};
use crate::writer::{AppendTicket, WriterConfig};

/// Writes `segments` flushes of `per` messages each to shard 0 queue T/0, one ms apart.
async fn fill(h: &Harness, segments: usize, per: usize) -> Vec<AppendTicket> {
    h.open(0).await;
    let mut tickets = Vec::new();
    for s in 0..segments {
        for i in 0..per {
            let tag = if i % 2 == 0 { "even" } else { "odd" };
            let mut m = msg("T", 0, &format!("s{s}-m{i}-{tag}"));
            m.tags_code = java_string_hash(tag);
            tickets.push(h.writer.append(ShardId(0), vec![m]).unwrap());
        }
        h.writer.flush().await.unwrap();
        h.clock.advance(Duration::from_millis(1000));
    }
    tickets
}

fn bodies(records: &[Bytes]) -> Vec<String> {
    records
        .iter()
        .map(|r| {
            String::from_utf8(MessageExt::decode(&mut r.clone()).unwrap().body.to_vec()).unwrap()
        })
        .collect()
}

#[tokio::test]
async fn reads_across_segments_from_the_tail_cache_without_gets_and_cold_from_the_store() {
    let h = Harness::new(manual_config()).await;
    fill(&h, 4, 10).await;
    let q = key(0, "T", 0);
    h.faults.reset_counts();
    let hot = h.read_all(&q).await;
    assert_eq!(hot.len(), 40);
    assert_eq!(bodies(&hot)[13], "s1-m3-odd");
    assert_eq!(
        h.faults.gets(),
        0,
        "a consumer that keeps up never reads the store"
    );

    h.cache.clear();
    let cold = h.read_all(&q).await;
    assert_eq!(cold, hot, "byte for byte");
    assert!(h.faults.gets() > 0);
    // Now warm in the footer and block caches.
    let gets = h.faults.gets();
    assert_eq!(h.read_all(&q).await, hot);
    assert_eq!(h.faults.gets(), gets);
}

#[tokio::test]
async fn a_read_stops_at_max_count_and_max_bytes_but_returns_the_first_match() {
    let h = Harness::new(manual_config()).await;
    fill(&h, 2, 10).await;
    let q = key(0, "T", 0);
    let b = h
        .reader
        .read(&q, QueueOffset(3), 5, usize::MAX, &|_| true)
        .await
        .unwrap();
    assert_eq!(
        bodies(&b.messages),
        vec![
            "s0-m3-odd",
            "s0-m4-even",
            "s0-m5-odd",
            "s0-m6-even",
            "s0-m7-odd"
        ]
    );
    assert_eq!((b.next_offset, b.examined), (QueueOffset(8), 5));
    let b = h
        .reader
        .read(&q, QueueOffset(8), 32, 1, &|_| true)
        .await
        .unwrap();
    assert_eq!(b.messages.len(), 1);
    assert_eq!(b.next_offset, QueueOffset(9));
    let size = b.messages[0].len();
    let b = h
        .reader
        .read(&q, QueueOffset(8), 32, size * 3, &|_| true)
        .await
        .unwrap();
    assert_eq!(b.messages.len(), 3);
    // Past the committed end: nothing.
    let b = h
        .reader
        .read(&q, QueueOffset(20), 32, usize::MAX, &|_| true)
        .await
        .unwrap();
    assert_eq!((b.messages.len(), b.next_offset), (0, QueueOffset(20)));
}

#[tokio::test]
async fn filtered_entries_are_counted_as_examined() {
    let h = Harness::new(manual_config()).await;
    fill(&h, 3, 10).await;
    let q = key(0, "T", 0);
    let odd = java_string_hash("odd");
    let b = h
        .reader
        .read(&q, QueueOffset(0), 4, usize::MAX, &|m: &EntryMeta| {
            m.tags_code == odd
        })
        .await
        .unwrap();
    assert_eq!(
        bodies(&b.messages),
        vec!["s0-m1-odd", "s0-m3-odd", "s0-m5-odd", "s0-m7-odd"]
    );
    assert_eq!((b.next_offset, b.examined), (QueueOffset(8), 8));
    let none = h
        .reader
        .read(&q, QueueOffset(0), 4, usize::MAX, &|_| false)
        .await
        .unwrap();
    assert!(none.messages.is_empty());
    assert_eq!((none.next_offset, none.examined), (QueueOffset(30), 30));
}

#[tokio::test]
async fn read_by_handle_finds_each_record_and_rejects_others() {
    let h = Harness::new(manual_config()).await;
    let tickets = fill(&h, 3, 5).await;
    let all = h.read_all(&key(0, "T", 0)).await;
    h.cache.clear();
    for (t, rec) in tickets.iter().zip(&all) {
        assert_eq!(
            h.reader
                .read_by_handle(t.handles[0])
                .await
                .unwrap()
                .as_ref(),
            Some(rec)
        );
    }
    let h0 = tickets[0].handles[0];
    assert_eq!(
        h.reader
            .read_by_handle(CommitLogOffset(h0.0 + 1))
            .await
            .unwrap(),
        None
    );
    assert_eq!(
        h.reader.read_by_handle(CommitLogOffset(-5)).await.unwrap(),
        None
    );
    assert_eq!(
        h.reader
            .read_by_handle(handle::encode(ShardId(0), 1 << 40))
            .await
            .unwrap(),
        None
    );
}

#[tokio::test]
async fn search_offset_by_time_finds_lower_and_upper_bounds() {
    let h = Harness::new(manual_config()).await;
    let q = key(0, "T", 0);
    assert_eq!(
        h.reader.search_offset_by_time(&q, 0, false).await.unwrap(),
        QueueOffset(0)
    );
    let tickets = fill(&h, 3, 4).await; // ts t0 (offsets 0-3), t0+1000 (4-7), t0+2000 (8-11)
    let t0 = tickets[0].store_timestamp;
    let s = |ts, upper| {
        let r = &h.reader;
        let q = q.clone();
        async move { r.search_offset_by_time(&q, ts, upper).await.unwrap().0 }
    };
    assert_eq!(s(t0 - 5, false).await, 0);
    assert_eq!(s(t0, false).await, 0);
    assert_eq!(s(t0 + 1, false).await, 4);
    assert_eq!(s(t0 + 1000, false).await, 4);
    assert_eq!(s(t0 + 5000, false).await, 12);
    assert_eq!(s(t0 - 5, true).await, 0);
    assert_eq!(s(t0, true).await, 3);
    assert_eq!(s(t0 + 999, true).await, 3);
    assert_eq!(s(t0 + 2000, true).await, 11);
    assert_eq!(s(t0 + 5000, true).await, 11);
    assert_eq!(
        h.reader.store_time_at(&q, QueueOffset(5)).await.unwrap(),
        Some(t0 + 1000)
    );
    assert_eq!(
        h.reader.store_time_at(&q, QueueOffset(12)).await.unwrap(),
        None
    );
}

#[tokio::test]
async fn a_corrupted_object_is_reported_never_returned() {
    let inner = Arc::new(InMemory::new());
    let meta = stratus_meta::open("memory://").await.unwrap();
    let h = Harness::with(manual_config(), inner.clone(), meta).await;
    fill(&h, 1, 5).await;
    let q = key(0, "T", 0);
    let good = h.read_all(&q).await;
    let listed = h.store.list("segments").await.unwrap();
    let path = Path::from(listed[0].key.as_str());
    let mut bytes = inner
        .get(&path)
        .await
        .unwrap()
        .bytes()
        .await
        .unwrap()
        .to_vec();
    // Flip one byte inside the third record's body.
    let offset = crate::format::HEADER_LEN + good[0].len() + good[1].len() + good[2].len() - 30;
    bytes[offset] ^= 0x20;
    inner.put(&path, PutPayload::from(bytes)).await.unwrap();
    h.cache.clear();
    let e = h
        .reader
        .read(&q, QueueOffset(0), 32, usize::MAX, &|_| true)
        .await
        .unwrap_err();
    assert!(matches!(e, SegmentError::Corrupt { .. }), "{e}");
    // Records before the damage still read.
    let b = h
        .reader
        .read(&q, QueueOffset(0), 2, usize::MAX, &|_| true)
        .await
        .unwrap();
    assert_eq!(b.messages, good[..2].to_vec());
}

#[tokio::test]
async fn a_restarted_node_serves_every_committed_message_byte_for_byte() {
    let dir = tempfile::tempdir().unwrap();
    let objects = dir.path().join("objects");
    std::fs::create_dir_all(&objects).unwrap();
    let meta_url = format!("embedded://{}", dir.path().join("meta.db").display());
    let fs = || -> Arc<dyn ObjectStore> {
        Arc::new(LocalFileSystem::new_with_prefix(&objects).unwrap())
    };

    let (before, tickets) = {
        let h = Harness::with(
            manual_config(),
            fs(),
            stratus_meta::open(&meta_url).await.unwrap(),
        )
        .await;
        h.open(1).await;
        let tickets = fill(&h, 3, 7).await;
        let t = h
            .writer
            .append(ShardId(1), vec![msg("U", 2, "other-shard")])
            .unwrap();
        h.writer.shutdown().await.unwrap();
        t.durable().await.unwrap();
        let before = (
            h.read_all(&key(0, "T", 0)).await,
            h.read_all(&key(1, "U", 2)).await,
        );
        h.meta.close().await;
        (before, tickets)
    };

    let h = Harness::with(
        manual_config(),
        fs(),
        stratus_meta::open(&meta_url).await.unwrap(),
    )
    .await;
    h.open(0).await;
    h.open(1).await;
    let after = (
        h.read_all(&key(0, "T", 0)).await,
        h.read_all(&key(1, "U", 2)).await,
    );
    assert_eq!(after.0.len(), 21);
    assert_eq!(after, before);
    for t in &tickets {
        assert!(
            h.reader
                .read_by_handle(t.handles[0])
                .await
                .unwrap()
                .is_some()
        );
    }
    // Appends continue where the old node stopped.
    let t = h
        .writer
        .append(ShardId(0), vec![msg("T", 0, "new")])
        .unwrap();
    assert_eq!(t.first_offset, QueueOffset(21));
    let (_, last_local) = handle::decode(tickets[20].handles[0]).unwrap();
    let (_, new_local) = handle::decode(t.handles[0]).unwrap();
    assert_eq!(new_local, last_local + after.0[20].len() as u64);
    h.writer.flush().await.unwrap();
    t.durable().await.unwrap();
    assert_eq!(h.read_all(&key(0, "T", 0)).await.len(), 22);
}

/// A message of T/0 with these `KEYS` and a unique key.
fn keyed(body: &str, keys: &str, uniq: &str) -> crate::writer::MessageToStore {
    let mut m = msg("T", 0, body);
    m.properties = format!("KEYS\u{1}{keys}\u{2}UNIQ_KEY\u{1}{uniq}\u{2}");
    m
}

#[tokio::test]
async fn find_by_key_answers_the_newest_indexed_records_in_log_order_cold_and_warm() {
    let h = Harness::new(manual_config()).await;
    h.open(0).await;
    // Three flushes, a second apart: "shared" in every one, "one" only in the first.
    for s in 0..3 {
        let mut batch = Vec::new();
        for i in 0..4 {
            let keys = if s == 0 && i == 0 {
                "one shared"
            } else {
                "shared"
            };
            batch.push(keyed(&format!("s{s}-m{i}"), keys, &format!("U{s}{i}")));
        }
        let t = h.writer.append(ShardId(0), batch).unwrap();
        h.writer.flush().await.unwrap();
        t.durable().await.unwrap();
        h.clock.advance(Duration::from_millis(1000));
    }
    let find = |key: &'static str, begin: i64, end: i64, max: usize| {
        let r = h.reader.clone();
        async move {
            bodies(
                &r.find_by_key(ShardId(0), "T", key, begin, end, max)
                    .await
                    .unwrap(),
            )
        }
    };
    assert_eq!(find("one", 0, i64::MAX, 64).await, vec!["s0-m0"]);
    assert_eq!(
        find("U21", 0, i64::MAX, 64).await,
        vec!["s2-m1"],
        "unique key"
    );
    let all = find("shared", 0, i64::MAX, 64).await;
    assert_eq!(all.len(), 12);
    assert_eq!(all[0], "s0-m0", "log order: {all:?}");
    assert_eq!(all[11], "s2-m3", "log order: {all:?}");
    assert_eq!(
        find("shared", 0, i64::MAX, 5).await,
        vec!["s1-m3", "s2-m0", "s2-m1", "s2-m2", "s2-m3"],
        "the newest five"
    );
    let t0 = h.clock.now() - 3000;
    let middle = find("shared", t0 + 500, t0 + 1500, 64).await;
    assert_eq!(middle.len(), 4, "the second flush only: {middle:?}");
    assert!(middle.iter().all(|b| b.starts_with("s1-")));
    assert!(find("absent", 0, i64::MAX, 64).await.is_empty());
    assert!(
        find("shar", 0, i64::MAX, 64).await.is_empty(),
        "no prefix match"
    );
    assert!(
        h.reader
            .find_by_key(ShardId(0), "U", "shared", 0, i64::MAX, 64)
            .await
            .unwrap()
            .is_empty(),
        "other topic"
    );

    // Cold: records come from ranged GETs, a bounded number per lookup.
    h.cache.clear();
    h.faults.reset_counts();
    assert_eq!(find("one", 0, i64::MAX, 64).await, vec!["s0-m0"]);
    let cold = h.faults.gets();
    assert!((1..=2).contains(&cold), "footer and one block: {cold} GETs");
    assert_eq!(find("one", 0, i64::MAX, 64).await, vec!["s0-m0"]);
    assert_eq!(h.faults.gets(), cold, "warm: no GET");
}

#[tokio::test]
async fn find_by_key_skips_records_whose_section_is_gone() {
    let h = Harness::new(manual_config()).await;
    let epoch = h.open(0).await;
    let t = h
        .writer
        .append(ShardId(0), vec![keyed("old", "k", "U1")])
        .unwrap();
    h.writer.flush().await.unwrap();
    t.durable().await.unwrap();
    h.clock.advance(Duration::from_secs(3600));
    let t = h
        .writer
        .append(ShardId(0), vec![keyed("new", "k", "U2")])
        .unwrap();
    h.writer.flush().await.unwrap();
    t.durable().await.unwrap();
    let policy = stratus_meta::RetentionPolicy {
        default_retention_ms: 1_000_000,
        max_shard_bytes: None,
    };
    let out = h
        .meta
        .apply_retention(ShardId(0), &h.node, epoch, h.clock.now(), &policy)
        .await
        .unwrap();
    assert_eq!(out.sections_deleted, 1);
    let found = h
        .reader
        .find_by_key(ShardId(0), "T", "k", 0, i64::MAX, 64)
        .await
        .unwrap();
    assert_eq!(bodies(&found), vec!["new"]);
}

#[tokio::test]
async fn a_writer_without_the_key_index_commits_no_keys() {
    let h = Harness::new(WriterConfig {
        index_keys: false,
        ..manual_config()
    })
    .await;
    h.open(0).await;
    let t = h
        .writer
        .append(ShardId(0), vec![keyed("plain", "k", "U1")])
        .unwrap();
    h.writer.flush().await.unwrap();
    t.durable().await.unwrap();
    let found = h
        .reader
        .find_by_key(ShardId(0), "T", "k", 0, i64::MAX, 64)
        .await
        .unwrap();
    assert!(found.is_empty());
    assert_eq!(
        h.read_all(&key(0, "T", 0)).await.len(),
        1,
        "the message is stored"
    );
}

#[tokio::test]
async fn unique_keys_in_the_client_id_layout_are_found_by_their_time() {
    let h = Harness::new(manual_config()).await;
    h.open(0).await;
    let ids: Vec<String> = (0..3)
        .map(|i| format!("7F0000012A9F1234567800BC614{i}0001"))
        .collect();
    let batch = ids
        .iter()
        .enumerate()
        .map(|(i, id)| keyed(&format!("m{i}"), "shared", id))
        .collect();
    let t = h.writer.append(ShardId(0), batch).unwrap();
    h.writer.flush().await.unwrap();
    t.durable().await.unwrap();
    for (i, id) in ids.iter().enumerate() {
        let found = h
            .reader
            .find_by_key(ShardId(0), "T", id, 0, i64::MAX, 32)
            .await
            .unwrap();
        assert_eq!(bodies(&found), vec![format!("m{i}")], "{id}");
    }
    // Indexed by time, not among the other keys.
    let hash = keys::key_hash("T", &ids[1]);
    let time = keys::uniq_id_time(&ids[1]).unwrap();
    let plain = h
        .meta
        .find_keys(ShardId(0), hash, 0, i64::MAX, 10)
        .await
        .unwrap();
    assert!(plain.is_empty());
    let unique = h
        .meta
        .find_unique_keys(ShardId(0), time, hash, 0, i64::MAX, 10)
        .await
        .unwrap();
    assert_eq!(unique.len(), 1);
    let shared = h
        .reader
        .find_by_key(ShardId(0), "T", "shared", 0, i64::MAX, 32)
        .await
        .unwrap();
    assert_eq!(shared.len(), 3);
}

//! Checks for the key index of QUERY_MESSAGE: rows appear only with the sections carrying
//! them, lookups are by hash and store-time window, newest first and limited, and
//! retention removes the rows below a shard's first retained section, for other keys and
//! for unique keys (kept by their id's time). Shards 40–42.

use stratus_compat::types::CommitLogOffset;

use super::{append, expect_conflict, node, section, take};
use crate::MetaStore;
use crate::model::{
    Epoch, KeyHit, KeyIndexEntry, RetentionPolicy, SegmentCommit, SegmentEffect, ShardId,
};

fn entry(key_hash: i64, log_offset: i64, store_ts: i64) -> KeyIndexEntry {
    KeyIndexEntry {
        key_hash,
        log_offset: CommitLogOffset(log_offset),
        store_ts,
        id_time: None,
    }
}

fn unique(id_time: i64, key_hash: i64, log_offset: i64, store_ts: i64) -> KeyIndexEntry {
    KeyIndexEntry {
        id_time: Some(id_time),
        ..entry(key_hash, log_offset, store_ts)
    }
}

async fn find_unique(
    store: &dyn MetaStore,
    shard: u32,
    id_time: i64,
    hash: i64,
    begin: i64,
) -> Vec<KeyHit> {
    store
        .find_unique_keys(ShardId(shard), id_time, hash, begin, i64::MAX, 10)
        .await
        .expect("find unique keys")
}

fn hit(log_offset: i64, store_ts: i64) -> KeyHit {
    KeyHit {
        log_offset: CommitLogOffset(log_offset),
        store_ts,
    }
}

fn keyed(mut s: SegmentCommit, keys: Vec<KeyIndexEntry>) -> SegmentCommit {
    s.effects.push(SegmentEffect::KeysIndexed {
        shard: s.shard,
        keys,
    });
    s
}

async fn find(
    store: &dyn MetaStore,
    shard: u32,
    hash: i64,
    begin: i64,
    end: i64,
    limit: u32,
) -> Vec<KeyHit> {
    store
        .find_keys(ShardId(shard), hash, begin, end, limit)
        .await
        .expect("find keys")
}

/// Keys are found by hash within the window, newest first, at most `limit`; another
/// shard's rows and other hashes are not returned; a refused commit indexes nothing and a
/// retried one nothing twice.
pub(crate) async fn keys_are_indexed_with_their_sections(store: &dyn MetaStore) {
    let n = node("keys-a");
    let e40 = take(store, 40, &n).await;
    let e41 = take(store, 41, &n).await;
    let first = keyed(
        section(
            40,
            e40,
            &n,
            "keys/1",
            0,
            300,
            vec![append("kt", 0, 0, 3, 100, 300)],
        ),
        vec![
            entry(7, 0, 100),
            entry(8, 0, 100),
            entry(7, 100, 200),
            entry(9, 200, 300),
            unique(5_000, 70, 0, 100),
            unique(5_000, 71, 100, 200),
            unique(5_001, 70, 200, 300),
        ],
    );
    let other_shard = keyed(
        section(
            41,
            e41,
            &n,
            "keys/1",
            0,
            100,
            vec![append("kt", 0, 0, 1, 150, 150)],
        ),
        vec![entry(7, 0, 150)],
    );
    store
        .commit_segment(&[first.clone(), other_shard])
        .await
        .expect("commit keyed sections");
    assert_eq!(
        find(store, 40, 7, 0, i64::MAX, 10).await,
        vec![hit(100, 200), hit(0, 100)],
        "both records of hash 7, newest first"
    );
    assert_eq!(
        find(store, 40, 7, 0, i64::MAX, 1).await,
        vec![hit(100, 200)],
        "limit 1"
    );
    assert_eq!(
        find(store, 40, 7, 101, 250, 10).await,
        vec![hit(100, 200)],
        "window"
    );
    assert_eq!(
        find(store, 40, 7, 100, 100, 10).await,
        vec![hit(0, 100)],
        "inclusive bounds"
    );
    assert_eq!(
        find(store, 40, 7, 300, 100, 10).await,
        vec![],
        "empty window"
    );
    assert_eq!(find(store, 40, 7, 0, i64::MAX, 0).await, vec![], "limit 0");
    assert_eq!(
        find(store, 40, 8, i64::MIN, i64::MAX, 10).await,
        vec![hit(0, 100)]
    );
    assert_eq!(
        find(store, 40, 10, 0, i64::MAX, 10).await,
        vec![],
        "unknown hash"
    );
    assert_eq!(
        find(store, 41, 7, 0, i64::MAX, 10).await,
        vec![hit(0, 150)],
        "shard 41"
    );
    assert_eq!(
        find(store, 42, 7, 0, i64::MAX, 10).await,
        vec![],
        "shard without rows"
    );
    assert_eq!(
        find_unique(store, 40, 5_000, 70, 0).await,
        vec![hit(0, 100)]
    );
    assert_eq!(
        find_unique(store, 40, 5_000, 71, 0).await,
        vec![hit(100, 200)]
    );
    assert_eq!(
        find_unique(store, 40, 5_001, 70, 0).await,
        vec![hit(200, 300)]
    );
    assert_eq!(
        find_unique(store, 40, 5_002, 70, 0).await,
        vec![],
        "other time"
    );
    assert_eq!(
        find_unique(store, 40, 5_000, 70, 101).await,
        vec![],
        "window"
    );
    assert_eq!(
        find_unique(store, 40, 5_000, 7, 0).await,
        vec![],
        "not the other keys"
    );
    assert_eq!(
        find(store, 40, 70, 0, i64::MAX, 10).await,
        vec![],
        "unique keys are not among the others"
    );

    // A retry of the committed section applies nothing again.
    store
        .commit_segment(std::slice::from_ref(&first))
        .await
        .expect("retry of a committed section");
    assert_eq!(
        find(store, 40, 7, 0, i64::MAX, 10).await.len(),
        2,
        "no duplicates"
    );
    assert_eq!(
        find_unique(store, 40, 5_000, 70, 0).await.len(),
        1,
        "no duplicates"
    );

    // A stale epoch and a commit-log gap are refused with their keys.
    let stale = keyed(
        section(
            40,
            Epoch(e40.0 - 1),
            &n,
            "keys/2",
            300,
            400,
            vec![append("kt", 0, 3, 1, 400, 400)],
        ),
        vec![entry(11, 300, 400), unique(6_000, 11, 300, 400)],
    );
    assert!(store.commit_segment(&[stale]).await.is_err(), "stale epoch");
    let gap = keyed(
        section(
            40,
            e40,
            &n,
            "keys/2",
            350,
            400,
            vec![append("kt", 0, 3, 1, 400, 400)],
        ),
        vec![entry(11, 350, 400)],
    );
    expect_conflict(store.commit_segment(&[gap]).await, "commit-log gap");
    assert_eq!(
        find(store, 40, 11, 0, i64::MAX, 10).await,
        vec![],
        "refused keys"
    );
    assert_eq!(
        find_unique(store, 40, 6_000, 11, 0).await,
        vec![],
        "refused"
    );

    // Many keys in one section (more than one SQLite chunk), a duplicate pair skipped.
    let mut many: Vec<KeyIndexEntry> = (0..1200)
        .map(|i| entry(1000 + i % 600, 300 + i, 500 + i))
        .collect();
    many.push(entry(1000, 300, 500));
    many.extend((0..1200).map(|i| unique(7_000 + i / 2, 1, 300 + i, 500 + i)));
    let big = keyed(
        section(
            40,
            e40,
            &n,
            "keys/3",
            300,
            1500,
            vec![append("kt", 0, 3, 1200, 500, 1699)],
        ),
        many,
    );
    store
        .commit_segment(&[big])
        .await
        .expect("commit many keys");
    assert_eq!(
        find(store, 40, 1000, 0, i64::MAX, 10).await,
        vec![hit(900, 1100), hit(300, 500)],
        "hash 1000 of records 0 and 600"
    );
    assert_eq!(
        find(store, 40, 1599, 0, i64::MAX, 10).await,
        vec![hit(1499, 1699), hit(899, 1099)]
    );
    assert_eq!(
        find_unique(store, 40, 7_100, 1, 0).await,
        vec![hit(501, 701), hit(500, 700)],
        "two records per id time"
    );
}

/// A retention pass removes the key rows of the sections it deletes (everything below the
/// shard's first remaining section) and keeps the others.
pub(crate) async fn retention_removes_keys_of_deleted_sections(store: &dyn MetaStore) {
    let n = node("keys-b");
    let e = take(store, 42, &n).await;
    let old = keyed(
        section(
            42,
            e,
            &n,
            "keys-r/1",
            0,
            100,
            vec![append("kr", 0, 0, 1, 1_000, 1_000)],
        ),
        vec![entry(5, 0, 1_000), unique(1, 5, 0, 1_000)],
    );
    let young = keyed(
        section(
            42,
            e,
            &n,
            "keys-r/2",
            100,
            200,
            vec![append("kr", 0, 1, 1, 9_000, 9_000)],
        ),
        vec![entry(5, 100, 9_000), unique(1, 5, 100, 9_000)],
    );
    store.commit_segment(&[old, young]).await.expect("commit");
    assert_eq!(find(store, 42, 5, 0, i64::MAX, 10).await.len(), 2);
    let policy = RetentionPolicy {
        default_retention_ms: 5_000,
        max_shard_bytes: None,
    };
    let out = store
        .apply_retention(ShardId(42), &n, e, 10_000, &policy)
        .await
        .expect("retention");
    assert_eq!(out.sections_deleted, 1, "the old section goes");
    assert_eq!(
        find(store, 42, 5, 0, i64::MAX, 10).await,
        vec![hit(100, 9_000)],
        "only the young section's key is left"
    );
    assert_eq!(find_unique(store, 42, 1, 5, 0).await, vec![hit(100, 9_000)]);
    let out = store
        .apply_retention(ShardId(42), &n, e, 100_000, &policy)
        .await
        .expect("retention of everything");
    assert_eq!(out.sections_deleted, 1);
    assert_eq!(
        find(store, 42, 5, 0, i64::MAX, 10).await,
        vec![],
        "no section, no keys"
    );
    assert_eq!(
        find_unique(store, 42, 1, 5, 0).await,
        vec![],
        "nor unique keys"
    );
}

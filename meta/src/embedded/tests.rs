//! Embedded-backend tests: the conformance suite on both storage modes, plus what only a
//! file database has (durability settings, reopening, paths, damaged files).

use stratus_compat::types::{
    CommitLogOffset, ConsumerGroup, ProducerGroup, QueueId, QueueOffset, Topic,
};

use super::*;

#[tokio::test]
async fn conformance_suite_passes_in_memory() {
    let store = EmbeddedMeta::in_memory().await.unwrap();
    crate::testing::run_all(&store).await;
    store.close().await;
}

#[tokio::test]
async fn conformance_suite_passes_on_a_file() {
    let dir = tempfile::tempdir().unwrap();
    let store = EmbeddedMeta::open(dir.path().join("meta.sqlite"))
        .await
        .unwrap();
    crate::testing::run_all(&store).await;
    store.close().await;
}

fn key(topic: &str, queue_id: i32) -> QueueKey {
    QueueKey {
        shard: ShardId(0),
        topic: Topic::new(topic),
        queue_id: QueueId(queue_id),
    }
}

fn commit(epoch: Epoch, node: &NodeId, object: &str, start: i64, first: i64) -> SegmentCommit {
    SegmentCommit {
        shard: ShardId(0),
        epoch,
        node: node.clone(),
        object_key: object.into(),
        section_pos: 0,
        section_len: 10,
        footer_pos: 10,
        footer_len: 4,
        commit_log_start: CommitLogOffset(start),
        commit_log_end: CommitLogOffset(start + 10),
        queues: vec![QueueAppend {
            topic: Topic::new("durable"),
            queue_id: QueueId(0),
            first_offset: QueueOffset(first),
            count: 5,
            min_store_ts: 1,
            max_store_ts: 2,
        }],
        committed_at_ms: 3,
        effects: Vec::new(),
    }
}

#[tokio::test]
async fn reopened_file_store_sees_committed_data() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("meta.sqlite");
    let node = NodeId("node-a".into());
    let group = ConsumerGroup::new("g");
    let topic = TopicConfig {
        topic: Topic::new("durable"),
        read_queue_nums: 4,
        write_queue_nums: 4,
        perm: 6,
        topic_filter_type: "SINGLE_TAG".into(),
        topic_sys_flag: 0,
        order: false,
        retention_hours: Some(72),
    };
    let epoch = {
        let store = EmbeddedMeta::open(&path).await.unwrap();
        store.ensure_shards(1).await.unwrap();
        let epoch = store
            .acquire_shard(ShardId(0), &node, 0, 60_000)
            .await
            .unwrap()
            .unwrap()
            .epoch;
        store.put_topic(&topic).await.unwrap();
        store
            .commit_segment(&[commit(epoch, &node, "seg-1", 0, 0)])
            .await
            .unwrap();
        store
            .commit_consumer_offsets(&[ConsumerOffset {
                group: group.clone(),
                queue: key("durable", 0),
                offset: QueueOffset(3),
            }])
            .await
            .unwrap();
        store.put_kv("ns", "k", "v").await.unwrap();
        store.close().await;
        epoch
    };

    let store = EmbeddedMeta::open(&path).await.unwrap();
    let lease = &store.list_shards().await.unwrap()[0];
    assert_eq!(
        (lease.epoch, lease.owner.as_ref()),
        (epoch, Some(&node)),
        "lease survives"
    );
    assert_eq!(store.get_topic(&topic.topic).await.unwrap(), Some(topic));
    let state = store.shard_state(ShardId(0)).await.unwrap();
    assert_eq!(state.commit_log_end, CommitLogOffset(10));
    assert_eq!(state.queues.len(), 1);
    assert_eq!(state.queues[0].max_offset, QueueOffset(5));
    let segs = store
        .queue_segments(&key("durable", 0), QueueOffset(0), 10)
        .await
        .unwrap();
    assert_eq!(segs.len(), 1);
    assert_eq!(segs[0].segment.object_key, "seg-1");
    assert_eq!(
        store
            .consumer_offset(&group, &key("durable", 0))
            .await
            .unwrap(),
        Some(QueueOffset(3))
    );
    assert_eq!(store.get_kv("ns", "k").await.unwrap().as_deref(), Some("v"));
    // The owner picks up where it left off.
    store
        .commit_segment(&[commit(epoch, &node, "seg-2", 10, 5)])
        .await
        .unwrap();
    assert_eq!(
        store
            .queue_range(&key("durable", 0))
            .await
            .unwrap()
            .max_offset,
        QueueOffset(10)
    );
    store.close().await;
}

#[tokio::test]
async fn file_store_runs_wal_with_full_sync_and_read_only_readers() {
    let dir = tempfile::tempdir().unwrap();
    let store = EmbeddedMeta::open(dir.path().join("meta.sqlite"))
        .await
        .unwrap();
    let (mode,): (String,) = sqlx::query_as("PRAGMA journal_mode")
        .fetch_one(&store.writer)
        .await
        .unwrap();
    assert_eq!(mode, "wal");
    for pool in [&store.writer, &store.reader] {
        let (sync,): (i64,) = sqlx::query_as("PRAGMA synchronous")
            .fetch_one(pool)
            .await
            .unwrap();
        assert_eq!(sync, 2, "synchronous=FULL");
    }
    let write = sqlx::query("DELETE FROM topics")
        .execute(&store.reader)
        .await;
    assert!(write.is_err(), "reader connections refuse writes");
    store.close().await;
}

#[tokio::test]
async fn open_creates_parent_directories_and_migrates_once() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("a").join("b").join("meta.sqlite");
    EmbeddedMeta::open(&path).await.unwrap().close().await;
    assert!(path.is_file(), "database file created");
    let store = EmbeddedMeta::open(&path).await.unwrap();
    let (applied,): (i64,) = sqlx::query_as("SELECT count(*) FROM _sqlx_migrations")
        .fetch_one(&store.reader)
        .await
        .unwrap();
    assert_eq!(applied, i64::try_from(MIGRATIONS.len()).unwrap());
    store.close().await;
}

#[tokio::test]
async fn open_on_a_directory_puts_the_file_inside() {
    let dir = tempfile::tempdir().unwrap();
    EmbeddedMeta::open(dir.path()).await.unwrap().close().await;
    assert!(dir.path().join(DIR_FILE_NAME).is_file());
}

#[tokio::test]
async fn a_file_that_is_not_a_database_is_corrupt() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("meta.sqlite");
    std::fs::write(&path, vec![0x5a_u8; 8192]).unwrap();
    let err = EmbeddedMeta::open(&path).await.unwrap_err();
    assert!(matches!(err, MetaError::Corrupt(_)), "got {err:?}");
}

#[tokio::test]
async fn open_url_picks_the_backend() {
    let store = crate::open("memory://").await.unwrap();
    assert_eq!(store.ensure_shards(2).await.unwrap().len(), 2);
    store.close().await;

    let dir = tempfile::tempdir().unwrap();
    let url = format!("embedded://{}", dir.path().join("m.sqlite").display());
    let store = crate::open(&url).await.unwrap();
    assert_eq!(store.list_shards().await.unwrap(), vec![]);
    store.close().await;

    let err = crate::open("mysql://x").await.unwrap_err();
    assert!(matches!(err, MetaError::Config(_)), "got {err:?}");
}

fn half(handle: i64, next_check_ms: i64) -> HalfMessage {
    HalfMessage {
        shard: ShardId(0),
        handle: CommitLogOffset(handle),
        queue_offset: QueueOffset(handle),
        producer_group: ProducerGroup::new("pg"),
        transaction_id: format!("tx-{handle}"),
        real_topic: Topic::new("durable"),
        real_queue_id: QueueId(1),
        stored_at_ms: 1_000 + handle,
        check_times: 0,
        next_check_ms,
    }
}

#[tokio::test]
async fn half_messages_survive_reopening_a_file_store() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("meta.sqlite");
    let node = NodeId("node-a".into());
    let (kept, resolved, checked) = (half(1, 10), half(2, 10), half(3, 10));
    let epoch = {
        let store = EmbeddedMeta::open(&path).await.unwrap();
        store.ensure_shards(1).await.unwrap();
        let epoch = store
            .acquire_shard(ShardId(0), &node, 0, 60_000)
            .await
            .unwrap()
            .unwrap()
            .epoch;
        let prepare = SegmentCommit {
            effects: [&kept, &resolved, &checked]
                .map(|h| SegmentEffect::HalfPrepared(h.clone()))
                .to_vec(),
            ..commit(epoch, &node, "seg-1", 0, 0)
        };
        store.commit_segment(&[prepare]).await.unwrap();
        let resolve = SegmentCommit {
            effects: vec![SegmentEffect::HalfResolved {
                shard: ShardId(0),
                handle: resolved.handle,
            }],
            ..commit(epoch, &node, "seg-2", 10, 5)
        };
        store.commit_segment(&[resolve]).await.unwrap();
        assert!(
            store
                .record_half_check(ShardId(0), checked.handle, 2, 99)
                .await
                .unwrap()
        );
        store.close().await;
        epoch
    };

    let store = EmbeddedMeta::open(&path).await.unwrap();
    let checked = HalfMessage {
        check_times: 2,
        next_check_ms: 99,
        ..checked
    };
    assert_eq!(
        store.half_messages(ShardId(0)).await.unwrap(),
        vec![kept.clone(), checked.clone()]
    );
    assert_eq!(
        store.due_half_messages(ShardId(0), 50, 10).await.unwrap(),
        vec![kept.clone()]
    );
    // The owner goes on resolving after the restart.
    let resolve = SegmentCommit {
        effects: vec![SegmentEffect::HalfResolved {
            shard: ShardId(0),
            handle: kept.handle,
        }],
        ..commit(epoch, &node, "seg-3", 20, 10)
    };
    store.commit_segment(&[resolve]).await.unwrap();
    assert_eq!(
        store.half_messages(ShardId(0)).await.unwrap(),
        vec![checked]
    );
    store.close().await;
}

#[tokio::test]
async fn a_version_1_database_is_upgraded_in_place() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("meta.sqlite");
    {
        let pool = SqlitePoolOptions::new()
            .max_connections(1)
            .connect_with(
                SqliteConnectOptions::new()
                    .filename(&path)
                    .create_if_missing(true),
            )
            .await
            .unwrap();
        let (version, name, sql) = MIGRATIONS[0];
        Migrator::with_migrations(vec![Migration::new(
            version,
            name.into(),
            MigrationType::Simple,
            sql.into_sql_str(),
            false,
        )])
        .run(&pool)
        .await
        .unwrap();
        sqlx::query("INSERT INTO kv_config (namespace, kv_key, kv_value) VALUES ('ns', 'k', 'v')")
            .execute(&pool)
            .await
            .unwrap();
        pool.close().await;
    }
    let store = EmbeddedMeta::open(&path).await.unwrap();
    assert_eq!(store.get_kv("ns", "k").await.unwrap().as_deref(), Some("v"));
    assert_eq!(store.half_messages(ShardId(0)).await.unwrap(), vec![]);
    let (applied,): (i64,) = sqlx::query_as("SELECT count(*) FROM _sqlx_migrations")
        .fetch_one(&store.reader)
        .await
        .unwrap();
    assert_eq!(applied, i64::try_from(MIGRATIONS.len()).unwrap());
    store.close().await;
}

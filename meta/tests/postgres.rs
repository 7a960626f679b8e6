//! The PostgreSQL backend against a real server: the conformance suite, and two stores
//! racing for one shard.
//!
//! Runs when `STRATUS_TEST_POSTGRES_URL` names a server (e.g. the one
//! `tests/servers/postgres.sh start DIR` prints); each test creates its own database
//! `stratus_test_<random>` there and drops it afterwards. Unset, the tests print a skip
//! notice and pass, unless `STRATUS_REQUIRE_POSTGRES=1`, which makes them fail.

use std::collections::hash_map::RandomState;
use std::hash::BuildHasher;
use std::sync::Arc;

use sqlx::postgres::PgConnection;
use sqlx::{AssertSqlSafe, Connection};
use stratus_compat::types::{CommitLogOffset, QueueId, QueueOffset, Topic};
use stratus_meta::postgres::PostgresMeta;
use stratus_meta::{
    Epoch, MetaError, MetaStore, NodeId, QueueAppend, QueueKey, SegmentCommit, ShardId,
};

/// The server URL, or `None` (after printing why) when the tests should be skipped.
fn server_url() -> Option<String> {
    match std::env::var("STRATUS_TEST_POSTGRES_URL") {
        Ok(url) if !url.is_empty() => Some(url),
        _ => {
            assert!(
                std::env::var("STRATUS_REQUIRE_POSTGRES").as_deref() != Ok("1"),
                "STRATUS_REQUIRE_POSTGRES=1 but STRATUS_TEST_POSTGRES_URL is not set \
                 (start a server with tests/servers/postgres.sh start DIR)"
            );
            eprintln!(
                "SKIPPED: STRATUS_TEST_POSTGRES_URL is not set \
                 (tests/servers/postgres.sh start DIR prints one)"
            );
            None
        }
    }
}

/// `url` with its database name replaced by `db` (query kept).
fn with_database(url: &str, db: &str) -> String {
    let (base, query) = match url.split_once('?') {
        Some((b, q)) => (b, Some(q)),
        None => (url, None),
    };
    let authority_start = base.find("://").map_or(0, |i| i + 3);
    let base = match base[authority_start..].find('/') {
        Some(slash) => &base[..authority_start + slash],
        None => base,
    };
    match query {
        Some(q) => format!("{base}/{db}?{q}"),
        None => format!("{base}/{db}"),
    }
}

/// A fresh database on the server, dropped by [`TestDb::drop_db`].
struct TestDb {
    server: String,
    name: String,
    url: String,
}

impl TestDb {
    async fn create(server: &str) -> Self {
        // RandomState is seeded randomly per process: a random suffix without a clock.
        let random = RandomState::new().hash_one(std::process::id());
        let name = format!("stratus_test_{random:016x}");
        let mut admin = PgConnection::connect(server)
            .await
            .expect("connect to server");
        sqlx::raw_sql(AssertSqlSafe(format!("CREATE DATABASE {name}")))
            .execute(&mut admin)
            .await
            .expect("create test database");
        admin.close().await.expect("close");
        let url = with_database(server, &name);
        Self {
            server: server.to_owned(),
            name,
            url,
        }
    }

    async fn drop_db(self) {
        let mut admin = PgConnection::connect(&self.server)
            .await
            .expect("connect to server");
        sqlx::raw_sql(AssertSqlSafe(format!(
            "DROP DATABASE IF EXISTS {} WITH (FORCE)",
            self.name
        )))
        .execute(&mut admin)
        .await
        .expect("drop test database");
        admin.close().await.expect("close");
    }
}

#[test]
fn database_names_are_swapped_in_urls() {
    assert_eq!(
        with_database("postgres://postgres@127.0.0.1:15432/postgres", "x"),
        "postgres://postgres@127.0.0.1:15432/x"
    );
    assert_eq!(
        with_database("postgresql://u:p@h/db?sslmode=disable", "x"),
        "postgresql://u:p@h/x?sslmode=disable"
    );
    assert_eq!(
        with_database("postgres://h:5432", "x"),
        "postgres://h:5432/x"
    );
}

#[tokio::test]
async fn conformance_suite_passes_on_postgres() {
    let Some(server) = server_url() else { return };
    let db = TestDb::create(&server).await;
    let store = PostgresMeta::open(&db.url).await.expect("open");
    stratus_meta::testing::run_all(&store).await;
    store.close().await;

    // Reopening runs no migration again and sees the data; open() picks the backend.
    let again = stratus_meta::open(&format!("{}?pool_size=2", db.url))
        .await
        .expect("reopen through open()");
    assert_eq!(again.list_shards().await.expect("shards").len(), 44);
    again.close().await;
    db.drop_db().await;
}

fn node(name: &str) -> NodeId {
    NodeId(name.to_owned())
}

fn one_queue_section(
    shard: u32,
    epoch: Epoch,
    writer: &NodeId,
    key: &str,
    start: i64,
    first: i64,
) -> SegmentCommit {
    SegmentCommit {
        shard: ShardId(shard),
        epoch,
        node: writer.clone(),
        object_key: key.to_owned(),
        section_pos: 0,
        section_len: 10,
        footer_pos: 10,
        footer_len: 4,
        commit_log_start: CommitLogOffset(start),
        commit_log_end: CommitLogOffset(start + 10),
        queues: vec![QueueAppend {
            topic: Topic::new("race"),
            queue_id: QueueId(0),
            first_offset: QueueOffset(first),
            count: 1,
            min_store_ts: 1,
            max_store_ts: 1,
        }],
        committed_at_ms: 1,
        effects: Vec::new(),
    }
}

/// Two stores (two nodes' connection pools) on one database.
#[tokio::test]
async fn two_stores_racing_for_one_shard_have_one_winner() {
    let Some(server) = server_url() else { return };
    let db = TestDb::create(&server).await;
    let a: Arc<dyn MetaStore> = Arc::new(PostgresMeta::open(&db.url).await.expect("open a"));
    let b: Arc<dyn MetaStore> = Arc::new(PostgresMeta::open(&db.url).await.expect("open b"));
    a.ensure_shards(1).await.expect("shards");
    let (na, nb) = (node("node-a"), node("node-b"));
    let queue = QueueKey {
        shard: ShardId(0),
        topic: Topic::new("race"),
        queue_id: QueueId(0),
    };

    // Both acquire the free shard at once: one wins.
    let (ra, rb) = tokio::join!(
        a.acquire_shard(ShardId(0), &na, 0, 1_000),
        b.acquire_shard(ShardId(0), &nb, 0, 1_000)
    );
    let (ra, rb) = (ra.expect("acquire a"), rb.expect("acquire b"));
    assert!(
        ra.is_some() != rb.is_some(),
        "exactly one winner: {ra:?} {rb:?}"
    );
    let e1 = Epoch(1);
    // Both commit at the same place under epoch 1, each as itself: only the owner succeeds.
    let (sa, sb) = (
        [one_queue_section(0, e1, &na, "race-a-0", 0, 0)],
        [one_queue_section(0, e1, &nb, "race-b-0", 0, 0)],
    );
    let (ca, cb) = tokio::join!(a.commit_segment(&sa), b.commit_segment(&sb));
    let (winner_ok, loser) = if ra.is_some() { (ca, cb) } else { (cb, ca) };
    winner_ok.expect("the owner commits");
    assert!(
        matches!(loser, Err(MetaError::Fenced { .. })),
        "the other node is fenced: {loser:?}"
    );

    // Takeovers racing commits: each round the current holder commits while the other
    // node takes the expired lease and then commits at the end it loads. The old holder's
    // commit lands before the takeover or is fenced, never both commits at one offset.
    let (mut holder, mut other) = if ra.is_some() {
        ((&a, &na), (&b, &nb))
    } else {
        ((&b, &nb), (&a, &na))
    };
    let mut epoch = e1;
    let mut end = 10_i64;
    let mut max = 1_i64;
    let mut landed_total = 0;
    for round in 1..=20_i64 {
        let now = round * 10_000;
        let (old_store, old_node) = holder;
        let (new_store, new_node) = other;
        let stale = [one_queue_section(
            0,
            epoch,
            old_node,
            &format!("race-old-{round}"),
            end,
            max,
        )];
        let (old_commit, takeover) = tokio::join!(old_store.commit_segment(&stale), async {
            let lease = new_store
                .acquire_shard(ShardId(0), new_node, now, 1_000)
                .await
                .expect("acquire")
                .expect("the lease expired");
            let state = new_store.shard_state(ShardId(0)).await.expect("state");
            let q = state
                .queues
                .iter()
                .find(|r| r.queue == queue)
                .expect("queue");
            let section = one_queue_section(
                0,
                lease.epoch,
                new_node,
                &format!("race-new-{round}"),
                state.commit_log_end.0,
                q.max_offset.0,
            );
            new_store
                .commit_segment(&[section])
                .await
                .expect("the new holder commits");
            lease.epoch
        });
        let landed = match old_commit {
            Ok(()) => 1,
            Err(MetaError::Fenced { .. }) => 0,
            Err(e) => panic!("round {round}: old holder's commit: {e:?}"),
        };
        assert_eq!(takeover, Epoch(epoch.0 + 1), "round {round}: epoch + 1");
        epoch = takeover;
        landed_total += landed;
        end += 10 * (landed + 1);
        max += landed + 1;
        let state = a.shard_state(ShardId(0)).await.expect("state");
        assert_eq!(state.commit_log_end, CommitLogOffset(end), "round {round}");
        assert_eq!(
            a.queue_range(&queue).await.expect("range").max_offset,
            QueueOffset(max),
            "round {round}"
        );
        std::mem::swap(&mut holder, &mut other);
    }
    eprintln!("old holders' racing commits: {landed_total} of 20 landed, the rest fenced");
    // Every committed section is contiguous with the next.
    let segs = a
        .queue_segments(&queue, QueueOffset(0), 1_000)
        .await
        .expect("segments");
    assert_eq!(i64::try_from(segs.len()).expect("len"), max);
    for pair in segs.windows(2) {
        assert_eq!(
            pair[0].segment.commit_log_end, pair[1].segment.commit_log_start,
            "contiguous commit log"
        );
        assert_eq!(pair[0].first_offset.0 + 1, pair[1].first_offset.0);
    }
    a.close().await;
    b.close().await;
    db.drop_db().await;
}

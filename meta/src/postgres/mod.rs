//! The PostgreSQL backend: many gateway nodes share one database, through sqlx.
//!
//! URL: `postgres://user[:password]@host[:port]/database[?options]` (or `postgresql://`),
//! with sqlx's connect options (`sslmode`, `application_name`, …) plus `pool_size=N`
//! (alias `max_connections`): connections per store, default [`DEFAULT_POOL_SIZE`]; and
//! `acquire_timeout_ms=N`: how long a call waits for a connection (also while the server is
//! unreachable) before failing as unavailable, default 10 000.
//!
//! Schema: `meta/migrations/postgres/NNN_*.sql`, the same versions and names as the
//! SQLite ones in PostgreSQL types, applied in order at open by sqlx's [`Migrator`] (which
//! holds an advisory lock, so nodes starting together migrate once).
//!
//! Invariants as in the embedded backend. Every write that must be fenced runs under a row
//! lock on the shard: a segment commit's conditional `UPDATE shards … WHERE epoch = … AND
//! owner = … AND commit_log_end = …` and a retention pass's `SELECT … FOR UPDATE` hold it to
//! the end of their transaction, and lease changes are conditional `UPDATE`s of the same row,
//! which PostgreSQL re-checks after waiting for a concurrent writer. So a takeover either
//! happens before a commit (which is then fenced) or after it (and the new owner loads what
//! it committed); two nodes can never both commit under one shard.
//!
//! Round trips of the hot paths (no effects):
//! - a one-shard flush commit, any number of queues: **3** — `BEGIN`, one statement
//!   (fence and advance the shard, insert the section, create and advance every queue and
//!   insert every queue range from `UNNEST`ed arrays, in data-modifying CTEs), `COMMIT`;
//!   `2 + s` for `s` shard sections in one call, plus one statement per
//!   [`SegmentCommit::effects`] entry (transactional prepare/commit, timers, delays);
//! - a consumer-offset commit, any number of offsets: **1** — one
//!   `INSERT … SELECT FROM UNNEST(…) ON CONFLICT DO UPDATE` in its own implicit transaction.
//!
//! Counts are for statements already prepared on the connection (sqlx caches them per
//! connection; a statement's first use on a connection adds one prepare round trip).
//! Refused commits add a few diagnostic reads before rolling back.

mod catalog;
mod convert;
mod half;
mod leases;
mod nodes;
mod retention;
mod segments;

use std::str::FromStr;
use std::time::Duration;

use async_trait::async_trait;
use sqlx::SqlSafeStr;
use sqlx::migrate::{Migration, MigrationType, Migrator};
use sqlx::postgres::{PgConnectOptions, PgPool, PgPoolOptions};
use stratus_compat::types::{CommitLogOffset, ConsumerGroup, QueueOffset, Topic};

use crate::MetaStore;
use crate::error::{MetaError, Result};
use crate::model::*;

use convert::migrate_err;

/// Connections per store unless the URL says `pool_size=N`.
pub const DEFAULT_POOL_SIZE: u32 = 8;
/// Largest accepted `pool_size`.
const MAX_POOL_SIZE: u32 = 1_000;
/// How long a caller waits for a pooled connection before failing as unavailable.
const ACQUIRE_TIMEOUT: Duration = Duration::from_secs(10);

/// The schema migrations, in order. Append only: an applied migration must never change
/// (sqlx checks its checksum at every open).
const MIGRATIONS: &[(i64, &str, &str)] = &[
    (
        1,
        "initial",
        include_str!("../../migrations/postgres/001_initial.sql"),
    ),
    (
        2,
        "half_messages",
        include_str!("../../migrations/postgres/002_half_messages.sql"),
    ),
    (
        3,
        "schedule_progress",
        include_str!("../../migrations/postgres/003_schedule_progress.sql"),
    ),
    (
        4,
        "timers",
        include_str!("../../migrations/postgres/004_timers.sql"),
    ),
    (
        5,
        "nodes",
        include_str!("../../migrations/postgres/005_nodes.sql"),
    ),
];

/// PostgreSQL-backed [`MetaStore`].
#[derive(Debug)]
pub struct PostgresMeta {
    pool: PgPool,
}

impl PostgresMeta {
    /// Connects to the database at `url` and runs migrations.
    ///
    /// # Errors
    /// [`MetaError::Config`] for a malformed URL, a bad `pool_size`, bad credentials or an
    /// unknown database; [`MetaError::Unavailable`] if the server cannot be reached;
    /// [`MetaError::Corrupt`] if the database holds a schema this binary cannot migrate.
    pub async fn open(url: &str) -> Result<Self> {
        let settings = split_pool_settings(url)?;
        let options = PgConnectOptions::from_str(&settings.url)
            .map_err(|e| MetaError::Config(format!("postgres url: {e}")))?;
        let pool = PgPoolOptions::new()
            .max_connections(settings.size)
            .acquire_timeout(settings.acquire_timeout)
            .connect_with(options)
            .await
            .map_err(|e| convert::map_sqlx("connect to postgres", e))?;
        migrator().run(&pool).await.map_err(migrate_err)?;
        Ok(Self { pool })
    }
}

/// Pool settings taken out of the URL's query.
#[derive(Debug, PartialEq, Eq)]
struct PoolSettings {
    /// The URL for sqlx (without the settings below).
    url: String,
    /// `pool_size` / `max_connections`.
    size: u32,
    /// `acquire_timeout_ms`.
    acquire_timeout: Duration,
}

/// Takes `pool_size` (or `max_connections`) and `acquire_timeout_ms` out of the URL's query.
fn split_pool_settings(url: &str) -> Result<PoolSettings> {
    let mut settings = PoolSettings {
        url: url.to_owned(),
        size: DEFAULT_POOL_SIZE,
        acquire_timeout: ACQUIRE_TIMEOUT,
    };
    let Some((base, query)) = url.split_once('?') else {
        return Ok(settings);
    };
    let bad = |what: &str, v: &str| MetaError::Config(format!("postgres url: {what} {v:?}"));
    let mut rest = Vec::new();
    for pair in query.split('&').filter(|p| !p.is_empty()) {
        match pair.split_once('=') {
            Some(("pool_size" | "max_connections", v)) => {
                settings.size = v
                    .parse::<u32>()
                    .ok()
                    .filter(|n| (1..=MAX_POOL_SIZE).contains(n))
                    .ok_or_else(|| bad("pool_size (1..=1000)", v))?;
            }
            Some(("acquire_timeout_ms", v)) => {
                settings.acquire_timeout = v
                    .parse::<u64>()
                    .ok()
                    .filter(|&ms| ms > 0)
                    .map(Duration::from_millis)
                    .ok_or_else(|| bad("acquire_timeout_ms", v))?;
            }
            _ => rest.push(pair),
        }
    }
    settings.url = if rest.is_empty() {
        base.to_owned()
    } else {
        format!("{base}?{}", rest.join("&"))
    };
    Ok(settings)
}

/// The migrator over [`MIGRATIONS`].
fn migrator() -> Migrator {
    Migrator::with_migrations(
        MIGRATIONS
            .iter()
            .map(|&(version, name, sql)| {
                Migration::new(
                    version,
                    name.into(),
                    MigrationType::Simple,
                    sql.into_sql_str(),
                    false,
                )
            })
            .collect(),
    )
}

#[async_trait]
impl MetaStore for PostgresMeta {
    async fn get_topic(&self, topic: &Topic) -> Result<Option<TopicConfig>> {
        catalog::get_topic(&self.pool, topic).await
    }

    async fn list_topics(&self) -> Result<Vec<TopicConfig>> {
        catalog::list_topics(&self.pool).await
    }

    async fn put_topic(&self, config: &TopicConfig) -> Result<()> {
        catalog::put_topic(&self.pool, config).await
    }

    async fn create_topic_if_absent(&self, config: &TopicConfig) -> Result<TopicConfig> {
        catalog::create_topic_if_absent(&self.pool, config).await
    }

    async fn delete_topic(&self, topic: &Topic) -> Result<()> {
        catalog::delete_topic(&self.pool, topic).await
    }

    async fn ensure_shards(&self, count: u32) -> Result<Vec<ShardLease>> {
        leases::ensure_shards(&self.pool, count).await
    }

    async fn list_shards(&self) -> Result<Vec<ShardLease>> {
        leases::list_shards(&self.pool).await
    }

    async fn acquire_shard(
        &self,
        shard: ShardId,
        node: &NodeId,
        now_ms: i64,
        ttl_ms: i64,
    ) -> Result<Option<ShardLease>> {
        leases::acquire_shard(&self.pool, shard, node, now_ms, ttl_ms).await
    }

    async fn renew_shard(
        &self,
        shard: ShardId,
        node: &NodeId,
        epoch: Epoch,
        now_ms: i64,
        ttl_ms: i64,
    ) -> Result<ShardLease> {
        leases::renew_shard(&self.pool, shard, node, epoch, now_ms, ttl_ms).await
    }

    async fn release_shard(&self, shard: ShardId, node: &NodeId, epoch: Epoch) -> Result<()> {
        leases::release_shard(&self.pool, shard, node, epoch).await
    }

    async fn shard_state(&self, shard: ShardId) -> Result<ShardState> {
        leases::shard_state(&self.pool, shard).await
    }

    /// Round trips: `BEGIN`, one statement per section, `COMMIT` (**3** for the usual
    /// one-shard flush, any number of queues), plus one per effect; see the module doc.
    async fn commit_segment(&self, sections: &[SegmentCommit]) -> Result<()> {
        segments::commit_segment(&self.pool, sections).await
    }

    async fn queue_segments(
        &self,
        queue: &QueueKey,
        from: QueueOffset,
        limit: u32,
    ) -> Result<Vec<QueueSegment>> {
        segments::queue_segments(&self.pool, queue, from, limit).await
    }

    async fn queue_segment_by_time(
        &self,
        queue: &QueueKey,
        ts_ms: i64,
    ) -> Result<Option<QueueSegment>> {
        segments::queue_segment_by_time(&self.pool, queue, ts_ms).await
    }

    async fn segment_by_commit_log_offset(
        &self,
        shard: ShardId,
        offset: CommitLogOffset,
    ) -> Result<Option<SegmentRef>> {
        segments::segment_by_commit_log_offset(&self.pool, shard, offset).await
    }

    async fn queue_range(&self, queue: &QueueKey) -> Result<QueueRange> {
        segments::queue_range(&self.pool, queue).await
    }

    async fn half_message(
        &self,
        shard: ShardId,
        handle: CommitLogOffset,
    ) -> Result<Option<HalfMessage>> {
        half::half_message(&self.pool, shard, handle).await
    }

    async fn due_half_messages(
        &self,
        shard: ShardId,
        now_ms: i64,
        limit: u32,
    ) -> Result<Vec<HalfMessage>> {
        half::due_half_messages(&self.pool, shard, now_ms, limit).await
    }

    async fn record_half_check(
        &self,
        shard: ShardId,
        handle: CommitLogOffset,
        check_times: i32,
        next_check_ms: i64,
    ) -> Result<bool> {
        half::record_half_check(&self.pool, shard, handle, check_times, next_check_ms).await
    }

    async fn resolve_half_message(&self, shard: ShardId, handle: CommitLogOffset) -> Result<bool> {
        half::resolve_half_message(&self.pool, shard, handle).await
    }

    async fn schedule_progress(&self, shard: ShardId) -> Result<Vec<(i32, QueueOffset)>> {
        half::schedule_progress(&self.pool, shard).await
    }

    async fn due_timers(
        &self,
        shard: ShardId,
        now_ms: i64,
        limit: u32,
    ) -> Result<Vec<(CommitLogOffset, i64)>> {
        half::due_timers(&self.pool, shard, now_ms, limit).await
    }

    async fn half_messages(&self, shard: ShardId) -> Result<Vec<HalfMessage>> {
        half::half_messages(&self.pool, shard).await
    }

    /// Round trips: **1** for any number of offsets (one `UNNEST` upsert).
    async fn commit_consumer_offsets(&self, offsets: &[ConsumerOffset]) -> Result<()> {
        catalog::commit_consumer_offsets(&self.pool, offsets).await
    }

    async fn consumer_offset(
        &self,
        group: &ConsumerGroup,
        queue: &QueueKey,
    ) -> Result<Option<QueueOffset>> {
        catalog::consumer_offset(&self.pool, group, queue).await
    }

    async fn group_offsets(&self, group: &ConsumerGroup) -> Result<Vec<ConsumerOffset>> {
        catalog::group_offsets(&self.pool, group).await
    }

    async fn get_group(&self, group: &ConsumerGroup) -> Result<Option<SubscriptionGroupConfig>> {
        catalog::get_group(&self.pool, group).await
    }

    async fn put_group(&self, config: &SubscriptionGroupConfig) -> Result<()> {
        catalog::put_group(&self.pool, config).await
    }

    async fn list_groups(&self) -> Result<Vec<SubscriptionGroupConfig>> {
        catalog::list_groups(&self.pool).await
    }

    async fn heartbeat_node(&self, node: &NodeInfo) -> Result<()> {
        nodes::heartbeat_node(&self.pool, node).await
    }

    async fn list_nodes(&self) -> Result<Vec<NodeInfo>> {
        nodes::list_nodes(&self.pool).await
    }

    async fn remove_node(&self, node: &NodeId) -> Result<()> {
        nodes::remove_node(&self.pool, node).await
    }

    /// Round trips: `BEGIN`, the shard lock (`SELECT … FOR UPDATE`), one `DELETE` by age,
    /// one by size (only with a size limit), one `DELETE` of emptied sections, one `UPDATE`
    /// of min offsets, one read of still-referenced keys (only when sections were deleted),
    /// `COMMIT`: 6 to 8.
    async fn apply_retention(
        &self,
        shard: ShardId,
        node: &NodeId,
        epoch: Epoch,
        now_ms: i64,
        policy: &RetentionPolicy,
    ) -> Result<RetentionOutcome> {
        retention::apply_retention(&self.pool, shard, node, epoch, now_ms, policy).await
    }

    async fn unreferenced_objects(&self, keys: &[String]) -> Result<Vec<String>> {
        retention::unreferenced_objects(&self.pool, keys).await
    }

    async fn put_kv(&self, namespace: &str, key: &str, value: &str) -> Result<()> {
        catalog::put_kv(&self.pool, namespace, key, value).await
    }

    async fn get_kv(&self, namespace: &str, key: &str) -> Result<Option<String>> {
        catalog::get_kv(&self.pool, namespace, key).await
    }

    async fn delete_kv(&self, namespace: &str, key: &str) -> Result<()> {
        catalog::delete_kv(&self.pool, namespace, key).await
    }

    async fn close(&self) {
        self.pool.close().await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings(url: &str, size: u32, timeout_ms: u64) -> PoolSettings {
        PoolSettings {
            url: url.to_owned(),
            size,
            acquire_timeout: Duration::from_millis(timeout_ms),
        }
    }

    #[test]
    fn pool_settings_are_taken_out_of_the_url() {
        assert_eq!(
            split_pool_settings("postgres://u@h/db").unwrap(),
            settings("postgres://u@h/db", DEFAULT_POOL_SIZE, 10_000)
        );
        assert_eq!(
            split_pool_settings("postgres://u@h/db?pool_size=3").unwrap(),
            settings("postgres://u@h/db", 3, 10_000)
        );
        assert_eq!(
            split_pool_settings(
                "postgresql://u@h/db?sslmode=disable&max_connections=20&acquire_timeout_ms=5&application_name=s"
            )
            .unwrap(),
            settings(
                "postgresql://u@h/db?sslmode=disable&application_name=s",
                20,
                5
            )
        );
        for bad in [
            "pool_size=0",
            "pool_size=x",
            "pool_size=1001",
            "pool_size=",
            "acquire_timeout_ms=0",
            "acquire_timeout_ms=-1",
        ] {
            assert!(
                matches!(
                    split_pool_settings(&format!("postgres://h/db?{bad}")),
                    Err(MetaError::Config(_))
                ),
                "{bad:?}"
            );
        }
    }

    #[tokio::test]
    async fn an_unreachable_server_is_unavailable_and_a_bad_url_is_config() {
        // Port 1 on loopback: nothing listens, the connection is refused at once.
        let err = PostgresMeta::open(
            "postgres://postgres@127.0.0.1:1/postgres?pool_size=1&acquire_timeout_ms=300",
        )
        .await
        .unwrap_err();
        assert!(err.is_retryable(), "{err:?}");
        let err = PostgresMeta::open("postgres://h:notaport/db")
            .await
            .unwrap_err();
        assert!(matches!(err, MetaError::Config(_)), "{err:?}");
    }
}

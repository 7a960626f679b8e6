//! The embedded backend: SQLite in the data dir, through sqlx.
//!
//! Durability: the database runs in WAL mode with `synchronous=FULL`, so a committed
//! transaction (a segment commit, which acknowledged sends depend on) survives kill -9 and
//! power loss.
//!
//! Connections: one writer connection (SQLite allows one writer at a time; serialising in the
//! pool avoids `SQLITE_BUSY` upgrades) and a few read-only connections, which WAL lets run
//! beside the writer. Every write transaction starts with `BEGIN IMMEDIATE`, so another
//! process opening the same file waits on the busy timeout instead of failing mid-way.
//! The in-memory database (tests) is one connection that serves both roles, kept open for the
//! store's lifetime: an in-memory SQLite database lives exactly as long as its connection.
//!
//! Schema: `meta/migrations/sqlite/NNN_*.sql`, applied in order at open by sqlx's
//! [`Migrator`] from strings compiled into the binary. Queries use `$N` placeholders and the
//! SQL subset SQLite and PostgreSQL share (upsert, `RETURNING`, `UPDATE … FROM (VALUES …)`).

pub(crate) mod catalog;
pub(crate) mod convert;
pub(crate) mod half;
pub(crate) mod leases;
mod nodes;
pub(crate) mod retention;
pub(crate) mod segments;
#[cfg(test)]
mod tests;

use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::time::Duration;

use async_trait::async_trait;
use sqlx::SqlSafeStr;
use sqlx::migrate::{Migration, MigrationType, Migrator};
use sqlx::sqlite::{
    SqliteConnectOptions, SqliteJournalMode, SqlitePool, SqlitePoolOptions, SqliteSynchronous,
};
use stratus_compat::types::{CommitLogOffset, ConsumerGroup, QueueOffset, Topic};

use crate::MetaStore;
use crate::error::{MetaError, Result};
use crate::model::*;

use convert::migrate_err;

/// How long a statement waits for another connection's lock before failing as unavailable.
const BUSY_TIMEOUT: Duration = Duration::from_secs(5);
/// How long a caller waits for a pooled connection before failing as unavailable.
const ACQUIRE_TIMEOUT: Duration = Duration::from_secs(10);
/// Read-only connections beside the writer (file databases only).
const READERS: u32 = 2;
/// File name used when the configured path is an existing directory.
const DIR_FILE_NAME: &str = "stratus-meta.sqlite";

/// The schema migrations, in order. Append only: an applied migration must never change
/// (sqlx checks its checksum at every open).
const MIGRATIONS: &[(i64, &str, &str)] = &[
    (
        1,
        "initial",
        include_str!("../../migrations/sqlite/001_initial.sql"),
    ),
    (
        2,
        "half_messages",
        include_str!("../../migrations/sqlite/002_half_messages.sql"),
    ),
    (
        3,
        "schedule_progress",
        include_str!("../../migrations/sqlite/003_schedule_progress.sql"),
    ),
    (
        4,
        "timers",
        include_str!("../../migrations/sqlite/004_timers.sql"),
    ),
    (
        5,
        "nodes",
        include_str!("../../migrations/sqlite/005_nodes.sql"),
    ),
];

/// SQLite-backed [`MetaStore`].
#[derive(Debug)]
pub struct EmbeddedMeta {
    /// The single write connection; every write goes through it.
    writer: SqlitePool,
    /// Read-only connections (the writer pool itself for an in-memory database).
    reader: SqlitePool,
}

impl EmbeddedMeta {
    /// Opens (creating) the database file at `path` and runs migrations. Parent directories
    /// are created. If `path` is an existing directory, the file is `stratus-meta.sqlite`
    /// inside it.
    ///
    /// # Errors
    /// [`MetaError::Unavailable`] if the file cannot be created or opened,
    /// [`MetaError::Corrupt`] if it is not a Stratus meta database this binary can migrate.
    pub async fn open(path: impl AsRef<Path>) -> Result<Self> {
        let file = resolve_file(path.as_ref()).await?;
        let base = SqliteConnectOptions::new()
            .filename(&file)
            .busy_timeout(BUSY_TIMEOUT)
            .foreign_keys(true)
            .synchronous(SqliteSynchronous::Full);
        // The writer sets WAL (a property of the file) before any reader connects.
        let writer = SqlitePoolOptions::new()
            .max_connections(1)
            .min_connections(1)
            .acquire_timeout(ACQUIRE_TIMEOUT)
            .connect_with(
                base.clone()
                    .create_if_missing(true)
                    .journal_mode(SqliteJournalMode::Wal),
            )
            .await
            .map_err(|e| convert::map_sqlx(&format!("open {}", file.display()), e))?;
        migrator().run(&writer).await.map_err(migrate_err)?;
        let reader = SqlitePoolOptions::new()
            .max_connections(READERS)
            .acquire_timeout(ACQUIRE_TIMEOUT)
            .connect_with(base.pragma("query_only", "ON"))
            .await
            .map_err(|e| convert::map_sqlx(&format!("open {}", file.display()), e))?;
        Ok(Self { writer, reader })
    }

    /// An in-memory database (tests): one connection, empty at start, gone at drop.
    ///
    /// # Errors
    /// [`MetaError::Unavailable`] if SQLite cannot start.
    pub async fn in_memory() -> Result<Self> {
        let options = SqliteConnectOptions::from_str("sqlite::memory:")
            .map_err(|e| convert::map_sqlx("configure in-memory database", e))?
            .foreign_keys(true);
        let pool = SqlitePoolOptions::new()
            .max_connections(1)
            .min_connections(1)
            // The database dies with its connection: never let the pool recycle it.
            .idle_timeout(None)
            .max_lifetime(None)
            .acquire_timeout(ACQUIRE_TIMEOUT)
            .connect_with(options)
            .await
            .map_err(|e| convert::map_sqlx("open in-memory database", e))?;
        migrator().run(&pool).await.map_err(migrate_err)?;
        Ok(Self {
            writer: pool.clone(),
            reader: pool,
        })
    }
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

/// The database file for `path`, with its parent directories created.
async fn resolve_file(path: &Path) -> Result<PathBuf> {
    if path.as_os_str().is_empty() {
        return Err(MetaError::Config("empty embedded metadata path".into()));
    }
    let io = |what: &Path, e: std::io::Error| {
        MetaError::Unavailable(format!("create {}: {e}", what.display()))
    };
    if tokio::fs::metadata(path).await.is_ok_and(|m| m.is_dir()) {
        return Ok(path.join(DIR_FILE_NAME));
    }
    if let Some(parent) = path.parent().filter(|p| !p.as_os_str().is_empty()) {
        tokio::fs::create_dir_all(parent)
            .await
            .map_err(|e| io(parent, e))?;
    }
    Ok(path.to_path_buf())
}

#[async_trait]
impl MetaStore for EmbeddedMeta {
    async fn get_topic(&self, topic: &Topic) -> Result<Option<TopicConfig>> {
        catalog::get_topic(&self.reader, topic).await
    }

    async fn list_topics(&self) -> Result<Vec<TopicConfig>> {
        catalog::list_topics(&self.reader).await
    }

    async fn put_topic(&self, config: &TopicConfig) -> Result<()> {
        catalog::put_topic(&self.writer, config).await
    }

    async fn create_topic_if_absent(&self, config: &TopicConfig) -> Result<TopicConfig> {
        catalog::create_topic_if_absent(&self.writer, config).await
    }

    async fn delete_topic(&self, topic: &Topic) -> Result<()> {
        catalog::delete_topic(&self.writer, topic).await
    }

    async fn ensure_shards(&self, count: u32) -> Result<Vec<ShardLease>> {
        leases::ensure_shards(&self.writer, count).await
    }

    async fn list_shards(&self) -> Result<Vec<ShardLease>> {
        leases::list_shards(&self.reader).await
    }

    async fn acquire_shard(
        &self,
        shard: ShardId,
        node: &NodeId,
        now_ms: i64,
        ttl_ms: i64,
    ) -> Result<Option<ShardLease>> {
        leases::acquire_shard(&self.writer, shard, node, now_ms, ttl_ms).await
    }

    async fn renew_shard(
        &self,
        shard: ShardId,
        node: &NodeId,
        epoch: Epoch,
        now_ms: i64,
        ttl_ms: i64,
    ) -> Result<ShardLease> {
        leases::renew_shard(&self.writer, shard, node, epoch, now_ms, ttl_ms).await
    }

    async fn release_shard(&self, shard: ShardId, node: &NodeId, epoch: Epoch) -> Result<()> {
        leases::release_shard(&self.writer, shard, node, epoch).await
    }

    async fn shard_state(&self, shard: ShardId) -> Result<ShardState> {
        leases::shard_state(&self.reader, shard).await
    }

    /// Round trips (statements sent to the SQLite worker), for `s` sections touching `q`
    /// queues each, `q` ≤ 500:
    /// `BEGIN IMMEDIATE` + per section (fence-and-advance `UPDATE shards`, `INSERT segments`,
    /// one `UPDATE queues … FROM (VALUES …)` for all its queues, one `INSERT queue_segments`
    /// for all its queues, plus one `INSERT queues` when the section starts new queues) +
    /// `COMMIT`: **2 + 4·s** in the steady state (6 for the usual single-shard node), never
    /// one per queue. Above 500 queues in a section the two queue statements repeat per
    /// 500-queue chunk; each [`SegmentCommit::effects`] entry adds one statement (effects are
    /// rare: one per transactional prepare or commit). The failure path adds a few
    /// diagnostic reads before rolling back.
    async fn commit_segment(&self, sections: &[SegmentCommit]) -> Result<()> {
        segments::commit_segment(&self.writer, sections).await
    }

    async fn queue_segments(
        &self,
        queue: &QueueKey,
        from: QueueOffset,
        limit: u32,
    ) -> Result<Vec<QueueSegment>> {
        segments::queue_segments(&self.reader, queue, from, limit).await
    }

    async fn queue_segment_by_time(
        &self,
        queue: &QueueKey,
        ts_ms: i64,
    ) -> Result<Option<QueueSegment>> {
        segments::queue_segment_by_time(&self.reader, queue, ts_ms).await
    }

    async fn segment_by_commit_log_offset(
        &self,
        shard: ShardId,
        offset: CommitLogOffset,
    ) -> Result<Option<SegmentRef>> {
        segments::segment_by_commit_log_offset(&self.reader, shard, offset).await
    }

    async fn queue_range(&self, queue: &QueueKey) -> Result<QueueRange> {
        segments::queue_range(&self.reader, queue).await
    }

    async fn half_message(
        &self,
        shard: ShardId,
        handle: CommitLogOffset,
    ) -> Result<Option<HalfMessage>> {
        half::half_message(&self.reader, shard, handle).await
    }

    async fn due_half_messages(
        &self,
        shard: ShardId,
        now_ms: i64,
        limit: u32,
    ) -> Result<Vec<HalfMessage>> {
        half::due_half_messages(&self.reader, shard, now_ms, limit).await
    }

    async fn record_half_check(
        &self,
        shard: ShardId,
        handle: CommitLogOffset,
        check_times: i32,
        next_check_ms: i64,
    ) -> Result<bool> {
        half::record_half_check(&self.writer, shard, handle, check_times, next_check_ms).await
    }

    async fn resolve_half_message(&self, shard: ShardId, handle: CommitLogOffset) -> Result<bool> {
        half::resolve_half_message(&self.writer, shard, handle).await
    }

    async fn half_messages(&self, shard: ShardId) -> Result<Vec<HalfMessage>> {
        half::half_messages(&self.reader, shard).await
    }

    async fn schedule_progress(&self, shard: ShardId) -> Result<Vec<(i32, QueueOffset)>> {
        half::schedule_progress(&self.reader, shard).await
    }

    async fn due_timers(
        &self,
        shard: ShardId,
        now_ms: i64,
        limit: u32,
    ) -> Result<Vec<(CommitLogOffset, i64)>> {
        half::due_timers(&self.reader, shard, now_ms, limit).await
    }

    /// Round trips: **1** (a single multi-row upsert, its own transaction) for up to 500
    /// distinct offsets; above that `BEGIN` + one upsert per 500 + `COMMIT`. Duplicate keys
    /// in one call are collapsed first (the last one wins).
    async fn commit_consumer_offsets(&self, offsets: &[ConsumerOffset]) -> Result<()> {
        catalog::commit_consumer_offsets(&self.writer, offsets).await
    }

    async fn consumer_offset(
        &self,
        group: &ConsumerGroup,
        queue: &QueueKey,
    ) -> Result<Option<QueueOffset>> {
        catalog::consumer_offset(&self.reader, group, queue).await
    }

    async fn group_offsets(&self, group: &ConsumerGroup) -> Result<Vec<ConsumerOffset>> {
        catalog::group_offsets(&self.reader, group).await
    }

    async fn get_group(&self, group: &ConsumerGroup) -> Result<Option<SubscriptionGroupConfig>> {
        catalog::get_group(&self.reader, group).await
    }

    async fn put_group(&self, config: &SubscriptionGroupConfig) -> Result<()> {
        catalog::put_group(&self.writer, config).await
    }

    async fn list_groups(&self) -> Result<Vec<SubscriptionGroupConfig>> {
        catalog::list_groups(&self.reader).await
    }

    async fn heartbeat_node(&self, node: &NodeInfo) -> Result<()> {
        nodes::heartbeat_node(&self.writer, node).await
    }

    async fn list_nodes(&self) -> Result<Vec<NodeInfo>> {
        nodes::list_nodes(&self.reader).await
    }

    async fn remove_node(&self, node: &NodeId) -> Result<()> {
        nodes::remove_node(&self.writer, node).await
    }

    /// Round trips: `BEGIN IMMEDIATE`, the fence read, one `DELETE` by age, one `DELETE` by
    /// size (only with a size limit), one `DELETE` of emptied sections, one `UPDATE` of min
    /// offsets, one read of still-referenced keys per 500 deleted object keys (none when
    /// nothing was deleted), `COMMIT`: 6 to 8 for up to 500 deleted objects.
    async fn apply_retention(
        &self,
        shard: ShardId,
        node: &NodeId,
        epoch: Epoch,
        now_ms: i64,
        policy: &RetentionPolicy,
    ) -> Result<RetentionOutcome> {
        retention::apply_retention(&self.writer, shard, node, epoch, now_ms, policy).await
    }

    async fn unreferenced_objects(&self, keys: &[String]) -> Result<Vec<String>> {
        retention::unreferenced_objects(&self.reader, keys).await
    }

    async fn put_kv(&self, namespace: &str, key: &str, value: &str) -> Result<()> {
        catalog::put_kv(&self.writer, namespace, key, value).await
    }

    async fn get_kv(&self, namespace: &str, key: &str) -> Result<Option<String>> {
        catalog::get_kv(&self.reader, namespace, key).await
    }

    async fn delete_kv(&self, namespace: &str, key: &str) -> Result<()> {
        catalog::delete_kv(&self.writer, namespace, key).await
    }

    async fn close(&self) {
        self.reader.close().await;
        self.writer.close().await;
    }
}

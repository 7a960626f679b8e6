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
//! [`Migrator`](sqlx::migrate::Migrator) from strings compiled into the binary.
//!
//! Statements: the shared ones of `crate::sql` (`$N` placeholders, the SQL subset SQLite and
//! PostgreSQL share), with this backend's dialect (`dialect.rs`) where SQLite differs: `BEGIN
//! IMMEDIATE`, a recursive CTE to create shards, and bulk writes as multi-row statements of at
//! most 500 rows.
//!
//! Round trips (statements sent to the SQLite worker) of the hot paths:
//! - a segment commit of `s` sections touching `q` queues each, `q` ≤ 500: `BEGIN IMMEDIATE`,
//!   then per section the fence-and-advance `UPDATE shards`, `INSERT segments`, one `UPDATE
//!   queues … FROM (VALUES …)` for all its queues and one `INSERT queue_segments` for all its
//!   queues (plus one `INSERT queues` when the section starts new queues), then `COMMIT`:
//!   **2 + 4·s** in the steady state (6 for the usual single-shard node), never one per queue.
//!   Above 500 queues in a section the two queue statements repeat per 500-queue chunk; each
//!   [`crate::SegmentCommit::effects`] entry adds one statement (effects are rare: one per
//!   transactional prepare or commit). The failure path adds a few diagnostic reads before
//!   rolling back;
//! - a consumer-offset commit: **1** (a single multi-row upsert, its own transaction) for up
//!   to 500 distinct offsets; above that `BEGIN IMMEDIATE` + one upsert per 500 + `COMMIT`;
//! - a retention pass: `BEGIN IMMEDIATE`, the fence read, one `DELETE` by age, one `DELETE` by
//!   size (only with a size limit), one `DELETE` of emptied sections, one `UPDATE` of min
//!   offsets, one read of still-referenced keys per 500 deleted object keys (none when
//!   nothing was deleted), `COMMIT`: 6 to 8 for up to 500 deleted objects.

mod dialect;
#[cfg(test)]
mod tests;

use std::path::{Path, PathBuf};
use std::str::FromStr;
use std::time::Duration;

use sqlx::Sqlite;
use sqlx::sqlite::{SqliteConnectOptions, SqliteJournalMode, SqlitePoolOptions, SqliteSynchronous};

use crate::error::{MetaError, Result};
use crate::sql::migrations::{self, MigrationList};
use crate::sql::{Dialect, SqlMeta};
// Names the tests reach through `use super::*`.
#[cfg(test)]
use {
    crate::model::*,
    crate::{MetaStore, SegmentCatalog},
    sqlx::SqlSafeStr,
    sqlx::migrate::{Migration, MigrationType, Migrator},
};

/// How long a statement waits for another connection's lock before failing as unavailable.
const BUSY_TIMEOUT: Duration = Duration::from_secs(5);
/// How long a caller waits for a pooled connection before failing as unavailable.
const ACQUIRE_TIMEOUT: Duration = Duration::from_secs(10);
/// Read-only connections beside the writer (file databases only).
const READERS: u32 = 2;
/// File name used when the configured path is an existing directory.
const DIR_FILE_NAME: &str = "stratus-meta.sqlite";

/// The schema migrations, in order (see [`MigrationList`]).
const MIGRATIONS: &MigrationList = &[
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
    (
        6,
        "group_details",
        include_str!("../../migrations/sqlite/006_group_details.sql"),
    ),
    (
        7,
        "message_keys",
        include_str!("../../migrations/sqlite/007_message_keys.sql"),
    ),
    (
        8,
        "producer_batches",
        include_str!("../../migrations/sqlite/008_producer_batches.sql"),
    ),
];

/// SQLite-backed [`crate::MetaStore`]: the shared SQL store on SQLite, with one writer
/// connection and read-only connections beside it (see the module doc).
pub type EmbeddedMeta = SqlMeta<Sqlite>;

impl SqlMeta<Sqlite> {
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
            .map_err(|e| Sqlite::map_sqlx(&format!("open {}", file.display()), e))?;
        migrations::run(&writer, MIGRATIONS).await?;
        let reader = SqlitePoolOptions::new()
            .max_connections(READERS)
            .acquire_timeout(ACQUIRE_TIMEOUT)
            .connect_with(base.pragma("query_only", "ON"))
            .await
            .map_err(|e| Sqlite::map_sqlx(&format!("open {}", file.display()), e))?;
        Ok(Self { writer, reader })
    }

    /// An in-memory database (tests): one connection, empty at start, gone at drop.
    ///
    /// # Errors
    /// [`MetaError::Unavailable`] if SQLite cannot start.
    pub async fn in_memory() -> Result<Self> {
        let options = SqliteConnectOptions::from_str("sqlite::memory:")
            .map_err(|e| Sqlite::map_sqlx("configure in-memory database", e))?
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
            .map_err(|e| Sqlite::map_sqlx("open in-memory database", e))?;
        migrations::run(&pool, MIGRATIONS).await?;
        Ok(Self::one_pool(pool))
    }
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

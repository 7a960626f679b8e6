//! The PostgreSQL backend: many gateway nodes share one database, through sqlx.
//!
//! URL: `postgres://user[:password]@host[:port]/database[?options]` (or `postgresql://`),
//! with sqlx's connect options (`sslmode`, `application_name`, …) plus `pool_size=N`
//! (alias `max_connections`): connections per store, default [`DEFAULT_POOL_SIZE`]; and
//! `acquire_timeout_ms=N`: how long a call waits for a connection (also while the server is
//! unreachable) before failing as unavailable, default 10 000.
//!
//! Schema: `meta/migrations/postgres/NNN_*.sql`, the same versions and names as the SQLite
//! ones in PostgreSQL types, applied in order at open by sqlx's
//! [`Migrator`](sqlx::migrate::Migrator) (which holds an advisory lock, so nodes starting
//! together migrate once).
//!
//! Statements: the shared ones of `crate::sql`, with this backend's dialect (`dialect.rs`)
//! where PostgreSQL differs: `generate_series` to create shards, a row lock on the shard for
//! retention, and bulk writes as arrays bound to one statement (`UNNEST`, `= ANY`).
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
//!   [`crate::SegmentCommit::effects`] entry (transactional prepare/commit, timers, delays);
//! - a consumer-offset commit, any number of offsets: **1** — one
//!   `INSERT … SELECT FROM UNNEST(…) ON CONFLICT DO UPDATE` in its own implicit transaction;
//! - a retention pass: `BEGIN`, the shard lock (`SELECT … FOR UPDATE`), one `DELETE` by age,
//!   one by size (only with a size limit), one `DELETE` of emptied sections, one `UPDATE` of
//!   min offsets, one read of still-referenced keys (only when sections were deleted),
//!   `COMMIT`: 6 to 8.
//!
//! Counts are for statements already prepared on the connection (sqlx caches them per
//! connection; a statement's first use on a connection adds one prepare round trip).
//! Refused commits add a few diagnostic reads before rolling back.

mod dialect;

use std::str::FromStr;
use std::time::Duration;

use sqlx::Postgres;
use sqlx::postgres::{PgConnectOptions, PgPoolOptions};

use crate::error::{MetaError, Result};
use crate::sql::migrations::{self, MigrationList};
use crate::sql::{Dialect, SqlMeta};

/// Connections per store unless the URL says `pool_size=N`.
pub const DEFAULT_POOL_SIZE: u32 = 8;
/// Largest accepted `pool_size`.
const MAX_POOL_SIZE: u32 = 1_000;
/// How long a caller waits for a pooled connection before failing as unavailable.
const ACQUIRE_TIMEOUT: Duration = Duration::from_secs(10);

/// The schema migrations, in order (see [`MigrationList`]).
const MIGRATIONS: &MigrationList = &[
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
    (
        6,
        "group_details",
        include_str!("../../migrations/postgres/006_group_details.sql"),
    ),
    (
        7,
        "message_keys",
        include_str!("../../migrations/postgres/007_message_keys.sql"),
    ),
    (
        8,
        "producer_batches",
        include_str!("../../migrations/postgres/008_producer_batches.sql"),
    ),
];

/// PostgreSQL-backed [`crate::MetaStore`]: the shared SQL store on one connection pool (see the
/// module doc).
pub type PostgresMeta = SqlMeta<Postgres>;

impl SqlMeta<Postgres> {
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
            .map_err(|e| Postgres::map_sqlx("connect to postgres", e))?;
        migrations::run(&pool, MIGRATIONS).await?;
        Ok(Self::one_pool(pool))
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

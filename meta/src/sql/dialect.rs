//! The seam between the shared statements and each database: what SQLite and PostgreSQL do
//! differently. That is how they report errors, how a write transaction starts, three
//! statements, and the bulk writes PostgreSQL sends as arrays in one statement where SQLite
//! sends multi-row chunks.

use std::collections::HashSet;
use std::future::Future;
use std::ops::Range;

use sqlx::Pool;
use sqlx::error::DatabaseError;

use super::convert;
use super::driver::Driver;
use super::section::Section;
use crate::error::{MetaError, Result};
use crate::model::{ConsumerOffset, KeyIndexEntry, ShardId};

/// What a database error means, when it is neither a unique nor a foreign-key violation
/// (those are always [`MetaError::Conflict`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum ErrorClass {
    /// The database cannot serve this right now: [`MetaError::Unavailable`].
    Unavailable,
    /// The URL or credentials are wrong: [`MetaError::Config`].
    Config,
    /// The database is damaged or not in the shape this binary expects:
    /// [`MetaError::Corrupt`].
    Corrupt,
}

/// What writing one section's rows did.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Applied {
    /// Every row is written; the section's effects come next.
    Done,
    /// The shard row did not match the section (epoch, owner or commit-log end): nothing was
    /// written.
    ShardRefused,
    /// Some queue among `queues[range]` of the section was not at its append's first offset.
    QueuesRefused(Range<usize>),
}

/// One database's side of the shared statements.
pub(crate) trait Dialect: Driver {
    /// The statement that opens a write transaction.
    const BEGIN_WRITE: &'static str;
    /// Inserts the missing shards `0..$1` (free, epoch 0) in one statement.
    const ENSURE_SHARDS: &'static str;
    /// Reads `epoch, owner` of shard `$1` for a retention pass, so that no commit or takeover
    /// of the shard interleaves with the rest of the pass's transaction.
    const LOCK_SHARD: &'static str;

    /// Classifies a database error by its code.
    fn classify(db: &dyn DatabaseError) -> ErrorClass;

    /// Writes a prepared section's rows inside the commit transaction: fences and advances
    /// the shard's commit log, inserts the section row, creates and advances its queues and
    /// inserts their ranges. Effects are the caller's.
    fn apply_section(
        conn: &mut Self::Connection,
        section: &Section<'_>,
    ) -> impl Future<Output = Result<Applied>> + Send;

    /// Upserts consumer offsets with distinct keys (at least one).
    fn upsert_offsets(
        pool: &Pool<Self>,
        offsets: &[&ConsumerOffset],
    ) -> impl Future<Output = Result<()>> + Send;

    /// Inserts key-index rows of `shard` (at least one) inside the commit transaction; a
    /// (log offset, hash) pair already present is skipped.
    fn insert_keys(
        conn: &mut Self::Connection,
        shard: ShardId,
        keys: &[KeyIndexEntry],
    ) -> impl Future<Output = Result<()>> + Send;

    /// Which of `keys` (distinct, at least one) some segments row references.
    fn referenced_keys(
        conn: &mut Self::Connection,
        keys: &[String],
    ) -> impl Future<Output = Result<HashSet<String>>> + Send;

    /// Maps a sqlx error raised while doing `op` (a present-tense phrase, e.g. "commit
    /// segment").
    fn map_sqlx(op: &str, e: sqlx::Error) -> MetaError {
        convert::map_sqlx(op, e, Self::classify)
    }

    /// `map_err` adapter: `.map_err(D::db_err("get topic"))`.
    fn db_err(op: &'static str) -> impl FnOnce(sqlx::Error) -> MetaError {
        move |e| Self::map_sqlx(op, e)
    }
}

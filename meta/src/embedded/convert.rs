//! Conversions at the database boundary: sqlx errors to [`MetaError`], and the checked
//! integer conversions between Stratus's unsigned values and the BIGINT columns.
//!
//! Nothing here panics: a value that does not fit becomes [`MetaError::Corrupt`].

use sqlx::error::ErrorKind;

use crate::error::MetaError;
use crate::model::ShardId;

/// SQLite primary result codes (the low byte of an extended code) that mean "the database
/// cannot serve this right now": BUSY, LOCKED, NOMEM, READONLY, INTERRUPT, IOERR, FULL,
/// CANTOPEN, PROTOCOL.
const TRANSIENT_CODES: [i64; 9] = [5, 6, 7, 8, 9, 10, 13, 14, 15];

/// Maps a sqlx error raised while doing `op` (a present-tense phrase, e.g. "commit segment").
pub(super) fn map_sqlx(op: &str, e: sqlx::Error) -> MetaError {
    use sqlx::Error as E;
    match &e {
        E::PoolTimedOut | E::PoolClosed | E::Io(_) | E::Tls(_) | E::WorkerCrashed => {
            MetaError::Unavailable(format!("{op}: {e}"))
        }
        E::Configuration(_) => MetaError::Config(format!("{op}: {e}")),
        E::Database(db) => {
            if matches!(
                db.kind(),
                ErrorKind::UniqueViolation | ErrorKind::ForeignKeyViolation
            ) {
                return MetaError::Conflict(format!("{op}: {e}"));
            }
            let primary = db
                .code()
                .and_then(|c| c.parse::<i64>().ok())
                .map(|c| c & 0xff);
            match primary {
                Some(c) if TRANSIENT_CODES.contains(&c) => {
                    MetaError::Unavailable(format!("{op}: {e}"))
                }
                // CORRUPT, NOTADB, and SQL errors (no such table, other constraint failures):
                // the database is damaged or not in the shape this binary expects.
                _ => MetaError::Corrupt(format!("{op}: {e}")),
            }
        }
        E::RowNotFound
        | E::TypeNotFound { .. }
        | E::ColumnIndexOutOfBounds { .. }
        | E::ColumnNotFound(_)
        | E::ColumnDecode { .. }
        | E::Decode(_)
        | E::Protocol(_) => MetaError::Corrupt(format!("{op}: {e}")),
        _ => MetaError::Unavailable(format!("{op}: {e}")),
    }
}

/// `map_err` adapter: `.map_err(db_err("get topic"))`.
pub(super) fn db_err(op: &'static str) -> impl FnOnce(sqlx::Error) -> MetaError {
    move |e| map_sqlx(op, e)
}

/// Maps a migration failure.
pub(super) fn migrate_err(e: sqlx::migrate::MigrateError) -> MetaError {
    use sqlx::migrate::MigrateError as M;
    match e {
        M::Execute(e) => map_sqlx("migrate schema", e),
        M::ExecuteMigration(e, version) => map_sqlx(&format!("apply migration {version}"), e),
        other => MetaError::Corrupt(format!("migrate schema: {other}")),
    }
}

/// A u64 (byte position, length) as a BIGINT.
pub(crate) fn u64_to_db(what: &str, v: u64) -> Result<i64, MetaError> {
    i64::try_from(v).map_err(|_| MetaError::Corrupt(format!("{what} {v} exceeds i64")))
}

/// A BIGINT read back as a u64.
pub(crate) fn u64_from_db(what: &str, v: i64) -> Result<u64, MetaError> {
    u64::try_from(v).map_err(|_| MetaError::Corrupt(format!("{what} {v} is negative")))
}

/// A BIGINT read back as a u32 (entry counts).
pub(crate) fn u32_from_db(what: &str, v: i64) -> Result<u32, MetaError> {
    u32::try_from(v).map_err(|_| MetaError::Corrupt(format!("{what} {v} out of u32 range")))
}

/// A shard id as stored.
pub(crate) fn shard_to_db(shard: ShardId) -> i64 {
    i64::from(shard.0)
}

/// A stored shard id.
pub(crate) fn shard_from_db(v: i64) -> Result<ShardId, MetaError> {
    u32::try_from(v)
        .map(ShardId)
        .map_err(|_| MetaError::Corrupt(format!("shard id {v} out of u32 range")))
}

/// A `u32` limit as a SQL `LIMIT`.
pub(crate) fn limit_to_db(limit: u32) -> i64 {
    i64::from(limit)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn out_of_range_values_become_corrupt_not_panics() {
        assert!(matches!(
            u64_to_db("pos", u64::MAX),
            Err(MetaError::Corrupt(_))
        ));
        assert_eq!(u64_to_db("pos", 7).unwrap(), 7);
        assert!(matches!(u64_from_db("pos", -1), Err(MetaError::Corrupt(_))));
        assert!(matches!(
            u32_from_db("count", 1 << 33),
            Err(MetaError::Corrupt(_))
        ));
        assert!(matches!(shard_from_db(-3), Err(MetaError::Corrupt(_))));
        assert_eq!(shard_from_db(3).unwrap(), ShardId(3));
    }

    #[test]
    fn pool_timeouts_are_retryable_and_decode_errors_are_corrupt() {
        assert!(map_sqlx("op", sqlx::Error::PoolTimedOut).is_retryable());
        assert!(matches!(
            map_sqlx("op", sqlx::Error::ColumnNotFound("x".into())),
            MetaError::Corrupt(_)
        ));
    }
}

//! Conversions at the database boundary: sqlx errors to [`MetaError`], and the checked
//! integer conversions between Stratus's unsigned values and the BIGINT columns.
//!
//! Nothing here panics: a value that does not fit becomes [`MetaError::Corrupt`].

use sqlx::error::{DatabaseError, ErrorKind};

use super::dialect::ErrorClass;
use crate::error::MetaError;
use crate::model::ShardId;

/// Maps a sqlx error raised while doing `op`; `classify` names what a database error code
/// means (see [`super::Dialect::classify`]).
pub(crate) fn map_sqlx(
    op: &str,
    e: sqlx::Error,
    classify: impl FnOnce(&dyn DatabaseError) -> ErrorClass,
) -> MetaError {
    use sqlx::Error as E;
    let class = match &e {
        E::PoolTimedOut | E::PoolClosed | E::Io(_) | E::Tls(_) | E::WorkerCrashed => {
            ErrorClass::Unavailable
        }
        E::Configuration(_) => ErrorClass::Config,
        E::Database(db)
            if matches!(
                db.kind(),
                ErrorKind::UniqueViolation | ErrorKind::ForeignKeyViolation
            ) =>
        {
            return MetaError::Conflict(format!("{op}: {e}"));
        }
        E::Database(db) => classify(db.as_ref()),
        E::RowNotFound
        | E::TypeNotFound { .. }
        | E::ColumnIndexOutOfBounds { .. }
        | E::ColumnNotFound(_)
        | E::ColumnDecode { .. }
        | E::Decode(_)
        | E::Protocol(_) => ErrorClass::Corrupt,
        _ => ErrorClass::Unavailable,
    };
    let message = format!("{op}: {e}");
    match class {
        ErrorClass::Unavailable => MetaError::Unavailable(message),
        ErrorClass::Config => MetaError::Config(message),
        ErrorClass::Corrupt => MetaError::Corrupt(message),
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
}

//! sqlx errors of the PostgreSQL backend to [`MetaError`], by SQLSTATE class.
//!
//! The integer conversions at the database boundary are the embedded backend's
//! (`crate::embedded::convert`): both store unsigned values as BIGINT.

use sqlx::error::ErrorKind;

use crate::error::MetaError;

/// SQLSTATEs (or their two-character classes) that mean "retry later": connection
/// exceptions (08), serialization failure and deadlock (40), insufficient resources (53),
/// operator intervention such as shutdown or cancel (57), lock not available (55P03).
fn transient(code: &str) -> bool {
    matches!(code.get(..2), Some("08" | "40" | "53" | "57")) || code == "55P03"
}

/// SQLSTATEs that mean the URL or credentials are wrong: invalid authorization (28) and an
/// unknown database (3D000).
fn configuration(code: &str) -> bool {
    code.starts_with("28") || code == "3D000"
}

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
            match db.code() {
                Some(c) if transient(&c) => MetaError::Unavailable(format!("{op}: {e}")),
                Some(c) if configuration(&c) => MetaError::Config(format!("{op}: {e}")),
                // Undefined tables or columns, data exceptions, other constraint failures:
                // the database is not in the shape this binary expects.
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sqlstates_are_classified() {
        assert!(transient("40001"));
        assert!(transient("40P01"));
        assert!(transient("08006"));
        assert!(transient("57P01"));
        assert!(transient("55P03"));
        assert!(!transient("42P01"));
        assert!(!transient("2"));
        assert!(configuration("28P01"));
        assert!(configuration("3D000"));
        assert!(!configuration("23505"));
        assert!(map_sqlx("op", sqlx::Error::PoolTimedOut).is_retryable());
    }
}

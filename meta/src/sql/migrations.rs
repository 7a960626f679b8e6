//! Schema migrations: each backend lists its own SQL files (`meta/migrations/<backend>/`);
//! [`run`] applies such a list with sqlx's [`Migrator`], its failures as [`MetaError`]s.

use sqlx::migrate::{Migrate, MigrateError, Migration, MigrationType, Migrator};
use sqlx::{Pool, SqlSafeStr};

use super::dialect::Dialect;
use crate::error::{MetaError, Result};

/// The migrations of one backend, in order: (version, name, SQL). Append only: an applied
/// migration must never change (sqlx checks its checksum at every open).
pub(crate) type MigrationList = [(i64, &'static str, &'static str)];

/// Applies the migrations of `list` that `pool`'s database lacks, in order.
pub(crate) async fn run<D>(pool: &Pool<D>, list: &MigrationList) -> Result<()>
where
    D: Dialect<Connection: Migrate>,
{
    migrator(list).run(pool).await.map_err(migrate_err::<D>)
}

/// The migrator over `list`.
fn migrator(list: &MigrationList) -> Migrator {
    Migrator::with_migrations(
        list.iter()
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

/// Maps a migration failure.
fn migrate_err<D: Dialect>(e: MigrateError) -> MetaError {
    match e {
        MigrateError::Execute(e) => D::map_sqlx("migrate schema", e),
        MigrateError::ExecuteMigration(e, version) => {
            D::map_sqlx(&format!("apply migration {version}"), e)
        }
        other => MetaError::Corrupt(format!("migrate schema: {other}")),
    }
}

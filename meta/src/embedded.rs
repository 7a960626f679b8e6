//! The embedded backend: SQLite in the data dir.

use crate::error::Result;

/// SQLite-backed [`crate::MetaStore`].
#[derive(Debug)]
pub struct EmbeddedMeta {}

impl EmbeddedMeta {
    /// Opens (creating) the database file at `path` and runs migrations.
    pub async fn open(path: &str) -> Result<Self> {
        let _ = path;
        todo!()
    }

    /// An in-memory database (tests).
    pub async fn in_memory() -> Result<Self> {
        todo!()
    }
}

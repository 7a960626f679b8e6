//! The SQL layer both backends share: one store, [`SqlMeta`], generic over the database, with
//! a [`Dialect`] for what SQLite and PostgreSQL do differently.
//!
//! - `driver`: the sqlx plumbing (binding values, executors, reading columns) stated once;
//! - `dialect`: the seam each backend implements (error codes, write transactions, the
//!   statements that differ, bulk writes);
//! - `convert`: sqlx errors to [`crate::MetaError`] and checked integer conversions;
//! - `migrations`: a backend's migration list to sqlx's migrator;
//! - `rows`: result rows and their conversion to model records;
//! - `section`: a segment section checked before its commit transaction;
//! - the statements, by record: `catalog` (topics, groups, consumer offsets, KV), `nodes`,
//!   `leases`, `segments` (commits), `lookups` (the read path), `half` (half messages,
//!   timers, delay progress), `keys` (the key index of QUERY_MESSAGE), `retention`;
//! - `store`: [`SqlMeta`]'s [`crate::MetaStore`] implementation.
//!
//! Statements use `$N` placeholders and the SQL both databases accept (upsert, `RETURNING`,
//! `UPDATE … FROM`, window functions).

mod catalog;
pub(crate) mod convert;
mod dialect;
mod driver;
mod half;
mod keys;
mod leases;
mod lookups;
pub(crate) mod migrations;
mod nodes;
mod producers;
mod retention;
mod rows;
pub(crate) mod section;
mod segments;
mod store;

pub(crate) use dialect::{Applied, Dialect, ErrorClass};
pub(crate) use driver::RowsAffected;
pub(crate) use store::SqlMeta;

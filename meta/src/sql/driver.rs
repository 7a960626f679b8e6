//! The sqlx plumbing the shared statements run on, stated once for every database that has it.
//!
//! sqlx says "this database binds and decodes an `i64`" with bounds on `i64`, and "this
//! connection runs statements" with a bound on `&mut Connection`; neither kind follows a
//! `D: Dialect` bound into generic code. [`Driver`] and [`Columns`] are implemented once, for
//! every database and row type meeting those bounds, and offer them as methods: values are
//! bound with [`Bind::arg`], statements run on [`Driver::on_pool`] or [`Driver::on_conn`], and
//! result columns are read with the [`Columns`] getters. [`RowsAffected`] is the one piece each
//! backend states itself, for its own result type.

use sqlx::query::Query;
use sqlx::{ColumnIndex, Database, Decode, Encode, Executor, IntoArguments, Pool, Row, Type};

/// A value bound to a statement parameter, one case per column type the schema uses.
#[derive(Clone, Copy, Debug)]
pub(crate) enum Param<'a> {
    /// BIGINT.
    Int(i64),
    /// INTEGER.
    Int4(i32),
    /// BOOLEAN.
    Bool(bool),
    /// TEXT.
    Text(&'a str),
    /// A nullable BIGINT.
    OptInt(Option<i64>),
    /// A nullable TEXT.
    OptText(Option<&'a str>),
}

impl From<i64> for Param<'_> {
    fn from(v: i64) -> Self {
        Self::Int(v)
    }
}

impl From<i32> for Param<'_> {
    fn from(v: i32) -> Self {
        Self::Int4(v)
    }
}

impl From<bool> for Param<'_> {
    fn from(v: bool) -> Self {
        Self::Bool(v)
    }
}

impl<'a> From<&'a str> for Param<'a> {
    fn from(v: &'a str) -> Self {
        Self::Text(v)
    }
}

impl<'a> From<Option<&'a str>> for Param<'a> {
    fn from(v: Option<&'a str>) -> Self {
        Self::OptText(v)
    }
}

impl From<Option<i64>> for Param<'_> {
    fn from(v: Option<i64>) -> Self {
        Self::OptInt(v)
    }
}

/// A database the shared statements can run on.
pub(crate) trait Driver:
    Database<Arguments: IntoArguments<Self>, Row: Columns, QueryResult: RowsAffected>
{
    /// `pool` as the executor of one statement.
    fn on_pool(pool: &Pool<Self>) -> impl Executor<'_, Database = Self>;
    /// `conn` (a pooled connection or an open transaction) as the executor of one statement.
    fn on_conn(conn: &mut Self::Connection) -> impl Executor<'_, Database = Self>;
    /// `query` with `value` bound to its next parameter.
    fn bind<'q>(
        query: Query<'q, Self, Self::Arguments>,
        value: Param<'_>,
    ) -> Query<'q, Self, Self::Arguments>;
}

impl<D> Driver for D
where
    D: Database<Arguments: IntoArguments<D>, Row: Columns, QueryResult: RowsAffected>,
    for<'c> &'c mut D::Connection: Executor<'c, Database = D>,
    i64: for<'e> Encode<'e, D> + Type<D>,
    i32: for<'e> Encode<'e, D> + Type<D>,
    bool: for<'e> Encode<'e, D> + Type<D>,
    for<'e> &'e str: Encode<'e, D> + Type<D>,
    Option<i64>: for<'e> Encode<'e, D> + Type<D>,
    for<'e> Option<&'e str>: Encode<'e, D> + Type<D>,
{
    fn on_pool(pool: &Pool<D>) -> impl Executor<'_, Database = D> {
        pool
    }

    fn on_conn(conn: &mut D::Connection) -> impl Executor<'_, Database = D> {
        conn
    }

    fn bind<'q>(query: Query<'q, D, D::Arguments>, value: Param<'_>) -> Query<'q, D, D::Arguments> {
        match value {
            Param::Int(v) => query.bind(v),
            Param::Int4(v) => query.bind(v),
            Param::Bool(v) => query.bind(v),
            Param::Text(v) => query.bind(v),
            Param::OptInt(v) => query.bind(v),
            Param::OptText(v) => query.bind(v),
        }
    }
}

/// `.arg(v)`: binds the next parameter of a shared statement (sqlx's `.bind`, through
/// [`Driver::bind`]).
pub(crate) trait Bind: Sized {
    /// Binds `value` to the next parameter.
    fn arg<'v>(self, value: impl Into<Param<'v>>) -> Self;
}

impl<D: Driver> Bind for Query<'_, D, D::Arguments> {
    fn arg<'v>(self, value: impl Into<Param<'v>>) -> Self {
        D::bind(self, value.into())
    }
}

/// What a statement reports besides rows (each backend implements it for its result type).
pub(crate) trait RowsAffected {
    /// Rows the statement inserted, updated or deleted.
    fn rows_affected(&self) -> u64;
}

/// Typed reads of a result row's columns, by position.
pub(crate) trait Columns: Row {
    /// A BIGINT column.
    fn int(&self, i: usize) -> Result<i64, sqlx::Error>;
    /// An INTEGER column.
    fn int4(&self, i: usize) -> Result<i32, sqlx::Error>;
    /// A BOOLEAN column.
    fn flag(&self, i: usize) -> Result<bool, sqlx::Error>;
    /// A TEXT column.
    fn text(&self, i: usize) -> Result<String, sqlx::Error>;
    /// A nullable BIGINT column.
    fn opt_int(&self, i: usize) -> Result<Option<i64>, sqlx::Error>;
    /// A nullable INTEGER column.
    fn opt_int4(&self, i: usize) -> Result<Option<i32>, sqlx::Error>;
    /// A nullable TEXT column.
    fn opt_text(&self, i: usize) -> Result<Option<String>, sqlx::Error>;
}

impl<R: Row> Columns for R
where
    usize: ColumnIndex<R>,
    i64: for<'r> Decode<'r, R::Database> + Type<R::Database>,
    i32: for<'r> Decode<'r, R::Database> + Type<R::Database>,
    bool: for<'r> Decode<'r, R::Database> + Type<R::Database>,
    String: for<'r> Decode<'r, R::Database> + Type<R::Database>,
{
    fn int(&self, i: usize) -> Result<i64, sqlx::Error> {
        self.try_get(i)
    }

    fn int4(&self, i: usize) -> Result<i32, sqlx::Error> {
        self.try_get(i)
    }

    fn flag(&self, i: usize) -> Result<bool, sqlx::Error> {
        self.try_get(i)
    }

    fn text(&self, i: usize) -> Result<String, sqlx::Error> {
        self.try_get(i)
    }

    fn opt_int(&self, i: usize) -> Result<Option<i64>, sqlx::Error> {
        self.try_get(i)
    }

    fn opt_int4(&self, i: usize) -> Result<Option<i32>, sqlx::Error> {
        self.try_get(i)
    }

    fn opt_text(&self, i: usize) -> Result<Option<String>, sqlx::Error> {
        self.try_get(i)
    }
}

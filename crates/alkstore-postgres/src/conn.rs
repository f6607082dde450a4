//! Where the statements that autocommit calls and transactions share run:
//! the engine's pooled connections (through their prepared-statement
//! cache), the application's own tokio-postgres client or transaction, or
//! (feature `sqlx`) its sqlx connection. One statement text and one
//! decoding of its rows, whichever driver binds and runs it. Also the
//! engine's helpers that run one cached statement on a pooled connection
//! ([`PgEngine::query`] and its kin), which every area's reads use.

use alkstore_core::{Error, Result};
use futures_util::future::{BoxFuture, FutureExt};
use tokio_postgres::types::{FromSql, ToSql};

use crate::{db, PgEngine};

/// A statement parameter every driver can bind: any `tokio_postgres`
/// parameter type that (with the `sqlx` feature) sqlx can encode too.
/// sqlx's `Option<T>` and `Vec<Option<T>>` encode only values that live
/// as long as the query, whatever it is: use owned values inside them
/// (`Option<String>`, not `Option<&str>`).
pub(crate) trait Param: ToSql + Sync {
    /// As a tokio-postgres parameter.
    fn as_tokio(&self) -> &(dyn ToSql + Sync);

    /// Bind it as the next parameter of a sqlx query.
    #[cfg(feature = "sqlx")]
    fn bind_sqlx<'q>(&'q self, q: sqlx_conn::Query<'q>) -> sqlx_conn::Query<'q>;
}

#[cfg(not(feature = "sqlx"))]
impl<T: ToSql + Sync> Param for T {
    fn as_tokio(&self) -> &(dyn ToSql + Sync) {
        self
    }
}

#[cfg(feature = "sqlx")]
impl<T> Param for T
where
    T: ToSql + Sync + for<'q> sqlx::Encode<'q, sqlx::Postgres> + sqlx::Type<sqlx::Postgres>,
{
    fn as_tokio(&self) -> &(dyn ToSql + Sync) {
        self
    }

    fn bind_sqlx<'q>(&'q self, q: sqlx_conn::Query<'q>) -> sqlx_conn::Query<'q> {
        q.bind(self)
    }
}

/// A column type every driver can decode.
#[cfg(not(feature = "sqlx"))]
pub(crate) trait Col: for<'a> FromSql<'a> {}

#[cfg(not(feature = "sqlx"))]
impl<T: for<'a> FromSql<'a>> Col for T {}

/// A column type every driver can decode.
#[cfg(feature = "sqlx")]
pub(crate) trait Col:
    for<'a> FromSql<'a> + for<'r> sqlx::Decode<'r, sqlx::Postgres> + sqlx::Type<sqlx::Postgres>
{
}

#[cfg(feature = "sqlx")]
impl<T> Col for T where
    T: for<'a> FromSql<'a> + for<'r> sqlx::Decode<'r, sqlx::Postgres> + sqlx::Type<sqlx::Postgres>
{
}

/// A row of a shared statement, from whichever driver ran it.
pub(crate) enum Row {
    Tokio(tokio_postgres::Row),
    #[cfg(feature = "sqlx")]
    Sqlx(sqlx::postgres::PgRow),
}

impl Row {
    /// Column `i`, decoded as `T` (a mismatch is a bug of this crate's
    /// statements, reported as a database error, never a panic).
    pub(crate) fn get<T: Col>(&self, i: usize) -> Result<T> {
        match self {
            Row::Tokio(r) => r.try_get(i).map_err(|e| Error::database("decode", e)),
            #[cfg(feature = "sqlx")]
            Row::Sqlx(r) => sqlx::Row::try_get(r, i).map_err(|e| Error::database("decode", e)),
        }
    }
}

/// Statement parameters, in order (`$1`, `$2`, …).
pub(crate) type Params<'a> = [&'a (dyn Param + 'a)];

/// A connection (or a transaction on one) that runs shared statements.
/// Boxed futures: the application's connections are held as
/// `dyn Exec` (see [`Within`](crate::Within)).
pub(crate) trait Exec: Send + Sync {
    /// Run `text`; its rows.
    fn fetch<'a>(
        &'a self,
        op: &'static str,
        text: &'a str,
        params: &'a Params<'a>,
    ) -> BoxFuture<'a, Result<Vec<Row>>>;

    /// Run `text`; how many rows it changed.
    fn exec<'a>(
        &'a self,
        op: &'static str,
        text: &'a str,
        params: &'a Params<'a>,
    ) -> BoxFuture<'a, Result<u64>>;

    /// Prepare `texts` into the connection's statement cache, if it has
    /// one, before statements pipelined at once use them (each would
    /// otherwise prepare its own copy while the cache is cold).
    fn warm<'a>(&'a self, _op: &'static str, _texts: &'a [&'a str]) -> BoxFuture<'a, Result<()>> {
        futures_util::future::ready(Ok(())).boxed()
    }

    /// Make the transaction this runs in unable to commit, for one of the
    /// application's own that a call failed in (see [`ABORT`]). Only the
    /// application's connections need it: the engine's own transactions
    /// are poisoned by their wrapper instead.
    fn abort(&self) -> BoxFuture<'_, ()> {
        futures_util::future::ready(()).boxed()
    }
}

/// A statement that fails on purpose: PostgreSQL then refuses every later
/// statement of the transaction and turns its `COMMIT` into a rollback.
pub(crate) const ABORT: &str = "DO $$BEGIN RAISE EXCEPTION \
    'alkstore: a call in this transaction failed (a claim, lease or lock no longer held, \
    or a database error), so it cannot commit'; END$$";

/// Run `text`; its first row, or a database error when it returned none.
pub(crate) async fn fetch_one<E: Exec + ?Sized>(
    e: &E,
    op: &'static str,
    text: &str,
    params: &Params<'_>,
) -> Result<Row> {
    e.fetch(op, text, params)
        .await?
        .into_iter()
        .next()
        .ok_or_else(|| Error::database(op, "the statement returned no row"))
}

/// Run `text`; its first row, if any.
pub(crate) async fn fetch_opt<E: Exec + ?Sized>(
    e: &E,
    op: &'static str,
    text: &str,
    params: &Params<'_>,
) -> Result<Option<Row>> {
    Ok(e.fetch(op, text, params).await?.into_iter().next())
}

impl PgEngine {
    /// Run a cached statement on a pooled connection (every area's reads
    /// and single-statement writes).
    pub(crate) async fn query(
        &self,
        op: &'static str,
        sql: &str,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<Vec<tokio_postgres::Row>> {
        query_on(&self.client().await?, op, sql, params).await
    }

    /// Run a statement whose commit need not wait for its WAL flush (claims,
    /// acks, heartbeats) when `relaxed_commits` is on, on a connection whose
    /// session has `synchronous_commit = off`. Such a commit
    /// can only be lost to a server crash, and losing it is harmless: a lost
    /// claim or heartbeat makes the job claimable again and its first
    /// worker's ack is refused; a lost ack makes the job run again once its
    /// claim expires. Both are the at-least-once outcome of a worker dying.
    pub(crate) async fn query_relaxed(
        &self,
        op: &'static str,
        sql: &str,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<Vec<tokio_postgres::Row>> {
        query_on(&self.relaxed_client().await?, op, sql, params).await
    }

    pub(crate) async fn execute(
        &self,
        op: &'static str,
        sql: &str,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<u64> {
        let client = self.client().await?;
        let stmt = client.prepare_cached(sql).await.map_err(db(op))?;
        client.execute(&stmt, params).await.map_err(db(op))
    }
}

/// Run a cached statement on a pooled connection.
async fn query_on(
    client: &deadpool_postgres::Object,
    op: &'static str,
    sql: &str,
    params: &[&(dyn ToSql + Sync)],
) -> Result<Vec<tokio_postgres::Row>> {
    let stmt = client.prepare_cached(sql).await.map_err(db(op))?;
    client.query(&stmt, params).await.map_err(db(op))
}

fn tokio_params<'a>(params: &'a Params<'a>) -> Vec<&'a (dyn ToSql + Sync)> {
    params.iter().map(|p| p.as_tokio()).collect()
}

fn tokio_rows(rows: Vec<tokio_postgres::Row>) -> Vec<Row> {
    rows.into_iter().map(Row::Tokio).collect()
}

/// The engine's pooled connections and the transactions on them: through
/// the connection's prepared-statement cache.
macro_rules! cached_exec {
    ($ty:ty) => {
        impl Exec for $ty {
            fn fetch<'a>(
                &'a self,
                op: &'static str,
                text: &'a str,
                params: &'a Params<'a>,
            ) -> BoxFuture<'a, Result<Vec<Row>>> {
                async move {
                    let stmt = self.prepare_cached(text).await.map_err(db(op))?;
                    let rows = self
                        .query(&stmt, &tokio_params(params))
                        .await
                        .map_err(db(op))?;
                    Ok(tokio_rows(rows))
                }
                .boxed()
            }

            fn exec<'a>(
                &'a self,
                op: &'static str,
                text: &'a str,
                params: &'a Params<'a>,
            ) -> BoxFuture<'a, Result<u64>> {
                async move {
                    let stmt = self.prepare_cached(text).await.map_err(db(op))?;
                    self.execute(&stmt, &tokio_params(params))
                        .await
                        .map_err(db(op))
                }
                .boxed()
            }

            fn warm<'a>(
                &'a self,
                op: &'static str,
                texts: &'a [&'a str],
            ) -> BoxFuture<'a, Result<()>> {
                async move {
                    for text in texts {
                        self.prepare_cached(text).await.map_err(db(op))?;
                    }
                    Ok(())
                }
                .boxed()
            }
        }
    };
}

cached_exec!(deadpool_postgres::ClientWrapper);
cached_exec!(deadpool_postgres::Transaction<'_>);

/// The application's own tokio-postgres client, or the one its
/// transaction runs on (no statement cache: each statement is prepared as
/// it runs).
impl Exec for tokio_postgres::Client {
    fn fetch<'a>(
        &'a self,
        op: &'static str,
        text: &'a str,
        params: &'a Params<'a>,
    ) -> BoxFuture<'a, Result<Vec<Row>>> {
        async move {
            let rows = self
                .query(text, &tokio_params(params))
                .await
                .map_err(db(op))?;
            Ok(tokio_rows(rows))
        }
        .boxed()
    }

    fn exec<'a>(
        &'a self,
        op: &'static str,
        text: &'a str,
        params: &'a Params<'a>,
    ) -> BoxFuture<'a, Result<u64>> {
        async move {
            self.execute(text, &tokio_params(params))
                .await
                .map_err(db(op))
        }
        .boxed()
    }

    fn abort(&self) -> BoxFuture<'_, ()> {
        // Fails by design (or finds the transaction aborted already).
        async move { drop(self.batch_execute(ABORT).await) }.boxed()
    }
}

/// The application's own sqlx connection (feature `sqlx`).
#[cfg(feature = "sqlx")]
pub(crate) mod sqlx_conn {
    use alkstore_core::{Error, Result};
    use futures_util::future::{BoxFuture, FutureExt};
    use sqlx::postgres::{PgArguments, PgConnection};
    use sqlx::Postgres;

    use super::{Exec, Params, Row};

    /// A sqlx query with bound parameters.
    pub(crate) type Query<'q> = sqlx::query::Query<'q, Postgres, PgArguments>;

    /// The connection, one statement at a time (sqlx's connections are
    /// `&mut`; shared statements may be issued at once, as on
    /// tokio-postgres, and then run in turn).
    pub(crate) struct SqlxConn<'c>(pub(crate) tokio::sync::Mutex<&'c mut PgConnection>);

    fn bound<'q>(text: &'q str, params: &'q Params<'q>) -> Query<'q> {
        params.iter().fold(sqlx::query(text), |q, p| p.bind_sqlx(q))
    }

    /// A sqlx error as the engine reports a tokio-postgres one: the
    /// server's message and SQLSTATE when it has them.
    pub(crate) fn sqlx_db(op: &'static str) -> impl Fn(sqlx::Error) -> Error {
        move |e| match &e {
            sqlx::Error::Database(d) => Error::database(
                op,
                format!(
                    "{} (SQLSTATE {})",
                    d.message(),
                    d.code().as_deref().unwrap_or("?")
                ),
            ),
            sqlx::Error::Io(_) | sqlx::Error::PoolClosed | sqlx::Error::WorkerCrashed => {
                Error::connect("the database", e)
            }
            _ => Error::database(op, e),
        }
    }

    impl Exec for SqlxConn<'_> {
        fn fetch<'a>(
            &'a self,
            op: &'static str,
            text: &'a str,
            params: &'a Params<'a>,
        ) -> BoxFuture<'a, Result<Vec<Row>>> {
            async move {
                let mut conn = self.0.lock().await;
                let rows = bound(text, params)
                    .fetch_all(&mut **conn)
                    .await
                    .map_err(sqlx_db(op))?;
                Ok(rows.into_iter().map(Row::Sqlx).collect())
            }
            .boxed()
        }

        fn exec<'a>(
            &'a self,
            op: &'static str,
            text: &'a str,
            params: &'a Params<'a>,
        ) -> BoxFuture<'a, Result<u64>> {
            async move {
                let mut conn = self.0.lock().await;
                let done = bound(text, params)
                    .execute(&mut **conn)
                    .await
                    .map_err(sqlx_db(op))?;
                Ok(done.rows_affected())
            }
            .boxed()
        }

        fn abort(&self) -> BoxFuture<'_, ()> {
            async move {
                let mut conn = self.0.lock().await;
                // Fails by design (or finds the transaction aborted already).
                let abort = sqlx::query(super::ABORT).persistent(false);
                drop(abort.execute(&mut **conn).await);
            }
            .boxed()
        }
    }
}

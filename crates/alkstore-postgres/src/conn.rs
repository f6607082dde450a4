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

use std::sync::Arc;

use crate::unnamed::{self, TypeCache};
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
        .ok_or_else(|| no_row(op))
}

/// A statement that always returns a row returned none.
fn no_row(op: &'static str) -> Error {
    Error::database(op, "the statement returned no row")
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

/// How one of the engine's connections, or the application's, runs a
/// statement.
pub(crate) enum How<'a> {
    /// Prepared once per connection and kept in its statement cache (the
    /// engine's own connections, straight to the server).
    Cached(&'a deadpool_postgres::StatementCache),
    /// Prepared as it runs, then closed (the application's connections,
    /// straight to the server).
    Prepared,
    /// Unnamed, in one round trip (every connection through a
    /// transaction-mode pooler; see [`crate::unnamed`]).
    Unnamed(Arc<TypeCache>),
}

/// A connection (or a transaction on one) and how statements run on it.
pub(crate) struct On<'a> {
    client: &'a tokio_postgres::Client,
    how: How<'a>,
    /// The application's own: a call that fails poisons its transaction
    /// (see [`Exec::abort`]).
    app: bool,
}

impl<'a> On<'a> {
    /// The application's connection (or the one its transaction runs on).
    pub(crate) fn app(client: &'a tokio_postgres::Client, how: How<'a>) -> Self {
        On {
            client,
            how,
            app: true,
        }
    }

    /// Run `text`; its rows.
    pub(crate) async fn rows(
        &self,
        op: &'static str,
        text: &str,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<Vec<tokio_postgres::Row>> {
        match &self.how {
            How::Cached(cache) => {
                let stmt = cache.prepare(self.client, text).await.map_err(db(op))?;
                self.client.query(&stmt, params).await.map_err(db(op))
            }
            How::Prepared => self.client.query(text, params).await.map_err(db(op)),
            How::Unnamed(types) => unnamed::query(self.client, types, text, params)
                .await
                .map_err(typed_err(op)),
        }
    }

    /// Run `text`; its first row (it always returns one).
    pub(crate) async fn row(
        &self,
        op: &'static str,
        text: &str,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<tokio_postgres::Row> {
        self.rows(op, text, params)
            .await?
            .into_iter()
            .next()
            .ok_or_else(|| no_row(op))
    }

    /// Run `text`; how many rows it changed.
    pub(crate) async fn changed(
        &self,
        op: &'static str,
        text: &str,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<u64> {
        match &self.how {
            How::Cached(cache) => {
                let stmt = cache.prepare(self.client, text).await.map_err(db(op))?;
                self.client.execute(&stmt, params).await.map_err(db(op))
            }
            How::Prepared => self.client.execute(text, params).await.map_err(db(op)),
            How::Unnamed(types) => unnamed::execute(self.client, types, text, params)
                .await
                .map_err(typed_err(op)),
        }
    }
}

fn typed_err(op: &'static str) -> impl Fn(unnamed::Typed) -> Error {
    move |e| match e {
        unnamed::Typed::Db(e) => db(op)(e),
        unnamed::Typed::Count { takes, given } => Error::database(
            op,
            format!("the statement takes {takes} parameters, {given} were given"),
        ),
        unnamed::Typed::Types(why) => Error::database(op, why),
    }
}

impl Exec for On<'_> {
    fn fetch<'a>(
        &'a self,
        op: &'static str,
        text: &'a str,
        params: &'a Params<'a>,
    ) -> BoxFuture<'a, Result<Vec<Row>>> {
        async move {
            let rows = self.rows(op, text, &tokio_params(params)).await?;
            Ok(rows.into_iter().map(Row::Tokio).collect())
        }
        .boxed()
    }

    fn exec<'a>(
        &'a self,
        op: &'static str,
        text: &'a str,
        params: &'a Params<'a>,
    ) -> BoxFuture<'a, Result<u64>> {
        async move { self.changed(op, text, &tokio_params(params)).await }.boxed()
    }

    fn warm<'a>(&'a self, op: &'static str, texts: &'a [&'a str]) -> BoxFuture<'a, Result<()>> {
        async move {
            for text in texts {
                match &self.how {
                    How::Cached(cache) => {
                        cache.prepare(self.client, text).await.map_err(db(op))?;
                    }
                    How::Unnamed(types) => {
                        types
                            .types(self.client, text)
                            .await
                            .map_err(typed_err(op))?;
                    }
                    How::Prepared => {}
                }
            }
            Ok(())
        }
        .boxed()
    }

    fn abort(&self) -> BoxFuture<'_, ()> {
        async move {
            if self.app {
                // Fails by design (or finds the transaction aborted already).
                drop(self.client.batch_execute(ABORT).await);
            }
        }
        .boxed()
    }
}

impl PgEngine {
    /// How statements run on `client`, one of the engine's pooled
    /// connections (or a transaction on one).
    pub(crate) fn on<'a>(&self, client: &'a deadpool_postgres::ClientWrapper) -> On<'a> {
        self.on_cached(client, &client.statement_cache)
    }

    /// [`PgEngine::on`] for a transaction of the pool's.
    pub(crate) fn on_tx<'a>(&self, tx: &'a deadpool_postgres::Transaction<'_>) -> On<'a> {
        self.on_cached(tx.client(), &tx.statement_cache)
    }

    fn on_cached<'a>(
        &self,
        client: &'a tokio_postgres::Client,
        cache: &'a deadpool_postgres::StatementCache,
    ) -> On<'a> {
        let how = match &self.inner.types {
            Some(types) => How::Unnamed(types.clone()),
            None => How::Cached(cache),
        };
        On {
            client,
            how,
            app: false,
        }
    }

    /// How statements run on the application's own connections.
    pub(crate) fn app_how(&self) -> How<'static> {
        match &self.inner.types {
            Some(types) => How::Unnamed(types.clone()),
            None => How::Prepared,
        }
    }

    /// Run a cached statement on a pooled connection (every area's reads
    /// and single-statement writes).
    pub(crate) async fn query(
        &self,
        op: &'static str,
        sql: &str,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<Vec<tokio_postgres::Row>> {
        let client = self.client().await?;
        self.on(&client).rows(op, sql, params).await
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
        let client = self.relaxed_client().await?;
        self.on(&client).rows(op, sql, params).await
    }

    pub(crate) async fn execute(
        &self,
        op: &'static str,
        sql: &str,
        params: &[&(dyn ToSql + Sync)],
    ) -> Result<u64> {
        let client = self.client().await?;
        self.on(&client).changed(op, sql, params).await
    }
}

fn tokio_params<'a>(params: &'a Params<'a>) -> Vec<&'a (dyn ToSql + Sync)> {
    params.iter().map(|p| p.as_tokio()).collect()
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
    pub(crate) struct SqlxConn<'c> {
        pub(crate) conn: tokio::sync::Mutex<&'c mut PgConnection>,
        /// Whether sqlx may keep the statements prepared on the connection
        /// (not behind a transaction-mode pooler: see `crate::unnamed`).
        pub(crate) persistent: bool,
    }

    fn bound<'q>(text: &'q str, params: &'q Params<'q>, persistent: bool) -> Query<'q> {
        let query = sqlx::query(text).persistent(persistent);
        params.iter().fold(query, |q, p| p.bind_sqlx(q))
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
                let mut conn = self.conn.lock().await;
                let rows = bound(text, params, self.persistent)
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
                let mut conn = self.conn.lock().await;
                let done = bound(text, params, self.persistent)
                    .execute(&mut **conn)
                    .await
                    .map_err(sqlx_db(op))?;
                Ok(done.rows_affected())
            }
            .boxed()
        }

        fn abort(&self) -> BoxFuture<'_, ()> {
            async move {
                let mut conn = self.conn.lock().await;
                // Fails by design (or finds the transaction aborted already).
                let abort = sqlx::query(super::ABORT).persistent(false);
                drop(abort.execute(&mut **conn).await);
            }
            .boxed()
        }
    }
}

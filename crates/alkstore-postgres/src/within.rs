//! Every transactional call on a transaction the application opened
//! itself, on its own connection: tokio-postgres ([`PgEngine::within`]) or
//! sqlx (`PgEngine::within_sqlx`, feature `sqlx`). The same statements as
//! the engine's own transaction ([`Transaction`](alkstore_core::Transaction)) and the
//! autocommit calls, with the same names.

use alkstore_core::{At, Checked, Drive, Engine, Error, ErrorKind, Op, Place, Result};
use tokio_postgres::GenericClient;

use crate::conn::Exec;
use crate::writes::PgConn;
use crate::PgEngine;

/// The engine's transactional calls on the application's own transaction
/// ([`PgEngine::within`] for tokio-postgres, `PgEngine::within_sqlx` for
/// sqlx): what it writes commits or rolls back with the application's own
/// SQL, when the application commits or rolls back.
///
/// The calls are those of the engine-neutral transaction, with the same
/// names and the same promises: a job acked, retried, failed or snoozed
/// stays the caller's until the transaction ends; a checkpointed bucket's
/// lease cannot be taken over until then; a fenced lock cannot pass on
/// until then (the lock's renewal and release wait as well). Workers and
/// subscribers of every process are woken at commit (PostgreSQL's NOTIFY).
///
/// **A failed call makes the transaction unable to commit**, as a failed
/// call poisons the engine's own transaction. Refused input
/// ([`ErrorKind::InvalidInput`](alkstore_core::ErrorKind), including what
/// only the database can judge, such as an offset beyond the stream's
/// head) writes nothing and harms nothing: the transaction goes on. Any
/// other failure (a claim, lease or lock the caller no longer holds is
/// [`Error::NotHeld`]; a database error) leaves the transaction aborted:
/// PostgreSQL refuses its later statements and turns its `COMMIT` into a
/// rollback, so the application's writes cannot commit without the
/// call's. Roll back. (On SQLite, whose transactions cannot be aborted
/// that way, `within` leaves the rollback to the caller.)
///
/// Use a transaction at READ COMMITTED (PostgreSQL's default). On a bare
/// client each call commits on its own, and the fences hold nothing
/// (every call still checks the claim, lease or lock it acts under).
///
/// **Ack, retry or fail late in the transaction**: each also counts the
/// job in the queue's throughput, in a counter row shared with other
/// workers (one of 16 shards per queue and 10 s bucket, by backend pid),
/// and that row stays locked until the transaction ends. Until then, acks
/// of that queue on a connection of the same shard wait for it, and two
/// transactions that settle jobs of two queues in opposite orders can
/// deadlock (PostgreSQL then aborts one of them). The engine's own
/// transaction ([`Transaction`](alkstore_core::Transaction)) counts after
/// its commit instead and takes no such lock.
///
/// ```no_run
/// # async fn demo(engine: &alkstore_postgres::PgEngine, client: &mut tokio_postgres::Client, claim: alkstore_core::Claim) -> Result<(), Box<dyn std::error::Error>> {
/// use alkstore_core::{NewJob, Writes};
/// let tx = client.transaction().await?;
/// tx.execute("UPDATE orders SET state = 'mailed' WHERE id = 1", &[]).await?;
/// let outbox = engine.within(&tx);
/// outbox.job_ack(vec![claim]).await?; // the mail job that did it
/// outbox.job_enqueue(vec![NewJob::new("invoices", b"order 1".to_vec())]).await?;
/// tx.commit().await?;
/// # Ok(()) }
/// ```
pub struct Within<'e, 'c> {
    engine: &'e PgEngine,
    conn: Conn<'c>,
}

/// The application's connection. Nothing in it needs dropping, so a
/// `Within` borrows the transaction only until its last use: the
/// transaction can commit in the same scope.
enum Conn<'c> {
    /// A tokio-postgres client (a transaction's statements run on its
    /// client), and how statements run on it.
    Tokio(crate::conn::On<'c>),
    /// A sqlx connection.
    #[cfg(feature = "sqlx")]
    Sqlx(crate::conn::sqlx_conn::SqlxConn<'c>),
}

impl Conn<'_> {
    fn exec(&self) -> &dyn Exec {
        match self {
            Conn::Tokio(on) => on,
            #[cfg(feature = "sqlx")]
            Conn::Sqlx(conn) => conn,
        }
    }
}

impl std::fmt::Debug for Within<'_, '_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Within")
            .field("engine", self.engine)
            .finish_non_exhaustive()
    }
}

impl PgEngine {
    /// The transactional calls ([`Within`]) on the application's own
    /// tokio-postgres transaction (or client): use this crate's
    /// re-exported [`tokio_postgres`], so both
    /// sides use the same driver.
    ///
    /// ```no_run
    /// # async fn demo(engine: &alkstore_postgres::PgEngine, client: &mut tokio_postgres::Client) -> Result<(), Box<dyn std::error::Error>> {
    /// use alkstore_core::{NewJob, Writes};
    /// let tx = client.transaction().await?;
    /// tx.execute("INSERT INTO orders (id) VALUES (1)", &[]).await?;
    /// engine.within(&tx).job_enqueue(vec![NewJob::new("emails", b"order 1".to_vec())]).await?;
    /// tx.commit().await?;
    /// # Ok(()) }
    /// ```
    pub fn within<'c, C: GenericClient + Sync>(&self, client: &'c C) -> Within<'_, 'c> {
        Within {
            engine: self,
            conn: Conn::Tokio(crate::conn::On::app(client.client(), self.app_how())),
        }
    }

    /// The transactional calls ([`Within`]) on the application's own sqlx
    /// transaction (or connection): pass `&mut *tx` for a
    /// `sqlx::Transaction<'_, Postgres>`. Feature `sqlx` (sqlx 0.8).
    ///
    /// ```no_run
    /// # async fn demo(engine: &alkstore_postgres::PgEngine, pool: &sqlx::PgPool) -> Result<(), Box<dyn std::error::Error>> {
    /// use alkstore_core::{NewJob, Writes};
    /// let mut tx = pool.begin().await?;
    /// sqlx::query("INSERT INTO orders (id) VALUES (1)").execute(&mut *tx).await?;
    /// engine.within_sqlx(&mut *tx).job_enqueue(vec![NewJob::new("emails", b"order 1".to_vec())]).await?;
    /// tx.commit().await?;
    /// # Ok(()) }
    /// ```
    #[cfg(feature = "sqlx")]
    pub fn within_sqlx<'c>(&self, conn: &'c mut sqlx::PgConnection) -> Within<'_, 'c> {
        Within {
            engine: self,
            conn: Conn::Sqlx(crate::conn::sqlx_conn::SqlxConn {
                conn: tokio::sync::Mutex::new(conn),
                persistent: self.inner.types.is_none(),
            }),
        }
    }
}

impl Within<'_, '_> {
    /// Validate, run, turn a lost fence into [`Error::NotHeld`], and leave
    /// the transaction unable to commit when the call failed for any
    /// reason but refused input.
    async fn call<P: Op>(&self, params: P) -> Result<P::Output>
    where
        PgEngine: Drive<P>,
    {
        let p = Checked::<P>::new(params, self.engine.limits())?;
        if let Some(out) = p.idle() {
            return Ok(out);
        }
        let fence = p.fence();
        let e: &dyn Exec = self.conn.exec();
        let out = match self.engine.drive(At::Tx(PgConn::app(e)), p).await {
            Ok(out) => match fence {
                Some(what) if P::lost(&out) => Err(Error::NotHeld { what }),
                _ => Ok(out),
            },
            Err(e) => Err(e),
        };
        if matches!(&out, Err(e) if e.kind() != ErrorKind::InvalidInput) {
            self.conn.exec().abort().await;
        }
        out
    }
}

/// The application's transaction is a place: the operations of
/// [`Writes`](alkstore_core::Writes) run on it under their names.
impl Place for Within<'_, '_> {
    type Engine = PgEngine;

    fn engine(&self) -> &PgEngine {
        self.engine
    }

    fn run_as<P: Op>(
        &self,
        _name: &'static str,
        params: impl Into<P> + Send,
    ) -> impl std::future::Future<Output = Result<P::Output>> + Send
    where
        PgEngine: Drive<P>,
    {
        self.call::<P>(params.into())
    }
}

//! Every write of a transaction on a connection of the application's own
//! ([`SqliteEngine::within`]): the same operations, under the same names
//! ([`Writes`](alkstore_core::Writes)), as the engine and its own
//! transaction, run by the engine's one implementation of each
//! (`writes.rs`).

use alkstore_core::{At, Checked, Drive, Engine, Error, ErrorKind, Op, Place, Result};
use futures_util::FutureExt as _;
use rusqlite::Connection;

use crate::SqliteEngine;

impl SqliteEngine {
    /// The writes of a transaction, run on `conn`: usually inside the
    /// application's own open transaction on this store's file, so they
    /// commit or roll back with its own writes. The same calls, with the
    /// same names and promises, as [`Transaction`](alkstore_core::Transaction)
    /// (which opens a transaction on a connection of the engine's), for an
    /// application that runs its own `rusqlite` transactions.
    ///
    /// Each call is validated against this store's limits, timed by its
    /// clock, and runs all or none in a savepoint of its own: a call that
    /// fails leaves nothing of itself behind, and the transaction goes on.
    /// What to do then is the caller's: a claim, lease or lock found no
    /// longer held ([`Error::NotHeld`]) means the transaction must roll
    /// back, or its effects land twice.
    ///
    /// The connection must be on this store's file; give it a
    /// `busy_timeout`, since alkstore's writer shares the file, and use
    /// this crate's re-exported [`rusqlite`] so both
    /// sides link the same SQLite. Begin with `BEGIN IMMEDIATE`
    /// ([`rusqlite::TransactionBehavior::Immediate`]) when the transaction
    /// fences (`job_ack`, `job_settle`, `group_checkpoint`,
    /// `lock_fence`): the write lock taken at once is what keeps
    /// the claim, lease or lock from passing on before the commit. Workers
    /// and readers, in this process too, see the commit through the
    /// engine's `data_version` watcher.
    ///
    /// ```no_run
    /// # async fn demo(engine: &alkstore_sqlite::SqliteEngine, conn: &mut rusqlite::Connection) -> Result<(), Box<dyn std::error::Error>> {
    /// use alkstore_core::notify::NotifyParams;
    /// use alkstore_core::{NewJob, Writes};
    /// use rusqlite::TransactionBehavior;
    /// let tx = conn.transaction_with_behavior(TransactionBehavior::Immediate)?;
    /// tx.execute("INSERT INTO orders (id) VALUES (1)", [])?;
    /// let store = engine.within(&tx);
    /// // Each call has run when it returns: its future is ready at once
    /// // (synchronous code calls `run_now` instead).
    /// store.job_enqueue(NewJob::new("emails", b"order 1".to_vec())).await?;
    /// store.notify(NotifyParams::new("orders", "1 placed")).await?;
    /// tx.commit()?;
    /// # Ok(()) }
    /// ```
    pub fn within<'c>(&'c self, conn: &'c Connection) -> Within<'c> {
        Within::new(self, conn)
    }

    /// The engine's clock, in milliseconds.
    pub(crate) fn now_ms(&self) -> i64 {
        self.inner.clock.now_ms()
    }
}

/// The writes of a transaction on a connection of the application's own
/// (see [`SqliteEngine::within`]): a [`Place`], so the operations of
/// [`Writes`](alkstore_core::Writes) run here under their names. Each call
/// runs before it returns its future (ready at once), validated against
/// the store's limits, all or none in a savepoint of its own. A claim,
/// lease or lock found no longer held is [`Error::NotHeld`]: roll the
/// transaction back, or its effects land twice.
#[derive(Clone, Copy)]
pub struct Within<'c> {
    engine: &'c SqliteEngine,
    conn: &'c Connection,
}

impl std::fmt::Debug for Within<'_> {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Within")
            .field("engine", self.engine)
            .finish_non_exhaustive()
    }
}

impl<'c> Within<'c> {
    pub(crate) fn new(engine: &'c SqliteEngine, conn: &'c Connection) -> Self {
        Within { engine, conn }
    }

    pub(crate) fn conn(&self) -> &'c Connection {
        self.conn
    }

    /// Run one operation here and now, for synchronous code (a rusqlite
    /// transaction on a blocking thread): what [`Place::run`] runs, without
    /// a future. Validated, all or none, a lost fence as
    /// [`Error::NotHeld`].
    ///
    /// ```no_run
    /// # fn demo(engine: &alkstore_sqlite::SqliteEngine, conn: &mut rusqlite::Connection) -> Result<(), Box<dyn std::error::Error>> {
    /// use alkstore_core::queue::JobEnqueueParams;
    /// use alkstore_core::NewJob;
    /// let tx = conn.transaction()?;
    /// engine.within(&tx).run_now::<JobEnqueueParams>(NewJob::new("emails", b"1".to_vec()))?;
    /// tx.commit()?;
    /// # Ok(()) }
    /// ```
    pub fn run_now<P: Op>(&self, params: impl Into<P>) -> Result<P::Output>
    where
        SqliteEngine: Drive<P>,
    {
        let p = Checked::<P>::new(params.into(), self.engine.limits())?;
        if let Some(out) = p.idle() {
            return Ok(out);
        }
        let Some(what) = p.fence() else {
            return self.drive_now(p);
        };
        // A fenced batch with one claim lost writes nothing of itself:
        // the claims still held are not settled either.
        self.all_or_none(P::NAME, |_| match self.drive_now(p)? {
            out if P::lost(&out) => Err(Error::NotHeld { what }),
            out => Ok(out),
        })
    }

    /// The engine's transaction arm of `P`, which runs before it returns.
    fn drive_now<P: Op>(&self, p: Checked<P>) -> Result<P::Output>
    where
        SqliteEngine: Drive<P>,
    {
        self.engine
            .drive(At::Tx(self.conn), p)
            .now_or_never()
            .ok_or_else(|| {
                Error::database(P::NAME, "a transaction's write did not finish at once")
            })?
    }

    /// Run `f`'s writes on the connection in a savepoint: kept when it
    /// succeeds, undone when it fails. Inside the caller's transaction they
    /// then commit with it; outside one, together on their own.
    pub(crate) fn all_or_none<T>(
        &self,
        op: &'static str,
        f: impl FnOnce(&Connection) -> Result<T>,
    ) -> Result<T> {
        let conn = self.conn;
        crate::connection::run_cached(conn, "SAVEPOINT alkstore_call").map_err(crate::db(op))?;
        match f(conn) {
            Ok(out) => {
                crate::connection::run_cached(conn, "RELEASE alkstore_call")
                    .map_err(crate::db(op))?;
                Ok(out)
            }
            Err(e) => {
                let _ = crate::connection::run_cached(conn, "ROLLBACK TO alkstore_call");
                let _ = crate::connection::run_cached(conn, "RELEASE alkstore_call");
                Err(e)
            }
        }
    }
}

/// The application's transaction is a place. SQLite cannot abort it the
/// way PostgreSQL does: after a failed call (but refused input,
/// [`ErrorKind::InvalidInput`]) the rollback is the caller's.
impl Place for Within<'_> {
    type Engine = SqliteEngine;

    fn engine(&self) -> &SqliteEngine {
        self.engine
    }

    fn run_as<P: Op>(
        &self,
        name: &'static str,
        params: impl Into<P> + Send,
    ) -> impl std::future::Future<Output = Result<P::Output>> + Send
    where
        SqliteEngine: Drive<P>,
    {
        let out = self.run_now::<P>(params.into());
        if let Err(e) = &out {
            if e.kind() != ErrorKind::InvalidInput {
                tracing::debug!(error = %e, op = name, "a call in the application's transaction failed");
            }
        }
        std::future::ready(out)
    }
}

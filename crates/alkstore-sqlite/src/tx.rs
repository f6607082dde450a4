//! The application's own transaction on this engine ([`TxDriver`]).
//!
//! A transaction runs on a connection of its own, one per engine, opened
//! the first time one begins with the setup of the engine's others (the
//! pragmas, the busy timeout, the SQL functions, the in-memory database of
//! a `:memory:` store). It takes SQLite's write lock at once
//! (`BEGIN IMMEDIATE`) and holds it until it ends: that is what fences a
//! claim, a lease or a lock the transaction checked (nobody takes it over
//! before the commit), and why a transaction should be short (the
//! engine's writer, and other processes, wait for it).
//!
//! Transactions of this process take turns on the connection through an
//! async mutex, first come first served, instead of sleeping in SQLite's
//! busy handler. Only another connection's lock (the engine's writer
//! mid-group, another process) makes `BEGIN` wait, and then on a blocking
//! thread, as the writer does (`writer/`): a runtime thread must not
//! sleep waiting for a lock the task it would run could be about to
//! release.
//!
//! Each write runs in a savepoint of its own, on the same functions the
//! writer runs (`writes.rs`). The writer's caches stay right
//! beside it: ids it reserved for new jobs are given up when its next group
//! finds another connection's commit (`PRAGMA data_version`), so a job a
//! transaction enqueues never shares an id with the writer's and ids rise
//! in commit order; its map of claimed jobs' queues is only a hint that an
//! ack here makes stale, never wrong.

use std::sync::Arc;

use alkstore_core::{Error, Result, TxDriver};
use rusqlite::Connection;
use tokio::sync::OwnedMutexGuard;

use crate::connection::{run_cached, without_waiting};
use crate::{is_busy, SqliteEngine, SqliteOptions};

/// The engine's transaction connection, shared by its clones; opened the
/// first time a transaction begins.
pub(crate) type TxHome = std::sync::Mutex<Option<Arc<tokio::sync::Mutex<Connection>>>>;

/// An open transaction of the application's own on this engine (see
/// [`Transaction`](alkstore_core::Transaction)): it holds the engine's
/// transaction connection, inside `BEGIN IMMEDIATE`. Dropped without a
/// commit, it rolls back.
///
/// It holds SQLite's write lock until it ends: the engine's own writes
/// (`job_claim`, `job_ack`, … outside the transaction), in this process
/// or another, wait for it, up to the busy timeout. So do not await one
/// of those while the transaction is open: make the write in the
/// transaction instead. On an in-memory store (no WAL) reads wait for it
/// too.
pub struct SqliteTx {
    conn: OwnedMutexGuard<Connection>,
}

impl std::fmt::Debug for SqliteTx {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteTx")
            .field("open", &!self.conn.is_autocommit())
            .finish()
    }
}

impl SqliteTx {
    /// The connection the transaction runs on, for the application's own
    /// SQL: its statements join the transaction. Do not commit or roll
    /// back on it (end the transaction through its owner).
    pub fn conn(&self) -> &Connection {
        &self.conn
    }
}

impl SqliteTx {
    /// The connection, while the transaction is still open on it. SQLite
    /// ends a transaction by itself on some errors (a full disk, an I/O
    /// error, `RAISE(ROLLBACK)` in the application's own SQL), and the
    /// application may have run `COMMIT` on it: a write then would commit
    /// on its own, unfenced.
    fn live(&self) -> Result<&Connection> {
        if self.conn.is_autocommit() {
            return Err(Error::database(
                "tx",
                "the transaction already ended on its connection (SQLite rolled it back after an error, or SQL run on the connection ended it)",
            ));
        }
        Ok(&self.conn)
    }
}

impl Drop for SqliteTx {
    fn drop(&mut self) {
        // Not committed: roll back, here and now (no I/O to wait for in
        // WAL mode). Should it fail, the next `begin` finds the
        // connection still in a transaction and replaces it.
        if !self.conn.is_autocommit() {
            if let Err(e) = run_cached(&self.conn, "ROLLBACK") {
                tracing::warn!(error = %e, "sqlite transaction: rollback on drop failed");
            }
        }
    }
}

impl SqliteEngine {
    /// The transaction connection, opened on first use.
    fn tx_home(&self) -> Result<Arc<tokio::sync::Mutex<Connection>>> {
        let mut home = self.inner.tx_home.lock().unwrap_or_else(|p| p.into_inner());
        if let Some(conn) = home.as_ref() {
            return Ok(conn.clone());
        }
        let conn = Arc::new(tokio::sync::Mutex::new(crate::connection::open_connection(
            &self.inner.opts,
        )?));
        *home = Some(conn.clone());
        Ok(conn)
    }

    fn busy(&self, op: &'static str) -> Error {
        Error::Busy {
            op,
            waited: self.inner.opts.busy_timeout,
        }
    }
}

/// Make the connection fit to begin on: a transaction left open (a
/// rollback that failed, the application's own `BEGIN`) is rolled back,
/// and a connection that will not is replaced by a new one.
fn make_ready(conn: &mut Connection, opts: &SqliteOptions) -> Result<()> {
    if conn.is_autocommit() {
        return Ok(());
    }
    if run_cached(conn, "ROLLBACK").is_ok() && conn.is_autocommit() {
        return Ok(());
    }
    tracing::warn!("sqlite transaction connection left in a transaction; opening a new one");
    // Closing the old one rolls its transaction back.
    *conn = crate::connection::open_connection(opts)?;
    Ok(())
}

/// Run `f` on a blocking thread, or here when there is no Tokio runtime
/// to hand it to.
async fn off_runtime<T: Send + 'static>(
    op: &'static str,
    f: impl FnOnce() -> Result<T> + Send + 'static,
) -> Result<T> {
    match tokio::runtime::Handle::try_current() {
        Ok(h) => h
            .spawn_blocking(f)
            .await
            .map_err(|e| Error::database(op, format!("blocking task failed: {e}")))?,
        Err(_) => f(),
    }
}

impl TxDriver for SqliteEngine {
    type Tx = SqliteTx;

    async fn tx_begin(&self) -> Result<SqliteTx> {
        let op = "tx_begin";
        let home = self.tx_home()?;
        // The turn of this process's transactions, waited for no longer
        // than SQLite's own lock would be: a transaction left open (leaked,
        // or a second one begun by the task holding the first) must not
        // hang every later one.
        let timeout = self.inner.opts.busy_timeout;
        let mut conn = tokio::time::timeout(timeout, home.lock_owned())
            .await
            .map_err(|_| self.busy(op))?;
        make_ready(&mut conn, &self.inner.opts)?;
        match without_waiting(&conn, timeout, "BEGIN IMMEDIATE") {
            Ok(()) => return Ok(SqliteTx { conn }),
            Err(e) if is_busy(&e) => {}
            Err(e) => return Err(Error::database(op, e)),
        }
        // Another connection holds the write lock: wait for it, up to the
        // busy timeout, on a blocking thread. The transaction is built
        // there, so that should this call be dropped meanwhile, dropping
        // its result rolls it back.
        let busy = self.busy(op);
        off_runtime(op, move || match run_cached(&conn, "BEGIN IMMEDIATE") {
            Ok(()) => Ok(SqliteTx { conn }),
            Err(e) if is_busy(&e) => Err(busy),
            Err(e) => Err(Error::database(op, e)),
        })
        .await
    }

    async fn tx_commit(&self, tx: SqliteTx) -> Result<()> {
        let op = "tx_commit";
        if tx.conn.is_autocommit() {
            return Err(Error::database(
                op,
                "the transaction was already ended by SQL run on its connection",
            ));
        }
        let opts = &self.inner.opts;
        // synchronous=FULL syncs the file at every commit: not on a
        // runtime thread. NORMAL (and an in-memory store) only appends.
        let syncs = opts.synchronous_full && !crate::connection::is_memory_uri(&opts.path);
        if !syncs {
            match without_waiting(&tx.conn, opts.busy_timeout, "COMMIT") {
                Ok(()) => return Ok(()),
                // Readers hold the in-memory store's lock (no WAL there):
                // wait for them below.
                Err(e) if is_busy(&e) => {}
                // Dropping `tx` rolls back what is left.
                Err(e) => return Err(Error::database(op, e)),
            }
        }
        let busy = self.busy(op);
        off_runtime(op, move || match run_cached(&tx.conn, "COMMIT") {
            Ok(()) => Ok(()),
            Err(e) if is_busy(&e) => Err(busy),
            Err(e) => Err(Error::database(op, e)),
        })
        .await
    }

    async fn tx_rollback(&self, tx: SqliteTx) -> Result<()> {
        if tx.conn.is_autocommit() {
            return Ok(());
        }
        run_cached(&tx.conn, "ROLLBACK").map_err(crate::db("tx_rollback"))
    }

    fn tx_conn<'a>(&'a self, tx: &'a mut SqliteTx) -> Result<&'a Connection> {
        tx.live()
    }
}

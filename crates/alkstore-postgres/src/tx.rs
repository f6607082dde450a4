//! The application's own transaction on this engine ([`TxDriver`]): a
//! pooled connection of the engine's, inside `BEGIN`, running the same
//! statements as the autocommit calls (the `…_in` functions each area
//! shares with them and with [`Within`](crate::Within)).
//!
//! What holds a claim, lease or lock until commit is a row lock each
//! fenced call takes in its statement: an acked or settled job's row
//! (claims and rescues skip locked rows), a checkpointed bucket's lease row
//! (claims skip it; a renewal or release waits), a fenced lock's row
//! (`FOR SHARE`: a takeover, which must lock the row to update it, waits for
//! the commit and then re-checks it). The jobs it acks, retries or fails
//! are counted in the queues' throughput after the commit, on the same
//! connection (one statement; best effort, a failure is logged), not in
//! the settle statements: their counter row would otherwise stay locked
//! while the transaction is open, holding up other workers' acks on that
//! row and risking deadlocks between transactions that settle jobs of
//! two queues in opposite orders.
//!
//! Times come from the store's clock at each statement
//! (`statement_timestamp()`, not `now()`, which stays at the transaction's
//! start): a claim or lock that lapses while the transaction is open is
//! seen as lapsed by the next call.

use alkstore_core::{Error, Result, TxDriver};
use deadpool_postgres::{ClientWrapper, Object};
use tokio_postgres::error::SqlState;

use crate::queues::throughput::Tally;
use crate::writes::PgConn;
use crate::{db, PgEngine};

/// Opens every transaction: READ COMMITTED whatever the server's default,
/// as the shared statements assume (each statement sees what committed
/// before it, and re-checks a row it waited for).
const BEGIN: &str = "BEGIN ISOLATION LEVEL READ COMMITTED";

/// Commits, unless a statement failed in the transaction: PostgreSQL then
/// answers `SELECT 1` with an error and skips the `COMMIT` (it would have
/// turned it into a silent rollback).
const COMMIT: &str = "SELECT 1; COMMIT";

/// An open transaction on this engine: a connection of the engine's pool
/// inside `BEGIN`. Dropped without a commit or rollback, it rolls back
/// without waiting: a task on the current tokio runtime sends `ROLLBACK`
/// and then returns the connection to the pool (outside a runtime, the
/// connection is closed instead, and the server aborts the transaction).
#[derive(Debug)]
pub struct PgTx {
    /// `None` only once the transaction ended (commit, rollback, drop).
    /// Boxed: a pooled connection is large, and a transaction moves.
    conn: Option<Box<Object>>,
    /// The throughput counts its settles owe, counted at commit.
    tally: Tally,
}

impl PgTx {
    /// The client the transaction runs on, for the application's own SQL:
    /// every statement on it is inside the transaction. Do not commit or
    /// roll back on it: end the transaction through its owner. A
    /// statement that fails aborts the transaction, and its commit then
    /// rolls back and reports it.
    pub fn client(&self) -> &tokio_postgres::Client {
        // `conn` is taken only by the calls that consume or drop `self`.
        let conn: &Object = self
            .conn
            .as_ref()
            .expect("an open PgTx holds its connection");
        conn
    }

    fn exec(&self, op: &'static str) -> Result<&ClientWrapper> {
        self.conn.as_deref().map(|c| &**c).ok_or(Error::RolledBack {
            op,
            reason: "the transaction already ended".into(),
        })
    }
}

impl Drop for PgTx {
    fn drop(&mut self) {
        let Some(conn) = self.conn.take() else {
            return;
        };
        match tokio::runtime::Handle::try_current() {
            Ok(rt) => {
                let conn = Unclean(Some(*conn));
                rt.spawn(async move {
                    let rolled_back = match conn.conn() {
                        Some(c) => c.batch_execute("ROLLBACK").await.is_ok(),
                        None => false,
                    };
                    if rolled_back {
                        conn.clean();
                    }
                });
            }
            Err(_) => drop(Unclean(Some(*conn))),
        }
    }
}

/// A connection that may still be inside a transaction: dropped as it
/// is, it leaves the pool and closes (the server rolls back), so nobody
/// is handed a connection in the middle of someone's transaction (the
/// pool's fast recycling does not check).
struct Unclean(Option<Object>);

impl Drop for Unclean {
    fn drop(&mut self) {
        if let Some(conn) = self.0.take() {
            drop(Object::take(conn));
        }
    }
}

impl Unclean {
    fn conn(&self) -> Option<&Object> {
        self.0.as_ref()
    }

    /// Out of any transaction again: back to the pool.
    fn clean(mut self) {
        drop(self.0.take());
    }
}

impl PgEngine {
    /// End `tx` with `sql`. Its connection goes back to the pool once out
    /// of the transaction, and is closed when that cannot be made sure of.
    /// Once it committed, the jobs it settled are counted on it.
    async fn tx_end(&self, mut tx: PgTx, op: &'static str, sql: &str) -> Result<()> {
        let conn = Unclean(tx.conn.take().map(|c| *c));
        let Some(c) = conn.conn() else {
            return Ok(());
        };
        let Err(e) = c.batch_execute(sql).await else {
            if sql == COMMIT {
                self.count_throughput(&self.on(c), &tx.tally).await;
            }
            conn.clean();
            return Ok(());
        };
        let err = if e.code() == Some(&SqlState::IN_FAILED_SQL_TRANSACTION) {
            // A statement failed earlier (the application's own: the
            // engine's calls poison the transaction instead): PostgreSQL
            // aborted the transaction, which can only roll back.
            Error::RolledBack {
                op: "commit",
                reason: format!(
                    "a statement in the transaction failed, so PostgreSQL aborted it ({})",
                    db(op)(e)
                ),
            }
        } else {
            db(op)(e)
        };
        // Whatever is left of the transaction (nothing after a failed
        // COMMIT: then this only warns).
        if !c.is_closed() && c.batch_execute("ROLLBACK").await.is_ok() {
            conn.clean();
        }
        Err(err)
    }
}

impl TxDriver for PgEngine {
    type Tx = PgTx;

    async fn tx_begin(&self) -> Result<PgTx> {
        let conn = self.client().await?;
        match conn.batch_execute(BEGIN).await {
            Ok(()) => Ok(PgTx {
                conn: Some(Box::new(conn)),
                tally: Tally::default(),
            }),
            Err(e) => {
                drop(Unclean(Some(conn)));
                Err(db("tx_begin")(e))
            }
        }
    }

    async fn tx_commit(&self, tx: PgTx) -> Result<()> {
        self.tx_end(tx, "tx_commit", COMMIT).await
    }

    async fn tx_rollback(&self, tx: PgTx) -> Result<()> {
        self.tx_end(tx, "tx_rollback", "ROLLBACK").await
    }

    fn tx_conn<'a>(&'a self, tx: &'a mut PgTx) -> Result<PgConn<'a>> {
        let conn = tx.exec("tx")?;
        Ok(PgConn::engine_tx(self.on(conn), &tx.tally))
    }
}

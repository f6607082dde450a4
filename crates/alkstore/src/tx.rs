//! The application's own transaction on the facade: every primitive's
//! writes and the application's own SQL, committed together or not at all.
//!
//! ```no_run
//! # async fn demo(store: &alkstore::Store) -> alkstore::Result<()> {
//! let mut tx = store.begin().await?;
//! if let Some(conn) = tx.sqlite() {
//!     conn.execute("INSERT INTO orders (id) VALUES (1)", [])
//!         .map_err(|e| alkstore::Error::database("insert order", e.to_string()))?;
//! }
//! tx.queue("emails").enqueue(&serde_json::json!({"order": 1})).await?;
//! tx.channel("orders").notify("1 placed").await?;
//! tx.commit().await?;
//! # Ok(()) }
//! ```
//!
//! The handles are the store's, with the same write methods (see
//! [`Runs`](crate::runs::Runs)); the operations are also callable by name
//! ([`Writes`](alkstore_core::Writes): `tx.transaction().job_enqueue(..)`).
//! What each call promises, and when a transaction refuses to commit, is
//! in [`alkstore_core::tx`].

use std::future::Future;
use std::ops::{Deref, DerefMut};
use std::pin::Pin;

use alkstore_core::{Result, Transaction, TxDriver};

use crate::any::AnyConn;
use crate::channel::Channel;
use crate::group::Group;
use crate::lock::Lock;
use crate::queue::{Queue, QueueOpts};
use crate::schedule::Schedule;
use crate::{AnyEngine, Stream};

/// An open transaction on a [`Store`](crate::Store): the store's handles
/// (`tx.queue(..)`, `tx.stream(..)`, `tx.channel(..)`, `tx.schedule(..)`,
/// `tx.group(..)`, `tx.lock(..)`), whose writes join it; every operation
/// by name through [`Writes`](alkstore_core::Writes) on
/// [`Tx::transaction`]; and the engine's native handle for the
/// application's own SQL ([`Tx::sqlite`], [`Tx::postgres`]). Dropped
/// without [`Tx::commit`], it rolls back (on PostgreSQL in the background:
/// await [`Tx::rollback`] when what follows needs the rows it locked at
/// once).
#[derive(Debug)]
pub struct Tx(Transaction<AnyEngine>);

impl Deref for Tx {
    type Target = Transaction<AnyEngine>;

    fn deref(&self) -> &Self::Target {
        &self.0
    }
}

impl DerefMut for Tx {
    fn deref_mut(&mut self) -> &mut Self::Target {
        &mut self.0
    }
}

impl Tx {
    pub(crate) async fn begin(engine: &AnyEngine) -> Result<Tx> {
        Transaction::begin(engine).await.map(Tx)
    }

    /// The engine-neutral transaction underneath (the operations under
    /// their names, through [`Writes`](alkstore_core::Writes)).
    pub fn transaction(&self) -> &Transaction<AnyEngine> {
        &self.0
    }

    /// A queue, whose writes (`enqueue…`, `ack`, `retry`, `fail`,
    /// `snooze`) join the transaction: enqueued jobs are claimable once it
    /// commits; a claim found lost poisons it.
    pub fn queue(&self, name: impl Into<String>) -> Queue<&Tx> {
        Queue::new(self, name.into(), QueueOpts::default())
    }

    /// [`Tx::queue`] with options stamped on its enqueues.
    pub fn queue_with(&self, name: impl Into<String>, opts: QueueOpts) -> Queue<&Tx> {
        Queue::new(self, name.into(), opts)
    }

    /// A stream, whose `publish…` and `commit` join the transaction: the
    /// events are readable once it commits.
    pub fn stream(&self, name: impl Into<String>) -> Stream<&Tx> {
        Stream::new(self, name.into())
    }

    /// A channel, whose `notify` is delivered when the transaction commits
    /// (and never if it rolls back).
    pub fn channel(&self, name: impl Into<String>) -> Channel<&Tx> {
        Channel::new(self, name.into())
    }

    /// A schedule, whose `set`, `pause`, `resume` and `remove` commit with
    /// the transaction.
    pub fn schedule(&self, name: impl Into<String>) -> Schedule<&Tx> {
        Schedule::new(self, name.into())
    }

    /// A consumer group, whose `checkpoint` commits with the transaction
    /// and keeps the bucket's lease until then.
    pub fn group(&self, name: impl Into<String>) -> Group<&Tx> {
        Group::new(self, name.into())
    }

    /// A lock, whose `fence(token)` keeps it from passing on until the
    /// transaction ends.
    pub fn lock(&self, name: impl Into<String>) -> Lock<&Tx> {
        Lock::new(self, name.into())
    }

    /// Commit (see [`Transaction::commit`]): a transaction in which a call
    /// failed is rolled back instead, with
    /// [`Error::RolledBack`](crate::Error::RolledBack).
    pub async fn commit(self) -> Result<()> {
        self.0.commit().await
    }

    /// Roll back everything written in the transaction.
    pub async fn rollback(self) -> Result<()> {
        self.0.rollback().await
    }

    /// The SQLite connection the transaction runs on, for the
    /// application's own SQL (it is inside the open transaction; do not
    /// commit or roll back on it). `None` on PostgreSQL or once ended.
    #[cfg(feature = "sqlite")]
    pub fn sqlite(&mut self) -> Option<&alkstore_sqlite::rusqlite::Connection> {
        #[allow(unreachable_patterns)]
        match self.0.driver_tx()? {
            AnyTx::Sqlite(tx) => Some(tx.conn()),
            _ => None,
        }
    }

    /// The PostgreSQL client the transaction runs on, for the
    /// application's own SQL (it is inside the open transaction; do not
    /// commit or roll back on it). `None` on SQLite or once ended.
    #[cfg(feature = "postgres")]
    pub fn postgres(&mut self) -> Option<&alkstore_postgres::tokio_postgres::Client> {
        #[allow(unreachable_patterns)]
        match self.0.driver_tx()? {
            AnyTx::Postgres(tx) => Some(tx.client()),
            _ => None,
        }
    }
}

/// A boxed future borrowing the transaction, as [`Store::transaction`](crate::Store::transaction)'s
/// closure returns.
pub type TxFuture<'t, T, E> = Pin<Box<dyn Future<Output = std::result::Result<T, E>> + Send + 't>>;

/// Either engine's open transaction.
#[derive(Debug)]
pub enum AnyTx {
    /// SQLite's.
    #[cfg(feature = "sqlite")]
    Sqlite(alkstore_sqlite::SqliteTx),
    /// PostgreSQL's.
    #[cfg(feature = "postgres")]
    Postgres(alkstore_postgres::PgTx),
}

impl TxDriver for AnyEngine {
    type Tx = AnyTx;

    async fn tx_begin(&self) -> Result<AnyTx> {
        match self {
            #[cfg(feature = "sqlite")]
            AnyEngine::Sqlite(e) => e.tx_begin().await.map(AnyTx::Sqlite),
            #[cfg(feature = "postgres")]
            AnyEngine::Postgres(e) => e.tx_begin().await.map(AnyTx::Postgres),
        }
    }

    async fn tx_commit(&self, tx: AnyTx) -> Result<()> {
        match (self, tx) {
            #[cfg(feature = "sqlite")]
            (AnyEngine::Sqlite(e), AnyTx::Sqlite(t)) => e.tx_commit(t).await,
            #[cfg(feature = "postgres")]
            (AnyEngine::Postgres(e), AnyTx::Postgres(t)) => e.tx_commit(t).await,
            #[allow(unreachable_patterns)]
            _ => Err(mismatch("tx_commit")),
        }
    }

    async fn tx_rollback(&self, tx: AnyTx) -> Result<()> {
        match (self, tx) {
            #[cfg(feature = "sqlite")]
            (AnyEngine::Sqlite(e), AnyTx::Sqlite(t)) => e.tx_rollback(t).await,
            #[cfg(feature = "postgres")]
            (AnyEngine::Postgres(e), AnyTx::Postgres(t)) => e.tx_rollback(t).await,
            #[allow(unreachable_patterns)]
            _ => Err(mismatch("tx_rollback")),
        }
    }

    fn tx_conn<'a>(&'a self, tx: &'a mut AnyTx) -> Result<AnyConn<'a>> {
        match (self, tx) {
            #[cfg(feature = "sqlite")]
            (AnyEngine::Sqlite(e), AnyTx::Sqlite(t)) => e.tx_conn(t).map(AnyConn::Sqlite),
            #[cfg(feature = "postgres")]
            (AnyEngine::Postgres(e), AnyTx::Postgres(t)) => e.tx_conn(t).map(AnyConn::Postgres),
            #[allow(unreachable_patterns)]
            _ => Err(mismatch("tx")),
        }
    }
}

fn mismatch(op: &'static str) -> alkstore_core::Error {
    alkstore_core::Error::database(op, "a transaction of one engine was used on another")
}

//! The application's own transaction on the facade: every primitive's
//! writes and the application's own SQL, committed together or not at all.
//!
//! ```no_run
//! # async fn demo(store: &alkstore::Store) -> alkstore::Result<()> {
//! use alkstore::queue::NewJob;
//! let mut tx = store.begin().await?;
//! if let Some(conn) = tx.sqlite() {
//!     conn.execute("INSERT INTO orders (id) VALUES (1)", [])
//!         .map_err(|e| alkstore::Error::database("insert order", e.to_string()))?;
//! }
//! tx.job_enqueue(NewJob::new("emails", b"order 1".to_vec())).await?;
//! tx.commit().await?;
//! # Ok(()) }
//! ```
//!
//! What each call promises, and when a transaction refuses to commit, is
//! in [`alkstore_core::tx`].

use std::future::Future;
use std::ops::{Deref, DerefMut};
use std::pin::Pin;

use alkstore_core::{Result, Transaction, TxDriver};

use crate::AnyEngine;

/// An open transaction on a [`Store`](crate::Store): the calls of
/// [`Transaction`] (`job_enqueue`, `stream_publish`, `notify`, `job_ack`,
/// `group_checkpoint`, `lock_fence`, …), and the engine's native handle
/// for the application's own SQL ([`Tx::sqlite`], [`Tx::postgres`]).
/// Dropped without [`Tx::commit`], it rolls back.
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
    pub fn sqlite(&self) -> Option<&alkstore_sqlite::rusqlite::Connection> {
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
    pub fn postgres(&self) -> Option<&alkstore_postgres::tokio_postgres::Client> {
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

/// Pick the engine and its transaction, and await the driver method.
macro_rules! drive_tx {
    ($self:ident, $tx:ident . $method:ident ( $($arg:expr),* )) => {
        match ($self, $tx) {
            #[cfg(feature = "sqlite")]
            (AnyEngine::Sqlite(e), AnyTx::Sqlite(t)) => TxDriver::$method(e, t, $($arg),*).await,
            #[cfg(feature = "postgres")]
            (AnyEngine::Postgres(e), AnyTx::Postgres(t)) => TxDriver::$method(e, t, $($arg),*).await,
            #[allow(unreachable_patterns)]
            _ => Err(alkstore_core::Error::database(
                stringify!($method),
                "a transaction of one engine was used on another",
            )),
        }
    };
}

use alkstore_core::group::GroupCheckpointParams;
use alkstore_core::lock::LockFenceParams;
use alkstore_core::notify::NotifyParams;
use alkstore_core::queue::{JobAckParams, JobEnqueueParams, JobSettleParams};
use alkstore_core::schedule::{ScheduleInfo, ScheduleNameParams, ScheduleSetParams};
use alkstore_core::stream::{StreamOffsetCommitParams, StreamPublishParams};
use alkstore_core::{Checked, Enqueued, Settled};

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
            _ => Err(alkstore_core::Error::database(
                "tx_commit",
                "a transaction of one engine was used on another",
            )),
        }
    }

    async fn tx_rollback(&self, tx: AnyTx) -> Result<()> {
        match (self, tx) {
            #[cfg(feature = "sqlite")]
            (AnyEngine::Sqlite(e), AnyTx::Sqlite(t)) => e.tx_rollback(t).await,
            #[cfg(feature = "postgres")]
            (AnyEngine::Postgres(e), AnyTx::Postgres(t)) => e.tx_rollback(t).await,
            #[allow(unreachable_patterns)]
            _ => Err(alkstore_core::Error::database(
                "tx_rollback",
                "a transaction of one engine was used on another",
            )),
        }
    }

    async fn tx_job_enqueue(
        &self,
        tx: &mut AnyTx,
        params: Checked<JobEnqueueParams>,
    ) -> Result<Vec<Enqueued>> {
        drive_tx!(self, tx.tx_job_enqueue(params))
    }

    async fn tx_job_ack(&self, tx: &mut AnyTx, params: Checked<JobAckParams>) -> Result<Vec<bool>> {
        drive_tx!(self, tx.tx_job_ack(params))
    }

    async fn tx_job_settle(
        &self,
        tx: &mut AnyTx,
        params: Checked<JobSettleParams>,
    ) -> Result<Vec<Settled>> {
        drive_tx!(self, tx.tx_job_settle(params))
    }

    async fn tx_stream_publish(
        &self,
        tx: &mut AnyTx,
        params: Checked<StreamPublishParams>,
    ) -> Result<Vec<i64>> {
        drive_tx!(self, tx.tx_stream_publish(params))
    }

    async fn tx_stream_offset_commit(
        &self,
        tx: &mut AnyTx,
        params: Checked<StreamOffsetCommitParams>,
    ) -> Result<i64> {
        drive_tx!(self, tx.tx_stream_offset_commit(params))
    }

    async fn tx_notify(&self, tx: &mut AnyTx, params: Checked<NotifyParams>) -> Result<()> {
        drive_tx!(self, tx.tx_notify(params))
    }

    async fn tx_schedule_set(
        &self,
        tx: &mut AnyTx,
        params: Checked<ScheduleSetParams>,
    ) -> Result<ScheduleInfo> {
        drive_tx!(self, tx.tx_schedule_set(params))
    }

    async fn tx_schedule_remove(
        &self,
        tx: &mut AnyTx,
        params: Checked<ScheduleNameParams>,
    ) -> Result<bool> {
        drive_tx!(self, tx.tx_schedule_remove(params))
    }

    async fn tx_schedule_set_paused(
        &self,
        tx: &mut AnyTx,
        params: Checked<ScheduleNameParams>,
        to: alkstore_core::PauseState,
    ) -> Result<ScheduleInfo> {
        drive_tx!(self, tx.tx_schedule_set_paused(params, to))
    }

    async fn tx_group_checkpoint(
        &self,
        tx: &mut AnyTx,
        params: Checked<GroupCheckpointParams>,
    ) -> Result<i64> {
        drive_tx!(self, tx.tx_group_checkpoint(params))
    }

    async fn tx_lock_fence(&self, tx: &mut AnyTx, params: Checked<LockFenceParams>) -> Result<()> {
        drive_tx!(self, tx.tx_lock_fence(params))
    }
}

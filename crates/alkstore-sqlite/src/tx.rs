//! The application's own transaction on this engine ([`TxDriver`]).
//!
//! SKELETON: every call refuses until the engine's transaction is built
//! (issue 30); replaced before this lands.

use alkstore_core::group::GroupCheckpointParams;
use alkstore_core::lock::LockFenceParams;
use alkstore_core::notify::NotifyParams;
use alkstore_core::queue::{JobAckParams, JobEnqueueParams, JobSettleParams};
use alkstore_core::schedule::{ScheduleInfo, ScheduleNameParams, ScheduleSetParams};
use alkstore_core::stream::{StreamOffsetCommitParams, StreamPublishParams};
use alkstore_core::{Checked, Enqueued, Error, Result, Settled, TxDriver};

use crate::SqliteEngine;

/// An open transaction of the application's own on this engine.
#[derive(Debug)]
pub struct SqliteTx {
    conn: Option<rusqlite::Connection>,
}

impl SqliteTx {
    /// The native handle the transaction runs on, for the application's
    /// own SQL.
    pub fn conn(&self) -> &rusqlite::Connection {
        self.conn.as_ref().expect("skeleton")
    }
}

fn unbuilt<T>(op: &'static str) -> Result<T> {
    Err(Error::database(op, "not built yet"))
}

impl TxDriver for SqliteEngine {
    type Tx = SqliteTx;

    async fn tx_begin(&self) -> Result<SqliteTx> {
        unbuilt("tx_begin")
    }

    async fn tx_commit(&self, _tx: SqliteTx) -> Result<()> {
        unbuilt("tx_commit")
    }

    async fn tx_rollback(&self, _tx: SqliteTx) -> Result<()> {
        unbuilt("tx_rollback")
    }

    async fn tx_job_enqueue(
        &self,
        _tx: &mut SqliteTx,
        _p: Checked<JobEnqueueParams>,
    ) -> Result<Vec<Enqueued>> {
        unbuilt("job_enqueue")
    }

    async fn tx_job_ack(&self, _tx: &mut SqliteTx, _p: Checked<JobAckParams>) -> Result<Vec<bool>> {
        unbuilt("job_ack")
    }

    async fn tx_job_settle(
        &self,
        _tx: &mut SqliteTx,
        _p: Checked<JobSettleParams>,
    ) -> Result<Vec<Settled>> {
        unbuilt("job_settle")
    }

    async fn tx_stream_publish(
        &self,
        _tx: &mut SqliteTx,
        _p: Checked<StreamPublishParams>,
    ) -> Result<Vec<i64>> {
        unbuilt("stream_publish")
    }

    async fn tx_stream_offset_commit(
        &self,
        _tx: &mut SqliteTx,
        _p: Checked<StreamOffsetCommitParams>,
    ) -> Result<i64> {
        unbuilt("stream_offset_commit")
    }

    async fn tx_notify(&self, _tx: &mut SqliteTx, _p: Checked<NotifyParams>) -> Result<()> {
        unbuilt("notify")
    }

    async fn tx_schedule_set(
        &self,
        _tx: &mut SqliteTx,
        _p: Checked<ScheduleSetParams>,
    ) -> Result<ScheduleInfo> {
        unbuilt("schedule_set")
    }

    async fn tx_schedule_remove(
        &self,
        _tx: &mut SqliteTx,
        _p: Checked<ScheduleNameParams>,
    ) -> Result<bool> {
        unbuilt("schedule_remove")
    }

    async fn tx_schedule_set_paused(
        &self,
        _tx: &mut SqliteTx,
        _p: Checked<ScheduleNameParams>,
        _paused: bool,
    ) -> Result<ScheduleInfo> {
        unbuilt("schedule_set_paused")
    }

    async fn tx_group_checkpoint(
        &self,
        _tx: &mut SqliteTx,
        _p: Checked<GroupCheckpointParams>,
    ) -> Result<i64> {
        unbuilt("group_checkpoint")
    }

    async fn tx_lock_fence(&self, _tx: &mut SqliteTx, _p: Checked<LockFenceParams>) -> Result<()> {
        unbuilt("lock_fence")
    }
}

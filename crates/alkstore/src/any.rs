use std::time::Duration;

use alkstore_core::queue::{
    JobAckParams, JobCancelParams, JobCancelRequestsParams, JobEnqueueParams, JobFailParams,
    JobGetParams, JobHeartbeatParams, JobReleaseParams, JobSettleParams, JobSnoozeParams,
    JobUnclaimParams, QueueStatsParams,
};
use alkstore_core::{
    CancelOutcome, Capabilities, DeadListParams, DeadSelect, Engine, Enqueued, Job, JobClaimParams,
    JobInfo, JobListParams, JobRetryParams, QueueAdmin, QueueEngine, QueueStats, Result,
    RetryOutcome, Settled, SweepReport,
};
#[cfg(feature = "postgres")]
use alkstore_postgres::PgEngine;
#[cfg(feature = "sqlite")]
use alkstore_sqlite::SqliteEngine;

#[cfg(not(any(feature = "sqlite", feature = "postgres")))]
compile_error!("alkstore needs at least one engine: enable the `sqlite` or `postgres` feature");

/// Either engine, chosen at open time by URL.
#[derive(Debug, Clone)]
pub enum AnyEngine {
    /// The embedded SQLite engine.
    #[cfg(feature = "sqlite")]
    Sqlite(SqliteEngine),
    /// The PostgreSQL engine.
    #[cfg(feature = "postgres")]
    Postgres(PgEngine),
}

/// Every engine call goes through here: it picks the engine and runs the
/// call inside an `alkstore.<method>` span (DEBUG level: free unless a
/// subscriber asks for it).
macro_rules! dispatch {
    ($self:ident . $method:ident ( $($arg:expr),* )) => {{
        use tracing::Instrument;
        let span = tracing::debug_span!(concat!("alkstore.", stringify!($method)));
        match $self {
            #[cfg(feature = "sqlite")]
            AnyEngine::Sqlite(e) => e.$method($($arg),*).instrument(span).await,
            #[cfg(feature = "postgres")]
            AnyEngine::Postgres(e) => e.$method($($arg),*).instrument(span).await,
        }
    }};
}

impl Engine for AnyEngine {
    fn capabilities(&self) -> Capabilities {
        match self {
            #[cfg(feature = "sqlite")]
            AnyEngine::Sqlite(e) => e.capabilities(),
            #[cfg(feature = "postgres")]
            AnyEngine::Postgres(e) => e.capabilities(),
        }
    }

    fn wake_subscribe(&self) -> tokio::sync::broadcast::Receiver<alkstore_core::Wake> {
        match self {
            #[cfg(feature = "sqlite")]
            AnyEngine::Sqlite(e) => e.wake_subscribe(),
            #[cfg(feature = "postgres")]
            AnyEngine::Postgres(e) => e.wake_subscribe(),
        }
    }

    async fn sweep_if_due(&self, every: Option<Duration>) -> Result<Option<SweepReport>> {
        dispatch!(self.sweep_if_due(every))
    }
}

impl QueueEngine for AnyEngine {
    async fn job_enqueue(
        &self,
        params: impl Into<JobEnqueueParams> + Send,
    ) -> Result<Vec<Enqueued>> {
        let params = params.into();
        dispatch!(self.job_enqueue(params))
    }

    async fn job_claim(&self, params: JobClaimParams) -> Result<Vec<Job>> {
        dispatch!(self.job_claim(params))
    }

    async fn job_ack(&self, params: impl Into<JobAckParams> + Send) -> Result<Vec<bool>> {
        let params = params.into();
        dispatch!(self.job_ack(params))
    }

    async fn job_retry(&self, params: JobRetryParams) -> Result<RetryOutcome> {
        dispatch!(self.job_retry(params))
    }

    async fn job_fail(&self, params: impl Into<JobFailParams> + Send) -> Result<bool> {
        let params = params.into();
        dispatch!(self.job_fail(params))
    }

    async fn job_heartbeat(
        &self,
        params: impl Into<JobHeartbeatParams> + Send,
    ) -> Result<Option<i64>> {
        let params = params.into();
        dispatch!(self.job_heartbeat(params))
    }

    async fn job_release(&self, params: impl Into<JobReleaseParams> + Send) -> Result<bool> {
        let params = params.into();
        dispatch!(self.job_release(params))
    }

    async fn job_snooze(&self, params: impl Into<JobSnoozeParams> + Send) -> Result<Option<i64>> {
        let params = params.into();
        dispatch!(self.job_snooze(params))
    }

    async fn job_settle(&self, params: impl Into<JobSettleParams> + Send) -> Result<Vec<Settled>> {
        let params = params.into();
        dispatch!(self.job_settle(params))
    }
    async fn job_cancel_requests(
        &self,
        params: impl Into<JobCancelRequestsParams> + Send,
    ) -> Result<Vec<i64>> {
        let params = params.into();
        dispatch!(self.job_cancel_requests(params))
    }
}

impl QueueAdmin for AnyEngine {
    async fn job_unclaim(&self, params: impl Into<JobUnclaimParams> + Send) -> Result<bool> {
        let params = params.into();
        dispatch!(self.job_unclaim(params))
    }

    async fn job_cancel(&self, params: impl Into<JobCancelParams> + Send) -> Result<CancelOutcome> {
        let params = params.into();
        dispatch!(self.job_cancel(params))
    }

    async fn job_get(&self, params: impl Into<JobGetParams> + Send) -> Result<Option<JobInfo>> {
        let params = params.into();
        dispatch!(self.job_get(params))
    }

    async fn job_list(&self, params: JobListParams) -> Result<Vec<JobInfo>> {
        dispatch!(self.job_list(params))
    }

    async fn queue_stats(&self, params: impl Into<QueueStatsParams> + Send) -> Result<QueueStats> {
        let params = params.into();
        dispatch!(self.queue_stats(params))
    }

    async fn queue_list(&self) -> Result<Vec<String>> {
        dispatch!(self.queue_list())
    }

    async fn dead_list(&self, params: DeadListParams) -> Result<Vec<JobInfo>> {
        dispatch!(self.dead_list(params))
    }

    async fn dead_requeue(&self, select: DeadSelect) -> Result<u64> {
        dispatch!(self.dead_requeue(select))
    }

    async fn dead_purge(&self, select: DeadSelect) -> Result<u64> {
        dispatch!(self.dead_purge(select))
    }

    async fn dead_count(&self, select: DeadSelect) -> Result<u64> {
        dispatch!(self.dead_count(select))
    }
}

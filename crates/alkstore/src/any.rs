use std::time::Duration;

use alkstore_core::{
    CancelOutcome, Capabilities, Claim, ClaimParams, DeadListParams, DeadSelect, Engine, Enqueued,
    Job, JobInfo, JobListParams, NewJob, QueueAdmin, QueueEngine, QueueStats, Result, RetryOutcome,
    RetryParams, Settle, Settled, SweepReport,
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
    async fn job_enqueue(&self, jobs: Vec<NewJob>) -> Result<Vec<Enqueued>> {
        dispatch!(self.job_enqueue(jobs))
    }

    async fn job_claim(&self, params: ClaimParams) -> Result<Vec<Job>> {
        dispatch!(self.job_claim(params))
    }

    async fn job_ack(&self, claims: Vec<Claim>) -> Result<Vec<bool>> {
        dispatch!(self.job_ack(claims))
    }

    async fn job_retry(&self, params: RetryParams) -> Result<RetryOutcome> {
        dispatch!(self.job_retry(params))
    }

    async fn job_fail(&self, claim: Claim, error: String) -> Result<bool> {
        dispatch!(self.job_fail(claim, error))
    }

    async fn job_heartbeat(&self, claim: Claim) -> Result<Option<i64>> {
        dispatch!(self.job_heartbeat(claim))
    }

    async fn job_release(&self, claim: Claim) -> Result<bool> {
        dispatch!(self.job_release(claim))
    }

    async fn job_snooze(&self, claim: Claim, delay: Duration) -> Result<Option<i64>> {
        dispatch!(self.job_snooze(claim, delay))
    }

    async fn job_settle(&self, batch: Vec<Settle>) -> Result<Vec<Settled>> {
        dispatch!(self.job_settle(batch))
    }
    async fn job_cancel_requests(&self, ids: Vec<i64>) -> Result<Vec<i64>> {
        dispatch!(self.job_cancel_requests(ids))
    }
}

impl QueueAdmin for AnyEngine {
    async fn job_unclaim(&self, id: i64) -> Result<bool> {
        dispatch!(self.job_unclaim(id))
    }

    async fn job_cancel(&self, id: i64) -> Result<CancelOutcome> {
        dispatch!(self.job_cancel(id))
    }

    async fn job_get(&self, id: i64) -> Result<Option<JobInfo>> {
        dispatch!(self.job_get(id))
    }

    async fn job_list(&self, params: JobListParams) -> Result<Vec<JobInfo>> {
        dispatch!(self.job_list(params))
    }

    async fn queue_stats(&self, queue: String) -> Result<QueueStats> {
        dispatch!(self.queue_stats(queue))
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

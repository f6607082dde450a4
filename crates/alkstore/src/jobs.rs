//! Jobs addressed by id, whatever their queue: a [`Jobs`] handle
//! ([`Store::jobs`](crate::Store::jobs)) for operators (look up, list,
//! cancel, run now, delete; dead letters across queues) and for workers
//! that keep their claims themselves (a remote worker over HTTP settling
//! a claim by id and token). A [`Queue`](crate::queue::Queue) handle does
//! the same for one queue's jobs.

use alkstore_core::queue::{
    CancelOutcome, Claim, DeadCountParams, DeadListParams, DeadPurgeParams, DeadRequeueParams,
    Enqueued, Job, JobClaimParams, JobDeleteParams, JobFailParams, JobInfo, JobListParams,
    JobRetryParams, JobRunNowParams, NewJob, QueueAdmin, QueueEngine, RetryOutcome,
};
use alkstore_core::results::{JobOutput, ResultSaveParams};
use alkstore_core::{Result, ResultEngine, Writes as _};
use std::time::Duration;

use crate::runs::Runs as _;
use crate::Store;

/// Jobs by id, in any queue (see the [module docs](self)).
///
/// ```no_run
/// # async fn demo(store: alkstore::Store) -> alkstore::Result<()> {
/// use alkstore::queue::JobListParams;
/// let jobs = store.jobs();
/// for job in jobs.list(JobListParams::new(50).queue("emails")).await? {
///     println!("{} {:?} attempts {}", job.id, job.state, job.attempts);
/// }
/// jobs.cancel(42).await?;
/// # Ok(()) }
/// ```
#[derive(Debug, Clone)]
pub struct Jobs {
    store: Store,
}

impl Jobs {
    pub(crate) fn new(store: Store) -> Jobs {
        Jobs { store }
    }

    /// Enqueue `jobs` (each names its queue) in one transaction: all or
    /// none; each gets its id (or its duplicate's) in order.
    pub async fn enqueue(&self, jobs: Vec<NewJob>) -> Result<Vec<Enqueued>> {
        self.store.place().job_enqueue(jobs).await
    }

    /// Job `id`, live, dead or kept after completion; `None` when there is
    /// none.
    pub async fn get(&self, id: i64) -> Result<Option<JobInfo>> {
        self.store.engine().job_get(id).await
    }

    /// A page of live (and kept completed) jobs, lowest ids first, as the
    /// filter says (queue, state, tag, after an id).
    pub async fn list(&self, filter: JobListParams) -> Result<Vec<JobInfo>> {
        self.store.engine().job_list(filter).await
    }

    /// Cancel job `id`: a pending one goes to the dead letters now, a
    /// running one's handler is told to stop.
    pub async fn cancel(&self, id: i64) -> Result<CancelOutcome> {
        self.store.engine().job_cancel(id).await
    }

    /// Make the selected waiting jobs due now; how many moved.
    pub async fn run_now(&self, select: JobRunNowParams) -> Result<u64> {
        self.store.engine().job_run_now(select).await
    }

    /// Delete the selected jobs that are not running; how many went.
    pub async fn delete(&self, select: JobDeleteParams) -> Result<u64> {
        self.store.engine().job_delete(select).await
    }

    /// Hand running job `id` back to its queue whoever holds it (an
    /// operator freeing a job its worker will never finish), without using
    /// an attempt; false when it was not running.
    pub async fn unclaim(&self, id: i64) -> Result<bool> {
        self.store.engine().job_unclaim(id).await
    }

    /// Claim up to `limit` due jobs of `queue` for `worker`, waiting up to
    /// `wait` for the first (woken by enqueues of this process and commits
    /// of others, rechecked every second for jobs coming due).
    pub async fn claim_waiting(
        &self,
        queue: &str,
        worker: &str,
        limit: u32,
        wait: Duration,
    ) -> Result<Vec<Job>> {
        let params = JobClaimParams::new(queue, worker, limit);
        let engine = self.store.engine();
        crate::wait::poll(
            &self.store,
            wait,
            |w| w.concerns(queue),
            || engine.job_claim(params.clone()),
        )
        .await
    }

    /// Acknowledge finished jobs; `true` per claim that was still held.
    pub async fn ack(&self, claims: Vec<Claim>) -> Result<Vec<bool>> {
        self.store.place().job_ack(claims).await
    }

    /// Retry a failed attempt (with the queue's backoff, or the delay the
    /// parameters give).
    pub async fn retry(&self, attempt: JobRetryParams) -> Result<RetryOutcome> {
        self.store.place().job_retry(attempt).await
    }

    /// Dead-letter a claimed job now; false when the claim is no longer
    /// held.
    pub async fn fail(&self, attempt: JobFailParams) -> Result<bool> {
        self.store.place().job_fail(attempt).await
    }

    /// Extend a claim by its job's visibility timeout; the new expiry, or
    /// `None` when the claim is lost.
    pub async fn heartbeat(&self, claim: Claim) -> Result<Option<i64>> {
        self.store.engine().job_heartbeat(claim).await
    }

    /// Hand a claimed job back unfinished, without using an attempt.
    pub async fn release(&self, claim: Claim) -> Result<bool> {
        self.store.engine().job_release(claim).await
    }

    /// Save `value` as job `id`'s result (kept a day; see
    /// [`Results`](crate::results::Results)); returns it as saved.
    pub async fn save_result(&self, id: i64, value: Vec<u8>) -> Result<JobOutput> {
        self.store
            .engine()
            .result_save(ResultSaveParams::new(id, value))
            .await
    }

    /// A page of dead letters, as the filter says (queue, tag, after an
    /// id).
    pub async fn dead(&self, filter: DeadListParams) -> Result<Vec<JobInfo>> {
        self.store.engine().dead_list(filter).await
    }

    /// How many dead letters the filter selects.
    pub async fn dead_count(&self, filter: DeadCountParams) -> Result<u64> {
        self.store.engine().dead_count(filter).await
    }

    /// Put the selected dead letters back in their queues with fresh
    /// attempts; how many.
    pub async fn requeue_dead(&self, select: DeadRequeueParams) -> Result<u64> {
        self.store.engine().dead_requeue(select).await
    }

    /// Delete the selected dead letters; how many.
    pub async fn purge_dead(&self, select: DeadPurgeParams) -> Result<u64> {
        self.store.engine().dead_purge(select).await
    }
}
